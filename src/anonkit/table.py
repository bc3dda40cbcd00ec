"""The table model: column roles and types, and the integer encoding algorithms work on.

A :class:`Schema` says what each column is (identifier, quasi-identifier, sensitive,
insensitive) and of what kind (numeric, categorical, ordinal, date). :func:`encode` turns
the quasi-identifiers and sensitive columns of a DataFrame into integer codes once, with a
decode table per column; algorithms work on those codes, never row by row on a DataFrame.

Codes are ordered: numeric and date codes by value, ordinal codes by the declared order,
categorical codes by the hierarchy's subtree order when a hierarchy is given (so every
subtree is a run of consecutive codes) and alphabetically otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property

import numpy as np
import pandas as pd

from anonkit.errors import InputError
from anonkit.hierarchy.base import Hierarchy


class Role(StrEnum):
    IDENTIFIER = "identifier"  # never appears in any release
    QUASI_IDENTIFIER = "quasi_identifier"
    SENSITIVE = "sensitive"
    INSENSITIVE = "insensitive"


class Kind(StrEnum):
    NUMERIC = "numeric"
    CATEGORICAL = "categorical"
    ORDINAL = "ordinal"
    DATE = "date"

    @property
    def is_ordered(self) -> bool:
        return self is not Kind.CATEGORICAL


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    role: Role
    kind: Kind | None = None  # inferred from the data when None
    hierarchy: Hierarchy | None = None
    order: tuple[object, ...] | None = None  # the categories of an ordinal column, low to high


@dataclass(frozen=True)
class Schema:
    """Roles and kinds of a table's columns. Columns not named are insensitive."""

    columns: tuple[ColumnSpec, ...]

    @classmethod
    def from_roles(
        cls,
        df: pd.DataFrame,
        quasi_identifiers: Sequence[str],
        sensitive: Sequence[str] | str | None = (),
        identifiers: Sequence[str] = (),
        kinds: Mapping[str, Kind | str] | None = None,
        hierarchies: Mapping[str, Hierarchy] | None = None,
        orders: Mapping[str, Sequence[object]] | None = None,
    ) -> Schema:
        """Name the roles of ``df``'s columns; kinds are inferred where not given."""
        check_column_names(df)
        sensitive = [sensitive] if isinstance(sensitive, str) else list(sensitive or ())
        quasi_identifiers = list(quasi_identifiers)
        kinds = {k: Kind(v) for k, v in (kinds or {}).items()}
        hierarchies = dict(hierarchies or {})
        orders = dict(orders or {})
        if not quasi_identifiers:
            raise InputError("no quasi-identifiers given: name at least one column (--qi a,b)")
        named: dict[str, Role] = {}
        for role, names in (
            (Role.IDENTIFIER, identifiers),
            (Role.QUASI_IDENTIFIER, quasi_identifiers),
            (Role.SENSITIVE, sensitive),
        ):
            for name in names:
                if name not in df.columns:
                    raise InputError(
                        f"unknown column {name!r} given as {role.value.replace('_', '-')}; "
                        f"the table has: {', '.join(map(str, df.columns))}"
                    )
                if name in named and named[name] is not role:
                    raise InputError(
                        f"column {name!r} is given two roles: {named[name].value} and "
                        f"{role.value}; give it one"
                    )
                named[name] = role
        for mapping, what in ((kinds, "a kind"), (hierarchies, "a hierarchy"),
                              (orders, "an order")):
            for name in mapping:
                if name not in df.columns:
                    raise InputError(f"{what} is given for unknown column {name!r}")
        specs = []
        for name in df.columns:
            role = named.get(name, Role.INSENSITIVE)
            kind = kinds.get(name)
            if kind is None and role in (Role.QUASI_IDENTIFIER, Role.SENSITIVE):
                kind = Kind.ORDINAL if name in orders else infer_kind(df[name], name)
            order = tuple(orders[name]) if name in orders else None
            if kind is Kind.ORDINAL and order is None and role is not Role.INSENSITIVE:
                raise InputError(
                    f"column {name!r} is ordinal but no order is given; list its categories "
                    f"from low to high"
                )
            specs.append(ColumnSpec(name, role, kind, hierarchies.get(name), order))
        return cls(tuple(specs))

    def names(self, role: Role) -> list[str]:
        return [c.name for c in self.columns if c.role is role]

    @property
    def quasi_identifiers(self) -> list[str]:
        return self.names(Role.QUASI_IDENTIFIER)

    @property
    def sensitive(self) -> list[str]:
        return self.names(Role.SENSITIVE)

    @property
    def identifiers(self) -> list[str]:
        return self.names(Role.IDENTIFIER)

    @property
    def released_columns(self) -> list[str]:
        """Every column but the identifiers, in table order."""
        return [c.name for c in self.columns if c.role is not Role.IDENTIFIER]

    def __getitem__(self, name: str) -> ColumnSpec:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def with_hierarchy(self, name: str, hierarchy: Hierarchy) -> Schema:
        return Schema(tuple(replace(c, hierarchy=hierarchy) if c.name == name else c
                            for c in self.columns))

    def describe(self) -> dict[str, dict[str, str]]:
        """A plain description (for reports and the release history)."""
        return {c.name: {"role": c.role.value, "kind": (c.kind.value if c.kind else "")}
                for c in self.columns}


def check_column_names(df: pd.DataFrame) -> None:
    names = [str(c) for c in df.columns]
    seen: set[str] = set()
    dups = sorted({n for n in names if n in seen or seen.add(n)})  # type: ignore[func-returns-value]
    if dups:
        raise InputError(
            f"duplicate column names: {', '.join(map(repr, dups))}; rename them so each "
            f"column has its own name"
        )


def infer_kind(series: pd.Series, name: str) -> Kind:
    """Numeric and datetime dtypes give their kind; text that is mostly numbers is an error."""
    if pd.api.types.is_bool_dtype(series):
        return Kind.CATEGORICAL
    if pd.api.types.is_numeric_dtype(series):
        return Kind.NUMERIC
    if pd.api.types.is_datetime64_any_dtype(series):
        return Kind.DATE
    if isinstance(series.dtype, pd.CategoricalDtype):  # already factorized: use it
        codes, uniques = series.cat.codes.to_numpy(), series.cat.categories
    else:
        codes, uniques = pd.factorize(series, use_na_sentinel=True)
    if len(uniques) == 0:
        return Kind.CATEGORICAL
    as_number = pd.to_numeric(pd.Series(np.asarray(uniques, dtype=object)).astype(str),
                              errors="coerce")
    is_number = as_number.notna().to_numpy()
    if is_number.all() or not is_number.any():  # every row's value is text, or a number
        return Kind.CATEGORICAL
    # share of rows (not of distinct values) that hold a number
    row_is_number = is_number[codes[codes >= 0]]
    numeric_share = row_is_number.mean()
    if 0.5 <= numeric_share < 1.0:
        position = int(np.argmax(~row_is_number))
        row = series.index[np.flatnonzero(codes >= 0)[position]]
        raise InputError(
            f"column {name!r} mixes numbers and text: row {row} has "
            f"{series[row]!r}; fix the value, or declare the column categorical "
            f"(kinds={{{name!r}: 'categorical'}} / [kinds] in the config)"
        )
    return Kind.CATEGORICAL


@dataclass(frozen=True)
class EncodedColumn:
    """One column as integer codes plus the table to decode them.

    ``values[codes[i]]`` is row ``i``'s value. Codes run from 0 to ``cardinality - 1`` in
    the column's order (see the module docstring), in the narrowest signed integer type that
    holds them (:func:`code_type_for`). When missing values are allowed they get the last
    code, ``missing_code``; otherwise ``missing_code`` is -1.
    """

    name: str
    kind: Kind
    codes: np.ndarray
    values: np.ndarray
    hierarchy: Hierarchy | None = None
    hierarchy_leaf: np.ndarray | None = None  # code -> leaf index in ``hierarchy``
    missing_code: int = -1

    @property
    def cardinality(self) -> int:
        return len(self.values)

    @cached_property
    def magnitudes(self) -> np.ndarray:
        """Per code, a float position on the column's scale (numeric value, day number,
        ordinal rank, or code for categorical); NaN for the missing code."""
        if self.kind is Kind.NUMERIC:
            mags = np.asarray(self.values, dtype=np.float64).copy()
        elif self.kind is Kind.DATE:
            present = self.values[: self.cardinality - (self.missing_code >= 0)]
            mags = pd.to_datetime(pd.Series(present)).to_numpy("datetime64[D]").astype(
                np.float64)
            if self.missing_code >= 0:
                mags = np.append(mags, np.nan)
        else:
            mags = np.arange(self.cardinality, dtype=np.float64)
        if self.missing_code >= 0:
            mags[self.missing_code] = np.nan
        return mags

    @cached_property
    def domain_span(self) -> float:
        """max - min of the column's magnitudes (for normalised ranges); 0 if constant."""
        m = self.magnitudes[~np.isnan(self.magnitudes)]
        return float(m.max() - m.min()) if len(m) else 0.0

    @cached_property
    def hierarchy_is_contiguous(self) -> bool:
        """Whether every hierarchy node's codes form one run, so the lowest common ancestor
        of a set of codes is that of its smallest and largest."""
        if self.hierarchy is None or self.hierarchy_leaf is None:
            return False
        present = self.hierarchy_leaf[self.hierarchy_leaf >= 0]
        return self.hierarchy.is_contiguous(present)

    def decode(self, codes: np.ndarray | None = None) -> np.ndarray:
        return self.values[self.codes if codes is None else codes]


@dataclass(frozen=True)
class EncodedTable:
    """The quasi-identifiers and sensitive columns of a table, encoded."""

    schema: Schema
    n_rows: int
    quasi_identifiers: tuple[EncodedColumn, ...]
    sensitive: tuple[EncodedColumn, ...]
    index: pd.Index = field(repr=False)

    @cached_property
    def qi_matrix(self) -> np.ndarray:
        """``(n_rows, n_qis)`` int32, C-contiguous: row ``i`` holds row ``i``'s QI codes."""
        if not self.quasi_identifiers:
            return np.zeros((self.n_rows, 0), dtype=np.int32)
        return np.ascontiguousarray(np.stack([c.codes for c in self.quasi_identifiers],
                                             axis=1).astype(np.int32, copy=False))

    def column(self, name: str) -> EncodedColumn:
        for c in (*self.quasi_identifiers, *self.sensitive):
            if c.name == name:
                return c
        raise KeyError(name)


def encode(df: pd.DataFrame, schema: Schema, allow_missing: bool = False) -> EncodedTable:
    """Encode the quasi-identifiers and sensitive columns of ``df`` (which is not modified).

    Missing values (NaN, None, empty cells) in a quasi-identifier are an error unless
    ``allow_missing``; then each column's missing cells form one value of their own, which
    a release shows as missing and counts as a value in every class.
    """
    if len(df) == 0:
        raise InputError("the table has no rows (header only?); give at least one data row")
    qis = tuple(
        encode_column(df[name], schema[name], allow_missing=allow_missing)
        for name in schema.quasi_identifiers
    )
    sens = tuple(
        encode_column(df[name], schema[name], allow_missing=True) for name in schema.sensitive
    )
    return EncodedTable(schema, len(df), qis, sens, df.index)


def encode_column(series: pd.Series, spec: ColumnSpec, allow_missing: bool) -> EncodedColumn:
    """Encode one column. Work per distinct value, never per row: factorize first (one pass,
    none for a Categorical), then parse, validate and order the distinct values, then map
    the row codes (one gather)."""
    kind = spec.kind or infer_kind(series, spec.name)
    raw_codes, raw_uniques = _factorize(series)
    if raw_uniques.dtype == object:
        text = np.array([str(u).strip() for u in raw_uniques], dtype=object)
        blank = text == ""
    else:
        text, blank = raw_uniques, np.zeros(len(raw_uniques), dtype=bool)
    # every raw value occurs in some row, so a blank one is a missing row
    any_missing = bool(blank.any()) or (len(raw_codes) > 0 and int(raw_codes.min()) < 0)
    if any_missing and not allow_missing:
        row_missing = (raw_codes < 0) | blank[np.maximum(raw_codes, 0)]
        rows = series.index[row_missing][:5].tolist()
        raise InputError(
            f"column {spec.name!r} has {int(row_missing.sum())} missing value(s) (first rows: "
            f"{rows}); fill them, drop those rows, or pass --allow-missing to treat a missing "
            f"value as a value of its own"
        )
    keep = ~blank
    distinct = _typed_values(text[keep], kind, spec.name, series, raw_codes,
                             np.flatnonzero(keep))
    hierarchy_leaf = None
    if spec.hierarchy is not None:
        code_of_distinct, values, hierarchy_leaf = _order_with_hierarchy(distinct, spec, kind)
    elif kind is Kind.ORDINAL:
        code_of_distinct, values = _order_ordinal(distinct, spec)
    else:
        sub_codes, values = pd.factorize(distinct, sort=True)
        code_of_distinct = np.asarray(sub_codes, dtype=np.int32)
        values = np.asarray(values)
        if kind is Kind.CATEGORICAL:
            values = values.astype(object)
    code_of_raw = np.full(len(raw_uniques), -1, dtype=np.int32)
    code_of_raw[keep] = code_of_distinct
    missing_code = -1
    if any_missing:
        missing_code = len(values)
        code_of_raw[~keep] = missing_code
        values = np.append(values.astype(object), None)
        if hierarchy_leaf is not None:
            hierarchy_leaf = np.append(hierarchy_leaf, -1).astype(np.int32)
        # raw code -1 (missing) -> index -1 -> the missing code
        code_of_raw = np.append(code_of_raw, missing_code).astype(np.int32)
    code_type = code_type_for(len(values))
    if missing_code < 0 and np.array_equal(code_of_raw, np.arange(len(code_of_raw))):
        # the raw codes already are the codes
        codes = raw_codes.astype(code_type)  # a copy: never the caller's array
    else:
        codes = code_of_raw.astype(code_type).take(raw_codes)
    return EncodedColumn(spec.name, kind, codes, values, spec.hierarchy, hierarchy_leaf,
                         missing_code)


def code_type_for(cardinality: int) -> type[np.signedinteger]:
    """The narrowest signed integer type that holds the codes ``0 .. cardinality - 1``."""
    return np.int8 if cardinality <= 2**7 else np.int16 if cardinality <= 2**15 else np.int32


#: an integer column whose values span at most this many numbers (and no more than a few
#: per row) is factorized by counting instead of hashing
_DENSE_SPAN = 1 << 22


def _factorize(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(per row, the index of its value in the second array or -1 when missing; the
    distinct values that occur, in any order). Text and other objects come as an object
    array, numbers and datetimes in their own dtype."""
    if isinstance(series.dtype, pd.CategoricalDtype):  # codes are there: count, not hash
        codes = series.cat.codes.to_numpy()
        categories = np.asarray(series.cat.categories, dtype=object)
        used = _occurring(codes, len(categories))
        if used.all():
            return codes, categories
        new_code = np.append(np.cumsum(used) - 1, -1)  # (index -1: missing stays -1)
        return new_code[codes], categories[used]
    values = series.to_numpy()
    if values.dtype.kind == "i" or (values.dtype.kind == "u" and values.dtype.itemsize < 8):
        low, high = (values.min(), values.max()) if len(values) else (0, -1)
        span = int(high) - int(low) + 1
        if 0 < span <= min(_DENSE_SPAN, 4 * len(values)):  # integers close together
            offsets = np.subtract(values, low, dtype=np.intp)
            used = _occurring(offsets, span)
            uniques = (np.flatnonzero(used) + low).astype(values.dtype)
            if used.all():
                return offsets, uniques
            return (np.cumsum(used) - 1)[offsets], uniques
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    return codes, np.asarray(uniques, dtype=None if _is_plain_numeric(series) else object)


def _occurring(codes: np.ndarray, n: int) -> np.ndarray:
    """Which of the codes ``0 .. n - 1`` some row holds (-1, missing, may occur too).
    Usually every one shows up within the first rows; then the others are not looked at."""
    used = np.zeros(n, dtype=bool)
    for part in (codes[:_FIRST_ROWS], codes[_FIRST_ROWS:]):
        used |= np.bincount(part + 1, minlength=n + 1)[1:] > 0  # (+1: -1 counts first)
        if used.all():
            break
    return used


#: rows looked at first to find which codes occur
_FIRST_ROWS = 1 << 16


def _is_plain_numeric(series: pd.Series) -> bool:
    return (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)) \
        or pd.api.types.is_datetime64_any_dtype(series)


def _typed_values(distinct: np.ndarray, kind: Kind, name: str, series: pd.Series,
                  raw_codes: np.ndarray, raw_positions: np.ndarray) -> np.ndarray:
    """The distinct non-missing values in the column's own type (numbers, dates, text)."""

    def first_row_with(raw_position: int) -> object:
        return series.index[int(np.argmax(raw_codes == raw_position))]

    if kind is Kind.NUMERIC:
        if distinct.dtype != object:
            return distinct
        converted = pd.to_numeric(pd.Series(distinct), errors="coerce").to_numpy()
        bad = np.isnan(converted.astype(np.float64))
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(
                f"column {name!r} is numeric but row {first_row_with(raw_positions[i])} has "
                f"{distinct[i]!r}; fix the value or declare the column categorical")
        return converted
    if kind is Kind.DATE:
        if distinct.dtype != object:
            return distinct
        converted = pd.to_datetime(pd.Series(distinct), errors="coerce")
        bad = converted.isna().to_numpy()
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(
                f"column {name!r} is a date column but row {first_row_with(raw_positions[i])} "
                f"has {distinct[i]!r}; use ISO dates (2024-01-31) or declare it categorical")
        return converted.to_numpy()
    return np.array([str(v) for v in distinct], dtype=object)


def _order_ordinal(distinct: np.ndarray, spec: ColumnSpec) -> tuple[np.ndarray, np.ndarray]:
    order = [str(v) for v in (spec.order or ())]
    lookup = {v: i for i, v in enumerate(order)}
    unknown = sorted({str(v) for v in distinct if str(v) not in lookup})
    if unknown:
        raise InputError(
            f"column {spec.name!r} has values not in its declared order: {unknown[:10]}; add "
            f"them to the order")
    codes = np.array([lookup[str(v)] for v in distinct], dtype=np.int32)
    return codes, np.array(order, dtype=object)


def _order_with_hierarchy(distinct: np.ndarray, spec: ColumnSpec,
                          kind: Kind) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes in an order that keeps subtrees contiguous: by value for numeric and date
    columns (the distinct values present), by subtree order otherwise (every leaf)."""
    hierarchy = spec.hierarchy
    assert hierarchy is not None
    leaf_of_distinct = hierarchy.leaf_codes(distinct, column=spec.name)
    if kind in (Kind.NUMERIC, Kind.DATE):
        order = np.argsort(distinct, kind="stable")
        code_of_distinct = np.empty(len(distinct), dtype=np.int32)
        code_of_distinct[order] = np.arange(len(distinct), dtype=np.int32)
        return code_of_distinct, distinct[order], leaf_of_distinct[order].astype(np.int32)
    if kind is Kind.ORDINAL:
        codes, values = _order_ordinal(distinct, spec)
        return codes, values, hierarchy.leaf_codes(values, column=spec.name)
    order = hierarchy.dfs_order()
    code_of_leaf = np.empty(len(order), dtype=np.int32)
    code_of_leaf[order] = np.arange(len(order), dtype=np.int32)
    values = hierarchy.leaves[order].astype(object)
    return code_of_leaf[leaf_of_distinct], values, order.astype(np.int32)
