"""Issue 21, items 1-3: nothing a user owns is overwritten. Every path a command writes (the
release, each auxiliary table, the report, a Dask output folder) is checked before anything
is written against every input, every other output, the history, its secret, journals and
backups, and every release file the history records: a collision is exit 2, one line naming
both paths, and the folder is as it was."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonkit.cli import main
from hostile.snapshots import snapshot

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def run(*args: object) -> tuple[int, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the secret beside a test history
        result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def people(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"pid": [f"p{i}" for i in range(n)],
                         "age": rng.integers(20, 70, n),
                         "zip": rng.integers(100, 140, n),
                         "disease": rng.choice(["flu", "hiv", "cold", "acne", "gout"], n)})


def refused(code: int, output: str, *fragments: str) -> None:
    lines = output.strip().splitlines()
    assert code == 2, output
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    for fragment in fragments:
        assert fragment in output, (fragment, output)


def publish(folder: Path, data: str, output: str, *extra: str, history: str = "h.db",
            dataset: str = "ward", method: str = "mondrian") -> tuple[int, str]:
    options = ("-m", "2") if method == "m-invariance" else ("-k", "3")
    return run("release", "publish", folder / data, "--history", folder / history,
               "--dataset", dataset, "--key", "pid", "--qi", "age,zip", "--sensitive",
               "disease", "--method", method, *options, "-o", folder / output, *extra)


@pytest.fixture
def ward(tmp_path: Path) -> Path:
    """A folder with an input table and a history holding one release (r1.csv)."""
    people(60, 1).to_csv(tmp_path / "in.csv", index=False)
    code, output = publish(tmp_path, "in.csv", "r1.csv")
    assert code == 0, output
    return tmp_path


# -- item 1: the audit writes only its report, never over what the history holds ------------

@pytest.mark.parametrize(("victim", "what"), [("h.db", "is the history"),
                                              ("h.db.secret", "is the history's secret"),
                                              ("r1.csv", "is the file of release 1")])
def test_the_audit_report_never_replaces_the_history_or_a_release(ward: Path, victim: str,
                                                                    what: str) -> None:
    before = snapshot(ward)
    refused(*run("release", "audit", "--history", ward / "h.db", "--dataset", "ward",
                 "--report", ward / victim), "the report", what, str(ward / victim))
    assert snapshot(ward) == before


# -- item 2: a report is an output like any other -------------------------------------------

def test_check_never_writes_its_report_over_its_input(tmp_path: Path) -> None:
    people(30, 2).to_csv(tmp_path / "in.csv", index=False)
    before = snapshot(tmp_path)
    refused(*run("check", tmp_path / "in.csv", "--qi", "age", "-k", "2", "--report",
                 tmp_path / "in.csv"), "the report", "is the input")
    assert snapshot(tmp_path) == before


def _testdata(tmp_path: Path, output: Path, report: Path) -> tuple[int, str]:
    import sys

    sys.path.insert(0, str(FIXTURES))
    from subjects.generators import shipping

    shipping(200, 2).to_csv(tmp_path / "raw.csv", index=False)
    shutil.copy(FIXTURES / "subjects" / "shipping.py", tmp_path / "prog.py")
    return run("testdata", "--program", f"{tmp_path / 'prog.py'}:shipping_cost", "--data",
               tmp_path / "raw.csv", "-k", "5", "-o", output, "--report", report, "--seed",
               "1", "--type", "postcode=str")


def test_testdata_never_writes_over_the_program_nor_drops_its_report(tmp_path: Path) -> None:
    code, output = _testdata(tmp_path, tmp_path / "out.csv", tmp_path / "prog.py")
    refused(code, output, "the report", "is the program under test")
    before = snapshot(tmp_path)
    refused(*_testdata(tmp_path, tmp_path / "x.csv", tmp_path / "x.csv"),
            "the report", "and the release", "are one file")
    assert snapshot(tmp_path) == before


# -- item 3: the auxiliary tables ---------------------------------------------------------

def test_an_auxiliary_table_never_replaces_the_input_or_the_report(tmp_path: Path) -> None:
    people(40, 3).to_csv(tmp_path / "r.summaries.csv", index=False)
    before = snapshot(tmp_path)
    refused(*run("anonymize", tmp_path / "r.summaries.csv", "-o", tmp_path / "r.csv",
                 "--method", "huffman", "--qi", "age", "--sensitive", "disease",
                 "--insensitive", "*", "-k", "3"),
            "the summaries table", "is the input")
    people(40, 3).to_csv(tmp_path / "in.csv", index=False)
    before = snapshot(tmp_path)
    refused(*run("anonymize", tmp_path / "in.csv", "-o", tmp_path / "r.csv", "--method",
                 "huffman", "--qi", "age", "--sensitive", "disease", "--insensitive", "*",
                 "-k", "3", "--report", tmp_path / "r.summaries.csv"),
            "the report", "and the summaries table", "are one file")
    assert snapshot(tmp_path) == before


def test_an_auxiliary_table_never_replaces_the_input_of_a_publish(ward: Path) -> None:
    shutil.copy(ward / "in.csv", ward / "x.counterfeits.csv")
    before = snapshot(ward)
    refused(*publish(ward, "x.counterfeits.csv", "x.csv", dataset="other",
                     method="m-invariance"), "the counterfeits table", "is the input")
    assert snapshot(ward) == before


def test_an_auxiliary_table_never_replaces_the_history(tmp_path: Path) -> None:
    """The failure the publish protocol exists to prevent: the table beside the release
    written over the SQLite history, so the release had no history row."""
    people(60, 4).to_csv(tmp_path / "in.csv", index=False)
    assert publish(tmp_path, "in.csv", "first.csv", history="r.counterfeits.csv")[0] == 0
    before = snapshot(tmp_path)
    refused(*publish(tmp_path, "in.csv", "r.csv", history="r.counterfeits.csv",
                     dataset="other", method="m-invariance"),
            "the counterfeits table", "is the history")
    assert snapshot(tmp_path) == before


def test_an_auxiliary_table_never_replaces_another_datasets_release(ward: Path) -> None:
    assert publish(ward, "in.csv", "x.counterfeits.csv", "--new-lineage", dataset="b")[0] == 0
    before = snapshot(ward)
    refused(*publish(ward, "in.csv", "x.csv", dataset="other", method="m-invariance"),
            "the counterfeits table", "is the file of release 1 of 'b'")
    assert snapshot(ward) == before


def test_a_dask_output_folder_is_never_an_input(tmp_path: Path) -> None:
    people(40, 5).to_csv(tmp_path / "in.csv", index=False)
    before = snapshot(tmp_path)
    refused(*run("anonymize", tmp_path / "in.csv", "-o", tmp_path / "in.csv", "--qi", "age",
                 "--insensitive", "*", "-k", "3", "--engine", "dask"))
    assert snapshot(tmp_path) == before


# -- any pair of names ----------------------------------------------------------------------

NAMES = ["in.csv", "in.summaries.csv", "out.csv", "out.summaries.csv", "out.counterfeits.csv",
         "rep.html", "h.db", "h.db.secret", "h.db-journal", "r1.csv", "r1.summaries.csv",
         "r1.counterfeits.csv"]
COMMANDS = ["anonymize", "anonymize-huffman", "check", "publish", "publish-m-invariance",
            "audit"]


def _owner_folder(folder: Path) -> None:
    """A folder as a user has it: two tables and a history holding one release (r1.csv, with
    its counterfeits table), made here (a history records its releases' absolute paths, so
    a copied folder would hold unrecorded copies)."""
    people(60, 6).to_csv(folder / "in.csv", index=False)
    people(60, 7).to_csv(folder / "in.summaries.csv", index=False)
    assert publish(folder, "in.csv", "r1.csv", method="m-invariance")[0] == 0


@settings(max_examples=30, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(command=st.sampled_from(COMMANDS), source=st.sampled_from(["in.csv", "in.summaries.csv"]),
       output=st.sampled_from(NAMES), report=st.sampled_from([None, *NAMES]))
def test_no_pair_of_names_overwrites_a_file_the_user_owns(
        tmp_path_factory: pytest.TempPathFactory, command: str, source: str,
        output: str, report: str | None) -> None:
    """Whatever the input, output and report are among the names of an input, the
    auxiliary stems, the history, its secret and journal and a recorded release, the
    input, the history, its secret and the recorded release are never changed."""
    folder = tmp_path_factory.mktemp("pair")
    _owner_folder(folder)
    before = snapshot(folder)
    extra = ["--report", folder / report] if report is not None else []
    if command.startswith("anonymize"):
        method = ["--method", "huffman"] if command == "anonymize-huffman" else []
        code, text = run("anonymize", folder / source, "-o", folder / output, "--qi", "age",
                         "--sensitive", "disease", "--insensitive", "*", "-k", "3", *method,
                         *extra)
    elif command == "check":
        code, text = run("check", folder / source, "--qi", "age", "-k", "2", *extra)
    elif command == "audit":
        code, text = run("release", "audit", "--history", folder / "h.db", "--dataset",
                         "ward", *extra)
    else:
        code, text = publish(folder, source, output, dataset="next",
                             method="m-invariance" if command.endswith("invariance")
                             else "mondrian")
    assert code in (0, 2, 3), text
    after = snapshot(folder)
    # what the command must keep: the input it reads, and for a history command the
    # history, its secret and the release it records with its table (another existing file
    # is an earlier output: fair game; anonymize and check know no history)
    history = ("h.db", "h.db.secret", "r1.csv", "r1.counterfeits.csv")
    owned = {str(folder / name) for name in (
        *((source,) if command != "audit" else ()),
        *(history if command.startswith(("publish", "audit")) else ()))}
    changed = [path for path, digest in before.items()
               if path in owned and after.get(path) != digest]
    assert not changed, (command, source, output, report, text)


def test_a_job_file_is_never_written_over(tmp_path: Path) -> None:
    people(40, 8).to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "job.toml").write_text(
        'input = "in.csv"\noutput = "o.csv"\nreport = "job.toml"\nquasi_identifiers = '
        '["age"]\nidentifiers = ["pid"]\ninsensitive = "*"\nk = 3\n', encoding="utf-8")
    before = snapshot(tmp_path)
    refused(*run("anonymize", "--config", tmp_path / "job.toml"), "the report",
            "is the job file")
    assert snapshot(tmp_path) == before
