"""The streaming counting tree (spec 003): the notebook's incrementalAnon, monotone spans, the
history method, and the row-wise intersection attack."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from anonkit.algorithms.stream_tree import StreamTree, span_label
from anonkit.cli import main
from anonkit.errors import InputError
from anonkit.history import HistoryStore, PublishRequest, audit, publish
from anonkit.history.intersection import intersection_attack
from oracles.stream_tree import incremental_spans

# incrementalAnon 2 2 [1,2,1,3,2,0,1,0,3], with follow starting from the depth; the
# notebook prints half-open code spans, [0,4) being 0..3
NOTEBOOK_LINES = [
    [(0, 3)],
    [(0, 3)] * 2,
    [(0, 3)] * 3,
    [(0, 1), (2, 3), (0, 1), (2, 3)],
    [(0, 1), (2, 3), (0, 1), (2, 3), (2, 3)],
    [(0, 1), (2, 3), (0, 1), (2, 3), (2, 3), (0, 1)],
    [(0, 1), (2, 3), (0, 1), (2, 3), (2, 3), (0, 1), (0, 1)],
    [(1, 1), (2, 3), (1, 1), (2, 3), (2, 3), (0, 0), (1, 1), (0, 0)],
    [(1, 1), (2, 2), (1, 1), (3, 3), (2, 2), (0, 0), (1, 1), (0, 0), (3, 3)],
]


def test_notebook_incremental_anon() -> None:
    assert incremental_spans(2, 2, [1, 2, 1, 3, 2, 0, 1, 0, 3]) == NOTEBOOK_LINES


def test_follow_starts_from_the_depth_not_k() -> None:
    # k = 2 on a depth-3 tree: the notebook's follow would walk 2 levels only
    tree = StreamTree(2, (0, 7))
    for v in [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7]:
        tree.insert(v)
    assert tree.spans()[:2] == [(0, 0), (0, 0)]


def test_insert_returns_span_and_batch_agrees() -> None:
    rng = np.random.default_rng(5)
    values = rng.integers(0, 100, 500)
    one = StreamTree(3, (0, 99))
    spans = [one.insert(int(v)) for v in values]
    assert spans[0] == (0, 99)  # a domain not a power of two is clipped
    batch = StreamTree(3, (0, 99))
    batch.insert_many(values)
    assert (one.counts == batch.counts).all()
    assert one.spans() == batch.spans()


def test_values_outside_the_domain_are_refused() -> None:
    tree = StreamTree(2, (0, 127))
    with pytest.raises(InputError, match=r"value 128 .*outside the declared domain 0,127"):
        tree.insert(128)
    with pytest.raises(InputError, match="not one"):
        tree.insert_many(np.array([1.5]))
    with pytest.raises(InputError, match="needs 32 levels"):
        StreamTree(2, (0, 2**31))
    assert tree.n_inserted == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), min_size=1, max_size=30), min_size=2,
                max_size=5), st.integers(1, 6))
def test_insertions_only_refine_and_intersections_never_drop_below_k(
        batches: list[list[int]], k: int) -> None:
    tree = StreamTree(k, (0, 40))
    values: list[int] = []
    known_lo = np.zeros(0, dtype=np.int64)
    known_hi = np.zeros(0, dtype=np.int64)
    for batch in batches:
        tree.insert_many(batch)
        values += batch
        lo, hi = tree.spans_of(values)
        old = len(known_lo)
        # spans only narrow: each is inside the row's previous span
        assert (lo[:old] >= known_lo).all() and (hi[:old] <= known_hi).all()
        known_lo, known_hi = np.maximum(lo, np.append(known_lo, lo[old:])), \
            np.minimum(hi, np.append(known_hi, hi[old:]))
        assert (known_lo == lo).all() and (known_hi == hi).all()  # intersection = latest
        if len(values) >= k:
            _, sizes = np.unique(np.stack([lo, hi], axis=1), axis=0, return_counts=True)
            assert sizes.min() >= k
        for v, a, b in zip(values, lo, hi, strict=True):
            assert a <= v <= b


# -- the intersection attack ---------------------------------------------------------------


def test_intersection_attack_on_the_notebooks_example() -> None:
    first = pd.DataFrame({"x": ["[1-2]", "[1-2]", "[3-5]", "[3-5]", "[3-5]"]})
    second = pd.DataFrame({"x": ["[1-3]", "[1-3]", "[1-3]", "[4-5]", "[4-5]", "[1-3]"]})
    result = intersection_attack(first, second, 2)
    assert result.knowledge()["x"].tolist()[:5] == ["[1,2]", "[1,2]", "3", "[4,5]", "[4,5]"]
    assert result.breached.tolist() == [False, False, True, False, False, True]


def test_intersection_attack_finds_nothing_on_stream_tree_releases() -> None:
    rng = np.random.default_rng(11)
    values = rng.integers(0, 64, 400)
    tree = StreamTree(4, (0, 63))
    labels = []
    done = 0
    for end in (100, 250, 400):
        tree.insert_many(values[done:end])
        done = end
        lo, hi = tree.spans_of(values[:end])
        labels.append(pd.DataFrame({"x": span_label(lo, hi)}))
    for a, b in pairwise(labels):
        result = intersection_attack(a, b, 4)
        assert result.n_breached == 0
        assert not result.narrowed.any()


# -- the history method --------------------------------------------------------------------


def request(**options: object) -> PublishRequest:
    return PublishRequest("people", "id", ["age"], method="stream-tree",
                          options={"k": 5, **options})


def table(ids: np.ndarray) -> pd.DataFrame:
    ids = np.asarray(ids)
    return pd.DataFrame({"id": ids, "age": (ids * 7919) % 90})


def test_history_releases_pass_the_gate_and_the_audit(tmp_path) -> None:
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for n, end in enumerate((150, 300, 420, 600)):
            publish(store, table(np.arange(end)), request(domain=(0, 89)),
                    tmp_path / f"r{n}.csv")
        report = audit(store, "people")
    assert not report.breached
    assert report.intersections and all(s.breached == 0 for s in report.intersections)
    assert all(s.narrowed == 0 for s in report.intersections)
    # spans only narrow from one release to the next, row by row
    releases = [pd.read_csv(tmp_path / f"r{n}.csv") for n in range(4)]
    assert all(len(r) for r in releases)


def test_history_refuses_a_changed_domain_or_k(tmp_path) -> None:
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, table(np.arange(100)), request(domain=(0, 89)), tmp_path / "a.csv")
        with pytest.raises(InputError, match="fixed at 0,89"):
            publish(store, table(np.arange(120)), request(domain=(0, 127)), tmp_path / "b.csv")
        with pytest.raises(InputError, match="built for k=5"):
            publish(store, table(np.arange(120)), request(k=4), tmp_path / "b.csv")
        bad = table(np.arange(120))
        bad.loc[3, "age"] = 90
        with pytest.raises(InputError, match=r"value 90 of column 'age'.*outside"):
            publish(store, bad, request(), tmp_path / "b.csv")
        assert not (tmp_path / "b.csv").exists()


def test_deletions_never_widen_spans(tmp_path) -> None:
    from anonkit.history.intersection import parse_spans

    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, table(np.arange(400)), request(domain=(0, 89)), tmp_path / "a.csv",
                shuffle=False)
        kept = np.arange(3, 400)  # three records leave
        publish(store, table(kept), request(), tmp_path / "b.csv", shuffle=False)
    first = pd.read_csv(tmp_path / "a.csv")
    second = pd.read_csv(tmp_path / "b.csv")
    lo1, hi1 = parse_spans(first["age"].astype(str).to_numpy()[kept])
    lo2, hi2 = parse_spans(second["age"].astype(str).to_numpy())
    assert (lo2 >= lo1).all() and (hi2 <= hi1).all()


def test_deletions_that_starve_a_class_are_refused(tmp_path) -> None:
    from anonkit.errors import ModelNotMetError

    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, table(np.arange(400)), request(domain=(0, 89)), tmp_path / "a.csv")
        # two thirds leave: the spans they kept fine would now hold fewer than k rows
        with pytest.raises(ModelNotMetError, match="k-anonymity"):
            publish(store, table(np.arange(0, 400, 3)), request(), tmp_path / "b.csv")
        assert len(store.releases("people")) == 1
    assert not (tmp_path / "b.csv").exists()


def test_rebuilt_alphabetic_trees_are_caught_by_the_audit(tmp_path) -> None:
    # the notebook's [1..5] then [1,2,3,4,5,3], re-anonymized from scratch each time
    req = PublishRequest("n", "id", ["x"], method="alphabetic",
                         options={"k": 2, "tree": "halving"})
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, pd.DataFrame({"id": range(5), "x": [1, 2, 3, 4, 5]}), req,
                tmp_path / "a.csv")
        publish(store, pd.DataFrame({"id": range(6), "x": [1, 2, 3, 4, 5, 3]}), req,
                tmp_path / "b.csv", allow_breach=True)
        report = audit(store, "n")
    assert report.breached
    assert report.intersections[0].breached >= 1


def test_cli_release_publish_stream_tree(tmp_path) -> None:
    runner = CliRunner()
    history = tmp_path / "h.db"
    for n, end in enumerate((100, 200)):
        path = tmp_path / f"in{n}.csv"
        table(np.arange(end)).to_csv(path, index=False)
        args = ["release", "publish", str(path), "--dataset", "p", "--key", "id", "--method",
                "stream-tree", "-k", "5", "--qi", "age", "-o", str(tmp_path / f"o{n}.csv"),
                "--history", str(history)]
        if n == 0:
            args += ["--domain", "0,127"]
        result = runner.invoke(main, args)
        assert result.exit_code == 0, result.output
    released = pd.read_csv(tmp_path / "o1.csv")
    assert released["age"].value_counts().min() >= 5


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 31), min_size=1, max_size=40), min_size=2,
                max_size=5), st.integers(1, 5))
def test_history_splits_hold_k_for_every_cohort(batches: list[list[int]], k: int) -> None:
    """Insertions only: spans narrow, every class holds k rows, and the rows of a class
    that were there in release i number none or >= k (the linkage adversary's cell)."""
    from anonkit.algorithms.stream_tree import history_split

    tree = StreamTree(k, (0, 31))
    codes = np.zeros(0, dtype=np.int64)
    cohort = np.zeros(0, dtype=np.int64)
    split = None
    previous: tuple[np.ndarray, np.ndarray] | None = None
    # a first release with fewer than k rows is refused: its rows wait for the next one
    while len(batches) > 1 and len(batches[0]) < k:
        batches = [batches[0] + batches[1], *batches[2:]]
    for seq, batch in enumerate(batches, start=1):
        new = np.asarray(batch, dtype=np.int64)
        tree.count_codes(new)
        codes = np.concatenate([codes, new])
        cohort = np.concatenate([cohort, np.full(len(new), seq)])
        split = history_split(tree, split, codes, cohort, seq)
        lo, hi = tree.spans_of(codes, split)
        if previous is not None:
            old = len(previous[0])
            assert (lo[:old] >= previous[0]).all() and (hi[:old] <= previous[1]).all()
        previous = (lo, hi)
        if len(codes) < k:
            return
        key = lo * 64 + hi
        for i in range(1, seq + 1):
            _, here = np.unique(key[cohort <= i], return_counts=True)
            assert here.min() >= k


@settings(max_examples=100, deadline=None)
@given(k=st.integers(1, 4), depth=st.integers(1, 4), data=st.data())
def test_the_tree_walks_as_the_notebooks_follow(k: int, depth: int,
                                                 data: st.DataObject) -> None:
    """After every insertion, each value's span is the notebook's (the oracle written from
    ``follow``, without the package)."""
    values = data.draw(st.lists(st.integers(0, (1 << depth) - 1), min_size=1, max_size=30))
    tree = StreamTree(k, (0, (1 << depth) - 1))
    for n, (v, expected) in enumerate(zip(values, incremental_spans(k, depth, values),
                                          strict=True), start=1):
        tree.insert(v)
        assert tree.spans() == expected, (values[:n], k, depth)


# -- a domain that grows (issue 22, item 4) -----------------------------------------------------


def test_the_domain_grows_with_later_values_and_intersections_hold_k(tmp_path) -> None:
    """No --domain: four insertion releases whose largest age grows past the first
    release's range (and past the tree's 2^depth codes: the tree doubles) all publish, and
    every person's spans intersect to a range holding >= k rows of the latest release."""
    from oracles.stream_tree import thin_intersections

    rng = np.random.default_rng(3)
    ages = np.concatenate([rng.integers(17, 41, 120), rng.integers(30, 61, 60),
                           rng.integers(40, 92, 60), rng.integers(50, 131, 60)])
    ends = (120, 180, 240, 300)
    labels: list[dict[str, str]] = []
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for n, end in enumerate(ends):
            assert n == 0 or ages[:end].max() > ages[:ends[n - 1]].max()
            df = pd.DataFrame({"id": np.arange(end), "age": ages[:end]})
            info = publish(store, df, request(), tmp_path / f"r{n}.csv", shuffle=False)
            released = pd.read_csv(tmp_path / f"r{n}.csv", dtype=str)
            labels.append(dict(zip(map(str, range(end)), released["age"], strict=True)))
            assert info.parameters["domain"] == f"{ages[:end].min()},{ages[:end].max()}"
        with pytest.raises(InputError, match=r"grows with it .*leave --domain out"):
            publish(store, pd.DataFrame({"id": [0], "age": [20]}), request(domain=(0, 200)),
                    tmp_path / "x.csv")
        report = audit(store, "people")
    assert not report.breached, report.summary()
    latest = {str(i): int(a) for i, a in enumerate(ages)}
    assert thin_intersections(labels, latest, 5) == {}
    # the oracle can fail: a span narrowed to one person's value is caught
    loner = int(np.argmax(ages))
    narrowed = {str(loner): f"[{ages[loner]}-{ages[loner] + 1}]"} \
        if (ages == ages[loner]).sum() < 5 else {str(loner): "1000"}
    assert str(loner) in thin_intersections([*labels, narrowed], latest, 5)


def test_a_declared_domain_stays_fixed_and_an_old_state_does_not_grow() -> None:
    tree = StreamTree(2, (0, 89))
    assert not tree.growable
    with pytest.raises(InputError, match="without --domain the domain grows"):
        tree.codes_of(np.array([90]))
    restored, _, _ = StreamTree.from_bytes(StreamTree(2, (5, 9), growable=True).to_bytes())
    assert restored.growable and restored.origin == 5


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(-40, 80), min_size=1, max_size=20), min_size=2,
                max_size=4), st.integers(1, 4))
def test_growing_keeps_every_node_a_node(batches: list[list[int]], k: int) -> None:
    """After growing (above or below), every earlier span is still a node's: walking
    through the new roots down to the old one gives each value the span it had (only a clip
    to the old domain's ends may widen), the plain walk gives a span holding it, and the
    counts over the grown tree are those of a fresh tree over the grown domain."""
    first = np.asarray(batches[0])
    tree = StreamTree(k, (int(first.min()), int(first.max())), growable=True)
    tree.insert_many(first)
    seen = first
    split = tree.split_nodes()
    for batch in batches[1:]:
        before = tree.spans_of(seen, split)
        (old_low, old_high), old_depth = tree.domain, tree.depth
        new = np.asarray(batch)
        split, _ = tree.grow(int(new.min()), int(new.max()), split)
        through_old_root = split.copy()
        codes = tree.codes_of(seen)
        for level in range(tree.depth - old_depth):
            through_old_root[tree._nodes(codes, level)] = True
        lo, hi = tree.spans_of(seen, through_old_root)
        assert ((lo == before[0]) | ((before[0] == old_low) & (lo <= old_low))).all()
        assert ((hi == before[1]) | ((before[1] == old_high) & (hi >= old_high))).all()
        lo, hi = tree.spans_of(seen, split)
        assert (lo <= before[0]).all() and (hi >= before[1]).all()
        tree.insert_many(new)
        seen = np.concatenate([seen, new])
        fresh = StreamTree(k, tree.domain, origin=tree.origin)
        fresh.insert_many(seen)
        assert (fresh.counts == tree.counts).all()
        split = tree.split_nodes() | split
