"""The command line: happy paths, config files, and every bad input the Core issue lists.

A bad input must give a one-line error naming the culprit, exit code 2, no output file, and
leave the input untouched.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from anonkit.cli import main
from anonkit.datasets import load_adult

QIS = "sex,age,race,marital-status,education,native-country,workclass,occupation"


@pytest.fixture(scope="module")
def adult_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("adult") / "adult.csv"
    load_adult().data.head(3000).to_csv(path, sep=";", index=False)
    return path


def run(*args: object) -> tuple[int, str]:
    """The command line. An ``anonymize`` given neither a job file nor --insensitive
    releases the columns it does not name unchanged (--insensitive '*'): these tests are
    about other things; tests/test_roles.py tests that every column needs a role."""
    argv = [str(a) for a in args]
    if argv[:1] == ["anonymize"] and "--config" not in argv and "--insensitive" not in argv:
        argv += ["--insensitive", "*"]
    result = CliRunner().invoke(main, argv)
    return result.exit_code, result.output


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_refused(code: int, output: str, *fragments: str, out: Path | None = None) -> None:
    assert code == 2, output
    lines = [line for line in output.strip().splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    for fragment in fragments:
        assert fragment in output, (fragment, output)
    if out is not None:
        assert not out.exists()
        assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}")]


def test_anonymize_writes_a_verified_release(adult_csv: Path, tmp_path: Path) -> None:
    before = digest(adult_csv)
    out = tmp_path / "release.csv"
    code, output = run("anonymize", adult_csv, "-o", out, "--qi", QIS,
                       "--sensitive", "salary-class", "-k", "5", "-l", "2")
    assert code == 0, output
    assert "PASS k-anonymity" in output and "PASS" in output
    assert digest(adult_csv) == before
    released = pd.read_csv(out)
    assert len(released) == 3000
    sizes = released.groupby(QIS.split(","), dropna=False).size()
    assert sizes.min() >= 5


def test_check_command_judges_any_table(adult_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "release.csv"
    assert run("anonymize", adult_csv, "-o", out, "--qi", QIS, "-k", "7")[0] == 0
    code, output = run("check", out, "--qi", QIS, "-k", "7", "--json")
    assert code == 0, output
    verdict = json.loads(output)["verdicts"][0]
    assert verdict["passed"] and verdict["measured"] >= 7
    # the raw input is far from 7-anonymous: the check fails and says how far
    code, output = run("check", adult_csv, "--qi", QIS, "-k", "7")
    assert code == 2 and "FAIL k-anonymity" in output


def test_config_file_and_overrides(adult_csv: Path, tmp_path: Path) -> None:
    config = tmp_path / "job.toml"
    config.write_text(
        f'input = "{adult_csv}"\noutput = "from-config.csv"\n'
        f'quasi_identifiers = {json.dumps(QIS.split(","))}\nsensitive = "salary-class"\n'
        'k = 4\n[generalization]\nage = "range"\n', encoding="utf-8")
    code, output = run("anonymize", "--config", config, "-k", "6", "--json")
    assert code == 0, output
    outcome = json.loads(output)
    assert Path(outcome["output"]) == tmp_path / "from-config.csv"
    assert outcome["verdicts"][0]["required"] == 6  # the command line wins


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        (b"", ("empty",)),
        (b"a;b;c\n", ("no data rows",)),
        (b"age;age;s\n1;2;x\n", ("duplicate column", "age")),
        (b"age;s\n30;x\n\xff\xfe;y\n", ("UTF-8",)),
    ],
    ids=["empty", "header-only", "duplicate-columns", "non-utf8"],
)
def test_unreadable_inputs(tmp_path: Path, content: bytes, fragments: tuple[str, ...]) -> None:
    src = tmp_path / "in.csv"
    src.write_bytes(content)
    out = tmp_path / "out.csv"
    code, output = run("anonymize", src, "-o", out, "--qi", "age", "-k", "1")
    assert_refused(code, output, *fragments, out=out)
    assert src.read_bytes() == content


def test_unknown_qi_column(adult_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.csv"
    code, output = run("anonymize", adult_csv, "-o", out, "--qi", "age,salary", "-k", "2")
    assert_refused(code, output, "'salary'", "age", out=out)


@pytest.mark.parametrize("k", ["0", "-3", "3001"])
def test_k_out_of_range(adult_csv: Path, tmp_path: Path, k: str) -> None:
    out = tmp_path / "o.csv"
    code, output = run("anonymize", adult_csv, "-o", out, "--qi", "age,sex", "-k", k)
    assert_refused(code, output, "k", out=out)


def test_l_larger_than_distinct_sensitive_values(adult_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.csv"
    code, output = run("anonymize", adult_csv, "-o", out, "--qi", "age,sex",
                       "--sensitive", "salary-class", "-k", "2", "-l", "3")
    assert_refused(code, output, "l=3", "salary-class", "2 distinct", out=out)


def test_missing_qi_values_refused_unless_allowed(tmp_path: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_text("age,zip,s\n30,801,a\n,802,b\n41,803,a\n52,,b\n", encoding="utf-8")
    out = tmp_path / "o.csv"
    code, output = run("anonymize", src, "-o", out, "--qi", "age,zip", "-k", "2")
    assert_refused(code, output, "'age'", "missing", "--allow-missing", out=out)
    code, output = run("anonymize", src, "-o", out, "--qi", "age,zip", "-k", "2",
                       "--allow-missing")
    assert code == 0, output
    assert len(pd.read_csv(out, keep_default_na=False)) == 4


def test_mixed_types_in_numeric_column(tmp_path: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_text("age,s\n" + "".join(f"{20 + i},a\n" for i in range(8)) + "forty,b\n",
                   encoding="utf-8")
    out = tmp_path / "o.csv"
    code, output = run("anonymize", src, "-o", out, "--qi", "age", "-k", "2")
    assert_refused(code, output, "'age'", "forty", out=out)


def test_hierarchy_missing_values_and_bad_depth(adult_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.csv"
    partial = tmp_path / "sex.csv"
    partial.write_text("Male;*\n", encoding="utf-8")
    code, output = run("anonymize", adult_csv, "-o", out, "--qi", "sex,age", "-k", "2",
                       "--hierarchy", f"sex={partial}")
    assert_refused(code, output, "'sex'", "Female", out=out)
    two_roots = tmp_path / "sex2.csv"
    two_roots.write_text("Male;Person;*\nFemale;Person\n", encoding="utf-8")
    code, output = run("anonymize", adult_csv, "-o", out, "--qi", "sex,age", "-k", "2",
                       "--hierarchy", f"sex={two_roots}")
    assert_refused(code, output, "inconsistent depth", out=out)


def test_malformed_toml(tmp_path: Path) -> None:
    config = tmp_path / "job.toml"
    config.write_text('k = [5\nqi = "a"\n', encoding="utf-8")
    code, output = run("anonymize", "--config", config)
    assert_refused(code, output, "job.toml", "TOML")


def test_output_equal_to_input_is_refused(adult_csv: Path) -> None:
    before = digest(adult_csv)
    code, output = run("anonymize", adult_csv, "-o", adult_csv, "--qi", "age", "-k", "2")
    assert_refused(code, output, "is the input (", "nothing was written")
    assert digest(adult_csv) == before


def test_console_entry_keeps_exit_codes_and_output(adult_csv: Path, tmp_path: Path) -> None:
    """``run`` leaves through os._exit: streams must be flushed and codes kept."""
    import subprocess
    import sys

    def entry(*args: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "anonkit", *map(str, args)],
                              capture_output=True, text=True, check=False)

    out = tmp_path / "release.csv"
    ok = entry("anonymize", adult_csv, "-o", out, "--qi", "age,sex", "-k", "5",
               "--insensitive", "*")
    assert ok.returncode == 0, ok.stderr
    assert "release written to" in ok.stdout and out.exists()
    missing = entry("anonymize", tmp_path / "nope.csv", "-o", out, "--qi", "age", "-k", "2")
    assert missing.returncode == 2 and missing.stderr.startswith("error: input file not found")
    usage = entry("anonymize", "--no-such-option")
    assert usage.returncode == 2 and "No such option" in usage.stderr


def test_a_report_that_cannot_be_written_leaves_no_release(adult_csv: Path,
                                                          tmp_path: Path) -> None:
    out = tmp_path / "release.csv"
    code, output = run("anonymize", adult_csv, "-o", out, "--qi", "age,sex", "-k", "5",
                       "--report", tmp_path / "no-such-folder" / "r.html")
    assert_refused(code, output, "no-such-folder", out=out)
    code, output = run("anonymize", adult_csv, "-o", out, "--qi", "age,sex", "-k", "5",
                       "--report", out)
    assert_refused(code, output, "are one file", out=out)
    report = tmp_path / "r.html"
    code, output = run("anonymize", adult_csv, "-o", out, "--qi", "age,sex", "-k", "5",
                       "--report", report)
    assert code == 0, output
    assert out.exists() and report.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_tricky_set_labels_and_missing_cells_read_back(tmp_path: Path) -> None:
    """Values holding commas, braces, quotes or the text "missing", and missing cells,
    released as sets: the CSV reads back (``anonkit check``) into the release's own classes,
    and every released label covers its row's original value."""
    from anonkit.labels import covers

    tricky = ["a,b", "{c}", 'say "x"', "missing", None, "plain", "d, e", "}"]
    n = 96
    df = pd.DataFrame({"city": [tricky[i % len(tricky)] for i in range(n)],
                       "age": [20 + (i * 7) % 40 for i in range(n)],
                       "disease": [["flu", "hiv", "cold"][i % 3] for i in range(n)]})
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    out = tmp_path / "out.csv"
    code, output = run("anonymize", src, "-o", out, "--qi", "city,age", "--sensitive",
                       "disease", "-k", "4", "--allow-missing", "--json")
    assert code == 0, output
    n_classes = json.loads(output)["metrics"]["n_classes"]
    released = pd.read_csv(out, keep_default_na=False, na_values=[""])
    original = pd.read_csv(src, keep_default_na=False, na_values=[""])
    # rows keep the input's order from the command line unless shuffled
    for label, value in zip(released["city"], original["city"], strict=True):
        assert covers(None if pd.isna(label) else label, None if pd.isna(value) else value)
    code, output = run("check", out, "--qi", "city,age", "--sensitive", "disease", "-k", "4",
                       "--json")
    assert code == 0, output
    assert json.loads(output)["n_classes"] == n_classes


def test_a_categorical_column_with_a_missing_cell_keeps_its_text(tmp_path: Path) -> None:
    """``80101`` declared categorical stays ``80101`` when a cell of the column is missing
    (read as numbers, the column came out as ``80101.0``, and a hierarchy for it was refused
    as not covering ``80101.0``); published through the history, likewise (issue 27, item 1)."""
    table = tmp_path / "zips.csv"
    table.write_text("pid,zip,age,d\n1,80101,30,x\n2,80102,31,y\n3,,32,x\n"
                     "4,80101,33,y\n5,80102,34,x\n6,80101,35,y\n")
    hierarchy = tmp_path / "zip.csv"
    hierarchy.write_text("80101;801**;*\n80102;801**;*\n")
    out = tmp_path / "r.csv"
    code, output = run("anonymize", table, "-o", out, "--qi", "zip", "--id", "pid",
                       "--kind", "zip=categorical", "--allow-missing", "--sensitive", "d",
                       "-k", "2", "--generalization", "zip=set")
    assert code == 0, output
    released = out.read_text()
    assert "80101," in released and ".0" not in released
    code, output = run("anonymize", table, "-o", tmp_path / "h.csv", "--qi", "zip", "--id",
                       "pid", "--kind", "zip=categorical", "--allow-missing", "--sensitive",
                       "d", "-k", "2", "--hierarchy", f"zip={hierarchy}")
    assert code == 0 and "80101.0" not in output, output
    code, output = run("release", "publish", table, "--dataset", "z", "--key", "pid",
                       "--qi", "zip", "--kind", "zip=categorical", "--allow-missing",
                       "--sensitive", "d", "--insensitive", "*", "-k", "2",
                       "-o", tmp_path / "p.csv", "--history", tmp_path / "z.db")
    assert code == 0, output
    assert ".0" not in (tmp_path / "p.csv").read_text()
