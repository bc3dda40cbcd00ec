"""The cross-release adversary of incremental (k,e)-anonymity, brute force and independent of
the package: it reads the published files as anyone could, finds each person's group in every
release by their exact quasi-identifiers (unique per person in the tables it is given), and
intersects the sets of values published in every pair of a person's groups -- and in all of
them at once. A (k,e) release sequence holds when every intersection keeps at least k distinct
values spanning at least e."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import pandas as pd


@dataclass(frozen=True)
class Narrowed:
    person: object
    releases: tuple[int, ...]
    distinct: int
    range: float


def group_values(release: pd.DataFrame, sensitive: str, group: str) -> dict[object, set[float]]:
    """Per published group, the set of values its rows show (placeholder rows included:
    nobody can tell which row holds which value)."""
    out: dict[object, set[float]] = {}
    for g, v in zip(release[group], release[sensitive], strict=True):
        out.setdefault(g, set()).add(float(v))
    return out


def person_groups(table: pd.DataFrame, release: pd.DataFrame, key: str,
                  quasi_identifiers: Sequence[str], group: str) -> dict[object, object]:
    """Per person of ``table`` (by ``key``), the group of the released row with their exact
    quasi-identifiers."""
    by_qi: dict[tuple[object, ...], object] = {}
    for row in release[[*quasi_identifiers, group]].itertuples(index=False):
        qi = tuple(row[:-1])
        if any(pd.isna(x) for x in qi):
            continue  # a placeholder row: no person
        assert qi not in by_qi, "the oracle needs quasi-identifiers unique per person"
        by_qi[qi] = row[-1]
    return {person: by_qi[tuple(qi)] for person, *qi in
            table[[key, *quasi_identifiers]].itertuples(index=False)}


def narrowed(tables: Sequence[pd.DataFrame], releases: Sequence[pd.DataFrame], *, key: str,
             quasi_identifiers: Sequence[str], sensitive: str, k: int, e: float,
             group: str = "group") -> list[Narrowed]:
    """Every (person, pair of releases) -- and (person, all of their releases) -- whose
    intersection of published group values falls below k distinct values or range e."""
    values = [group_values(r, sensitive, group) for r in releases]
    where = [person_groups(t, r, key, quasi_identifiers, group)
             for t, r in zip(tables, releases, strict=True)]
    people = {p for w in where for p in w}
    found: list[Narrowed] = []
    for person in sorted(people, key=str):
        seen = [i for i, w in enumerate(where) if person in w]
        scopes = [tuple(pair) for pair in combinations(seen, 2)]
        if len(seen) > 2:
            scopes.append(tuple(seen))
        for scope in scopes:
            common = set.intersection(*(values[i][where[i][person]] for i in scope))
            spread = max(common) - min(common) if common else 0.0
            if len(common) < k or spread < e:
                found.append(Narrowed(person, scope, len(common), spread))
    return found
