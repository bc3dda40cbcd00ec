"""Re-identification risk of a release, from its class sizes as an adversary sees them.

An adversary who knows a person's quasi-identifier values finds the class that matches
them; if that class has ``f`` rows in the release (and ``F`` people in the population),
picking one at random re-identifies the person with probability ``1/f`` (``1/F``). The
three classic adversaries (El Emam & Dankar 2008; ARX's risk analysis) differ in what they
know:

- **prosecutor**: knows the target *is in the release*: per record risk ``1/f_j``. We
  report the highest risk (``1 / smallest class``), the average over records
  (``classes / rows``) and the share of records whose risk exceeds a threshold
  (strictly: with the default 0.2, a class of 5 is not at risk, one of 4 is).
- **journalist**: knows the target is in the *population*, not whether in the release:
  per record risk ``1/F_j``. Same three figures.
- **marketer**: wants to re-identify as many records as possible, not one target: the
  expected share re-identified, ``(1/n) * sum_j f_j / F_j``.

Population class sizes ``F_j``, in order of preference:

1. given per class (``population_sizes``), e.g. counted in a population table generalized
   like the release (:func:`population_sizes_from_table`);
2. estimated from a population size ``N`` alone by scaling every class with the inverse
   sampling fraction, ``F_j = f_j * N / n`` (``n`` = rows of the input table, released plus
   suppressed). This is the simple uniform-sampling estimate: unbiased for the class
   totals, but it ignores that small sample classes are more often population uniques
   (ARX's Pitman / Zayatz / SNB models do better), so treat the journalist and marketer
   figures it gives as indicative;
3. otherwise the population *is* the release (``F_j = f_j``): journalist = prosecutor and
   marketer = ``classes / rows``.

Sample uniques are the share of records alone in their class (``f_j = 1``), the records a
prosecutor re-identifies with certainty.

Everything is vectorised over classes; per-record arrays are only built for plots.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from anonkit._util.grouping import group_rows
from anonkit.errors import InputError

__all__ = [
    "RiskFigures",
    "journalist_risk",
    "marketer_risk",
    "population_class_sizes",
    "population_sizes_from_table",
    "prosecutor_risk",
    "record_risks",
    "risk_metrics",
    "sample_uniques",
]

DEFAULT_THRESHOLD = 0.2


class RiskFigures(NamedTuple):
    """The three per-record summaries of one adversary model."""

    max: float  # highest risk of any record
    avg: float  # mean risk over the release's records
    records_at_risk: float  # share of records whose risk exceeds the threshold


def _sizes(sizes: np.ndarray) -> np.ndarray:
    sizes = np.asarray(sizes, dtype=np.int64).reshape(-1)
    if (sizes < 0).any():
        raise ValueError("class sizes must be non-negative")
    return sizes[sizes > 0]  # an empty class holds no record and carries no risk


def _check_threshold(threshold: float) -> None:
    if not 0 < threshold <= 1:
        raise InputError(f"risk threshold must be in (0, 1], got {threshold}")


def record_risks(class_ids: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per record, its prosecutor risk ``1 / size of its class`` (for histograms).

    ``class_ids[i]`` indexes ``sizes``; e.g. ``group_rows(released, qis)`` gives both.
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    return 1.0 / sizes[np.asarray(class_ids, dtype=np.int64)]


def population_class_sizes(sizes: np.ndarray, *, population_size: int | None = None,
                           population_sizes: np.ndarray | None = None,
                           sample_size: int | None = None) -> np.ndarray:
    """``F_j`` per class (float), by the rules in the module docstring.

    ``sample_size`` is the input table's row count (default: the released rows); it sets
    the sampling fraction when only ``population_size`` is given.
    """
    f = np.asarray(sizes, dtype=np.int64).reshape(-1)
    if population_sizes is not None:
        big_f = np.asarray(population_sizes, dtype=np.float64).reshape(-1)
        if big_f.shape != f.shape:
            raise InputError(f"population_sizes has {len(big_f)} classes, the release has "
                             f"{len(f)}: give one population count per released class")
        if (big_f < f).any():
            j = int(np.flatnonzero(big_f < f)[0])
            raise InputError(f"class {j} has {f[j]} rows in the release but only "
                             f"{big_f[j]:g} in the population; the population must contain "
                             f"the sample")
        return big_f
    n = int(f.sum()) if sample_size is None else int(sample_size)
    if population_size is None or n == 0:
        return f.astype(np.float64)
    if population_size < n:
        raise InputError(f"population size {population_size} is smaller than the table "
                         f"({n} rows); give the size of the population the table was "
                         f"drawn from")
    return f * (population_size / n)


def _figures(per_class: np.ndarray, weights: np.ndarray, threshold: float) -> RiskFigures:
    """Record-weighted max / mean / share above ``threshold`` of a per-class risk."""
    n = weights.sum()
    if n == 0:
        return RiskFigures(0.0, 0.0, 0.0)
    return RiskFigures(float(per_class.max()), float(np.dot(per_class, weights) / n),
                       float(weights[per_class > threshold].sum() / n))


def prosecutor_risk(sizes: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> RiskFigures:
    """Risk when the adversary knows the target is in the release (``1/f_j``)."""
    _check_threshold(threshold)
    f = _sizes(sizes)
    return _figures(1.0 / f, f, threshold)


def journalist_risk(sizes: np.ndarray, threshold: float = DEFAULT_THRESHOLD, *,
                    population_size: int | None = None,
                    population_sizes: np.ndarray | None = None,
                    sample_size: int | None = None) -> RiskFigures:
    """Risk when the adversary only knows the target is in the population (``1/F_j``)."""
    _check_threshold(threshold)
    f = np.asarray(sizes, dtype=np.int64).reshape(-1)
    big_f = population_class_sizes(f, population_size=population_size,
                                   population_sizes=population_sizes, sample_size=sample_size)
    keep = f > 0
    return _figures(1.0 / big_f[keep], f[keep], threshold)


def marketer_risk(sizes: np.ndarray, *, population_size: int | None = None,
                  population_sizes: np.ndarray | None = None,
                  sample_size: int | None = None) -> float:
    """Expected share of released records re-identified, ``(1/n) sum_j f_j / F_j``."""
    f = np.asarray(sizes, dtype=np.int64).reshape(-1)
    n = int(f.sum())
    if n == 0:
        return 0.0
    big_f = population_class_sizes(f, population_size=population_size,
                                   population_sizes=population_sizes, sample_size=sample_size)
    keep = f > 0
    return float(np.sum(f[keep] / big_f[keep]) / n)


def sample_uniques(sizes: np.ndarray) -> float:
    """Share of records that are alone in their class."""
    f = _sizes(sizes)
    n = f.sum()
    return float(np.count_nonzero(f == 1) / n) if n else 0.0


def risk_metrics(sizes: np.ndarray, *, threshold: float = DEFAULT_THRESHOLD,
                 population_size: int | None = None,
                 population_sizes: np.ndarray | None = None,
                 sample_size: int | None = None) -> dict[str, float]:
    """Every risk figure as a flat dict (``prosecutor.max``, ``journalist.avg``, ...)."""
    out: dict[str, float] = {}
    pop = {"population_size": population_size, "population_sizes": population_sizes,
           "sample_size": sample_size}
    for name, figures in (("prosecutor", prosecutor_risk(sizes, threshold)),
                          ("journalist", journalist_risk(sizes, threshold, **pop))):
        out |= {f"{name}.{key}": value for key, value in figures._asdict().items()}
    out["marketer"] = marketer_risk(sizes, **pop)
    out["sample_uniques"] = sample_uniques(sizes)
    out["risk_threshold"] = float(threshold)
    return out


def population_sizes_from_table(sample: pd.DataFrame, population: pd.DataFrame,
                                quasi_identifiers: Sequence[str]) -> np.ndarray:
    """Per class of ``sample`` (in :func:`anonkit._util.grouping.group_rows` order, the order of
    :attr:`CheckReport.class_sizes`), the number of ``population`` rows with the same
    quasi-identifier values.

    The population table must be generalized like the release (same labels), and contain
    the sample's people. One grouping pass over both tables; missing values match missing.
    """
    qis = list(quasi_identifiers)
    for name in qis:
        for label, frame in (("sample", sample), ("population", population)):
            if name not in frame.columns:
                raise InputError(f"quasi-identifier {name!r} is not a column of the {label} "
                                 f"table")
    # sample rows first: its classes keep their first-appearance numbering
    both = pd.concat([sample[qis].astype(object), population[qis].astype(object)],
                     ignore_index=True)
    ids, n_classes, _ = group_rows(both, qis)
    n_sample_classes = int(ids[: len(sample)].max()) + 1 if len(sample) else 0
    counts = np.bincount(ids[len(sample):], minlength=n_classes)
    return counts[:n_sample_classes].astype(np.int64)
