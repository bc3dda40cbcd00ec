"""``python -m anonkit.cli``: the command line."""

from anonkit.cli import run

run()
