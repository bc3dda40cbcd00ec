"""Progress on a terminal: a live line per step on stderr, with rows per second; nothing
when stderr is not a terminal."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from anonkit.datasets import make_census

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")

STEPS = ("reading", "encoding", "partitioning", "generalizing", "verifying", "writing")


def census_csv(tmp_path: Path) -> Path:
    path = tmp_path / "census.csv"
    ds = make_census(20_000, seed=1)
    ds.data[["id", "age", "sex", "zip", "disease"]].to_csv(path, index=False)
    return path


def command(src: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "anonkit", "anonymize", str(src), "-o", str(out),
            "--qi", "age,sex,zip", "--id", "id", "--sensitive", "disease", "-k", "5"]


def test_a_terminal_sees_every_step_with_its_rate(tmp_path: Path) -> None:
    src = census_csv(tmp_path)
    leader, follower = os.openpty()
    proc = subprocess.Popen(command(src, tmp_path / "out.csv"), stdout=subprocess.DEVNULL,
                            stderr=follower, stdin=subprocess.DEVNULL)
    os.close(follower)
    shown = b""
    while True:  # until the child closes the terminal
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        elif proc.poll() is not None:
            break
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    text = shown.decode(errors="replace")
    for step in STEPS:
        assert step in text, (step, text)
    assert "rows/s" in text and "20.0k" in text


def test_no_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    src = census_csv(tmp_path)
    done = subprocess.run(command(src, tmp_path / "out.csv"), capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "release written to" in done.stdout
