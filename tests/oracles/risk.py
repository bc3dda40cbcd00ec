"""Risk against a population, as the papers define it, by brute force over plain Python rows:
the oracle written releases with k-map, δ-presence, individual risk and population
uniqueness (Zayatz) are judged by. It reads released labels itself (numbers, ``[lo-hi]``
ranges of numbers, ``{a,b}`` sets of plain texts, a value alone) and never imports anonkit.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction

from scipy import stats

Row = tuple[str, ...]


Below = dict[str, set[str]] | None


def label_covers(label: str, value: object, below: set[str] | None = None) -> bool:
    """Does a released label stand for an original value? Numbers compare as numbers; a
    hierarchy node stands for the leaves ``below`` it."""
    text = str(value)
    if below is not None:
        return text in below
    if label.startswith("{") and label.endswith("}"):
        return text in label[1:-1].split(",")
    if label.startswith("[") and label.endswith("]"):
        low, high = label[1:-1].split("-")
        return float(low) <= float(text) <= float(high)
    try:
        return float(label) == float(text)
    except ValueError:
        return label == text


def classes(release: Sequence[Row]) -> Counter[Row]:
    """Released rows per class (rows with equal labels)."""
    return Counter(release)


def population_count(labels: Row, population: Sequence[Sequence[object]],
                     below: Below = None) -> int:
    """The population rows a class's labels cover, one QI at a time; ``below``: the leaves
    under each node of the last QI's hierarchy, when it is released as nodes."""
    def covers(i: int, label: str, value: object) -> bool:
        last = below is not None and i == len(labels) - 1
        return label_covers(label, value, below.get(label, {label}) if last else None)  # type: ignore[union-attr]
    return sum(all(covers(i, lab, v) for i, (lab, v) in enumerate(zip(labels, row,
                                                                           strict=True)))
               for row in population)


def k_map(k: int, release: Sequence[Row], population: Sequence[Sequence[object]],
          below: Below = None) -> bool:
    """Sweeney's k-map: every class covers at least k people of the population."""
    return all(population_count(c, population, below) >= k for c in classes(release))


def delta_presence(dmin: float, dmax: float, release: Sequence[Row],
                   population: Sequence[Sequence[object]], below: Below = None) -> bool:
    """Nergiz et al. 2007: δmin <= (class rows in the release) / (population rows covered)
    <= δmax for every class, the bounds as the decimals written; a class covering nobody
    fails."""
    low, high = Fraction(str(dmin)), Fraction(str(dmax))
    for labels, size in classes(release).items():
        people = population_count(labels, population, below)
        if people == 0 or not low <= Fraction(size, people) <= high:
            return False
    return True


def benedetti_franconi(f: int, people: float) -> float:
    """One record's risk in a class of f sample rows standing for ``people`` people."""
    if people <= f:
        return 1.0 / f
    p = f / people
    if f == 1:
        return p / (1 - p) * math.log(1 / p)
    if f == 2:
        return p / (1 - p) - (p / (1 - p)) ** 2 * math.log(1 / p)
    return p / (f - (1 - p))


def individual_risk(threshold: float, release: Sequence[Row],
                    weights: Sequence[float]) -> bool:
    """Every record's Benedetti-Franconi risk is at most the threshold (1e-9 relative)."""
    sizes = classes(release)
    people: dict[Row, float] = {}
    for row, weight in zip(release, weights, strict=True):
        people[row] = people.get(row, 0.0) + weight
    return all(benedetti_franconi(sizes[c], people[c]) <= threshold * (1 + 1e-9)
               for c in sizes)


def zayatz_share(sizes: Sequence[int], pi: float) -> float:
    """Zayatz (1991): the share of the population that is unique, from the sample's class
    sizes, with the hypergeometric P(f = 1 | F = j) summed over the sample's sizes j."""
    n = sum(sizes)
    big_n = round(n / pi)
    freq = Counter(sizes)
    f1 = freq.get(1, 0)
    if f1 == 0:
        return 0.0
    if pi >= 1:
        return f1 / big_n
    weights = {j: count * stats.hypergeom.pmf(1, big_n, j, n) for j, count in freq.items()}
    share_unique = weights[1] / sum(weights.values())
    return f1 * share_unique / pi / big_n


def population_uniqueness_zayatz(threshold: float, release: Sequence[Row], pi: float) -> bool:
    return zayatz_share(list(classes(release).values()), pi) <= threshold


def arx_derived_k(k: int, pi: float, n: int, significance: float = 0.01) -> int:
    """ARX's KMap with the Poisson estimator: the population count of a class is Poisson
    with mean pi * k; k' is one more than the number of counts summed until the cumulative
    probability reaches 1 - significance, at most k and n."""
    counter, value = 0, 0.0
    while value < 1 - significance:
        value = float(stats.poisson.cdf(counter, pi * k))
        counter += 1
    return min(k, n, counter + 1)


def k_map_estimated(k: int, release: Sequence[Row], pi: float) -> bool:
    needed = arx_derived_k(k, pi, len(release))
    return all(size >= needed for size in classes(release).values())
