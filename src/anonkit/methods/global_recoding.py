"""The ``global`` method: full-domain global recoding with a suppression limit.

Every quasi-identifier gets a hierarchy -- a given one (an ARX file), a built one
(``--build COLUMN=intervals:5,10,20 | mask | dates:month,year | flat``) or the default, the
value and then ``*`` -- and is released at one level of it for the whole table: the level
vector is the optimal node of the lattice under ``--metric``
(:mod:`anonkit.algorithms.global_recoding`). The rows of the classes that break a model are
suppressed, every quasi-identifier released as ``*`` (at most ``--suppression`` of the
rows); the verifier regroups the release and takes them as one class exempt from the
models, counted and checked against the limit.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from anonkit._util.numbers import exact_number
from anonkit.algorithms.global_recoding import (
    ColumnLattice,
    RecodingResult,
    column_counts,
    population_levels,
    search,
)
from anonkit.algorithms.recoding_metrics import (
    METRICS,
    SEPARABLE,
    LevelCounts,
    class_metric,
    metric_tables,
)
from anonkit.assemble import Progress, no_progress, release_table
from anonkit.checker import survey_weights
from anonkit.data.encoding import EncodedColumn, EncodedTable, encode
from anonkit.data.schema import Schema
from anonkit.errors import InputError
from anonkit.generalization import _value_text
from anonkit.hierarchy.base import Hierarchy
from anonkit.hierarchy.builders import date_hierarchy, interval_hierarchy, masking_hierarchy
from anonkit.methods.models import models_from_options
from anonkit.metrics import class_metrics
from anonkit.models.base import PrivacyModel, SensitiveAttribute, bind_models
from anonkit.models.risk import fixed_to_sample, with_population_hierarchies
from anonkit.release import SUPPRESSED, RecodingSummary, Release, ReleaseKind
from anonkit.verify import verify_release

#: how ``--build`` names a hierarchy builder
BUILDERS = ("intervals", "mask", "dates", "flat")


def run(df: pd.DataFrame, schema: Schema, options: dict[str, Any],
        progress: Progress | None = None) -> Release:
    """The ``global`` method of the registry."""
    step = progress or no_progress
    limit = float(options.get("suppression") or 0.0)
    metric = str(options.get("metric") or "loss")
    models = models_from_options(options)
    if not models:
        raise InputError("no privacy model given: set k (e.g. -k 5), -l, -t or --model")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    with step("encoding", len(df)):
        schema = with_built_hierarchies(df, schema, options.get("build") or {})
        table = encode(df, schema)
        sensitive = [SensitiveAttribute.from_encoded(c) for c in table.sensitive]
        # a threshold that depends on the sample's size reads the whole table's (as the
        # verifier's), and the population tables read the QIs' hierarchy labels
        models = fixed_to_sample(bind_models(models, sensitive), len(df))
        models = with_population_hierarchies(models, population_hierarchies(df, table, models))
        weights = survey_weights(df, models)
        levels = [column_levels(c) for c in table.quasi_identifiers]
        lattices = [lattice for lattice, _ in levels]
        counts = [column_counts(lattice, c.codes.astype(np.int64))
                  for lattice, c in zip(lattices, table.quasi_identifiers, strict=True)]
        tables = {id(t): t for t in (m.population_table for m in models) if t is not None}
        populations = [population_levels(t, [c.name for c in table.quasi_identifiers],
                                         [labels for _, labels in levels])
                       for t in tables.values()]
    timings["encode"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    with step("searching the lattice", len(df)):
        result = search(lattices, table.qi_matrix, sensitive, models,
                        suppression_limit=limit, metric=metric, level_counts=counts,
                        weights=weights, populations=populations)
    timings["algorithm"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    with step("generalizing", len(df)):
        suppressed_row = result.suppressed_class[result.row_class]
        released = {}
        for (lattice, labels), column, level in zip(levels, table.quasi_identifiers,
                                                    result.levels, strict=True):
            released[column.name] = released_column(
                labels[level], lattice.maps[level][column.codes], suppressed_row)
        data = release_table(df, schema, released)
    timings["generalize"] = time.perf_counter() - t0

    names = [c.name for c in table.quasi_identifiers]
    summary = RecodingSummary(
        levels=dict(zip(names, result.levels, strict=True)),
        heights={lattice.name: lattice.height for lattice in lattices},
        metric=metric, value=result.value, lattice=result.stats.to_dict(),
        suppressed_classes=suppressed_classes(result, levels, names),
        utility=utility(result, counts))
    parameters: dict[str, object] = {
        "models": [m.spec() for m in models], "suppression": limit, "metric": metric,
        "quasi_identifiers": schema.quasi_identifiers, "sensitive": schema.sensitive,
        "levels": dict(summary.levels),
        "hierarchies": {name: "given" if schema[name].hierarchy is not None else "flat"
                        for name in names} | {name: spec for name, spec in
                                              (options.get("build") or {}).items()},
    }
    t0 = time.perf_counter()
    with step("verifying", len(df)):
        release = Release(data, result.row_class, pd.DataFrame(), [], {}, schema, "global",
                          parameters, timings, kind=ReleaseKind.GENERALIZED,
                          models=list(models),
                          suppression_limit=limit if result.suppressed_rows else None,
                          recoding=summary)
        verify_release(release)
    timings["verify"] = time.perf_counter() - t0
    measure(release, result, models)
    return release


def with_built_hierarchies(df: pd.DataFrame, schema: Schema,
                           build: Mapping[str, str]) -> Schema:
    """``schema`` with the hierarchies ``build`` asks for (``COLUMN -> SPEC``)."""
    for name, spec in build.items():
        if name not in schema.quasi_identifiers:
            raise InputError(f"--build {name}=...: {name!r} is not a quasi-identifier "
                             f"({', '.join(schema.quasi_identifiers)})")
        if schema[name].hierarchy is not None:
            raise InputError(f"column {name!r} has a hierarchy file and --build; give one")
        kind, _, argument = spec.partition(":")
        kind = kind.strip()
        values = df[name].dropna().unique()
        refuse_unparsed(df[name], name, kind)
        if kind == "intervals":
            try:
                widths = [float(w) for w in argument.split(",") if w.strip()]
            except ValueError:
                raise InputError(f"--build {name}={spec}: intervals takes widths, e.g. "
                                 f"intervals:5,10,20") from None
            hierarchy = interval_hierarchy(values, widths or (5, 10, 20), name=name)
        elif kind == "mask":
            hierarchy = masking_hierarchy(values, name=name)
        elif kind == "dates":
            parts = [p.strip() for p in argument.split(",") if p.strip()]
            hierarchy = date_hierarchy(values, parts or ("month", "year", "decade"),
                                       name=name)
        elif kind == "flat":
            continue
        else:
            raise InputError(f"--build {name}={spec}: unknown builder {kind!r}; use one of "
                             f"{', '.join(BUILDERS)}")
        schema = schema.with_hierarchy(name, hierarchy)
    return schema


def refuse_unparsed(column: pd.Series, name: str, builder: str) -> None:
    """A one-line error naming the first row whose value ``builder`` cannot read (the
    builders would show the value itself)."""
    present = column.notna().to_numpy()
    if builder == "intervals" and not pd.api.types.is_numeric_dtype(column):
        parsed = pd.to_numeric(column.astype(object), errors="coerce").notna().to_numpy()
    elif builder == "dates" and not pd.api.types.is_datetime64_any_dtype(column):
        parsed = pd.to_datetime(column.astype(object), errors="coerce",
                                format="mixed").notna().to_numpy()
    else:
        return
    bad = present & ~parsed
    if bad.any():
        noun = "a number" if builder == "intervals" else "a date"
        raise InputError(f"column {name!r}, data row {int(np.argmax(bad)) + 1}: --build "
                         f"{builder} needs {noun} in every row; use mask or flat for this "
                         f"column")


def population_hierarchies(df: pd.DataFrame, table: EncodedTable,
                           models: Sequence[PrivacyModel]) -> dict[str, Hierarchy]:
    """The hierarchies a population table reads the released labels with: each
    quasi-identifier's, and for one without, the flat one (the value, then ``*``) over the
    table's and the populations' values, so that a column released as ``*`` covers every
    population row (as the root it is; the label alone names no value)."""
    out = {c.name: c.hierarchy for c in table.quasi_identifiers if c.hierarchy is not None}
    frames = [t.frame for t in {id(t): t for t in (m.population_table for m in models)
                                if t is not None}.values()]
    if not frames:
        return out
    for c in table.quasi_identifiers:
        if c.hierarchy is not None:
            continue
        values = {exact_number(v) for v in pd.unique(df[c.name].dropna())}
        for frame in frames:
            if c.name in frame.columns:
                values |= {exact_number(v) for v in pd.unique(frame[c.name].dropna())}
        if SUPPRESSED not in values:
            out[c.name] = Hierarchy([[v, SUPPRESSED] for v in sorted(values)], name=c.name)
    return out


def column_levels(column: EncodedColumn) -> tuple[ColumnLattice, tuple[np.ndarray, ...]]:
    """A quasi-identifier's levels and, per level, each node's label (level 0: the values
    as written). Without a hierarchy: the value, then ``*``."""
    values = _value_text(column)
    hierarchy: Hierarchy | None = column.hierarchy
    if hierarchy is None or column.hierarchy_leaf is None:
        maps = (np.arange(column.cardinality, dtype=np.int32),
                np.zeros(column.cardinality, dtype=np.int32))
        labels: tuple[np.ndarray, ...] = (values, np.array([SUPPRESSED], dtype=object))
    else:
        leaf = column.hierarchy_leaf
        level_maps, level_labels = [], []
        for level in range(hierarchy.height):
            _, first, inverse = np.unique(hierarchy.node_ids[leaf, level],
                                              return_index=True, return_inverse=True)
            level_maps.append(inverse.reshape(-1).astype(np.int32))
            level_labels.append(values[first] if level == 0 else
                                hierarchy.labels[leaf[first], level].astype(object))
        maps, labels = tuple(level_maps), tuple(level_labels)
    for level, shown in enumerate(labels[:-1]):
        if (np.asarray(shown, dtype=object) == SUPPRESSED).any():
            raise InputError(f"column {column.name!r}: level {level} of its hierarchy labels "
                             f"a node {SUPPRESSED!r}, which marks a suppressed cell; rename "
                             f"that label")
    return ColumnLattice(column.name, maps), labels


def released_column(labels: np.ndarray, nodes: np.ndarray,
                    suppressed: np.ndarray) -> pd.Categorical:
    """Per row its node's label, or ``*`` when the row is suppressed."""
    shown = [str(label) for label in labels]
    if SUPPRESSED in shown:  # the root's label: a suppressed cell looks the same
        star = shown.index(SUPPRESSED)
    else:
        star = len(shown)
        shown.append(SUPPRESSED)
    codes = np.where(suppressed, star, nodes)
    if len(set(shown)) < len(shown):  # two nodes with one label: they read as one
        return pd.Categorical(np.asarray(shown, dtype=object)[codes])
    return pd.Categorical.from_codes(codes, categories=pd.Index(shown, dtype=object))


def suppressed_classes(result: RecodingResult,
                       levels: Sequence[tuple[ColumnLattice, tuple[np.ndarray, ...]]],
                       names: Sequence[str]) -> pd.DataFrame:
    """Per suppressed class of the chosen node: its labels and rows (largest first)."""
    which = np.flatnonzero(result.suppressed_class)
    table = {name: labels[level][result.class_codes[which, j]]
             for j, (name, (_, labels), level) in enumerate(zip(names, levels,
                                                                 result.levels, strict=True))}
    out = pd.DataFrame(table)
    out["rows"] = result.class_sizes[which]
    return out.sort_values("rows", ascending=False, kind="stable").reset_index(drop=True)


def utility(result: RecodingResult, counts: Sequence[LevelCounts]) -> dict[str, float]:
    """Every metric at the chosen node, against the original."""
    n_rows = int(result.class_sizes.sum())
    out: dict[str, float] = {}
    for name in METRICS:
        if name in SEPARABLE:
            out[name] = metric_tables(name, counts, n_rows).value(
                result.levels, result.class_codes, result.class_sizes,
                result.suppressed_class)
        else:
            out[name] = class_metric(name, result.class_sizes, result.suppressed_class,
                                     n_rows)[0]
    return out


def measure(release: Release, result: RecodingResult,
            models: Sequence[PrivacyModel]) -> None:
    """The figures every release has, over the classes that are not suppressed (the
    suppressed rows tell nothing of their quasi-identifiers), plus the recoding's."""
    t0 = time.perf_counter()
    kept = result.class_sizes[~result.suppressed_class]
    k = max(m.min_class_size() for m in models)
    release.metrics = class_metrics(kept, k, suppressed=result.suppressed_rows)
    summary = release.recoding
    assert summary is not None
    release.metrics |= {f"utility.{name}": value for name, value in summary.utility.items()}
    release.metrics |= {f"lattice.{name}": float(v) for name, v in summary.lattice.items()}
    release.metrics |= {f"level.{name}": float(v) for name, v in summary.levels.items()}
    release.timings["metrics"] = time.perf_counter() - t0
