"""The ``stream-tree`` method in one shot: every row released as its span under the
counting tree (:mod:`anonkit.algorithms.stream_tree`), verified and measured here. Its
sequential form keeps the counts in the history
(:mod:`anonkit.history.engines.stream_tree`)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from anonkit.algorithms.stream_tree import StreamTree, span_label
from anonkit.assemble import Progress
from anonkit.data.schema import Schema
from anonkit.errors import InputError
from anonkit.methods.options import parse_domain
from anonkit.metrics import class_metrics, released_sizes
from anonkit.models.base import KAnonymity
from anonkit.release import Release, ReleaseKind, ThreatModel
from anonkit.verify import verify_release


def column_values(df: pd.DataFrame, schema: Schema) -> tuple[str, np.ndarray]:
    qis = schema.quasi_identifiers
    if len(qis) != 1:
        raise InputError(f"the stream tree counts one integer quasi-identifier; "
                         f"{len(qis)} were given ({', '.join(qis)})")
    name = qis[0]
    column = df[name]
    if column.isna().any():
        row = int(np.flatnonzero(column.isna().to_numpy())[0])
        raise InputError(f"column {name!r} has a missing value in row {row}; the stream tree "
                         f"counts whole numbers: fill or drop it")
    if not pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        raise InputError(f"the stream tree counts whole numbers; column {name!r} holds values "
                         f"such as {column.head(1).tolist()}")
    return name, column.to_numpy()


def stream_release(df: pd.DataFrame, schema: Schema, tree: StreamTree, *,
                   method_state: bytes | None, timings: dict[str, float],
                   parameters: dict[str, object], split: np.ndarray | None = None
                   ) -> Release:
    """Every row of ``df`` released as its span under ``tree``'s counts."""
    t0 = time.perf_counter()
    name, values = column_values(df, schema)
    lo, hi = tree.spans_of(values, split)
    data = pd.DataFrame({c: df[c].array.copy() for c in schema.released_columns},
                        index=pd.RangeIndex(len(df)))
    data[name] = pd.Categorical(span_label(lo, hi))
    width = float(tree.domain[1] - tree.domain[0])
    gcp = float(((hi - lo) / width).mean()) if width > 0 and len(lo) else 0.0
    timings["spans"] = time.perf_counter() - t0
    release = Release(data, np.zeros(len(df), dtype=np.int64), pd.DataFrame(), [],
                      {}, schema, "stream-tree", parameters, timings,
                      kind=ReleaseKind.GENERALIZED, models=[KAnonymity(tree.k)],
                      threat_model=ThreatModel.MONOTONE, method_state=method_state)
    verify_release(release)
    release.metrics = class_metrics(released_sizes(release), tree.k) | {
        "gcp": gcp, f"ncp.{name}": gcp, "stream.counted": float(tree.n_inserted)}
    return release


def anonymize(df: pd.DataFrame, schema: Schema, options: dict[str, Any],
              progress: Progress | None = None) -> Release:
    """One stream-tree release of ``df`` alone (the domain declared, or the data's)."""
    tree, _ = first_tree(df, schema, options)
    _, values = column_values(df, schema)
    tree.insert_many(values)
    return stream_release(df, schema, tree, method_state=tree.to_bytes(), timings={},
                          parameters=parameters_of(tree))


def first_tree(df: pd.DataFrame, schema: Schema, options: dict[str, Any]
                ) -> tuple[StreamTree, str]:
    k = options.get("k")
    if k is None:
        raise InputError("method 'stream-tree' needs -k")
    name, values = column_values(df, schema)
    domain = options.get("domain")
    growable = domain is None
    if domain is None:
        # taken from the data, so it grows with later data (a declared one is fixed)
        if not len(values):
            raise InputError("the first stream-tree release has no rows to take its domain "
                             "from: declare it with --domain LOW,HIGH")
        as_float = np.asarray(values, dtype=np.float64)
        domain = (int(np.floor(as_float.min())), int(np.ceil(as_float.max())))
    elif isinstance(domain, str):
        domain = parse_domain(domain)
    return StreamTree(k, tuple(domain), growable=growable), name  # type: ignore[arg-type]


def parameters_of(tree: StreamTree) -> dict[str, object]:
    return {"k": tree.k, "domain": f"{tree.domain[0]},{tree.domain[1]}", "depth": tree.depth,
            "domain_grows": tree.growable}
