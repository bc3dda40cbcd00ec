"""Compiled inner loop of Mondrian: choose a dimension and arrange a partition around its
median, for many partitions per call.

Rows of the working matrix are permuted in place so that every partition is a contiguous
segment ``[start, end)``. For each segment the kernel picks the best cut dimension, finds the
(lower) median ``m`` of that dimension and rearranges the segment as ``< m | == m | > m``.
Both strict cuts the driver may take -- ``x <= m`` and ``x < m`` -- are then just positions
in the segment, and cutting costs nothing more.
"""

from __future__ import annotations

import numpy as np
from numba import njit

WIDEST = 0  # widest range, normalised by the column's domain (LeFevre et al.)
ENTROPY = 1  # highest entropy of the column's values in the partition
DISTINCT = 2  # most distinct values in the partition
RANDOM = 3  # a random dimension among those that can be cut (seeded)

STRATEGIES = {"widest": WIDEST, "entropy": ENTROPY, "distinct": DISTINCT, "random": RANDOM}


@njit(cache=True, nogil=True)
def propose_cuts(
    X: np.ndarray,  # (n, d) int32 codes, rows permuted in place
    rows: np.ndarray,  # (n,) int64 original row index, permuted along with X
    mags: np.ndarray,  # concatenated per-code magnitudes of every column
    mag_offsets: np.ndarray,  # (d + 1,) start of each column's magnitudes in ``mags``
    spans: np.ndarray,  # (d,) float64 domain span of each column (0 when constant)
    cardinalities: np.ndarray,  # (d,) int64
    starts: np.ndarray,
    ends: np.ndarray,
    lo: np.ndarray,  # (p, d) smallest code of each partition and column
    hi: np.ndarray,  # (p, d) largest code
    excluded: np.ndarray,  # (p,) int64 bitmask of dimensions not to cut
    min_size: int,  # a cut whose smaller side is below this is never allowable
    strategy: int,
    seed: int,
    out_dim: np.ndarray,  # (p,) chosen dimension, -1 when no dimension can be cut
    out_cut_le: np.ndarray,  # (p,) first row of the right side for the cut x <= m
    out_cut_lt: np.ndarray,  # (p,) first row of the right side for the cut x < m
    out_lo: np.ndarray,  # (p, 3, d) ranges of the parts < m, == m, > m
    out_hi: np.ndarray,
    buf_x: np.ndarray,  # scratch, same shape as X
    buf_r: np.ndarray,  # scratch, same shape as rows
    values: np.ndarray,  # scratch, (n,) int64
    counts: np.ndarray,  # scratch, (max(2n, max cardinality) + 1,) int64
) -> None:
    """For each partition, try dimensions best first until one has a median cut whose
    sides both reach ``min_size`` (dimensions failing that are skipped here, at no cost to
    the caller); arrange the segment around that median and report both cuts."""
    d = X.shape[1]
    score = np.empty(d, dtype=np.float64)
    rng_state = np.uint64(seed) * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
    for p in range(len(starts)):
        s = starts[p]
        e = ends[p]
        size = e - s
        for j in range(d):
            score[j] = -1.0
            if (excluded[p] >> j) & 1 or lo[p, j] == hi[p, j]:
                continue
            if strategy == WIDEST:
                off = mag_offsets[j]
                width = mags[off + hi[p, j]] - mags[off + lo[p, j]]
                if np.isnan(width):  # the missing code is in range
                    width = spans[j]
                score[j] = width / spans[j] if spans[j] > 0 else 0.0
            elif strategy == RANDOM:
                rng_state = rng_state * np.uint64(6364136223846793005) + np.uint64(1)
                score[j] = float(rng_state >> np.uint64(11)) / 9007199254740992.0
            else:
                for c in range(lo[p, j], hi[p, j] + 1):
                    counts[c] = 0
                for i in range(s, e):
                    counts[X[i, j]] += 1
                if strategy == DISTINCT:
                    distinct = 0
                    for c in range(lo[p, j], hi[p, j] + 1):
                        if counts[c] > 0:
                            distinct += 1
                    score[j] = distinct / cardinalities[j]
                else:
                    h = 0.0
                    for c in range(lo[p, j], hi[p, j] + 1):
                        if counts[c] > 0:
                            q = counts[c] / size
                            h -= q * np.log(q)
                    score[j] = h
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
                break
            score[best] = -1.0  # not again for this partition in this call
            # lower median of the chosen dimension, and the sizes of < m, == m, > m
            blo = lo[p, best]
            width = hi[p, best] - blo + 1
            if width <= 2 * size:
                for c in range(width):
                    counts[c] = 0
                for i in range(s, e):
                    counts[X[i, best] - blo] += 1
                target = (size - 1) // 2
                acc = 0
                m = blo
                for c in range(width):
                    acc += counts[c]
                    if acc > target:
                        m = blo + c
                        break
                n_lt = acc - counts[m - blo]
                n_eq = counts[m - blo]
            else:
                for i in range(s, e):
                    values[i - s] = X[i, best]
                m = np.partition(values[:size], (size - 1) // 2)[(size - 1) // 2]
                n_lt = 0
                n_eq = 0
                for i in range(s, e):
                    v = X[i, best]
                    if v < m:
                        n_lt += 1
                    elif v == m:
                        n_eq += 1
            n_gt = size - n_lt - n_eq
            le_ok = n_lt + n_eq >= min_size and n_gt >= min_size
            lt_ok = n_lt >= min_size and n_eq + n_gt >= min_size
            if not (le_ok or lt_ok):
                continue
            # arrange the segment as < m | == m | > m, tracking each part's ranges
            for part in range(3):
                for j in range(d):
                    out_lo[p, part, j] = 2147483647
                    out_hi[p, part, j] = -1
            w_lt = s
            w_eq = s + n_lt
            w_gt = s + n_lt + n_eq
            for i in range(s, e):
                v = X[i, best]
                if v < m:
                    w = w_lt
                    w_lt += 1
                    part = 0
                elif v == m:
                    w = w_eq
                    w_eq += 1
                    part = 1
                else:
                    w = w_gt
                    w_gt += 1
                    part = 2
                for j in range(d):
                    x = X[i, j]
                    buf_x[w, j] = x
                    if x < out_lo[p, part, j]:
                        out_lo[p, part, j] = x
                    if x > out_hi[p, part, j]:
                        out_hi[p, part, j] = x
                buf_r[w] = rows[i]
            for i in range(s, e):
                for j in range(d):
                    X[i, j] = buf_x[i, j]
                rows[i] = buf_r[i]
            out_dim[p] = best
            out_cut_le[p] = s + n_lt + n_eq
            out_cut_lt[p] = s + n_lt
            break


@njit(cache=True, nogil=True)
def segment_ranges(X: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                   lo: np.ndarray, hi: np.ndarray) -> None:
    """Per segment and column, the smallest and largest code (into ``lo``/``hi``)."""
    d = X.shape[1]
    for p in range(len(starts)):
        s = starts[p]
        for j in range(d):
            lo[p, j] = X[s, j]
            hi[p, j] = X[s, j]
        for i in range(s + 1, ends[p]):
            for j in range(d):
                v = X[i, j]
                if v < lo[p, j]:
                    lo[p, j] = v
                elif v > hi[p, j]:
                    hi[p, j] = v
