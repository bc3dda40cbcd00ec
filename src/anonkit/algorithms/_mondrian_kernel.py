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
def _propose_one(p: int, Xs: np.ndarray, Rs: np.ndarray, columns: tuple, parts: tuple,
                 min_size: int, strategy: int, rng_seed: int, proposal: tuple,
                 score: np.ndarray, values: np.ndarray, counts: np.ndarray,
                 part_lo: np.ndarray, part_hi: np.ndarray, part_bits: np.ndarray) -> None:
    """One partition (see :func:`propose`). ``score`` .. ``part_bits`` are scratch:
    ``d``, >= size, >= 2 * size + 1, and 3 * d long."""
    (mags, mag_offsets, spans, cardinalities, unordered, tree, tree_nodes, tree_under,
     tree_off, tree_height) = columns
    starts, ends, side, excluded, tried, lo, hi, bits = parts
    out_dim, out_cut_le, out_cut_lt, out_lo, out_hi, out_bits = proposal
    d = Xs.shape[2]
    s = starts[p]
    e = ends[p]
    size = e - s
    X = Xs[side[p]]
    rng_state = np.uint64(rng_seed) * np.uint64(6364136223846793005) + np.uint64(p)
    for j in range(d):
        score[j] = -1.0
        if ((excluded[p] | tried[p]) >> j) & 1 or lo[p, j] == hi[p, j]:
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




# The three tuples the kernel passes around (numba takes tuples of arrays as arguments):
#   columns  = (mags, mag_offsets, spans, cardinalities, unordered, tree, tree_nodes,
#               tree_under, tree_off, tree_height): the static description of the QIs;
#   parts    = (starts, ends, side, excluded, tried, lo, hi, bits): a round's partitions;
#   proposal = (dim, cut_le, cut_lt, part_lo, part_hi, part_bits): what the round found.


@njit(cache=True, nogil=True)
def _new_proposal(n_parts: int, d: int) -> tuple:
    return (np.empty(n_parts, np.int64), np.empty(n_parts, np.int64),
            np.empty(n_parts, np.int64), np.empty((n_parts, 3, d), np.int64),
            np.empty((n_parts, 3, d), np.int64), np.empty((n_parts, 3, d), np.uint64))


@njit(cache=True, nogil=True, parallel=True)
def _propose_parallel(Xs: np.ndarray, Rs: np.ndarray, columns: tuple, parts: tuple,
                      min_size: int, strategy: int, seed: int, proposal: tuple) -> None:
    d = Xs.shape[2]
    starts, ends = parts[0], parts[1]
    for p in prange(len(starts)):
        size = ends[p] - starts[p]
        _propose_one(p, Xs, Rs, columns, parts, min_size, strategy, seed, proposal,
                     np.empty(d, np.float64), np.empty(size, np.int64),
                     np.empty(2 * size + 1, np.int64), np.empty(3 * d, np.int64),
                     np.empty(3 * d, np.int64), np.empty(3 * d, np.uint64))


@njit(cache=True, nogil=True)
def _propose_serial(Xs: np.ndarray, Rs: np.ndarray, columns: tuple, parts: tuple,
                    min_size: int, strategy: int, seed: int, proposal: tuple) -> None:
    d = Xs.shape[2]
    starts, ends = parts[0], parts[1]
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
        _propose_one(p, Xs, Rs, columns, parts, min_size, strategy, seed, proposal, score,
                     values, counts, part_lo, part_hi, part_bits)


def propose(Xs: np.ndarray, Rs: np.ndarray, columns: tuple, parts: tuple, min_size: int,
            strategy: int, seed: int, parallel_rows: int) -> tuple:
    """For each partition, try dimensions best first (skipping those in ``excluded`` or
    ``tried``) until one has a median cut whose sides both reach ``min_size``; move the
    segment around that median and report the dimension (-1: none), both cuts and the
    ranges of the parts ``< m``, ``== m``, ``> m``. Partitions are disjoint segments, so a
    round moving more than ``parallel_rows`` rows runs them on all cores.

    A plain Python function on purpose: a cached jitted function that calls a
    ``parallel=True`` one crashes when numba loads it from its cache in a new process, so
    the parallel kernel is only ever called from Python."""
    starts, ends = parts[0], parts[1]
    proposal = _new_proposal(len(starts), Xs.shape[2])
    kernel = _propose_parallel if len(starts) > 1 and int((ends - starts).sum()) > \
        parallel_rows else _propose_serial
    kernel(Xs, Rs, columns, parts, min_size, strategy, seed, proposal)
    return proposal


@njit(cache=True, nogil=True)
def first_round(X: np.ndarray) -> tuple:
    """The partitions of the first round: the whole table, with its ranges."""
    n, d = X.shape
    lo = np.full((1, d), 2147483647, np.int64)
    hi = np.full((1, d), -1, np.int64)
    bits = np.zeros((1, d), np.uint64)
    for i in range(n):
        for j in range(d):
            v = X[i, j]
            lo[0, j] = min(lo[0, j], v)
            hi[0, j] = max(hi[0, j], v)
            if v < 64:
                bits[0, j] |= np.uint64(1) << np.uint64(v)
    return (np.zeros(1, np.int64), np.full(1, n, np.int64), np.zeros(1, np.int8),
            np.zeros(1, np.int64), np.zeros(1, np.int64), lo, hi, bits)


@njit(cache=True, nogil=True)
def advance(parts: tuple, proposal: tuple, cut: np.ndarray, take_lt: np.ndarray,
            keep_trying: np.ndarray, min_size: int, remove_cut_dimension: bool,
            single_dimensional: bool, done: tuple, n_done: int) -> tuple:
    """The next round's partitions. A partition with a ``cut`` (>= 0; ``take_lt``: the cut
    is ``x < m``, else ``x <= m``) becomes two children, whose ranges come from the parts
    of the proposal; one without a cut is tried again on another dimension when
    ``keep_trying``, else it is final. Children too small to cut again (fewer than
    2 * ``min_size`` rows) are final at once. Finals go to ``done`` (starts, ends, side)
    from ``n_done`` on. Returns (next parts, new n_done)."""
    starts, ends, side, excluded, tried, lo, hi, bits = parts
    dim, _, _, part_lo, part_hi, part_bits = proposal
    done_starts, done_ends, done_side = done
    n_parts, d = lo.shape
    cap = 2 * n_parts
    nxt = (np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int8),
           np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty((cap, d), np.int64),
           np.empty((cap, d), np.int64), np.empty((cap, d), np.uint64))
    n_next = 0
    for p in range(n_parts):
        s = starts[p]
        e = ends[p]
        if cut[p] < 0:
            if keep_trying[p]:
                nxt[0][n_next] = s
                nxt[1][n_next] = e
                nxt[2][n_next] = side[p]
                nxt[3][n_next] = excluded[p]
                nxt[4][n_next] = tried[p] | (np.int64(1) << max(dim[p], 0))
                nxt[5][n_next] = lo[p]
                nxt[6][n_next] = hi[p]
                nxt[7][n_next] = bits[p]
                n_next += 1
            else:
                done_starts[n_done] = s
                done_ends[n_done] = e
                done_side[n_done] = side[p]
                n_done += 1
            continue
        child_excluded = excluded[p]
        if remove_cut_dimension:
            child_excluded |= np.int64(1) << dim[p]
        for half in range(2):
            cs = s if half == 0 else cut[p]
            ce = cut[p] if half == 0 else e
            if single_dimensional or ce - cs < 2 * min_size:
                done_starts[n_done] = cs
                done_ends[n_done] = ce
                done_side[n_done] = side[p]
                n_done += 1
                continue
            q = n_next
            n_next += 1
            nxt[0][q] = cs
            nxt[1][q] = ce
            nxt[2][q] = side[p]
            nxt[3][q] = child_excluded
            nxt[4][q] = 0
            # left = (< m) and (== m) for x <= m, only (< m) for x < m; right the rest
            own = 0 if half == 0 else 2
            for j in range(d):
                c_lo = part_lo[p, own, j]
                c_hi = part_hi[p, own, j]
                c_bits = part_bits[p, own, j]
                if (half == 0) != take_lt[p]:
                    c_lo = min(c_lo, part_lo[p, 1, j])
                    c_hi = max(c_hi, part_hi[p, 1, j])
                    c_bits |= part_bits[p, 1, j]
                nxt[5][q, j] = c_lo
                nxt[6][q, j] = c_hi
                nxt[7][q, j] = c_bits
    return (nxt[0][:n_next], nxt[1][:n_next], nxt[2][:n_next], nxt[3][:n_next],
            nxt[4][:n_next], nxt[5][:n_next], nxt[6][:n_next], nxt[7][:n_next]), n_done


@njit(cache=True, nogil=True)
def new_done(n: int, min_size: int) -> tuple:
    """Room for the final segments: at most n / min_size of them (and at least one)."""
    cap = n // max(min_size, 1) + 2
    return np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int8)
