"""The cross-release attack audit: hand-computed cases, an independent brute-force
recomputation (plain Python sets, from the raw tables and class assignments, never from the
history), and the acceptance scenario: naive Mondrian re-run on a churning table."""

from __future__ import annotations

import base64
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pytest

from anonkit.datasets import census_versions
from anonkit.history.attacks import (
    PINNED,
    AuditReport,
    CrossReleaseBreachError,
    Requirement,
    ScopeResult,
    audit,
    audit_views,
    requirements_of,
)
from anonkit.history.engines import engine_for, register_engine
from anonkit.history.engines.context import PublishRequest
from anonkit.history.knowledge import knowledge
from anonkit.history.publish import publish
from anonkit.history.records import PreparedRelease
from anonkit.history.report import render_html
from anonkit.history.store import HistoryStore
from anonkit.history.summary import multisets
from history_helpers import churned_versions, make_request, people

if TYPE_CHECKING:
    from pg_fixtures import HistoryTarget

pytest_plugins = ["pg_fixtures"]


def open_store(target: HistoryTarget) -> HistoryStore:
    return HistoryStore.open(target.url, secret_file=target.secret_file, create=True)


def counts(scope: ScopeResult, proved: bool = True) -> dict[tuple[str, str, str | None], int]:
    """Records per (adversary, model, attribute): the proved findings (``proved=False``:
    the findings not ruled out)."""
    return {(f.adversary, f.model, f.attribute): f.records for f in scope.findings
            if f.proved == proved}


# -- a case small enough to compute by hand ------------------------------------------------

#: six people; disease and income follow the same pattern (a,b | c,d | e,f share values)
HAND = pd.DataFrame({
    "pid": list("abcdef"),
    "age": [30, 31, 32, 33, 34, 35], "zip": [1, 1, 1, 1, 1, 1], "sex": list("FFFMMM"),
    "disease": ["flu", "flu", "hiv", "hiv", "cold", "cold"],
    "income": [1000, 1000, 3000, 3000, 5000, 5000],
})
RELEASE_1 = {"a": 0, "b": 0, "c": 0, "d": 1, "e": 1, "f": 1}  # {a,b,c} {d,e,f}
RELEASE_2 = {"a": 0, "e": 0, "f": 0, "b": 1, "c": 1, "d": 1}  # {a,e,f} {b,c,d}


def _hand_history(target: HistoryTarget, tmp_path: Path) -> HistoryStore:
    store = open_store(target)
    for n, classes in enumerate((RELEASE_1, RELEASE_2), start=1):
        req = make_request(method="given-classes", k=2, sensitive=("disease", "income"),
                           classes=classes)
        publish(store, HAND.sample(frac=1.0, random_state=n), req, tmp_path / f"r{n}.csv",
            allow_breach=True)
    return store


def test_hand_computed_pair(history: HistoryTarget, tmp_path: Path) -> None:
    """Release 1 classes {a,b,c} {d,e,f}; release 2 {a,e,f} {b,c,d}; k = 2.

    a: classes {a,b,c} & {a,e,f}: alone (1 candidate); values {flu,flu,hiv} & {flu,cold,cold}
       = {flu}: pinned, and the qi adversary's count is min(2, 1) = 1.
    b, c: {a,b,c} & {b,c,d}: {b, c}; values {flu, hiv}; qi count 1 + 1 = 2. Safe at k = 2.
    d: {d,e,f} & {b,c,d}: alone; {hiv}: pinned; qi count 1.
    e, f: {d,e,f} & {a,e,f}: {e, f}; values {cold}: pinned (both adversaries).
    """
    with _hand_history(history, tmp_path) as store:
        report = audit(store, "census", pairs=True)
        (pair,) = report.pairs
        assert pair.releases == (1, 2) and pair.records_compared == 6
        assert counts(pair) == {
            ("qi", "k-anonymity", None): 2,  # a, d
            ("qi", PINNED, "disease"): 4,  # a, d, e, f
            ("qi", PINNED, "income"): 4,
            ("linkage", "k-anonymity", None): 2,
            ("linkage", PINNED, "disease"): 4,
            ("linkage", PINNED, "income"): 4,
        }
        assert pair.records_breached == 4
        assert pair.breached_by == {"qi": 4, "linkage": 4}
        (worst,) = [f.worst for f in pair.findings
                    if (f.adversary, f.model) == ("linkage", "k-anonymity")]
        assert [w["candidates_linkage"] for w in worst] == [1, 1]
        assert {w["values[disease]"][0] for w in worst} == {"flu", "hiv"}
        assert worst[0]["class_sizes"] == {"1": 3, "2": 3}
        assert report.breached and report.records_breached == 4

        # explicit thresholds: l = 3 distinct values, a range of e = 2500 on income
        strict = audit(store, "census", l=3, e=2500, pairs=True)
        (pair,) = strict.pairs
        found = counts(pair)
        assert found[("qi", "distinct l-diversity", "disease")] == 6
        assert found[("linkage", "distinct l-diversity", "disease")] == 6
        assert found[("qi", "(k,e)-anonymity", "income")] == 6  # ranges 0 or 2000 < 2500
        assert ("qi", "(k,e)-anonymity", "disease") not in found  # not numeric
        assert strict.records_breached == 6


def test_requirements_come_from_the_recorded_requirements(history: HistoryTarget,
                                                          tmp_path: Path) -> None:
    """The audit reads the requirements a release recorded, not its models' names: a
    model the audit has never heard of counts, and a model without requirements is only
    checked for exact disclosure (and said to be)."""
    from anonkit.models.base import CrossReleaseRequirement

    with _hand_history(history, tmp_path) as store:
        info = store.release("census", 1)
    assert [(r.model, r.measure, r.threshold) for r in requirements_of(info)] == [
        ("k-anonymity", "candidates", 2.0)]
    assert requirements_of(info)[0] == CrossReleaseRequirement("k-anonymity", "candidates",
                                                               2.0)
    novel = CrossReleaseRequirement("novel model", "distinct_present", 4.0, "income")
    fake = info.__class__(**{**info.__dict__, "requirements": [novel.to_dict()],
                             "models": [{"model": "novel model", "parameters": {"z": 4}},
                                        {"model": "t-closeness", "parameters": {"t": 0.2}}]})
    assert requirements_of(fake) == [novel]
    from anonkit.history.attacks import exact_only_models

    assert exact_only_models(fake) == ["t-closeness (t=0.2)"]
    # the verdicts' names no longer matter: no requirement recorded, none audited
    bare = info.__class__(**{**info.__dict__, "requirements": []})
    assert requirements_of(bare) == []
    assert exact_only_models(bare) == ["k-anonymity (k=2)"]


def test_a_model_without_cross_release_measure_is_checked_for_exact_disclosure(
        tmp_path: Path) -> None:
    """Releases whose only model declares no requirement are still audited for exact
    disclosure, and the report (summary, JSON, HTML) says so; thresholds print exactly."""
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for n, classes in enumerate((RELEASE_1, RELEASE_2), start=1):
            req = make_request(method="given-classes", k=2, sensitive=("disease", "income"),
                               classes=classes)
            publish(store, HAND, req, tmp_path / f"r{n}.csv", allow_breach=True)
        views = [store.load(i, labels=False) for i in store.releases("census")]
    from anonkit.history.attacks import EXACT_ONLY, audit_views

    for v in views:  # as a t-closeness release records itself: a model, no requirement
        object.__setattr__(v, "info", v.info.__class__(**{
            **v.info.__dict__, "requirements": [],
            "models": [{"model": "t-closeness", "parameters": {"t": 0.123456789}}]}))
    report = audit_views(views, pairs=True)
    (pair,) = report.pairs
    assert {f.model for f in pair.findings} == {PINNED}  # a, d, e, f: one value left
    assert pair.records_breached == 4
    assert report.exact_only == ["t-closeness (t=0.123456789)"]
    assert f"t-closeness (t=0.123456789): {EXACT_ONLY}" in report.summary()
    assert report.to_dict()["checked_only_for_exact_disclosure"] == [
        "t-closeness (t=0.123456789)"]
    assert f"t-closeness (t=0.123456789): {EXACT_ONLY}" in render_html(report)
    # an explicit threshold prints as given, never rounded
    exact = audit_views(views, e=1234567.5, pairs=True)
    finding = next(f for f in exact.pairs[0].findings if f.measure == "range")
    assert "sensitive range >= 1234567.5" in finding.describe()
    assert "range &gt;= 1234567.5" in render_html(exact)


def test_republishing_the_same_classes_reveals_nothing_new(tmp_path: Path) -> None:
    df = people(np.arange(500))
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for n in range(3):
            publish(store, df.sample(frac=1.0, random_state=n), make_request(),
                    tmp_path / f"r{n}.csv", allow_breach=True)
        view = store.load(store.release("census", 1))
        distinct = np.bincount(view.values["disease"].class_index)
        assert distinct.min() >= 2  # no class is homogeneous on its own
        report = audit(store, "census", pairs=True)
    assert not report.breached and report.records_breached == 0
    assert [p.records_compared for p in report.pairs] == [500, 500, 500]
    assert all(not p.findings for p in report.pairs)
    assert report.overall is not None and report.overall.records_compared == 500


def test_one_release_has_nothing_to_intersect(tmp_path: Path) -> None:
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, people(np.arange(50)), make_request(), tmp_path / "r.csv")
        report = audit(store, "census", pairs=True)
    assert not report.breached and report.pairs == [] and report.overall is None
    assert "nothing to intersect" in report.summary()


# -- the brute force -----------------------------------------------------------------------


def brute_force(tables: Sequence[pd.DataFrame], class_ids: Sequence[np.ndarray], key: str,
                sensitive: Sequence[str], numeric: set[str], k: float,
                l: float | None = None, e: float | None = None,  # noqa: E741
                deduction: bool = True
                ) -> dict[tuple[int, ...], tuple[Counter[tuple[str, str, str | None]], int,
                                                 dict[str, int]]]:
    """Per scope (a pair of releases by index, or ``()`` for "every release containing
    the record"): breached records per (adversary, model, attribute), breached records,
    and breached records per adversary -- record by record with Python sets. Without
    ``deduction`` the qi adversary keeps the plain intersection of the multisets."""
    class_of: list[dict[object, int]] = []
    members: list[dict[int, set[object]]] = []
    multiset: list[dict[str, dict[int, Counter[object]]]] = []
    for df, cids in zip(tables, class_ids, strict=True):
        keys, cids_list = df[key].tolist(), [int(c) for c in cids]
        class_of.append(dict(zip(keys, cids_list, strict=True)))
        m: dict[int, set[object]] = defaultdict(set)
        for record, c in zip(keys, cids_list, strict=True):
            m[c].add(record)
        members.append(m)
        per_attr: dict[str, dict[int, Counter[object]]] = {}
        for attr in sensitive:
            per_class: dict[int, Counter[object]] = defaultdict(Counter)
            for c, value in zip(cids_list, df[attr].tolist(), strict=True):
                per_class[c][value] += 1
            per_attr[attr] = per_class
        multiset.append(per_attr)

    value_of = [{attr: dict(zip(df[key].tolist(), df[attr].tolist(), strict=True))
                 for attr in sensitive} for df in tables]
    deduced: dict[tuple[int, ...], dict[str, dict[tuple[int, ...], set[object]]]] = {}

    def deduce(scope: tuple[int, ...]) -> dict[str, dict[tuple[int, ...], set[object]]]:
        """The qi adversary's constraint propagation, record by record in plain Python."""
        if scope in deduced:
            return deduced[scope]
        size: Counter[tuple[int, ...]] = Counter(
            tuple(class_of[r].get(rec, -1) for r in scope)
            for rec in set().union(*(class_of[r] for r in scope)))
        out: dict[str, dict[tuple[int, ...], set[object]]] = {}
        for attr in sensitive:
            hi: dict[tuple[int, ...], dict[object, int]] = {}
            for atom, n in size.items():
                bags = [multiset[r][attr][c] for r, c in zip(scope, atom, strict=True)
                        if c >= 0]
                left = set.intersection(*(set(b) for b in bags))
                hi[atom] = {v: min(n, *(b[v] for b in bags)) for v in left}
            start = {atom: dict(h) for atom, h in hi.items()}
            lo = {atom: dict.fromkeys(h, 0) for atom, h in hi.items()}
            changed = True
            while changed:
                changed = False
                groups = [([a for a in size if a[j] == c], multiset[r][attr][c][v], v)
                          for j, r in enumerate(scope) for c in multiset[r][attr]
                          for v in multiset[r][attr][c]]
                for atoms, total, v in groups:
                    atoms = [a for a in atoms if v in hi[a]]
                    s_lo, s_hi = sum(lo[a][v] for a in atoms), sum(hi[a][v] for a in atoms)
                    for a in atoms:
                        new_hi = min(hi[a][v], total - (s_lo - lo[a][v]))
                        new_lo = max(lo[a][v], total - (s_hi - hi[a][v]))
                        changed |= (new_hi, new_lo) != (hi[a][v], lo[a][v])
                        hi[a][v], lo[a][v] = new_hi, new_lo
                for a in size:
                    s_lo, s_hi = sum(lo[a].values()), sum(hi[a].values())
                    for v in hi[a]:
                        new_hi = min(hi[a][v], size[a] - (s_lo - lo[a][v]))
                        new_lo = max(lo[a][v], size[a] - (s_hi - hi[a][v]))
                        changed |= (new_hi, new_lo) != (hi[a][v], lo[a][v])
                        hi[a][v], lo[a][v] = new_hi, new_lo
                if any(lo[a][v] > hi[a][v] for a in hi for v in hi[a]):
                    hi = start  # contradictory releases: no deduction
                    break
            out[attr] = {a: {v for v, n in h.items() if n >= 1} for a, h in hi.items()}
        deduced[scope] = out
        return out

    def judge(record: object, scope: Sequence[int],
              deduce_over: tuple[int, ...]) -> set[tuple[str, str, str | None]]:
        classes = [class_of[r][record] for r in scope]
        shared = set.intersection(*(members[r][c] for r, c in zip(scope, classes, strict=True)))
        cand_link = len(shared)
        cand_qi = min(len(members[r][c]) for r, c in zip(scope, classes, strict=True))
        atom = tuple(class_of[r].get(record, -1) for r in deduce_over)
        flags = set()
        for attr in sensitive:
            bags = [multiset[r][attr][c] for r, c in zip(scope, classes, strict=True)]
            values = set.intersection(*(set(b) for b in bags))
            cand_qi = min(cand_qi, sum(min(b[v] for b in bags) for v in values))
            qi_values = deduce(deduce_over)[attr][atom] if deduction else values
            linked = set()
            for other in shared:  # linked rows show each candidate's value
                seen = {value_of[r][attr][other] for r in scope}
                if len(seen) == 1:
                    linked |= seen
            homogeneous = any(len(b) == 1 for b in bags)
            for adversary, left in (("qi", qi_values), ("linkage", linked)):
                distinct = len(left)
                rng = (max(left) - min(left)) if attr in numeric and left else None
                if distinct == 1 and not homogeneous:
                    flags.add((adversary, PINNED, attr))
                if l is not None and 1 <= distinct < l:
                    flags.add((adversary, "distinct l-diversity", attr))
                if e is not None and distinct >= 1 and rng is not None and rng < e:
                    flags.add((adversary, "(k,e)-anonymity", attr))
        if len(scope) >= 2 and cand_qi < k:  # a record's own class is no cross-release
            flags.add(("qi", "k-anonymity", None))
        if len(scope) >= 2 and cand_link < k:
            flags.add(("linkage", "k-anonymity", None))
        return flags

    out = {}
    scopes: list[tuple[tuple[int, ...], list[tuple[object, tuple[int, ...]]]]] = []
    # every record of a scope is judged, over the scope's releases that contain it
    for i, j in combinations(range(len(tables)), 2):
        either = class_of[i].keys() | class_of[j].keys()
        scopes.append(((i, j), [(record, tuple(r for r in (i, j) if record in class_of[r]))
                                for record in either]))
    everywhere = defaultdict(list)
    for r, mapping in enumerate(class_of):
        for record in mapping:
            everywhere[record].append(r)
    scopes.append(((), [(rec, tuple(rs)) for rec, rs in everywhere.items()]))
    for name, targets in scopes:
        tally: Counter[tuple[str, str, str | None]] = Counter()
        breached, by_adversary = 0, {"qi": 0, "linkage": 0}
        for record, scope in targets:
            flags = judge(record, scope, name if name else tuple(range(len(tables))))
            tally.update(flags)
            breached += bool(flags)
            for adversary in by_adversary:
                by_adversary[adversary] += any(f[0] == adversary for f in flags)
        out[name] = (tally, breached, by_adversary)
    return out


def assert_matches_brute_force(report: AuditReport, truth: dict,  # type: ignore[type-arg]
                               plain: dict | None = None) -> None:  # type: ignore[type-arg]
    """Every pair scope's *proved* findings as the reference propagation has them (the
    findings not ruled out come on top: their soundness is tested against exhaustive
    enumeration in test_possible.py). The all-releases scope too, except the qi
    adversary's value findings: the audit deduces them release after release, each new
    atom starting from its parent's bounds (see anonkit.history.knowledge), which is not
    the brute force's from-scratch propagation; there they are at least the plain
    intersection's (``plain``: the brute force without deduction), and their soundness is
    checked record by record against the true values by the caller."""
    scopes = {tuple(report.releases.index(s) for s in p.releases): p for p in report.pairs}
    assert report.overall is not None
    scopes[()] = report.overall
    assert set(scopes) == set(truth)
    for name, scope in scopes.items():
        tally, breached, by_adversary = truth[name]
        got = counts(scope)
        if name == () and plain is not None:
            least = plain[()][0]
            deduced = {key for key in set(got) | set(tally)
                       if key[0] == "qi" and key[2] is not None}
            for key in deduced:
                assert got.get(key, 0) >= least.get(key, 0), key
            got = {key: n for key, n in got.items() if key not in deduced}
            tally = Counter({key: n for key, n in tally.items() if key not in deduced})
            assert scope.breached_by["linkage"] == by_adversary["linkage"]
            assert scope.records_breached >= plain[()][1]
        else:
            assert scope.records_breached >= breached, name
            assert all(scope.breached_by[a] >= n for a, n in by_adversary.items()), name
            assert scope.breached_by["linkage"] == by_adversary["linkage"], name
            # the exact check may prove more values impossible than the propagation
            values = {key for key in set(got) | set(tally)
                      if key[0] == "qi" and key[2] is not None}
            for key in values:
                assert got.get(key, 0) >= tally.get(key, 0), (name, key)
            got = {key: n for key, n in got.items() if key not in values}
            tally = Counter({key: n for key, n in tally.items() if key not in values})
        assert got == dict(tally), name


def assert_qi_deduction_is_sound(store: HistoryStore, dataset: str, versions: list[pd.DataFrame],
                                 key: str, sensitive: Sequence[str]) -> None:
    """Every record's true value is among the values the qi adversary cannot rule out."""
    everyone = pd.concat(versions).drop_duplicates(key).reset_index(drop=True)
    known = knowledge(store, dataset, store.pseudonyms(dataset, everyone[key]))
    for attr in sensitive:
        truth = everyone[attr].tolist()
        a = known.attributes[attr]
        for i, value in enumerate(truth):
            assert value in a.deduced(i), (attr, i, value, a.deduced(i))


class Recorder:
    """Wraps a release method and keeps each input row's class as the method returned it
    (the brute force's input; publishing then shuffles the released rows)."""

    def __init__(self, method: str) -> None:
        self.inner = engine_for(method)
        self.results: list[object] = []

    def __call__(self, df, request, context):  # type: ignore[no-untyped-def]
        result = self.inner(df, request, context)
        self.results.append(SimpleNamespace(class_ids=np.array(result.class_ids)))
        return result


def test_audit_matches_brute_force_on_a_churning_table(history: HistoryTarget,
                                                       tmp_path: Path) -> None:
    versions = churned_versions(1500, 4, churn=0.1, seed=3)
    # a fifth version brings back everyone of the second: records that left come back, so
    # records are present in non-contiguous sets of releases ({1,2,5}, {2,5}, ...)
    versions.append(versions[1].sample(frac=1.0, random_state=4).reset_index(drop=True))
    recorder = Recorder("sorted-chunks")
    register_engine("recorded-chunks", recorder, replace=True)
    req = make_request(method="recorded-chunks", sensitive=("disease", "income"))
    with open_store(history) as store:
        for n, df in enumerate(versions):
            publish(store, df, req, tmp_path / f"r{n}.csv", allow_breach=True)
        report = audit(store, "census", pairs=True)
        strict = audit(store, "census", k=7, l=3, e=20_000, pairs=True)
        assert_qi_deduction_is_sound(store, "census", versions, "pid", ["disease", "income"])
    class_ids = [r.class_ids for r in recorder.results]  # type: ignore[attr-defined]
    members = [set(df["pid"]) for df in versions]
    common = {"tables": versions, "class_ids": class_ids, "key": "pid",
              "sensitive": ["disease", "income"], "numeric": {"income"}}
    assert report.breached
    presence = Counter(tuple(n for n, df in enumerate(versions) if pid in members[n])
                       for pid in set().union(*members))
    assert (1, 4) in presence and (0, 1, 4) in presence  # gaps are exercised
    assert_matches_brute_force(report, brute_force(**common, k=5),
                               brute_force(**common, k=5, deduction=False))
    assert_matches_brute_force(strict, brute_force(**common, k=7, l=3, e=20_000),
                               brute_force(**common, k=7, l=3, e=20_000, deduction=False))


# -- acceptance: naive Mondrian on a churning table ----------------------------------------


CENSUS_QIS = ["age", "sex", "race", "marital-status", "education", "zip"]


def test_naive_mondrian_on_a_churning_table_is_caught(tmp_path: Path) -> None:
    """The issue's scenario: 5 releases, 10 % of the rows replaced each time, Mondrian with
    k = 5 re-run on every version. Each release is 5-anonymous; their intersections are
    not, and the audit says so -- with the brute force's numbers."""
    versions = census_versions(3000, 5, churn=0.1, seed=11)
    recorder = Recorder("mondrian")
    register_engine("recorded-mondrian", recorder, replace=True)
    req = PublishRequest(dataset="census", key="id", quasi_identifiers=CENSUS_QIS,
                         sensitive=["disease", "salary"], method="recorded-mondrian",
                         options={"k": 5})
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for n, df in enumerate(versions):
            info = publish(store, df, req, tmp_path / f"r{n}.csv", allow_breach=True)
            assert info.passed and info.method == "mondrian"
        report = audit(store, "census", pairs=True)
        assert_qi_deduction_is_sound(store, "census", versions, "id", ["disease", "salary"])
    assert report.breached
    assert all(p.records_breached > 0 for p in report.pairs)
    assert all(p.count("linkage", "k-anonymity") > 0 for p in report.pairs)
    # consecutive releases share 90 % of their records: 2,700 in both, 300 in either alone
    assert [p.records_compared for p in report.pairs[:1]] == [3300]
    truth = brute_force(versions, [r.class_ids for r in recorder.results],  # type: ignore[attr-defined]
                        key="id", sensitive=["disease", "salary"], numeric={"salary"}, k=5)
    plain = brute_force(versions, [r.class_ids for r in recorder.results],  # type: ignore[attr-defined]
                        key="id", sensitive=["disease", "salary"], numeric={"salary"}, k=5,
                        deduction=False)
    assert_matches_brute_force(report, truth, plain)


# -- gating a publication on the audit -----------------------------------------------------


def test_a_release_that_would_breach_is_refused(history: HistoryTarget,
                                                    tmp_path: Path) -> None:
    v1, v2, v3 = churned_versions(600, 3, churn=0.1, seed=6)
    with open_store(history) as store:
        publish(store, v1, make_request(), tmp_path / "r1.csv")
        before = [(r.seq, r.content_hash) for r in store.releases()]
        with pytest.raises(CrossReleaseBreachError,
                           match=r"^release 2 of 'census' refused: with the earlier "
                                 r"releases it would disclose \d+ records to the qi adversary "
                                 r"and the linkage adversary; nothing was written\. .*"
                                 r"--method m-invariance for a categorical sensitive "
                                 r"attribute\); --json"):
            # (k,e) needs a numeric sensitive attribute: not advised for a categorical one
            publish(store, v2, make_request(), tmp_path / "r2.csv")
        assert [(r.seq, r.content_hash) for r in store.releases()] == before
        assert not (tmp_path / "r2.csv").exists()
        assert not list(tmp_path.glob(".anonkit-tmp-*"))
        # what the gate saw is what the audit reports once the release is published anyway
        publish(store, v2, make_request(), tmp_path / "r2.csv", allow_breach=True)
        publish(store, v3, make_request(), tmp_path / "r3.csv", allow_breach=True)
        focused = audit(store, "census", focus=2, pairs=True)
        assert [p.releases for p in focused.pairs] == [(1, 2), (2, 3)]
        full = audit(store, "census", pairs=True)
        assert [p for p in full.pairs if 2 in p.releases] == focused.pairs

        # on a clean history, a release that reveals nothing new passes the gate
        stable = people(np.arange(10_000, 10_500))  # records no other dataset holds
        for n in (1, 2):
            info = publish(store, stable.sample(frac=1.0, random_state=n),
                           make_request(dataset="stable"), tmp_path / f"s{n}.csv")
            assert info.seq == n


# -- output ----------------------------------------------------------------------------------


def test_the_findings_serialise_and_the_report_is_self_contained(history: HistoryTarget,
                                                                  tmp_path: Path) -> None:
    versions = churned_versions(400, 3, churn=0.1, seed=5)
    with open_store(history) as store:
        for n, df in enumerate(versions):
            publish(store, df, make_request(), tmp_path / f"r{n}.csv", allow_breach=True)
        report = audit(store, "census", pairs=True)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["breached"] is True and data["releases"] == [1, 2, 3]
    assert [p["releases"] for p in data["pairs"]] == [[1, 2], [1, 3], [2, 3]]
    assert data["all_releases"]["kind"] == "all"
    finding = data["pairs"][0]["findings"][0]
    assert {"adversary", "model", "records", "worst"} <= set(finding)
    page = render_html(report)
    assert "http://" not in page and "https://" not in page and "<script" not in page
    images = [chunk.split("'")[0] for chunk in page.split("data:image/png;base64,")[1:]]
    assert len(images) == 3  # breaches per release, per pair, and the release matrix
    assert all(base64.b64decode(img).startswith(b"\x89PNG") for img in images)


def test_ke_anonymity_does_not_count_a_missing_value_as_distinct(tmp_path: Path) -> None:
    """(k,e)-anonymity ignores missing sensitive values, so the audit must too: b and c
    are left with {5000, missing} -- one real value, below k = 2 -- while l-diversity
    (which counts a missing value) would see two values.

    Release 1: {a,b,c} {d,e,f}; release 2: {a,e,f} {b,c,d} (RELEASE_1 / RELEASE_2).
    income: a 1000, b 5000, c missing, d 3000, e 5000, f 1000.
    b and c: {1000, 5000, -} & {5000, -, 3000} = {5000, -}; everyone else keeps two
    present values ({1000, 5000} or {3000, 5000}). Each release alone is (2, 0)-anonymous.
    The qi adversary therefore breaches b and c, and by counting also a and d: a's
    intersection is {1000} alone, and release 1's 3000 of {d,e,f} can only be d's (e and
    f are in a class of release 2 without 3000). The linkage adversary breaches the same
    four (a and d are alone in their pair of classes), not e and f: their rows show 5000
    and 1000.
    """
    from anonkit.models import KEAnonymity

    df = HAND.assign(income=[1000, 5000, np.nan, 3000, 5000, 1000])
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for n, classes in enumerate((RELEASE_1, RELEASE_2), start=1):
            req = make_request(method="given-classes", k=1, sensitive=("disease", "income"),
                               classes=classes, ke=(2, 0.0, "income"))
            publish(store, df, req, tmp_path / f"r{n}.csv", allow_breach=True)
        report = audit(store, "census", pairs=True)
    pair = report.pairs[0]
    ke = {f.adversary: f.records for f in pair.findings
          if f.model == KEAnonymity.name and f.measure == "distinct_present"
          and f.attribute == "income"}
    assert ke == {"qi": 4, "linkage": 4}


# -- release kinds: counterfeits and permuted groups ---------------------------------------


def hand_release(seq: int, members: dict[str, int], values: dict[str, str], *,
                 kind: str = "generalized", fakes: dict[int, list[str]] | None = None,
                 k: int = 3) -> PreparedRelease:
    """A release built by hand: ``members`` maps each record to its class, ``values`` gives
    its disease, ``fakes`` the values of counterfeit rows per class."""
    fakes = fakes or {}
    keys = sorted(members)
    fake_classes = [c for c, vals in fakes.items() for _ in vals]
    class_ids = np.array([members[key] for key in keys] + fake_classes, dtype=np.int64)
    released = pd.Series([values[key] for key in keys]
                         + [v for vals in fakes.values() for v in vals], dtype=object)
    sizes = np.bincount(class_ids)
    n_classes = len(sizes)
    pseudonyms = [key.encode().ljust(16, b".") for key in keys]
    return PreparedRelease(
        dataset="hand", seq=seq, method="hand", parameters={}, key_column="pid",
        columns={}, quasi_identifiers=["q"], sensitive=["disease"],
        models=[{"model": "k-anonymity", "parameters": {"k": k}}], verdicts=[],
        n_input_rows=len(keys), n_released_rows=len(class_ids),
        class_rows=[(c, int(sizes[c]), f'["g{c}"]') for c in range(n_classes)],
        class_values=[multisets("disease", released, class_ids)],
        record_hashes=pseudonyms, record_classes=[members[key] for key in keys],
        release_kind=kind, group_column="group" if kind == "permuted" else None,
        requirements=[Requirement("k-anonymity", "candidates", k)],
        counterfeits=np.bincount(np.array(fake_classes, dtype=np.int64),
                                 minlength=n_classes).tolist())


def test_counterfeit_rows_are_no_identity_candidates(tmp_path: Path) -> None:
    """a and b are alone with 3 counterfeit rows in both releases: 5 rows, 2 people. The
    qi adversary's bound counts 2 candidates (the multisets keep the fakes' values, so the
    value bound alone would say 5), which breaks k = 3; c..g (5 people) are safe."""
    members = {"a": 0, "b": 0, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1}
    values = dict(zip(members, ["flu", "hiv", "flu", "hiv", "cold", "cancer", "flu"],
                      strict=True))
    fakes = {0: ["cold", "asthma", "cancer"]}
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for seq in (1, 2):
            store.commit_release(hand_release(seq, members, values, fakes=fakes))
        report = audit(store, "hand", pairs=True)
        view = store.load(store.release("hand", 1))
    assert view.sizes.tolist() == [5, 5] and view.counterfeits.tolist() == [3, 0]
    (pair,) = report.pairs
    assert counts(pair) == {("qi", "k-anonymity", None): 2,
                            ("linkage", "k-anonymity", None): 2}
    (finding,) = [f for f in pair.findings if f.adversary == "qi"]
    assert finding.threshold == 3.0
    assert [w["candidates_qi"] for w in finding.worst] == [2, 2]
    assert finding.worst[0]["class_counterfeits"] == {"1": 3, "2": 3}
    # without the counterfeit counts the same rows would look like 5 candidates
    plain = [hand_release(seq, members, values, fakes=fakes).view() for seq in (1, 2)]
    for v in plain:
        v.counterfeits = np.zeros(v.n_classes, dtype=np.int64)
    assert ("qi", "k-anonymity", None) not in counts(audit_views(plain, pairs=True).pairs[0])


#: permuted releases: values are shuffled within each group, so linking a person's rows
#: gives their group, not their value. Release 1 groups {a,b,c} {d,e,f}; release 2
#: {a,d,e} {b,c,f}. a: {flu,hiv,cold} & {flu,flu,hiv} = {flu,hiv}, alone; b, c share both
#: groups: {flu,hiv,cold} & {hiv,cold,asthma} = {hiv,cold}; f: {hiv,asthma}, alone.
#: Counting pins a and f all the same: release 1's asthma in {d,e,f} can only be f's (d
#: and e are in release 2's {flu,flu,hiv}), so d and e hold that group's flu and hiv, and
#: release 2's {a,d,e} leaves a its other flu.
PERMUTED_1 = {"a": 0, "b": 0, "c": 0, "d": 1, "e": 1, "f": 1}
PERMUTED_2 = {"a": 0, "d": 0, "e": 0, "b": 1, "c": 1, "f": 1}
PERMUTED_VALUES = {"a": "flu", "b": "hiv", "c": "cold", "d": "flu", "e": "hiv",
                   "f": "asthma"}


def test_linking_permuted_groups_gives_what_counting_gives() -> None:
    """Over permuted releases the linkage adversary knows groups, not values: exactly what
    the qi adversary deduces from the group multisets (here: a and f, by counting; before
    the counting argument the audit found nothing)."""
    views = [hand_release(n, classes, PERMUTED_VALUES, kind="permuted", k=1).view()
             for n, classes in enumerate((PERMUTED_1, PERMUTED_2), start=1)]
    (pair,) = audit_views(views, pairs=True).pairs
    assert counts(pair) == {("qi", PINNED, "disease"): 2, ("linkage", PINNED, "disease"): 2}
    pinned = {w["record"] for f in pair.findings for w in f.worst}
    assert pinned == {b"a".ljust(16, b".").hex(), b"f".ljust(16, b".").hex()}
    # b and c share both groups, two values are left: with l = 3 both adversaries see
    # the same
    strict = audit_views(views, l=3, pairs=True).pairs[0]
    assert counts(strict) == {("qi", "distinct l-diversity", "disease"): 6,
                              ("qi", PINNED, "disease"): 2,
                              ("linkage", "distinct l-diversity", "disease"): 6,
                              ("linkage", PINNED, "disease"): 2}


# -- issue 8: homogeneous cross-release cells ----------------------------------------------

#: ten patients; release 1 {P0-P4} {P5-P9}; release 2 {P0,P1,P5,P6,P7} {P2,P3,P4,P8,P9}.
#: Both 2-anonymous and 2-diverse; P0 and P1 alone share both classes, and both have flu.
WARD = pd.DataFrame({
    "pid": [f"P{i}" for i in range(10)], "age": range(30, 40), "zip": [1] * 10,
    "sex": list("FMFMFMFMFM"),
    "disease": ["flu", "flu", "cancer", "hiv", "flu", "cancer", "hiv", "flu", "asthma",
                "covid"]})
WARD_1 = {f"P{i}": int(i >= 5) for i in range(10)}
WARD_2 = {f"P{i}": int(i in (2, 3, 4, 8, 9)) for i in range(10)}


def test_a_homogeneous_cross_release_cell_is_a_breach(tmp_path: Path) -> None:
    """The issue's hand example: linking rows reads flu twice for P0 and P1; knowing only
    the QIs, release 2's {P2,P3,P4,P8,P9} holds each value once, which uses up one flu,
    one cancer and one hiv of {P0-P4}: P0 and P1 have flu. The gate refuses release 2,
    the audit reports it (exit 3)."""
    from click.testing import CliRunner

    from anonkit.cli.release import release

    db = tmp_path / "h.db"

    def request(classes: dict[str, int]) -> PublishRequest:
        return make_request(dataset="ward", method="given-classes", k=2, classes=classes)

    with HistoryStore.open(db, create=True) as store:
        publish(store, WARD, request(WARD_1), tmp_path / "r1.csv")
        with pytest.raises(CrossReleaseBreachError, match="would disclose 2 records"):
            publish(store, WARD, request(WARD_2), tmp_path / "r2.csv")
        publish(store, WARD, request(WARD_2), tmp_path / "r2.csv", allow_breach=True)
        report = audit(store, "ward", pairs=True)
        pseudonyms = store.pseudonyms("ward", pd.Series(["P0", "P1"]))
    (pair,) = report.pairs
    assert counts(pair) == {("qi", PINNED, "disease"): 2, ("linkage", PINNED, "disease"): 2}
    assert report.overall is not None and counts(report.overall) == counts(pair)
    assert report.records_breached == 2
    assert {w["record"] for f in pair.findings for w in f.worst} == {
        p.hex() for p in pseudonyms}
    result = CliRunner().invoke(release, ["audit", "--dataset", "ward", "--history",
                                          str(db)])
    assert result.exit_code == 3, result.output


def test_a_class_homogeneous_in_one_release_is_no_cross_release_disclosure() -> None:
    """a and b share a class of two flu in both releases: each release alone tells their
    value (k-anonymity allows it); intersecting the releases adds nothing, so the audit
    reports no cross-release exact disclosure (it used to)."""
    values = {"a": "flu", "b": "flu", "c": "hiv", "d": "cold"}
    views = [hand_release(n, {"a": 0, "b": 0, "c": 1, "d": 1}, values, k=2).view()
             for n in (1, 2)]
    (pair,) = audit_views(views, pairs=True).pairs
    assert pair.findings == [] and pair.records_breached == 0
