"""``anonkit release``: publish with a history, list and show releases, audit them.

The group works on its own (``python -m anonkit release``) and as a subcommand of the
main ``anonkit`` command. Exit codes: 0 success; 1 an internal error; 2 bad input (unknown
dataset, bad key column, changed columns, not a history, wrong secret, an output that is the
history or a recorded release: the history is left unchanged); 3 ``audit`` found a
cross-release breach. A gate must treat every code but 0 as "do not publish" (test
``!= 0``, not ``== 3``): ``audit`` exits 1, never 0 or 3, when it fails.

``list``, ``show`` and ``audit`` never write: they open the history read-only (a read-only
file or folder works), do not upgrade an older format and do not finish a pending release
(they report it); ``recover`` does both, as the next ``publish`` does.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import click

from anonkit import jobs
from anonkit._util.numbers import exact_number, measured_text
from anonkit._util.options import parse_pairs
from anonkit.cli.common import (
    OUTPUT_SUFFIXES_HELP,
    READING_PARAMETERS,
    command_line,
    given_method_options,
    load_config,
    method_options,
    neutralize_option,
    order_option,
    reading_given,
    reading_options,
    role_options,
    source_options,
)
from anonkit.errors import AnonkitError, AnonkitWarning

if TYPE_CHECKING:
    from anonkit.jobs import ReleaseInfo

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., object])

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


def _audit_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """``audit`` is a gate: a failure must never look like "no breach" (0) or like a
    breach found (3). Bad input exits 2; anything else that goes wrong exits 1, with the
    error on stderr."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except SystemExit:
            raise  # the command's own verdict (0 or 3), or click's
        except click.exceptions.ClickException:
            raise
        except AnonkitError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code if exc.exit_code not in (0, BREACH_EXIT) else 1)
        except Exception as exc:  # a gate must fail closed, and say why
            import traceback

            traceback.print_exc(file=sys.stderr)
            click.echo(f"error: the audit failed ({type(exc).__name__}: {exc}); no verdict: "
                       f"treat the releases as unchecked", err=True)
            sys.exit(1)

    return wrapper


def _history_options(fn: Callable[P, R]) -> Callable[P, R]:
    fn = click.option("--secret-file", type=click.Path(dir_okay=False, path_type=Path),
                      envvar=jobs.SECRET_FILE_ENV,
                      help=f"The history's secret (or ${jobs.SECRET_FILE_ENV}; default: "
                           f"${jobs.SECRET_ENV}, else HISTORY.secret beside an SQLite "
                           f"history). "
                           f"The default puts the secret in the history's folder, so a backup "
                           f"of that folder carries both: in production keep it elsewhere "
                           f"with --secret-file or the environment.")(fn)
    return click.option("--history", envvar=jobs.HISTORY_ENV, default=jobs.DEFAULT_HISTORY,
                        show_default=True,
                        help=f"The release history: an SQLite file or a "
                             f"postgresql+psycopg:// URL (or ${jobs.HISTORY_ENV}).")(fn)


def _judgement_options(verb: str, undecided: str) -> Callable[[F], F]:
    """``--exact-seconds`` and ``--accept-tampered``: what ``publish`` (its gate) and
    ``audit`` share."""

    def decorate(fn: F) -> F:
        fn = click.option(
            "--accept-tampered", is_flag=True,
            help=f"{verb} even though the history's releases do not match their "
                 f"authentication (changed without the secret). By default refused.")(fn)
        return click.option(
            "--exact-seconds", type=click.FloatRange(min=0), default=jobs.EXACT_SECONDS,
            show_default=True,
            help=f"How long to spend deciding exactly what can be deduced about records "
                 f"the bounds leave undecided; those still undecided {undecided}.")(fn)

    return decorate


def _warning(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


def _open(history: str, secret_file: Path | None, create: bool = False,
          read_only: bool = False) -> jobs.History:
    """Open the history; what opening warns of (an upgrade and where the old history was
    copied, a secret kept beside the history, releases changed without the secret, and
    read-only each pending release, left for ``recover``) is one ``warning:`` line each on
    stderr."""
    return jobs.History(history, secret_file=secret_file, create=create, read_only=read_only,
                        warn=_warning)


def _shown(name: str) -> str:
    """A stored name as text, its control and format characters escaped."""
    return name if name.isprintable() else ascii(name)[1:-1]


_printable = jobs.printable_name


@click.group("release")
def release() -> None:
    """Publish a changing table release after release, with a history, and audit the
    releases against each other."""


# -- publish -------------------------------------------------------------------------------


@release.command("publish")
@click.argument("input_path", metavar="INPUT", required=False)
@source_options
@click.option("--dataset", help="Name of the changing table.")
@click.option("--key",
              help="Column naming each record stably across releases (stored only as a "
                   "keyed hash; never released).")
@click.option("--config", "config_path", type=click.Path(path_type=Path),
              help="A TOML job file (the keys of anonymize's, plus dataset and key, at the "
                   "top or in a [publish] table); command-line options override it.")
@role_options
@reading_options
@order_option
@method_options
@click.option("--option", "options", multiple=True, metavar="NAME=VALUE",
              help="A method option by its name, e.g. strategy=entropy (repeatable; "
                   "checked like the option itself).")
@click.option("-o", "--output",
              help=f"Where to write the release ({OUTPUT_SUFFIXES_HELP}).")
@click.option("--allow-breach", is_flag=True,
              help="Publish even if the new release, together with earlier ones, breaches "
                   "a record. By default such a release is refused: nothing is written and "
                   "the exit code is 3.")
@click.option("--new-lineage", is_flag=True,
              help="Publish even though the release shares records with another dataset of "
                   "the history (whose releases it is never audited with). By default such a "
                   "release is refused with exit code 3; the decision is recorded and shown "
                   "by show and audit.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the published release (its history row and its utility figures) "
                   "as JSON; a refused one's findings.")
@click.option("--report", type=click.Path(path_type=Path),
              help="Write the release's HTML sign-off report here (anonymize's report and "
                   "the release's place in the history); written only if it is published.")
@neutralize_option
@_judgement_options("Publish", "count as exposed")
@_history_options
@_errors
def publish_cmd(input_path: str | None, table: str | None, query: str | None,
                dataset: str | None, key: str | None,
                config_path: Path | None, qi: str | None,
                sensitive: str | None, identifiers: str | None, hierarchies: tuple[str, ...],
                kinds: tuple[str, ...], method: str | None, options: tuple[str, ...],
                output: str | None, allow_breach: bool, new_lineage: bool, history: str,
                secret_file: Path | None, insensitive: str | None = None,
                drop: str | None = None, as_json: bool = False,
                report: Path | None = None, neutralize_formulas: bool = False,
                exact_seconds: float = jobs.EXACT_SECONDS, accept_tampered: bool = False,
                **method_values: object) -> None:
    """Anonymize INPUT and publish it as the next release of --dataset. Every column needs
    a role (--qi, --sensitive, --id, --insensitive, --drop; the key is never released).
    Safety switches (--allow-breach, --new-lineage) are given on the command line only."""
    given = {"input": str(input_path) if input_path else None,
             "output": str(output) if output else None, "dataset": dataset, "key": key,
             "quasi_identifiers": qi, "sensitive": sensitive, "identifiers": identifiers,
             "insensitive": insensitive, "drop": drop, "method": method,
             "hierarchy_pairs": hierarchies, "kind_pairs": kinds,
             "neutralize_formulas": neutralize_formulas or None,
             "report": str(report) if report else None,
             "job_file": str(config_path) if config_path else None,
             "table": table, "query": query} | reading_given(method_values)
    for name in READING_PARAMETERS:
        method_values.pop(name, None)
    cli_options = given_method_options(method_values)
    config = load_config(config_path, "publish", jobs.PUBLISH_FIELDS)
    chosen = jobs.find_method(str(given["method"] or config.get("method") or "mondrian"))
    for name, value in parse_pairs(options, "option").items():
        name = name.replace("-", "_")
        option = chosen.option(name)
        cli_options[name] = [*cli_options.get(name, []), value] \
            if option is not None and option.multiple else value  # type: ignore[misc]
    job = jobs.job_from(config, given, cli_options, jobs.PUBLISH_KEYS)
    prepared = jobs.read_publish_job(job, history=history, secret_file=secret_file,
                                     command=command_line())
    target = prepared.output
    figures: dict[str, float] = {}
    caught: list[warnings.WarningMessage] = []
    try:
        with _open(history, secret_file, create=True) as opened, \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", jobs.GateOverriddenWarning)
            try:
                info = opened.publish_job(prepared, allow_breach=allow_breach,
                                          new_lineage=new_lineage, metrics=figures,
                                          exact_seconds=exact_seconds,
                                          accept_tampered=accept_tampered)
            except jobs.CrossReleaseBreachError as exc:
                # the message is one line; the findings (pseudonyms, never keys) on request
                if as_json:
                    click.echo(json.dumps({"refused": True, "message": str(exc),
                                           "gate": exc.report.to_dict() if exc.report
                                           else None, "details": exc.details}, indent=1,
                                          default=str))
                raise
    finally:
        for w in caught:
            if issubclass(w.category, jobs.GateOverriddenWarning | AnonkitWarning):
                click.echo(f"warning: {w.message}", err=True)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    status = jobs.recorded_status(info)
    if as_json:
        click.echo(json.dumps(info.to_dict() | {"status": status, "metrics": figures,
                                                "report": prepared.report}, indent=1,
                              default=str))
        return
    click.echo(f"published release {info.seq} of {info.dataset!r}: {info.n_released_rows} "
               f"rows in {info.n_classes} classes -> {info.output_path} "
               f"(sha256 {info.content_hash[:16]}...)")
    if status == jobs.NO_FORMAL_GUARANTEE:
        click.echo(f"  status: {jobs.NO_FORMAL_GUARANTEE_TEXT}")
    for verdict in info.verdicts:
        click.echo(f"  {_verdict_line(verdict)}")
    for line in _own_lineage(info.dataset, info.seq, info.lineage):
        click.echo(f"  {line}")
    click.echo(f"  {_gate_text(info)}")
    if "count_query.relative_error" in figures:
        click.echo(f"  utility: COUNT query error {figures['count_query.relative_error']:.2%} "
                   f"(mean relative error of {int(figures['count_query.queries'])} random "
                   f"queries over QI ranges x sensitive value)")
    if "m_invariance.counterfeits" in figures:
        click.echo(f"  counterfeit rows: {int(figures['m_invariance.counterfeits'])}, in "
                   f"{int(figures['m_invariance.classes_with_counterfeits'])} classes "
                   f"(per class in {target.stem}.counterfeits{target.suffix})")
    if prepared.report is not None:
        click.echo(f"report written to {prepared.report}")


def _verdict_line(verdict: dict[str, object]) -> str:
    """A recorded verdict in one line, with what its measure means (``measured
    min(distinct/k, range/e) = 1``): the level rounded for reading, the threshold exact."""
    passed = bool(verdict.get("passed"))
    measure = verdict.get("measure") or "level"
    required = verdict.get("required")
    text = (f"{'PASS' if passed else 'FAIL'} {verdict['model']} "
            f"({jobs.format_parameters(dict(verdict['parameters']))}): measured {measure} = "  # type: ignore[call-overload]
            f"{measured_text(verdict['measured'], required, passed)}")
    if required is not None:
        text += f", required {measure} {verdict.get('comparison', '>=')} {exact_number(required)}"
    return text


# -- the gate --------------------------------------------------------------------------------


def _gate_text(info: ReleaseInfo) -> str:
    """What the publish-time gate found, in one line."""
    return jobs.gate_text(info.gate, info.seq)


# -- lineage ---------------------------------------------------------------------------------


def _shared_text(entry: dict[str, object]) -> str:
    seqs = entry.get("releases") or []
    unmatched = entry.get("unmatched_releases") or []
    text = f"{entry.get('records', 0)} records with {_printable(str(entry.get('dataset')))}"
    if seqs:
        text += f" (releases {', '.join(map(str, seqs))})"  # type: ignore[call-overload]
    if unmatched:
        text += (f", possibly more with its releases "
                 f"{', '.join(map(str, unmatched))} (migrated: not matchable)")  # type: ignore[call-overload]
    return text


def _own_lineage(dataset: str, seq: int, lineage: dict[str, object] | None) -> list[str]:
    """The lineage decision recorded with release ``seq`` of ``dataset``, as lines."""
    if lineage is None:
        return ["lineage: not checked (recorded before the history kept history-wide "
                "pseudonyms)"]
    shared = lineage.get("shared") or []
    if not shared:
        return (["lineage: published with --new-lineage; shares no records with other "
                 "datasets"] if lineage.get("new_lineage") else [])
    lines = []
    for entry in shared:  # type: ignore[attr-defined]
        sep = entry.get("separated_by") or {}
        here = sep.get("dataset") == dataset and sep.get("seq") == seq
        how = ("declared a separate lineage by this release (--new-lineage)" if here else
               f"a separate lineage since release {sep.get('seq')} of "
               f"{_printable(str(sep.get('dataset')))} (--new-lineage)")
        lines.append(f"lineage: shares {_shared_text(entry)}; {how}: not audited together")
    return lines


def _lineage_lines(notes: list[dict[str, object]], dataset: str) -> list[str]:
    """The lineage notes of ``dataset`` (:meth:`anonkit.jobs.History.lineage_notes`), as
    lines: its releases' own decisions, then other datasets' releases sharing records."""
    lines = []
    unchecked = [int(n["seq"]) for n in notes  # type: ignore[call-overload]
                 if n["dataset"] == dataset and not n["checked"]]
    if unchecked:
        lines.append(f"lineage: releases {', '.join(map(str, unchecked))} were recorded "
                     f"before the history kept history-wide pseudonyms: whether other "
                     f"datasets share their records is unknown")
    for n in notes:
        if not n["checked"]:
            continue
        own = _own_lineage(str(n["dataset"]), int(n["seq"]),  # type: ignore[call-overload]
                           n["lineage"])  # type: ignore[arg-type]
        prefix = (f"release {n['seq']} " if n["dataset"] == dataset
                  else f"release {n['seq']} of {_printable(str(n['dataset']))} ")
        lines += [prefix + line for line in own]
    return lines


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
    """List the releases in the history (read-only)."""
    with _open(history, secret_file, read_only=True) as opened:
        infos = opened.releases(dataset)
    if as_json:
        rows = [i.to_dict() | {"gate_overridden": i.gate_overridden}
                | ({"file_status": i.file_status()} if verify else {}) for i in infos]
        click.echo(json.dumps(rows, indent=1, default=str))
        return
    if not infos:
        click.echo("the history has no releases yet")
        return
    header = ["dataset", "seq", "published (UTC)", "method", "kind", "rows", "classes",
              "models", "gate", "file"] + (["status"] if verify else [])
    table = [header]
    for i in infos:
        gate = ("OVERRIDDEN" if i.gate_overridden else "passed" if i.gate is not None
                else "-")
        row = [_shown(i.dataset), str(i.seq), i.created_at.strftime("%Y-%m-%d %H:%M:%S"), i.method,
               i.release_kind, str(i.n_released_rows), str(i.n_classes), _models(i), gate,
               i.output_path]
        table.append(row + ([i.file_status()] if verify else []))
    widths = [max(len(r[c]) for r in table) for c in range(len(header))]
    for r in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


@release.command("show")
@click.argument("dataset")
@click.argument("seq", type=click.IntRange(1, 2**63 - 1))
@click.option("--classes", "n_classes", type=int, default=10, show_default=True,
              help="How many equivalence classes to print.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--report", type=click.Path(path_type=Path),
              help="Rebuild the release's HTML sign-off report from the history and write it "
                   "here (never over the history or a release it records).")
@_history_options
@_errors
def show_cmd(dataset: str, seq: int, n_classes: int, as_json: bool, history: str,
             secret_file: Path | None, report: Path | None = None) -> None:
    """Show release SEQ of DATASET: how it was made and what an adversary sees in it
    (read-only; --report writes only the report)."""
    with _open(history, secret_file, read_only=True) as opened:
        details = opened.details(dataset, seq)
        if report is not None:
            opened.write_report(dataset, seq, report, command=command_line())
    info, view, auxiliary, has_state = (details.info, details.view, details.auxiliary,
                                        details.method_state)
    status = info.file_status()
    sizes = view.sizes
    counterfeits = int(view.counterfeits.sum())
    if as_json:
        out = info.to_dict() | {
            "status": jobs.recorded_status(info), "report": report,
            "gate_overridden": info.gate_overridden, "file_status": status,
            "counterfeits": counterfeits, "auxiliary": auxiliary,
            "method_state": has_state,
            "class_sizes": {"min": int(sizes.min()), "median": float(_median(sizes)),
                            "max": int(sizes.max())} if len(sizes) else {},
            "classes": view.labels.head(n_classes).assign(
                size=sizes[:n_classes], counterfeits=view.counterfeits[:n_classes])
            .to_dict(orient="records")}
        click.echo(json.dumps(out, indent=1, default=str))
        return
    lines = [
        f"release {info.seq} of {info.dataset!r}",
        f"  published     {info.created_at.isoformat()} (anonkit {info.anonkit_version})",
        f"  method        {info.method}" + (" (seeded: its randomness came from a given "
                                                "seed)" if info.seeded else ""),
        f"  kind          {info.release_kind}" + (
            f" (groups in {info.group_column!r})" if info.group_column else ""),
        f"  threat model  {info.threat_model}",
        f"  status        {jobs.recorded_status(info).upper()}"
        + (f": {jobs.NO_FORMAL_GUARANTEE_TEXT}"
           if jobs.recorded_status(info) == jobs.NO_FORMAL_GUARANTEE else ""),
        f"  parameters    {json.dumps(info.parameters, default=str)}",
        f"  key column    {info.key_column} (stored as HMAC-SHA256 pseudonyms)",
        f"  QIs           {', '.join(info.quasi_identifiers)}",
        f"  sensitive     {', '.join(info.sensitive) or '-'}",
        f"  rows          {info.n_input_rows} in, {info.n_released_rows} released" + (
            f" ({counterfeits} counterfeit)" if counterfeits else ""),
        f"  classes       {info.n_classes}" + (
            f" (size min {int(sizes.min())}, median {_median(sizes):g}, max "
            f"{int(sizes.max())})" if len(sizes) else ""),
        f"  file          {info.output_path} ({status})",
        f"  sha256        {info.content_hash}",
    ]
    if auxiliary or has_state:
        lines.append(f"  kept beside   {', '.join(auxiliary) or '-'}"
                     + ("; the method's state" if has_state else ""))
    lines += [f"  {line}" for line in _own_lineage(info.dataset, info.seq, info.lineage)]
    lines.append(f"  {_gate_text(info)}")
    lines.append("  verdicts")
    lines += [f"    {_verdict_line(v)}" for v in info.verdicts]
    lines.append("  across releases")
    lines += [f"    {r.model}{f' on {r.attribute!r}' if r.attribute else ''}: {r.describe()}"
              for r in details.requirements]
    lines += [f"    {model}: {jobs.EXACT_ONLY}" for model in details.exact_only]
    if n_classes > 0 and len(sizes):
        lines.append(f"  first {min(n_classes, len(sizes))} classes (size, labels)")
        for c in range(min(n_classes, len(sizes))):
            labels = ", ".join(f"{q}={view.labels.iloc[c][q]}" for q in view.labels.columns)
            lines.append(f"    {c:>6}  {int(sizes[c]):>5}  {labels}")
    if report is not None:
        lines.append(f"report written to {report}")
    click.echo("\n".join(lines))


def _median(sizes: object) -> float:
    import numpy as np

    return float(np.median(np.asarray(sizes)))


# -- audit -----------------------------------------------------------------------------------


@release.command("audit")
@click.option("--dataset", required=True, help="The dataset whose releases to audit.")
@click.option("--report", "report_path", type=click.Path(path_type=Path), default=None,
              help="Write an HTML report (breaches per release, plotted).")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.option("--release", "focus", type=click.IntRange(1, 2**63 - 1), default=None,
              help="Only the records of this release number.")
@click.option("--pairs", is_flag=True,
              help="Also audit every pair of releases on its own (each pair is "
                   "intersected from its two releases: the time grows with the square of "
                   "the number of releases).")
@click.option("-k", "k", type=click.IntRange(min=1), default=None,
              help="Candidates needed, a whole number as every other -k (default: the "
                   "releases' k-anonymity k).")
@click.option("-l", "l_", type=click.IntRange(min=1), default=None,
              help="Distinct sensitive values needed (default: the releases' l).")
@click.option("-e", "e", type=float, default=None,
              help="Sensitive range needed (default: the releases' (k,e) e).")
@click.option("--worst", type=click.IntRange(min=0), default=5, show_default=True,
              help="Records shown per finding (pseudonyms, most exposed first).")
@_judgement_options("Audit", "are reported as not ruled out")
@_history_options
@_audit_errors
def audit_cmd(dataset: str, report_path: Path | None, as_json: bool, focus: int | None,
              pairs: bool, k: float | None, l_: float | None, e: float | None, worst: int,
              exact_seconds: float, accept_tampered: bool, history: str,
              secret_file: Path | None) -> None:
    """Judge every record of --dataset over all the releases that contain it; exit 3 on any
    breach, 2 on bad input, 1 if the audit itself failed (read-only). A gate tests the exit
    code != 0."""
    with _open(history, secret_file, read_only=True) as opened:
        # (the report is refused before the audit if it would overwrite what the history
        # holds, and written after it)
        report = opened.audit(dataset, k=k, l=l_, e=e, focus=focus, pairs=pairs, worst=worst,
                             exact_seconds=exact_seconds, accept_tampered=accept_tampered,
                             report=report_path, command=command_line())
        notes = opened.lineage_notes(dataset)
    if as_json:
        click.echo(json.dumps(report.to_dict() | {"lineage": notes}, indent=1, default=str))
    else:
        click.echo(report.summary())
        for line in _lineage_lines(notes, dataset):
            click.echo(line)
        if report_path is not None:
            click.echo(f"report: {report_path}")
    if report.breached:
        sys.exit(BREACH_EXIT)


# -- recover ---------------------------------------------------------------------------------


@release.command("recover")
@click.option("--accept-tampered", is_flag=True,
              help="Accept the history as it is now although its releases do not match "
                   "their authentication (changed without the secret): authenticate them "
                   "again. Restoring a backup is the better cure.")
@_history_options
@_errors
def recover_cmd(history: str, secret_file: Path | None, accept_tampered: bool = False) -> None:
    """Finish what a killed publisher left half done (move a committed release's file to
    its name), and upgrade a history of an older format (keeping a copy of it). The next
    publish does the same; list, show and audit never write."""

    def sealed(n: int) -> None:
        click.echo(f"accepted the history as it is now: {n} releases authenticated again",
                   err=True)

    with _open(history, secret_file) as opened:  # opening writable upgrades and recovers
        done = opened.recover(accept_tampered=accept_tampered, on_sealed=sealed)
    for line in done.recovered:
        click.echo(f"recovered {line}")
    if done.pending:
        for info in done.pending:
            click.echo(f"release {info.seq} of {_printable(info.dataset)} is still pending: "
                       f"its file is neither at {info.pending_path} nor at "
                       f"{info.output_path}", err=True)
        sys.exit(1)
    click.echo(f"the history {history} is complete: no pending release")


if __name__ == "__main__":  # pragma: no cover
    release()
