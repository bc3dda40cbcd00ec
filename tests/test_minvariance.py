"""m-invariance: the partition steps, the sequential engine, the gate and the checker."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonkit.algorithms import minvariance as algo
from anonkit.checker import check
from anonkit.errors import InputError
from anonkit.models.invariance import MUniqueness
from anonkit.releases import HistoryStore, PublishRequest, audit, publish
from anonkit.releases.attacks import CrossReleaseBreachError
from anonkit.releases.minvariance import (
    MInvariance,
    SignatureState,
    check_m_invariance,
    signatures_from_history,
)
from anonkit.releases.publish import _schema
from history_helpers import people

QIS = ["age", "zip", "sex"]


def request(m: int = 4, method: str = "m-invariance", **options: object) -> PublishRequest:
    given = {"m": m, "seed": 7, **options} if method == "m-invariance" else options
    return PublishRequest(dataset="ward", key="pid", quasi_identifiers=QIS,
                          sensitive=["disease"], method=method, options=given)


@pytest.fixture(autouse=True)
def _quiet() -> None:
    warnings.filterwarnings("ignore", message=".*history secret.*")


# -- the split (spec 001) ---------------------------------------------------------------------

BUDDHIST = np.array([(25, 80010), (30, 80020), (61, 82900), (64, 82950)], dtype=float)
CHRISTIAN = np.array([(27, 80015), (33, 80040), (60, 82800), (66, 82990)], dtype=float)
RANGES = np.array([80.0, 3000.0])


def test_spec_001_split_example_known_answer() -> None:
    by_age = algo.split_scores([BUDDHIST, CHRISTIAN], RANGES, 0)
    by_zip = algo.split_scores([BUDDHIST, CHRISTIAN], RANGES, 1)
    assert by_age == pytest.approx([8.6933, 0.9933, 8.5567], abs=5e-5)
    assert list(by_zip) == list(by_age)  # zip gives the same scores: age (earlier) is kept
    assert algo.split_scores([BUDDHIST[:2], CHRISTIAN[:2]], RANGES, 0) == \
        pytest.approx([0.1417], abs=5e-5)
    assert algo.split_scores([BUDDHIST[2:], CHRISTIAN[2:]], RANGES, 0) == \
        pytest.approx([0.1683], abs=5e-5)
    coords = np.concatenate([BUDDHIST, CHRISTIAN])
    classes = algo.perimeter_split(np.zeros(8, dtype=np.int64), np.repeat([0, 1], 4), coords,
                                   RANGES)
    found = sorted(sorted(coords[classes == c, 0].astype(int).tolist())
                   for c in np.unique(classes))
    assert found == [[25, 27], [30, 33], [60, 61], [64, 66]]  # {B25,C27} {B30,C33} ...


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_vectorised_split_is_the_rule(data: st.DataObject) -> None:
    """The level-synchronous split gives the classes of the plainly written rule (distinct
    coordinates, so no tie depends on the order of equal values)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    weighted = data.draw(st.booleans())
    buckets = []
    for _ in range(data.draw(st.integers(1, 4))):
        s, n = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 9))
        buckets.append([rng.permutation(1000)[:n * 3].reshape(n, 3).astype(float)
                        + rng.random((n, 3)) for _ in range(s)])
    ranges = np.array([1000.0, 500.0, 2000.0])
    bucket = np.concatenate([np.full(len(lst) * len(lists), b)
                             for b, lists in enumerate(buckets) for lst in lists[:1]])
    rank = np.concatenate([np.repeat(np.arange(len(lists)), len(lists[0]))
                           for lists in buckets])
    coords = np.concatenate([lst for lists in buckets for lst in lists])
    got = algo.perimeter_split(bucket, rank, coords, ranges, weighted=weighted)
    assert (got >= 0).all()
    mine = sorted(sorted(map(tuple, coords[got == c].tolist())) for c in np.unique(got))
    reference = sorted(sorted(map(tuple, np.array(c).tolist())) for lists in buckets
                       for c in algo.reference_split(lists, ranges, weighted=weighted))
    assert mine == reference


def test_the_split_makes_one_row_per_value_with_ties() -> None:
    rng = np.random.default_rng(3)
    n, s = 50, 4
    coords = rng.integers(0, 3, size=(n * s, 2)).astype(float)  # many equal values
    got = algo.perimeter_split(np.zeros(n * s, dtype=np.int64), np.repeat(np.arange(s), n),
                               coords, np.array([2.0, 2.0]))
    assert len(np.unique(got)) == n
    for c in np.unique(got):
        assert sorted(np.repeat(np.arange(s), n)[got == c]) == list(range(s))


def test_dealing_gives_distinct_values_per_group() -> None:
    rng = np.random.default_rng(5)
    values = rng.permutation(np.repeat(np.arange(6), [50, 50, 40, 23, 20, 20]))  # 50 <= 203/4
    group = algo.deal(values, rng.random((203, 2)), 4)
    for g in np.unique(group):
        members = values[group == g]
        assert len(members) >= 4 and len(set(members)) == len(members)
    with pytest.raises(ValueError, match="not 4-eligible"):
        algo.deal(np.repeat([0, 1], [60, 143]), np.zeros((203, 0)), 4)


# -- infeasible input -------------------------------------------------------------------------


def test_a_dominant_value_is_refused_naming_it_and_the_largest_m(tmp_path: Path) -> None:
    df = people(np.arange(40))
    df["disease"] = np.where(np.arange(40) < 15, "flu", df["disease"])  # flu: 15 of 40
    df.loc[15:, "disease"] = np.array(["a", "b", "c", "d", "e"], dtype=object)[
        np.arange(25) % 5]
    with HistoryStore.open(tmp_path / "h.db", create=True) as store, \
            pytest.raises(InputError, match=r"'flu' is 15 of 40 rows \(37\.5%\).*largest "
                                            r"feasible m is 2"):
        publish(store, df, request(m=3), tmp_path / "r.csv")
    assert not (tmp_path / "r.csv").exists()
    assert not (tmp_path / "r.counterfeits.csv").exists()


def test_a_changed_sensitive_value_is_refused(tmp_path: Path) -> None:
    df = people(np.arange(60))
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, df, request(), tmp_path / "r1.csv")
        changed = df.copy()
        changed.loc[0, "disease"] = "never-seen"
        with pytest.raises(InputError, match=r"pid='P0' now has 'never-seen'"):
            publish(store, changed, request(), tmp_path / "r2.csv")
    assert not (tmp_path / "r2.csv").exists()


# -- a sequence of releases ----------------------------------------------------------------


def sequence(steps: list[tuple[float, float, float]], n: int, seed: int) -> list[np.ndarray]:
    """The ids present in each release: per step, the share deleted, the share of new
    records inserted and the share of earlier leavers coming back."""
    rng = np.random.default_rng(seed)
    present = np.arange(n)
    gone = np.zeros(0, dtype=np.int64)
    next_id = n
    out = [present]
    for delete, insert, back in steps:
        leaving = rng.random(len(present)) < delete
        returning = gone[rng.random(len(gone)) < back]
        gone = np.concatenate([np.setdiff1d(gone, returning), present[leaving]])
        new = np.arange(next_id, next_id + int(insert * n))
        next_id += len(new)
        present = rng.permutation(np.concatenate([present[~leaving], returning, new]))
        out.append(present)
    return out


def publish_sequence(tmp_path: Path, ids: list[np.ndarray], m: int = 4,
                     method: str = "m-invariance", allow_breach: bool = False,
                     **options: object) -> None:
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for i, present in enumerate(ids):
            publish(store, people(present), request(m, method, **options),
                    tmp_path / f"r{i + 1}.csv", shuffle_seed=i, allow_breach=allow_breach)


def check_release_file(path: Path, n_real: int, m: int) -> None:
    """m-unique as an adversary groups the file (by labels, counterfeits counted), every
    class made of whole copies of its signature, and the counterfeit table consistent."""
    released = pd.read_csv(path, dtype=str)
    report = check(released, QIS, "disease", [MUniqueness(m)])
    assert report.passed, report
    classes = released.groupby(QIS, dropna=False)["disease"]
    for _, values in classes:
        counts = values.value_counts()
        assert counts.nunique() == 1 and len(counts) >= m  # each value equally often
    aux = pd.read_csv(path.with_name(f"{path.stem}.counterfeits.csv"), dtype={q: str
                                                                             for q in QIS})
    assert int(aux["counterfeits"].sum()) == len(released) - n_real
    sizes = released.groupby(QIS, dropna=False).size().rename("rows").reset_index()
    joined = aux.merge(sizes, on=QIS, how="outer", indicator=True)
    assert (joined["_merge"] == "both").all()  # one row per released class
    assert (joined["size"] == joined["rows"]).all()
    assert ((joined["counterfeits"] >= 0) & (joined["counterfeits"] < joined["size"])).all()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(n=st.integers(40, 160), m=st.integers(2, 4), seed=st.integers(0, 10_000),
       steps=st.lists(st.tuples(st.sampled_from([0.0, 0.1, 0.3]),
                                st.sampled_from([0.0, 0.1, 0.3]),
                                st.sampled_from([0.0, 0.5, 1.0])), min_size=1, max_size=3))
def test_random_sequences_are_m_invariant(tmp_path_factory: pytest.TempPathFactory, n: int,
                                          m: int, seed: int,
                                          steps: list[tuple[float, float, float]]) -> None:
    tmp_path = tmp_path_factory.mktemp("seq")
    ids = sequence(steps, n, seed)
    publish_sequence(tmp_path, ids, m)
    with HistoryStore.open(tmp_path / "h.db") as store:
        report = check_m_invariance(store, "ward")
        assert report.holds, report.to_dict()
        for i, present in enumerate(ids):
            check_release_file(tmp_path / f"r{i + 1}.csv", len(present), m)
            info = store.release("ward", i + 1)
            view = store.load(info, labels=False)
            # no real record lost or duplicated: the history's records are the input's
            expected = sorted(store.pseudonyms("ward", people(present)["pid"]))
            assert sorted(bytes(k) for k in view.record_keys) == expected
            assert info.n_input_rows == len(present)
        assert not audit(store, "ward").breached


def test_a_returning_record_keeps_its_signature_from_the_whole_history(tmp_path: Path
                                                                       ) -> None:
    first = np.arange(120)
    ids = [first, first[20:], np.concatenate([first[20:], np.arange(200, 230)]),
           np.concatenate([first, np.arange(200, 230)])]  # 0..19 away for two releases
    publish_sequence(tmp_path, ids)
    with HistoryStore.open(tmp_path / "h.db") as store:
        report = check_m_invariance(store, "ward")
        views = [store.load(info, labels=False) for info in store.releases("ward")]
        state = SignatureState.from_bytes(store.method_state(store.release("ward", 4)) or b"")
        rebuilt = signatures_from_history(store, "ward", "disease")
    assert report.holds and report.records_compared >= 120
    # the state carried forward and the history rebuilt agree on every record
    assert (state.keys == rebuilt.keys).all()
    for key, sig in zip(state.keys[:50], state.signature[:50], strict=True):
        ours = set(state.signature_texts(int(sig)))
        theirs = set(rebuilt.signature_texts(int(rebuilt.lookup(np.array([key]))[0])))
        assert ours == theirs
    # the records back in release 4 have the signature they had in release 1
    def signature(view: object, key: bytes) -> set[str]:
        keys = [bytes(k) for k in view.record_keys]  # type: ignore[attr-defined]
        c = view.record_classes[keys.index(key)]  # type: ignore[attr-defined]
        cv = view.values["disease"]  # type: ignore[attr-defined]
        return set(cv.value[cv.class_index == c])
    with HistoryStore.open(tmp_path / "h.db") as store:
        keys = store.pseudonyms("ward", people(np.arange(20))["pid"])
    for key in keys:
        assert signature(views[0], key) == signature(views[3], key)


def test_a_history_started_by_another_method_rebuilds_signatures(tmp_path: Path) -> None:
    ids = [np.arange(100), np.arange(10, 110), np.arange(5, 115)]
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, people(ids[0]), request(), tmp_path / "r1.csv")
        publish(store, people(ids[1]), request(4, "mondrian", k=4), tmp_path / "r2.csv",
                allow_breach=True)
        publish(store, people(ids[2]), request(), tmp_path / "r3.csv", allow_breach=True)
        report = check_m_invariance(store, "ward")
    # the Mondrian release in the middle breaks the signatures; releases 1 and 3 agree
    assert report.n_violations > 0
    seqs = {tuple(v["releases"]) for v in report.violations}  # type: ignore[arg-type]
    assert seqs <= {(1, 2), (2, 3)}


# -- the gate and the audit ----------------------------------------------------------------


CHURN = [(0.1, 0.1, 0.5)] * 5  # 6 releases: deletions, insertions, records coming back


def test_the_audit_of_an_m_invariant_sequence_finds_no_breach(tmp_path: Path) -> None:
    ids = sequence(CHURN, 200, 1)
    publish_sequence(tmp_path, ids)  # the gate lets every release through
    with HistoryStore.open(tmp_path / "h.db") as store:
        report = audit(store, "ward")
        assert check_m_invariance(store, "ward").holds
    assert len(report.releases) == 6 and not report.breached
    assert report.records_breached == 0
    # the row-linking adversary is outside m-invariance's claim: shown, labelled, not counted
    linkage = [f for scope in report.pairs for f in scope.findings
               if f.adversary == "linkage"]
    assert linkage and all(f.outside_claim for f in linkage)
    assert all(not f.outside_claim for scope in report.pairs for f in scope.findings
               if f.adversary == "qi")
    assert report.records_outside_claim > 0
    assert "outside the claimed threat model" in report.summary()
    assert report.to_dict()["records_breached_outside_claimed_threat_model"] > 0
    from anonkit.releases.report import render_html

    page = render_html(report)
    assert "linkage <i>(outside the claimed threat model)</i>" in page


def test_mondrian_on_the_same_churn_is_refused_and_its_breaches_shown(tmp_path: Path
                                                                       ) -> None:
    ids = sequence(CHURN, 200, 1)
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, people(ids[0]), request(4, "mondrian", k=4), tmp_path / "m1.csv")
        refused = 0
        for i, present in enumerate(ids[1:], start=2):
            try:
                publish(store, people(present), request(4, "mondrian", k=4),
                        tmp_path / f"m{i}.csv")
            except CrossReleaseBreachError:
                refused += 1
                assert not (tmp_path / f"m{i}.csv").exists()
                publish(store, people(present), request(4, "mondrian", k=4),
                        tmp_path / f"m{i}.csv", allow_breach=True)
        report = audit(store, "ward")
        invariance = check_m_invariance(store, "ward", m=4)
    assert refused >= 1
    assert report.breached and report.records_breached > 0
    # Mondrian claims nothing across releases: no finding is outside its claim
    assert not any(f.outside_claim for scope in report.pairs for f in scope.findings)
    assert not invariance.holds


# -- utility and output ----------------------------------------------------------------------


def test_release_metrics_counterfeits_and_count_query_error(tmp_path: Path) -> None:
    ids = sequence([(0.3, 0.0, 0.0)], 160, 2)  # deletions only: counterfeits needed
    figures: list[dict[str, float]] = []
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for i, present in enumerate(ids):
            found: dict[str, float] = {}
            publish(store, people(present), request(), tmp_path / f"r{i + 1}.csv",
                    metrics=found)
            figures.append(found)
    assert figures[1]["m_invariance.counterfeits"] > 0
    for f in figures:
        assert 0.0 <= f["count_query.relative_error"] < 10.0
        assert f["count_query.queries"] == 200
    released = pd.read_csv(tmp_path / "r2.csv")
    assert len(released) == len(ids[1]) + figures[1]["m_invariance.counterfeits"]
    assert "pid" not in released.columns


def test_the_engine_keeps_every_input_row_once_and_marks_counterfeits() -> None:
    from anonkit.release import Provenance

    df = people(np.arange(90))
    req = request()
    schema = _schema(df, req)
    keys = np.array([i.to_bytes(16, "big") for i in range(90)], dtype="S16")
    first = MInvariance(4, seed=1).next_release(df, schema, keys, SignatureState.empty())
    assert first.method_state is not None
    later = df.iloc[15:].reset_index(drop=True)
    second = MInvariance(4, seed=1).next_release(later, _schema(later, req), keys[15:],
                                                 SignatureState.from_bytes(first.method_state))
    for release, n in ((first, 90), (second, 75)):
        _, rows = release.input_rows()
        assert sorted(rows.tolist()) == list(range(n))  # each input row exactly once
        fake = release.row_provenance() == Provenance.COUNTERFEIT
        assert int(fake.sum()) == release.n_counterfeits == len(release.data) - n
        assert release.passed
    assert second.n_counterfeits > 0


def test_classes_are_generalized_to_the_lowest_common_ancestor() -> None:
    from anonkit.hierarchy.builders import interval_hierarchy

    df = people(np.arange(120))
    hierarchy = interval_hierarchy(df["age"], [5, 20])
    req = PublishRequest(dataset="ward", key="pid", quasi_identifiers=QIS,
                         sensitive=["disease"], method="m-invariance",
                         options={"m": 4, "seed": 1}, hierarchies={"age": hierarchy})
    keys = np.array([i.to_bytes(16, "big") for i in range(120)], dtype="S16")
    release = MInvariance(4, seed=1).next_release(df, _schema(df, req), keys,
                                                  SignatureState.empty())
    leaf = {str(row[0]): row for row in hierarchy.labels.tolist()}
    positions, rows = release.input_rows()
    for c in np.unique(release.class_ids):
        here = release.class_ids[positions] == c
        ages = df["age"].to_numpy()[rows[here]]
        paths = [leaf[str(a)] for a in ages]
        lowest = next(level for level in range(hierarchy.height)
                      if len({p[level] for p in paths}) == 1)
        labels = set(release.data["age"].astype(str).to_numpy()[positions[here]])
        assert labels == {str(paths[0][lowest])}


def test_the_html_report_shows_the_count_query_error(tmp_path: Path) -> None:
    from anonkit.report import render_report

    df = people(np.arange(80))
    keys = np.array([i.to_bytes(16, "big") for i in range(80)], dtype="S16")
    release = MInvariance(4, seed=2).next_release(df, _schema(df, request()), keys,
                                                  SignatureState.empty())
    page = render_report(release, df, tmp_path / "r.html").read_text()
    assert "COUNT query error" in page
    assert f"{release.metrics['count_query.relative_error'] * 100:.2f} %" in page


def test_coarse_quasi_identifiers_widen_or_merge_labels_and_stay_invariant(
        tmp_path: Path) -> None:
    """One QI of 40 ages: classes collide on labels. Those of different signatures get a
    widened label where one is free; classes of new records only may stay merged (they take
    the merged values as signature); the sequence stays m-invariant."""
    req = PublishRequest(dataset="ward", key="pid", quasi_identifiers=["age"],
                         sensitive=["disease"], identifiers=["zip", "sex", "income"],
                         method="m-invariance", options={"m": 2, "seed": 1})
    sizes = []
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for i, ids in enumerate([np.arange(400), np.arange(40, 440), np.arange(80, 480)]):
            df = people(ids)
            df["age"] = 20 + ids % 40
            info = publish(store, df, req, tmp_path / f"r{i}.csv")
            sizes.append(info.n_classes)
            released = pd.read_csv(tmp_path / f"r{i}.csv", dtype=str)
            assert check(released, ["age"], "disease", [MUniqueness(2)]).passed
        assert check_m_invariance(store, "ward").holds
        assert not audit(store, "ward").breached
    assert min(sizes) < 200  # some classes merged: fewer than 400 / m classes as released
