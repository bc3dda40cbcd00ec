"""Reading a job's input as an Arrow table, and the roles of its columns. Imports no pandas:
the command line reads in the background while the rest of the job (pandas, the method, the
report) is imported, which takes about as long (see :func:`anonkit.jobs.common.reading_qis`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from anonkit._util.options import as_list
from anonkit._util.progress import Meter
from anonkit.data.database import database_columns, is_database_url, read_source, source_of
from anonkit.data.read import (
    Dialect,
    check_input_file,
    column_list,
    first_data_line,
    read_arrow,
    separator_hint,
    table_columns,
    table_format,
)
from anonkit.errors import InputError
from anonkit.jobs.common import Job, values_list

#: the input as an Arrow table (dropped columns left out), the columns the algorithm works
#: on, whether the insensitive ones are verbatim text, and the file line of the first row
InputTable = tuple[pa.Table, list[str], bool, int | None]


def job_dialect(job: Job) -> Dialect:
    """How a job's input file is written: header, names, missing cells, spaces, encoding;
    and ``max_input_bytes``, the most bytes read from it (bytes, or a text such as ``8G``)."""
    names = job.get("names")
    return Dialect.of(
        header=job.get("header", True) is not False,
        names=None if names is None else values_list(names, "names"),
        na_values=job.get("na_values") or (),  # type: ignore[arg-type]
        skipinitialspace=bool(job.get("skipinitialspace")),
        encoding=job.get("encoding"),  # type: ignore[arg-type]
        max_input_bytes=job.get("max_input_bytes"))  # type: ignore[arg-type]


def column_roles(names: Sequence[str], job: Job, qis: Sequence[str]) -> dict[str, str]:
    """Every column's role, by name. Every column needs one, as in ARX: a column nobody
    named would otherwise go out raw, so it is an error that names the columns. A
    hierarchy or kind describes a quasi-identifier or sensitive column, a generalization
    a quasi-identifier; on any other column it is an error too."""
    roles: dict[str, str] = {}
    known = set(names)  # (not the list: a wide table would make the checks quadratic)
    insensitive: Any = job.get("insensitive") or []
    for role, columns in (("quasi-identifier", qis),
                          ("sensitive", as_list(job.get("sensitive"))),  # type: ignore[arg-type]
                          ("identifier", as_list(job.get("identifiers"))),  # type: ignore[arg-type]
                          ("insensitive", [] if insensitive == "*" else insensitive),
                          ("drop", as_list(job.get("drop")))):  # type: ignore[arg-type]
        for name in columns:
            if name not in known:
                raise InputError(f"unknown column {name!r} given as {role}; the table has: "
                                 f"{column_list(names)}{separator_hint(names)}")
            if name in roles and roles[name] != role:
                raise InputError(f"column {name!r} is given two roles: {roles[name]} and "
                                 f"{role}; give it one")
            roles[name] = role
    options: Any = job.get("options") or {}
    generalization = options.get("generalization") or {}
    described: Any = ((job.get("hierarchies") or {}, "hierarchy",
                       ("quasi-identifier", "sensitive")),
                      (job.get("kinds") or {}, "kind", ("quasi-identifier", "sensitive")),
                      (job.get("orders") or {}, "order", ("quasi-identifier", "sensitive")),
                      (generalization, "generalization", ("quasi-identifier",)))
    for columns, option, allowed in described:
        for name in columns:
            if roles.get(name) not in allowed:
                what = roles.get(name) or ("released unchanged (--insensitive '*')"
                                           if insensitive == "*" and name in known
                                           else "a column with no role")
                raise InputError(f"--{option} {name}=...: {name!r} is {what}; a {option} "
                                 f"describes a {' or '.join(allowed)} column (name it with "
                                 f"--qi{' or --sensitive' if len(allowed) > 1 else ''})")
    others = [name for name in names if name not in roles]
    if others and insensitive != "*":
        raise InputError(f"column(s) with no role: {column_list(others)}. Give every column a "
                         f"role: --qi, --sensitive, --id (dropped, an identifier), "
                         f"--insensitive (released unchanged) or --drop; --insensitive '*' "
                         f"releases all the others unchanged")
    return roles | dict.fromkeys(others, "insensitive")


def declared_text(job: Job, names: Sequence[str]) -> list[str]:
    """The columns declared categorical or ordinal (``--kind``): read as the text they are,
    so that ``80101`` stays ``80101`` also when a cell is missing (read as numbers, the
    column would come out as ``80101.0``)."""
    kinds: Any = job.get("kinds") or {}
    return [name for name in names if str(kinds.get(name, "")).strip().lower()
            in ("categorical", "ordinal")]


def read_job_input(job: Job, qis: list[str], meter: Meter | None = None) -> InputTable:
    """The input as an Arrow table (dropped columns left out), the columns the algorithm
    works on (in table order), whether the insensitive ones are verbatim text, and the line
    of the file its first row is on (CSV).

    Every column needs a role (:func:`column_roles`). Insensitive columns are released
    unchanged: they stay in Arrow, never loaded into pandas, and when both files are CSV
    they are read as text and written back as it was (``007`` stays ``007``, ``1.50``
    stays ``1.50``), which is also the cheapest way. ``meter``: told the bytes of a CSV
    input read so far (for a progress bar).
    """
    source = str(job["input"])
    database = source_of(source, job.get("table"), job.get("query"))
    sep: Any = job.get("separator")
    dialect = job_dialect(job)
    names = table_columns(source, sep, dialect=dialect) if database is None \
        else database_columns(database)
    check_hierarchy_files(job)
    named = {*qis, *as_list(job.get("sensitive")),  # type: ignore[arg-type]
             *as_list(job.get("identifiers")), *as_list(job.get("drop"))}  # type: ignore[arg-type]
    listed: Any = job.get("insensitive") or []
    insensitive = [name for name in names if name not in named] \
        if listed == "*" else list(listed)
    verbatim = database is None and not is_database_url(job.get("output")) \
        and table_format(source) == "csv" and table_format(str(job["output"])) == "csv"
    known = set(names)
    text = [*([n for n in insensitive if n in known] if verbatim else ()),
            *declared_text(job, names)]
    if database is None:
        table = read_arrow(source, sep, text_columns=text, dictionary_text=True,
                           dialect=dialect, meter=meter)
        roles = column_roles(names, job, qis)  # after reading: an unreadable file is told first
    else:  # the server sends only the columns kept (identifiers and dropped ones stay there)
        roles = column_roles(names, job, qis)
        table = read_source(database, [name for name in names if roles[name] != "drop"],
                            text_columns=text)
    dropped = [name for name in table.column_names if roles[name] == "drop"]
    if dropped:
        table = table.drop_columns(dropped)
    worked_on = [name for name in names if roles[name] not in ("insensitive", "drop")]
    check_zoned_times(source if database is None else str(database), table, worked_on)
    return (table, worked_on, verbatim,
            first_data_line(source, dialect) if database is None else None)


def check_hierarchy_files(job: Job) -> None:
    """Refuse a hierarchy named by a path that is no readable file (``/dev/zero`` would be
    read forever, a folder or a pipe misread) before the input is read: the job would stop
    there after reading the whole input."""
    hierarchies: Any = job.get("hierarchies") or {}
    for column, file in hierarchies.items():
        if isinstance(file, str | os.PathLike):
            check_input_file(file, "hierarchy file",
                             expected=f"an ARX hierarchy CSV file for {column!r}")


def check_zoned_times(source: str, table: pa.Table, worked_on: Sequence[str]) -> None:
    """Refuse a quasi-identifier or sensitive column of times with a time zone whose
    offset from UTC changes within the column (daylight saving time): generalization puts
    times on one scale, and such a column has none. (UTC and a fixed offset read as they
    are.)"""
    for name in worked_on:
        kind = table.schema.field(name).type
        if not pa.types.is_timestamp(kind) or kind.tz is None:
            continue
        column = table[name]
        try:  # the offset of each time: its local wall-clock time minus the UTC instant
            offsets = pc.subtract(pc.cast(pc.local_timestamp(column), pa.int64()),
                                  pc.cast(column, pa.int64()))
            why = "at different offsets from UTC (daylight saving time)" \
                if pc.count_distinct(offsets).as_py() > 1 else None
        except pa.ArrowInvalid:  # (Arrow's error for a zone it cannot locate)
            why = "that this system's time zone database does not know"
        if why is not None:
            raise InputError(f"column {name!r} of {source} holds times in the time zone "
                             f"{kind.tz} {why}, which anonkit cannot put on one scale; "
                             f"convert the column to UTC, or to local times without a zone, "
                             f"first")
