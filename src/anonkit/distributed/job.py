"""Command-line jobs on the Dask engine: ``anonkit anonymize ... --engine dask`` and
``anonkit check DIR --engine dask`` hand their parsed options to these functions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from anonkit._util.options import as_list, job_qis
from anonkit.data.table import Kind
from anonkit.errors import InputError
from anonkit.models.base import PrivacyModel

#: job keys the Dask engine cannot honour yet, with what to do instead
_UNSUPPORTED = {
    "shuffle": "the Dask engine writes rows fragment by fragment; drop --shuffle",
    "report": "the HTML report needs the release in memory; drop --report, or use the "
              "single-process engine",
}
_MONDRIAN_OPTIONS = ("strategy", "generalization", "allow_missing", "seed")


def anonymize_job(job: Mapping[str, Any],
                  column_roles: Callable[[Sequence[str], Mapping[str, Any], Sequence[str]],
                                         dict[str, str]],
                  workers: int | None = None, scheduler: str | None = None,
                  progress: bool = False) -> dict[str, Any]:
    """Run an ``anonkit anonymize`` job (see :func:`anonkit.cli.job_from`) with
    :class:`~anonkit.distributed.engine.DaskMondrian`; ``column_roles`` gives every column
    its role exactly as the single-process command does."""
    from anonkit import methods
    from anonkit.distributed.engine import DaskMondrian
    from anonkit.distributed.source import source_columns
    from anonkit.hierarchy import read_arx_hierarchy

    if (job.get("method") or "mondrian") != "mondrian":
        raise InputError(f"--engine dask runs Mondrian only; method {job['method']!r} runs "
                         f"on the single-process engine")
    for key, advice in _UNSUPPORTED.items():
        if job.get(key):
            raise InputError(f"--{key} is not available with --engine dask: {advice}")
    qis = job_qis(job, "-o DIR")
    options = dict(job.get("options") or {})
    unused = [name for name in ("remove_cut_dimension", "single_dimensional")
              if options.get(name)]
    if unused:
        raise InputError(f"--{unused[0].replace('_', '-')} is not available with --engine "
                         f"dask (fragments are cut on every dimension); drop it")
    names = source_columns(job["input"])
    roles = column_roles(names, job, qis)
    output = Path(job["output"])
    if job.get("mkdir"):
        output.resolve().parent.mkdir(parents=True, exist_ok=True)
    hierarchies = {column: read_arx_hierarchy(path, name=column)
                   for column, path in (job.get("hierarchies") or {}).items()}
    engine = DaskMondrian(models=methods.models_from_options(options),
                          **{name: options[name] for name in _MONDRIAN_OPTIONS
                             if options.get(name) is not None})
    release = engine.anonymize(
        job["input"], output, qis, as_list(job.get("sensitive")) or None,
        identifiers=[n for n in names if roles[n] == "identifier"],
        drop=[n for n in names if roles[n] == "drop"],
        hierarchies=hierarchies, kinds=job.get("kinds") or None,
        orders=job.get("orders") or None, workers=workers, scheduler=scheduler,
        progress=progress)
    return {
        "output": release.output,
        "files": release.files,
        "report": None,
        "method": "mondrian",
        "engine": "dask",
        "kind": "generalized",
        "passed": release.passed,
        "verdicts": [v.to_dict() for v in release.verdicts],
        "metrics": release.metrics,
        "timings": release.timings,
        "fragments": release.n_fragments,
        "summary": release.summary(),
        "full_summary": release.summary(verbose=True),
        "released_unchanged": [n for n in names if roles[n] == "insensitive"],
        "seeded": options.get("seed") is not None,
    }


def check_source(source: str | Path, quasi_identifiers: Sequence[str],
                 sensitive: Sequence[str], models: Sequence[PrivacyModel],
                 kinds: Mapping[str, Kind], workers: int | None = None,
                 scheduler: str | None = None, progress: bool = False) -> Any:
    """Check the table at ``source`` (a directory of Parquet files, or one file) on a Dask
    cluster; returns a :class:`~anonkit.distributed.check.DistributedCheck`."""
    from anonkit.checker import bind_models
    from anonkit.distributed.check import check_parts, fit_sensitive_encoding
    from anonkit.distributed.cluster import dask_client, wait_for
    from anonkit.distributed.source import source_columns, source_parts

    qis, sens = list(quasi_identifiers), list(sensitive)
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
            from anonkit.models.base import SensitiveAttribute

            # bound once on the client: a model that cannot apply is told before any work
            for name in sens:
                column = encoding.column(name)
                attributes.append(SensitiveAttribute(
                    name, np.zeros(0, dtype=np.int64), column.values, column.kind,
                    column.reference_counts, column.hierarchy, column.decode_leaf))
        bound = bind_models(list(models), attributes)
        return check_parts(client, parts, qis, sens, bound, encoding, show_progress=progress)
