"""Utility metrics: how much information a release gives up.

All figures are computed per class (never per row) from the class sizes and, for the
certainty penalties, from the per-class NCP every generalization form already reports
(:class:`anonkit.generalization.ColumnGeneralization.loss`):

- **NCP** (normalised certainty penalty) of one QI in one class: numeric range width /
  domain width, categorical ``(|covered| - 1) / (|domain| - 1)``, and with a hierarchy
  ``(leaves under the released node - 1) / (leaves - 1)``. 0 = value kept, 1 = fully
  suppressed.
- **GCP** (global certainty penalty, Ghinita et al. 2007): the NCP averaged over every
  released cell, i.e. the size-weighted mean over classes and QIs. A suppressed row counts
  as NCP 1 on every QI (it says nothing about its values), so suppressing cannot make GCP
  look better than generalizing.
- **DM** (discernibility metric, Bayardo & Agrawal 2005): every row is charged the size of
  its class, a suppressed row the size of the whole table: ``sum |E|^2 + s * n``.
- **C_avg** (normalised average class size, LeFevre et al. 2006): ``(rows / classes) / k``;
  1 is ideal, larger means coarser classes than the model requires.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from anonkit.generalization import ColumnGeneralization

__all__ = ["cavg", "discernibility", "gcp", "ncp", "suppression_rate"]

Losses = Sequence[ColumnGeneralization] | np.ndarray


def _loss_matrix(losses: Losses, n_classes: int) -> np.ndarray:
    """``(n_qis, n_classes)`` float matrix of NCPs from generalizations or an array."""
    if isinstance(losses, np.ndarray):
        matrix = np.asarray(losses, dtype=np.float64)
        if matrix.ndim == 1:
            matrix = matrix[None, :]
    else:
        rows = [np.asarray(g.loss, dtype=np.float64) for g in losses]
        matrix = np.stack(rows) if rows else np.zeros((0, n_classes))
    if matrix.ndim != 2 or matrix.shape[1] != n_classes:
        raise ValueError(f"loss has shape {matrix.shape}, expected (n_qis, {n_classes}): one "
                         f"NCP per quasi-identifier and class")
    return matrix


def _sizes(sizes: np.ndarray) -> np.ndarray:
    sizes = np.asarray(sizes, dtype=np.int64).reshape(-1)
    if (sizes < 0).any():
        raise ValueError("class sizes must be non-negative")
    return sizes


def ncp(losses: Losses, sizes: np.ndarray, *, suppressed: int = 0) -> np.ndarray:
    """Per QI, the NCP averaged over all rows (released and suppressed) -- which QIs pay.

    ``losses`` is a sequence of :class:`ColumnGeneralization` (one per QI) or an
    ``(n_qis, n_classes)`` array (1-D for a single QI) of per-class NCPs in [0, 1], for use
    with releases from other algorithms; ``sizes`` are the rows per class.
    """
    sizes = _sizes(sizes)
    matrix = _loss_matrix(losses, len(sizes))
    total = int(sizes.sum()) + suppressed
    if total == 0:
        return np.zeros(matrix.shape[0])
    return (matrix @ sizes + suppressed) / total


def gcp(losses: Losses, sizes: np.ndarray, *, suppressed: int = 0) -> float:
    """Global certainty penalty in [0, 1]: the mean NCP over every cell of the release.

    Equal to the mean over QIs of :func:`ncp`; see the module docstring for the inputs.
    A table without QIs has nothing generalized: 0.
    """
    per_qi = ncp(losses, sizes, suppressed=suppressed)
    return float(per_qi.mean()) if len(per_qi) else 0.0


def discernibility(sizes: np.ndarray, suppressed: int = 0, n_total: int | None = None) -> float:
    """DM: ``sum |E|^2`` over released classes plus ``suppressed * n_total``.

    ``n_total`` is the size of the input table, released plus suppressed rows unless given
    (a suppressed row is indistinguishable from every row of the table). Returned as a
    float: on a million rows the sum overflows nothing but is not JSON-exact as int anyway.
    """
    sizes = _sizes(sizes)
    if n_total is None:
        n_total = int(sizes.sum()) + suppressed
    return float(np.dot(sizes.astype(np.float64), sizes)) + float(suppressed) * n_total


def cavg(sizes: np.ndarray, k: int) -> float:
    """Normalised average class size ``(rows / classes) / k`` over released classes."""
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    sizes = _sizes(sizes)
    if len(sizes) == 0:
        return 0.0
    return float(sizes.sum()) / len(sizes) / k


def suppression_rate(released_rows: int, suppressed: int) -> float:
    """Share of the input's rows that were suppressed (left out of the release)."""
    total = released_rows + suppressed
    return suppressed / total if total else 0.0
