"""Inner loop of Mondrian: choose a dimension and arrange a partition around its median,
for many partitions per call. The loops are the C extension ``_mondrian_c``; this module
allocates its arrays and spreads large rounds over the cores.

Rows of the working matrix are permuted so that every partition is a contiguous segment
``[start, end)``. For each segment the kernel picks the best cut dimension, finds the
(lower) median ``m`` of that dimension and rearranges the segment as ``< m | == m | > m``.
The matrix has two copies (``Xs[0]``, ``Xs[1]``) and rearranging moves a segment from the
copy that holds it to the other one (``side`` says which holds it), so nothing is copied
back: the kernel is bound by memory traffic, which this halves.
Both strict cuts the driver may take -- ``x <= m`` and ``x < m`` -- are then just positions
in the segment, and cutting costs nothing more.

The three tuples of arrays passed around:

- ``columns = (mags, mag_offsets, spans, cardinalities, unordered, tree, tree_nodes,
  tree_under, tree_off, tree_height)``: the static description of the QIs;
- ``parts = (starts, ends, side, excluded, tried, lo, hi, bits)``: a round's partitions;
- ``proposal = (dim, cut_le, cut_lt, part_lo, part_hi, part_bits)``: what the round found.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from anonkit._util.parallel import cores, pool
from anonkit.algorithms import _mondrian_c

WIDEST = 0  # widest range, normalised by the column's domain (LeFevre et al.)
ENTROPY = 1  # highest entropy of the column's values in the partition
DISTINCT = 2  # most distinct values in the partition
RANDOM = 3  # a random dimension among those that can be cut (seeded)

STRATEGIES = {"widest": WIDEST, "entropy": ENTROPY, "distinct": DISTINCT, "random": RANDOM}


def propose(Xs: np.ndarray, Rs: np.ndarray, columns: tuple, parts: tuple, min_size: int,
            strategy: int, seed: int, parallel_rows: int) -> tuple:
    """For each partition, try dimensions best first (skipping those in ``excluded`` or
    ``tried``) until one has a median cut whose sides both reach ``min_size``; move the
    segment around that median and report the dimension (-1: none), both cuts and the
    ranges of the parts ``< m``, ``== m``, ``> m``. Partitions are disjoint segments, so a
    round moving more than ``parallel_rows`` rows runs them on all cores."""
    starts, ends = parts[0], parts[1]
    n_parts, d = len(starts), Xs.shape[2]
    proposal = (np.empty(n_parts, np.int64), np.empty(n_parts, np.int64),
                np.empty(n_parts, np.int64), np.empty((n_parts, 3, d), np.int64),
                np.empty((n_parts, 3, d), np.int64), np.empty((n_parts, 3, d), np.uint64))

    def run(begin: int, end: int) -> None:
        _mondrian_c.propose(Xs, Rs, columns, parts, proposal, begin, end, min_size,
                            strategy, seed)

    first, *others = pairwise(_chunks(ends - starts, parallel_rows))
    # the C function releases the GIL: the pool runs every chunk but the first, which
    # this thread runs meanwhile
    futures = [pool().submit(run, begin, end) for begin, end in others]
    try:
        run(*first)
    finally:
        for future in futures:  # every chunk ends before the arrays are used or dropped
            future.exception()
    for future in futures:
        future.result()
    return proposal


def _chunks(sizes: np.ndarray, parallel_rows: int) -> list[int]:
    """Boundaries of contiguous runs of partitions with roughly equal rows, one run per
    core; a single run when the round is small."""
    n_parts = len(sizes)
    n_cores = cores()
    total = int(sizes.sum())
    if n_cores < 2 or n_parts < 2 or total <= parallel_rows:
        return [0, n_parts]
    rows_before = np.concatenate([[0], np.cumsum(sizes)])
    targets = total * np.arange(1, n_cores) / n_cores
    # the boundary whose rows before it are nearest each target
    below = np.searchsorted(rows_before, targets, side="right") - 1
    above = np.minimum(below + 1, n_parts)
    nearer = np.where(rows_before[above] - targets < targets - rows_before[below], above,
                      below)
    return sorted({0, n_parts, *nearer.tolist()})


def first_round(X: np.ndarray) -> tuple:
    """The partitions of the first round: the whole table, with its ranges."""
    n, d = X.shape
    lo = np.empty((1, d), np.int64)
    hi = np.empty((1, d), np.int64)
    bits = np.empty((1, d), np.uint64)
    _mondrian_c.first_round(X, lo, hi, bits)
    return (np.zeros(1, np.int64), np.full(1, n, np.int64), np.zeros(1, np.int8),
            np.zeros(1, np.int64), np.zeros(1, np.int64), lo, hi, bits)


def advance(parts: tuple, proposal: tuple, cut: np.ndarray, take_lt: np.ndarray,
            keep_trying: np.ndarray, min_size: int, remove_cut_dimension: bool,
            single_dimensional: bool, done: tuple, n_done: int) -> tuple:
    """The next round's partitions. A partition with a ``cut`` (>= 0; ``take_lt``: the cut
    is ``x < m``, else ``x <= m``) becomes two children, whose ranges come from the parts
    of the proposal; one without a cut is tried again on another dimension when
    ``keep_trying``, else it is final. Children too small to cut again (fewer than
    2 * ``min_size`` rows) are final at once. Finals go to ``done`` (starts, ends, side)
    from ``n_done`` on. Returns (next parts, new n_done)."""
    n_parts, d = parts[5].shape
    cap = 2 * n_parts
    nxt = (np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int8),
           np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty((cap, d), np.int64),
           np.empty((cap, d), np.int64), np.empty((cap, d), np.uint64))
    n_next, n_done = _mondrian_c.advance(parts, proposal, cut, take_lt, keep_trying, min_size,
                                         remove_cut_dimension, single_dimensional, done,
                                         n_done, nxt)
    return tuple(a[:n_next] for a in nxt), n_done


def new_done(n: int, min_size: int) -> tuple:
    """Room for the final segments: at most n / min_size of them (and at least one)."""
    cap = n // max(min_size, 1) + 2
    return np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int8)
