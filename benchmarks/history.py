"""Release history benchmark: recording a 1,000,000-row release, auditing 5 x 100,000 rows,
and the gate and audit times as a history grows to 5, 10 and 20 releases of 50,000 rows.

    .venv/bin/python benchmarks/history.py [--rows 1000000] [--audit-rows 100000]
                                           [--series-rows 50000] [--series 5,10,20]
                                           [--history URL] [--secret-file FILE]

Targets (issue 3): recording the history of a 1,000,000-row release <= 10 s on SQLite;
auditing 5 releases of 100,000 rows <= 10 s. "Recording the history" is everything publish
does besides running the algorithm and writing the file: checking the key column and roles,
pseudonymising the keys (HMAC-SHA256), summarising the classes, adding the release to the
adversaries' knowledge the history keeps (and packing it), hashing the file, the database
transaction and the rename. The releases come from naive Mondrian (k=5) on a
synthetic census, re-run on each version of a table with 10 % churn, as in the issue's
scenario. Without --history, a fresh SQLite file in a temporary folder is used.

The series (issue 8): releases of a churning table are published one after another; for
n in --series, "gate" is the publish-time check of release n inside ``publish`` (reading
the knowledge the history keeps after release n - 1, adding release n, judging its
records; see ``series``) and "audit" is ``audit`` over all n releases, end to end (the
kept knowledge judged, and the row-wise intersection of consecutive releases' labels).
Targets: the gate of the 20th release <= 1 s, the audit of 20 releases <= 3 s.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

from anonkit.datasets import census_versions, make_census
from anonkit.history import HistoryStore, PublishRequest, audit, publish

QIS = ["age", "sex", "race", "marital-status", "education", "zip"]
TARGET_SECONDS = 10.0
#: series targets: (gate, audit) seconds for the 20th release
SERIES_TARGETS = {20: (1.0, 3.0)}
HISTORY_PHASES = ("validate", "pseudonyms", "summarize", "knowledge", "hash", "record",
                  "rename")


def request(dataset: str) -> PublishRequest:
    return PublishRequest(dataset=dataset, key="id", quasi_identifiers=QIS,
                          sensitive=["disease", "salary"], method="mondrian",
                          options={"k": 5})


def main() -> int:
    # the series publishes breaching releases on purpose, with --allow-breach
    warnings.filterwarnings("ignore", category=UserWarning, module="anonkit")
    warnings.filterwarnings("ignore", message=".*published over the gate")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--audit-rows", type=int, default=100_000)
    parser.add_argument("--series-rows", type=int, default=50_000)
    parser.add_argument("--series", default="5,10,20",
                        help="release counts to time the gate and the audit at ('' : none)")
    parser.add_argument("--history", default=None, help="history path or URL")
    parser.add_argument("--secret-file", default=None)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="anonkit-bench-") as tmp:
        work = Path(tmp)
        history = args.history or str(work / "anonkit.db")
        secret_file = args.secret_file or (str(work / "history.secret")
                                           if "://" in history else None)
        suffix = os.urandom(3).hex()
        rows: list[tuple[str, float, str]] = []
        with HistoryStore.open(history, secret_file=secret_file, create=True) as store:
            backend = store.engine.dialect.name
            # 1. one big release
            df = make_census(args.rows, seed=1).data
            timings: dict[str, float] = {}
            t0 = time.perf_counter()
            info = publish(store, df, request(f"big-{suffix}"), work / "big.parquet",
                           timings=timings)
            total = time.perf_counter() - t0
            recording = sum(timings.get(p, 0.0) for p in HISTORY_PHASES)
            detail = ", ".join(f"{p} {timings.get(p, 0.0):.2f}" for p in HISTORY_PHASES)
            rows.append((f"publish {args.rows:,} rows: history recording ({backend})",
                         recording, detail))
            rows.append((f"  (Mondrian {timings['method']:.1f} s, file write "
                         f"{timings['write']:.1f} s, whole publish)", total,
                         f"{info.n_classes:,} classes"))
            del df

            # 2. five releases of a churning table, audited
            dataset = f"churn-{suffix}"
            for n, version in enumerate(census_versions(args.audit_rows, 5, 0.1, seed=2)):
                publish(store, version, request(dataset), work / f"churn{n}.parquet",
                    allow_breach=True, new_lineage=True)  # the same census ids as "big"
            t0 = time.perf_counter()
            views = [store.load(i, labels=False) for i in store.releases(dataset)]
            loaded = time.perf_counter() - t0
            from anonkit.history.attacks import audit_views

            t1 = time.perf_counter()
            audit_views(views)  # the knowledge rebuilt from the releases, then judged
            rebuilt = time.perf_counter() - t1
            t2 = time.perf_counter()
            report = audit(store, dataset)  # the public entry point, end to end
            end_to_end = time.perf_counter() - t2
            rows.append((f"audit 5 releases of {args.audit_rows:,} rows ({backend})",
                         end_to_end, f"(without the kept knowledge: load {loaded:.2f}, "
                         f"fold and judge {rebuilt:.2f}); "
                         f"{report.records_breached:,} records breached"))

            # 3. a growing history: the gate and the audit at 5, 10, 20 releases
            counts = sorted({int(n) for n in args.series.split(",") if n.strip()})
            if counts:
                rows += series(store, f"series-{suffix}", args.series_rows, counts, work,
                               backend)

    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark'.ljust(width)}  {'seconds':>8}  target   notes")
    slow = False
    for name, seconds, note, limit in ((*r[:3], r[3] if len(r) > 3 else TARGET_SECONDS)
                                       for r in rows):
        target = "" if name.startswith("  ") or limit is None else (
            "ok" if seconds <= limit else "SLOW")
        slow |= target == "SLOW"
        print(f"{name.ljust(width)}  {seconds:8.2f}  {target:<7}  {note}")
    return 1 if slow else 0


def series(store: HistoryStore, dataset: str, n_rows: int, counts: list[int], work: Path,
           backend: str) -> list[tuple[str, float, str, float | None]]:
    """Publish ``max(counts)`` releases of a churning table; at each count, time the gate
    of the last release and the audit of all of them.

    The gate is timed inside ``publish``: release n is first published without
    ``allow_breach``, which runs everything up to the gate and is refused there (Mondrian
    re-run on a churning table always breaches); the gate's time is the call's time less the
    phases before it (``publish``'s ``timings``). It reads the knowledge the history keeps,
    adds release n and judges every record of the dataset (those release n newly exposes
    refuse it). Release n is then published with ``allow_breach``."""
    from anonkit.history.attacks import CrossReleaseBreachError
    from anonkit.history.knowledge import accumulated

    before_gate = ("validate", "pseudonyms", "method", "verify", "summarize", "lineage")
    out: list[tuple[str, float, str, float | None]] = []
    for n, version in enumerate(census_versions(n_rows, max(counts), 0.1, seed=3), start=1):
        if n in counts and n > 1:
            timings: dict[str, float] = {}
            t0 = time.perf_counter()
            try:
                publish(store, version, request(dataset), work / f"series{n}.parquet",
                        new_lineage=True, timings=timings)
                raise SystemExit(f"release {n} was not refused: the benchmark expects "
                                 f"Mondrian on a churning table to breach")
            except CrossReleaseBreachError as refused:
                message = str(refused)
            total = time.perf_counter() - t0
            gate_time = total - sum(timings.get(p, 0.0) for p in before_gate)
            t1 = time.perf_counter()
            kept = accumulated(store, dataset)
            read = time.perf_counter() - t1
            breached = message.split("would disclose ")[1].split(" record")[0]
        publish(store, version, request(dataset), work / f"series{n}.parquet",
                allow_breach=True, new_lineage=True)
        if n not in counts or n == 1:
            continue
        t1 = time.perf_counter()
        report = audit(store, dataset)
        audit_time = time.perf_counter() - t1
        state = store.knowledge_state(dataset)
        size = sum(map(len, state[1])) / 2**20 if state else 0.0
        gate_target, audit_target = SERIES_TARGETS.get(n, (None, None))
        out.append((f"gate of release {n} of {n_rows:,} rows ({backend})", gate_time,
                    f"reading the kept knowledge {read:.2f} ({size:.0f} MiB, "
                    f"{kept.n_records:,} records); {breached} records newly breached",
                    gate_target))
        out.append((f"audit of {n} releases of {n_rows:,} rows ({backend})", audit_time,
                    f"{report.overall.records_compared if report.overall else 0:,} records "
                    f"judged; {report.records_breached:,} breached", audit_target))
    return out


if __name__ == "__main__":
    sys.exit(main())
