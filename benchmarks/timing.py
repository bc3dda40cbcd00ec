"""Timing shared by the benchmark scripts (run from the repository root as
``python benchmarks/<script>.py``: this folder is then on the import path)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], repeat: int = 3) -> tuple[float, object]:
    """The best wall-clock seconds of ``repeat`` calls of ``fn``, and its last result."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out
