"""m-invariance over a changing table: 100,000 rows, m = 4, 5 releases with 10 % churn each.

Each release after the first deletes 10 % of the current records and inserts as many:
half new people, half people who left earlier and come back (so the returning-record path
is exercised). Every release is read from CSV and written to CSV with its counterfeit
table, as the command line does; the signatures travel from release to release in the
method's state (the same bytes the history keeps).

Prints per release the time of each phase (division, balancing, assignment, split,
generalization, the rest: encode, verify, metrics, state), the CSV read and write, the
counterfeits and the average relative error of COUNT queries; then the total.
``--history`` also publishes the same sequence through the release history (pseudonyms,
audit gate, transaction) and prints that time separately.

Run: python benchmarks/m_invariance.py [--rows 100000] [--m 4] [--releases 5]
[--churn 0.1] [--skewed] [--history]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

DISEASES = np.array(["flu", "asthma", "diabetes", "cancer", "hiv", "migraine", "covid",
                     "gastritis", "bronchitis", "ulcer"], dtype=object)


def people(ids: np.ndarray) -> pd.DataFrame:
    """One row per id; every attribute is a fixed pseudo-random function of the id."""
    h = (np.asarray(ids, dtype=np.int64) * 2654435761 + 12345) % (2**32)
    return pd.DataFrame({
        "pid": np.char.add("P", ids.astype(str)).astype(object),
        "age": (18 + h % 73).astype(np.int64),
        "zip": (10000 + (h // 73) % 4000).astype(np.int64),
        "sex": np.where((h // 292000) % 2 == 0, "F", "M").astype(object),
        "disease": DISEASES[(h // 584000) % len(DISEASES)],
    })


def versions(n_rows: int, n_releases: int, churn: float, seed: int = 0,
             skewed: bool = False) -> list[np.ndarray]:
    """The ids present in each release: churn deletes, half the inserts are returns.
    ``skewed``: people with the first two diseases leave three times as often (so their
    lists run short and counterfeits are needed)."""
    rng = np.random.default_rng(seed)
    present = np.arange(n_rows)
    gone = np.zeros(0, dtype=np.int64)
    next_id = n_rows
    out = [present]
    for _ in range(n_releases - 1):
        k = round(churn * len(present))
        weight = np.ones(len(present))
        if skewed:
            weight[np.isin(people(present)["disease"].to_numpy(), DISEASES[:2])] = 3.0
        leaving = rng.choice(len(present), k, replace=False, p=weight / weight.sum())
        left = present[leaving]
        present = np.delete(present, leaving)
        back = gone[:min(len(gone), k // 2)]
        gone = np.concatenate([gone[len(back):], left])
        new = np.arange(next_id, next_id + k - len(back))
        next_id += len(new)
        present = np.concatenate([present, back, new])
        out.append(rng.permutation(present))
    return out


def pseudonyms(keys: pd.Series) -> np.ndarray:
    """Stand-ins for the history's keyed pseudonyms (16 bytes per key)."""
    return np.array([hashlib.blake2b(str(k).encode(), digest_size=16).digest()
                     for k in keys], dtype="S16")


def run(args: argparse.Namespace, folder: Path) -> None:
    from anonkit.data.read import read_table
    from anonkit.data.schema import Schema
    from anonkit.history.engines.minvariance import MInvariance, SignatureState
    from anonkit.verify import write_release

    inputs = []
    for i, ids in enumerate(versions(args.rows, args.releases, args.churn,
                                     skewed=args.skewed)):
        path = folder / f"ward{i + 1}.csv"
        people(ids).to_csv(path, index=False)
        inputs.append(path)
    phases = ["division", "balancing", "assignment", "split", "generalization"]
    header = (f"{'release':>7} {'rows':>7} {'read':>6} " +
              " ".join(f"{p[:10]:>10}" for p in phases) +
              f" {'other':>6} {'write':>6} {'total':>6} {'fakes':>6} {'count err':>9}")
    print(f"m-invariance: {args.rows} rows, m = {args.m}, {args.releases} releases, "
          f"{args.churn:.0%} churn each{' (skewed departures)' if args.skewed else ''} "
          f"(seconds; load average {os.getloadavg()[0]:.1f})")
    print(header)
    state = SignatureState.empty()
    method = MInvariance(args.m, seed=None)
    grand = 0.0
    for i, path in enumerate(inputs):
        t0 = time.perf_counter()
        df = read_table(path)
        t_read = time.perf_counter() - t0
        schema = Schema.from_roles(df, ["age", "zip", "sex"], ["disease"], ["pid"])
        keys = pseudonyms(df["pid"])
        t0 = time.perf_counter()
        release = method.next_release(df, schema, keys, state)
        release.shuffle_rows()
        t_method = time.perf_counter() - t0
        t0 = time.perf_counter()
        write_release(release, folder / f"release{i + 1}.csv", forbidden=["pid"])
        t_write = time.perf_counter() - t0
        assert release.method_state is not None
        state = SignatureState.from_bytes(release.method_state)
        t = release.timings
        measured = sum(t.get(p, 0.0) for p in phases)
        total = t_read + t_method + t_write
        grand += total
        print(f"{i + 1:>7} {len(df):>7} {t_read:>6.3f} " +
              " ".join(f"{t.get(p, 0.0):>10.3f}" for p in phases) +
              f" {t_method - measured:>6.3f} {t_write:>6.3f} {total:>6.3f} "
              f"{release.n_counterfeits:>6} "
              f"{release.metrics.get('count_query.relative_error', float('nan')):>9.2%}")
    print(f"total {grand:.2f} s for {args.releases} releases (CSV in and out); for "
          f"comparison the reference Java implementation took about 13 s for 3 releases of "
          f"about 60,000 tuples")
    if args.history:
        history(inputs, folder, args)


def history(inputs: list[Path], folder: Path, args: argparse.Namespace) -> None:
    """The same sequence published through the history (the gate audits every release)."""
    import warnings

    from anonkit.data.read import read_table
    from anonkit.history import HistoryStore, PublishRequest, audit, publish

    request = PublishRequest(dataset="ward", key="pid", quasi_identifiers=["age", "zip", "sex"],
                             sensitive=["disease"], method="m-invariance",
                             options={"m": args.m})
    t_all = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with HistoryStore.open(folder / "history.db", create=True) as store:
            for i, path in enumerate(inputs):
                t0 = time.perf_counter()
                timings: dict[str, float] = {}
                publish(store, read_table(path), request, folder / f"published{i + 1}.csv",
                        timings=timings)
                print(f"  history release {i + 1}: {time.perf_counter() - t0:.2f} s "
                      f"(method {timings.get('method', 0):.2f}, gate "
                      f"{timings.get('knowledge', 0):.2f})")
            report = audit(store, "ward")
    scope = report.overall
    findings = [f for f in (scope.findings if scope else []) if not f.outside_claim]
    print(f"history: {time.perf_counter() - t_all:.2f} s in all; audit: "
          f"{report.records_breached} records breached within the claimed threat model "
          f"({len(findings)} findings: {sum(f.proved for f in findings)} proved, "
          f"{sum(not f.proved for f in findings)} not ruled out); "
          f"{scope.records_compared if scope else 0:,} records judged")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--m", type=int, default=4)
    parser.add_argument("--releases", type=int, default=5)
    parser.add_argument("--churn", type=float, default=0.1)
    parser.add_argument("--skewed", action="store_true",
                        help="people with two of the diseases leave three times as often")
    parser.add_argument("--history", action="store_true",
                        help="also publish the sequence through the release history")
    with tempfile.TemporaryDirectory(prefix="minv-bench-") as folder:
        run(parser.parse_args(), Path(folder))


if __name__ == "__main__":
    main()
