"""The integer encoding algorithms work on.

:func:`encode` turns the quasi-identifiers and sensitive columns of a DataFrame into
integer codes once, with a decode table per column; algorithms work on those codes, never
row by row on a DataFrame.

Codes are ordered: numeric and date codes by value, ordinal codes by the declared order,
categorical codes by the hierarchy's subtree order when a hierarchy is given (so every
subtree is a run of consecutive codes) and alphabetically otherwise.

:func:`encode` fits the dictionaries on the table it encodes. An :class:`Encoding` keeps
them (fitted on one table, or declared) to encode other tables alike: fragments, streams,
later releases; it stores as plain JSON.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import ClassVar

import numpy as np
import pandas as pd

from anonkit.data.schema import ColumnSpec, Kind, Role, Schema, _at, infer_kind
from anonkit.errors import InputError
from anonkit.hierarchy.base import Hierarchy


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

    The same as ``Encoding.fit(df, schema, allow_missing).transform(df)``, in one pass.
    """
    return _fit_table(df, schema, allow_missing, reference_counts=False)[1]


def encode_column(series: pd.Series, spec: ColumnSpec, allow_missing: bool) -> EncodedColumn:
    """Encode one column. Work per distinct value, never per row: factorize first (one pass,
    none for a Categorical), then parse, validate and order the distinct values, then map
    the row codes (one gather)."""
    return _fit_column(series, spec, allow_missing)[1]


@dataclass(frozen=True, eq=False)
class ColumnEncoding:
    """The fixed dictionary of one column: what its values are, in code order.

    ``domain`` holds the column's values in their own type (numbers, datetime64, text),
    code ``i`` standing for ``domain[i]``; when ``missing``, a missing value has the code
    after them. ``hierarchy_leaf`` maps each domain value to its hierarchy leaf.
    ``reference_counts`` (sensitive columns; optional) counts each code, the missing one
    included, in the table classes are compared with by t-closeness, δ-disclosure and
    β-likeness.
    """

    name: str
    kind: Kind
    domain: np.ndarray
    missing: bool = False
    hierarchy: Hierarchy | None = None
    hierarchy_leaf: np.ndarray | None = None
    order: tuple[object, ...] | None = None
    reference_counts: np.ndarray | None = None

    @property
    def cardinality(self) -> int:
        return len(self.domain) + self.missing

    @property
    def missing_code(self) -> int:
        return len(self.domain) if self.missing else -1

    @cached_property
    def values(self) -> np.ndarray:
        """The decode table (:attr:`EncodedColumn.values`): ``domain``, and None for the
        missing code."""
        if not self.missing:
            return self.domain
        return np.append(self.domain.astype(object), None)

    @cached_property
    def decode_leaf(self) -> np.ndarray | None:
        """:attr:`EncodedColumn.hierarchy_leaf`: ``hierarchy_leaf``, and -1 for the
        missing code."""
        if self.hierarchy_leaf is None or not self.missing:
            return self.hierarchy_leaf
        return np.append(self.hierarchy_leaf, -1).astype(np.int32)

    def codes_of(self, values: np.ndarray) -> np.ndarray:
        """The code of each of ``values`` (in the domain's type), -1 for one outside it."""
        index = self._index
        if index.is_unique:
            return index.get_indexer(values).astype(np.int32, copy=False)
        # an order listing a value twice: its last place, as fitting gives
        place = {v: i for i, v in enumerate(self.domain.tolist())}
        return np.array([place.get(v, -1) for v in values.tolist()], dtype=np.int32)

    @cached_property
    def _index(self) -> pd.Index:
        return pd.Index(self.domain)


@dataclass(frozen=True, eq=False)
class Encoding:
    """Dictionaries and domains fitted once and applied to many tables: the fragments of
    one table, the rows of a stream, the successive releases of one dataset. Every table
    it transforms gets the same codes for the same values, and the sensitive columns can
    carry one reference distribution for all of them
    (``SensitiveAttribute.from_encoded(column, encoding.reference_counts[name])``).

    ``columns`` holds a :class:`ColumnEncoding` per quasi-identifier then per sensitive
    column, in schema order. Build one with :meth:`fit` or :meth:`from_domain`; store it
    with :meth:`to_dict`.
    """

    schema: Schema
    columns: tuple[ColumnEncoding, ...]
    allow_missing: bool = False

    FORMAT: ClassVar[str] = "anonkit-encoding/1"

    @classmethod
    def fit(cls, df: pd.DataFrame, schema: Schema, allow_missing: bool = False) -> Encoding:
        """The encoding :func:`encode` gives ``df``: its values, ordered as there. The
        sensitive columns' reference counts are ``df``'s."""
        return _fit_table(df, schema, allow_missing, reference_counts=True)[0]

    @classmethod
    def from_domain(
        cls,
        schema: Schema,
        domains: Mapping[str, Sequence[object] | tuple[object, object]],
        allow_missing: bool = False,
        reference_counts: Mapping[str, Mapping[object, float]] | None = None,
    ) -> Encoding:
        """An encoding from declared domains instead of data.

        ``domains`` lists per quasi-identifier and sensitive column its values (any
        order; codes are ordered as :func:`encode` orders them). For a numeric or date
        column a *tuple* ``(low, high)`` stands for every integer, or every day, from
        ``low`` to ``high``. A column with a hierarchy may be left out (its leaves are its
        domain), as may an ordinal one (its order is). Every column needs a declared kind.

        ``allow_missing`` gives each quasi-identifier a missing value as a value of its
        own (sensitive columns always have one, as :func:`encode` allows them).
        ``reference_counts`` maps a sensitive column to ``{value: count}`` (None for the
        missing value), the distribution t-closeness, δ and β compare classes with.
        """
        names = [*schema.quasi_identifiers, *schema.sensitive]
        for name in domains:
            if name not in names:
                raise InputError(f"a domain is given for {name!r}, which is not a "
                                 f"quasi-identifier or sensitive column "
                                 f"({', '.join(names)})")
        for name in reference_counts or {}:
            if name not in schema.sensitive:
                raise InputError(f"reference counts are given for {name!r}, which is not a "
                                 f"sensitive column ({', '.join(schema.sensitive) or 'none'})")
        columns = []
        for name in names:
            spec = schema[name]
            if spec.kind is None:
                raise InputError(f"column {name!r} has no kind; declare it (numeric, "
                                 f"categorical, ordinal or date) to encode it from a domain")
            distinct = _declared_values(spec, domains.get(name))
            _, domain, leaf = _order_values(distinct, spec, spec.kind)
            column = ColumnEncoding(name, spec.kind, domain,
                                    allow_missing or spec.role is Role.SENSITIVE,
                                    spec.hierarchy, leaf, spec.order)
            counts = (reference_counts or {}).get(name)
            if counts is not None:
                column = replace(column, reference_counts=_counts_by_value(column, counts))
            columns.append(column)
        return cls(schema, tuple(columns), allow_missing)

    def column(self, name: str) -> ColumnEncoding:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def reference_counts(self) -> dict[str, np.ndarray]:
        """Per sensitive column that has them, its reference counts (one per code)."""
        return {c.name: c.reference_counts for c in self.columns
                if c.reference_counts is not None}

    def transform(self, df: pd.DataFrame) -> EncodedTable:
        """Encode ``df`` (any table or fragment with the columns) with these dictionaries.
        A value outside a column's domain, or a missing value where the column has none,
        is an :class:`InputError` naming the column, the row and the value."""
        if len(df) == 0:
            raise InputError("the table has no rows (header only?); give at least one data "
                             "row")
        for c in self.columns:
            if c.name not in df.columns:
                raise InputError(f"column {c.name!r} of the encoding is not in the table; "
                                 f"its columns are: {', '.join(map(str, df.columns))}")
        qis = tuple(_transform_column(self.column(name), df[name], self.allow_missing)
                    for name in self.schema.quasi_identifiers)
        sens = tuple(_transform_column(self.column(name), df[name], True)
                     for name in self.schema.sensitive)
        return EncodedTable(self.schema, len(df), qis, sens, df.index)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready description (plain lists, numbers and text): values keep their
        type and exact value, a hierarchy is stored as its ARX rows (leaf first)."""
        return {
            "format": self.FORMAT,
            "allow_missing": self.allow_missing,
            "schema": [{"name": c.name, "role": c.role.value,
                        "kind": c.kind.value if c.kind else None,
                        "order": None if c.order is None else [str(v) for v in c.order]}
                       for c in self.schema.columns],
            "columns": [_column_to_dict(c) for c in self.columns],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> Encoding:
        """The encoding :meth:`to_dict` described."""
        if not isinstance(d, Mapping) or d.get("format") != cls.FORMAT:
            found = d.get("format") if isinstance(d, Mapping) else type(d).__name__
            raise InputError(f"not a stored encoding (format {found!r}, expected "
                             f"{cls.FORMAT!r}); store encodings with Encoding.to_dict")
        try:
            columns = [_column_from_dict(c) for c in d["columns"]]  # type: ignore[attr-defined]
            hierarchies = {c.name: c.hierarchy for c in columns}
            specs = tuple(
                ColumnSpec(str(s["name"]), Role(s["role"]),
                           None if s["kind"] is None else Kind(s["kind"]),
                           hierarchies.get(str(s["name"])),
                           None if s["order"] is None else tuple(s["order"]))
                for s in d["schema"])  # type: ignore[attr-defined]
            return cls(Schema(specs), tuple(columns), bool(d["allow_missing"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"the stored encoding is damaged ({type(exc).__name__}: {exc}); "
                             f"store it again with Encoding.to_dict") from None


def _fit_table(df: pd.DataFrame, schema: Schema, allow_missing: bool,
               reference_counts: bool) -> tuple[Encoding, EncodedTable]:
    """The encoding of ``df`` and ``df`` encoded with it, in one pass per column."""
    if len(df) == 0:
        raise InputError("the table has no rows (header only?); give at least one data row")
    qis = [_fit_column(df[name], schema[name], allow_missing)
           for name in schema.quasi_identifiers]
    sens = [_fit_column(df[name], schema[name], True, reference_counts)
            for name in schema.sensitive]
    encoding = Encoding(schema, tuple(e for e, _ in (*qis, *sens)), allow_missing)
    table = EncodedTable(schema, len(df), tuple(c for _, c in qis), tuple(c for _, c in sens),
                         df.index)
    return encoding, table


@dataclass(frozen=True)
class _Seen:
    """The values one column of one table holds (see :func:`_seen_values`)."""

    series: pd.Series
    raw_codes: np.ndarray  # per row, its raw distinct value (-1: missing)
    keep: np.ndarray  # per raw distinct value: not blank
    distinct: np.ndarray  # the kept raw distinct values, in the column's type
    any_missing: bool

    def first_row(self, raw_position: int) -> object:
        """The first row holding raw distinct value ``raw_position`` (error paths only)."""
        return self.series.index[int(np.argmax(self.raw_codes == raw_position))]


def _seen_values(series: pd.Series, name: str, kind: Kind, allow_missing: bool) -> _Seen:
    """Factorize a column (one pass, none for a Categorical), then find its missing values
    and parse the distinct others into the column's type."""
    try:
        raw_codes, raw_uniques = _factorize(series)
    except TypeError:  # unhashable cells: lists, arrays or structs (Parquet nested types)
        raise InputError(f"column {name!r} holds lists or structures, not single values "
                         f"(a nested Parquet type); give it as plain values, or do not name "
                         f"it as a quasi-identifier or sensitive column") from None
    if raw_uniques.dtype == object:
        # text is kept exactly (" a" is not "a": two inputs never merge); a number or a
        # date is read without the spaces around it
        exact = kind in (Kind.CATEGORICAL, Kind.ORDINAL)
        text = np.array([str(u) if exact else str(u).strip() for u in raw_uniques],
                        dtype=object)
        blank = np.array([not t.strip() for t in text], dtype=bool)
    else:
        text, blank = raw_uniques, np.zeros(len(raw_uniques), dtype=bool)
    # every raw value occurs in some row, so a blank one is a missing row
    any_missing = bool(blank.any()) or (len(raw_codes) > 0 and int(raw_codes.min()) < 0)
    if any_missing and not allow_missing:
        rows = series.index[_missing_rows(raw_codes, blank)][:5].tolist()
        first = "first lines of the file" if series.index.name == "line" else "first rows"
        raise InputError(
            f"column {name!r} has {int(_missing_rows(raw_codes, blank).sum())} missing "
            f"value(s) ({first}: {rows}); fill them, drop those rows, or pass "
            f"--allow-missing to treat a missing value as a value of its own"
        )
    keep = ~blank
    positions = np.flatnonzero(keep)
    seen = _Seen(series, raw_codes, keep, text[keep], any_missing)
    distinct = _typed_values(seen.distinct, kind, name,
                             lambda i: _at(series.index, seen.first_row(positions[i])))
    return replace(seen, distinct=distinct)


def _missing_rows(raw_codes: np.ndarray, blank: np.ndarray) -> np.ndarray:
    if len(blank) == 0:  # no value at all: every row is missing
        return np.ones(len(raw_codes), dtype=bool)
    return (raw_codes < 0) | blank[np.maximum(raw_codes, 0)]


def _fit_column(series: pd.Series, spec: ColumnSpec, allow_missing: bool,
                reference_counts: bool = False) -> tuple[ColumnEncoding, EncodedColumn]:
    """A column's encoding, fitted on ``series``, and ``series`` encoded with it."""
    kind = spec.kind or infer_kind(series, spec.name)
    seen = _seen_values(series, spec.name, kind, allow_missing)
    code_of_distinct, domain, leaf = _order_values(seen.distinct, spec, kind)
    encoding = ColumnEncoding(spec.name, kind, domain, seen.any_missing, spec.hierarchy, leaf,
                              spec.order)
    column = _encoded(encoding, seen, code_of_distinct)
    if reference_counts:
        encoding = replace(encoding, reference_counts=np.bincount(
            column.codes, minlength=column.cardinality))
    return encoding, column


def _transform_column(encoding: ColumnEncoding, series: pd.Series,
                      allow_missing: bool) -> EncodedColumn:
    """``series`` encoded with a fitted encoding."""
    name = encoding.name
    seen = _seen_values(series, name, encoding.kind, allow_missing)
    if seen.any_missing and not encoding.missing:
        row = series.index[int(np.argmax(_missing_rows(seen.raw_codes, ~seen.keep)))]
        raise InputError(
            f"column {name!r} is missing a value in {_at(series.index, row)}, but its "
            f"encoding has no "
            f"missing value; refit the encoding on data with missing values in {name!r}, "
            f"or declare its domain with allow_missing")
    code_of_distinct = encoding.codes_of(seen.distinct)
    outside = code_of_distinct < 0
    if outside.any():
        i = int(np.argmax(outside))
        row = seen.first_row(int(np.flatnonzero(seen.keep)[i]))
        raise InputError(
            f"column {name!r} {_at(series.index, row)} has a value outside "
            f"its encoding's domain ({len(encoding.domain)} values); declare a domain that "
            f"includes it, or refit the encoding on data that has it")
    return _encoded(encoding, seen, code_of_distinct)


def _encoded(encoding: ColumnEncoding, seen: _Seen,
             code_of_distinct: np.ndarray) -> EncodedColumn:
    """The column's codes: the code of each raw distinct value, gathered per row."""
    code_of_raw = np.full(len(seen.keep), -1, dtype=np.int32)
    code_of_raw[seen.keep] = code_of_distinct
    missing_code = encoding.missing_code
    if missing_code >= 0:
        code_of_raw[~seen.keep] = missing_code
        # raw code -1 (missing) -> index -1 -> the missing code
        code_of_raw = np.append(code_of_raw, missing_code).astype(np.int32)
    code_type = code_type_for(encoding.cardinality)
    if missing_code < 0 and np.array_equal(code_of_raw, np.arange(len(code_of_raw))):
        # the raw codes already are the codes
        codes = seen.raw_codes.astype(code_type)  # a copy: never the caller's array
    else:
        codes = code_of_raw.astype(code_type).take(seen.raw_codes)
    return EncodedColumn(encoding.name, encoding.kind, codes, encoding.values,
                         encoding.hierarchy, encoding.decode_leaf, missing_code)


def _order_values(distinct: np.ndarray, spec: ColumnSpec,
                  kind: Kind) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(the code of each distinct value, the domain in code order, each domain value's
    hierarchy leaf or None): see the module docstring for the order."""
    if spec.hierarchy is not None:
        return _order_with_hierarchy(distinct, spec, kind)
    if kind is Kind.ORDINAL:
        codes, values = _order_ordinal(distinct, spec)
        return codes, values, None
    sub_codes, values = pd.factorize(distinct, sort=True)
    values = np.asarray(values)
    if kind is Kind.CATEGORICAL:
        values = values.astype(object)
    return np.asarray(sub_codes, dtype=np.int32), values, None


def _declared_values(spec: ColumnSpec, declared: object) -> np.ndarray:
    """A declared domain's distinct values in the column's type (see
    :meth:`Encoding.from_domain`)."""
    name, kind = spec.name, spec.kind
    assert kind is not None
    if declared is None:
        if spec.hierarchy is not None:
            declared = spec.hierarchy.leaves
        elif kind is Kind.ORDINAL:
            declared = ()
        else:
            raise InputError(f"no domain is given for column {name!r}; list its values"
                             f"{' or give (low, high)' if kind.is_ordered else ''}")
    if isinstance(declared, tuple) and len(declared) == 2 and kind in (Kind.NUMERIC,
                                                                        Kind.DATE):
        return _declared_range(name, kind, *declared)
    if isinstance(declared, (str, bytes)) or not isinstance(declared, Iterable):
        raise InputError(f"the domain of column {name!r} must be a list of values, got "
                         f"{declared!r}")
    return pd.unique(_parsed(name, kind, declared, "its declared domain"))


def _parsed(name: str, kind: Kind, values: Iterable[object], where: str) -> np.ndarray:
    """Given values in the column's type: numbers and dates as they are, text and other
    objects parsed as the text of a table's cells is."""
    items = values if isinstance(values, np.ndarray) else list(values)
    array = np.asarray(items)
    if array.dtype.kind not in "iufbM":
        exact = kind in (Kind.CATEGORICAL, Kind.ORDINAL)  # as _seen_values reads a cell
        array = np.array(["" if v is None or not str(v).strip() else
                          str(v) if exact else str(v).strip() for v in array.tolist()],
                         dtype=object)
        if (array == "").any():
            raise InputError(f"{where} of column {name!r} lists a missing value; leave it "
                             f"out (allow_missing gives missing values a code)")
    return _typed_values(array, kind, name, lambda i: where)


#: a declared (low, high) range may stand for at most this many values
_RANGE_VALUES = 1 << 22


def _declared_range(name: str, kind: Kind, low: object, high: object) -> np.ndarray:
    if kind is Kind.DATE:
        first = pd.Timestamp(low).to_datetime64().astype("datetime64[D]")  # type: ignore[arg-type]
        last = pd.Timestamp(high).to_datetime64().astype("datetime64[D]")  # type: ignore[arg-type]
        values = np.arange(first, last + 1, dtype="datetime64[D]").astype("datetime64[ms]")
    else:
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                   for v in (low, high)):
            raise InputError(f"the range given for column {name!r} is ({low!r}, {high!r}); "
                             f"a range is for whole numbers: list the values instead")
        if int(high) - int(low) + 1 > _RANGE_VALUES:  # type: ignore[call-overload]
            raise InputError(f"the range given for column {name!r} spans more than "
                             f"{_RANGE_VALUES} values; list the values that occur instead")
        values = np.arange(int(low), int(high) + 1, dtype=np.int64)  # type: ignore[call-overload]
    if len(values) == 0:
        raise InputError(f"the range given for column {name!r} is empty ({low!r} > "
                         f"{high!r}); give (low, high)")
    return values


def _counts_by_value(column: ColumnEncoding, counts: Mapping[object, float]) -> np.ndarray:
    """Reference counts given by value as an array by code."""
    out = np.zeros(column.cardinality, dtype=np.float64)
    present = {k: v for k, v in counts.items() if k is not None}
    if len(present) < len(counts):
        if not column.missing:
            raise InputError(f"reference counts for {column.name!r} count missing values, "
                             f"which its domain does not have")
        out[column.missing_code] = counts[None]  # type: ignore[index]
    if present:
        keys = _parsed(column.name, column.kind, list(present), "the reference counts")
        codes = column.codes_of(keys)
        if (codes < 0).any():
            outside = _shown(keys[int(np.argmax(codes < 0))])
            raise InputError(f"reference counts for {column.name!r} count {outside!r}, "
                             f"which is outside its domain; add it to the domain")
        np.add.at(out, codes, np.asarray(list(present.values()), dtype=np.float64))
    if (out < 0).any() or not out.sum() > 0:
        raise InputError(f"reference counts for {column.name!r} must be >= 0 and not all 0")
    if np.array_equal(out, np.round(out)):
        return out.astype(np.int64)
    return out


def _shown(value: object) -> object:
    """A value as a message shows it (plain Python, dates as text)."""
    if isinstance(value, np.datetime64):
        return str(pd.Timestamp(value))
    return value.item() if isinstance(value, np.generic) else value


def _column_to_dict(c: ColumnEncoding) -> dict[str, object]:
    hierarchy = None if c.hierarchy is None else {"name": c.hierarchy.name,
                                                  "rows": c.hierarchy.labels.tolist()}
    counts = c.reference_counts
    return {
        "name": c.name, "kind": c.kind.value, "dtype": str(c.domain.dtype),
        "domain": _json_values(c.name, c.domain), "missing": c.missing,
        "hierarchy": hierarchy,
        "hierarchy_leaf": None if c.hierarchy_leaf is None else c.hierarchy_leaf.tolist(),
        "order": None if c.order is None else [str(v) for v in c.order],
        "reference_counts": None if counts is None else counts.tolist(),
    }


def _column_from_dict(d: Mapping[str, object]) -> ColumnEncoding:
    rows = d["hierarchy"]
    hierarchy = None if rows is None else Hierarchy(rows["rows"], name=rows["name"])  # type: ignore[index]
    leaf = d["hierarchy_leaf"]
    counts = d["reference_counts"]
    return ColumnEncoding(
        str(d["name"]), Kind(d["kind"]), _values_from_json(d["domain"], str(d["dtype"])),  # type: ignore[arg-type]
        bool(d["missing"]), hierarchy,
        None if leaf is None else np.asarray(leaf, dtype=np.int32),
        None if d["order"] is None else tuple(d["order"]),  # type: ignore[arg-type]
        None if counts is None else np.asarray(counts))


def _json_values(name: str, values: np.ndarray) -> list[object]:
    if values.dtype.kind == "M":
        unit = np.datetime_data(values.dtype)[0]
        return np.datetime_as_string(values, unit=unit).tolist()
    if values.dtype.kind == "f":  # JSON has no infinities: as text, which numpy reads back
        return [v if math.isfinite(v) else str(v) for v in values.tolist()]
    if values.dtype == object:
        odd = [v for v in values.tolist() if not isinstance(v, str)]
        if odd:
            raise InputError(f"column {name!r} holds {type(odd[0]).__name__} values, which an "
                             f"encoding cannot store; declare the column categorical")
    return values.tolist()


def _values_from_json(items: Sequence[object], dtype: str) -> np.ndarray:
    if dtype == "object":
        out = np.empty(len(items), dtype=object)
        out[:] = [str(v) for v in items]
        return out
    return np.array(items, dtype=np.dtype(dtype))


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


def _typed_values(distinct: np.ndarray, kind: Kind, name: str,
                  where: Callable[[int], str]) -> np.ndarray:
    """The distinct non-missing values in the column's own type (numbers, dates, text);
    ``where(i)`` says where value ``i`` is (``"row 7"``) for a message."""
    if kind is Kind.NUMERIC:
        if distinct.dtype != object:
            _refuse_infinite(distinct, name, where)
            return distinct
        converted = pd.to_numeric(pd.Series(distinct), errors="coerce").to_numpy()
        as_float = converted.astype(np.float64)
        _refuse_infinite(as_float, name, where)
        bad = np.isnan(as_float)
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(
                f"column {name!r} is numeric but {where(i)} has a value that is not a number; "
                f"fix the value "
                f"or declare the column categorical")
        inexact = _inexact_integer(distinct, as_float)
        if inexact >= 0:
            raise InputError(
                f"column {name!r} is numeric but {where(inexact)} has an integer that float64 "
                f"cannot hold exactly (it would be rounded); declare the column categorical "
                f"(--kind {name}=categorical) to keep its values exact")
        return converted
    if kind is Kind.DATE:
        if distinct.dtype.kind == "M":
            return distinct
        if distinct.dtype != object:  # numbers are no dates (pandas would count them as ns)
            raise InputError(
                f"column {name!r} is declared a date column but holds numbers ({where(0)} "
                f"has one); give ISO dates (2024-01-31) or declare it "
                f"numeric")
        converted = pd.to_datetime(pd.Series(distinct), errors="coerce")
        bad = converted.isna().to_numpy()
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(
                f"column {name!r} is a date column but {where(i)} "
                f"has a value that is not a date; use ISO dates (2024-01-31) or declare it "
                f"categorical")
        return converted.to_numpy()
    return np.array([str(v) for v in distinct], dtype=object)


def _refuse_infinite(values: np.ndarray, name: str, where: Callable[[int], str]) -> None:
    """An infinite number is no value a range can generalize (it would read [21-inf])."""
    if values.dtype.kind == "f":
        infinite = np.isinf(values)
        if infinite.any():
            i = int(np.argmax(infinite))
            raise InputError(f"column {name!r} is numeric but {where(i)} has an infinite number; "
                             f"give a finite number or leave the cell empty (missing)")


#: float64 holds every integer of smaller magnitude exactly (2**53 + 1 it does not)
_EXACT_INTEGERS = 2**53


def _inexact_integer(texts: np.ndarray, as_float: np.ndarray) -> int:
    """The index of the first of ``texts`` that is an integer float64 cannot hold exactly
    (it parsed to ``as_float``), or -1. Only magnitudes from 2**53 on can be: those few
    are looked at one by one."""
    for i in np.flatnonzero(np.abs(as_float) >= _EXACT_INTEGERS):
        text = str(texts[i]).strip()
        if _INTEGER_TEXT.fullmatch(text) and int(text) != int(as_float[i]):
            return int(i)
    return -1


_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")


def _order_ordinal(distinct: np.ndarray, spec: ColumnSpec) -> tuple[np.ndarray, np.ndarray]:
    order = [str(v) for v in (spec.order or ())]
    lookup = {v: i for i, v in enumerate(order)}
    unknown = sorted({str(v) for v in distinct if str(v) not in lookup})
    if unknown:
        spaced = any(v.strip() in lookup for v in unknown)
        raise InputError(
            f"column {spec.name!r} has values not in its declared order: {unknown[:10]}; "
            + ("they differ from its values only in spaces at either end: trim the column "
               "(--skipinitialspace for spaces after the separator) or add them to the "
               "order" if spaced else "add them to the order"))
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
