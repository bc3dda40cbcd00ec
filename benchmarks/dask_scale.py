"""Mondrian on Dask at scale: the synthetic census table, 8 QIs, k = 10.

    .venv/bin/python benchmarks/dask_scale.py [--rows 1000000,10000000] [--workers 1,2]
                                              [--k 10] [--skip-single] [--json]

For each size, the table (``id``, the 8 census QIs and the sensitive ``disease``, from
:func:`anonkit.datasets.make_census`) is written as a directory of Parquet files of
1,000,000 rows (row groups of 500,000). Then:

* single process: ``Mondrian(k).anonymize`` on the table in memory (encode, partition,
  generalize, verify, metrics), for the GCP to compare with and its time;
* Dask, for each worker count: a fresh ``LocalCluster`` of that many worker processes (one
  thread each), then ``DaskMondrian(k).anonymize`` from the Parquet directory to a Parquet
  directory, timed end to end (reading, encoding, sample cuts, fragments, anonymization,
  verification of the whole output, rename); the cluster start is timed apart. Peak memory
  per worker is each worker process's peak RSS (``ru_maxrss``), the largest shown.

Prints ONE table (or the same figures as JSON) with the issue's target next to it:
10,000,000 rows in <= 60 s with <= 3 GB per worker.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from anonkit.datasets import CENSUS_QUASI_IDENTIFIERS, make_census
from anonkit.distributed.cluster import dask_client
from anonkit.distributed.engine import DaskMondrian
from anonkit.methods.mondrian import Mondrian

FILE_ROWS = 1_000_000
TARGET_SECONDS = 60.0
TARGET_WORKER_GB = 3.0


def write_census(n_rows: int, folder: Path) -> Path:
    """The census table as a directory of Parquet files of ``FILE_ROWS`` rows."""
    df = make_census(n_rows, seed=0).data[["id", *CENSUS_QUASI_IDENTIFIERS, "disease"]]
    source = folder / f"census-{n_rows}"
    source.mkdir()
    for i, start in enumerate(range(0, n_rows, FILE_ROWS)):
        chunk = df.iloc[start:start + FILE_ROWS].reset_index(drop=True)
        pq.write_table(pa.Table.from_pandas(chunk, preserve_index=False),
                       source / f"part-{i:04d}.parquet", row_group_size=500_000)
    return source


def single_process(source: Path, k: int) -> tuple[float, float]:
    """(seconds, GCP) of single-process Mondrian on the whole table in memory."""
    import pandas as pd

    df = pd.concat([pd.read_parquet(p) for p in sorted(source.glob("*.parquet"))],
                   ignore_index=True)
    started = time.perf_counter()
    release = Mondrian(k).anonymize(df, CENSUS_QUASI_IDENTIFIERS, "disease",
                                    identifiers=["id"])
    seconds = time.perf_counter() - started
    assert release.passed
    gcp = float(release.metrics["gcp"])
    del release, df
    gc.collect()
    return seconds, gcp


def dask_run(source: Path, output: Path, workers: int, k: int) -> dict[str, Any]:
    started = time.perf_counter()
    with dask_client(workers=workers) as client:
        cluster_seconds = time.perf_counter() - started
        t0 = time.perf_counter()
        release = DaskMondrian(k).anonymize(source, output, CENSUS_QUASI_IDENTIFIERS,
                                            "disease", identifiers=["id"], client=client)
        seconds = time.perf_counter() - t0
        peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    assert release.passed
    shutil.rmtree(output)
    return {"workers": workers, "seconds": seconds, "cluster_start": cluster_seconds,
            "worker_peak_gb": max(peaks.values()) / 2**30, "gcp": release.metrics["gcp"],
            "fragments": release.n_fragments, "merged_cuts": release.merged_cuts,
            "phases": {key: round(value, 2) for key, value in release.timings.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000000,10000000")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("-k", "--k", type=int, default=10)
    parser.add_argument("--skip-single", action="store_true",
                        help="do not run single-process Mondrian (no GCP comparison)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.rows.split(",")]
    worker_counts = [int(x) for x in args.workers.split(",")]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="anonkit-dask-") as folder:
        for n in sizes:
            t0 = time.perf_counter()
            source = write_census(n, Path(folder))
            gc.collect()
            prepare = time.perf_counter() - t0
            single = (None, None) if args.skip_single else single_process(source, args.k)
            for workers in worker_counts:
                result = dask_run(source, Path(folder) / "out", workers, args.k)
                result |= {"rows": n, "single_seconds": single[0], "single_gcp": single[1],
                           "prepare_seconds": prepare}
                rows.append(result)
                print(f"  done: {n} rows, {workers} worker(s): {result['seconds']:.1f} s",
                      file=sys.stderr)
            shutil.rmtree(source)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"Mondrian on Dask, synthetic census, 8 QIs, k = {args.k} "
          f"(target: 10M rows <= {TARGET_SECONDS:.0f} s, <= {TARGET_WORKER_GB:.0f} GB/worker)")
    header = ("| rows | workers | time (s) | cluster start (s) | peak per worker (GiB) | "
              "fragments | GCP | single-process GCP | GCP vs single | single-process "
              "time (s) | phases (s) |")
    print(header)
    print("|" + "---|" * 11)
    for r in rows:
        ratio = (f"{(r['gcp'] / r['single_gcp'] - 1) * 100:+.2f} %"
                 if r["single_gcp"] else "-")
        single_gcp = f"{r['single_gcp']:.5f}" if r["single_gcp"] else "-"
        single_s = f"{r['single_seconds']:.1f}" if r["single_seconds"] else "-"
        phases = ", ".join(f"{k} {v}" for k, v in r["phases"].items())
        print(f"| {r['rows']:,} | {r['workers']} | {r['seconds']:.1f} | "
              f"{r['cluster_start']:.1f} | {r['worker_peak_gb']:.2f} | {r['fragments']} | "
              f"{r['gcp']:.5f} | {single_gcp} | {ratio} | {single_s} | {phases} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
