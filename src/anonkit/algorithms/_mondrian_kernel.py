"""Compiled inner loop of Mondrian: choose a dimension and arrange a partition around its
median, for many partitions per call.

Rows of the working matrix are permuted so that every partition is a contiguous segment
``[start, end)``. For each segment the kernel picks the best cut dimension, finds the
(lower) median ``m`` of that dimension and rearranges the segment as ``< m | == m | > m``.
The matrix has two copies (``Xs[0]``, ``Xs[1]``) and rearranging moves a segment from the
copy that holds it to the other one (``side`` says which holds it), so nothing is copied
back: the kernel is bound by memory traffic, which this halves.
Both strict cuts the driver may take -- ``x <= m`` and ``x < m`` -- are then just positions
in the segment, and cutting costs nothing more.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

WIDEST = 0  # widest range, normalised by the column's domain (LeFevre et al.)
ENTROPY = 1  # highest entropy of the column's values in the partition
DISTINCT = 2  # most distinct values in the partition
RANDOM = 3  # a random dimension among those that can be cut (seeded)

STRATEGIES = {"widest": WIDEST, "entropy": ENTROPY, "distinct": DISTINCT, "random": RANDOM}


@njit(cache=True, nogil=True)
def _popcount(x: np.uint64) -> int:
    count = 0
    while x:
        x &= x - np.uint64(1)
        count += 1
    return count


@njit(cache=True, nogil=True)
def _histogram(X: np.ndarray, s: int, e: int, j: int, lo: int, hi: int,
               counts: np.ndarray) -> int:
    """Counts of the codes of column ``j`` in rows ``[s, e)`` into ``counts[: hi - lo + 1]``
    (``counts[c]`` for code ``lo + c``); returns the number of slots used."""
    width = hi - lo + 1
    for c in range(width):
        counts[c] = 0
    for i in range(s, e):
        counts[X[i, j] - lo] += 1
    return width


@njit(cache=True, nogil=True)
def _sorted_column(X: np.ndarray, s: int, e: int, j: int, values: np.ndarray) -> np.ndarray:
    size = e - s
    for i in range(s, e):
        values[i - s] = X[i, j]
    out = values[:size]
    out.sort()
    return out


@njit(cache=True, nogil=True)
def _score(X: np.ndarray, s: int, e: int, j: int, lo: int, hi: int, strategy: int,
           cardinality: int, counts: np.ndarray, values: np.ndarray) -> float:
    """Entropy or number of distinct values of column ``j`` in rows ``[s, e)``; by counting
    when the codes span at most twice the rows, by sorting otherwise (never work
    proportional to the column's number of distinct values)."""
    size = e - s
    distinct = 0
    h = 0.0
    if hi - lo + 1 <= 2 * size:
        width = _histogram(X, s, e, j, lo, hi, counts)
        for c in range(width):
            if counts[c] > 0:
                distinct += 1
                q = counts[c] / size
                h -= q * np.log(q)
    else:
        ordered = _sorted_column(X, s, e, j, values)
        run = 1
        for i in range(1, size + 1):
            if i == size or ordered[i] != ordered[i - 1]:
                distinct += 1
                q = run / size
                h -= q * np.log(q)
                run = 1
            else:
                run += 1
    return distinct / cardinality if strategy == DISTINCT else h


@njit(cache=True, nogil=True)
def _tree_level(tree_nodes: np.ndarray, off: int, height: int, a: int, b: int) -> int:
    """Lowest hierarchy level at which codes ``a`` and ``b`` share a node."""
    for level in range(height):
        if tree_nodes[off + a * height + level] == tree_nodes[off + b * height + level]:
            return level
    return height - 1


@njit(cache=True, nogil=True)
def _tree_cut(tree_nodes: np.ndarray, off: int, height: int, level: int, codes: np.ndarray,
              counts: np.ndarray, n: int, size: int, min_size: int) -> int:
    """Index into ``codes`` of the last code left of the best boundary between subtrees at
    ``level`` (the one closest to the middle with both sides >= ``min_size``), or -1.
    ``codes``/``counts`` list the codes present in increasing order with their counts."""
    best = -1
    best_gap = size + 1.0
    left = counts[0]
    for i in range(1, n):
        a = codes[i - 1]
        b = codes[i]
        boundary = tree_nodes[off + a * height + level] != tree_nodes[off + b * height + level]
        if boundary and left >= min_size and size - left >= min_size:
            gap = abs(left - size / 2.0)
            if gap < best_gap:
                best_gap = gap
                best = i - 1
        left += counts[i]
    return best


@njit(cache=True, nogil=True)
def _propose_one(p: int, Xs: np.ndarray, Rs: np.ndarray, side: np.ndarray, mags: np.ndarray,
                 mag_offsets: np.ndarray, spans: np.ndarray, cardinalities: np.ndarray,
                 starts: np.ndarray, ends: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 bits: np.ndarray, unordered: np.ndarray, tree: np.ndarray,
                 tree_nodes: np.ndarray, tree_under: np.ndarray, tree_off: np.ndarray,
                 tree_height: np.ndarray, excluded: np.ndarray,
                 min_size: int, strategy: int, rng_seed: int, out_dim: np.ndarray,
                 out_cut_le: np.ndarray, out_cut_lt: np.ndarray, out_lo: np.ndarray,
                 out_hi: np.ndarray, out_bits: np.ndarray) -> None:
    d = Xs.shape[2]
    s = starts[p]
    e = ends[p]
    size = e - s
    X = Xs[side[p]]
    score = np.empty(d, dtype=np.float64)
    values = np.empty(size, dtype=np.int64)
    counts = np.empty(2 * size + 1, dtype=np.int64)
    rng_state = np.uint64(rng_seed) * np.uint64(6364136223846793005) + np.uint64(p)
    for j in range(d):
        score[j] = -1.0
        if (excluded[p] >> j) & 1 or lo[p, j] == hi[p, j]:
            continue
        if strategy == WIDEST and tree[j]:
            # a column with a hierarchy is as wide as its partition's common ancestor
            h = tree_height[j]
            level = _tree_level(tree_nodes, tree_off[j], h, lo[p, j], hi[p, j])
            under = tree_under[tree_off[j] + lo[p, j] * h + level]
            leaves = tree_under[tree_off[j] + lo[p, j] * h + h - 1]
            score[j] = (under - 1.0) / (leaves - 1.0) if leaves > 1 else 0.0
        elif strategy == WIDEST and unordered[j]:
            # an unordered column is as wide as the values it holds, not its code span
            score[j] = (_popcount(bits[p, j]) - 1) / (cardinalities[j] - 1)
        elif strategy == WIDEST:
            off = mag_offsets[j]
            width = mags[off + hi[p, j]] - mags[off + lo[p, j]]
            if np.isnan(width):  # the missing code is in range
                width = spans[j]
            score[j] = width / spans[j] if spans[j] > 0 else 0.0
        elif strategy == RANDOM:
            rng_state = rng_state * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
            score[j] = float(rng_state >> np.uint64(11)) / 9007199254740992.0
        else:
            score[j] = _score(X, s, e, j, lo[p, j], hi[p, j], strategy, cardinalities[j],
                              counts, values)
    out_dim[p] = -1
    out_cut_le[p] = e
    out_cut_lt[p] = s
    while True:
        best = -1
        best_score = -1.0
        for j in range(d):
            if score[j] > best_score:
                best_score = score[j]
                best = j
        if best < 0:
            return
        score[best] = -1.0  # not again for this partition in this call
        # lower median of the chosen dimension, and the sizes of < m, == m, > m; for a
        # column with a hierarchy, rather the boundary between two subtrees of the
        # partition's common ancestor nearest the median, so both halves generalize lower
        blo = lo[p, best]
        target = (size - 1) // 2
        aligned = False
        h = 1
        child_level = -1
        if tree[best]:
            h = tree_height[best]
            child_level = _tree_level(tree_nodes, tree_off[best], h, blo, hi[p, best]) - 1
        if hi[p, best] - blo + 1 <= 2 * size:
            width = _histogram(X, s, e, best, blo, hi[p, best], counts)
            acc = 0
            m = blo
            for c in range(width):
                acc += counts[c]
                if acc > target:
                    m = blo + c
                    break
            n_eq = counts[m - blo]
            n_lt = acc - n_eq
            if tree[best] and child_level >= 0:
                present = 0
                for c in range(width):
                    if counts[c] > 0:
                        values[present] = blo + c
                        counts[present] = counts[c]
                        present += 1
                at = _tree_cut(tree_nodes, tree_off[best], h, child_level, values, counts,
                               present, size, min_size)
                if at >= 0:
                    aligned = True
                    m = values[at]
                    n_eq = counts[at]
                    n_lt = 0
                    for i in range(at):
                        n_lt += counts[i]
        else:
            ordered = _sorted_column(X, s, e, best, values)
            m = ordered[target]
            n_lt = np.searchsorted(ordered, m, side="left")
            n_eq = np.searchsorted(ordered, m, side="right") - n_lt
            if tree[best] and child_level >= 0:
                # distinct codes and their counts, in place at the front of ``counts``
                # and of a second scratch half (codes go to the back half of ``counts``)
                present = 0
                for i in range(size):
                    if i == 0 or ordered[i] != ordered[i - 1]:
                        counts[size + present] = ordered[i]
                        counts[present] = 0
                        present += 1
                    counts[present - 1] += 1
                at = _tree_cut(tree_nodes, tree_off[best], h, child_level,
                               counts[size:size + present], counts, present, size, min_size)
                if at >= 0:
                    aligned = True
                    m = counts[size + at]
                    n_eq = counts[at]
                    n_lt = np.searchsorted(ordered, m, side="left")
        n_gt = size - n_lt - n_eq
        le_ok = n_lt + n_eq >= min_size and n_gt >= min_size
        lt_ok = n_lt >= min_size and n_eq + n_gt >= min_size and not aligned
        if le_ok or lt_ok:
            break
    # move the segment to the other copy as < m | == m | > m, with each part's ranges
    dst_x = Xs[1 - side[p]]
    src_r = Rs[side[p]]
    dst_r = Rs[1 - side[p]]
    part_lo = np.full(3 * d, 2147483647, dtype=np.int64)
    part_hi = np.full(3 * d, -1, dtype=np.int64)
    part_bits = np.zeros(3 * d, dtype=np.uint64)
    w_lt = s
    w_eq = s + n_lt
    w_gt = s + n_lt + n_eq
    for i in range(s, e):
        v = X[i, best]
        if v < m:
            w = w_lt
            w_lt += 1
            base = 0
        elif v == m:
            w = w_eq
            w_eq += 1
            base = d
        else:
            w = w_gt
            w_gt += 1
            base = 2 * d
        for j in range(d):
            x = X[i, j]
            dst_x[w, j] = x
            if x < part_lo[base + j]:
                part_lo[base + j] = x
            if x > part_hi[base + j]:
                part_hi[base + j] = x
            if x < 64:
                part_bits[base + j] |= np.uint64(1) << np.uint64(x)
        dst_r[w] = src_r[i]
    for part in range(3):
        for j in range(d):
            out_lo[p, part, j] = part_lo[part * d + j]
            out_hi[p, part, j] = part_hi[part * d + j]
            out_bits[p, part, j] = part_bits[part * d + j]
    side[p] = 1 - side[p]
    out_dim[p] = best
    out_cut_le[p] = s + n_lt + n_eq
    # an aligned cut is x <= m only: x < m would split a subtree again
    out_cut_lt[p] = s + n_lt + n_eq if aligned else s + n_lt


@njit(cache=True, nogil=True, parallel=True)
def propose_cuts(
    Xs: np.ndarray,  # (2, n, d) integer codes: two copies, rows permuted
    Rs: np.ndarray,  # (2, n) original row index of each position, permuted along with Xs
    side: np.ndarray,  # (p,) which copy holds each partition; updated when it moves
    mags: np.ndarray,  # concatenated per-code magnitudes of every column
    mag_offsets: np.ndarray,  # (d + 1,) start of each column's magnitudes in ``mags``
    spans: np.ndarray,  # (d,) float64 domain span of each column (0 when constant)
    cardinalities: np.ndarray,  # (d,) int64
    starts: np.ndarray,
    ends: np.ndarray,
    lo: np.ndarray,  # (p, d) smallest code of each partition and column
    hi: np.ndarray,  # (p, d) largest code
    bits: np.ndarray,  # (p, d) uint64 set of codes < 64 present
    unordered: np.ndarray,  # (d,) bool: scored by values present (categorical, <= 64 codes)
    tree: np.ndarray,  # (d,) bool: the column has a hierarchy whose subtrees are code runs
    tree_nodes: np.ndarray,  # node id of each (column, code, level), flattened
    tree_under: np.ndarray,  # leaves under that node, flattened the same way (float64)
    tree_off: np.ndarray,  # (d,) offset of each column in tree_nodes / tree_under
    tree_height: np.ndarray,  # (d,) levels of each column's hierarchy
    excluded: np.ndarray,  # (p,) int64 bitmask of dimensions not to cut
    min_size: int,  # a cut whose smaller side is below this is never allowable
    strategy: int,
    seed: int,
    out_dim: np.ndarray,  # (p,) chosen dimension, -1 when no dimension can be cut
    out_cut_le: np.ndarray,  # (p,) first row of the right side for the cut x <= m
    out_cut_lt: np.ndarray,  # (p,) first row of the right side for the cut x < m
    out_lo: np.ndarray,  # (p, 3, d) ranges of the parts < m, == m, > m
    out_hi: np.ndarray,
    out_bits: np.ndarray,  # (p, 3, d) sets of codes of the three parts
) -> None:
    """For each partition, try dimensions best first until one has a median cut whose
    sides both reach ``min_size`` (dimensions failing that are skipped here, at no cost to
    the caller); move the segment around that median and report both cuts. Partitions are
    disjoint segments, so they are processed in parallel."""
    for p in prange(len(starts)):
        _propose_one(p, Xs, Rs, side, mags, mag_offsets, spans, cardinalities, starts, ends,
                     lo, hi, bits, unordered, tree, tree_nodes, tree_under, tree_off,
                     tree_height, excluded, min_size, strategy, seed, out_dim, out_cut_le,
                     out_cut_lt, out_lo, out_hi, out_bits)


@njit(cache=True, nogil=True)
def propose_cuts_serial(
    Xs: np.ndarray,  # (2, n, d) integer codes: two copies, rows permuted
    Rs: np.ndarray,  # (2, n) original row index of each position, permuted along with Xs
    side: np.ndarray,  # (p,) which copy holds each partition; updated when it moves
    mags: np.ndarray,  # concatenated per-code magnitudes of every column
    mag_offsets: np.ndarray,  # (d + 1,) start of each column's magnitudes in ``mags``
    spans: np.ndarray,  # (d,) float64 domain span of each column (0 when constant)
    cardinalities: np.ndarray,  # (d,) int64
    starts: np.ndarray,
    ends: np.ndarray,
    lo: np.ndarray,  # (p, d) smallest code of each partition and column
    hi: np.ndarray,  # (p, d) largest code
    bits: np.ndarray,  # (p, d) uint64 set of codes < 64 present
    unordered: np.ndarray,  # (d,) bool: scored by values present (categorical, <= 64 codes)
    tree: np.ndarray,  # (d,) bool: the column has a hierarchy whose subtrees are code runs
    tree_nodes: np.ndarray,  # node id of each (column, code, level), flattened
    tree_under: np.ndarray,  # leaves under that node, flattened the same way (float64)
    tree_off: np.ndarray,  # (d,) offset of each column in tree_nodes / tree_under
    tree_height: np.ndarray,  # (d,) levels of each column's hierarchy
    excluded: np.ndarray,  # (p,) int64 bitmask of dimensions not to cut
    min_size: int,  # a cut whose smaller side is below this is never allowable
    strategy: int,
    seed: int,
    out_dim: np.ndarray,  # (p,) chosen dimension, -1 when no dimension can be cut
    out_cut_le: np.ndarray,  # (p,) first row of the right side for the cut x <= m
    out_cut_lt: np.ndarray,  # (p,) first row of the right side for the cut x < m
    out_lo: np.ndarray,  # (p, 3, d) ranges of the parts < m, == m, > m
    out_hi: np.ndarray,
    out_bits: np.ndarray,  # (p, 3, d) sets of codes of the three parts
) -> None:
    """Like :func:`propose_cuts`, on one thread (less overhead for small rounds)."""
    for p in range(len(starts)):
        _propose_one(p, Xs, Rs, side, mags, mag_offsets, spans, cardinalities, starts, ends,
                     lo, hi, bits, unordered, tree, tree_nodes, tree_under, tree_off,
                     tree_height, excluded, min_size, strategy, seed, out_dim, out_cut_le,
                     out_cut_lt, out_lo, out_hi, out_bits)


@njit(cache=True, nogil=True)
def segment_ranges(X: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                   lo: np.ndarray, hi: np.ndarray, bits: np.ndarray) -> None:
    """Per segment and column, the smallest and largest code (into ``lo``/``hi``) and the
    set of codes below 64 present (``bits``)."""
    d = X.shape[1]
    for p in range(len(starts)):
        for j in range(d):
            lo[p, j] = 2147483647
            hi[p, j] = -1
            bits[p, j] = 0
        for i in range(starts[p], ends[p]):
            for j in range(d):
                v = X[i, j]
                if v < lo[p, j]:
                    lo[p, j] = v
                if v > hi[p, j]:
                    hi[p, j] = v
                if v < 64:
                    bits[p, j] |= np.uint64(1) << np.uint64(v)
