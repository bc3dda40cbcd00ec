"""Anonymizing a table larger than one machine on a Dask cluster (``engine = \"dask\"``):
Mondrian only, written as a folder of parts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from anonkit._util.options import as_list, job_qis
from anonkit.distributed.engine import DaskMondrian
from anonkit.distributed.source import source_columns
from anonkit.errors import InputError
from anonkit.jobs.common import (
    Job,
)
from anonkit.jobs.frames import loaded_hierarchies
from anonkit.jobs.outputs import refuse_overwrites
from anonkit.jobs.reading import column_roles
from anonkit.methods.models import models_from_options
from anonkit.models.risk import RISK_MODELS
from anonkit.report.recorded import ReleaseFacts, render_recorded_report

#: job keys the Dask engine cannot honour yet, with what to do instead
_NOT_ON_DASK = {
    "shuffle": "the Dask engine writes rows fragment by fragment; drop --shuffle",
    "table": "the Dask engine reads files; read a database table without --engine dask",
    "query": "the Dask engine reads files; read a database query without --engine dask",
    "output_table": "the Dask engine writes Parquet folders; write a database table "
                    "without --engine dask",
}
_DASK_MONDRIAN_OPTIONS = ("strategy", "generalization", "allow_missing", "seed")


def anonymize_on_dask(job: Job, progress: bool = False, *,
                      command: str | None = None) -> dict[str, object]:
    """The job on :class:`~anonkit.distributed.engine.DaskMondrian`; every column gets its
    role exactly as on the single-process engine. The job's ``report`` is drawn from the
    classes the verifier found on the whole output (``command``: for its provenance)."""
    if (job.get("method") or "mondrian") != "mondrian":
        raise InputError(f"--engine dask runs Mondrian only; method {job['method']!r} runs "
                         f"on the single-process engine")
    for key, advice in _NOT_ON_DASK.items():
        if job.get(key):
            raise InputError(f"--{key} is not available with --engine dask: {advice}")
    qis = job_qis(job, "-o DIR")
    options: dict[str, Any] = dict(job.get("options") or {})  # type: ignore[call-overload]
    unused = [name for name in ("remove_cut_dimension", "single_dimensional")
              if options.get(name)]
    if unused:
        raise InputError(f"--{unused[0].replace('_', '-')} is not available with --engine "
                         f"dask (fragments are cut on every dimension); drop it")
    names = source_columns(str(job["input"]))
    roles = column_roles(names, job, qis)
    output = Path(str(job["output"]))
    report = Path(str(job["report"])) if job.get("report") else None
    refuse_overwrites(job, [(output, "output folder"),
                            *([(report, "report")] if report is not None else [])])
    if report is not None and report.resolve().is_relative_to(output.resolve()):
        raise InputError(f"the report {report} is inside the output folder {output}, which "
                         f"the release replaces: write it beside the folder")
    if job.get("mkdir"):
        output.resolve().parent.mkdir(parents=True, exist_ok=True)
        if report is not None:
            report.resolve().parent.mkdir(parents=True, exist_ok=True)
    if report is not None and not report.resolve().parent.is_dir():
        raise InputError(f"the report's folder {report.resolve().parent} does not exist; "
                         f"create it first, or pass --mkdir")
    chosen = models_from_options(options)
    # fragments anonymized apart know neither the whole sample's size nor the population
    # rows under the merged labels: the risk models run on the local engine only
    risky = [m for m in chosen if isinstance(m, RISK_MODELS)]
    if risky:
        raise InputError(f"{risky[0].title()} is not available with --engine dask; use the "
                         f"single-process engine (--engine local) for it")
    engine = DaskMondrian(models=chosen,
                          **{name: options[name] for name in _DASK_MONDRIAN_OPTIONS
                             if options.get(name) is not None})
    release = engine.anonymize(
        str(job["input"]), output, qis,
        as_list(job.get("sensitive")) or None,  # type: ignore[arg-type]
        identifiers=[n for n in names if roles[n] == "identifier"],
        drop=[n for n in names if roles[n] == "drop"],
        hierarchies=loaded_hierarchies(job.get("hierarchies")),  # type: ignore[arg-type]
        kinds=job.get("kinds") or None, orders=job.get("orders") or None,  # type: ignore[arg-type]
        workers=job.get("workers"), scheduler=job.get("scheduler"),  # type: ignore[arg-type]
        progress=progress)
    if report is not None:
        # the classes as the verifier grouped the whole output: the before/after
        # distributions would need the table in memory, which this engine avoids
        render_recorded_report(ReleaseFacts(
            method="mondrian", kind="generalized", verdicts=release.verdicts,
            class_sizes=np.asarray(release.class_sizes if release.class_sizes is not None
                                   else [], dtype=np.int64),
            quasi_identifiers=qis, sensitive=as_list(job.get("sensitive")),  # type: ignore[arg-type]
            n_released_rows=int(release.metrics.get("n_rows", 0)),
            parameters=release.parameters, metrics=release.metrics,
            seeded=options.get("seed") is not None,
            without_table="the Dask engine never holds the whole table in memory"),
            report, title="Anonymization report: mondrian on Dask",
            provenance={"input": str(job["input"]), "release": str(output),
                        "engine": f"dask, {release.n_fragments} fragments",
                        **({"command": command} if command else {})})
    return {
        "output": release.output,
        "files": release.files,
        "report": str(report) if report is not None else None,
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


# -- check ---------------------------------------------------------------------------------
