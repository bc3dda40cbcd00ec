"""How soon the kb-anonymity guard stops a program whose top level never ends (issue 21,
item 13): a top level that sleeps is ended by the run's wall-clock limit, one that loops in C
(where no signal reaches it) by the worker's CPU-time limit; either way well before the
parent's 120 s start timeout. Each refusal is the whole `anonkit testdata` command, in this
process, with a 0.5 s time limit and one worker.

Run: python benchmarks/testdata_guard.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from click.testing import CliRunner
from timing import print_table

from anonkit.cli import main as cli

CASES = {  # name -> (top level, target seconds, the words the refusal must hold)
    "top level sleeps forever": ("import time\ntime.sleep(10 ** 6)", 10.0, "time limit"),
    "top level loops in C": ("sum(range(10 ** 13))", 15.0, "CPU time"),
}


def refusal_seconds(top_level: str, words: str) -> float:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "program.py").write_text(f"{top_level}\n\ndef f(a):\n    return a > 20\n")
        (work / "raw.csv").write_text("a\n" + "".join(f"{i}\n" for i in range(30)))
        started = time.perf_counter()
        result = CliRunner().invoke(cli, [
            "testdata", "--program", f"{work / 'program.py'}:f", "--data",
            str(work / "raw.csv"), "-k", "3", "-o", str(work / "out.csv"),
            "--time-limit", "0.5", "--workers", "1"])
        seconds = time.perf_counter() - started
        if result.exit_code != 2 or words not in result.output:
            raise SystemExit(f"unexpected outcome: {result.output}")
        return seconds


def main() -> None:
    rows = []
    for name, (top_level, target, words) in CASES.items():
        seconds = refusal_seconds(top_level, words)
        rows.append((name, f"{seconds:.2f}", f"<= {target:g}",
                     "ok" if seconds <= target else "MISSED"))
    print_table("kb-anonymity guard, time to refuse a top level that never ends", rows)


if __name__ == "__main__":
    main()
