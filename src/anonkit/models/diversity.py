"""l-diversity in its three classic forms (Machanavajjhala et al., ICDE 2006 / TKDD 2007).

All three read the sparse per-class histogram of the sensitive attribute
(:meth:`Classes.value_counts`) and reduce it per class with ``bincount``; there is no loop
over classes.

A missing sensitive value (NaN / None / blank) does not count toward l by default: a class
holding hiv and two blanks has one value, not two, since a blank tells an adversary nothing
about what hides behind it. ``missing_counts=true`` in the model text
(``missing_counts=True`` in Python) counts it as a value of its own. (Quasi-identifiers are
another matter: there a missing value is a value, which the release shows and by which an
adversary groups rows.)
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from anonkit._util.numbers import whole_number
from anonkit.errors import InputError
from anonkit.models.base import (
    Classes,
    CrossReleaseRequirement,
    PrivacyModel,
    SensitiveAttribute,
    ValueCounts,
    exact_number,
    real_number,
)

#: the values of the ``missing_counts`` option, the default first
MISSING_COUNTS = ("false", "true")


class _MissingValues(PrivacyModel):
    """What the three l-diversity models share: whether a missing sensitive value counts
    toward l (see the module)."""

    missing_counts: bool = False
    text_options: ClassVar[Mapping[str, tuple[str, ...]]] = {"missing-counts": MISSING_COUNTS}

    @property
    def parameters(self) -> dict[str, object]:
        params = self._parameters()
        if self.missing_counts:
            params["missing_counts"] = True
        return params

    @abstractmethod
    def _parameters(self) -> dict[str, object]:
        """The model's own parameters (``missing_counts`` is added when it is on)."""

    @classmethod
    def from_text(cls, key: str, numbers: Sequence[float],
                  options: Mapping[str, str]) -> PrivacyModel:
        return cls(*numbers, missing_counts=options.get("missing-counts") == "true")  # type: ignore[call-arg]

    def text_option_values(self) -> dict[str, str]:
        return {"missing-counts": MISSING_COUNTS[int(self.missing_counts)]}

    def counts(self, classes: Classes) -> ValueCounts:
        """The class histograms this model reads: without the missing value unless it
        counts."""
        vc = classes.value_counts(self.attribute)
        if self.missing_counts:
            return vc
        return vc.without(classes.attribute(self.attribute).missing_code)

    def distinct_requirement(self, level: float) -> list[CrossReleaseRequirement]:
        measure = "distinct" if self.missing_counts else "distinct_present"
        return [CrossReleaseRequirement(self.name, measure, level, self.attribute)]

    def check_attribute(self, attribute: SensitiveAttribute) -> None:
        need = self.min_distinct_values()
        present = attribute.reference_counts > 0
        if not self.missing_counts and attribute.missing_code >= 0:
            present[attribute.missing_code] = False
        have = int(np.count_nonzero(present))
        if need > have:
            raise InputError(f"{self.name}: l={exact_number(self.parameters['l'])} but "
                             f"{attribute.name!r} has only {have} distinct value"
                             f"{'s' if have != 1 else ''}"
                             f"{'' if self.missing_counts else ' (missing not counted)'}; "
                             f"no grouping can meet it")


class DistinctLDiversity(_MissingValues):
    """Every class holds at least ``l`` distinct sensitive values.

    Level: the number of distinct values in the class; pass iff level >= l, compared
    exactly (a count). Monotonic: the union of two classes has at least as many distinct
    values as either. Across releases: at least l distinct values left for every record.
    """

    name = "distinct l-diversity"
    measure = "l"
    monotonic = True
    monotonic_with_suppression = True  # more rows never lose a distinct value
    text_keys = ("l", "distinct-l")
    text_numbers = ("l",)

    def __init__(self, l: int, attribute: str | None = None,  # noqa: E741
                 missing_counts: bool = False) -> None:
        self.l = whole_number("l", l, "python", 1)
        self.attribute = attribute
        self.missing_counts = bool(missing_counts)

    @property
    def threshold(self) -> float:
        return self.l

    def _parameters(self) -> dict[str, object]:
        return {"l": self.l}

    def min_class_size(self) -> int:
        return self.l

    def min_distinct_values(self) -> int:
        return self.l

    def cross_release_requirements(self) -> list[CrossReleaseRequirement]:
        return self.distinct_requirement(float(self.l))

    def levels(self, classes: Classes) -> np.ndarray:
        vc = self.counts(classes)
        return np.bincount(vc.class_index, minlength=classes.n_classes).astype(np.float64)


class EntropyLDiversity(_MissingValues):
    """The entropy of every class's sensitive distribution is at least ``ln(l)``.

    Level: ``exp(entropy)`` with the natural log, the "effective number of values" (as
    pycanon reports it, but not rounded down); pass iff level >= l. ``l`` may be fractional.
    The level is a float sum, so the comparison has a relative tolerance of 1e-9 (exp(ln 2)
    may come out a hair under 2). Monotonic (Machanavajjhala et al.): entropy is concave,
    so a union of classes with entropy >= ln(l) has entropy >= ln(l).

    The entropy of a distribution over n values is at most ln(n), so entropy >= ln(l) needs
    n >= l values, i.e. at least ceil(l) (within the tolerance): that is
    ``min_class_size`` = ``min_distinct_values``. Across releases, where what is left of a
    record's values is a set without shares, the model asks for that many distinct values
    left for every record.
    """

    name = "entropy l-diversity"
    measure = "exp(entropy)"
    monotonic = True
    tolerance = 1e-9
    text_keys = ("entropy-l",)
    text_numbers = ("l",)

    def __init__(self, l: float, attribute: str | None = None,  # noqa: E741
                 missing_counts: bool = False) -> None:
        self.l = real_number("entropy l", l, 1.0)
        self.attribute = attribute
        self.missing_counts = bool(missing_counts)

    @property
    def threshold(self) -> float:
        return self.l

    def _parameters(self) -> dict[str, object]:
        return {"l": self.l}

    def min_class_size(self) -> int:
        # the least whole number of values that can pass within the tolerance
        return math.ceil(self.l - self.tolerance * max(1.0, self.l))

    def min_distinct_values(self) -> int:
        return self.min_class_size()

    def cross_release_requirements(self) -> list[CrossReleaseRequirement]:
        return self.distinct_requirement(float(self.min_distinct_values()))

    def levels(self, classes: Classes) -> np.ndarray:
        vc = self.counts(classes)
        # shares among the values that count (a class of blanks only has entropy 0)
        total = np.bincount(vc.class_index, weights=vc.count, minlength=classes.n_classes)
        q = vc.count / total[vc.class_index]
        entropy = -vc.per_class_sum(q * np.log(q))
        return np.exp(entropy)


class RecursiveCLDiversity(_MissingValues):
    """Recursive (c,l)-diversity: ``r_1 < c * (r_l + ... + r_m)`` in every class, where
    ``r_1 >= r_2 >= ... >= r_m`` are the class's value counts sorted descending.

    Level (lower is better): ``r_1 / (r_l + ... + r_m)``, the ratio the definition bounds;
    pass iff level < c, strictly, as in the paper. Compared exactly: the level is one
    correctly rounded division of two counts, so a ratio equal to c (``c=2.5``, counts 5
    and 2) fails and one just under it passes. A class with fewer than ``l`` distinct
    values has an empty tail sum, level ``inf``, and fails whatever c is — hence across
    releases the model asks for at least l distinct values left for every record.
    Monotonic per Machanavajjhala et al. (Lemma on recursive diversity under merging). The
    level is not pycanon's "c": pycanon reports ``floor(ratio) + 1`` (the least whole c
    that passes) and sorts the counts ascending, which only agrees with the paper when
    each class's counts are all equal.
    """

    name = "recursive (c,l)-diversity"
    measure = "r1/(r_l+...+r_m)"
    higher_is_better = False
    strict = True
    monotonic = True
    text_keys = ("recursive-cl", "recursive-c-l", "(c,l)")
    text_numbers = ("c", "l")

    def __init__(self, c: float, l: int, attribute: str | None = None,  # noqa: E741
                 missing_counts: bool = False) -> None:
        self.c = real_number("c", c, 0.0, low_open=True)
        self.l = whole_number("l", l, "python", 1)
        self.attribute = attribute
        self.missing_counts = bool(missing_counts)

    @property
    def threshold(self) -> float:
        return self.c

    def _parameters(self) -> dict[str, object]:
        return {"c": self.c, "l": self.l}

    def min_class_size(self) -> int:
        return self.l

    def min_distinct_values(self) -> int:
        return self.l

    def cross_release_requirements(self) -> list[CrossReleaseRequirement]:
        return self.distinct_requirement(float(self.l))

    def levels(self, classes: Classes) -> np.ndarray:
        vc = self.counts(classes)
        # within each class, counts descending; rank 0 is r_1 (a class may have no entry:
        # blanks only, when they do not count)
        order = np.lexsort((-vc.count, vc.class_index))
        count = vc.count[order]
        cls = vc.class_index[order]
        rank = np.arange(len(count)) - vc.starts[cls]
        r1 = np.bincount(cls, weights=np.where(rank == 0, count, 0),
                         minlength=classes.n_classes)
        tail = np.bincount(cls, weights=np.where(rank >= self.l - 1, count, 0),
                           minlength=classes.n_classes)
        with np.errstate(divide="ignore"):
            return np.where(tail > 0, r1 / np.where(tail > 0, tail, 1.0), np.inf)
