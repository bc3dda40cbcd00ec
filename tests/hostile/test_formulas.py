"""Issue 21, item 9: CSV formula injection. A release holding cells a spreadsheet would run
as formulas is written with a one-line warning naming the columns (never a value), or, with
--neutralize-formulas, with a leading ' in those cells only; a plain number (-3, +1.5e3) is
no formula. The neutralized release still groups as it was verified."""

from __future__ import annotations

import csv
import re
import warnings
from pathlib import Path

import pandas as pd
import pyarrow as pa
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

from anonkit.cli import main
from anonkit.data.formulas import formula_cells, neutralized

PAYLOAD = "=cmd|' /C calc'!A0"


def run(*args: object) -> tuple[int, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # as the command line shows them
        warnings.filterwarnings("ignore", message=".*lies in the folder of the history")
        result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def table(tmp_path: Path) -> Path:
    notes = [PAYLOAD, "-3", "+1.5e3", "@SUM(A1)", "\tx", "fine", "-x", "=1+1"] * 3
    pd.DataFrame({"pid": [f"p{i}" for i in range(len(notes))],
                  "age": [20 + i for i in range(len(notes))], "note": notes,
                  "team": ["=HYPERLINK(x)"] * len(notes)}).to_csv(
        tmp_path / "in.csv", index=False)
    return tmp_path / "in.csv"


def written_notes(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as f:
        return [row["note"] for row in csv.DictReader(f)]


def test_formula_cells_are_warned_of_and_written_as_they_are(tmp_path: Path) -> None:
    source = table(tmp_path)
    code, output = run("anonymize", source, "-o", tmp_path / "r.csv", "--qi", "age,team",
                       "--id", "pid", "--insensitive", "*", "-k", "3")
    assert code == 0, output
    warning = [line for line in output.splitlines() if line.startswith("warning: ")]
    # the released label of a quasi-identifier too (a dictionary-encoded column)
    assert len(warning) == 1 and "39 cell(s) in 'note', 'team'" in warning[0], output
    assert "--neutralize-formulas" in warning[0] and "cmd" not in warning[0]
    assert sorted(written_notes(tmp_path / "r.csv")) == sorted(pd.read_csv(
        source, keep_default_na=False)["note"])


def test_neutralized_cells_get_a_leading_quote_and_numbers_stay(tmp_path: Path) -> None:
    source = table(tmp_path)
    for command in (["anonymize", source, "-o", tmp_path / "r.csv", "--qi", "age,team",
                     "--id", "pid", "--insensitive", "*", "-k", "3"],
                    ["release", "publish", source, "--history", tmp_path / "h.db",
                     "--dataset", "d", "--key", "pid", "--qi", "age", "--insensitive", "*",
                     "-k", "3", "-o", tmp_path / "p.csv"]):
        code, output = run(*command, "--neutralize-formulas")
        assert code == 0 and "warning: 1" not in output, output
    for name in ("r.csv", "p.csv"):
        notes = set(written_notes(tmp_path / name))
        assert notes == {"'" + PAYLOAD, "-3", "+1.5e3", "'@SUM(A1)", "'\tx", "fine", "'-x",
                         "'=1+1"}, name
    with (tmp_path / "r.csv").open(newline="", encoding="utf-8") as f:
        assert {row["team"] for row in csv.DictReader(f)} == {"'=HYPERLINK(x)"}
    code, output = run("check", tmp_path / "r.csv", "--qi", "age,team", "-k", "3")
    assert code == 0, output


@settings(max_examples=300, deadline=None)
@example(["=", "'="])  # (found by this test: they became one cell)
@given(st.lists(st.text(alphabet="=+-@\t\r1.e5ab '", max_size=6), min_size=1, max_size=20))
def test_neutralizing_marks_exactly_the_formula_cells(cells: list[str]) -> None:
    """A cell is marked iff it starts with = + - @ TAB CR and is no plain number; marking is
    one-to-one, so two different cells never become one."""
    def formula(text: str) -> bool:  # OWASP's characters, a plain number excepted
        return text[:1] in ("=", "+", "-", "@", "\t", "\r") and re.fullmatch(
            r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", text) is None

    done = neutralized(pa.table({"c": cells})).column("c").to_pylist()
    assert formula_cells(pa.table({"c": cells})).get("c", 0) == sum(map(formula, cells))
    for before, after in zip(cells, done, strict=True):
        # a cell beginning with ' gets one more: "=" and "'=" must not become one cell
        marked = formula(before) or before.startswith("'")
        assert after == ("'" + before if marked else before)
    assert len(set(done)) == len(set(cells))
