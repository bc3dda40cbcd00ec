"""The checker and the class figures, distributed: a released table too large for one
machine is verified on the whole, never per file or per fragment.

Every row is sent to a bucket by a hash of its quasi-identifier tuple, so all rows of an
equivalence class (rows with equal released values, wherever they were written) meet in
one bucket; each bucket is checked on a worker by :func:`anonkit.checker.check` with the
sensitive columns encoded once for the whole table, so t-closeness, δ and β compare
classes with the *whole* table's distribution. The verdicts of the buckets are combined:
a model holds when it holds in every bucket, its measured level is the worst bucket's.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from anonkit.checker import CheckReport, check
from anonkit.data.encoding import Encoding
from anonkit.data.schema import ColumnSpec, Kind, Role, Schema
from anonkit.distributed.cluster import wait_for
from anonkit.distributed.source import concat_frames
from anonkit.models.base import PrivacyModel, SensitiveAttribute, Verdict


@dataclass(frozen=True)
class DistributedCheck:
    """What :func:`check_parts` found: one verdict per bound model, with the class sizes
    as an adversary groups the rows (in bucket order)."""

    verdicts: list[Verdict]
    attributes: list[str | None]
    worst_class_values: list[dict[str, object]]
    n_rows: int
    class_sizes: np.ndarray
    quasi_identifiers: list[str]
    sensitive: list[str] = field(default_factory=list)

    @property
    def n_classes(self) -> int:
        return len(self.class_sizes)

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)

    def __str__(self) -> str:
        return str(CheckReport(self.verdicts, self.attributes, self.worst_class_values,
                               self.n_rows, self.n_classes, self.quasi_identifiers,
                               self.sensitive, self.class_sizes))

    def to_dict(self) -> dict[str, object]:
        return CheckReport(self.verdicts, self.attributes, self.worst_class_values,
                           self.n_rows, self.n_classes, self.quasi_identifiers,
                           self.sensitive, self.class_sizes).to_dict()


def sensitive_encoding(encoding: Encoding) -> Encoding:
    """The part of ``encoding`` that encodes its sensitive columns (with their reference
    counts): what a released table, whose QIs are generalized, is checked with."""
    names = encoding.schema.sensitive
    return Encoding(Schema(tuple(encoding.schema[name] for name in names)),
                    tuple(encoding.column(name) for name in names), encoding.allow_missing)


def check_parts(client: Any, parts: Sequence[Any], quasi_identifiers: Sequence[str],
                sensitive: Sequence[str], models: Sequence[PrivacyModel],
                encoding: Encoding | None = None, n_buckets: int | None = None,
                show_progress: bool = False) -> DistributedCheck:
    """Check the table whose pieces are ``parts`` (futures of DataFrames) against
    ``models`` (bound to the sensitive columns already, see
    :func:`anonkit.checker.bind_models`).

    ``encoding`` encodes the sensitive columns with the reference distribution; without
    one it is fitted on the whole table here (categorical unless the columns are numeric).
    """
    qis, sens = list(quasi_identifiers), list(sensitive)
    if encoding is None and sens:
        encoding = fit_sensitive_encoding(client, parts, sens, {})
    n_buckets = n_buckets or max(len(parts), 2 * len(client.scheduler_info()["workers"]), 1)
    bucketed = client.map(_buckets, parts, qis=qis, columns=qis + sens, n_buckets=n_buckets)
    enc = client.scatter(encoding, broadcast=True, hash=False) if encoding is not None \
        else None
    checks = [client.submit(_check_bucket,
                            [client.submit(operator.getitem, b, i, pure=False)
                             for b in bucketed],
                            qis, sens, list(models), enc, pure=False)
              for i in range(n_buckets)]
    wait_for(checks, "verifying the whole output", show_progress)
    results = [r for r in client.gather(checks) if r is not None]
    return _combined(results, qis, sens, list(models))


def fit_sensitive_encoding(client: Any, parts: Sequence[Any], sensitive: Sequence[str],
                           kinds: dict[str, Kind]) -> Encoding:
    """An encoding of the ``sensitive`` columns fitted on every piece, with the whole
    table's counts as the reference distribution."""
    counts = _value_counts(client, parts, sensitive)
    specs = []
    for name in sensitive:
        kind = kinds.get(name)
        if kind is None:
            kind = Kind.NUMERIC if pd.api.types.is_numeric_dtype(counts[name].index) \
                else Kind.CATEGORICAL
        specs.append(ColumnSpec(name, Role.SENSITIVE, kind))
    schema = Schema(tuple(specs))
    return Encoding.from_domain(schema, domains_of(counts),
                                reference_counts=reference_of(counts))


def _value_counts(client: Any, parts: Sequence[Any],
                  columns: Sequence[str]) -> dict[str, pd.Series]:
    """Per column, how often each value occurs over every piece (missing values as NaN)."""
    partial = client.gather(client.map(_piece_value_counts, parts, columns=list(columns)))
    return {name: pd.concat([p[name] for p in partial]).groupby(level=0, dropna=False,
                                                                observed=True).sum()
            for name in columns}


def domains_of(counts: dict[str, pd.Series]) -> dict[str, list[object]]:
    return {name: [v for v in c.index[c.to_numpy() > 0] if not _missing(v)]
            for name, c in counts.items()}


def reference_of(counts: dict[str, pd.Series]) -> dict[str, dict[object, float]]:
    out: dict[str, dict[object, float]] = {}
    for name, c in counts.items():
        ref: dict[object, float] = {}
        for value, n in zip(c.index, c.to_numpy(), strict=True):
            if n > 0:
                key = None if _missing(value) else value
                ref[key] = ref.get(key, 0.0) + float(n)
        out[name] = ref
    return out


def _missing(value: object) -> bool:
    return value is None or bool(pd.isna(value))  # type: ignore[arg-type]


def _piece_value_counts(df: pd.DataFrame, columns: list[str]) -> dict[str, pd.Series]:
    out = {}
    for name in columns:
        column = df[name]
        counts = column.value_counts(dropna=False, sort=False)
        if isinstance(column.dtype, pd.CategoricalDtype):  # plain values, not categories
            counts.index = pd.Index(np.asarray(counts.index.astype(object)))
        out[name] = counts
    return out


def _buckets(df: pd.DataFrame, qis: list[str], columns: list[str],
             n_buckets: int) -> list[pd.DataFrame]:
    """The rows of ``df`` by bucket: equal QI tuples always go to the same bucket."""
    df = df[columns]
    bucket = pd.util.hash_pandas_object(df[qis], index=False).to_numpy() % np.uint64(n_buckets)
    order = np.argsort(bucket, kind="stable")
    bounds = np.searchsorted(bucket[order], np.arange(n_buckets + 1, dtype=np.uint64))
    return [_trimmed(df.iloc[order[bounds[i]:bounds[i + 1]]]) for i in range(n_buckets)]


def _trimmed(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its Categorical columns holding only the categories they use: a bucket
    would otherwise carry every label of its file across the network."""
    return pd.DataFrame({name: _used_categories(column)
                         if isinstance(column.dtype, pd.CategoricalDtype) else column
                         for name, column in df.items()}, index=df.index)


def _used_categories(column: pd.Series) -> pd.Series:
    """``cat.remove_unused_categories`` by counting instead of sorting the codes."""
    codes = column.cat.codes.to_numpy()
    categories = column.cat.categories
    used = np.bincount(codes[codes >= 0], minlength=len(categories)) > 0
    new_code = np.cumsum(used) - 1
    kept = np.where(codes >= 0, new_code[np.maximum(codes, 0)], -1)
    return pd.Series(pd.Categorical.from_codes(kept, categories[used]), index=column.index,
                     name=column.name)


def _check_bucket(pieces: list[pd.DataFrame], qis: list[str], sens: list[str],
                  models: list[PrivacyModel], encoding: Encoding | None
                  ) -> tuple[_BucketResult, np.ndarray] | None:
    pieces = [p for p in pieces if len(p)]
    if not pieces:
        return None
    df = concat_frames(pieces)
    attributes = None
    if sens:
        assert encoding is not None
        table = encoding.transform(df[sens])
        references = encoding.reference_counts
        attributes = [SensitiveAttribute.from_encoded(c, references[c.name])
                      for c in table.sensitive]
    report = check(df, qis, sens or None, models, attributes=attributes)
    # the per-row class ids stay here: only what the combined verdicts need travels
    return _BucketResult(report.verdicts, report.attributes, report.worst_class_values,
                         report.n_rows), np.asarray(report.class_sizes)


@dataclass(frozen=True)
class _BucketResult:
    verdicts: list[Verdict]
    attributes: list[str | None]
    worst_class_values: list[dict[str, object]]
    n_rows: int


def _combined(results: list[tuple[_BucketResult, np.ndarray]], qis: list[str], sens: list[str],
              models: list[PrivacyModel]) -> DistributedCheck:
    """One verdict per model from the buckets' (classes never span two buckets)."""
    reports = [r for r, _ in results]
    sizes = [s for _, s in results]
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sizes])])
    verdicts: list[Verdict] = []
    worst_values: list[dict[str, object]] = []
    for i, model in enumerate(models):
        per_bucket = [r.verdicts[i] for r in reports]
        levels = np.array([v.measured for v in per_bucket])
        at = int(np.nanargmin(levels) if model.higher_is_better else np.nanargmax(levels))
        worst = per_bucket[at]
        verdicts.append(Verdict(
            worst.model, worst.parameters, all(v.passed for v in per_bucket), worst.measured,
            worst.required, int(offsets[at] + worst.worst_class), worst.worst_class_size,
            sum(v.failing_classes for v in per_bucket), int(offsets[-1]), worst.measure,
            worst.comparison, worst.details))
        worst_values.append(reports[at].worst_class_values[i])
    return DistributedCheck(verdicts, list(reports[0].attributes), worst_values,
                            sum(r.n_rows for r in reports),
                            np.concatenate(sizes) if sizes else np.zeros(0, np.int64),
                            qis, sens)
