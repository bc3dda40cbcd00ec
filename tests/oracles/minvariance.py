"""m-invariance's perimeter split (spec 001), written plainly and in exact rationals: the
oracle of the kernel."""

from __future__ import annotations

import csv
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from oracles.labels import covers
from oracles.models import m_unique


def split_scores(lists: list[np.ndarray], ranges: np.ndarray, q: int, *,
                 weighted: bool = True) -> list[Fraction]:
    """The score of every split index ``i = 1 .. N - 1`` of one bucket's ``lists`` (one
    (N, Q) coordinate array per value) sorted by QI ``q``, as exact rationals (every float
    is one): the rule of spec 001 compares scores, not their roundings."""
    ordered = [lst[np.argsort(lst[:, q], kind="stable")] for lst in lists]
    spans = [Fraction(float(r)) if r > 0 else Fraction(1) for r in ranges]
    out = []
    for i in range(1, len(lists[0])):
        score = Fraction(0)
        for half in ([o[:i] for o in ordered], [o[i:] for o in ordered]):
            stacked = np.concatenate(half)
            perimeter = sum((Fraction(float(stacked[:, k].max())) -
                             Fraction(float(stacked[:, k].min()))) / span
                            for k, span in enumerate(spans))
            score += perimeter * (len(stacked) if weighted else 1)
        out.append(score)
    return out


def reference_split(lists: list[np.ndarray], ranges: np.ndarray, *, weighted: bool = True
                    ) -> list[list[np.ndarray]]:
    """The split rule written plainly, for tests: ``lists`` holds one (N, Q) coordinate array
    per value; returns the final classes, each as one coordinate row per list."""
    if len(lists[0]) == 1:
        return [[lst[0] for lst in lists]]
    # per QI its lowest score at its earliest split index; the lowest wins, the earlier QI
    # on a tie (tuples compare score first, then QI)
    candidates = []
    for q in range(lists[0].shape[1]):
        scores = split_scores(lists, ranges, q, weighted=weighted)
        i = scores.index(min(scores))  # the earliest of equal scores
        candidates.append((scores[i], q, i + 1))
    _, q, i = min(candidates)
    ordered = [lst[np.argsort(lst[:, q], kind="stable")] for lst in lists]
    return (reference_split([o[:i] for o in ordered], ranges, weighted=weighted) +
            reference_split([o[i:] for o in ordered], ranges, weighted=weighted))


def written_invariance_problems(paths: list[Path], tables: list[pd.DataFrame], m: int,
                                quasi_identifiers: dict[str, str], sensitive: str
                                ) -> list[str]:
    """What breaks m-invariance (Xiao & Tao, Definitions 3 and 4) in a sequence of written
    releases, read as an adversary reads them: rows of equal released QIs are one class,
    which must hold at least m rows, all of different sensitive values; and a record present
    in several releases must have the same signature (its class's set of values) in each.
    The written rows carry no key, so a record's class is any class whose labels cover its
    quasi-identifiers (``quasi_identifiers``: column -> kind) and that holds its value; its
    possible signatures must share one across the releases it is in. ``tables``: the input
    of each release, keyed by ``pid``."""
    problems: list[str] = []
    possible: dict[str, set[frozenset[str]] | None] = {}
    for number, (path, table) in enumerate(zip(paths, tables, strict=True), start=1):
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        classes: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for row in rows:
            classes[tuple(row[q] for q in quasi_identifiers)].append(row[sensitive])
        for labels, values in classes.items():
            if not m_unique(m)(values, values):
                problems.append(f"release {number}: class {labels} holds {sorted(values)}, "
                                f"not {m}-unique")
        for record in table.itertuples(index=False):
            mine = {frozenset(values) for labels, values in classes.items()
                    if str(getattr(record, sensitive)) in values and all(
                        covers(label, str(getattr(record, q)), kind=kind,
                               form="range" if kind == "numeric" else "set")
                        for label, (q, kind) in zip(labels, quasi_identifiers.items(),
                                                    strict=True))}
            pid = str(record.pid)
            if not mine:
                problems.append(f"release {number}: no class covers record {pid}")
                continue
            before = possible.get(pid)
            possible[pid] = mine if before is None else before & mine
            if not possible[pid]:
                problems.append(f"release {number}: record {pid} changed signature")
    return problems
