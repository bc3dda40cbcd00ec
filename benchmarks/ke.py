"""(k,e)-anonymity: the optimal partition (O(n) compiled programme vs the chapter's O(n^2)
reference) and an incremental release of 100,000 rows plus 10 % new rows (the chapter's
pruning by Theorem 1 vs the naive check against every earlier release).

Run: ``python benchmarks/ke.py [--quick]``. Prints one table; times are the best of three.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from anonkit.algorithms import ke

K, E = 5, 1000.0


def best_of(fn, repeat: int = 3) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def salaries(n: int, seed: int) -> np.ndarray:
    return np.round(np.random.default_rng(seed).lognormal(10.8, 0.5, n), 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rows = []
    for n in (10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000):
        v = salaries(n, n)
        t, part = best_of(lambda v=v: ke.optimal_partition(v, K, E, places=2))
        ref = "-"
        if n <= 10_000:  # the quadratic reference: 10^5 would take hours
            t_ref, (_, cost) = best_of(lambda p=part: ke.reference_partition(
                p.sorted_values, K, E, places=2), repeat=1)
            assert np.isclose(cost, part.cost)  # sums of floats in another order
            ref = f"{t_ref * 1000:.0f} ms"
        rows.append(("optimal partition", f"{n:,}", f"{t * 1000:.1f} ms", ref,
                     f"{part.n_groups:,} groups"))
    n = 100_000
    v = salaries(n + n // 10, 7)
    keys = np.array([i.to_bytes(16, "big") for i in range(len(v))], dtype="S16")
    first = ke.optimal_partition(v[:n], K, E, places=2)
    knowledge = ke.first_knowledge(first, keys[:n])
    ptr, values = ke.group_value_sets(first)
    group = np.full(len(v), -1)
    group[:n] = first.group_ids()
    earlier = ke.EarlierRelease(group, ptr, values)
    t_p, (pruned, _) = best_of(lambda: ke.incremental_partition(v, keys, earlier, knowledge,
                                                                K, E, places=2))
    t_n, naive = best_of(lambda: ke.naive_incremental_partition(v, keys, [earlier], K, E,
                                                                places=2))
    assert list(pruned.starts) == list(naive.starts)
    rows.append(("incremental, pruned", "100,000 + 10 %", f"{t_p * 1000:.0f} ms", "-",
                 f"{pruned.breach_checks:,} breach checks"))
    rows.append(("incremental, naive", "100,000 + 10 %", f"{t_n * 1000:.0f} ms", "-",
                 f"{naive.breach_checks:,} breach checks"))
    header = ("task", "rows", "time", "O(n^2) DP", "notes")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
