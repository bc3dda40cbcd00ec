"""Reference implementations the tests (and the benchmarks, as peers) compare anonkit's
fast paths with: each is the paper's or the notebook's rule written plainly, slowly and
obviously. They live here, not in the package: nothing a user runs depends on them."""

from __future__ import annotations

import numpy as np

from anonkit.algorithms.ke_partition import spread
from anonkit.algorithms.stream_tree import StreamTree

# -- (k,e)-anonymity (spec 004) -------------------------------------------------------------


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


# -- m-invariance's perimeter split (spec 001) -----------------------------------------------


def split_scores(lists: list[np.ndarray], ranges: np.ndarray, q: int, *,
                 weighted: bool = True) -> np.ndarray:
    """The score of every split index ``i = 1 .. N - 1`` of one bucket's ``lists`` (one
    (N, Q) coordinate array per value) sorted by QI ``q``, written plainly: the reference
    for the tests and the known-answer example of spec 001."""
    ordered = [lst[np.argsort(lst[:, q], kind="stable")] for lst in lists]
    spans = np.where(np.asarray(ranges, dtype=np.float64) > 0, ranges, 1.0)
    out = []
    for i in range(1, len(lists[0])):
        score = 0.0
        for half in ([o[:i] for o in ordered], [o[i:] for o in ordered]):
            stacked = np.concatenate(half)
            perimeter = 0.0
            for width in (stacked.max(axis=0) - stacked.min(axis=0)) / spans:
                perimeter += width  # in QI order, as the compiled split adds them
            score += perimeter * (len(stacked) if weighted else 1)
        out.append(score)
    return np.asarray(out)


def reference_split(lists: list[np.ndarray], ranges: np.ndarray, *, weighted: bool = True
                    ) -> list[list[np.ndarray]]:
    """The split rule written plainly, for tests: ``lists`` holds one (N, Q) coordinate array
    per value; returns the final classes, each as one coordinate row per list."""
    if len(lists[0]) == 1:
        return [[lst[0] for lst in lists]]
    # per QI its lowest score at its earliest split index; the lowest wins, the earlier QI
    # on a tie (tuples compare score first, then QI)
    candidates = []
    for q in range(lists[0].shape[1]):
        scores = split_scores(lists, ranges, q, weighted=weighted)
        i = int(np.argmin(scores))  # the earliest of equal scores
        candidates.append((float(scores[i]), q, i + 1))
    _, q, i = min(candidates)
    ordered = [lst[np.argsort(lst[:, q], kind="stable")] for lst in lists]
    return (reference_split([o[:i] for o in ordered], ranges, weighted=weighted) +
            reference_split([o[i:] for o in ordered], ranges, weighted=weighted))


# -- the stream tree (spec 003) ---------------------------------------------------------------


def incremental_spans(k: int, depth: int, values: list[int]) -> list[list[tuple[int, int]]]:
    """The notebook's ``incrementalAnon k depth values``: after each insertion, the span of
    every value so far (domain ``0 .. 2^depth - 1``)."""
    tree = StreamTree(k, (0, (1 << depth) - 1))
    out = []
    for v in values:
        tree.insert(v)
        out.append(tree.spans())
    return out
