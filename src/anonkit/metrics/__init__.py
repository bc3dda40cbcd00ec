"""Utility and risk metrics of a release.

:func:`release_metrics` is what every method calls after generalizing: one flat dict of
floats (JSON-friendly keys) stored in :attr:`Release.metrics`. The pieces are
usable on their own, on any table: :mod:`anonkit.metrics.utility` (GCP / NCP, DM, C_avg)
and :mod:`anonkit.metrics.risk` (prosecutor, journalist, marketer, sample uniques).

Keys of :func:`release_metrics`:

- ``gcp`` and ``ncp.<column>`` per QI: certainty penalties in [0, 1];
- ``discernibility``, ``cavg``, ``suppression_rate``;
- ``n_rows`` (released), ``suppressed``, ``n_classes`` (classes as an adversary sees
  them: rows with equal released QI values), ``n_partitions`` (the algorithm's classes;
  more than ``n_classes`` when two partitions got the same labels);
- ``prosecutor.max`` / ``.avg`` / ``.records_at_risk``, the same for ``journalist``,
  ``marketer``, ``sample_uniques``, ``risk_threshold`` and, when given,
  ``population_size``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from anonkit.generalization import ColumnGeneralization
from anonkit.metrics.risk import (
    RiskFigures,
    journalist_risk,
    marketer_risk,
    population_class_sizes,
    population_sizes_from_table,
    prosecutor_risk,
    record_risks,
    risk_metrics,
    sample_uniques,
)
from anonkit.metrics.utility import cavg, discernibility, gcp, ncp, suppression_rate
from anonkit.release import Release

__all__ = [
    "RiskFigures",
    "cavg",
    "class_metrics",
    "discernibility",
    "gcp",
    "journalist_risk",
    "marketer_risk",
    "measure_classes",
    "measure_generalized",
    "ncp",
    "population_class_sizes",
    "population_sizes_from_table",
    "prosecutor_risk",
    "record_risks",
    "release_metrics",
    "risk_metrics",
    "sample_uniques",
    "suppression_rate",
]


def release_metrics(
    generalized: Sequence[ColumnGeneralization],
    algorithm_sizes: np.ndarray,
    released_sizes: np.ndarray,
    k: int,
    *,
    suppressed: int = 0,
    population_size: int | None = None,
    risk_threshold: float = 0.2,
) -> dict[str, float]:
    """Utility and risk of a release, as a flat dict of floats.

    Args:
        generalized: one :class:`ColumnGeneralization` per QI, over the algorithm's classes.
        algorithm_sizes: rows per algorithm class (aligned with ``generalized``'s arrays):
            the certainty penalties are weighted by these.
        released_sizes: rows per class as an adversary sees them (grouped by released
            labels, e.g. :attr:`CheckReport.class_sizes`): DM, C_avg and risk use these,
            since two partitions with equal labels are one class to anyone reading the file.
        k: the smallest class size the models require (normalises C_avg).
        suppressed: input rows left out of the release (NCP 1, charged ``n`` each in DM).
        population_size: size of the population the input was drawn from; without it the
            input is taken as the population (see :mod:`anonkit.metrics.risk`).
        risk_threshold: a record is "at risk" when its risk exceeds this.
    """
    algorithm_sizes = np.asarray(algorithm_sizes, dtype=np.int64)
    released_sizes = np.asarray(released_sizes, dtype=np.int64)
    n_rows = int(released_sizes.sum())
    if int(algorithm_sizes.sum()) != n_rows:
        raise ValueError(f"the algorithm's classes hold {int(algorithm_sizes.sum())} rows but "
                         f"the released classes {n_rows}; both must count the released rows")
    per_qi = ncp(generalized, algorithm_sizes, suppressed=suppressed)
    out: dict[str, float] = {
        "gcp": float(per_qi.mean()) if len(per_qi) else 0.0,
        **{f"ncp.{g.column}": float(v) for g, v in zip(generalized, per_qi, strict=True)},
    }
    for key, value in class_metrics(released_sizes, k, suppressed=suppressed,
                                    population_size=population_size,
                                    risk_threshold=risk_threshold).items():
        out[key] = value
        if key == "n_classes":
            out["n_partitions"] = float(np.count_nonzero(algorithm_sizes))
    return out


def class_metrics(released_sizes: np.ndarray, k: int, *, suppressed: int = 0,
                  population_size: int | None = None,
                  risk_threshold: float = 0.2) -> dict[str, float]:
    """The figures any release has, whatever its kind: from the rows per class as an
    adversary groups them (DM, C_avg, suppression, prosecutor / journalist / marketer risk,
    sample uniques). :func:`release_metrics` adds the generalization's information loss."""
    released_sizes = np.asarray(released_sizes, dtype=np.int64)
    n_rows = int(released_sizes.sum())
    if suppressed < 0:
        raise ValueError(f"suppressed must be >= 0, got {suppressed}")
    n_total = n_rows + suppressed
    out: dict[str, float] = {
        "discernibility": discernibility(released_sizes, suppressed, n_total),
        "cavg": cavg(released_sizes, k),
        "suppression_rate": suppression_rate(n_rows, suppressed),
        "n_rows": float(n_rows),
        "suppressed": float(suppressed),
        "n_classes": float(np.count_nonzero(released_sizes)),
    }
    out |= risk_metrics(released_sizes, threshold=risk_threshold,
                        population_size=population_size, sample_size=n_total)
    if population_size is not None:
        out["population_size"] = float(population_size)
    return out


def released_sizes(release: Release) -> np.ndarray:
    """Rows per class of a verified release, as an adversary groups them."""
    return np.bincount(release.class_ids, minlength=len(release.classes)).astype(np.int64)


def required_class_size(release: Release) -> int:
    """The least class size the release's models ask for (the k of C_avg)."""
    return max(m.min_class_size() for m in release.models)


def measure_generalized(release: Release, generalized: Sequence[ColumnGeneralization],
                        algorithm_sizes: np.ndarray) -> None:
    """Set a verified generalized release's figures (:func:`release_metrics`, with the k
    its models ask for), timed as ``metrics``."""
    t0 = time.perf_counter()
    release.metrics = release_metrics(generalized, algorithm_sizes, released_sizes(release),
                                      k=required_class_size(release))
    release.timings["metrics"] = time.perf_counter() - t0


def measure_classes(release: Release) -> None:
    """Give a verified release that measured nothing the figures every release has
    (:func:`class_metrics`); a release with figures keeps them."""
    if not release.metrics and release.models:
        release.metrics = class_metrics(released_sizes(release), required_class_size(release))
