"""Anonymizing a table larger than one machine on a Dask cluster (``engine = \"dask\"``):
Mondrian only, written as a folder of parts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

#: job keys the Dask engine cannot honour yet, with what to do instead
_NOT_ON_DASK = {
    "shuffle": "the Dask engine writes rows fragment by fragment; drop --shuffle",
    "report": "the HTML report needs the release in memory; drop --report, or use the "
              "single-process engine",
}
_DASK_MONDRIAN_OPTIONS = ("strategy", "generalization", "allow_missing", "seed")


def anonymize_on_dask(job: Job, progress: bool = False) -> dict[str, object]:
    """The job on :class:`~anonkit.distributed.engine.DaskMondrian`; every column gets its
    role exactly as on the single-process engine."""
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
    refuse_overwrites(job, [(output, "output folder")])
    if job.get("mkdir"):
        output.resolve().parent.mkdir(parents=True, exist_ok=True)
    engine = DaskMondrian(models=models_from_options(options),
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


# -- check ---------------------------------------------------------------------------------
