"""Re-identification risk against a population, as privacy models: population uniqueness
(ARX's criterion), k-map (Sweeney; with a population table, or estimated as ARX's KMap
does), δ-presence (Nergiz, Atzori & Clifton, SIGMOD 2007) and individual risk (Benedetti &
Franconi, as sdcMicro measures it).

They need what a class alone does not say: the sampling fraction (or the population's
size), a population table, or survey weights. A model text (``k-map=5``) names the model;
:func:`bind_population` gives it that context, from the options ``--population``,
``--sampling-fraction``, ``--population-size`` and ``--weight``, and refuses a model left
without what it needs (never weakened to something else).

Monotonicity under merging two classes, declared for the algorithms:

- population uniqueness is a verdict on the whole table (``table_level``) and not monotone
  in general: merging classes changes the frequency-of-frequencies every estimator fits
  (ARX declares it monotone; we do not);
- k-map is monotone (a merged class covers the population rows of both), estimated or
  counted;
- δ-presence is not monotone (a merged class's share lies between its parts', but a class
  under ``δmin`` merged with another may stay under it, and the bounds are two-sided);
- individual risk is monotone for generalization (a merged class has more rows and more
  people; Benedetti and Franconi's risk falls with both).

k-map and individual risk are also monotone with suppression (more rows in a class never
hurt); δ-presence (a larger share can pass δmax) and population uniqueness are not.

A model that needs a population table or judges the table as a whole cannot be judged on a
candidate class while an algorithm builds it (:attr:`PrivacyModel.checkable_on_parts`):
the algorithm checks the finished partition, and the release is checked, as every release
is, before it is written.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from anonkit._util.numbers import exact_number, whole_number
from anonkit.errors import InputError
from anonkit.models.base import Classes, PrivacyModel, Verdict, real_number
from anonkit.models.individual_estimates import class_risk
from anonkit.models.population_estimates import (
    MODELS,
    PopulationUniqueness,
    population_uniqueness,
)
from anonkit.models.population_table import PopulationTable

if TYPE_CHECKING:
    from anonkit.hierarchy.base import Hierarchy

#: ARX's significance level for k-map estimated with a Poisson model
KMAP_SIGNIFICANCE = 0.01
#: k-map's cell-size estimators (El Emam & Dankar 2008's D3 and D4), the default first
KMAP_ESTIMATORS: tuple[str, ...] = ("poisson", "zero-truncated-poisson")


class RiskModel(PrivacyModel):
    """A model judged against the population (this module's four): it concerns no
    sensitive attribute, and says what context it still lacks."""

    @property
    def needs_sensitive(self) -> bool:
        return False

    def missing_context(self) -> str | None:
        """What the model needs and was not given, as the options to give (None: it has
        all it needs)."""
        return None


class _Sampling:
    """The sampling fraction or the population size a model was given, and the sample's
    size it is fixed to (:func:`fixed_to_sample`)."""

    sampling_fraction: float | None = None
    population_size: float | None = None
    sample_rows: int | None = None

    def _set_sampling(self, sampling_fraction: float | None,
                      population_size: float | None) -> None:
        if sampling_fraction is not None and population_size is not None:
            raise InputError("give the sampling fraction or the population size, not both")
        if sampling_fraction is not None:
            sampling_fraction = real_number("the sampling fraction", sampling_fraction, 0.0,
                                            1.0, low_open=True)
        if population_size is not None:
            population_size = real_number("the population size", population_size, 1.0)
        self.sampling_fraction = sampling_fraction
        self.population_size = population_size

    @property
    def has_sampling(self) -> bool:
        return self.sampling_fraction is not None or self.population_size is not None

    def fraction(self, n_rows: int) -> float:
        """The sampling fraction ``pi = n / N`` of a sample of ``n_rows`` (the size the
        model was fixed to, when it was)."""
        n = self.sample_rows if self.sample_rows is not None else n_rows
        if self.sampling_fraction is not None:
            return self.sampling_fraction
        assert self.population_size is not None
        if self.population_size < n:
            raise InputError(f"the population size {exact_number(self.population_size)} is "
                             f"smaller than the sample ({n} rows); give the size of the "
                             f"population the sample was drawn from")
        return n / self.population_size

    def _sampling_parameters(self) -> dict[str, object]:
        if self.sampling_fraction is not None:
            return {"sampling_fraction": self.sampling_fraction}
        if self.population_size is not None:
            return {"population_size": self.population_size}
        return {}


class PopulationUniquenessModel(_Sampling, RiskModel):
    """The estimated share of the population that is unique on the quasi-identifiers is at
    most the threshold (ARX's ``PopulationUniqueness`` criterion): the estimators of
    :mod:`anonkit.models.population_estimates` (``dankar``, ``pitman``, ``zayatz``,
    ``snb``) on the table's class sizes and the sampling fraction.

    A verdict on the whole table (``table_level``): every class shares the table's level.
    An estimator whose fit fails gives no figure, and the model then fails (``dankar``
    always gives one). Compared exactly with the threshold."""

    name = "population uniqueness"
    measure = "population-unique share"
    higher_is_better = False
    monotonic = False
    table_level = True
    text_keys = ("population-uniqueness",)
    text_numbers = ("threshold",)
    text_options: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "model": ("dankar", *[m for m in MODELS if m != "dankar"])}

    def __init__(self, threshold: float, model: str = "dankar", *,
                 sampling_fraction: float | None = None,
                 population_size: float | None = None) -> None:
        self.share = real_number("population-uniqueness", threshold, 0.0, 1.0)
        if model not in MODELS:
            raise InputError(f"population-uniqueness: unknown model {model!r}; use one of "
                             f"{', '.join(MODELS)}")
        self.model = model
        self._set_sampling(sampling_fraction, population_size)

    @classmethod
    def from_text(cls, key: str, numbers: Sequence[float],
                  options: Mapping[str, str]) -> PrivacyModel:
        return cls(numbers[0], options.get("model", "dankar"))

    def text_option_values(self) -> dict[str, str]:
        return {"model": self.model}

    @property
    def threshold(self) -> float:
        return self.share

    @property
    def parameters(self) -> dict[str, object]:
        return {"threshold": self.share, "model": self.model, **self._sampling_parameters()}

    def missing_context(self) -> str | None:
        if not self.has_sampling:
            return "the sampling fraction (--sampling-fraction F) or the population size " \
                   "(--population-size N)"
        return None

    def estimate(self, classes: Classes) -> PopulationUniqueness:
        n = int(classes.sizes.sum())
        self._require_sampling()
        pi = self.fraction(n)
        return population_uniqueness(classes.sizes, pi, model=self.model)  # type: ignore[arg-type]

    def _require_sampling(self) -> None:
        missing = self.missing_context()
        if missing is not None:
            raise InputError(f"{self.title()} needs {missing}")

    def levels(self, classes: Classes) -> np.ndarray:
        share = self.estimate(classes).share
        return np.full(classes.n_classes, share if math.isfinite(share) else math.nan)

    def verdict(self, classes: Classes) -> Verdict:
        if classes.n_classes == 0:
            return super().verdict(classes)
        found = self.estimate(classes)
        share = found.share if found.converged and math.isfinite(found.share) else math.nan
        passed = bool(self.satisfied(np.array([share]))[0])
        sizes = classes.sizes
        worst = int(np.argmin(sizes))
        return Verdict(self.name, self.parameters, passed, share, self.share, worst,
                       int(sizes[worst]), 0 if passed else found.sample_uniques,
                       classes.n_classes, self.measure, self.comparison,
                       {"estimator": found.model, "population_uniques": found.uniques,
                        "sample_uniques": found.sample_uniques,
                        "sampling_fraction": found.sampling_fraction,
                        "population_size": found.population_size})


class KMap(_Sampling, RiskModel):
    """k-map (Sweeney): every class matches at least k people of the population.

    With a population table, a class's level is the number of the table's rows its released
    labels cover (counted by the checker); compared exactly with k. Without one, as ARX's
    ``KMap`` with a cell-size estimator (El Emam & Dankar 2008: D3 Poisson, D4
    zero-truncated Poisson, with ARX's significance level 0.01): the population count of a
    class is modelled as Poisson with mean ``pi * k``, and a class passes when it has at
    least ``k' = min(k, n, the smallest count whose cumulative probability reaches
    1 - 0.01, plus one as ARX counts)`` rows in the sample; the verdict reports k'.
    Monotone either way."""

    name = "k-map"
    measure = "population count"
    # more rows in a class never lower its population count (nor fall below k')
    monotonic_with_suppression = True
    text_keys = ("k-map",)
    text_numbers = ("k",)
    text_options: ClassVar[Mapping[str, tuple[str, ...]]] = {"estimator": KMAP_ESTIMATORS}

    def __init__(self, k: int, estimator: str = "poisson", *,
                 population: PopulationTable | None = None,
                 sampling_fraction: float | None = None,
                 population_size: float | None = None,
                 significance: float = KMAP_SIGNIFICANCE) -> None:
        self.k = whole_number("k-map", k, "python", 1)
        if estimator not in KMAP_ESTIMATORS:
            raise InputError(f"k-map: unknown estimator {estimator!r}; use one of "
                             f"{', '.join(KMAP_ESTIMATORS)}")
        self.estimator = estimator
        self.population = population
        self.significance = real_number("k-map's significance level", significance, 0.0,
                                        1.0, low_open=True, high_open=True)
        self._set_sampling(sampling_fraction, population_size)

    @classmethod
    def from_text(cls, key: str, numbers: Sequence[float],
                  options: Mapping[str, str]) -> PrivacyModel:
        return cls(numbers[0], options.get("estimator", "poisson"))  # type: ignore[arg-type]

    def text_option_values(self) -> dict[str, str]:
        return {"estimator": self.estimator}

    @property
    def estimated(self) -> bool:
        return self.population is None

    @property
    def population_table(self) -> PopulationTable | None:
        return self.population

    @property
    def threshold(self) -> float:
        if self.estimated and (self.sample_rows is not None
                               or self.sampling_fraction is not None):
            return self.derived_k()
        return self.k

    @property
    def parameters(self) -> dict[str, object]:
        if not self.estimated:
            return {"k": self.k}
        return {"k": self.k, "estimator": self.estimator, **self._sampling_parameters()}

    def missing_context(self) -> str | None:
        if self.population is None and not self.has_sampling:
            return "a population table (--population FILE) or the sampling fraction " \
                   "(--sampling-fraction F) or the population size (--population-size N) " \
                   "to estimate one"
        return None

    def derived_k(self, n_rows: int | None = None) -> int:
        """ARX's k' (``KMap.calculateKPoisson`` / ``calculateKZeroPoisson``): the class
        size in the sample from which the estimated population count reaches k, for a
        sample of ``n_rows`` (the size the model was fixed to, when it was)."""
        missing = self.missing_context()
        if missing is not None:
            raise InputError(f"{self.title()} needs {missing}")
        n = self.sample_rows if self.sample_rows is not None else n_rows
        if n is None and self.sampling_fraction is None:
            raise InputError(f"{self.title()}: the sampling fraction depends on the "
                             f"sample's size; judge a table (or give the sampling fraction)")
        derived = poisson_k(self.fraction(n or 0) * self.k, self.significance,
                            self.estimator == "zero-truncated-poisson")
        return min(self.k, derived, n) if n else min(self.k, derived)

    def min_class_size(self) -> int:
        return self.derived_k() if self.estimated and self.sample_rows is not None else 1

    def levels(self, classes: Classes) -> np.ndarray:
        if self.estimated:
            return classes.sizes.astype(np.float64)
        return population_counts(classes, self).astype(np.float64)

    def passing(self, classes: Classes, levels: np.ndarray) -> np.ndarray:
        if self.estimated:
            return levels >= self.derived_k(int(classes.sizes.sum()))
        return levels >= self.k

    def details(self, classes: Classes, levels: np.ndarray, worst: int) -> dict[str, object]:
        if self.estimated:
            return {"estimated_k": self.derived_k(int(classes.sizes.sum())),
                    "significance": self.significance}
        return {"population_rows": self.population.n_rows if self.population else 0}

    def verdict(self, classes: Classes) -> Verdict:
        out = super().verdict(classes)
        if self.estimated and classes.n_classes:
            # the level is the class's rows in the sample, compared with k'
            derived = self.derived_k(int(classes.sizes.sum()))
            return Verdict(out.model, out.parameters, out.passed, out.measured, derived,
                           out.worst_class, out.worst_class_size, out.failing_classes,
                           out.n_classes, "sample count (estimated k')", out.comparison,
                           out.details)
        return out


def poisson_k(mean: float, significance: float, zero_truncated: bool) -> int:
    """ARX's derived k for a Poisson (or zero-truncated Poisson) population count of mean
    ``mean``: the first count whose cumulative probability reaches ``1 - significance``,
    plus one (Poisson; as ``KMap.calculateKPoisson`` returns it) or itself (zero-truncated;
    ``calculateKZeroPoisson``)."""
    from scipy import special  # (imported when used: scipy costs every command 0.1 s)
    target = 1.0 - significance
    if not zero_truncated:
        counter, value = 0, 0.0
        while value < target:
            value = float(special.pdtr(counter, mean))
            counter += 1
        return counter + 1
    above_zero = -math.expm1(-mean)
    counter, value = 1, 0.0
    while value < target:
        value += _poisson_pmf(counter, mean) / above_zero
        counter += 1
    return counter


def _poisson_pmf(count: int, mean: float) -> float:
    return math.exp(count * math.log(mean) - mean - math.lgamma(count + 1)) if mean > 0 \
        else float(count == 0)


def population_counts(classes: Classes, model: PrivacyModel) -> np.ndarray:
    """Each class's rows in the model's population table, as the checker measured them; an
    error when nothing measured them (an algorithm cannot, before labels exist)."""
    table = model.population_table
    assert table is not None
    counts = classes.population_counts.get(id(table))
    if counts is None:
        raise InputError(f"{model.title()} counts the rows of {table.source} that each "
                         f"class's released labels cover, which nobody measured here: it is "
                         f"judged on a release (checkable_on_parts is False), not on classes "
                         f"an algorithm is still building")
    return counts


class DeltaPresence(RiskModel):
    """δ-presence (Nergiz, Atzori & Clifton, SIGMOD 2007): for every class,
    ``δmin <= (the class's rows in the released sample) / (the population rows its labels
    cover) <= δmax``, against a population table that holds the sample.

    The level is that share; the verdict reports the class furthest outside the bounds
    and, in its details, the smallest and largest share. A class whose labels cover no
    population row has share infinity (the population does not hold the sample): it
    fails. Compared exactly. Not monotone."""

    name = "δ-presence"
    measure = "δ"
    monotonic = False
    text_keys = ("delta-presence",)
    text_numbers = ("delta_min", "delta_max")

    def __init__(self, delta_min: float, delta_max: float, *,
                 population: PopulationTable | None = None) -> None:
        self.delta_min = real_number("δ-presence's δmin", delta_min, 0.0, 1.0)
        self.delta_max = real_number("δ-presence's δmax", delta_max, 0.0, 1.0)
        if self.delta_max < self.delta_min:
            raise InputError(f"δ-presence: δmax {exact_number(delta_max)} is below δmin "
                             f"{exact_number(delta_min)}; write delta-presence=MIN,MAX")
        self.population = population

    @property
    def threshold(self) -> float:
        return self.delta_max

    @property
    def parameters(self) -> dict[str, object]:
        return {"delta_min": self.delta_min, "delta_max": self.delta_max}

    @property
    def population_table(self) -> PopulationTable | None:
        return self.population

    def missing_context(self) -> str | None:
        return "a population table (--population FILE)" if self.population is None else None

    def levels(self, classes: Classes) -> np.ndarray:
        if self.population is None:
            raise InputError(f"{self.title()} needs {self.missing_context()}")
        counts = population_counts(classes, self).astype(np.float64)
        sizes = classes.sizes.astype(np.float64)
        with np.errstate(divide="ignore"):
            return np.where(counts > 0, sizes / np.where(counts > 0, counts, 1.0), np.inf)

    def passing(self, classes: Classes, levels: np.ndarray) -> np.ndarray:
        return (levels >= self.delta_min) & (levels <= self.delta_max)

    def verdict(self, classes: Classes) -> Verdict:
        if classes.n_classes == 0:
            return super().verdict(classes)
        levels = self.levels(classes)
        ok = self.passing(classes, levels)
        above = levels - self.delta_max
        below = self.delta_min - levels
        worst = int(np.argmax(np.maximum(above, below)))
        low_side = bool(below[worst] > above[worst])
        return Verdict(self.name, self.parameters, bool(ok.all()), float(levels[worst]),
                       self.delta_min if low_side else self.delta_max, worst,
                       int(classes.sizes[worst]), int((~ok).sum()), classes.n_classes,
                       self.measure, ">=" if low_side else "<=",
                       {"smallest_delta": float(levels.min()),
                        "largest_delta": float(levels.max())})


class IndividualRiskModel(_Sampling, RiskModel):
    """Every record's individual risk (Benedetti & Franconi, sdcMicro's ``indivRisk``,
    :mod:`anonkit.models.individual_estimates`) is at most the threshold.

    A class of ``f`` rows stands for ``F`` people: the sum of its rows' survey weights
    (``--weight``), or ``f / pi`` with a sampling fraction (every row weighs ``1 / pi``),
    or ``f`` when neither is given (the sample is the population: risk ``1 / f``). All the
    records of a class share its risk, so the level is per class. Float risks are compared
    with a relative tolerance of 1e-9. Monotone for generalization."""

    name = "individual risk"
    measure = "risk"
    higher_is_better = False
    # more rows (and people) in a class lower its risk
    monotonic_with_suppression = True
    tolerance = 1e-9
    text_keys = ("individual-risk",)
    text_numbers = ("threshold",)

    def __init__(self, threshold: float, *, weight: str | None = None,
                 sampling_fraction: float | None = None,
                 population_size: float | None = None) -> None:
        self.risk = real_number("individual-risk", threshold, 0.0, 1.0)
        self.weight = weight
        self._set_sampling(sampling_fraction, population_size)

    @property
    def threshold(self) -> float:
        return self.risk

    @property
    def parameters(self) -> dict[str, object]:
        extra: dict[str, object] = {"weight": self.weight} if self.weight else \
            self._sampling_parameters()
        return {"threshold": self.risk, **extra}

    @property
    def weight_column(self) -> str | None:
        return self.weight

    def levels(self, classes: Classes) -> np.ndarray:
        sizes = classes.sizes.astype(np.float64)
        if self.weight is not None:
            if classes.weights is None:
                raise InputError(f"{self.title()} reads the weights in column "
                                 f"{self.weight!r}, which were not given")
            people = np.bincount(classes.class_ids, weights=classes.weights,
                                 minlength=classes.n_classes)
        elif self.has_sampling:
            people = sizes / self.fraction(int(sizes.sum()))
        else:
            return 1.0 / np.maximum(sizes, 1.0)
        return class_risk(sizes, np.maximum(people, sizes))


#: the models of this module, which need context besides their text
RISK_MODELS: tuple[type[RiskModel], ...] = (PopulationUniquenessModel, KMap, DeltaPresence,
                                             IndividualRiskModel)


def bind_population(models: Sequence[PrivacyModel], *,
                    population: PopulationTable | None = None,
                    sampling_fraction: float | None = None,
                    population_size: float | None = None,
                    weight: str | None = None) -> list[PrivacyModel]:
    """The models with the context the options give: the population table (k-map,
    δ-presence), the sampling fraction or population size (population uniqueness, k-map
    estimated, individual risk) and the weight column (individual risk). A context a model
    was built with is kept. A model left without what it needs is an error naming the
    option to give; so is a context no model reads (it would be ignored silently)."""
    if sampling_fraction is not None and population_size is not None:
        raise InputError("give --sampling-fraction or --population-size, not both")
    out: list[PrivacyModel] = []
    used = {"population": False, "sampling": False, "weight": False}
    for model in models:
        if not isinstance(model, RISK_MODELS):
            out.append(model)
            continue
        bound = copy.copy(model)
        if isinstance(bound, KMap | DeltaPresence) and population is not None:
            if bound.population is None:
                bound.population = population
            used["population"] = True
        if isinstance(bound, _Sampling) and (sampling_fraction is not None
                                             or population_size is not None):
            if not bound.has_sampling:
                bound._set_sampling(sampling_fraction, population_size)
            # k-map against a table reads no sampling fraction
            used["sampling"] |= not (isinstance(bound, KMap) and not bound.estimated)
        if isinstance(bound, IndividualRiskModel) and weight is not None:
            if bound.weight is None:
                bound.weight = weight
            used["weight"] = True
        missing = bound.missing_context()
        if missing is not None:
            raise InputError(f"{bound.title()} needs {missing}")
        out.append(bound)
    unused = [flag for flag, given, key in (
        ("--population", population is not None, "population"),
        ("--sampling-fraction / --population-size",
         sampling_fraction is not None or population_size is not None, "sampling"),
        ("--weight", weight is not None, "weight")) if given and not used[key]]
    if unused:
        raise InputError(f"{unused[0]} is given but no model reads it; it is read by "
                         f"k-map=K, delta-presence=MIN,MAX, population-uniqueness=SHARE "
                         f"and individual-risk=RISK")
    return out


def fixed_to_sample(models: Sequence[PrivacyModel], n_rows: int) -> list[PrivacyModel]:
    """The models with the sample's size fixed where a model's thresholds depend on it
    (through ``pi = n / N``): an algorithm judging parts of the table judges each as a part
    of the whole."""
    out: list[PrivacyModel] = []
    for model in models:
        if isinstance(model, _Sampling) and model.sample_rows is None:
            model = copy.copy(model)
            model.sample_rows = n_rows  # type: ignore[attr-defined]
        out.append(model)
    return out


def with_population_hierarchies(models: Sequence[PrivacyModel],
                                hierarchies: Mapping[str, Hierarchy]) -> list[PrivacyModel]:
    """The models with their population tables reading hierarchy labels of the
    quasi-identifiers' ``hierarchies`` (one table stays one table for all its models)."""
    if not hierarchies:
        return list(models)
    tables: dict[int, PopulationTable] = {}
    out: list[PrivacyModel] = []
    for model in models:
        if isinstance(model, KMap | DeltaPresence) and model.population is not None:
            key = id(model.population)
            if key not in tables:
                tables[key] = model.population.with_hierarchies(hierarchies)
            model = copy.copy(model)
            model.population = tables[key]
        out.append(model)
    return out
