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
    """Xiao & Tao (SIGMOD 2007), Definition 3: a class is m-unique when it holds at least
    ``m`` rows and all of them have different sensitive values.

    A class of six rows holding three values twice each is not 3-unique: its shares are
    bounded by 1/3, but the paper asks for distinct values, and m-invariance's guarantee
    (intersecting a record's classes leaves at least m values, one row each) rests on it.
    Rows are rows as released: counterfeit rows count, since nothing in a release tells
    them apart. A missing sensitive value counts as a value (two missing cells repeat one).

    Compared exactly, in integers: pass iff ``size >= m`` and ``max_count == 1``,
    ``max_count`` being the rows of the class's most frequent value. Level (higher is
    better): the class's size when its values are distinct, else 0 -- the largest m it
    meets.

    Not monotonic: the union of two m-unique classes repeats any value they share.
    Across releases: at least m distinct values left for every record -- values, not
    candidates, because counterfeit rows are not people and m-invariance promises values.
    """

    name = "m-uniqueness"
    measure = "rows if their values are distinct, else 0"
    monotonic = False
    text_keys = ("m", "m-unique")
    text_numbers = ("m",)

    def __init__(self, m: int, attribute: str | None = None) -> None:
        self.m = whole_number("m", m, "python", 1)
        self.attribute = attribute

    @property
    def threshold(self) -> float:
        return self.m

    @property
    def parameters(self) -> dict[str, object]:
        return {"m": self.m}

    def min_class_size(self) -> int:
        return self.m

    def min_distinct_values(self) -> int:
        return self.m

    def cross_release_requirements(self) -> list[CrossReleaseRequirement]:
        return [CrossReleaseRequirement(self.name, "distinct", float(self.m), self.attribute)]

    def size_and_max_count(self, classes: Classes) -> tuple[np.ndarray, np.ndarray]:
        """Per class: its rows and the rows of its most frequent sensitive value."""
        vc = classes.value_counts(self.attribute)
        return classes.sizes.astype(np.int64), vc.per_class_max(vc.count).astype(np.int64)

    def levels(self, classes: Classes) -> np.ndarray:
        size, max_count = self.size_and_max_count(classes)
        return np.where(max_count <= 1, size, 0).astype(np.float64)

    def passing(self, classes: Classes, levels: np.ndarray) -> np.ndarray:
        size, max_count = self.size_and_max_count(classes)
        # an m past int64 exceeds every size anyway
        m = min(self.m, int(np.iinfo(np.int64).max))
        return (size >= m) & (max_count <= 1)

    def holds(self, classes: Classes) -> np.ndarray:
        # the integer test needs no levels: skip computing them
        return self.passing(classes, np.empty(0))
