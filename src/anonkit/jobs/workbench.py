"""The jobs behind the web app (:mod:`anonkit.web`): open a table and show its columns,
show or build a hierarchy, run a job as a preview, publish it to the history, audit a
dataset and save the job as a job file. Each is the command line's job (the same
:func:`~anonkit.jobs.common.job_from`, :func:`~anonkit.jobs.anonymize_file`,
:func:`~anonkit.jobs.read_publish_job` and :class:`~anonkit.jobs.History`), fed with the
settings of the app's forms (:class:`anonkit.web.contract.Settings`)."""

from __future__ import annotations

import json
import math
import shutil
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from anonkit import methods
from anonkit._util.files import atomic_write, refuse_collisions
from anonkit._util.urls import without_password
from anonkit.data.database import parse_database, read_source, source_of
from anonkit.data.read import read_table, to_pandas
from anonkit.data.schema import infer_kind
from anonkit.errors import InputError
from anonkit.hierarchy import (
    Hierarchy,
    date_hierarchy,
    interval_hierarchy,
    masking_hierarchy,
    read_arx_hierarchy,
    write_arx_hierarchy,
)
from anonkit.jobs.anonymization import anonymize_file
from anonkit.jobs.common import PUBLISH_KEYS, job_from
from anonkit.jobs.history import (
    CrossReleaseBreachError,
    History,
    format_parameters,
    read_publish_job,
)
from anonkit.release import Release
from anonkit.web.contract import (
    AuditResult,
    ColumnPreview,
    DatabaseTable,
    HierarchyLevel,
    HierarchyPreview,
    MethodForm,
    OptionField,
    PublishResult,
    ReleaseRow,
    RunResult,
    Settings,
    StepReporter,
    TableInput,
    TablePreview,
    Verdicts,
    Verified,
)

#: rows shown of an opened table, values shown per column and labels per hierarchy level
HEAD_ROWS = 20
TOP_VALUES = 6
LEVEL_LABELS = 12
#: the typed confirmation a publish over the gate needs
FORCE_PHRASE = "publish despite the breach"
_ROLE_KEYS = {"quasi-identifier": "quasi_identifiers", "sensitive": "sensitive",
              "identifier": "identifiers", "insensitive": "insensitive", "drop": "drop"}


class Workbench:
    """The app's jobs, on one history (an SQLite file or a PostgreSQL URL)."""

    def __init__(self, history: str) -> None:
        self.history = history

    def warm_up(self) -> None:
        """Load what a first run needs (pandas, the report, Mondrian), so the first preview
        after start is as quick as the next."""
        methods.get("mondrian").anonymize  # noqa: B018 (loads the method's module)

    # -- the forms ---------------------------------------------------------------------
    def methods(self) -> list[MethodForm]:
        """Every registered method and its options, from the registry."""
        forms = []
        for method in methods.methods():
            fields = tuple(
                OptionField(o.name, o.flag, o.help, o.kind, o.switch, o.multiple,
                            tuple(v.strip() for v in o.kind.split("|"))
                            if "|" in o.kind else (), file=o.metavar == "FILE")
                for o in method.options)
            one_shot = bool(method.runner) or method.function is not None
            forms.append(MethodForm(method.name, method.summary, method.sequential, one_shot,
                                    not one_shot, fields))
        return forms

    # -- tables and hierarchies --------------------------------------------------------
    def preview_table(self, source: TableInput) -> TablePreview:
        """The table's first rows, and per column its inferred kind and value counts."""
        df = _read(source)
        columns = []
        for name in df.columns:
            series = df[name]
            try:
                kind = str(infer_kind(series, str(name)))
            except InputError:
                kind = "mixed"
            counts = series.value_counts(dropna=True)
            top = [(_cell(v), int(n)) for v, n in counts.head(TOP_VALUES).items()]
            columns.append(ColumnPreview(str(name), kind, len(counts),
                                         int(series.isna().sum()), top))
        head = [[_cell(v) for v in row]
                for row in df.head(HEAD_ROWS).itertuples(index=False, name=None)]
        return TablePreview(source, len(df), columns, head)

    def database_file(self, url: str) -> Path | None:
        """The SQLite file a database URL names (as written: relative or absolute), None for
        a database server. A URL anonkit cannot use is an :class:`InputError`, and so is a
        password holding a character that ends a URL's user part (it would be shown)."""
        database = parse_database(url)
        authority = url.split("://", 1)[1].split("/", 1)[0]
        if database.password is not None and authority.count("@") > 1:
            raise InputError("the database URL's password holds an '@': write it as %40 "
                             "(percent-encoded), or give it by PGPASSWORD or ~/.pgpass")
        return Path(database.target) if database.backend == "sqlite" else None

    def preview_hierarchy(self, column: str, path: Path) -> HierarchyPreview:
        """An ARX hierarchy file's levels, leaves first."""
        return _levels(column, path, read_arx_hierarchy(path, name=column))

    def build_hierarchy(self, table: TableInput, column: str, builder: str, parameter: str,
                        target: Path) -> HierarchyPreview:
        """Build a hierarchy over ``column``'s values (intervals, masking or dates), write
        it as an ARX file to ``target`` and show its levels."""
        df = _read(table, column)
        if column not in df.columns:
            raise InputError(f"the table has no column {column!r}")
        values = df[column].dropna().unique()
        parts = [p.strip() for p in parameter.split(",") if p.strip()]
        try:
            if builder == "intervals":
                built = interval_hierarchy(values, [float(p) for p in parts] or (5, 10, 20),
                                           name=column)
            elif builder == "masking":
                built = masking_hierarchy(values, levels=int(parts[0]) if parts else None,
                                          name=column)
            elif builder == "dates":
                built = date_hierarchy(values, parts or ("month", "year", "decade"),
                                       name=column)
            else:
                raise InputError(f"unknown hierarchy builder {builder!r}; the builders are: "
                                 f"intervals, masking, dates")
        except ValueError:
            raise InputError(f"the {builder} builder for column {column!r} takes "
                             f"{'numbers' if builder == 'intervals' else 'a whole number'} "
                             f"separated by commas") from None
        with atomic_write(target) as tmp:
            write_arx_hierarchy(built, tmp)
        return _levels(column, target, built)

    # -- jobs --------------------------------------------------------------------------
    def _job(self, settings: Settings, output: Path, report: Path | None = None,
             publish: Mapping[str, str] | None = None) -> dict[str, object]:
        missing = settings.unclassified()
        if missing:
            raise InputError(f"column(s) with no role: {', '.join(missing)}; give every "
                             f"column a role first")
        given: dict[str, object] = {"input": str(settings.input), "output": str(output),
                                    "method": settings.method,
                                    "shuffle": settings.shuffle or None}
        if isinstance(settings.input, DatabaseTable):
            given |= {"input": settings.input.url, "table": settings.input.table,
                      "query": settings.input.query}
        for role, key in _ROLE_KEYS.items():
            given[key] = [c for c in settings.columns if settings.roles.get(c) == role]
        if report is not None:
            given["report"] = str(report)
        config = {"hierarchies": {c: str(p) for c, p in settings.hierarchies.items()},
                  "kinds": dict(settings.kinds)}
        return job_from(config, given | dict(publish or {}), dict(settings.options),
                        PUBLISH_KEYS if publish else frozenset())

    def check(self, settings: Settings) -> None:
        """Refuse settings the job would refuse (a wrong option, a column with no role)."""
        self._job(settings, Path("release.csv"))

    def run(self, settings: Settings, folder: Path, step: StepReporter,
            verified: Verified | None = None) -> RunResult:
        """Run the job as ``anonkit anonymize`` does, into ``folder``: the release and its
        report. ``verified`` is told the verdicts as soon as every model holds (the report
        takes most of the time)."""
        started = time.perf_counter()
        release, report = folder / "release.csv", folder / "report.html"

        def tell(result: Release) -> None:
            if verified is not None:
                verified(_verdict_rows([v.to_dict() for v in result.verdicts]),
                         result.summary())

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outcome = anonymize_file(self._job(settings, release, report), step,
                                     command="anonkit serve", verified=tell)
        verdicts = _verdict_rows(outcome["verdicts"])  # type: ignore[arg-type]
        return RunResult(bool(outcome["passed"]), str(outcome["summary"]), verdicts, release,
                         report, time.perf_counter() - started)

    def publish(self, settings: Settings, *, dataset: str, key: str, output: Path,
                allow_breach: bool, step: StepReporter) -> PublishResult:
        """Publish the job to the history as the next release of ``dataset``, as
        ``anonkit release publish`` does; a gate refusal comes back with its findings."""
        job = self._job(settings, output, publish={"dataset": dataset, "key": key})
        with step("reading", 0):
            prepared = read_publish_job(job, history=self.history)
        notes: list[str] = []
        try:
            with warnings.catch_warnings(record=True) as caught, \
                    step("publishing", len(prepared.frame)), \
                    History(self.history, create=True, warn=notes.append) as history:
                warnings.simplefilter("always")
                info = history.publish_job(prepared, allow_breach=allow_breach)
        except CrossReleaseBreachError as refused:
            findings = refused.report.summary() if refused.report is not None else ""
            return PublishResult(False, dataset, str(refused), findings=findings)
        gate = info.gate or {}
        notes += [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
        return PublishResult(True, dataset, f"published release {info.seq} of {dataset!r}: "
                             f"{info.n_released_rows} rows in {info.n_classes} classes",
                             info.seq, Path(info.output_path),
                             overridden=bool(gate.get("overridden")),
                             notes=tuple(dict.fromkeys(notes)))

    def releases(self) -> list[ReleaseRow]:
        """Every release of the history, oldest first (none when it does not exist yet)."""
        try:
            history = History(self.history, create=False, read_only=True, warn=lambda _: None)
        except InputError:
            return []
        with history:
            rows = []
            for info in history.releases():
                gate = info.gate or {}
                rows.append(ReleaseRow(
                    info.dataset, info.seq, info.method, info.n_released_rows,
                    info.n_classes, info.output_path, info.created_at.isoformat(" ", "seconds"),
                    "none (first release)" if not gate else
                    "OVERRIDDEN" if gate.get("overridden") else "passed"))
            return rows

    def audit(self, dataset: str, report: Path) -> AuditResult:
        """``anonkit release audit --report``: every record over all its releases."""
        with History(self.history, create=False, read_only=True,
                     warn=lambda _: None) as history:
            found = history.audit(dataset, report=report)
        return AuditResult(dataset, found.breached, found.summary(), report)

    def save_job(self, settings: Settings, target: Path, private: Path) -> str:
        """Write the job as a TOML job file at ``target`` (run it with ``anonkit anonymize
        --config``); hierarchies the app built (in ``private``) are written beside it."""
        if target.suffix != ".toml":
            raise InputError(f"a job file's name ends in .toml, got {target.name}")
        job = self._job(settings, target.with_name(f"{target.stem}-release.csv"))
        copies: dict[Path, Path] = {}
        hierarchies: dict[str, str] = {}
        for column, path in settings.hierarchies.items():
            if path.resolve().is_relative_to(private.resolve()):
                copy = target.with_name(f"{target.stem}.hierarchy-{len(copies) + 1}.csv")
                copies[path] = copy
                hierarchies[column] = copy.name
            else:
                hierarchies[column] = str(path)
        refuse_collisions([(target, "job file"), *[(c, "hierarchy file")
                                                   for c in copies.values()]],
                          [] if isinstance(settings.input, DatabaseTable)
                          else [(settings.input, "the input")])
        method = methods.get(settings.method)
        lines = [] if method.anonymize is not None else [
            f"# {method.name} publishes only with a history: anonkit release publish --config "
            f"{target.name} --dataset NAME --key COLUMN"]
        lines += _input_lines(settings.input)
        lines += [f"output = {_toml(target.with_name(f'{target.stem}-release.csv').name)}",
                  f"method = {_toml(settings.method)}"]
        for key in ("quasi_identifiers", "sensitive", "identifiers", "insensitive", "drop"):
            if job.get(key):
                lines.append(f"{key} = {_toml(job[key])}")
        if settings.shuffle:
            lines.append("shuffle = true")
        for name, text in settings.options.items():
            option = method.option(name)
            typed = option.parse(text, "cli") if option is not None else text
            if isinstance(typed, tuple):
                typed = list(typed)
            value = typed if isinstance(typed, bool | int | float | str | dict | list) \
                and not (option is not None and option.multiple and not isinstance(typed, dict)) \
                else text
            lines.append(f"{name} = {_toml(value)}")
        for table, values in (("hierarchies", hierarchies), ("kinds", settings.kinds)):
            if values:
                lines.append(f"\n[{table}]")
                lines += [f"{_toml(c)} = {_toml(v)}" for c, v in values.items()]
        text = "\n".join(lines) + "\n"
        for source, copy in copies.items():
            with atomic_write(copy) as tmp:
                shutil.copyfile(source, tmp)
        with atomic_write(target) as tmp:
            tmp.write_text(text, encoding="utf-8")
        return text


def _read(source: TableInput, column: str | None = None) -> pd.DataFrame:
    """The table (``column`` only: None for all), from its file or its database."""
    columns = None if column is None else [column]
    if isinstance(source, Path):
        return read_table(source, columns=columns)
    database = source_of(source.url, source.table, source.query)
    assert database is not None  # (the app opens only database URLs as a DatabaseTable)
    return to_pandas(read_source(database, columns))


def _input_lines(source: TableInput) -> list[str]:
    """A job file's lines naming its input: a file, or a database URL (without its
    password: libpq takes it from PGPASSWORD or ~/.pgpass) and the table or query."""
    if isinstance(source, Path):
        return [f"input = {_toml(str(source))}"]
    url = without_password(source.url)
    password = parse_database(source.url).password
    if parse_database(url).password is not None:
        raise InputError("cannot leave the password out of the database URL; give the URL "
                         "without it and the password by PGPASSWORD or ~/.pgpass")
    lines = [] if password is None else [
        "# the database password is not saved: libpq takes it from PGPASSWORD or ~/.pgpass"]
    lines.append(f"input = {_toml(url)}")
    lines.append(f"table = {_toml(source.table)}" if source.table is not None
                 else f"query = {_toml(source.query)}")
    return lines


def _toml(value: object) -> str:
    """A TOML value: a text (a JSON string is a TOML basic string), a number, a truth, a
    list or an inline table of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_toml(str(k))} = {_toml(v)}" for k, v in value.items()) + "}"
    raise InputError(f"cannot write {type(value).__name__} to a job file")


def _verdict_rows(verdicts: list[dict[str, Any]]) -> Verdicts:
    """Each verdict as (model and its parameters, passed, measured), for the page."""
    return [(f"{v['model']} ({format_parameters(dict(v['parameters']))})", bool(v["passed"]),
             _number(v["measured"])) for v in verdicts]


def _cell(value: object) -> str:
    """A cell as text for the page (the page escapes it)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _number(value: object) -> str:
    if isinstance(value, float | np.floating):
        return "∞" if math.isinf(value) else f"{float(value):.4g}"
    return str(value)


def _levels(column: str, path: Path, hierarchy: Hierarchy) -> HierarchyPreview:
    levels = []
    for level in range(hierarchy.height):
        counts = pd.Series(hierarchy.labels[:, level]).value_counts(sort=False)
        labels = [(str(label), int(n)) for label, n in counts.head(LEVEL_LABELS).items()]
        levels.append(HierarchyLevel(level, labels, len(counts)))
    return HierarchyPreview(column, path, len(hierarchy.leaves), levels)
