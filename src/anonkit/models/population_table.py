"""A population table: the people a released sample was drawn from, as k-map and
δ-presence judge a release against them.

It holds the population's quasi-identifier values as read (a pandas DataFrame; the models
load without pandas, so only the checker looks inside), where they came from (for
messages), and the hierarchies that tell which values a hierarchy label stands for. The
checker counts, per released class, the population rows its labels cover
(:func:`anonkit.labels.covered_counts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: the models load without pandas
    import pandas as pd

    from anonkit.hierarchy.base import Hierarchy


@dataclass(frozen=True, eq=False)
class PopulationTable:
    """The population's rows (at least the quasi-identifier columns), where they came from,
    and the quasi-identifiers' hierarchies. Compared by identity: one table, one count per
    class, however many models read it."""

    frame: pd.DataFrame
    source: str = "the population table"
    hierarchies: Mapping[str, Hierarchy] = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        return len(self.frame)

    def with_hierarchies(self, hierarchies: Mapping[str, Hierarchy]) -> PopulationTable:
        """The same table, reading hierarchy labels with ``hierarchies`` too (the given
        ones win); ``self`` when they add nothing."""
        merged = {**hierarchies, **self.hierarchies}
        if merged.keys() == self.hierarchies.keys():
            return self
        return replace(self, hierarchies=merged)
