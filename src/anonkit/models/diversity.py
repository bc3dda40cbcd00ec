"""l-diversity in its three classic forms (Machanavajjhala et al., ICDE 2006 / TKDD 2007).

All three read the sparse per-class histogram of the sensitive attribute
(:meth:`Classes.value_counts`) and reduce it per class with ``bincount`` / ``reduceat``;
there is no loop over classes. A missing sensitive value (NaN / None / blank) is one value
of its own, like any other: it is what the release shows for those rows.
"""

from __future__ import annotations

import math

import numpy as np

from anonkit.errors import InputError
from anonkit.models.base import (
    Classes,
    PrivacyModel,
    SensitiveAttribute,
    real_number,
    whole_number,
)


class DistinctLDiversity(PrivacyModel):
    """Every class holds at least ``l`` distinct sensitive values.

    Level: the number of distinct values in the class; pass iff level >= l. Monotonic: the
    union of two classes has at least as many distinct values as either.
    """

    name = "distinct l-diversity"
    measure = "l"
    monotonic = True

    def __init__(self, l: int, attribute: str | None = None) -> None:  # noqa: E741
        self.l = whole_number("l", l, 1)
        self.attribute = attribute

    @property
    def threshold(self) -> float:
        return float(self.l)

    @property
    def parameters(self) -> dict[str, object]:
        return {"l": self.l}

    def min_class_size(self) -> int:
        return self.l

    def min_distinct_values(self) -> int:
        return self.l

    def levels(self, classes: Classes) -> np.ndarray:
        return classes.distinct_values(self.attribute).astype(np.float64)


class EntropyLDiversity(PrivacyModel):
    """The entropy of every class's sensitive distribution is at least ``ln(l)``.

    Level: ``exp(entropy)`` with the natural log, the "effective number of values" (as
    pycanon reports it, but not rounded down); pass iff level >= l. ``l`` may be fractional.
    Monotonic (Machanavajjhala et al.): entropy is concave, so a union of classes with
    entropy >= ln(l) has entropy >= ln(l). exp(entropy) never exceeds the number of distinct
    values, hence ``min_class_size`` = ``min_distinct_values`` = ceil(l).
    """

    name = "entropy l-diversity"
    measure = "exp(entropy)"
    monotonic = True

    def __init__(self, l: float, attribute: str | None = None) -> None:  # noqa: E741
        self.l = real_number("entropy l", l, 1.0)
        self.attribute = attribute

    @property
    def threshold(self) -> float:
        return self.l

    @property
    def parameters(self) -> dict[str, object]:
        return {"l": self.l}

    def min_class_size(self) -> int:
        return math.ceil(self.l - 1e-9)

    def min_distinct_values(self) -> int:
        return self.min_class_size()

    def levels(self, classes: Classes) -> np.ndarray:
        vc = classes.value_counts(self.attribute)
        q = vc.count / classes.sizes[vc.class_index]
        entropy = -vc.per_class_sum(q * np.log(q))
        return np.exp(entropy)


class RecursiveCLDiversity(PrivacyModel):
    """Recursive (c,l)-diversity: ``r_1 < c * (r_l + ... + r_m)`` in every class, where
    ``r_1 >= r_2 >= ... >= r_m`` are the class's value counts sorted descending.

    Level (lower is better): ``r_1 / (r_l + ... + r_m)``, the ratio the definition bounds;
    pass iff level < c, strictly, as in the paper (a level equal to c within float noise
    fails). A class with fewer than ``l`` distinct values has an empty tail sum, level
    ``inf``, and fails whatever c is. Monotonic per Machanavajjhala et al. (Lemma on
    recursive diversity under merging). The level is not pycanon's "c": pycanon reports
    ``floor(ratio) + 1`` (the least whole c that passes) and sorts the counts ascending,
    which only agrees with the paper when each class's counts are all equal.
    """

    name = "recursive (c,l)-diversity"
    measure = "r1/(r_l+...+r_m)"
    higher_is_better = False
    strict = True
    monotonic = True

    def __init__(self, c: float, l: int, attribute: str | None = None) -> None:  # noqa: E741
        self.c = real_number("c", c, 0.0, low_open=True)
        self.l = whole_number("l", l, 1)
        self.attribute = attribute

    @property
    def threshold(self) -> float:
        return self.c

    @property
    def parameters(self) -> dict[str, object]:
        return {"c": self.c, "l": self.l}

    def min_class_size(self) -> int:
        return self.l

    def min_distinct_values(self) -> int:
        return self.l

    def check_attribute(self, attribute: SensitiveAttribute) -> None:
        have = int(np.count_nonzero(attribute.reference_counts))
        if self.l > have:
            raise InputError(f"{self.name}: l={self.l} but {attribute.name!r} has only "
                             f"{have} distinct value{'s' if have != 1 else ''}; no grouping "
                             f"can meet it")

    def levels(self, classes: Classes) -> np.ndarray:
        vc = classes.value_counts(self.attribute)
        # within each class, counts descending; rank 0 is r_1
        order = np.lexsort((-vc.count, vc.class_index))
        count = vc.count[order]
        cls = vc.class_index[order]
        rank = np.arange(len(count)) - vc.starts[cls]
        r1 = vc.per_class_max(vc.count).astype(np.float64)
        tail = np.bincount(cls, weights=np.where(rank >= self.l - 1, count, 0),
                           minlength=classes.n_classes)
        with np.errstate(divide="ignore"):
            return np.where(tail > 0, r1 / np.where(tail > 0, tail, 1.0), np.inf)
