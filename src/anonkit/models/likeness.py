"""Models that bound how far a class's sensitive distribution ``q`` may move from the
reference distribution ``p`` value by value: δ-disclosure privacy (Brickell & Shmatikov,
KDD 2008) and basic / enhanced β-likeness (Cao & Karras, VLDB 2012).

``p`` is :attr:`SensitiveAttribute.reference_counts` normalised (the whole table's), ``q``
a class's share of each value. Everything is computed on the sparse per-class histogram.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from anonkit.errors import InputError
from anonkit.models.base import Classes, PrivacyModel, ValueCounts, real_number

#: the values of ``DeltaDisclosure(absent_values=...)``, the default first
ABSENT_VALUES: tuple[str, ...] = ("ignore", "fail")


def _shares(classes: Classes, attribute: str | None) -> tuple[ValueCounts, np.ndarray,
                                                              np.ndarray]:
    """The sparse histogram and, per (class, value) entry present, q and p."""
    attr = classes.attribute(attribute)
    vc = classes.value_counts(attr.name)
    q = vc.count / classes.sizes[vc.class_index]
    p = (attr.reference_counts / max(int(attr.reference_counts.sum()), 1))[vc.value_code]
    return vc, q, p


class DeltaDisclosure(PrivacyModel):
    """δ-disclosure privacy: ``|ln(q_s / p_s)| < δ`` for every class and value ``s``.

    Level (lower is better): the largest ``|ln(q_s / p_s)|`` over the values present in the
    class; pass iff level < δ, *strictly*, as in Brickell & Shmatikov's definition (within
    float noise, equal fails).

    Values absent from a class are ignored by default (``absent_values="ignore"``), as
    pycanon does. Read literally, the paper's definition also covers them: ``q_s = 0``
    gives ``|ln 0| = inf``, so a class must contain every value of the table;
    ``absent_values="fail"`` gives that reading (level ``inf`` for such a class). Model
    text: ``delta=1.5`` and ``delta=1.5,absent=fail``.

    The level is a float log-ratio, so the comparison with δ has a relative tolerance of
    1e-9. No cross-release requirement: log-ratios of shares have no measure on
    intersected releases, so the cross-release audit checks δ-disclosure across releases
    only for exact disclosure (a single value left).

    Monotonic: declared False. With ``"ignore"`` a value present in one class only gets a
    smaller share in the union, and its log-ratio can cross -δ. (With ``"fail"`` the
    allowed set of ``q`` is convex, so merging is safe, but the flag stays conservative.)
    """

    name = "δ-disclosure privacy"
    measure = "δ"
    higher_is_better = False
    strict = True
    monotonic = False
    tolerance = 1e-9
    text_keys = ("delta", "δ")
    text_numbers = ("delta",)
    text_options: ClassVar[Mapping[str, tuple[str, ...]]] = {"absent": ABSENT_VALUES}

    def __init__(self, delta: float, attribute: str | None = None,
                 absent_values: str = "ignore") -> None:
        self.delta = real_number("δ", delta, 0.0, low_open=True)
        if absent_values not in ABSENT_VALUES:
            raise InputError(f"absent_values must be 'ignore' or 'fail', got "
                             f"{absent_values!r}")
        self.absent_values = absent_values
        self.attribute = attribute

    @property
    def threshold(self) -> float:
        return self.delta

    @property
    def parameters(self) -> dict[str, object]:
        params: dict[str, object] = {"delta": self.delta}
        if self.absent_values != "ignore":
            params["absent_values"] = self.absent_values
        return params

    @classmethod
    def from_text(cls, key: str, numbers: Sequence[float],
                  options: Mapping[str, str]) -> DeltaDisclosure:
        return cls(numbers[0], absent_values=options.get("absent", ABSENT_VALUES[0]))

    def text_option_values(self) -> dict[str, str]:
        return {"absent": self.absent_values}

    def levels(self, classes: Classes) -> np.ndarray:
        vc, q, p = _shares(classes, self.attribute)
        level = vc.per_class_max(np.abs(np.log(q / p)))
        if self.absent_values == "fail":
            attr = classes.attribute(self.attribute)
            n_values = int(np.count_nonzero(attr.reference_counts))
            level = np.where(classes.distinct_values(attr.name) < n_values, np.inf, level)
        return level


class BetaLikeness(PrivacyModel):
    """Basic β-likeness: ``(q_s - p_s) / p_s <= β`` for every value with ``q_s > p_s``.

    Level (lower is better): the largest relative gain ``(q_s - p_s) / p_s`` in the class
    (never negative: some value always has ``q_s >= p_s``); pass iff level <= β, as in Cao &
    Karras. This is pycanon's ``basic_beta_likeness`` per class. Monotonic: the condition is
    ``q_s <= (1 + β) p_s`` for all s, linear in ``q``, so it survives mixing two classes.

    The level is a float ratio of shares, so the comparison with β has a relative tolerance
    of 1e-9. No cross-release requirement: gains in shares have no measure on intersected
    releases, so the cross-release audit checks β-likeness (basic and enhanced) across
    releases only for exact disclosure (a single value left).
    """

    name = "basic β-likeness"
    measure = "β"
    higher_is_better = False
    monotonic = True
    tolerance = 1e-9
    text_keys = ("beta", "β", "basic-beta")
    text_numbers = ("beta",)

    def __init__(self, beta: float, attribute: str | None = None) -> None:
        self.beta = real_number("β", beta, 0.0, low_open=True)
        self.attribute = attribute

    @property
    def threshold(self) -> float:
        return self.beta

    @property
    def parameters(self) -> dict[str, object]:
        return {"beta": self.beta}

    def levels(self, classes: Classes) -> np.ndarray:
        vc, q, p = _shares(classes, self.attribute)
        return vc.per_class_max(np.maximum((q - p) / p, 0.0))


class EnhancedBetaLikeness(BetaLikeness):
    """Enhanced β-likeness (Cao & Karras): ``(q_s - p_s) / p_s <= min(β, -ln p_s)`` for every
    value with ``q_s > p_s``; the ``-ln p`` cap tightens the bound on frequent values so
    that a class can never make a value certain.

    Level (lower is better): per value, the gain scaled so that the value's own bound maps
    to β: ``β * gain / min(β, -ln p_s)``; the class's level is the largest. Where the cap
    does not bind this is the plain gain (so the level equals basic β-likeness's); pass iff
    level <= β, which is exactly the definition. The level depends on β when the cap
    binds: it reads "β-equivalent gain".

    pycanon's ``enhanced_beta_likeness`` returns ``min(basic β, max_s -ln p_s)`` instead,
    a different quantity (it is not the least β that passes); see the tests for where the
    two agree. Monotonic, compared with a tolerance and without a cross-release
    requirement, for the same reasons as basic β-likeness.
    """

    name = "enhanced β-likeness"
    text_keys = ("enhanced-beta", "enhanced-β")

    def levels(self, classes: Classes) -> np.ndarray:
        vc, q, p = _shares(classes, self.attribute)
        gain = np.maximum((q - p) / p, 0.0)
        bound = np.minimum(self.beta, -np.log(p))
        # gain > 0 implies p < 1, so bound > 0 wherever it matters
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = np.where(gain > 0, self.beta * gain / bound, 0.0)
        return vc.per_class_max(scaled)
