"""What the adversaries know per record (:mod:`anonkit.history.knowledge`): hand-computed
cases, a brute force in plain Python sets, and agreement with the audit's figures."""

from __future__ import annotations

import importlib
import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonkit.errors import HistoryError
from anonkit.history.attacks import (
    PINNED,
    CrossReleaseBreachError,
    Requirement,
    audit,
    audit_views,
)
from anonkit.history.knowledge import (
    Knowledge,
    KnowledgeRebuiltWarning,
    knowledge,
    knowledge_views,
)
from anonkit.history.publish import publish
from anonkit.history.records import ReleaseView
from anonkit.history.schema import knowledge_table
from anonkit.history.store import HistoryStore
from history_helpers import churned_versions, classes_and_bags, make_request, pid, release

# the modules whose names the tests replace: the engine (its propagation) and the kept
# state (the fold that rebuilds the knowledge when none is kept)
engine_module = importlib.import_module("anonkit.history.knowledge.engine")
state_module = importlib.import_module("anonkit.history.knowledge.state")


def test_what_is_known_of_each_record_by_hand(tmp_path: Path) -> None:
    """Release 1 classes {a,b,c} {d,e,f}; release 2 {a,e,f} {b,c,d}; g only in release 1
    (with a counterfeit row 'cold' added to its class)."""
    values = {"a": "flu", "b": "flu", "c": "hiv", "d": "hiv", "e": "cold", "f": "cold",
              "g": "flu"}
    first = {"a": 0, "b": 0, "c": 0, "d": 1, "e": 1, "f": 1, "g": 2}
    second = {"a": 0, "e": 0, "f": 0, "b": 1, "c": 1, "d": 1}
    labels_1 = {0: ["[20-29]", "{F,M}", "north"], 1: ["[30-39]", "{M}", "south"],
                2: [40, "{F}", "east"]}
    labels_2 = {0: ["25-34", "{F,X}", "north"], 1: ["[20-39]", "{F,M}", "*"]}
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        store.commit_release(release(1, first, values, labels=labels_1,
                                     fakes={2: ["cold"]}))
        store.commit_release(release(2, {k: second[k] for k in second},
                                     {k: values[k] for k in second}, labels=labels_2))
        known = knowledge(store, "hand")
    assert isinstance(known, Knowledge) and len(known) == 7 and known.releases == [1, 2]
    a, b, g = known.index(pid("a")), known.index(pid("b")), known.index(pid("g"))
    assert known.releases_of(a) == {1: 0, 2: 0} and known.releases_of(g) == {1: 2}
    v = known.attributes["v"]
    # a: {flu,flu,hiv} & {flu,cold,cold} = {flu}; alone in both classes
    assert known.candidates[a] == 1 and known.candidate_records(a) == [pid("a")]
    assert v.values(a) == ["flu"] and v.distinct[a] == 1 and known.candidates_qi[a] == 1
    # b (and c): {flu,flu,hiv} & {flu,hiv,hiv} = {flu, hiv}: one of 1 + 1 people
    assert sorted(known.candidate_records(b)) == [pid("b"), pid("c")]
    assert sorted(v.values(b)) == ["flu", "hiv"] and known.candidates_qi[b] == 2
    # g: one release, a class of 2 rows of which 1 counterfeit: one person, two values
    assert known.candidates[g] == 1 and known.candidates_qi[g] == 1
    assert sorted(v.values(g)) == ["cold", "flu"] and v.distinct[g] == 2
    assert v.candidates_qi[g] == 2  # the multisets keep the fake's value
    assert known.n_releases.tolist().count(2) == 6
    # QI boxes: intervals intersect, sets intersect, anything else: the labels seen
    age, sex, zone = (known.quasi_identifiers[q] for q in ("age", "sex", "zone"))
    assert age.value(a) == [25, 29] and age.kind[a] == "interval"
    assert sex.value(a) == ["F"] and sex.kind[a] == "set"
    assert zone.value(a) == ["north", "north"] and zone.kind[a] == "labels"
    assert age.value(b) == [20, 29] and sex.value(b) == ["F", "M"]
    assert zone.value(b) == ["north", "*"]
    d = known.index(pid("d"))
    assert age.value(d) == [30, 39] and sex.value(d) == ["M"]
    assert age.value(g) == [40, 40] and sex.value(g) == ["F"] and zone.value(g) == ["east"]
    record = known.record(b)
    assert record["candidates"] == 2 and record["qi[age]"] == [20, 29]
    assert json.loads(json.dumps(record)) == record
    frame = known.to_frame()
    assert len(frame) == 7 and frame.loc[a, "values[v]"] == ["flu"]


def test_ranges_of_a_numeric_attribute_and_disjoint_boxes(tmp_path: Path) -> None:
    values = {"a": 10.0, "b": 20.0, "c": 30.0, "d": np.nan}
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        store.commit_release(release(1, {"a": 0, "b": 0, "c": 0, "d": 0}, values,
                                     labels={0: ["[-5, 3]"]}, numeric=True))
        store.commit_release(release(2, {"a": 0, "b": 0, "c": 1, "d": 0}, values,
                                     labels={0: ["[4-9]"], 1: [7]}, numeric=True))
        known = knowledge(store, "hand", [pid("d"), pid("c")])
    assert [bytes(r) for r in known.records] == [pid("d"), pid("c")]
    v = known.attributes["v"]
    assert v.distinct.tolist() == [3, 1] and v.distinct_present.tolist() == [2, 1]
    assert v.low.tolist() == [10.0, 30.0] and v.high.tolist() == [20.0, 30.0]
    assert v.values(0) == [10, 20, None]
    # the boxes do not meet ([-5, 3] and [4, 9]): low > high says so
    age = known.quasi_identifiers["age"]
    assert age.value(0) == [4, 3] and age.value(1) == [7, 3]
    with pytest.raises(HistoryError, match="1 of the 1 records given are in no release"):
        knowledge(store, "hand", [pid("zz")])


def test_knowledge_of_views_without_labels_has_no_boxes() -> None:
    views = [release(1, {"a": 0, "b": 0}, {"a": "x", "b": "y"}).view(),
             release(2, {"a": 0, "b": 1}, {"a": "x", "b": "y"}).view()]
    known = knowledge_views(views)
    assert known.quasi_identifiers == {}
    assert known.candidates.tolist() == [1, 1]


# -- the brute force and the audit ------------------------------------------------------------


def random_views(seed: int, n_records: int = 60, n_releases: int = 4) -> list[ReleaseView]:
    """A random history: records come and go, classes are random, some releases are
    permuted, some classes have counterfeit rows; every record keeps its value."""
    rng = np.random.default_rng(seed)
    keys = [f"r{i:03d}" for i in range(n_records)]
    values = {k: float(rng.integers(0, 6)) if rng.random() > 0.05 else np.nan for k in keys}
    requirements = (Requirement("k-anonymity", "candidates", 3),
                    Requirement("distinct l-diversity", "distinct", 2),
                    Requirement("(k,e)-anonymity", "distinct_present", 2, "v"),
                    Requirement("(k,e)-anonymity", "range", 2))
    views = []
    for seq in range(1, n_releases + 1):
        present = [k for k in keys if rng.random() < 0.8]
        n_classes = max(len(present) // 4, 1)
        members = {k: int(c) for k, c in zip(present, rng.permutation(
            np.arange(len(present)) % n_classes), strict=True)}
        fakes = {int(c): [float(x) for x in rng.integers(0, 6, size=rng.integers(1, 3))]
                 for c in range(n_classes) if rng.random() < 0.3}
        kind = "permuted" if rng.random() < 0.3 else "generalized"
        views.append(release(seq, members, {k: values[k] for k in present}, kind=kind,
                             fakes=fakes, numeric=True,
                             requirements=requirements[:1 + seq % 4]).view())
    return views


def brute_knowledge(views: list[ReleaseView]) -> dict[bytes, dict[str, object]]:
    """Per record, from the views with Python sets: its classes' intersections."""
    classes = [dict(zip(v.record_keys.tolist(), v.record_classes.tolist(), strict=True))
               for v in views]
    out = {}
    for key in set().union(*classes):
        scope = [i for i, c in enumerate(classes) if key in c]
        shared = set.intersection(*({k for k, c in classes[i].items()
                                     if c == classes[i][key]} for i in scope))
        candidates = {k for k in shared if all(k in classes[i] for i in scope)}
        bags = []
        for i in scope:
            cv = views[i].values["v"]
            mine = cv.class_index == classes[i][key]
            bags.append(Counter({("nan" if np.isnan(x) else x): int(n) for x, n in
                                 zip(cv.value[mine], cv.count[mine], strict=True)}))
        left = set.intersection(*(set(b) for b in bags))
        people = min(int(views[i].real_sizes[classes[i][key]]) for i in scope)
        bound = sum(min(b[x] for b in bags) for x in left)
        out[key] = {"candidates": len(candidates), "left": left,
                    "candidates_qi": min(people, bound),
                    "row_values": any(views[i].info.release_kind != "permuted"
                                      for i in scope)}
    return out


@pytest.mark.parametrize("seed", range(6))
def test_knowledge_matches_a_brute_force(seed: int) -> None:
    views = random_views(seed)
    known = knowledge_views(views)
    truth = brute_knowledge(views)
    v = known.attributes["v"]
    assert len(known) == len(truth)
    for i, key in enumerate(known.records):
        expect = truth[bytes(key)]
        assert known.candidates[i] == expect["candidates"]
        assert known.candidates_qi[i] == expect["candidates_qi"]
        assert known.row_values[i] == expect["row_values"]
        got = {"nan" if x is None else x for x in v.values(i)}
        assert got == expect["left"]
        present = [x for x in expect["left"] if x != "nan"]
        assert v.distinct_present[i] == len(present)
        if present:
            assert (v.low[i], v.high[i]) == (min(present), max(present))


@pytest.mark.parametrize("seed", range(6))
def test_the_audit_of_all_releases_is_what_knowledge_reports(seed: int) -> None:
    """The audit's all-releases scope, record by record, from knowledge()'s figures: every
    record is judged (one in a single release too), the same proved breaches per finding
    (without the exact check, proved means the propagation's values fail), and the worst
    cases carry knowledge()'s numbers."""
    views = random_views(seed)
    report = audit_views(views, worst=1000, exact_seconds=0)
    known = knowledge_views(views)
    assert report.overall is not None
    v = known.attributes["v"]
    expected: Counter[tuple[str, str, str, str | None]] = Counter()
    breached = np.zeros(len(known), dtype=bool)
    for i in range(len(known)):
        seqs = [s for s, c in zip(known.releases, known.classes[:, i], strict=True) if c >= 0]
        reqs: dict[tuple[str, str, str | None], float] = {}
        for view in views:
            if view.info.seq in seqs:
                for d in view.info.requirements:
                    r = Requirement.from_dict(d)
                    key = (r.model, r.measure, r.attribute)
                    reqs[key] = max(reqs.get(key, 0.0), r.threshold)
        homogeneous = any(np.diff(np.searchsorted(
            view.values["v"].class_index, [c, c + 1]))[0] == 1
            for view, c in zip(views, known.classes[:, i], strict=True) if c >= 0)
        for adversary, cand, d, dp, span in (
                ("qi", known.candidates_qi[i], v.qi_distinct[i], v.qi_distinct_present[i],
                 v.qi_range[i]),
                ("linkage", known.candidates[i], v.linkage_distinct[i],
                 v.linkage_distinct_present[i], v.linkage_range[i])):
            flags = set()
            for (model, measure, _attr), threshold in reqs.items():
                level = {"candidates": cand, "distinct": d, "distinct_present": dp,
                         "range": span}[measure]
                if measure != "candidates" and d < 1:
                    continue
                if measure == "candidates" and known.n_releases[i] < 2:
                    continue  # its own class: no cross-release identity
                if not np.isnan(level) and level < threshold:
                    flags.add((adversary, model, measure,
                               None if measure == "candidates" else "v"))
            if d == 1 and not homogeneous:  # homogeneous in one release: not cross-release
                flags.add((adversary, PINNED, "distinct", "v"))
            expected.update(flags)
            breached[i] |= bool(flags)
    got = {(f.adversary, f.model, f.measure, f.attribute): f.records
           for f in report.overall.findings if f.proved}
    assert got == dict(expected)
    # on top: records whose values proved possible fail (not ruled out)
    assert report.overall.records_breached >= int(breached.sum())
    assert report.overall.records_compared == len(known)
    for finding in report.overall.findings:
        for case in finding.worst:
            i = known.index(bytes.fromhex(str(case["record"])))
            if finding.adversary == "qi":
                assert case["candidates_qi"] == known.candidates_qi[i]
                assert case["values[v]"] == v.deduced(i)[:10]
                assert set(case["proved_possible[v]"]) <= set(v.deduced(i))
            else:
                assert case["candidates_linkage"] == known.candidates[i]
            assert {int(s): c for s, c in case["classes"].items()} == known.releases_of(i)


def test_knowledge_of_a_published_history(tmp_path: Path) -> None:
    """On releases published the usual way: sorted-chunks' range and set labels become
    boxes that contain every record's true quasi-identifiers."""
    versions = churned_versions(300, 3, churn=0.2, seed=4)
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for n, df in enumerate(versions):
            publish(store, df, make_request(sensitive=("disease", "income")),
                    tmp_path / f"r{n}.csv", allow_breach=True)
        everyone = pd.concat(versions).drop_duplicates("pid").reset_index(drop=True)
        known = knowledge(store, "census", store.pseudonyms("census", everyone["pid"]))
    age, sex = known.quasi_identifiers["age"], known.quasi_identifiers["sex"]
    assert set(age.kind) == {"interval"}
    assert (age.low <= everyone["age"]).all() and (everyone["age"] <= age.high).all()
    for i in range(0, len(everyone), 17):
        if sex.kind[i] == "set":
            assert everyone["sex"][i] in sex.value(i)
        assert everyone["disease"][i] in known.attributes["disease"].values(i)
        assert everyone["income"][i] in known.attributes["income"].values(i)


# -- both adversaries against an attacker that tries every assignment ------------------------


def brute_possible(views: list[ReleaseView], truth: dict[bytes, str]
                   ) -> tuple[dict[bytes, set[str]], dict[bytes, set[str]]]:
    """Per record (present in two or more releases): the values an attacker who knows
    every record's classes can still give it -- every assignment of values to records whose
    class multisets are the released ones -- and, for an attacker who also links rows, the
    values of the linked row chains that pass through all the record's classes."""
    classes, bags = classes_and_bags(views)
    records = sorted(set().union(*classes))
    alphabet = sorted(set(truth.values()))
    possible: dict[bytes, set[str]] = {r: set() for r in records}
    for assignment in itertools.product(alphabet, repeat=len(records)):
        given = dict(zip(records, assignment, strict=True))
        if all(Counter(given[r] for r, cc in cls.items() if cc == c) == bag
               for cls, per_class in zip(classes, bags, strict=True)
               for c, bag in per_class.items()):
            for r in records:
                possible[r].add(given[r])
    linked: dict[bytes, set[str]] = {}
    for r in records:
        mine = [i for i, cls in enumerate(classes) if r in cls]
        linked[r] = {truth[s] for s in records
                     if all(classes[i].get(s) == classes[i][r] for i in mine)}
    scope = {r for r in records if sum(r in cls for cls in classes) >= 2}
    return ({r: possible[r] for r in scope}, {r: linked[r] for r in scope})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_both_adversaries_against_every_assignment(data: st.DataObject) -> None:
    """Random 2- and 3-release histories of a few records: the qi adversary's deduction
    never rules out a value some assignment allows (and never leaves more than the plain
    intersection did); the linkage adversary's values are exactly the linked chains'."""
    n = data.draw(st.integers(4, 7), label="records")
    keys = [chr(ord("a") + i) for i in range(n)]
    truth = {k: data.draw(st.sampled_from(["x", "y", "z"]), label=f"value {k}") for k in keys}
    views = []
    for seq in range(1, data.draw(st.integers(2, 3), label="releases") + 1):
        present = [k for k in keys if data.draw(st.booleans(), label=f"{seq} has {k}")
                   or k in keys[:2]]
        members = {k: data.draw(st.integers(0, 2), label=f"{seq} class of {k}")
                   for k in present}
        used = sorted(set(members.values()))
        members = {k: used.index(c) for k, c in members.items()}
        views.append(release(seq, members, {k: truth[k] for k in present},
                             record_values=True).view())
    possible, linked = brute_possible(views, {pid(k): x for k, x in truth.items()})
    known = knowledge_views(views)
    v = known.attributes["v"]
    for r, values in possible.items():
        i = known.index(r)
        assert len(values) <= v.qi_distinct[i] <= v.distinct[i], r
        assert v.linkage_distinct[i] == len(linked[r]), r


# -- the compiled propagation against the numpy rule it replaced -----------------------------


def reference_propagate(low: np.ndarray, high: np.ndarray, atom: np.ndarray,
                        atom_size: np.ndarray, link_start: np.ndarray, link_g: np.ndarray,
                        count: np.ndarray, need: np.ndarray, s_low: np.ndarray,
                        s_high: np.ndarray) -> tuple[np.ndarray, ...]:
    """Jacobi rounds in numpy: every live entry's bounds from each of its multiset sums,
    then from its atom's sum, all applied at once; an entry whose bounds meet is dropped
    (its value stays in its sums); bounds that cross undo everything."""
    low, high = low.astype(np.float64), high.astype(np.float64)
    s_low, s_high = s_low.copy(), s_high.copy()
    start = (low.copy(), high.copy(), s_low.copy(), s_high.copy())
    link_e = np.repeat(np.arange(len(low)), np.diff(link_start))
    out_low, out_high = low.copy(), high.copy()
    alive = np.arange(len(low))
    size = atom_size.astype(np.float64).copy()
    rounds = 0
    for rounds in range(1, engine_module._MAX_ROUNDS + 1):
        cap = count[link_g] - (s_low[link_g] - low[link_e])
        floor = need[link_g] - (s_high[link_g] - high[link_e])
        hi2, lo2 = high.copy(), low.copy()
        np.minimum.at(hi2, link_e, cap)
        np.maximum.at(lo2, link_e, floor)
        a_low = np.bincount(atom, lo2, minlength=len(size))[atom]
        a_high = np.bincount(atom, hi2, minlength=len(size))[atom]
        hi3 = np.minimum(hi2, size[atom] - (a_low - lo2))
        lo3 = np.maximum(lo2, size[atom] - (a_high - hi2))
        if (lo3 > hi3).any():
            return (*start, rounds, True)
        d_low, d_high = lo3 - low, hi3 - high
        changed = bool(d_low.any() or d_high.any())
        s_low += np.bincount(link_g, d_low[link_e], minlength=len(s_low))
        s_high += np.bincount(link_g, d_high[link_e], minlength=len(s_high))
        low, high = lo3, hi3
        out_low[alive], out_high[alive] = low, high
        if not changed:
            break
        fixed = low == high
        size -= np.bincount(atom[fixed], low[fixed], minlength=len(size))
        keep = ~fixed
        renumber = np.cumsum(keep) - 1
        on = keep[link_e]
        link_e, link_g = renumber[link_e[on]], link_g[on]
        alive, low, high, atom = alive[keep], low[keep], high[keep], atom[keep]
    return out_low, out_high, s_low, s_high, rounds, False


def test_compiled_propagation_matches_the_numpy_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every propagation of random histories (with counterfeits, permuted releases and
    records that come and go), and random problems that mostly contradict themselves: the
    same bounds, sums, rounds and verdict."""
    calls = []
    compiled = engine_module._propagate

    def both(low, high, atom, atom_size, link_start, link_g, count, need, s_low, s_high):  # type: ignore[no-untyped-def]
        expected = reference_propagate(low, high, atom, atom_size, link_start, link_g,
                                       count, need, s_low, s_high)
        got = compiled(low, high, atom, atom_size, link_start, link_g, count, need,
                       s_low.copy(), s_high.copy())
        calls.append(expected[5])
        for a, b in zip(got[:4], expected[:4], strict=True):
            np.testing.assert_array_equal(a, b)
        assert got[4] == expected[4]
        return compiled(low, high, atom, atom_size, link_start, link_g, count, need, s_low,
                        s_high)

    monkeypatch.setattr(engine_module, "_propagate", both)
    for seed in range(8):
        knowledge_views(random_views(seed, n_releases=5))
    rng = np.random.default_rng(0)
    for _ in range(300):
        n_atoms, n_keys = int(rng.integers(1, 6)), int(rng.integers(1, 8))
        n = int(rng.integers(1, 12))
        atom = rng.integers(0, n_atoms, n)
        n_links = rng.integers(0, 4, n)
        link_start = np.concatenate([[0], np.cumsum(n_links)])
        link_g = rng.integers(0, n_keys, int(link_start[-1]))
        high = rng.integers(0, 4, n).astype(np.float64)
        count = rng.integers(0, 6, n_keys).astype(np.float64)
        s_low = np.zeros(n_keys)
        s_high = np.bincount(link_g, high[np.repeat(np.arange(n), n_links)],
                             minlength=n_keys)
        both(np.zeros(n), high, atom, rng.integers(1, 4, n_atoms).astype(np.float64),
             link_start, link_g, count, count - rng.integers(0, 2, n_keys), s_low, s_high)
    assert any(calls) and not all(calls)  # both verdicts were compared


# -- the knowledge the history keeps ---------------------------------------------------------


def _published(tmp_path: Path, n: int = 4) -> tuple[HistoryStore, list[pd.DataFrame]]:
    versions = churned_versions(400, n, churn=0.2, seed=9)
    store = HistoryStore.open(tmp_path / "h.db", create=True)
    for i, df in enumerate(versions[:-1]):
        publish(store, df, make_request(sensitive=("disease", "income")),
                tmp_path / f"r{i}.csv", allow_breach=True)
    return store, versions


def test_the_gate_reads_no_earlier_release(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Publishing release n reads the knowledge kept after release n - 1, never the
    earlier releases themselves: the gate's cost does not grow with the history."""
    store, versions = _published(tmp_path)
    with store:

        def no_load(*args: object, **kwargs: object) -> None:
            raise AssertionError("the gate read an earlier release")

        monkeypatch.setattr(HistoryStore, "load", no_load)
        request = make_request(sensitive=("disease", "income"))
        with pytest.raises(CrossReleaseBreachError, match="refused: with the earlier releases"):
            publish(store, versions[-1], request, tmp_path / "r.csv")
        info = publish(store, versions[-1], request, tmp_path / "r.csv", allow_breach=True)
        kept = store.knowledge_state("census")
        assert kept is not None and kept[0] == info.seq == len(versions)


def test_the_kept_knowledge_is_that_of_every_release(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """After each publish the history keeps what folding every release gives, and the
    audit judges it without folding anything."""
    store, _ = _published(tmp_path, n=5)
    with store:
        views = [store.load(info, labels=False) for info in store.releases("census")]
        rebuilt = audit_views(views, worst=1000).to_dict()
        known = knowledge(store, "census")
        folded = knowledge_views(views)

        def no_fold(*args: object) -> None:
            raise AssertionError("the audit rebuilt the knowledge")

        monkeypatch.setattr(state_module, "fold", no_fold)
        kept = audit(store, "census", worst=1000).to_dict()
    kept.pop("row_wise_intersections")
    rebuilt.pop("row_wise_intersections")
    # the releases forced over the gate are the history's to tell, not the views'
    assert [o["seq"] for o in kept.pop("gate_overrides")] == list(range(2, len(views) + 1))
    rebuilt.pop("gate_overrides")
    assert kept == rebuilt and kept["records_breached"] > 0
    assert known.records.tolist() == folded.records.tolist()
    for name in ("candidates", "candidates_qi", "classes"):
        np.testing.assert_array_equal(getattr(known, name), getattr(folded, name))
    for attr in ("disease", "income"):
        for field_ in ("distinct", "qi_distinct", "linkage_distinct", "qi_range"):
            np.testing.assert_array_equal(getattr(known.attributes[attr], field_),
                                          getattr(folded.attributes[attr], field_))


def test_damaged_kept_knowledge_is_rebuilt_with_a_warning(tmp_path: Path) -> None:
    import sqlalchemy as sa

    store, _ = _published(tmp_path)
    with store:
        before = audit(store, "census").to_dict()
        with store.engine.begin() as conn:
            cipher = bytearray(conn.execute(sa.select(knowledge_table.c.state)).scalar_one())
            cipher[len(cipher) // 2] ^= 1
            conn.execute(knowledge_table.update().values(state=bytes(cipher)))
        with pytest.warns(KnowledgeRebuiltWarning, match="damaged"):
            after = audit(store, "census").to_dict()
    assert after == before
