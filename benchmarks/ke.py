"""(k,e)-anonymity: the optimal partition (O(n) compiled programme vs the chapter's O(n^2)
reference) and an incremental release of 100,000 rows plus 10 % new rows after a history of
five releases (the chapter's pruning by Theorem 1, which consults the previous release only,
vs the naive check against every earlier release, counted in the same unit).

Run: ``python benchmarks/ke.py [--quick]``. Prints one table; times are the best of three.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from timing import best_of

from anonkit.algorithms import ke_partition as ke

# the chapter's O(n^2) programme, the peer of this benchmark, is the tests' reference
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from oracles import ke as oracle

K, E = 5, 1000.0
EARLIER = 5  # releases in the history before the timed incremental one




def salaries(n: int, seed: int) -> np.ndarray:
    return np.round(np.random.default_rng(seed).lognormal(10.8, 0.5, n), 2)


def _earlier(part: ke.KEPartition, keys_then: np.ndarray,
             keys_now: np.ndarray) -> ke.EarlierRelease:
    """An earlier release as the history gives it, matched to the current rows."""
    ptr, values = ke.group_value_sets(part)
    sort = np.argsort(keys_then, kind="stable")
    release = ke.EarlierRelease(np.zeros(0, np.int64), ptr, values, keys_then[sort],
                                part.group_ids()[sort])
    return ke.EarlierRelease(release.groups_of(keys_now), ptr, values,
                             release.record_keys, release.record_groups)


def incremental_rows(n: int = 100_000, n_earlier: int = EARLIER) -> list[tuple[str, ...]]:
    """A history of ``n_earlier`` releases growing to ``n`` rows (insertions only), then
    the timed release: ``n`` rows plus 10 % new ones. Pruned (previous release and the
    knowledge it carried) and naive (every earlier release) on the same history; a breach
    check is one record, or one earlier group's span, checked against one earlier release."""
    total = n + n // 10
    v = salaries(total, 7)
    keys = np.array([i.to_bytes(16, "big") for i in range(total)], dtype="S16")
    sizes = np.linspace(n // 2, n, n_earlier).astype(int)
    history: list[tuple[ke.KEPartition, np.ndarray]] = []
    knowledge = None
    for size in sizes:
        if knowledge is None:
            part = ke.optimal_partition(v[:size], K, E, places=2)
            knowledge = ke.first_knowledge(part, keys[:size])
        else:
            previous = _earlier(history[-1][0], history[-1][1], keys[:size])
            part, knowledge = ke.incremental_partition(v[:size], keys[:size], previous,
                                                       knowledge, K, E, places=2)
        history.append((part, keys[:size]))
    earlier = [_earlier(p, k, keys) for p, k in history]
    t_p, (pruned, _) = best_of(lambda: ke.incremental_partition(
        v, keys, earlier[-1], knowledge, K, E, places=2))
    t_n, naive = best_of(lambda: ke.naive_incremental_partition(v, keys, earlier, K, E,
                                                                places=2))
    assert list(pruned.starts) == list(naive.starts)
    label = f"{n:,} + 10 %"
    note = f"{n_earlier} earlier releases"
    return [("incremental, pruned", label, f"{t_p * 1000:.0f} ms", "-",
             f"{pruned.breach_checks:,} breach checks ({note})"),
            ("incremental, naive", label, f"{t_n * 1000:.0f} ms", "-",
             f"{naive.breach_checks:,} breach checks ({note})")]


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
            t_ref, (_, cost) = best_of(lambda p=part: oracle.reference_partition(
                p.sorted_values, K, E, places=2), repeat=1)
            assert np.isclose(cost, part.cost)  # sums of floats in another order
            ref = f"{t_ref * 1000:.0f} ms"
        rows.append(("optimal partition", f"{n:,}", f"{t * 1000:.1f} ms", ref,
                     f"{part.n_groups:,} groups"))
    rows.extend(incremental_rows())
    header = ("task", "rows", "time", "O(n^2) DP", "notes")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
