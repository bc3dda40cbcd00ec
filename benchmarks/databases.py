"""Tables in databases (issue 26): 1,000,000 rows x 10 columns read from PostgreSQL,
anonymized with k=10 and written back into PostgreSQL, against the CSV -> CSV job on the
same rows. The issue's target: at most twice the CSV job's time.

The rows are ``id``, the 8 quasi-identifiers and ``disease`` of ``make_census(1_000_000)``
(seed 0). Both jobs run as fresh ``anonkit anonymize`` processes (imports, reading,
anonymizing, verifying, writing), one after the other ``--runs`` (3) times; best and median
of each:

* CSV -> CSV: ``anonkit anonymize census.csv -o out.csv --qi <8 QIs> --id id --sensitive
  disease --insensitive '*' -k 10``;
* PostgreSQL -> PostgreSQL: ``anonkit anonymize URL --table census -o URL --output-table
  census_release --replace`` with the same roles. The release goes to a temporary table,
  is read back and checked there, its verification written beside it, then renamed and
  committed: the whole protocol is timed.

Then the server's own part alone, best of ``--runs``: the input fetched, the release stored
again (in a transaction rolled back) and read back, with nothing else done. The target
leaves ``2 x CSV - that`` for everything else the job does (starting, anonymizing,
checking), which the CSV job does too.

The server: the URL in ``$ANONKIT_BENCH_POSTGRES`` (a database the benchmark may create and
drop the tables ``census``, ``census_release`` and ``census_release_verification`` in), or
else a throwaway cluster started the way the test suite starts one (``initdb`` in a
temporary folder, ``fsync=off``, on a free port of 127.0.0.1), stopped afterwards.

Run: ``.venv/bin/python benchmarks/databases.py [--rows N] [--runs R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import adbc_driver_postgresql.dbapi as postgresql_driver
import pyarrow as pa
from timing import print_table

from anonkit.data.database import INGEST_BATCH_ROWS
from anonkit.data.write import write_table
from anonkit.datasets import CENSUS_QUASI_IDENTIFIERS, make_census

TARGET_RATIO = 2.0
REPOSITORY = Path(__file__).resolve().parents[1]


def anonkit_cli() -> list[str]:
    """The ``anonkit`` command of this environment."""
    script = Path(sys.executable).with_name("anonkit")
    return [str(script)] if script.exists() else [sys.executable, "-m", "anonkit"]


def timed_run(argv: list[str]) -> tuple[float, dict[str, object]]:
    """Wall-clock seconds of one fresh process, and its ``--json``."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{argv[1]} failed ({done.returncode}): {done.stderr}")
    return seconds, json.loads(done.stdout)


def start_server() -> tuple[str, object]:
    """A throwaway cluster as the tests start one; its URL and the handle to stop it."""
    sys.path.insert(0, str(REPOSITORY / "tests"))
    from pg_fixtures import TemporaryPostgres

    server = TemporaryPostgres().start()
    return f"postgresql://postgres@127.0.0.1:{server.port}/postgres", server


def load(url: str, table: pa.Table) -> float:
    """Put ``table`` into PostgreSQL as ``census`` (replacing it); the seconds it took."""
    t0 = time.perf_counter()
    with postgresql_driver.connect(url) as connection, connection.cursor() as cursor:
        for name in ("census", "census_release", "census_release_verification"):
            cursor.execute(f'DROP TABLE IF EXISTS "{name}"')
        cursor.adbc_ingest("census", table, mode="create")
        connection.commit()
    return time.perf_counter() - t0


def server_floor(url: str, runs: int) -> tuple[float, float, float]:
    """The database's own part of the job, best of ``runs``, with nothing else done: the
    input's rows fetched (COPY out), the written release stored again in a new table inside
    a transaction (COPY in, in the batches anonkit sends) and read back from there, then
    rolled back. Any client of this server pays these three in sequence: the release
    exists only after the input is read, and is read back only once it is stored."""
    fetch_in, store, read_back = [], [], []
    with postgresql_driver.connect(url) as connection, connection.cursor() as cursor:
        cursor.execute('SELECT * FROM "census_release"')
        release = cursor.fetch_arrow_table()
        connection.rollback()
        batches = release.to_batches(max_chunksize=INGEST_BATCH_ROWS)
        for _ in range(runs):
            t0 = time.perf_counter()
            cursor.execute('SELECT * FROM "census"')
            cursor.fetch_arrow_table()
            fetch_in.append(time.perf_counter() - t0)
            connection.rollback()
            t0 = time.perf_counter()
            cursor.adbc_ingest("census_release_floor", pa.Table.from_batches(batches),
                               mode="create")
            store.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            cursor.execute('SELECT * FROM "census_release_floor"')
            cursor.fetch_arrow_table()
            read_back.append(time.perf_counter() - t0)
            connection.rollback()
    return min(fetch_in), min(store), min(read_back)


def phases(outcome: dict[str, object]) -> str:
    timings = outcome.get("timings") or {}
    assert isinstance(timings, dict)
    return ", ".join(f"{name} {seconds:.2f}" for name, seconds in timings.items()
                     if name in ("read", "write"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)

    url = os.environ.get("ANONKIT_BENCH_POSTGRES")
    server = None
    if not url:
        url, server = start_server()
    try:
        with tempfile.TemporaryDirectory(prefix="anonkit-db-bench-") as folder:
            workdir = Path(folder)
            qis = list(CENSUS_QUASI_IDENTIFIERS)
            data = make_census(args.rows, seed=0).data[["id", *qis, "disease"]]
            write_table(data, workdir / "census.csv")
            load_seconds = load(url, pa.Table.from_pandas(data, preserve_index=False))
            roles = ["--qi", ",".join(qis), "--id", "id", "--sensitive", "disease",
                     "--insensitive", "*", "-k", "10", "--json"]
            csv_job = [*anonkit_cli(), "anonymize", str(workdir / "census.csv"), "-o",
                       str(workdir / "out.csv"), *roles]
            db_job = [*anonkit_cli(), "anonymize", url, "--table", "census", "-o", url,
                      "--output-table", "census_release", "--replace", *roles]
            csv_times, db_times = [], []
            for _ in range(args.runs):  # interleaved: a change of load hits both alike
                seconds, csv_outcome = timed_run(csv_job)
                csv_times.append(seconds)
                seconds, db_outcome = timed_run(db_job)
                db_times.append(seconds)
            floor = server_floor(url, args.runs)
    finally:
        if server is not None:
            server.stop()  # type: ignore[attr-defined]

    ratio = min(db_times) / min(csv_times)
    status = "met" if ratio <= TARGET_RATIO else "MISSED"
    rows = [
        ["CSV -> CSV", f"{min(csv_times):.2f} (median {statistics.median(csv_times):.2f})",
         "", phases(csv_outcome)],
        ["PostgreSQL -> PostgreSQL",
         f"{min(db_times):.2f} (median {statistics.median(db_times):.2f})",
         f"<= {TARGET_RATIO:.0f}x CSV", phases(db_outcome)],
        ["ratio (best / best)", f"{ratio:.2f}x", f"<= {TARGET_RATIO:.1f}x", status],
        ["the server's part alone", f"{sum(floor):.2f}", f"{TARGET_RATIO * min(csv_times):.2f}",
         f"input out {floor[0]:.2f}, release in {floor[1]:.2f}, read back {floor[2]:.2f}"],
        ["  left for all the rest", f"{TARGET_RATIO * min(csv_times) - sum(floor):.2f}", "",
         f"the CSV job: {min(csv_times):.2f} in all"],
        ["(loading the table, not timed above)", f"{load_seconds:.2f}", "", "ADBC ingest"],
    ]
    print_table(f"{args.rows:,} rows x 10 columns, k=10, fresh processes, best of "
                f"{args.runs}", rows)
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
