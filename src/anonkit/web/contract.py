"""What the web app needs from the job API, declared here and implemented by
:class:`anonkit.jobs.workbench.Workbench` (the app sits below the jobs layer: the command
line hands it the job API, so the app calls the same jobs as the command line and never
runs a method itself).

Everything crossing this seam is plain data: texts, numbers, paths and a database table's
URL."""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from anonkit._util.urls import masked

#: the roles a column can have, as on the command line
ROLES = ("quasi-identifier", "sensitive", "identifier", "insensitive", "drop")
#: the kinds a column can be declared as (empty: inferred)
KINDS = ("numeric", "categorical", "ordinal", "date")
#: the hierarchy builders: name -> what its parameter means
BUILDERS = {
    "intervals": "widths per level, e.g. 5,10,20 (a numeric column)",
    "masking": "the number of masking levels, e.g. 3 (codes such as zip codes)",
    "dates": "levels, e.g. month,year,decade (a date column)",
}

#: one step of a job: ``step(name, rows)`` is entered while the step runs (see
#: :data:`anonkit.assemble.Progress`)
StepReporter = Callable[[str, "int | None"], AbstractContextManager[None]]
#: the verdicts of a release, one per model: (model and parameters, passed, measured)
Verdicts = list[tuple[str, bool, str]]
#: told a run's verdicts and summary once every model holds, before the report is drawn
Verified = Callable[[Verdicts, str], None]


@dataclass(frozen=True)
class DatabaseTable:
    """A table, or the rows of a query, in a database (``postgresql://...`` or
    ``sqlite:///...``). The URL as given, its password included, stays in the server's
    memory: it is shown masked and saved without its password."""

    url: str = field(repr=False)
    table: str | None = None
    query: str | None = None

    def __str__(self) -> str:
        return f"{masked(self.url)} ({'query' if self.table is None else self.table})"

    def __repr__(self) -> str:
        return f"DatabaseTable({str(self)!r})"

    @property
    def name(self) -> str:
        """As a page names it (a file's name is its ``name`` too)."""
        return self.table if self.table is not None else "query"

    @property
    def stem(self) -> str:
        """The start of the names offered for its release and job files (as a file's)."""
        return re.sub(r"[^A-Za-z0-9_-]+", "_", self.name).strip("_") or "table"


#: what the steward opens: a file, or a table or query in a database
TableInput = Path | DatabaseTable


@dataclass(frozen=True)
class ColumnPreview:
    """One column of an opened table: its inferred kind and its most common values."""

    name: str
    kind: str
    distinct: int
    missing: int
    #: (value, rows), most common first
    top: list[tuple[str, int]]


@dataclass(frozen=True)
class TablePreview:
    """An opened table: its first rows and its columns."""

    source: TableInput
    rows: int
    columns: list[ColumnPreview]
    head: list[list[str]]

    @property
    def database(self) -> str | None:
        """The database it was read from, as it may be shown (None: a file)."""
        return str(self.source) if isinstance(self.source, DatabaseTable) else None


@dataclass(frozen=True)
class HierarchyLevel:
    level: int
    #: (label, leaves under it), as many as shown
    labels: list[tuple[str, int]]
    distinct: int


@dataclass(frozen=True)
class HierarchyPreview:
    column: str
    path: Path
    leaves: int
    levels: list[HierarchyLevel]


@dataclass(frozen=True)
class OptionField:
    """A method's option as a form field (from the method registry)."""

    name: str
    flag: str
    help: str
    kind: str
    switch: bool
    multiple: bool
    #: the values to choose from (empty: free text)
    choices: tuple[str, ...] = ()
    #: its value names a file (read only under the served folder)
    file: bool = False


@dataclass(frozen=True)
class MethodForm:
    name: str
    summary: str
    sequential: bool
    #: it runs without a history (a preview is possible)
    one_shot: bool
    #: it runs only with a history (m-invariance)
    history_only: bool
    options: tuple[OptionField, ...]


@dataclass
class Settings:
    """A job as the steward set it up in the app: the table, every column's role, kinds,
    hierarchies (ARX files), the method and its options as typed in the form."""

    input: TableInput
    columns: list[str]
    roles: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    hierarchies: dict[str, Path] = field(default_factory=dict)
    method: str = "mondrian"
    #: option name -> the text typed (a list for a repeatable option)
    options: dict[str, str | list[str]] = field(default_factory=dict)
    shuffle: bool = False

    def unclassified(self) -> list[str]:
        return [c for c in self.columns if c not in self.roles]


@dataclass(frozen=True)
class RunResult:
    """A preview run: the verified release and its report, in the app's private folder."""

    passed: bool
    summary: str
    verdicts: Verdicts
    release: Path
    report: Path
    seconds: float


@dataclass(frozen=True)
class PublishResult:
    """A publish: published (the release's number and file), or refused by the gate, with
    what the adversary found in plain words (record pseudonyms, never keys)."""

    published: bool
    dataset: str
    message: str
    seq: int | None = None
    output: Path | None = None
    findings: str = ""
    overridden: bool = False
    #: what the history said on the way (its secret's place, an override recorded ...)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReleaseRow:
    dataset: str
    seq: int
    method: str
    rows: int
    classes: int
    output: str
    published_at: str
    gate: str


@dataclass(frozen=True)
class AuditResult:
    dataset: str
    breached: bool
    summary: str
    report: Path


class Workbench(Protocol):
    """The jobs the app runs (:class:`anonkit.jobs.workbench.Workbench`)."""

    history: str

    def warm_up(self) -> None: ...

    def methods(self) -> list[MethodForm]: ...

    def preview_table(self, source: TableInput) -> TablePreview: ...

    def database_file(self, url: str) -> Path | None: ...

    def preview_hierarchy(self, column: str, path: Path) -> HierarchyPreview: ...

    def build_hierarchy(self, table: TableInput, column: str, builder: str, parameter: str,
                        target: Path) -> HierarchyPreview: ...

    def check(self, settings: Settings) -> None: ...

    def run(self, settings: Settings, folder: Path, step: StepReporter,
            verified: Verified | None = None) -> RunResult: ...

    def publish(self, settings: Settings, *, dataset: str, key: str, output: Path,
                allow_breach: bool, step: StepReporter) -> PublishResult: ...

    def releases(self) -> list[ReleaseRow]: ...

    def audit(self, dataset: str, report: Path) -> AuditResult: ...

    def save_job(self, settings: Settings, target: Path, private: Path) -> str: ...
