"""``anonkit risk``: the re-identification risk of any table, as statistical offices measure
it (sample and population uniques, individual, global and household risk)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from anonkit.cli.common import (
    READING_PARAMETERS,
    command_line,
    reading_given,
    reading_options,
    run_body,
    source_options,
)


@click.command()
@click.argument("input_path", metavar="INPUT")
@source_options
@click.option("--qi", required=True, help="Quasi-identifiers, comma-separated.")
@click.option("--sampling-fraction", type=float, metavar="F",
              help="The table is a sample of this fraction of the population (0 < F <= 1): "
                   "population uniques are estimated (Pitman, Zayatz, SNB; Dankar et al.'s "
                   "rule picks one).")
@click.option("--population-size", type=float, metavar="N",
              help="Or the population's size (the fraction is then rows / N).")
@click.option("--weight", metavar="COLUMN",
              help="Survey weights: each record stands for that many people (individual and "
                   "global risk, Benedetti-Franconi as sdcMicro's measure_risk).")
@click.option("--household", metavar="COLUMN",
              help="Each record's household (with --weight): a household's risk is the "
                   "chance one of its members is re-identified.")
@click.option("--max-msu", type=click.IntRange(0), default=5, show_default=True,
              help="SUDA2: look for minimal sample uniques of at most this many QIs (0: no "
                   "SUDA2).")
@reading_options
@click.option("--report", type=click.Path(path_type=Path),
              help="Write an HTML report here (its input's SHA-256 and the command in it).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def risk(input_path: str, table: str | None, query: str | None, qi: str,
         sampling_fraction: float | None,
         population_size: float | None, weight: str | None, household: str | None,
         max_msu: int, report: Path | None, as_json: bool,
         **reading_values: object) -> None:
    """Measure the re-identification risk of INPUT (raw or released, ours or another
    tool's): its sample uniques, its special uniques (SUDA2, DIS-SUDA) and, given the
    sampling fraction, its estimated population uniques; given survey weights, every
    record's individual risk and the global risk.
    Records at risk are named by row number (0: the first data row), never by value."""

    def body() -> int:
        from anonkit import jobs

        reading = {k: v for k, v in (reading_given(reading_values)
                                     | {"table": table, "query": query}).items()
                   if v is not None}
        for name in READING_PARAMETERS:
            reading_values.pop(name, None)
        measured = jobs.risk_file(input_path, qi, reading=reading,
                                  sampling_fraction=sampling_fraction,
                                  population_size=population_size, weight=weight,
                                  household=household, max_msu=max_msu or None,
                                  report=report, command=command_line())
        click.echo(json.dumps(measured.to_dict(), indent=2) if as_json else str(measured))
        if report is not None and not as_json:
            click.echo(f"report written to {report}")
        return 0

    run_body(body)
