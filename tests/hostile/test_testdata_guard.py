"""Issue 21, item 13: the testdata guard. The program under test is loaded (its top level
run) in a guarded worker, under the time limit, never in the parent; while it runs, writing,
creating, linking or deleting files, ctypes, starting processes, exiting the process and the
network are refused. A run that tries one is reported as refused, one line naming the
operation (never the data values), and the other tuples go on; a top level that tries one,
overruns the time limit or exits makes the command exit 2 with nothing written. In every case
the forbidden effect does not happen: the working folder is compared byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from anonkit.cli import main
from anonkit.testdata.confine import landlock_abi

SECRET = "zq-7731"  # a raw data value: it must never appear in a reason
TIME_LIMIT = "0.5"

# each hole: what the program does (``TARGET``: a path in the working folder, ``KEEP``: the
# user's file there, ``V``: a raw data value in a run) and the words its reason must contain;
# whether the effect happened is read off the working folder's snapshot
HOLES: dict[str, tuple[str, str]] = {
    "os_open": ("os.close(os.open(TARGET, os.O_WRONLY | os.O_CREAT))", "os.open"),
    "symlink": ("os.symlink('/etc/hostname', TARGET)", "os.symlink"),
    "ctypes": ("import ctypes\nlibc = ctypes.CDLL(None)\nlibc.getpid()\n"
               "libc.symlink(b'/etc/hostname', TARGET.encode())", "ctypes"),
    "open_w": ("open(TARGET, 'w').write(V)", "open"),
    "subprocess": ("import subprocess\nsubprocess.run(['touch', TARGET])", "subprocess"),
    "os_system": ("os.system('touch ' + TARGET)", "os.system"),
    "rename": ("os.rename(KEEP, TARGET)", "os.rename"),
    "unlink": ("os.unlink(KEEP)", "os.remove"),
    "mkdir": ("os.mkdir(TARGET)", "os.mkdir"),
    "socket": ("import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=0.2)",
               "socket"),
    "caught": ("try:\n    os.symlink('/etc/hostname', TARGET)\nexcept BaseException:\n"
               "    pass", "os.symlink"),
    "thread": ("import threading\nt = threading.Thread(target=lambda: open(TARGET, 'w'))\n"
               "t.start()\nt.join()", "open"),
}
PRELUDE = """\
import os
HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "pwned")
KEEP = os.path.join(HERE, "keep.txt")
"""


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` (symlinks as links, never followed) with the SHA-256 of
    a file's bytes: equal snapshots mean nothing was created, removed or changed."""
    out: dict[str, str] = {}
    for root, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            path = Path(root) / name
            key = str(path.relative_to(folder))
            if path.is_symlink():
                out[key] = f"link -> {os.readlink(path)}"
            elif path.is_dir():
                out[key] = "dir"
            else:
                out[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def workdir(tmp_path: Path, program: str) -> Path:
    work = tmp_path / "work"
    work.mkdir(parents=True)
    (work / "program.py").write_text(program)
    (work / "keep.txt").write_text("the user's file\n")
    pd.DataFrame({"a": list(range(0, 60, 2)), "v": [SECRET] * 30}).to_csv(work / "raw.csv",
                                                                            index=False)
    return work


def run(work: Path, *extra: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [
        "testdata", "--program", f"{work / 'program.py'}:f", "--data", str(work / "raw.csv"),
        "-k", "3", "-o", str(work / "out.csv"), "--report", str(work / "kb.html"),
        "--time-limit", TIME_LIMIT, "--workers", "1", "--seed", "1", *extra])
    return result.exit_code, result.stdout, result.stderr


def top_level(body: str) -> str:
    return PRELUDE + "V = 'top'\n" + body + "\n\ndef f(a, v):\n    return a > 20\n"


def in_function(body: str) -> str:
    """The hole is tried on the tuples with a >= 30 only: the others are released."""
    return PRELUDE + "\ndef f(a, v):\n    V = v\n    if a >= 30:\n" + \
        textwrap.indent(body, " " * 8) + "\n    return a > 20\n"


def assert_refused_load(work: Path, before: dict[str, str], code: int, err: str,
                        words: str, start: str = "its top level") -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err  # one line, no traceback
    assert lines[0].startswith(f"error: the program cannot be loaded: {start}"), err
    assert words in lines[0] and SECRET not in lines[0]
    assert snapshot(work) == before  # no effect, no output, no report


@pytest.mark.parametrize("hole", sorted(HOLES))
def test_a_refused_top_level_exits_2_and_writes_nothing(tmp_path: Path, hole: str) -> None:
    body, words = HOLES[hole]
    work = workdir(tmp_path, top_level(body))
    before = snapshot(work)
    code, _, err = run(work)
    assert_refused_load(work, before, code, err, words)


@pytest.mark.parametrize("hole", ["os_open", "symlink", "ctypes", "open_w", "subprocess",
                                  "unlink", "socket", "caught", "thread"])
def test_a_refused_run_is_reported_and_the_rest_released(tmp_path: Path, hole: str) -> None:
    body, words = HOLES[hole]
    work = workdir(tmp_path, in_function(body))
    before = snapshot(work)
    code, out, err = run(work, "--json")
    assert code == 0, err
    reasons = {f["row"]: f["reason"] for f in json.loads(out)["failures"]}
    assert sorted(reasons) == list(range(16, 31))  # the tuples with a >= 30
    for reason in reasons.values():
        assert reason.startswith("refused: the program tried") and "\n" not in reason
        assert words in reason and SECRET not in reason
    after = snapshot(work)
    # the release and its report were written; nothing else was created or changed
    assert {k: v for k, v in after.items() if k not in ("out.csv", "kb.html")} == before
    assert "out.csv" in after and "kb.html" in after


def test_a_top_level_that_sleeps_forever_overruns_the_time_limit(tmp_path: Path) -> None:
    work = workdir(tmp_path, top_level("import time\ntime.sleep(10 ** 6)"))
    before = snapshot(work)
    code, _, err = run(work)
    # the time limit ended it, not the parent's start timeout (whose message differs); how
    # soon is benchmarks/testdata_guard.py's to measure
    assert_refused_load(work, before, code, err, f"time limit of {TIME_LIMIT} s")


def test_a_top_level_stuck_in_c_is_ended_by_the_cpu_limit(tmp_path: Path) -> None:
    """``sum(range(...))`` loops in C, where no signal reaches it: the worker's CPU-time
    limit ends it (the kernel kills the worker), well before the parent's start timeout."""
    work = workdir(tmp_path, top_level("sum(range(10 ** 13))"))
    before = snapshot(work)
    code, _, err = run(work)
    # the kernel's CPU limit ended it, not the start timeout ("no worker process had
    # started"); how soon is benchmarks/testdata_guard.py's to measure
    assert_refused_load(work, before, code, err, "CPU time", start="a worker process died")


@pytest.mark.parametrize("call, words", [("os._exit(3)", "os._exit"),
                                         ("import sys\nsys.exit(3)", "sys.exit"),
                                         ("os.abort()", "os.abort")])
def test_a_top_level_that_exits_the_process_is_refused(tmp_path: Path, call: str,
                                                       words: str) -> None:
    work = workdir(tmp_path, top_level(call))
    before = snapshot(work)
    code, _, err = run(work)
    assert_refused_load(work, before, code, err, words)


def test_the_top_level_runs_in_the_worker_not_in_the_parent(tmp_path: Path) -> None:
    work = workdir(tmp_path, top_level("import os\nos.environ['ANONKIT_TOP_LEVEL_RAN'] = '1'\n"
                                       "os.symlink('/etc/hostname', TARGET)"))
    before = snapshot(work)
    code, _, err = run(work)
    assert "ANONKIT_TOP_LEVEL_RAN" not in os.environ  # the parent never ran it
    assert_refused_load(work, before, code, err, "os.symlink")


@pytest.mark.skipif(landlock_abi() < 1, reason="the kernel has no Landlock")
def test_landlock_holds_when_the_audit_guard_is_switched_off(tmp_path: Path) -> None:
    """The audit-hook guard can be switched off from inside (it stops accidents, not an
    adversary); where Landlock exists the worker's filesystem stays read-only regardless."""
    off = "import anonkit.testdata.workers as w\nw._main_thread = None\n"
    work = workdir(tmp_path, top_level(off + "os.symlink('/etc/hostname', TARGET)"))
    before = snapshot(work)
    code, _, err = run(work)
    assert code == 2 and "PermissionError" in err, err
    assert snapshot(work) == before
    work = workdir(tmp_path / "fn", in_function(off + "os.unlink(KEEP)"))
    before = snapshot(work)
    code, _, err = run(work, "--json")
    assert code == 0, err
    after = snapshot(work)
    assert {k: v for k, v in after.items() if k not in ("out.csv", "kb.html")} == before
