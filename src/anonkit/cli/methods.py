"""``anonkit methods``: the anonymization methods and their options."""

from __future__ import annotations

import click


@click.command("methods")
def methods_cmd() -> None:
    """List the anonymization methods and their options."""
    from anonkit import jobs

    click.echo(jobs.methods_help())
