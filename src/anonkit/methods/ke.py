"""The ``ke`` method: (k,e)-anonymity in one shot. The optimal partition by sensitive value
(:mod:`anonkit.algorithms.ke_partition`), quasi-identifiers exact, the sensitive values
permuted at random within each published group; verified and measured here. Its
incremental form continues from the history (:mod:`anonkit.history.engines.incremental_ke`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from anonkit._util.randomness import privacy_rng
from anonkit.algorithms.ke_partition import KEPartition, group_value_sets, optimal_partition, spread
from anonkit.assemble import Progress, no_progress
from anonkit.data.schema import Schema
from anonkit.errors import InputError
from anonkit.metrics import class_metrics
from anonkit.metrics.range_queries import relative_error
from anonkit.models.base import decimal_places
from anonkit.models.ke_anonymity import KEAnonymity
from anonkit.release import Provenance, Release, ReleaseKind, ThreatModel
from anonkit.verify import verify_release


def sensitive_values(df: pd.DataFrame, schema: Schema) -> tuple[str, np.ndarray]:
    """The one numeric sensitive column and its values as floats."""
    if len(schema.sensitive) != 1:
        raise InputError(f"(k,e)-anonymity protects one numeric sensitive attribute; "
                         f"{len(schema.sensitive)} were given "
                         f"({', '.join(schema.sensitive) or 'none'}): name one with "
                         f"--sensitive")
    name = schema.sensitive[0]
    column = df[name]
    if not pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        # the column's type, never one of its values: an error ends up in logs
        raise InputError(f"(k,e)-anonymity needs a numeric sensitive attribute; {name!r} is "
                         f"{'true/false' if pd.api.types.is_bool_dtype(column) else 'text'}: "
                         f"name a numeric column with --sensitive")
    return name, column.to_numpy(dtype=np.float64, na_value=np.nan)


def permuted_release(df: pd.DataFrame, schema: Schema, part: KEPartition, *, k: int,
                     e: float, group_column: str, seed: int | None, method: str,
                     parameters: dict[str, object], timings: dict[str, float],
                     method_state: bytes | None = None,
                     placeholders: np.ndarray | None = None) -> Release:
    """QIs exact, the sensitive values permuted at random within each group, the group in
    ``group_column``, identifiers dropped; the group table as the ``groups`` auxiliary.

    ``placeholders``: the values of placeholder rows (incremental releases that keep the
    values of those who left, :mod:`anonkit.algorithms.ke_placeholders`): ``part`` covers
    the rows of ``df`` followed by them. They are released with every other column blank,
    marked counterfeit (no person), and counted per group in the ``placeholders`` column
    of the group table; their values are permuted with their group's like any other."""
    t0 = time.perf_counter()
    name = schema.sensitive[0]
    if group_column in df.columns or group_column in schema.released_columns:
        raise InputError(f"the group column {group_column!r} is already a column of the table; "
                         f"choose another name with --group-column")
    rng, seeded = privacy_rng(seed)
    group_sorted = part.group_of_sorted()
    # a random order within each group (groups stay in place: they are sorted already)
    shuffled = part.order[np.lexsort((rng.random(len(part.order)), group_sorted))]
    n_blank = 0 if placeholders is None else len(placeholders)
    source = df[name].to_numpy()
    if n_blank:
        assert placeholders is not None
        kept = placeholders.astype(source.dtype) if source.dtype.kind in "iu" else placeholders
        source = np.concatenate([source, kept])
    permuted = np.empty_like(source)
    permuted[part.order] = source[shuffled]
    data = pd.DataFrame({c: _with_blank_rows(df[c], n_blank) for c in schema.released_columns},
                        index=pd.RangeIndex(len(df) + n_blank))
    data[name] = permuted
    groups = part.group_ids()
    data[group_column] = groups
    ptr, _ = group_value_sets(part)
    v = part.sorted_values
    table = pd.DataFrame({"id": np.arange(part.n_groups),
                          "size": np.diff(part.starts),
                          "min": source[part.order[part.starts[:-1]]],
                          "max": source[part.order[part.starts[1:] - 1]],
                          "distinct": np.diff(ptr)})
    provenance = source_rows = None
    if placeholders is not None:
        table["placeholders"] = np.bincount(groups[len(df):], minlength=part.n_groups)
        provenance = np.concatenate([np.full(len(df), Provenance.INPUT, dtype=np.int8),
                                     np.full(n_blank, Provenance.COUNTERFEIT, dtype=np.int8)])
        source_rows = np.concatenate([np.arange(len(df)), np.full(n_blank, -1)]).astype(np.int64)
    timings["permute"] = time.perf_counter() - t0
    model = KEAnonymity(k, e, attribute=name)
    metrics = {"ke.error": float(spread(v[part.starts[1:] - 1], v[part.starts[:-1]]).sum()),
               "ke.groups": float(part.n_groups)}
    if placeholders is not None:
        metrics["ke.placeholders"] = float(n_blank)
    release = Release(data, groups, pd.DataFrame(), [], metrics, schema, method, parameters,
                      timings, kind=ReleaseKind.PERMUTED, models=[model],
                      provenance=provenance, source_rows=source_rows,
                      group_column=group_column, auxiliary={"groups": table},
                      threat_model=ThreatModel.INCREMENTAL_KE, seeded=seeded,
                      method_state=method_state)
    t0 = time.perf_counter()
    verify_release(release)  # the boundary regroups by the group column; done once here
    release.metrics |= class_metrics(np.diff(part.starts), k)
    timings["verify"] = time.perf_counter() - t0
    truth = df[name].to_numpy(dtype=np.float64)
    release.metrics |= _query_error(release, np.concatenate([truth, np.full(n_blank, np.nan)]))
    return release


def _with_blank_rows(column: pd.Series, n_blank: int) -> object:
    """The column's values followed by ``n_blank`` missing ones (whole numbers stay whole:
    a nullable integer column, not floats)."""
    if not n_blank:
        return column.array.copy()
    if isinstance(column.dtype, np.dtype) and column.dtype.kind in "iu":
        column = column.astype("Int64")
    elif isinstance(column.dtype, np.dtype) and column.dtype.kind == "b":
        column = column.astype("boolean")
    return column.reset_index(drop=True).reindex(pd.RangeIndex(len(column) + n_blank)).array


def _query_error(release: Release, truth: np.ndarray) -> dict[str, float]:
    """The utility metric: the relative error of SUM on random range queries over the
    numeric quasi-identifiers (none when there are no numeric quasi-identifiers)."""
    try:
        return relative_error(release, truth)
    except InputError:
        return {}


def anonymize(df: pd.DataFrame, schema: Schema, options: dict[str, Any],
              progress: Progress | None = None) -> Release:
    """One-shot (k,e)-anonymity of ``df`` (the ``ke`` method)."""
    with (progress or no_progress)("partitioning", len(df)):
        return one_shot(df, schema, options)[0]


def one_shot(df: pd.DataFrame, schema: Schema,
              options: dict[str, Any]) -> tuple[Release, KEPartition]:
    k, e = options.get("k"), options.get("e")
    if k is None or e is None:
        raise InputError("method 'ke' needs both -k (distinct values per group) and -e "
                         "(least range per group)")
    name, values = sensitive_values(df, schema)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    part = optimal_partition(values, k, e, places=decimal_places(values), name=name)
    timings["partition"] = time.perf_counter() - t0
    release = permuted_release(df, schema, part, k=k, e=e,
                               group_column=options.get("group_column") or "group",
                               seed=options.get("seed"), method="ke",
                               parameters=parameters_of(options), timings=timings)
    return release, part


def parameters_of(options: dict[str, Any]) -> dict[str, object]:
    # never the seed: a recorded seed would let a reader replay the permutation
    return {n: options[n] for n in ("k", "e", "group_column", "history_check")
            if options.get(n) is not None}
