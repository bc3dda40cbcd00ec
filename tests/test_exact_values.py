"""Values are kept exactly as written: ``check`` compares released labels as text (no
float merging big integers or 02139 with 2139), and ``anonymize`` never rounds a number
float64 cannot hold: it keeps it as text, or refuses it naming the column."""

from __future__ import annotations

import decimal
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from anonkit.cli import main

BIG = ["12345678901234567890", "12345678901234567891", "12345678901234567892"]
ROUNDED = "1.2345678901234567e+19"


def run(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- check --------------------------------------------------------------------------------

def test_check_keeps_big_integers_apart(tmp_path: Path) -> None:
    src = write(tmp_path / "r.csv", "q,s\n" + "".join(f"{v},a\n" for v in BIG))
    code, output = run("check", src, "--qi", "q", "-k", "2")
    assert code == 2, output
    assert "measured k = 1" in output and "3 equivalence classes" in output
    assert "q='12345678901234567890'" in output and ROUNDED not in output


def test_check_keeps_codes_apart_from_numbers(tmp_path: Path) -> None:
    src = write(tmp_path / "r.csv", "q,s\n02139,a\n2139,b\n2139.0,c\n")
    code, output = run("check", src, "--qi", "q", "-k", "2")
    assert code == 2 and "measured k = 1" in output, output
    # a Parquet release: values as text where that is lossless; 2139 and '02139' differ
    table = pa.table({"q": pa.array(["02139", "2139", "2139"]),
                      "n": pa.array([2**63 + 1, 2**63, 2**63], pa.uint64())})
    pq.write_table(table, tmp_path / "r.parquet")
    code, output = run("check", tmp_path / "r.parquet", "--qi", "q", "-k", "2")
    assert code == 2 and "measured k = 1" in output, output
    code, output = run("check", tmp_path / "r.parquet", "--qi", "n", "-k", "2")
    assert code == 2 and "n='9223372036854775809'" in output, output


def test_check_groups_bytes_that_have_no_text_form_as_they_are(tmp_path: Path) -> None:
    """A Parquet binary column that is no UTF-8 text cannot be read as text; its values are
    compared as the bytes they are."""
    pq.write_table(pa.table({"b": pa.array([b"\xff", b"\xff", b"\xfe", b"\xfe"], pa.binary()),
                             "s": ["x", "y", "x", "y"]}), tmp_path / "r.parquet")
    code, output = run("check", tmp_path / "r.parquet", "--qi", "b", "-k", "2")
    assert code == 0 and "2 equivalence classes" in output, output
    code, output = run("check", tmp_path / "r.parquet", "--qi", "b", "-k", "3")
    assert code == 2 and "measured k = 2" in output, output


def test_check_takes_mixed_codes_in_a_sensitive_column(tmp_path: Path) -> None:
    """ICD codes such as 250 and V45 are text: no 'mixes numbers and text' refusal."""
    rows = ["A,250", "A,V45", "A,250", "B,250", "B,E11", "B,V45", "B,401"]
    src = write(tmp_path / "r.csv", "q,icd\n" + "\n".join(rows) + "\n")
    code, output = run("check", src, "--qi", "q", "--sensitive", "icd", "-l", "2")
    assert code == 0, output
    code, output = run("check", src, "--qi", "q", "--sensitive", "icd", "-l", "3")
    assert code == 2 and "FAIL distinct l-diversity" in output, output
    assert "mixes numbers and text" not in output


def test_check_of_anonkits_own_release_with_mixed_codes(tmp_path: Path) -> None:
    ages = [23, 25, 31, 37, 44, 48, 52, 58]
    codes = ["250", "V45", "401", "E11", "250", "V45", "401", "E11"]
    src = write(tmp_path / "in.csv", "age,icd\n" + "".join(
        f"{a},{c}\n" for a, c in zip(ages, codes, strict=True)))
    out = tmp_path / "release.csv"
    code, output = run("anonymize", src, "-o", out, "--qi", "age", "--sensitive", "icd",
                       "-k", "2", "-l", "2", "--kind", "icd=categorical")
    assert code == 0, output
    code, output = run("check", out, "--qi", "age", "--sensitive", "icd", "-k", "2", "-l", "2")
    assert code == 0, output
    code, output = run("check", out, "--qi", "age", "--sensitive", "icd", "-l", "3")
    assert code == 2 and "mixes numbers and text" not in output, output


def test_check_kind_declares_a_numeric_sensitive_column(tmp_path: Path) -> None:
    rows = ["a,1000", "a,1100", "b,9000", "b,9100"]
    src = write(tmp_path / "r.csv", "q,salary\n" + "\n".join(rows) + "\n")
    # categorical (the default): every value is as far from every other
    code, output = run("check", src, "--qi", "q", "--sensitive", "salary", "-t", "0.4",
                       "--json")
    verdict = json.loads(output)["verdicts"][0]
    assert verdict["details"]["distance"] == "equal" and verdict["measured"] == 0.5
    assert code == 2
    code, output = run("check", src, "--qi", "q", "--sensitive", "salary", "-t", "0.4",
                       "--kind", "salary=numeric", "--json")
    verdict = json.loads(output)["verdicts"][0]
    assert verdict["details"]["distance"] == "ordered", output
    assert verdict["measured"] == pytest.approx(1 / 3) and code == 0
    code, output = run("check", src, "--qi", "q", "--sensitive", "salary",
                       "--model", "ke=2,50", "--kind", "salary=numeric")
    assert code == 0 and "PASS (k,e)-anonymity" in output, output
    code, output = run("check", src, "--qi", "q", "--sensitive", "salary",
                       "--model", "ke=2,500", "--kind", "salary=numeric")
    assert code == 2 and "FAIL (k,e)-anonymity" in output, output
    code, output = run("check", src, "--qi", "q", "--sensitive", "salary",
                       "--model", "ke=2,50")
    assert code == 2 and output.startswith("error: ") and "'salary'" in output, output


@pytest.mark.parametrize(("kind", "fragments"), [
    ("q=numeric", ("'q' is not a sensitive column",)),
    ("salary=money", ("unknown kind 'money'", "numeric, categorical, ordinal, date")),
    ("salary=ordinal", ("ordinal needs the order",)),
    ("salary", ("--kind takes NAME=VALUE",)),
])
def test_check_kind_errors(tmp_path: Path, kind: str, fragments: tuple[str, ...]) -> None:
    src = write(tmp_path / "r.csv", "q,salary\na,1\na,2\n")
    code, output = run("check", src, "--qi", "q", "--sensitive", "salary", "-k", "1",
                       "--kind", kind)
    assert code == 2, output
    assert output.startswith("error: ") and len(output.strip().splitlines()) == 1, output
    for fragment in fragments:
        assert fragment in output, output


def test_check_refuses_a_declared_numeric_column_that_is_not(tmp_path: Path) -> None:
    src = write(tmp_path / "r.csv", "q,s\na,12345678901234567891\na,5\n")
    code, output = run("check", src, "--qi", "q", "--sensitive", "s", "-l", "2",
                       "--kind", "s=numeric")
    assert code == 2 and "'s' is numeric but row 0 has an integer that float64" in output
    assert "12345678901234567891" not in output  # a sensitive value is never shown
    assert "--kind s=categorical" in output


# -- anonymize ----------------------------------------------------------------------------

def big_input(tmp_path: Path) -> Path:
    rows = [f"{BIG[i % 3]},{BIG[(i + 1) % 3]},{20 + i}" for i in range(9)]
    return write(tmp_path / "in.csv", "q,s,age\n" + "\n".join(rows) + "\n")


def test_anonymize_keeps_big_integers_exact(tmp_path: Path) -> None:
    src = big_input(tmp_path)
    out = tmp_path / "release.csv"
    code, output = run("anonymize", src, "-o", out, "--qi", "q,age", "--sensitive", "s",
                       "-k", "3")
    assert code == 0, output
    text = out.read_text()
    assert ROUNDED not in text and "e+19" not in text
    lines = text.splitlines()
    assert lines[0] == "q,s,age"
    # the sensitive column is released as it was written, cell for cell
    assert [line.split(",")[-2] for line in lines[1:]] == [BIG[(i + 1) % 3] for i in range(9)]
    # every released QI label holds the exact raw value of its row
    for i, line in enumerate(lines[1:]):
        assert BIG[i % 3] in line.rsplit(",", 2)[0], line
    code, output = run("check", out, "--qi", "q,age", "--sensitive", "s", "-k", "3")
    assert code == 0, output


@pytest.mark.parametrize("column", ["q", "s"])
def test_anonymize_refuses_to_round_a_declared_numeric_column(tmp_path: Path,
                                                              column: str) -> None:
    src = big_input(tmp_path)
    out = tmp_path / "release.csv"
    code, output = run("anonymize", src, "-o", out, "--qi", "q,age", "--sensitive", "s",
                       "-k", "3", "--kind", f"{column}=numeric")
    assert code == 2, output
    assert f"column {column!r} is numeric but line 2 of the file" in output
    assert "float64 cannot hold exactly" in output and f"--kind {column}=categorical" in output
    assert not out.exists()


def test_anonymize_parquet_with_uint64_and_decimal_columns(tmp_path: Path) -> None:
    n = 8
    table = pa.table({
        "u": pa.array([2**63 + i for i in range(n)], pa.uint64()),
        "d": pa.array([decimal.Decimal(12345678901234567890 + i) for i in range(n)],
                      pa.decimal128(38, 0)),
        "s": pa.array([2**63 + 7 * i for i in range(n)], pa.uint64()),
        "cents": pa.array([decimal.Decimal("-1.13"), decimal.Decimal("0.30")] * 4,
                          pa.decimal128(10, 2)),
    })
    src = tmp_path / "in.parquet"
    pq.write_table(table, src)
    out = tmp_path / "release.csv"
    code, output = run("anonymize", src, "-o", out, "--qi", "u,d", "--sensitive", "s",
                       "-k", "2", "--insensitive", "cents")
    assert code == 0, output
    text = out.read_text()
    assert "e+18" not in text and "e+19" not in text
    assert "[9223372036854775808-9223372036854775809]" in text  # uint64 ranges, exact
    assert "12345678901234567891" in text  # the decimal column as its exact text
    assert [line.split(",")[-2] for line in text.splitlines()[1:]] == \
        [str(2**63 + 7 * i) for i in range(n)]
    # released unchanged: the decimals as written
    assert {line.split(",")[-1] for line in text.splitlines()[1:]} == {"-1.13", "0.30"}
