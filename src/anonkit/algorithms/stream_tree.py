"""The streaming counting tree (spec 003, "Arithmetic Coding for Privacy").

A perfect binary tree of counts over a fixed domain of ``2^depth`` codes: value ``v`` of the
declared integer domain ``[low, high]`` has code ``v - low`` (``v - origin`` once the tree
grew below ``low``), so the leaves are the values in order. Inserting a value adds one
along its root path, O(depth). A value's *span* is found by walking down from the root
while both children of the node hold at least ``k`` inserted values (the notebook's
``follow``, which must start from the tree's depth, not from ``k``; the notebook passes
``k``, which only works when ``k`` equals the depth), and is
the run of codes under the node where the walk stops, clipped to the domain.

Counts only grow, so a node once split stays split: a value's span only ever narrows from
one release to the next, and each span is a subtree of the last one. Intersecting a row's
spans across releases therefore gives its latest span, which holds at least ``k`` rows:
the monotone generalization of Pei et al. (2007). Deletions keep their counts (see
:func:`publish`): spans never widen back, at the price that a class whose members left may
fall below ``k`` rows, which the boundary then refuses.

A domain taken from the data (no ``--domain``) grows instead of refusing a later value
outside it (:meth:`StreamTree.grow`): within the tree's ``2^depth`` codes the released
range just widens; beyond them the tree doubles -- a new root whose one child is the old
root -- so every earlier node stays a node, with its counts, and every span released
before is still the span of a node. A row whose walk stopped at the old root stops at the
new root until its other half holds ``k`` rows (and the history's rules allow the split);
what an adversary intersects is still a node that held ``k`` rows when it was released.

The batch path (:meth:`StreamTree.insert_many`, :meth:`StreamTree.spans_of`) is vectorised
over the values: one ``bincount`` per level to insert, one gather per level to follow.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from anonkit.errors import InputError

#: the largest tree kept: 2^MAX_DEPTH codes (the counts take 2^(MAX_DEPTH + 4) bytes)
MAX_DEPTH = 24
KEY_DTYPE = "S16"


@dataclass
class StreamTree:
    """Counts over the integer domain ``[low, high]`` (``domain``), spans for ``k``.

    ``insert(v)`` counts ``v`` and returns its span (``(lo, hi)``, inclusive, in values);
    ``spans()`` returns the span of every value inserted so far, in insertion order (the
    notebook's ``incrementalAnon`` line after the latest insertion).
    """

    k: int
    domain: tuple[int, int]
    counts: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    history: list[np.ndarray] = field(default_factory=list, repr=False)
    #: the value of code 0 (the domain's low end unless the tree grew below it)
    origin: int | None = None
    #: the domain came from the data: a later value outside it grows the tree
    growable: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int | np.integer) or self.k < 1:
            raise InputError(f"k must be a whole number >= 1, got {self.k!r}")
        low, high = (int(x) for x in self.domain)
        if high < low:
            raise InputError(f"the domain's high end {high} is below its low end {low}")
        self.domain = (low, high)
        self.origin = low if self.origin is None else int(self.origin)
        if self.origin > low:
            raise ValueError(f"the tree's origin {self.origin} is above its domain's low end")
        self.depth = max(int(high - self.origin).bit_length(), 0)
        if self.depth > MAX_DEPTH:
            raise InputError(f"the domain {low},{high} needs {self.depth} levels of codes; "
                             f"at most {MAX_DEPTH} are kept (2^{MAX_DEPTH} values): declare "
                             f"a narrower --domain")
        size = 1 << (self.depth + 1)  # heap order: node i has children 2i and 2i + 1
        if self.counts is None:
            self.counts = np.zeros(size, dtype=np.int64)
        elif self.counts.shape != (size,):
            raise ValueError(f"the counts have shape {self.counts.shape}, not ({size},)")

    # -- codes ----------------------------------------------------------------------------
    def codes_of(self, values: np.ndarray | list[int] | int, where: str = "") -> np.ndarray:
        """The codes of ``values``; a value outside the domain or not whole is an error
        naming it."""
        raw = np.atleast_1d(np.asarray(values))
        if raw.dtype.kind == "f":
            bad = ~np.isfinite(raw) | (raw != np.floor(raw))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputError(f"the stream tree counts whole numbers; value {raw[i]!r}"
                                 f"{where} (position {i}) is not one")
        elif raw.dtype.kind not in "iu":
            raise InputError(f"the stream tree counts whole numbers; got values such as "
                             f"{raw[:1].tolist()}{where}")
        as_int = raw.astype(np.int64)
        low, high = self.domain
        outside = (as_int < low) | (as_int > high)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise InputError(f"value {as_int[i]}{where} (position {i}) is outside the declared "
                             f"domain {low},{high}, which is fixed once the first release is "
                             f"made; {int(outside.sum())} values are outside it. A tree "
                             f"over a new domain starts a new dataset (without --domain the "
                             f"domain grows with the data)")
        return as_int - self.origin

    # -- growing --------------------------------------------------------------------------
    def grow(self, low: int, high: int, split: np.ndarray | None = None
             ) -> tuple[np.ndarray | None, int]:
        """Widen the domain to hold ``low .. high``, doubling the tree as often as needed:
        the old root becomes the left child of a new root (values above) or its right
        child (values below), so every node keeps its counts and its values. Returns
        ``split`` (per node, heap order) laid out for the grown tree, and how far every
        code moved (a code is ``value - origin``: it moves when the tree grows below)."""
        old_origin = self.origin
        assert old_origin is not None
        low, high = min(int(low), self.domain[0]), max(int(high), self.domain[1])
        while high > old_origin + (1 << self.depth) - 1 or low < old_origin:
            below = low < old_origin
            if self.depth + 1 > MAX_DEPTH:
                raise InputError(f"the stream tree's domain would need {self.depth + 1} "
                                 f"levels of codes to hold the values {low}..{high}; at most "
                                 f"{MAX_DEPTH} are kept: start a new dataset")
            offset = 1 if below else 0  # the old root's place under the new one
            self.counts = self._doubled(self.counts, offset)
            if split is not None:
                split = self._doubled(split, offset)
            if below:
                old_origin -= 1 << self.depth
            self.depth += 1
        shift = int(self.origin - old_origin)  # type: ignore[operator]
        self.origin = old_origin
        self.domain = (low, high)
        return split, shift

    def _doubled(self, nodes: np.ndarray, offset: int) -> np.ndarray:
        """Per-node values (heap order) of a tree one level deeper whose root's child
        ``offset`` (0 left, 1 right) is this tree's root; the new root sums its children
        (counts) or is not split (split flags)."""
        grown = np.zeros(2 * len(nodes), dtype=nodes.dtype)
        for level in range(self.depth + 1):
            first = 1 << level
            start = 2 * first + offset * first
            grown[start:start + first] = nodes[first:2 * first]
        if nodes.dtype != bool:
            grown[1] = nodes[1]
        return grown

    def _nodes(self, codes: np.ndarray, level: int) -> np.ndarray:
        return ((1 << self.depth) + codes) >> (self.depth - level)

    # -- counting -------------------------------------------------------------------------
    def insert(self, value: int) -> tuple[int, int]:
        """Count ``value`` and return its span, O(depth)."""
        code = int(self.codes_of(value)[0])
        node = (1 << self.depth) + code
        while node:
            self.counts[node] += 1
            node >>= 1
        self.history.append(np.array([code], dtype=np.int64))
        lo, hi = self._span_of_code(code)
        return lo, hi

    def insert_many(self, values: np.ndarray | list[int]) -> None:
        """Count every value of ``values`` (vectorised: one bincount per level)."""
        codes = self.codes_of(values)
        self.count_codes(codes)
        self.history.append(codes)

    def count_codes(self, codes: np.ndarray) -> None:
        for level in range(self.depth + 1):
            first = 1 << level
            self.counts[first:2 * first] += np.bincount(self._nodes(codes, level) - first,
                                                        minlength=first)

    def _span_of_code(self, code: int) -> tuple[int, int]:
        node, level = 1, 0
        k = self.k
        while level < self.depth:
            left, right = self.counts[2 * node], self.counts[2 * node + 1]
            if left < k or right < k:
                break
            node = 2 * node + ((code >> (self.depth - level - 1)) & 1)
            level += 1
        return self._span_of_node(node, level)

    def _span_of_node(self, node: int, level: int) -> tuple[int, int]:
        width = self.depth - level
        first = (node - (1 << level)) << width
        low, high = self.domain
        start = self.origin + first  # type: ignore[operator]
        return max(start, low), min(start + (1 << width) - 1, high)

    # -- spans ----------------------------------------------------------------------------
    def split_nodes(self) -> np.ndarray:
        """Per node (heap order), whether the walk goes on below it: both children hold
        at least ``k`` counted values (the notebook's ``follow``)."""
        split = np.zeros(len(self.counts), dtype=bool)
        half = len(self.counts) // 2  # nodes 1 .. half - 1 have children
        inner = np.arange(1, half)
        split[inner] = (self.counts[2 * inner] >= self.k) & (self.counts[2 * inner + 1] >= self.k)
        return split

    def span_codes(self, codes: np.ndarray, split: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Per code, (its node, the node's level): where the walk from the root stops
        (at the first node not in ``split``; default :meth:`split_nodes`)."""
        codes = np.asarray(codes, dtype=np.int64)
        split = self.split_nodes() if split is None else split
        level = np.zeros(len(codes), dtype=np.int64)
        going = np.ones(len(codes), dtype=bool)
        for d in range(self.depth):
            going &= split[self._nodes(codes, d)]
            level += going
        return self._nodes_at(codes, level), level

    def _nodes_at(self, codes: np.ndarray, level: np.ndarray) -> np.ndarray:
        return ((1 << self.depth) + codes) >> (self.depth - level)

    def spans_of(self, values: np.ndarray | list[int], split: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
        """(lo, hi) arrays: each value's span under the current counts (values need not be
        counted); ``split`` as in :meth:`span_codes`."""
        codes = self.codes_of(values)
        node, level = self.span_codes(codes, split)
        width = self.depth - level
        first = (node - (np.int64(1) << level)) << width
        low, high = self.domain
        start = self.origin + first
        return np.maximum(start, low), np.minimum(start + (np.int64(1) << width) - 1, high)

    def spans(self) -> list[tuple[int, int]]:
        """The span of every value inserted so far, in insertion order."""
        if not self.history:
            return []
        codes = np.concatenate(self.history)
        lo, hi = self.spans_of(codes + self.origin)
        return list(zip(lo.tolist(), hi.tolist(), strict=True))

    @property
    def n_inserted(self) -> int:
        return int(self.counts[1])

    # -- state ----------------------------------------------------------------------------
    def to_bytes(self, records: Records | None = None,
                 split: np.ndarray | None = None) -> bytes:
        """The counts (and, for a history, the records counted and the nodes split so
        far) as bytes."""
        records = records or Records.empty()
        buf = io.BytesIO()
        np.savez_compressed(buf, k=np.int64(self.k), domain=np.asarray(self.domain, np.int64),
                            counts=self.counts, keys=records.keys, codes=records.codes,
                            cohort=records.cohort,
                            split=np.zeros(0, bool) if split is None else split,
                            origin=np.int64(self.origin), growable=np.bool_(self.growable))
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes) -> tuple[StreamTree, Records, np.ndarray | None]:
        with np.load(io.BytesIO(blob)) as z:
            # states written before the domain could grow: origin = low, never growing
            tree = cls(int(z["k"]), (int(z["domain"][0]), int(z["domain"][1])),
                       counts=z["counts"].copy(),
                       origin=int(z["origin"]) if "origin" in z.files else None,
                       growable=bool(z["growable"]) if "growable" in z.files else False)
            split = z["split"].astype(bool) if len(z["split"]) else None
            return tree, Records(z["keys"].astype(KEY_DTYPE), z["codes"].astype(np.int64),
                                 z["cohort"].astype(np.int64)), split


@dataclass(frozen=True)
class Records:
    """The records a history's tree has counted (sorted by pseudonym): each one's latest
    code and its *cohort*, the release it was first counted in."""

    keys: np.ndarray
    codes: np.ndarray
    cohort: np.ndarray

    @classmethod
    def empty(cls) -> Records:
        return cls(np.zeros(0, KEY_DTYPE), np.zeros(0, np.int64), np.zeros(0, np.int64))

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per key, (its position here, whether it is here)."""
        if not len(self.keys):
            return np.zeros(len(keys), np.int64), np.zeros(len(keys), dtype=bool)
        pos = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return pos, self.keys[pos] == keys


def span_label(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Released labels: the value alone, or ``[lo-hi]`` (``[lo, hi]`` when a bound is
    negative), as anonkit writes ranges."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    if not len(lo):
        return np.zeros(0, dtype=object)
    # one hash pass over the rows; each distinct span is formatted once
    base = lo.min()
    key = (lo - base) * (int(hi.max() - base) + 1) + (hi - base)
    inverse, distinct = pd.factorize(key)
    first = np.zeros(len(distinct), dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(key) - 1, -1, -1)
    texts = np.array([str(a) if a == b else (f"[{a}-{b}]" if a >= 0 else f"[{a}, {b}]")
                      for a, b in zip(lo[first].tolist(), hi[first].tolist(), strict=True)],
                     dtype=object)
    return texts[inverse]


def history_split(tree: StreamTree, previous: np.ndarray | None, codes: np.ndarray,
                  cohort: np.ndarray, seq: int) -> np.ndarray:
    """The nodes a history release walks through (heap order).

    Nodes split before stay split (spans never widen). A node splits now when both its
    children hold ``k`` counted values (the notebook's rule) and, among the rows of this
    release (``codes``), at least ``k`` each; and when, for every earlier release ``i``,
    each child holds none or at least ``k`` of this release's rows counted by release
    ``i`` (``cohort <= i``). That last rule is what the history's linkage adversary needs:
    a record seen since release ``i`` can be told apart from rows that came later, so its
    candidates in release ``i`` and this one are the rows of its class that were there
    in ``i`` too."""
    k = tree.k
    size = len(tree.counts)
    inner = np.arange(1, size // 2)

    def per_node(subset: np.ndarray) -> np.ndarray:
        counts = np.zeros(size, dtype=np.int64)
        for level in range(tree.depth + 1):
            first = 1 << level
            counts[first:2 * first] = np.bincount(tree._nodes(subset, level) - first,
                                                  minlength=first)
        return counts

    present = per_node(codes)
    ok = np.zeros(size, dtype=bool)
    ok[inner] = (present[2 * inner] >= k) & (present[2 * inner + 1] >= k)
    for i in np.unique(cohort[cohort < seq]).tolist():
        earlier = per_node(codes[cohort <= i])
        lonely = (earlier > 0) & (earlier < k)
        ok[inner] &= ~lonely[2 * inner] & ~lonely[2 * inner + 1]
    split = tree.split_nodes() & ok
    if previous is not None:
        split |= previous
    return split
