"""The one check of every path a job writes (see :func:`anonkit._util.files.refuse_collisions`):
the files a job reads, and the files writing a release writes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from anonkit._util.files import NamedPath, refuse_collisions
from anonkit.data.database import is_database_url, parse_database
from anonkit.jobs.common import Job, PathText
from anonkit.methods import Method
from anonkit.release import auxiliary_path


def job_reads(job: Job) -> list[NamedPath]:
    """Every file a job reads, named for a message: its input table, its hierarchy files,
    the file of its column names, and its job file. No output may be one
    of them (see :func:`refuse_overwrites`)."""
    reads: list[NamedPath] = []
    if job.get("input"):
        given = str(job["input"])
        reads.append((database_file(given) or Path(given), "the input"))
    for column, hierarchy in dict(job.get("hierarchies") or {}).items():  # type: ignore[call-overload]
        if isinstance(hierarchy, str | os.PathLike):
            reads.append((Path(hierarchy), f"the hierarchy file of {column!r}"))
    names = job.get("names")
    if isinstance(names, str) and Path(names).is_file():
        reads.append((Path(names), "the file of column names"))
    if job.get("job_file"):
        reads.append((Path(str(job["job_file"])), "the job file"))
    return reads


def database_file(where: object) -> Path | None:
    """The SQLite file a database URL names (None: a file's path, or PostgreSQL), which no
    other output (a report) may be."""
    if not is_database_url(where):
        return None
    database = parse_database(str(where))
    return Path(database.target) if database.backend == "sqlite" else None


def refuse_overwrites(job: Job, writes: Sequence[NamedPath],
                      kept: Sequence[NamedPath] = ()) -> None:
    """The one check of every path a job writes, before it writes any: none may be a file
    the job reads (:func:`job_reads`), another of its outputs, or one of ``kept`` (a
    history's files and recorded releases). Exit 2 naming both paths."""
    refuse_collisions([(Path(p), what) for p, what in writes], [*job_reads(job), *kept])


def output_writes(output: PathText, method: Method,
                  report: PathText | None = None) -> list[NamedPath]:
    """The files writing a release of ``method`` to ``output`` writes: the release, each
    auxiliary table the method declares beside it, and the report."""
    target = Path(output)
    writes: list[NamedPath] = [(target, "release")]
    writes += [(auxiliary_path(target, name), f"{name} table") for name in method.auxiliary]
    if report is not None:
        writes.append((Path(report), "report"))
    return writes
