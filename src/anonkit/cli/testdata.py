"""``anonkit testdata``: behaviour-preserving anonymized test data for a Python function.

Only composes :func:`anonkit.testdata.generate`, :meth:`Release.write` and the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


@click.command("testdata")
@click.option("--program", required=True, metavar="FILE.py:FUNCTION",
              help="The function under test; it takes the record's fields as keyword "
                   "arguments. It runs with your own rights (it is not sandboxed).")
@click.option("--data", "data_path", required=True, metavar="FILE",
              help="The raw table (CSV or Parquet); column names are the parameter names.")
@click.option("-k", "k", required=True, type=int,
              help="Each released tuple stands for a group of at least k raw tuples.")
@click.option("--option", "option", default="P-T", show_default=True,
              type=click.Choice(["P-F", "P-T", "I-T"]),
              help="P-F: no released field value repeats the raw data; P-T: no released "
                   "tuple does; I-T: as P-T, keeping the k-group's concrete fields.")
@click.option("-o", "--output", required=True, help="Where to write the tuples (.csv, .parquet).")
@click.option("--report", type=click.Path(path_type=Path), help="Write an HTML report here.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
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
                   "differ (distinct, the specification document's !=).")
@click.option("--time-limit", default=2.0, show_default=True, type=float,
              help="Seconds allowed per run of the program on one tuple.")
@click.option("--max-decisions", default=2000, show_default=True, type=int,
              help="Branch decisions allowed per path (bounds data-dependent loops).")
@click.option("--workers", type=int, help="Worker processes (default 2).")
def testdata(program: str, data_path: str, k: int, option: str, output: str,
             report: Path | None, as_json: bool, seed: int | None, types: tuple[str, ...],
             pf_scope: str, opt_out: str, field_choice: str, it_mode: str, time_limit: float,
             max_decisions: int, workers: int | None) -> None:
    """Release test data that drives PROGRAM down the same paths as the raw tuples
    (kb-anonymity), without repeating them.

    Exits 0 when tuples were released, 2 on bad input or when nothing could be released.
    """
    from anonkit.cli import _run

    def body() -> int:
        from anonkit._util.options import parse_pairs
        from anonkit.data.io import check_output_path, output_format
        from anonkit.errors import InputError
        from anonkit.testdata import Limits, generate
        from anonkit.testdata.report import to_json, write_html

        check_output_path(data_path, output)
        if report is not None:
            check_output_path(data_path, report)
        if time_limit <= 0 or max_decisions < 1:
            raise InputError("--time-limit must be positive and --max-decisions at least 1")
        declared: dict[str, Any] = dict(parse_pairs(types, "type")) if types else {}
        result = generate(program, data_path, k, option, types=declared, pf_scope=pf_scope,
                          opt_out=[f.strip() for f in opt_out.split(",") if f.strip()],
                          field_choice=field_choice, it_mode=it_mode, seed=seed,
                          limits=Limits(time_limit=time_limit, max_decisions=max_decisions),
                          workers=workers)
        if report is not None:
            write_html(result, program, report)
        if as_json:
            click.echo(to_json(result))
        if len(result.release.data) == 0:
            reasons = sorted({b.reason for b in result.buckets if b.reason})
            raise InputError(f"no tuple could be released (nothing written): "
                             f"{'; '.join(reasons[:3]) or 'no path was traced'}")
        release = result.release
        if output_format(output) == "csv":
            # a float column whose values happen to be whole would read back as integers
            release.data = release.data.apply(
                lambda c: c.map(lambda v: repr(float(v))) if c.dtype.kind == "f" else c)
        release.write(output)
        if not as_json:
            click.echo(f"released {len(result.release.data)} tuples for "
                       f"{sum(1 for b in result.buckets if b.released)} of "
                       f"{len(result.buckets)} paths; coverage {result.coverage:.1%} of "
                       f"{int(result.stats['raw_tuples'])} raw tuples; "
                       f"{len(result.failures)} could not be traced")
            click.echo(f"written: {Path(output).resolve()}")
        return 0

    _run(body)
