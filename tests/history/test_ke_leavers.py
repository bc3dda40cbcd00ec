"""Issue 22, item 3: incremental (k,e) publishes when people leave (placeholders keep a
leaver's value in its group), never merges earlier groups, and a brute-force adversary
(tests/oracles/ke_leavers.py) finds no pair of a person's groups intersecting below (k,e)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonkit.algorithms import ke_partition as ke
from anonkit.algorithms.ke_placeholders import placeholder_partition
from anonkit.errors import InputError
from anonkit.history import HistoryStore, PublishRequest, audit, publish
from anonkit.history.attacks import CrossReleaseBreachError
from oracles import ke_leavers as oracle

K, E = 5, 2000


@pytest.fixture(autouse=True)
def _quiet() -> None:
    warnings.filterwarnings("ignore", message=".*history secret.*")


def request(**options: object) -> PublishRequest:
    return PublishRequest(dataset="pay", key="emp", quasi_identifiers=["age", "zip"],
                          sensitive=["salary"], method="ke", options={"k": K, "e": E, **options})


def salary_table(ids: np.ndarray, salaries: dict[int, int]) -> pd.DataFrame:
    """Employees with exact quasi-identifiers unique per person (zip), as the oracle needs."""
    ids = np.asarray(ids)
    return pd.DataFrame({"emp": [f"e{i}" for i in ids], "age": 20 + ids % 45,
                         "zip": 10_000 + ids, "salary": [salaries[int(i)] for i in ids]})


def quarters(n: int = 400, seed: int = 4) -> tuple[list[pd.DataFrame], dict[int, int]]:
    """Four quarters of a salary table: each quarter 5 % leave and 10 % (of the first
    quarter's size) join."""
    rng = np.random.default_rng(seed)
    salaries: dict[int, int] = {}

    def hire(ids: np.ndarray) -> None:
        for i, s in zip(ids.tolist(), rng.lognormal(np.log(55_000), 0.35, len(ids)), strict=True):
            salaries[i] = round(s)

    ids = np.arange(n)
    hire(ids)
    tables = [salary_table(ids, salaries)]
    next_id = n
    for _ in range(3):
        ids = np.setdiff1d(ids, rng.choice(ids, round(0.05 * len(ids)), replace=False))
        joiners = np.arange(next_id, next_id + round(0.10 * n))
        next_id += len(joiners)
        hire(joiners)
        ids = np.concatenate([ids, joiners])
        tables.append(salary_table(ids, salaries))
    return tables, salaries


def test_four_quarters_with_leavers_and_joiners_publish_without_a_breach(
        tmp_path: Path) -> None:
    tables, _ = quarters()
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for n, df in enumerate(tables):
            info = publish(store, df, request(), tmp_path / f"q{n}.csv")
            assert info.n_input_rows == len(df)
        assert audit(store, "pay").records_breached == 0
    releases = [pd.read_csv(tmp_path / f"q{n}.csv") for n in range(4)]
    found = oracle.narrowed(tables, releases, key="emp", quasi_identifiers=["age", "zip"],
                            sensitive="salary", k=K, e=E)
    assert found == []
    for n in range(1, 4):
        # the leavers' values stay in their groups, as placeholder rows counted per group
        groups = pd.read_csv(tmp_path / f"q{n}.groups.csv")
        blank = releases[n]["age"].isna()
        assert blank.sum() == groups["placeholders"].sum() > 0
        per_group = releases[n][blank]["group"].value_counts()
        assert (groups.set_index("id")["placeholders"][per_group.index] == per_group).all()
        assert releases[n]["zip"].isna().sum() == blank.sum()
    # no earlier group merged or split: the group mates of release 1 still in the table
    # are together (with placeholders for those who left)
    first = oracle.person_groups(tables[0], releases[0], "emp", ["age", "zip"], "group")
    last = oracle.person_groups(tables[3], releases[3], "emp", ["age", "zip"], "group")
    for members in pd.Series(first).groupby(pd.Series(first)).groups.values():
        still = [m for m in members if m in last]
        assert len({last[m] for m in still}) <= 1


def test_the_oracle_finds_a_naive_re_partition(tmp_path: Path) -> None:
    # the oracle can fail: the chapter's example re-partitioned alone (forced past the
    # gate) pins Tom to 84,000
    d0 = {"Tom": 84_000, "Mike": 86_000, "Alice": 87_000, "Bob": 88_000, "Kate": 89_000,
          "Paul": 90_000}
    d1 = {"Ann": 82_000, "Jo": 83_000, **d0, "Oven": 85_000}
    tables = [pd.DataFrame({"emp": list(d), "age": 30, "zip": [sum(map(ord, n)) for n in d],
                            "salary": list(d.values())}) for d in (d0, d1)]
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for n, df in enumerate(tables):
            publish(store, df, request(k=3, history_check="ignore"), tmp_path / f"q{n}.csv",
                    allow_breach=True)
    releases = [pd.read_csv(tmp_path / f"q{n}.csv") for n in range(2)]
    found = oracle.narrowed(tables, releases, key="emp", quasi_identifiers=["age", "zip"],
                            sensitive="salary", k=3, e=E)
    assert "Tom" in {f.person for f in found}


SALARIES = {i: 40_000 + 1_000 * i for i in range(12)}


def test_a_whole_group_that_left_is_not_published_and_comes_back_with_a_member(
        tmp_path: Path) -> None:
    # k=3, e=2000: the optimum is four groups of three; the lowest group (0, 1, 2) leaves,
    # then 1 comes back: its group is published again whole (1 and two placeholders)
    def req() -> PublishRequest:
        return request(k=3, e=2000)

    everyone = np.arange(12)
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, salary_table(everyone, SALARIES), req(), tmp_path / "r1.csv")
        info = publish(store, salary_table(everyone[3:], SALARIES), req(), tmp_path / "r2.csv")
        assert info.parameters["groups_not_published"] == 1
        second = pd.read_csv(tmp_path / "r2.csv")
        assert len(second) == 9 and not second["age"].isna().any()
        back = np.concatenate([[1], everyone[3:]])
        publish(store, salary_table(back, SALARIES), req(), tmp_path / "r3.csv")
        third = pd.read_csv(tmp_path / "r3.csv")
        group = third.loc[third["zip"] == 10_001, "group"].item()
        mates = third[third["group"] == group]
        assert sorted(mates["salary"]) == [40_000, 41_000, 42_000]
        assert mates["age"].isna().sum() == 2
        assert audit(store, "pay").records_breached == 0


def test_a_changed_value_is_refused_naming_rows_not_values(tmp_path: Path) -> None:
    everyone = np.arange(12)
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, salary_table(everyone, SALARIES), request(k=3), tmp_path / "r1.csv")
        raised = salary_table(everyone, SALARIES)
        raised.loc[4, "salary"] = 77_777
        with pytest.raises(InputError, match=r"1 record \(data rows 4\) hold a value of "
                                             r"'salary' their earlier group") as refused:
            publish(store, raised, request(k=3), tmp_path / "r2.csv")
        assert "77777" not in str(refused.value) and "77,777" not in str(refused.value)
        assert len(store.releases("pay")) == 1
    assert not (tmp_path / "r2.csv").exists()


def test_too_few_newcomers_for_a_group_of_their_own_are_refused(tmp_path: Path) -> None:
    everyone = np.arange(12)
    salaries = {**SALARIES, 12: 60_000}
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, salary_table(everyone, salaries), request(k=3), tmp_path / "r1.csv")
        with pytest.raises(InputError, match="the 1 record new to this dataset cannot form "
                                             "groups of their own"):
            publish(store, salary_table(np.arange(13), salaries), request(k=3),
                    tmp_path / "r2.csv")
    assert not (tmp_path / "r2.csv").exists()


def test_a_covering_release_continues_with_placeholders(tmp_path: Path) -> None:
    # the previous release used the chapter's covering partition: its groups become slots
    tables, _ = quarters(200, seed=2)
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, tables[0], request(history_check="pruned"), tmp_path / "q0.csv")
        info = publish(store, tables[1], request(), tmp_path / "q1.csv")
        assert info.parameters["history_check"] == "placeholders"
        assert audit(store, "pay").records_breached == 0
    releases = [pd.read_csv(tmp_path / f"q{n}.csv") for n in range(2)]
    assert oracle.narrowed(tables[:2], releases, key="emp", quasi_identifiers=["age", "zip"],
                           sensitive="salary", k=K, e=E) == []


# -- the partition step against the oracle, on random sequences --------------------------------


def _released(result_part: ke.KEPartition, n_rows: int, names: np.ndarray,
              placeholder_values: np.ndarray) -> pd.DataFrame:
    """A release as the oracle reads it: exact QIs (the name), value and group per row."""
    group = result_part.group_ids()
    values = np.concatenate([np.zeros(n_rows), placeholder_values])
    values[result_part.order] = result_part.sorted_values
    qi = np.concatenate([names, np.full(len(placeholder_values), np.nan)])
    return pd.DataFrame({"name": qi, "salary": values, "group": group})


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 4), st.integers(0, 40))
def test_random_sequences_never_narrow_a_pair_of_groups(seed: int, k: int, e: int) -> None:
    rng = np.random.default_rng(seed)
    pool = rng.permutation(2_000)[:400].astype(float)  # a person keeps their value
    ids = np.arange(30)
    gone = np.zeros(0, dtype=np.int64)
    next_id = 30
    state: ke.ValuesLeft | None = None
    tables: list[pd.DataFrame] = []
    releases: list[pd.DataFrame] = []
    for _ in range(5):
        keys = np.array([b"%016d" % i for i in ids], dtype="S16")
        values = pool[ids]
        if state is None:
            try:
                part = ke.optimal_partition(values, k, e)
            except InputError:
                return
            state = ke.first_knowledge(part, keys, slots=True)
            placeholders = np.zeros(0)
        else:
            try:
                result = placeholder_partition(values, keys, state, k, e)
            except InputError:
                break  # too few newcomers: a steward waits for more
            part, placeholders, state = (result.part, result.placeholder_values,
                                         result.knowledge)
        names = ids.astype(float)
        tables.append(pd.DataFrame({"name": names, "salary": values}))
        releases.append(_released(part, len(ids), names, placeholders))
        # every group of the release meets (k,e) itself
        for _, rows in releases[-1].groupby("group"):
            assert rows["salary"].nunique() >= k and np.ptp(rows["salary"]) >= e
        back = rng.choice(gone, min(2, len(gone)), replace=False) if len(gone) else gone
        gone = np.setdiff1d(gone, back)
        leaving = rng.choice(ids, 3, replace=False)
        ids = np.setdiff1d(ids, leaving)
        gone = np.union1d(gone, leaving)
        ids = np.concatenate([ids, back, np.arange(next_id, next_id + 8)])
        next_id += 8
    found = oracle.narrowed(tables, releases, key="name", quasi_identifiers=["name"],
                            sensitive="salary", k=k, e=e)
    assert found == []


def test_a_refusal_on_the_way_back_names_rows(tmp_path: Path) -> None:
    # a record the history knew before slots existed (left under the covering partition)
    # comes back among too few newcomers to keep what it had: refused, by row
    def version(names: str) -> pd.DataFrame:
        return pd.DataFrame({"emp": list(names), "age": [30 + ord(c) % 20 for c in names],
                             "zip": [ord(c) for c in names],
                             "salary": [RETURN[c] for c in names]})

    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, version("xaybzc"), request(k=3, e=4000, history_check="pruned"),
                tmp_path / "r1.csv")
        publish(store, version("abc"), request(k=3, e=4000, history_check="pruned"),
                tmp_path / "r2.csv")
        with pytest.raises(CrossReleaseBreachError) as refused:
            publish(store, version("xabcnm"), request(k=3, e=4000), tmp_path / "r3.csv")
        assert "'x'" not in str(refused.value)
        third = version("xabcnm")
        assert set(third["emp"].iloc[refused.value.details["rows"]]) == {"x"}
    assert not (tmp_path / "r3.csv").exists()


RETURN = {"x": 1000, "a": 2000, "y": 3000, "b": 4000, "z": 5000, "c": 6000, "n": 3500,
          "m": 5500}
