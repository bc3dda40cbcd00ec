"""What the commands share: the options they declare alike, the job file, the progress bar
and how an error becomes a message and an exit code.

Imports nothing of anonkit's at load but the errors and the option helpers; the methods'
options come from :mod:`anonkit.jobs` when a command that takes them is built.
"""

from __future__ import annotations

import os
import shlex
import sys
import tomllib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from anonkit._util.urls import masked
from anonkit.errors import AnonkitError, AnonkitWarning, InputError

if TYPE_CHECKING:
    from anonkit.jobs import Meter, Option

#: a click decorator
Decorator = Callable[[Callable[..., object]], Callable[..., object]]


class Progress:
    """Live progress on stderr, on a terminal only: one line per step, a bar that ticks
    while the step runs (its elapsed time) and says rows per second when it ends; a step
    with a meter (:meth:`follow`: the bytes of the input read so far) shows its count
    against its total instead.

    :meth:`step` is handed to the jobs as :data:`anonkit.assemble.Progress`: steps come
    from the job (reading, writing) and from the method (encoding, partitioning,
    generalizing, verifying).
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.meters: dict[str, Meter] = {}

    def follow(self, name: str, meter: Meter) -> None:
        """Show the step ``name`` by ``meter`` (e.g. the input's bytes read so far)."""
        self.meters[name] = meter

    @contextmanager
    def step(self, name: str, rows: int | None = None) -> Iterator[None]:
        """One step over ``rows`` rows (0 or None: not known yet, e.g. while reading)."""
        if not self.enabled:
            yield
            return
        import threading

        from anonkit import jobs

        meter = self.meters.get(name)
        bar = jobs.terminal_bar(name, meter.total if meter is not None else rows,
                                meter.unit if meter is not None else "rows")
        done = threading.Event()

        def tick() -> None:  # the work is one long call: redraw the elapsed time meanwhile
            while not done.wait(0.25):
                if meter is not None:
                    bar.total = meter.total or None
                    bar.n = meter.done
                bar.refresh()

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()
            if meter is not None:
                bar.n = meter.done
                bar.total = bar.total or meter.done
            elif rows:
                bar.update(rows - bar.n)
            bar.close()


def run_body(body: Callable[[], int | None]) -> None:
    """Run a command body, turning our errors into one-line messages and exit codes, and
    our warnings into one ``warning:`` line each (Python's own display is put back after:
    commands run in one process, as in the tests, must not stack displays)."""
    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        if issubclass(category, AnonkitWarning):
            click.echo(f"warning: {message}", err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
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
    finally:
        warnings.showwarning = shown
    sys.exit(code)


#: ``--neutralize-formulas``, for every command that writes a CSV release
neutralize_option = click.option(
    "--neutralize-formulas", is_flag=True,
    help="Write a cell that begins with =, +, -, @, a tab or a carriage return (and is no "
         "plain number) with a leading ', so that a spreadsheet shows it as text instead "
         "of running it as a formula (CSV injection). Without it such cells are written as "
         "they are, with a warning.")


def command_line() -> str:
    """The command being run, as a shell would take it (the report's provenance), a
    database URL's password masked."""
    return masked(shlex.join(["anonkit", *sys.argv[1:]]))


def load_config(path: Path | None, table: str = "anonymize",
                extra_fields: Mapping[str, object] | None = None) -> dict[str, object]:
    """A job's settings from a TOML file; relative paths are taken from the file's folder.
    Keys are the job's (:data:`anonkit.jobs.JOB_FIELDS`, and ``extra_fields`` of the
    command) and the methods' options, at the top level or all in a ``[table]``
    (``[anonymize]``, ``[publish]``). The job's values are type-checked here, the methods'
    options when the job is made (:func:`anonkit.jobs.job_from`)."""
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
    except IsADirectoryError:
        raise InputError(f"config file {path} is a folder; give the job file (a .toml file)"
                         ) from None
    except RecursionError:
        raise InputError(f"config file {path} nests tables or lists too deeply to be a job "
                         f"file; a job file has one level of keys") from None
    except OSError as exc:
        raise InputError(f"cannot read the config file {path}: {exc.strerror or exc}"
                         ) from None
    if table in raw and len(raw) > 1:
        others = sorted(k for k in raw if k != table)
        raise InputError(f"config file {path}: the keys {', '.join(others)} stand outside the "
                         f"[{table}] table, where they would be ignored; move them into it "
                         f"(or drop the table header)")
    if table in raw and not isinstance(raw[table], dict):
        raise InputError(f"config file {path}: {table} must be a table of settings "
                         f"([{table}] with key = value lines below it), got "
                         f"{type(raw[table]).__name__}")
    config = dict(raw.get(table, raw))
    from anonkit import jobs

    fields = {**jobs.JOB_FIELDS, **(extra_fields or {})}
    known = set(fields) | {o.name for o in jobs.method_options()}
    unknown = sorted(set(config) - known)
    if unknown:
        raise InputError(f"config file {path}: unknown key(s) {', '.join(unknown)}; known keys: "
                         f"{', '.join(sorted(known))}")
    jobs.check_job_types(config, fields, f"config file {path}")
    base = Path(path).resolve().parent
    for key in ("input", "output", "report"):
        if key in config:
            if not isinstance(config[key], str):
                raise InputError(f"config file {path}: {key} must be a file name (text), got "
                                 f"{config[key]!r}")
            if "://" not in config[key]:  # (a database URL is no path)
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


# -- options shared by `anonymize`, `check` and `release publish`: defined once -------------


def _stacked(fn: Callable[..., object], decorators: Sequence[Decorator]
             ) -> Callable[..., object]:
    """``fn`` under ``decorators``, the first listed outermost (so ``--help`` shows the
    options in the order listed)."""
    for decorator in reversed(decorators):
        fn = decorator(fn)
    return fn


def role_options(fn: Callable[..., object]) -> Callable[..., object]:
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


def reading_options(fn: Callable[..., object]) -> Callable[..., object]:
    """How to read the input file: --sep, --no-header, --names, --na-values,
    --skipinitialspace, --encoding, --max-input-bytes."""
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
        click.option("--max-input-bytes", "max_input_bytes", metavar="SIZE",
                     help="The most bytes read from the input, a compressed file's counted "
                          "as they decompress, e.g. 8G or 500M (default: twice this "
                          "machine's memory). A larger input is refused."),
    ])


def source_options(fn: Callable[..., object]) -> Callable[..., object]:
    """--table and --query: the rows to read when INPUT is a database URL."""
    return _stacked(fn, [
        click.option("--table", metavar="NAME",
                     help="When INPUT is a database (postgresql://USER@HOST/DB, "
                          "sqlite:///FILE.db): read this table (SCHEMA.NAME allowed)."),
        click.option("--query", metavar="SQL",
                     help="When INPUT is a database: read the rows of this query instead."),
    ])


def table_output_options(fn: Callable[..., object]) -> Callable[..., object]:
    """--output-table and --replace: the release's table when -o is a database URL."""
    return _stacked(fn, [
        click.option("--output-table", "output_table", metavar="NAME",
                     help="When -o is a database URL: the release's table. It appears only "
                          "once complete and verified; auxiliary tables and the verification "
                          "go beside it (NAME_verification)."),
        click.option("--replace", is_flag=True, default=None,
                     help="Replace an existing --output-table (and the tables beside it); "
                          "without it an existing table is refused."),
    ])


order_option = click.option(
    "--order", "order_pairs", multiple=True, metavar="COLUMN=V1,V2,...|COLUMN=FILE",
    help="An ordinal column's values from low to high, comma-separated or a file with one a "
         "line (repeatable).")

#: the parameters of :func:`reading_options` (and --order), as click passes them
READING_PARAMETERS = ("separator", "no_header", "names", "na_values", "skipinitialspace",
                      "encoding", "max_input_bytes", "order_pairs")


def reading_given(values: Mapping[str, object]) -> dict[str, object]:
    """The job's reading settings given on the command line (None where not given)."""
    return {
        "separator": values.get("separator"),
        "header": False if values.get("no_header") else None,
        "names": values.get("names"),
        "na_values": list(values.get("na_values") or ()) or None,  # type: ignore[call-overload]
        "skipinitialspace": values.get("skipinitialspace"),
        "encoding": values.get("encoding"),
        "max_input_bytes": values.get("max_input_bytes"),
        "order_pairs": values.get("order_pairs") or (),
    }


def _click_option(option: Option, hidden: bool = False) -> Decorator:
    """A registry option (:class:`anonkit.methods.Option`) as a click option that hands
    the text over unparsed: the registry's parser checks it, the same way as a job file's
    value. ``hidden``: read but not shown in the help."""
    if option.switch:
        return click.option(*option.flags, option.name, is_flag=True, default=None,
                            help=option.help, hidden=hidden)
    return click.option(*option.flags, option.name, multiple=option.multiple, default=None,
                        metavar=option.metavar or "VALUE", help=option.help, hidden=hidden)


def reading_engine_options(fn: Callable[..., object]) -> Callable[..., object]:
    """:func:`engine_options` for a command that writes no release (``check``)."""
    return engine_options(fn, writes=False)


def one_shot_method_options(fn: Callable[..., object]) -> Callable[..., object]:
    """:func:`method_options` for ``anonymize``: history-only options hidden from its help."""
    return method_options(fn, one_shot=True)


def model_options(fn: Callable[..., object]) -> Callable[..., object]:
    """-k, -l, -t and --model, defined once in the registry (``check`` takes only these)."""
    from anonkit import jobs

    for option in reversed(jobs.model_options()):
        fn = _click_option(option)(fn)
    return fn


def method_options(fn: Callable[..., object], *, one_shot: bool = False
                   ) -> Callable[..., object]:
    """--method and every registered method's options, as real command-line options; the
    ones the chosen method does not take are refused when the command runs. ``one_shot``
    (``anonymize``): the options only history methods take are read but not shown."""
    from anonkit import jobs

    shown = jobs.one_shot_option_names() if one_shot else None
    for option in reversed(jobs.method_options()):
        fn = _click_option(option, hidden=shown is not None and option.name not in shown)(fn)
    return click.option("--method", default=None, metavar="NAME",
                        help="The anonymization method (default: mondrian); "
                             "`anonkit methods` lists them with their options.")(fn)


def given_method_options(values: Mapping[str, object]) -> dict[str, object]:
    """The method options actually given on the command line (name -> text or list)."""
    from anonkit import jobs

    out: dict[str, object] = {}
    for option in jobs.method_options():
        value = values.get(option.name)
        if option.multiple:
            if value:
                out[option.name] = list(value)  # type: ignore[call-overload]
        elif value is not None:
            out[option.name] = value
    return out


#: the files a release may be written to, for every -o's help
OUTPUT_SUFFIXES_HELP = (".csv, .tsv or .txt, compressed as .csv.gz, .csv.bz2 or .csv.zst, or "
                        ".parquet")


def engine_options(fn: Callable[..., object], *, writes: bool = True
                   ) -> Callable[..., object]:
    """--engine, --workers, --scheduler: where the work runs. ``writes``: the command writes
    a release (whose Dask form is a folder of Parquet files)."""
    output = "; the release is written as a folder of Parquet files" if writes else ""
    return _stacked(fn, [
        click.option("--engine", type=click.Choice(["local", "dask"]), default=None,
                     help=f"local (default): one process. dask: a Dask cluster (Mondrian "
                          f"only{output})."),
        click.option("--workers", type=int, default=None, metavar="N",
                     help="Worker processes of the local Dask cluster (default: one per "
                          "core)."),
        click.option("--scheduler", metavar="ADDRESS",
                     help="Run on the Dask cluster at ADDRESS (tcp://host:8786) instead."),
    ])
