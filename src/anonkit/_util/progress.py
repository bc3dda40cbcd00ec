"""How far a long step is, and the one style of bar that shows it on a terminal.

A :class:`Meter` is advanced by whoever does the work (the CSV reader counts the bytes it
hands to the parser; the Dask engine counts the parts done) and read by whoever draws it
(the command line's bar, the web app's page): plain integers, so no lock is needed for a
reader that only shows them.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (tqdm is imported when a bar is drawn: a command that draws none
    from tqdm import tqdm  # does not pay for it)


@dataclass
class Meter:
    """``done`` of ``total`` ``unit`` (total None: not known, e.g. a compressed file's
    decompressed size)."""

    total: int | None = None
    done: int = 0
    unit: str = "B"

    def advance(self, amount: int) -> None:
        self.done += amount


def terminal_bar(name: str, total: int | None, unit: str = "rows") -> tqdm:
    """A bar on standard error: the step's name, then its count (bytes in KiB, MiB ...)."""
    from tqdm import tqdm

    # a terminal that reports no size (a fresh pseudo-terminal) would get no bar at all
    size = shutil.get_terminal_size((100, 24))
    in_bytes = unit == "B"
    return tqdm(total=total or None, desc=f"{name:<13}", unit=unit if in_bytes else f" {unit}",
                unit_scale=in_bytes or unit == "rows", unit_divisor=1024 if in_bytes else 1000,
                file=sys.stderr, leave=True, ncols=min(size.columns or 100, 120),
                nrows=max(size.lines, 24), mininterval=0.1)
