"""A steward's second day: the minor items found by a new user (one test each)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import anonkit
from anonkit.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"


def small_table() -> pd.DataFrame:
    return pd.DataFrame({"age": [30, 31, 32, 33, 34, 35, 36, 37],
                         "zip": ["1", "1", "2", "2", "3", "3", "4", "4"],
                         "sex": ["m", "f"] * 4, "disease": list("abcdabcd")})


def test_quasi_identifiers_given_as_one_string_are_split_on_commas() -> None:
    df = small_table()
    as_text = anonkit.anonymize(df, "mondrian", quasi_identifiers="age, zip,sex",
                                sensitive="disease", k=2, seed=1)
    as_list = anonkit.anonymize(df, "mondrian", quasi_identifiers=["age", "zip", "sex"],
                                sensitive="disease", k=2, seed=1)
    assert as_text.schema.quasi_identifiers == ["age", "zip", "sex"]
    pd.testing.assert_frame_equal(as_text.data, as_list.data)


def test_a_dask_release_is_a_folder_and_check_names_it(tmp_path: Path) -> None:
    csv = tmp_path / "t.csv"
    small_table().to_csv(csv, index=False)
    named_as_file = tmp_path / "release.csv"
    result = CliRunner().invoke(main, [
        "anonymize", str(csv), "-o", str(named_as_file), "--qi", "age,zip", "--sensitive",
        "disease", "--insensitive", "*", "-k", "2", "--engine", "dask", "--workers", "1"])
    assert result.exit_code == 2
    assert "writes a folder of Parquet files: give a folder name" in result.output
    assert not named_as_file.exists()
    folder = tmp_path / "parts"
    folder.mkdir()
    small_table().to_parquet(folder / "part-00000.parquet")
    checked = CliRunner().invoke(main, ["check", str(folder), "--qi", "age,zip", "-k", "2"])
    assert checked.exit_code == 2
    assert "is a folder of Parquet files" in checked.output
    assert "--engine dask" in checked.output


@pytest.mark.parametrize(("name", "head", "said"), [
    ("book.xlsx", None, "an Excel workbook (.xlsx)"),
    ("book.csv", None, "an Excel workbook (.xlsx)"),  # misnamed: the bytes tell
    ("old.xls", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100), "an Excel 97-2003 workbook"),
    ("data.csv", b"PAR1" + bytes(100), "a Parquet file"),
    ("data.db", b"SQLite format 3\x00" + bytes(100), "an SQLite database"),
])
def test_a_spreadsheet_or_binary_table_is_named_not_called_an_encoding(
        tmp_path: Path, name: str, head: bytes | None, said: str) -> None:
    path = tmp_path / name
    if head is None:
        with zipfile.ZipFile(path, "w") as book:
            book.writestr("[Content_Types].xml", "<Types/>")
            book.writestr("xl/workbook.xml", "<workbook/>")
    else:
        path.write_bytes(head)
    for extra in ([], ["--encoding", "latin-1"]):
        result = CliRunner().invoke(main, ["check", str(path), "--qi", "a", "-k", "2", *extra])
        assert result.exit_code == 2
        line = result.output.strip()
        assert said in line and "not CSV text" in line, line
        assert "--encoding" not in line and len(line.splitlines()) == 1


def test_testdata_names_its_configuration_apart_from_method_options() -> None:
    testdata_help = CliRunner().invoke(main, ["testdata", "--help"]).output
    publish_help = CliRunner().invoke(main, ["release", "publish", "--help"]).output
    assert "--configuration [P-F|P-T|I-T]" in testdata_help
    assert "--option" not in testdata_help  # the old name still works, unlisted
    assert "--option NAME=VALUE" in publish_help


def _every_help() -> str:
    runner = CliRunner()
    texts = [runner.invoke(main, ["--help"]).output,
             runner.invoke(main, ["methods"]).output]
    for command in ("anonymize", "check", "risk", "testdata", "demo", "methods"):
        texts.append(runner.invoke(main, [command, "--help"]).output)
    for command in ("publish", "list", "show", "audit", "recover"):
        texts.append(runner.invoke(main, ["release", command, "--help"]).output)
    return "\n".join(texts)


def test_help_and_readme_cite_papers_not_internal_documents() -> None:
    internal = re.compile(r"spec 00\d|the notebook|Theorem 1|specification document",
                          re.IGNORECASE)
    help_text = _every_help()
    assert "Usage:" in help_text and not internal.findall(help_text)
    readme = README.read_text()
    assert not internal.findall(readme)
    references = " ".join(readme[readme.index("## References"):].split())
    for paper in ("Mondrian Multidimensional K-Anonymity", "m-Invariance",
                  "Aggregate Query Answering on Anonymized Tables", "kb-Anonymity",
                  "Compression"):
        assert paper in references


def test_a_release_is_short_in_a_notebook_and_writes_its_own_report(tmp_path: Path) -> None:
    df = small_table()
    df.loc[0, "disease"] = "<script>alert(1)</script>"
    release = anonkit.anonymize(df, "mondrian", quasi_identifiers=["age", "zip"],
                                sensitive="disease", insensitive="*", k=2)
    text = repr(release)
    assert text.startswith("<Release mondrian: 8 rows in ") and "\n" not in text
    assert "k-anonymity passed" in text and len(text) < 200
    page = release._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "PASS" in page
    report = release.report(tmp_path / "report.html")
    assert report.read_text().count("k-anonymity") >= 1
    written = release.write(tmp_path / "release.csv")
    assert len(pd.read_csv(written)) == 8


def test_dir_lists_the_public_api_though_it_loads_lazily() -> None:
    listed = set(dir(anonkit))
    assert {"anonymize", "History", "check", "risk", "load_adult", "write_release",
            "Release", "InputError"} <= listed
    assert not {"importlib", "annotations"} & listed


def test_an_unseeded_random_mondrian_draws_from_the_system_and_records_no_seed() -> None:
    df = pd.concat([small_table()] * 8, ignore_index=True)
    df["age"] = range(len(df))
    runs = [anonkit.anonymize(df, "mondrian", quasi_identifiers=["age", "zip", "sex"],
                              sensitive="disease", k=2, strategy="random")
            for _ in range(6)]
    assert all("seed" not in r.parameters and not r.seeded for r in runs)
    assert len({tuple(r.data["age"]) + tuple(r.data["zip"]) for r in runs}) > 1
    seeded = anonkit.anonymize(df, "mondrian", quasi_identifiers=["age", "zip", "sex"],
                               sensitive="disease", k=2, strategy="random", seed=3)
    assert seeded.seeded and "seed" not in seeded.parameters


def test_an_infeasible_m_names_no_sensitive_value() -> None:
    from anonkit.algorithms.minvariance import require_eligible
    from anonkit.errors import InputError

    values = np.array([0, 0, 0, 1, 2, 0])
    with pytest.raises(InputError, match="the most frequent sensitive value is 4 of 6") as err:
        require_eligible(values, 3, names=np.array(["Secret-Diagnosis", "b", "c"]))
    assert "Secret-Diagnosis" not in str(err.value)
