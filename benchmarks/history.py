"""Release history benchmark: recording a 1,000,000-row release, auditing 5 x 100,000 rows.

    .venv/bin/python benchmarks/history.py [--rows 1000000] [--audit-rows 100000]
                                           [--history URL] [--secret-file FILE]

Targets (issue 3): recording the history of a 1,000,000-row release <= 10 s on SQLite;
auditing 5 releases of 100,000 rows <= 10 s. "Recording the history" is everything publish
does besides running the algorithm and writing the file: checking the key column and roles,
pseudonymising the keys (HMAC-SHA256), summarising the classes, hashing the file, the
database transaction and the rename. The releases come from naive Mondrian (k=5) on a
synthetic census, re-run on each version of a table with 10 % churn, as in the issue's
scenario. Without --history, a fresh SQLite file in a temporary folder is used.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from anonkit.datasets import census_versions, make_census
from anonkit.releases import HistoryStore, PublishRequest, audit, publish

QIS = ["age", "sex", "race", "marital-status", "education", "zip"]
TARGET_SECONDS = 10.0
HISTORY_PHASES = ("validate", "pseudonyms", "summarize", "hash", "record", "rename")


def request(dataset: str) -> PublishRequest:
    return PublishRequest(dataset=dataset, key="id", quasi_identifiers=QIS,
                          sensitive=["disease", "salary"], method="mondrian",
                          options={"k": 5})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--audit-rows", type=int, default=100_000)
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
                    allow_breach=True)
            t0 = time.perf_counter()
            views = [store.load(i, labels=False) for i in store.releases(dataset)]
            loaded = time.perf_counter() - t0
            from anonkit.releases.attacks import audit_views

            t1 = time.perf_counter()
            report = audit_views(views)
            computed = time.perf_counter() - t1
            t2 = time.perf_counter()
            audit(store, dataset)  # the public entry point, end to end
            end_to_end = time.perf_counter() - t2
            rows.append((f"audit 5 releases of {args.audit_rows:,} rows ({backend})",
                         end_to_end, f"load {loaded:.2f}, intersect {computed:.2f}; "
                         f"{report.records_breached:,} records breached"))

    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark'.ljust(width)}  {'seconds':>8}  target   notes")
    for name, seconds, note in rows:
        target = "" if name.startswith("  ") else (
            "ok" if seconds <= TARGET_SECONDS else "SLOW")
        print(f"{name.ljust(width)}  {seconds:8.2f}  {target:<7}  {note}")
    slow = [r for r in rows if not r[0].startswith("  ") and r[1] > TARGET_SECONDS]
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
