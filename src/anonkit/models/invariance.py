"""m-uniqueness, the per-release condition of m-invariance (Xiao & Tao, SIGMOD 2007).

m-invariance protects a table published again and again: every release is m-unique, and a
record keeps the same signature (set of sensitive values of its class) in every release it
appears in, counterfeit rows filling in where real ones are missing. This module checks one
release; keeping signatures is the publisher's business.
"""

from __future__ import annotations

import numpy as np

from anonkit._util.numbers import whole_number
from anonkit.models.base import Classes, CrossReleaseRequirement, PrivacyModel


class MUniqueness(PrivacyModel):
    """Every class has at least ``m`` rows and no sensitive value takes more than ``1/m``
    of them.

    Xiao & Tao ask for ``m`` rows with pairwise distinct values; the bound on shares is the
    reading this project uses (a class of 2m rows holding m values twice each passes), and
    the paper's form implies it. Rows are rows as released: counterfeit rows count, since
    nothing in a release tells them apart. A missing sensitive value counts as a value.

    Compared exactly, in integers: pass iff ``size >= m`` and ``max_count * m <= size``,
    ``max_count`` being the rows of the class's most frequent value. Level (higher is
    better): ``size / max_count``; the largest m a class meets is the floor of its level
    (never above its size, as ``max_count >= 1``).

    Monotonic: a value's count in the union of two classes is the sum of its counts in
    them, each at most its class's size / m, so at most the union's size / m. Across
    releases: at least m distinct values left for every record — values, not candidates,
    because counterfeit rows are not people and m-invariance promises values.
    """

    name = "m-uniqueness"
    measure = "size/max count"
    monotonic = True
    text_keys = ("m", "m-unique")
    text_numbers = ("m",)

    def __init__(self, m: int, attribute: str | None = None) -> None:
        self.m = whole_number("m", m, "python", 1)
        self.attribute = attribute

    @property
    def threshold(self) -> float:
        return float(self.m)

    @property
    def parameters(self) -> dict[str, object]:
        return {"m": self.m}

    def min_class_size(self) -> int:
        return self.m

    def min_distinct_values(self) -> int:
        # no value above a share of 1/m leaves room for no fewer than m values
        return self.m

    def cross_release_requirements(self) -> list[CrossReleaseRequirement]:
        return [CrossReleaseRequirement(self.name, "distinct", float(self.m), self.attribute)]

    def size_and_max_count(self, classes: Classes) -> tuple[np.ndarray, np.ndarray]:
        """Per class: its rows and the rows of its most frequent sensitive value."""
        vc = classes.value_counts(self.attribute)
        return classes.sizes.astype(np.int64), vc.per_class_max(vc.count).astype(np.int64)

    def levels(self, classes: Classes) -> np.ndarray:
        size, max_count = self.size_and_max_count(classes)
        return size / max_count

    def passing(self, classes: Classes, levels: np.ndarray) -> np.ndarray:
        size, max_count = self.size_and_max_count(classes)
        # max_count * m <= size in whole numbers is max_count <= size // m, which cannot
        # overflow; an m past int64 exceeds every size anyway
        m = min(self.m, int(np.iinfo(np.int64).max))
        return (size >= m) & (max_count <= size // m)

    def holds(self, classes: Classes) -> np.ndarray:
        # the integer test needs no levels: skip computing them
        return self.passing(classes, np.empty(0))
