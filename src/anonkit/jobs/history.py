"""The release history as a job API: :class:`History` publishes the next release of a
changing table, lists and shows releases, audits them together and recovers interrupted
publishes; :func:`read_publish_job` reads a publish job as the command line gives it."""


from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from anonkit import methods
from anonkit._util.files import sha256_file
from anonkit._util.options import as_list
from anonkit.data.database import is_database_url, read_source
from anonkit.data.read import (
    read_table,
    to_pandas,
)
from anonkit.data.schema import Kind
from anonkit.errors import InputError
from anonkit.hierarchy import Hierarchy
from anonkit.history.attacks import (
    EXACT_ONLY,
    AuditReport,
    CrossReleaseBreachError,
    Requirement,
    audit,
    exact_only_models,
    records_text,
    requirements_of,
)
from anonkit.history.chain import TamperedHistoryError
from anonkit.history.engines.context import PublishRequest
from anonkit.history.location import DEFAULT_HISTORY, HISTORY_ENV, HistoryLocation
from anonkit.history.possible import EXACT_SECONDS
from anonkit.history.publish import (
    GateOverriddenWarning,
    check_request,
    history_files,
    protected_files,
    publish,
    refuse_history_output,
)
from anonkit.history.records import ReleaseInfo, ReleaseView
from anonkit.history.report import write_html as write_audit_html
from anonkit.history.secret import SECRET_ENV, SECRET_FILE_ENV
from anonkit.history.sign_off import (
    PublishReport,
    gate_text,
    refuse_missing_folder,
    write_recorded_report,
)
from anonkit.history.store import HistoryStore
from anonkit.jobs.common import (
    Columns,
    Job,
    PathText,
    find_method,
)
from anonkit.jobs.frames import loaded_hierarchies, schema_from_roles
from anonkit.jobs.outputs import output_writes, refuse_overwrites
from anonkit.jobs.reading import column_roles, declared_text, job_dialect
from anonkit.jobs.tables import job_source
from anonkit.models.base import format_parameters
from anonkit.release import (
    NO_FORMAL_GUARANTEE,
    NO_FORMAL_GUARANTEE_TEXT,
    recorded_formal_guarantee,
    release_status,
)

#: what the command line's history commands take from here besides the job functions
__all__ = ["DEFAULT_HISTORY", "EXACT_ONLY", "EXACT_SECONDS", "HISTORY_ENV",
           "NO_FORMAL_GUARANTEE", "NO_FORMAL_GUARANTEE_TEXT", "SECRET_ENV",
           "SECRET_FILE_ENV", "AuditReport", "CrossReleaseBreachError", "GateOverriddenWarning",
           "History", "HistoryWarning", "PublishJob", "Recovery", "ReleaseDetails", "ReleaseInfo",
           "TamperedHistoryError", "format_parameters", "gate_text", "printable_name",
           "read_publish_job", "recorded_status", "records_text"]


class HistoryWarning(UserWarning):
    """What opening a history found that its user should know: releases changed without
    the secret, releases left pending (a read-only open)."""


def _python_warning(message: str) -> None:
    warnings.warn(message, HistoryWarning, stacklevel=4)


def recorded_status(info: ReleaseInfo) -> str:
    """A recorded release's status: passed, no formal guarantee (a heuristic method's,
    whatever its verdicts) or failed (see :func:`anonkit.release.release_status`)."""
    return release_status(info.passed, recorded_formal_guarantee(info.parameters))


def printable_name(name: str) -> str:
    """A stored name (a dataset's) as a quoted literal, control and format characters
    escaped: a name in the history may hold anything."""
    return ascii(name) if any(not c.isprintable() for c in name) else repr(name)


@dataclass(frozen=True)
class PublishJob:
    """A release ready to publish: the table (dropped columns left out), its roles and
    method, and where the release goes. Made before the history is opened
    (:func:`read_publish_job`), so bad input never creates or changes a history."""

    frame: pd.DataFrame
    request: PublishRequest
    output: Path
    #: write cells a spreadsheet would run as formulas with a leading ' (see
    #: :mod:`anonkit.data.formulas`)
    neutralize_formulas: bool = False
    #: where to write the release's sign-off report (None: none)
    report: Path | None = None
    #: what made the release, for the report's provenance (the input file, the command)
    provenance: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ReleaseDetails:
    """A release as ``anonkit release show`` describes it: its history row, what an
    adversary sees (``view``: the classes and their labels), the tables kept beside it and
    whether its method keeps a state."""

    info: ReleaseInfo
    view: ReleaseView
    auxiliary: list[str]
    method_state: bool

    @property
    def requirements(self) -> list[Requirement]:
        """What the release promised across releases (read from the history on use: a
        malformed one is an error only where it is shown)."""
        return requirements_of(self.info)

    @property
    def exact_only(self) -> list[str]:
        """Its models checked across releases only for exact disclosure."""
        return exact_only_models(self.info)


@dataclass(frozen=True)
class Recovery:
    """What :meth:`History.recover` did: releases authenticated again (None: none needed),
    publishes finished, and releases still pending (their file is nowhere)."""

    sealed: int | None
    recovered: list[str]
    pending: list[ReleaseInfo] = field(default_factory=list)


class History:
    """A release history (an SQLite file or a ``postgresql+psycopg://`` URL), open: publish
    a changing table to it release after release, list and show its releases, audit them
    against each other. Use it with ``with`` (or :meth:`close` it).

    ``secret_file``: the history's secret (default: ``$ANONKIT_HISTORY_SECRET``, else
    ``HISTORY.secret`` beside an SQLite history; see :mod:`anonkit.history.secret`).
    ``create``: create a missing history (with a new secret). ``read_only``: never write
    (no creation, no upgrade, no recovery of a pending release; a read-only file works):
    what ``list``, ``show`` and ``audit`` do. Opening writable upgrades a history of an
    older format and finishes publishes a killed publisher left half done.

    ``warn`` is told, one message each, what opening found: an upgrade and where the old
    history was copied, a secret kept beside the history, releases changed without the
    secret, and (read-only) each pending release. By default these are Python warnings.
    """

    def __init__(self, location: PathText, *, secret_file: PathText | None = None,
                 create: bool = True, read_only: bool = False,
                 warn: Callable[[str], None] | None = None) -> None:
        self.location = location
        self.secret_file = Path(secret_file) if secret_file is not None else None
        self._how = (create and not read_only, read_only, warn)
        self._opened: HistoryStore | None = None
        sqlite = HistoryLocation.parse(location).sqlite_path
        if not (create and not read_only and sqlite is not None and not sqlite.exists()):
            self._opened = self._open(*self._how)
        # else created on first use: a publish refused before then leaves no history

    @property
    def _store(self) -> HistoryStore:
        if self._opened is None:
            self._opened = self._open(*self._how)
        return self._opened

    def _open(self, create: bool, read_only: bool,
              warn: Callable[[str], None] | None) -> HistoryStore:
        if warn is None:
            store = HistoryStore.open(self.location, secret_file=self.secret_file,
                                      create=create, read_only=read_only)
            warn = _python_warning
        else:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    store = HistoryStore.open(self.location, secret_file=self.secret_file,
                                              create=create, read_only=read_only)
                finally:
                    for w in caught:
                        warn(str(w.message))
        for line in store.tampered:
            warn(f"the history was changed without its secret: {line}")
        if read_only:
            for info in store.pending():
                warn(f"release {info.seq} of {printable_name(info.dataset)} is pending: it "
                     f"was committed, but its file is still at {info.pending_path}; "
                     f"`anonkit release recover` (or the next publish) moves it to "
                     f"{info.output_path}")
        return store

    @property
    def store(self) -> HistoryStore:
        """The open store, for what this class does not cover."""
        return self._store

    def close(self) -> None:
        if self._opened is not None:
            self._opened.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- publishing ------------------------------------------------------------------------
    def publish(self, df: pd.DataFrame, *, dataset: str, key: str, output: PathText,
                method: str = "mondrian", quasi_identifiers: Columns,
                sensitive: Columns = (), identifiers: Columns = (),
                insensitive: Columns = (), drop: Columns = (),
                hierarchies: Mapping[str, Hierarchy | PathText] | None = None,
                kinds: Mapping[str, Kind | str] | None = None,
                orders: Mapping[str, Sequence[object]] | None = None,
                allow_breach: bool = False, accept_heuristic: bool = False,
                new_lineage: bool = False, exact_seconds: float = EXACT_SECONDS,
                accept_tampered: bool = False, metrics: dict[str, float] | None = None,
                report: PathText | None = None, **options: object) -> ReleaseInfo:
        """Anonymize ``df`` with ``method`` and publish it to ``output`` as the next release
        of ``dataset``, atomically with its history row (:func:`anonkit.history.publish`).

        ``key``: the column naming each record stably across releases (stored only as a
        keyed hash; never released). The roles, ``hierarchies``, ``kinds``, ``orders`` and
        ``options`` are :func:`anonymize`'s; a sequential method (``m-invariance``,
        ``ke``, ``stream-tree``) continues from the earlier releases.

        Refused (:class:`CrossReleaseBreachError`, nothing written) when, with the earlier
        releases, the release would breach a record, unless ``allow_breach``; or when it
        shares records with another dataset, unless ``new_lineage``. ``exact_seconds``: the
        time the gate may spend on records its bounds leave undecided (those still
        undecided count as exposed). ``accept_tampered``: publish although the history
        was changed without its secret. ``metrics`` receives the release's utility and
        risk figures. ``report``: write the release's sign-off report there (the anonymize
        report and the release's place in the history), only if the release is published;
        never over an input, the history or a release it records.
        """
        chosen = methods.get(method)
        typed = chosen.parse_options(options, "python")
        key_named = any(key in as_list(columns) for columns in (quasi_identifiers, sensitive))
        ids = as_list(identifiers)
        read = loaded_hierarchies(hierarchies)
        frame, _ = schema_from_roles(df, quasi_identifiers, sensitive,
                               [*ids, key] if key in df.columns and not key_named
                               and key not in ids else ids,
                               insensitive, drop, read, kinds, orders)
        request = PublishRequest(
            dataset=dataset, key=key, quasi_identifiers=as_list(quasi_identifiers),
            sensitive=as_list(sensitive), identifiers=ids, method=chosen.name, options=typed,
            hierarchies=read, kinds=dict(kinds or {}), orders=dict(orders or {}))
        if report is not None:
            refuse_overwrites({}, output_writes(Path(output), chosen, report))
        return self.publish_job(PublishJob(frame, request, Path(output),
                                           report=Path(report) if report is not None
                                           else None),
                                allow_breach=allow_breach, accept_heuristic=accept_heuristic,
                                new_lineage=new_lineage, exact_seconds=exact_seconds,
                                accept_tampered=accept_tampered, metrics=metrics)

    def publish_job(self, job: PublishJob, *, allow_breach: bool = False,
                    accept_heuristic: bool = False, new_lineage: bool = False,
                    exact_seconds: float = EXACT_SECONDS, accept_tampered: bool = False,
                    metrics: dict[str, float] | None = None) -> ReleaseInfo:
        """Publish a job :func:`read_publish_job` prepared (see :meth:`publish`). When this
        publish creates the history and is refused, the history is removed again: a
        refused first publish leaves nothing behind."""
        creating = self._opened is None
        location = HistoryLocation.parse(self.location)
        there = [p for p in history_files(location, self.secret_file) if p.exists()] \
            if creating else []
        self._store.accept_tampered = accept_tampered
        try:
            return publish(self._store, job.frame, job.request, job.output,
                           allow_breach=allow_breach, accept_heuristic=accept_heuristic,
                           new_lineage=new_lineage, metrics=metrics,
                           exact_seconds=exact_seconds,
                           neutralize_formulas=job.neutralize_formulas,
                           report=None if job.report is None
                           else PublishReport(job.report, job.provenance))
        except BaseException:
            if creating and location.sqlite_path is not None and not self._store.releases():
                self.close()
                self._opened = None
                for made in history_files(location, self.secret_file):
                    if made not in there:
                        made.unlink(missing_ok=True)
            raise

    # -- reading ---------------------------------------------------------------------------
    def releases(self, dataset: str | None = None) -> list[ReleaseInfo]:
        """The releases, oldest first (only ``dataset``'s, when given)."""
        return self._store.releases(dataset)

    def release(self, dataset: str, seq: int) -> ReleaseInfo:
        """Release number ``seq`` of ``dataset``."""
        return self._store.release(dataset, seq)

    def details(self, dataset: str, seq: int) -> ReleaseDetails:
        """Release ``seq`` of ``dataset`` with what an adversary sees in it."""
        info = self._store.release(dataset, seq)
        return ReleaseDetails(info, self._store.load(info), self._store.auxiliary_names(info),
                              self._store.method_state(info) is not None)

    def pending(self) -> list[ReleaseInfo]:
        """Releases committed whose file is not yet at its name."""
        return self._store.pending()

    def lineage_notes(self, dataset: str) -> list[dict[str, object]]:
        """Every recorded lineage decision concerning ``dataset``: its releases' own, and
        those of other datasets' releases that share records with it (only the entries
        naming ``dataset``). Each note: ``dataset``, ``seq``, ``checked`` (False: recorded
        before the history kept history-wide pseudonyms) and ``lineage``."""
        notes: list[dict[str, object]] = []
        for info in self._store.releases():
            lineage = info.lineage
            if info.dataset == dataset:
                if lineage is None:
                    notes.append({"dataset": info.dataset, "seq": info.seq, "checked": False})
                elif lineage.get("shared") or lineage.get("new_lineage"):
                    notes.append({"dataset": info.dataset, "seq": info.seq, "checked": True,
                                  "lineage": lineage})
                continue
            shared: Any = (lineage or {}).get("shared") or []
            entries = [e for e in shared if str(e.get("dataset")) == dataset]
            if entries:
                notes.append({"dataset": info.dataset, "seq": info.seq, "checked": True,
                              "lineage": {**(lineage or {}), "shared": entries}})
        return notes

    def write_report(self, dataset: str, seq: int, path: PathText, *,
                     command: str | None = None) -> Path:
        """Rebuild the sign-off report of release ``seq`` of ``dataset`` from what the
        history recorded (its classes, verdicts, parameters and place in the history) and
        write it to ``path``: never over the history, its secret or a release it records.
        The before/after distributions are not in it: the history never keeps the input."""
        target = Path(path)
        refuse_history_output([(target, "report")], self._store,
                              secret_file=self.secret_file)
        refuse_missing_folder(target)
        info = self._store.release(dataset, seq)
        return write_recorded_report(self._store, info, self._store.load(info), target,
                                     command=command)

    # -- auditing --------------------------------------------------------------------------
    def audit(self, dataset: str, *, k: float | None = None, l: float | None = None,  # noqa: E741
              e: float | None = None, focus: int | None = None, pairs: bool = False,
              worst: int = 5, exact_seconds: float = EXACT_SECONDS,
              accept_tampered: bool = False, report: PathText | None = None,
              command: str | None = None) -> AuditReport:
        """Judge every record of ``dataset`` over all the releases that contain it
        (:func:`anonkit.history.audit`); ``focus``: only the records of that release;
        ``pairs``: also every pair of releases on its own; ``k``, ``l``, ``e``: thresholds
        instead of the releases' own; ``worst``: records shown per finding. ``report``:
        write the HTML report there (never over the history, its secret or a release it
        records; ``command``, the command line, goes in its provenance)."""
        if report is not None:  # the audit writes nothing else
            refuse_history_output([(Path(report), "report")], self._store,
                                  secret_file=self.secret_file)
        self._store.accept_tampered = accept_tampered
        found = audit(self._store, dataset, k=k, l=l, e=e, focus=focus, pairs=pairs,
                      worst=worst, exact_seconds=exact_seconds)
        if report is not None:
            write_audit_html(found, report, command=command,
                             history=HistoryLocation.parse(self.location).sqlite_path)
        return found

    # -- recovering ------------------------------------------------------------------------
    def recover(self, *, accept_tampered: bool = False,
                on_sealed: Callable[[int], None] | None = None) -> Recovery:
        """Finish what a killed publisher left half done (opening writable did: this tells
        what) and report the releases still pending. A history changed without its secret
        is refused (:class:`TamperedHistoryError`) unless ``accept_tampered``, which
        authenticates its releases again as they are now (``on_sealed`` is told how many,
        before their pending publishes are finished)."""
        store = self._store
        sealed = None
        if store.tampered:
            if not accept_tampered:
                raise TamperedHistoryError(
                    f"the history {self.location} was changed without its secret "
                    f"({store.tampered[0]}); nothing was changed. Restore it from a backup, "
                    f"or accept it as it is now with --accept-tampered")
            sealed = store.seal()
            if on_sealed is not None:
                on_sealed(sealed)
            store.recovered = store.recover()
        return Recovery(sealed, list(store.recovered), store.pending())


def read_publish_job(job: Job, *, history: PathText,
                     secret_file: PathText | None = None,
                     command: str | None = None) -> PublishJob:
    """A publish job (see :func:`job_from`, with ``dataset`` and ``key``) read and checked,
    before the history is opened: the output may not be the history, its journal or its
    secret; every column needs a role, as for anonymize (the key is an identifier).
    ``command``: the command line, for the report's provenance."""
    for name, flag in (("input", "INPUT"), ("output", "-o FILE"), ("dataset", "--dataset NAME"),
                       ("key", "--key COLUMN")):
        if not job.get(name):
            raise InputError(f"no {name} given: pass {flag} or set {name} in the config")
        if not isinstance(job[name], str):
            raise InputError(f"{name} must be text, got {job[name]!r}")
    database = job_source(job)
    if is_database_url(job["output"]):
        raise InputError("release publish writes its release to a file (the history records "
                         "its digest); give -o FILE.csv, or write a one-off release to a "
                         "database with anonkit anonymize")
    source, target = Path(str(job["input"])), Path(str(job["output"]))
    report = Path(str(job["report"])) if job.get("report") else None
    # before the history is opened (or created): never over an input, the history, its
    # journal, backups or secret (the releases it records are checked once it is open)
    refuse_overwrites(job, output_writes(target, find_method(str(job.get("method") or
                                                                 "mondrian")), report),
                      protected_files(location=HistoryLocation.parse(history),
                                      secret_file=Path(secret_file) if secret_file is not None
                                      else None))
    if report is not None:
        refuse_missing_folder(report)
    if not job["quasi_identifiers"]:
        raise InputError("no quasi-identifiers given: pass --qi a,b,c")
    spec: Any = job
    request = PublishRequest(
        dataset=spec["dataset"], key=spec["key"], quasi_identifiers=spec["quasi_identifiers"],
        sensitive=spec["sensitive"], identifiers=spec["identifiers"], method=spec["method"],
        options=spec["options"], hierarchies=loaded_hierarchies(spec["hierarchies"]),
        kinds=spec["kinds"], orders=spec["orders"])
    dialect = job_dialect(job)
    text = declared_text(job, list(spec.get("kinds") or {}))
    if database is not None:
        df = to_pandas(read_source(database, text_columns=text))
    else:
        df = read_table(source, sep=spec.get("separator"), header=dialect.header,
                        names=dialect.names, na_values=dialect.na_values, text_columns=text,
                        skipinitialspace=dialect.skipinitialspace, encoding=dialect.encoding,
                        max_input_bytes=dialect.max_input_bytes)
    # the cheap refusals before the history is opened (the key's values are checked by the
    # publish, which removes a history it created when it is refused)
    check_request(df.columns, request, target)
    key_column = spec["key"]
    roles = column_roles([str(c) for c in df.columns], {
        **job, "identifiers": [*spec["identifiers"],
                               *([key_column] if key_column in df.columns else [])],
        "hierarchies": request.hierarchies}, spec["quasi_identifiers"])
    dropped = [name for name, role in roles.items() if role == "drop"]
    if dropped:
        df = df.drop(columns=dropped)
    made = {"input": str(database or source)}
    if report is not None and database is None:  # hashed only for the report
        made["input SHA-256"] = sha256_file(source)
    if command:
        made["command"] = command
    return PublishJob(df, request, target, bool(job.get("neutralize_formulas")), report, made)


# -- test data -------------------------------------------------------------------------------
