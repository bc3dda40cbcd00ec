"""``anonkit check``: any released table, judged against privacy models."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from anonkit._util.options import as_list
from anonkit.cli.common import (
    READING_PARAMETERS,
    command_line,
    given_method_options,
    model_options,
    reading_engine_options,
    reading_given,
    reading_options,
    run_body,
    source_options,
)


@click.command()
@click.argument("input_path", metavar="INPUT")
@source_options
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
@click.option("--suppression", type=float, metavar="SHARE",
              help="The release suppresses rows whole (every QI '*', as --method global "
                   "does), at most this share of them: those rows are one class exempt "
                   "from the models, counted against the share.")
@click.option("--report", type=click.Path(path_type=Path), help="Write an HTML report here.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@reading_engine_options
def check(input_path: str, table: str | None, query: str | None, qi: str,
          sensitive: str | None, group_column: str | None, suppression: float | None,
          kinds: tuple[str, ...], report: Path | None, as_json: bool, engine: str | None,
          workers: int | None, scheduler: str | None, **model_values: object) -> None:
    """Check any released table (ours or another tool's) against privacy models.

    Every column is read as the text it holds: rows are in one class exactly when their
    quasi-identifier cells are the same text (02139, 2139 and 2139.0 are three labels), and
    sensitive columns are categorical unless --kind declares them otherwise.

    Exits 0 when every model holds and 2 when any fails.
    """

    def body() -> int:
        from anonkit import jobs

        reading = {k: v for k, v in (reading_given(model_values)
                                     | {"table": table, "query": query}).items()
                   if v is not None}
        for name in READING_PARAMETERS:
            model_values.pop(name, None)
        outcome = jobs.check_file(input_path, as_list(qi), as_list(sensitive),
                                  options=given_method_options(model_values), source="cli",
                                  kinds=kinds, group_column=group_column, reading=reading,
                                  report=report, engine=engine, workers=workers,
                                  scheduler=scheduler,
                                  cluster_progress=not as_json and sys.stderr.isatty(),
                                  command=command_line(), suppression=suppression)
        click.echo(json.dumps(outcome.to_dict(), indent=2, default=str) if as_json
                   else str(outcome))
        return 0 if outcome.passed else 2

    run_body(body)
