"""Complexity guards for tests: how much longer a 10x larger input takes, measured in one
run. Tests never assert absolute seconds (speed targets live in benchmarks/): a loaded
machine slows both sizes alike, a quadratic step slows the large one 100-fold."""

from __future__ import annotations

import time
from collections.abc import Callable

#: a 10x larger input may take at most this many times longer: linear work takes about 10x
#: (fixed costs make it less), a quadratic step about 100x
GROWTH_BOUND = 30.0


def best_time(fn: Callable[[], object], runs: int = 2) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def growth(small: Callable[[], object], large: Callable[[], object], runs: int = 2) -> float:
    """How many times longer ``large`` (10x the input of ``small``) takes, best of
    ``runs`` each, after one warm-up call of ``small``."""
    small()
    return best_time(large, runs) / max(best_time(small, runs), 1e-6)
