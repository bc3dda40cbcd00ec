"""Reference implementations the tests (and the benchmarks, as peers) compare anonkit's
fast paths with: each is the paper's or the notebook's rule written plainly, slowly and
obviously. They live here, not in the package: nothing a user runs depends on them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from anonkit.algorithms.compression import CodeTree, _check_counts, _from_merges
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


# -- the code trees of compression anonymity (spec 003) ---------------------------------------


def huffman_tree_reference(counts: Sequence[int] | np.ndarray) -> CodeTree:
    """The Huffman tree of symbols weighted by ``counts`` (the two-queue construction
    over the counts sorted once; ties go to the earlier symbol, then to leaves)."""
    counts = _check_counts(counts)
    n = len(counts)
    order = np.argsort(counts, kind="stable").tolist()
    weights = counts.tolist()
    leaves = [(weights[i], i) for i in order]
    merged: list[tuple[int, int]] = []  # (weight, node) of internal nodes, in weight order
    merges: list[tuple[int, int]] = []
    li = mi = 0

    def pop() -> tuple[int, int]:
        nonlocal li, mi
        if mi < len(merged) and (li >= n or merged[mi][0] < leaves[li][0]):
            mi += 1
            return merged[mi - 1]
        li += 1
        return leaves[li - 1]

    for _ in range(n - 1):
        wa, a = pop()
        wb, b = pop()
        merges.append((a, b))
        merged.append((wa + wb, n + len(merges) - 1))
    return _from_merges(counts, merges, "huffman")


def halving_tree_reference(counts: Sequence[int] | np.ndarray) -> CodeTree:
    """The notebook's weight-halving alphabetic tree (``buildAlphHuffman``): a subtree
    asked to hold weight ``w`` is a leaf if the next symbol alone weighs ``>= w``, else a
    left subtree of weight ``w // 2`` and, if that fell short of ``w``, a right subtree of
    the rest."""
    counts = _check_counts(counts)
    weights = counts.tolist()
    merges: list[tuple[int, int]] = []
    n = len(weights)
    position = 0

    def build(target: int) -> tuple[int, int]:  # (node, weight)
        nonlocal position
        weight = weights[position]
        if weight >= target:
            position += 1
            return position - 1, weight
        node, got = build(target // 2)
        rest = target - got
        if rest <= 0:
            return node, got
        right, more = build(rest)
        merges.append((node, right))
        return n + len(merges) - 1, got + more

    build(int(counts.sum()))
    assert position == n  # the whole weight was asked for: every symbol is used
    return _from_merges(counts, merges, "halving")


def garsia_wachs_depths_reference(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    """Per symbol, its depth in an optimal alphabetic tree (Garsia--Wachs).

    Combination phase: repeatedly join the leftmost pair ``(q[i-1], q[i])`` with
    ``q[i-1] <= q[i+1]`` and move the joined node left, behind the nearest node at least as
    heavy. The depths of the symbols in that (non-alphabetic) tree are those of an optimal
    alphabetic tree. The scan restarts where the joined node landed, so it never rescans
    the prefix that is already strictly decreasing."""
    counts = _check_counts(counts)
    n = len(counts)
    if n == 1:
        return np.zeros(1, dtype=np.int64)
    inf = float("inf")
    weight: list[float] = [inf, *counts.tolist(), inf]
    node: list[int] = [-1, *range(n), -1]
    parent = np.full(2 * n - 1, -1, dtype=np.int64)
    next_node = n
    i = 2
    while len(weight) > 3:
        while weight[i - 2] > weight[i]:  # the pair (i-1, i) is not yet joinable
            i += 1
        joined = weight[i - 2] + weight[i - 1]
        parent[node[i - 2]] = parent[node[i - 1]] = next_node
        del weight[i - 2:i], node[i - 2:i]
        j = i - 3
        while weight[j] < joined:
            j -= 1
        weight.insert(j + 1, joined)
        node.insert(j + 1, next_node)
        next_node += 1
        i = max(j + 1, 2)  # (j, j + 1) may be joinable now; nothing left of it changed
    depth = np.zeros(2 * n - 1, dtype=np.int64)
    for v in range(2 * n - 3, -1, -1):  # parents are numbered after their children
        depth[v] = depth[parent[v]] + 1
    return depth[:n]


def tree_from_depths_reference(counts: np.ndarray, depths: np.ndarray, kind: str) -> CodeTree:
    """The alphabetic tree whose symbols, in order, have ``depths`` (a stack of pending
    subtrees: two neighbours at equal depth join one level up)."""
    merges: list[tuple[int, int]] = []
    n = len(counts)
    stack: list[tuple[int, int]] = []
    for symbol, d in enumerate(depths.tolist()):
        stack.append((symbol, d))
        while len(stack) >= 2 and stack[-1][1] == stack[-2][1]:
            (a, da), (b, _) = stack[-2], stack[-1]
            del stack[-2:]
            merges.append((a, b))
            stack.append((n + len(merges) - 1, da - 1))
    if len(stack) != 1 or stack[0][1] != 0:
        raise ValueError("the depths are not those of an alphabetic binary tree")
    return _from_merges(counts, merges, kind)
