"""(k,e)-anonymity: the optimal partition (proven against every set partition), the chapter's
worked example (spec 004), incremental releases with insertions and deletions, and the
aggregate query API."""

from __future__ import annotations

import re
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonkit.algorithms import ke_partition as ke
from anonkit.errors import InputError
from anonkit.history import HistoryStore, PublishRequest, audit, publish
from anonkit.history.attacks import CrossReleaseBreachError
from anonkit.history.knowledge import knowledge
from anonkit.methods import ke as ke_method
from anonkit.metrics.range_queries import query, relative_error
from oracles import ke as oracle

K, E = 3, 2000
D0 = {"Tom": 84_000, "Mike": 86_000, "Alice": 87_000, "Bob": 88_000, "Kate": 89_000,
      "Paul": 90_000}
D1 = {"Ann": 82_000, "Jo": 83_000, **D0, "Oven": 85_000}


def table(salaries: dict[str, int]) -> pd.DataFrame:
    names = list(salaries)
    return pd.DataFrame({"name": names, "age": [20 + 3 * (sum(map(ord, n)) % 13) for n in names],
                         "zip": [10_000 + i for i in range(len(names))],
                         "salary": [salaries[n] for n in names]})


def request(**options: object) -> PublishRequest:
    return PublishRequest(dataset="pay", key="name", quasi_identifiers=["age", "zip"],
                          sensitive=["salary"], method="ke",
                          options={"k": K, "e": E, **options})


def released_groups(path: Path, df: pd.DataFrame) -> np.ndarray:
    """Per input row, its group in the release (rows may be shuffled: matched by the exact
    quasi-identifiers, unique per person in these tables)."""
    released = pd.read_csv(path)
    assert "name" not in released.columns
    qis = zip(released["age"], released["zip"], strict=True)
    by_qi = dict(zip(qis, released["group"], strict=True))
    assert len(by_qi) == len(df)
    return np.array([by_qi[q] for q in zip(df["age"], df["zip"], strict=True)])


def groups_by_name(path: Path, df: pd.DataFrame) -> set[frozenset[str]]:
    group = released_groups(path, df)
    return {frozenset(df["name"][group == g]) for g in np.unique(group)}


# -- the optimal partition -------------------------------------------------------------------


def brute_force(values: list[float], k: int, e: float) -> float:
    """The least sum of ranges over *every* set partition whose blocks meet (k,e)."""
    n = len(values)
    best = float("inf")

    def valid(block: list[float]) -> bool:
        return len(set(block)) >= k and max(block) - min(block) >= e

    def partitions(items: list[int]):  # every set partition, as lists of blocks
        if not items:
            yield []
            return
        first, rest = items[0], items[1:]
        for size in range(len(rest) + 1):
            for others in combinations(rest, size):
                remaining = [i for i in rest if i not in others]
                for tail in partitions(remaining):
                    yield [[first, *others], *tail]

    for blocks in partitions(list(range(n))):
        parts = [[values[i] for i in b] for b in blocks]
        if all(valid(p) for p in parts):
            best = min(best, sum(max(p) - min(p) for p in parts))
    return best


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=9), st.integers(1, 4),
       st.integers(0, 8))
def test_the_partition_is_optimal_over_every_set_partition(values: list[int], k: int,
                                                          e: int) -> None:
    floats = [float(v) for v in values]
    expected = brute_force(floats, k, e)
    if not np.isfinite(expected):
        with pytest.raises(InputError):
            ke.optimal_partition(np.array(floats), k, e)
        return
    part = ke.optimal_partition(np.array(floats), k, e)
    assert part.cost == expected
    for g in range(part.n_groups):
        block = part.sorted_values[part.starts[g]:part.starts[g + 1]]
        assert len(set(block)) >= k and block.max() - block.min() >= e
    starts, cost = oracle.reference_partition(part.sorted_values, k, e)
    assert cost == expected and list(starts) == list(part.starts)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 300), min_size=3, max_size=120), st.integers(1, 5),
       st.integers(0, 60))
def test_the_linear_programme_matches_the_quadratic_one(values: list[int], k: int,
                                                       e: int) -> None:
    v = np.sort(np.array(values, dtype=float))
    starts, cost = oracle.reference_partition(v, k, e)
    if not np.isfinite(cost):
        with pytest.raises(InputError):
            ke.optimal_partition(v, k, e)
        return
    part = ke.optimal_partition(v, k, e)
    assert part.cost == cost and list(part.starts) == list(starts)


def test_the_radix_sort_is_a_stable_sort() -> None:
    rng = np.random.default_rng(3)
    v = np.concatenate([rng.normal(size=500), rng.integers(-5, 5, 500).astype(float),
                        [np.inf, -np.inf, 0.0, -0.0]])
    order, _ = ke.sort_values(v)
    assert (order == np.argsort(v, kind="stable")).all() or \
        ((v[order] == np.sort(v)).all() and (np.diff(v[order]) >= 0).all())


def test_decimal_ranges_are_compared_as_decimals() -> None:
    part = ke.optimal_partition(np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]), 3, 0.2,
                                places=1)
    assert part.n_groups == 2  # 0.3 - 0.1 is 0.2, not 0.19999999999999998


def test_infeasible_input_is_a_clear_error(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from anonkit.cli import main

    table(D0).to_csv(tmp_path / "d0.csv", index=False)
    base = ["anonymize", str(tmp_path / "d0.csv"), "--method", "ke", "--qi", "age,zip",
            "--sensitive", "salary", "--id", "name", "-o", str(tmp_path / "r.csv")]
    few = CliRunner().invoke(main, [*base, "-k", "7", "-e", "2000"])
    assert few.exit_code == 2 and "only 6 distinct values" in few.output
    narrow = CliRunner().invoke(main, [*base, "-k", "3", "-e", "7000"])
    assert narrow.exit_code == 2 and "ranges over only 6000" in narrow.output
    ok = CliRunner().invoke(main, [*base, "-k", "3", "-e", "2000"])
    assert ok.exit_code == 0, ok.output
    groups = pd.read_csv(tmp_path / "r.groups.csv")
    assert list(groups.columns) == ["id", "size", "min", "max", "distinct"]
    assert groups["min"].tolist() == [84_000, 88_000]
    assert "group" in pd.read_csv(tmp_path / "r.csv").columns


# -- the chapter's example -------------------------------------------------------------------


def test_the_chapters_example(tmp_path: Path) -> None:
    d0, d1 = table(D0), table(D1)
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, d0, request(), tmp_path / "d0.csv")
        assert groups_by_name(tmp_path / "d0.csv", d0) == {
            frozenset({"Tom", "Mike", "Alice"}), frozenset({"Bob", "Kate", "Paul"})}
        # unconstrained: three groups of three, refused by the gate
        with pytest.raises(CrossReleaseBreachError):
            publish(store, d1, request(history_check="ignore"), tmp_path / "d1u.csv")
        assert not (tmp_path / "d1u.csv").exists()
    # the incremental release, by the chapter's covering partition
    with HistoryStore.open(tmp_path / "h.db") as store:
        info = publish(store, d1, request(history_check="pruned"), tmp_path / "d1.csv")
        assert groups_by_name(tmp_path / "d1.csv", d1) == {
            frozenset({"Ann", "Jo", "Tom", "Oven", "Mike", "Alice"}),
            frozenset({"Bob", "Kate", "Paul"})}
        assert pd.read_csv(tmp_path / "d1.groups.csv").eval("max - min").sum() == 7000
        assert info.parameters["breach_checks"] > 0
        assert not audit(store, "pay").breached


def test_the_unconstrained_release_pins_tom(tmp_path: Path) -> None:
    d0, d1 = table(D0), table(D1)
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, d0, request(), tmp_path / "d0.csv")
        publish(store, d1, request(history_check="ignore"), tmp_path / "d1.csv", allow_breach=True)
        assert len(groups_by_name(tmp_path / "d1.csv", d1)) == 3
        report = audit(store, "pay")
        assert report.breached
        known = knowledge(store, "pay")
        tom, mike, alice = store.pseudonyms("pay", pd.Series(["Tom", "Mike", "Alice"]))
        assert known.record(known.index(tom))["values[salary]"] == [84_000]
        for person in (mike, alice):
            assert known.record(known.index(person))["values[salary]"] == [86_000, 87_000]


# -- incremental sequences ------------------------------------------------------------------


def population(ids: np.ndarray) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    salary = rng.permutation(np.arange(20_000, 20_000 + 10_000 * 37, 37))[ids]
    return pd.DataFrame({"name": [f"p{i}" for i in ids], "age": 20 + ids % 50,
                         "zip": 10_000 + ids % 97, "salary": salary})


def versions(deletions: bool) -> list[np.ndarray]:
    rng = np.random.default_rng(11 if deletions else 5)
    current = np.arange(60)
    out = [current]
    next_id = 60
    for _ in range(5):
        if deletions:
            current = np.setdiff1d(current, rng.choice(current, 6, replace=False))
        current = np.concatenate([current, np.arange(next_id, next_id + 15)])
        next_id += 15
        out.append(current)
    return out


@pytest.mark.parametrize(("deletions", "history"),
                         [(False, "pruned"), (True, "pruned"), (True, "placeholders")])
def test_incremental_releases_never_breach(tmp_path: Path, deletions: bool,
                                           history: str) -> None:
    options = {"e": 15_000, "history_check": history} if deletions else \
        {"history_check": history}
    published = 0
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        previous = np.zeros(0, dtype=np.int64)
        for n, ids in enumerate(versions(deletions)):
            try:
                publish(store, population(ids), request(**options), tmp_path / f"r{n}.csv")
            except CrossReleaseBreachError as refused:
                # a deletion took what protected someone (the covering partition): the
                # steward keeps the named records one more release and publishes
                assert deletions and history == "pruned"
                assert not (tmp_path / f"r{n}.csv").exists()
                # one line, no key in it; the rows to keep ride on the error
                assert "\n" not in str(refused) and "name=" not in str(refused)
                rows = population(ids)["name"].to_numpy()[refused.details["rows"]]
                blocked = [int(str(x)[1:]) for x in rows]
                assert blocked and set(blocked) <= set(previous.tolist())
                # ... and their group-mates of the previous release, who held the values
                before = released_groups(tmp_path / f"r{n - 1}.csv", population(previous))
                groups = before[np.isin(previous, blocked)]
                ids = np.union1d(ids, previous[np.isin(before, groups)])
                publish(store, population(ids), request(**options), tmp_path / f"r{n}.csv")
            published += 1
            previous = ids
        assert published == 6
        report = audit(store, "pay")
        assert report.records_breached == 0, report.summary()


def test_naive_repartitioning_is_refused_and_flagged(tmp_path: Path) -> None:
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        refused = 0
        for n, ids in enumerate(versions(False)):
            df = population(ids)
            try:
                publish(store, df, request(history_check="ignore"), tmp_path / f"r{n}.csv")
            except CrossReleaseBreachError:
                refused += 1
                assert not (tmp_path / f"r{n}.csv").exists()
                publish(store, df, request(history_check="ignore"), tmp_path / f"r{n}.csv",
                        allow_breach=True)
        assert refused >= 1
        assert audit(store, "pay").records_breached > 0


def _earlier(part: ke.KEPartition, keys_then: np.ndarray,
             keys_now: np.ndarray) -> ke.EarlierRelease:
    ptr, values = ke.group_value_sets(part)
    by_key = dict(zip(keys_then.tolist(), part.group_ids().tolist(), strict=True))
    sort = np.argsort(keys_then, kind="stable")
    return ke.EarlierRelease(np.array([by_key.get(k, -1) for k in keys_now.tolist()]), ptr,
                             values, keys_then[sort], part.group_ids()[sort])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 4), st.integers(0, 30),
       st.sampled_from(["insertions", "deletions", "returns"]))
def test_pruning_and_naive_give_the_same_release(seed: int, k: int, e: int,
                                                 changes: str) -> None:
    # returns: some of those who left come back a release or more later
    rng = np.random.default_rng(seed)
    pool = rng.permutation(400)  # distinct values: a person keeps theirs
    ids = np.arange(12)
    history: list[tuple[ke.KEPartition, np.ndarray]] = []
    knowledge_state: ke.ValuesLeft | None = None
    next_id = 12
    gone = np.zeros(0, dtype=ids.dtype)
    for _ in range(5):
        keys = np.array([b"%016d" % i for i in ids], dtype="S16")
        values = pool[ids].astype(float)
        if not history:
            try:
                part = ke.optimal_partition(values, k, e)
            except InputError:
                return
            knowledge_state = ke.first_knowledge(part, keys)
        else:
            assert knowledge_state is not None
            earlier = [_earlier(p, kt, keys) for p, kt in history]
            outcome = []
            for run in ("pruned", "naive"):
                try:
                    if run == "pruned":
                        got, nxt = ke.incremental_partition(values, keys, earlier[-1],
                                                            knowledge_state, k, e)
                    else:
                        got = ke.naive_incremental_partition(values, keys, earlier, k, e)
                    outcome.append((list(got.starts), got.cost))
                except ke.BlockedRecords as blocked:
                    outcome.append(("blocked", sorted(
                        (b.row, b.previous_group, b.distinct, b.key)
                        for b in blocked.blockers)))
                except InputError:
                    outcome.append(("infeasible",))
            assert outcome[0] == outcome[1]
            if not isinstance(outcome[0][0], list):
                return
            part, knowledge_state = got, nxt
        history.append((part, keys))
        back = np.zeros(0, dtype=ids.dtype)
        if changes == "returns" and len(gone):
            back = rng.choice(gone, min(2, len(gone)), replace=False)
            gone = np.setdiff1d(gone, back)
        if changes != "insertions":
            leaving = rng.choice(ids, 2, replace=False)
            ids = np.setdiff1d(ids, leaving)
            gone = np.union1d(gone, leaving)
        ids = np.concatenate([ids, back, np.arange(next_id, next_id + 4)])
        next_id += 4


def test_a_blocking_deletion_is_refused_naming_the_records(tmp_path: Path) -> None:
    d0 = table(D0)
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, d0, request(), tmp_path / "r1.csv")
        # Mike leaves: under the covering partition Tom and Alice have only 84,000 and
        # 87,000 left in common with any group
        gone = d0[d0["name"] != "Mike"]
        with pytest.raises(CrossReleaseBreachError) as refused:
            publish(store, gone, request(history_check="pruned"), tmp_path / "r2.csv")
        message = str(refused.value)
        # one line of counts; the records to keep ride on the error, as input rows
        assert "Tom" not in message and "Alice" not in message and "\n" not in message
        assert re.fullmatch(r"release 2 of 'pay' refused: after the deletions no partition "
                            r"avoids an incremental breach of \(k=3, e=\S+\) for \d+ records "
                            r"\(\d+ returning, \d+ that left, from \d+ earlier groups\) to the "
                            r"linkage adversary; nothing was written\. See the README .*",
                            message), message
        named = set(gone["name"].to_numpy()[refused.value.details["rows"]])
        assert {"Tom", "Alice"} <= named
        assert refused.value.exit_code == 3
        assert not (tmp_path / "r2.csv").exists()
        assert not (tmp_path / "r2.groups.csv").exists()
        assert len(store.releases("pay")) == 1


def _history_class(store: HistoryStore, seq: int, name: str) -> int:
    view = store.load(store.release("pay", seq))
    (key,) = store.pseudonyms("pay", pd.Series([name]))
    return int(view.record_classes[list(view.record_keys).index(key)])


def test_a_refusal_names_the_group_as_published(tmp_path: Path) -> None:
    # rows are shuffled on publishing and the history numbers classes in the shuffled
    # order, so its class numbers differ from the group column; the refusal must use the
    # latter (the seed makes them differ here)
    d0 = table(D0)
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, d0, request(), tmp_path / "r1.csv", shuffle_seed=1)
        group = dict(zip(d0["name"], released_groups(tmp_path / "r1.csv", d0), strict=True))
        assert _history_class(store, 1, "Tom") != group["Tom"]
        for history in ("pruned", "naive"):
            with pytest.raises(CrossReleaseBreachError) as refused:
                publish(store, d0[d0["name"] != "Mike"], request(history_check=history),
                        tmp_path / "r2.csv")
            assert refused.value.details["leavers_groups"] == [group["Tom"]]


# salaries for a record that leaves and comes back: with k = 3 and e = 4000 the first table
# is one group; x, y and z leave, and subtracting the salaries a, b and c are released with
# again leaves them {1000, 3000, 5000} (which meets k and e); x comes back with n and m
RETURN = {"x": 1000, "a": 2000, "y": 3000, "b": 4000, "z": 5000, "c": 6000, "n": 3500,
          "m": 5500, "o": 1500}


@pytest.mark.parametrize("history", ["pruned", "naive"])
def test_a_leaver_who_comes_back_is_held_to_what_the_subtraction_left(
        tmp_path: Path, history: str) -> None:
    def version(names: str) -> pd.DataFrame:
        return table({n: RETURN[n] for n in names})

    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, version("xaybzc"), request(e=4000, history_check=history),
                tmp_path / "r1.csv")
        assert len(pd.read_csv(tmp_path / "r1.groups.csv")) == 1
        publish(store, version("abc"), request(e=4000, history_check=history), tmp_path / "r2.csv")
        # x's knowledge is {1000, 3000, 5000}, not its first group's six salaries: the only
        # grouping of the third table, {1000, ..., 6000}, pins it to 1000. Knowledge left
        # that wide let the method propose it (the audit flags it); now the method itself
        # refuses, naming x, before any gate (so even with allow_breach)
        with pytest.raises(CrossReleaseBreachError) as refused:
            publish(store, version("xabcnm"), request(e=4000, history_check=history),
                    tmp_path / "r3.csv", allow_breach=True)
        message = str(refused.value)
        assert "(1 returning" in message and "'x'" not in message, message
        third = version("xabcnm")
        (back,) = refused.value.details["returning"]
        assert third["name"].iloc[back["row"]] == "x" and back["values_left"] == 1
        assert refused.value.exit_code == 3
        assert not (tmp_path / "r3.csv").exists()
        assert len(store.releases("pay")) == 2
        assert audit(store, "pay").records_breached == 0
        # with a third newcomer instead of x the release goes out, breach-free
        publish(store, version("abcnmo"), request(e=4000, history_check=history),
                tmp_path / "r3.csv")
        assert audit(store, "pay").records_breached == 0


def test_a_returning_leaver_is_narrowed_across_strategies(tmp_path: Path) -> None:
    # the knowledge a naive release carries forward holds the narrowed set too
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for n, (names, history) in enumerate([("xaybzc", "pruned"), ("abc", "naive")]):
            publish(store, table({x: RETURN[x] for x in names}),
                    request(e=4000, history_check=history), tmp_path / f"r{n}.csv")
        third = table({x: RETURN[x] for x in "xabcnm"})
        with pytest.raises(CrossReleaseBreachError) as refused:
            publish(store, third, request(e=4000, history_check="pruned"), tmp_path / "r3.csv",
                    allow_breach=True)
        assert set(third["name"].iloc[refused.value.details["rows"]]) == {"x"}


# -- queries ---------------------------------------------------------------------------------


def test_query_bounds_hold_the_truth() -> None:
    from anonkit.data.schema import Schema

    df = population(np.arange(300))
    schema = Schema.from_roles(df, quasi_identifiers=["age", "zip"], sensitive=["salary"],
                               identifiers=["name"])
    release = ke_method.anonymize(df, schema, {"k": 4, "e": 500, "seed": 1})
    truth = df["salary"].to_numpy(dtype=float)
    for where in (None, {"age": (25, 40)}, {"zip": 10_003}, {"age": (30, 60), "zip": (10_000,
                                                                                       10_050)}):
        mask = np.ones(len(df), bool) if where is None else \
            __import__("anonkit.metrics.range_queries", fromlist=["selection"]).selection(df, where)
        total = query(release, where, "sum")
        assert total.low <= truth[mask].sum() <= total.high
        assert total.count == mask.sum() == query(release, where, "count").estimate
        if mask.any():
            avg = query(release, where, "avg")
            assert avg.low <= truth[mask].mean() + 1e-9 and truth[mask].mean() <= avg.high + 1e-9
    assert query(release, None, "sum").estimate == pytest.approx(truth.sum())
    error = relative_error(release, truth, n_queries=50)
    assert 0 <= error["ke.relative_error.mean"] < 1
    with pytest.raises(InputError, match="agg"):
        query(release, None, "median")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-30_000, 30_000), min_size=3, max_size=80), st.integers(1, 4),
       st.integers(0, 4000))
def test_the_integer_path_decides_as_the_floats(cents: list[int], k: int, e: int) -> None:
    v = np.array(cents, dtype=float) / 100  # two decimal places, exact as integers
    assert ke.exact_integers(v, 2) is not None
    _, cost = oracle.reference_partition(np.sort(v), k, e / 100, places=2)
    if not np.isfinite(cost):
        with pytest.raises(InputError):
            ke.optimal_partition(v, k, e / 100, places=2)
        return
    part = ke.optimal_partition(v, k, e / 100, places=2)
    assert part.cost == pytest.approx(cost)
    order, sorted_values = ke.sort_values(v)  # the float path, same programme otherwise
    floats = ke._solve(order, sorted_values, k, e / 100, 2, None)
    assert list(part.starts) == list(floats.starts) and (part.order == order).all()
    assert ke.exact_integers(np.array([0.1, 1e-12]), 2) is None  # not exact: floats
