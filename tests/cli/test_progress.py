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


def shown_on_a_terminal(arguments: list[str]) -> str:
    """What the command draws on a pseudo-terminal as its standard error."""
    leader, follower = os.openpty()
    proc = subprocess.Popen(arguments, stdout=subprocess.DEVNULL,
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
    assert proc.wait(timeout=120) == 0
    return shown.decode(errors="replace")


def test_a_terminal_sees_every_step_with_its_rate(tmp_path: Path) -> None:
    src = census_csv(tmp_path)
    text = shown_on_a_terminal(command(src, tmp_path / "out.csv"))
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


def test_reading_counts_the_bytes_of_the_file(tmp_path: Path) -> None:
    """The reading step shows the bytes read against the file's size, not "0.00 rows"."""
    src = census_csv(tmp_path)
    size_kib = src.stat().st_size / 1024
    text = shown_on_a_terminal(command(src, tmp_path / "out.csv"))
    reading = [line for line in text.replace("\r", "\n").splitlines()
               if line.startswith("reading")]
    assert reading and all("rows" not in line for line in reading), reading
    assert any(f"{size_kib:.0f}k/{size_kib:.0f}k" in line.replace("i", "") or
               "100%" in line for line in reading), reading


@pytest.mark.slow
def test_the_dask_engine_draws_the_same_bars(tmp_path: Path) -> None:
    src = census_csv(tmp_path)
    text = shown_on_a_terminal([*command(src, tmp_path / "out"), "--engine", "dask",
                                "--workers", "1"])
    lines = text.replace("\r", "\n").splitlines()
    fragments = [line for line in lines if line.startswith("anonymizing fragments")]
    assert fragments and any(" parts" in line and "100%" in line for line in fragments), lines
    assert any(line.startswith("verifying the whole output") for line in lines)
