"""Bad inputs that were tracebacks (exit 1) or silently wrong: each is exit 2 now, with one
line naming the culprit, and nothing written (issue "a steward's first day", the error
items)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from anonkit.cli import main
from anonkit.data.read import read_table


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    df = pd.DataFrame({"age": [21, 35, 40, 50, 60, 70], "sex": list("FMFMFM"),
                       "d": list("xyxyxy"), "empty": [None] * 6})
    df.to_csv(tmp_path / "t.csv", index=False)
    infinite = df.assign(age=df["age"].astype(float))
    infinite.loc[3, "age"] = -np.inf
    infinite.to_csv(tmp_path / "inf.csv", index=False)
    pd.DataFrame({"age": [[1, 2]] * 6, "d": list("xyxyxy")}).to_parquet(tmp_path / "l.parquet")
    (tmp_path / "folder").mkdir()
    return tmp_path


def refused(folder: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["anonymize", *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert not (folder / "o.csv").exists()
    return lines[0]


@pytest.mark.parametrize(("args", "fragment"), [
    (["--qi", "age,sex", "--hierarchy", "sex={folder}/folder"], "is a folder"),
    (["--qi", "age,empty"], "column 'empty' has 6 missing value(s)"),
    (["--qi", "age,sex", "--kind", "age=float"], "unknown kind 'float' for column 'age'"),
    (["--qi", "age", "--kind", "age=date"], "declared a date column but holds numbers"),
])
def test_bad_column_descriptions(folder: Path, args: list[str], fragment: str) -> None:
    args = [a.format(folder=folder) for a in args]
    ids = "d" if "empty" in args[1] else "d,empty"
    ids += "" if "sex" in args[1] else ",sex"
    line = refused(folder, str(folder / "t.csv"), "-o", str(folder / "o.csv"), "-k", "2",
                   "--id", ids, *args)
    assert fragment in line


def test_an_infinite_number_is_refused_not_released_as_a_range(folder: Path) -> None:
    line = refused(folder, str(folder / "inf.csv"), "-o", str(folder / "o.csv"), "--qi", "age",
                   "--id", "sex,d,empty", "-k", "2")
    assert "column 'age'" in line and "infinite" in line and "line 5 of the file" in line


def test_a_nested_parquet_column_is_refused(folder: Path) -> None:
    line = refused(folder, str(folder / "l.parquet"), "-o", str(folder / "o.csv"), "--qi",
                   "age", "--id", "d", "-k", "2")
    assert "column 'age' holds lists or structures" in line


@pytest.mark.parametrize("name", ["o.xlsx", "o.csv.xz", "o.json", "o.parquet.gz"])
def test_outputs_anonkit_does_not_write_are_refused(folder: Path, name: str) -> None:
    line = refused(folder, str(folder / "t.csv"), "-o", str(folder / name), "--qi", "age",
                   "--id", "sex,d,empty", "-k", "2")
    assert f"cannot write {name}" in line
    assert not (folder / name).exists()


@pytest.mark.parametrize("suffix", [".csv.gz", ".csv.bz2", ".csv.zst", ".tsv.gz"])
def test_compressed_csv_output_is_written_for_real(folder: Path, suffix: str) -> None:
    plain, packed = folder / "plain.csv", folder / f"packed{suffix}"
    for out in (plain, packed):
        result = CliRunner().invoke(main, ["anonymize", str(folder / "t.csv"), "-o", str(out),
                                           "--qi", "age", "--id", "sex,d,empty", "-k", "2",
                                           "--seed", "1"])
        assert result.exit_code == 0, result.output
    magic = {".gz": b"\x1f\x8b", ".bz2": b"BZh", ".zst": b"\x28\xb5\x2f\xfd"}
    assert packed.read_bytes().startswith(magic[Path(suffix).suffix])
    # read through Arrow's codecs (pandas needs an extra package for zstd)
    assert read_table(packed).equals(read_table(plain))
    assert not [p for p in folder.iterdir() if p.name.startswith(".packed")]


def test_an_output_naming_a_folder_is_refused(folder: Path) -> None:
    line = refused(folder, str(folder / "t.csv"), "-o", f"{folder}/new/", "--qi", "age",
                   "--id", "sex,d,empty", "-k", "2")
    assert "names a folder" in line
    assert not (folder / "new").exists()


def test_an_output_where_nothing_can_be_written_is_refused(folder: Path) -> None:
    line = refused(folder, str(folder / "t.csv"), "-o", "/proc/o.csv", "--qi", "age",
                   "--id", "sex,d,empty", "-k", "2")
    assert "cannot write to /proc" in line


def test_auxiliary_tables_of_a_compressed_release_are_compressed_alike() -> None:
    from anonkit.release import auxiliary_path

    assert auxiliary_path(Path("w.csv.gz"), "groups") == Path("w.groups.csv.gz")
    assert auxiliary_path(Path("d/w.csv"), "groups") == Path("d/w.groups.csv")


def test_second_day_messages_name_the_fix_as_the_command_line_gives_it(tmp_path: Path) -> None:
    """Issue 22, items 12 and 13: the text-in-a-numeric-QI error gives --kind too; -m with
    Mondrian is shown as -m, with the method that takes it; a hierarchy on a column released
    unchanged by --insensitive '*' says so."""
    from click.testing import CliRunner

    from anonkit.cli import main

    table = tmp_path / "t.csv"
    table.write_text("pid,age,zip\np1,x1,100\np2,20,101\np3,30,102\np4,40,103\n")
    hierarchy = tmp_path / "zip.csv"
    hierarchy.write_text("".join(f"{z};r;*\n" for z in range(100, 104)))
    cases = [
        (["--qi", "age"], "(--kind age=categorical on the command line"),
        (["--qi", "zip", "-m", "4"], "has no option -m (method 'm-invariance' takes it)"),
        (["--qi", "zip", "--hierarchy", f"age={hierarchy}"],
         "'age' is released unchanged (--insensitive '*')"),
    ]
    for args, fragment in cases:
        result = CliRunner().invoke(main, ["anonymize", str(table), "-o",
                                           str(tmp_path / "o.csv"), "--id", "pid",
                                           "--insensitive", "*", "-k", "2", *args])
        lines = result.output.strip().splitlines()
        assert result.exit_code == 2 and len(lines) == 1 and fragment in lines[0], \
            result.output
    assert not (tmp_path / "o.csv").exists()


def test_a_job_files_report_goes_with_its_output(tmp_path: Path) -> None:
    """Issue 22, item 17: `--config job.toml -o other.csv` replaced the report of the job
    file's release with one about another release."""
    import warnings

    from click.testing import CliRunner

    from anonkit.cli import main

    (tmp_path / "in.csv").write_text("pid,age\n" + "".join(f"p{i},{20 + i % 9}\n"
                                                          for i in range(30)))
    (tmp_path / "job.toml").write_text(
        'input = "in.csv"\noutput = "first.csv"\nreport = "first.html"\n'
        'quasi_identifiers = ["age"]\nidentifiers = ["pid"]\nk = 3\n')
    runner = CliRunner()
    assert runner.invoke(main, ["anonymize", "--config", str(tmp_path / "job.toml")]
                         ).exit_code == 0
    first = (tmp_path / "first.html").read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        result = runner.invoke(main, ["anonymize", "--config", str(tmp_path / "job.toml"),
                                      "-o", str(tmp_path / "other.csv")])
    assert result.exit_code == 0, result.output
    assert "warning: the job file's report" in result.output
    assert (tmp_path / "first.html").read_bytes() == first
    assert (tmp_path / "other.csv").exists() and not (tmp_path / "other.html").exists()
    result = runner.invoke(main, ["anonymize", "--config", str(tmp_path / "job.toml"), "-o",
                                  str(tmp_path / "third.csv"), "--report",
                                  str(tmp_path / "third.html")])
    assert result.exit_code == 0 and (tmp_path / "third.html").exists(), result.output


def test_help_shows_what_each_command_takes() -> None:
    """Issue 22, item 14: anonymize --help listed history-only options, check --help
    promised a Parquet output, -o omitted .tsv and the compressed suffixes, and audit -k was
    FLOAT while every other -k is INT."""
    from click.testing import CliRunner

    from anonkit.cli import main

    def help_of(*command: str) -> str:
        result = CliRunner().invoke(main, [*command, "--help"], terminal_width=200)
        assert result.exit_code == 0
        return " ".join(result.output.split())

    anonymize = help_of("anonymize")
    assert "--history-check" not in anonymize and "-m INT" not in anonymize
    assert "-e NUMBER" in anonymize  # (k,e) runs one-shot too
    assert ".tsv" in anonymize and ".csv.zst" in anonymize
    assert "Parquet files" not in help_of("check")
    assert ".csv.gz" in help_of("testdata") and ".csv.bz2" in help_of("release", "publish")
    assert "-k INTEGER RANGE" in help_of("release", "audit")


def test_commands_in_one_process_do_not_stack_warning_displays() -> None:
    """Each command puts Python's warning display back when it ends."""
    import warnings

    from click.testing import CliRunner

    from anonkit.cli import main

    before = warnings.showwarning
    for _ in range(3):
        CliRunner().invoke(main, ["check", "no-such-file.csv", "--qi", "a", "-k", "2"])
    assert warnings.showwarning is before
