"""kb-anonymity test data (anonkit.testdata) on realistic subject programs.

Every released tuple is checked here independently of the engine: the subject function is
imported the ordinary way and run under a plain line tracer written in this file; a
released tuple must produce the same line sequence and the same ending (return or
exception type) as the raw tuples of its bucket. The P-F / P-T / I-T rules, the domains
and distinctness are checked from the raw table directly.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pandas as pd
import pytest

from anonkit.release import Provenance, ReleaseKind
from anonkit.testdata import TestData, generate
from anonkit.verify import verify_release
from locations import FIXTURES

SUBJECTS_DIR = FIXTURES / "subjects"
sys.path.insert(0, str(FIXTURES))

from subjects.generators import SUBJECTS  # noqa: E402

#: P-F needs fields that can take a new value on every path: a bool or a few categories
#: cannot, and a field a path tests for equality is fixed on that path
PF_OPT_OUT = {
    "loan": ["employment", "has_default"],
    "shipping": ["country", "express", "parcels", "postcode"],
    "insurance": ["smoker", "region", "claims"],
    "grading": ["late_days", "track", "honors"],
}


def load_function(spec: str) -> Callable[..., Any]:
    file, _, name = spec.rpartition(":")
    module_spec = importlib.util.spec_from_file_location(f"oracle_{Path(file).stem}", file)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, name)


def line_trace(fn: Callable[..., Any], record: dict[str, Any]) -> tuple[Any, ...]:
    """The lines of fn's file executed, and the ending: an oracle independent of anonkit."""
    filename = fn.__code__.co_filename
    lines: list[tuple[str, int]] = []

    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event == "line":
            lines.append((frame.f_code.co_name, frame.f_lineno))
        return local

    def start(frame: FrameType, event: str, arg: object) -> Any:
        return local if frame.f_code.co_filename == filename else None

    sys.settrace(start)
    try:
        fn(**record)
        ending = "return"
    except Exception as exc:
        ending = type(exc).__name__
    finally:
        sys.settrace(None)
    return (*lines, ending)


def native(row: pd.Series) -> dict[str, Any]:
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}


def check_result(result: TestData, raw: pd.DataFrame, spec: str, option: str,
                 opt_out: list[str] = ()) -> None:
    """Every released tuple: its bucket's path, the option's rule, the domains."""
    fn = load_function(spec)
    data = result.release.data
    assert list(data.columns) == list(raw.columns)
    assert len(data) == len(result.generated) == len(result.bucket_of) > 0
    assert not data.duplicated().any(), "released tuples must be pairwise distinct"
    raw_tuples = set(map(tuple, raw.itertuples(index=False, name=None)))
    buckets = {b.index: b for b in result.buckets}
    trace_of_bucket: dict[int, tuple[Any, ...]] = {}
    for i in range(len(data)):
        released = native(data.iloc[i])
        bucket = buckets[int(result.bucket_of[i])]
        members = raw.iloc[bucket.rows]
        if bucket.index not in trace_of_bucket:
            traces = {line_trace(fn, native(members.iloc[j])) for j in range(min(3, len(members)))}
            assert len(traces) == 1, "the raw tuples of one bucket take one path"
            trace_of_bucket[bucket.index] = traces.pop()
        assert line_trace(fn, released) == trace_of_bucket[bucket.index], \
            f"released tuple {released} leaves its bucket's path"
        values = tuple(released.values())
        generated = result.generated[i]
        assert generated.values == values
        if option in ("P-T", "I-T"):
            assert values not in raw_tuples
            # the chosen field is new to the bucket; when every field's domain is used up
            # on the path (changed == ()), the tuple as a whole is new
            for c in generated.changed:
                assert released[c] not in set(members[c].tolist()), \
                    f"{option}: {c}={released[c]!r} was to be new to its bucket"
        if option == "P-F":
            for c in raw.columns:
                if c not in opt_out:
                    assert released[c] not in set(members[c].tolist()), \
                        f"P-F: {c}={released[c]!r} repeats a value of its bucket"
        if option == "I-T":
            group = raw.iloc[result.groups[bucket.index][generated.group]]
            assert len(group) >= result.k
            for c in generated.kept:
                assert (group[c] == released[c]).all(), f"I-T: {c} is not the group's value"
        # domains: within the observed range, on the observed grid, among the categories
        for c in raw.columns:
            column = raw[c]
            value = released[c]
            if column.dtype == bool:
                assert isinstance(value, bool)
            elif column.dtype.kind in "iu":
                assert isinstance(value, int) and column.min() <= value <= column.max()
            elif column.dtype.kind == "f":
                assert column.min() <= value <= column.max()
                decimals = max(len(repr(float(v)).split(".")[1].rstrip("0")) for v in column)
                assert round(value, decimals) == value
            else:
                assert value in set(column), f"{c}={value!r} is not an observed category"


@pytest.fixture(scope="module")
def tables() -> dict[str, pd.DataFrame]:
    return {name: generator(2000, 11) for name, (_, generator) in SUBJECTS.items()}


@pytest.mark.parametrize("option", ["P-T", "P-F", "I-T"])
@pytest.mark.parametrize("subject", list(SUBJECTS))
def test_subject_programs(subject: str, option: str, tables: dict[str, pd.DataFrame]) -> None:
    spec = f"{SUBJECTS_DIR}/{SUBJECTS[subject][0]}"
    raw = tables[subject]
    opt_out = PF_OPT_OUT[subject] if option == "P-F" else []
    result = generate(spec, raw, k=5, option=option, opt_out=opt_out, seed=3)
    check_result(result, raw, spec, option, opt_out)
    assert not result.problems and not result.failures
    assert result.release.kind is ReleaseKind.SYNTHETIC
    assert (result.release.row_provenance() == Provenance.SYNTHETIC).all()
    verify_release(result.release)
    assert result.release.passed
    # each released tuple stands for a k-group of its bucket
    for generated, bucket in zip(result.generated, result.bucket_of, strict=True):
        assert len(result.groups[int(bucket)][generated.group]) >= 5
    if option == "P-T":
        assert result.coverage >= 0.95
    # the coverage is what the buckets say
    covered = sum(b.size for b in result.buckets if b.released)
    assert result.coverage == pytest.approx(covered / len(raw))


def test_small_buckets_are_reported_with_their_size(tables: dict[str, pd.DataFrame]) -> None:
    spec = f"{SUBJECTS_DIR}/{SUBJECTS['loan'][0]}"
    result = generate(spec, tables["loan"], k=40, option="P-T", seed=1)
    small = [b for b in result.buckets if b.size < 40]
    assert small
    for b in small:
        assert b.released == 0
        assert f"has {b.size} raw tuple" in (b.reason or "")
    assert set(result.bucket_of) <= {b.index for b in result.buckets if b.size >= 40}


def test_pf_names_the_field_that_makes_it_impossible(tables: dict[str, pd.DataFrame]) -> None:
    spec = f"{SUBJECTS_DIR}/{SUBJECTS['loan'][0]}"
    result = generate(spec, tables["loan"], k=5, option="P-F", seed=1)
    reasons = " ".join(b.reason or "" for b in result.buckets)
    assert "has_default" in reasons and "opt" in reasons
    assert len(result.release.data) == 0
    assert not result.release.passed  # nothing to release: writing is refused


def test_pf_table_scope_avoids_every_raw_value(tables: dict[str, pd.DataFrame]) -> None:
    spec = f"{SUBJECTS_DIR}/{SUBJECTS['grading'][0]}"
    raw = tables["grading"]
    result = generate(spec, raw, k=5, option="P-F", pf_scope="table",
                      opt_out=PF_OPT_OUT["grading"] + ["score"], seed=1)
    data = result.release.data
    assert len(data) > 0
    assert not data["attendance"].isin(raw["attendance"]).any()


def test_it_distinct_mode_changes_the_kept_fields(tmp_path: Path) -> None:
    program = tmp_path / "discount.py"
    program.write_text(
        "def discount(amount: int, tier: str, coupon: bool) -> float:\n"
        "    if amount > 500 and tier != 'basic':\n"
        "        return 0.1\n"
        "    return 0.0\n")
    rng = np.random.default_rng(4)
    raw = pd.DataFrame({"amount": rng.integers(0, 1000, 600),
                        "tier": rng.choice(["basic", "silver", "gold", "platinum"], 600),
                        "coupon": rng.random(600) < 0.5})
    spec = f"{program}:discount"
    result = generate(spec, raw, k=5, option="I-T", it_mode="distinct", seed=1)
    check_result(result, raw, spec, "I-T")
    assert len(result.release.data) > 0
    for i, generated in enumerate(result.generated):
        assert generated.kept == ()
        group = raw.iloc[result.groups[int(result.bucket_of[i])][generated.group]]
        row = result.release.data.iloc[i]
        for c in raw.columns:
            if group[c].nunique() == 1 and c not in generated.changed:
                assert row[c] != group[c].iloc[0]
    # the paper's equality keeps them instead
    equal = generate(spec, raw, k=5, option="I-T", seed=1)
    check_result(equal, raw, spec, "I-T")
    assert any(g.kept for g in equal.generated)


def test_random_field_choice_is_seeded(tables: dict[str, pd.DataFrame]) -> None:
    spec = f"{SUBJECTS_DIR}/{SUBJECTS['insurance'][0]}"
    raw = tables["insurance"]
    first = generate(spec, raw, k=5, option="P-T", field_choice="random", seed=5)
    again = generate(spec, raw, k=5, option="P-T", field_choice="random", seed=5)
    check_result(first, raw, spec, "P-T")
    pd.testing.assert_frame_equal(first.release.data, again.release.data)
    assert first.release.seeded
    assert len({g.changed for g in first.generated}) > 1


def test_values_stay_near_the_group(tables: dict[str, pd.DataFrame]) -> None:
    """No solver extremes: a released number lies within its k-group's range, widened by a
    tenth of the domain (the changed field moves to the nearest value new to the bucket)."""
    spec = f"{SUBJECTS_DIR}/{SUBJECTS['loan'][0]}"
    raw = tables["loan"]
    result = generate(spec, raw, k=5, option="P-T", seed=2)
    for i, generated in enumerate(result.generated):
        group = raw.iloc[result.groups[int(result.bucket_of[i])][generated.group]]
        row = result.release.data.iloc[i]
        for c in ("age", "income", "debts", "credit_score"):
            slack = (raw[c].max() - raw[c].min()) / 10
            assert group[c].min() - slack <= row[c] <= group[c].max() + slack


def test_bad_input_is_an_input_error(tmp_path: Path, tables: dict[str, pd.DataFrame]) -> None:
    from anonkit.errors import InputError

    spec = f"{SUBJECTS_DIR}/{SUBJECTS['loan'][0]}"
    raw = tables["loan"]
    for k in (0, 2.5, True):
        with pytest.raises(InputError, match="k must be"):
            generate(spec, raw, k=k, option="P-T")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="unknown option"):
        generate(spec, raw, k=5, option="P-X")
    with pytest.raises(InputError, match="lacks"):
        generate(spec, raw.drop(columns=["age"]), k=5)
    with pytest.raises(InputError, match="does not take"):
        generate(spec, raw.assign(extra=1), k=5)
    with pytest.raises(InputError, match="not found"):
        generate(f"{tmp_path}/nope.py:f", raw, k=5)
    with pytest.raises(InputError, match="no top-level function"):
        generate(f"{spec.rpartition(':')[0]}:nope", raw, k=5)
    holes = raw.astype({"income": float}).copy()
    holes.loc[3, "income"] = np.nan
    with pytest.raises(InputError, match="'income' row 4"):
        generate(spec, holes, k=5)
