"""Anonymizing one table: a DataFrame (:func:`anonymize`), or a file as the command line does
(:func:`anonymize_file`; on Dask: :mod:`anonkit.jobs.on_dask`)."""


from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd

from anonkit import methods
from anonkit._util.files import sha256_file
from anonkit._util.options import as_list, job_qis
from anonkit.assemble import Progress, no_progress
from anonkit.data.read import (
    to_pandas,
)
from anonkit.data.schema import Kind, Schema
from anonkit.data.write import output_format
from anonkit.errors import InputError
from anonkit.hierarchy import Hierarchy
from anonkit.jobs.common import (
    Columns,
    Job,
    PathText,
    dask_chosen,
)
from anonkit.jobs.frames import loaded_hierarchies, schema_from_roles
from anonkit.jobs.outputs import database_file, output_writes, refuse_overwrites
from anonkit.jobs.reading import InputTable, read_job_input
from anonkit.jobs.reports import write_report
from anonkit.jobs.tables import (
    job_source,
    job_target,
    refuse_table_overwrites,
    write_release_table,
)
from anonkit.release import Release, warn_if_no_information
from anonkit.report import render_report
from anonkit.report.html import RELEASE_DIGEST_PENDING, fill_release_digest
from anonkit.verify import verify_release, write_release


@dataclass(repr=False)
class AnonymizedRelease(Release):
    """The release :func:`anonymize` returns: a :class:`~anonkit.release.Release` that
    remembers the table it was made from, so that it can write its own report."""

    original: pd.DataFrame | None = field(default=None, repr=False)

    def report(self, path: PathText, *, title: str | None = None) -> Path:
        """Write the steward's HTML report (the one ``anonkit anonymize --report`` writes)
        to ``path``; returns the path."""
        if self.original is None:
            raise InputError("this release does not know the table it was made from; "
                             "use anonkit.render_report(release, original, path)")
        return write_report(self, self.original, path, title=title)

    def write(self, path: PathText, *, accept_heuristic: bool = False) -> Path:
        """Write the release (refused unless every model holds: fail closed)."""
        return Path(write_release(self, path, accept_heuristic=accept_heuristic))

    @classmethod
    def of(cls, release: Release, original: pd.DataFrame) -> AnonymizedRelease:
        return cls(**{f.name: getattr(release, f.name) for f in fields(Release)},
                   original=original)


def anonymize(df: pd.DataFrame, method: str = "mondrian", *, quasi_identifiers: Columns,
              sensitive: Columns | None = None, identifiers: Columns = (),
              insensitive: Columns = (), drop: Columns = (),
              hierarchies: Mapping[str, Hierarchy | PathText] | None = None,
              kinds: Mapping[str, Kind | str] | None = None,
              orders: Mapping[str, Sequence[object]] | None = None,
              progress: Progress | None = None, **options: object) -> AnonymizedRelease:
    """Anonymize ``df`` with the one-shot ``method`` (``anonkit methods`` lists them) and
    return the verified, measured release; nothing is written (write it with
    :func:`anonkit.verify.write_release`, which refuses it unless every model holds).

    Every column needs a role: ``quasi_identifiers``, ``sensitive``, ``identifiers``
    (never released), ``insensitive`` (released unchanged; ``"*"`` for every column given
    no other role) or ``drop`` (left out). ``hierarchies``: by column, a
    :class:`~anonkit.hierarchy.Hierarchy` or an ARX hierarchy file; ``kinds``: numeric,
    categorical, ordinal or date; ``orders``: an ordinal column's values, low to high.
    ``options``: the method's, by name (``k=5, l=2, strategy="entropy", seed=3``), checked
    as the command line checks them. ``progress``: told each step (see
    :data:`anonkit.assemble.Progress`).

    A method that publishes only with a history (m-invariance) is an :class:`InputError`:
    publish it through :class:`History`.
    """
    chosen = methods.get(method)
    typed = chosen.parse_options(options, "python")
    if chosen.anonymize is None:
        raise InputError(f"method {chosen.name!r} publishes only with a release history: use "
                         f"anonkit.History(...).publish(df, ..., method={chosen.name!r})")
    frame, schema = schema_from_roles(df, quasi_identifiers, sensitive, identifiers, insensitive,
                                drop, loaded_hierarchies(hierarchies), kinds, orders)
    result = chosen.anonymize(frame, schema, typed, progress=progress)  # type: ignore[call-arg]
    verify_release(result)  # (a method verifies its release itself: this is the boundary)
    warn_if_no_information(result)
    return AnonymizedRelease.of(result, frame)


def anonymize_file(job: Job, progress: Progress | None = None, *, command: str | None = None,
                   reading: Future[InputTable] | None = None,
                   verified: Callable[[Release], None] | None = None) -> dict[str, object]:
    """Run one anonymization job (see :func:`job_from`; ``options`` typed already): read
    the input, anonymize, write the verified release (and the report) and return what
    happened, as ``anonkit anonymize --json`` prints it.

    ``progress``: told each step, the reading and writing too (rows 0 while unknown).
    ``command``: the command that made the release, for the report's provenance.
    ``reading``: the input already being read (see :func:`anonkit.jobs.common.reading_qis`),
    started before this module was imported, which takes about as long.
    ``verified``: handed the release once every model holds, before the report is drawn
    and the files written (the web app shows the verdicts while the report is drawn).
    """
    if dask_chosen(job):
        raise InputError("this job runs on Dask (engine = \"dask\"): run it with "
                         "anonkit.jobs.anonymize_on_dask")
    return _anonymize_locally(job, progress or no_progress, command, reading, verified)


def _anonymize_locally(job: Job, step: Progress, command: str | None,
                       reading: Future[InputTable] | None = None,
                       verified: Callable[[Release], None] | None = None
                       ) -> dict[str, object]:
    method = methods.get(str(job.get("method") or "mondrian"))
    if method.anonymize is None:
        raise InputError(f"method {method.name!r} publishes only with a release history: use "
                         f"anonkit release publish --method {method.name}")
    qis = job_qis(job, "-o FILE")
    output = str(job["output"])
    target = job_target(job)  # a database table (None: a file)
    if target is not None:
        refuse_table_overwrites(target, method, job_source(job))
        output = str(target)  # (as shown: without a password)
    elif output.endswith(("/", os.sep)):
        raise InputError(f"the output {output} names a folder; give a file name "
                         f"(e.g. {output.rstrip('/' + os.sep)}/release.csv)")
    else:
        output_format(output)
    report = Path(str(job["report"])) if job.get("report") else None
    sqlite_output = database_file(job["output"])
    refuse_overwrites(job, output_writes(output, method, report) if target is None
                      else [(report, "report")] if report is not None else [],
                      [(sqlite_output, "the release's database")] if sqlite_output else [])
    for path in ([report] if report is not None else []) + \
            ([Path(output)] if target is None else []):
        folder = path.resolve().parent
        if not folder.is_dir():
            if not job.get("mkdir"):
                raise InputError(f"output folder {folder} does not exist; create it first, "
                                 f"or pass --mkdir")
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(f"cannot create the output folder {folder}: "
                                 f"{exc.strerror}") from None
    options: dict[str, Any] = dict(job.get("options") or {})  # type: ignore[call-overload]
    pending_report: Path | None = None
    try:
        with step("reading", 0):
            started = time.perf_counter()
            table, named, verbatim, first_line = (
                reading.result() if reading is not None else read_job_input(job, qis))
            # the survey weights individual-risk judges classes by are worked on (and
            # released unchanged from there), so the release is verified with them
            weight = options.get("weight")
            weighted = isinstance(weight, str) and weight in table.column_names \
                and weight not in named
            if weighted:
                named = [name for name in table.column_names if name in {*named, weight}]
            df = to_pandas(table.select(named), categorical_text=True)
            if first_line is not None:  # errors then name the file's lines
                df.index = pd.RangeIndex(first_line, first_line + len(df), name="line")
            unchanged = table.select([name for name in table.column_names
                                      if name not in named])
            hierarchies = loaded_hierarchies(job.get("hierarchies"))  # type: ignore[arg-type]
            read_seconds = time.perf_counter() - started
        schema = Schema.from_roles(df, qis, as_list(job.get("sensitive")) or None,  # type: ignore[arg-type]
                                   as_list(job.get("identifiers")),  # type: ignore[arg-type]
                                   kinds=job.get("kinds") or None,  # type: ignore[arg-type]
                                   hierarchies=hierarchies,
                                   orders=job.get("orders") or None,  # type: ignore[arg-type]
                                   insensitive=[weight] if weighted else None)  # type: ignore[list-item]
        result = method.anonymize(df, schema, options, progress=step)  # type: ignore[call-arg]
        result.timings = {"read": read_seconds, **result.timings}
        if job.get("shuffle"):
            order = result.shuffle_rows(options.get("seed"))
            unchanged = unchanged.take(order)
        # refused (ModelNotMetError) unless every model holds, and a heuristic release
        # unless the user accepted that explicitly
        accept_heuristic = bool(options.get("accept_heuristic"))
        result.require_passed(accept_heuristic)
        warn_if_no_information(result)
        if verified is not None:
            verified(result)
        # both files or neither: the report goes to a temp name first, is renamed last
        if report is not None:
            with step("report", len(df)):
                pending_report = report.with_name(f".{report.name}.{os.getpid()}.pending")
                provenance = {"input": str(job_source(job) or job["input"]),
                              "release": output}
                if target is None:  # (a table has no file to digest)
                    provenance["release SHA-256"] = RELEASE_DIGEST_PENDING
                if command is not None:
                    provenance["command"] = command
                render_report(result, df, pending_report, provenance=provenance,
                              unchanged=unchanged.column_names)
        with step("writing", len(df)):
            t0 = time.perf_counter()
            if target is not None:
                write_release_table(result, target, unchanged=unchanged,
                                    column_order=table.column_names,
                                    accept_heuristic=accept_heuristic)
            else:
                write_release(result, output, unchanged=unchanged, verbatim=verbatim,
                              column_order=table.column_names,
                              accept_heuristic=accept_heuristic,
                              neutralize_formulas=bool(job.get("neutralize_formulas")))
            result.timings["write"] = time.perf_counter() - t0
        if pending_report is not None and report is not None:
            if target is None:
                fill_release_digest(pending_report, sha256_file(output))
            os.replace(pending_report, report)
            pending_report = None
    finally:
        if pending_report is not None:
            pending_report.unlink(missing_ok=True)
    return {
        "output": output,
        "report": job.get("report"),
        "method": method.name,
        "kind": result.kind.value,
        "passed": result.passed,
        "status": result.status,
        "formal_guarantee": result.formal_guarantee,
        "verdicts": [v.to_dict() for v in result.verdicts],
        "metrics": result.metrics,
        "timings": result.timings,
        "summary": result.summary(),
        "full_summary": result.summary(verbose=True),
        "released_unchanged": unchanged.column_names,
        "seeded": result.seeded,
    }
