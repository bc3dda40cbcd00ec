"""``anonkit demo``: the bundled UCI Adult sample, anonymized end to end."""

from __future__ import annotations

from pathlib import Path

import click

from anonkit.cli.common import Progress, command_line, run_body


@click.command()
@click.option("-o", "--output", default="anonkit-demo", show_default=True,
              type=click.Path(path_type=Path), help="Folder for the demo's files.")
def demo(output: Path) -> None:
    """Anonymize the bundled UCI Adult sample and write release, verification and report."""

    def body() -> int:
        from anonkit import jobs

        outcome = jobs.demo(output, Progress().step, command=command_line(),
                            announce=click.echo)
        click.echo(outcome["summary"])
        click.echo(f"\nrelease:      {Path(str(outcome['output'])).resolve()}")
        click.echo(f"verification: {Path(str(outcome['verification'])).resolve()}")
        click.echo(f"report:       {Path(str(outcome['report'])).resolve()}")
        return 0

    run_body(body)
