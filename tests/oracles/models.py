"""Privacy models as their papers define them, one plain function per model over one class's
sensitive values (``values``) and the whole table's (``table``): the oracle a written
release is judged by. Exact where the definition is (counts, fractions); logarithms within a
relative 1e-9, the float noise of a sum of logs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction

Values = Sequence[str]


def _shares(values: Values) -> dict[str, Fraction]:
    return {v: Fraction(c, len(values)) for v, c in Counter(values).items()}


def k_anonymity(k: int) -> Callable[[Values, Values], bool]:
    """Sweeney: every class holds at least k rows."""
    return lambda values, table: len(values) >= k


def distinct_l(l: int) -> Callable[[Values, Values], bool]:  # noqa: E741
    """Machanavajjhala et al.: at least l distinct sensitive values."""
    return lambda values, table: len(set(values)) >= l


def entropy_l(l: float) -> Callable[[Values, Values], bool]:  # noqa: E741
    """Machanavajjhala et al.: -sum p log p >= log l."""
    def holds(values: Values, table: Values) -> bool:
        entropy = -sum(float(p) * math.log(p) for p in _shares(values).values())
        return entropy >= math.log(l) * (1 - 1e-9)
    return holds


def recursive_cl(c: float, l: int) -> Callable[[Values, Values], bool]:  # noqa: E741
    """Machanavajjhala et al.: r_1 < c (r_l + ... + r_m), counts in decreasing order (a class
    with fewer than l values fails)."""
    def holds(values: Values, table: Values) -> bool:
        r = sorted(Counter(values).values(), reverse=True)
        return len(r) >= l and r[0] < Fraction(c) * sum(r[l - 1:])
    return holds


def t_closeness_equal(t: float) -> Callable[[Values, Values], bool]:
    """Li et al., equal ground distance: EMD = half the L1 distance of the distributions."""
    def holds(values: Values, table: Values) -> bool:
        q, p = _shares(values), _shares(table)
        emd = sum(abs(q.get(v, Fraction(0)) - p[v]) for v in p) / 2
        return float(emd) <= t * (1 + 1e-9)
    return holds


def delta_disclosure(delta: float) -> Callable[[Values, Values], bool]:
    """Brickell & Shmatikov: |ln(q_s / p_s)| < δ for every value s of the table (an absent
    value gives ln 0: the class fails)."""
    def holds(values: Values, table: Values) -> bool:
        q, p = _shares(values), _shares(table)
        if set(q) != set(p):
            return False
        return all(abs(math.log(q[v] / p[v])) < delta * (1 - 1e-9) for v in p)
    return holds


def basic_beta(beta: float) -> Callable[[Values, Values], bool]:
    """Cao & Karras: (q_s - p_s) / p_s <= β for every value with q_s > p_s."""
    def holds(values: Values, table: Values) -> bool:
        q, p = _shares(values), _shares(table)
        return all(float((q[v] - p[v]) / p[v]) <= beta * (1 + 1e-9) for v in q if q[v] > p[v])
    return holds


def enhanced_beta(beta: float) -> Callable[[Values, Values], bool]:
    """Cao & Karras: (q_s - p_s) / p_s <= min(β, -ln p_s) for every value with q_s > p_s."""
    def holds(values: Values, table: Values) -> bool:
        q, p = _shares(values), _shares(table)
        return all(float((q[v] - p[v]) / p[v]) <= min(beta, -math.log(p[v])) * (1 + 1e-9)
                   for v in q if q[v] > p[v])
    return holds


def m_unique(m: int) -> Callable[[Values, Values], bool]:
    """Xiao & Tao, Definition 3: at least m rows, all with different sensitive values."""
    return lambda values, table: len(values) >= m and len(set(values)) == len(values)
