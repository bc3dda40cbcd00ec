"""The local web app: the steward's workflow in a browser (open a table, classify its
columns, attach hierarchies, choose a method and its models, preview, publish, audit, save
the job file). Pages are rendered on the server (Jinja2, every value escaped); a small
script of our own polls a running job's progress and shows one method's options at a time,
and every page works without it.

One steward, one browser: the app keeps its state (the open table, the settings, the
runs) in memory for the life of the server; files it makes live in its private folder."""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import quote

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from anonkit.errors import AnonkitError, InputError
from anonkit.web.contract import (
    BUILDERS,
    KINDS,
    ROLES,
    AuditResult,
    DatabaseTable,
    HierarchyPreview,
    PublishResult,
    RunResult,
    Settings,
    StepReporter,
    TableInput,
    TablePreview,
    Verdicts,
    Workbench,
)
from anonkit.web.security import (
    REPORT_POLICY,
    Guard,
    receive_upload,
    under_root,
)

HERE = Path(__file__).resolve().parent
#: the typed confirmation a publish over the gate needs (recorded by the history)
FORCE_PHRASE = "publish despite the breach"
#: table files offered on the first page
TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".gz", ".bz2", ".zst")
LISTED_FILES = 200
MAX_DEPTH = 6
LOOKED_AT = 20_000
#: the longest a status request with ``wait=end`` is held open
LONG_POLL = 20.0


@dataclass
class Task:
    """A job running in a background thread, its progress and its outcome."""

    id: str
    kind: str  # preview, publish, audit, or setup (a history-only method: nothing to run)
    settings: Settings | None
    step: str = "starting"
    started: float = field(default_factory=time.monotonic)
    seconds: float | None = None
    error: str | None = None
    result: RunResult | PublishResult | AuditResult | None = None
    label: str = ""
    #: a preview's verdicts and summary, known before its report is drawn
    verified: tuple[Verdicts, str] | None = None
    #: a publish's form (the run, dataset, key and release file), to publish it again
    request: dict[str, str] = field(default_factory=dict)
    #: set once the job has ended (``seconds`` known): a status request may wait on it
    ended: threading.Event = field(default_factory=threading.Event)

    @property
    def done(self) -> bool:
        return self.ended.is_set()

    def finish(self) -> None:
        """The job has ended (its outcome set): how long it took, and wake any waiter."""
        self.seconds = time.monotonic() - self.started
        self.step = "done"
        self.ended.set()


#: a background job: given its task, its folder and the progress reporter
Work = Callable[[Task, Path, StepReporter], "RunResult | PublishResult | AuditResult"]


@dataclass
class Workspace:
    table: TablePreview | None = None
    settings: Settings | None = None
    hierarchies: dict[str, HierarchyPreview] = field(default_factory=dict)
    tasks: dict[str, Task] = field(default_factory=dict)
    saved: str | None = None


@dataclass(frozen=True)
class Config:
    root: Path
    private: Path
    token: str
    port: int
    hosts: frozenset[str]
    upload_limit: int


def create_app(workbench: Workbench, config: Config) -> Starlette:
    """The app on ``workbench`` (the job API: :class:`anonkit.jobs.workbench.Workbench`)."""
    csrf = secrets.token_urlsafe(32)
    space = Workspace()
    lock = threading.Lock()
    root = config.root.resolve()
    uploads = config.private / "uploads"
    runs = config.private / "runs"
    for folder in (uploads, runs):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    method_forms = workbench.methods()

    def page(name: str, status: int = 200, **values: object) -> HTMLResponse:
        html = env.get_template(name).render(
            csrf=csrf, space=space, roles=ROLES, kinds=KINDS, builders=BUILDERS,
            methods=method_forms, history=workbench.history, root=root, **values)
        return HTMLResponse(html, status_code=status)

    def refused(name: str, error: AnonkitError, **values: object) -> HTMLResponse:
        return page(name, 400, error=str(error), **values)

    def start(kind: str, settings: Settings | None, label: str, work: Work) -> Task:
        task = Task(secrets.token_hex(8), kind, settings, label=label)
        folder = runs / task.id
        folder.mkdir(mode=0o700)

        @contextmanager
        def step(name: str, rows: int | None = None) -> Iterator[None]:
            task.step = name
            yield

        def body() -> None:
            try:
                task.result = work(task, folder, step)
            except AnonkitError as exc:
                task.error = str(exc)
            except Exception as exc:  # an internal error: its kind only, never values
                task.error = f"internal error ({type(exc).__name__}); this is a bug in anonkit"
            finally:
                task.finish()

        with lock:
            space.tasks[task.id] = task
        threading.Thread(target=body, name=f"anonkit-{kind}", daemon=True).start()
        return task

    def current() -> Settings:
        if space.settings is None:
            raise InputError("open a table first")
        return space.settings

    def task_of(request: Request) -> Task:
        task = space.tasks.get(request.path_params["task"])
        if task is None:
            raise InputError("no such run (the server was restarted?)")
        return task

    def run_named(form: FormData, doing: str) -> tuple[Task, Settings]:
        """The run a form names (to publish or save it), and its settings."""
        task = space.tasks.get(str(form.get("task", "")))
        if task is None or task.settings is None:
            raise InputError(f"no such run to {doing} (the server was restarted?)")
        return task, task.settings

    # -- pages --------------------------------------------------------------------------
    async def home(request: Request) -> Response:
        return page("home.html", files=table_files(root))

    async def open_table(request: Request) -> Response:
        form = await request.form()
        try:
            path = under_root(root, str(form.get("path", "")), "table")
            return _opened(path)
        except AnonkitError as exc:
            return refused("home.html", exc, files=[])

    async def upload_table(request: Request) -> Response:
        try:
            path, _ = await receive_upload(request, uploads, config.upload_limit)
            return _opened(path)
        except AnonkitError as exc:
            return refused("home.html", exc, files=[])

    async def open_database(request: Request) -> Response:
        form = await request.form()
        try:
            url = str(form.get("url", "")).strip()
            name = str(form.get("table", "")).strip()
            query = str(form.get("query", "")).strip()
            if not url:
                raise InputError("give the database URL: postgresql://USER@HOST/DATABASE or "
                                 "sqlite:///FILE.db")
            if bool(name) == bool(query):
                raise InputError("name the rows with a table name or with a query (one of "
                                 "them)")
            file = workbench.database_file(url)
            if file is not None:  # read only under the served folder, as every file
                url = "sqlite:///" + quote(str(under_root(root, str(file), "SQLite database")))
            return _opened(DatabaseTable(url, name or None, query or None))
        except AnonkitError as exc:
            return refused("home.html", exc, files=[])

    def _opened(path: TableInput) -> Response:
        preview = workbench.preview_table(path)
        columns = [c.name for c in preview.columns]
        with lock:
            space.table = preview
            earlier = space.settings
            if earlier is not None and earlier.columns == columns:
                # the next version of the same table: its roles, hierarchies and method stay
                space.settings = replace(earlier, input=path)
            else:
                space.settings = Settings(path, columns)
                space.hierarchies = {}
        return RedirectResponse("/table", status_code=303)

    async def table(request: Request) -> Response:
        if space.table is None:
            return RedirectResponse("/", status_code=303)
        return page("table.html")

    async def set_roles(request: Request) -> Response:
        form = await request.form()
        try:
            settings = current()
            roles: dict[str, str] = {}
            kinds: dict[str, str] = {}
            for index, column in enumerate(settings.columns):
                role = str(form.get(f"role-{index}", ""))
                kind = str(form.get(f"kind-{index}", ""))
                if role:
                    if role not in ROLES:
                        raise InputError(f"column {column!r}: unknown role; choose one of "
                                         f"{', '.join(ROLES)}")
                    roles[column] = role
                if kind:
                    if kind not in KINDS:
                        raise InputError(f"column {column!r}: unknown kind; choose one of "
                                         f"{', '.join(KINDS)}")
                    kinds[column] = kind
            settings.roles, settings.kinds = roles, kinds
            missing = settings.unclassified()
            if missing:
                raise InputError(f"column(s) with no role: {', '.join(missing)}; give every "
                                 f"column a role (insensitive: released unchanged)")
            described = ("quasi-identifier", "sensitive")
            for column in [c for c in settings.hierarchies if roles.get(c) not in described]:
                settings.hierarchies.pop(column)
                space.hierarchies.pop(column, None)
        except AnonkitError as exc:
            return refused("table.html", exc)
        return RedirectResponse("/table#hierarchies", status_code=303)

    async def set_hierarchy(request: Request) -> Response:
        try:
            settings = current()
            if request.headers.get("content-type", "").startswith("multipart/"):
                path, form = await receive_upload(request, uploads, config.upload_limit)
                column = form.get("column", "")
                _column_index(settings, column)
                preview = workbench.preview_hierarchy(column, path)
            else:
                fields = await request.form()
                column = str(fields.get("column", ""))
                _column_index(settings, column)
                builder = str(fields.get("builder", ""))
                if builder:
                    target = runs / f"hierarchy-{secrets.token_hex(4)}.csv"
                    preview = workbench.build_hierarchy(settings.input, column, builder,
                                                        str(fields.get("parameter", "")),
                                                        target)
                else:
                    path = under_root(root, str(fields.get("path", "")), "hierarchy file")
                    preview = workbench.preview_hierarchy(column, path)
            with lock:
                settings.hierarchies[column] = preview.path
                space.hierarchies[column] = preview
        except AnonkitError as exc:
            return refused("table.html", exc)
        return RedirectResponse("/table#hierarchies", status_code=303)

    async def remove_hierarchy(request: Request) -> Response:
        form = await request.form()
        column = str(form.get("column", ""))
        if space.settings is not None:
            space.settings.hierarchies.pop(column, None)
            space.hierarchies.pop(column, None)
        return RedirectResponse("/table#hierarchies", status_code=303)

    async def job(request: Request) -> Response:
        if space.settings is None:
            return RedirectResponse("/", status_code=303)
        if space.settings.unclassified():
            return page("table.html", 400, error="give every column a role first")
        return page("job.html")

    async def run(request: Request) -> Response:
        form = await request.form()
        try:
            settings = current()
            method = str(form.get("method", "mondrian"))
            chosen = next((m for m in method_forms if m.name == method), None)
            if chosen is None:
                raise InputError(f"unknown method {method!r}")
            options: dict[str, str | list[str]] = {}
            for option in chosen.options:
                value = str(form.get(f"{method}.{option.name}", "")).strip()
                if option.switch:
                    if value:
                        options[option.name] = "true"
                elif option.multiple:
                    lines = [line.strip() for line in value.splitlines() if line.strip()]
                    if lines:
                        options[option.name] = lines
                elif value and option.file:
                    options[option.name] = str(under_root(root, value, f"{option.flag} file"))
                elif value:
                    options[option.name] = value
            settings.method, settings.options = method, options
            settings.shuffle = bool(form.get("shuffle"))
            workbench.check(settings)
        except AnonkitError as exc:
            return refused("job.html", exc)
        snapshot = replace(settings, roles=dict(settings.roles), kinds=dict(settings.kinds),
                           hierarchies=dict(settings.hierarchies),
                           options=dict(settings.options))
        label = f"{method} " + " ".join(
            f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in options.items())
        if chosen.history_only:
            task = Task(secrets.token_hex(8), "setup", snapshot, label=label)
            task.finish()  # (nothing to run)
            with lock:
                space.tasks[task.id] = task
        else:
            def preview(task: Task, folder: Path, step: StepReporter) -> RunResult:
                def verified(verdicts: Verdicts, summary: str) -> None:
                    task.verified = (verdicts, summary)

                return workbench.run(snapshot, folder, step, verified)

            task = start("preview", snapshot, label, preview)
        return RedirectResponse(f"/runs/{task.id}", status_code=303)

    async def show_task(request: Request) -> Response:
        try:
            task = task_of(request)
        except AnonkitError as exc:
            return page("home.html", 404, error=str(exc), files=[])
        others = [t for t in space.tasks.values()
                  if t.kind == "preview" and t.id != task.id and isinstance(t.result, RunResult)]
        return page("task.html", task=task, others=others, force_phrase=FORCE_PHRASE)

    async def task_status(request: Request) -> Response:
        try:
            task = task_of(request)
        except AnonkitError:
            return JSONResponse({"done": True, "step": "gone"}, status_code=404)
        if request.query_params.get("wait") == "end":
            # a long poll: answer when the job ends, or after LONG_POLL seconds at most
            await run_in_threadpool(task.ended.wait, LONG_POLL)
        elapsed = task.seconds if task.seconds is not None else time.monotonic() - task.started
        return JSONResponse({"done": task.done, "step": task.step,
                             "verified": task.verified is not None,
                             "seconds": round(elapsed, 2)})

    def _file_of(request: Request, which: str) -> Path:
        task = task_of(request)
        result = task.result
        if isinstance(result, RunResult):
            return result.release if which == "release" else result.report
        if isinstance(result, AuditResult) and which == "report":
            return result.report
        raise InputError("this run has no such file")

    async def download_release(request: Request) -> Response:
        try:
            path = _file_of(request, "release")
        except AnonkitError as exc:
            return PlainTextResponse(str(exc), status_code=404)
        return FileResponse(path, media_type="text/csv", filename="release.csv")

    async def show_report(request: Request) -> Response:
        try:
            path = _file_of(request, "report")
        except AnonkitError as exc:
            return PlainTextResponse(str(exc), status_code=404)
        download = request.query_params.get("download") is not None
        response = FileResponse(path, media_type="text/html",
                                filename="report.html" if download else None,
                                content_disposition_type="attachment" if download
                                else "inline")
        response.headers["content-security-policy"] = REPORT_POLICY
        return response

    async def compare(request: Request) -> Response:
        shown = [space.tasks.get(request.query_params.get(side, "")) for side in ("a", "b")]
        pair = [t for t in shown if t is not None and isinstance(t.result, RunResult)]
        if len(pair) != 2:
            return page("home.html", 404, error="choose two finished previews to compare",
                        files=[])
        return page("compare.html", pair=pair)

    async def publish(request: Request) -> Response:
        form = await request.form()
        try:
            task, settings = run_named(form, "publish")
            dataset = str(form.get("dataset", "")).strip()
            key = str(form.get("key", "")).strip()
            if not dataset:
                raise InputError("give the dataset's name")
            if key not in settings.columns:
                raise InputError("choose the key column (the one naming each record)")
            output = under_root(root, str(form.get("output", "")), "release file")
            force = bool(form.get("force"))
            if force and str(form.get("confirm", "")).strip() != FORCE_PHRASE:
                raise InputError(f"publishing over the gate needs the confirmation typed "
                                 f"exactly: {FORCE_PHRASE}")
        except AnonkitError as exc:
            return page("home.html", 400, error=str(exc), files=[])
        label = f"publish {dataset}" + (" (over the gate)" if force else "")
        published = start("publish", settings, label, lambda _, folder, step: workbench.publish(
            settings, dataset=dataset, key=key, output=output, allow_breach=force, step=step))
        published.request = {"task": task.id, "dataset": dataset, "key": key,
                              "output": str(output.relative_to(root))}
        return RedirectResponse(f"/runs/{published.id}", status_code=303)

    async def history(request: Request) -> Response:
        try:
            releases = workbench.releases()
            error = None
        except AnonkitError as exc:
            releases, error = [], str(exc)
        datasets = sorted({r.dataset for r in releases})
        return page("history.html", releases=releases, datasets=datasets, error=error)

    async def audit(request: Request) -> Response:
        form = await request.form()
        dataset = str(form.get("dataset", ""))
        task = start("audit", None, f"audit {dataset}",
                     lambda _, folder, step: workbench.audit(dataset, folder / "audit.html"))
        return RedirectResponse(f"/runs/{task.id}", status_code=303)

    async def save(request: Request) -> Response:
        form = await request.form()
        try:
            _, settings = run_named(form, "save")
            target = under_root(root, str(form.get("path", "")), "job file")
            text = workbench.save_job(settings, target, config.private)
        except AnonkitError as exc:
            return page("home.html", 400, error=str(exc), files=[])
        return page("saved.html", path=target, text=text)

    routes = [
        Route("/", home),
        Route("/open", open_table, methods=["POST"]),
        Route("/upload", upload_table, methods=["POST"]),
        Route("/database", open_database, methods=["POST"]),
        Route("/table", table),
        Route("/roles", set_roles, methods=["POST"]),
        Route("/hierarchy", set_hierarchy, methods=["POST"]),
        Route("/hierarchy/remove", remove_hierarchy, methods=["POST"]),
        Route("/job", job),
        Route("/run", run, methods=["POST"]),
        Route("/runs/{task}", show_task),
        Route("/runs/{task}/status", task_status),
        Route("/runs/{task}/release.csv", download_release),
        Route("/runs/{task}/report.html", show_report),
        Route("/compare", compare),
        Route("/publish", publish, methods=["POST"]),
        Route("/history", history),
        Route("/audit", audit, methods=["POST"]),
        Route("/save", save, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    middleware = [Middleware(Guard, token=config.token, csrf=csrf, port=config.port,
                             hosts=config.hosts)]
    app = Starlette(routes=routes, middleware=middleware)
    return app


def table_files(root: Path) -> list[str]:
    """Table files under ``root`` to offer (hidden folders skipped; a bounded look, so a
    large folder does not hold the page up)."""
    files: list[str] = []
    looked = 0
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        depth = len(Path(folder).relative_to(root).parts)
        if depth >= MAX_DEPTH:
            subfolders.clear()
        looked += len(names)
        files += [str((Path(folder) / n).relative_to(root)) for n in sorted(names)
                  if n.endswith(TABLE_SUFFIXES) and not n.startswith(".")]
        if len(files) >= LISTED_FILES or looked >= LOOKED_AT:
            break
    return files[:LISTED_FILES]


def _column_index(settings: Settings, column: str) -> int:
    """The column's place; a hierarchy describes a quasi-identifier or sensitive column."""
    if column not in settings.columns:
        raise InputError("choose a column of the open table")
    if settings.roles.get(column) not in ("quasi-identifier", "sensitive"):
        raise InputError(f"column {column!r} is {settings.roles.get(column) or 'without a role'}"
                         f"; a hierarchy describes a quasi-identifier or sensitive column")
    return settings.columns.index(column)
