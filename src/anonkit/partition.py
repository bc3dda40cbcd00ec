"""The core partition type: what every partitioning algorithm produces.

An algorithm's own step is to split the rows of an encoded table into classes; everything
after that (generalizing, assembling the release, verifying, measuring) is shared and works
from a :class:`Partition`. Classes are runs of one ordering of the rows, the layout that
lets generalization reduce each class with one ``reduceat`` per column.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from anonkit.models.base import Classes, SensitiveAttribute, ValueCounts


def runs(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions ``starts[i], starts[i] + 1, ..., starts[i] + lengths[i] - 1`` for
    every ``i``, one run after the other (vectorised)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if len(ends) else 0
    return np.repeat(np.asarray(starts, dtype=np.int64) - (ends - lengths), lengths) + \
        np.arange(total)


@dataclass(frozen=True)
class Partition:
    """Classes as runs of a row ordering: class ``c`` is ``order[starts[c]:ends[c]]``.

    ``order`` lists row positions of the encoded table class by class; the runs are
    consecutive (``ends[c] == starts[c + 1]``) and cover every row once. ``rounds`` is
    how many refinement rounds the algorithm took (0 when it does not work in rounds).
    """

    order: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    rounds: int = 0

    @classmethod
    def from_class_ids(cls, class_ids: np.ndarray, n_classes: int | None = None) -> Partition:
        """The partition whose class of row ``i`` is ``class_ids[i]`` (ids ``0 .. n - 1``,
        none empty); rows keep their relative order inside a class."""
        class_ids = np.asarray(class_ids, dtype=np.int64)
        n = int(class_ids.max()) + 1 if n_classes is None and len(class_ids) else \
            (n_classes or 0)
        sizes = np.bincount(class_ids, minlength=n)
        if (sizes == 0).any():
            raise ValueError(f"class {int(np.argmin(sizes))} has no row; class ids must "
                             f"cover 0 .. {n - 1}")
        ends = np.cumsum(sizes)
        return cls(np.argsort(class_ids, kind="stable"), ends - sizes, ends)

    @property
    def n_classes(self) -> int:
        return len(self.starts)

    @property
    def n_rows(self) -> int:
        return len(self.order)

    @property
    def sizes(self) -> np.ndarray:
        return self.ends - self.starts

    def class_ids(self) -> np.ndarray:
        """Per row of the table, the index of its class."""
        return self._class_ids.copy()

    @cached_property
    def _class_ids(self) -> np.ndarray:
        ids = np.empty(len(self.order), dtype=np.int64)
        ids[self.order] = np.repeat(np.arange(self.n_classes), self.sizes)
        return ids

    def classes(self, sensitive: tuple[SensitiveAttribute, ...] | list[SensitiveAttribute]
                = ()) -> Classes:
        """The classes with the sensitive attributes, for evaluating privacy models."""
        return Classes(self._class_ids, self.n_classes, sensitive)

    def value_counts(self, attribute: SensitiveAttribute) -> ValueCounts:
        """Per class, how often each value of ``attribute`` occurs (sparse)."""
        return self.classes([attribute]).value_counts(attribute.name)
