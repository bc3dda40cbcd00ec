"""``python -m anonkit``: the command line."""

from anonkit.cli import run

run()
