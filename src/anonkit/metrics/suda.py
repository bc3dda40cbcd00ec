"""Special uniques: SUDA2's minimal sample uniques and the (DIS-)SUDA scores of each record.

A **minimal sample unique** (MSU) of a record is a set of quasi-identifiers on which the
record's combination of values occurs in no other row of the sample, while on every proper
subset it does occur in another row (Elliot, Manning & Ford 2002). A record with a small
MSU is a *special unique*: few facts single it out. :func:`suda2` finds every MSU of every
record up to ``max_msu`` QIs and scores the records as sdcMicro's ``suda2`` does.

**Scores** (sdcMicro 5.x, ``src/Suda2.h``, ``original_scores = TRUE``, "as in Elliot et
al."), with ``M`` the number of QIs:

- SUDA score of a record: ``sum over its MSUs of (M - k)!``, ``k`` the MSU's size, so an
  MSU of one QI weighs ``(M - 1)!`` and one of all ``M`` QIs weighs 1;
- DIS probability (Skinner & Elliot 2002), the chance that a sample unique is a population
  unique under sampling fraction ``f`` (``dis_fraction``):
  ``dis = U f / (U f + P (1 - f))``, ``U`` the records unique on all QIs, ``P`` the
  records whose all-QI combination occurs exactly twice;
- DIS-SUDA score (Elliot, Manning, Mayes, Gurd & Bane, "SUDA: a program for detecting
  special uniques", using DIS to modify the classification of special uniques): with
  ``Q = 1 + (8 - M) / 20`` and ``A = sum over records with a score s > 0 of s**-Q``,
  ``dis_score = 1 / (1 + (U / dis - U) / (s**Q * A))`` for a record with score ``s > 0``,
  0 otherwise.

**Search**: SUDA2 (Manning, Haglin & Keane 2008) rests on two properties of uniqueness:
a set of QIs that makes a record unique makes it unique with any QI added (so an MSU has no
unique subset, and it suffices to check its subsets one QI smaller), and a record unique
on a set is alone in its group there, so it can be left out when grouping the supersets
of that set: it never shares a group with anyone. SUDA2 itself recurses depth first over
*items* (a QI and one of its values), record lists in hand; this module applies the same
two properties to whole columns instead, walking the lattice of QI sets level by level
(sets of 1 QI, then 2, ... up to ``max_msu``), all rows of a set at once with numpy:

- the rows worth grouping on a set ``S`` are those that are not unique on any of its
  parents (``S`` minus one QI): a row unique on a parent is unique on ``S`` but not
  minimally, and it cannot share a group on ``S`` with another row;
- among them, each row alone in its group on ``S`` has ``S`` as an MSU;
- the others go on to the children of ``S`` only if their group holds a record that can
  still become unique (one occurring once on all QIs): a group of rows that each occur at
  least twice on all QIs only splits into groups of such rows, which never hold an MSU;
- a set with no such rows left ends the search above it (no child of it is visited).

Rows equal on all QIs are merged first (a row that occurs twice or more on all QIs is
never unique, and only "once or more than once" matters to the others). Groups are keyed
on the parent's group and the added QI's code, so keys never overflow; the rows a set
passes on are also kept as a bitset, so that intersecting a set's parents is a few
word-wise ANDs. Time: Adult (30,162 rows, 8 QIs, max MSU 4) takes about 0.07 s
(``benchmarks/suda.py``); it grows with the number of sets visited, so many QIs on which
few records are unique cost most (30,000 random rows, 20 QIs of 3 values, max MSU 5:
about 10 s, 21,699 sets).

**Differences from sdcMicro** (``suda2(data, variables, missing, DisFraction)``):
sdcMicro has no size limit (it searches MSUs of every size: with ``max_msu >= M`` the
figures are the same); a value equal to its ``missing`` code (default -999, and NA) is
never part of an MSU there, whereas here every code is just a value; sdcMicro pads a
table of 1 or 2 QIs with constant columns, which raises its ``M`` (and so the weights and
``Q``) to 3; it computes ``dis`` and ``Q`` in single precision (its DIS-SUDA scores differ
from these near the 7th significant digit, a little more when ``dis`` is close to 1). Its
``U`` counts only the sample uniques alone in their 16-bit hash bucket (at commit
``cf32510``), but ``U`` cancels out of ``U / dis - U = P (1 - f) / f``, so the DIS-SUDA
scores do not depend on it. The per-QI contributions sdcMicro also reports are not
computed here.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
import pandas as pd

from anonkit._util.grouping import group_codes
from anonkit.errors import InputError

__all__ = ["MAX_QIS", "Suda2Result", "suda2", "suda_weights"]

#: The most QIs :func:`suda2` accepts. The search visits up to ``sum(C(M, k), k <= max_msu)``
#: sets of QIs (fewer when whole branches run out of candidate records), so its time grows
#: quickly with ``M``; sdcMicro's own limit is 256.
MAX_QIS = 64


class _State(NamedTuple):
    """The rows of one set of QIs that its children group further."""

    rows: np.ndarray  # merged rows, ascending
    groups: np.ndarray  # the group of each on the set, below ``n_groups``
    n_groups: int
    bits: np.ndarray  # the same rows as bits over all merged rows (np.packbits), to AND



@dataclass(frozen=True)
class Suda2Result:
    """MSUs and SUDA scores of every record of a table (see :func:`suda2`).

    Row numbers are positions in the input table; no value of the table is kept.
    """

    #: ``msu_counts[i, k - 1]``: the number of MSUs of ``k`` QIs of record ``i`` (int64,
    #: ``n_rows x max_msu``; sizes above the number of QIs have none).
    msu_counts: np.ndarray
    #: SUDA score per record (float64): ``sum over k of msu_counts[:, k-1] * (M - k)!``.
    score: np.ndarray
    #: DIS-SUDA score per record (float64, in [0, 1]; 0 for a record with no MSU).
    dis_score: np.ndarray
    #: every MSU found: a set of QIs (positions, ascending) -> the records (ascending row
    #: numbers) for which it is an MSU; sets that are no record's MSU are left out.
    msus: dict[tuple[int, ...], np.ndarray]
    n_qis: int
    max_msu: int
    dis_fraction: float
    #: records unique on all QIs (``U``)
    sample_uniques: int
    #: records whose all-QI combination occurs exactly twice (``P``)
    pair_records: int
    #: the DIS probability ``U f / (U f + P (1 - f))`` (0 when there is no sample unique)
    dis: float

    @property
    def special_uniques(self) -> int:
        """How many records have at least one MSU (of at most ``max_msu`` QIs)."""
        return int(np.count_nonzero(self.score))

    def top_records(self, n: int | None = 10,
                    by: Literal["dis_score", "score"] = "dis_score") -> np.ndarray:
        """Row numbers of the (at most ``n``; all with ``None``) riskiest records, highest
        score first, ties by row number; records with no MSU are never listed."""
        if by not in ("dis_score", "score"):
            raise InputError(f"by must be 'dis_score' or 'score', got {by!r}")
        if n is not None and n < 0:
            raise InputError(f"n must be >= 0 or None, got {n}")
        values = self.dis_score if by == "dis_score" else self.score
        rows = np.flatnonzero(self.score > 0)
        # lexsort's last key is the primary one; a stable sort keeps rows ascending on ties
        order = rows[np.lexsort((rows, -values[rows]))]
        return order if n is None else order[:n]

    def record_msus(self, row: int) -> list[tuple[int, ...]]:
        """The MSUs of one record (QI positions), smallest first, then in lexical order."""
        found = [qis for qis, rows in self.msus.items()
                 if rows.size and rows[min(np.searchsorted(rows, row), rows.size - 1)] == row]
        return sorted(found, key=lambda qis: (len(qis), qis))


def suda_weights(n_qis: int, max_msu: int) -> np.ndarray:
    """Weight of an MSU of ``k`` QIs in the SUDA score, for ``k = 1 .. max_msu``:
    ``(n_qis - k)!`` (0 for ``k > n_qis``, where there is no MSU)."""
    return np.array([float(math.factorial(n_qis - k)) if k <= n_qis else 0.0
                     for k in range(1, max_msu + 1)])


def suda2(codes: np.ndarray, max_msu: int = 5, dis_fraction: float = 0.01) -> Suda2Result:
    """Minimal sample uniques of every record up to ``max_msu`` QIs, and its SUDA and
    DIS-SUDA scores (definitions and sources in the module docstring).

    Args:
        codes: ``n_rows x n_qis`` integers, one column per quasi-identifier, equal codes
            for equal values (e.g. ``pandas.factorize`` of each column); a missing value is
            a value like any other.
        max_msu: largest MSU searched for (sdcMicro searches all sizes: ``max_msu >=
            n_qis`` gives its figures).
        dis_fraction: sampling fraction ``f`` of the DIS probability, in (0, 1].

    Raises:
        InputError: an empty table, not a 2-D integer array, more than :data:`MAX_QIS`
            columns, ``max_msu < 1``, or ``dis_fraction`` outside (0, 1].
    """
    table = _check(codes, max_msu, dis_fraction)
    max_msu = int(max_msu)
    n_rows, n_qis = table.shape
    # per column codes 0 .. n_values - 1, so that keys built from them stay small
    columns = [_dense(table[:, j]) for j in range(n_qis)]
    class_of, n_classes, first = group_codes(columns, n_rows)
    class_sizes = np.bincount(class_of, minlength=n_classes)
    # one merged row per all-QI combination: only "once" or "more than once" matters to
    # uniqueness, so the merged rows weigh 1 (the sample uniques) or 2
    merged = [c[first] for c, _ in columns]  # column by column: gathers stay contiguous
    weight = np.minimum(class_sizes, 2)
    n_values = np.array([n for _, n in columns], dtype=np.int64)

    depth = min(max_msu, n_qis)
    msus: dict[tuple[int, ...], np.ndarray] = {}
    msu_counts = np.zeros((n_rows, max_msu), dtype=np.int64)
    for qis, found in _search(merged, weight, n_values, depth):
        rows = first[found]  # a merged row of weight 1 is exactly one input row
        msus[qis] = rows
        msu_counts[rows, len(qis) - 1] += 1

    score = np.zeros(n_rows)
    # summed size by size, as sdcMicro does (exact while the products stay below 2**53)
    for k, w in enumerate(suda_weights(n_qis, max_msu)):
        score += msu_counts[:, k] * w
    uniques = int(np.count_nonzero(class_sizes == 1))
    pairs = 2 * int(np.count_nonzero(class_sizes == 2))
    dis, dis_score = _dis_suda(score, uniques, pairs, dis_fraction, n_qis)
    return Suda2Result(msu_counts=msu_counts, score=score, dis_score=dis_score, msus=msus,
                       n_qis=n_qis, max_msu=max_msu, dis_fraction=float(dis_fraction),
                       sample_uniques=uniques, pair_records=pairs, dis=dis)


def _check(codes: np.ndarray, max_msu: int, dis_fraction: float) -> np.ndarray:
    """The input as a 2-D integer array, or a one-line :class:`InputError`."""
    if isinstance(max_msu, bool) or not isinstance(max_msu, int | np.integer):
        raise InputError(f"max_msu must be an integer >= 1, got {max_msu!r}")
    if max_msu < 1:
        raise InputError(f"max_msu must be >= 1, got {max_msu}")
    if not isinstance(dis_fraction, int | float | np.floating | np.integer) or isinstance(
            dis_fraction, bool) or not 0 < dis_fraction <= 1:
        raise InputError(f"dis_fraction must be a number in (0, 1], got {dis_fraction!r}")
    table = np.asarray(codes)
    if table.ndim != 2:
        raise InputError(f"codes must be a 2-D array (rows x quasi-identifiers), got "
                         f"{table.ndim} dimension(s)")
    if table.dtype.kind not in "iub":
        raise InputError(f"codes must be integers (one code per value, e.g. from "
                         f"pandas.factorize), got dtype {table.dtype}")
    n_rows, n_qis = table.shape
    if n_rows == 0 or n_qis == 0:
        raise InputError(f"codes is empty ({n_rows} rows x {n_qis} quasi-identifiers)")
    if n_qis > MAX_QIS:
        raise InputError(f"suda2 takes at most {MAX_QIS} quasi-identifiers, got {n_qis}")
    return table


def _dense(column: np.ndarray) -> tuple[np.ndarray, int]:
    """The column's codes renumbered 0 .. n_values - 1, and n_values."""
    ids, distinct = pd.factorize(column)
    return ids.astype(np.int64, copy=False), len(distinct)


def _search(merged: list[np.ndarray], weight: np.ndarray, n_values: np.ndarray,
            depth: int) -> Iterator[tuple[tuple[int, ...], np.ndarray]]:
    """Level-wise search of the sets of at most ``depth`` QIs: yields (set, merged rows
    whose MSU it is) for every set that is an MSU of some row.

    ``merged``: per QI, the dense codes of one row per all-QI combination, ``weight`` the
    row's count capped at 2; a row of weight 2 is never unique but keeps the rows it
    resembles from being so.
    """
    n_merged, n_qis = weight.size, len(merged)
    # the merged rows that can have MSUs weigh 1; when all do, no need to tell them apart
    heavy: np.ndarray | None = weight if (weight > 1).any() else None
    level: dict[tuple[int, ...], _State] = {}
    everyone = np.arange(n_merged)
    for q in range(n_qis):
        unique, state = _split(everyone, merged[q], int(n_values[q]), heavy, n_merged,
                               keep=depth > 1)
        if unique.size:
            yield (q,), unique
        if state is not None:
            level[(q,)] = state
    # the group on the parent of each of its rows (rows outside it are never read)
    parent_groups = np.zeros(n_merged, dtype=np.int64)
    for size in range(2, depth + 1):
        below, level = level, {}
        for parent, state in below.items():
            spread = False
            # children of ``parent`` add a later QI, so each set is visited once (from the
            # parent without its last QI); all its other parents must still be searched
            for q in range(parent[-1] + 1, n_qis):
                qis = (*parent, q)
                mask = state.bits
                for i in range(size - 1):
                    other = below.get(qis[:i] + qis[i + 1:])
                    if other is None:
                        break  # a parent ran out of candidate rows: so does this set
                    mask = mask & other.bits
                else:
                    grouped = np.flatnonzero(np.unpackbits(mask, count=n_merged))
                    if grouped.size == 0:
                        continue
                    if not spread:
                        parent_groups[state.rows] = state.groups
                        spread = True
                    # the group on ``qis``: the group on ``parent`` and q's code
                    ids, n_groups = _regroup(
                        parent_groups[grouped] * n_values[q] + merged[q][grouped],
                        state.n_groups * int(n_values[q]))
                    unique, child = _split(grouped, ids, n_groups, heavy, n_merged,
                                           keep=size < depth)
                    if unique.size:
                        yield qis, unique
                    if child is not None:
                        level[qis] = child


def _regroup(key: np.ndarray, bound: int) -> tuple[np.ndarray, int]:
    """Keys (all below ``bound``) renumbered 0 .. n - 1, and n."""
    if bound <= 4 * key.size + 4096:  # a table over all keys is cheaper than a hash
        renumber = np.cumsum(np.bincount(key, minlength=bound) > 0) - 1
        return renumber[key], int(renumber[-1]) + 1
    ids, distinct = pd.factorize(key)
    return ids.astype(np.int64, copy=False), len(distinct)


def _split(rows: np.ndarray, groups: np.ndarray, n_groups: int, weight: np.ndarray | None,
           n_merged: int, keep: bool) -> tuple[np.ndarray, _State | None]:
    """Given the candidate ``rows`` of one set of QIs and their ``groups`` on it: the rows
    unique there (their MSU), and, when ``keep``, the state of the rows to group further
    (None when there are none). ``weight``: as in :func:`_search`, None when all are 1."""
    size = np.bincount(groups, minlength=n_groups)
    alone = size[groups] == 1
    if weight is not None:  # some merged rows stand for 2 or more input rows
        alone &= weight[rows] == 1
    unique = rows[alone]
    if not keep:
        return unique, None
    go_on = ~alone
    if weight is not None:
        # a group goes on when it still holds a row that occurs once on all QIs (and is
        # not unique here): only such rows can have larger MSUs, and only their groups
        # matter to them
        live = np.bincount(groups[weight[rows] == 1], minlength=n_groups) > 0
        go_on &= live[groups]
    if not go_on.any():
        return unique, None
    kept = rows[go_on]
    mask = np.zeros(n_merged, dtype=bool)
    mask[kept] = True
    return unique, _State(kept, groups[go_on], n_groups, np.packbits(mask))


def _dis_suda(score: np.ndarray, uniques: int, pairs: int, fraction: float,
              n_qis: int) -> tuple[float, np.ndarray]:
    """The DIS probability and the DIS-SUDA score per record, as sdcMicro computes them."""
    dis_score = np.zeros_like(score)
    if uniques == 0:  # no sample unique: no record has an MSU
        return 0.0, dis_score
    dis = uniques * fraction / (uniques * fraction + pairs * (1.0 - fraction))
    q = 1.0 + (8.0 - n_qis) / 20.0
    scored = score > 0
    powered = score[scored] ** q
    # sdcMicro sums 1 / s**Q record by record; math.fsum makes the order irrelevant
    adjust = math.fsum((1.0 / powered).tolist())
    dis_score[scored] = 1.0 / (1.0 + (uniques / dis - uniques) / (powered * adjust))
    return dis, dis_score
