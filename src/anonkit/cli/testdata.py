"""``anonkit testdata``: behaviour-preserving anonymized test data for a Python function.

The work is :func:`anonkit.jobs.generate_testdata` and :func:`anonkit.jobs.write_testdata`.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from anonkit.cli.common import (
    OUTPUT_SUFFIXES_HELP,
    command_line,
    neutralize_option,
    run_body,
)


@click.command("testdata")
@click.option("--program", required=True, metavar="FILE.py:FUNCTION",
              help="The function under test; it takes the record's fields as keyword "
                   "arguments. It runs with your own rights, top level included, in "
                   "guarded worker processes (see below).")
@click.option("--data", "data_path", required=True, metavar="FILE",
              help="The raw table (CSV or Parquet); column names are the parameter names.")
@click.option("-k", "k", required=True, type=int,
              help="Each released tuple stands for a group of at least k raw tuples.")
@click.option("--configuration", "option", default="P-T", show_default=True,
              type=click.Choice(["P-F", "P-T", "I-T"]),
              help="kb-anonymity's configuration: P-F: no released field value repeats the "
                   "raw data; P-T: no released tuple does; I-T: as P-T, keeping the "
                   "k-group's concrete fields.")
# the earlier name, kept working but not shown: in `release publish`, --option means a
# method option (NAME=VALUE), and one flag must not mean two things in the help
@click.option("--option", "option", hidden=True,
              type=click.Choice(["P-F", "P-T", "I-T"]))
@click.option("-o", "--output", required=True,
              help=f"Where to write the tuples ({OUTPUT_SUFFIXES_HELP}).")
@click.option("--report", type=click.Path(path_type=Path), help="Write an HTML report here.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@neutralize_option
@click.option("--seed", type=int, help="Seed the random choices (tests only).")
@click.option("--type", "types", multiple=True, metavar="COLUMN=TYPE",
              help="Declare a field's type: bool, int, float or str (repeatable).")
@click.option("--pf-scope", default="bucket", show_default=True,
              type=click.Choice(["bucket", "table"]),
              help="P-F: values must be new to the tuple's bucket or to the whole table.")
@click.option("--opt-out", default="", metavar="A,B",
              help="P-F: fields exempt from the new-value rule, comma-separated.")
@click.option("--field-choice", default="largest", show_default=True,
              type=click.Choice(["largest", "random"]),
              help="P-T / I-T: which field gets a new value first.")
@click.option("--it-mode", default="equal", show_default=True,
              type=click.Choice(["equal", "distinct"]),
              help="I-T: keep the k-group's concrete fields (equal, the paper) or make them "
                   "differ (distinct, a stricter variant).")
@click.option("--time-limit", default=2.0, show_default=True, type=float,
              help="Seconds allowed per run of the program on one tuple, and for "
                   "loading its top level.")
@click.option("--max-decisions", default=2000, show_default=True, type=int,
              help="Branch decisions allowed per path (bounds data-dependent loops).")
@click.option("--workers", type=int, help="Worker processes (default 2).")
def testdata(program: str, data_path: str, k: int, option: str, output: str,
             report: Path | None, as_json: bool, neutralize_formulas: bool,
             seed: int | None, types: tuple[str, ...],
             pf_scope: str, opt_out: str, field_choice: str, it_mode: str, time_limit: float,
             max_decisions: int, workers: int | None) -> None:
    """Release test data that drives PROGRAM down the same paths as the raw tuples
    (kb-anonymity), without repeating them.

    The program (its top level too) runs only in worker processes, each run and the load
    under --time-limit, with a guard that refuses writing, creating, linking or deleting
    files, starting processes, exiting the worker, ctypes/cffi and the network. A run that
    tries one is reported as refused (naming the operation) and left out; a top level
    that does, or overruns the limit, stops the command with exit 2 and nothing written.

    The guard stops accidents, NOT an adversary: it rests on CPython audit hooks, which
    code written to get round them can bypass. On Linux with Landlock the workers are
    also kernel-confined (no file written, created or deleted, no program executed; no
    TCP from Linux 6.7); elsewhere they are not. Run only programs you would run directly.

    Exits 0 when tuples were released, 2 on bad input, when the program cannot be loaded
    or when nothing could be released.
    """

    def body() -> int:
        from anonkit import jobs

        result = jobs.generate_testdata(
            program, data_path, k, option, output=output, report=report, seed=seed,
            types=types, pf_scope=pf_scope, opt_out=opt_out, field_choice=field_choice,
            it_mode=it_mode, time_limit=time_limit, max_decisions=max_decisions,
            workers=workers)
        if as_json:
            click.echo(json.dumps(result.to_dict(), indent=2, default=str))
        jobs.write_testdata(result, output, report=report, program=program,
                            neutralize_formulas=neutralize_formulas, data=data_path,
                            command=command_line())
        if not as_json:
            click.echo(f"released {len(result.release.data)} tuples for "
                       f"{sum(1 for b in result.buckets if b.released)} of "
                       f"{len(result.buckets)} paths; coverage {result.coverage:.1%} of "
                       f"{int(result.stats['raw_tuples'])} raw tuples; "
                       f"{len(result.failures)} could not be traced")
            click.echo(f"written: {Path(output).resolve()}")
        return 0

    run_body(body)
