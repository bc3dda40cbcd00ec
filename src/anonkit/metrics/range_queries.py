"""Aggregate queries over a (k,e)-anonymous release, and their error as a utility metric.

A permuted release keeps every quasi-identifier exact and permutes the sensitive values
within each group, so a query's selection is exact (COUNT is answered exactly) while SUM and
AVG are known only up to which of its group's values each selected row holds. For a group of
``n`` rows of which ``m`` are selected, the selected sum lies between the sum of the group's
``m`` smallest and ``m`` largest values; the point estimate is ``m`` times the group mean
(Zhang et al., ICDE 2007). AVG divides the bounds and the estimate by the exact count.

:func:`relative_error` is the utility figure: the mean relative error of the SUM estimate on
random range queries over the quasi-identifiers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from anonkit.errors import InputError
from anonkit.release import Release

AGGREGATES = ("sum", "count", "avg")


@dataclass(frozen=True)
class QueryAnswer:
    """What the release allows about one aggregate: ``low <= true value <= high``."""

    agg: str
    low: float
    high: float
    estimate: float
    count: int  # rows selected (exact: the quasi-identifiers are released exactly)


def query(release: Release | pd.DataFrame, where: Any = None, agg: str = "sum", *,
          sensitive: str | None = None, group_column: str | None = None) -> QueryAnswer:
    """Answer ``agg`` over the rows ``where`` selects, from a permuted release.

    ``release``: a :class:`Release`, or a published table (then name ``sensitive`` and,
    unless it is ``group``, ``group_column``). ``where``: None (every row), a boolean mask
    per row, or a mapping ``column -> value`` or ``column -> (low, high)`` (inclusive), all
    conditions together.
    """
    if agg not in AGGREGATES:
        raise InputError(f"agg must be one of {', '.join(AGGREGATES)}, got {agg!r}")
    data, value_column, groups = _parts(release, sensitive, group_column)
    mask = selection(data, where)
    values = data[value_column].to_numpy(dtype=np.float64)
    low, high, estimate = _sum_bounds(groups, values, mask)
    count = int(mask.sum())
    if agg == "count":
        return QueryAnswer(agg, count, count, count, count)
    if agg == "avg":
        if count == 0:
            nan = float("nan")
            return QueryAnswer(agg, nan, nan, nan, 0)
        return QueryAnswer(agg, low / count, high / count, estimate / count, count)
    return QueryAnswer(agg, low, high, estimate, count)


def _parts(release: Release | pd.DataFrame, sensitive: str | None,
           group_column: str | None) -> tuple[pd.DataFrame, str, np.ndarray]:
    if isinstance(release, Release):
        if release.group_column is None:
            raise InputError(f"query() needs a permuted release with a group column; "
                             f"{release.method!r} made a {release.kind.value} release")
        data, group_column = release.data, release.group_column
        sensitive = sensitive or (release.schema.sensitive[0] if release.schema.sensitive
                                  else None)
    else:
        data, group_column = release, group_column or "group"
    if sensitive is None or sensitive not in data.columns:
        raise InputError(f"name the sensitive column of the release (sensitive=...); the "
                         f"columns are: {', '.join(map(str, data.columns))}")
    if group_column not in data.columns:
        raise InputError(f"the release has no group column {group_column!r}; pass "
                         f"group_column=...")
    groups, _ = pd.factorize(data[group_column], sort=True)
    return data, sensitive, groups.astype(np.int64)


def selection(data: pd.DataFrame, where: Any) -> np.ndarray:
    """The boolean row mask ``where`` describes (see :func:`query`)."""
    if where is None:
        return np.ones(len(data), dtype=bool)
    if isinstance(where, Mapping):
        mask = np.ones(len(data), dtype=bool)
        for column, condition in where.items():
            if column not in data.columns:
                raise InputError(f"where: no column {column!r} in the release")
            values = data[column]
            # a blank value (a placeholder row of an incremental release) matches nothing
            if isinstance(condition, tuple) and len(condition) == 2:
                low, high = condition
                mask &= ((values >= low) & (values <= high)).to_numpy(dtype=bool,
                                                                     na_value=False)
            else:
                mask &= (values == condition).to_numpy(dtype=bool, na_value=False)
        return mask
    mask = np.asarray(where)
    if mask.dtype != bool or mask.shape != (len(data),):
        raise InputError(f"where must be None, a mapping of column conditions or a boolean "
                         f"mask of {len(data)} rows")
    return mask


class _Groups:
    """The per-group sorted values and their running sums, computed once for many queries."""

    def __init__(self, groups: np.ndarray, values: np.ndarray) -> None:
        self.groups = groups
        self.n_groups = int(groups.max()) + 1 if len(groups) else 0
        order = np.lexsort((values, groups))
        self.sizes = np.bincount(groups, minlength=self.n_groups)
        self.ends = np.cumsum(self.sizes)
        self.starts = self.ends - self.sizes
        self.total = np.concatenate([[0.0], np.cumsum(values[order])])
        self.sums = self.total[self.ends] - self.total[self.starts]

    def bounds(self, mask: np.ndarray) -> tuple[float, float, float]:
        picked = np.bincount(self.groups[mask], minlength=self.n_groups)
        total, starts, ends = self.total, self.starts, self.ends
        low = total[starts + picked] - total[starts]  # the smallest `picked` values
        high = total[ends] - total[ends - picked]  # the largest
        estimate = np.divide(picked * self.sums, self.sizes, out=np.zeros(self.n_groups),
                             where=self.sizes > 0)
        return float(low.sum()), float(high.sum()), float(estimate.sum())


def _sum_bounds(groups: np.ndarray, values: np.ndarray,
                mask: np.ndarray) -> tuple[float, float, float]:
    """Bounds and estimate of the selected rows' sum, all groups at once."""
    return _Groups(groups, values).bounds(mask)


def relative_error(release: Release | pd.DataFrame, true_values: np.ndarray, *,
                   n_queries: int = 100, columns: list[str] | None = None, seed: int = 0,
                   sensitive: str | None = None,
                   group_column: str | None = None) -> dict[str, float]:
    """Mean and median relative error of the SUM estimate over ``n_queries`` random range
    queries (one or two numeric quasi-identifiers, bounds at random quantiles; queries that
    select nothing or sum to 0 are skipped). ``true_values``: the original sensitive value of
    each released row. The queries' randomness is not privacy randomness: a fixed seed makes
    the figure comparable between releases."""
    data, value_column, groups = _parts(release, sensitive, group_column)
    if columns is None:
        if isinstance(release, Release):
            columns = list(release.schema.quasi_identifiers)
        else:
            columns = [c for c in data.columns if c not in (value_column, group_column)]
        columns = [c for c in columns if pd.api.types.is_numeric_dtype(data[c])]
    if not columns:
        raise InputError("relative_error needs numeric quasi-identifiers to draw range "
                         "queries on")
    rng = np.random.default_rng(seed)
    values = data[value_column].to_numpy(dtype=np.float64)
    truth = np.asarray(true_values, dtype=np.float64)
    errors = []
    by_group = _Groups(groups, values)
    for _ in range(n_queries):
        mask = np.ones(len(data), dtype=bool)
        for column in rng.choice(columns, size=min(len(columns), rng.integers(1, 3)),
                                 replace=False):
            # blank (placeholder rows): no query selects them
            qi = data[column].to_numpy(dtype=np.float64, na_value=np.nan)
            low, high = np.sort(np.nanquantile(qi, rng.random(2)))
            mask &= (qi >= low) & (qi <= high)
        actual = truth[mask].sum()
        if not mask.any() or actual == 0:
            continue
        estimate = by_group.bounds(mask)[2]
        errors.append(abs(estimate - actual) / abs(actual))
    if not errors:
        return {"ke.relative_error.mean": float("nan"), "ke.relative_error.median": float("nan"),
                "ke.queries": 0.0}
    return {"ke.relative_error.mean": float(np.mean(errors)),
            "ke.relative_error.median": float(np.median(errors)),
            "ke.queries": float(len(errors))}


__all__ = ["AGGREGATES", "QueryAnswer", "query", "relative_error", "selection"]
