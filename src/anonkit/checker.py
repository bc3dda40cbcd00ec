"""Check any released table against privacy models — ours or another tool's output.

A released table's quasi-identifiers hold whatever the publisher wrote: raw values,
intervals like ``[20-29]`` or ``20-29``, sets like ``{a,b}``, ``*``, hierarchy labels. The
checker does not interpret them: two rows are in the same equivalence class exactly when
their quasi-identifier tuples are equal. A missing value (NaN / None / NA) is a value of its
own — rows missing a QI form classes with each other, they are not dropped (pycanon drops
them, which can hide a class of one). Grouping is vectorised: one ``pd.factorize`` per
column, the codes combined column by column and re-factorized.

The sensitive column is encoded with :func:`anonkit.data.encoding.encode_column` (kind inferred
like everywhere else: numeric, date, or categorical), so models see it exactly as they do
inside the algorithms. Its whole-table distribution is the reference for t-closeness,
δ-disclosure and β-likeness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from anonkit._util.grouping import group_rows
from anonkit._util.numbers import json_number
from anonkit._util.options import as_list
from anonkit.data.encoding import encode_column
from anonkit.data.schema import ColumnSpec, Kind, Role, check_column_names
from anonkit.errors import InputError
from anonkit.hierarchy.base import Hierarchy
from anonkit.models.base import (
    Classes,
    PrivacyModel,
    SensitiveAttribute,
    Verdict,
    bind_models,
)
from anonkit.models.text import MODEL_SYNTAX, parse_model


@dataclass(frozen=True)
class CheckReport:
    """The verdicts of :func:`check`, one per (model, sensitive attribute).

    ``attributes[i]`` is the sensitive attribute verdict ``i`` concerns (None for
    k-anonymity) and ``worst_class_values[i]`` the quasi-identifier values of its weakest
    class (missing values as None).
    """

    verdicts: list[Verdict]
    attributes: list[str | None]
    worst_class_values: list[dict[str, object]]
    n_rows: int
    n_classes: int
    quasi_identifiers: list[str]
    sensitive: list[str] = field(default_factory=list)
    #: rows per class, classes as an adversary sees them (by released QI values, or by
    #: the explicit group column)
    class_sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: per row, its class; classes numbered in order of first appearance (the numbering
    #: of ``Verdict.worst_class``, of a release's classes and of the history)
    class_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: per class, the position of its first row
    first_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: the column whose values named the classes (None: the quasi-identifiers)
    group_column: str | None = None

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)

    @property
    def failures(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.passed]

    def __str__(self) -> str:
        sens = f"; sensitive: {', '.join(self.sensitive)}" if self.sensitive else ""
        lines = [f"{self.n_rows} rows in {self.n_classes} equivalence classes over "
                 f"{', '.join(self.quasi_identifiers)}{sens}"]
        for verdict, attribute, values in zip(self.verdicts, self.attributes,
                                              self.worst_class_values, strict=True):
            on = f"[{attribute}] " if attribute is not None and len(self.sensitive) > 1 \
                else ""
            lines.append(f"  {on}{verdict}")
            if values:
                shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
                rows = verdict.worst_class_size
                lines.append(f"      weakest class ({rows} row{'' if rows == 1 else 's'}): "
                             f"{shown}")
        failed = len(self.failures)
        lines.append("PASSED: every model holds" if failed == 0 else
                     f"FAILED: {failed} of {len(self.verdicts)} model checks do not hold")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return {
            "passed": self.passed,
            "n_rows": self.n_rows,
            "n_classes": self.n_classes,
            "quasi_identifiers": list(self.quasi_identifiers),
            "sensitive": list(self.sensitive),
            "verdicts": [
                {**v.to_dict(), "attribute": a, "worst_class_values": dict(w)}
                for v, a, w in zip(self.verdicts, self.attributes, self.worst_class_values,
                                   strict=True)
            ],
        }


def check(
    df: pd.DataFrame,
    quasi_identifiers: Sequence[str] | str,
    sensitive: Sequence[str] | str | None = None,
    models: Sequence[PrivacyModel | str] | PrivacyModel | str = (),
    *,
    kinds: Mapping[str, Kind | str] | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    orders: Mapping[str, Sequence[object]] | None = None,
    group_column: str | None = None,
    attributes: Sequence[SensitiveAttribute] | None = None,
) -> CheckReport:
    """Check the released table ``df`` against ``models``.

    ``models`` are :class:`PrivacyModel` objects or short forms (see :func:`parse_model`).
    A model about a sensitive attribute is checked on each sensitive column unless it
    names one (``model.attribute``). ``kinds`` / ``hierarchies`` / ``orders`` describe the
    sensitive columns (kinds are inferred otherwise; a hierarchy enables the hierarchical
    t-closeness distance, an order makes a column ordinal).

    ``group_column``: the classes are the rows with equal values in this column (a release
    that publishes its groups explicitly, e.g. (k,e)-anonymity's permuted release, whose
    quasi-identifiers are exact); by default they are the rows with equal
    quasi-identifiers. ``attributes``: the sensitive columns already encoded (with the
    reference distribution to compare classes with), instead of encoding ``df``'s.
    """
    qis = as_list(quasi_identifiers) if isinstance(quasi_identifiers, str) \
        else list(quasi_identifiers)
    sens = as_list(sensitive) if isinstance(sensitive, str) or sensitive is None \
        else list(sensitive)
    model_list = _as_models(models)
    check_column_names(df)
    _check_columns(df, qis, sens)
    if len(df) == 0:
        raise InputError("the table has no rows (header only?); give at least one data row")

    if group_column is not None and group_column not in df.columns:
        raise InputError(f"unknown group column {group_column!r}; the table has: "
                         f"{', '.join(map(str, df.columns))}")
    if attributes is None:
        attributes = [sensitive_attribute(df[name], name, kinds, hierarchies, orders)
                      for name in sens]
    bound = bind_models(model_list, attributes)

    grouping = [group_column] if group_column is not None else qis
    class_ids, n_classes, first_row = group_rows(df, grouping)
    classes = Classes(class_ids, n_classes, attributes)
    verdicts = [m.verdict(classes) for m in bound]
    qi_frame = df[[*qis, *([group_column] if group_column is not None else [])]]
    worst_values = [
        _row_values(qi_frame, int(first_row[v.worst_class])) if v.worst_class >= 0 else {}
        for v in verdicts
    ]
    return CheckReport(verdicts, [m.attribute if m.needs_sensitive else None for m in bound],
                       worst_values, len(df), n_classes, qis, sens, classes.sizes, class_ids,
                       first_row, group_column)


def _as_models(models: Sequence[PrivacyModel | str] | PrivacyModel | str) -> list[PrivacyModel]:
    if isinstance(models, (str, PrivacyModel)):
        models = [models]
    out = [parse_model(m) if isinstance(m, str) else m for m in models]
    for m in out:
        if not isinstance(m, PrivacyModel):
            raise InputError(f"not a privacy model: {m!r}; give PrivacyModel objects or "
                             f"short forms: {MODEL_SYNTAX}")
    if not out:
        raise InputError(f"no privacy model given; name at least one: {MODEL_SYNTAX}")
    return out


def _check_columns(df: pd.DataFrame, qis: list[str], sens: list[str]) -> None:
    if not qis:
        raise InputError("no quasi-identifiers given: name at least one column (--qi a,b)")
    for names, role in ((qis, "quasi-identifier"), (sens, "sensitive")):
        for name in names:
            if name not in df.columns:
                raise InputError(f"unknown column {name!r} given as {role}; the table has: "
                                 f"{', '.join(map(str, df.columns))}")
        dups = sorted({n for n in names if names.count(n) > 1})
        if dups:
            raise InputError(f"{role} column(s) given twice: {', '.join(map(repr, dups))}")
    both = [n for n in sens if n in qis]
    if both:
        raise InputError(f"column {both[0]!r} is given both as quasi-identifier and as "
                         f"sensitive; give it one role")


def sensitive_attribute(series: pd.Series, name: str,
                        kinds: Mapping[str, Kind | str] | None,
                        hierarchies: Mapping[str, Hierarchy] | None,
                        orders: Mapping[str, Sequence[object]] | None) -> SensitiveAttribute:
    """A released sensitive column, encoded as the checker reads it (missing values kept,
    kinds / hierarchies / orders as declared, else inferred)."""
    kind = Kind((kinds or {})[name]) if name in (kinds or {}) else None
    order = tuple((orders or {})[name]) if name in (orders or {}) else None
    if order is not None and kind is None:
        kind = Kind.ORDINAL
    spec = ColumnSpec(name, Role.SENSITIVE, kind, (hierarchies or {}).get(name), order)
    return SensitiveAttribute.from_encoded(encode_column(series, spec, allow_missing=True))


def _row_values(frame: pd.DataFrame, row: int) -> dict[str, object]:
    return {str(name): _plain(frame.iat[row, i]) for i, name in enumerate(frame.columns)}


def _plain(value: object) -> object:
    """A cell as a plain Python value (None when missing), for reports and JSON."""
    if value is None or (not isinstance(value, (list, tuple, set, dict)) and
                         bool(pd.isna(value))):  # type: ignore[call-overload]
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return json_number(value)

