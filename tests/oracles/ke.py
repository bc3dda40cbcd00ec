"""(k,e)-anonymity (spec 004): the chapter's O(n^2) programme, the oracle of the O(n) one.

It imports nothing from anonkit: the spread it compares with ``e`` is written out below."""

from __future__ import annotations

import numpy as np


def spread(high: np.ndarray | float, low: np.ndarray | float,
           places: int | None = None) -> np.ndarray:
    """A group's range ``high - low``, as (k,e)-anonymity compares it with ``e``: rounded to
    ``places`` decimals when the values have that many (so ``9.10 - 7.25`` is ``1.85``, not
    the float just below it). Written here, not taken from the package: the oracle stays
    independent of the code it judges."""
    out = np.asarray(high, dtype=np.float64) - np.asarray(low, dtype=np.float64)
    return out if places is None else np.round(out, places)


def reference_partition(sorted_values: np.ndarray, k: int, e: float, *,
                        places: int | None = None, allowed: np.ndarray | None = None
                        ) -> tuple[np.ndarray, float]:
    """The chapter's O(n^2) programme (every start ``j`` for every end ``i``, the earliest
    start kept on ties), vectorised over ``j``: the reference for tests and the benchmark.
    Returns (starts incl. n, cost); cost is inf when no partition exists."""
    v = np.asarray(sorted_values, dtype=np.float64)
    n = len(v)
    new_run = np.ones(n, dtype=np.int64)
    new_run[1:] = v[1:] != v[:-1]
    runs = np.cumsum(new_run)  # run number of each position (1-based)
    f = np.full(n + 1, np.inf)
    f[0] = 0.0
    parent = np.full(n + 1, -1, dtype=np.int64)
    ok_start = np.ones(n + 1, dtype=bool) if allowed is None else np.asarray(allowed, bool)
    for i in range(1, n + 1):
        if not ok_start[i] and i < n:
            continue
        j = np.arange(i)
        distinct = runs[i - 1] - runs[j] + 1
        valid = (distinct >= k) & (spread(v[i - 1], v[j], places) >= e) & ok_start[:i]
        cost = np.where(valid, f[:i] + v[i - 1] - v[:i], np.inf)
        best = int(np.argmin(cost))
        if np.isfinite(cost[best]):
            f[i], parent[i] = cost[best], best
    if not np.isfinite(f[n]):
        return np.array([0, n], dtype=np.int64), float("inf")
    starts = [n]
    i = n
    while i > 0:
        i = int(parent[i])
        starts.append(i)
    return np.array(starts[::-1], dtype=np.int64), float(f[n])
