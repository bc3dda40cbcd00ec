"""Randomness that protects privacy: permutations within groups, counterfeit placement,
randomised release, row order.

It comes from the operating system's entropy and is never recorded: a recorded seed would
let anyone who reads the history replay the permutation. A seed may be given for tests and
reproducible studies only; releases made with one say so (``Release.seeded``), and the
history records that a seed was used, never the seed.
"""

from __future__ import annotations

import secrets

import numpy as np


def privacy_rng(seed: int | None = None) -> tuple[np.random.Generator, bool]:
    """A random generator for privacy randomness, and whether it was seeded: from ``seed``
    when given (tests and studies), otherwise from 128 bits of operating-system entropy."""
    if seed is None:
        return np.random.default_rng(secrets.randbits(128)), False
    return np.random.default_rng(seed), True
