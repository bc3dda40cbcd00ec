"""The schema of a table: what each column is and of what kind.

A :class:`Schema` says what each column is (identifier, quasi-identifier, sensitive,
insensitive) and of what kind (numeric, categorical, ordinal, date). The kinds not given
are inferred from the data (:func:`infer_kind`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from anonkit.data.kinds import Kind, Role
from anonkit.errors import InputError
from anonkit.hierarchy.base import Hierarchy


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
        insensitive: Sequence[str] | str | None = None,
    ) -> Schema:
        """Name the roles of ``df``'s columns; kinds are inferred where not given.

        ``insensitive``: the columns released unchanged (``"*"``: every column given no
        other role). When given (even empty), every column needs a role: one nobody named
        would go out raw, so it is an error naming the columns. None (for callers that
        pass only the columns they work on) releases unnamed columns unchanged."""
        check_column_names(df)
        sensitive = [sensitive] if isinstance(sensitive, str) else list(sensitive or ())
        quasi_identifiers = list(quasi_identifiers)
        kinds = {k: _kind(k, v) for k, v in (kinds or {}).items()}
        hierarchies = dict(hierarchies or {})
        orders = dict(orders or {})
        if not quasi_identifiers:
            raise InputError("no quasi-identifiers given: name at least one column (--qi a,b)")
        unchanged = [] if insensitive in (None, "*") else \
            [insensitive] if isinstance(insensitive, str) else list(insensitive or ())
        named: dict[str, Role] = {}
        for role, names in (
            (Role.IDENTIFIER, identifiers),
            (Role.QUASI_IDENTIFIER, quasi_identifiers),
            (Role.SENSITIVE, sensitive),
            (Role.INSENSITIVE, unchanged),
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
        if insensitive is not None and insensitive != "*":
            nobody = [str(c) for c in df.columns if c not in named]
            if nobody:
                raise InputError(
                    f"column(s) with no role: {', '.join(nobody)}. Give every column a role: "
                    f"quasi_identifiers, sensitive, identifiers (dropped) or insensitive "
                    f"(released unchanged; insensitive='*' for all the others), or leave "
                    f"the column out of the DataFrame")
        for mapping, what in ((kinds, "a kind"), (hierarchies, "a hierarchy"),
                              (orders, "an order")):
            for name in mapping:
                if name not in df.columns:
                    raise InputError(f"{what} is given for unknown column {name!r}")
        for name, role in named.items():
            if role in (Role.QUASI_IDENTIFIER, Role.SENSITIVE):
                _refuse_nested(df[name], name)
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


def _refuse_nested(series: pd.Series, name: str) -> None:
    """A quasi-identifier or sensitive column must hold single values: a Parquet list or
    struct column arrives as arrays or dicts (looked at in its first value only)."""
    if series.dtype != object:
        return
    first = series.first_valid_index()
    if first is not None and isinstance(series[first], list | tuple | dict | set | np.ndarray):
        raise InputError(f"column {name!r} holds lists or structures, not single values (a "
                         f"nested Parquet type); give it as plain values, or do not name it "
                         f"as a quasi-identifier or sensitive column")


def _kind(column: str, kind: Kind | str) -> Kind:
    try:
        return Kind(kind)
    except ValueError:
        raise InputError(f"unknown kind {kind!r} for column {column!r}; use one of "
                         f"{', '.join(k.value for k in Kind)}") from None


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
            f"column {name!r} mixes numbers and text: {_at(series.index, row)} has "
            f"{series[row]!r}; fix the value, or declare the column categorical "
            f"(--kind {name}=categorical on the command line, kinds={{{name!r}: "
            f"'categorical'}} in Python, [kinds] in a job file)"
        )
    return Kind.CATEGORICAL


def _at(index: pd.Index, label: object) -> str:
    """Where a row is, for a message: ``line 28 of the file`` when the table's index holds
    its file's line numbers (an index named ``line``, as the command line reads a CSV),
    else ``row 27`` (the DataFrame's index label)."""
    return f"line {label} of the file" if index.name == "line" else f"row {label}"

