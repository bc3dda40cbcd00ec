"""Metrics: hand-computed known answers for GCP / NCP (range, set, hierarchy, prefix, mean
forms), DM, C_avg and every risk figure; properties on random class sizes and random
generalized tables; and the dict Mondrian stores in its result."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonkit.data.encoding import encode
from anonkit.data.schema import Kind, Schema
from anonkit.errors import InputError
from anonkit.generalization import Form, generalize_column
from anonkit.hierarchy.base import Hierarchy
from anonkit.metrics import (
    cavg,
    discernibility,
    gcp,
    journalist_risk,
    marketer_risk,
    ncp,
    population_class_sizes,
    population_sizes_from_table,
    prosecutor_risk,
    record_risks,
    release_metrics,
    risk_metrics,
    sample_uniques,
    suppression_rate,
)

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# -- a tiny table, three classes laid out as runs of the rows ----------------------------
#
#   row  age  color   city  zip     class
#    0   20   red     a     13053   0
#    1   25   red     b     13068   0
#    2   30   blue    c     14850   1
#    3   40   green   c     14853   2
#    4   50   green   d     13053   2
#    5   60   yellow  a     14850   2
#
# sizes [2, 1, 3], n = 6. Domains: age 20..60 (width 40); color 4 values;
# city hierarchy a,b -> AB, c,d -> CD, root * (4 leaves); zip 4 values, alphabetical.

CITY = Hierarchy([["a", "AB", "*"], ["b", "AB", "*"], ["c", "CD", "*"], ["d", "CD", "*"]],
                 name="city")
SIZES = np.array([2, 1, 3])
ORDER = np.arange(6)
STARTS = np.array([0, 2, 3])


@pytest.fixture(scope="module")
def table():
    df = pd.DataFrame({
        "age": [20, 25, 30, 40, 50, 60],
        "color": ["red", "red", "blue", "green", "green", "yellow"],
        "city": ["a", "b", "c", "c", "d", "a"],
        "zip": ["13053", "13068", "14850", "14853", "13053", "14850"],
    })
    schema = Schema.from_roles(df, ["age", "color", "city", "zip"],
                               kinds={"zip": Kind.CATEGORICAL}, hierarchies={"city": CITY})
    return encode(df, schema)


def gen(table, name: str, form: Form):
    return generalize_column(table.column(name), ORDER, STARTS, form)


def test_ncp_per_form(table) -> None:
    # age as a range: [20-25] 5/40, 30 -> 0, [40-60] 20/40
    age = gen(table, "age", Form.RANGE)
    np.testing.assert_allclose(age.loss, [0.125, 0.0, 0.5])
    # mean: same interval width lost as the range it summarises
    np.testing.assert_allclose(gen(table, "age", Form.MEAN).loss, [0.125, 0.0, 0.5])
    # color as a set: {red} 0, {blue} 0, {green,yellow} (2-1)/(4-1)
    np.testing.assert_allclose(gen(table, "color", Form.SET).loss, [0, 0, 1 / 3])
    # city by hierarchy: {a,b} -> AB covers 2 leaves: 1/3; c -> 0; {c,d,a} -> * : 1
    np.testing.assert_allclose(gen(table, "city", Form.HIERARCHY).loss, [1 / 3, 0, 1])
    # zip masked: 130** covers 13053,13068: 1/3; 14850: 0; 1**** covers all: 1
    np.testing.assert_allclose(gen(table, "zip", Form.PREFIX).loss, [1 / 3, 0, 1])

    gens = [gen(table, "age", Form.RANGE), gen(table, "color", Form.SET),
            gen(table, "city", Form.HIERARCHY)]
    # ncp.age   = (2*0.125 + 0 + 3*0.5) / 6 = 1.75/6 = 7/24
    # ncp.color = (0 + 0 + 3*(1/3)) / 6     = 1/6
    # ncp.city  = (2*(1/3) + 0 + 3*1) / 6   = (11/3)/6 = 11/18
    np.testing.assert_allclose(ncp(gens, SIZES), [7 / 24, 1 / 6, 11 / 18])
    # gcp = (21/72 + 12/72 + 44/72) / 3 = 77/216
    assert gcp(gens, SIZES) == pytest.approx(77 / 216)
    # two suppressed rows count as NCP 1 on every QI, out of 8 rows:
    # age (1.75+2)/8 = 15/32, color (1+2)/8 = 3/8, city (11/3+2)/8 = 17/24
    np.testing.assert_allclose(ncp(gens, SIZES, suppressed=2), [15 / 32, 3 / 8, 17 / 24])
    assert gcp(gens, SIZES, suppressed=2) == pytest.approx((45 + 36 + 68) / 96 / 3)


def test_gcp_takes_a_plain_loss_matrix() -> None:
    # another algorithm's per-class NCPs: 2 QIs x 2 classes of sizes 1 and 3
    # (1*0.5 + 3*0)/4 = 1/8 and (1*1 + 3*0.25)/4 = 7/16 -> gcp = (2/16 + 7/16)/2 = 9/32
    loss = np.array([[0.5, 0.0], [1.0, 0.25]])
    assert gcp(loss, np.array([1, 3])) == pytest.approx(9 / 32)
    assert gcp(np.array([0.5, 0.0]), np.array([1, 3])) == pytest.approx(1 / 8)
    assert gcp(np.zeros((0, 2)), np.array([1, 3])) == 0.0
    with pytest.raises(ValueError, match="shape"):
        gcp(loss, np.array([1, 2, 3]))


def test_discernibility_cavg_suppression() -> None:
    assert discernibility(SIZES) == 4 + 1 + 9
    # 2 suppressed rows each charged the whole input (8 rows): 14 + 16
    assert discernibility(SIZES, suppressed=2) == 30
    assert discernibility(SIZES, suppressed=2, n_total=100) == 14 + 200
    assert cavg(SIZES, 1) == 2.0  # 6 rows / 3 classes / k=1
    assert cavg(SIZES, 2) == 1.0
    assert cavg(np.array([], dtype=int), 5) == 0.0
    with pytest.raises(ValueError):
        cavg(SIZES, 0)
    assert suppression_rate(6, 2) == 0.25
    assert suppression_rate(0, 0) == 0.0


# -- risk ---------------------------------------------------------------------------------
#
# sizes [2, 1, 3]: per record prosecutor risk 1/2, 1/2, 1, 1/3, 1/3, 1/3

def test_prosecutor_known_answers() -> None:
    p = prosecutor_risk(SIZES)
    assert p.max == 1.0
    assert p.avg == pytest.approx(0.5)  # (1/2+1/2+1+1/3*3)/6 = 3/6 = classes/rows
    assert p.records_at_risk == 1.0  # every risk > 0.2
    assert prosecutor_risk(SIZES, 0.4).records_at_risk == pytest.approx(0.5)  # 1/2,1/2,1
    assert prosecutor_risk(SIZES, 0.5).records_at_risk == pytest.approx(1 / 6)  # strict: 1
    # a class of exactly 1/threshold rows is not at risk
    assert prosecutor_risk(np.array([5, 5]), 0.2).records_at_risk == 0.0
    assert sample_uniques(SIZES) == pytest.approx(1 / 6)
    np.testing.assert_allclose(record_risks(np.array([0, 0, 1, 2, 2, 2]), SIZES),
                               [0.5, 0.5, 1, 1 / 3, 1 / 3, 1 / 3])
    with pytest.raises(InputError, match="threshold"):
        prosecutor_risk(SIZES, 0.0)


def test_population_equals_sample_by_default() -> None:
    assert journalist_risk(SIZES) == prosecutor_risk(SIZES)
    assert marketer_risk(SIZES) == pytest.approx(3 / 6)  # classes / rows


def test_population_size_scales_classes() -> None:
    # N = 60, n = 6: every class scaled by 10 -> F = [20, 10, 30]
    np.testing.assert_allclose(population_class_sizes(SIZES, population_size=60), [20, 10, 30])
    j = journalist_risk(SIZES, population_size=60)
    assert j.max == pytest.approx(0.1)  # 1/10
    assert j.avg == pytest.approx(0.05)  # (2/20 + 1/10 + 3/30)/6 = 0.3/6
    assert j.records_at_risk == 0.0
    assert journalist_risk(SIZES, 0.05, population_size=60).records_at_risk == \
        pytest.approx(1 / 6)  # only the record with 1/10
    assert marketer_risk(SIZES, population_size=60) == pytest.approx(3 / 60)  # classes / N
    # the sampling fraction counts suppressed rows: n = 6 + 4 = 10 -> F = f * 6
    np.testing.assert_allclose(
        population_class_sizes(SIZES, population_size=60, sample_size=10), [12, 6, 18])
    with pytest.raises(InputError, match="smaller than the table"):
        journalist_risk(SIZES, population_size=5)


def test_population_sizes_given_per_class() -> None:
    F = np.array([4, 1, 5])
    j = journalist_risk(SIZES, population_sizes=F)
    # per record 1/4, 1/4, 1, 1/5, 1/5, 1/5
    assert j.max == 1.0
    assert j.avg == pytest.approx(2.1 / 6)
    assert j.records_at_risk == pytest.approx(0.5)  # 1/5 is not above 0.2
    assert marketer_risk(SIZES, population_sizes=F) == pytest.approx((2 / 4 + 1 + 3 / 5) / 6)
    with pytest.raises(InputError, match="contain the sample"):
        journalist_risk(SIZES, population_sizes=np.array([1, 1, 5]))
    with pytest.raises(InputError, match="one population count"):
        journalist_risk(SIZES, population_sizes=np.array([4, 1]))


def test_population_sizes_from_table() -> None:
    sample = pd.DataFrame({"age": ["[20-29]", "[30-39]", "[20-29]", None],
                           "zip": ["130**", "148**", "130**", "1****"]})
    population = pd.concat([sample, pd.DataFrame({
        "age": ["[20-29]", "[40-49]", np.nan, "[30-39]", "[30-39]"],
        "zip": ["130**", "148**", "1****", "148**", "148**"]})], ignore_index=True)
    # sample classes in first-appearance order: ([20-29],130**), ([30-39],148**), (NA,1****)
    # population counts: 2+1, 1+2, 1+1 (missing matches missing)
    F = population_sizes_from_table(sample, population, ["age", "zip"])
    np.testing.assert_array_equal(F, [3, 3, 2])
    j = journalist_risk(np.array([2, 1, 1]), population_sizes=F)
    assert j.max == pytest.approx(0.5)
    with pytest.raises(InputError, match="not a column"):
        population_sizes_from_table(sample, population, ["age", "nope"])


def test_risk_metrics_keys() -> None:
    m = risk_metrics(SIZES)
    assert set(m) == {"prosecutor.max", "prosecutor.avg", "prosecutor.records_at_risk",
                      "journalist.max", "journalist.avg", "journalist.records_at_risk",
                      "marketer", "sample_uniques", "risk_threshold"}
    assert all(isinstance(v, float) for v in m.values())


# -- release_metrics ----------------------------------------------------------------------

def test_release_metrics_known_answers(table) -> None:
    gens = [gen(table, "age", Form.RANGE), gen(table, "color", Form.SET),
            gen(table, "city", Form.HIERARCHY)]
    # as released, classes 0 and 1 look the same to an adversary: sizes [3, 3]
    m = release_metrics(gens, SIZES, np.array([3, 3]), k=2)
    assert m["gcp"] == pytest.approx(77 / 216)
    assert m["ncp.age"] == pytest.approx(7 / 24)
    assert m["ncp.color"] == pytest.approx(1 / 6)
    assert m["ncp.city"] == pytest.approx(11 / 18)
    assert m["discernibility"] == 18.0  # 9 + 9
    assert m["cavg"] == 1.5  # 6 / 2 / 2
    assert m["n_classes"] == 2.0 and m["n_partitions"] == 3.0
    assert m["prosecutor.max"] == pytest.approx(1 / 3)
    assert m["marketer"] == pytest.approx(2 / 6)
    assert m["suppression_rate"] == 0.0
    assert all(isinstance(v, float) for v in m.values())

    s = release_metrics(gens, SIZES, SIZES, k=1, suppressed=2, population_size=80)
    assert s["gcp"] == pytest.approx(149 / 288)
    assert s["discernibility"] == 30.0
    assert s["suppression_rate"] == 0.25
    # n = 8 input rows drawn from 80: F = 10 f = [20, 10, 30]
    assert s["journalist.max"] == pytest.approx(0.1)
    assert s["marketer"] == pytest.approx((2 / 20 + 1 / 10 + 3 / 30) / 6)
    assert s["population_size"] == 80.0
    with pytest.raises(ValueError, match="released rows"):
        release_metrics(gens, SIZES, np.array([3, 4]), k=1)


# -- properties ---------------------------------------------------------------------------

size_lists = st.lists(st.integers(1, 30), min_size=1, max_size=60).map(np.array)


@SETTINGS
@given(size_lists, st.floats(0.01, 1.0), st.integers(0, 1000))
def test_risk_properties(sizes: np.ndarray, threshold: float, extra: int) -> None:
    n, j = int(sizes.sum()), len(sizes)
    p = prosecutor_risk(sizes, threshold)
    assert p.max == pytest.approx(1 / sizes.min())
    assert p.avg == pytest.approx(j / n)
    assert 0 <= p.records_at_risk <= 1
    assert p.records_at_risk == pytest.approx(sizes[1 / sizes > threshold].sum() / n)
    assert journalist_risk(sizes, threshold) == p
    assert marketer_risk(sizes) == pytest.approx(j / n)
    ids = np.repeat(np.arange(j), sizes)
    assert record_risks(ids, sizes).mean() == pytest.approx(p.avg)
    assert sample_uniques(sizes) == pytest.approx(sizes[sizes == 1].sum() / n)
    # a larger population can only lower the journalist's and marketer's risk
    big = journalist_risk(sizes, threshold, population_size=n + extra)
    assert big.max <= p.max + 1e-12 and big.avg <= p.avg + 1e-12
    assert big.records_at_risk <= p.records_at_risk
    assert marketer_risk(sizes, population_size=n + extra) == pytest.approx(j / (n + extra))
    # DM between the perfectly even split and one class; C_avg * k * classes = rows
    assert n * n / j - 1e-9 <= discernibility(sizes) <= n * n
    assert cavg(sizes, 3) * 3 * j == pytest.approx(n)


@st.composite
def generalized_tables(draw):
    n = draw(st.integers(2, 40))
    age = draw(st.lists(st.integers(0, 90), min_size=n, max_size=n))
    color = draw(st.lists(st.sampled_from("abcdefg"), min_size=n, max_size=n))
    city = draw(st.lists(st.sampled_from("abcd"), min_size=n, max_size=n))
    n_classes = draw(st.integers(1, n))
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=n_classes - 1))) if n > 1 \
        else []
    order = np.array(draw(st.permutations(range(n))))
    starts = np.array([0, *cuts])
    age_form = draw(st.sampled_from([Form.RANGE, Form.MEAN, Form.MEDIAN]))
    color_form = draw(st.sampled_from([Form.SET, Form.PREFIX]))
    return pd.DataFrame({"age": age, "color": color, "city": city}), order, starts, \
        (age_form, color_form)


@SETTINGS
@given(generalized_tables(), st.integers(0, 5))
def test_gcp_properties(case, suppressed: int) -> None:
    df, order, starts, (age_form, color_form) = case
    schema = Schema.from_roles(df, ["age", "color", "city"], hierarchies={"city": CITY})
    table = encode(df, schema)
    forms = {"age": age_form, "color": color_form, "city": Form.HIERARCHY}
    gens = [generalize_column(table.column(c), order, starts, forms[c]) for c in forms]
    sizes = np.diff(np.append(starts, len(df)))
    per_qi = ncp(gens, sizes, suppressed=suppressed)
    assert ((per_qi >= 0) & (per_qi <= 1 + 1e-12)).all()
    g = gcp(gens, sizes, suppressed=suppressed)
    assert 0 <= g <= 1 + 1e-12
    assert g == pytest.approx(per_qi.mean())
    # one class per row: nothing is generalized
    if len(starts) == len(df) and suppressed == 0:
        assert g == 0
    m = release_metrics(gens, sizes, sizes, k=1, suppressed=suppressed)
    assert m["gcp"] == pytest.approx(g)
    assert m["prosecutor.max"] == pytest.approx(1 / sizes.min())
    assert all(math.isfinite(v) for v in m.values())


# -- end to end: what Mondrian stores ------------------------------------------------------

def test_mondrian_result_metrics() -> None:
    from anonkit._util.grouping import group_rows
    from anonkit.datasets import load_adult
    from anonkit.methods.mondrian import Mondrian

    data = load_adult().data.head(3000)
    qis = ["age", "sex", "race", "education", "marital-status"]
    result = Mondrian(k=5).anonymize(data, quasi_identifiers=qis, sensitive="salary-class",
                                     insensitive="*")
    m = result.metrics
    assert 0 < m["gcp"] < 1
    assert m["gcp"] == pytest.approx(np.mean([m[f"ncp.{q}"] for q in qis]))
    _, n_classes, _ = group_rows(result.data, qis)
    sizes = np.bincount(group_rows(result.data, qis)[0])
    assert m["n_classes"] == n_classes
    assert m["prosecutor.max"] == pytest.approx(1 / sizes.min()) and m["prosecutor.max"] <= 0.2
    assert m["discernibility"] == float((sizes.astype(float) ** 2).sum())
    assert m["cavg"] == pytest.approx(3000 / n_classes / 5)
    assert m["sample_uniques"] == 0.0
