"""Population uniqueness from a sample (:mod:`anonkit.models.population_estimates`).

Known answers are ARX's own expected figures (``arx-deidentifier/arx`` at commit
``aacd487``, ``src/test/org/deidentifier/arx/test/TestRiskMetrics.java``), on the same
Adult file (bundled here unchanged) with all nine columns as quasi-identifiers, as ARX's
test reads it. ARX compares figures by their first four decimals (``compareUniqueness``);
where we follow ARX's formulas we match far closer than that. SNB's formulas are checked
against the model's defining series instead (ARX's SNB differs, see the module docstring).
Then edge cases and properties on random class sizes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import special, stats

from anonkit._util.grouping import group_rows
from anonkit.datasets import load_adult
from anonkit.errors import InputError
from anonkit.models.population_estimates import (
    PopulationUniqueness,
    _pitman_system,
    _snb_system,
    population_uniqueness,
    size_frequencies,
)

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
MODELS = ("dankar", "pitman", "zayatz", "snb")


def arx_digits(value: float) -> int:
    """ARX's ``compareUniqueness``: a figure truncated to four decimals."""
    return int(value * 10000)


def same(a: PopulationUniqueness, b: PopulationUniqueness) -> bool:
    """Field-wise equality, with nan equal to nan."""
    def eq(x: object, y: object) -> bool:
        if isinstance(x, float) and isinstance(y, float):
            return x == y or (math.isnan(x) and math.isnan(y))
        if isinstance(x, tuple) and isinstance(y, tuple):
            return len(x) == len(y) and all(eq(p, q) for p, q in zip(x, y, strict=True))
        return x == y
    return all(eq(x, y) for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def adult_sizes() -> np.ndarray:
    """Class sizes of ARX's adult.csv grouped by all nine columns (ARX's test declares every
    column with a hierarchy file a quasi-identifier: all nine)."""
    data = load_adult().data
    ids, _, _ = group_rows(data, list(data.columns))
    return np.bincount(ids)


# --------------------------------------------------------------------------- ARX's figures


def test_adult_grouping_is_arxs(adult_sizes: np.ndarray) -> None:
    # ARX testDecisionRule2, pi = 1: Dankar's figure equals the sample uniqueness, 0.5142...
    assert adult_sizes.sum() == 30162
    r = population_uniqueness(adult_sizes, 1.0)
    assert r.share == 0.5142895033485844
    assert (r.uniques, r.sample_uniques, r.model) == (15512.0, 15512, "exact")


def test_adult_one_percent_is_pitman(adult_sizes: np.ndarray) -> None:
    # ARX testDecisionRule2, pi = 0.01: 0.1446083531167384 (Pitman)
    r = population_uniqueness(adult_sizes, 0.01)
    assert r.model == "pitman" and r.converged
    assert arx_digits(r.share) == arx_digits(0.1446083531167384)
    assert r.share == pytest.approx(0.1446083531167384, rel=1e-9)


def test_adult_ten_percent_pitman_and_zayatz(adult_sizes: np.ndarray) -> None:
    # ARX testDecisionRule2, pi = 0.1: Pitman 0.27684993883653597, or Zayatz
    # 0.3207402393466189 when Pitman does not converge; ours converges
    r = population_uniqueness(adult_sizes, 0.1)
    assert r.model == "pitman" and r.converged
    assert arx_digits(r.share) == arx_digits(0.27684993883653597)
    assert r.share == pytest.approx(0.27684993883653597, rel=1e-9)
    z = population_uniqueness(adult_sizes, 0.1, model="zayatz")
    assert z.share == pytest.approx(0.3207402393466189, rel=1e-12)
    # and ARX's check that population uniqueness stays below sample uniqueness
    assert r.share <= z.share <= 15512 / 30162


def test_adult_twenty_percent(adult_sizes: np.ndarray) -> None:
    # ARX testDecisionRule2, pi = 0.2: 0.3577099234829125, Zayatz's figure (ARX's SNB finds
    # no root on Adult). Ours solves SNB, whose estimate is the smaller, so Dankar picks it:
    # a documented difference from ARX
    z = population_uniqueness(adult_sizes, 0.2, model="zayatz")
    assert z.share == pytest.approx(0.3577099234829125, rel=1e-12)
    r = population_uniqueness(adult_sizes, 0.2)
    assert r.model == "snb" and r.converged
    assert r.share < z.share
    assert population_uniqueness(adult_sizes, 0.2, model="snb") == r


def test_arx_small_example() -> None:
    # ARX testDecisionRule: DataProvider's 7 distinct rows at pi = 0.2 (N = 35) give a
    # population uniqueness of 1.0 (four decimals); 2-anonymized (no uniques left), 0
    r = population_uniqueness([1] * 7, 0.2)
    # both Zayatz and SNB (at beta = 1: every population class a singleton) answer all 35
    # people; SNB's float figure falls a hair short of 1, which ARX's truncation would read
    # as 0.9999
    assert r.share == pytest.approx(1.0, abs=1e-12)
    assert r.uniques == pytest.approx(35.0)
    assert population_uniqueness([1] * 7, 0.2, model="zayatz").share == 1.0
    after = population_uniqueness([2, 2, 3], 0.1)
    assert (after.uniques, after.share, after.model) == (0.0, 0.0, "exact")


def pitman_loglik(theta: float, alpha: float, sizes: np.ndarray, counts: np.ndarray) -> float:
    """Log-likelihood of Pitman's sampling formula on the frequency-of-frequencies, up to a
    constant, written out directly (independent of the module's score equations)."""
    u, n = int(counts.sum()), int(np.dot(sizes, counts))
    i = np.arange(1, u)
    return float(np.log(theta + i * alpha).sum()
                 - (special.gammaln(theta + n) - special.gammaln(theta + 1))
                 + np.dot(counts, special.gammaln(sizes - alpha) - special.gammaln(1 - alpha)))


def test_adult_pitman_fit_maximises_the_likelihood(adult_sizes: np.ndarray) -> None:
    sizes, counts = size_frequencies(adult_sizes)
    theta, alpha = population_uniqueness(adult_sizes, 0.1, model="pitman").parameters
    at = pitman_loglik(theta, alpha, sizes, counts)
    for dt, da in ((1e-3 * theta, 0), (0, 1e-4), (-1e-3 * theta, 0), (0, -1e-4),
                   (1e-3 * theta, 1e-4), (-1e-3 * theta, -1e-4)):
        assert pitman_loglik(theta + dt, alpha + da, sizes, counts) < at


def snb_series(k: float, pi: float, alpha: float, beta: float) -> tuple[float, float]:
    """Expected sample classes of size 1 and 2 under the SNB model, summed from its
    definition: ``F - 1 ~ NB(alpha, beta)``, each record kept with probability ``pi``."""
    j = np.arange(1, 20001, dtype=np.float64)
    p_f = stats.nbinom.pmf(j - 1, alpha, beta)
    e1 = k * np.sum(p_f * j * pi * (1 - pi) ** (j - 1))
    e2 = k * np.sum(p_f * j * (j - 1) / 2 * pi**2 * (1 - pi) ** (j - 2))
    return float(e1), float(e2)


def sh3(sizes: np.ndarray, counts: np.ndarray, q: float) -> float:
    """Haas & Stokes' Shlosser-type estimator Sh3, term by term."""
    num1 = den1 = num2 = den2 = 0.0
    for i, f in zip(sizes.tolist(), counts.tolist(), strict=True):
        num1 += i * q * q * (1 - q * q) ** (i - 1) * f
        den1 += (1 - q) ** i * ((1 + q) ** i - 1) * f
        num2 += (1 - q) ** i * f
        den2 += i * q * (1 - q) ** (i - 1) * f
    return int(counts.sum()) + int(counts[0]) * (num1 / den1) * (num2 / den2) ** 2


def test_adult_snb_fit_solves_the_model(adult_sizes: np.ndarray) -> None:
    sizes, counts = size_frequencies(adult_sizes)
    r = population_uniqueness(adult_sizes, 0.2, model="snb")
    alpha, beta = r.parameters
    k = sh3(sizes, counts, 0.2)
    e1, e2 = snb_series(k, 0.2, alpha, beta)
    assert e1 == pytest.approx(r.sample_uniques, rel=1e-9)
    assert e2 == pytest.approx(r.sample_pairs, rel=1e-9)
    assert r.uniques == pytest.approx(k * beta**alpha, rel=1e-12)


@SETTINGS
@given(alpha=st.floats(0.05, 3.0), beta=st.floats(0.05, 1.0), pi=st.floats(0.01, 0.99))
def test_snb_expectations_match_the_series(alpha: float, beta: float, pi: float) -> None:
    e1, e2, *_ = _snb_system(1.0, pi, 0, 0)(alpha, beta)  # residuals against f = 0
    s1, s2 = snb_series(1.0, pi, alpha, beta)
    assert e1 == pytest.approx(s1, rel=1e-9, abs=1e-15)
    assert e2 == pytest.approx(s2, rel=1e-9, abs=1e-15)


# --------------------------------------------------------------------------- own models


def pitman_population(n: int, theta: float, alpha: float,
                      rng: np.random.Generator) -> np.ndarray:
    """The class of each of ``n`` people, seated by the Pitman-Yor Chinese restaurant:
    a new class with probability ``(theta + k alpha) / (theta + t)``, else class ``j`` with
    probability ``(n_j - alpha) / (t - k alpha)`` (a uniformly drawn earlier person's class,
    accepted with probability ``(n_j - alpha) / n_j``)."""
    classes = np.empty(n, np.int64)
    sizes: list[int] = []
    for t in range(n):
        if t == 0 or rng.random() * (theta + t) < theta + len(sizes) * alpha:
            classes[t] = len(sizes)
            sizes.append(1)
            continue
        while True:
            j = int(classes[rng.integers(t)])
            if rng.random() * sizes[j] < sizes[j] - alpha:
                break
        classes[t] = j
        sizes[j] += 1
    return classes


def sample_sizes(classes: np.ndarray, pi: float, rng: np.random.Generator) -> np.ndarray:
    """Class sizes of a Bernoulli(pi) sample of the people."""
    counts = np.bincount(classes[rng.random(len(classes)) < pi])
    return counts[counts > 0]


def test_pitman_recovers_a_pitman_population() -> None:
    rng = np.random.default_rng(3)
    people = pitman_population(100_000, 500.0, 0.5, rng)
    truth = int((np.bincount(people) == 1).sum())
    r = population_uniqueness(sample_sizes(people, 0.1, rng), population_size=len(people),
                              model="pitman")
    assert r.converged
    # a sample of ~10,000 people: over seeds the estimate scatters by a few per cent
    assert r.uniques == pytest.approx(truth, rel=0.1)
    assert r.parameters[1] == pytest.approx(0.5, abs=0.05)


def test_snb_recovers_an_snb_population() -> None:
    rng = np.random.default_rng(1)
    alpha, beta = 0.5, 0.1
    sizes = 1 + rng.negative_binomial(alpha, beta, 100_000)  # F - 1 ~ NB(alpha, beta)
    people = np.repeat(np.arange(len(sizes)), sizes)
    truth = int((sizes == 1).sum())
    r = population_uniqueness(sample_sizes(people, 0.5, rng), population_size=len(people),
                              model="snb")
    assert r.converged
    assert r.uniques == pytest.approx(truth, rel=0.05)
    assert r.parameters == pytest.approx((alpha, beta), rel=0.1)


# --------------------------------------------------------------------------- derivatives


def assert_jacobian(system: Callable[[float, float], tuple[float, ...] | None], x: float,
                    y: float, hx: float, hy: float) -> None:
    """The system's Jacobian against central differences."""
    value = system(x, y)
    assert value is not None
    jac = np.array(value[2:]).reshape(2, 2)
    px, mx = system(x + hx, y), system(x - hx, y)
    py, my = system(x, y + hy), system(x, y - hy)
    numeric = np.array([[(px[0] - mx[0]) / (2 * hx), (py[0] - my[0]) / (2 * hy)],
                        [(px[1] - mx[1]) / (2 * hx), (py[1] - my[1]) / (2 * hy)]])
    scale = np.abs(jac).max()
    np.testing.assert_allclose(numeric, jac, rtol=1e-5, atol=1e-6 * scale)


@SETTINGS
@given(alpha=st.floats(0.1, 3.0), beta=st.floats(0.05, 0.9), pi=st.floats(0.02, 0.95))
def test_snb_jacobian(alpha: float, beta: float, pi: float) -> None:
    assert_jacobian(_snb_system(1000.0, pi, 10, 3), alpha, beta, 1e-6 * alpha, 1e-6 * beta)


SIZES = st.lists(st.integers(1, 40), min_size=2, max_size=300)


@SETTINGS
@given(sizes=SIZES, theta=st.floats(0.1, 5000.0), alpha=st.floats(0.05, 0.95))
def test_pitman_closed_form_and_plain_sums_agree(sizes: list[int], theta: float,
                                                 alpha: float) -> None:
    distinct, counts = size_frequencies([*sizes, 2])  # at least one class of size >= 2
    u, n = int(counts.sum()), int(np.dot(distinct, counts))
    big, big_counts = distinct[distinct >= 2], counts[distinct >= 2].astype(float)
    closed = _pitman_system(big, big_counts, u, n, plain=False)(theta, alpha)
    plain = _pitman_system(big, big_counts, u, n, plain=True)(theta, alpha)
    assert closed is not None and plain is not None
    np.testing.assert_allclose(closed, plain, rtol=1e-7, atol=1e-9)
    assert_jacobian(_pitman_system(big, big_counts, u, n, plain=True), theta, alpha,
                    1e-5 * theta, 1e-6)


# --------------------------------------------------------------------------- edge cases


@pytest.mark.parametrize("model", MODELS)
def test_no_sample_uniques_means_no_population_uniques(model: str) -> None:
    r = population_uniqueness(np.array([2, 3, 5, 2]), 0.05, model=model)
    assert (r.uniques, r.share, r.model, r.converged) == (0.0, 0.0, "exact", True)
    assert (r.sample_uniques, r.sample_pairs, r.classes, r.sample_size) == (0, 2, 4, 12)


@pytest.mark.parametrize("model", MODELS)
def test_full_population_gives_the_sample_uniques(model: str) -> None:
    sizes = [1, 1, 1, 2, 3, 1, 7]
    for r in (population_uniqueness(sizes, 1.0, model=model),
              population_uniqueness(sizes, population_size=16, model=model)):
        assert (r.uniques, r.model, r.sampling_fraction) == (4.0, "exact", 1.0)
        assert r.share == 4 / 16


def test_population_size_or_fraction() -> None:
    a = population_uniqueness([1, 1, 2, 4], 0.25, model="zayatz")
    b = population_uniqueness([1, 1, 2, 4], population_size=32, model="zayatz")
    assert same(a, b)
    assert (a.population_size, a.sample_size) == (32.0, 8)


def test_every_class_unique() -> None:
    # Zayatz: every population class is taken to be of size 1, so all N are unique
    r = population_uniqueness(np.ones(50, np.int64), 0.05, model="zayatz")
    assert r.uniques == pytest.approx(1000.0) and r.share == pytest.approx(1.0)
    # Pitman's likelihood has no maximum then: no fit, and Dankar falls back to Zayatz
    p = population_uniqueness(np.ones(50, np.int64), 0.05, model="pitman")
    assert math.isnan(p.uniques) and not p.converged and p.model == "pitman"
    d = population_uniqueness(np.ones(50, np.int64), 0.05)
    assert d.model == "zayatz" and d.share == pytest.approx(1.0)


def test_empty_sample() -> None:
    r = population_uniqueness(np.zeros(0, np.int64), population_size=100)
    assert (r.uniques, r.share, r.sample_size, r.model) == (0.0, 0.0, 0, "exact")


def test_whole_float_sizes_are_accepted() -> None:
    assert same(population_uniqueness([1.0, 2.0, 1.0], 0.5),
                population_uniqueness([1, 2, 1], 0.5))


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"sampling_fraction": 0.0}, "sampling_fraction must be in (0, 1]"),
    ({"sampling_fraction": -0.1}, "sampling_fraction must be in (0, 1]"),
    ({"sampling_fraction": 1.5}, "sampling_fraction must be in (0, 1]"),
    ({"sampling_fraction": math.inf}, "sampling_fraction must be in (0, 1]"),
    ({"sampling_fraction": math.nan}, "sampling_fraction must be a number"),
    ({"sampling_fraction": True}, "sampling_fraction must be a number"),
    ({"sampling_fraction": "0.1"}, "sampling_fraction must be a number"),
    ({}, "give the sampling fraction or the population size"),
    ({"sampling_fraction": 0.1, "population_size": 100}, "not both"),
    ({"population_size": 5}, "population_size 5 is smaller than the sample"),
    ({"population_size": 0}, "population_size must be a positive number"),
    ({"population_size": math.inf}, "population_size must be a positive number"),
    ({"sampling_fraction": 0.1, "model": "mu-argus"}, "unknown population model 'mu-argus'"),
])
def test_bad_arguments_are_refused(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(InputError) as info:
        population_uniqueness([1, 1, 2, 3], **kwargs)
    assert needle in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(("sizes", "needle"), [
    ([1, 0, 2], "class_sizes[1] is 0"),
    ([1, -3], "class_sizes[1] is -3"),
    ([1, 1.5], "class_sizes[1] is 1.5"),
    ([math.nan, 1], "class_sizes[0] is nan"),
    (["a", "b"], "class_sizes must be integers"),
])
def test_bad_class_sizes_are_refused(sizes: list[object], needle: str) -> None:
    with pytest.raises(InputError) as info:
        population_uniqueness(sizes, 0.1)
    assert needle in str(info.value) and "\n" not in str(info.value)


# --------------------------------------------------------------------------- properties

FRACTION = st.floats(0.001, 1.0)


@SETTINGS
@given(sizes=SIZES)
def test_size_frequencies(sizes: list[int]) -> None:
    distinct, counts = size_frequencies(np.array(sizes))
    values, expected = np.unique(sizes, return_counts=True)
    np.testing.assert_array_equal(distinct, values)
    np.testing.assert_array_equal(counts, expected)


@SETTINGS
@given(data=st.data(), sizes=SIZES, pi=FRACTION, model=st.sampled_from(MODELS))
def test_class_order_does_not_matter(data: st.DataObject, sizes: list[int], pi: float,
                                     model: str) -> None:
    shuffled = data.draw(st.permutations(sizes))
    assert same(population_uniqueness(sizes, pi, model=model),
                population_uniqueness(shuffled, pi, model=model))


@SETTINGS
@given(sizes=SIZES, pi=FRACTION)
def test_zayatz_population_uniques_among_sample_uniques(sizes: list[int], pi: float) -> None:
    # a sample record that is a population unique is a sample unique: the expected number
    # of them, pi * uniques (= n * share), lies in [0, f_1]; and at pi = 1 it is f_1
    r = population_uniqueness(sizes, pi, model="zayatz")
    assert r.converged
    assert 0 <= r.share * r.sample_size <= r.sample_uniques * (1 + 1e-12)
    assert 0 <= pi * r.uniques <= r.sample_uniques * (1 + 1e-12)


@SETTINGS
@given(sizes=SIZES, pi=st.floats(0.1000001, 1.0))
def test_dankar_above_ten_percent_stays_below_sample_uniqueness(sizes: list[int],
                                                                pi: float) -> None:
    # above pi = 0.1 Dankar's figure is the smaller of Zayatz and SNB, so within Zayatz's bound
    r = population_uniqueness(sizes, pi)
    assert r.model in ("zayatz", "snb", "exact") and r.converged
    assert 0 <= r.share * r.sample_size <= r.sample_uniques * (1 + 1e-12)


@SETTINGS
@given(sizes=SIZES, pi=FRACTION)
def test_dankar_always_answers(sizes: list[int], pi: float) -> None:
    r = population_uniqueness(sizes, pi)
    assert r.converged and math.isfinite(r.uniques) and 0 <= r.uniques <= r.population_size
    assert r.model in (("pitman", "zayatz", "exact") if pi <= 0.1 else ("zayatz", "snb", "exact"))


@SETTINGS
@given(sizes=SIZES, a=FRACTION, b=FRACTION)
def test_zayatz_share_grows_with_the_sampling_fraction(sizes: list[int], a: float,
                                                       b: float) -> None:
    lo, hi = sorted((a, b))
    small = population_uniqueness(sizes, lo, model="zayatz")
    large = population_uniqueness(sizes, hi, model="zayatz")
    assert small.share <= large.share * (1 + 1e-12)


@SETTINGS
@given(sizes=SIZES, a=st.floats(0.001, 0.999), b=st.floats(0.001, 0.999))
def test_pitman_share_grows_with_the_sampling_fraction(sizes: list[int], a: float,
                                                       b: float) -> None:
    # the fit does not depend on pi; N^(alpha - 1) falls as N grows (alpha < 1)
    lo, hi = sorted((a, b))
    small = population_uniqueness(sizes, lo, model="pitman")
    large = population_uniqueness(sizes, hi, model="pitman")
    assert same(small._replace(uniques=0.0, share=0.0, population_size=0.0,
                               sampling_fraction=0.0, converged=True),
                large._replace(uniques=0.0, share=0.0, population_size=0.0,
                               sampling_fraction=0.0, converged=True))
    if small.converged and large.converged:
        assert small.share <= large.share * (1 + 1e-12)
