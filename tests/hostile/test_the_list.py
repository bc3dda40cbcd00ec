"""Issue 21, item 6: the review's whole list of inputs that gave an internal error or a
traceback, run in one place. Each is exit 2, one ``error:`` line, and the working folder is as
it was (the cases are also tested one by one, with their messages, in this folder's other
files). A folder the operating system refuses to write in, whoever asks (/proc, /sys), stands
for a read-only output and an unwritable history folder: root may write anywhere else."""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from anonkit.cli import main
from hostile.snapshots import snapshot

CASES: dict[str, list[str]] = {
    "CR-only line ends": ["check", "cr.csv", "--qi", "a", "-k", "2"],
    "a 20 MB number": ["anonymize", "big.csv", "-o", "out.csv", "--qi", "a,b", "-k", "2"],
    "a tz-aware Parquet QI": ["anonymize", "tz.parquet", "-o", "out.csv", "--qi", "t", "-k",
                              "2"],
    "--encoding rot13": ["check", "ok.csv", "--qi", "a", "-k", "2", "--encoding", "rot13"],
    "deeply nested TOML": ["anonymize", "--config", "deep.toml"],
    "--config DIR": ["anonymize", "--config", "sub"],
    "a read-only output": ["anonymize", "ok.csv", "-o", "/proc/out.csv", "--qi", "a",
                           "--insensitive", "*", "-k", "2"],
    "--hierarchy x=/dev/zero": ["anonymize", "ok.csv", "-o", "out.csv", "--qi", "a,b", "-k",
                                "2", "--hierarchy", "b=/dev/zero"],
    "a malformed port": ["release", "list", "--history", "postgresql://u:pw@host:port/db"],
    "a seq above 2^63": ["release", "show", "d", "99999999999999999999", "--history", "h.db"],
    "an unknown driver": ["release", "list", "--history", "postgresql+nodriver://u:pw@h/db"],
    "an unwritable history folder": ["release", "publish", "ok.csv", "--history",
                                     "/proc/h.db", "--dataset", "d", "--key", "id", "--qi",
                                     "a", "--insensitive", "*", "-k", "2", "-o", "r.csv"],
    "an unwritable publish folder": ["release", "publish", "ok.csv", "--history", "h.db",
                                     "--dataset", "d", "--key", "id", "--qi", "a",
                                     "--insensitive", "*", "-k", "2", "-o", "/proc/r.csv"],
    "a single-line .gz": ["check", "one.csv.gz", "--qi", "a", "-k", "2"],
    "a folder as input": ["check", "sub", "--qi", "a", "-k", "2"],
    "/dev/zero as input": ["check", "/dev/zero", "--qi", "a", "-k", "2"],
    "publish --history DIR": ["release", "publish", "ok.csv", "--history", "sub", "--dataset",
                              "d", "--key", "id", "--qi", "a", "--insensitive", "*", "-k",
                              "2", "-o", "r.csv"],
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    here = tmp_path_factory.mktemp("list")
    rows = "id,a,b\n" + "".join(f"{i},{i % 3},{'xy'[i % 2]}\n" for i in range(12))
    (here / "ok.csv").write_text(rows)
    (here / "cr.csv").write_bytes(rows.replace("\n", "\r").encode())
    (here / "big.csv").write_text("a,b\n1,2\n3,4\n" + "9" * 20_000_000 + ",5\n")
    times = pa.array([0, 3600 * 24 * 180 * 10**6, 10**6, 2 * 10**6],
                     pa.timestamp("us", tz="America/New_York"))
    pq.write_table(pa.table({"t": times}), here / "tz.parquet")
    (here / "deep.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000)
    (here / "sub").mkdir()
    with gzip.open(here / "one.csv.gz", "wb") as f:
        f.write(b"a,b")
    result = CliRunner().invoke(main, ["release", "publish", str(here / "ok.csv"), "--history",
                                       str(here / "h.db"), "--dataset", "d", "--key", "id",
                                       "--qi", "a", "--insensitive", "*", "-k", "2", "-o",
                                       str(here / "r1.csv")])
    assert result.exit_code == 0, result.output
    return here


@pytest.mark.parametrize("case", list(CASES))
def test_every_case_of_the_list_is_exit_2_and_one_line(folder: Path, case: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder)
    before = snapshot(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the secret beside a test history
        result = CliRunner().invoke(main, CASES[case])
    # (a usage error is click's: its usage lines, then one Error: line)
    errors = [line for line in result.output.strip().splitlines()
              if line and not line.startswith(("warning: ", "Usage: ", "Try "))]
    assert result.exit_code == 2, (case, result.output)
    assert len(errors) == 1 and errors[0].startswith(("error: ", "Error: ")), \
        (case, result.output)
    assert "Traceback" not in result.output and "internal error" not in result.output
    assert snapshot(folder) == before, case
