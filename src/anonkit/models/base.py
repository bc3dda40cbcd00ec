"""Privacy criteria as vectorised predicates over all equivalence classes at once.

A model (k-anonymity, l-diversity, t-closeness, ...) is a small object: its parameters, a
per-class *level* (the measured quantity: class size, number of distinct sensitive values,
EMD, ...), the direction in which a level is good, and declared properties algorithms use to
prune (``min_class_size``, ``monotonic``). Evaluation takes a :class:`Classes` — the classes
of a table given as one class id per row — and returns one level per class, computed with a
handful of numpy passes however many classes there are.
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from anonkit._util.numbers import exact_number, measured_text, whole_number
from anonkit.data.kinds import Kind
from anonkit.errors import InputError

if TYPE_CHECKING:  # types only: the models load without pandas
    from anonkit.data.encoding import EncodedColumn
    from anonkit.hierarchy.base import Hierarchy
    from anonkit.models.population_table import PopulationTable


@dataclass(frozen=True)
class SensitiveAttribute:
    """A sensitive column as codes, with what models need to know about its values.

    ``reference_counts`` is the distribution classes are compared with (t-closeness,
    δ-disclosure, β-likeness): the whole table's, also when an algorithm evaluates a part.
    """

    name: str
    codes: np.ndarray  # (n_rows,) int codes into ``values``
    values: np.ndarray  # decode table; ordered by value for numeric / ordinal / date
    kind: Kind
    reference_counts: np.ndarray  # (len(values),) counts over the reference table
    hierarchy: Hierarchy | None = None
    hierarchy_leaf: np.ndarray | None = None  # code -> hierarchy leaf index

    @classmethod
    def from_encoded(cls, column: EncodedColumn,
                     reference_counts: np.ndarray | None = None) -> SensitiveAttribute:
        """The attribute of an encoded column. ``reference_counts`` (one per code, e.g. an
        :class:`~anonkit.data.encoding.Encoding`'s) is the distribution to compare classes with;
        by default the column's own counts."""
        if reference_counts is None:
            counts = np.bincount(column.codes, minlength=column.cardinality)
        else:
            counts = np.asarray(reference_counts)
            if counts.shape != (column.cardinality,):
                raise InputError(
                    f"the reference counts for {column.name!r} have {counts.size} entries but "
                    f"the column has {column.cardinality} codes; take them from the encoding "
                    f"the column was encoded with")
        return cls(column.name, column.codes, column.values, column.kind, counts,
                   column.hierarchy, column.hierarchy_leaf)

    @property
    def n_values(self) -> int:
        return len(self.values)

    @cached_property
    def missing_code(self) -> int:
        """The code of a missing value (the last code, when the column has one), else -1."""
        if not self.n_values:
            return -1
        last = self.values[-1]
        missing = last is None or (isinstance(last, float) and math.isnan(last))
        return self.n_values - 1 if missing else -1

    @cached_property
    def magnitudes(self) -> np.ndarray:
        """Numeric position of each code (value for numeric, rank otherwise)."""
        if self.kind is Kind.NUMERIC:
            return np.asarray(self.values, dtype=np.float64)
        return np.arange(self.n_values, dtype=np.float64)

    @cached_property
    def decimal_places(self) -> int | None:
        """The fewest decimal places (at most 9) in which every magnitude is written
        exactly, i.e. is the float nearest such a decimal; None when none do, or when the
        magnitudes are too large to scale to exact integers."""
        return decimal_places(self.magnitudes)

    def value_range(self, high: np.ndarray, low: np.ndarray) -> np.ndarray:
        """``high - low`` for magnitudes ``high`` and ``low``, as the decimal difference the
        values stand for when they are decimals: a float subtraction of decimals carries
        noise (0.3 - 0.1 = 0.19999999999999998), and ranges are compared with thresholds
        exactly. Rounding to the values' own decimal places removes the noise."""
        spread = np.asarray(high, dtype=np.float64) - np.asarray(low, dtype=np.float64)
        places = self.decimal_places
        return spread if places is None else np.round(spread, places)

    def reordered(self, codes: np.ndarray) -> SensitiveAttribute:
        """The same attribute with other rows (same values and reference distribution)."""
        out = SensitiveAttribute(self.name, codes, self.values, self.kind,
                                 self.reference_counts, self.hierarchy, self.hierarchy_leaf)
        # what depends on the values only is kept: algorithms reorder once per round
        for name in ("magnitudes", "decimal_places"):
            if name in self.__dict__:
                out.__dict__[name] = self.__dict__[name]
        return out


def decimal_places(values: np.ndarray) -> int | None:
    """The fewest decimal places (at most 9) in which every finite value is written
    exactly (is the float nearest such a decimal); None when none do, or when the values
    are too large to scale to exact integers."""
    mags = np.asarray(values, dtype=np.float64)
    mags = mags[np.isfinite(mags)]
    for places in range(10):
        scale = 10.0 ** places
        scaled = mags * scale
        # below 2**50 a scaled value is within 0.5 of its integer, so rint finds it
        if len(mags) and np.abs(scaled).max() >= 2.0 ** 50:
            return None
        if (np.rint(scaled) / scale == mags).all():
            return places
    return None


@dataclass(frozen=True)
class ValueCounts:
    """Sparse per-class histogram of one sensitive attribute: one entry per (class, value)
    that occurs, sorted by class then value code."""

    class_index: np.ndarray
    value_code: np.ndarray
    count: np.ndarray
    n_classes: int

    @cached_property
    def starts(self) -> np.ndarray:
        """Offset of each class's first entry (every class has at least one entry)."""
        return np.searchsorted(self.class_index, np.arange(self.n_classes))

    def without(self, value_code: int) -> ValueCounts:
        """The same histogram without one value (e.g. the missing one); classes that held
        only that value keep no entry."""
        if value_code < 0:
            return self
        keep = self.value_code != value_code
        return ValueCounts(self.class_index[keep], self.value_code[keep], self.count[keep],
                           self.n_classes)

    def per_class_sum(self, x: np.ndarray) -> np.ndarray:
        return np.bincount(self.class_index, weights=x, minlength=self.n_classes)

    def per_class_max(self, x: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(x, self.starts) if len(x) else np.zeros(self.n_classes)

    def per_class_min(self, x: np.ndarray) -> np.ndarray:
        return np.minimum.reduceat(x, self.starts) if len(x) else np.zeros(self.n_classes)


class Classes:
    """Equivalence classes of a table: a class id per row plus the sensitive attributes.

    Empty classes are not allowed: ids must cover ``0 .. n_classes - 1``.
    """

    def __init__(self, class_ids: np.ndarray, n_classes: int | None = None,
                 sensitive: Sequence[SensitiveAttribute] = (), *,
                 weights: np.ndarray | None = None,
                 population_counts: Mapping[int, np.ndarray] | None = None) -> None:
        self.class_ids = np.asarray(class_ids, dtype=np.int64)
        self.n_classes = int(self.class_ids.max()) + 1 if n_classes is None else n_classes
        if len(self.class_ids) == 0:
            self.n_classes = 0
        self.sensitive = {s.name: s for s in sensitive}
        self._counts: dict[str, ValueCounts] = {}
        #: per row, the survey weight (people of the population it stands for), for the
        #: models that read weights; None when none was given
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        #: per population table (by ``id`` of its :class:`PopulationTable`), each class's
        #: rows in it, as the checker measures them from the released labels
        self.population_counts: dict[int, np.ndarray] = dict(population_counts or {})

    @classmethod
    def from_sizes(cls, sizes: np.ndarray,
                   sensitive: Sequence[SensitiveAttribute] = (), *,
                   weights: np.ndarray | None = None) -> Classes:
        """Classes laid out as consecutive runs of rows: ``sizes[c]`` rows of class c."""
        sizes = np.asarray(sizes, dtype=np.int64)
        ids = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        out = cls(ids, len(sizes), sensitive, weights=weights)
        out.__dict__["sizes"] = sizes
        return out

    @cached_property
    def sizes(self) -> np.ndarray:
        return np.bincount(self.class_ids, minlength=self.n_classes)

    def attribute(self, name: str | None) -> SensitiveAttribute:
        if name is None:
            if len(self.sensitive) != 1:
                raise ValueError("name the sensitive attribute: the table has "
                                 f"{len(self.sensitive)}")
            return next(iter(self.sensitive.values()))
        return self.sensitive[name]

    def value_counts(self, name: str | None = None) -> ValueCounts:
        attr = self.attribute(name)
        if attr.name not in self._counts:
            self._counts[attr.name] = _value_counts(self.class_ids, attr.codes,
                                                    self.n_classes, attr.n_values)
        return self._counts[attr.name]

    def distinct_values(self, name: str | None = None) -> np.ndarray:
        vc = self.value_counts(name)
        return np.bincount(vc.class_index, minlength=self.n_classes)


def _value_counts(class_ids: np.ndarray, codes: np.ndarray, n_classes: int,
                  n_values: int) -> ValueCounts:
    n_cells = n_classes * max(n_values, 1)
    if n_cells <= 4 * len(class_ids) + 1024:
        dense = np.bincount(class_ids * n_values + codes, minlength=n_cells)
        keys = np.flatnonzero(dense)
        counts = dense[keys]
    else:
        keys, counts = np.unique(class_ids * n_values + codes, return_counts=True)
    return ValueCounts(keys // n_values, keys % n_values, counts.astype(np.int64), n_classes)


@dataclass(frozen=True)
class CrossReleaseRequirement:
    """What a model promises about every record when releases are intersected: after an
    adversary combines everything published about a record, ``measure >= threshold``.

    Measures (computed by the cross-release audit over a record's intersected classes):
    ``candidates`` (people who could be the record), ``distinct`` (distinct sensitive values
    left, a missing value counting as a value), ``distinct_present`` (the same without the
    missing value) and ``range`` (max - min of the numeric values left). The audit always
    checks, besides these, that more than one value is left (no exact disclosure).
    """

    model: str  # the model's name, for messages
    measure: str
    threshold: float
    attribute: str | None = None  # the sensitive attribute it concerns (None: any / none)

    MEASURES: ClassVar[tuple[str, ...]] = ("candidates", "distinct", "distinct_present",
                                           "range")

    def __post_init__(self) -> None:
        if self.measure not in self.MEASURES:
            raise ValueError(f"unknown cross-release measure {self.measure!r}; one of "
                             f"{', '.join(self.MEASURES)}")

    def describe(self) -> str:
        noun = {"candidates": "candidates", "distinct": "distinct sensitive values",
                "distinct_present": "distinct sensitive values (missing not counted)",
                "range": "sensitive range"}[self.measure]
        return f"{noun} >= {exact_number(self.threshold)}"

    def to_dict(self) -> dict[str, object]:
        return {"model": self.model, "measure": self.measure, "threshold": self.threshold,
                "attribute": self.attribute}

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> CrossReleaseRequirement:
        return cls(str(d["model"]), str(d["measure"]), float(d["threshold"]),  # type: ignore[arg-type]
                   None if d.get("attribute") is None else str(d["attribute"]))


def format_parameters(parameters: Mapping[str, object]) -> str:
    """``{"k": 5, "l": 2}`` -> ``"k=5, l=2"``, as models are named in messages."""
    return ", ".join(f"{name}={exact_number(value)}" for name, value in parameters.items())


@dataclass(frozen=True)
class Verdict:
    """Whether a table meets one model, how well, and where it is weakest.

    ``measure`` names the measured quantity (``"k"``, ``"EMD"``, ...) and ``comparison``
    how a class's level must relate to ``required`` (``">="``, ``"<="``, ``"<"``); both
    only serve to print the verdict. ``details`` holds model-specific extras (e.g. the
    smallest range for (k,e)-anonymity, the ground distance for t-closeness).
    """

    model: str  # e.g. "k-anonymity"
    parameters: dict[str, object]
    passed: bool
    measured: float  # the table's level (e.g. k = 4: the smallest class has 4 rows)
    required: float
    worst_class: int  # index of the weakest class (-1 when the table is empty)
    worst_class_size: int
    failing_classes: int
    n_classes: int
    measure: str = "level"
    comparison: str = ">="
    details: dict[str, object] = field(default_factory=dict)

    def __str__(self) -> str:
        status = "PASS" if self.passed else "FAIL"
        params = format_parameters(self.parameters)
        # the level rounded for reading, the threshold exactly as given
        text = (f"{status} {self.model} ({params}): measured {self.measure} = "
                f"{measured_text(self.measured, self.required, self.passed)}, required "
                f"{self.measure} {self.comparison} {exact_number(self.required)}")
        if self.n_classes:  # (a verdict on the table as a whole names no class)
            text += (f"; weakest class has {_rows(self.worst_class_size)}; "
                     f"{self.failing_classes} of {self.n_classes} classes fail")
        if self.details:
            text += " [" + format_parameters(self.details) + "]"
        return text

    def to_dict(self) -> dict[str, object]:
        return {"model": self.model, "parameters": dict(self.parameters),
                "passed": self.passed, "measure": self.measure,
                "measured": self.measured, "comparison": self.comparison,
                "required": self.required, "worst_class": self.worst_class,
                "worst_class_size": self.worst_class_size,
                "failing_classes": self.failing_classes, "n_classes": self.n_classes,
                "details": dict(self.details)}


def _rows(n: int) -> str:
    return f"{n} row{'' if n == 1 else 's'}"


class PrivacyModel(ABC):
    """A privacy criterion evaluated on all equivalence classes at once.

    Subclasses set ``name``, ``higher_is_better`` and ``monotonic`` and implement
    :meth:`levels`; a class passes when its level reaches :attr:`threshold` in the model's
    direction: ``>=`` / ``<=``, or ``>`` / ``<`` when ``strict`` (the literature's
    definitions of recursive (c,l)-diversity and δ-disclosure are strict). Thresholds on
    counts and ranges are compared exactly; only levels that are floating-point entropies
    or distances get a relative :attr:`tolerance`, and each model's docstring says which.

    Model text (:mod:`anonkit.models.text`): :attr:`text_keys`, :attr:`text_numbers` and
    :attr:`text_options` declare how the model is written (``recursive-cl=3,2``,
    ``delta=1.5,absent=fail``); :meth:`spec` writes it, :meth:`from_text` reads it.
    """

    name: ClassVar[str]
    higher_is_better: ClassVar[bool] = True
    #: the comparison with the threshold is strict (``<`` / ``>``) rather than ``<=`` / ``>=``
    strict: ClassVar[bool] = False
    #: what a level measures, for messages ("k", "EMD", ...)
    measure: ClassVar[str] = "level"
    #: holds on the union of two classes whenever it holds on both (lets algorithms stop
    #: refining once a cut is not allowable, and merge safely)
    monotonic: ClassVar[bool] = True
    #: a class holding a class that meets it meets it too (more rows never hurt), so under
    #: generalization with suppression the suppressed rows only shrink (ARX's
    #: "monotonic with suppression"; lets global recoding tag with a suppression limit)
    monotonic_with_suppression: ClassVar[bool] = False
    #: judges the classes together (e.g. the estimated share of population uniques of the
    #: whole table), not each class alone: its per-class levels and :meth:`holds` are the
    #: whole table's outcome, and an algorithm cannot check it on a candidate cut's halves
    #: (it checks the finished partition instead, and fails closed)
    table_level: ClassVar[bool] = False
    #: relative tolerance of the comparison with the threshold: 0 (exact) for counts and
    #: ranges; models whose levels are float sums (entropies, distances) set 1e-9
    tolerance: ClassVar[float] = 0.0
    #: which sensitive attribute the model concerns (None: none, or the only one)
    attribute: str | None = None
    #: model text: the keys that name the model; :meth:`spec` writes the first
    text_keys: ClassVar[tuple[str, ...]] = ()
    #: model text: the parameters written as numbers after the key, in order
    text_numbers: ClassVar[tuple[str, ...]] = ()
    #: model text: options written ``name=value`` after the numbers, each with its allowed
    #: values, the default first
    text_options: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    @property
    @abstractmethod
    def threshold(self) -> float: ...

    @property
    @abstractmethod
    def parameters(self) -> dict[str, object]: ...

    @property
    def needs_sensitive(self) -> bool:
        return True

    @property
    def population_table(self) -> PopulationTable | None:
        """The population table whose rows in each class the model reads
        (``Classes.population_counts``); None for the models that read none."""
        return None

    @property
    def weight_column(self) -> str | None:
        """The column of survey weights the model reads (``Classes.weights``), if any."""
        return None

    @property
    def checkable_on_parts(self) -> bool:
        """Whether an algorithm can judge the model on candidate classes as it builds them
        (a cut's halves): not when it judges the table as a whole, nor when it needs each
        class's rows in a population table, which only the released labels determine."""
        return not self.table_level and self.population_table is None

    def title(self) -> str:
        """How messages name the model: ``"distinct l-diversity (l=3)"``."""
        return f"{self.name} ({format_parameters(self.parameters)})"

    @classmethod
    def from_text(cls, key: str, numbers: Sequence[float],
                  options: Mapping[str, str]) -> PrivacyModel:
        """The model that a model text names: ``key`` is one of :attr:`text_keys`,
        ``numbers`` one per :attr:`text_numbers`, ``options`` checked against
        :attr:`text_options` already. A model whose key or options matter overrides this."""
        return cls(*numbers)  # type: ignore[call-arg]

    def text_option_values(self) -> dict[str, str]:
        """The model's values of its :attr:`text_options` (a model with options overrides)."""
        return {}

    def spec(self) -> str:
        """The model's short form, which :func:`anonkit.models.text.parse_model` reads back
        into a model with the same parameters: ``k=5``, ``recursive-cl=3,2``,
        ``delta=1.5,absent=fail``. Options at their default are left out."""
        if not self.text_keys:
            raise InputError(f"{type(self).__name__} has no model text; set its text_keys "
                             f"and text_numbers, or override spec()")
        params = self.parameters
        parts = [exact_number(params[name]) for name in self.text_numbers]
        for option, value in self.text_option_values().items():
            if value != self.text_options[option][0]:
                parts.append(f"{option}={value}")
        return f"{self.text_keys[0]}={','.join(parts)}"

    def cross_release_requirements(self) -> list[CrossReleaseRequirement]:
        """What the model promises about every record when releases are intersected, in the
        measures the cross-release audit computes. None by default: the audit then checks
        the model across releases only for exact disclosure."""
        return []

    def min_class_size(self) -> int:
        """No class smaller than this can pass (used to prune cuts early)."""
        return 1

    def min_distinct_values(self) -> int:
        """No class with fewer distinct sensitive values than this can pass."""
        return 0

    def check_attribute(self, attribute: SensitiveAttribute) -> None:
        """Raise :class:`InputError` when no table over ``attribute``'s reference
        distribution could ever meet the model (e.g. l above the number of distinct
        values), so users hear why instead of seeing every class fail."""
        need = self.min_distinct_values()
        have = int(np.count_nonzero(attribute.reference_counts))
        if need > have:
            param = next(iter(self.parameters.items()), ("level", need))
            raise InputError(
                f"{self.name}: {param[0]}={exact_number(param[1])} but {attribute.name!r} "
                f"has only {have} distinct value{'s' if have != 1 else ''}; no grouping can "
                f"meet it")

    @property
    def comparison(self) -> str:
        return ("<>"[self.higher_is_better]) + ("" if self.strict else "=")

    @abstractmethod
    def levels(self, classes: Classes) -> np.ndarray:
        """The model's measured level for every class (float array, one per class)."""

    def satisfied(self, levels: np.ndarray) -> np.ndarray:
        """Per level: does it reach the threshold in the model's direction?"""
        # Entropies and distances are sums of floats while thresholds are typed by people:
        # within the model's tolerance a level counts as equal to the threshold, which
        # passes a non-strict model and fails a strict one. Counts and ranges carry no such
        # noise, and a tolerance there would pass a class short of the threshold.
        tol = self.tolerance * max(1.0, abs(self.threshold))
        if self.higher_is_better:
            if self.strict:
                return levels > self.threshold + tol
            return levels >= self.threshold - tol
        if self.strict:
            return levels < self.threshold - tol
        return levels <= self.threshold + tol

    def passing(self, classes: Classes, levels: np.ndarray) -> np.ndarray:
        """Per class: does the class satisfy the model, given its ``levels``? The levels'
        comparison with the threshold by default; a model that decides from quantities of
        its own (its level then only ranks the classes) overrides this."""
        return self.satisfied(levels)

    def holds(self, classes: Classes) -> np.ndarray:
        """Per class: does the class satisfy the model?"""
        return self.passing(classes, self.levels(classes))

    def details(self, classes: Classes, levels: np.ndarray, worst: int) -> dict[str, object]:
        """Model-specific extras for the verdict (none by default)."""
        return {}

    def verdict(self, classes: Classes) -> Verdict:
        if classes.n_classes == 0:
            return Verdict(self.name, self.parameters, False, float("nan"), self.threshold,
                           -1, 0, 0, 0, self.measure, self.comparison)
        levels = self.levels(classes)
        ok = self.passing(classes, levels)
        worst = int(np.argmin(levels) if self.higher_is_better else np.argmax(levels))
        return Verdict(self.name, self.parameters, bool(ok.all()), float(levels[worst]),
                       self.threshold, worst, int(classes.sizes[worst]),
                       int((~ok).sum()), classes.n_classes, self.measure, self.comparison,
                       self.details(classes, levels, worst))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.parameters.items())
        return f"{type(self).__name__}({params})"


class KAnonymity(PrivacyModel):
    """Every class has at least k rows. Compared exactly (a count). Across releases: at
    least k candidates for every record."""

    name = "k-anonymity"
    measure = "k"
    monotonic_with_suppression = True
    text_keys = ("k",)
    text_numbers = ("k",)

    def __init__(self, k: int) -> None:
        self.k = whole_number("k", k, "python", 1)

    @property
    def threshold(self) -> float:
        return self.k  # exact: a k past 2**53 is shown as given

    @property
    def parameters(self) -> dict[str, object]:
        return {"k": self.k}

    @property
    def needs_sensitive(self) -> bool:
        return False

    def min_class_size(self) -> int:
        return self.k

    def cross_release_requirements(self) -> list[CrossReleaseRequirement]:
        return [CrossReleaseRequirement(self.name, "candidates", float(self.k))]

    def levels(self, classes: Classes) -> np.ndarray:
        return classes.sizes.astype(np.float64)


def real_number(name: str, value: object, low: float, high: float = math.inf,
                low_open: bool = False, high_open: bool = False) -> float:
    """``value`` as a finite float in the given interval, or an :class:`InputError`."""
    interval = (f"{'(' if low_open else '['}{exact_number(low)}, {exact_number(high)}"
                f"{')' if high_open else ']'}")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{name} must be a number in {interval}, got {value!r}") from None
    too_low = number <= low if low_open else number < low
    too_high = number >= high if high_open else number > high
    if isinstance(value, bool) or math.isnan(number) or too_low or too_high \
            or math.isinf(number):
        raise InputError(f"{name} must be a number in {interval}, got {value!r}")
    return number


def bind_models(models: Sequence[PrivacyModel],
                attributes: Sequence[SensitiveAttribute]) -> list[PrivacyModel]:
    """One model per (model, sensitive attribute) it concerns, each validated against its
    attribute: a model that names no attribute applies to every sensitive column."""
    by_name = {a.name: a for a in attributes}
    sens = list(by_name)
    bound: list[PrivacyModel] = []
    for model in models:
        if not model.needs_sensitive:
            bound.append(model)
            continue
        if not sens:
            raise InputError(f"{model.title()} needs a sensitive attribute; "
                             f"name the sensitive column (sensitive=... / --sensitive)")
        if model.attribute is not None:
            if model.attribute not in by_name:
                raise InputError(f"{model.title()} concerns "
                                 f"{model.attribute!r}, which is not among the sensitive "
                                 f"columns given ({', '.join(sens)})")
            targets = [model.attribute]
        else:
            targets = sens
        for name in targets:
            copy_ = copy.copy(model)
            copy_.attribute = name
            copy_.check_attribute(by_name[name])
            bound.append(copy_)
    return bound
