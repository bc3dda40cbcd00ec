"""Mondrian benchmark: anonkit vs anonypy on UCI Adult, then anonkit at scale.

    .venv/bin/python benchmarks/mondrian.py [--quick] [--skip-anonypy] [--skip-large]
                                            [--rows 1000000] [--repeat 20] [--json]

Prints ONE table (or, with --json, the same figures as JSON) with the issue's targets next
to the measurements:

* Adult (30,162 rows), the 8 standard QIs, no hierarchies (age as a range, the 7
  categorical QIs as sets), k = 5, 10, 50, for anonkit and anonypy:
  - algorithm time, codes in / classes out. anonkit: ``Mondrian.partition`` on a table
    encoded once, warm (after one untimed run), best of ``--repeat``.
    anonypy: its ``Mondrian.partition`` (the step that turns the DataFrame into classes),
    run once per k inside ``Preserver.anonymize_k_anonymity``, whose total time is shown
    too (it also builds the generalized rows);
  - GCP: the size-weighted mean NCP over every released cell, with one formula for both
    tools: numeric (max - min) / (domain max - domain min), categorical
    (distinct values in the class - 1) / (distinct values in the table - 1). anonkit's comes
    from ``result.metrics['gcp']``; anonypy's is computed from the original rows of each
    class it returns (its partitions are captured as it runs), with
    :func:`anonkit.metrics.utility.gcp`;
  - DM (discernibility, sum of squared class sizes) and the verified k, both from
    :func:`anonkit.check` run on each tool's released table (anonypy's output rows carry a
    ``count``; they are expanded to one row per record before checking).
* ``anonkit anonymize`` on Adult as a fresh process (CSV in, CSV out), wall clock, best of
  5 (the machine's timings swing by a few tenths of a second), with the child's own
  phase timings (``--json``) and peak memory.
* ``make_census(1_000_000)`` (the 8 census QIs, no hierarchies), k=10: algorithm time as
  above, and CSV -> CSV with ``anonkit anonymize`` as a fresh process (the CSV is written
  first with :func:`anonkit.data.write.write_table`), with the child's peak RSS (``ru_maxrss`` of
  that child, from ``os.wait4``). The target's table is the issue's "1,000,000 rows x 8
  QIs": ``id``, the 8 QIs and the sensitive ``disease`` (105 MB of CSV). The whole census
  table (15 columns, 144 MB: 5 more columns that are released unchanged) is timed too, for
  information.

``--quick`` skips anonypy and runs fewer repetitions; ``--skip-large`` skips the
1,000,000-row part; ``--rows`` changes its size (targets then no longer apply).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import anonkit
from anonkit.data.encoding import EncodedTable, encode
from anonkit.data.schema import Schema
from anonkit.data.write import write_table
from anonkit.datasets import CENSUS_QUASI_IDENTIFIERS, load_adult, make_census
from anonkit.methods.mondrian import Mondrian
from anonkit.metrics.utility import gcp as gcp_of
from anonkit.models import KAnonymity
from anonkit.partition import Partition

ADULT_KS = (5, 10, 50)
MIB = 1024 * 1024

# targets (issue 2), all on this 2-core machine
T_ADULT_ALGO_MS = 10.0
T_ADULT_GCP = 0.035
T_ADULT_E2E_S = 1.5
T_LARGE_ALGO_S = 0.3
T_LARGE_E2E_S = 1.5
T_LARGE_PEAK_MIB = 1024.0


@dataclass
class Row:
    """One line of the printed table."""

    what: str
    anonkit: str
    anonypy: str = ""
    target: str = ""
    ok: bool | None = None  # None: no target


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, what: str, anonkit_value: str, anonypy_value: str = "", target: str = "",
            ok: bool | None = None) -> None:
        self.rows.append(Row(what, anonkit_value, anonypy_value, target, ok))

    def table(self) -> str:
        header = Row("measurement", "anonkit", "anonypy", "target", None)
        lines = [header, *self.rows]
        widths = [max(len(getattr(r, f)) for r in lines)
                  for f in ("what", "anonkit", "anonypy", "target")]

        def fmt(r: Row, status: str) -> str:
            cells = [r.what.ljust(widths[0]), r.anonkit.rjust(widths[1]),
                     r.anonypy.rjust(widths[2]), r.target.ljust(widths[3]), status]
            return "  ".join(cells).rstrip()

        out = [fmt(header, "status"), "-" * (sum(widths) + 2 * 4 + 6)]
        for r in self.rows:
            status = "" if r.ok is None else ("ok" if r.ok else "MISSED")
            out.append(fmt(r, status))
        return "\n".join(out)


# --------------------------------------------------------------------------- helpers


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """Best wall-clock seconds of ``repeat`` calls (after the caller's warm-up)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def verified(data: pd.DataFrame, qis: Sequence[str]) -> tuple[int, float]:
    """(k, DM) of a released table, as :func:`anonkit.check` sees it."""
    report = anonkit.check(data, list(qis), None, "k=1")
    sizes = report.class_sizes.astype(np.float64)
    return int(report.verdicts[0].measured), float(np.dot(sizes, sizes))


def class_losses(df: pd.DataFrame, qis: Sequence[str], class_ids: np.ndarray) -> np.ndarray:
    """``(n_qis, n_classes)`` NCP per QI and class from the original rows: numeric range /
    domain range, categorical (distinct - 1) / (domain distinct - 1)."""
    losses = []
    for name in qis:
        col = df[name]
        if pd.api.types.is_numeric_dtype(col) and not isinstance(col.dtype,
                                                                 pd.CategoricalDtype):
            values = col.to_numpy(dtype=np.float64)
            span = values.max() - values.min()
            grouped = pd.Series(values).groupby(class_ids)
            width = (grouped.max() - grouped.min()).to_numpy()
            losses.append(width / span if span > 0 else np.zeros_like(width))
        else:
            codes, uniques = pd.factorize(col)
            card = len(uniques)
            distinct = pd.Series(codes).groupby(class_ids).nunique().to_numpy()
            losses.append((distinct - 1) / (card - 1) if card > 1
                          else np.zeros(len(distinct)))
    return np.stack(losses)


def anonkit_cli() -> list[str]:
    """The ``anonkit`` command of this interpreter's environment."""
    exe = Path(sys.executable).with_name("anonkit")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("anonkit")
    return [found] if found else [sys.executable, "-m", "anonkit.cli"]


@dataclass
class ChildRun:
    seconds: float
    peak_mib: float
    outcome: dict[str, Any]


@dataclass
class ChildRuns:
    """Repeated runs of one command: the fastest is the figure, the median shows the
    spread (a shared 2-core machine swings by a few tenths of a second)."""

    runs: list[ChildRun]

    @property
    def best(self) -> ChildRun:
        return min(self.runs, key=lambda r: r.seconds)

    @property
    def median_s(self) -> float:
        return float(np.median([r.seconds for r in self.runs]))

    @property
    def peak_mib(self) -> float:
        return max(r.peak_mib for r in self.runs)

    def text(self) -> str:
        return f"{fmt_s(self.best.seconds)} (median {fmt_s(self.median_s)})"


# The child is started by a small launcher process rather than by this one: a process
# forked from this one (holding a million-row table) would count this one's memory in its
# peak RSS (Linux folds the forked copy's high-water mark in at exec).
_LAUNCHER = """
import os, subprocess, sys, time
t0 = time.perf_counter()
child = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(child.pid, 0)
seconds = time.perf_counter() - t0
sys.stderr.write(f"\\n@child {seconds} {usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_child(argv: list[str]) -> ChildRun:
    """Run a fresh process; its wall-clock seconds and its own peak RSS."""
    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, *argv], capture_output=True,
                          check=False)
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}):\n{err}")
    seconds, peak_kib = err.rstrip().rsplit("\n", 1)[-1].split()[1:]
    try:
        outcome = json.loads(proc.stdout)
    except json.JSONDecodeError:
        outcome = {}
    return ChildRun(float(seconds), int(peak_kib) / 1024, outcome)  # ru_maxrss: KiB


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def fmt_s(seconds: float) -> str:
    return f"{seconds:.2f} s"


def fmt_pct(x: float) -> str:
    return f"{x * 100:.2f} %"


def fmt_dm(x: float) -> str:
    return f"{x:,.0f}"


def timings_note(label: str, timings: dict[str, float]) -> str:
    parts = ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in timings.items())
    return f"{label} phases (inside the child): {parts}"


# --------------------------------------------------------------------------- Adult


def adult_anonkit(report: Report, repeat: int) -> dict[int, dict[str, float]]:
    ds = load_adult()
    df, qis = ds.data, ds.quasi_identifiers
    table = encode(df, Schema.from_roles(df, qis))
    out: dict[int, dict[str, float]] = {}
    for k in ADULT_KS:
        mondrian, models = Mondrian(k=k), [KAnonymity(k)]
        mondrian.partition(table, models)  # warm: compile / load the kernel
        seconds = best_of(lambda m=mondrian, ms=models: m.partition(table, ms), repeat)
        result = mondrian.anonymize(df, qis, ds.sensitive)
        k_seen, dm = verified(result.data, qis)
        out[k] = {"algorithm_s": seconds, "gcp": result.metrics["gcp"], "dm": dm,
                  "verified_k": k_seen, "classes": result.n_classes}
    return out


def adult_anonypy(ks: Sequence[int]) -> dict[int, dict[str, float]]:
    import anonypy

    ds = load_adult()
    qis = ds.quasi_identifiers
    df = ds.data.copy()
    for name in qis:
        if not pd.api.types.is_numeric_dtype(df[name]):
            df[name] = df[name].astype("category")  # anonypy's marker for categorical
    out: dict[int, dict[str, float]] = {}
    for k in ks:
        preserver = anonypy.Preserver(df, qis, ds.sensitive)
        inner = preserver.modrian  # (sic) anonypy's attribute name
        captured: list[list[pd.Index]] = []
        partition_seconds: list[float] = []
        original = inner.partition

        def timed_partition(*args: Any, original: Callable[..., Any] = original,
                            captured: list[Any] = captured,
                            partition_seconds: list[float] = partition_seconds) -> Any:
            t0 = time.perf_counter()
            parts = original(*args)
            partition_seconds.append(time.perf_counter() - t0)
            captured.append(parts)
            return parts

        inner.partition = timed_partition
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            rows = preserver.anonymize_k_anonymity(k=k)
            total = time.perf_counter() - t0
        parts = captured[-1]
        class_ids = np.empty(len(df), dtype=np.int64)
        for c, index in enumerate(parts):
            class_ids[df.index.get_indexer(index)] = c
        sizes = np.bincount(class_ids)
        gcp = gcp_of(class_losses(ds.data, qis, class_ids), sizes)
        # the released table: one row per record (anonypy emits one row per class and
        # sensitive value with a count)
        released = pd.DataFrame(rows)
        released = released.loc[released.index.repeat(released["count"])].drop(
            columns="count").reset_index(drop=True)
        for name in qis:
            released[name] = released[name].astype(str)
        k_seen, dm = verified(released, qis)
        out[k] = {"algorithm_s": partition_seconds[-1], "total_s": total, "gcp": gcp,
                  "dm": dm, "verified_k": k_seen, "classes": len(parts)}
    return out


def adult_end_to_end(report: Report, workdir: Path, runs: int) -> None:
    ds = load_adult()
    src = workdir / "adult.csv"
    write_table(ds.data, src)
    argv = [*anonkit_cli(), "anonymize", str(src), "-o", str(workdir / "adult-out.csv"),
            "--qi", ",".join(ds.quasi_identifiers), "--insensitive", "*", "-k", "5", "--json"]
    runs_ = ChildRuns([run_child(argv) for _ in range(runs)])
    best = runs_.best
    report.add(f"Adult k=5, `anonkit anonymize` fresh process (best of {runs})",
               runs_.text(), target=f"<= {T_ADULT_E2E_S} s", ok=best.seconds <= T_ADULT_E2E_S)
    report.add("  peak memory of that process", f"{runs_.peak_mib:.0f} MiB")
    report.figures["adult_end_to_end_s"] = best.seconds
    report.figures["adult_end_to_end_median_s"] = runs_.median_s
    report.figures["adult_end_to_end_peak_mib"] = runs_.peak_mib
    timings = best.outcome.get("timings", {})
    report.figures["adult_end_to_end_phases_s"] = timings
    if timings:
        report.notes.append(timings_note("Adult end to end", timings))


# --------------------------------------------------------------------------- large


def large_algorithm(report: Report, n_rows: int, repeat: int, workdir: Path) -> list[str]:
    """Warm algorithm time on the encoded synthetic table; writes its CSV for the child."""
    at_target_size = n_rows == 1_000_000
    label = f"{n_rows:,} rows"
    ds = make_census(n_rows, seed=0)
    qis = list(CENSUS_QUASI_IDENTIFIERS)
    t0 = time.perf_counter()
    table: EncodedTable = encode(ds.data, Schema.from_roles(ds.data, qis, identifiers=["id"]))
    encode_s = time.perf_counter() - t0
    mondrian, models = Mondrian(k=10), [KAnonymity(10)]
    parts: Partition = mondrian.partition(table, models)
    algo = best_of(lambda: mondrian.partition(table, models), repeat)
    report.add(f"{label} x 8 QIs, k=10, algorithm (warm, best of {repeat})", fmt_s(algo),
               target=f"<= {T_LARGE_ALGO_S} s" if at_target_size else "",
               ok=algo <= T_LARGE_ALGO_S if at_target_size else None)
    report.figures["large_rows"] = n_rows
    report.figures["large_algorithm_s"] = algo
    report.figures["large_encode_s"] = encode_s
    report.figures["large_classes"] = parts.n_classes
    report.figures["large_rounds"] = parts.rounds
    write_table(ds.data[["id", *qis, "disease"]], workdir / "census.csv")
    write_table(ds.data, workdir / "census-full.csv")
    # the kernel writes those 250 MB back to disk in the background: not while timing
    os.sync()
    return qis


def large_end_to_end(report: Report, n_rows: int, qis: list[str], runs: int,
                     workdir: Path) -> None:
    at_target_size = n_rows == 1_000_000
    label = f"{n_rows:,} rows"
    runs_ = census_runs(workdir / "census.csv", qis, runs)
    best, peak = runs_.best, runs_.peak_mib
    report.add(f"{label}, CSV -> CSV, fresh process (best of {runs})", runs_.text(),
               target=f"<= {T_LARGE_E2E_S} s" if at_target_size else "",
               ok=best.seconds <= T_LARGE_E2E_S if at_target_size else None)
    report.add(f"{label}, CSV -> CSV, peak memory (max RSS)", f"{peak:.0f} MiB",
               target=f"< {T_LARGE_PEAK_MIB:.0f} MiB" if at_target_size else "",
               ok=peak < T_LARGE_PEAK_MIB if at_target_size else None)
    report.figures["large_end_to_end_s"] = best.seconds
    report.figures["large_end_to_end_median_s"] = runs_.median_s
    report.figures["large_end_to_end_peak_mib"] = peak
    timings = best.outcome.get("timings", {})
    report.figures["large_end_to_end_phases_s"] = timings
    if timings:
        report.notes.append(timings_note(f"{label} end to end", timings))
    full_runs = census_runs(workdir / "census-full.csv", qis, runs)
    full, full_peak = full_runs.best, full_runs.peak_mib
    report.add(f"{label} x 15 columns (5 released unchanged), CSV -> CSV",
               full_runs.text())
    report.add(f"{label} x 15 columns, peak memory", f"{full_peak:.0f} MiB")
    report.figures["large_full_end_to_end_s"] = full.seconds
    report.figures["large_full_end_to_end_median_s"] = full_runs.median_s
    report.figures["large_full_end_to_end_peak_mib"] = full_peak
    if full.outcome.get("timings"):
        report.notes.append(timings_note(f"{label} x 15 columns", full.outcome["timings"]))


def census_runs(source: Path, qis: list[str], runs: int) -> ChildRuns:
    """``runs`` fresh ``anonkit anonymize`` processes on the census CSV ``source``."""
    argv = [*anonkit_cli(), "anonymize", str(source), "-o",
            str(source.with_name(source.stem + "-out.csv")), "--qi", ",".join(qis), "--id",
            "id", "--sensitive", "disease", "--insensitive", "*", "-k", "10", "--json"]
    return ChildRuns([run_child(argv) for _ in range(runs)])


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="skip anonypy, fewer repetitions")
    parser.add_argument("--skip-anonypy", action="store_true", help="anonkit only")
    parser.add_argument("--skip-large", action="store_true",
                        help="skip the synthetic 1,000,000-row part")
    parser.add_argument("--rows", type=int, default=1_000_000,
                        help="rows of the synthetic table (default 1,000,000)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="repetitions of each warm algorithm timing (default 20, "
                             "quick 5; 3 / 2 for the large table)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    skip_anonypy = args.skip_anonypy or args.quick
    repeat = args.repeat or (5 if args.quick else 20)
    large_repeat = args.repeat or (2 if args.quick else 3)
    runs = 2 if args.quick else 5

    report = Report()
    report.figures["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                                 "numpy": np.__version__, "pandas": pd.__version__,
                                 "load_average_at_start": os.getloadavg()}
    ours = adult_anonkit(report, repeat)
    theirs: dict[int, dict[str, float]] = {}
    if not skip_anonypy:
        try:
            theirs = adult_anonypy(ADULT_KS)
        except ImportError:
            report.notes.append("anonypy is not installed (pip install -e '.[bench]')")
    report.figures["adult"] = {"anonkit": ours, "anonypy": theirs}

    def theirs_fmt(k: int, key: str, fmt: Callable[[float], str]) -> str:
        return fmt(theirs[k][key]) if k in theirs else "-"

    for k in ADULT_KS:
        a = ours[k]
        five = k == 5
        report.add(f"Adult k={k}, algorithm (warm, best of {repeat} / anonypy once)",
                   fmt_ms(a["algorithm_s"]), theirs_fmt(k, "algorithm_s", fmt_s),
                   f"<= {T_ADULT_ALGO_MS:g} ms" if five else "",
                   a["algorithm_s"] * 1e3 <= T_ADULT_ALGO_MS if five else None)
        if k in theirs:
            report.add("  anonypy anonymize_k_anonymity, total", "",
                       fmt_s(theirs[k]["total_s"]))
        report.add(f"Adult k={k}, GCP", fmt_pct(a["gcp"]), theirs_fmt(k, "gcp", fmt_pct),
                   f"<= {T_ADULT_GCP * 100:g} %" if five else "",
                   a["gcp"] <= T_ADULT_GCP if five else None)
        report.add(f"Adult k={k}, DM", fmt_dm(a["dm"]), theirs_fmt(k, "dm", fmt_dm))
        report.add(f"Adult k={k}, verified k (classes)",
                   f"{a['verified_k']} ({a['classes']:.0f})",
                   f"{theirs[k]['verified_k']} ({theirs[k]['classes']:.0f})"
                   if k in theirs else "-",
                   f">= {k}", a["verified_k"] >= k and (k not in theirs
                                                        or theirs[k]["verified_k"] >= k))

    with tempfile.TemporaryDirectory(prefix="anonkit-bench-") as tmp:
        workdir = Path(tmp)
        adult_end_to_end(report, workdir, runs)
        if not args.skip_large:
            # in its own function, so the table is freed before the child runs
            qis = large_algorithm(report, args.rows, large_repeat, workdir)
            large_end_to_end(report, args.rows, qis, runs, workdir)

    if args.json:
        report.figures["rows"] = [r.__dict__ for r in report.rows]
        report.figures["notes"] = report.notes
        print(json.dumps(report.figures, indent=2, default=float))
    else:
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"Mondrian benchmark ({os.cpu_count()} CPUs, load average {load}, Python "
              f"{sys.version.split()[0]}); GCP and DM with one formula for both tools")
        print(report.table())
        for note in report.notes:
            print(f"  * {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
