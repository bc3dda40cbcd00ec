"""Writing a release's report from Python or a job: the one entry point a caller holding a
release uses (``release.report(path)`` may call it), with the output rules every other
file a job writes follows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from anonkit.errors import InputError
from anonkit.jobs.common import Job, PathText
from anonkit.jobs.outputs import refuse_overwrites
from anonkit.release import Release
from anonkit.report import render_report

__all__ = ["write_report"]


def write_report(release: Release, original: pd.DataFrame, path: PathText, *,
                 provenance: Mapping[str, str] | None = None, unchanged: Sequence[str] = (),
                 job: Job | None = None, title: str | None = None) -> Path:
    """Write the HTML report of ``release`` (made from ``original``) to ``path``, the
    report ``anonkit anonymize --report`` writes, atomically. Refused (:class:`InputError`,
    nothing written) when ``path`` is a file ``job`` reads (its input, hierarchies, job
    file) or its release, or when its folder does not exist. Returns the path."""
    target = Path(path)
    writes = [(target, "report")]
    if job is not None and job.get("output"):
        writes.append((Path(str(job["output"])), "release"))
    refuse_overwrites(job or {}, writes)
    if not target.resolve().parent.is_dir():
        raise InputError(f"the report's folder {target.resolve().parent} does not exist; "
                         f"create it first")
    return render_report(release, original, target, title=title, provenance=provenance,
                         unchanged=unchanged)
