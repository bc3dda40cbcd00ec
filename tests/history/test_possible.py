"""The qi adversary's two bounds (:mod:`anonkit.history.possible`) and the gate, against an
attacker that tries every assignment of values to persons.

Histories are small and random: 2-4 releases, people joining, leaving and coming back,
classes drawn at random, sometimes counterfeit rows. The brute force enumerates every
assignment of one value per person that reproduces every released multiset (a class's
counterfeit rows may hold any of its values), so it knows exactly which values each person
can still have."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonkit.history.attacks import PINNED, Requirement, audit_views, judge
from anonkit.history.knowledge import fold
from anonkit.history.possible import (
    IMPOSSIBLE,
    POSSIBLE,
    entry_status,
    settle,
    structure,
)
from anonkit.history.records import ReleaseView
from history_helpers import classes_and_bags, pid, release

VALUES = ["x", "y", "z"]


def possible_values(views: list[ReleaseView]) -> dict[bytes, set[object]]:
    """Per record: every value some consistent assignment gives it."""
    classes, bags = classes_and_bags(views)
    records = sorted(set().union(*classes))
    alphabet = sorted({x for b in bags for bag in b.values() for x in bag})
    out: dict[bytes, set[object]] = {r: set() for r in records}
    for assignment in itertools.product(alphabet, repeat=len(records)):
        value = dict(zip(records, assignment, strict=True))
        fits = True
        for cls, per_class in zip(classes, bags, strict=True):
            held: dict[int, Counter[object]] = {}
            for r, c in cls.items():
                held.setdefault(c, Counter())[value[r]] += 1
            # real rows' values within the class's multiset (the rest are counterfeits)
            if any(held.get(c, Counter()) - bag for c, bag in per_class.items()):
                fits = False
                break
        if fits:
            for r in records:
                out[r].add(value[r])
    return out


def random_history(data: st.DataObject, l: int) -> tuple[list[ReleaseView], list[object]]:  # noqa: E741
    """Views of 2-4 random releases, and the prepared releases behind them."""
    n = data.draw(st.integers(3, 7), label="people")
    keys = [chr(ord("a") + i) for i in range(n)]
    truth = {k: data.draw(st.sampled_from(VALUES), label=f"value {k}") for k in keys}
    requirement = Requirement("distinct l-diversity", "distinct_present", float(l), "v")
    prepared, views = [], []
    for seq in range(1, data.draw(st.integers(2, 4), label="releases") + 1):
        present = [k for k in keys if data.draw(st.booleans(), label=f"{seq} has {k}")]
        if not present:
            present = keys[:1]
        members = {k: data.draw(st.integers(0, 2), label=f"{seq} class of {k}")
                   for k in present}
        used = sorted(set(members.values()))
        members = {k: used.index(c) for k, c in members.items()}
        fakes = {}
        if data.draw(st.booleans(), label=f"{seq} counterfeits"):
            c = data.draw(st.sampled_from(range(len(used))), label=f"{seq} fake class")
            fakes[c] = [data.draw(st.sampled_from(VALUES), label=f"{seq} fake value")]
        p = release(seq, members, {k: truth[k] for k in present}, fakes=fakes,
                    requirements=(requirement,), record_values=True)
        prepared.append(p)
        views.append(p.view())
    return views, prepared


def flagged(report: object) -> set[bytes]:
    """Records the qi adversary breaches on the sensitive values (any certainty)."""
    out: set[bytes] = set()
    for f in report.overall.findings:  # type: ignore[attr-defined]
        if f.adversary == "qi" and f.attribute == "v":
            out |= {bytes.fromhex(str(case["record"])) for case in f.worst}
    return out


def homogeneous(views: list[ReleaseView], record: bytes) -> bool:
    for v in views:
        keys = v.record_keys.tolist()
        if record in keys:
            c = v.record_classes[keys.index(record)]
            if (v.values["v"].class_index == c).sum() == 1:
                return True
    return False


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_bounds_hold_and_the_exact_check_is_exact(data: st.DataObject) -> None:
    """A value proved possible is possible; a value ruled out is impossible; after the
    exact check every entry is decided, and the values left are exactly the possible ones."""
    views, _ = random_history(data, 2)
    truth = possible_values(views)
    acc = fold(views)
    st_ = structure(acc)
    status = entry_status(acc, "v", st_)
    e = acc.entries["v"]
    names = acc.values["v"].array
    for r, values in truth.items():
        rid = int(acc.record_ids([r])[0])
        at = np.flatnonzero(e.atom == acc.atom[rid])
        possible = {names[e.value[i]] for i in at if status[i] == POSSIBLE}
        left = {names[e.value[i]] for i in at if status[i] != IMPOSSIBLE}
        assert possible <= values <= left, (r, possible, values, left)
    decided = settle(acc, "v", status, np.arange(len(acc.atom_size)), st_,
                     deadline=float("inf"))
    for r, values in truth.items():
        rid = int(acc.record_ids([r])[0])
        at = np.flatnonzero(e.atom == acc.atom[rid])
        assert {names[e.value[i]] for i in at if decided[i] == POSSIBLE} == values, r
        assert {names[e.value[i]] for i in at if decided[i] != IMPOSSIBLE} == values, r


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from([2, 3]))
def test_the_audit_flags_exactly_whom_the_brute_force_pins(data: st.DataObject,
                                                           l: int) -> None:  # noqa: E741
    """Every record, in one release or several, is flagged by the qi adversary exactly when
    the brute force leaves it fewer than l values (or one value, outside a class that was
    homogeneous in one release); each finding says whether it is proved."""
    views, _ = random_history(data, l)
    truth = possible_values(views)
    report = audit_views(views, worst=10**6)
    expected = {r for r, values in truth.items()
                if 1 <= len(values) < l or (len(values) == 1 and not homogeneous(views, r))}
    assert flagged(report) == expected
    # without the exact check, nothing pinned is let through (errs towards refusal)
    assert flagged(audit_views(views, worst=10**6, exact_seconds=0)) >= expected
    for f in report.overall.findings:  # type: ignore[union-attr]
        if f.adversary == "qi" and f.attribute == "v" and f.proved:
            for case in f.worst:
                assert len(truth[bytes.fromhex(str(case["record"]))]) < max(l, 2)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_gate_never_accepts_what_the_brute_force_pins(data: st.DataObject) -> None:
    """The gate is the audit's judgement of every record after the last release: it never
    passes a history in which some person is left fewer values than the model asks."""
    views, _ = random_history(data, 2)
    truth = possible_values(views)
    pinned = {r for r, values in truth.items() if len(values) == 1}
    acc = fold(views)
    for exact_seconds in (0.0, 10.0):
        scope = judge(acc, settle_when_proved=False, exact_seconds=exact_seconds).overall
        assert scope is not None
        refused = {acc.pseudonym(int(r)) for r in scope.breached_records}
        assert pinned <= refused


def test_a_joiner_is_pinned_by_the_difference() -> None:
    """The issue's hand example: the 60s class gains one person; the values of the others
    are release 1's multiset, so the newcomer holds the one value added."""
    old = {"p6": 1, "p7": 1, "p8": 1, "p9": 1}
    diag = {"p6": "cancer", "p7": "cold", "p8": "flu", "p9": "hiv", "p10": "asthma"}
    young = {f"p{i}": 0 for i in range(1, 6)}
    young_values = {f"p{i}": f"a{i}" for i in range(1, 6)}
    views = [release(1, young | old, young_values | diag, record_values=True).view(),
             release(2, young | old | {"p10": 1}, young_values | diag,
                     record_values=True).view()]
    report = audit_views(views, worst=10)
    assert report.overall is not None
    pinned = [f for f in report.overall.findings if f.model == PINNED and f.adversary == "qi"]
    assert len(pinned) == 1 and pinned[0].proved and pinned[0].records == 1
    case = pinned[0].worst[0]
    assert bytes.fromhex(str(case["record"])) == pid("p10")
    assert case["values[v]"] == ["asthma"] and case["releases"] == [2]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 40)), max_size=120),
       st.integers(41, 60))
def test_components_match_a_graph_library(memberships: list[tuple[int, int]],
                                          n_classes: int) -> None:
    """The compiled union-find gives SciPy's connected components, numbered by smallest
    class."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from anonkit.history import _knowledge_c

    pairs = sorted(set(memberships))
    record = np.array([r for r, _ in pairs], dtype=np.int64)
    klass = np.array([c for _, c in pairs], dtype=np.int64)
    out = np.empty(n_classes, dtype=np.int64)
    n = _knowledge_c.components(record, klass, out)
    linked = record[1:] == record[:-1]
    graph = coo_matrix((np.ones(int(linked.sum())), (klass[:-1][linked], klass[1:][linked])),
                       shape=(n_classes, n_classes))
    expected_n, labels = connected_components(graph, directed=False)
    assert n == expected_n
    # the same partition, numbered in order of each component's smallest class
    first = {}
    renumbered = [first.setdefault(int(x), len(first)) for x in labels]
    assert out.tolist() == renumbered


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_uniform_shortcut_agrees_with_the_general_symmetry(data: st.DataObject) -> None:
    """Components whose classes all hold one set of values with equal counts are settled
    without sorting; the statuses are those the general value symmetry gives."""
    from anonkit.history import possible

    views, _ = random_history(data, 2)
    acc = fold(views)
    shortcut = entry_status(acc, "v")
    real = possible._uniform_components
    try:
        possible._uniform_components = (  # type: ignore[assignment]
            lambda comp, g, value, count, n: np.zeros(n, dtype=bool))
        general = entry_status(acc, "v")
    finally:
        possible._uniform_components = real  # type: ignore[assignment]
    assert shortcut.tolist() == general.tolist()
