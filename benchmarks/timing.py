"""Timing shared by the benchmark scripts (run from the repository root as
``python benchmarks/<script>.py``: this folder is then on the import path)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence


def best_of(fn: Callable[[], object], repeat: int = 3) -> tuple[float, object]:
    """The best wall-clock seconds of ``repeat`` calls of ``fn``, and its last result."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def print_table(title: str, rows: Sequence[Sequence[str]],
                header: Sequence[str] = ("task", "seconds", "target", "notes")) -> None:
    """``title`` with the load average, then ``rows`` as aligned columns under ``header``."""
    print(f"{title}; load average {os.getloadavg()[0]:.2f} (2-core reference machine)")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
