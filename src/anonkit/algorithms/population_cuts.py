"""Population rows followed through Mondrian's cuts, so that k-map and δ-presence against a
population table are cut constraints rather than only a verdict on the finished release.

A released class covers the population rows its labels stand for. Mondrian's labels are
built from the class's own rows: a range form spans the smallest to the largest value (a
population value between two sample values inside it is covered too), a set form lists the
values present, a hierarchy form names their lowest common node. So while cutting, a
candidate class's population count is the number of population rows inside its *hull*:
within its range on every range dimension, among its codes on every set dimension, and below
its lowest common node on every hierarchy dimension (a node covers leaves no row of the
class holds, and population values the table lacks): the count the released labels give.
The release is verified against the labels all the same.

A population row outside its partition's hull on some dimension stays outside every
sub-partition's hull (hulls only shrink), so each row is followed to the one open partition
whose hull holds it, or dropped. Every step is a numpy pass over the population rows.

Positions on a range dimension are doubled: sample code ``c`` is ``2c``, a population value
strictly between codes ``c`` and ``c + 1`` is ``2c + 1``, below every code ``-1`` and above
every code ``2 * cardinality - 1``; a hull ``[lo, hi]`` of codes is ``[2 lo, 2 hi]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from anonkit._util.numbers import exact_number
from anonkit.data.encoding import EncodedTable
from anonkit.data.kinds import Kind
from anonkit.errors import InputError
from anonkit.generalization import Form
from anonkit.models.base import PrivacyModel
from anonkit.models.population_table import PopulationTable

if TYPE_CHECKING:
    from anonkit.hierarchy.base import Hierarchy

#: a presence table of (segment, code) cells up to this size; sorted keys beyond
_PRESENCE_CELLS = 1 << 24


@dataclass(frozen=True)
class PopulationCodes:
    """A population table in a sample's code space (see the module): one row per population
    row a label could cover, one column per quasi-identifier."""

    table: PopulationTable
    #: (rows, d) int64: doubled positions (range dims), codes (set dims), hierarchy leaves
    #: (hierarchy dims)
    codes: np.ndarray
    set_dims: np.ndarray  # (d,) bool: compared by code (set form)
    #: per hierarchy dim, its hierarchy and the leaf of every sample code
    trees: Mapping[int, tuple[Hierarchy, np.ndarray]] = field(default_factory=dict)


def encode_population(table: EncodedTable, population: PopulationTable,
                      forms: Mapping[str, Form]) -> PopulationCodes | None:
    """``population`` in ``table``'s code space, or None when a form's labels do not cover
    by hull (mean, median, prefix, a range of texts or dates) or a QI has missing cells:
    the models are then judged on the finished release only."""
    cols = table.quasi_identifiers
    frame = population.frame
    absent = [c.name for c in cols if c.name not in frame.columns]
    if absent:
        raise InputError(f"{population.source} has no column {absent[0]!r}; it needs every "
                         f"quasi-identifier ({', '.join(c.name for c in cols)})")
    if any(c.missing_code >= 0 for c in cols):
        return None
    d = len(cols)
    codes = np.empty((len(frame), d), dtype=np.int64)
    keep = np.ones(len(frame), dtype=bool)
    set_dims = np.zeros(d, dtype=bool)
    trees: dict[int, tuple[Hierarchy, np.ndarray]] = {}
    for j, col in enumerate(cols):
        form = forms[col.name]
        raw = frame[col.name]
        if form is Form.RANGE and col.kind is Kind.NUMERIC:
            values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
            keep &= np.isfinite(values)
            magnitudes = col.magnitudes
            at = np.searchsorted(magnitudes, values)
            exact = (at < col.cardinality) & \
                (magnitudes[np.minimum(at, col.cardinality - 1)] == values)
            codes[:, j] = np.where(exact, 2 * at, 2 * at - 1)
        elif form is Form.HIERARCHY and col.hierarchy is not None \
                and col.hierarchy_leaf is not None:
            # a node covers the leaves below it, values the table lacks too
            trees[j] = (col.hierarchy, col.hierarchy_leaf)
            lookup = {str(leaf): i for i, leaf in enumerate(col.hierarchy.leaves.tolist())}
            ids, distinct = pd.factorize(raw)
            mapped = np.array([lookup.get(exact_number(v), -1) for v in distinct.tolist()]
                              + [-1], dtype=np.int64)
            codes[:, j] = mapped[ids]
            keep &= codes[:, j] >= 0
        elif form is Form.SET:
            set_dims[j] = True
            lookup = {exact_number(v): c for c, v in enumerate(col.values.tolist())}
            ids, distinct = pd.factorize(raw)  # a missing cell is -1: never covered
            mapped = np.array([lookup.get(exact_number(v), -1) for v in distinct.tolist()]
                              + [-1], dtype=np.int64)
            codes[:, j] = mapped[ids]
            keep &= codes[:, j] >= 0
        else:
            return None
    return PopulationCodes(population, codes[keep], set_dims, trees)


class PopulationCounter:
    """The population rows of an open partition, round by round (see the module)."""

    def __init__(self, population: PopulationCodes, qi_matrix: np.ndarray) -> None:
        self.table = population.table
        self.codes = population.codes
        self.set_dims = np.flatnonzero(population.set_dims)
        self.trees = dict(population.trees)
        self.range_dims = np.array([j for j in np.flatnonzero(~population.set_dims)
                                    if int(j) not in self.trees], dtype=np.int64)
        self.sample = np.asarray(qi_matrix, dtype=np.int64)
        everyone = np.arange(len(self.sample), dtype=np.int64)
        held, _ = self.cover(everyone, np.array([len(everyone)]),
                             np.zeros(len(self.codes), dtype=np.int64), halves=False)
        #: per population row, the start of the segment of its partition (-1: none)
        self.segment_start = np.full(len(self.codes), -1, dtype=np.int64)
        self.segment_start[held] = 0
        self.whole_count = len(held)

    def parts_of_rows(self, starts: np.ndarray) -> np.ndarray:
        """Per population row, the index of its open partition among ``starts`` (-1: its
        partition is final, or it has none)."""
        if not len(starts):
            return np.full(len(self.segment_start), -1, dtype=np.int64)
        order = np.argsort(starts, kind="stable")
        sorted_starts = starts[order]
        at = np.minimum(np.searchsorted(sorted_starts, self.segment_start), len(starts) - 1)
        found = (self.segment_start >= 0) & (sorted_starts[at] == self.segment_start)
        return np.where(found, order[at], -1)

    def cover(self, rows: np.ndarray, sizes: np.ndarray, pair_of_row: np.ndarray, *,
              halves: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The (population row, segment) pairs where the segment's hull holds the row, as
        two arrays. ``rows``: the sample rows of consecutive segments of ``sizes`` (each
        non-empty); with ``halves`` the segments come in pairs (the two halves of a cut)
        and ``pair_of_row`` names each population row's pair (-1: none), else each row's
        segment. Both halves of a cut may hold a row: their ranges and sets are disjoint
        on the cut dimension, but two hierarchy nodes may nest."""
        n_segments = len(sizes)
        segment_of = np.repeat(np.arange(n_segments, dtype=np.int64), sizes)
        codes = self.sample[rows]
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        low = 2 * np.minimum.reduceat(codes, offsets, axis=0) if len(rows) else codes
        high = 2 * np.maximum.reduceat(codes, offsets, axis=0) if len(rows) else codes
        # per set dimension, which codes each segment holds: a table of segments x codes
        # when small, else the sorted (segment, code) keys
        present: dict[int, np.ndarray] = {}
        for j in self.set_dims:
            span = int(codes[:, j].max()) + 1
            if n_segments * span <= _PRESENCE_CELLS:
                table = np.zeros((n_segments, span), dtype=bool)
                table[segment_of, codes[:, j]] = True
                present[int(j)] = table
            else:
                present[int(j)] = np.unique(segment_of * span + codes[:, j])
        # per hierarchy dimension, each segment's lowest common node (its label)
        nodes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for j, (hierarchy, leaf_of_code) in self.trees.items():
            leaves = leaf_of_code[codes[:, j]].astype(np.int64)
            level = hierarchy.lowest_common_level(leaves, offsets).astype(np.int64)
            nodes[j] = (level, hierarchy.node_ids[leaves[offsets], level])
        active = np.flatnonzero(pair_of_row >= 0)
        hit_rows, hit_segments = [], []
        people = self.codes[active]
        for side in ((0, 1) if halves else (0,)):
            segment = 2 * pair_of_row[active] + side if halves else pair_of_row[active]
            inside = np.ones(len(active), dtype=bool)
            for j in self.range_dims:
                inside &= (people[:, j] >= low[segment, j]) & (people[:, j] <= high[segment, j])
            for j in self.set_dims:
                held = present[int(j)]
                value = people[:, j]
                if held.ndim == 2:
                    span = held.shape[1]
                    inside &= (value < span) & held[segment, np.minimum(value, span - 1)]
                else:
                    span = int(codes[:, j].max()) + 1
                    inside &= (value < span) & np.isin(segment * span + value, held)
            for j, (level, node) in nodes.items():
                hierarchy = self.trees[j][0]
                inside &= hierarchy.node_ids[people[:, j], level[segment]] == node[segment]
            hit_rows.append(active[inside])
            hit_segments.append(segment[inside])
        return np.concatenate(hit_rows), np.concatenate(hit_segments)

    def counts(self, segments: np.ndarray, n_segments: int) -> dict[int, np.ndarray]:
        """Each segment's population rows (``segments``: the segment of each hit, from
        :meth:`cover`), keyed as ``Classes.population_counts`` is."""
        return {id(self.table): np.bincount(segments, minlength=n_segments)}

    def follow(self, rows: np.ndarray, starts: np.ndarray, cuts: np.ndarray,
               ends: np.ndarray, part_of_row: np.ndarray, cut_parts: np.ndarray) -> None:
        """After a round: the rows of each partition in ``cut_parts`` (cut at ``cuts``)
        move to the half whose hull holds them, or are dropped; the others keep their
        segment start (a partition tried again keeps it; a final one is never asked)."""
        if not len(cut_parts):
            return
        pair = np.full(len(starts), -1, dtype=np.int64)
        pair[cut_parts] = np.arange(len(cut_parts))
        pair_of_row = np.where(part_of_row >= 0, pair[np.maximum(part_of_row, 0)], -1)
        s, c, e = starts[cut_parts], cuts[cut_parts], ends[cut_parts]
        sizes = np.stack([c - s, e - c], axis=1).reshape(-1)
        held, segments = self.cover(rows, sizes, pair_of_row)
        half_starts = np.stack([s, c], axis=1).reshape(-1)
        self.segment_start[pair_of_row >= 0] = -1  # unless a half holds it
        # a row both halves hold (nested hierarchy nodes) is followed into both: a copy
        first = np.zeros(len(held), dtype=bool)
        first[np.unique(held, return_index=True)[1]] = True
        self.segment_start[held[first]] = half_starts[segments[first]]
        again = held[~first]
        if len(again):
            self.codes = np.concatenate([self.codes, self.codes[again]])
            self.segment_start = np.concatenate([self.segment_start,
                                                 half_starts[segments[~first]]])


def single_population(models: Sequence[PrivacyModel]) -> PopulationTable | None:
    """The one population table the models read (None: none, or more than one)."""
    tables = {id(t): t for t in (m.population_table for m in models) if t is not None}
    return next(iter(tables.values())) if len(tables) == 1 else None
