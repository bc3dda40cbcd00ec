"""Incremental (k,e) on a table that loses people (issue 22, item 3): quarters of a salary
table, 5 % of the employees leaving and 10 % joining every quarter, published through a
history with placeholders (the default) and, as the peer, with the chapter's covering
partition (``--history-check pruned``); every release against the one-shot (k,e) optimum of
the same table. A second table of the same quarters with joiners only shows the merging
the covering partition pays even without departures.

Figures per release (each method's own, computed the same way):

- ``groups``: published groups; ``placeholders``: placeholder rows (values of people who
  left, kept in their groups);
- ``sum of ranges``: the optimisation objective of Zhang et al. (the ``ke.error`` metric),
  and its ratio to the one-shot optimum's;
- ``range/row``: the mean over the table's people of their group's range -- how widely each
  released value is spread -- and its ratio;
- ``SUM error``: the mean relative error of SUM over 100 random range queries on the
  quasi-identifiers (``ke.relative_error.mean``, the same queries for both).

Run: ``python benchmarks/ke_leavers.py [--rows N] [--quarters Q] [--k K] [--e E]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import anonkit
from anonkit.history import HistoryStore, PublishRequest, publish
from anonkit.history.attacks import CrossReleaseBreachError
from anonkit.metrics.range_queries import relative_error


def quarters(n: int, count: int, leave: float, seed: int = 4) -> list[pd.DataFrame]:
    """``count`` quarters of a salary table: each quarter a share ``leave`` of the employees
    leave and 10 % (of the first quarter's size) join. Salaries are log-normal around
    55,000, whole numbers."""
    rng = np.random.default_rng(seed)
    salaries: dict[int, int] = {}

    def hire(ids: np.ndarray) -> None:
        drawn = np.round(rng.lognormal(np.log(55_000), 0.35, len(ids))).astype(int)
        salaries.update(zip(ids.tolist(), drawn.tolist(), strict=True))

    def table(ids: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame({"emp": ids, "age": 20 + (ids * 7) % 45, "zip": 10_000 + ids,
                             "salary": [salaries[i] for i in ids.tolist()]})

    ids = np.arange(n)
    hire(ids)
    out = [table(ids)]
    next_id = n
    for _ in range(count - 1):
        ids = np.setdiff1d(ids, rng.choice(ids, round(leave * len(ids)), replace=False))
        joiners = np.arange(next_id, next_id + round(0.10 * n))
        next_id += len(joiners)
        hire(joiners)
        ids = np.concatenate([ids, joiners])
        out.append(table(ids))
    return out


def figures(released: pd.DataFrame, truth: pd.Series) -> dict[str, float]:
    """The figures of one release, from its published rows alone (in the input's order,
    placeholder rows after them) and the table's true salaries."""
    people = released["age"].notna().to_numpy()
    by_group = released.groupby("group")["salary"]
    ranges = by_group.max() - by_group.min()
    width = (by_group.transform("max") - by_group.transform("min"))[people]
    true_values = np.concatenate([truth.to_numpy(dtype=float),
                                  np.full(int((~people).sum()), np.nan)])
    error = relative_error(released, true_values, sensitive="salary", columns=["age", "zip"])
    return {"groups": float(len(ranges)), "placeholders": float((~people).sum()),
            "sum": float(ranges.sum()), "per_row": float(width.mean()),
            "query": error["ke.relative_error.mean"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000)
    parser.add_argument("--quarters", type=int, default=4)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--e", type=float, default=2_000.0)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".*history secret.*")
    for leave in (0.05, 0.0):
        print(f"k={args.k}, e={args.e:,.0f}; per quarter {leave:.0%} leave and 10 % join")
        print_table(study(quarters(args.rows, args.quarters, leave), args.k, args.e))
        print()


def study(tables: list[pd.DataFrame], k: int, e: float) -> list[tuple[str, ...]]:
    """One row per quarter and method: the one-shot optimum, then each history."""
    options = {"k": k, "e": e}
    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        stores = {name: HistoryStore.open(folder / f"{name}.db", create=True)
                  for name in ("placeholders", "pruned")}
        try:
            for q, df in enumerate(tables, start=1):
                one = anonkit.anonymize(df, "ke", quasi_identifiers=["age", "zip"],
                                        sensitive="salary", identifiers=["emp"], **options)
                best = figures(one.data, df["salary"])
                rows.append((f"Q{q}", f"{len(df):,}", "one-shot optimum",
                             f"{best['groups']:.0f}", "0", f"{best['sum']:,.0f}", "1.00",
                             f"{best['per_row']:,.0f}", "1.00", f"{best['query']:.4f}", "-"))
                for name, store in stores.items():
                    out = folder / f"{name}-{q}.csv"
                    request = PublishRequest("pay", "emp", ["age", "zip"], ["salary"],
                                             method="ke",
                                             options={**options, "history_check": name})
                    t0 = time.perf_counter()
                    try:
                        publish(store, df, request, out, shuffle=False)
                    except CrossReleaseBreachError:
                        rows.append((f"Q{q}", f"{len(df):,}", name, *["refused"] * 7,
                                     f"{time.perf_counter() - t0:.2f} s"))
                        continue
                    seconds = time.perf_counter() - t0
                    got = figures(pd.read_csv(out), df["salary"])
                    rows.append((f"Q{q}", f"{len(df):,}", name, f"{got['groups']:.0f}",
                                 f"{got['placeholders']:.0f}", f"{got['sum']:,.0f}",
                                 f"{got['sum'] / best['sum']:.2f}",
                                 f"{got['per_row']:,.0f}",
                                 f"{got['per_row'] / best['per_row']:.2f}",
                                 f"{got['query']:.4f}", f"{seconds:.2f} s"))
        finally:
            for store in stores.values():
                store.close()
    return rows


def print_table(rows: list[tuple[str, ...]]) -> None:
    header = ("quarter", "rows", "method", "groups", "placeholders", "sum of ranges", "ratio",
              "range/row", "ratio", "SUM error", "publish")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(c.rjust(w) if i else c.ljust(w)
                        for i, (c, w) in enumerate(zip(r, widths, strict=True))))


if __name__ == "__main__":
    main()
