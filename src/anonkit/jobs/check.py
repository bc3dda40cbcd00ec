"""Checking a released table, ours or another tool's, against privacy models, locally or
on Dask (:func:`check_file`)."""


from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from anonkit._util.numbers import Source
from anonkit._util.options import as_list, parse_pairs
from anonkit.checker import CheckReport, bind_models, suppression_verdict
from anonkit.checker import check as check_table
from anonkit.data.database import database_columns, read_source, source_of
from anonkit.data.read import (
    column_list,
    read_table,
    separator_hint,
    table_columns,
    to_pandas,
)
from anonkit.data.schema import Kind
from anonkit.distributed.check import DistributedCheck, check_parts, fit_sensitive_encoding
from anonkit.distributed.cluster import dask_client, wait_for
from anonkit.distributed.source import source_columns, source_parts
from anonkit.errors import InputError
from anonkit.jobs.common import (
    Columns,
    Job,
    PathText,
    dask_chosen,
    model_options,
)
from anonkit.jobs.outputs import refuse_overwrites
from anonkit.jobs.reading import job_dialect
from anonkit.methods.models import models_from_options
from anonkit.models.base import PrivacyModel, SensitiveAttribute
from anonkit.models.risk import RISK_MODELS
from anonkit.release import SUPPRESSED
from anonkit.report import render_check_report
from anonkit.report.page import provenance


def check_file(path: PathText, quasi_identifiers: Columns, sensitive: Columns = (), *,
               options: Mapping[str, object], source: Source = "python",
               kinds: Mapping[str, str] | Sequence[str] = (), group_column: str | None = None,
               reading: Job | None = None, report: PathText | None = None,
               engine: str | None = None, workers: int | None = None,
               scheduler: str | None = None, cluster_progress: bool = False,
               command: str | None = None, suppression: float | None = None
               ) -> CheckReport | DistributedCheck:
    """Check the released table at ``path`` (ours or another tool's) against the privacy
    models of ``options`` (``k``, ``l``, ``t``, ``models``: as given from ``source``, the
    command line's text or Python values).

    Every column is read as the text it holds: rows are in one class exactly when their
    quasi-identifier cells are the same text, and sensitive columns are categorical unless
    ``kinds`` (by column, or ``COLUMN=KIND`` texts) declares them numeric. ``reading``: how
    the file is written (a job's ``separator``, ``header``, ``names``, ``na_values``,
    ``skipinitialspace``, ``encoding``). ``group_column``: the classes are the rows with
    equal values in it. ``report``: write an HTML report there (its provenance: the file
    checked and its SHA-256, ``command``, the version, the time). ``engine="dask"`` checks
    on a Dask cluster (a directory of Parquet files, or one file). ``suppression``: the
    share of rows a release may suppress whole (every quasi-identifier ``*``, as global
    recoding does): those rows are one class exempt from the models, as in ARX and pycanon,
    and their share is a verdict of its own against this limit.
    """
    if suppression is not None and not 0 <= suppression < 1:
        raise InputError(f"--suppression {suppression}: give a share of the rows, at least 0 "
                         f"and below 1 (e.g. 0.05)")
    reading = dict(reading or {})
    separator: Any = reading.get("separator")
    dialect = job_dialect(reading)
    # model objects from the typed options, never text formatted and parsed again
    given = {o.name: o.parse(options[o.name], source) for o in model_options()
             if options.get(o.name) is not None}
    chosen = models_from_options(given)
    if not chosen:
        raise InputError("no privacy model given: pass -k, -l, -t or --model")
    sens = as_list(sensitive)
    declared = dict(kinds) if isinstance(kinds, Mapping) else parse_pairs(kinds, "kind")
    known = [member.value for member in Kind]
    for name, kind in declared.items():
        if name not in sens:
            raise InputError(f"--kind {name}={kind}: {name!r} is not a sensitive column "
                             f"(--sensitive {','.join(sens) or '...'}); quasi-identifiers "
                             f"are compared as text, so only sensitive columns take a kind")
        if kind not in known:
            raise InputError(f"--kind {name}={kind}: unknown kind {kind!r}; use one of "
                             f"{', '.join(known)}")
        if kind == Kind.ORDINAL:
            raise InputError(f"--kind {name}=ordinal needs the order of its values, which "
                             f"the command line cannot take; declare it numeric or "
                             f"categorical, or call anonkit.checker.check with orders=")
    qis = as_list(quasi_identifiers)
    if report:
        refuse_overwrites({"input": path}, [(Path(report), "report")])
    database = source_of(path, reading.get("table"), reading.get("query"))
    if dask_chosen({"engine": engine, "workers": workers, "scheduler": scheduler}):
        if database is not None:
            raise InputError("--engine dask reads files; check a database table locally "
                             "(without --engine)")
        if group_column or report or suppression is not None:
            raise InputError("--group, --report and --suppression are not available with "
                             "--engine dask")
        risky = [m for m in chosen if isinstance(m, RISK_MODELS)]
        if risky:
            raise InputError(f"{risky[0].title()} is not available with --engine dask; "
                             f"check locally (without --engine)")
        return _check_on_dask(path, qis, sens, chosen,
                              {name: Kind(declared.get(name, Kind.CATEGORICAL))
                               for name in sens}, workers, scheduler, cluster_progress)
    names = table_columns(path, separator, dialect=dialect) if database is None \
        else database_columns(database)
    grouping = [group_column] if group_column else []
    # the survey weights individual-risk reads are judged too
    weights = sorted({m.weight_column for m in chosen if m.weight_column is not None})
    for role, columns in (("quasi-identifier", qis), ("sensitive", sens),
                          ("group column", grouping), ("weight column", weights)):
        for name in columns:
            if name not in names:
                raise InputError(f"unknown column {name!r} given as {role}; the table "
                                 f"has: {column_list(names)}{separator_hint(names)}")
    # released cells are labels: read as written, never as numbers, so values a float
    # would merge (big integers, 02139 and 2139) stay apart; only the columns judged,
    # as text of many distinct values (an identifier) is costly to read
    judged = list(dict.fromkeys(qis + sens + grouping + weights))
    if database is not None:
        df = to_pandas(read_source(database, judged, as_text=True), categorical_text=True)
    else:
        df = read_table(path, sep=separator, columns=judged,
                        categorical_text=True, as_text=True, header=dialect.header,
                        names=dialect.names, na_values=dialect.na_values,
                        skipinitialspace=dialect.skipinitialspace, encoding=dialect.encoding,
                        max_input_bytes=dialect.max_input_bytes)
    outcome = check_table(df, qis, sens or None, chosen,
                          kinds={name: declared.get(name, Kind.CATEGORICAL) for name in sens},
                          group_column=group_column,
                          suppressed=SUPPRESSED if suppression is not None else None)
    if suppression is not None:
        outcome.add(suppression_verdict(outcome.suppressed_rows, outcome.n_rows, suppression))
    if report:
        checked = [("checked", path)] if database is None else []
        render_check_report(outcome, report, provenance=provenance(
            checked, command=command,
            more={"table": str(reading.get("table") or reading.get("query"))}
            if database is not None else None))
    return outcome


def _check_on_dask(source: PathText, qis: list[str], sens: list[str],
                   models: Sequence[PrivacyModel], kinds: Mapping[str, Kind],
                   workers: int | None, scheduler: str | None,
                   progress: bool) -> DistributedCheck:
    """Check the table at ``source`` on a Dask cluster."""
    names = source_columns(source)
    for role, columns in (("quasi-identifier", qis), ("sensitive", sens)):
        for name in columns:
            if name not in names:
                raise InputError(f"unknown column {name!r} given as {role}; the table has: "
                                 f"{', '.join(names)}")
    with dask_client(workers, scheduler) as client:
        parts = client.compute(source_parts(source, qis + sens))
        wait_for(parts, "reading", progress)
        encoding = fit_sensitive_encoding(client, parts, sens, dict(kinds)) if sens else None
        attributes = []
        if encoding is not None:
            # bound once on the client: a model that cannot apply is told before any work
            for name in sens:
                column = encoding.column(name)
                attributes.append(SensitiveAttribute(
                    name, np.zeros(0, dtype=np.int64), column.values, column.kind,
                    column.reference_counts, column.hierarchy, column.decode_leaf))
        bound = bind_models(list(models), attributes)
        return check_parts(client, parts, qis, sens, bound, encoding, show_progress=progress)


# -- demo ------------------------------------------------------------------------------------
