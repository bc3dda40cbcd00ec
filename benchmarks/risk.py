"""Population uniqueness at scale: a synthetic 1,000,000 x 8 table of coded quasi-identifiers
is grouped into equivalence classes with numpy, then every estimator of
:mod:`anonkit.models.population_estimates` runs on the class sizes. The issue's target: table ->
class sizes -> population uniqueness in at most 1 s.

The columns are skewed (Zipf-like) codes with Adult-like domains (2 to 90 values), so the
classes run from hundreds of sample uniques to a few large classes, as in real QIs.

Run: ``python benchmarks/risk.py [--rows N] [--repeat R]``. Prints one table; times are the
best of ``--repeat`` (3) runs, warm.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import best_of, print_table

from anonkit.models.population_estimates import population_uniqueness, size_frequencies

#: domain sizes of the 8 columns (Adult's sex, age, race, marital status, education,
#: native country, workclass, occupation)
DOMAINS = (2, 74, 5, 7, 16, 41, 7, 14)
TARGET = 1.0  # seconds, table -> class sizes -> population uniqueness


def make_table(rows: int, seed: int = 0) -> np.ndarray:
    """``rows`` x 8 int codes, each column skewed: code ``c`` has weight ``(c + 1)^-1.5``."""
    rng = np.random.default_rng(seed)
    columns = []
    for size in DOMAINS:
        weights = np.arange(1, size + 1) ** -1.5
        columns.append(rng.choice(size, rows, p=weights / weights.sum()))
    return np.column_stack(columns).astype(np.int64)


def group_mixed_radix(table: np.ndarray) -> np.ndarray:
    """Class sizes via one int64 key per row (the codes as digits of a mixed-radix number)
    and ``np.unique``; the domains' product must fit in int64 (here about 5e8)."""
    key = np.zeros(len(table), np.int64)
    for j, size in enumerate(DOMAINS):
        key = key * size + table[:, j]
    return np.unique(key, return_counts=True)[1]


def group_rows(table: np.ndarray) -> np.ndarray:
    """Class sizes via ``np.unique(rows, axis=0)`` (a lexicographic sort of the rows)."""
    return np.unique(table, axis=0, return_counts=True)[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    table = make_table(args.rows)
    rep = args.repeat

    rows: list[tuple[str, str, str, str]] = []
    t_group, sizes = best_of(lambda: group_mixed_radix(table), rep)
    f = size_frequencies(sizes)
    n_classes, f1 = len(sizes), int(f[1][0]) if f[0][0] == 1 else 0
    note = f"{n_classes:,} classes, {f1:,} sample uniques, largest {int(sizes.max()):,}"
    rows.append(("group: mixed-radix key + np.unique", f"{t_group:.3f}", "-", note))
    t_rows, by_rows = best_of(lambda: group_rows(table), 1)
    assert np.array_equal(np.sort(by_rows), np.sort(sizes))
    rows.append(("group: np.unique(rows, axis=0)", f"{t_rows:.3f}", "-", "for comparison"))
    t_freq, _ = best_of(lambda: size_frequencies(sizes), rep)
    rows.append(("frequency of frequencies", f"{t_freq:.4f}", "-",
                 f"{len(f[0]):,} distinct class sizes"))

    slowest = 0.0
    for pi in (0.01, 0.1, 0.3):
        for model in ("zayatz", "pitman", "snb", "dankar"):
            t, r = best_of(lambda pi=pi, model=model: population_uniqueness(
                sizes, pi, model=model), rep)
            slowest = max(slowest, t) if model == "dankar" else slowest
            picked = f" via {r.model}" if model == "dankar" else ""
            status = "" if r.converged else " (no fit)"
            rows.append((f"{model}, pi = {pi}", f"{t:.4f}", "-",
                         f"share {r.share:.4f}{picked}{status}"))
    # a sample where Pitman's fit fails: every solver budget is spent (the worst case)
    hard = np.concatenate([np.ones(args.rows // 2, np.int64), [args.rows - args.rows // 2]])
    t_hard, r = best_of(lambda: population_uniqueness(hard, 0.05), rep)
    rows.append(("dankar, pi = 0.05, Pitman fails", f"{t_hard:.4f}", "-",
                 f"{len(hard):,} classes (all unique but one); via {r.model}"))
    total = t_group + slowest
    rows.append(("total: group + dankar (slowest pi)", f"{total:.3f}", f"<= {TARGET:g}",
                 "ok" if total <= TARGET or args.rows != 1_000_000 else "MISSED"))

    print_table(f"{args.rows:,} rows x {len(DOMAINS)} QIs", rows)


if __name__ == "__main__":
    main()
