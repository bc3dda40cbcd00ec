"""Fragments: the first Mondrian cuts, taken on a sample, applied to the full table.

The cut tree is built on a sample of the encoded table the way Mondrian starts (the widest
quasi-identifier, by normalised range, cut at its median), down to the depth that gives the
wanted number of fragments. Every row of the full table then falls into exactly one leaf:
the leaves are boxes in code space, so fragments never overlap and each one can be
anonymized on its own. A leaf that turns out too small, or whose rows as a whole break a
model, on the *full* data is merged back into its parent (the cut is undone) until every
leaf holds; the root is the whole table, which is checked first, so this ends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from anonkit.data.encoding import EncodedColumn

LEAF = -1  # the dimension of a leaf
GONE = -2  # the dimension of a node below an undone cut


@dataclass(frozen=True)
class CutTree:
    """A binary tree of cuts ``code[dimension] <= threshold`` (left) / ``>`` (right).

    Node 0 is the root. For an inner node ``dimension >= 0`` and ``left`` / ``right`` name
    its children; a leaf has ``dimension == -1`` (:data:`LEAF`).
    """

    dimension: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    parent: np.ndarray

    @property
    def n_nodes(self) -> int:
        return len(self.dimension)

    @property
    def leaves(self) -> np.ndarray:
        return np.flatnonzero(self.dimension == LEAF)

    def depth(self) -> int:
        depth = np.zeros(self.n_nodes, dtype=np.int64)
        for node in range(1, self.n_nodes):  # parents precede their children
            depth[node] = depth[self.parent[node]] + 1
        return int(depth.max()) if self.n_nodes else 0

    def leaf_of(self, qi_codes: np.ndarray) -> np.ndarray:
        """Per row of the ``(n, d)`` code matrix, the leaf node it falls in."""
        n = len(qi_codes)
        node = np.zeros(n, dtype=np.int64)
        rows = np.arange(n)
        for _ in range(self.depth()):
            dim = self.dimension[node]
            inner = dim >= 0
            if not inner.any():
                break
            value = qi_codes[rows, np.maximum(dim, 0)]
            go_left = value <= self.threshold[node]
            node = np.where(inner, np.where(go_left, self.left[node], self.right[node]), node)
        return node

    def collapsed(self, nodes: Sequence[int]) -> CutTree:
        """The tree with every node in ``nodes`` turned into a leaf (its cut undone).
        Nodes below a collapsed one are no longer part of the tree (``dimension == -2``)."""
        dimension = self.dimension.copy()
        dimension[list(nodes)] = -1
        reachable = np.zeros(self.n_nodes, dtype=bool)
        reachable[0] = True
        for node in range(self.n_nodes):  # parents precede their children
            if reachable[node] and dimension[node] >= 0:
                reachable[self.left[node]] = reachable[self.right[node]] = True
        dimension[~reachable] = GONE
        return CutTree(dimension, self.threshold, self.left, self.right, self.parent)

    @property
    def n_cuts(self) -> int:
        return int(np.count_nonzero(self.dimension >= 0))

    def ancestor_leaf(self, node: np.ndarray) -> np.ndarray:
        """For nodes of the original tree, the leaf of this tree they are now part of."""
        current = np.asarray(node, dtype=np.int64).copy()
        result = current.copy()
        while True:
            up = current > 0
            if not up.any():
                return result
            current = np.where(up, self.parent[current], current)
            result = np.where(up & (self.dimension[current] == LEAF), current, result)


def build_cut_tree(sample_codes: np.ndarray, columns: Sequence[EncodedColumn],
                   n_fragments: int, min_sample_rows: int = 1) -> CutTree:
    """Mondrian's first cuts on ``sample_codes`` (``(n, d)`` QI codes of a sample, encoded
    with the global encoding), until there are ``n_fragments`` leaves or no cut leaves at
    least ``min_sample_rows`` sample rows on both sides.

    The dimension is the widest by normalised range among the node's sample rows
    (categorical columns without order: distinct values over the column's cardinality),
    as Mondrian's ``widest`` strategy; the cut is at the median code, ``<=`` or, when that
    leaves one side too small (a heavy median value), ``<``.
    """
    spans = np.array([max(c.domain_span, 0.0) for c in columns], dtype=np.float64)
    cards = np.array([c.cardinality for c in columns], dtype=np.float64)
    ordered = np.array([c.kind.is_ordered or c.hierarchy is not None for c in columns])
    magnitudes = [c.magnitudes for c in columns]

    dimension: list[int] = [-1]
    threshold: list[int] = [0]
    left: list[int] = [-1]
    right: list[int] = [-1]
    parent: list[int] = [-1]
    members: list[np.ndarray] = [np.arange(len(sample_codes))]
    open_leaves = [0]
    n_leaves = 1
    while n_leaves < n_fragments and open_leaves:
        # split the largest open leaf first: fragments of similar size
        open_leaves.sort(key=lambda node: -len(members[node]))
        node = open_leaves.pop(0)
        rows = members[node]
        cut = _median_cut(sample_codes[rows], spans, cards, ordered, magnitudes,
                          min_sample_rows)
        if cut is None:
            continue
        dim, thr = cut
        go_left = sample_codes[rows, dim] <= thr
        for side_rows in (rows[go_left], rows[~go_left]):
            dimension.append(-1)
            threshold.append(0)
            left.append(-1)
            right.append(-1)
            parent.append(node)
            members.append(side_rows)
            open_leaves.append(len(dimension) - 1)
        dimension[node], threshold[node] = dim, thr
        left[node], right[node] = len(dimension) - 2, len(dimension) - 1
        n_leaves += 1
    return CutTree(np.array(dimension, dtype=np.int64), np.array(threshold, dtype=np.int64),
                   np.array(left, dtype=np.int64), np.array(right, dtype=np.int64),
                   np.array(parent, dtype=np.int64))


def _median_cut(codes: np.ndarray, spans: np.ndarray, cards: np.ndarray, ordered: np.ndarray,
                magnitudes: Sequence[np.ndarray], min_rows: int) -> tuple[int, int] | None:
    """The widest dimension's median cut that leaves ``min_rows`` on both sides; the next
    widest when it cannot; None when no dimension can be cut."""
    if len(codes) < 2 * min_rows:
        return None
    low = codes.min(axis=0)
    high = codes.max(axis=0)
    width = np.zeros(codes.shape[1])
    for j in range(codes.shape[1]):
        if high[j] == low[j]:
            continue
        if ordered[j] and spans[j] > 0:
            mags = magnitudes[j]
            hi, lo = mags[high[j]], mags[low[j]]
            width[j] = (hi - lo) / spans[j] if np.isfinite(hi - lo) else 1.0
        else:
            width[j] = (len(np.unique(codes[:, j])) - 1) / max(cards[j] - 1, 1)
    for dim in np.argsort(-width, kind="stable"):
        if width[dim] <= 0:
            break
        column = codes[:, dim]
        median = int(np.partition(column, len(column) // 2)[len(column) // 2])
        for thr in (median, median - 1):  # x <= m, else x < m
            n_left = int(np.count_nonzero(column <= thr))
            if min_rows <= n_left <= len(column) - min_rows:
                return int(dim), thr
    return None


def merge_fragments(tree: CutTree,
                    holds: Callable[[np.ndarray, np.ndarray], np.ndarray]
                    ) -> tuple[CutTree, np.ndarray]:
    """Undo cuts until every leaf holds on the full data.

    ``holds(groups, n_groups)`` says per group whether the rows of the original
    leaves mapped to it (``groups[leaf]``; -1 for no group) satisfy every model.

    Returns the merged tree and, per node of ``tree``, the fragment (0 .. n - 1) its rows
    go to (-1 for a node that holds no rows of its own).
    """
    original_leaves = tree.leaves
    while True:
        current = tree.ancestor_leaf(original_leaves)
        leaves, group_of_leaf = np.unique(current, return_inverse=True)
        groups = np.full(tree.n_nodes, -1, dtype=np.int64)
        groups[original_leaves] = group_of_leaf
        ok = holds(groups, len(leaves))
        failing = leaves[~ok]
        if not len(failing):
            break
        parents = {int(tree.parent[node]) for node in failing}
        if -1 in parents:  # the root itself fails: the caller checked it, so never here
            raise AssertionError("the whole table breaks a model")
        tree = tree.collapsed(sorted(parents))
    fragment_of = np.full(tree.n_nodes, -1, dtype=np.int64)
    fragment_of[original_leaves] = group_of_leaf
    return tree, fragment_of
