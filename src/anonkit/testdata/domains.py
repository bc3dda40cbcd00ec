"""Field types and realistic domains, read from the raw table.

Each field is ``bool``, ``int``, ``float`` or ``str`` (inferred from the column's dtype or
declared). A generated value stays inside what the data shows: integers and floats within
the observed min/max, floats on the grid of the column's observed decimal places (so a
price stays a price), strings among the observed categories unless a path needs a new one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonkit.errors import InputError

TYPES = ("bool", "int", "float", "str")
MAX_DECIMALS = 6


@dataclass(frozen=True)
class FieldDomain:
    """One field: its type and observed domain."""

    name: str
    type: str
    low: float | int | None = None
    high: float | int | None = None
    decimals: int = 0  # float fields: values lie on a grid of 10**-decimals
    categories: tuple[str, ...] = ()  # str fields: the observed values, most frequent first

    @property
    def scale(self) -> int:
        return 10 ** self.decimals

    def size(self) -> float:
        """How many values the domain holds (for choosing the P-T field)."""
        if self.type == "bool":
            return 2
        if self.type == "str":
            return len(self.categories)
        assert self.low is not None and self.high is not None
        return (self.high - self.low) * (self.scale if self.type == "float" else 1) + 1

    def contains(self, value: object) -> bool:
        if self.type == "bool":
            return isinstance(value, bool | np.bool_)
        if self.type == "str":
            return isinstance(value, str)
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer |
                                                     np.floating):
            return False
        assert self.low is not None and self.high is not None
        if not self.low <= value <= self.high:
            return False
        if self.type == "int":
            return float(value).is_integer()
        scaled = float(value) * self.scale
        return abs(scaled - round(scaled)) <= 1e-6 * max(1.0, abs(scaled))

    def convert(self, value: object) -> object:
        """A raw cell as the Python value the program receives."""
        if self.type == "bool":
            return bool(value)
        if self.type == "int":
            return int(value)  # type: ignore[call-overload]
        if self.type == "float":
            return float(value)  # type: ignore[arg-type]
        return str(value)


def field_type(series: pd.Series, declared: str | None = None) -> str:
    if declared is not None:
        if declared not in TYPES:
            raise InputError(f"column {series.name!r}: unknown type {declared!r}; use one of "
                             f"{', '.join(TYPES)}")
        return declared
    if pd.api.types.is_bool_dtype(series):
        return "bool"
    if pd.api.types.is_integer_dtype(series):
        return "int"
    if pd.api.types.is_float_dtype(series):
        return "float"
    if pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series) or \
            isinstance(series.dtype, pd.CategoricalDtype):
        return "str"
    raise InputError(f"column {series.name!r} has type {series.dtype}, which test-data "
                     f"generation does not support (bool, int, float, str); declare its type")


def typed_table(df: pd.DataFrame, parameters: tuple[str, ...],
                declared: Mapping[str, str] | None = None,
                optional: tuple[str, ...] = ()) -> tuple[pd.DataFrame, list[FieldDomain]]:
    """The columns the program takes, converted to their types, and their domains.
    ``optional``: parameters with a default, which the table may leave out."""
    declared = dict(declared or {})
    missing = [p for p in parameters if p not in df.columns and p not in optional]
    if missing:
        raise InputError(f"the program takes {', '.join(map(repr, missing))}, which the table "
                         f"lacks; its columns are {', '.join(map(str, df.columns))} (column "
                         f"names must be the parameter names)")
    extra = [c for c in df.columns if c not in parameters]
    if extra:
        raise InputError(f"the table has column(s) {', '.join(map(repr, extra))} that the "
                         f"program does not take; drop them or add parameters")
    unknown = [c for c in declared if c not in df.columns]
    if unknown:
        raise InputError(f"a type is declared for unknown column(s) {', '.join(unknown)}")
    if len(df) == 0:
        raise InputError("the table has no rows")
    columns: dict[str, pd.Series] = {}
    domains = []
    for name in df.columns:
        series = df[name]
        if series.isna().any():
            row = int(np.flatnonzero(series.isna().to_numpy())[0])
            raise InputError(f"column {name!r} row {row + 1} is missing; test-data generation "
                             f"needs a value in every cell (fill or drop the row)")
        kind = field_type(series, declared.get(name))
        values = _converted(series, kind, name)
        columns[name] = values
        domains.append(_domain(name, kind, values))
    return pd.DataFrame(columns), domains


def _converted(series: pd.Series, kind: str, name: str) -> pd.Series:
    try:
        if kind == "bool":
            if pd.api.types.is_bool_dtype(series):
                return series.astype(bool)
            text = series.astype(str).str.strip().str.lower()
            mapping = {"true": True, "false": False, "1": True, "0": False}
            bad = ~text.isin(list(mapping))
            if bad.any():
                row = int(np.flatnonzero(bad.to_numpy())[0])
                raise InputError(f"column {name!r} row {row + 1}: {series.iloc[row]!r} is not "
                                 f"a bool (true/false)")
            return text.map(mapping).astype(bool)
        if kind == "int":
            numbers = pd.to_numeric(series, errors="raise")
            if not np.all(np.mod(numbers, 1) == 0):
                row = int(np.flatnonzero(np.mod(numbers, 1) != 0)[0])
                raise InputError(f"column {name!r} row {row + 1}: {series.iloc[row]!r} is not "
                                 f"an integer; declare the column float")
            return numbers.astype(np.int64)
        if kind == "float":
            numbers = pd.to_numeric(series, errors="raise").astype(np.float64)
            if not np.isfinite(numbers).all():
                row = int(np.flatnonzero(~np.isfinite(numbers.to_numpy()))[0])
                raise InputError(f"column {name!r} row {row + 1} is not a finite number")
            return numbers
        return series.astype(str).astype(object)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"column {name!r} cannot be read as {kind}: {exc}") from None


def _decimals(values: np.ndarray) -> int:
    for d in range(MAX_DECIMALS + 1):
        scaled = values * 10 ** d
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-7 * np.maximum(1.0, np.abs(scaled))):
            return d
    return MAX_DECIMALS


def _domain(name: str, kind: str, values: pd.Series) -> FieldDomain:
    if kind == "bool":
        return FieldDomain(name, kind)
    if kind == "str":
        counts = values.value_counts(sort=False)
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return FieldDomain(name, kind, categories=tuple(str(v) for v, _ in ordered))
    array = values.to_numpy()
    if kind == "int":
        return FieldDomain(name, kind, int(array.min()), int(array.max()))
    decimals = _decimals(array.astype(np.float64))
    return FieldDomain(name, kind, float(array.min()), float(array.max()), decimals)


def snap(domain: FieldDomain, value: float) -> object:
    """The domain value nearest to ``value`` (clamped, on the grid)."""
    if domain.type == "int":
        assert domain.low is not None and domain.high is not None
        return int(min(max(math.floor(value + 0.5), domain.low), domain.high))
    if domain.type == "float":
        assert domain.low is not None and domain.high is not None
        grid = round(value * domain.scale) / domain.scale
        return round(min(max(grid, domain.low), domain.high), domain.decimals)
    raise ValueError(domain.type)
