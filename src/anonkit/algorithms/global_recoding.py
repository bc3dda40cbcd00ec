"""Full-domain global recoding with a suppression limit: the optimal node of the
generalization lattice (Samarati 2001; LeFevre et al.'s Incognito; Kohlmayer et al.'s Flash,
2012, as ARX runs it).

Each quasi-identifier ``j`` is generalized to one level ``L_j`` of its hierarchy for the
whole table; the level vectors form a lattice, a node's *successors* each raise one level by
one. At a node, the rows of every class that breaks a model are suppressed; the node
*qualifies* when the suppressed rows are at most the limit (the other classes meet every
model). The search returns the qualifying node with the least value of a utility metric
(:mod:`anonkit.algorithms.recoding_metrics`); ties go to the node with the lower levels.

The search is branch and bound over the nodes in order of a lower bound of the metric
that needs no data (the metric without suppression for ``loss``, ``precision`` and
``non-uniform-entropy``, which a suppressed row only raises; for ``discernibility`` and
``average-class-size``, what the node's number of possible classes allows); it stops at
the first bound no better than the best value found. A node reached is classified, and
judged, with these prunings:

- *Predictive tagging* (Flash's strategy). A model that is monotone -- for a limit of 0:
  the union of two classes that meet it meets it (``PrivacyModel.monotonic``); with
  suppression: a class holding a class that meets it meets it too
  (``PrivacyModel.monotonic_with_suppression``) -- makes qualification monotone: every
  generalization of a qualifying node qualifies, every specialization of a failing one
  fails. From an unclassified node a path of unclassified successors is walked to the top
  and searched for its lowest qualifying node; each check *tags* the up-set (qualifies)
  or the down-set (fails) of its node. The monotone models alone tag; a node that passes
  them is checked against the others on its own (a model that is not monotone does not
  prune).
- *Pair projections*. A class of two columns at their levels smaller than the least
  class size the models allow holds only such classes at every node with those levels:
  its rows are suppressed there. A node whose pairs force more rows than the limit fails
  unchecked, and the rows forced raise its bound.
- *Sharper bounds*. The rows a checked qualifying node suppresses are suppressed at every
  specialization, at no less cost; a checked node's value without suppression bounds
  every generalization's discernibility and average class size.

A node's *frequency set* -- its distinct generalized tuples with their row counts -- is
rolled up from the smallest frequency set of a specialization already computed (a compiled
kernel, ``_recoding_c``), never recounted from the rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from anonkit.algorithms import _recoding_c
from anonkit.algorithms.recoding_metrics import (
    SEPARABLE,
    LevelCounts,
    MetricTables,
    check_metric,
    class_metric,
    metric_tables,
)
from anonkit.errors import InputError
from anonkit.models.base import (
    Classes,
    KAnonymity,
    PrivacyModel,
    SensitiveAttribute,
    ValueCounts,
)

#: how many frequency sets are kept for roll-ups (besides the bottom's), and how many
#: groups they may hold together, in multiples of the bottom's
CACHE_SETS = 256
CACHE_GROUPS = 8


@dataclass(frozen=True)
class ColumnLattice:
    """One quasi-identifier's levels: ``maps[L][code]`` is the node at level ``L`` of the
    value with encoded code ``code`` (nodes numbered 0 .. ``cardinalities[L] - 1``; level 0
    is the value itself)."""

    name: str
    maps: tuple[np.ndarray, ...]

    @property
    def height(self) -> int:
        return len(self.maps)

    @cached_property
    def widths(self) -> tuple[int, ...]:
        """Per level, its number of nodes."""
        return tuple(int(m.max()) + 1 if len(m) else 0 for m in self.maps)

    @cached_property
    def steps(self) -> tuple[tuple[np.ndarray, ...], ...]:
        """``steps[low][high]``: per node at level ``low``, its ancestor at level ``high``
        (for ``high >= low``; empty below)."""
        out = []
        for low in range(self.height):
            width = int(self.maps[low].max()) + 1 if len(self.maps[low]) else 0
            row = []
            for high in range(self.height):
                step = np.zeros(width if high >= low else 0, dtype=np.int32)
                if high >= low:
                    step[self.maps[low]] = self.maps[high]
                row.append(step)
            out.append(tuple(row))
        return tuple(out)


@dataclass
class LatticeStats:
    """What the search did, each node counted once among ``checked`` (its frequency set
    computed and the models evaluated on it), ``tagged`` (known to qualify by predictive
    tagging, never checked) and ``pruned`` (never checked: tagged as failing, or excluded
    by the utility bound); ``qualifying``: the nodes known to qualify; ``valued``: those
    whose metric was computed."""

    nodes: int = 0
    checked: int = 0
    tagged: int = 0
    pruned: int = 0
    qualifying: int = 0
    valued: int = 0
    rolled_up: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"nodes": self.nodes, "checked": self.checked, "tagged": self.tagged,
                "pruned": self.pruned, "qualifying": self.qualifying, "valued": self.valued}


@dataclass(frozen=True)
class RecodingResult:
    """The chosen node: its ``levels`` (one per quasi-identifier), ``value`` under the
    metric, per row its class at the node (``row_class``) and per class whether its rows
    are suppressed (``suppressed_class``), with the classes' sizes and codes."""

    levels: tuple[int, ...]
    value: float
    metric: str
    row_class: np.ndarray
    class_codes: np.ndarray
    class_sizes: np.ndarray
    suppressed_class: np.ndarray
    stats: LatticeStats

    @property
    def suppressed_rows(self) -> int:
        return int(self.class_sizes[self.suppressed_class].sum())


@dataclass
class FrequencySet:
    """A node's distinct generalized tuples (``codes``) and their rows (``counts``);
    ``parent`` / ``group_of`` lead back to the bottom's groups (for sensitive values)."""

    levels: tuple[int, ...]
    codes: np.ndarray
    counts: np.ndarray
    parent: FrequencySet | None = None
    group_of: np.ndarray | None = None
    _of_bottom: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_groups(self) -> int:
        return len(self.counts)

    def of_bottom(self) -> np.ndarray:
        """Per bottom group, its group here."""
        if self._of_bottom is None:
            if self.parent is None:
                self._of_bottom = np.arange(self.n_groups, dtype=np.int64)
            else:
                assert self.group_of is not None
                self._of_bottom = self.group_of[self.parent.of_bottom()].astype(np.int64)
        return self._of_bottom


class GroupedClasses(Classes):
    """The classes of a frequency set, for the models: sizes are the groups' counts, each
    sensitive attribute's value counts are summed from the bottom groups' (no row is
    touched)."""

    def __init__(self, counts: np.ndarray, of_bottom: np.ndarray | None,
                 bottom_values: dict[str, ValueCounts],
                 sensitive: Sequence[SensitiveAttribute]) -> None:
        super().__init__(np.zeros(0, dtype=np.int64), len(counts), sensitive)
        self.n_classes = len(counts)  # no row ids: the classes are the groups
        self.__dict__["sizes"] = counts
        self._of_bottom = of_bottom
        self._bottom_values = bottom_values

    def value_counts(self, name: str | None = None) -> ValueCounts:
        attr = self.attribute(name)
        if attr.name not in self._counts:
            bottom = self._bottom_values[attr.name]
            assert self._of_bottom is not None
            classes = self._of_bottom[bottom.class_index]
            keys = classes * attr.n_values + bottom.value_code
            cells = self.n_classes * max(attr.n_values, 1)
            if cells <= 4 * len(keys) + 1024:  # a dense count beats sorting
                dense = np.bincount(keys, weights=bottom.count, minlength=cells)
                unique = np.flatnonzero(dense)
                counts = dense[unique].astype(np.int64)
            else:
                unique, inverse = np.unique(keys, return_inverse=True)
                counts = np.bincount(inverse.reshape(-1),
                                     weights=bottom.count).astype(np.int64)
            self._counts[attr.name] = ValueCounts(unique // attr.n_values,
                                                  unique % attr.n_values, counts,
                                                  self.n_classes)
        return self._counts[attr.name]


def rollup(source: FrequencySet, columns: Sequence[ColumnLattice],
           levels: tuple[int, ...]) -> FrequencySet:
    """The frequency set at ``levels`` (each at least ``source``'s), from ``source``'s."""
    steps = [columns[j].steps[source.levels[j]][levels[j]] for j in range(len(columns))]
    maps = np.concatenate(steps)
    offsets = np.zeros(len(steps), dtype=np.int64)
    np.cumsum([len(s) for s in steps[:-1]], out=offsets[1:])
    g, d = source.codes.shape
    codes = np.empty((g, d), dtype=np.int32)
    counts = np.empty(g, dtype=np.int64)
    group_of = np.empty(g, dtype=np.int32)
    strides = key_strides([columns[j].widths[levels[j]] for j in range(d)])
    if strides is not None:
        n = _recoding_c.rollup_keyed(source.codes, d, source.counts, maps, offsets, strides,
                                     codes, counts, group_of)
    else:
        n = _recoding_c.rollup(source.codes, d, source.counts, maps, offsets, codes, counts,
                               group_of)
    return FrequencySet(levels, codes[:n].copy(), counts[:n].copy(), source, group_of)


def key_strides(widths: Sequence[int]) -> np.ndarray | None:
    """Mixed-radix strides that make a tuple of codes below ``widths`` one int64 key, or
    None when the tuples do not fit."""
    strides = np.ones(len(widths), dtype=np.int64)
    span = 1
    for j in range(len(widths) - 1, -1, -1):
        strides[j] = span
        span *= max(int(widths[j]), 1)
        if span >= 2**62:
            return None
    return strides


def group_rows_of(qi_codes: np.ndarray) -> FrequencySet:
    """The bottom frequency set (every column at level 0) of the encoded rows, with per row
    its group in ``group_of``."""
    n, d = qi_codes.shape
    codes_in = np.ascontiguousarray(qi_codes, dtype=np.int32)
    cards = codes_in.max(axis=0) + 1 if n else np.zeros(d, dtype=np.int32)
    maps = np.concatenate([np.arange(c, dtype=np.int32) for c in cards])
    offsets = np.concatenate([[0], np.cumsum(cards)[:-1]]).astype(np.int64)
    codes = np.empty((n, d), dtype=np.int32)
    counts = np.empty(n, dtype=np.int64)
    group_of = np.empty(n, dtype=np.int32)
    g = _recoding_c.rollup(codes_in, d, np.zeros(0, dtype=np.int64), maps, offsets, codes,
                           counts, group_of)
    return FrequencySet((0,) * d, codes[:g].copy(), counts[:g].copy(), None, group_of)


class Lattice:
    """The nodes (level vectors, mixed-radix numbered) and their up- and down-sets."""

    def __init__(self, heights: Sequence[int]) -> None:
        self.heights = np.asarray(heights, dtype=np.int64)
        self.d = len(heights)
        self.size = int(np.prod(self.heights))
        self.strides = np.ones(self.d, dtype=np.int64)
        for j in range(self.d - 2, -1, -1):
            self.strides[j] = self.strides[j + 1] * self.heights[j + 1]
        grid = np.indices(tuple(int(h) for h in heights)).reshape(self.d, -1).T
        self.levels = np.ascontiguousarray(grid, dtype=np.int64)
        self.level_sum = self.levels.sum(axis=1)
        # per column and level: which nodes are at least / at most that level
        self._at_least = [[self.levels[:, j] >= lv for lv in range(int(h))]
                          for j, h in enumerate(heights)]
        self._at_most = [[self.levels[:, j] <= lv for lv in range(int(h))]
                         for j, h in enumerate(heights)]

    def up_set(self, node: int) -> np.ndarray:
        out = np.ones(self.size, dtype=bool)
        for j, lv in enumerate(self.levels[node]):
            if lv:
                out &= self._at_least[j][lv]
        return out

    def down_set(self, node: int) -> np.ndarray:
        out = np.ones(self.size, dtype=bool)
        for j, lv in enumerate(self.levels[node]):
            if lv < self.heights[j] - 1:
                out &= self._at_most[j][lv]
        return out

    def successors(self, node: int) -> list[int]:
        lv = self.levels[node]
        return [node + int(self.strides[j]) for j in range(self.d)
                if lv[j] < self.heights[j] - 1]

    def predecessors(self, node: int) -> list[int]:
        lv = self.levels[node]
        return [node - int(self.strides[j]) for j in range(self.d) if lv[j] > 0]


def monotone_models(models: Sequence[PrivacyModel], suppression: bool) -> list[PrivacyModel]:
    """The models whose qualification the search may propagate: monotone under
    generalization, and under suppression too when rows may be suppressed."""
    return [m for m in models if m.monotonic and
            (not suppression or m.monotonic_with_suppression)]


class _Search:
    def __init__(self, columns: Sequence[ColumnLattice], qi_codes: np.ndarray,
                 sensitive: Sequence[SensitiveAttribute], models: Sequence[PrivacyModel],
                 suppression_limit: float, metric: str, level_counts: Sequence[LevelCounts]
                 ) -> None:
        self.columns = list(columns)
        self.n_rows = len(qi_codes)
        self.models = list(models)
        self.sensitive = list(sensitive)
        self.max_suppressed = int(np.floor(suppression_limit * self.n_rows + 1e-9))
        self.metric = metric
        self.lattice = Lattice([c.height for c in columns])
        self.stats = LatticeStats(nodes=self.lattice.size)
        self.bottom = group_rows_of(np.stack(
            [c.maps[0][qi_codes[:, j]] for j, c in enumerate(columns)], axis=1))
        self.row_group = self.bottom.group_of
        assert self.row_group is not None
        self.bottom.group_of = None
        self.bottom_values = {
            s.name: Classes(self.row_group.astype(np.int64), self.bottom.n_groups,
                            [s]).value_counts(s.name)
            for s in sensitive if any(m.needs_sensitive for m in models)}
        monotone = monotone_models(models, self.max_suppressed > 0)
        #: the least class size when k-anonymity is the only model (checked from the
        #: counts alone)
        self.class_size = max(m.min_class_size() for m in models) \
            if models and all(type(m) is KAnonymity for m in models) else None
        self.tagging = monotone
        self.others = [m for m in models if not any(m is t for t in monotone)]
        self.tables: MetricTables | None = metric_tables(metric, level_counts, self.n_rows) \
            if metric in SEPARABLE else None
        # per node: 1 passes the monotone models (tagged or checked), -1 fails, 0 unknown
        self.mono = np.zeros(self.lattice.size, dtype=np.int8)
        # per node: 1 qualifies, -1 does not, 0 unknown
        self.full = np.zeros(self.lattice.size, dtype=np.int8)
        self.checked = np.zeros(self.lattice.size, dtype=bool)
        self.value = np.full(self.lattice.size, np.nan)
        # per node, the least its suppressed rows add to the metric (the penalty of a
        # checked generalization): bound + floor is a sharper bound; for discernibility
        # and average class size, the least value (that of a checked specialization)
        self.floor = np.zeros(self.lattice.size)
        # and the rows it suppresses at least, each adding at least ``gap``
        self.floor_rows = np.zeros(self.lattice.size, dtype=np.int64)
        self.gap = np.zeros(self.lattice.size) if self.tables is None \
            else self.tables.suppression_gap(self.lattice.levels)
        # per node, the most classes it can have (the product of its levels' widths)
        self.widths = np.ones(self.lattice.size)
        for j, column in enumerate(columns):
            self.widths *= np.asarray(column.widths, dtype=np.float64)[self.lattice.levels[:, j]]
        #: no class may be smaller than this
        self.least = max((m.min_class_size() for m in models), default=1)
        self.bound = self.tables.bound(self.lattice.levels) if self.tables is not None \
            else self.class_bound()
        self.cache: dict[int, FrequencySet] = {0: self.bottom}
        self.cache_order: list[int] = []
        self.cached_groups = 0
        # the cache as arrays, to find a roll-up's source in one pass: per slot the levels
        # and groups of the set it holds (slot 0: the bottom, never dropped)
        self.slot_sets: list[FrequencySet | None] = [self.bottom] + [None] * CACHE_SETS
        self.slot_levels = np.full((CACHE_SETS + 1, self.lattice.d), np.iinfo(np.int64).max)
        self.slot_levels[0] = 0
        self.slot_groups = np.full(CACHE_SETS + 1, np.inf)
        self.slot_groups[0] = self.bottom.n_groups
        self.slot_of: dict[int, int] = {}
        self.free_slots = list(range(CACHE_SETS, 0, -1))
        self.suppressed_of: dict[int, np.ndarray] = {}
        self.projection_floors()

    def class_bound(self) -> np.ndarray:
        """A bound of ``discernibility`` or ``average-class-size`` for every node from
        its number of possible classes alone (n rows in at most c classes: sum of
        squares at least n * n / c)."""
        classes = np.minimum(self.widths, self.n_rows)
        if self.metric == "discernibility":
            return float(self.n_rows) * self.n_rows / classes
        return self.n_rows / (np.minimum(classes, self.n_rows // self.least) + 1)

    def projection_floors(self) -> None:
        """Floors from the classes of every pair of columns: a class smaller than the
        least size the models allow at a pair's levels holds only classes that small at
        every node with those levels, so its rows are suppressed there. A node whose floor
        passes the limit fails unchecked (and is counted pruned)."""
        least = self.least
        d = self.lattice.d
        if least <= 1 or d < 2:
            return
        levels = self.lattice.levels
        # with no suppression allowed only the rows matter: a suppressed row fails the node
        gaps = self.tables.column_gaps() if self.tables is not None and self.max_suppressed \
            else None
        total_gap = np.zeros(self.lattice.size)
        if gaps is not None:
            for j in range(d):
                total_gap += gaps[j][levels[:, j]]
        codes, counts = self.bottom.codes, self.bottom.counts
        for a, b in itertools.combinations(range(d), 2):
            col_a, col_b = self.columns[a], self.columns[b]
            width_b = col_b.widths[0]
            base = np.bincount(codes[:, a].astype(np.int64) * width_b + codes[:, b],
                               weights=counts, minlength=col_a.widths[0] * width_b)
            pair_rows = np.zeros((col_a.height, col_b.height))
            pair_penalty = np.zeros((col_a.height, col_b.height))
            cell_a = np.repeat(np.arange(col_a.widths[0]), width_b)
            cell_b = np.tile(np.arange(width_b), col_a.widths[0])
            for level_a in range(col_a.height):
                node_a = col_a.steps[0][level_a][cell_a]
                for level_b in range(col_b.height):
                    node_b = col_b.steps[0][level_b][cell_b]
                    key = node_a.astype(np.int64) * col_b.widths[level_b] + node_b
                    table = np.bincount(key, weights=base,
                                        minlength=col_a.widths[level_a] * col_b.widths[level_b])
                    small = (table > 0) & (table < least)
                    pair_rows[level_a, level_b] = table[small].sum()
                    if self.tables is not None and self.max_suppressed and small.any():
                        which = np.flatnonzero(small)
                        node_of_a = which // col_b.widths[level_b]
                        node_of_b = which % col_b.widths[level_b]
                        charged = (self.tables.top[a] - self.tables.cost[a][level_a][node_of_a]
                                   + self.tables.top[b] - self.tables.cost[b][level_b][node_of_b])
                        pair_penalty[level_a, level_b] = float((table[which] * charged).sum())
            rows = pair_rows[levels[:, a], levels[:, b]]
            np.maximum(self.floor_rows, rows.astype(np.int64), out=self.floor_rows)
            if gaps is not None and self.tables is not None:
                rest = total_gap - gaps[a][levels[:, a]] - gaps[b][levels[:, b]]
                penalty = (pair_penalty[levels[:, a], levels[:, b]] + rows * rest) \
                    / self.tables.scale
                np.maximum(self.floor, penalty, out=self.floor)
        failing = self.floor_rows > self.max_suppressed
        self.full[failing] = -1
        if self.tagging and max(m.min_class_size() for m in self.tagging) >= least:
            self.mono[failing] = -1

    # -- frequency sets ----------------------------------------------------------------
    def frequency_set(self, node: int) -> FrequencySet:
        if node in self.cache:
            return self.cache[node]
        levels = self.lattice.levels[node]
        # the smallest cached frequency set of a specialization (slot 0: the bottom's)
        below = (self.slot_levels <= levels).all(axis=1)
        slot = int(np.argmin(np.where(below, self.slot_groups, np.inf)))
        source = self.slot_sets[slot]
        assert source is not None
        out = rollup(source, self.columns, tuple(levels.tolist()))
        self.stats.rolled_up += 1
        self._keep(node, out)
        return out

    def _keep(self, node: int, fs: FrequencySet) -> None:
        """Cache ``fs`` in the next slot (first in, first out), within the group budget."""
        budget = CACHE_GROUPS * self.bottom.n_groups
        self.cache_order.append(node)
        self.cached_groups += fs.n_groups
        while len(self.cache_order) > CACHE_SETS or (
                len(self.cache_order) > 1 and self.cached_groups > budget):
            self._drop(self.cache_order.pop(0))
        slot = self.free_slots.pop()
        self.cache[node] = fs
        self.slot_of[node] = slot
        self.slot_sets[slot] = fs
        self.slot_levels[slot] = fs.levels
        self.slot_groups[slot] = fs.n_groups

    def _drop(self, node: int) -> None:
        slot = self.slot_of.pop(node)
        self.cached_groups -= self.cache.pop(node).n_groups
        self.slot_sets[slot] = None
        self.slot_levels[slot] = np.iinfo(np.int64).max
        self.slot_groups[slot] = np.inf
        self.free_slots.append(slot)

    # -- checking ------------------------------------------------------------------------
    def classes(self, fs: FrequencySet) -> GroupedClasses:
        of_bottom = fs.of_bottom() if self.bottom_values else None
        return GroupedClasses(fs.counts, of_bottom, self.bottom_values, self.sensitive)

    def check(self, node: int) -> None:
        """Evaluate every model at ``node``; tag by the monotone ones."""
        fs = self.frequency_set(node)
        if self.tables is None:
            # merging classes never lowers discernibility or the average class size
            # without suppression, and suppression never lowers them: this node's value
            # without suppression bounds every generalization's
            bound = class_metric(self.metric, fs.counts, np.zeros(fs.n_groups, dtype=bool),
                                 self.n_rows)[1]
            np.maximum(self.floor, bound, out=self.floor, where=self.lattice.up_set(node))
        if self.class_size is not None:  # k-anonymity alone: the sizes decide
            passing = fs.counts >= self.class_size
        else:
            classes = self.classes(fs)
            passing = np.ones(fs.n_groups, dtype=bool)
            for model in self.tagging:
                passing &= model.holds(classes)
        mono_suppressed = int(fs.counts[~passing].sum())
        mono_ok = mono_suppressed <= self.max_suppressed
        penalty = 0.0
        if mono_ok and mono_suppressed:
            # every specialization suppresses these rows too (the tagging models are
            # monotone under suppression), each at no less cost: floors for them
            below = self.lattice.down_set(node)
            np.maximum(self.floor_rows, mono_suppressed, out=self.floor_rows, where=below)
            if self.tables is not None:
                penalty = self.tables.penalty(fs.levels, fs.codes, fs.counts, ~passing)
                np.maximum(self.floor, penalty, out=self.floor, where=below)
        if self.others:
            classes = self.classes(fs)
            for model in self.others:
                passing &= model.holds(classes)
        suppressed = int(fs.counts[~passing].sum())
        ok = suppressed <= self.max_suppressed
        self.stats.checked += 1
        self.checked[node] = True
        self.full[node] = 1 if ok else -1
        if mono_ok:
            up = self.lattice.up_set(node)
            self._tag(up, self.mono, 1)
            if not self.others:
                self._tag(up, self.full, 1)
        else:
            down = self.lattice.down_set(node)
            self._tag(down, self.mono, -1)
            self._tag(down, self.full, -1)
        self.mono[node] = 1 if mono_ok else -1
        if ok:
            self.suppressed_of[node] = ~passing
            if self.tables is not None and suppressed == mono_suppressed:
                self.value[node] = self.bound[node] + penalty  # the same rows suppressed
                self.stats.valued += 1
            else:
                self._set_value(node, fs, ~passing)

    def _tag(self, nodes: np.ndarray, state: np.ndarray, value: int) -> None:
        state[nodes & (state == 0)] = value

    def _set_value(self, node: int, fs: FrequencySet, suppressed: np.ndarray) -> None:
        levels = tuple(int(v) for v in self.lattice.levels[node])
        if self.tables is not None:
            self.value[node] = self.tables.value(levels, fs.codes, fs.counts, suppressed)
        else:
            self.value[node] = class_metric(self.metric, fs.counts, suppressed,
                                            self.n_rows)[0]
        self.stats.valued += 1

    def valued(self, node: int) -> float:
        """The metric at a qualifying ``node`` (its frequency set computed when needed)."""
        if np.isnan(self.value[node]):
            if self.max_suppressed == 0 and self.tables is not None:
                self.value[node] = self.bound[node]  # nothing suppressed: value = bound
                self.stats.valued += 1
            elif not self.checked[node]:
                self.check(node)
        return float(self.value[node])

    # -- classification ----------------------------------------------------------------
    @cached_property
    def rank(self) -> np.ndarray:
        """The nodes bottom-up, by level sum, then by bound."""
        return np.lexsort((np.nan_to_num(self.bound, neginf=0.0), self.lattice.level_sum))

    @cached_property
    def position(self) -> np.ndarray:
        out = np.empty(self.lattice.size, dtype=np.int64)
        out[self.rank] = np.arange(self.lattice.size)
        return out

    def classify_from(self, start: int) -> None:
        """Flash's step: walk unclassified successors from ``start`` to the top (the one
        with the least bound first), then search the path for its lowest node that passes
        the monotone models (each check tags its up- or down-set, ``start`` among them)."""
        path = [start]
        while True:
            open_ = [s for s in self.lattice.successors(path[-1]) if not self.mono[s]]
            if not open_:
                break
            path.append(min(open_, key=lambda s: self.position[s]))
        low, high = 0, len(path) - 1
        while low <= high:
            # split nearer the top: a check failing high on the path tags the most nodes
            # (on Adult this checks a tenth fewer nodes than halving)
            middle = low + (4 * (high - low)) // 5
            if not self.mono[path[middle]]:
                self.check(path[middle])
            if self.mono[path[middle]] > 0:
                high = middle - 1
            else:
                low = middle + 1

    # -- phase 2: optimization ----------------------------------------------------------
    def optimize_by_bound(self) -> int:
        """Nodes in order of their bound (known for every node without data): classified
        only when reached, until the bound reaches the best value found."""
        lattice = self.lattice
        best, best_key = -1, (np.inf, np.inf, ())
        if self.tagging:
            self.check(lattice.size - 1)
        order = np.lexsort((lattice.level_sum, self.bound))
        bounds = self.bound[order]
        position = 0
        while True:
            # the next node not known to fail, among those whose bound beats the best
            end = len(order) if best < 0 else int(np.searchsorted(bounds, best_key[0]))
            open_ = np.flatnonzero(self.mono[order[position:end]] >= 0)
            if not len(open_):
                break
            position += int(open_[0])
            node = int(order[position])
            position += 1
            if best >= 0 and self.sharper_bound(node) >= best_key[0]:
                continue
            if not self.mono[node]:
                self.classify_from(node)
            if self.mono[node] < 0 or \
                    (best >= 0 and self.sharper_bound(node) >= best_key[0]):
                continue
            if self.full[node] == 0:
                self.check(node)
            if self.full[node] < 0:
                continue
            key = (self.valued(node), int(lattice.level_sum[node]),
                   tuple(lattice.levels[node]))
            if key < best_key:
                best, best_key = node, key
        return best

    def sharper_bound(self, node: int) -> float:
        """The bound with what is known of the rows ``node`` suppresses at least."""
        rows = int(self.floor_rows[node])
        if self.tables is not None:
            return float(self.bound[node] + max(self.floor[node], rows * self.gap[node]))
        kept = self.n_rows - rows
        known = max(float(self.bound[node]), float(self.floor[node]))
        if self.metric == "discernibility":  # a kept row is in a class of >= least rows
            return max(known, rows * self.n_rows + kept * self.least)
        classes = min(float(self.widths[node]), kept // self.least)
        return max(known, self.n_rows / (classes + 1))

    def run(self) -> RecodingResult:
        node = self.optimize_by_bound()
        if node < 0:
            raise InputError(
                f"no generalization level vector meets the models with at most "
                f"{self.max_suppressed} of {self.n_rows} rows suppressed (the lattice has "
                f"{self.lattice.size} nodes); raise --suppression, relax the models or give "
                f"hierarchies with more levels")
        fs = self.frequency_set(node)
        if node not in self.suppressed_of:  # tagged, never checked: check it now
            self.check(node)
        stats = self.stats
        stats.qualifying = int((self.full > 0).sum())
        stats.tagged = int(((self.full > 0) & ~self.checked).sum())
        stats.pruned = stats.nodes - stats.checked - stats.tagged
        return RecodingResult(tuple(int(v) for v in self.lattice.levels[node]),
                              float(self.value[node]), self.metric,
                              fs.of_bottom()[self.row_group], fs.codes, fs.counts,
                              self.suppressed_of[node], stats)


def search(columns: Sequence[ColumnLattice], qi_codes: np.ndarray,
           sensitive: Sequence[SensitiveAttribute], models: Sequence[PrivacyModel], *,
           suppression_limit: float = 0.0, metric: str = "loss",
           level_counts: Sequence[LevelCounts] | None = None) -> RecodingResult:
    """The qualifying node with the least ``metric`` (see the module docstring).

    ``qi_codes``: ``(rows, columns)`` encoded codes (level 0 of ``columns``); ``models``
    bound to ``sensitive`` already; ``suppression_limit``: the share of rows that may be
    suppressed. ``level_counts``: per column, its rows and values under each node (computed
    from ``qi_codes`` when not given)."""
    check_metric(metric)
    if not 0.0 <= suppression_limit <= 1.0:
        raise InputError(f"the suppression limit is a share of rows in [0, 1], got "
                         f"{suppression_limit!r}")
    if len(qi_codes) == 0:
        raise InputError("the table has no rows; give at least one data row")
    counts = list(level_counts) if level_counts is not None else \
        [column_counts(c, qi_codes[:, j]) for j, c in enumerate(columns)]
    return _Search(columns, qi_codes, sensitive, models, suppression_limit, metric,
                   counts).run()


def column_counts(column: ColumnLattice, codes: np.ndarray) -> LevelCounts:
    """Per level of ``column``, the rows and distinct values under each node."""
    rows_0 = np.bincount(codes, minlength=len(column.maps[0]))
    present = rows_0 > 0
    rows, values = [], []
    for level_map in column.maps:
        width = int(level_map.max()) + 1
        rows.append(np.bincount(level_map, weights=rows_0, minlength=width).astype(np.int64))
        values.append(np.bincount(level_map[present], minlength=width).astype(np.int64))
    return LevelCounts(tuple(rows), tuple(values))
