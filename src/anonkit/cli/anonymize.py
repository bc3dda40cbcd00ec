"""``anonkit anonymize``: a verified release of a table, by a one-shot method."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from anonkit._util.parallel import in_background
from anonkit.cli.common import (
    OUTPUT_SUFFIXES_HELP,
    READING_PARAMETERS,
    Progress,
    command_line,
    engine_options,
    given_method_options,
    load_config,
    neutralize_option,
    one_shot_method_options,
    order_option,
    reading_given,
    reading_options,
    role_options,
    run_body,
    source_options,
    table_output_options,
)


@click.command()
@click.argument("input_path", metavar="INPUT", required=False)
@click.option("-o", "--output", help=f"Where to write the release ({OUTPUT_SUFFIXES_HELP}), "
                                     f"or a database URL with --output-table.")
@source_options
@table_output_options
@click.option("--config", "config_path", type=click.Path(path_type=Path),
              help="A TOML job file; command-line options override it.")
@role_options
@one_shot_method_options
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
@neutralize_option
@engine_options
def anonymize(input_path: str | None, output: str | None, table: str | None,
              query: str | None, output_table: str | None, replace: bool | None,
              config_path: Path | None,
              qi: str | None, sensitive: str | None, identifiers: str | None,
              hierarchies: tuple[str, ...], kinds: tuple[str, ...], insensitive: str | None,
              drop: str | None, method: str | None, shuffle: bool | None,
              report: Path | None, as_json: bool, verbose: bool,
              mkdir: bool, neutralize_formulas: bool, engine: str | None,
              workers: int | None, scheduler: str | None,
              **method_values: object) -> None:
    """Anonymize INPUT with a one-shot method (default: Mondrian) and write a verified
    release to OUTPUT."""

    def body() -> int:
        from anonkit import jobs

        given = {
            "input": input_path, "output": output, "quasi_identifiers": qi,
            "sensitive": sensitive, "identifiers": identifiers, "insensitive": insensitive,
            "drop": drop, "method": method, "shuffle": shuffle,
            "report": str(report) if report else None,
            "hierarchy_pairs": hierarchies, "kind_pairs": kinds,
            "engine": engine, "workers": workers, "scheduler": scheduler,
            "job_file": str(config_path) if config_path else None,
            "table": table, "query": query, "output_table": output_table,
            "replace": replace,
        } | reading_given(method_values)
        for key in READING_PARAMETERS:
            method_values.pop(key, None)
        job = jobs.job_from(load_config(config_path), given | {
            "mkdir": mkdir or None, "neutralize_formulas": neutralize_formulas or None},
                            given_method_options(method_values))
        if jobs.dask_chosen(job):
            outcome = jobs.anonymize_on_dask(job, not as_json and sys.stderr.isatty(),
                                             command=command_line())
        else:
            # pyarrow is imported here, then the file parsed in a thread (Arrow parses
            # without the GIL) while pandas and the method are imported: about as long each
            # (imports hold the GIL: two at a time would take as long as one after the other)
            from anonkit.jobs.reading import read_job_input

            qis = jobs.reading_qis(job)
            progress, meter = Progress(), jobs.Meter()
            progress.follow("reading", meter)  # the bytes read, against the file's size
            reading = in_background(read_job_input, job, qis, meter) \
                if qis is not None else None
            outcome = jobs.anonymize_file(job, progress.step, command=command_line(),
                                          reading=reading)
        if as_json:
            click.echo(json.dumps(outcome, indent=2, default=str))
        else:
            click.echo(outcome["full_summary"] if verbose else outcome["summary"])
            if outcome["released_unchanged"]:
                # a column nobody named is released as it is: say so, every time
                click.echo(f"released unchanged (insensitive): "
                           f"{', '.join(outcome['released_unchanged'])} -- name direct "  # type: ignore[call-overload]
                           f"identifiers with --id to drop them")
            click.echo(f"release written to {outcome['output']}")
            if outcome.get("report"):
                click.echo(f"report written to {outcome['report']}")
        return 0

    run_body(body)
