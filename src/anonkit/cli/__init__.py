"""The ``anonkit`` command line. It parses arguments, prints and sets exit codes; the work
is :mod:`anonkit.jobs`'.

One module per command (``anonymize``, ``check``, ``methods``, ``demo``, the ``release`` and
``testdata`` groups), each imported only when its command runs or is listed, so a command
pays only for what it uses; what they share is in :mod:`anonkit.cli.common`.

Exit codes: 0 success; 2 bad input or a privacy model not met (nothing written);
1 internal error; ``release audit`` also uses 3 for "breaches found".
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import ClassVar

import click


class LazyGroup(click.Group):
    """A group whose subcommands are imported when used (or listed), so a plain
    ``anonkit anonymize`` does not pay for the history's database libraries."""

    lazy: ClassVar[dict[str, tuple[str, str]]] = {
        "anonymize": ("anonkit.cli.anonymize", "anonymize"),
        "check": ("anonkit.cli.check", "check"),
        "demo": ("anonkit.cli.demo", "demo"),
        "methods": ("anonkit.cli.methods", "methods_cmd"),
        "release": ("anonkit.cli.release", "release"),
        "risk": ("anonkit.cli.risk", "risk"),
        "serve": ("anonkit.cli.serve", "serve"),
        "testdata": ("anonkit.cli.testdata", "testdata"),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module, attribute = self.lazy[cmd_name]
            command: click.Command = getattr(importlib.import_module(module), attribute)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="anonkit")
@click.option("--mode", metavar="OCTAL",
              help="Permission bits of the files written (releases, reports, tables): 600, "
                   "the owner only, unless given here (e.g. 640). A file replaced keeps its "
                   "own.")
def main(mode: str | None) -> None:
    """anonkit: privacy-preserving data publishing with a release history."""
    if mode is not None:
        from anonkit import errors, jobs

        try:
            jobs.set_output_mode(mode)
        except errors.InputError as exc:
            click.echo(f"error: {exc}", err=True)
            raise SystemExit(2) from None


def run() -> None:
    """The ``anonkit`` console script: run the command, then leave without the
    interpreter's teardown.

    Shutting down Arrow's thread pools, freeing every object and unloading the extension
    libraries takes about 0.1 s, a sixth of a whole run on a table the size of UCI Adult. By
    then every output has been written to a temp file, fsynced and renamed (and the history
    committed), so there is nothing left to clean up; the standard streams are flushed first.
    """
    _tune_process()
    try:
        main()
        code: int = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # click and sys.exit("message") carry text: print it like Python would
            print(exc.code, file=sys.stderr)
            code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _tune_process() -> None:
    """Settings for a short process that allocates and frees hundreds of megabytes, made
    before numpy is loaded (side by side on a million rows, user CPU time fell by about a
    seventh).

    * numpy's BLAS starts a thread per core that spins while it waits; anonkit does no
      linear algebra, and on two cores those threads take time from the ones that work;
    * glibc maps every block above 128 KiB freshly from the kernel and returns it when
      freed, so each temporary array of a million rows is page-faulted and zeroed anew:
      keep blocks up to 32 MiB in the heap and the heap's free memory until exit.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(m_mmap_threshold, 32 << 20)
        libc.mallopt(m_trim_threshold, 1 << 30)
        libc.mallopt(m_top_pad, 64 << 20)
    except (OSError, AttributeError):  # not glibc: its defaults then
        pass


if __name__ == "__main__":
    run()
