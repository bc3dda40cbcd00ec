"""The code trees of compression anonymity (spec 003), written plainly: the oracle of the
compiled constructions."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from anonkit.algorithms.compression import CodeTree, _check_counts, _from_merges


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
