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
def _lowest_bit(x: np.uint64) -> int:
    bit = 0
    while not (x >> np.uint64(bit)) & np.uint64(1):
        bit += 1
    return bit


@njit(cache=True, nogil=True)
def _highest_bit(x: np.uint64) -> int:
    bit = 63
    while not (x >> np.uint64(bit)) & np.uint64(1):
        bit -= 1
    return bit


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
                 out_hi: np.ndarray, out_bits: np.ndarray, score: np.ndarray,
                 values: np.ndarray, counts: np.ndarray, part_lo: np.ndarray,
                 part_hi: np.ndarray, part_bits: np.ndarray) -> None:
    """One partition (see :func:`propose_cuts`). ``score`` .. ``part_bits`` are scratch:
    ``d``, >= size, >= 2 * size + 1, and 3 * d long."""
    d = Xs.shape[2]
    s = starts[p]
    e = ends[p]
    size = e - s
    X = Xs[side[p]]
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
    part_lo[:] = 2147483647
    part_hi[:] = -1
    part_bits[:] = 0
    # where the next row of each part goes; the part is computed, not branched on: the
    # comparison with the median is unpredictable and mispredictions dominate otherwise
    write_at = np.empty(3, np.int64)
    write_at[0] = s
    write_at[1] = s + n_lt
    write_at[2] = s + n_lt + n_eq
    for i in range(s, e):
        v = X[i, best]
        part = (v >= m) + (v > m)
        w = write_at[part]
        write_at[part] = w + 1
        base = part * d
        for j in range(d):
            x = X[i, j]
            dst_x[w, j] = x
            # a small unordered column needs only its set of codes (its range follows)
            if unordered[j]:
                part_bits[base + j] |= np.uint64(1) << np.uint64(x)
            else:
                part_lo[base + j] = min(part_lo[base + j], x)
                part_hi[base + j] = max(part_hi[base + j], x)
        dst_r[w] = src_r[i]
    for part in range(3):
        for j in range(d):
            if unordered[j] and part_bits[part * d + j] != 0:
                part_lo[part * d + j] = _lowest_bit(part_bits[part * d + j])
                part_hi[part * d + j] = _highest_bit(part_bits[part * d + j])
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
    d = Xs.shape[2]
    for p in prange(len(starts)):
        size = ends[p] - starts[p]
        _propose_one(p, Xs, Rs, side, mags, mag_offsets, spans, cardinalities, starts, ends,
                     lo, hi, bits, unordered, tree, tree_nodes, tree_under, tree_off,
                     tree_height, excluded, min_size, strategy, seed, out_dim, out_cut_le,
                     out_cut_lt, out_lo, out_hi, out_bits, np.empty(d, np.float64),
                     np.empty(size, np.int64), np.empty(2 * size + 1, np.int64),
                     np.empty(3 * d, np.int64), np.empty(3 * d, np.int64),
                     np.empty(3 * d, np.uint64))


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
    """Like :func:`propose_cuts`, on one thread (less overhead for small rounds), with
    scratch space allocated once for all partitions."""
    d = Xs.shape[2]
    largest = 1
    for p in range(len(starts)):
        largest = max(largest, ends[p] - starts[p])
    score = np.empty(d, np.float64)
    values = np.empty(largest, np.int64)
    counts = np.empty(2 * largest + 1, np.int64)
    part_lo = np.empty(3 * d, np.int64)
    part_hi = np.empty(3 * d, np.int64)
    part_bits = np.empty(3 * d, np.uint64)
    for p in range(len(starts)):
        _propose_one(p, Xs, Rs, side, mags, mag_offsets, spans, cardinalities, starts, ends,
                     lo, hi, bits, unordered, tree, tree_nodes, tree_under, tree_off,
                     tree_height, excluded, min_size, strategy, seed, out_dim, out_cut_le,
                     out_cut_lt, out_lo, out_hi, out_bits, score, values, counts, part_lo,
                     part_hi, part_bits)


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


@njit(cache=True, nogil=True)
def partition_by_size(
    Xs: np.ndarray, Rs: np.ndarray, mags: np.ndarray, mag_offsets: np.ndarray,
    spans: np.ndarray, cardinalities: np.ndarray, lo0: np.ndarray, hi0: np.ndarray,
    bits0: np.ndarray, unordered: np.ndarray, tree: np.ndarray, tree_nodes: np.ndarray,
    tree_under: np.ndarray, tree_off: np.ndarray, tree_height: np.ndarray, min_size: int,
    strategy: int, seed: int, remove_cut_dimension: bool, single_dimensional: bool,
    parallel_rows: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The whole of Mondrian when class size is the only constraint (k-anonymity): the
    same rounds as the Python driver, with no trip back to Python between them. Returns
    the final segments (starts, ends, which copy holds them) and the number of rounds."""
    n = Xs.shape[1]
    d = Xs.shape[2]
    cap = 2 * (n // max(min_size, 1)) + 2
    starts = np.zeros(cap, np.int64)
    ends = np.zeros(cap, np.int64)
    side = np.zeros(cap, np.int8)
    excluded = np.zeros(cap, np.int64)
    lo = np.empty((cap, d), np.int64)
    hi = np.empty((cap, d), np.int64)
    bits = np.empty((cap, d), np.uint64)
    nxt_starts = np.zeros(cap, np.int64)
    nxt_ends = np.zeros(cap, np.int64)
    nxt_side = np.zeros(cap, np.int8)
    nxt_excluded = np.zeros(cap, np.int64)
    nxt_lo = np.empty((cap, d), np.int64)
    nxt_hi = np.empty((cap, d), np.int64)
    nxt_bits = np.empty((cap, d), np.uint64)
    done_starts = np.zeros(cap, np.int64)
    done_ends = np.zeros(cap, np.int64)
    done_side = np.zeros(cap, np.int8)
    dim = np.empty(cap, np.int64)
    cut_le = np.empty(cap, np.int64)
    cut_lt = np.empty(cap, np.int64)
    part_lo = np.empty((cap, 3, d), np.int64)
    part_hi = np.empty((cap, 3, d), np.int64)
    part_bits = np.empty((cap, 3, d), np.uint64)
    ends[0] = n
    lo[0] = lo0[0]
    hi[0] = hi0[0]
    bits[0] = bits0[0]
    active = 1
    n_done = 0
    rounds = 0
    while active > 0:
        # a partition with fewer than 2 * min_size rows has no allowable cut
        kept = 0
        rows_active = 0
        for p in range(active):
            if ends[p] - starts[p] < 2 * min_size:
                done_starts[n_done] = starts[p]
                done_ends[n_done] = ends[p]
                done_side[n_done] = side[p]
                n_done += 1
            else:
                starts[kept] = starts[p]
                ends[kept] = ends[p]
                side[kept] = side[p]
                excluded[kept] = excluded[p]
                lo[kept] = lo[p]
                hi[kept] = hi[p]
                bits[kept] = bits[p]
                rows_active += ends[p] - starts[p]
                kept += 1
        active = kept
        if active == 0:
            break
        rounds += 1
        args = (Xs, Rs, side[:active], mags, mag_offsets, spans, cardinalities,
                starts[:active], ends[:active], lo[:active], hi[:active], bits[:active],
                unordered, tree, tree_nodes, tree_under, tree_off, tree_height,
                excluded[:active], min_size, strategy, seed + rounds, dim[:active],
                cut_le[:active], cut_lt[:active], part_lo[:active], part_hi[:active],
                part_bits[:active])
        if active > 1 and rows_active > parallel_rows:
            propose_cuts(*args)
        else:
            propose_cuts_serial(*args)
        grown = 0
        for p in range(active):
            s = starts[p]
            e = ends[p]
            if dim[p] < 0:  # no dimension has a cut with both sides large enough
                done_starts[n_done] = s
                done_ends[n_done] = e
                done_side[n_done] = side[p]
                n_done += 1
                continue
            le = cut_le[p]
            lt = cut_lt[p]
            ok_le = le - s >= min_size and e - le >= min_size
            ok_lt = lt - s >= min_size and e - lt >= min_size
            middle = (s + e) / 2.0
            use_lt = ok_lt and (not ok_le or abs(lt - middle) < abs(le - middle))
            cut = lt if use_lt else le
            child_excluded = excluded[p]
            if remove_cut_dimension:
                child_excluded |= np.int64(1) << dim[p]
            for half in range(2):
                if single_dimensional:
                    done_starts[n_done] = s if half == 0 else cut
                    done_ends[n_done] = cut if half == 0 else e
                    done_side[n_done] = side[p]
                    n_done += 1
                    continue
                q = grown
                grown += 1
                nxt_starts[q] = s if half == 0 else cut
                nxt_ends[q] = cut if half == 0 else e
                nxt_side[q] = side[p]
                nxt_excluded[q] = child_excluded
                for j in range(d):
                    # left = (< m) + (== m) for x <= m, (< m) for x < m; right the rest
                    if half == 0:
                        a_lo = part_lo[p, 0, j]
                        a_hi = part_hi[p, 0, j]
                        a_bits = part_bits[p, 0, j]
                        if not use_lt:
                            a_lo = min(a_lo, part_lo[p, 1, j])
                            a_hi = max(a_hi, part_hi[p, 1, j])
                            a_bits |= part_bits[p, 1, j]
                    else:
                        a_lo = part_lo[p, 2, j]
                        a_hi = part_hi[p, 2, j]
                        a_bits = part_bits[p, 2, j]
                        if use_lt:
                            a_lo = min(a_lo, part_lo[p, 1, j])
                            a_hi = max(a_hi, part_hi[p, 1, j])
                            a_bits |= part_bits[p, 1, j]
                    nxt_lo[q, j] = a_lo
                    nxt_hi[q, j] = a_hi
                    nxt_bits[q, j] = a_bits
        starts, nxt_starts = nxt_starts, starts
        ends, nxt_ends = nxt_ends, ends
        side, nxt_side = nxt_side, side
        excluded, nxt_excluded = nxt_excluded, excluded
        lo, nxt_lo = nxt_lo, lo
        hi, nxt_hi = nxt_hi, hi
        bits, nxt_bits = nxt_bits, bits
        active = grown
    return done_starts[:n_done], done_ends[:n_done], done_side[:n_done], rounds
