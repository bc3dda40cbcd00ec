"""Individual and global re-identification risk of a sample, as statistical offices measure it
(Benedetti & Franconi 1998; Franconi & Polettini 2004; sdcMicro's ``indivRisk`` with
``method = "approx"`` and ``measure_risk``).

A record's class has ``f_k`` rows in the sample and, estimated from the survey weights, ``F_k =
sum of the class's weights`` people in the population. With ``p_k = f_k / F_k``, the risk
that the record is re-identified by someone who matches it against the population is the
posterior mean of ``1/F`` given the sample (a negative binomial model), approximated as:

- ``f_k = 1``: ``p / (1 - p) * ln(1 / p)``;
- ``f_k = 2``: ``p / (1 - p) - (p / (1 - p))**2 * ln(1 / p)``;
- ``f_k > 2``: ``p / (f_k - (1 - p))``;
- ``f_k = F_k`` (the whole population is in the sample): ``1 / f_k``.

Without weights the sample is the population and the risk is ``1 / f_k`` (prosecutor). The
**global risk** is the expected number of re-identifications, the sum of the individual
risks, and its share of the records. A **household's risk** (sdcMicro's hierarchical risk) is
the chance that at least one of its members is re-identified, ``1 - prod(1 - r_i)``, which
every member takes. Everything is vectorised over classes and households.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from anonkit.errors import InputError


class IndividualRisk(NamedTuple):
    """Per record its risk; the expected re-identifications and their share of records."""

    risk: np.ndarray  # per record, in [0, 1]
    expected_reidentifications: float
    global_risk: float  # expected_reidentifications / records

    def riskiest(self, n: int = 10) -> np.ndarray:
        """The rows of the ``n`` highest risks, highest first (row numbers, never values)."""
        order = np.argsort(-self.risk, kind="stable")
        return order[:n]


def individual_risk(class_ids: np.ndarray, weights: np.ndarray | None = None
                    ) -> IndividualRisk:
    """The individual risk of every record of a sample whose records fall in the classes
    ``class_ids`` (one id per record, ``0 .. n_classes - 1``), each standing for ``weights``
    people of the population (survey weights, each >= 1; None: the sample is the
    population)."""
    ids = np.asarray(class_ids, dtype=np.int64)
    if len(ids) == 0:
        return IndividualRisk(np.zeros(0), 0.0, 0.0)
    sample = np.bincount(ids).astype(np.float64)  # f_k
    if weights is None:
        per_class = 1.0 / np.maximum(sample, 1.0)
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != ids.shape:
            raise InputError(f"the weights have {w.size} entries but the sample has "
                             f"{ids.size} records; give one weight per record")
        bad = ~np.isfinite(w) | (w < 1.0)
        if bad.any():
            raise InputError(f"survey weights must be numbers >= 1 (a record stands for at "
                             f"least itself); row {int(np.argmax(bad))} has a weight below 1 "
                             f"or none")
        population = np.bincount(ids, weights=w, minlength=len(sample))  # F_k
        per_class = _approx_risk(sample, population)
    risk = per_class[ids]
    expected = float(risk.sum())
    return IndividualRisk(risk, expected, expected / len(ids))


def _approx_risk(sample: np.ndarray, population: np.ndarray) -> np.ndarray:
    """Benedetti and Franconi's approximation, per class (see the module)."""
    used = sample > 0  # (ids need not be dense: a class id no record has is skipped)
    p = np.divide(sample, population, out=np.ones_like(sample), where=used)
    whole = p >= 1.0  # F_k = f_k: the class's people are all in the sample
    q = np.where(whole, 0.5, p)  # (any value in (0, 1): those classes are set below)
    odds = q / (1.0 - q)
    log_inverse = np.log(1.0 / q)
    # near p = 1 (a population barely larger than the sample) the closed forms cancel
    # catastrophically (f = 2: odds ~ 1e16 minus odds**2 ln(1/p) ~ 1e16); with x = 1 - p
    # they are (1 - x) * sum_j x**j / (j + 1) and (1 - x) - (1 - x)**2 * sum_j x**j / (j + 2),
    # whose series to x**6 are exact to double precision for x < 1e-3
    x = np.where(whole, 0.0, 1.0 - q)
    powers = x[:, None] ** np.arange(7)
    one = (1.0 - x) * (powers / np.arange(1, 8)).sum(axis=1)
    two = (1.0 - x) - (1.0 - x) ** 2 * (powers / np.arange(2, 9)).sum(axis=1)
    near = x < 1e-3
    risk = np.where(sample == 1, np.where(near, one, odds * log_inverse),
                    np.where(sample == 2, np.where(near, two, odds - odds ** 2 * log_inverse),
                             q / (sample - (1.0 - q))))
    risk = np.where(whole, 1.0 / np.maximum(sample, 1.0), risk)
    return np.where(used, risk, 0.0)


def household_risk(risk: np.ndarray, household_ids: np.ndarray) -> IndividualRisk:
    """Every record's household risk, ``1 - prod(1 - r_i)`` over its household's members
    (``household_ids``: one id per record, ``0 .. n_households - 1``), and the expected
    re-identifications it gives (sdcMicro's ``hier_risk_ER``)."""
    r = np.asarray(risk, dtype=np.float64)
    ids = np.asarray(household_ids, dtype=np.int64)
    if ids.shape != r.shape:
        raise InputError(f"the households have {ids.size} entries but the sample has "
                         f"{r.size} records; give one household per record")
    if len(r) == 0:
        return IndividualRisk(np.zeros(0), 0.0, 0.0)
    with np.errstate(divide="ignore"):  # a member at risk 1 makes the household's 1
        kept = np.bincount(ids, weights=np.log1p(-np.minimum(r, 1.0)))
    per_household = -np.expm1(kept)
    out = per_household[ids]
    expected = float(out.sum())
    return IndividualRisk(out, expected, expected / len(r))


def class_risk(sample_sizes: np.ndarray, population_sizes: np.ndarray) -> np.ndarray:
    """Benedetti and Franconi's risk of a record in each class, from the class's rows in the
    sample (``f_k``) and its estimated people in the population (``F_k >= f_k``)."""
    return _approx_risk(np.asarray(sample_sizes, dtype=np.float64),
                        np.asarray(population_sizes, dtype=np.float64))
