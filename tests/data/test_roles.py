"""Every column needs a role: a column nobody named would go out raw. --insensitive
releases columns unchanged (``'*'``: all the others), --drop leaves them out; a hierarchy,
kind or generalization describes a quasi-identifier (or, for the first two, a sensitive
column) and is an error on any other."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from anonkit.cli import main
from anonkit.datasets import load_adult
from history_helpers import people


@pytest.fixture()
def table(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    df = people(np.arange(120))
    df["note"] = "007"  # text that a number would rewrite
    df.to_csv(path, index=False)
    return path


def run(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def base(table: Path, out: Path) -> list[object]:
    return ["anonymize", table, "-o", out, "--qi", "age,zip", "--sensitive", "disease",
            "--id", "pid", "-k", "5"]


def test_a_column_with_no_role_is_an_error(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    code, output = run(*base(table, out))
    assert code == 2, output
    assert "column(s) with no role: sex, income, note" in output
    assert not out.exists()


def test_insensitive_columns_are_released_unchanged(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    code, output = run(*base(table, out), "--insensitive", "sex,note", "--drop", "income")
    assert code == 0, output
    released = pd.read_csv(out, dtype=str)
    assert list(released.columns) == ["age", "zip", "sex", "disease", "note"]
    assert set(released["note"]) == {"007"}
    assert "released unchanged (insensitive): sex, note" in output


def test_insensitive_star_releases_every_other_column(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    code, output = run(*base(table, out), "--insensitive", "*")
    assert code == 0, output
    assert list(pd.read_csv(out).columns) == ["age", "zip", "sex", "disease", "income",
                                              "note"]


@pytest.mark.parametrize(("extra", "fragment"), [
    # the case: sex has a hierarchy but is not a QI; it used to go out raw, silently
    (["--hierarchy", "sex={hierarchy}", "--insensitive", "*"], "--hierarchy sex=...: 'sex' is"),
    (["--kind", "income=numeric", "--insensitive", "*"], "--kind income=...: 'income' is"),
    (["--generalization", "disease=set", "--insensitive", "*"],
     "--generalization disease=...: 'disease' is sensitive"),
    (["--insensitive", "age"], "column 'age' is given two roles"),
    (["--drop", "nope", "--insensitive", "*"], "unknown column 'nope' given as drop"),
])
def test_descriptions_of_columns_that_are_not_quasi_identifiers(
        table: Path, tmp_path: Path, extra: list[str], fragment: str) -> None:
    hierarchy = load_adult().path.parent / "adult_hierarchy_sex.csv"
    out = tmp_path / "r.csv"
    code, output = run(*base(table, out), *[e.format(hierarchy=hierarchy) for e in extra])
    assert code == 2 and fragment in output, output
    assert not out.exists()


def test_job_files_name_roles_too(table: Path, tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    common = (f'input = "{table}"\noutput = "r.csv"\nquasi_identifiers = ["age", "zip"]\n'
              'sensitive = "disease"\nidentifiers = ["pid"]\nk = 5\n')
    job.write_text(common)
    code, output = run("anonymize", "--config", job)
    assert code == 2 and "column(s) with no role: sex, income, note" in output
    job.write_text(common + 'insensitive = "*"\ndrop = ["note"]\n')
    code, output = run("anonymize", "--config", job)
    assert code == 0, output
    assert "note" not in pd.read_csv(tmp_path / "r.csv").columns


def test_shuffle_reorders_every_column_together(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    code, output = run(*base(table, out), "--insensitive", "*", "--shuffle", "--seed", "3")
    assert code == 0, output
    released = pd.read_csv(out)
    kept = pd.read_csv(table)
    assert not released["income"].equals(kept["income"])  # rows moved
    # each row moved whole: every (disease, income) pair of the input is still there
    assert sorted(zip(released["disease"], released["income"], strict=True)) == \
        sorted(zip(kept["disease"], kept["income"], strict=True))
    code, output = run(*base(table, tmp_path / "kept.csv"), "--insensitive", "*")
    assert pd.read_csv(tmp_path / "kept.csv")["income"].equals(kept["income"])


def test_the_console_shows_a_summary_and_verbose_shows_every_figure(table: Path,
                                                                    tmp_path: Path) -> None:
    code, short = run(*base(table, tmp_path / "a.csv"), "--insensitive", "*")
    assert code == 0, short
    assert "PASS k-anonymity (k=5)" in short and "information loss (GCP)" in short
    assert "discernibility" not in short
    lines = short.strip().splitlines()
    assert lines[-1].startswith("release written to") and len(lines) < 12
    code, verbose = run(*base(table, tmp_path / "b.csv"), "--insensitive", "*", "--verbose")
    assert code == 0 and "discernibility" in verbose and "journalist.max" in verbose


def test_a_missing_output_folder_is_created_only_when_asked(table: Path,
                                                           tmp_path: Path) -> None:
    out = tmp_path / "new" / "deeper" / "r.csv"
    code, output = run(*base(table, out), "--insensitive", "*")
    assert code == 2 and "--mkdir" in output and not out.parent.exists()
    code, output = run(*base(table, out), "--insensitive", "*", "--mkdir")
    assert code == 0, output
    assert out.exists()


def test_keys_outside_an_anonymize_table_are_refused(table: Path, tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text(f'k = 3\n[anonymize]\ninput = "{table}"\noutput = "r.csv"\n'
                   'quasi_identifiers = ["age", "zip"]\nsensitive = "disease"\n'
                   'identifiers = ["pid"]\ninsensitive = "*"\nk = 5\n')
    code, output = run("anonymize", "--config", job)
    assert code == 2 and "outside the [anonymize] table" in output


def test_the_report_names_what_made_the_release(table: Path, tmp_path: Path) -> None:
    from anonkit import __version__

    out, report = tmp_path / "r.csv", tmp_path / "r.html"
    code, output = run(*base(table, out), "--insensitive", "*", "--report", report)
    assert code == 0, output
    page = report.read_text()
    assert f"anonkit <span class=\"mono\">{__version__}</span>" in page
    assert str(table) in page and str(out) in page and "command" in page


def test_release_publish_needs_a_role_for_every_column_too(table: Path,
                                                           tmp_path: Path) -> None:
    out, history = tmp_path / "r.csv", tmp_path / "h.db"
    publish = ["release", "publish", table, "--dataset", "ward", "--key", "pid", "--qi",
               "age,zip", "--sensitive", "disease", "-k", "5", "-o", out, "--history", history]
    code, output = run(*publish)
    assert code == 2 and "column(s) with no role: sex, income, note" in output, output
    assert not out.exists()
    code, output = run(*publish, "--insensitive", "sex", "--drop", "income,note")
    assert code == 0, output
    assert list(pd.read_csv(out).columns) == ["age", "zip", "sex", "disease"]


def test_the_python_api_needs_a_role_for_every_column() -> None:
    """As on the command line: a column nobody named is an error naming it, never released
    raw; ``insensitive`` releases columns unchanged (``"*"``: all the others)."""
    import pandas as pd

    from anonkit import Mondrian
    from anonkit.errors import InputError

    df = pd.DataFrame({"age": [20, 21, 22, 23], "zip": [1, 1, 2, 2], "name": list("abcd"),
                       "note": list("wxyz"), "d": list("xyxy")})
    with pytest.raises(InputError, match=r"no role: name, note\. Give every column a role"):
        Mondrian(k=2).anonymize(df, ["age", "zip"], "d")
    with pytest.raises(InputError, match="'d' is given two roles"):
        Mondrian(k=2).anonymize(df, ["age", "zip"], "d", insensitive=["d"])
    release = Mondrian(k=2).anonymize(df, ["age", "zip"], "d", identifiers=["name"],
                                      insensitive=["note"])
    assert list(release.data.columns) == ["age", "zip", "note", "d"]
    assert list(Mondrian(k=2).anonymize(df, ["age", "zip"], "d", identifiers=["name"],
                                        insensitive="*").data.columns) == \
        ["age", "zip", "note", "d"]
