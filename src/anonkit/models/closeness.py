"""t-closeness (Li, Li, Venkatasubramanian, ICDE 2007) with its three ground distances.

A class's level is the Earth Mover's Distance between its sensitive distribution ``Q`` and
the reference distribution ``P`` (the whole table's: :attr:`SensitiveAttribute.
reference_counts`, also when an algorithm evaluates a part of the table). Pass iff
EMD <= t (the paper's "no more than t").

The EMDs are computed from the sparse per-class histograms with closed forms, so the work
is proportional to the number of (class, value) pairs present, never to
``n_classes * n_values``:

* equal distance: EMD = total variation = sum over values of ``max(0, q_i - p_i)``; only
  values present in the class can have ``q_i > p_i``.
* ordered distance: ``(1/(m-1)) * sum_i |sum_{j<=i} (q_j - p_j)|`` over the ``m`` values of
  the domain in order. Between two consecutive values present in a class the class's
  cumulative ``Q`` is constant and ``P``'s cumulative is non-decreasing, so each such run
  is summed in O(1) from prefix sums of ``P``'s cumulative after one ``searchsorted``.
* hierarchical distance: ``sum_N height(N)/H * min(pos_extra(N), neg_extra(N))`` over the
  inner nodes of the hierarchy. Since ``pos_extra - neg_extra = extra(N)``,
  ``min(pos, neg) = pos_extra(N) - max(0, extra(N))``, and only children the class touches
  can have positive extra — so again only the (class, node) pairs present matter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

from anonkit.errors import InputError
from anonkit.models.base import (
    Classes,
    PrivacyModel,
    SensitiveAttribute,
    ValueCounts,
    exact_number,
    real_number,
)

Distance = Literal["auto", "equal", "ordered", "hierarchical"]
DISTANCES: tuple[str, ...] = ("auto", "equal", "ordered", "hierarchical")


class TCloseness(PrivacyModel):
    """Every class's sensitive distribution is within EMD ``t`` of the reference one.

    ``distance``: ``"equal"`` (every two values at distance 1: categorical data),
    ``"ordered"`` (values at rank distance ``|i - j| / (m - 1)``: numeric, ordinal, date),
    ``"hierarchical"`` (Li et al.'s tree distance: the height of the lowest common ancestor
    over the tree height; needs a hierarchy on the attribute), or ``"auto"``: hierarchical
    when the attribute has a hierarchy, else ordered for ordered kinds (numeric, ordinal,
    date), else equal.

    The ordered domain is the reference distribution's support (plus any value a class
    holds outside it), in code order, which is value order; a missing value sorts last.
    This matches pycanon, whose domain is the distinct values of the table. With a single
    value in the domain every class has EMD 0.

    Monotonic (declared True): with a fixed reference distribution every EMD here is a
    transport cost under a fixed ground metric, hence convex in ``Q``; the union of two
    classes has the size-weighted mixture of their distributions, so its EMD is at most the
    larger of the two. This is Li et al.'s own "generalization property" (Section 4.3). It
    would not hold if the reference were recomputed on each part of a table — which is
    why :class:`SensitiveAttribute` keeps the whole table's reference counts.

    The EMD is a float sum, so the comparison with t has a relative tolerance of 1e-9.
    No cross-release requirement: a distance to the reference distribution has no measure
    on intersected releases, so the cross-release audit checks t-closeness across
    releases only for exact disclosure (a single value left).

    Model text: ``t=0.2`` (distance ``auto``), ``t-equal=``, ``t-ordered=``,
    ``t-hierarchical=``.
    """

    name = "t-closeness"
    measure = "EMD"
    higher_is_better = False
    monotonic = True
    tolerance = 1e-9
    text_keys = ("t", "t-equal", "t-ordered", "t-hierarchical")
    text_numbers = ("t",)

    def __init__(self, t: float, distance: Distance | str = "auto",
                 attribute: str | None = None) -> None:
        self.t = real_number("t", t, 0.0, 1.0)
        if distance not in DISTANCES:
            raise InputError(f"t-closeness distance must be one of {', '.join(DISTANCES)}; "
                             f"got {distance!r}")
        self.distance: str = distance
        self.attribute = attribute

    @property
    def threshold(self) -> float:
        return self.t

    @property
    def parameters(self) -> dict[str, object]:
        return {"t": self.t, "distance": self.distance}

    @classmethod
    def from_text(cls, key: str, numbers: Sequence[float],
                  options: Mapping[str, str]) -> TCloseness:
        # the key names the distance: t-ordered=0.2 is TCloseness(0.2, "ordered")
        return cls(numbers[0], "auto" if key == "t" else key.removeprefix("t-"))

    def spec(self) -> str:
        key = "t" if self.distance == "auto" else f"t-{self.distance}"
        return f"{key}={exact_number(self.t)}"

    def resolved_distance(self, attribute: SensitiveAttribute) -> str:
        """The ground distance used for ``attribute`` (resolves ``"auto"``)."""
        if self.distance != "auto":
            return self.distance
        if attribute.hierarchy is not None and attribute.hierarchy_leaf is not None:
            return "hierarchical"
        return "ordered" if attribute.kind.is_ordered else "equal"

    def check_attribute(self, attribute: SensitiveAttribute) -> None:
        if self.resolved_distance(attribute) == "hierarchical" and (
                attribute.hierarchy is None or attribute.hierarchy_leaf is None):
            raise InputError(f"t-closeness with the hierarchical distance needs a hierarchy "
                             f"for {attribute.name!r}; give one, or use distance='equal' / "
                             f"'ordered'")

    def levels(self, classes: Classes) -> np.ndarray:
        attr = classes.attribute(self.attribute)
        self.check_attribute(attr)
        vc = classes.value_counts(attr.name)
        sizes = classes.sizes
        p = attr.reference_counts / max(int(attr.reference_counts.sum()), 1)
        q = vc.count / sizes[vc.class_index]
        distance = self.resolved_distance(attr)
        if distance == "equal":
            return vc.per_class_sum(np.maximum(q - p[vc.value_code], 0.0))
        if distance == "ordered":
            return ordered_emd(vc, sizes, attr.reference_counts)
        return hierarchical_emd(vc, q, p, attr)

    def details(self, classes: Classes, levels: np.ndarray, worst: int) -> dict[str, object]:
        return {"distance": self.resolved_distance(classes.attribute(self.attribute))}


def ordered_emd(vc: ValueCounts, sizes: np.ndarray, reference_counts: np.ndarray) -> np.ndarray:
    """Per class, Li et al.'s ordered-distance EMD to the reference distribution."""
    present = np.bincount(vc.value_code, minlength=len(reference_counts)) > 0
    in_domain = (reference_counts > 0) | present
    m = int(in_domain.sum())
    n_classes = vc.n_classes
    if m <= 1:
        return np.zeros(n_classes)
    rank_of_code = np.cumsum(in_domain) - 1
    p = reference_counts[in_domain] / reference_counts.sum()
    p_cum = np.cumsum(p)  # P(i): reference mass at ranks <= i
    s = np.concatenate(([0.0], np.cumsum(p_cum)))  # s[i] = P(0) + ... + P(i-1)

    rank = rank_of_code[vc.value_code]
    # the class's cumulative mass Q after each of its entries, exactly in integers first
    cum = np.cumsum(vc.count)
    before = np.concatenate(([0], cum))[vc.starts][vc.class_index]
    q_cum = (cum - before) / sizes[vc.class_index]
    # each entry's run of ranks [rank, next rank of the same class, or m)
    last = np.ones(len(rank), dtype=bool)
    last[:-1] = vc.class_index[1:] != vc.class_index[:-1]
    end = np.where(last, m, np.roll(rank, -1))
    split = np.clip(np.searchsorted(p_cum, q_cum, side="left"), rank, end)
    run = (q_cum * (split - rank) - (s[split] - s[rank])
           + (s[end] - s[split]) - q_cum * (end - split))
    total = np.bincount(vc.class_index, weights=run, minlength=n_classes)
    # ranks before the class's first value: Q = 0 there, so |Q - P| = P
    total += s[rank[vc.starts]]
    return np.maximum(total, 0.0) / (m - 1)


def hierarchical_emd(vc: ValueCounts, q: np.ndarray, p: np.ndarray,
                     attr: SensitiveAttribute) -> np.ndarray:
    """Per class, Li et al.'s hierarchical-distance EMD to the reference distribution.

    A value outside the hierarchy (the missing value) hangs below the root on a branch of
    its own, at distance 1 from every other value.
    """
    hierarchy = attr.hierarchy
    leaf_of_code = attr.hierarchy_leaf
    assert hierarchy is not None and leaf_of_code is not None
    tree_height = hierarchy.height - 1
    n_classes = vc.n_classes
    if tree_height <= 0:
        return np.zeros(n_classes)
    known = leaf_of_code >= 0
    safe_leaf = np.where(known, leaf_of_code, 0)

    def nodes_of_codes(level: int) -> tuple[np.ndarray, int]:
        ids = hierarchy.node_ids[:, level]
        n_nodes = int(ids.max()) + 1
        if level == tree_height:
            return np.zeros(len(leaf_of_code), dtype=np.int64), 1
        return np.where(known, ids[safe_leaf], n_nodes).astype(np.int64), n_nodes + 1

    cost = np.zeros(n_classes)
    child, n_child = nodes_of_codes(0)
    for level in range(1, tree_height + 1):
        parent, n_parent = nodes_of_codes(level)
        # (class, child node) pairs present, with the class's mass Q and extra = Q - P
        keys, first, inverse = np.unique(vc.class_index * n_child + child[vc.value_code],
                                         return_index=True, return_inverse=True)
        q_child = np.bincount(inverse.reshape(-1), weights=q, minlength=len(keys))
        p_child = np.bincount(child, weights=p, minlength=n_child)
        pos = np.maximum(q_child - p_child[keys % n_child], 0.0)
        # aggregate to (class, parent node)
        pair_class = keys // n_child
        pair_parent = parent[vc.value_code[first]]
        pkeys, pinv = np.unique(pair_class * n_parent + pair_parent, return_inverse=True)
        pinv = pinv.reshape(-1)
        pos_extra = np.bincount(pinv, weights=pos, minlength=len(pkeys))
        q_parent = np.bincount(pinv, weights=q_child, minlength=len(pkeys))
        p_parent = np.bincount(parent, weights=p, minlength=n_parent)
        extra = q_parent - p_parent[pkeys % n_parent]
        moved = np.maximum(pos_extra - np.maximum(extra, 0.0), 0.0)
        cost += np.bincount(pkeys // n_parent, weights=moved * (level / tree_height),
                            minlength=n_classes)
        child, n_child = parent, n_parent
    return cost
