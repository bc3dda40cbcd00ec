"""Anonymizing one table: a DataFrame (:func:`anonymize`), or a file as the command line does
(:func:`anonymize_file`; on Dask: :mod:`anonkit.jobs.on_dask`)."""


from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
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
from anonkit.jobs.outputs import output_writes, refuse_overwrites
from anonkit.jobs.reading import InputTable, read_job_input
from anonkit.release import Release
from anonkit.report import render_report
from anonkit.report.html import RELEASE_DIGEST_PENDING, fill_release_digest
from anonkit.verify import verify_release, write_release


def anonymize(df: pd.DataFrame, method: str = "mondrian", *, quasi_identifiers: Columns,
              sensitive: Columns | None = None, identifiers: Columns = (),
              insensitive: Columns = (), drop: Columns = (),
              hierarchies: Mapping[str, Hierarchy | PathText] | None = None,
              kinds: Mapping[str, Kind | str] | None = None,
              orders: Mapping[str, Sequence[object]] | None = None,
              progress: Progress | None = None, **options: object) -> Release:
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
    return result


def anonymize_file(job: Job, progress: Progress | None = None, *, command: str | None = None,
                   reading: Future[InputTable] | None = None) -> dict[str, object]:
    """Run one anonymization job (see :func:`job_from`; ``options`` typed already): read
    the input, anonymize, write the verified release (and the report) and return what
    happened, as ``anonkit anonymize --json`` prints it.

    ``progress``: told each step, the reading and writing too (rows 0 while unknown).
    ``command``: the command that made the release, for the report's provenance.
    ``reading``: the input already being read (see :func:`anonkit.jobs.common.reading_qis`),
    started before this module was imported, which takes about as long.
    """
    if dask_chosen(job):
        raise InputError("this job runs on Dask (engine = \"dask\"): run it with "
                         "anonkit.jobs.anonymize_on_dask")
    return _anonymize_locally(job, progress or no_progress, command, reading)


def _anonymize_locally(job: Job, step: Progress, command: str | None,
                       reading: Future[InputTable] | None = None) -> dict[str, object]:
    method = methods.get(str(job.get("method") or "mondrian"))
    if method.anonymize is None:
        raise InputError(f"method {method.name!r} publishes only with a release history: use "
                         f"anonkit release publish --method {method.name}")
    qis = job_qis(job, "-o FILE")
    output = str(job["output"])
    if output.endswith(("/", os.sep)):
        raise InputError(f"the output {output} names a folder; give a file name "
                         f"(e.g. {output.rstrip('/' + os.sep)}/release.csv)")
    output_format(output)
    report = Path(str(job["report"])) if job.get("report") else None
    refuse_overwrites(job, output_writes(output, method, report))
    for path in ([report] if report is not None else []) + [Path(output)]:
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
                                   orders=job.get("orders") or None)  # type: ignore[arg-type]
        result = method.anonymize(df, schema, options, progress=step)  # type: ignore[call-arg]
        result.timings = {"read": read_seconds, **result.timings}
        if job.get("shuffle"):
            order = result.shuffle_rows(options.get("seed"))
            unchanged = unchanged.take(order)
        # refused (ModelNotMetError) unless every model holds, and a heuristic release
        # unless the user accepted that explicitly
        accept_heuristic = bool(options.get("accept_heuristic"))
        result.require_passed(accept_heuristic)
        # both files or neither: the report goes to a temp name first, is renamed last
        if report is not None:
            with step("report", len(df)):
                pending_report = report.with_name(f".{report.name}.{os.getpid()}.pending")
                provenance = {"input": str(job["input"]), "release": output,
                              "release SHA-256": RELEASE_DIGEST_PENDING}
                if command is not None:
                    provenance["command"] = command
                render_report(result, df, pending_report, provenance=provenance,
                              unchanged=unchanged.column_names)
        with step("writing", len(df)):
            t0 = time.perf_counter()
            write_release(result, output, unchanged=unchanged, verbatim=verbatim,
                          column_order=table.column_names, accept_heuristic=accept_heuristic,
                          neutralize_formulas=bool(job.get("neutralize_formulas")))
            result.timings["write"] = time.perf_counter() - t0
        if pending_report is not None and report is not None:
            fill_release_digest(pending_report, sha256_file(output))
            os.replace(pending_report, report)
            pending_report = None
    finally:
        if pending_report is not None:
            pending_report.unlink(missing_ok=True)
    return {
        "output": job["output"],
        "report": job.get("report"),
        "method": method.name,
        "kind": result.kind.value,
        "passed": result.passed,
        "verdicts": [v.to_dict() for v in result.verdicts],
        "metrics": result.metrics,
        "timings": result.timings,
        "summary": result.summary(),
        "full_summary": result.summary(verbose=True),
        "released_unchanged": unchanged.column_names,
        "seeded": result.seeded,
    }
