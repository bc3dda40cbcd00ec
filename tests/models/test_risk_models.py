"""The risk measures as privacy models (:mod:`anonkit.models.risk`): known answers for k-map
(by hand, and ARX's k' from the Poisson estimators), δ-presence (a published worked example),
individual risk (Benedetti & Franconi's formulas by hand) and population uniqueness (the
estimators' figures as thresholds); the model text; the declared properties; the context
each needs, refused when missing; and the labels' reading against a population."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from anonkit.checker import check
from anonkit.errors import InputError
from anonkit.hierarchy.base import Hierarchy
from anonkit.labels import cover_matrix
from anonkit.models import Classes
from anonkit.models.population_estimates import population_uniqueness
from anonkit.models.population_table import PopulationTable
from anonkit.models.risk import (
    DeltaPresence,
    IndividualRiskModel,
    KMap,
    PopulationUniquenessModel,
    bind_population,
    fixed_to_sample,
    poisson_k,
)
from anonkit.models.text import parse_model

# -- δ-presence and k-map against a population table ------------------------------------------

def desfontaines_example() -> tuple[pd.DataFrame, pd.DataFrame]:
    """D. Desfontaines, "δ-presence, for when being in the dataset is sensitive" (2018):
    a trial's records in ZIP 85535 (ages 10, 12, 13, 13, 16, 43), released as five
    ``10-19`` and one ``40-49``; the ZIP's population: 5 people aged 10-19, 5 aged 20-29,
    10 aged 30-39, 10 aged 40-49 and 20 aged 50 or more. The release is 5-map, but every
    10-19-year-old of the ZIP is in it: δ = 5/5 = 1 for that class, 1/10 for the other."""
    released = pd.DataFrame({"zip": ["85535"] * 6,
                             "age": ["[10-19]"] * 5 + ["[40-49]"]})
    ages = [10, 12, 13, 13, 16, 20, 22, 24, 26, 28, *range(30, 50), *range(50, 70)]
    population = pd.DataFrame({"zip": [85535] * len(ages), "age": ages})
    return released, population


def test_desfontaines_example_is_five_map_but_not_delta_present() -> None:
    released, population = desfontaines_example()
    table = PopulationTable(population)
    report = check(released, ["zip", "age"], None,
                   [KMap(5, population=table), KMap(6, population=table),
                    DeltaPresence(0.0, 0.5, population=table),
                    DeltaPresence(0.1, 1.0, population=table)])
    five, six, presence, loose = report.verdicts
    assert five.passed and five.measured == 5  # the 10-19 class covers 5 people
    assert not six.passed and six.failing_classes == 1
    assert not presence.passed and presence.measured == 1.0
    assert presence.details == {"smallest_delta": 0.1, "largest_delta": 1.0}
    assert loose.passed  # 1/10 and 5/5 both lie in [0.1, 1]
    assert "FAIL δ-presence" in str(report)


def test_delta_presence_low_side_is_reported_as_such() -> None:
    released, population = desfontaines_example()
    verdict = check(released, ["zip", "age"], None,
                    [DeltaPresence(0.2, 1.0, population=PopulationTable(population))]
                    ).verdicts[0]
    assert not verdict.passed
    assert (verdict.measured, verdict.comparison, verdict.required) == (0.1, ">=", 0.2)


def test_k_map_by_hand_with_sets_missing_cells_and_a_hierarchy() -> None:
    # three classes; the population has 9 people: by hand, class {a,b} x [1-2] covers
    # the rows (a,1) (b,2) (a,2) = 3, class c x 3 covers (c,3) twice = 2, and the
    # hierarchy node "low" (leaves 1 and 2) with value "c" covers (c,1) = 1
    released = pd.DataFrame({"g": ["{a,b}", "{a,b}", "c", "c", "c"],
                             "n": ["[1-2]", "[1-2]", "3", "3", "low"]})
    population = pd.DataFrame({"g": ["a", "b", "a", "c", "c", "c", "d", "a", None],
                               "n": [1, 2, 2, 3, 3, 1, 1, 3, 1]})
    hierarchy = Hierarchy([["1", "low", "*"], ["2", "low", "*"], ["3", "high", "*"]])
    table = PopulationTable(population, hierarchies={"n": hierarchy})
    report = check(released, ["g", "n"], None, [KMap(1, population=table)])
    counts = report.verdicts[0]
    assert counts.passed and counts.measured == 1 and counts.n_classes == 3
    strict = check(released, ["g", "n"], None, [KMap(3, population=table)]).verdicts[0]
    assert strict.failing_classes == 2  # the classes covering 2 and 1 people


def test_cover_matrix_reads_every_label_form() -> None:
    labels = ["[20-29]", "34", "{a,b}", "x or missing", None, "[a-c]"]
    values = [20, 29.5, 30, 34, "a", "b", "x", None, "c"]
    expected = np.array([
        [1, 0, 0, 0, 0, 0, 0, 0, 0],  # 29.5 lies past 29
        [0, 0, 0, 1, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 1, 1, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 1, 1, 0],
        [0, 0, 0, 0, 0, 0, 0, 1, 0],
        [0, 0, 0, 0, 1, 0, 0, 0, 1],  # bounds that are no numbers: equal values only
    ], dtype=bool)
    assert (cover_matrix(labels, values) == expected).all()


def test_a_population_without_a_quasi_identifier_is_refused() -> None:
    released, population = desfontaines_example()
    with pytest.raises(InputError, match="has no column 'zip'"):
        check(released, ["zip", "age"], None,
              [KMap(5, population=PopulationTable(population[["age"]]))])


# -- k-map estimated (ARX's KMap with a cell-size estimator) ------------------------------------

def test_arx_derived_k_by_hand() -> None:
    # Poisson mean 0.5 (pi = 0.1, k = 5): P(X <= 0..3) = .6065, .9098, .9856, .9982; the
    # 0.99 target is reached at 3 after 4 terms, and ARX returns counter + 1 = 5
    assert poisson_k(0.5, 0.01, zero_truncated=False) == 5
    # mean 0.05: P(X <= 1) = .99879 after 2 terms: 3
    assert poisson_k(0.05, 0.01, zero_truncated=False) == 3
    # zero-truncated, mean 0.5: .7707, +.1927, +.0321 = .9955 at count 3: returns 4
    assert poisson_k(0.5, 0.01, zero_truncated=True) == 4


def test_estimated_k_map_compares_class_sizes_with_k_prime() -> None:
    model = fixed_to_sample([KMap(5, sampling_fraction=0.01)], 100)[0]
    assert model.min_class_size() == 3
    verdict = model.verdict(Classes.from_sizes(np.array([3, 3, 94])))
    assert verdict.passed and verdict.required == 3
    assert not model.verdict(Classes.from_sizes(np.array([2, 98]))).passed
    # the whole sample caps k': a table of 4 rows needs classes of 4 at most
    tiny = fixed_to_sample([KMap(50, sampling_fraction=0.9)], 4)[0]
    assert tiny.min_class_size() == 4


# -- individual risk ------------------------------------------------------------------------

def test_individual_risk_by_hand() -> None:
    # weights 10 per row: classes of 1, 2 and 3 rows stand for 10, 20 and 30 people, p = .1
    sizes = np.array([1, 2, 3])
    classes = Classes(np.repeat(np.arange(3), sizes), 3, weights=np.full(6, 10.0))
    levels = IndividualRiskModel(0.05, weight="w").levels(classes)
    odds = 0.1 / 0.9
    assert levels[0] == pytest.approx(odds * math.log(10), rel=1e-12)  # 0.25584
    assert levels[1] == pytest.approx(odds - odds ** 2 * math.log(10), rel=1e-12)  # 0.08268
    assert levels[2] == pytest.approx(0.1 / (3 - 0.9), rel=1e-12)  # 0.04762
    # a sampling fraction of 0.1 is a weight of 10 for every row
    by_fraction = IndividualRiskModel(0.05, sampling_fraction=0.1).levels(classes)
    assert np.allclose(by_fraction, levels, rtol=1e-12)
    # neither: the sample is the population, risk 1 / f
    assert np.allclose(IndividualRiskModel(0.5).levels(classes), 1 / sizes)
    verdict = IndividualRiskModel(0.05, weight="w").verdict(classes)
    assert not verdict.passed and verdict.failing_classes == 2


def test_weights_are_read_from_the_checked_table() -> None:
    df = pd.DataFrame({"q": ["a", "a", "a", "b", "b", "b"], "w": ["10", "10", "10", "1",
                                                                   "1", "1"]})
    model = IndividualRiskModel(0.05, weight="w")
    verdicts = check(df, ["q"], None, [model]).verdicts
    assert not verdicts[0].passed and verdicts[0].measured == pytest.approx(1 / 3)
    with pytest.raises(InputError, match=r"column 'w', data row 2: a survey weight"):
        check(df.assign(w=["10", "0.5", "1", "1", "1", "1"]), ["q"], None, [model])
    with pytest.raises(InputError, match="weight column 'w' is not in the table"):
        check(df[["q"]], ["q"], None, [model])


# -- population uniqueness -------------------------------------------------------------------

def test_population_uniqueness_judges_the_whole_table() -> None:
    sizes = np.array([1] * 30 + [2] * 20 + [3] * 10 + [10] * 5)
    expected = population_uniqueness(sizes, 0.1, model="zayatz")
    classes = Classes.from_sizes(sizes)
    passing = PopulationUniquenessModel(expected.share, "zayatz", sampling_fraction=0.1)
    failing = PopulationUniquenessModel(expected.share * 0.999, "zayatz",
                                        sampling_fraction=0.1)
    verdict = passing.verdict(classes)
    assert verdict.passed and verdict.measured == expected.share
    assert verdict.details["estimator"] == "zayatz"
    refused = failing.verdict(classes)
    assert not refused.passed and refused.failing_classes == 30  # the sample uniques
    # every class shares the table's verdict
    assert not failing.holds(classes).any() and passing.holds(classes).all()


def test_population_uniqueness_with_a_population_size_and_dankar() -> None:
    sizes = np.array([1] * 30 + [2] * 20 + [3] * 10 + [10] * 5)
    n = int(sizes.sum())
    expected = population_uniqueness(sizes, population_size=n * 20, model="dankar")
    model = PopulationUniquenessModel(1.0, population_size=n * 20)
    assert model.verdict(Classes.from_sizes(sizes)).measured == pytest.approx(
        expected.share, rel=1e-12)


# -- text, properties, context ---------------------------------------------------------------

@pytest.mark.parametrize("text", ["population-uniqueness=0.01",
                                  "population-uniqueness=0.02,model=pitman",
                                  "k-map=5", "k-map=5,estimator=zero-truncated-poisson",
                                  "delta-presence=0.1,0.6", "individual-risk=0.05"])
def test_model_text_reads_back(text: str) -> None:
    model = parse_model(text)
    assert model.spec() == text
    assert parse_model(model.spec()).parameters == model.parameters


@pytest.mark.parametrize("text, message", [
    ("delta-presence=0.6,0.1", "δmax 0.1 is below δmin 0.6"),
    ("delta-presence=0.1", "takes two numbers"),
    ("population-uniqueness=2", "must be a number in"),
    ("population-uniqueness=0.1,model=exact", "model must be one of"),
    ("k-map=2.5", "k-map"),
    ("individual-risk=-1", "must be a number in"),
])
def test_bad_model_text_is_refused(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_model(text)


def test_declared_properties() -> None:
    table = PopulationTable(pd.DataFrame({"a": [1]}))
    uniqueness = PopulationUniquenessModel(0.01, sampling_fraction=0.1)
    assert uniqueness.table_level and not uniqueness.monotonic
    assert not uniqueness.checkable_on_parts
    assert KMap(5, population=table).monotonic
    assert not KMap(5, population=table).checkable_on_parts
    assert KMap(5, sampling_fraction=0.1).checkable_on_parts
    assert not DeltaPresence(0.1, 0.6, population=table).monotonic
    assert IndividualRiskModel(0.05).monotonic and IndividualRiskModel(0.05).checkable_on_parts
    assert KMap(5).monotonic_with_suppression
    assert IndividualRiskModel(0.05).monotonic_with_suppression
    assert not DeltaPresence(0.1, 0.6).monotonic_with_suppression
    assert not uniqueness.monotonic_with_suppression


def test_context_is_bound_and_missing_context_refused() -> None:
    table = PopulationTable(pd.DataFrame({"a": [1]}))
    bound = bind_population([parse_model("k-map=5"), parse_model("delta-presence=0,1"),
                             parse_model("k=2")], population=table)
    assert [getattr(m, "population", None) is table for m in bound] == [True, True, False]
    with pytest.raises(InputError, match="needs the sampling fraction"):
        bind_population([parse_model("population-uniqueness=0.01")])
    with pytest.raises(InputError, match=r"needs a population table \(--population FILE\)"):
        bind_population([parse_model("delta-presence=0,1")], sampling_fraction=0.1)
    with pytest.raises(InputError, match="--weight is given but no model reads it"):
        bind_population([parse_model("k=2")], weight="w")
    with pytest.raises(InputError, match="not both"):
        bind_population([parse_model("individual-risk=0.1")], sampling_fraction=0.1,
                        population_size=100)
