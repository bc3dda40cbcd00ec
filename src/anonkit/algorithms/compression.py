"""Compression anonymity (spec 003): the code trees and their truncation.

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
it" is the same as "both children satisfy it". :func:`truncated_tree` is the partition step
of the huffman and alphabetic methods (:mod:`anonkit.methods.compression` releases every row
as the summary of its node).

The randomised representative release (the notebook's ``diffAnonymize``) replaces each
value by a value drawn, weighted by counts, from the last subtree on its path whose
*balance measure* ``|count(left) - count(right)| / count(node)^2`` exceeds a threshold
(:func:`randomized_symbols`). The notebook calls that measure an epsilon of differential
privacy; it is not: nothing bounds how much one person changes the output distribution. It
is a heuristic, and a release made with it says so (``formal_guarantee=False``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from anonkit.errors import InputError

from . import _compression_c  # type: ignore[attr-defined]

if TYPE_CHECKING:
    from anonkit.data.encoding import EncodedColumn

TREES = ("huffman", "halving", "optimal")
#: the order-preserving trees; an alphabetic release reports the cost and GCP of both
ALPHABETIC_TREES = ("optimal", "halving")
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


def optimal_alphabetic_tree(counts: Sequence[int] | np.ndarray) -> CodeTree:
    """The optimal alphabetic (order-preserving) tree: least weighted path length."""
    counts = _check_counts(counts)
    return tree_from_depths(counts, garsia_wachs_depths(counts), "optimal")


# -- the compiled constructions (their plain references are the tests' oracles) ------------


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
    """The notebook's weight-halving alphabetic tree (written plainly in the tests' oracles)."""
    counts = np.ascontiguousarray(_check_counts(counts))
    left = np.empty(max(len(counts) - 1, 0), dtype=np.int64)
    right = np.empty(max(len(counts) - 1, 0), dtype=np.int64)
    m = _compression_c.halving(counts, left, right)
    return _tree(counts, left[:m], right[:m], "halving")


def garsia_wachs_depths(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    """Per symbol, its depth in an optimal alphabetic tree (the same joins, so the same
    depths, as the plainly written Garsia-Wachs of the tests' oracles). Compiled and
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


# -- the partition step -------------------------------------------------------------------


@dataclass(frozen=True)
class TreeCut:
    """A code tree over a table's symbols and the cut truncation made in it: the partition
    of the huffman and alphabetic methods (the released nodes are its classes)."""

    tree: CodeTree
    #: per node, the released node its symbols stop at; -1 above the cut
    owner: np.ndarray
    #: per row, its symbol
    symbol: np.ndarray
    #: per symbol, its codes ``(n_symbols, d)``
    symbol_codes: np.ndarray
    #: per node, how many distinct sensitive values it holds (None without ``l``)
    distinct: np.ndarray | None
    #: for comparison, further trees over the same symbols and their cuts, by tree kind
    #: (the cut's own tree among them when its kind was asked for)
    compared: dict[str, tuple[CodeTree, np.ndarray]] = field(default_factory=dict)

    @property
    def row_nodes(self) -> np.ndarray:
        """Per row, its released node."""
        return self.owner[self.symbol]

    def symbol_classes(self) -> tuple[np.ndarray, int]:
        """Per symbol its class (the released nodes numbered in node order), and how many
        classes there are."""
        return _compact(self.owner[:self.tree.n_symbols], self.tree.n_nodes)


def truncated_tree(codes: np.ndarray, kind: str, k: int, l: int | None = None,  # noqa: E741
                   sensitive: np.ndarray | None = None,
                   compare: Sequence[str] = ()) -> TreeCut:
    """Build the ``kind`` tree over the symbols of integer ``codes`` (n, d) (ordered codes
    for an alphabetic tree) and truncate it to nodes of >= ``k`` rows (and >= ``l``
    distinct ``sensitive`` codes: per row, needed with ``l``). ``compare``: tree kinds to
    build and cut the same way, for their figures."""
    codes = np.asarray(codes)
    if codes.ndim == 1:
        codes = codes[:, None]
    n = len(codes)
    if k > n:
        raise InputError(f"k-anonymity with k={k} needs at least {k} rows; the "
                         f"table has {n}")
    symbol, counts, symbol_codes = symbols_of(codes)
    distinct = None
    sets = None
    if l is not None:
        if sensitive is None:
            raise InputError("l-diversity needs a sensitive column (--sensitive NAME)")
        sets = _sensitive_sets(symbol, len(counts), sensitive)
    tree = build_tree(counts, kind)
    if sets is not None:
        distinct = node_distinct(tree, sets)
        if distinct[tree.root] < (l or 0):
            raise InputError(f"the table as a whole holds {int(distinct[tree.root])} "
                             f"distinct sensitive values, fewer than l={l}: no tree "
                             f"can release classes with {l}; relax l")
    owner = truncate(tree, criterion(tree, k, distinct, l))
    compared: dict[str, tuple[CodeTree, np.ndarray]] = {}
    for other in compare:
        t = tree if other == kind else build_tree(counts, other)
        d = node_distinct(t, sets) if sets is not None else None
        o = owner if other == kind else truncate(t, criterion(t, k, d, l))
        compared[other] = (t, o)
    return TreeCut(tree, owner, symbol, symbol_codes, distinct, compared)


def _compact(ids: np.ndarray, bound: int) -> tuple[np.ndarray, int]:
    """``ids`` (each < ``bound``) renumbered 0 .. m - 1 in increasing order, and m."""
    present = np.zeros(bound, dtype=bool)
    present[ids] = True
    index = np.cumsum(present) - 1
    return index[ids], int(present.sum())


def cut_gcp(tree: CodeTree, owner: np.ndarray, columns: Sequence[EncodedColumn],
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
