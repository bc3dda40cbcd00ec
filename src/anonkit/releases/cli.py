"""``anonkit release``: publish with a history, list and show releases, audit them.

The group works on its own (``python -m anonkit.releases.cli``) and as a subcommand of the
main ``anonkit`` command. Exit codes: 0 success; 2 bad input (unknown dataset, bad key
column, changed columns, not a history, wrong secret: the history is left unchanged);
3 ``audit`` found a cross-release breach (so a pipeline can gate a publication on it).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

import click

from anonkit.errors import AnonkitError
from anonkit.models.base import format_parameters
from anonkit.options import parse_pairs
from anonkit.releases.store import DEFAULT_HISTORY, HISTORY_ENV, HistoryStore, ReleaseInfo

P = ParamSpec("P")
R = TypeVar("R")

BREACH_EXIT = 3


def _errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Report anonkit's own errors as one line on stderr with their exit code."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except AnonkitError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)

    return wrapper


def _history_options(fn: Callable[P, R]) -> Callable[P, R]:
    fn = click.option("--secret-file", type=click.Path(dir_okay=False, path_type=Path),
                      envvar="ANONKIT_HISTORY_SECRET_FILE",
                      help="The history's secret (default: HISTORY.secret beside an SQLite "
                           "history, or $ANONKIT_HISTORY_SECRET).")(fn)
    return click.option("--history", envvar=HISTORY_ENV, default=DEFAULT_HISTORY,
                        show_default=True,
                        help=f"The release history: an SQLite file or a "
                             f"postgresql+psycopg:// URL (or ${HISTORY_ENV}).")(fn)


def _open(history: str, secret_file: Path | None, create: bool = False) -> HistoryStore:
    return HistoryStore.open(history, secret_file=secret_file, create=create)


@click.group("release")
def release() -> None:
    """Publish a changing table release after release, with a history, and audit the
    releases against each other."""


# -- publish -------------------------------------------------------------------------------


def _option_value(text: str) -> object:
    """``--option seed=3`` gives 3, ``--option allow_missing=true`` gives True."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


@release.command("publish")
@click.argument("input_path", metavar="INPUT", type=click.Path(path_type=Path))
@click.option("--dataset", required=True, help="Name of the changing table.")
@click.option("--key", required=True,
              help="Column naming each record stably across releases (stored only as a "
                   "keyed hash; never released).")
@click.option("--method", default="mondrian", show_default=True,
              help="Anonymization method (a registered release method).")
@click.option("--qi", required=True, help="Quasi-identifiers, comma-separated.")
@click.option("--sensitive", default="", help="Sensitive columns, comma-separated.")
@click.option("--identifiers", default="", help="Other identifier columns (dropped).")
@click.option("-k", "k", type=int, default=None, help="k of k-anonymity.")
@click.option("--model", "models", multiple=True,
              help="A further privacy model, e.g. l=3, t=0.2, ke=3,2000 (repeatable).")
@click.option("--hierarchy", "hierarchies", multiple=True, metavar="COLUMN=FILE",
              help="An ARX hierarchy file for a column (repeatable).")
@click.option("--option", "options", multiple=True, metavar="NAME=VALUE",
              help="A method option, e.g. strategy=entropy (repeatable).")
@click.option("-o", "--output", required=True, type=click.Path(path_type=Path),
              help="Where to write the release (CSV or Parquet by suffix).")
@click.option("--allow-breach", is_flag=True,
              help="Publish even if the new release, together with earlier ones, breaches "
                   "a record. By default such a release is refused: nothing is written and "
                   "the exit code is 3.")
@_history_options
@_errors
def publish_cmd(input_path: Path, dataset: str, key: str, method: str, qi: str,
                sensitive: str, identifiers: str, k: int | None, models: tuple[str, ...],
                hierarchies: tuple[str, ...], options: tuple[str, ...], output: Path,
                allow_breach: bool, history: str, secret_file: Path | None) -> None:
    """Anonymize INPUT and publish it as the next release of --dataset."""
    from anonkit.hierarchy import read_arx_hierarchy
    from anonkit.io import check_output_path, read_table
    from anonkit.options import as_list
    from anonkit.releases.publish import PublishRequest, publish

    check_output_path(input_path, output)
    method_options: dict[str, object] = {name: _option_value(value)
                                         for name, value in parse_pairs(options, "option").items()}
    if k is not None:
        method_options["k"] = k
    if models:
        method_options["models"] = list(models)
    request = PublishRequest(
        dataset=dataset, key=key, quasi_identifiers=as_list(qi),
        sensitive=as_list(sensitive), identifiers=as_list(identifiers), method=method,
        options=method_options,
        hierarchies={col: read_arx_hierarchy(path, name=col)
                     for col, path in parse_pairs(hierarchies, "hierarchy").items()})
    df = read_table(input_path)
    with _open(history, secret_file, create=True) as store:
        info = publish(store, df, request, output, allow_breach=allow_breach)
    click.echo(f"published release {info.seq} of {info.dataset!r}: {info.n_released_rows} "
               f"rows in {info.n_classes} classes -> {info.output_path} "
               f"(sha256 {info.content_hash[:16]}...)")
    for verdict in info.verdicts:
        click.echo(f"  {'PASS' if verdict['passed'] else 'FAIL'} {verdict['model']} "
                   f"({format_parameters(dict(verdict['parameters']))}): measured "
                   f"{verdict['measured']:g}")


# -- list / show ---------------------------------------------------------------------------


def _models(info: ReleaseInfo) -> str:
    return ", ".join(f"{m['model']}({','.join(f'{k}={v}' for k, v in m['parameters'].items())})"
                     for m in info.models)  # type: ignore[union-attr]


@release.command("list")
@click.option("--dataset", default=None, help="Only this dataset.")
@click.option("--verify", is_flag=True, help="Hash every release file (slow for big files).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_history_options
@_errors
def list_cmd(dataset: str | None, verify: bool, as_json: bool, history: str,
             secret_file: Path | None) -> None:
    """List the releases in the history."""
    with _open(history, secret_file) as store:
        infos = store.releases(dataset)
    if as_json:
        rows = [i.to_dict() | ({"file_status": i.file_status()} if verify else {})
                for i in infos]
        click.echo(json.dumps(rows, indent=1, default=str))
        return
    if not infos:
        click.echo("the history has no releases yet")
        return
    header = ["dataset", "seq", "published (UTC)", "method", "rows", "classes", "models",
              "file"] + (["status"] if verify else [])
    table = [header]
    for i in infos:
        row = [i.dataset, str(i.seq), i.created_at.strftime("%Y-%m-%d %H:%M:%S"), i.method,
               str(i.n_released_rows), str(i.n_classes), _models(i), i.output_path]
        table.append(row + ([i.file_status()] if verify else []))
    widths = [max(len(r[c]) for r in table) for c in range(len(header))]
    for r in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


@release.command("show")
@click.argument("dataset")
@click.argument("seq", type=int)
@click.option("--classes", "n_classes", type=int, default=10, show_default=True,
              help="How many equivalence classes to print.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_history_options
@_errors
def show_cmd(dataset: str, seq: int, n_classes: int, as_json: bool, history: str,
             secret_file: Path | None) -> None:
    """Show release SEQ of DATASET: how it was made and what an adversary sees in it."""
    with _open(history, secret_file) as store:
        info = store.release(dataset, seq)
        view = store.load(info)
    status = info.file_status()
    sizes = view.sizes
    if as_json:
        out = info.to_dict() | {
            "file_status": status,
            "class_sizes": {"min": int(sizes.min()), "median": float(_median(sizes)),
                            "max": int(sizes.max())} if len(sizes) else {},
            "classes": view.labels.head(n_classes).assign(size=sizes[:n_classes])
            .to_dict(orient="records")}
        click.echo(json.dumps(out, indent=1, default=str))
        return
    lines = [
        f"release {info.seq} of {info.dataset!r}",
        f"  published     {info.created_at.isoformat()} (anonkit {info.anonkit_version})",
        f"  method        {info.method}",
        f"  parameters    {json.dumps(info.parameters, default=str)}",
        f"  key column    {info.key_column} (stored as HMAC-SHA256 pseudonyms)",
        f"  QIs           {', '.join(info.quasi_identifiers)}",
        f"  sensitive     {', '.join(info.sensitive) or '-'}",
        f"  rows          {info.n_input_rows} in, {info.n_released_rows} released",
        f"  classes       {info.n_classes}" + (
            f" (size min {int(sizes.min())}, median {_median(sizes):g}, max "
            f"{int(sizes.max())})" if len(sizes) else ""),
        f"  file          {info.output_path} ({status})",
        f"  sha256        {info.content_hash}",
        "  verdicts",
    ]
    lines += [f"    {'PASS' if v['passed'] else 'FAIL'} {v['model']} {v['parameters']}: "
              f"measured {v['measured']}" for v in info.verdicts]
    if n_classes > 0 and len(sizes):
        lines.append(f"  first {min(n_classes, len(sizes))} classes (size, labels)")
        for c in range(min(n_classes, len(sizes))):
            labels = ", ".join(f"{q}={view.labels.iloc[c][q]}" for q in view.labels.columns)
            lines.append(f"    {c:>6}  {int(sizes[c]):>5}  {labels}")
    click.echo("\n".join(lines))


def _median(sizes: object) -> float:
    import numpy as np

    return float(np.median(np.asarray(sizes)))


# -- audit -----------------------------------------------------------------------------------


@release.command("audit")
@click.option("--dataset", required=True, help="The dataset whose releases to audit.")
@click.option("--report", "report_path", type=click.Path(path_type=Path), default=None,
              help="Write an HTML report (breaches per release pair, plotted).")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.option("--release", "focus", type=int, default=None,
              help="Only the intersections involving this release number.")
@click.option("-k", "k", type=float, default=None,
              help="Candidates needed (default: the releases' k-anonymity k).")
@click.option("-l", "l_", type=float, default=None,
              help="Distinct sensitive values needed (default: the releases' l).")
@click.option("-e", "e", type=float, default=None,
              help="Sensitive range needed (default: the releases' (k,e) e).")
@_history_options
@_errors
def audit_cmd(dataset: str, report_path: Path | None, as_json: bool, focus: int | None,
              k: float | None, l_: float | None, e: float | None, history: str,
              secret_file: Path | None) -> None:
    """Intersect every release of --dataset with every other; exit 3 on any breach."""
    from anonkit.releases.attacks import audit

    with _open(history, secret_file) as store:
        report = audit(store, dataset, k=k, l=l_, e=e, focus=focus)
    if report_path is not None:
        from anonkit.releases.report import write_html

        write_html(report, report_path)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=1, default=str))
    else:
        click.echo(report.summary())
        if report_path is not None:
            click.echo(f"report: {report_path}")
    if report.breached:
        sys.exit(BREACH_EXIT)


if __name__ == "__main__":  # pragma: no cover
    release()
