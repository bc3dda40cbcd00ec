"""Numbers in one place (:mod:`anonkit._util.numbers`): the exact formatter every message,
report and label uses, the JSON conversion, and the one whole-number parser behind the
command line, job files, the methods' Python options and the Python constructors."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from anonkit import methods
from anonkit._util.numbers import (
    exact_number,
    exact_numbers,
    json_number,
    number_from_text,
    stored_number,
    whole_number,
)
from anonkit.datasets import make_census
from anonkit.errors import InputError
from anonkit.methods.mondrian import Mondrian
from anonkit.models import (
    DistinctLDiversity,
    KAnonymity,
    KEAnonymity,
    MUniqueness,
    RecursiveCLDiversity,
    TCloseness,
)
from anonkit.report import render_report

# -- the formatter ---------------------------------------------------------------------------


@pytest.mark.parametrize("value, text", [
    (5, "5"), (5.0, "5"), (-0.0, "0"), (0.12345678, "0.12345678"), (1e9, "1000000000"),
    (0.1 + 0.2, "0.30000000000000004"), (1e-7, "1e-07"), (2.0**53 - 1, "9007199254740991"),
    (1e17, "1e+17"), (np.float64(2.5), "2.5"), (np.int64(7), "7"), (np.float32(0.5), "0.5"),
    (float("nan"), "nan"), (float("inf"), "inf"), (True, "True"), ("abc", "abc"),
    (10**30, str(10**30)),
])
def test_exact_number(value: object, text: str) -> None:
    assert exact_number(value) == text


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=20))
def test_exact_text_reads_back_as_the_same_float(values: list[float]) -> None:
    texts = exact_numbers(np.array(values, dtype=np.float64))
    assert texts.tolist() == [exact_number(v) for v in values]  # one rule, two speeds
    assert [float(t) for t in texts] == values


def test_exact_numbers_of_integers() -> None:
    assert exact_numbers(np.array([3, -12], dtype=np.int64)).tolist() == ["3", "-12"]


@pytest.mark.parametrize("value, plain", [
    (np.int64(3), 3), (np.float64(5.0), 5), (2.5, 2.5), (float("nan"), None),
    (np.bool_(True), True), ("x", "x"), (None, None), (2.0**60, 2.0**60),
])
def test_json_number(value: object, plain: object) -> None:
    out = json_number(value)
    assert out == plain and type(out) is type(plain)


def test_json_number_keeps_infinities() -> None:
    assert json_number(np.float64("-inf")) == -math.inf


# -- the whole-number parser -----------------------------------------------------------------


@pytest.mark.parametrize("value, source, expected", [
    ("5", "cli", 5), (" +5 ", "cli", 5), (5, "toml", 5), (5, "python", 5),
    (np.int64(5), "python", 5), (5, "cli", 5),
])
def test_whole_numbers_accepted(value: object, source: str, expected: int) -> None:
    number = whole_number("k", value, source, 1)  # type: ignore[arg-type]
    assert number == expected and type(number) is int


@pytest.mark.parametrize("value, source, got", [
    ("5", "toml", "'5' (text)"), ("5", "python", "'5' (text)"), ("5.0", "cli", "'5.0' (text)"),
    (5.0, "toml", "5.0"), (5.0, "python", "5.0"), (4.9, "python", "4.9"),
    (True, "python", "True"), (True, "toml", "True"), ("true", "cli", "'true' (text)"),
    (np.bool_(True), "python", "True"), (None, "python", "None"), (0, "python", "0"),
])
def test_whole_numbers_refused(value: object, source: str, got: str) -> None:
    with pytest.raises(InputError) as caught:
        whole_number("k", value, source, 1)  # type: ignore[arg-type]
    assert str(caught.value) == f"k must be a whole number >= 1, got {got}"


def test_model_text_numbers() -> None:
    assert number_from_text("5") == 5 and type(number_from_text("5")) is int
    assert type(number_from_text("5.0")) is float and number_from_text("1e-7") == 1e-7
    with pytest.raises(ValueError):
        number_from_text("abc")


@pytest.mark.parametrize("k", [5.0, "5", True])
def test_mondrian_refuses_a_k_the_command_line_refuses(k: object) -> None:
    """``Mondrian(k=5.0)`` and ``Mondrian(k='5')`` were accepted and recorded as given;
    they are refused now, in the words the methods' option parser uses."""
    with pytest.raises(InputError) as constructed:
        Mondrian(k=k)  # type: ignore[arg-type]
    with pytest.raises(InputError) as parsed:
        methods.get("mondrian").parse_options({"k": k}, "python")
    assert str(constructed.value) == str(parsed.value)
    assert re.fullmatch(r"k must be a whole number >= 1, got \S.*", str(constructed.value))
    assert "\n" not in str(constructed.value)


def test_mondrian_records_whole_numbers_as_ints() -> None:
    mondrian = Mondrian(k=np.int64(5), seed=np.int64(3))  # type: ignore[arg-type]
    assert mondrian.parameters()["k"] == 5 and type(mondrian.parameters()["k"]) is int
    assert type(mondrian.seed) is int
    with pytest.raises(InputError) as caught:
        Mondrian(k=5, seed=1.5)  # type: ignore[arg-type]
    assert str(caught.value) == "seed must be a whole number >= 0, got 1.5"


@pytest.mark.parametrize("build, message", [
    (lambda: KAnonymity(5.0), "k must be a whole number >= 1, got 5.0"),
    (lambda: KAnonymity("5"), "k must be a whole number >= 1, got '5' (text)"),
    (lambda: KAnonymity(True), "k must be a whole number >= 1, got True"),
    (lambda: DistinctLDiversity(2.0), "l must be a whole number >= 1, got 2.0"),
    (lambda: RecursiveCLDiversity(3, 2.0), "l must be a whole number >= 1, got 2.0"),
    (lambda: KEAnonymity(3.0, 10), "k must be a whole number >= 1, got 3.0"),
    (lambda: MUniqueness("4"), "m must be a whole number >= 1, got '4' (text)"),
])
def test_models_take_whole_numbers_as_the_command_line_does(build: Callable[[], object],
                                                            message: str) -> None:
    with pytest.raises(InputError) as caught:
        build()
    assert str(caught.value) == message


def test_models_take_numpy_integers() -> None:
    assert KAnonymity(np.int64(4)).parameters == {"k": 4}
    assert type(MUniqueness(np.int32(3)).m) is int


# -- the HTML report shows numbers as given ----------------------------------------------------


def test_the_report_shows_t_exactly_in_the_verdict_table(tmp_path: Path) -> None:
    """``-t 0.12345678`` showed as ``t=0.123457`` in the verdict table (a ``%g`` of its
    own), while the parameters table showed the exact value."""
    data = make_census(600, seed=1).data
    release = Mondrian(k=5, models=[TCloseness(0.12345678)]).anonymize(
        data, quasi_identifiers=["age", "sex"], sensitive="disease", identifiers=["id"],
        insensitive="*")
    text = render_report(release, data, tmp_path / "report.html").read_text(encoding="utf-8")
    verdicts = re.search(r'<section id="verdicts">.*?</section>', text, re.S)
    assert verdicts is not None
    assert "t=0.12345678" in verdicts[0] and "0.123457" not in verdicts[0]
    assert "0.1235" not in verdicts[0]  # the required level, too, as enforced
    json.dumps(release.parameters)  # (the release's record is still plain JSON)


def test_stored_numbers_keep_every_whole_float_as_its_integer() -> None:
    """The history's stored labels and the code-tree summaries hold whole floats as integers
    at any magnitude (JSON for people stops at 2**53, where floats stop being exact)."""
    assert json_number(np.float64(1e17)) == 1e17 and isinstance(json_number(1e17), float)
    assert stored_number(np.float64(1e17)) == 10**17
    assert type(stored_number(np.float64(1e17))) is int
    assert stored_number(np.float64(2.5)) == 2.5 and stored_number(7.0) == 7
    assert stored_number(float("nan")) is None and stored_number(float("inf")) == float("inf")
    assert stored_number("x") == "x" and stored_number(np.int32(3)) == 3
