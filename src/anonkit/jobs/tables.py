"""Jobs on database tables (see :mod:`anonkit.data.database`): where a job reads from and
writes to when its input or output is a database URL, the output rules extended to
tables, and a release written to a table only once it is verified there."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pyarrow as pa

from anonkit.data.database import (
    ReadBack,
    TableSource,
    TableTarget,
    is_database_url,
    parse_database,
    refuse_existing,
    source_of,
    write_tables,
)
from anonkit.data.read import to_pandas
from anonkit.data.write import to_arrow
from anonkit.errors import InputError, ModelNotMetError
from anonkit.jobs.common import Job
from anonkit.methods import Method
from anonkit.models.base import Verdict
from anonkit.release import Release
from anonkit.verify import columns_judged, judged, released_table

__all__ = [
    "VERIFICATION",
    "job_source",
    "job_target",
    "refuse_table_overwrites",
    "shown",
    "write_release_table",
]

#: the suffix of the table beside a release that holds its verification
VERIFICATION = "verification"


def job_source(job: Job) -> TableSource | None:
    """The database table or query a job reads (``input`` a URL, with ``table`` or
    ``query``), or None when it reads a file."""
    return source_of(job.get("input"), job.get("table"), job.get("query"))


def job_target(job: Job) -> TableTarget | None:
    """The database table a job writes its release to (``output`` a URL, with
    ``output_table``, and ``replace``), or None when it writes a file."""
    output, table = job.get("output"), job.get("output_table")
    if not is_database_url(output):
        if table is not None:
            raise InputError("--output-table writes to a database, but the output is a file; "
                             "give a database URL as -o (postgresql://USER@HOST/DB or "
                             "sqlite:///FILE.db)")
        if job.get("replace"):
            raise InputError("--replace replaces a database table; give a database URL as -o "
                             "and the table as --output-table")
        return None
    if not isinstance(table, str) or not table.strip():
        raise InputError(f"the output {shown(output)} is a database: name the release's "
                         f"table with --output-table NAME")
    return TableTarget(parse_database(str(output)), table.strip(), bool(job.get("replace")))


def shown(where: object) -> str:
    """A job's input or output as it may be shown (a URL without its password)."""
    return str(parse_database(where)) if is_database_url(where) else str(where)


def refuse_table_overwrites(target: TableTarget, method: Method,
                            source: TableSource | None = None) -> None:
    """The output rules for a table, before any work: the release and the tables beside it
    (its auxiliary tables, its verification) are none of the input's table, and none exists
    unless ``replace``."""
    suffixes = [*method.auxiliary, VERIFICATION]
    if source is not None and source.table is not None \
            and source.database.identity == target.database.identity:
        for name in (target.table, *(target.beside(s) for s in suffixes)):
            if _same_name(name, source.table):
                raise InputError(f"the release table {name} is the input table "
                                 f"({source.table}); writing it would destroy the input, so "
                                 f"nothing was written. Give --output-table another name")
    refuse_existing(target, suffixes)


def _same_name(a: str, b: str) -> bool:
    """Whether two table names name one table (the default schema written or not)."""
    def parts(name: str) -> tuple[str, str]:
        schema, _, table = name.strip().rpartition(".")
        return (schema.strip('"') or "public"), table.strip('"')
    return parts(a) == parts(b)


def write_release_table(release: Release, target: TableTarget, *,
                        unchanged: pa.Table | None = None,
                        column_order: Sequence[str] | None = None,
                        accept_heuristic: bool = False) -> None:
    """Write ``release`` to the table ``target`` after the boundary check (as
    :func:`anonkit.verify.write_release` does a file), its auxiliary tables beside it
    (``<table>_<name>``), in one transaction. Before the table gets its name, its classes
    are regrouped from the rows as the database holds them and every model is checked
    again there; the verdicts go to ``<table>_verification``. A release that fails is
    never written."""
    table = released_table(release, unchanged=unchanged, column_order=column_order,
                           accept_heuristic=accept_heuristic)
    auxiliary = {name: to_arrow(frame) for name, frame in release.auxiliary.items()}

    def verify(read_back: ReadBack) -> dict[str, pa.Table]:
        verdicts = _verdicts_as_written(release, read_back, table.num_rows)
        return {VERIFICATION: verification_table(verdicts, table.num_rows)}

    write_tables(target, table, auxiliary, verify)


def _verdicts_as_written(release: Release, read_back: ReadBack, n_rows: int) -> list[Verdict]:
    """Every model of ``release`` judged on its rows read back from the database (a
    synthetic release, which has no classes of people, keeps its method's verdicts)."""
    if not release.models:
        return list(release.verdicts)
    written = read_back(columns_judged(release))
    if written.num_rows != n_rows:
        raise ModelNotMetError(f"release refused: {written.num_rows} rows read back from the "
                               f"database, {n_rows} written")
    _, verdicts = judged(release, to_pandas(written, categorical_text=True))
    failed = [v for v in verdicts if not v.passed]
    if failed:
        raise ModelNotMetError(f"release refused: as the database holds it, the privacy model "
                               f"is not met: {'; '.join(map(str, failed))}")
    return verdicts


def verification_table(verdicts: Sequence[Verdict], n_rows: int) -> pa.Table:
    """One row per model: its verdict, as judged on the written rows."""
    rows = [verdict.to_dict() for verdict in verdicts]

    def text(value: object) -> str | None:
        return None if value is None else value if isinstance(value, str) \
            else json.dumps(value, default=str)

    return pa.table({
        "model": pa.array([text(r["model"]) for r in rows], pa.string()),
        "parameters": pa.array([text(r["parameters"]) for r in rows], pa.string()),
        "passed": pa.array([bool(r["passed"]) for r in rows], pa.bool_()),
        "measure": pa.array([text(r["measure"]) for r in rows], pa.string()),
        "measured": pa.array([text(r["measured"]) for r in rows], pa.string()),
        "comparison": pa.array([text(r["comparison"]) for r in rows], pa.string()),
        "required": pa.array([text(r["required"]) for r in rows], pa.string()),
        "rows_checked": pa.array([n_rows] * len(rows), pa.int64()),
    })
