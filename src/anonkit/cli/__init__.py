"""The ``anonkit`` command line. It only composes the API: read, anonymize, check, write.

Exit codes: 0 success; 2 bad input or a privacy model not met (nothing written);
1 internal error; ``release audit`` also uses 3 for "breaches found".
"""

from __future__ import annotations

import json
import os
import sys
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import click

from anonkit._util.options import as_list, job_qis
from anonkit.errors import AnonkitError, InputError

_TEXTS = list[str] | str  # a list of texts, or one text (comma-separated columns, a file)
#: the keys of a job file besides the methods' options (see anonkit.methods), with their
#: types: a job file is validated against them (:func:`check_job_types`) before anything
#: runs, so a wrong type is refused, never coerced (``allow_missing = "false"`` is not true)
JOB_FIELDS: dict[str, object] = {
    "input": str, "output": str, "report": str, "method": str,
    "quasi_identifiers": _TEXTS, "sensitive": _TEXTS, "identifiers": _TEXTS,
    "insensitive": _TEXTS, "drop": _TEXTS, "hierarchies": dict[str, str],
    "kinds": dict[str, str], "separator": str, "shuffle": bool, "mkdir": bool,
    "header": bool, "names": _TEXTS, "na_values": _TEXTS, "skipinitialspace": bool,
    "encoding": str, "orders": dict[str, _TEXTS],
    "engine": str, "workers": int, "scheduler": str,
}
JOB_KEYS = set(JOB_FIELDS)
_TYPE_WORDS = {"str": "text", "bool": "true or false", "int": "a whole number",
               "float": "a number", "array": "a list", "object": "a table", "null": "nothing"}


def _type_words(kind: object) -> str:
    """What a job file value of type ``kind`` must be, in words."""
    if kind == _TEXTS:
        return "a list of texts (or one text)"
    if kind == dict[str, str]:
        return "a table of column = text"
    if kind == dict[str, _TEXTS]:
        return "a table of column = list of texts (or a file name)"
    return _TYPE_WORDS.get(getattr(kind, "__name__", ""), str(kind))


def check_job_types(config: Mapping[str, Any], fields: Mapping[str, object],
                    where: str) -> None:
    """Refuse a job file value of the wrong type (msgspec, strict: no coercion), naming
    the key, what it must be and what it is."""
    import re

    import msgspec

    job_type = msgspec.defstruct("Job", [(name, kind | None, None)  # type: ignore[operator]
                                         for name, kind in fields.items()])
    try:
        msgspec.convert({k: v for k, v in config.items() if k in fields}, job_type,
                        strict=True)
    except msgspec.ValidationError as exc:
        found = re.match(r"Expected `(.+?)`, got `(.+?)` - at `\$\.?(.*)`", str(exc))
        if found is None:
            raise InputError(f"{where}: {exc}") from None
        _, got, at = found.groups()
        key = re.sub(r"\[.*", "", at)
        inside = f" (an entry is {_TYPE_WORDS.get(got, got)})" if key != at else ""
        raise InputError(f"{where}: {key} must be {_type_words(fields.get(key))}, got "
                         f"{config.get(key)!r}{inside}") from None


class Progress:
    """Live progress on stderr, on a terminal only: one line per step, a bar that ticks
    while the step runs (its elapsed time) and says rows per second when it ends.

    Steps come from the command (reading, writing) and from the method
    (:data:`anonkit.assemble.Progress`: encoding, partitioning, generalizing, verifying).
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled and sys.stderr.isatty()

    @contextmanager
    def step(self, name: str, rows: int | None = None) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        import shutil
        import threading

        from tqdm import tqdm

        # a terminal that reports no size (a fresh pseudo-terminal) would get no bar at all
        size = shutil.get_terminal_size((100, 24))
        bar = tqdm(total=rows, desc=f"{name:<13}", unit=" rows", unit_scale=True,
                   file=sys.stderr, leave=True, ncols=min(size.columns or 100, 120),
                   nrows=max(size.lines, 24), mininterval=0.1)
        done = threading.Event()

        def tick() -> None:  # the work is one long call: redraw the elapsed time meanwhile
            while not done.wait(0.25):
                bar.refresh()

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()
            if rows:
                bar.update(rows - bar.n)
            bar.close()


def _run(body: Callable[[], int | None]) -> None:
    """Run a command body, turning our errors into one-line messages and exit codes."""
    try:
        code = body() or 0
    except AnonkitError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, BrokenPipeError):
        sys.exit(130)
    except Exception as exc:  # an internal error: say so, and how to report it
        click.echo(f"internal error: {type(exc).__name__}: {exc}\n(this is a bug in anonkit; "
                   f"run with ANONKIT_DEBUG=1 for the traceback)", err=True)
        if os.environ.get("ANONKIT_DEBUG"):
            raise
        sys.exit(1)
    sys.exit(code)


def load_config(path: Path | None, table: str = "anonymize",
                extra_fields: Mapping[str, object] | None = None) -> dict[str, Any]:
    """A job's settings from a TOML file; relative paths are taken from the file's folder.
    Keys are the job's (:data:`JOB_FIELDS`, and ``extra_fields`` of the command) and the
    methods' options, at the top level or all in a ``[table]`` (``[anonymize]``,
    ``[publish]``). The job's values are type-checked here (:func:`check_job_types`), the
    methods' options when the job runs (:func:`job_from`)."""
    if path is None:
        return {}
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"config file not found: {path}") from None
    except UnicodeDecodeError:
        raise InputError(f"config file {path} is not UTF-8; re-save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"config file {path} is not valid TOML: {exc}") from None
    if table in raw and len(raw) > 1:
        others = sorted(k for k in raw if k != table)
        raise InputError(f"config file {path}: the keys {', '.join(others)} stand outside the "
                         f"[{table}] table, where they would be ignored; move them into it "
                         f"(or drop the table header)")
    config = dict(raw.get(table, raw))
    from anonkit import methods

    fields = {**JOB_FIELDS, **(extra_fields or {})}
    known = set(fields) | {o.name for o in methods.all_options()}
    unknown = sorted(set(config) - known)
    if unknown:
        raise InputError(f"config file {path}: unknown key(s) {', '.join(unknown)}; known keys: "
                         f"{', '.join(sorted(known))}")
    check_job_types(config, fields, f"config file {path}")
    base = Path(path).resolve().parent
    for key in ("input", "output", "report"):
        if key in config:
            if not isinstance(config[key], str):
                raise InputError(f"config file {path}: {key} must be a file name (text), got "
                                 f"{config[key]!r}")
            config[key] = str(base / config[key])
    if isinstance(config.get("names"), str) and (base / config["names"]).is_file():
        config["names"] = str(base / config["names"])
    if isinstance(config.get("orders"), dict):
        config["orders"] = {c: str(base / v) if isinstance(v, str) else v
                            for c, v in config["orders"].items()}
    if "hierarchies" in config:
        hierarchies = config["hierarchies"]
        if not isinstance(hierarchies, dict) or not all(isinstance(f, str)
                                                        for f in hierarchies.values()):
            raise InputError(f"config file {path}: [hierarchies] must map columns to file "
                             f"names (text)")
        config["hierarchies"] = {c: str(base / f) for c, f in hierarchies.items()}
    return config


class LazyGroup(click.Group):
    """A group whose heavier subcommand groups are imported only when used, so a plain
    ``anonkit anonymize`` does not pay for the history's database libraries."""

    lazy: ClassVar[dict[str, tuple[str, str]]] = {"release": ("anonkit.cli.release", "release"),
                                                  "testdata": ("anonkit.cli.testdata",
                                                               "testdata")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            import importlib

            module, attribute = self.lazy[cmd_name]
            return getattr(importlib.import_module(module), attribute)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="anonkit")
def main() -> None:
    """anonkit: privacy-preserving data publishing with a release history."""


# -- options shared by `anonymize` and `release publish`: defined once -------------------


def _stacked(fn: Callable[..., Any],
             decorators: Sequence[Callable[[Callable[..., Any]], Callable[..., Any]]]
             ) -> Callable[..., Any]:
    """``fn`` under ``decorators``, the first listed outermost (so ``--help`` shows the
    options in the order listed)."""
    for decorator in reversed(decorators):
        fn = decorator(fn)
    return fn


def role_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The columns' roles and descriptions: --qi, --sensitive, --id, --insensitive, --drop,
    --hierarchy, --kind."""
    return _stacked(fn, [
        click.option("--qi", help="Quasi-identifiers, comma-separated."),
        click.option("--sensitive", help="Sensitive column(s), comma-separated."),
        click.option("--id", "--identifiers", "identifiers",
                     help="Identifier columns (never released), comma-separated."),
        click.option("--hierarchy", "hierarchies", multiple=True, metavar="COLUMN=FILE",
                     help="An ARX hierarchy CSV for a column (repeatable)."),
        click.option("--kind", "kinds", multiple=True, metavar="COLUMN=KIND",
                     help="numeric, categorical, ordinal or date (repeatable)."),
        click.option("--insensitive", metavar="COLUMNS",
                     help="Columns released unchanged, comma-separated; '*' for every column "
                          "given no other role. Every column needs a role."),
        click.option("--drop", metavar="COLUMNS",
                     help="Columns left out of the release, comma-separated."),
    ])


def reading_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """How to read the input file: --sep, --no-header, --names, --na-values,
    --skipinitialspace, --encoding."""
    return _stacked(fn, [
        click.option("--sep", "separator",
                     help="CSV separator (default: sniffed); several characters allowed, e.g. "
                          "', ' (a comma and the spaces after it)."),
        click.option("--no-header", "no_header", is_flag=True, default=None,
                     help="The file has no header line: name its columns with --names."),
        click.option("--names", metavar="A,B,C|FILE",
                     help="The columns' names, comma-separated or a file with one a line "
                          "(with a header line, they replace its names)."),
        click.option("--na-values", "na_values", multiple=True, metavar="TEXT",
                     help="A cell that means 'missing' in every column, e.g. '?' "
                          "(repeatable)."),
        click.option("--skipinitialspace", is_flag=True, default=None,
                     help="Drop the spaces after each separator, in every column."),
        click.option("--encoding", metavar="NAME",
                     help="The file's text encoding (default utf-8), e.g. latin-1."),
    ])


order_option = click.option(
    "--order", "order_pairs", multiple=True, metavar="COLUMN=V1,V2,...|COLUMN=FILE",
    help="An ordinal column's values from low to high, comma-separated or a file with one a "
         "line (repeatable).")

#: the parameters of :func:`reading_options` (and --order), as click passes them
READING_PARAMETERS = ("separator", "no_header", "names", "na_values", "skipinitialspace",
                      "encoding", "order_pairs")


def reading_given(values: Mapping[str, Any]) -> dict[str, Any]:
    """The job's reading settings given on the command line (None where not given)."""
    return {
        "separator": values.get("separator"),
        "header": False if values.get("no_header") else None,
        "names": values.get("names"),
        "na_values": list(values.get("na_values") or ()) or None,
        "skipinitialspace": values.get("skipinitialspace"),
        "encoding": values.get("encoding"),
        "order_pairs": values.get("order_pairs") or (),
    }


def _values_list(value: object, what: str) -> list[str]:
    """Values from a TOML list, a file with one a line, or comma-separated text."""
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value]
    if not isinstance(value, str):
        raise InputError(f"{what} must be a list of texts, a file name or comma-separated "
                         f"text, got {value!r}")
    path = Path(value)
    if value and path.is_file():
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read {what} from {path}: {exc}") from None
        lines = [line.strip() for line in text.splitlines()]
        return [line for line in lines if line and not line.startswith("#")]
    return [v.strip() for v in value.split(",")]


def job_dialect(job: Mapping[str, Any]) -> Any:
    """The :class:`anonkit.data.io.Dialect` of a job's input."""
    from anonkit.data.io import Dialect

    names = job.get("names")
    return Dialect.of(
        header=job.get("header", True) is not False,
        names=None if names is None else _values_list(names, "names"),
        na_values=job.get("na_values") or (),
        skipinitialspace=bool(job.get("skipinitialspace")),
        encoding=job.get("encoding"))


def _orders(file_orders: object, pairs: Sequence[str]) -> dict[str, list[str]]:
    """Ordinal columns' orders: a TOML table (column = list or file) and --order pairs."""
    if file_orders is None:
        file_orders = {}
    if not isinstance(file_orders, Mapping):
        raise InputError(f"orders must be a table of column = [values] (or a file name), got "
                         f"{file_orders!r}")
    orders = {str(c): _values_list(v, f"the order of {c!r}") for c, v in file_orders.items()}
    for pair in pairs:
        column, eq, values = pair.partition("=")
        if not eq or not column.strip() or not values.strip():
            raise InputError(f"--order {pair!r}: give COLUMN=V1,V2,... (low to high) or "
                             f"COLUMN=FILE")
        orders[column.strip()] = _values_list(values, f"the order of {column.strip()!r}")
    for column, values in orders.items():
        dups = sorted({v for v in values if values.count(v) > 1})
        if dups or not values:
            raise InputError(f"the order of {column!r} "
                             f"{'lists ' + repr(dups[0]) + ' twice' if dups else 'is empty'}; "
                             f"list each value once, low to high")
    return orders


def _click_option(option: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A registry option (:class:`anonkit.methods.Option`) as a click option that hands
    the text over unparsed: the registry's parser checks it, the same way as a job file's
    value."""
    if option.switch:
        return click.option(*option.flags, option.name, is_flag=True, default=None,
                            help=option.help)
    return click.option(*option.flags, option.name, multiple=option.multiple, default=None,
                        metavar=option.metavar or "VALUE", help=option.help)


def model_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """-k, -l, -t and --model, defined once in the registry (``check`` takes only these)."""
    from anonkit import methods

    for option in reversed([methods.K, methods.L, methods.T, methods.MODELS]):
        fn = _click_option(option)(fn)
    return fn


def parsed_model_options(values: Mapping[str, Any]) -> dict[str, Any]:
    """The typed values of the model options given on the command line."""
    from anonkit import methods

    given = given_method_options(values)
    return {option.name: option.parse(given[option.name], "cli")
            for option in (methods.K, methods.L, methods.T, methods.MODELS)
            if option.name in given}


def method_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--method and every registered method's options, as real command-line options; the
    ones the chosen method does not take are refused when the command runs."""
    from anonkit import methods

    for option in reversed(methods.all_options()):
        fn = _click_option(option)(fn)
    return click.option("--method", default=None, metavar="NAME",
                        help="The anonymization method (default: mondrian); "
                             "`anonkit methods` lists them with their options.")(fn)


def given_method_options(values: Mapping[str, Any]) -> dict[str, Any]:
    """The method options actually given on the command line (name -> text or list)."""
    from anonkit import methods

    out: dict[str, Any] = {}
    for option in methods.all_options():
        value = values.get(option.name)
        if option.multiple:
            if value:
                out[option.name] = list(value)
        elif value is not None:
            out[option.name] = value
    return out


def job_from(config: Mapping[str, Any], given: Mapping[str, Any],
             method_values: Mapping[str, Any],
             extra_keys: frozenset[str] = frozenset()) -> dict[str, Any]:
    """One job: the job file's settings overridden by the command line's; the method's
    options typed and checked (a wrong value is an error, never rounded or ignored).
    ``extra_keys``: the command's own keys beside :data:`JOB_KEYS` (kept as given)."""
    from anonkit import methods

    job_keys = JOB_KEYS | extra_keys
    file_job = {k: v for k, v in config.items() if k in job_keys}
    file_options = {k: v for k, v in config.items() if k not in job_keys}
    job = file_job | {key: value for key, value in given.items() if value is not None}
    # (a job file's values were type-checked when it was read: load_config)
    if isinstance(job.get("na_values"), str):
        job["na_values"] = [job["na_values"]]
    method = methods.get(job.get("method") or "mondrian")
    job["method"] = method.name
    job["options"] = methods.parse_job_options(method, file_options, method_values)
    for key in ("quasi_identifiers", "sensitive", "identifiers", "drop"):
        job[key] = methods.split_csv(job.get(key), key)
    if job.get("insensitive") != "*":
        job["insensitive"] = methods.split_csv(job.get("insensitive"), "insensitive")
    job["hierarchies"] = dict(file_job.get("hierarchies") or {}) | methods.column_values(
        "hierarchy", list(given.get("hierarchy_pairs") or ()), "cli")
    kinds = file_job.get("kinds") or {}
    job["kinds"] = methods.column_values("kinds", kinds, "toml") | methods.column_values(
        "kind", list(given.get("kind_pairs") or ()), "cli")
    job["orders"] = _orders(file_job.get("orders"), list(given.get("order_pairs") or ()))
    job.pop("hierarchy_pairs", None)
    job.pop("kind_pairs", None)
    job.pop("order_pairs", None)
    return job


def engine_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--engine, --workers, --scheduler: where the work runs."""
    return _stacked(fn, [
        click.option("--engine", type=click.Choice(["local", "dask"]), default=None,
                     help="local (default): one process. dask: a Dask cluster (Mondrian "
                          "only; the output is a directory of Parquet files)."),
        click.option("--workers", type=int, default=None, metavar="N",
                     help="Worker processes of the local Dask cluster (default: one per "
                          "core)."),
        click.option("--scheduler", metavar="ADDRESS",
                     help="Run on the Dask cluster at ADDRESS (tcp://host:8786) instead."),
    ])


def _engine_given(engine: str | None, workers: int | None, scheduler: str | None) -> bool:
    """Whether the Dask engine is chosen; --workers / --scheduler need it."""
    if engine not in (None, "local", "dask"):
        raise InputError(f"engine must be local or dask, got {engine!r}")
    if workers is not None and workers < 1:
        raise InputError(f"workers must be a whole number >= 1, got {workers}")
    if engine != "dask" and (workers is not None or scheduler is not None):
        raise InputError("--workers and --scheduler choose a Dask cluster: add --engine dask")
    return engine == "dask"


@main.command()
@click.argument("input_path", metavar="INPUT", required=False)
@click.option("-o", "--output", help="Where to write the release (.csv or .parquet).")
@click.option("--config", "config_path", type=click.Path(path_type=Path),
              help="A TOML job file; command-line options override it.")
@role_options
@method_options
@click.option("--shuffle", is_flag=True, default=None,
              help="Release the rows in a random order (from the operating system; --seed "
                   "for tests). By default they keep the input's order, which lets anyone "
                   "line up a person's rows across releases.")
@reading_options
@order_option
@click.option("--report", type=click.Path(path_type=Path), help="Write an HTML report here.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="Print every metric, not only a summary.")
@click.option("--mkdir", is_flag=True,
              help="Create the output's folder (and the report's) when it does not exist.")
@engine_options
def anonymize(input_path: str | None, output: str | None, config_path: Path | None,
              qi: str | None, sensitive: str | None, identifiers: str | None,
              hierarchies: tuple[str, ...], kinds: tuple[str, ...], insensitive: str | None,
              drop: str | None, method: str | None, shuffle: bool | None,
              report: Path | None, as_json: bool, verbose: bool,
              mkdir: bool, engine: str | None, workers: int | None, scheduler: str | None,
              **method_values: Any) -> None:
    """Anonymize INPUT with a one-shot method (default: Mondrian) and write a verified
    release to OUTPUT."""

    def body() -> int:
        given = {
            "input": input_path, "output": output, "quasi_identifiers": qi,
            "sensitive": sensitive, "identifiers": identifiers, "insensitive": insensitive,
            "drop": drop, "method": method, "shuffle": shuffle,
            "report": str(report) if report else None,
            "hierarchy_pairs": hierarchies, "kind_pairs": kinds,
            "engine": engine, "workers": workers, "scheduler": scheduler,
        } | reading_given(method_values)
        for key in READING_PARAMETERS:
            method_values.pop(key, None)
        job = job_from(load_config(config_path), given | {"mkdir": mkdir or None},
                       given_method_options(method_values))
        if _engine_given(job.get("engine"), job.get("workers"), job.get("scheduler")):
            from anonkit.distributed.job import anonymize_job

            outcome = anonymize_job(job, column_roles, job.get("workers"),
                                    job.get("scheduler"),
                                    progress=not as_json and sys.stderr.isatty())
        else:
            outcome = run_anonymize(job)
        if as_json:
            click.echo(json.dumps(outcome, indent=2, default=str))
        else:
            click.echo(outcome["full_summary"] if verbose else outcome["summary"])
            if outcome["released_unchanged"]:
                # a column nobody named is released as it is: say so, every time
                click.echo(f"released unchanged (insensitive): "
                           f"{', '.join(outcome['released_unchanged'])} -- name direct "
                           f"identifiers with --id to drop them")
            click.echo(f"release written to {outcome['output']}")
            if outcome.get("report"):
                click.echo(f"report written to {outcome['report']}")
        return 0

    _run(body)


@main.command("methods")
def methods_cmd() -> None:
    """List the anonymization methods and their options."""
    from anonkit import methods

    click.echo("\n\n".join(methods.method_help(m) for m in methods.methods()))


def run_anonymize(job: dict[str, Any], progress: bool = True) -> dict[str, Any]:
    """Run one anonymization job (see :func:`job_from`; ``options`` typed already)."""
    from anonkit import methods
    from anonkit.data.io import check_output_path, output_format

    method = methods.get(job.get("method") or "mondrian")
    if method.anonymize is None:
        raise InputError(f"method {method.name!r} publishes only with a release history: use "
                         f"anonkit release publish --method {method.name}")
    qis = job_qis(job, "-o FILE")
    if str(job["output"]).endswith(("/", os.sep)):
        raise InputError(f"the output {job['output']} names a folder; give a file name "
                         f"(e.g. {job['output'].rstrip('/' + os.sep)}/release.csv)")
    check_output_path(job["input"], job["output"])
    output_format(job["output"])
    report = Path(job["report"]) if job.get("report") else None
    if report is not None:
        check_output_path(job["input"], report)
        if report.resolve() == Path(job["output"]).resolve():
            raise InputError(f"the report and the release are the same file ({report}); "
                             f"give them different names")
    for path in ([report] if report is not None else []) + [Path(job["output"])]:
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
    options = dict(job.get("options") or {})
    bar = Progress(enabled=progress)
    pending_report: Path | None = None
    try:
        with bar.step("reading"):
            # Arrow parses in its own threads, without the GIL: read while pandas and the
            # algorithm are imported, which takes about as long
            started = time.perf_counter()
            from anonkit._util.parallel import in_background

            reading = in_background(_read_job_input, job, qis)
            from anonkit.algorithms.mondrian import Mondrian  # noqa: F401  (import meanwhile)
            from anonkit.data.io import to_pandas
            from anonkit.data.table import Schema
            from anonkit.hierarchy import read_arx_hierarchy

            table, named, verbatim, first_line = reading.result()
            df = to_pandas(table.select(named), categorical_text=True)
            if first_line is not None:  # errors then name the file's lines
                import pandas as pd

                df.index = pd.RangeIndex(first_line, first_line + len(df), name="line")
            unchanged = table.select([name for name in table.column_names
                                      if name not in named])
            hierarchies = {column: read_arx_hierarchy(path, name=column)
                           for column, path in job.get("hierarchies", {}).items()}
            # (the imports done meanwhile included: they are what reading overlaps)
            read_seconds = time.perf_counter() - started
        schema = Schema.from_roles(df, qis, as_list(job.get("sensitive")) or None,
                                   as_list(job.get("identifiers")),
                                   kinds=job.get("kinds") or None, hierarchies=hierarchies,
                                   orders=job.get("orders") or None)
        result = method.anonymize(df, schema, options, progress=bar.step)
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
            with bar.step("report", len(df)):
                from anonkit.report import render_report

                pending_report = report.with_name(f".{report.name}.{os.getpid()}.pending")
                import shlex

                from anonkit.report.html import RELEASE_DIGEST_PENDING

                render_report(result, df, pending_report, provenance={
                    "input": str(job["input"]), "release": str(job["output"]),
                    "release SHA-256": RELEASE_DIGEST_PENDING,
                    "command": shlex.join(["anonkit", *sys.argv[1:]])},
                    unchanged=unchanged.column_names)
        with bar.step("writing", len(df)):
            t0 = time.perf_counter()
            result.write(job["output"], unchanged=unchanged, verbatim=verbatim,
                         column_order=table.column_names, accept_heuristic=accept_heuristic)
            result.timings["write"] = time.perf_counter() - t0
        if pending_report is not None and report is not None:
            from anonkit.data.io import sha256_file
            from anonkit.report.html import fill_release_digest

            fill_release_digest(pending_report, sha256_file(job["output"]))
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


def _read_job_input(job: dict[str, Any],
                    qis: list[str]) -> tuple[Any, list[str], bool, int | None]:
    """The input as an Arrow table (dropped columns left out), the columns the algorithm
    works on (in table order), whether the insensitive ones are verbatim text, and the line
    of the file its first row is on (CSV). Imports no pandas: it runs while pandas is.

    Every column needs a role (:func:`column_roles`). Insensitive columns are released
    unchanged: they stay in Arrow, never loaded into pandas, and when both files are CSV
    they are read as text and written back as it was (``007`` stays ``007``, ``1.50``
    stays ``1.50``), which is also the cheapest way.
    """
    from anonkit.data.io import first_data_line, read_arrow, table_columns, table_format

    sep = job.get("separator")
    dialect = job_dialect(job)
    names = table_columns(job["input"], sep, dialect=dialect)
    named = {*qis, *as_list(job.get("sensitive")), *as_list(job.get("identifiers")),
             *as_list(job.get("drop"))}
    insensitive = [name for name in names if name not in named] \
        if job.get("insensitive") == "*" else list(job.get("insensitive") or [])
    verbatim = table_format(job["input"]) == "csv" and table_format(job["output"]) == "csv"
    table = read_arrow(job["input"], sep,
                       text_columns=[n for n in insensitive if n in names] if verbatim else (),
                       dictionary_text=True, dialect=dialect)
    roles = column_roles(names, job, qis)  # after reading: an unreadable file is told first
    dropped = [name for name in names if roles[name] == "drop"]
    if dropped:
        table = table.drop_columns(dropped)
    worked_on = [name for name in names if roles[name] not in ("insensitive", "drop")]
    return table, worked_on, verbatim, first_data_line(job["input"], dialect)


def column_roles(names: Sequence[str], job: Mapping[str, Any],
                 qis: Sequence[str]) -> dict[str, str]:
    """Every column's role, by name. Every column needs one, as in ARX: a column nobody
    named would otherwise go out raw, so it is an error that names the columns. A
    hierarchy or kind describes a quasi-identifier or sensitive column, a generalization
    a quasi-identifier; on any other column it is an error too."""
    roles: dict[str, str] = {}
    insensitive = job.get("insensitive") or []
    for role, columns in (("quasi-identifier", qis),
                          ("sensitive", as_list(job.get("sensitive"))),
                          ("identifier", as_list(job.get("identifiers"))),
                          ("insensitive", [] if insensitive == "*" else insensitive),
                          ("drop", as_list(job.get("drop")))):
        for name in columns:
            if name not in names:
                from anonkit.data.io import separator_hint

                raise InputError(f"unknown column {name!r} given as {role}; the table has: "
                                 f"{', '.join(names)}{separator_hint(names)}")
            if name in roles and roles[name] != role:
                raise InputError(f"column {name!r} is given two roles: {roles[name]} and "
                                 f"{role}; give it one")
            roles[name] = role
    generalization = (job.get("options") or {}).get("generalization") or {}
    for columns, option, allowed in (
            (job.get("hierarchies") or {}, "hierarchy", ("quasi-identifier", "sensitive")),
            (job.get("kinds") or {}, "kind", ("quasi-identifier", "sensitive")),
            (job.get("orders") or {}, "order", ("quasi-identifier", "sensitive")),
            (generalization, "generalization", ("quasi-identifier",))):
        for name in columns:
            if roles.get(name) not in allowed:
                what = roles.get(name, "a column with no role")
                raise InputError(f"--{option} {name}=...: {name!r} is {what}; a {option} "
                                 f"describes a {' or '.join(allowed)} column (name it with "
                                 f"--qi{' or --sensitive' if len(allowed) > 1 else ''})")
    others = [name for name in names if name not in roles]
    if others and insensitive != "*":
        raise InputError(f"column(s) with no role: {', '.join(others)}. Give every column a "
                         f"role: --qi, --sensitive, --id (dropped, an identifier), "
                         f"--insensitive (released unchanged) or --drop; --insensitive '*' "
                         f"releases all the others unchanged")
    return roles | dict.fromkeys(others, "insensitive")


@main.command()
@click.argument("input_path", metavar="INPUT")
@click.option("--qi", required=True, help="Quasi-identifiers, comma-separated.")
@click.option("--sensitive", help="Sensitive column(s), comma-separated.")
@model_options
@click.option("--group", "group_column", metavar="COLUMN",
              help="The classes are the rows with equal values in this column (a release "
                   "that publishes its groups, e.g. (k,e)-anonymity's), not equal QIs.")
@click.option("--kind", "kinds", multiple=True,
              help="column=KIND for a sensitive column: numeric, categorical, ordinal or date "
                   "(repeatable; default categorical).")
@reading_options
@click.option("--report", type=click.Path(path_type=Path), help="Write an HTML report here.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@engine_options
def check(input_path: str, qi: str, sensitive: str | None, group_column: str | None,
          kinds: tuple[str, ...], report: Path | None, as_json: bool, engine: str | None,
          workers: int | None, scheduler: str | None, **model_values: Any) -> None:
    """Check any released table (ours or another tool's) against privacy models.

    Every column is read as the text it holds: rows are in one class exactly when their
    quasi-identifier cells are the same text (02139, 2139 and 2139.0 are three labels), and
    sensitive columns are categorical unless --kind declares them otherwise.

    Exits 0 when every model holds and 2 when any fails.
    """

    def body() -> int:
        from anonkit import methods
        from anonkit._util.options import parse_pairs
        from anonkit.checker import check as run_check
        from anonkit.data.io import read_table, separator_hint, table_columns
        from anonkit.data.table import Kind

        reading = {k: v for k, v in reading_given(model_values).items() if v is not None}
        for name in READING_PARAMETERS:
            model_values.pop(name, None)
        separator, dialect = reading.get("separator"), job_dialect(reading)
        # model objects from the typed options, never text formatted and parsed again
        chosen = methods.models_from_options(parsed_model_options(model_values))
        if not chosen:
            raise InputError("no privacy model given: pass -k, -l, -t or --model")
        sens = as_list(sensitive)
        declared = parse_pairs(kinds, "kind")
        known = [member.value for member in Kind]
        for name, kind in declared.items():
            if name not in sens:
                raise InputError(f"--kind {name}={kind}: {name!r} is not a sensitive column "
                                 f"(--sensitive {','.join(sens) or '...'}); quasi-identifiers "
                                 f"are compared as text, so only sensitive columns take a kind")
            if kind not in known:
                raise InputError(f"--kind {name}={kind}: unknown kind {kind!r}; use one of "
                                 f"{', '.join(known)}")
            if kind == Kind.ORDINAL:
                raise InputError(f"--kind {name}=ordinal needs the order of its values, which "
                                 f"the command line cannot take; declare it numeric or "
                                 f"categorical, or call anonkit.checker.check with orders=")
        qis = as_list(qi)
        if _engine_given(engine, workers, scheduler):
            if group_column or report:
                raise InputError("--group and --report are not available with --engine dask")
            from anonkit.distributed.job import check_source

            outcome = check_source(input_path, qis, sens, chosen,
                                   {name: Kind(declared.get(name, Kind.CATEGORICAL))
                                    for name in sens}, workers, scheduler,
                                   progress=not as_json and sys.stderr.isatty())
            click.echo(json.dumps(outcome.to_dict(), indent=2, default=str) if as_json
                       else str(outcome))
            return 0 if outcome.passed else 2
        names = table_columns(input_path, separator, dialect=dialect)
        grouping = [group_column] if group_column else []
        for role, columns in (("quasi-identifier", qis), ("sensitive", sens),
                              ("group column", grouping)):
            for name in columns:
                if name not in names:
                    raise InputError(f"unknown column {name!r} given as {role}; the table "
                                     f"has: {', '.join(names)}{separator_hint(names)}")
        # released cells are labels: read as written, never as numbers, so values a float
        # would merge (big integers, 02139 and 2139) stay apart; only the columns judged,
        # as text of many distinct values (an identifier) is costly to read
        df = read_table(input_path, sep=separator,
                        columns=list(dict.fromkeys(qis + sens + grouping)),
                        categorical_text=True, as_text=True, header=dialect.header,
                        names=dialect.names, na_values=dialect.na_values,
                        skipinitialspace=dialect.skipinitialspace, encoding=dialect.encoding)
        outcome = run_check(df, qis, sens or None, chosen,
                            kinds={name: declared.get(name, Kind.CATEGORICAL) for name in sens},
                            group_column=group_column)
        if report:
            from anonkit.report import render_check_report

            render_check_report(outcome, report)
        click.echo(json.dumps(outcome.to_dict(), indent=2, default=str) if as_json
                   else str(outcome))
        return 0 if outcome.passed else 2

    _run(body)


@main.command()
@click.option("-o", "--output", default="anonkit-demo", show_default=True,
              type=click.Path(path_type=Path), help="Folder for the demo's files.")
def demo(output: Path) -> None:
    """Anonymize the bundled UCI Adult sample and write release, verification and report."""

    def body() -> int:
        from anonkit.datasets import load_adult

        adult = load_adult()
        output.mkdir(parents=True, exist_ok=True)
        qis = list(adult.quasi_identifiers)
        hierarchy_files = {c: str(adult.path.parent / f"adult_hierarchy_{c}.csv")
                           for c in qis if c != "age"}
        job = {
            "input": str(adult.path), "output": str(output / "adult-release.csv"),
            "quasi_identifiers": qis, "sensitive": adult.sensitive, "method": "mondrian",
            "options": {"k": 10, "l": 2}, "hierarchies": hierarchy_files,
            "report": str(output / "report.html"),
        }
        click.echo(f"anonymizing UCI Adult ({len(adult.data):,} rows; QIs: {', '.join(qis)}; "
                   f"sensitive: {adult.sensitive}) with Mondrian, k=10, distinct l=2")
        outcome = run_anonymize(job)
        verification = output / "verification.json"
        from anonkit.data.io import atomic_write

        with atomic_write(verification) as tmp:
            tmp.write_text(json.dumps({"verdicts": outcome["verdicts"],
                                       "metrics": outcome["metrics"]}, indent=2, default=str))
        click.echo(outcome["summary"])
        click.echo(f"\nrelease:      {Path(outcome['output']).resolve()}")
        click.echo(f"verification: {verification.resolve()}")
        click.echo(f"report:       {Path(outcome['report']).resolve()}")
        return 0

    _run(body)


def run() -> None:
    """The ``anonkit`` console script: run the command, then leave without the
    interpreter's teardown.

    Shutting down Arrow's thread pools, freeing every object and unloading the extension
    libraries takes about 0.1 s, a sixth of a whole run on a table the size of UCI Adult. By
    then every output has been written to a temp file, fsynced and renamed (and the history
    committed), so there is nothing left to clean up; the standard streams are flushed first.
    """
    _tune_process()
    try:
        main()
        code: int = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # click and sys.exit("message") carry text: print it like Python would
            print(exc.code, file=sys.stderr)
            code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _tune_process() -> None:
    """Settings for a short process that allocates and frees hundreds of megabytes, made
    before numpy is loaded (side by side on a million rows, user CPU time fell by about a
    seventh).

    * numpy's BLAS starts a thread per core that spins while it waits; anonkit does no
      linear algebra, and on two cores those threads take time from the ones that work;
    * glibc maps every block above 128 KiB freshly from the kernel and returns it when
      freed, so each temporary array of a million rows is page-faulted and zeroed anew:
      keep blocks up to 32 MiB in the heap and the heap's free memory until exit.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(m_mmap_threshold, 32 << 20)
        libc.mallopt(m_trim_threshold, 1 << 30)
        libc.mallopt(m_top_pad, 64 << 20)
    except (OSError, AttributeError):  # not glibc: its defaults then
        pass


if __name__ == "__main__":
    run()
