"""Individual and global risk against sdcMicro's own test vector
(sdcMicro, tests/testthat/test_indivRisk.R: the 8-record sample with weights, method
"approx"), and properties of the approximation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonkit._util.grouping import group_rows
from anonkit.errors import InputError
from anonkit.models.individual_estimates import household_risk, individual_risk

# sdcMicro's sample_Data (column-major in R): keys A, B, C and the weight
A = [2, 3, 2, 2, 3, 3, 1, 2]
B = [3, 3, 3, 3, 3, 3, 4, 3]
C = [1, 3, 1, 2, 1, 1, 1, 1]
W = [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51.0]


def classes(*columns: list[int]) -> np.ndarray:
    keys = np.stack(columns, axis=1)
    _, ids = np.unique(keys, axis=0, return_inverse=True)
    return ids.reshape(-1)


def test_sdcmicro_indivrisk_approx_known_answer() -> None:
    found = individual_risk(classes(A, B, C), np.array(W))
    expected = [0.01369863, 0.08579129, 0.01369863, 0.17707583, 0.01877883, 0.01877883,
                0.03931625, 0.01369863]
    assert found.risk == pytest.approx(expected, abs=5e-9)
    assert found.expected_reidentifications == pytest.approx(sum(expected), abs=1e-7)
    assert found.global_risk == pytest.approx(sum(expected) / 8, abs=1e-8)
    assert found.riskiest(2).tolist() == [3, 1]  # row numbers, highest first


def test_without_weights_the_risk_is_one_over_the_class_size() -> None:
    found = individual_risk(classes(A, B, C))
    assert np.round(found.risk, 5).tolist() == [0.33333, 1.0, 0.33333, 1.0, 0.5, 0.5, 1.0,
                                                 0.33333]
    assert found.expected_reidentifications == pytest.approx(5.0)  # one per class


def test_a_class_whose_people_are_all_sampled_has_risk_one_over_its_size() -> None:
    found = individual_risk(np.array([0, 0, 1]), np.array([1.0, 1.0, 1.0]))
    assert found.risk.tolist() == [0.5, 0.5, 1.0]


@pytest.mark.parametrize(("weights", "fragment"), [
    ([1.0, 2.0], "one weight per record"),
    ([1.0, 0.5, 3.0], "row 1 has a weight below 1"),
    ([1.0, float("nan"), 3.0], "row 1"),
])
def test_bad_weights_are_refused_naming_the_row(weights: list[float], fragment: str) -> None:
    with pytest.raises(InputError, match=fragment):
        individual_risk(np.array([0, 0, 1]), np.array(weights))


def _series(f: int, x: float) -> float:
    """The closed forms near p = 1 (x = 1 - p), summed far enough in exact rationals."""
    from fractions import Fraction

    fx = Fraction(x)
    if f == 1:
        return float((1 - fx) * sum(fx ** j / (j + 1) for j in range(40)))
    return float((1 - fx) - (1 - fx) ** 2 * sum(fx ** j / (j + 2) for j in range(40)))


def test_the_risk_near_a_fully_sampled_class_is_stable() -> None:
    """Found by the property test: a class of two whose weights sum to a hair above 2 got
    a risk of 1.5 (catastrophic cancellation in the closed form)."""
    found = individual_risk(np.array([0, 0, 1]),
                            np.array([1.0000000000000002, 1.0000000000000002, 1.0000001]))
    assert found.risk[:2] == pytest.approx([0.5, 0.5], abs=1e-9)
    assert found.risk[2] == pytest.approx(1.0, abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(1.0, 500.0)), min_size=1, max_size=40))
def test_each_record_has_its_formula_and_risk_stays_in_bounds(
        records: list[tuple[int, float]]) -> None:
    keys = np.array([k for k, _ in records])
    weights = np.array([w for _, w in records])
    ids, _, _ = group_rows(__import__("pandas").DataFrame({"k": keys}), ["k"])
    found = individual_risk(ids, weights)
    for i, cls in enumerate(ids.tolist()):
        f = int((ids == cls).sum())
        big_f = float(weights[ids == cls].sum())
        p = f / big_f
        if p >= 1:
            expected = 1 / f
        elif f == 1:
            expected = p / (1 - p) * math.log(1 / p)
        elif f == 2:
            expected = p / (1 - p) - (p / (1 - p)) ** 2 * math.log(1 / p)
        else:
            expected = p / (f - (1 - p))
        if f <= 2 and 1 - p < 1e-3:  # the closed form cancels there: its series instead
            expected = _series(f, 1 - p)
        assert found.risk[i] == pytest.approx(expected, rel=1e-9)
        assert 0.0 <= found.risk[i] <= 1.0 + 1e-12
        # never above the prosecutor's 1/f: the population holds at least the sample
        assert found.risk[i] <= 1 / f + 1e-12


def test_household_risk_is_the_chance_one_member_is_reidentified() -> None:
    """sdcMicro's hierarchical risk, 1 - prod(1 - r), computed by hand."""
    risk = np.array([0.1, 0.2, 0.5, 1.0, 0.0])
    found = household_risk(risk, np.array([0, 0, 1, 2, 1]))
    first = 1 - 0.9 * 0.8
    assert found.risk == pytest.approx([first, first, 0.5, 1.0, 0.5])
    assert found.expected_reidentifications == pytest.approx(2 * first + 0.5 + 1.0 + 0.5)
    with pytest.raises(InputError, match="one household per record"):
        household_risk(risk, np.array([0, 1]))
