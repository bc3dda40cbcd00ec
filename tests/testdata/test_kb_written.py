"""kb-anonymity (spec 000), checked on the WRITTEN release (issue 27).

Hypothesis draws small programs (``if``/``elif``/``else``, chained and plain comparisons,
arithmetic over the fields incl. ``//``, ``%``, ``/``, ``abs``/``min``/``max``/``round``,
``and``/``or``/``not``, conditional expressions, string equality, membership and prefixes,
``for`` loops over a data-dependent ``range`` (with ``break``), ``while`` loops whose trip
count the fields decide, helpers with early returns and recursion, raised and caught
exceptions, a ``ZeroDivisionError`` at one value) and small raw tables, runs
``anonkit testdata`` through the command line (CSV or Parquet output, every option and its
variants), reads the file it wrote back WITHOUT the package (csv / pyarrow) and checks it
with :mod:`oracles.kb`, which re-executes the program under its own ``sys.settrace``:

* every released tuple takes the path (branch decisions, exceptions, ending) of at least k
  raw tuples -- the file carries no link to the raw tuples, so the specification's grouping
  is used: a released tuple belongs to the bucket of raw tuples with its path;
* no path gets more released tuples than k-groups of k fit in its bucket; nothing twice;
* the option's constraints: P-T / I-T: no released tuple repeats a raw tuple of its path;
  P-F: no field value (but the opted-out ones) repeats one of its path (or of the table);
* completeness (P-T, P-F per bucket): a path of at least k raw tuples that some new tuple
  in the documented domain takes is exercised by the release;
* README: values within the observed ranges / categories; the report's ``released`` and
  ``coverage`` are the file's.

The last two tests show that the oracle can fail: it tells paths apart that share their
lines, and it flags a tampered release.
"""

from __future__ import annotations

import csv
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonkit.cli import main
from oracles.kb import (
    coverage,
    load_function,
    program_path,
    release_problems,
    unexercised_paths,
)

FIELDS = ("a", "b", "x", "s", "flag")
TYPES = {"a": "int", "b": "int", "x": "float", "s": "str", "flag": "bool"}
#: "007" and "red " must come back from the written file as they were (declared str)
CATEGORIES = ("red", "green", "blue", "grey", "007", "red ")

# -- programs ----------------------------------------------------------------------------------
INT_TERMS = ("a", "b", "a + b", "a - b", "2 * a - b", "a % 3", "a // 2", "(a - 5) // 3",
             "(a - b) % 4", "abs(a - 4)", "min(a, b)", "max(a, 2)", "acc", "acc + a",
             "10 // (a - 2)")  # the last raises ZeroDivisionError when a == 2


@st.composite
def conditions(draw: st.DrawFn, depth: int = 0) -> str:
    kinds = ["int", "int", "float", "str", "bool"] + (["and", "or", "not"] if depth < 2 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "int":
        return f"{draw(st.sampled_from(INT_TERMS))} " \
               f"{draw(st.sampled_from(['<', '<=', '>', '>=', '==', '!=']))} " \
               f"{draw(st.integers(-2, 8))}"
    if kind == "float":
        return draw(st.sampled_from([f"x {op} {draw(st.integers(0, 10)) / 2}"
                                     for op in ("<", ">", "<=", ">=")] +
                                    ["x * 2 > a", "x + b < 4.5", "x + 0.1 > 2.6",
                                     "x * 3 >= 7.5", "x / 2 < a / 4", "round(x) == 2",
                                     "abs(x - 2.5) < 1", "min(x, 3.0) > a"]))
    if kind == "str":
        c1, c2 = draw(st.sampled_from(CATEGORIES)), draw(st.sampled_from(CATEGORIES))
        return draw(st.sampled_from([f"s == {c1!r}", f"s != {c1!r}", f"s in ({c1!r}, {c2!r})",
                                     f"s not in ({c1!r}, {c2!r})", f"s.startswith({c1[0]!r})",
                                     "s.endswith('e')"]))
    if kind == "bool":
        return draw(st.sampled_from(["flag", "not flag"]))
    if kind == "not":
        return f"not ({draw(conditions(depth + 1))})"
    return f"({draw(conditions(depth + 1))}) {kind} ({draw(conditions(depth + 1))})"


@st.composite
def blocks(draw: st.DrawFn, depth: int = 0) -> list[str]:
    """Statements of one block (at least one), indented by the caller."""
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3 if depth == 0 else 2))):
        kinds = ["acc", "ternary", "return", "raise", "helper", "try", "countdown"]
        if depth < 2:
            kinds += ["if", "if", "for", "while"]
        kind = draw(st.sampled_from(kinds))
        if kind == "acc":
            lines.append(f"acc = acc + {draw(st.sampled_from(INT_TERMS))}")
        elif kind == "ternary":
            lines.append(f"acc = acc + (1 if {draw(conditions())} else -1)")
        elif kind == "return":
            lines.append(f"return {draw(st.integers(0, 9))}")
            break
        elif kind == "raise":
            lines.append(f"if {draw(conditions())}:")
            lines.append(f"    raise {draw(st.sampled_from(['ValueError', 'KeyError']))}('x')")
        elif kind == "try":
            lines += ["try:", "    acc = acc + 10 // (a - 2)", "except ZeroDivisionError:",
                      f"    acc = acc - {draw(st.integers(1, 5))}"]
        elif kind == "countdown":  # a loop whose trip count the fields decide
            lines += [f"n = {draw(st.sampled_from(['a + b', 'a', 'b * 2 - a']))}",
                      "while n > 0:", f"    n = n - {draw(st.integers(1, 3))}",
                      "acc = acc + n"]
        elif kind == "helper":
            lines.append(f"acc = acc + helper({draw(st.sampled_from(INT_TERMS))})")
        elif kind == "for":
            lines.append(f"for i in range({draw(st.sampled_from(['b', 'min(a, 4)']))}):")
            lines.append(f"    if i {draw(st.sampled_from(['<', '>=', '==']))} "
                         f"{draw(st.sampled_from(['a', 'b - 1', '2']))}:")
            lines.append("        acc = acc + 1")
        elif kind == "while":
            lines.append(f"while acc > {draw(st.integers(-2, 4))}:")
            lines.append(f"    acc = acc - {draw(st.integers(1, 3))}")
        else:
            lines.append(f"if {draw(conditions())}:")
            lines += ["    " + line for line in draw(blocks(depth + 1))]
            for _ in range(draw(st.integers(0, 1))):
                lines.append(f"elif {draw(conditions())}:")
                lines += ["    " + line for line in draw(blocks(depth + 1))]
            if draw(st.booleans()):
                lines.append("else:")
                lines += ["    " + line for line in draw(blocks(depth + 1))]
    return lines


HELPER = """
def helper(v):
    if v > 5:
        return 2
    if v < 0:
        return -1
    return 0
"""


@st.composite
def generated_programs(draw: st.DrawFn) -> str:
    body = ["acc = 0", *draw(blocks()), "return acc"]
    return HELPER + "\n\ndef f(a, b, x, s, flag):\n" + "".join(f"    {line}\n" for line in body)


#: hand-written programs: the constructs together, each a known shape
HAND_WRITTEN = (
    """
def f(a, b, x, s, flag):
    total = 0
    for i in range(b):
        if i < a and (s == "red" or flag):
            total = total + 2
        elif i == 2:
            total = total - 1
    if total > 3:
        return "many"
    elif total > 0 and x >= 2.5:
        return "some"
    if not flag and s in ("green", "grey"):
        raise ValueError("rejected")
    return "none"
""",
    """
def score(a, x):
    if a % 2 == 0:
        return a // 2 + (1 if x > 2.0 else 0)
    return abs(a - 3)


def f(a, b, x, s, flag):
    points = score(a, x)
    while points > 1:
        points = points - 2
    if points == 0 or s.startswith("b"):
        return 1
    if max(a, b) >= 6 and not flag:
        raise KeyError(s)
    return 0
""",
)

HAND_WRITTEN += (
    """
def steps(n):
    if n <= 0:
        return 0
    return 1 + steps(n - 2)


def f(a, b, x, s, flag):
    if 0 < a < 5 <= b + 3:
        return a / (b - 2)
    total = 0
    for i in range(b):
        total = total + a
        if total > 7:
            break
    if total < x * 2 or a * b > 6:
        return steps(a)
    return -1 if flag else s != "007"
""",
)

programs = st.one_of(st.sampled_from(HAND_WRITTEN), generated_programs())


# -- tables ------------------------------------------------------------------------------------
rows = st.tuples(st.integers(-3, 9), st.integers(0, 5),
                 st.integers(-4, 10).map(lambda h: h / 2), st.sampled_from(CATEGORIES),
                 st.booleans())
tables = st.lists(rows, min_size=10, max_size=50)


def write_csv(path: Path, records: Sequence[tuple[Any, ...]]) -> None:
    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(FIELDS)
        out.writerows(records)


def parse(name: str, text: str) -> Any:
    """One written field, by its declared type (independently of the package's reader)."""
    kind = TYPES[name]
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "bool":
        assert text.lower() in ("true", "false"), f"{name}={text!r} is not a bool"
        return text.lower() == "true"
    return text


def read_written(path: Path) -> list[tuple[Any, ...]]:
    """The written release, read with the standard library (CSV) or pyarrow (Parquet)."""
    if path.suffix == ".parquet":
        table = pq.read_table(path)
        assert tuple(table.column_names) == FIELDS, table.column_names
        kinds = {"int": pa.types.is_integer, "float": pa.types.is_floating,
                 "str": pa.types.is_string, "bool": pa.types.is_boolean}
        for name in FIELDS:
            assert kinds[TYPES[name]](table.schema.field(name).type), table.schema
        return [tuple(row[n] for n in FIELDS) for row in table.to_pylist()]
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        assert tuple(header) == FIELDS, header
        return [tuple(parse(n, v) for n, v in zip(FIELDS, line, strict=True))
                for line in reader]


# -- running the command line -----------------------------------------------------------------
def candidates_of(raw: Sequence[tuple[Any, ...]]) -> dict[str, list[Any]]:
    """Values the generator may use (README: numbers within the observed range and on the
    observed decimal grid, strings among the observed categories): every whole number of
    the int fields' range, the halves of x's range (on its grid when x has decimals; the
    table's x are halves), the observed values of the others."""
    columns = list(zip(*raw, strict=True))
    candidates = {n: sorted(set(c)) for n, c in zip(FIELDS, columns, strict=True)}
    for n in ("a", "b"):
        candidates[n] = list(range(min(candidates[n]), max(candidates[n]) + 1))
    xs = candidates["x"]
    step = 1 if all(v == int(v) for v in xs) else 0.5
    candidates["x"] = [xs[0] + i * step for i in range(int((xs[-1] - xs[0]) / step) + 1)]
    return candidates


def domain_problems(raw: Sequence[tuple[Any, ...]], released: Sequence[tuple[Any, ...]]
                    ) -> list[str]:
    """README: released values stay realistic -- numbers within the observed min/max (x on
    the observed decimal grid: one decimal), strings among the observed categories; a bool
    is a bool (the README names no narrower domain for it)."""
    problems = []
    columns = list(zip(*raw, strict=True))
    for r in released:
        for j, name in enumerate(FIELDS):
            value, seen = r[j], columns[j]
            if TYPES[name] in ("int", "float"):
                inside = min(seen) <= value <= max(seen)
                if name == "x":
                    inside = inside and round(value, 1) == value
            elif TYPES[name] == "bool":
                inside = isinstance(value, bool)
            else:
                inside = value in seen
            if not inside:
                problems.append(f"{r}: {name}={value!r} lies outside the observed values")
    return problems


def release(work: Path, source: str, raw: Sequence[tuple[Any, ...]], k: int, option: str,
            seed: int, opt_out: Sequence[str] = (), extra: Sequence[str] = (),
            suffix: str = ".csv") -> tuple[Path, list[tuple[Any, ...]] | None, dict[str, Any]]:
    """Write the program and the table into ``work``, run ``anonkit testdata`` on them and
    read the written release back: (the program's file, the released tuples, or None when
    the command refused to release anything and wrote nothing, the JSON report).
    ``extra``: more options; ``suffix``: the release's format."""
    program, data, out = work / "subject.py", work / "raw.csv", work / f"released{suffix}"
    program.write_text(source)
    write_csv(data, raw)
    args = ["testdata", "--program", f"{program}:f", "--data", str(data), "-k", str(k),
            "--configuration", option, "-o", str(out), "--seed", str(seed), "--json",
            "--workers", "1",
            *[a for n, t in TYPES.items() for a in ("--type", f"{n}={t}")]]
    if opt_out:
        args += ["--opt-out", ",".join(opt_out)]
    result = CliRunner().invoke(main, [*args, *extra])
    assert result.exit_code in (0, 2), result.output
    assert "{" in result.output, result.output
    report, _ = json.JSONDecoder().raw_decode(result.output[result.output.index("{"):])
    # the programs use only the operations the README lists as modelled: no path pins a
    # value, so the package's buckets are the specification's (same path condition)
    assert all(not b["pinned"] for b in report["buckets"]), report["buckets"]
    if result.exit_code == 2:
        assert "no tuple could be released" in result.output, result.output
        assert not out.exists(), "exit 2 must write nothing"
        return program, None, report
    released = read_written(out)
    assert released, "exit 0 with an empty file"
    return program, released, report


# -- the property ------------------------------------------------------------------------------
def release_and_check(source: str, raw: list[tuple[Any, ...]], k: int, option: str,
                      seed: int, opt_out: Sequence[str] = (), extra: Sequence[str] = (),
                      pf_scope: str = "bucket", suffix: str = ".csv") -> int:
    """Release through the command line, read the file back and check it with the oracle;
    the number of tuples released."""
    with tempfile.TemporaryDirectory() as folder:
        program, released, report = release(Path(folder), source, raw, k, option, seed,
                                            opt_out,
                                            [*extra, "--pf-scope", pf_scope]
                                            if option == "P-F" else extra, suffix)
        fn = load_function(program, "f")
        problems = release_problems(fn, FIELDS, raw, released or [], k, option, opt_out,
                                    pf_scope)
        problems += domain_problems(raw, released or [])
        if option == "P-T" or (option == "P-F" and pf_scope == "bucket"):
            problems += unexercised_paths(fn, FIELDS, raw, released or [], k, option,
                                          candidates_of(raw), opt_out)
        assert not problems, "\n".join([source, *problems])
        # the report's numbers are the file's (README: the coverage is the share of raw
        # tuples whose path the release exercises)
        assert report["released"] == len(released or [])
        assert report["coverage"] == pytest.approx(coverage(fn, FIELDS, raw, released or []))
        return len(released or [])


SETTINGS = settings(max_examples=8, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
ks = st.sampled_from([2, 3, 4])
seeds = st.integers(0, 1000)
field_choices = st.sampled_from([[], ["--field-choice", "random"]])
suffixes = st.sampled_from([".csv", ".parquet"])


@SETTINGS
@given(programs, tables, ks, seeds, field_choices, suffixes)
def test_pt_release_keeps_every_path(source: str, raw: list[tuple[Any, ...]], k: int,
                                     seed: int, extra: list[str], suffix: str) -> None:
    release_and_check(source, raw, k, "P-T", seed, extra=extra, suffix=suffix)


@SETTINGS
@given(programs, tables, ks, seeds,
       st.sampled_from([("s", "flag"), ("s", "flag", "b"), ("flag",)]),
       st.sampled_from(["bucket", "table"]), suffixes)
def test_pf_release_keeps_every_path(source: str, raw: list[tuple[Any, ...]], k: int,
                                     seed: int, opt_out: tuple[str, ...], scope: str,
                                     suffix: str) -> None:
    release_and_check(source, raw, k, "P-F", seed, opt_out, pf_scope=scope, suffix=suffix)


@SETTINGS
@given(programs, tables, ks, seeds, field_choices,
       st.sampled_from([[], ["--it-mode", "distinct"]]), suffixes)
def test_it_release_keeps_every_path(source: str, raw: list[tuple[Any, ...]], k: int,
                                     seed: int, extra: list[str], mode: list[str],
                                     suffix: str) -> None:
    release_and_check(source, raw, k, "I-T", seed, extra=[*extra, *mode], suffix=suffix)


# -- the oracle can fail -----------------------------------------------------------------------
def test_the_path_oracle_sees_decisions_loops_and_exceptions(tmp_path: Path) -> None:
    """Decisions inside one line (short-circuit), a loop's trip count and an exception each
    make another path; other values down the same branches do not."""
    program = tmp_path / "paths.py"
    program.write_text(
        "def helper(n):\n"
        "    if n > 2:\n"
        "        return True\n"
        "    return False\n"
        "\n"
        "def f(a, b):\n"
        "    if a > 1 and b > 1:\n"
        "        return 1\n"
        "    for i in range(b):\n"
        "        pass\n"
        "    if helper(a) or a < -5:\n"
        "        raise ValueError('x')\n"
        "    return 0\n")
    fn = load_function(program, "f")

    def path(a: int, b: int) -> Any:
        return program_path(fn, {"a": a, "b": b})

    # the same lines run for (2, 0) and (0, 0); `b > 1` is decided only for the first
    assert path(2, 0) != path(0, 0)
    assert len(path(2, 0).events) == len(path(0, 0).events) + 1
    assert path(0, 1) != path(0, 0)  # one more trip of the loop
    assert path(3, 0).ending == "raise ValueError" and path(0, 0).ending == "return"
    assert any("helper" in line for line in path(3, 0).describe())
    assert path(5, 2) == path(9, 3)
    assert path(-1, 0) == path(0, 0) != path(-9, 0)


#: a program with a rare path (a > 5 and s == "red", raising) and a path no raw tuple takes
#: (b > 2)
TAMPER_PROGRAM = """
def f(a, b, x, s, flag):
    if a > 5 and s == "red":
        raise ValueError("rare")
    for i in range(b):
        if i >= 2:
            return 2
    if x < 2.5 or flag:
        return 0
    return 1
"""


def tamper_table() -> list[tuple[Any, ...]]:
    table = [(a, b, x, s, flag) for a in (0, 1, 2, 3) for b in (0, 1, 2) for x in (1.0, 3.5)
             for s, flag in (("blue", False), ("green", True))]
    return [*table, (7, 1, 3.0, "red", False)]


def test_the_release_oracle_flags_a_tampered_release(tmp_path: Path) -> None:
    raw = tamper_table()
    k = 3
    program, released, _ = release(tmp_path, TAMPER_PROGRAM, raw, k, "P-T", 1)
    fn = load_function(program, "f")
    assert released, "the fixed example must release something (the property is not vacuous)"
    assert release_problems(fn, FIELDS, raw, released, k, "P-T") == []
    assert unexercised_paths(fn, FIELDS, raw, released, k, "P-T", candidates_of(raw)) == []

    def flagged(tuples: list[tuple[Any, ...]], option: str = "P-T") -> str:
        problems = release_problems(fn, FIELDS, raw, tuples, k, option)
        assert problems, tuples
        return "\n".join(problems)

    assert "released 2 times" in flagged([*released, released[0]])
    assert "repeats a raw tuple" in flagged([*released, raw[0]])
    assert "fewer than k=3" in flagged([*released, (6, 1, 3.0, "red", False)])
    assert "no raw tuple takes" in flagged([*released, (0, 3, 1.0, "blue", False)])
    # the path b == 0, x < 2.5 has 8 raw tuples: at most 2 k-groups of 3
    path_zero = [(a, 0, 0.5, "grey", True) for a in range(-3, 6)]
    assert "at most 2 k-groups" in flagged(path_zero)
    # P-F: a field value of the path's raw tuples
    assert "P-F: " in flagged([(0, 0, 1.0, "blue", True)], "P-F")
    # a path left out although a new tuple takes it
    first = program_path(fn, dict(zip(FIELDS, released[0], strict=True)))
    rest = [r for r in released
            if program_path(fn, dict(zip(FIELDS, r, strict=True))) != first]
    missing = unexercised_paths(fn, FIELDS, raw, rest, k, "P-T", candidates_of(raw))
    assert len(missing) == 1 and "has no released tuple" in missing[0]
    assert coverage(fn, FIELDS, raw, rest) < coverage(fn, FIELDS, raw, released)
