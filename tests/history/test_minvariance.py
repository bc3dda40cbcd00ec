"""m-invariance: the partition steps, the sequential engine, the gate and the checker."""

from __future__ import annotations

import warnings
from collections import deque
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonkit.algorithms import minvariance as algo
from anonkit.checker import check
from anonkit.errors import InputError, ModelNotMetError
from anonkit.hierarchy import Hierarchy
from anonkit.history import HistoryStore, PublishRequest, audit, publish
from anonkit.history.attacks import CrossReleaseBreachError
from anonkit.history.engines.minvariance import (
    MInvariance,
    SignatureState,
    _key_order,
    _positions_in,
    _row_groups,
    signatures_from_history,
)
from anonkit.history.invariance import check_m_invariance
from anonkit.history.publish import _schema, release_views
from anonkit.models.invariance import MUniqueness
from anonkit.release import Release
from history_helpers import people
from oracles import minvariance as oracle

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
    by_age = oracle.split_scores([BUDDHIST, CHRISTIAN], RANGES, 0)
    by_zip = oracle.split_scores([BUDDHIST, CHRISTIAN], RANGES, 1)
    assert by_age == pytest.approx([8.6933, 0.9933, 8.5567], abs=5e-5)
    assert list(by_zip) == list(by_age)  # zip gives the same scores: age (earlier) is kept
    assert oracle.split_scores([BUDDHIST[:2], CHRISTIAN[:2]], RANGES, 0) == \
        pytest.approx([0.1417], abs=5e-5)
    assert oracle.split_scores([BUDDHIST[2:], CHRISTIAN[2:]], RANGES, 0) == \
        pytest.approx([0.1683], abs=5e-5)
    coords = np.concatenate([BUDDHIST, CHRISTIAN])
    classes = algo.perimeter_split(np.zeros(8, dtype=np.int64), np.repeat([0, 1], 4), coords,
                                   RANGES)
    found = sorted(sorted(coords[classes == c, 0].astype(int).tolist())
                   for c in np.unique(classes))
    assert found == [[25, 27], [30, 33], [60, 61], [64, 66]]  # {B25,C27} {B30,C33} ...


def test_exact_ties_go_to_the_earliest_qi() -> None:
    """Issue 27, item 5: every QI scores exactly 79/1000 here, but as floats the sums differ
    in the last bit, and the kernel used to keep QI 2. The rule keeps QI 0."""
    a = np.array([[1.0, 3.0, 4.0], [4.0, 3.0, 4.0]])
    b = np.array([[0.0, 1.0, 4.0], [1.0, 4.0, 2.0]])
    ranges = np.array([3000.0, 80.0, 3000.0])
    assert [oracle.split_scores([a, b], ranges, q) for q in range(3)] == \
        [[Fraction(79, 1000)]] * 3

    def in_floats(left: list[float], right: list[float]) -> float:  # as a kernel sums
        halves = [0.0, 0.0]
        for h, widths in enumerate((left, right)):
            for width, span in zip(widths, ranges.tolist(), strict=True):
                halves[h] += width / span
        return 2 * halves[0] + 2 * halves[1]

    # QI 0 (and 1) cut A(1,3,4) B(0,1,4) | A(4,3,4) B(1,4,2); QI 2 cuts B by its last QI
    assert in_floats([1, 2, 0], [3, 1, 2]) > in_floats([0, 1, 2], [4, 2, 0])
    coords = np.concatenate([a, b])
    classes = algo.perimeter_split(np.zeros(4, dtype=np.int64), np.repeat([0, 1], 2), coords,
                                   ranges)
    found = sorted(sorted(map(tuple, coords[classes == c].tolist())) for c in np.unique(classes))
    assert found == [[(0.0, 1.0, 4.0), (1.0, 3.0, 4.0)], [(1.0, 4.0, 2.0), (4.0, 3.0, 4.0)]]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_compiled_split_breaks_near_ties_as_the_exact_rule(data: st.DataObject) -> None:
    """Random small buckets with integer coordinates and spans, where sums of quotients tie
    as rationals and differ as floats: the kernel's classes are those of the exact rule."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n_q = data.draw(st.integers(1, 4))
    s, n = data.draw(st.integers(2, 3)), data.draw(st.integers(2, 5))
    spans = rng.choice([3.0, 7.0, 80.0, 3000.0, 10.0, 6.0], size=n_q)
    coords = np.floor(rng.random((s * n, n_q)) * np.minimum(spans, 6)).astype(float)
    bucket, rank = np.zeros(s * n, dtype=np.int64), np.repeat(np.arange(s), n)
    weighted = data.draw(st.booleans())
    got = algo.perimeter_split(bucket, rank, coords, spans, weighted=weighted)
    assert got.tolist() == _rule_over_slots(bucket, rank, coords, spans, weighted).tolist()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_compiled_split_is_the_rule(data: st.DataObject) -> None:
    """The compiled split gives the classes of the plainly written rule (distinct
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
                       for c in oracle.reference_split(lists, ranges, weighted=weighted))
    assert mine == reference


def _rule_over_slots(bucket: np.ndarray, rank: np.ndarray, coords: np.ndarray,
                     ranges: np.ndarray, weighted: bool) -> np.ndarray:
    """The split rule written plainly over slot ids, with the numbering the split promises:
    buckets of one row per list first, then a FIFO of halves (level by level, left first).
    Each list is kept in slot order, so the stable sort of :func:`oracle.split_scores` puts
    equal coordinates in slot order."""
    out = np.full(len(bucket), -1, dtype=np.int64)
    queue: deque[list[np.ndarray]] = deque()
    next_class = 0
    for b in np.unique(bucket):
        lists = [np.flatnonzero((bucket == b) & (rank == r))
                 for r in range(int(rank[bucket == b].max()) + 1)]
        if len(lists[0]) == 1:
            out[np.concatenate(lists)] = next_class
            next_class += 1
        else:
            queue.append(lists)
    while queue:
        lists = queue.popleft()
        candidates = []  # (lowest score, QI, split index): the earlier QI wins a tie
        for q in range(coords.shape[1]):
            scores = oracle.split_scores([coords[lst] for lst in lists], ranges, q,
                                       weighted=weighted)
            i = scores.index(min(scores))
            candidates.append((scores[i], q, i + 1))
        _, q, i = min(candidates)
        ordered = [lst[np.argsort(coords[lst, q], kind="stable")] for lst in lists]
        for half in ([np.sort(o[:i]) for o in ordered], [np.sort(o[i:]) for o in ordered]):
            if len(half[0]) == 1:
                out[np.concatenate(half)] = next_class
                next_class += 1
            else:
                queue.append(half)
    return out


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_compiled_split_matches_the_rule_slot_for_slot_with_ties(data: st.DataObject) -> None:
    """Many equal coordinates and equal scores, 1-4 QIs, shuffled slots: the same class for
    every slot, numbered alike, as the plainly written rule (ties: lowest score, earliest
    index, earliest QI; equal coordinates in slot order)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n_q = data.draw(st.integers(1, 4))
    weighted = data.draw(st.booleans())
    bucket_parts, rank_parts = [], []
    for b in range(data.draw(st.integers(1, 5))):
        s, n = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 10))
        bucket_parts.append(np.full(s * n, b))
        rank_parts.append(np.repeat(np.arange(s), n))
    shuffle = rng.permutation(sum(len(p) for p in bucket_parts))
    bucket = np.concatenate(bucket_parts)[shuffle]
    rank = np.concatenate(rank_parts)[shuffle]
    levels = data.draw(st.integers(1, 5))
    coords = rng.integers(0, levels, size=(len(bucket), n_q)).astype(float)
    if data.draw(st.booleans()):  # fractions: sums that round
        coords = coords * 0.1 + rng.integers(0, 3, size=coords.shape) * 0.3
    ranges = rng.integers(0, 4, size=n_q).astype(float)  # 0: a span of 1
    got = algo.perimeter_split(bucket, rank, coords, ranges, weighted=weighted)
    expected = _rule_over_slots(bucket, rank, coords, ranges, weighted)
    assert got.tolist() == expected.tolist()
    for c in np.unique(got):  # one row per list
        assert sorted(rank[got == c]) == list(range(int(rank[bucket == bucket[got == c][0]]
                                                       .max()) + 1))


def test_compiled_split_matches_the_rule_on_deeper_buckets() -> None:
    """Buckets of up to 40 rows per list (deeper trees than the property test draws), ties
    on every QI, both weightings."""
    rng = np.random.default_rng(17)
    sizes = [(4, 40), (3, 25), (5, 1), (2, 33)]
    bucket = np.concatenate([np.full(s * n, b) for b, (s, n) in enumerate(sizes)])
    rank = np.concatenate([np.repeat(np.arange(s), n) for s, n in sizes])
    shuffle = rng.permutation(len(bucket))
    bucket, rank = bucket[shuffle], rank[shuffle]
    coords = np.column_stack([rng.integers(0, 8, len(bucket)), rng.integers(0, 3, len(bucket)),
                              rng.random(len(bucket)).round(1)]).astype(float)
    ranges = np.array([7.0, 2.0, 1.0])
    for weighted in (True, False):
        got = algo.perimeter_split(bucket, rank, coords, ranges, weighted=weighted)
        assert got.tolist() == _rule_over_slots(bucket, rank, coords, ranges, weighted).tolist()
        assert len(np.unique(got)) == 40 + 25 + 1 + 33


def test_the_split_of_nothing_and_of_one_row_lists() -> None:
    empty = algo.perimeter_split(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                                 np.zeros((0, 2)), np.array([1.0, 1.0]))
    assert empty.dtype == np.int64 and len(empty) == 0
    # buckets of one row per list are classes at once, numbered in bucket order (before
    # the classes of split buckets); no QI is needed for them
    got = algo.perimeter_split(np.array([1, 0, 1, 2, 2, 2, 2]), np.array([0, 0, 1, 0, 0, 1, 1]),
                               np.array([[0.0], [5.0], [1.0], [3.0], [1.0], [2.0], [9.0]]),
                               np.array([10.0]))
    assert got.tolist() == [1, 0, 1, 3, 2, 2, 3]  # bucket 2 by the QI: {1.0, 2.0}, {3.0, 9.0}
    assert algo.perimeter_split(np.array([0, 0]), np.array([0, 1]), np.zeros((2, 0)),
                                np.zeros(0)).tolist() == [0, 0]


def test_the_split_refuses_malformed_buckets() -> None:
    coords = np.zeros((3, 1))
    with pytest.raises(ValueError, match="same length"):
        algo.perimeter_split(np.zeros(3, dtype=np.int64), np.array([0, 0, 1]), coords,
                             np.array([1.0]))
    with pytest.raises(ValueError, match=">= 0"):
        algo.perimeter_split(np.array([0, -1, 0]), np.zeros(3, dtype=np.int64), coords,
                             np.array([1.0]))
    with pytest.raises(ValueError, match="finite"):
        algo.perimeter_split(np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int64),
                             np.array([[0.0], [np.nan], [1.0]]), np.array([1.0]))
    with pytest.raises(ValueError, match="one range per QI"):
        algo.perimeter_split(np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int64),
                             coords, np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="quasi-identifier"):
        algo.perimeter_split(np.zeros(4, dtype=np.int64), np.array([0, 0, 1, 1]),
                             np.zeros((4, 0)), np.zeros(0))


def test_the_split_makes_one_row_per_value_with_ties() -> None:
    rng = np.random.default_rng(3)
    n, s = 50, 4
    coords = rng.integers(0, 3, size=(n * s, 2)).astype(float)  # many equal values
    got = algo.perimeter_split(np.zeros(n * s, dtype=np.int64), np.repeat(np.arange(s), n),
                               coords, np.array([2.0, 2.0]))
    assert len(np.unique(got)) == n
    for c in np.unique(got):
        assert sorted(np.repeat(np.arange(s), n)[got == c]) == list(range(s))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 300), st.integers(0, 300))
def test_key_order_and_positions_are_those_of_the_bytes(seed: int, n_old: int,
                                                        n_new: int) -> None:
    """The integer fast paths give numpy's answers on 16-byte keys, also when keys share
    their first 8 bytes (few distinct leads) or repeat, and with null bytes."""
    rng = np.random.default_rng(seed)
    lead_values = rng.integers(1, 6)

    def keys(n: int) -> np.ndarray:
        raw = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
        if rng.random() < 0.5:
            raw[:, :8] = rng.integers(0, lead_values, size=(n, 8))
        raw[:, 12:] *= rng.random((n, 4)) < 0.5  # trailing and embedded nulls
        return np.frombuffer(raw.tobytes(), dtype="S16")

    old = np.sort(keys(n_old))
    new = np.concatenate([keys(n_new), old[rng.random(n_old) < 0.3]])
    assert _key_order(new).tolist() == np.argsort(new, kind="stable").tolist()
    pos = _positions_in(old, new)
    found = pos >= 0
    assert found.tolist() == np.isin(new, old).tolist()
    assert (old[pos[found]] == new[found]).all()


def test_row_groups_are_numpys_unique_rows() -> None:
    rng = np.random.default_rng(11)
    for _ in range(200):
        rows = rng.integers(-1, rng.integers(1, 40), size=(rng.integers(0, 60),
                                                          rng.integers(1, 4)))
        group, counts = _row_groups(rows)
        _, expected_group, expected_counts = np.unique(rows, axis=0, return_inverse=True,
                                                       return_counts=True)
        assert group.tolist() == np.asarray(expected_group).reshape(-1).tolist()
        assert counts.tolist() == expected_counts.tolist()
    wide = rng.integers(0, 2**40, size=(30, 2))  # too wide for one number: rows compared
    assert _row_groups(wide)[1].tolist() == np.unique(wide, axis=0, return_counts=True)[1]\
        .tolist()


def test_signature_ranks_from_the_table_and_by_search_agree(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    signatures = algo.Signatures()
    for _ in range(40):
        signatures.id_of(tuple(sorted(set(rng.integers(0, 12, size=4).tolist()))))
    sig = rng.integers(0, len(signatures), size=2000)
    values = rng.integers(0, 14, size=2000)  # 12, 13: in no signature
    dense = signatures.rank_of(sig, values)
    monkeypatch.setattr(algo, "_dense_ranks_fit", lambda n_pairs, n_queries: False)
    assert dense.tolist() == signatures.rank_of(sig, values).tolist()
    assert (dense >= 0).any() and (dense < 0).any()
    for i in range(0, 2000, 97):
        members = signatures.members(int(sig[i])).tolist()
        assert dense[i] == (members.index(values[i]) if values[i] in members else -1)


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


def test_a_dominant_value_is_refused_with_its_share_and_the_largest_m(tmp_path: Path) -> None:
    df = people(np.arange(40))
    df["disease"] = np.where(np.arange(40) < 15, "flu", df["disease"])  # flu: 15 of 40
    df.loc[15:, "disease"] = np.array(["a", "b", "c", "d", "e"], dtype=object)[
        np.arange(25) % 5]
    with HistoryStore.open(tmp_path / "h.db", create=True) as store, \
            pytest.raises(InputError, match=r"most frequent sensitive value is 15 of 40 rows "
                                            r"\(37\.5%\).*largest feasible m is 2") as err:
        publish(store, df, request(m=3), tmp_path / "r.csv")
    assert "flu" not in str(err.value)  # never a raw sensitive value in a message
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
        assert oracle.written_invariance_problems(
            [tmp_path / f"r{i + 1}.csv" for i in range(len(ids))],
            [people(present) for present in ids], m,
            {"age": "numeric", "zip": "numeric", "sex": "categorical"}, "disease") == []
        for i, present in enumerate(ids):
            check_release_file(tmp_path / f"r{i + 1}.csv", len(present), m)
            info = store.release("ward", i + 1)
            view = store.load(info, labels=False)
            # no real record lost or duplicated: the history's records are the input's
            expected = sorted(store.pseudonyms("ward", people(present)["pid"]))
            assert sorted(bytes(k) for k in view.record_keys) == expected
            assert info.n_input_rows == len(present)
        assert not audit(store, "ward", pairs=True).breached


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
        rebuilt = signatures_from_history(release_views(store, "ward"), "disease")
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
        report = audit(store, "ward", pairs=True)
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
    from anonkit.history.report import render_html

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
        report = audit(store, "ward", pairs=True)
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
        assert not audit(store, "ward", pairs=True).breached
    assert min(sizes) < 200  # some classes merged: fewer than 400 / m classes as released


def _collide(rows: list[tuple[int, int, int, str]]) -> Release:
    """The engine's release of ``rows`` (pid, age, zip, disease) under m = 2, age through a
    two-level hierarchy: the split pairs ages 1 with 3 and 2 with 4, both '*'."""
    df = pd.DataFrame(rows, columns=["pid", "age", "zip", "disease"])
    hierarchy = Hierarchy([["1", "low", "*"], ["2", "low", "*"], ["3", "high", "*"],
                           ["4", "high", "*"]])
    req = PublishRequest(dataset="w", key="pid", quasi_identifiers=["age", "zip"],
                         sensitive=["disease"], method="m-invariance",
                         options={"m": 2, "seed": 1}, hierarchies={"age": hierarchy})
    keys = np.array([int(i).to_bytes(16, "big") for i in df.pid], dtype="S16")
    return MInvariance(2, seed=1).next_release(df, _schema(df, req), keys,
                                               SignatureState.empty())


def test_classes_of_one_signature_never_share_labels() -> None:
    """Issue 27, item 4: two classes of one signature with equal labels are one class to an
    adversary, holding every value twice: not m-unique. The later class's label is widened
    where one is free; where none is, the release is refused naming the classes."""
    quad = [(0, 1, 5, "flu"), (1, 3, 5, "cold"), (2, 2, 5, "flu"), (3, 4, 5, "cold")]
    with pytest.raises(ModelNotMetError, match=r"2 classes get the same labels \(age=\*, "
                                               r"zip=5; age=\*, zip=5\).*repeats a sensitive "
                                               r"value \(not m-unique\)"):
        _collide(quad)
    more = [(pid + 4, a, 9, d) for pid, a, _, d in quad] + [(8, 1, 7, "flu"), (9, 3, 7, "cold")]
    release = _collide(quad + more)
    groups = release.data.groupby(["age", "zip"], observed=True)["disease"]
    assert all(sorted(g) == ["cold", "flu"] for _, g in groups)  # each value once
    assert len(groups) == 5
    assert check(release.data, ["age", "zip"], "disease", [MUniqueness(2)]).passed
