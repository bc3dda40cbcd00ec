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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import click

from anonkit.errors import AnonkitError, InputError
from anonkit.options import as_list, parse_pairs

CONFIG_KEYS = {
    "input", "output", "quasi_identifiers", "sensitive", "identifiers", "k", "l", "t",
    "models", "strategy", "generalization", "hierarchies", "kinds", "allow_missing",
    "report", "separator", "remove_cut_dimension", "single_dimensional", "seed",
}


class Progress:
    """A phase-by-phase progress bar on stderr that appears only for work longer than a
    second (tqdm's ``delay``) and only on a terminal."""

    def __init__(self, phases: Sequence[str], enabled: bool = True) -> None:
        from tqdm import tqdm

        self._bar = tqdm(total=len(phases), delay=1.0, unit="step", leave=False,
                         disable=not (enabled and sys.stderr.isatty()),
                         bar_format="{desc:<24}{bar}| {n}/{total} [{elapsed}]")

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self._bar.set_description_str(name)
        yield
        self._bar.update(1)

    def close(self) -> None:
        self._bar.close()


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


def load_config(path: Path | None) -> dict[str, Any]:
    """A job's settings from a TOML file; relative paths are taken from the file's folder."""
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
    config = dict(raw.get("anonymize", raw))
    unknown = sorted(set(config) - CONFIG_KEYS)
    if unknown:
        raise InputError(f"config file {path}: unknown key(s) {', '.join(unknown)}; known keys: "
                         f"{', '.join(sorted(CONFIG_KEYS))}")
    base = Path(path).resolve().parent
    for key in ("input", "output", "report"):
        if key in config:
            config[key] = str(base / config[key])
    if "hierarchies" in config:
        config["hierarchies"] = {c: str(base / f) for c, f in config["hierarchies"].items()}
    return config


class LazyGroup(click.Group):
    """A group whose heavier subcommand groups are imported only when used, so a plain
    ``anonkit anonymize`` does not pay for the history's database libraries."""

    lazy: ClassVar[dict[str, tuple[str, str]]] = {"release": ("anonkit.releases.cli", "release")}

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


@main.command()
@click.argument("input_path", metavar="INPUT", required=False)
@click.option("-o", "--output", help="Where to write the release (.csv or .parquet).")
@click.option("--config", "config_path", type=click.Path(path_type=Path),
              help="A TOML job file; command-line options override it.")
@click.option("--qi", help="Quasi-identifiers, comma-separated.")
@click.option("--sensitive", help="Sensitive column(s), comma-separated.")
@click.option("--id", "identifiers", help="Identifier columns (never released), comma-separated.")
@click.option("-k", type=int, help="k-anonymity: every class has at least k rows.")
@click.option("-l", type=float, help="distinct l-diversity (use --model for other kinds).")
@click.option("-t", type=float, help="t-closeness (EMD <= t).")
@click.option("--model", "models", multiple=True,
              help="Further model, e.g. entropy-l=2, recursive-cl=3,2, beta=1, ke=3,2000.")
@click.option("--hierarchy", "hierarchies", multiple=True,
              help="column=FILE: an ARX hierarchy CSV (repeatable).")
@click.option("--generalization", "generalization", multiple=True,
              help="column=FORM: range, set, hierarchy, prefix, mean or median (repeatable).")
@click.option("--kind", "kinds", multiple=True,
              help="column=KIND: numeric, categorical, ordinal or date (repeatable).")
@click.option("--strategy", type=click.Choice(["widest", "entropy", "distinct", "random"]),
              help="How Mondrian chooses the cut dimension (default: widest).")
@click.option("--allow-missing", is_flag=True, default=None,
              help="Treat a missing QI value as a value of its own instead of refusing.")
@click.option("--sep", "separator", help="CSV separator (default: sniffed).")
@click.option("--report", type=click.Path(path_type=Path), help="Write an HTML report here.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
def anonymize(input_path: str | None, output: str | None, config_path: Path | None,
              qi: str | None, sensitive: str | None, identifiers: str | None, k: int | None,
              l: float | None, t: float | None, models: tuple[str, ...],  # noqa: E741
              hierarchies: tuple[str, ...], generalization: tuple[str, ...],
              kinds: tuple[str, ...], strategy: str | None, allow_missing: bool | None,
              separator: str | None, report: Path | None, as_json: bool) -> None:
    """Anonymize INPUT with Mondrian and write a verified release to OUTPUT."""

    def body() -> int:
        config = load_config(config_path)
        given = {
            "input": input_path, "output": output, "quasi_identifiers": qi,
            "sensitive": sensitive, "identifiers": identifiers, "k": k, "l": l, "t": t,
            "strategy": strategy, "allow_missing": allow_missing, "separator": separator,
            "report": str(report) if report else None,
        }
        job = config | {key: value for key, value in given.items() if value is not None}
        job["models"] = list(job.get("models", [])) + list(models)
        job["hierarchies"] = dict(job.get("hierarchies", {})) | parse_pairs(hierarchies,
                                                                              "hierarchy")
        job["generalization"] = dict(job.get("generalization", {})) | parse_pairs(
            generalization, "generalization")
        job["kinds"] = dict(job.get("kinds", {})) | parse_pairs(kinds, "kind")
        outcome = run_anonymize(job)
        if as_json:
            click.echo(json.dumps(outcome, indent=2, default=str))
        else:
            click.echo(outcome["summary"])
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


def run_anonymize(job: dict[str, Any], progress: bool = True) -> dict[str, Any]:
    """Run one anonymization job (the settings of ``anonymize`` as a dict)."""
    from anonkit.io import check_output_path

    for key in ("input", "output"):
        if not job.get(key):
            raise InputError(f"no {key} given: pass {'INPUT' if key == 'input' else '-o FILE'} "
                             f"or set {key} in the config")
    qis = as_list(job.get("quasi_identifiers"))
    if not qis:
        raise InputError("no quasi-identifiers given: pass --qi a,b,c or set "
                         "quasi_identifiers in the config")
    check_output_path(job["input"], job["output"])
    report = Path(job["report"]) if job.get("report") else None
    if report is not None:
        check_output_path(job["input"], report)
        if report.resolve() == Path(job["output"]).resolve():
            raise InputError(f"the report and the release are the same file ({report}); "
                             f"give them different names")
        for path in (report, Path(job["output"])):
            if not path.resolve().parent.is_dir():
                raise InputError(f"output folder {path.resolve().parent} does not exist; "
                                 f"create it first")
    model_texts = list(job.get("models", []))
    if job.get("l") is not None:
        model_texts.append(f"l={job['l']:g}")
    if job.get("t") is not None:
        model_texts.append(f"t={job['t']:g}")
    phases = ["reading", "anonymizing", "writing"] + (["report"] if report else [])
    bar = Progress(phases, enabled=progress)
    pending_report: Path | None = None
    try:
        with bar.phase("reading"):
            # Arrow parses in its own threads, without the GIL: read while pandas and the
            # algorithm are imported, which takes about as long
            started = time.perf_counter()
            from anonkit._parallel import in_background

            reading = in_background(_read_job_input, job, qis)
            from anonkit.algorithms.mondrian import Mondrian
            from anonkit.hierarchy import read_arx_hierarchy
            from anonkit.io import to_pandas

            table, named, verbatim = reading.result()
            df = to_pandas(table.select(named), categorical_text=True)
            unchanged = table.select([name for name in table.column_names
                                      if name not in named])
            hierarchies = {column: read_arx_hierarchy(path, name=column)
                           for column, path in job.get("hierarchies", {}).items()}
            # (the imports done meanwhile included: they are what reading overlaps)
            read_seconds = time.perf_counter() - started
        with bar.phase("anonymizing"):
            mondrian = Mondrian(
                k=job.get("k"), models=model_texts, strategy=job.get("strategy", "widest"),
                generalization=job.get("generalization") or None,
                remove_cut_dimension=bool(job.get("remove_cut_dimension", False)),
                single_dimensional=bool(job.get("single_dimensional", False)),
                allow_missing=bool(job.get("allow_missing", False)),
                seed=int(job.get("seed", 0)))
            result = mondrian.anonymize(
                df, qis, sensitive=as_list(job.get("sensitive")) or None,
                identifiers=as_list(job.get("identifiers")), hierarchies=hierarchies,
                kinds=job.get("kinds") or None)
        result.timings = {"read": read_seconds, **result.timings}
        result.require_passed()  # refused (ModelNotMetError) unless every model holds
        # both files or neither: the report goes to a temp name first, is renamed last
        if report is not None:
            with bar.phase("report"):
                from anonkit.report import render_report

                pending_report = report.with_name(f".{report.name}.{os.getpid()}.pending")
                render_report(result, df, pending_report)
        with bar.phase("writing"):
            t0 = time.perf_counter()
            result.write(job["output"], unchanged=unchanged, verbatim=verbatim,
                         column_order=table.column_names)
            result.timings["write"] = time.perf_counter() - t0
        if pending_report is not None and report is not None:
            os.replace(pending_report, report)
            pending_report = None
    finally:
        bar.close()
        if pending_report is not None:
            pending_report.unlink(missing_ok=True)
    return {
        "output": job["output"],
        "report": job.get("report"),
        "passed": result.passed,
        "verdicts": [v.to_dict() for v in result.verdicts],
        "metrics": result.metrics,
        "timings": result.timings,
        "summary": result.summary(),
        "released_unchanged": unchanged.column_names,
    }


def _read_job_input(job: dict[str, Any], qis: list[str]) -> tuple[Any, list[str], bool]:
    """The input as an Arrow table, the columns the job names (in table order), and
    whether the others are verbatim text. Imports no pandas: it runs while pandas is.

    Columns nobody gave a role are released unchanged: they stay in Arrow, never loaded
    into pandas, and when both files are CSV they are read as text and written back as it
    was (``007`` stays ``007``, ``1.50`` stays ``1.50``), which is also the cheapest way.
    """
    from anonkit.io import read_arrow, table_columns, table_format

    sep = job.get("separator")
    names = table_columns(job["input"], sep)
    named: dict[str, str] = {}
    for role, columns in (("quasi-identifier", qis),
                          ("sensitive", as_list(job.get("sensitive"))),
                          ("identifier", as_list(job.get("identifiers")))):
        for name in columns:
            named.setdefault(name, role)
    for key, option in (("hierarchies", "hierarchy"), ("generalization", "generalization"),
                        ("kinds", "kind")):
        for name in job.get(key) or {}:
            named.setdefault(name, f"--{option} column")
    others = [name for name in names if name not in named]
    verbatim = table_format(job["input"]) == "csv" and table_format(job["output"]) == "csv"
    table = read_arrow(job["input"], sep, text_columns=others if verbatim else (),
                       dictionary_text=True)
    for name, role in named.items():  # after reading: an unreadable file is told first
        if name not in names:
            raise InputError(f"unknown column {name!r} given as {role}; the table has: "
                             f"{', '.join(names)}")
    return table, [name for name in names if name in named], verbatim


@main.command()
@click.argument("input_path", metavar="INPUT")
@click.option("--qi", required=True, help="Quasi-identifiers, comma-separated.")
@click.option("--sensitive", help="Sensitive column(s), comma-separated.")
@click.option("-k", type=int, help="k-anonymity.")
@click.option("-l", type=float, help="distinct l-diversity.")
@click.option("-t", type=float, help="t-closeness.")
@click.option("--model", "models", multiple=True, help="Further model, e.g. entropy-l=2.")
@click.option("--sep", "separator", help="CSV separator (default: sniffed).")
@click.option("--report", type=click.Path(path_type=Path), help="Write an HTML report here.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
def check(input_path: str, qi: str, sensitive: str | None, k: int | None, l: float | None,  # noqa: E741
          t: float | None, models: tuple[str, ...], separator: str | None,
          report: Path | None, as_json: bool) -> None:
    """Check any released table (ours or another tool's) against privacy models.

    Exits 0 when every model holds and 2 when any fails.
    """

    def body() -> int:
        from anonkit.checker import check as run_check
        from anonkit.io import read_table

        texts = list(models)
        if k is not None:
            texts.insert(0, f"k={k}")
        if l is not None:
            texts.append(f"l={l:g}")
        if t is not None:
            texts.append(f"t={t:g}")
        if not texts:
            raise InputError("no privacy model given: pass -k, -l, -t or --model")
        df = read_table(input_path, sep=separator, categorical_text=True)
        outcome = run_check(df, as_list(qi), as_list(sensitive) or None, texts)
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
            "quasi_identifiers": qis, "sensitive": adult.sensitive, "k": 10, "l": 2,
            "hierarchies": hierarchy_files, "report": str(output / "report.html"),
        }
        click.echo(f"anonymizing UCI Adult ({len(adult.data):,} rows; QIs: {', '.join(qis)}; "
                   f"sensitive: {adult.sensitive}) with Mondrian, k=10, distinct l=2")
        outcome = run_anonymize(job)
        verification = output / "verification.json"
        from anonkit.io import atomic_write

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
