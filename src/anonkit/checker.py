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
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from anonkit._util.grouping import group_rows
from anonkit._util.numbers import json_number
from anonkit._util.options import as_list
from anonkit.data.encoding import encode_column
from anonkit.data.schema import ColumnSpec, Kind, Role, check_column_names
from anonkit.errors import InputError
from anonkit.hierarchy.base import Hierarchy
from anonkit.labels import cover_matrix
from anonkit.models.base import (
    Classes,
    PrivacyModel,
    SensitiveAttribute,
    Verdict,
    bind_models,
)
from anonkit.models.population_table import PopulationTable
from anonkit.models.risk import bind_population, fixed_to_sample
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
    #: rows suppressed (every quasi-identifier the ``suppressed`` label): one class, exempt
    #: from the models, not among the verdicts' classes
    suppressed_rows: int = 0

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)

    @property
    def failures(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.passed]

    def add(self, verdict: Verdict) -> None:
        """Add a verdict on the table as a whole (no sensitive attribute, no weakest
        class), e.g. the suppressed share against its limit."""
        self.verdicts.append(verdict)
        self.attributes.append(None)
        self.worst_class_values.append({})

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
    suppressed: str | None = None,
    population: pd.DataFrame | PopulationTable | None = None,
    sampling_fraction: float | None = None,
    population_size: float | None = None,
    weight: str | None = None,
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
    quasi-identifiers. ``suppressed``: the label of a suppressed cell (``"*"``): the rows
    with it in every quasi-identifier are one class exempt from the models, as in ARX and
    pycanon, counted in ``suppressed_rows``. ``attributes``: the sensitive columns already
    encoded (with the reference distribution to compare classes with), instead of encoding
    ``df``'s.

    The risk models (:mod:`anonkit.models.risk`) read what they are judged against from
    ``population`` (the population table of k-map and δ-presence), ``sampling_fraction``
    or ``population_size`` (population uniqueness, estimated k-map, individual risk) and
    ``weight`` (the column of survey weights individual risk reads), unless built with it.
    """
    qis = as_list(quasi_identifiers) if isinstance(quasi_identifiers, str) \
        else list(quasi_identifiers)
    sens = as_list(sensitive) if isinstance(sensitive, str) or sensitive is None \
        else list(sensitive)
    model_list = bind_population(
        _as_models(models), sampling_fraction=sampling_fraction,
        population_size=population_size, weight=weight,
        population=PopulationTable(population) if isinstance(population, pd.DataFrame)
        else population)
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
    # a model whose threshold depends on the sample's size reads the whole table's
    bound = fixed_to_sample(bind_models(model_list, attributes), len(df))

    grouping = [group_column] if group_column is not None else qis
    class_ids, n_classes, first_row = group_rows(df, grouping)
    classes = Classes(class_ids, n_classes, attributes, weights=survey_weights(df, bound),
                      population_counts=_population_counts(df, qis, first_row, bound,
                                                           group_column))
    exempt = _suppressed_class(df, qis, first_row, suppressed) \
        if suppressed is not None and group_column is None else -1
    if exempt >= 0:
        judged = _without_class(classes, exempt)
        verdicts = [replace(v, worst_class=v.worst_class + int(v.worst_class >= exempt))
                    if v.worst_class >= 0 else v for v in (m.verdict(judged) for m in bound)]
    else:
        verdicts = [m.verdict(classes) for m in bound]
    qi_frame = df[[*qis, *([group_column] if group_column is not None else [])]]
    worst_values = [
        _row_values(qi_frame, int(first_row[v.worst_class])) if v.worst_class >= 0 else {}
        for v in verdicts
    ]
    return CheckReport(verdicts, [m.attribute if m.needs_sensitive else None for m in bound],
                       worst_values, len(df), n_classes, qis, sens, classes.sizes, class_ids,
                       first_row, group_column,
                       int(classes.sizes[exempt]) if exempt >= 0 else 0)


def _suppressed_class(df: pd.DataFrame, qis: Sequence[str], first_rows: np.ndarray,
                      label: str) -> int:
    """The class whose every quasi-identifier is ``label`` (the suppressed rows), or -1."""
    frame = df[list(qis)].iloc[first_rows]
    every = np.ones(len(frame), dtype=bool)
    for name in qis:
        every &= frame[name].astype(object).to_numpy() == label
    found = np.flatnonzero(every)
    return int(found[0]) if len(found) else -1


def _without_class(classes: Classes, exempt: int) -> Classes:
    """``classes`` without class ``exempt`` (its rows left out, the later classes renumbered
    one down); the sensitive attributes keep their reference distribution."""
    keep = classes.class_ids != exempt
    ids = classes.class_ids[keep]
    return Classes(ids - (ids > exempt), classes.n_classes - 1,
                   [a.reordered(a.codes[keep]) for a in classes.sensitive.values()],
                   weights=None if classes.weights is None else classes.weights[keep],
                   population_counts={key: np.delete(counts, exempt) for key, counts
                                      in classes.population_counts.items()})


def suppression_verdict(suppressed_rows: int, n_rows: int, limit: float) -> Verdict:
    """Whether the suppressed rows are within ``limit`` (a share of the rows): counted
    exactly, at most ``floor(limit * rows)``."""
    allowed = int(np.floor(limit * n_rows + 1e-9))
    # a verdict on the table as a whole: no weakest class (n_classes 0)
    return Verdict("suppression limit", {"limit": limit}, suppressed_rows <= allowed,
                   suppressed_rows / n_rows if n_rows else 0.0, limit, -1, suppressed_rows,
                   0, 0, "suppressed share", "<=", {"rows": suppressed_rows,
                                                    "allowed": allowed})


def survey_weights(df: pd.DataFrame, models: Sequence[PrivacyModel]) -> np.ndarray | None:
    """The survey weights the models read (one column for all), each a number >= 1; None
    when no model reads weights."""
    names = sorted({m.weight_column for m in models if m.weight_column is not None})
    if not names:
        return None
    if len(names) > 1:
        raise InputError(f"the models read weights from {len(names)} columns "
                         f"({', '.join(map(repr, names))}); give one weight column")
    name = names[0]
    if name not in df.columns:
        raise InputError(f"the weight column {name!r} is not in the table; a release judged "
                         f"by its individual risk carries its survey weights (give the "
                         f"column as insensitive)")
    column = df[name]
    if isinstance(column.dtype, pd.CategoricalDtype):
        column = column.astype(object)
    weights = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(weights) | (weights < 1.0)
    if bad.any():
        raise InputError(f"column {name!r}, data row {int(np.argmax(bad)) + 1}: a survey "
                         f"weight must be a number >= 1 (a record stands for at least "
                         f"itself); fix the weights")
    return weights


def _population_counts(df: pd.DataFrame, qis: Sequence[str], first_rows: np.ndarray,
                       models: Sequence[PrivacyModel], group_column: str | None
                       ) -> dict[int, np.ndarray]:
    """Per population table a model reads, each class's rows in it: the rows its released
    labels cover on every quasi-identifier."""
    tables = {id(t): t for t in (m.population_table for m in models) if t is not None}
    if tables and group_column is not None:
        raise InputError("k-map and δ-presence against a population table judge classes by "
                         "their quasi-identifier labels; a release with a group column "
                         "has exact quasi-identifiers instead: check it without --group")
    labels = df[list(qis)].iloc[first_rows]
    return {key: population_counts(labels, qis, table) for key, table in tables.items()}


def population_counts(class_labels: pd.DataFrame, qis: Sequence[str],
                      table: PopulationTable) -> np.ndarray:
    """Per class (one row of ``class_labels`` each: its released quasi-identifiers), the
    rows of the population ``table`` whose values its labels cover, on every
    quasi-identifier (:func:`anonkit.labels.cover_matrix`). The population's distinct
    tuples are joined with the classes on the quasi-identifier whose labels cover fewest of
    them, and the pairs found are filtered on the others: numpy work in blocks of classes,
    never row by row, and never every class against every tuple."""
    frame = table.frame
    absent = [name for name in qis if name not in frame.columns]
    if absent:
        raise InputError(f"{table.source} has no column {absent[0]!r}; it needs every "
                         f"quasi-identifier ({', '.join(qis)})")
    tuple_ids, n_tuples, first = group_rows(frame, qis)
    people = np.bincount(tuple_ids, minlength=n_tuples).astype(np.int64)
    per_qi = []
    for name in qis:
        label_codes, labels = pd.factorize(class_labels[name], use_na_sentinel=False)
        value_codes, values = pd.factorize(frame[name].iloc[first], use_na_sentinel=False)
        cover = cover_matrix(list(labels), list(values), table.hierarchies.get(name))
        per_qi.append((label_codes.astype(np.int64), value_codes.astype(np.int64), cover))
    # per class and QI, how many tuples its label covers: join on the fewest
    covered = [(cover @ np.bincount(values, minlength=cover.shape[1]))[labels]
               for labels, values, cover in per_qi]
    selectivity = np.argsort([c.sum() for c in covered], kind="stable")
    best, order = int(selectivity[0]), [int(j) for j in selectivity[1:]]
    labels0, values0, cover0 = per_qi[best]
    label_of, value_of = np.nonzero(cover0)  # the (label, value) pairs that cover
    n_classes = len(class_labels)
    counts = np.zeros(n_classes, dtype=np.int64)
    load = np.cumsum(covered[best])
    start = 0
    while start < n_classes:
        stop = max(start + 1, int(np.searchsorted(load, load[start] + _JOINED_PAIRS)))
        stop = min(stop, n_classes)
        block = np.arange(start, stop)
        at, pair = _matches(labels0[block], label_of, cover0.shape[0])
        at2, tuple_at = _matches(value_of[pair], values0, cover0.shape[1])
        cls, tup = block[at[at2]], tuple_at
        for j in order:  # the most selective first: the pairs shrink fastest
            labels, values, cover = per_qi[j]
            keep = cover[labels[cls], values[tup]]
            cls, tup = cls[keep], tup[keep]
        counts += np.bincount(cls, weights=people[tup], minlength=n_classes).astype(np.int64)
        start = stop
    return counts


#: (class, population tuple) pairs joined per block: some tens of megabytes at most
_JOINED_PAIRS = 1 << 21


def _matches(left: np.ndarray, right: np.ndarray, n_keys: int) -> tuple[np.ndarray,
                                                                        np.ndarray]:
    """Every pair ``(i, j)`` with ``left[i] == right[j]`` (keys in ``0 .. n_keys - 1``),
    as two index arrays."""
    order = np.argsort(right, kind="stable")
    per_key = np.bincount(right, minlength=n_keys)
    key_start = np.concatenate([[0], np.cumsum(per_key)[:-1]])
    repeat = per_key[left]
    i = np.repeat(np.arange(len(left), dtype=np.int64), repeat)
    within = np.arange(int(repeat.sum()), dtype=np.int64) - np.repeat(np.cumsum(repeat) - repeat,
                                                                      repeat)
    return i, order[np.repeat(key_start[left], repeat) + within]


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

