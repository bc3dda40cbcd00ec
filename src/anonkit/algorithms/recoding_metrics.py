"""Utility metrics of a full-domain global recoding, on a node's frequency set.

A full-domain recoding generalizes column ``j`` to one level ``L_j`` of its hierarchy for
the whole table; the rows of the classes that break a model are suppressed (every
quasi-identifier released as ``*``). Lower is better for every metric; a suppressed row
costs what a row generalized to the root costs (ARX's convention).

- ``loss`` (Iyengar's loss metric, ARX's default): per cell, ``(values under the released
  node - 1) / (values in the column - 1)``, counting the distinct values the column holds;
  the mean over all cells, in [0, 1].
- ``precision`` (Sweeney's): per cell, ``level / top level``; the mean over all cells.
- ``discernibility`` (Bayardo and Agrawal): the sum of squared class sizes, each suppressed
  row charged the table's row count.
- ``non-uniform-entropy`` (Gionis and Tassa): per cell, ``log2(rows whose value falls in the
  released node / rows with the original value)``, in bits, summed over all cells.
- ``average-class-size``: rows per class, the suppressed rows counting as one class.

Every metric's value without suppression is a lower bound of its value with it, and never
decreases as a node is generalized: the search prunes with it (:class:`MetricTables`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from anonkit.algorithms import _recoding_c
from anonkit.errors import InputError

METRICS = ("loss", "precision", "discernibility", "non-uniform-entropy", "average-class-size")
#: the metrics that are a sum of per-cell costs: their bound needs no frequency set
SEPARABLE = ("loss", "precision", "non-uniform-entropy")


def check_metric(name: str) -> str:
    if name not in METRICS:
        raise InputError(f"unknown utility metric {name!r}; use one of {', '.join(METRICS)}")
    return name


@dataclass(frozen=True)
class LevelCounts:
    """One quasi-identifier's levels, as the metrics need them: per level, the rows and the
    distinct values of the column under each of the level's nodes (indexed by the level's
    codes)."""

    rows: tuple[np.ndarray, ...]
    values: tuple[np.ndarray, ...]

    @property
    def height(self) -> int:
        return len(self.rows)


@dataclass(frozen=True)
class MetricTables:
    """A separable metric's costs: per column and level, the cost of one row per node
    (``cost[j][L][code]``) and of all rows (``total[j][L]``), the cost of a suppressed row
    (``top[j]``), a constant taken off (``base[j]``) and the normaliser ``scale``."""

    cost: tuple[tuple[np.ndarray, ...], ...]
    total: tuple[np.ndarray, ...]
    top: np.ndarray
    base: np.ndarray
    scale: float

    def bound(self, levels: np.ndarray) -> np.ndarray:
        """The metric without suppression for every node in ``levels`` ((nodes, d))."""
        out = np.zeros(len(levels))
        for j, total in enumerate(self.total):
            out += total[levels[:, j]] - self.base[j]
        return out / self.scale

    def column_gaps(self) -> list[np.ndarray]:
        """Per column and level, the least one suppressed row adds to the metric in that
        column (the top's cost less that of the level's dearest node), unscaled."""
        return [np.maximum(self.top[j] - np.array([float(c.max()) if len(c) else 0.0
                                                   for c in per_level]), 0.0)
                for j, per_level in enumerate(self.cost)]

    def suppression_gap(self, levels: np.ndarray) -> np.ndarray:
        """For every node in ``levels``, the least one suppressed row adds to the metric."""
        out = np.zeros(len(levels))
        for j, gaps in enumerate(self.column_gaps()):
            out += gaps[levels[:, j]]
        return out / self.scale

    def penalty(self, levels: Sequence[int], codes: np.ndarray, counts: np.ndarray,
                suppressed: np.ndarray) -> float:
        """What suppression adds to the metric at one node: ``codes`` / ``counts`` its
        frequency set, ``suppressed`` per class whether its rows are suppressed. Never
        negative, and no less at a specialization, which suppresses these rows too."""
        if not suppressed.any():
            return 0.0
        rows, charged = _recoding_c.suppression_cost(
            np.ascontiguousarray(codes, dtype=np.int32), len(levels),
            np.ascontiguousarray(counts, dtype=np.int64), suppressed.view(np.uint8),
            self.flat_cost, self.flat_start[np.arange(len(levels)), np.asarray(levels)])
        return (rows * self.top_sum - charged) / self.scale

    def small_classes(self, levels: Sequence[int], codes: np.ndarray, counts: np.ndarray,
                      least: int, most: int) -> tuple[int, float]:
        """The rows of the classes of fewer than ``least`` rows at one node, and what
        suppressing them adds to the metric (:meth:`penalty`), in one pass; beyond ``most``
        rows, some number of rows above it and no cost (the node fails)."""
        rows, charged = _recoding_c.small_classes(
            np.ascontiguousarray(codes, dtype=np.int32), len(levels),
            np.ascontiguousarray(counts, dtype=np.int64), least, most, self.flat_cost,
            self.flat_start[np.arange(len(levels)), np.asarray(levels)])
        return int(rows), (rows * self.top_sum - charged) / self.scale \
            if 0 < rows <= most else 0.0

    @cached_property
    def flat_cost(self) -> np.ndarray:
        """Every column's costs at every level, end to end (see :attr:`flat_start`)."""
        return np.concatenate([c for per_level in self.cost for c in per_level])

    @cached_property
    def flat_start(self) -> np.ndarray:
        """Per column and level, where its costs start in :attr:`flat_cost`."""
        height = max((len(per_level) for per_level in self.cost), default=0)
        out = np.zeros((len(self.cost), height), dtype=np.int64)
        at = 0
        for j, per_level in enumerate(self.cost):
            for level, c in enumerate(per_level):
                out[j, level] = at
                at += len(c)
        return out

    @cached_property
    def top_sum(self) -> float:
        return float(self.top.sum())

    def value(self, levels: Sequence[int], codes: np.ndarray, counts: np.ndarray,
              suppressed: np.ndarray) -> float:
        """The metric at one node (see :meth:`penalty`)."""
        bound = sum(float(self.total[j][level]) - float(self.base[j])
                    for j, level in enumerate(levels)) / self.scale
        return bound + self.penalty(levels, codes, counts, suppressed)


def metric_tables(name: str, columns: Sequence[LevelCounts], n_rows: int) -> MetricTables:
    """The cost tables of separable metric ``name`` (one of :data:`SEPARABLE`)."""
    d = len(columns)
    costs: list[tuple[np.ndarray, ...]] = []
    totals: list[np.ndarray] = []
    top = np.ones(d)
    base = np.zeros(d)
    for j, column in enumerate(columns):
        per_level: list[np.ndarray] = []
        top_level = max(column.height - 1, 1)
        domain = int(column.values[0].sum())  # the distinct values the column holds
        for level in range(column.height):
            rows = column.rows[level].astype(np.float64)
            if name == "precision":
                cost = np.full(len(rows), level / top_level if column.height > 1 else 0.0)
            elif name == "loss":
                cost = (column.values[level] - 1) / (domain - 1) if domain > 1 \
                    else np.zeros(len(rows))
            else:  # non-uniform entropy
                cost = np.log2(np.maximum(rows, 1.0))  # a node with no row costs none
            per_level.append(cost.astype(np.float64))
        costs.append(tuple(per_level))
        totals.append(np.array([float((c * r.astype(np.float64)).sum())
                                for c, r in zip(per_level, column.rows, strict=True)]))
        if name == "non-uniform-entropy":
            top[j] = np.log2(n_rows)
            base[j] = totals[-1][0]
    scale = 1.0 if name == "non-uniform-entropy" else float(n_rows * d)
    return MetricTables(tuple(costs), tuple(totals), top, base, scale)


def class_metric(name: str, counts: np.ndarray, suppressed: np.ndarray,
                 n_rows: int) -> tuple[float, float]:
    """(value, bound without suppression) of ``discernibility`` or ``average-class-size``
    at a node with class sizes ``counts``."""
    counts = counts.astype(np.float64)
    kept = counts[~suppressed]
    n_suppressed = float(counts[suppressed].sum())
    if name == "discernibility":
        return float((kept * kept).sum()) + n_suppressed * n_rows, float((counts * counts).sum())
    n_classes = len(kept) + (1 if n_suppressed > 0 else 0)
    return n_rows / n_classes, n_rows / len(counts)
