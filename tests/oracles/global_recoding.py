"""Full-domain global recoding by exhaustive search: every node of the lattice generalized
from the rows, grouped, judged and valued -- the oracle of ``anonkit``'s pruned search.

It imports nothing from anonkit: a hierarchy is a plain dict (value text -> its labels at
levels 1 .. top), the models are k-anonymity and distinct l-diversity written out here, and
each metric is computed per cell from its definition:

- loss: ``(distinct values under the cell's label - 1) / (distinct values - 1)``, the mean;
- precision: ``level / top level``, the mean;
- discernibility: sum of squared kept class sizes + suppressed rows * rows;
- non-uniform-entropy: ``log2(rows under the label / rows with the value)``, summed;
- average-class-size: rows / (kept classes + 1 if any row is suppressed);

a suppressed row counts as generalized to the top in every column (``*``, all rows).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

Hierarchy = Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class Column:
    """One quasi-identifier: per level, per row the code of its label, and per level the
    distinct values and the rows under each label."""

    codes: list[np.ndarray]
    values_under: list[np.ndarray]
    rows_under: list[np.ndarray]
    row_value_rows: np.ndarray  # per row, the rows sharing its value

    @property
    def height(self) -> int:
        return len(self.codes)


def column(values: Sequence[object], hierarchy: Hierarchy | None) -> Column:
    """A column's levels: its hierarchy's, or the value then ``*`` without one."""
    texts = [str(v) for v in values]
    height = 2 if hierarchy is None else 1 + len(next(iter(hierarchy.values())))
    codes, values_under, rows_under = [], [], []
    for level in range(height):
        if level == 0:
            labels = texts
        elif hierarchy is None:
            labels = ["*"] * len(texts)
        else:
            labels = [hierarchy[t][level - 1] for t in texts]
        frame = pd.DataFrame({"label": labels, "value": texts})
        code, uniques = pd.factorize(frame["label"])
        codes.append(code)
        per_label = frame.groupby("label")
        values_under.append(per_label["value"].nunique().reindex(uniques).to_numpy())
        rows_under.append(per_label.size().reindex(uniques).to_numpy())
    value_rows = pd.Series(texts).map(pd.Series(texts).value_counts()).to_numpy()
    return Column(codes, values_under, rows_under, value_rows)


@dataclass(frozen=True)
class Node:
    levels: tuple[int, ...]
    class_of_row: np.ndarray
    sizes: np.ndarray
    distinct: np.ndarray  # per class, distinct sensitive values


def nodes(columns: Sequence[Column], sensitive: Sequence[object]) -> Iterator[Node]:
    """Every node of the lattice with its classes, grouped from the rows."""
    sens_codes, _ = pd.factorize(pd.Series([str(v) for v in sensitive]))
    for levels in itertools.product(*(range(c.height) for c in columns)):
        key = np.zeros(len(sens_codes), dtype=np.int64)
        for c, level in zip(columns, levels, strict=True):
            key = key * (int(c.codes[level].max()) + 1) + c.codes[level]
        _, class_of_row, sizes = np.unique(key, return_inverse=True, return_counts=True)
        class_of_row = class_of_row.reshape(-1)
        pairs = np.unique(class_of_row.astype(np.int64) * (sens_codes.max() + 1) + sens_codes)
        distinct = np.bincount(pairs // (sens_codes.max() + 1), minlength=len(sizes))
        yield Node(levels, class_of_row, sizes, distinct)


def value(node: Node, columns: Sequence[Column], failing: np.ndarray, metric: str) -> float:
    """The metric at ``node`` with the rows of the ``failing`` classes suppressed."""
    sizes = node.sizes.astype(np.float64)
    n = float(sizes.sum())
    n_suppressed = float(sizes[failing].sum())
    if metric == "discernibility":
        return float((sizes[~failing] ** 2).sum() + n_suppressed * n)
    if metric == "average-class-size":
        return n / (int((~failing).sum()) + (1 if n_suppressed else 0))
    if metric == "precision":
        per_column = [(n - n_suppressed) * level / (c.height - 1) + n_suppressed
                      for c, level in zip(columns, node.levels, strict=True)]
        return sum(per_column) / (n * len(columns))
    suppressed_row = failing[node.class_of_row]
    total = 0.0
    for c, level in zip(columns, node.levels, strict=True):
        code = c.codes[level]
        if metric == "loss":
            domain = int(c.values_under[0].size)
            cell = (c.values_under[level][code] - 1) / (domain - 1) if domain > 1 \
                else np.zeros(len(code))
            cell = np.where(suppressed_row, 1.0, cell)
        else:  # non-uniform entropy
            cell = np.log2(c.rows_under[level][code] / c.row_value_rows)
            cell = np.where(suppressed_row, np.log2(n / c.row_value_rows), cell)
        total += float(cell.sum())
    return total if metric == "non-uniform-entropy" else total / (n * len(columns))


@dataclass(frozen=True)
class Best:
    value: float
    levels: tuple[int, ...]
    suppressed: int


#: a setting: (k, l, suppression limit as a share of rows)
Setting = tuple[int, int, float]


def optima(frame: pd.DataFrame, quasi_identifiers: Sequence[str], sensitive: str,
           hierarchies: Mapping[str, Hierarchy], settings: Sequence[Setting],
           metrics: Sequence[str]) -> dict[Setting, dict[str, Best | None]]:
    """Per setting and metric, the best qualifying node (None when no node qualifies):
    one sweep of the whole lattice for all of them."""
    columns = [column(frame[q].tolist(), hierarchies.get(q)) for q in quasi_identifiers]
    n = len(frame)
    best: dict[Setting, dict[str, Best | None]] = {s: {m: None for m in metrics}
                                                   for s in settings}
    for node in nodes(columns, frame[sensitive].tolist()):
        for setting in settings:
            k, l, limit = setting  # noqa: E741
            failing = (node.sizes < k) | (node.distinct < l)
            suppressed = int(node.sizes[failing].sum())
            if suppressed > limit * n + 1e-9:
                continue
            for metric in metrics:
                v = value(node, columns, failing, metric)
                held = best[setting][metric]
                if held is None or v < held.value:
                    best[setting][metric] = Best(v, node.levels, suppressed)
    return best


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


# -- the risk models (issue 24), written out from their definitions ---------------------


def labels_at(values: Sequence[object], hierarchy: Hierarchy | None, level: int) -> list[str]:
    """Each value's label at ``level``: itself, its hierarchy's label, or ``*`` above it."""
    texts = [str(v) for v in values]
    if level == 0:
        return texts
    if hierarchy is None:
        return ["*"] * len(texts)
    return [hierarchy[t][level - 1] for t in texts]


def benedetti_franconi(f: float, people: float) -> float:
    """A record's risk in a class of ``f`` sample rows standing for ``people`` people."""
    p = f / people
    if p >= 1.0:
        return 1.0 / f
    if f == 1:
        return p / (1 - p) * math.log(1 / p)
    if f == 2:
        return p / (1 - p) - (p / (1 - p)) ** 2 * math.log(1 / p)
    return p / (f - (1 - p))


@dataclass(frozen=True)
class Risk:
    """The risk models a node is judged by (each optional): k-map against a population
    table, δ-presence against it, individual risk with survey weights."""

    population: pd.DataFrame | None = None
    k_map: int | None = None
    delta: tuple[float, float] | None = None
    weights: Sequence[float] | None = None
    risk: float | None = None


def risk_optimum(frame: pd.DataFrame, quasi_identifiers: Sequence[str],
                 hierarchies: Mapping[str, Hierarchy], risk: Risk, limit: float,
                 metric: str) -> Best | None:
    """The best node under ``risk``'s models with at most ``limit`` of the rows suppressed
    (the rows of every class that breaks a model), by sweeping the whole lattice."""
    columns = [column(frame[q].tolist(), hierarchies.get(q)) for q in quasi_identifiers]
    n = len(frame)
    best: Best | None = None
    for node in nodes(columns, ["s"] * n):
        _, first = np.unique(node.class_of_row, return_index=True)
        class_labels = [tuple(labels_at([frame[q].iloc[r]], hierarchies.get(q), level)[0]
                              for q, level in zip(quasi_identifiers, node.levels, strict=True))
                        for r in first]
        failing = np.zeros(len(node.sizes), dtype=bool)
        if risk.population is not None:
            people = pd.Series(list(zip(*(labels_at(risk.population[q].tolist(),
                                                     hierarchies.get(q), level)
                                           for q, level in zip(quasi_identifiers, node.levels,
                                                               strict=True)),
                                        strict=True))).value_counts()
            covered = np.array([int(people.get(labels, 0)) for labels in class_labels])
            if risk.k_map is not None:
                failing |= covered < risk.k_map
            if risk.delta is not None:
                low, high = risk.delta
                share = np.where(covered > 0, node.sizes / np.maximum(covered, 1), np.inf)
                failing |= (share < low) | (share > high)
        if risk.risk is not None:
            assert risk.weights is not None
            people_of = np.bincount(node.class_of_row, weights=np.asarray(risk.weights),
                                    minlength=len(node.sizes))
            per_class = np.array([benedetti_franconi(float(f), float(w))
                                  for f, w in zip(node.sizes, people_of, strict=True)])
            failing |= per_class > risk.risk * (1 + 1e-9)
        suppressed = int(node.sizes[failing].sum())
        if suppressed > limit * n + 1e-9:
            continue
        v = value(node, columns, failing, metric)
        if best is None or v < best.value:
            best = Best(v, node.levels, suppressed)
    return best
