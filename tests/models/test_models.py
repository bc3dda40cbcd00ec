"""Privacy models: hand-computed known answers, agreement of the vectorised levels with
plain per-class definitions (and, for t-closeness, with an exact transport LP), declared
monotonicity, exact comparisons and printing, cross-release requirements, and constructor
validation."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonkit.data.encoding import encode_column
from anonkit.data.schema import ColumnSpec, Kind, Role
from anonkit.errors import InputError
from anonkit.hierarchy.base import Hierarchy
from anonkit.models import (
    BetaLikeness,
    Classes,
    CrossReleaseRequirement,
    DeltaDisclosure,
    DistinctLDiversity,
    EnhancedBetaLikeness,
    EntropyLDiversity,
    KAnonymity,
    KEAnonymity,
    MUniqueness,
    PrivacyModel,
    RecursiveCLDiversity,
    SensitiveAttribute,
    TCloseness,
)

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# -- helpers ---------------------------------------------------------------------------

def attribute(values: list[object], name: str = "s", kind: Kind | None = None,
              hierarchy: Hierarchy | None = None) -> SensitiveAttribute:
    """The sensitive attribute of a whole table, encoded the way the library does it."""
    spec = ColumnSpec(name, Role.SENSITIVE, kind, hierarchy)
    return SensitiveAttribute.from_encoded(
        encode_column(pd.Series(values, dtype=object if kind is Kind.CATEGORICAL else None),
                      spec, allow_missing=True))


def table(groups: list[list[object]], kind: Kind | None = None,
          hierarchy: Hierarchy | None = None) -> Classes:
    """Classes given as one list of sensitive values per class."""
    values = [v for g in groups for v in g]
    attr = attribute(values, kind=kind, hierarchy=hierarchy)
    return Classes.from_sizes(np.array([len(g) for g in groups]), [attr])


# -- k-anonymity -----------------------------------------------------------------------

def test_k_anonymity_known_answer() -> None:
    classes = Classes.from_sizes(np.array([3, 2, 4]))
    v = KAnonymity(2).verdict(classes)
    assert (v.passed, v.measured, v.worst_class, v.worst_class_size) == (True, 2.0, 1, 2)
    v = KAnonymity(3).verdict(classes)
    assert not v.passed and v.failing_classes == 1
    assert "measured k = 2" in str(v)
    assert KAnonymity(3).min_class_size() == 3 and not KAnonymity(3).needs_sensitive


# -- l-diversity -----------------------------------------------------------------------

def test_distinct_l_diversity_known_answer() -> None:
    # distinct values per class: {flu, cold} = 2, {flu, cancer, cold} = 3, {flu} = 1
    classes = table([["flu", "flu", "cold"], ["flu", "cancer", "cold", "cold"],
                      ["flu", "flu"]])
    assert DistinctLDiversity(2).levels(classes).tolist() == [2, 3, 1]
    v = DistinctLDiversity(2).verdict(classes)
    assert (v.passed, v.measured, v.worst_class, v.failing_classes) == (False, 1.0, 2, 1)
    assert DistinctLDiversity(1).verdict(classes).passed


def test_entropy_l_diversity_known_answer() -> None:
    # {a,a,b,b}: H = ln 2, exp(H) = 2.
    # {a,a,a,b}: H = -(3/4 ln 3/4 + 1/4 ln 1/4) = 0.215762 + 0.346574 = 0.562335,
    #            exp(H) = 1.754765.
    # {a}: H = 0, exp(H) = 1.
    classes = table([["a", "a", "b", "b"], ["a", "a", "a", "b"], ["c"]])
    levels = EntropyLDiversity(1.5).levels(classes)
    assert levels == pytest.approx([2.0, 1.754765, 1.0], abs=1e-6)
    # exp(ln 2) is 2 up to rounding: l = 2 passes the first class exactly at the bound
    assert EntropyLDiversity(2).holds(classes).tolist() == [True, False, False]
    assert EntropyLDiversity(1.75).holds(classes).tolist() == [True, True, False]
    assert EntropyLDiversity(2.5).min_class_size() == 3


def test_recursive_cl_diversity_known_answer() -> None:
    # class 0: counts 5,1,1 sorted descending. l=2: r1 / (r2 + r3) = 5 / 2 = 2.5
    # class 1: counts 2,2: 2 / 2 = 1
    # class 2: one value: fewer than l=2 distinct values -> inf (fails for every c)
    classes = table([["a"] * 5 + ["b", "c"], ["a", "a", "b", "b"], ["c", "c"]])
    model = RecursiveCLDiversity(3, 2)
    assert model.levels(classes).tolist() == [2.5, 1.0, math.inf]
    assert model.holds(classes).tolist() == [True, True, False]
    # strict: r1 < c * tail; a ratio equal to c fails
    assert RecursiveCLDiversity(2.5, 2).holds(classes).tolist() == [False, True, False]
    # l=3: class 0 has tail r3 = 1 -> 5; class 1 has only 2 values -> inf
    assert RecursiveCLDiversity(6, 3).levels(classes).tolist() == [5.0, math.inf, math.inf]
    v = RecursiveCLDiversity(3, 2).verdict(classes)
    assert v.measured == math.inf and v.worst_class == 2 and v.comparison == "<"


def test_recursive_cl_diversity_ignores_value_order() -> None:
    # the same counts under other value codes give the same level (sorting is by count)
    a = table([["x", "y", "y", "y", "z", "z"]])
    b = table([["z", "y", "y", "y", "x", "x"]])
    assert RecursiveCLDiversity(2, 2).levels(a) == RecursiveCLDiversity(2, 2).levels(b)
    # counts 3,2,1 with l=2: 3 / (2 + 1) = 1
    assert RecursiveCLDiversity(2, 2).levels(a).tolist() == [1.0]


# -- t-closeness -----------------------------------------------------------------------

SALARY_GROUPS = [[3000, 4000, 5000], [6000, 8000, 11000], [7000, 9000, 10000]]


def test_t_closeness_ordered_li_et_al_example() -> None:
    # Li, Li, Venkatasubramanian (ICDE 2007), salaries 3k..11k, P uniform (1/9 each).
    # Q1 = {3k,4k,5k}: r = q - p = (+2,+2,+2,-1,-1,-1,-1,-1,-1)/9, cumulative
    #   (2,4,6,5,4,3,2,1,0)/9, sum 27/9 = 3, / (m-1 = 8) = 0.375 (the paper's number).
    # Q2 = {6k,8k,11k}: cumulative (-1,-2,-3,-1,-2,0,-1,-2,0)/9, sum of |.| = 12/9,
    #   / 8 = 1/6 = 0.167 (the paper's number).
    # Q3 = {7k,9k,10k}: cumulative (-1,-2,-3,-4,-2,-3,-1,1,0)/9, sum 17/9, / 8 = 17/72.
    classes = table(SALARY_GROUPS)
    model = TCloseness(0.2)
    assert model.levels(classes) == pytest.approx([0.375, 1 / 6, 17 / 72])
    v = model.verdict(classes)
    assert not v.passed and v.failing_classes == 2 and v.details == {"distance": "ordered"}
    assert TCloseness(0.375).verdict(classes).passed


def test_t_closeness_equal_distance() -> None:
    # every class holds 3 of 9 equally likely values: q - p = 1/3 - 1/9 = 2/9 on three
    # values, so EMD = total variation = 3 * 2/9 = 2/3 for each class
    classes = table(SALARY_GROUPS)
    assert TCloseness(0.5, "equal").levels(classes) == pytest.approx([2 / 3] * 3)
    # categorical data uses the equal distance under "auto"
    cat = table([["a", "a"], ["a", "b"]])
    # P = (3/4, 1/4); class 0 Q = (1, 0): EMD = 1/4; class 1 Q = (1/2, 1/2): EMD = 1/4
    assert TCloseness(0.3).levels(cat) == pytest.approx([0.25, 0.25])
    assert TCloseness(0.3).verdict(cat).details == {"distance": "equal"}


DISEASES = Hierarchy([["a", "X", "*"], ["b", "X", "*"], ["c", "Y", "*"], ["d", "Y", "*"]])


def test_t_closeness_hierarchical_known_answer() -> None:
    # Tree: * -> X{a,b}, Y{c,d}; height H = 2. Classes {a,a}, {b,c}, {b,d}, {c,d}: the
    # table holds every value twice, p = 1/4 each.
    # Class {a,a}: Q = (1,0,0,0). Leaf extras q - p: a +3/4, b -1/4, c -1/4, d -1/4.
    #   X (height 1): pos 3/4, neg 1/4 -> min 1/4, cost 1/2 * 1/4 = 1/8
    #   Y (height 1): pos 0 -> cost 0; extras X +1/2, Y -1/2
    #   root (height 2): min(1/2, 1/2) * 2/2 = 1/2.       EMD = 1/8 + 1/2 = 5/8.
    # Class {b,c}: leaf extras a -1/4, b +1/4, c +1/4, d -1/4: X min(1/4, 1/4) * 1/2 =
    #   1/8, Y the same 1/8; X and Y extras 0, root 0.     EMD = 1/4. {b,d} likewise.
    # Class {c,d}: X children both -1/4 (pos 0): 0; Y both +1/4 (neg 0): 0;
    #   root: X -1/2, Y +1/2: 1/2 * 2/2.                  EMD = 1/2.
    groups = [["a", "a"], ["b", "c"], ["b", "d"], ["c", "d"]]
    classes = table(groups, hierarchy=DISEASES)
    model = TCloseness(0.3)
    assert model.levels(classes) == pytest.approx([5 / 8, 1 / 4, 1 / 4, 1 / 2])
    assert model.verdict(classes).details == {"distance": "hierarchical"}
    # the same data with the equal distance: total variation 3/4, 1/2, 1/2, 1/2
    assert TCloseness(0.3, "equal").levels(classes) == pytest.approx([3 / 4, 1 / 2, 1 / 2,
                                                                      1 / 2])


def test_t_closeness_hierarchical_ragged_and_missing() -> None:
    # 'e' hangs directly below the root (padded as e, e, *): distance 1 to every value.
    # A missing value also hangs below the root.
    hier = Hierarchy([["a", "X", "*"], ["b", "X", "*"], ["e", "*"]])
    # table a, b, e, None: p = 1/4 each. Class {a, b}: X extra +1/2 (children +1/4 each)
    # -> X cost 0; root: X +1/2, e -1/4, missing -1/4: min(1/2, 1/2) * 1 = 1/2.
    classes = table([["a", "b"], ["e", None]], hierarchy=hier)
    assert TCloseness(0.5).levels(classes) == pytest.approx([0.5, 0.5])


def test_t_closeness_needs_a_hierarchy_for_hierarchical() -> None:
    classes = table([["a", "b"]])
    with pytest.raises(InputError, match="hierarchical distance needs a hierarchy"):
        TCloseness(0.3, "hierarchical").levels(classes)


def test_t_closeness_single_value_domain() -> None:
    classes = table([[5, 5], [5]])
    assert TCloseness(0.0).levels(classes).tolist() == [0.0, 0.0]


# -- δ-disclosure and β-likeness ---------------------------------------------------------

LIKENESS_GROUPS = [["a", "a", "a", "b"], ["a", "b", "b", "b"], ["c", "c"]]


def test_delta_disclosure_known_answer() -> None:
    # p = (a 4/10, b 4/10, c 2/10).
    # class 0: q(a) = 3/4 -> ln(1.875) = 0.628609; q(b) = 1/4 -> |ln(0.625)| = 0.470004
    # class 1: symmetric, 0.628609.  class 2: q(c) = 1 -> ln 5 = 1.609438
    classes = table(LIKENESS_GROUPS)
    model = DeltaDisclosure(1.0)
    assert model.levels(classes) == pytest.approx([0.628609, 0.628609, 1.609438], abs=1e-6)
    v = model.verdict(classes)
    assert not v.passed and v.measured == pytest.approx(math.log(5)) and v.worst_class == 2
    # strict: δ equal to the level fails
    assert not DeltaDisclosure(math.log(5)).verdict(classes).passed
    assert DeltaDisclosure(1.61).verdict(classes).passed
    # the paper's reading: a class lacking a value of the table has |ln 0| = inf
    strict = DeltaDisclosure(2.0, absent_values="fail")
    assert strict.levels(classes).tolist() == [math.inf] * 3
    full = table([["a", "b"], ["a", "a", "b", "b"]])
    assert DeltaDisclosure(2.0, absent_values="fail").levels(full).tolist() == [0.0, 0.0]


def test_beta_likeness_known_answer() -> None:
    # class 0: gain of a = (3/4 - 4/10) / (4/10) = 0.875 (b loses); class 1 the same for b;
    # class 2: (1 - 2/10) / (2/10) = 4
    classes = table(LIKENESS_GROUPS)
    assert BetaLikeness(1).levels(classes) == pytest.approx([0.875, 0.875, 4.0])
    assert BetaLikeness(4).verdict(classes).passed  # non-strict
    assert BetaLikeness(1).verdict(classes).failing_classes == 1


def test_enhanced_beta_likeness_known_answer() -> None:
    # Same table, β = 1. For a: bound min(1, -ln 0.4 = 0.916291) = 0.916291; gain 0.875
    # is within it, level = 1 * 0.875 / 0.916291 = 0.954937. For c: bound min(1, 1.609438)
    # = 1, level = gain = 4.
    classes = table(LIKENESS_GROUPS)
    assert EnhancedBetaLikeness(1).levels(classes) == pytest.approx(
        [0.954937, 0.954937, 4.0], abs=1e-6)
    # Where the -ln p cap binds, enhanced fails what basic passes: p = 1/2 each, classes
    # {a,a} and {b,b}: gain 1 <= β = 1 (basic passes) but 1 > -ln(1/2) = 0.693147.
    split = table([["a", "a"], ["b", "b"]])
    assert BetaLikeness(1).verdict(split).passed
    v = EnhancedBetaLikeness(1).verdict(split)
    assert not v.passed and v.measured == pytest.approx(1 / math.log(2))
    # with β below the cap the two coincide
    assert EnhancedBetaLikeness(0.5).levels(classes)[:2] == pytest.approx(
        BetaLikeness(0.5).levels(classes)[:2])


# -- (k,e)-anonymity ---------------------------------------------------------------------

def test_ke_anonymity_thesis_example() -> None:
    # Chapter 004: D_0 = Tom 84k, Mike 86k, Alice 87k, Bob 88k, Kate 89k, Paul 90k with
    # k=3, e=2000 is partitioned {Tom, Mike, Alice} (range 3000), {Bob, Kate, Paul}
    # (range 2000): levels min(3/3, 3000/2000) = 1 and min(3/3, 2000/2000) = 1.
    good = table([[84000, 86000, 87000], [88000, 89000, 90000]])
    model = KEAnonymity(3, 2000)
    assert model.levels(good).tolist() == [1.0, 1.0]
    v = model.verdict(good)
    assert v.passed and v.details["min_range"] == 2000 and v.details["min_distinct"] == 3
    # {Tom, Mike, Alice, Bob} / {Kate, Paul}: the second has 2 distinct values (2/3) and
    # range 1000 (1000/2000 = 1/2): level 1/2
    bad = table([[84000, 86000, 87000, 88000], [89000, 90000]])
    v = model.verdict(bad)
    assert not v.passed and v.measured == 0.5 and v.worst_class == 1
    assert v.details["worst_class_distinct"] == 2 and v.details["worst_class_range"] == 1000
    # D_1's optimal partition: {Ann..Alice} (range 5000), {Bob, Kate, Paul}: error 7000
    d1 = table([[82000, 83000, 84000, 85000, 86000, 87000], [88000, 89000, 90000]])
    assert model.verdict(d1).passed
    distinct, spread = model.distinct_and_range(d1)
    assert spread.sum() == 7000 and distinct.tolist() == [6, 3]


def test_ke_anonymity_counts_distinct_values_and_ignores_missing() -> None:
    # three rows but two distinct values: k=3 fails; a missing value is no number
    classes = table([[1000.0, 1000.0, 5000.0, None]])
    distinct, spread = KEAnonymity(2, 0).distinct_and_range(classes)
    assert distinct.tolist() == [2] and spread.tolist() == [4000.0]
    assert KEAnonymity(3, 0).levels(classes).tolist() == [pytest.approx(2 / 3)]


def test_ke_anonymity_needs_numbers() -> None:
    classes = table([["a", "b"]])
    with pytest.raises(InputError, match="numeric"):
        KEAnonymity(2, 1).levels(classes)


def test_check_attribute_refuses_impossible_parameters() -> None:
    attr = attribute(["flu", "cold", "flu", "hiv"], name="disease")
    with pytest.raises(InputError, match="l=5 but 'disease' has only 3 distinct values"):
        DistinctLDiversity(5).check_attribute(attr)
    with pytest.raises(InputError, match="l=4 but 'disease' has only 3"):
        RecursiveCLDiversity(2, 4).check_attribute(attr)
    with pytest.raises(InputError, match="'disease' has only 3"):
        EntropyLDiversity(3.5).check_attribute(attr)
    DistinctLDiversity(3).check_attribute(attr)
    salary = attribute([1000, 2000, 2500], name="salary")
    with pytest.raises(InputError, match="e=5000 but 'salary' ranges over only 1500"):
        KEAnonymity(2, 5000).check_attribute(salary)
    with pytest.raises(InputError, match="k=4 but 'salary' has only 3"):
        KEAnonymity(4, 10).check_attribute(salary)
    with pytest.raises(InputError, match="numeric"):
        KEAnonymity(2, 1).check_attribute(attr)


# -- m-uniqueness -------------------------------------------------------------------------

def test_m_uniqueness_known_answer() -> None:
    # Xiao & Tao, Definition 3: at least m rows, all with different sensitive values
    # class 0: a b c d: distinct -> level 4
    # class 1: a a b b: a value repeats -> 0 (m-unique for no m)
    # class 2: a a a b c -> 0
    # class 3: missing, missing, a: the missing value is a value, and it repeats -> 0
    # class 4: a a b b c c: shares of 1/3, yet not 3-unique (issue 27, item 3)
    # class 5: missing, a, b: distinct -> 3
    classes = table([list("abcd"), list("aabb"), list("aaabc"), [None, None, "a"],
                     list("aabbcc"), [None, "a", "b"]])
    assert MUniqueness(2).levels(classes).tolist() == [4, 0, 0, 0, 0, 3]
    assert MUniqueness(1).holds(classes).tolist() == [True, False, False, False, False, True]
    assert MUniqueness(3).holds(classes).tolist() == [True, False, False, False, False, True]
    assert MUniqueness(4).holds(classes).tolist() == [True, False, False, False, False, False]
    v = MUniqueness(3).verdict(classes)
    assert not v.passed and v.failing_classes == 4 and v.worst_class == 1
    assert v.measured == 0 and v.required == 3 and v.comparison == ">="
    assert "FAIL m-uniqueness (m=3): measured rows if their values are distinct, else 0 = 0" \
        in str(v)
    # fewer than m rows fails even when every row holds its own value
    assert MUniqueness(5).holds(classes).tolist() == [False] * 6
    model = MUniqueness(4)
    assert (model.min_class_size(), model.min_distinct_values(), model.monotonic,
            model.needs_sensitive) == (4, 4, False, True)


def test_m_uniqueness_refuses_impossible_m() -> None:
    attr = attribute(["flu", "cold", "flu"], name="disease")
    with pytest.raises(InputError, match="m-uniqueness: m=3 but 'disease' has only 2"):
        MUniqueness(3).check_attribute(attr)
    MUniqueness(2).check_attribute(attr)


def test_m_uniqueness_huge_m_does_not_overflow() -> None:
    classes = table([list("ab")])
    assert MUniqueness(10**30).holds(classes).tolist() == [False]
    assert MUniqueness(2**62).holds(classes).tolist() == [False]


# -- exact comparisons and exact printing ---------------------------------------------------

def test_counts_and_ranges_compare_exactly() -> None:
    # a relative tolerance of 1e-9 on e = 1e9 would let a range of 999999999 pass
    short = table([[0, 999_999_999]])
    model = KEAnonymity(2, 1e9)
    v = model.verdict(short)
    assert not v.passed and v.failing_classes == 1 and not model.holds(short)[0]
    assert v.measured == 0.999999999
    exact = table([[0, 1_000_000_000]])
    assert model.verdict(exact).passed and model.holds(exact)[0]
    # the distinct count too: one value short of k fails, whatever e
    assert not KEAnonymity(3, 0).verdict(table([[1, 2, 2]])).passed
    # counts: a class of 5 meets k = 5, a class of 4 does not
    assert KAnonymity(5).holds(Classes.from_sizes(np.array([5, 4]))).tolist() == [True, False]
    # and far from small numbers, where a tolerance would have reached a whole row
    assert KAnonymity(10**9).satisfied(np.array([999_999_999.0, 1e9])).tolist() == [False,
                                                                                      True]
    assert DistinctLDiversity(10**9).satisfied(np.array([999_999_999.0])).tolist() == [False]
    assert MUniqueness(10**9).satisfied(np.array([999_999_999.0])).tolist() == [False]
    # recursive (c,l): the ratio 5/2 equals c = 2.5 and fails (strict); just above passes
    classes = table([["a"] * 5 + ["b", "c"]])
    assert not RecursiveCLDiversity(2.5, 2).holds(classes)[0]
    assert RecursiveCLDiversity(2.5000000001, 2).holds(classes)[0]


def test_ke_ranges_of_decimals_are_decimal_differences() -> None:
    # 0.3 - 0.1 is 0.19999999999999998 in floats; the data say 0.2, and e = 0.2 is met
    classes = table([[0.1, 0.3], [1.25, 1.5]])
    _, spread = KEAnonymity(2, 0.2).distinct_and_range(classes)
    assert spread.tolist() == [0.2, 0.25]
    assert KEAnonymity(2, 0.2).verdict(classes).passed
    assert not KEAnonymity(2, 0.2000001).verdict(classes).passed
    KEAnonymity(2, 1.4).check_attribute(classes.attribute(None))  # 1.5 - 0.1 = 1.4
    assert classes.attribute(None).decimal_places == 2
    # values with too many places are subtracted as floats
    assert attribute([0.1, 1 / 3]).decimal_places is None


def test_tolerances_are_declared_per_model() -> None:
    tolerance = {type(m).__name__: m.tolerance for m in ALL_MODELS}
    assert tolerance == {"KAnonymity": 0, "DistinctLDiversity": 0, "RecursiveCLDiversity": 0,
                         "KEAnonymity": 0, "MUniqueness": 0, "EntropyLDiversity": 1e-9,
                         "TCloseness": 1e-9, "DeltaDisclosure": 1e-9, "BetaLikeness": 1e-9,
                         "EnhancedBetaLikeness": 1e-9}


def test_thresholds_and_levels_print_exactly() -> None:
    classes = table(SALARY_GROUPS)
    text = str(TCloseness(0.12345678).verdict(classes))
    assert "(t=0.12345678, distance=auto)" in text and "required EMD <= 0.12345678" in text
    # the level rounded for reading (issue 22), never onto the other side of the threshold;
    # exact in the verdict itself (and --json)
    level = float(TCloseness(0.12345678).levels(classes).max())
    assert "measured EMD = 0.375," in text and level == pytest.approx(0.375)
    v = KEAnonymity(2, 1e9).verdict(table([[0, 999_999_999]]))
    assert "(k=2, e=1000000000)" in str(v) and "e+09" not in str(v)
    assert "measured min(distinct/k, range/e) = 0.999999999, required" in str(v)
    assert "worst_class_range=999999999" in str(v)
    assert KEAnonymity(2, 1e9).title() == "(k,e)-anonymity (k=2, e=1000000000)"
    assert EntropyLDiversity(2.25).title() == "entropy l-diversity (l=2.25)"
    salary = attribute([1000, 2000, 2500.5], name="salary")
    with pytest.raises(InputError, match=r"e=1234567.5 but 'salary' ranges over only 1500.5"):
        KEAnonymity(2, 1234567.5).check_attribute(salary)


# -- cross-release requirements ------------------------------------------------------------

def requirement_tuples(model: PrivacyModel) -> list[tuple[str, str, float, str | None]]:
    return [(r.model, r.measure, r.threshold, r.attribute)
            for r in model.cross_release_requirements()]


def test_cross_release_requirements() -> None:
    assert requirement_tuples(KAnonymity(5)) == [("k-anonymity", "candidates", 5, None)]
    assert requirement_tuples(DistinctLDiversity(3, attribute="s")) == [
        ("distinct l-diversity", "distinct_present", 3, "s")]
    # a missing value counts toward l only when asked to, and then across releases too
    assert requirement_tuples(DistinctLDiversity(3, "s", missing_counts=True)) == [
        ("distinct l-diversity", "distinct", 3, "s")]
    # entropy >= ln(l) needs at least l values: ceil(2.5) = 3, and l = 2 needs 2
    assert requirement_tuples(EntropyLDiversity(2.5, attribute="s")) == [
        ("entropy l-diversity", "distinct_present", 3, "s")]
    assert requirement_tuples(EntropyLDiversity(2)) == [
        ("entropy l-diversity", "distinct_present", 2, None)]
    assert requirement_tuples(RecursiveCLDiversity(3, 4, attribute="s")) == [
        ("recursive (c,l)-diversity", "distinct_present", 4, "s")]
    assert requirement_tuples(KEAnonymity(3, 2000, attribute="salary")) == [
        ("(k,e)-anonymity", "distinct_present", 3, "salary"),
        ("(k,e)-anonymity", "range", 2000, "salary")]
    # values, not candidates: counterfeit rows are not people
    assert requirement_tuples(MUniqueness(4, attribute="s")) == [
        ("m-uniqueness", "distinct", 4, "s")]
    for model in (TCloseness(0.2), DeltaDisclosure(1.5), DeltaDisclosure(1, "s", "fail"),
                  BetaLikeness(0.5), EnhancedBetaLikeness(0.5)):
        assert model.cross_release_requirements() == [], model
    for model in ALL_MODELS:
        for r in model.cross_release_requirements():
            assert isinstance(r, CrossReleaseRequirement)
            assert CrossReleaseRequirement.from_dict(r.to_dict()) == r


def test_entropy_requirement_is_implied_by_the_model() -> None:
    # a class passing entropy l-diversity always has the required distinct values
    classes = table([list("ab"), list("abc"), list("aabbc"), list("aaaabbbbcd")])
    for l_value in (1.0, 1.5, 2.0, 2.5, 2.9, 3.0):
        model = EntropyLDiversity(l_value)
        need = model.cross_release_requirements()[0].threshold
        passed = model.holds(classes)
        assert (classes.distinct_values()[passed] >= need).all(), l_value


# -- constructor validation --------------------------------------------------------------

@pytest.mark.parametrize("build, message", [
    (lambda: KAnonymity(0), "k must be a whole number >= 1"),
    (lambda: KAnonymity(2.5), "k must be a whole number"),
    (lambda: DistinctLDiversity(0), "l must be a whole number >= 1"),
    (lambda: DistinctLDiversity(2.5), "l must be a whole number"),
    (lambda: EntropyLDiversity(0.5), r"entropy l must be a number in \[1"),
    (lambda: EntropyLDiversity(float("nan")), "entropy l must be a number"),
    (lambda: RecursiveCLDiversity(0, 2), r"c must be a number in \(0"),
    (lambda: RecursiveCLDiversity(2, 0), "l must be a whole number >= 1"),
    (lambda: TCloseness(1.5), r"t must be a number in \[0, 1\]"),
    (lambda: TCloseness(-0.1), r"t must be a number in \[0, 1\]"),
    (lambda: TCloseness(0.2, "manhattan"), "distance must be one of"),
    (lambda: DeltaDisclosure(0), r"δ must be a number in \(0"),
    (lambda: DeltaDisclosure(1, absent_values="maybe"), "absent_values"),
    (lambda: BetaLikeness(-1), r"β must be a number in \(0"),
    (lambda: EnhancedBetaLikeness(float("inf")), "β must be a number"),
    (lambda: KEAnonymity(0, 10), "k must be a whole number >= 1"),
    (lambda: KEAnonymity(2, -1), r"e must be a number in \[0"),
    (lambda: KEAnonymity(2, "x"), "e must be a number"),
    (lambda: MUniqueness(0), "m must be a whole number >= 1"),
    (lambda: MUniqueness(2.5), "m must be a whole number"),
])
def test_constructor_validation(build: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        build()  # type: ignore[operator]


def test_declared_properties() -> None:
    assert DistinctLDiversity(3).min_class_size() == 3
    assert RecursiveCLDiversity(2, 4).min_class_size() == 4
    assert KEAnonymity(5, 100).min_class_size() == 5
    assert TCloseness(0.2).min_class_size() == 1
    monotonic = {type(m).__name__: m.monotonic for m in ALL_MODELS}
    assert monotonic == {"KAnonymity": True, "DistinctLDiversity": True,
                         "EntropyLDiversity": True, "RecursiveCLDiversity": True,
                         "TCloseness": True, "DeltaDisclosure": False, "BetaLikeness": True,
                         "EnhancedBetaLikeness": True, "KEAnonymity": True,
                         "MUniqueness": False}


def test_verdict_text_and_dict() -> None:
    classes = table(LIKENESS_GROUPS)
    v = DeltaDisclosure(1.0).verdict(classes)
    text = str(v)
    # parameters as they are; the level rounded for reading (issue 22), exact in the dict
    assert text.startswith("FAIL δ-disclosure privacy (delta=1): measured δ = 1.609, ")
    assert v.to_dict()["measured"] == math.log(5)
    assert "required δ < 1;" in text and "1 of 3 classes fail" in text
    d = v.to_dict()
    assert d["comparison"] == "<" and d["worst_class_size"] == 2 and d["passed"] is False


def test_empty_classes_verdict() -> None:
    attr = SensitiveAttribute("s", np.zeros(0, dtype=np.int64), np.array([], dtype=object),
                              Kind.CATEGORICAL, np.zeros(0, dtype=np.int64))
    v = DistinctLDiversity(2).verdict(Classes(np.zeros(0), 0, [attr]))
    assert not v.passed and v.worst_class == -1 and v.n_classes == 0


# -- plain per-class definitions, to compare the vectorised levels with ------------------

def reference_levels(model: PrivacyModel, groups: list[list[object]],
                     attr: SensitiveAttribute) -> list[float]:
    """Each model's level computed class by class straight from its definition."""
    total = Counter(attr.codes.tolist())
    n = len(attr.codes)
    p_of = {code: total[code] / n for code in total}
    out = []
    start = 0
    for g in groups:
        codes = attr.codes[start:start + len(g)].tolist()
        start += len(g)
        counts = Counter(codes)
        q_of = {c: counts[c] / len(g) for c in counts}
        if isinstance(model, KAnonymity):
            out.append(float(len(g)))
        elif isinstance(model, DistinctLDiversity | EntropyLDiversity | RecursiveCLDiversity):
            # a missing value counts toward l only when the model says so
            kept = {c: m for c, m in counts.items()
                    if model.missing_counts or c != attr.missing_code}
            if isinstance(model, DistinctLDiversity):
                out.append(float(len(kept)))
            elif isinstance(model, EntropyLDiversity):
                size = sum(kept.values())
                out.append(math.exp(-sum(m / size * math.log(m / size)
                                         for m in kept.values())))
            else:
                r = sorted(kept.values(), reverse=True)
                tail = sum(r[model.l - 1:])
                out.append(r[0] / tail if tail else math.inf)
        elif isinstance(model, DeltaDisclosure):
            out.append(max(abs(math.log(q / p_of[c])) for c, q in q_of.items()))
        elif isinstance(model, EnhancedBetaLikeness):
            worst = 0.0
            for c, q in q_of.items():
                gain = (q - p_of[c]) / p_of[c]
                if gain > 0:
                    worst = max(worst, model.beta * gain / min(model.beta,
                                                               -math.log(p_of[c])))
            out.append(worst)
        elif isinstance(model, BetaLikeness):
            out.append(max(max((q - p_of[c]) / p_of[c] for c, q in q_of.items()), 0.0))
        elif isinstance(model, KEAnonymity):
            mags = [attr.magnitudes[c] for c in counts if not math.isnan(attr.magnitudes[c])]
            spread = (max(mags) - min(mags)) if mags else 0.0
            level = len(mags) / model.k
            out.append(min(level, spread / model.e) if model.e > 0 else level)
        elif isinstance(model, TCloseness):
            out.append(transport_emd(model, attr, q_of, p_of))
        elif isinstance(model, MUniqueness):  # rows, all values different (Definition 3)
            out.append(len(g) if len(set(map(repr, g))) == len(g) else 0)
        else:  # pragma: no cover
            raise AssertionError(model)
    return out


def ground_distance(model: TCloseness, attr: SensitiveAttribute, domain: list[int]) -> \
        np.ndarray:
    distance = model.resolved_distance(attr)
    m = len(domain)
    if distance == "equal":
        return 1.0 - np.eye(m)
    if distance == "ordered":
        rank = np.arange(m, dtype=float)  # domain is in code (= value) order
        return np.abs(rank[:, None] - rank[None, :]) / max(m - 1, 1)
    hier = attr.hierarchy
    assert hier is not None and attr.hierarchy_leaf is not None
    height = hier.height - 1
    d = np.zeros((m, m))
    for i, a in enumerate(domain):
        for j, b in enumerate(domain):
            la, lb = attr.hierarchy_leaf[a], attr.hierarchy_leaf[b]
            if a == b:
                continue
            if la < 0 or lb < 0:
                d[i, j] = 1.0
                continue
            lca = next(lv for lv in range(hier.height)
                       if hier.node_ids[la, lv] == hier.node_ids[lb, lv])
            d[i, j] = lca / height
    return d


def transport_emd(model: TCloseness, attr: SensitiveAttribute, q_of: dict[int, float],
                  p_of: dict[int, float]) -> float:
    """The exact Earth Mover's Distance, by linear programming over the transport plan."""
    linprog = pytest.importorskip("scipy.optimize").linprog
    domain = sorted(set(p_of) | set(q_of))
    m = len(domain)
    if m == 1:
        return 0.0
    q = np.array([q_of.get(c, 0.0) for c in domain])
    p = np.array([p_of.get(c, 0.0) for c in domain])
    d = ground_distance(model, attr, domain)
    a_eq = np.zeros((2 * m, m * m))
    for i in range(m):
        a_eq[i, i * m:(i + 1) * m] = 1.0  # mass leaving value i (from Q)
        a_eq[m + i, i::m] = 1.0  # mass arriving at value i (to P)
    res = linprog(d.ravel(), A_eq=a_eq, b_eq=np.concatenate([q, p]), bounds=(0, None),
                  method="highs")
    assert res.success
    return float(res.fun)


ALL_MODELS: list[PrivacyModel] = [
    KAnonymity(2), DistinctLDiversity(2), EntropyLDiversity(1.5), RecursiveCLDiversity(2, 2),
    TCloseness(0.3), DeltaDisclosure(1.0), BetaLikeness(1.0), EnhancedBetaLikeness(1.0),
    KEAnonymity(2, 1500), MUniqueness(2),
]
#: the l-diversity models counting a missing value as a value
COUNTING_MISSING: list[PrivacyModel] = [
    DistinctLDiversity(2, missing_counts=True), EntropyLDiversity(1.5, missing_counts=True),
    RecursiveCLDiversity(2, 2, missing_counts=True)]
HIERARCHY_3 = Hierarchy([["a", "AB", "ABC", "*"], ["b", "AB", "ABC", "*"],
                         ["c", "c", "ABC", "*"], ["d", "DE", "DE", "*"],
                         ["e", "DE", "DE", "*"], ["f", "*"]])


@st.composite
def grouped_values(draw: st.DrawFn, numeric: bool) -> list[list[object]]:
    """A few classes of sensitive values (numbers, or letters under HIERARCHY_3)."""
    pool: list[object] = [1000, 2000, 3500, 5000, 8000] if numeric else list("abcdef")
    pool_size = draw(st.integers(1, len(pool)))
    values = st.sampled_from(pool[:pool_size])
    return draw(st.lists(st.lists(values, min_size=1, max_size=7), min_size=1, max_size=5))


@SETTINGS
@given(groups=grouped_values(numeric=True), missing=st.booleans())
def test_levels_match_definitions_numeric(groups: list[list[object]], missing: bool) -> None:
    if missing:
        groups = [*groups[:-1], [*groups[-1], None]]
    classes = table(groups)
    attr = classes.attribute(None)
    for model in [*ALL_MODELS, TCloseness(0.3, "equal"), RecursiveCLDiversity(3, 3),
                  KEAnonymity(3, 0), *COUNTING_MISSING]:
        assert model.levels(classes) == pytest.approx(
            reference_levels(model, groups, attr), abs=1e-9), model


@SETTINGS
@given(groups=grouped_values(numeric=False), missing=st.booleans())
def test_levels_match_definitions_categorical(groups: list[list[object]],
                                              missing: bool) -> None:
    if missing:
        groups = [[None, *groups[0]], *groups[1:]]
    for hierarchy in (None, HIERARCHY_3):
        classes = table(groups, kind=Kind.CATEGORICAL, hierarchy=hierarchy)
        attr = classes.attribute(None)
        models = [m for m in ALL_MODELS if not isinstance(m, KEAnonymity)]
        models += [TCloseness(0.3, "ordered"), RecursiveCLDiversity(3, 3), *COUNTING_MISSING]
        for model in models:
            assert model.levels(classes) == pytest.approx(
                reference_levels(model, groups, attr), abs=1e-9), (model, hierarchy)


# -- monotonicity: a model declared monotonic never fails the union of passing classes --

@SETTINGS
@given(data=st.data(), numeric=st.booleans())
def test_declared_monotonic_models_survive_merging(data: st.DataObject, numeric: bool) -> None:
    groups = data.draw(grouped_values(numeric=numeric))
    # categorical values come with HIERARCHY_3, so t-closeness uses the hierarchical EMD
    classes = table(groups) if numeric else table(groups, Kind.CATEGORICAL, HIERARCHY_3)
    merged = Classes(np.zeros(len(classes.class_ids), dtype=np.int64), 1,
                     list(classes.sensitive.values()))
    for model in [*ALL_MODELS, TCloseness(0.3, "equal"), TCloseness(0.3, "ordered")]:
        if not model.monotonic or (isinstance(model, KEAnonymity) and not numeric):
            continue
        levels = model.levels(classes)
        union = model.levels(merged)[0]
        # for every threshold at which all parts pass, the union passes: equivalently the
        # union's level is no worse than the worst part's
        if model.higher_is_better:
            assert union >= levels.min() - 1e-9, model
        else:
            assert union <= levels.max() + 1e-9, model


def test_delta_disclosure_is_not_monotonic() -> None:
    # Why δ-disclosure declares monotonic = False: values absent from a class are ignored,
    # and a union can dilute such a value below p * e^-δ.
    # Table: {a, b}, {b x8}, {a x8}: p(a) = p(b) = 9/18 = 1/2.
    # Part {a, b}: q = p, level 0. Part {b x8}: ln(1 / (1/2)) = ln 2 = 0.693 (a absent).
    # Union {a, b x9}: q(a) = 1/10, |ln(0.1 / 0.5)| = ln 5 = 1.609 > δ = 1.
    parts = table([["a", "b"], ["b"] * 8, ["a"] * 8])
    model = DeltaDisclosure(1.0)
    assert model.levels(parts) == pytest.approx([0.0, math.log(2), math.log(2)])
    assert model.holds(parts).all()
    union = Classes(np.array([0] * 10 + [1] * 8), 2, list(parts.sensitive.values()))
    assert model.levels(union)[0] == pytest.approx(math.log(5))
    assert not model.holds(union)[0]


@SETTINGS
@given(groups=grouped_values(numeric=False), missing=st.booleans(), m=st.integers(1, 6))
def test_m_uniqueness_matches_brute_force(groups: list[list[object]], missing: bool,
                                          m: int) -> None:
    if missing:
        groups = [[*groups[0], None], *groups[1:]]
    classes = table(groups, kind=Kind.CATEGORICAL)
    expected_pass, expected_level = [], []
    for g in groups:
        distinct = len(set(map(repr, g))) == len(g)  # every row its own value
        expected_pass.append(len(g) >= m and distinct)
        expected_level.append(len(g) if distinct else 0)
    model = MUniqueness(m)
    assert model.holds(classes).tolist() == expected_pass
    assert model.levels(classes).tolist() == pytest.approx(expected_level)
    v = model.verdict(classes)
    assert v.passed == all(expected_pass)
    assert v.failing_classes == expected_pass.count(False)
