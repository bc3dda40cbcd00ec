"""(k,e)-anonymity (Zhang, Koudas, Srivastava, Yu, ICDE 2007) for a numeric sensitive
attribute: every class holds at least ``k`` distinct sensitive values and their range
``max - min`` is at least ``e``, so an adversary who locates a person's class can pin the
value neither to a few candidates nor to a narrow interval.
"""

from __future__ import annotations

import numpy as np

from anonkit.errors import InputError
from anonkit.models.base import Classes, PrivacyModel, SensitiveAttribute, real_number, whole_number
from anonkit.table import Kind


class KEAnonymity(PrivacyModel):
    """(k,e)-anonymity: per class, distinct values >= k and range >= e (both non-strict, as
    in Zhang et al.).

    Level (higher is better, threshold 1): the worse of the two conditions normalised,
    ``min(distinct / k, range / e)`` (just ``distinct / k`` when e = 0). A class passes iff
    its level >= 1, i.e. iff it meets both conditions. The verdict's details give the
    weakest class's distinct count and range and the table's smallest of each, which are
    the numbers a user acts on.

    Missing sensitive values are not numbers: they count neither as a distinct value nor
    in the range. Monotonic: a union has at least as many distinct values and at least as
    wide a range as either part.
    """

    name = "(k,e)-anonymity"
    measure = "min(distinct/k, range/e)"
    monotonic = True

    def __init__(self, k: int, e: float, attribute: str | None = None) -> None:
        self.k = whole_number("k", k, 1)
        self.e = real_number("e", e, 0.0)
        self.attribute = attribute

    @property
    def threshold(self) -> float:
        return 1.0

    @property
    def parameters(self) -> dict[str, object]:
        return {"k": self.k, "e": self.e}

    def min_class_size(self) -> int:
        return self.k

    def min_distinct_values(self) -> int:
        return self.k

    def check_attribute(self, attribute: SensitiveAttribute) -> None:
        if attribute.kind is not Kind.NUMERIC:
            raise InputError(f"(k,e)-anonymity needs a numeric sensitive attribute; "
                             f"{attribute.name!r} is {attribute.kind.value}")
        present = attribute.reference_counts > 0
        mags = attribute.magnitudes[present]
        mags = mags[~np.isnan(mags)]
        if self.k > len(mags):
            raise InputError(f"(k,e)-anonymity: k={self.k} but {attribute.name!r} has only "
                             f"{len(mags)} distinct value{'s' if len(mags) != 1 else ''}; "
                             f"no grouping can meet it")
        span = float(mags.max() - mags.min()) if len(mags) else 0.0
        if self.e > span:
            raise InputError(f"(k,e)-anonymity: e={self.e:g} but {attribute.name!r} ranges "
                             f"over only {span:g}; no grouping can meet it")

    def distinct_and_range(self, classes: Classes) -> tuple[np.ndarray, np.ndarray]:
        """Per class: the number of distinct non-missing values and ``max - min``."""
        attr = classes.attribute(self.attribute)
        if attr.kind is not Kind.NUMERIC:
            raise InputError(f"(k,e)-anonymity needs a numeric sensitive attribute; "
                             f"{attr.name!r} is {attr.kind.value}")
        vc = classes.value_counts(attr.name)
        mags = attr.magnitudes[vc.value_code]
        known = ~np.isnan(mags)
        distinct = np.bincount(vc.class_index, weights=known, minlength=classes.n_classes)
        high = vc.per_class_max(np.where(known, mags, -np.inf))
        low = vc.per_class_min(np.where(known, mags, np.inf))
        spread = np.where(np.isfinite(high) & np.isfinite(low), high - low, 0.0)
        return distinct, spread

    def levels(self, classes: Classes) -> np.ndarray:
        distinct, spread = self.distinct_and_range(classes)
        level = distinct / self.k
        if self.e > 0:
            level = np.minimum(level, spread / self.e)
        return level

    def details(self, classes: Classes, levels: np.ndarray, worst: int) -> dict[str, object]:
        distinct, spread = self.distinct_and_range(classes)
        return {"worst_class_distinct": int(distinct[worst]),
                "worst_class_range": float(spread[worst]),
                "min_distinct": int(distinct.min()), "min_range": float(spread.min())}
