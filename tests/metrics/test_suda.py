"""SUDA2 minimal sample uniques and (DIS-)SUDA scores (:mod:`anonkit.metrics.suda`).

Known answers: the two worked examples whose SUDA scores sdcMicro's own test file records
(``sdcTools/sdcMicro``, ``tests/testthat/test_suda2.R``, "suda2 sdc guideline" from the
IHSN SDC practice guide, and "suda2 book example" from Templ 2017; both tests are commented
out there because their string columns would reach sdcMicro's C++ as NA). R is not
installed here, so sdcMicro could not be run: the MSUs, scores and the DIS-SUDA figures
are worked out by hand in the tests below. Then a Hypothesis comparison with an
exhaustive search, on random small tables, and the edge cases.
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonkit.datasets import load_adult
from anonkit.errors import InputError
from anonkit.metrics.suda import MAX_QIS, Suda2Result, suda2, suda_weights

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def encode(frame: pd.DataFrame) -> np.ndarray:
    return np.column_stack([pd.factorize(frame[c])[0] for c in frame.columns])


# ---------------------------------------------------------------- exhaustive reference


def brute_msus(table: np.ndarray, max_msu: int) -> list[set[tuple[int, ...]]]:
    """Per record, its MSUs by the definition: every set of at most ``max_msu`` QIs on
    which no other row has the record's values, keeping those with no such proper
    subset."""
    rows = [tuple(int(v) for v in r) for r in table]
    n_qis = table.shape[1]
    out = []
    for i, record in enumerate(rows):
        unique = [s for k in range(1, min(max_msu, n_qis) + 1)
                  for s in combinations(range(n_qis), k)
                  if not any(j != i and all(other[q] == record[q] for q in s)
                             for j, other in enumerate(rows))]
        out.append({s for s in unique if not any(set(t) < set(s) for t in unique)})
    return out


def reference_scores(table: np.ndarray, msus: list[set[tuple[int, ...]]],
                     fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """SUDA and DIS-SUDA scores from the formulas (sdcMicro's ``Suda2.h``) written out."""
    n_qis = table.shape[1]
    score = np.array([sum(math.factorial(n_qis - len(s)) for s in m) for m in msus],
                     dtype=float)
    counts = Counter(tuple(r) for r in table.tolist())
    u = sum(1 for c in counts.values() if c == 1)
    p = sum(c for c in counts.values() if c == 2)
    dis_score = np.zeros(len(table))
    if u:
        dis = u * fraction / (u * fraction + p * (1 - fraction))
        q = 1 + (8 - n_qis) / 20
        adjust = sum(s ** -q for s in score if s > 0)
        for i, s in enumerate(score):
            if s > 0:
                dis_score[i] = 1 / (1 + (u / dis - u) / (s ** q * adjust))
    return score, dis_score


def found_msus(result: Suda2Result, n_rows: int) -> list[set[tuple[int, ...]]]:
    out: list[set[tuple[int, ...]]] = [set() for _ in range(n_rows)]
    for qis, rows in result.msus.items():
        for r in rows.tolist():
            out[r].add(qis)
    return out


@st.composite
def tables(draw: st.DrawFn) -> np.ndarray:
    """Small tables with small domains, some rows copied (duplicates and triplicates)."""
    n_rows = draw(st.integers(1, 30))
    n_qis = draw(st.integers(2, 6))
    domains = draw(st.lists(st.integers(1, 4), min_size=n_qis, max_size=n_qis))
    cells = [draw(st.lists(st.integers(0, d - 1), min_size=n_rows, max_size=n_rows))
             for d in domains]
    table = np.array(cells, dtype=np.int64).T
    copies = draw(st.lists(st.integers(0, n_rows - 1), max_size=6))
    return np.concatenate([table, table[copies]]) if copies else table


@st.composite
def binary_tables(draw: st.DrawFn) -> np.ndarray:
    """Distinct 0/1 rows over 5 or 6 QIs: records there tend to need 4 to 6 QIs to stand
    out, which the small domains above rarely give."""
    n_qis = draw(st.integers(5, 6))
    picked = draw(st.lists(st.integers(0, 2**n_qis - 1), min_size=1, max_size=30,
                           unique=True))
    return (np.array(picked)[:, None] >> np.arange(n_qis)) & 1


@SETTINGS
@given(table=st.one_of(tables(), binary_tables()), max_msu=st.integers(1, 7),
       fraction=st.sampled_from([0.01, 0.1, 0.5, 1.0]))
def test_matches_exhaustive_search(table: np.ndarray, max_msu: int, fraction: float) -> None:
    result = suda2(table, max_msu=max_msu, dis_fraction=fraction)
    expected = brute_msus(table, max_msu)
    assert found_msus(result, len(table)) == expected
    sizes = np.zeros((len(table), max_msu), dtype=np.int64)
    for i, m in enumerate(expected):
        for s in m:
            sizes[i, len(s) - 1] += 1
    np.testing.assert_array_equal(result.msu_counts, sizes)
    score, dis_score = reference_scores(table, expected, fraction)
    np.testing.assert_array_equal(result.score, score)
    np.testing.assert_allclose(result.dis_score, dis_score, rtol=1e-12, atol=0)
    for i in range(len(table)):
        assert set(result.record_msus(i)) == expected[i]


@SETTINGS
@given(table=tables(), seed=st.integers(0, 2**32 - 1))
def test_invariant_under_row_order_and_codes(table: np.ndarray, seed: int) -> None:
    """Shuffling the rows moves the figures with them; any other codes for the same values
    (negative, huge) change nothing."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(table))
    recoded = table * -(10**12) + 7  # one-to-one per column
    base = suda2(table, max_msu=3)
    moved = suda2(recoded[order], max_msu=3)
    np.testing.assert_array_equal(moved.score, base.score[order])
    np.testing.assert_array_equal(moved.dis_score, base.dis_score[order])
    np.testing.assert_array_equal(moved.msu_counts, base.msu_counts[order])


# ---------------------------------------------------------------- known answers

#: The SDC practice guide's example (sdcMicro test "suda2 sdc guideline"): 4 QIs, so an
#: MSU of k QIs weighs (4 - k)!: 6, 2, 1, 1.
GUIDE = pd.DataFrame({
    "Residence": ["Urban", "Urban", "Urban", "Urban", "Rural", "Urban", "Urban", "Urban",
                  "Urban", "Urban"],
    "Gender": ["Female", "Female", "Female", "Male", "Female", "Male", "Female", "Male",
               "Female", "Female"],
    "Education": ["Secondary incomplete", "Secondary incomplete", "Primary incomplete",
                  "Secondary complete", "Secondary complete", "Secondary complete",
                  "Primary complete", "Post-secondary", "Secondary incomplete",
                  "Secondary incomplete"],
    "Labor": ["Employed", "Employed", "Non-LF", "Employed", "Unemployed", "Employed",
              "Non-LF", "Unemployed", "Non-LF", "Non-LF"],
})


def test_sdc_guide_example() -> None:
    result = suda2(encode(GUIDE))
    # QIs: 0 Residence, 1 Gender, 2 Education, 3 Labor. Rows 0-1, 3 and 5, 8-9 are pairs.
    # row 2: Primary incomplete alone -> {2}; Urban Female Non-LF is rows 2, 6, 8, 9.
    # row 4: Rural alone -> {0}; Female+Unemployed, Secondary complete+Unemployed and
    #   Female+Secondary complete each only row 4 -> {1,3}, {2,3}, {1,2}: 6 + 3 * 2 = 12.
    # row 6: Primary complete alone -> {2}: 6.
    # row 7: Post-secondary alone -> {2}; Male+Unemployed and Urban+Unemployed only row 7
    #   -> {1,3}, {0,3}: 6 + 2 * 2 = 10.
    assert result.record_msus(2) == [(2,)]
    assert result.record_msus(4) == [(0,), (1, 2), (1, 3), (2, 3)]
    assert result.record_msus(6) == [(2,)]
    assert result.record_msus(7) == [(2,), (0, 3), (1, 3)]
    np.testing.assert_array_equal(result.score, [0, 0, 6, 0, 12, 0, 6, 10, 0, 0])
    np.testing.assert_array_equal(result.msu_counts[:, :2].sum(axis=0), [4, 5])
    assert result.msu_counts[:, 2:].sum() == 0
    # DIS: U = 4 sample uniques (rows 2, 4, 6, 7), P = 6 rows in pairs, f = 0.01:
    # dis = 0.04 / (0.04 + 5.94) = 0.04 / 5.98; U / dis - U = 598 - 4 = 594.
    # Q = 1 + (8 - 4) / 20 = 1.2; A = 2 * 6**-1.2 + 12**-1.2 + 10**-1.2.
    assert (result.sample_uniques, result.pair_records) == (4, 6)
    assert result.dis == pytest.approx(0.04 / 5.98, rel=1e-15)
    adjust = 2 * 6**-1.2 + 12**-1.2 + 10**-1.2  # = 0.3009 ...
    expected = {2: 1 / (1 + 594 / (6**1.2 * adjust)), 4: 1 / (1 + 594 / (12**1.2 * adjust)),
                6: 1 / (1 + 594 / (6**1.2 * adjust)), 7: 1 / (1 + 594 / (10**1.2 * adjust))}
    for row, value in expected.items():
        assert result.dis_score[row] == pytest.approx(value, rel=1e-12)
    # in figures: 0.004987, 0.011383, 0.004987, 0.009167
    np.testing.assert_allclose(result.dis_score[[2, 4, 6, 7]],
                               [0.0049868, 0.0113830, 0.0049868, 0.0091667], atol=5e-8)
    assert result.dis_score[[0, 1, 3, 5, 8, 9]].tolist() == [0.0] * 6
    # ranking: row 4 (12), row 7 (10), then rows 2 and 6 tied (6), by row number
    assert result.top_records().tolist() == [4, 7, 2, 6]
    assert result.top_records(2, by="score").tolist() == [4, 7]


def test_book_example() -> None:
    """Templ (2017), sdcMicro test "suda2 book example": scores of rows 5-8 are 4, 2, 6, 8."""
    tab = pd.DataFrame({
        "age": ["20s"] * 7 + ["60s"],
        "gender": ["male"] * 4 + ["female"] * 3 + ["male"],
        "income": ["50k+", "50k+", *["50k-"] * 6],
        "education": ["highschool"] * 4 + ["university", "highschool", "middleschool",
                                           "university"],
    })
    result = suda2(encode(tab))
    # row 4 (R's 5): female+university and 20s+university -> 2 + 2
    # row 5: female+highschool -> 2; row 6: middleschool -> 6
    # row 7: 60s -> 6 and male+university -> 2
    np.testing.assert_array_equal(result.score, [0, 0, 0, 0, 4, 2, 6, 8])
    assert result.record_msus(4) == [(0, 3), (1, 3)]
    assert result.record_msus(7) == [(0,), (1, 3)]


def test_three_rows() -> None:
    """sdcMicro's "simple example contribution" table (3 QIs: weights 2, 1, 1)."""
    table = np.array([[2, 0, 0], [1, 3, 6], [1, 0, 0]])
    result = suda2(table)
    assert [result.record_msus(i) for i in range(3)] == [
        [(0,)], [(1,), (2,)], [(0, 1), (0, 2)]]
    np.testing.assert_array_equal(result.score, [2, 4, 2])
    # every record is a sample unique and none is in a pair: dis = 1, every DIS-SUDA is 1
    assert result.dis == 1.0
    np.testing.assert_array_equal(result.dis_score, [1.0, 1.0, 1.0])


def test_weights() -> None:
    np.testing.assert_array_equal(suda_weights(8, 5), [5040, 720, 120, 24, 6])
    np.testing.assert_array_equal(suda_weights(3, 5), [2, 1, 1, 0, 0])


# ---------------------------------------------------------------- edge cases


def test_single_row_and_single_column() -> None:
    one = suda2(np.array([[5, 7, 9]]))
    # alone in the table: each QI on its own singles it out
    assert one.record_msus(0) == [(0,), (1,), (2,)]
    assert one.score.tolist() == [6.0]  # 3 * (3 - 1)!
    assert one.dis_score.tolist() == [1.0]
    col = suda2(np.array([[1], [2], [2], [3]]), max_msu=3)
    assert col.msu_counts.tolist() == [[1, 0, 0], [0, 0, 0], [0, 0, 0], [1, 0, 0]]
    assert col.score.tolist() == [1.0, 0.0, 0.0, 1.0]  # (1 - 1)! = 1


def test_duplicates_only() -> None:
    result = suda2(np.array([[1, 2], [1, 2], [3, 4], [3, 4], [3, 4]]))
    assert result.msus == {}
    assert result.score.tolist() == [0.0] * 5
    assert result.dis_score.tolist() == [0.0] * 5
    assert (result.sample_uniques, result.pair_records, result.dis) == (0, 2, 0.0)
    assert result.top_records().size == 0


def test_max_msu_cuts_larger_msus() -> None:
    # row 3's only MSU is all three QIs
    table = np.array([[0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 1]])
    full = suda2(table, max_msu=3)
    assert full.record_msus(3) == [(0, 1, 2)]
    assert full.score[3] == 1.0
    cut = suda2(table, max_msu=2)
    assert cut.score[3] == 0.0 and cut.record_msus(3) == []
    assert cut.msu_counts.shape == (6, 2)


def test_bool_and_unsigned_codes() -> None:
    table = np.array([[True, False], [True, True], [False, True]])
    a = suda2(table)
    b = suda2(table.astype(np.uint8))
    np.testing.assert_array_equal(a.score, b.score)


def test_top_records() -> None:
    result = suda2(encode(GUIDE))
    assert result.top_records(None).tolist() == [4, 7, 2, 6]
    assert result.top_records(0).size == 0
    with pytest.raises(InputError, match="by must be"):
        result.top_records(by="values")  # type: ignore[arg-type]


@pytest.mark.parametrize(("codes", "kwargs", "message"), [
    (np.zeros((0, 3), dtype=np.int64), {}, "empty"),
    (np.zeros((4, 0), dtype=np.int64), {}, "empty"),
    (np.zeros(4, dtype=np.int64), {}, "2-D"),
    (np.zeros((4, 2)), {}, "integers"),
    (np.array([["a", "b"]]), {}, "integers"),
    (np.zeros((2, MAX_QIS + 1), dtype=np.int64), {}, f"at most {MAX_QIS}"),
    (np.zeros((2, 2), dtype=np.int64), {"max_msu": 0}, "max_msu must be >= 1"),
    (np.zeros((2, 2), dtype=np.int64), {"max_msu": 2.0}, "max_msu must be an integer"),
    (np.zeros((2, 2), dtype=np.int64), {"dis_fraction": 0.0}, "dis_fraction"),
    (np.zeros((2, 2), dtype=np.int64), {"dis_fraction": 1.5}, "dis_fraction"),
    (np.zeros((2, 2), dtype=np.int64), {"dis_fraction": float("nan")}, "dis_fraction"),
])
def test_bad_input(codes: np.ndarray, kwargs: dict, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        suda2(codes, **kwargs)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------- Adult


def adult_codes() -> np.ndarray:
    data = load_adult().data
    qis = ["sex", "age", "race", "marital-status", "education", "native-country",
           "workclass", "occupation"]
    return encode(data[qis])


def test_adult_against_lattice_scan() -> None:
    """On Adult (8 QIs), the pruned search equals a plain scan of every set of at most 3
    QIs, all rows grouped each time (an MSU is a unique set whose subsets one QI smaller
    are not unique); and with every size searched each sample unique has an MSU."""
    codes = adult_codes()
    result = suda2(codes, max_msu=3)
    unique: dict[tuple[int, ...], np.ndarray] = {}
    expected: dict[tuple[int, ...], np.ndarray] = {}
    for k in range(1, 4):
        for qis in combinations(range(8), k):
            _, inverse, counts = np.unique(codes[:, qis], axis=0, return_inverse=True,
                                           return_counts=True)
            unique[qis] = counts[inverse.reshape(-1)] == 1
            minimal = unique[qis].copy()
            for i in range(k) if k > 1 else ():
                minimal &= ~unique[qis[:i] + qis[i + 1:]]
            if minimal.any():
                expected[qis] = np.flatnonzero(minimal)
    assert result.msus.keys() == expected.keys()
    for qis, rows in expected.items():
        np.testing.assert_array_equal(result.msus[qis], rows)
    full = suda2(codes, max_msu=8)
    assert full.special_uniques == full.sample_uniques
    np.testing.assert_array_equal(full.msu_counts[:, :3], result.msu_counts)
