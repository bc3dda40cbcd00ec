"""Compression anonymity (spec 003): k-anonymity by truncating a code tree.

A code tree is built over the *symbols* of the quasi-identifiers -- the distinct values of
one column, or the distinct tuples of several -- each weighted by how many rows hold it:

- ``huffman``: the Huffman tree (not order-preserving: a node may mix distant values);
- ``halving``: the notebook's weight-halving alphabetic tree (``buildAlphHuffman``): the
  symbols stay in order and every subtree is a run of them;
- ``optimal``: the optimal alphabetic tree (Garsia--Wachs): the least weighted path length
  among order-preserving trees; the default for ordered data.

Truncation (the notebook's ``anonMapping``): each symbol walks down from the root and stops
at the first node that is not split; a node is split only if both of its children satisfy
the criterion (at least ``k`` rows, and with ``l`` at least ``l`` distinct sensitive
values). Both criteria only grow towards the root, so "both children recursively satisfy
it" is the same as "both children satisfy it". Every row is then released as the summary
of its node (range or set, one label per column, with a JSON side table; or a histogram in
that table).

The randomised representative release (the notebook's ``diffAnonymize``) replaces each
value by a value drawn, weighted by counts, from the last subtree on its path whose
*balance measure* ``|count(left) - count(right)| / count(node)^2`` exceeds a threshold. The
notebook calls that measure an epsilon of differential privacy; it is not: nothing bounds
how much one person changes the output distribution. It is a heuristic, and a release made
with it says so (``formal_guarantee=False``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from anonkit.errors import InputError

from . import _compression_c  # type: ignore[attr-defined]

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from anonkit.assemble import Progress
    from anonkit.data.table import Schema
    from anonkit.release import Release

TREES = ("huffman", "halving", "optimal")
SUMMARIES = ("range", "set", "histogram")


# -- the code tree ------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeTree:
    """A binary tree over symbols ``0 .. n_symbols - 1``: node ``i < n_symbols`` is the leaf
    of symbol ``i``; internal nodes follow. ``left``/``right`` are -1 at a leaf;
    ``counts`` holds the rows under each node."""

    left: np.ndarray
    right: np.ndarray
    counts: np.ndarray
    root: int
    n_symbols: int
    kind: str

    @property
    def n_nodes(self) -> int:
        return len(self.left)

    def levels(self) -> list[np.ndarray]:
        """The nodes level by level from the root (one array per depth)."""
        out = [np.array([self.root], dtype=np.int64)]
        while True:
            frontier = out[-1]
            inner = frontier[self.left[frontier] >= 0]
            if not len(inner):
                return out
            out.append(np.stack([self.left[inner], self.right[inner]], axis=1).reshape(-1))

    def depths(self) -> np.ndarray:
        """Per node, its depth (the root is 0)."""
        depth = np.zeros(self.n_nodes, dtype=np.int64)
        for d, nodes in enumerate(self.levels()):
            depth[nodes] = d
        return depth

    def cost(self) -> int:
        """The weighted path length: sum over symbols of count * depth (what a Huffman or
        optimal alphabetic tree minimises)."""
        leaves = np.arange(self.n_symbols)
        return int((self.counts[leaves] * self.depths()[leaves]).sum())

    def leaf_runs(self) -> tuple[np.ndarray, np.ndarray]:
        """Per node, (first, last) symbol under it; for an alphabetic tree every node holds
        exactly that run of symbols."""
        first = np.full(self.n_nodes, -1, dtype=np.int64)
        last = np.full(self.n_nodes, -1, dtype=np.int64)
        leaves = np.arange(self.n_symbols)
        first[leaves] = last[leaves] = leaves
        for nodes in reversed(self.levels()):
            inner = nodes[self.left[nodes] >= 0]
            first[inner] = np.minimum(first[self.left[inner]], first[self.right[inner]])
            last[inner] = np.maximum(last[self.left[inner]], last[self.right[inner]])
        return first, last

    def is_alphabetic(self) -> bool:
        """Whether an in-order walk meets the symbols in order."""
        first, last = self.leaf_runs()
        inner = np.flatnonzero(self.left >= 0)
        return bool((last[self.left[inner]] + 1 == first[self.right[inner]]).all())

    def plot(self, owner: np.ndarray | None = None,
             labels: Sequence[str] | None = None, max_nodes: int = 400) -> Figure:
        """A picture of the tree (the notebook's ``privateTree``): nodes with their counts,
        the released nodes of ``owner`` (from :func:`truncate`) marked, the subtrees below
        them faded."""
        from anonkit.report.tree import plot_tree

        return plot_tree(self, owner, labels=labels, max_nodes=max_nodes)


def _from_merges(counts: np.ndarray, merges: list[tuple[int, int]], kind: str) -> CodeTree:
    """The tree whose internal node ``n + i`` joins ``merges[i]``."""
    n = len(counts)
    m = len(merges)
    left = np.full(n + m, -1, dtype=np.int64)
    right = np.full(n + m, -1, dtype=np.int64)
    if m:
        pairs = np.asarray(merges, dtype=np.int64)
        left[n:], right[n:] = pairs[:, 0], pairs[:, 1]
    total = np.zeros(n + m, dtype=np.int64)
    total[:n] = counts
    for i, (a, b) in enumerate(merges):  # children always precede their parent
        total[n + i] = total[a] + total[b]
    return CodeTree(left, right, total, n + m - 1, n, kind)


def _check_counts(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 1 or not len(counts):
        raise InputError("a code tree needs at least one symbol")
    if (counts <= 0).any():
        raise InputError(f"symbol {int(np.argmax(counts <= 0))} has count "
                         f"{int(counts[counts <= 0][0])}; every symbol needs a count >= 1")
    return counts


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


def optimal_alphabetic_tree(counts: Sequence[int] | np.ndarray) -> CodeTree:
    """The optimal alphabetic (order-preserving) tree: least weighted path length."""
    counts = _check_counts(counts)
    return tree_from_depths(counts, garsia_wachs_depths(counts), "optimal")


# -- the compiled constructions (the functions above are their references) ----------------


def _tree(counts: np.ndarray, left: np.ndarray, right: np.ndarray, kind: str) -> CodeTree:
    n, m = len(counts), len(left)
    total = np.empty(n + m, dtype=np.int64)
    _compression_c.totals(counts, left, right, total)
    return CodeTree(np.concatenate([np.full(n, -1, np.int64), left]),
                    np.concatenate([np.full(n, -1, np.int64), right]), total, n + m - 1, n,
                    kind)


def huffman_tree(counts: Sequence[int] | np.ndarray) -> CodeTree:
    """The Huffman tree of symbols weighted by ``counts`` (the two-queue construction
    over the counts sorted once; ties go to the earlier symbol, then to leaves)."""
    counts = np.ascontiguousarray(_check_counts(counts))
    order = np.argsort(counts, kind="stable").astype(np.int64)
    left = np.empty(len(counts) - 1, dtype=np.int64)
    right = np.empty(len(counts) - 1, dtype=np.int64)
    _compression_c.huffman(order, counts, left, right)
    return _tree(counts, left, right, "huffman")


def halving_tree(counts: Sequence[int] | np.ndarray) -> CodeTree:
    """The notebook's weight-halving alphabetic tree (see :func:`halving_tree_reference`)."""
    counts = np.ascontiguousarray(_check_counts(counts))
    left = np.empty(max(len(counts) - 1, 0), dtype=np.int64)
    right = np.empty(max(len(counts) - 1, 0), dtype=np.int64)
    m = _compression_c.halving(counts, left, right)
    return _tree(counts, left[:m], right[:m], "halving")


def garsia_wachs_depths(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    """Per symbol, its depth in an optimal alphabetic tree (see
    :func:`garsia_wachs_depths_reference`: the same joins, so the same depths). Compiled and
    O(n log n) in the worst case: a linked working sequence, a stack of the places a join may
    have made joinable (so nothing is rescanned), and a splay tree to find where a joined
    node lands."""
    counts = np.ascontiguousarray(_check_counts(counts))
    depths = np.empty(len(counts), dtype=np.int64)
    _compression_c.gw_depths(counts, depths)
    return depths


def tree_from_depths(counts: np.ndarray, depths: np.ndarray, kind: str) -> CodeTree:
    """The alphabetic tree whose symbols, in order, have ``depths``."""
    left = np.empty(max(len(counts) - 1, 0), dtype=np.int64)
    right = np.empty(max(len(counts) - 1, 0), dtype=np.int64)
    if not _compression_c.depths_tree(np.ascontiguousarray(depths, dtype=np.int64), left,
                                      right):
        raise ValueError("the depths are not those of an alphabetic binary tree")
    return _tree(np.ascontiguousarray(counts, dtype=np.int64), left, right, kind)


def build_tree(counts: Sequence[int] | np.ndarray, kind: str) -> CodeTree:
    if kind == "huffman":
        return huffman_tree(counts)
    if kind == "halving":
        return halving_tree(counts)
    if kind == "optimal":
        return optimal_alphabetic_tree(counts)
    raise InputError(f"unknown tree {kind!r}; use one of {', '.join(TREES)}")


# -- truncation ---------------------------------------------------------------------------


def truncate(tree: CodeTree, passes: np.ndarray) -> np.ndarray:
    """Per node, the released node its symbols stop at (-1 above the cut): a node is split
    only if both children pass. ``passes``: per node, whether it meets the criterion
    (monotone: a node passes when a child does)."""
    owner = np.full(tree.n_nodes, -1, dtype=np.int64)
    split = np.zeros(tree.n_nodes, dtype=bool)
    inner = tree.left >= 0
    split[inner] = passes[tree.left[inner]] & passes[tree.right[inner]]
    for nodes in tree.levels():
        stops = (owner[nodes] < 0) & ~split[nodes]
        owner[nodes[stops]] = nodes[stops]
        inner_nodes = nodes[tree.left[nodes] >= 0]
        owner[tree.left[inner_nodes]] = owner[inner_nodes]
        owner[tree.right[inner_nodes]] = owner[inner_nodes]
    return owner


def node_distinct(tree: CodeTree, symbol_values: Sequence[set[int]]) -> np.ndarray:
    """Per node, how many distinct sensitive values its symbols hold (bit sets joined
    bottom-up)."""
    bits = [0] * tree.n_nodes
    for s, values in enumerate(symbol_values):
        mask = 0
        for v in values:
            mask |= 1 << int(v)
        bits[s] = mask
    for nodes in reversed(tree.levels()):
        for v in nodes[tree.left[nodes] >= 0].tolist():
            bits[v] = bits[int(tree.left[v])] | bits[int(tree.right[v])]
    return np.array([b.bit_count() for b in bits], dtype=np.int64)


def criterion(tree: CodeTree, k: int, distinct: np.ndarray | None = None,
              l: int | None = None) -> np.ndarray:  # noqa: E741
    """Per node, whether it holds >= k rows (and >= l distinct sensitive values)."""
    passes = tree.counts >= k
    if l is not None:
        if distinct is None:
            raise ValueError("l needs the distinct sensitive values per node")
        passes &= distinct >= l
    return passes


# -- symbols of a table -------------------------------------------------------------------


def symbols_of(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(per row its symbol, per symbol its count, per symbol its codes): the distinct
    rows of ``codes`` ``(n, d)`` in lexicographic (so, for one column, value) order."""
    codes = np.asarray(codes)
    if codes.shape[1] == 1:
        column = codes[:, 0].astype(np.int64)
        present = np.bincount(column) > 0
        symbol_code = np.flatnonzero(present)
        index = np.cumsum(present) - 1
        symbol = index[column]
        return symbol, np.bincount(symbol), symbol_code[:, None]
    distinct, symbol = np.unique(codes, axis=0, return_inverse=True)
    symbol = symbol.reshape(-1)
    return symbol, np.bincount(symbol, minlength=len(distinct)), distinct


def _sensitive_sets(symbol: np.ndarray, n_symbols: int, sensitive: np.ndarray
                    ) -> list[set[int]]:
    pairs = np.unique(np.stack([symbol, sensitive.astype(np.int64)], axis=1), axis=0)
    out: list[set[int]] = [set() for _ in range(n_symbols)]
    for s, v in pairs.tolist():
        out[s].add(v)
    return out


# -- the estimator ------------------------------------------------------------------------


@dataclass
class CompressionAnonymizer:
    """k-anonymity (and distinct l-diversity) by truncating a code tree.

    Configuration in the constructor, validation when run; after :meth:`anonymize` the
    results are plain attributes: ``tree_`` (the :class:`CodeTree`), ``owner_`` (per
    node, its released node), ``row_nodes_`` (per row, its released node), and for an
    alphabetic method ``trees_`` (both alphabetic trees and their figures on this data).
    """

    method: str = "alphabetic"  # huffman | alphabetic
    k: int = 2
    l: int | None = None  # noqa: E741
    tree: str | None = None  # halving | optimal (alphabetic); default optimal
    summary: str = "range"

    def _tree_kind(self) -> str:
        if self.method == "huffman":
            if self.tree not in (None, "huffman"):
                raise InputError(f"--tree {self.tree} is for the alphabetic method; the "
                                 f"huffman method builds the Huffman tree")
            return "huffman"
        if self.method != "alphabetic":
            raise InputError(f"unknown compression method {self.method!r}")
        tree = self.tree or "optimal"
        if tree not in ("optimal", "halving"):
            raise InputError(f"--tree must be optimal or halving, got {tree!r}")
        return tree

    def fit_codes(self, codes: np.ndarray, sensitive: np.ndarray | None = None
                  ) -> CompressionAnonymizer:
        """Build and truncate the tree over integer ``codes`` (n, d) (ordered codes for an
        alphabetic tree); ``sensitive``: per row a sensitive code, needed with ``l``."""
        kind = self._tree_kind()
        if self.summary not in SUMMARIES:
            raise InputError(f"--summary must be one of {', '.join(SUMMARIES)}, got "
                             f"{self.summary!r}")
        codes = np.asarray(codes)
        if codes.ndim == 1:
            codes = codes[:, None]
        n = len(codes)
        if self.k > n:
            raise InputError(f"k-anonymity with k={self.k} needs at least {self.k} rows; the "
                             f"table has {n}")
        symbol, counts, symbol_codes = symbols_of(codes)
        distinct = None
        sets = None
        if self.l is not None:
            if sensitive is None:
                raise InputError("l-diversity needs a sensitive column (--sensitive NAME)")
            sets = _sensitive_sets(symbol, len(counts), sensitive)
        self.tree_ = build_tree(counts, kind)
        if sets is not None:
            distinct = node_distinct(self.tree_, sets)
            if distinct[self.tree_.root] < (self.l or 0):
                raise InputError(f"the table as a whole holds {int(distinct[self.tree_.root])} "
                                 f"distinct sensitive values, fewer than l={self.l}: no tree "
                                 f"can release classes with {self.l}; relax l")
        self.distinct_ = distinct
        self.owner_ = truncate(self.tree_, criterion(self.tree_, self.k, distinct, self.l))
        self.symbol_ = symbol
        self.symbol_codes_ = symbol_codes
        self.row_nodes_ = self.owner_[symbol]
        if kind != "huffman":
            self.trees_ = {}
            for other in ("optimal", "halving"):
                t = self.tree_ if other == kind else build_tree(counts, other)
                d = node_distinct(t, sets) if sets is not None else None
                o = self.owner_ if other == kind else truncate(t, criterion(t, self.k, d,
                                                                          self.l))
                self.trees_[other] = (t, o)
        return self

    def anonymize(self, df: pd.DataFrame, schema: Schema,
                  progress: Progress | None = None) -> Release:
        """The verified release of ``df``: every row's QIs replaced by its node's summary."""
        from anonkit.assemble import generalized_release, no_progress
        from anonkit.data.table import encode
        from anonkit.generalization import Form, default_form
        from anonkit.models.base import KAnonymity
        from anonkit.models.diversity import DistinctLDiversity
        from anonkit.partition import Partition

        step = progress or no_progress
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        with step("encoding", len(df)):
            table = encode(df, schema)
        timings["encode"] = time.perf_counter() - t0
        qis = table.quasi_identifiers
        if self.method == "alphabetic":
            unordered = [c.name for c in qis if not c.kind.is_ordered]
            if unordered:
                raise InputError(f"the alphabetic tree keeps values in order; column "
                                 f"{unordered[0]!r} is categorical (give its order with "
                                 f"--order, or use --method huffman)")
        sensitive = None
        if self.l is not None:
            if len(table.sensitive) != 1:
                raise InputError(f"l-diverse trees protect one sensitive column; "
                                 f"{len(table.sensitive)} were given: name one with "
                                 f"--sensitive")
            sensitive = table.sensitive[0].codes
        t0 = time.perf_counter()
        with step("partitioning", len(df)):
            self.fit_codes(table.qi_matrix, sensitive)
        timings["algorithm"] = time.perf_counter() - t0
        class_of_symbol, n_classes = _compact(self.owner_[:self.tree_.n_symbols],
                                              self.tree_.n_nodes)
        partition = Partition.from_class_ids(class_of_symbol[self.symbol_], n_classes)
        forms = {c.name: (Form.SET if self.summary == "set" else default_form(c))
                 for c in qis}
        models: list[Any] = [KAnonymity(self.k)]
        if self.l is not None:
            models.append(DistinctLDiversity(self.l))
        params: dict[str, object] = {
            "k": self.k, "tree": self._tree_kind(), "summary": self.summary,
            "quasi_identifiers": schema.quasi_identifiers, "sensitive": schema.sensitive,
            "forms": {name: form.value for name, form in forms.items()}}
        if self.l is not None:
            params["l"] = self.l
        release = generalized_release(df, table, partition, forms, models,
                                      method=self.method, parameters=params,
                                      timings=timings, progress=progress)
        first_row = partition.order[partition.starts]
        labels = {c.name: release.data[c.name].iloc[first_row].astype(str).to_numpy()
                  for c in qis}
        release.auxiliary["summaries"] = summary_table(
            labels, class_of_symbol, self.tree_.counts[:self.tree_.n_symbols],
            self.symbol_codes_, qis, self.summary)
        release.metrics["tree.cost"] = float(self.tree_.cost())
        release.metrics["tree.released_nodes"] = float(n_classes)
        for name, (t, o) in getattr(self, "trees_", {}).items():
            release.metrics[f"{name}.cost"] = float(t.cost())
            release.metrics[f"{name}.gcp"] = cut_gcp(t, o, qis, self.symbol_codes_)
        return release


def _compact(ids: np.ndarray, bound: int) -> tuple[np.ndarray, int]:
    """``ids`` (each < ``bound``) renumbered 0 .. m - 1 in increasing order, and m."""
    present = np.zeros(bound, dtype=bool)
    present[ids] = True
    index = np.cumsum(present) - 1
    return index[ids], int(present.sum())


def cut_gcp(tree: CodeTree, owner: np.ndarray, columns: Sequence[Any],
            symbol_codes: np.ndarray) -> float:
    """The global certainty penalty of a cut: per row and column the width of its node's
    range over the column's, averaged (categorical: (distinct - 1) / (card - 1)); computed
    per symbol, weighted by its rows."""
    n = tree.n_symbols
    weight = tree.counts[:n].astype(np.float64)
    cls, n_classes = _compact(owner[:n], tree.n_nodes)
    losses = []
    for j, column in enumerate(columns):
        code = symbol_codes[:, j]
        if column.kind.is_ordered:
            mags = column.magnitudes[code]
            lo = np.full(n_classes, np.inf)
            hi = np.full(n_classes, -np.inf)
            np.minimum.at(lo, cls, mags)
            np.maximum.at(hi, cls, mags)
            span = column.domain_span
            loss = (hi - lo)[cls] / span if span > 0 else np.zeros(n)
        else:
            pairs = np.unique(np.stack([cls, code], axis=1), axis=0)
            distinct = np.bincount(pairs[:, 0], minlength=n_classes)
            card = column.cardinality
            loss = (distinct[cls] - 1) / (card - 1) if card > 1 else np.zeros(n)
        losses.append(float((loss * weight).sum() / weight.sum()))
    return float(np.mean(losses)) if losses else 0.0


def summary_table(labels: dict[str, np.ndarray], class_of_symbol: np.ndarray,
                  counts: np.ndarray, symbol_codes: np.ndarray, columns: Sequence[Any],
                  summary: str) -> pd.DataFrame:
    """The JSON side table: per quasi-identifier and released label (``labels[column]``:
    per class), its rows and its summary (``{"min", "max"}`` for a range, ``{"values"}``
    for a set, and with ``histogram`` the count of every value under the label). Built
    from the symbols and their counts, never from the rows."""
    import pandas as pd

    rows = []
    for j, column in enumerate(columns):
        label_of_class, names = pd.factorize(labels[column.name])
        label = label_of_class[class_of_symbol]
        code = symbol_codes[:, j].astype(np.int64)
        card = int(code.max()) + 1 if len(code) else 1
        keys, where = np.unique(label * card + code, return_inverse=True)
        weights = np.bincount(where.reshape(-1), weights=counts, minlength=len(keys))
        key_label, key_code = keys // card, keys % card
        bounds = np.searchsorted(key_label, np.arange(len(names) + 1))
        for i, name in enumerate(names):
            codes = key_code[bounds[i]:bounds[i + 1]]  # sorted: the column's order
            present = [_plain(v) for v in column.values[codes]]
            if summary == "histogram":
                content: dict[str, object] = {"histogram": {
                    str(v): int(c) for v, c in zip(present, weights[bounds[i]:bounds[i + 1]],
                                                   strict=True)}}
            elif summary == "set" or not column.kind.is_ordered:
                content = {"values": present}
            else:
                content = {"min": present[0], "max": present[-1]}
            rows.append({"column": column.name, "label": str(name),
                         "rows": int(weights[bounds[i]:bounds[i + 1]].sum()),
                         "summary": json.dumps(content, sort_keys=True)})
    return pd.DataFrame(rows, columns=["column", "label", "rows", "summary"])


def _plain(value: object) -> object:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return int(value) if float(value).is_integer() else float(value)
    return value if isinstance(value, int | float) else str(value)


# -- the randomised representative release -------------------------------------------------


def balance_measure(tree: CodeTree) -> np.ndarray:
    """Per node, the notebook's ``|count(left) - count(right)| / count(node)^2`` (0 at a
    leaf). A heuristic: it is not an epsilon of differential privacy."""
    out = np.zeros(tree.n_nodes, dtype=np.float64)
    inner = tree.left >= 0
    diff = np.abs(tree.counts[tree.left[inner]] - tree.counts[tree.right[inner]])
    out[inner] = diff / tree.counts[inner].astype(np.float64) ** 2
    return out


def representative_nodes(tree: CodeTree, threshold: float) -> np.ndarray:
    """Per symbol, the last node on its root path (the leaf included) whose balance
    measure exceeds ``threshold``; -1 when none does."""
    measure = balance_measure(tree)
    chosen = np.full(tree.n_nodes, -1, dtype=np.int64)  # inherited from the parent
    for nodes in tree.levels():
        chosen[nodes] = np.where(measure[nodes] > threshold, nodes, chosen[nodes])
        inner = nodes[tree.left[nodes] >= 0]
        chosen[tree.left[inner]] = chosen[inner]
        chosen[tree.right[inner]] = chosen[inner]
    return chosen[:tree.n_symbols]


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov--Smirnov statistic: the largest gap between the two
    empirical distribution functions."""
    a, b = np.sort(a), np.sort(b)
    points = np.concatenate([a, b])
    gap = np.searchsorted(a, points, side="right") / len(a) - \
        np.searchsorted(b, points, side="right") / len(b)
    return float(np.abs(gap).max()) if len(points) else 0.0


def randomized_symbols(tree: CodeTree, symbol: np.ndarray, threshold: float,
                       rng: np.random.Generator, names: Sequence[str] | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Per row, a symbol drawn (weighted by counts) from its representative subtree, and
    that subtree. The tree must be alphabetic: a subtree is then a run of symbols, and a
    draw is one search in the cumulative counts."""
    nodes = representative_nodes(tree, threshold)
    missing = nodes < 0
    if missing.any():
        s = int(np.flatnonzero(missing)[0])
        shown = names[s] if names is not None else f"symbol {s}"
        raise InputError(f"no node on the path of {shown} has a balance measure above the "
                         f"threshold {threshold:g} ({int(missing.sum())} of {len(missing)} "
                         f"values have none): lower --threshold. The measure falls like "
                         f"1 / rows, so large tables need small thresholds")
    first, _ = tree.leaf_runs()
    cumulative = np.cumsum(tree.counts[:tree.n_symbols])
    row_node = nodes[symbol]
    base = np.where(first[row_node] > 0, cumulative[np.maximum(first[row_node] - 1, 0)], 0)
    base = np.where(first[row_node] == 0, 0, base)
    draw = base + (rng.random(len(symbol)) * tree.counts[row_node]).astype(np.int64)
    return np.searchsorted(cumulative, draw, side="right"), row_node


def randomized_release(df: pd.DataFrame, schema: Schema, *, threshold: float,
                       tree: str | None = None, seed: int | None = None) -> Release:
    """The randomised representative release (``randomized``): per row, a value drawn
    from its representative subtree; heuristic (``formal_guarantee=False``)."""
    import pandas as pd

    from anonkit._util.randomness import privacy_rng
    from anonkit.data.table import encode
    from anonkit.models.base import KAnonymity
    from anonkit.release import Release, ReleaseKind
    from anonkit.verify import verify_release

    kind = tree or "optimal"
    if kind not in ("optimal", "halving"):
        raise InputError(f"--tree must be optimal or halving for the randomized release, got "
                         f"{kind!r}")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    table = encode(df, schema)
    unordered = [c.name for c in table.quasi_identifiers if not c.kind.is_ordered]
    if unordered:
        raise InputError(f"the randomized release draws from ordered runs of values; column "
                         f"{unordered[0]!r} is categorical (give its order with --order)")
    symbol, counts, symbol_codes = symbols_of(table.qi_matrix)
    code_tree = build_tree(counts, kind)
    rng, seeded = privacy_rng(seed)
    names = [", ".join(f"{c.name}={_plain(c.values[code])!r}" for c, code in zip(
        table.quasi_identifiers, codes, strict=True)) for codes in symbol_codes.tolist()]
    drawn, row_node = randomized_symbols(code_tree, symbol, threshold, rng, names)
    timings["algorithm"] = time.perf_counter() - t0
    data = pd.DataFrame({c: df[c].array.copy() for c in schema.released_columns},
                        index=pd.RangeIndex(len(df)))
    metrics: dict[str, float] = {}
    for j, column in enumerate(table.quasi_identifiers):
        values = column.values[symbol_codes[drawn, j]]
        data[column.name] = values
        if column.kind.name == "NUMERIC":
            metrics[f"ks.{column.name}"] = ks_statistic(
                df[column.name].to_numpy(dtype=np.float64),
                np.asarray(values, dtype=np.float64))
    measure = balance_measure(code_tree)
    metrics["heuristic.measure.min"] = float(measure[row_node].min()) if len(row_node) else 0.0
    metrics["heuristic.changed"] = float((drawn != symbol).mean()) if len(symbol) else 0.0
    params: dict[str, object] = {"threshold": threshold, "tree": kind,
                                 "quasi_identifiers": schema.quasi_identifiers,
                                 "guarantee": "none: the balance measure is a heuristic, "
                                              "not differential privacy"}
    release = Release(data, np.zeros(len(df), dtype=np.int64), pd.DataFrame(), [], {},
                      schema, "randomized", params, timings, kind=ReleaseKind.GENERALIZED,
                      # claims nothing beyond what every release has: a class of one row
                      models=[KAnonymity(1)], formal_guarantee=False, seeded=seeded)
    verify_release(release)
    release.metrics |= metrics
    return release
