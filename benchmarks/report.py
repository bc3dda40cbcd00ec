"""The HTML report's drawing time (issue 25: the web app's preview of UCI Adult must be ready
in under 1 s after the click, and the report is most of it; ``anonymize --report`` and
``release publish --report`` draw the same page).

Rows: the report of Adult's Mondrian release (its 8 standard quasi-identifiers, k=10,
distinct l=2) and of the web app's Adult job (4 QIs, the education hierarchy), warm, in
this process, best and median of ``--repeat``; the same Adult report as a fresh process
(imports included, as a first report after start); the check report; and, for information,
a huffman release's report, whose code tree is still drawn by matplotlib.

Run: ``python benchmarks/report.py [--repeat R]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from timing import print_table

import anonkit
from anonkit.checker import check
from anonkit.datasets import load_adult
from anonkit.report import render_check_report, render_report

FRESH = """
import time
started = time.perf_counter()
import anonkit
adult = anonkit.load_adult()
release = anonkit.anonymize(adult.data, "mondrian", quasi_identifiers=adult.quasi_identifiers,
                            sensitive=adult.sensitive, insensitive="*", k=10, l=2)
drawn = time.perf_counter()
anonkit.render_report(release, adult.data, {path!r})
print(time.perf_counter() - drawn)
"""


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    fn()  # warm: the first call pays for imports and caches
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def row(task: str, times: list[float], target: str, notes: str) -> tuple[str, ...]:
    return (task, f"{min(times):.3f}", target,
            f"median {statistics.median(times):.3f}; {notes}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    adult = load_adult()
    data = adult.data
    release = anonkit.anonymize(data, "mondrian", quasi_identifiers=adult.quasi_identifiers,
                                sensitive=adult.sensitive, insensitive="*", k=10, l=2)
    web_job = anonkit.anonymize(data, "mondrian",
                                quasi_identifiers=["age", "sex", "race", "education"],
                                sensitive=adult.sensitive, insensitive="*", k=10, l=2,
                                hierarchies={"education": adult.hierarchies["education"]})
    checked = check(release.data, adult.quasi_identifiers, adult.sensitive, ["k=10", "l=2"])
    census = anonkit.make_census(6_000).data
    huffman = anonkit.anonymize(census, "huffman", quasi_identifiers=["age", "zip"],
                                sensitive="disease", identifiers=["id"], insensitive="*", k=5)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        rows = [
            row("Adult, 8 QIs, k=10 l=2: render_report (warm)",
                timed(lambda: render_report(release, data, out / "a.html"), args.repeat),
                "< 0.3", f"best of {args.repeat}; "
                f"{(out / 'a.html').stat().st_size / 1e3:,.0f} kB"),
            row("Adult, web app's job (4 QIs, hierarchy): render_report",
                timed(lambda: render_report(web_job, data, out / "w.html"), args.repeat),
                "< 0.3", f"best of {args.repeat}"),
        ]
        fresh = [float(subprocess.run(
            [sys.executable, "-c", FRESH.format(path=str(out / "f.html"))], check=True,
            capture_output=True, text=True).stdout) for _ in range(3)]
        rows.append(row("Adult, 8 QIs: render_report, first in a fresh process", fresh,
                        "< 1", "best of 3; imports the report's modules"))
        rows.append(row("Adult check report (k=10, l=2)",
                        timed(lambda: render_check_report(checked, out / "c.html"),
                              args.repeat), "", f"best of {args.repeat}"))
        rows.append(row("census 6,000 rows, huffman: report with its code tree",
                        timed(lambda: render_report(huffman, census, out / "h.html"),
                              args.repeat), "",
                        f"best of {args.repeat}; the tree is a matplotlib PNG"))
    print_table("HTML report (anonkit.render_report)", rows)


if __name__ == "__main__":
    main()
