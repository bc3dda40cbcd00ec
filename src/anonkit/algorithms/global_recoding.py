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
the first bound no better than the best value found (any qualifying node valued on the
way, in a classification too, may be the best so far). A node reached is classified, and
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
- *Top-down sweep* (no suppression allowed). Once a best node below the top is known, the
  unclassified nodes whose bound beats it are checked from the top down: a check is then
  only a verdict, and a failing one high up tags the most.

A node's *frequency set* -- its distinct generalized tuples with their row counts -- is
rolled up from the smallest frequency set of a specialization already computed (a compiled
kernel, ``_recoding_c``), never recounted from the rows; when only the bottom's is below, through
a *hub*, the node that raises only the column it generalizes most, which later nodes share.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from anonkit._util.grouping import group_rows
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
from anonkit.labels import cover_matrix
from anonkit.models.base import (
    Classes,
    KAnonymity,
    PrivacyModel,
    SensitiveAttribute,
    ValueCounts,
)
from anonkit.models.population_table import PopulationTable

#: how many frequency sets are kept for roll-ups (besides the bottom's), and how many
#: groups they may hold together, in multiples of the bottom's
CACHE_SETS = 256
CACHE_GROUPS = 8
#: eight true bytes, as one word
ALL_TRUE = np.uint64(0x0101010101010101)
#: a hub rolls up one column no higher than its first level with this many values a node
HUB_MERGE = 4.0


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
    def indicators(self) -> tuple[np.ndarray, ...]:
        """Per level, a (level's nodes, level 0's nodes) matrix with a 1 where the level-0
        node lies under the level's node."""
        out = []
        for level in range(self.height):
            matrix = np.zeros((self.widths[level], self.widths[0]))
            matrix[self.steps[0][level], np.arange(self.widths[0])] = 1.0
            out.append(matrix)
        return tuple(out)

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
    whose metric was computed; ``rolled_up``: frequency sets rolled up to check a node,
    ``hubs``: those rolled up only as a source for others."""

    nodes: int = 0
    checked: int = 0
    tagged: int = 0
    pruned: int = 0
    qualifying: int = 0
    valued: int = 0
    rolled_up: int = 0
    hubs: int = 0

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
                 sensitive: Sequence[SensitiveAttribute], *,
                 bottom_weights: np.ndarray | None = None,
                 population_counts: Mapping[int, np.ndarray] | None = None) -> None:
        # with survey weights, the "rows" the models see are the bottom groups, each
        # weighing its rows' weights (the models sum weights per class)
        ids = np.zeros(0, dtype=np.int64) if bottom_weights is None or of_bottom is None \
            else of_bottom
        super().__init__(ids, len(counts), sensitive, weights=bottom_weights,
                         population_counts=population_counts)
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


@dataclass(frozen=True)
class PopulationLevels:
    """A population table a model reads (k-map, δ-presence), in the lattice's terms: its
    distinct tuples of quasi-identifier values (``values``: per tuple and column, the
    value's code), the population rows of each (``people``), and per column and level,
    which nodes' labels cover each value (``covers[j][level]``: a (values, nodes) boolean
    matrix, as :func:`anonkit.labels.cover_matrix` judges the released labels)."""

    table: PopulationTable
    values: np.ndarray
    people: np.ndarray
    covers: tuple[tuple[np.ndarray, ...], ...]

    def counts(self, fs: FrequencySet, widths: Sequence[int]) -> np.ndarray:
        """Per class of ``fs``, the population rows its labels cover in every column:
        each tuple joined with the nodes covering its values (a value under two labels
        counts for both, as the checker counts it), then matched with the classes."""
        d = len(widths)
        at = np.arange(len(self.people))
        key = np.zeros(len(at), dtype=np.int64)
        for j in range(d):
            pairs = self.covers[j][fs.levels[j]]
            value_of, node_of = np.nonzero(pairs)
            starts = np.searchsorted(value_of, np.arange(pairs.shape[0] + 1))
            values = self.values[at, j]
            degree = starts[values + 1] - starts[values]
            repeat = np.repeat(np.arange(len(at)), degree)
            within = np.arange(int(degree.sum())) - np.repeat(np.cumsum(degree) - degree,
                                                               degree)
            at = at[repeat]
            key = key[repeat] * max(int(widths[j]), 1) + node_of[starts[values][repeat]
                                                                 + within]
        class_key = np.zeros(fs.n_groups, dtype=np.int64)
        for j in range(d):
            class_key = class_key * max(int(widths[j]), 1) + fs.codes[:, j]
        order = np.argsort(class_key, kind="stable")
        place = np.minimum(np.searchsorted(class_key[order], key), max(fs.n_groups - 1, 0))
        found = class_key[order][place] == key if fs.n_groups else np.zeros(0, dtype=bool)
        return np.bincount(order[place[found]], weights=self.people[at[found]],
                           minlength=fs.n_groups).astype(np.int64)


def population_levels(table: PopulationTable, names: Sequence[str],
                      labels: Sequence[Sequence[np.ndarray]]) -> PopulationLevels:
    """``table`` in the lattice's terms (see :class:`PopulationLevels`): ``labels[j][L]``,
    the released label of every node of column ``names[j]`` at level ``L``."""
    frame = table.frame
    absent = [name for name in names if name not in frame.columns]
    if absent:
        raise InputError(f"{table.source} has no column {absent[0]!r}; it needs every "
                         f"quasi-identifier ({', '.join(names)})")
    tuple_ids, n_tuples, first = group_rows(frame, list(names))
    people = np.bincount(tuple_ids, minlength=n_tuples).astype(np.float64)
    values, covers = [], []
    for name, per_level in zip(names, labels, strict=True):
        codes, distinct = pd.factorize(frame[name].iloc[first], use_na_sentinel=False)
        values.append(codes.astype(np.int64))
        covers.append(tuple(
            np.ascontiguousarray(cover_matrix([str(x) for x in level_labels],
                                              list(distinct),
                                              table.hierarchies.get(name)).T)
            for level_labels in per_level))
    return PopulationLevels(table, np.stack(values, axis=1) if values else
                            np.zeros((n_tuples, 0), dtype=np.int64), people, tuple(covers))


class RollupScratch:
    """Working memory for roll-ups from frequency sets of at most ``groups`` groups, kept
    across them (fresh memory each time costs as much as the counting on Adult)."""

    def __init__(self, groups: int, d: int) -> None:
        table = 16
        while table < 2 * groups:
            table <<= 1
        self.codes = np.empty((groups, d), dtype=np.int32)
        self.counts = np.empty(groups, dtype=np.int64)
        self.index = np.empty(max(table, 4 * max(groups, 16)), dtype=np.int32)
        self.keys = np.empty(table, dtype=np.int64)


def rollup(source: FrequencySet, columns: Sequence[ColumnLattice],
           levels: tuple[int, ...], scratch: RollupScratch | None = None) -> FrequencySet:
    """The frequency set at ``levels`` (each at least ``source``'s), from ``source``'s;
    ``scratch`` sized for at least ``source``'s groups."""
    d = len(columns)
    steps = [columns[j].steps[source.levels[j]][levels[j]] for j in range(d)]
    maps = np.concatenate(steps)
    offsets = np.array([0, *itertools.accumulate(len(s) for s in steps[:-1])],
                       dtype=np.int64)
    g = source.n_groups
    if scratch is None or len(scratch.counts) < g:
        scratch = RollupScratch(g, d)
    codes, counts = scratch.codes, scratch.counts
    group_of = np.empty(g, dtype=np.int32)
    widths = [columns[j].widths[levels[j]] for j in range(d)]
    strides = key_strides(widths)
    if strides is not None:
        span = int(strides[0]) * max(int(widths[0]), 1) if d else 1
        n = _recoding_c.rollup_keyed(source.codes, d, source.counts, maps, offsets, strides,
                                     span, codes, counts, group_of, scratch.index,
                                     scratch.keys)
    else:
        codes, counts = codes[:g], counts[:g]  # rollup() sizes its table by them
        n = _recoding_c.rollup(source.codes, d, source.counts, maps, offsets, codes, counts,
                               group_of)
    return FrequencySet(levels, codes[:n].copy(), counts[:n].copy(), source, group_of)


def key_strides(widths: Sequence[int]) -> np.ndarray | None:
    """Mixed-radix strides that make a tuple of codes below ``widths`` one int64 key, or
    None when the tuples do not fit."""
    strides = [1] * len(widths)
    span = 1
    for j in range(len(widths) - 1, -1, -1):
        strides[j] = span
        span *= max(int(widths[j]), 1)
        if span >= 2**62:
            return None
    return np.array(strides, dtype=np.int64)


def group_rows_of(qi_codes: np.ndarray,
                  maps: Sequence[np.ndarray] | None = None) -> FrequencySet:
    """The bottom frequency set of the encoded rows, each column's codes passed through its
    map in ``maps`` (to level 0 of its hierarchy; the codes themselves without), with per
    row its group in ``group_of``."""
    n, d = qi_codes.shape
    codes_in = np.ascontiguousarray(qi_codes, dtype=np.int32)
    if maps is None:
        cards = codes_in.max(axis=0) + 1 if n else np.zeros(d, dtype=np.int32)
        maps = [np.arange(c, dtype=np.int32) for c in cards]
    flat = np.concatenate([np.asarray(m, dtype=np.int32) for m in maps])
    offsets = np.zeros(d, dtype=np.int64)
    np.cumsum([len(m) for m in maps[:-1]], out=offsets[1:])
    codes = np.empty((n, d), dtype=np.int32)
    counts = np.empty(n, dtype=np.int64)
    group_of = np.empty(n, dtype=np.int32)
    widths = [int(m.max()) + 1 if len(m) else 1 for m in maps]
    strides = key_strides(widths)
    if strides is not None:
        span = int(strides[0]) * widths[0] if d else 1
        g = _recoding_c.rollup_keyed(codes_in, d, np.zeros(0, dtype=np.int64), flat, offsets,
                                     strides, span, codes, counts, group_of,
                                     np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int64))
    else:
        g = _recoding_c.rollup(codes_in, d, np.zeros(0, dtype=np.int64), flat, offsets,
                               codes, counts, group_of)
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
        self.shape = tuple(int(h) for h in heights)
        self._stride_list = [int(v) for v in self.strides]
        self._top_list = [int(h) - 1 for h in heights]
        self._successors: dict[int, list[int]] = {}

    def grid(self, per_node: np.ndarray) -> np.ndarray:
        """A per-node array as a view shaped like the lattice (one axis per column, indexed
        by level), where an up- or down-set is a box."""
        return per_node.reshape(self.shape)

    def up_box(self, node: int) -> tuple[slice, ...]:
        """The index of ``node``'s generalizations (itself included) in :meth:`grid`."""
        return tuple(slice(level, None) for level in self.levels[node].tolist())

    def down_box(self, node: int) -> tuple[slice, ...]:
        """The index of ``node``'s specializations (itself included) in :meth:`grid`."""
        return tuple(slice(0, level + 1) for level in self.levels[node].tolist())

    def successors(self, node: int) -> list[int]:
        out = self._successors.get(node)
        if out is None:
            out = [node + stride for stride, level, top in
                   zip(self._stride_list, self.levels[node].tolist(), self._top_list,
                       strict=True) if level < top]
            self._successors[node] = out
        return out

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
                 suppression_limit: float, metric: str, level_counts: Sequence[LevelCounts],
                 weights: np.ndarray | None = None,
                 populations: Sequence[PopulationLevels] = ()) -> None:
        self.columns = list(columns)
        self.n_rows = len(qi_codes)
        self.models = list(models)
        self.sensitive = list(sensitive)
        self.max_suppressed = int(np.floor(suppression_limit * self.n_rows + 1e-9))
        self.metric = metric
        self.lattice = Lattice([c.height for c in columns])
        self.stats = LatticeStats(nodes=self.lattice.size)
        self.bottom = group_rows_of(qi_codes, [c.maps[0] for c in columns])
        self.row_group = self.bottom.group_of
        assert self.row_group is not None
        self.bottom.group_of = None
        self.bottom_values = {
            s.name: Classes(self.row_group.astype(np.int64), self.bottom.n_groups,
                            [s]).value_counts(s.name)
            for s in sensitive if any(m.needs_sensitive for m in models)}
        #: per bottom group, its rows' survey weights (None: no model reads weights)
        self.bottom_weights = None if weights is None else np.bincount(
            self.row_group, weights=weights, minlength=self.bottom.n_groups)
        self.populations = list(populations)
        monotone = monotone_models(models, self.max_suppressed > 0)
        #: the least class size when k-anonymity is the only model (checked from the
        #: counts alone)
        self.class_size = max(m.min_class_size() for m in models) \
            if models and all(type(m) is KAnonymity for m in models) else None
        self.tagging = monotone
        others = [m for m in models if not any(m is t for t in monotone)]
        # a verdict on the whole table is judged on the classes kept, the others first
        self.others = [m for m in others if not m.table_level]
        self.table_level = [m for m in others if m.table_level]
        self.tables: MetricTables | None = metric_tables(metric, level_counts, self.n_rows) \
            if metric in SEPARABLE else None
        # per node: 1 passes the monotone models (tagged or checked), -1 fails, 0 unknown
        self.mono = np.zeros(self.lattice.size, dtype=np.int8)
        # per node: 1 qualifies, -1 does not, 0 unknown (with the monotone models alone,
        # the same as ``mono``: one array)
        self.full = np.zeros(self.lattice.size, dtype=np.int8) if others else self.mono
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
        # the per-node states as views shaped like the lattice (up- and down-sets are boxes)
        self.mono_grid = self.lattice.grid(self.mono)
        self.full_grid = self.lattice.grid(self.full)
        self.floor_grid = self.lattice.grid(self.floor)
        self.floor_rows_grid = self.lattice.grid(self.floor_rows)
        self.cache: dict[int, FrequencySet] = {0: self.bottom}
        self.scratch = RollupScratch(self.bottom.n_groups, self.lattice.d)
        # per column and level, level 0's nodes per node of the level
        self.merging = np.ones((self.lattice.d, int(self.lattice.heights.max())))
        for j, column in enumerate(columns):
            self.merging[j, :column.height] = column.widths[0] / np.maximum(column.widths, 1)
        self.column_index = np.arange(self.lattice.d)
        # the cached nodes, least recently used first (a source of a roll-up counts as used)
        self.cache_order: OrderedDict[int, None] = OrderedDict()
        self.cached_groups = 0
        # the cache as arrays, to find a roll-up's source in one pass: per slot the levels
        # and groups of the set it holds (slot 0: the bottom, never dropped)
        self.slot_sets: list[FrequencySet | None] = [self.bottom] + [None] * CACHE_SETS
        # (as bytes, padded to whole 8-byte words: one slot's test is one uint64 compare
        # per 8 columns; an empty slot's levels are above every level)
        if self.lattice.d and int(self.lattice.heights.max()) > 127:
            raise InputError("a hierarchy has more than 127 levels; give one with fewer")
        self.words = -(-self.lattice.d // 8)
        self.slot_levels = np.full((CACHE_SETS + 1, 8 * self.words), 127, dtype=np.int8)
        self.slot_levels[:, self.lattice.d:] = 0
        self.slot_levels[0] = 0
        self.level_bytes = np.zeros((self.lattice.size, 8 * self.words), dtype=np.int8)
        self.level_bytes[:, :self.lattice.d] = self.lattice.levels
        self.slot_groups = np.full(CACHE_SETS + 1, np.inf)
        self.slot_groups[0] = self.bottom.n_groups
        self.slot_of: dict[int, int] = {}
        self.slot_node = [0] * (CACHE_SETS + 1)
        self.free_slots = list(range(CACHE_SETS, 0, -1))
        self.suppressed_of: dict[int, np.ndarray] = {}
        # the best qualifying node valued so far, and its key (value, level sum, levels)
        self.best = -1
        self.swept = False
        self.best_key: tuple[float, int, tuple[int, ...]] = (np.inf, 0, ())
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
        heights = tuple(int(h) for h in self.lattice.heights)
        # (the rows' penalty in the pair's columns would sharpen the bound further, but on
        # Adult it spares no check and costs more than the rows alone)
        floor_rows = self.floor_rows.reshape(heights)
        codes, counts = self.bottom.codes, self.bottom.counts
        # per column, its levels' indicators stacked, and where each level starts
        stacked = [np.vstack(c.indicators) for c in self.columns]
        starts = [np.concatenate([[0], np.cumsum(c.widths[:-1])]).astype(np.intp)
                  for c in self.columns]
        column_codes = [codes[:, j].astype(np.int64) for j in range(d)]
        weights = counts.astype(np.float64)
        for a, b in itertools.combinations(range(d), 2):
            col_a, col_b = self.columns[a], self.columns[b]
            width_b = col_b.widths[0]
            base = np.bincount(column_codes[a] * width_b + column_codes[b], weights=weights,
                               minlength=col_a.widths[0] * width_b
                               ).reshape(col_a.widths[0], width_b)
            if not ((base > 0) & (base < least)).any():
                continue  # no small class at the bottom: none above (classes only grow)
            # the pair's classes at every pair of levels at once: block (level_a, level_b)
            # holds the base table summed over each level's nodes
            table = stacked[a] @ base @ stacked[b].T
            small = np.where((table > 0) & (table < least), table, 0.0)
            pair_rows = np.add.reduceat(np.add.reduceat(small, starts[a], axis=0),
                                        starts[b], axis=1)
            rows = pair_rows.reshape([heights[j] if j in (a, b) else 1 for j in range(d)])
            np.maximum(floor_rows, rows.astype(np.int64), out=floor_rows)
        failing = self.floor_rows > self.max_suppressed
        self.full[failing] = -1
        if self.tagging and max(m.min_class_size() for m in self.tagging) >= least:
            self.mono[failing] = -1

    # -- frequency sets ----------------------------------------------------------------
    def frequency_set(self, node: int, for_check: bool = True) -> FrequencySet:
        """``node``'s frequency set (``for_check``: to check ``node``, else as a hub)."""
        if node in self.cache:
            if node in self.cache_order:
                self.cache_order.move_to_end(node)
            return self.cache[node]
        levels = self.lattice.levels[node]
        # the smallest cached frequency set of a specialization (slot 0: the bottom's)
        below = ((self.slot_levels <= self.level_bytes[node]).view(np.uint64)
                 == ALL_TRUE).all(axis=1)
        slot = int(np.argmin(np.where(below, self.slot_groups, np.inf)))
        source = self.slot_sets[slot]
        assert source is not None
        if slot:
            self.cache_order.move_to_end(self.slot_node[slot])
        else:
            # nothing but the bottom below: roll up through a hub, the bottom with the one
            # column raised that merges most values, which later nodes roll up from too
            hub = self.hub_of(levels, source.levels)
            if hub != node:
                source = self.frequency_set(hub, for_check=False)
        out = rollup(source, self.columns, tuple(levels.tolist()), self.scratch)
        if for_check:
            self.stats.rolled_up += 1
        else:
            self.stats.hubs += 1
        self._keep(node, out)
        return out

    def hub_of(self, levels: np.ndarray, below: Sequence[int]) -> int:
        """The node between ``below`` and ``levels`` (a node's) that raises one column of
        ``below``: the one merging most values on the way to ``levels``, no higher than
        its first level that merges HUB_MERGE of ``below``'s nodes into one (one hub then
        serves every node at that level or above); ``levels``' node itself when that is
        the one."""
        start = np.asarray(below)
        gain = self.merging[self.column_index, levels] / \
            self.merging[self.column_index, start]
        column = int(np.argmax(gain))
        if gain[column] <= 1:
            return int(levels @ self.lattice.strides)
        level = int(levels[column])
        for candidate in range(int(start[column]) + 1, level):
            if self.merging[column, candidate] >= HUB_MERGE * self.merging[column, start[column]]:
                level = candidate
                break
        hub = start.copy()
        hub[column] = level
        return int(hub @ self.lattice.strides)

    def _keep(self, node: int, fs: FrequencySet) -> None:
        """Cache ``fs`` in a free slot, within the group budget (the least recently used
        sets dropped first)."""
        budget = CACHE_GROUPS * self.bottom.n_groups
        self.cache_order[node] = None
        self.cached_groups += fs.n_groups
        while len(self.cache_order) > CACHE_SETS or (
                len(self.cache_order) > 1 and self.cached_groups > budget):
            self._drop(self.cache_order.popitem(last=False)[0])
        slot = self.free_slots.pop()
        self.cache[node] = fs
        self.slot_of[node] = slot
        self.slot_node[slot] = node
        self.slot_sets[slot] = fs
        self.slot_levels[slot, :self.lattice.d] = fs.levels
        self.slot_groups[slot] = fs.n_groups

    def _drop(self, node: int) -> None:
        slot = self.slot_of.pop(node)
        self.cached_groups -= self.cache.pop(node).n_groups
        self.slot_sets[slot] = None
        self.slot_levels[slot, :self.lattice.d] = 127
        self.slot_groups[slot] = np.inf
        self.free_slots.append(slot)

    # -- checking ------------------------------------------------------------------------
    def classes(self, fs: FrequencySet) -> GroupedClasses:
        """The classes of ``fs`` for the models, with what the risk models read: survey
        weights, and each population table's rows under the classes' labels."""
        of_bottom = fs.of_bottom() if self.bottom_values or self.bottom_weights is not None \
            else None
        widths = [c.widths[level] for c, level in zip(self.columns, fs.levels, strict=True)]
        counted = {id(p.table): p.counts(fs, widths) for p in self.populations}
        return GroupedClasses(fs.counts, of_bottom, self.bottom_values, self.sensitive,
                              bottom_weights=self.bottom_weights, population_counts=counted)

    def check(self, node: int) -> None:
        """Evaluate every model at ``node``; tag by the monotone ones."""
        fs = self.frequency_set(node)
        lattice = self.lattice
        if self.tables is None:
            # merging classes never lowers discernibility or the average class size
            # without suppression, and suppression never lowers them: this node's value
            # without suppression bounds every generalization's
            bound = class_metric(self.metric, fs.counts, np.zeros(fs.n_groups, dtype=bool),
                                 self.n_rows)[1]
            above = self.floor_grid[lattice.up_box(node)]
            np.maximum(above, bound, out=above)
        counts = fs.counts
        classes: GroupedClasses | None = None
        penalty = 0.0
        failing: np.ndarray | None
        if self.class_size is not None and self.tables is not None:
            # k-anonymity alone: the sizes decide, and one pass gives the rows suppressed
            # and their cost
            mono_suppressed, penalty = self.tables.small_classes(
                fs.levels, fs.codes, counts, self.class_size, self.max_suppressed)
            failing = None
        elif self.class_size is not None:
            failing = counts < self.class_size
        else:
            classes = self.classes(fs)
            passing = np.ones(fs.n_groups, dtype=bool)
            for model in self.tagging:
                passing &= model.holds(classes)
            failing = ~passing
        if failing is not None:
            mono_suppressed = int(counts[failing].sum())
        mono_ok = mono_suppressed <= self.max_suppressed
        if mono_ok and mono_suppressed:
            # every specialization suppresses these rows too (the tagging models are
            # monotone under suppression), each at no less cost: floors for them
            below = lattice.down_box(node)
            rows_below = self.floor_rows_grid[below]
            np.maximum(rows_below, mono_suppressed, out=rows_below)
            if self.tables is not None:
                if failing is not None:
                    penalty = self.tables.penalty(fs.levels, fs.codes, counts, failing)
                floor_below = self.floor_grid[below]
                np.maximum(floor_below, penalty, out=floor_below)
        suppressed = mono_suppressed
        if self.others or self.table_level:
            assert failing is not None  # (k-anonymity alone leaves no other model)
            classes = classes or self.classes(fs)
            passing = ~failing
            for model in self.others:
                passing &= model.holds(classes)
            if self.table_level and passing.any():
                # judged on the kept classes, as the verifier judges the release
                kept = Classes.from_sizes(counts[passing], self.sensitive)
                if not all(model.holds(kept).all() for model in self.table_level):
                    passing[:] = False
            failing = ~passing
            suppressed = int(counts[failing].sum())
        ok = suppressed <= self.max_suppressed
        self.stats.checked += 1
        self.checked[node] = True
        self.full[node] = 1 if ok else -1
        if mono_ok:
            self._tag(self.mono_grid[lattice.up_box(node)], 1)
        else:
            down = lattice.down_box(node)
            self._tag(self.mono_grid[down], -1)
            if self.full is not self.mono:
                self._tag(self.full_grid[down], -1)
        self.mono[node] = 1 if mono_ok else -1
        if ok:
            if failing is None:
                failing = counts < self.class_size
            self.suppressed_of[node] = failing
            if self.tables is not None and suppressed == mono_suppressed:
                self.value[node] = self.bound[node] + penalty  # the same rows suppressed
                self.stats.valued += 1
            else:
                self._set_value(node, fs, failing)
            self.offer(node)

    @staticmethod
    def _tag(box: np.ndarray, value: int) -> None:
        """Set the unknown states of ``box`` (a view of a state grid) to ``value``."""
        box[box == 0] = value

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
                self.offer(node)
            elif not self.checked[node]:
                self.check(node)
        return float(self.value[node])

    # -- classification ----------------------------------------------------------------
    @cached_property
    def bound_list(self) -> list[float]:
        """Per node, its bound (as a list: read one node at a time)."""
        return self.bound.tolist()

    def classify_from(self, start: int) -> None:
        """Flash's step: walk unclassified successors from ``start`` to the top (the one
        with the least bound first), then search the path for its lowest node that passes
        the monotone models (each check tags its up- or down-set, ``start`` among them)."""
        mono, bound = self.mono, self.bound_list
        path = [start]
        while True:
            open_ = [s for s in self.lattice.successors(path[-1]) if not mono[s]]
            if not open_:
                break
            path.append(min(open_, key=bound.__getitem__))
        low, high = 0, len(path) - 1
        while low <= high:
            # split nearer the top: a check failing high on the path tags the most nodes
            # (on Adult this checks a tenth fewer nodes than halving)
            middle = low + (4 * (high - low)) // 5
            if not mono[path[middle]]:
                self.check(path[middle])
            if mono[path[middle]] > 0:
                high = middle - 1
            else:
                low = middle + 1

    # -- phase 2: optimization ----------------------------------------------------------
    def optimize_by_bound(self) -> int:
        """Nodes in order of their bound (known for every node without data): classified
        only when reached, until the bound reaches the best value found (every node valued
        on the way, in a classification too, may become the best)."""
        lattice = self.lattice
        if self.tagging:
            self.check(lattice.size - 1)
        order = np.lexsort((lattice.level_sum, self.bound))
        bounds = self.bound[order]
        mono, full = self.mono, self.full
        for position, node in enumerate(order.tolist()):
            if bounds[position] >= self.best_key[0]:
                break  # the bound, and every later one, no better than the best
            if mono[node] < 0 or self.sharper_bound(node) >= self.best_key[0]:
                continue
            if not mono[node]:
                if not self.max_suppressed and not self.swept and \
                        self.best not in (-1, lattice.size - 1):
                    self.sweep_region()
                if not mono[node]:
                    self.classify_from(node)
            if mono[node] < 0 or self.sharper_bound(node) >= self.best_key[0]:
                continue
            if full[node] == 0:
                self.check(node)
            if full[node] > 0:
                self.valued(node)
        return self.best

    def sweep_region(self) -> None:
        """Check the unclassified nodes whose bound beats the best, from the top down: once
        a best below the top is known, with no suppression allowed (the value of a
        qualifying node is its bound, so a check is only a verdict), a failing check high
        in that region tags the most of it; on Adult, k=5, this halves the checks of
        Flash's paths, but with suppression it checks low nodes, whose roll-ups cost more
        than the checks it spares."""
        self.swept = True
        lattice = self.lattice
        region = np.flatnonzero((self.bound < self.best_key[0]) & (self.mono == 0))
        region = region[np.lexsort((self.bound[region], -lattice.level_sum[region]))]
        for node in region.tolist():
            if not self.mono[node] and self.sharper_bound(node) < self.best_key[0]:
                self.check(node)

    def offer(self, node: int) -> None:
        """Make qualifying ``node``, valued, the best if it beats it (ties: the lower
        levels)."""
        lattice = self.lattice
        key = (float(self.value[node]), int(lattice.level_sum[node]),
               tuple(int(v) for v in lattice.levels[node]))
        if key < self.best_key:
            self.best, self.best_key = node, key

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
           level_counts: Sequence[LevelCounts] | None = None,
           weights: np.ndarray | None = None,
           populations: Sequence[PopulationLevels] = ()) -> RecodingResult:
    """The qualifying node with the least ``metric`` (see the module docstring).

    ``qi_codes``: ``(rows, columns)`` encoded codes (level 0 of ``columns``); ``models``
    bound to ``sensitive`` already; ``suppression_limit``: the share of rows that may be
    suppressed. ``level_counts``: per column, its rows and values under each node (computed
    from ``qi_codes`` when not given). ``weights``: per row, its survey weight, for the
    models that read weights; ``populations``: the population tables the models read, in
    the lattice's terms (:func:`population_levels`)."""
    check_metric(metric)
    if not 0.0 <= suppression_limit <= 1.0:
        raise InputError(f"the suppression limit is a share of rows in [0, 1], got "
                         f"{suppression_limit!r}")
    if len(qi_codes) == 0:
        raise InputError("the table has no rows; give at least one data row")
    counts = list(level_counts) if level_counts is not None else \
        [column_counts(c, qi_codes[:, j]) for j, c in enumerate(columns)]
    return _Search(columns, qi_codes, sensitive, models, suppression_limit, metric,
                   counts, weights, populations).run()


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
