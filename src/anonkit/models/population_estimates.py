"""Population uniqueness estimated from a sample, as statistical offices (and ARX) measure it.

A record alone in its class of the *sample* (a sample unique) is not necessarily alone in
the *population* the sample was drawn from; a record that is alone in the population (a
population unique) is re-identified with certainty by anyone who can link the population's
quasi-identifiers to names. Without the population at hand, its uniques are estimated from
the sample's class sizes and the sampling fraction ``pi = n / N`` (``n`` sample records,
``N`` population size; ``pi = 1``: the sample is the population). Only the
frequency-of-frequencies enter: ``f_i``, the number of sample classes of size ``i``; so
``f_1`` are the sample uniques, ``u = sum_i f_i`` the classes and ``n = sum_i i f_i``.

Estimators (``uniques`` is the expected number of population-unique *records*; ``share`` is
``uniques / N``, ARX's "fraction of unique tuples", which under uniform sampling is also the
expected share of the sample's records that are population uniques):

- **zayatz** (Zayatz 1991, "Estimation of the number of unique population elements using a
  sample"; ARX ``risk/ModelZayatz.java``): the population's class-size distribution is taken
  to be the sample's, and Bayes' rule with the hypergeometric
  ``P(f = 1 | F = j) = j C(N - j, n - 1) / C(N, n)`` gives the probability that a sample
  unique is a population unique, ``P = f_1 P(f=1|F=1) / sum_j f_j P(f=1|F=j)``;
  ``uniques = f_1 P / pi``. ``C(N, n)`` cancels: ``P(f=1|F=j) / P(f=1|F=1) = j prod_{k<j}
  (1 - (n - 1) / (N - k))``, one cumulative sum over the sizes.
- **pitman** (Hoshino 2001, "Applying Pitman's sampling formula to microdata disclosure
  risk assessment", J. Official Statistics 17(4); ARX ``risk/ModelPitman.java``): the
  classes follow Pitman's sampling formula with parameters ``(theta, alpha)``, fitted by
  maximum likelihood on the ``f_i``; the score equations are ::

      sum_{i=1}^{u-1} 1 / (theta + i alpha)  =  sum_{i=1}^{n-1} 1 / (theta + i)
      sum_{i=1}^{u-1} i / (theta + i alpha)  =  sum_{j>=2} f_j sum_{k=1}^{j-1} 1 / (k - alpha)

  solved by Newton's method in closed form (digamma / trigamma), then checked against the
  plain sums; ``uniques = N^alpha Gamma(theta + 1) / Gamma(theta + alpha)``.
- **snb** (Chen & Keller-McNulty 1998, "Estimation of identification disclosure risk in
  microdata", J. Official Statistics 14(1); ARX ``risk/ModelSNB.java``): population class
  sizes follow a shifted negative binomial, ``F - 1 ~ NB(alpha, beta)``; with
  ``q = (1 - pi)(1 - beta)`` and ``K`` non-empty population classes, the expected sample
  counts are ::

      E f_1 = K pi (beta / (1 - q))^alpha (1 + alpha q / (1 - q))
      E f_2 = K pi^2 alpha beta^alpha (1 - beta) (2 - (1 - alpha) q) / (2 (1 - q)^(alpha + 2))

  ``K`` is estimated first (the Shlosser-type estimator ``Sh3`` of Haas & Stokes 1998,
  "Estimating the number of classes in a finite population", as ARX cites it),
  ``E f_1 = f_1, E f_2 = f_2`` are solved for ``(alpha, beta)`` by
  Newton's method, and ``uniques = K beta^alpha``.
- **dankar** (Dankar, El Emam, Neisa & Roffey 2012, "Estimating the re-identification risk
  of clinical data sets", BMC Med. Inform. Decis. Mak. 12:66; ARX
  ``risk/RiskModelPopulationUniqueness.java``): for ``pi <= 0.1`` Pitman, or Zayatz when
  Pitman's fit fails; above, the smaller of Zayatz and SNB, or Zayatz when SNB's fit fails.

Two cases need no estimate: no sample uniques (no sample record can be a population
unique; ARX reports 0 too) and ``pi = 1`` (the population uniques *are* the sample uniques).

Solver: Newton's method with ARX's defaults (``ARXSolverConfiguration``): it stops when
both equations hold to 1e-6; a try gives up after 1000 steps or on a non-finite value;
tries start from the model's own guess (Pitman: Hoshino's moment-type guess, as ARX
computes it; SNB: ``(1, 1)``), then from ARX's 16 fixed points ``{0, .33, .66, .99}^2``;
at most 10,000 steps in all. Pitman's closed form is checked against the plain sums (ARX's
"iterative" form) and, when the check fails or it found no root, the plain sums are solved.

Known differences from ARX 3.9 (``arx-deidentifier/arx`` at ``aacd487``):

- SNB: ARX's equation for ``E f_2`` multiplies by ``(1 - q)^(alpha + 2)`` where the model
  (and ARX's own Jacobian) divides, and its ``Sh3`` denominator reads
  ``sum_i [(1 - pi)^i (1 + pi)^i f_i - 1]`` (operator precedence) for
  ``sum_i (1 - pi)^i ((1 + pi)^i - 1) f_i``. Both are as in the papers here (the ``E f_1``,
  ``E f_2`` formulas are checked against the series in the tests), so SNB figures, and
  Dankar's figure wherever it picks SNB, differ from ARX's; on Adult, ARX's SNB finds no
  root at all.
- A Newton step that would leave the parameter space is halved until it stays inside; ARX
  abandons the try (so its fixed starts often overshoot SNB's root and miss it). The
  parameter space is where the model is defined: Pitman ``theta >= 0`` (ARX's constraint),
  ``alpha < 1`` and every ``theta + i alpha > 0``; SNB ``alpha > 0``, ``0 < beta <= 1``.
  ARX constrains only Pitman's ``theta``.
- A converged root is polished by one more Newton step when that step improves it.
- ARX also stops on wall-clock limits (0.1 s a try, 1 s in all); here the limits are step
  counts (the plain-sum Pitman fallback, O(u) a step, gets 1e7 terms' worth), so results do
  not depend on the machine. With every class unique Pitman's likelihood has no maximum:
  its fit is refused at once.
- A failed fit is reported as ``nan`` with ``converged=False`` (ARX reports 0), so it cannot
  be read as "no risk". ``pi = 1`` answers ``f_1`` for every model (ARX fits Pitman and SNB
  even then).
- ``N`` is ``n / pi`` unrounded (ARX rounds it to an integer) and is not capped at 2^31 - 1
  in Zayatz's hypergeometric.

Everything is vectorised over class sizes; the solvers' steps are the only loops, each a
few scalar special-function calls on the distinct sizes (``O(sqrt n)`` of them), or one
O(u) pass in Pitman's plain-sum fallback.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple, get_args

import numpy as np

from anonkit.errors import InputError

__all__ = [
    "DANKAR_PITMAN_LIMIT",
    "Estimator",
    "Model",
    "PopulationUniqueness",
    "population_uniqueness",
    "size_frequencies",
]

Model = Literal["dankar", "pitman", "zayatz", "snb"]
#: every estimator, Dankar et al.'s rule last (it picks one of the others)
MODELS: tuple[Model, ...] = ("pitman", "zayatz", "snb", "dankar")
#: the estimator whose figure is reported; ``exact`` when the figure needs no estimate
Estimator = Literal["pitman", "zayatz", "snb", "exact"]

#: Dankar et al.'s rule uses Pitman at or below this sampling fraction
DANKAR_PITMAN_LIMIT = 0.1

# ARX's solver defaults (ARXSolverConfiguration): accuracy, steps per try, steps in all,
# and the fixed start points tried after the model's own guess
_ACCURACY = 1e-6
_STEPS_PER_TRY = 1000
_STEPS_TOTAL = 10_000
_GRID = (0.0, 0.33, 0.66, 0.99)
_ARX_STARTS: tuple[tuple[float, float], ...] = tuple((a, b) for a in _GRID for b in _GRID)
# at most this many halvings of a step that would leave the parameter space
_HALVINGS = 60
# The plain-sum Pitman evaluation costs O(u) per step: the fallback solver that uses it
# gets this many terms in all (about a tenth of a second; ARX allows 1 s of wall-clock
# time), and at least _PLAIN_SUM_STEPS steps when it only polishes a closed-form root
_PLAIN_SUM_WORK = 1e7
_PLAIN_SUM_STEPS = 10
# Zayatz's cumulative sum runs over sizes up to this; larger classes use log-gamma
_ZAYATZ_TERMS = 1 << 20


class PopulationUniqueness(NamedTuple):
    """Estimated population uniques of a sample, and what the estimate rests on."""

    uniques: float  # expected number of population-unique records (nan: the fit failed)
    share: float  # uniques / N: share of the population (and, in expectation, the sample)
    model: Estimator  # the estimator used (for dankar: the one it picked)
    converged: bool  # the fit was solved, inside the model (always True for zayatz/exact)
    sample_uniques: int  # f_1: classes (records) of size 1 in the sample
    sample_pairs: int  # f_2: classes of size 2 in the sample
    classes: int  # u: classes in the sample
    sample_size: int  # n: records in the sample
    population_size: float  # N = n / pi
    sampling_fraction: float  # pi = n / N
    parameters: tuple[float, ...]  # fitted (theta, alpha) for pitman, (alpha, beta) for snb


# --------------------------------------------------------------------------- input


def _class_sizes(class_sizes: np.ndarray | Sequence[int]) -> np.ndarray:
    sizes = np.asarray(class_sizes).reshape(-1)
    if sizes.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(sizes) | (np.mod(sizes, 1) != 0)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise InputError(f"class_sizes[{j}] is {sizes[j]}: class sizes must be whole "
                             f"numbers")
    elif sizes.dtype.kind not in "iu" and sizes.size:
        raise InputError(f"class_sizes must be integers, got dtype {sizes.dtype}")
    sizes = sizes.astype(np.int64)
    if sizes.size and sizes.min() < 1:
        j = int(np.argmin(sizes))
        raise InputError(f"class_sizes[{j}] is {sizes[j]}: every class holds at least one "
                         f"record (drop empty classes first)")
    return sizes


def size_frequencies(class_sizes: np.ndarray | Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The frequency-of-frequencies: the distinct class sizes ``i`` (ascending) and ``f_i``,
    the number of classes of each size (both int64)."""
    sizes = _class_sizes(class_sizes)
    if sizes.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    largest = int(sizes.max())
    # a count per possible size is one linear pass; a sort only pays when a few huge
    # classes would make that table much longer than the input
    if largest <= 8 * sizes.size + 1024:
        table = np.bincount(sizes)
        present = np.flatnonzero(table)
        return present.astype(np.int64), table[present].astype(np.int64)
    values, counts = np.unique(sizes, return_counts=True)
    return values.astype(np.int64), counts.astype(np.int64)


def _sampling(n: int, sampling_fraction: float | None,
              population_size: float | None) -> tuple[float, float]:
    """``(pi, N)`` from whichever of the two was given."""
    if sampling_fraction is not None:
        if population_size is not None:
            raise InputError("give sampling_fraction or population_size, not both")
        pi = _real(sampling_fraction, "sampling_fraction")
        if not 0 < pi <= 1:
            raise InputError(f"sampling_fraction must be in (0, 1], got {sampling_fraction}")
        return pi, n / pi
    if population_size is None:
        raise InputError("give the sampling fraction or the population size the sample was "
                         "drawn from")
    big_n = _real(population_size, "population_size")
    if not (big_n > 0 and math.isfinite(big_n)):
        raise InputError(f"population_size must be a positive number, got {population_size}")
    if big_n < n:
        raise InputError(f"population_size {population_size} is smaller than the sample "
                         f"({n} records); give the size of the population it was drawn from")
    return n / big_n, big_n


def _real(value: float, name: str) -> float:
    if isinstance(value, bool | str | bytes):  # float() would take True and "0.1"
        raise InputError(f"{name} must be a number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if math.isnan(out):
        raise InputError(f"{name} must be a number, got nan")
    return out


# --------------------------------------------------------------------------- solver

# a 2x2 system: at (x, y), the residuals g1, g2 and the Jacobian's rows (dg1/dx, dg1/dy,
# dg2/dx, dg2/dy), or None outside its domain
_Value = tuple[float, float, float, float, float, float]
_System = Callable[[float, float], _Value | None]


def _evaluate(system: _System, x: float, y: float) -> _Value | None:
    """``system(x, y)``, or None where it is undefined, infinite or overflows."""
    try:
        value = system(x, y)
    except (OverflowError, ZeroDivisionError):  # Python float arithmetic raises these
        return None
    return value if value is not None and all(map(math.isfinite, value)) else None


def _newton(system: _System, starts: Sequence[tuple[float, float]],
            admissible: Callable[[float, float], bool],
            steps_total: int = _STEPS_TOTAL) -> tuple[float, float, bool]:
    """Multi-start Newton's method as ARX runs it: the first start whose iterates solve both
    equations to ``_ACCURACY`` wins; a try ends on a non-finite value, on a step that no
    halving keeps ``admissible``, or after ``_STEPS_PER_TRY`` steps; ``(nan, nan, False)``
    when no try succeeds within ``steps_total`` evaluations."""
    steps = 0
    for x0, y0 in starts:
        x, y = float(x0), float(y0)
        for _ in range(_STEPS_PER_TRY + 1):
            steps += 1
            if steps > steps_total:
                return math.nan, math.nan, False
            value = _evaluate(system, x, y)
            if value is None:
                break
            g1, g2, a, b, c, d = value
            det = a * d - b * c
            if det == 0.0 or not math.isfinite(det):
                if abs(g1) <= _ACCURACY and abs(g2) <= _ACCURACY:
                    return x, y, True
                break
            dx = (d * g1 - b * g2) / det
            dy = (a * g2 - c * g1) / det
            if abs(g1) <= _ACCURACY and abs(g2) <= _ACCURACY:
                # converged as ARX counts it; one more step brings a Newton root to machine
                # precision, kept only when it stays admissible and does not undo the fit
                nx, ny = x - dx, y - dy
                if admissible(nx, ny):
                    polished = _evaluate(system, nx, ny)
                    if (polished is not None and max(abs(polished[0]), abs(polished[1]))
                            <= max(abs(g1), abs(g2))):
                        return nx, ny, True
                return x, y, True
            # a step that leaves the parameter space is halved until it stays inside (ARX
            # gives the try up instead, and so misses roots its fixed starts overshoot)
            for _ in range(_HALVINGS):
                nx, ny = x - dx, y - dy
                if math.isfinite(nx) and math.isfinite(ny) and admissible(nx, ny):
                    break
                dx, dy = dx / 2, dy / 2
            else:
                break
            x, y = nx, ny
    return math.nan, math.nan, False


# --------------------------------------------------------------------------- zayatz


def _zayatz(sizes: np.ndarray, counts: np.ndarray, f1: int, n: int, big_n: float) -> float:
    """Zayatz's share of population uniques, ``f_1 P(F=1 | f=1) / n`` (= uniques / N)."""
    from scipy import special  # (imported when used: scipy costs every command 0.1 s)
    # log P(f=1|F=j) / P(f=1|F=1) = log j + sum_{k<j} log(1 - (n-1)/(N-k)); a class larger
    # than N - n + 1 cannot show once in the sample (probability 0, log -inf)
    head = min(int(sizes[-1]), _ZAYATZ_TERMS)
    k = np.arange(1, head, dtype=np.float64)
    ratio = (n - 1) / (big_n - k)
    with np.errstate(divide="ignore"):
        steps = np.where(ratio < 1, np.log1p(-np.minimum(ratio, 1.0)), -np.inf)
    log_tail = np.concatenate(([0.0], np.cumsum(steps)))  # [j - 1]: sum over k < j
    within = sizes <= head
    logs = np.empty(sizes.size)
    logs[within] = log_tail[sizes[within] - 1]
    if not within.all():
        # classes past the table: the rest of the sum as log-gamma differences, prod_{k=head}
        # ^{j-1} (N-n+1-k)/(N-k) = G(N-n+2-head) G(N-j+1) / (G(N-n+2-j) G(N-head+1))
        j = sizes[~within].astype(np.float64)
        with np.errstate(invalid="ignore"):
            rest = (special.gammaln(big_n - n + 2 - head) - special.gammaln(big_n - n + 2 - j)
                    + special.gammaln(big_n - j + 1) - special.gammaln(big_n - head + 1))
        logs[~within] = np.where(big_n - n + 2 - j > 0, log_tail[head - 1] + rest, -np.inf)
    relative = sizes * np.exp(logs)  # P(f=1|F=j) / P(f=1|F=1)
    conditional = f1 / float(np.dot(counts, relative))  # P(F=1 | f=1)
    # the share first: it is exact (1.0 when every class is unique) where N may not be
    return f1 * conditional / n


# --------------------------------------------------------------------------- pitman


class _PitmanFit(NamedTuple):
    theta: float
    alpha: float
    converged: bool


def _pitman_start(f1: int, f2: int, u: int, n: int) -> tuple[float, float]:
    """Hoshino's moment-type starting point, as ARX computes it (``f_2 = 0`` read as 1)."""
    c1, c2 = float(f1), float(f2 or 1)
    c = c1 * (c1 - 1) / c2
    with np.errstate(all="ignore"):
        theta = np.float64(n * u * c - c1 * (n - 1) * (2 * u + c)) / (
            2 * c1 * u + c1 * c - n * c)
        alpha = (theta * (c1 - n) + (n - 1) * c1) / (n * u)
    return float(theta), float(alpha)


def _pitman_domain(u: int) -> Callable[[float, float], bool]:
    """Where Pitman's log-likelihood is defined: every ``theta + i alpha`` (``i < u``) and
    ``k - alpha`` positive, and ``theta >= 0`` (ARX's constraint)."""

    def admissible(theta: float, alpha: float) -> bool:
        return (theta >= 0 and alpha < 1 and theta + alpha > 0
                and theta + (u - 1) * alpha > 0)

    return admissible


def _pitman_system(big: np.ndarray, big_counts: np.ndarray, u: int, n: int, *,
                   plain: bool) -> _System:
    """Score and Hessian of Pitman's log-likelihood in ``(theta, alpha)``.

    The sums over records and over class sizes are digamma / trigamma differences at
    positive arguments, which lose nothing. The sums over the ``u - 1`` classes,
    ``sum 1/(theta + i alpha)`` and its kin, are too (``plain=False``, as ARX's closed
    form), but dividing them by ``alpha`` cancels digits when ``alpha`` is small;
    ``plain=True`` adds them up term by term instead (ARX's iterative form), at O(u) a call.
    """
    from scipy import special  # (imported when used: scipy costs every command 0.1 s)

    m = float(u - 1)
    sizes = big.astype(np.float64)
    i = np.arange(1, u, dtype=np.float64) if plain else np.zeros(0)
    admissible = _pitman_domain(u)

    def system(theta: float, alpha: float) -> _Value | None:
        if not admissible(theta, alpha) or (alpha == 0.0 and not plain):
            return None
        if plain:
            ends: list[float] = []
        else:
            # sum_{i=1}^{u-1} 1/(x+i) and 1/(x+i)^2 with x = theta/alpha; for alpha < 0
            # every x + i is negative, and with y = -x these are -sum 1/(y-i) and
            # sum 1/(y-i)^2 (Hurwitz zeta at negative arguments is slow)
            x = theta / alpha
            ends = [x + u, x + 1.0] if alpha > 0 else [-x - u + 1.0, -x]
        args = np.concatenate(([theta + n, theta + 1.0, 1.0 - alpha, *ends], sizes - alpha))
        with np.errstate(all="ignore"):
            psi = special.psi(args)
            tri = special.zeta(2, args)  # trigamma (scipy's polygamma wraps this, slower)
        e = len(ends)
        b1 = psi[0] - psi[1]  # sum_{i=1}^{n-1} 1/(theta+i)
        b2 = tri[1] - tri[0]  # sum 1/(theta+i)^2
        c1 = float(np.dot(big_counts, psi[3 + e:] - psi[2]))  # sum_j f_j sum_{k<j} 1/(k-alpha)
        c2 = float(np.dot(big_counts, tri[2] - tri[3 + e:]))  # ... 1/(k-alpha)^2
        if plain:
            w = 1.0 / (theta + i * alpha)
            iw = i * w
            # elementwise products, not BLAS dot: a threaded dot on a busy machine is slower
            s1, s2 = float(w.sum()), float(iw.sum())
            q11, q12, q22 = float((w * w).sum()), float((w * iw).sum()), float((iw * iw).sum())
        else:
            a1 = psi[3] - psi[4]  # sum 1/(x+i)
            a2 = tri[4] - tri[3] if alpha > 0 else tri[3] - tri[4]  # sum 1/(x+i)^2
            s1 = a1 / alpha  # sum 1/(theta + i alpha)
            s2 = (m - x * a1) / alpha  # sum i/(theta + i alpha)
            q11 = a2 / alpha**2  # sum 1/(theta + i alpha)^2
            q12 = (a1 - x * a2) / alpha**2  # sum i/(theta + i alpha)^2
            q22 = (m - 2 * x * a1 + x * x * a2) / alpha**2  # sum i^2/(theta + i alpha)^2
        return (float(s1 - b1), float(s2 - c1),
                float(b2 - q11), float(-q12), float(-q12), float(-q22 - c2))

    return system


def _fit_pitman(sizes: np.ndarray, counts: np.ndarray, f1: int, f2: int, u: int,
                n: int) -> _PitmanFit:
    """Maximum-likelihood ``(theta, alpha)`` of Pitman's sampling formula, as ARX fits it:
    closed form first, its root verified with the plain sums, which are solved when the
    closed form finds no root or the check fails."""
    big, big_counts = sizes[sizes >= 2], counts[sizes >= 2].astype(np.float64)
    if big.size == 0:
        # every class unique: the alpha equation reads sum_i i / (theta + i alpha) = 0,
        # whose left side is positive wherever the likelihood is defined: no estimate
        return _PitmanFit(math.nan, math.nan, False)
    admissible = _pitman_domain(u)
    starts = [_pitman_start(f1, f2, u, n), *_ARX_STARTS]
    closed = _pitman_system(big, big_counts, u, n, plain=False)
    plain = _pitman_system(big, big_counts, u, n, plain=True)
    theta, alpha, ok = _newton(closed, starts, admissible)
    # the plain sums cost O(u) a step: a budget of terms (ARX's is 1 s of wall-clock time)
    budget = min(_STEPS_TOTAL, int(_PLAIN_SUM_WORK / u))
    if ok:
        check = _evaluate(plain, theta, alpha)
        if check is not None and abs(check[0]) <= _ACCURACY and abs(check[1]) <= _ACCURACY:
            return _PitmanFit(theta, alpha, True)
        # the closed form's root first: the plain sums then only polish it
        starts.insert(0, (theta, alpha))
        budget = max(budget, _PLAIN_SUM_STEPS)
    if budget < 1:
        return _PitmanFit(math.nan, math.nan, False)
    theta, alpha, ok = _newton(plain, starts, admissible, steps_total=budget)
    return _PitmanFit(theta, alpha, ok)


def _pitman_uniques(fit: _PitmanFit, big_n: float, u: int) -> float:
    """Hoshino's ``N^alpha Gamma(theta+1) / Gamma(theta+alpha)``, or nan without a fit.

    ``alpha < 0`` is the finite-classes branch of Pitman's family; Hoshino's large-``N``
    form still applies there, and ARX accepts it too."""
    from scipy import special  # (imported when used: scipy costs every command 0.1 s)
    theta, alpha = fit.theta, fit.alpha
    if not (fit.converged and _pitman_domain(u)(theta, alpha)):
        return math.nan
    log_value = (special.gammaln(theta + 1.0) - special.gammaln(theta + alpha)
                 + alpha * math.log(big_n))
    # more uniques than people: outside the model (and exp could overflow)
    return math.exp(log_value) if log_value <= math.log(big_n) else math.nan


# --------------------------------------------------------------------------- snb


def _shlosser(sizes: np.ndarray, counts: np.ndarray, f1: int, u: int, pi: float) -> float:
    """The Shlosser-type estimate ``Sh3`` (Haas & Stokes 1998) of the non-empty population
    classes ``K``: ``u + f_1 [sum i pi^2 (1-pi^2)^(i-1) f_i / sum (1-pi)^i ((1+pi)^i - 1) f_i]
    [sum (1-pi)^i f_i / sum i pi (1-pi)^(i-1) f_i]^2``."""
    i = sizes.astype(np.float64)
    c = counts.astype(np.float64)
    # (1 - x)^i as exp(i log1p(-x)): exact for small x, no overflow for large i
    keep = np.exp(i * np.log1p(-pi))  # (1 - pi)^i
    keep_sq = np.exp((i - 1) * np.log1p(-pi * pi))  # (1 - pi^2)^(i-1)
    keep_m1 = np.exp((i - 1) * np.log1p(-pi))  # (1 - pi)^(i-1)
    # (1 - pi)^i ((1 + pi)^i - 1): as written while (1 + pi)^i is small (no cancellation),
    # as (1 - pi^2)^i - (1 - pi)^i once it is large (no overflow)
    grow = i * np.log1p(pi)
    with np.errstate(over="ignore", invalid="ignore"):
        spread = np.where(grow < 50, keep * np.expm1(np.minimum(grow, 50)),
                          np.exp(i * np.log1p(-pi * pi)) - keep)
    first = np.dot(i * pi * pi * keep_sq, c) / np.dot(spread, c)
    second = np.dot(keep, c) / np.dot(i * pi * keep_m1, c)
    return float(u + f1 * first * second * second)


def _snb_system(k: float, pi: float, f1: int, f2: int) -> _System:
    """Residuals ``E f_1 - f_1``, ``E f_2 - f_2`` of the SNB model and their Jacobian in
    ``(alpha, beta)``."""

    def system(alpha: float, beta: float) -> _Value | None:
        if not (alpha > 0 and 0 < beta <= 1):
            return None
        q = (1 - pi) * (1 - beta)
        d = 1 - q  # = pi + beta (1 - pi) > 0
        lead = k * pi * beta**alpha * d ** (-alpha - 1)
        e1 = lead * (d + alpha * q)
        # d log E1 / d alpha, d log E1 / d beta  (dq/dbeta = -(1-pi), dd/dbeta = 1-pi)
        e1_a = e1 * (math.log(beta / d) + q / (d + alpha * q))
        e1_b = e1 * (alpha / beta - (alpha + 1) * (1 - pi) / d
                     + (1 - alpha) * (1 - pi) / (d + alpha * q))
        shape = 2 - (1 - alpha) * q
        p = k * pi * pi / 2 * alpha * beta**alpha * d ** (-alpha - 2) * shape  # E2 / (1-beta)
        e2 = p * (1 - beta)
        e2_a = e2 * (1 / alpha + math.log(beta / d) + q / shape)
        p_b = p * (alpha / beta - (alpha + 2) * (1 - pi) / d + (1 - alpha) * (1 - pi) / shape)
        e2_b = -p + (1 - beta) * p_b
        return e1 - f1, e2 - f2, e1_a, e1_b, e2_a, e2_b

    return system


def _snb(sizes: np.ndarray, counts: np.ndarray, f1: int, f2: int, u: int,
         pi: float, big_n: float) -> tuple[float, tuple[float, float]]:
    """SNB's number of population uniques (nan without a fit) and ``(alpha, beta)``."""
    k = _shlosser(sizes, counts, f1, u, pi)
    if not math.isfinite(k):
        return math.nan, (math.nan, math.nan)
    starts = [(1.0, 1.0), *_ARX_STARTS]
    alpha, beta, ok = _newton(_snb_system(k, pi, f1, f2), starts,
                              lambda a, b: a > 0 and 0 < b <= 1)
    if not ok:
        return math.nan, (alpha, beta)
    value = k * beta**alpha
    return (value if 0 <= value <= big_n else math.nan), (alpha, beta)


# --------------------------------------------------------------------------- public


def population_uniqueness(class_sizes: np.ndarray | Sequence[int],
                          sampling_fraction: float | None = None, *,
                          population_size: float | None = None,
                          model: Model = "dankar") -> PopulationUniqueness:
    """Estimated population uniques of a sample, from its class sizes.

    Args:
        class_sizes: records per equivalence class of the sample (one int >= 1 per class,
            any order), e.g. :attr:`CheckReport.class_sizes`.
        sampling_fraction: ``pi = n / N`` in ``(0, 1]``; or give ``population_size``.
        population_size: ``N``, the size of the population the sample was drawn from
            (at least the sample's ``n`` records).
        model: ``dankar`` (Dankar et al.'s choice among the others), ``pitman``,
            ``zayatz`` or ``snb``; see the module docstring.

    A fit that fails gives ``uniques = share = nan`` and ``converged=False``; ``dankar``
    always gives a figure (Zayatz needs no fit).
    """
    if model not in get_args(Model):
        raise InputError(f"unknown population model {model!r}: use one of "
                         f"{', '.join(get_args(Model))}")
    sizes, counts = size_frequencies(class_sizes)
    if float(np.dot(sizes.astype(np.float64), counts)) >= 2.0**62:
        raise InputError("class_sizes add up to more than 2^62 records; pass class sizes, "
                         "not some other count")
    n = int(np.dot(sizes, counts))
    pi, big_n = _sampling(n, sampling_fraction, population_size)
    u = int(counts.sum())
    f1 = int(counts[0]) if sizes.size and sizes[0] == 1 else 0
    f2 = int(counts[sizes == 2].sum())

    def result(uniques: float, used: Estimator, converged: bool,
               parameters: tuple[float, ...] = (), share: float | None = None
               ) -> PopulationUniqueness:
        if share is None:
            share = uniques / big_n if big_n > 0 else 0.0
        return PopulationUniqueness(float(uniques), float(share), used, converged, f1, f2, u,
                                    n, float(big_n), float(pi), parameters)

    if f1 == 0:
        return result(0.0, "exact", True)
    if pi >= 1.0:
        return result(float(f1), "exact", True)

    def zayatz() -> PopulationUniqueness:
        share = _zayatz(sizes, counts, f1, n, big_n)
        return result(share * big_n, "zayatz", True, share=share)

    def pitman() -> PopulationUniqueness:
        fit = _fit_pitman(sizes, counts, f1, f2, u, n)
        value = _pitman_uniques(fit, big_n, u)
        return result(value, "pitman", not math.isnan(value), (fit.theta, fit.alpha))

    def snb() -> PopulationUniqueness:
        value, params = _snb(sizes, counts, f1, f2, u, pi, big_n)
        return result(value, "snb", not math.isnan(value), params)

    if model == "zayatz":
        return zayatz()
    if model == "pitman":
        return pitman()
    if model == "snb":
        return snb()
    # Dankar et al.'s rule as ARX implements it: Pitman for small samples, else the smaller
    # of Zayatz and SNB (a tie goes to SNB); Zayatz whenever the fitted model fails
    if pi <= DANKAR_PITMAN_LIMIT:
        chosen = pitman()
        return chosen if _usable(chosen) else zayatz()
    by_zayatz, by_snb = zayatz(), snb()
    if _usable(by_snb) and by_snb.uniques <= by_zayatz.uniques:
        return by_snb
    return by_zayatz


def _usable(estimate: PopulationUniqueness) -> bool:
    """ARX's validity test: a finite, non-zero figure from a fit that converged."""
    return estimate.converged and math.isfinite(estimate.uniques) and estimate.uniques != 0
