"""Mondrian multidimensional k-anonymity (LeFevre, DeWitt, Ramakrishnan, ICDE 2006).

Strict multidimensional partitioning: starting from the whole table, a partition is cut at
the median of one quasi-identifier into two non-overlapping halves, as long as the cut is
*allowable* -- both halves satisfy every configured privacy model (k-anonymity, and any
l-diversity, t-closeness, ... given), so those models act as cut constraints. When no
allowable cut remains on any dimension, the partition becomes an equivalence class and is
generalized on every quasi-identifier.

Differences from the document in ``spec/002`` (see spec/README.md), all deliberate:

- cuts are checked for allowability (the document does not check);
- a partition that cannot be cut further is still generalized on every QI;
- the document's variant -- the cut dimension leaves the candidates of both halves
  (``remove_cut_dimension=True``) and ``single_dimensional=True`` (stop after one cut) -- is
  available as options; the default is classic strict Mondrian;
- with a skewed column the median cut ``x <= m`` can leave one side empty or too small; then
  ``x < m | x >= m`` is tried (still strict and non-overlapping).

This module is the partition step (:func:`partition`: encoded codes in, classes out); the
method around it -- configuration, encoding, generalization, verification -- is
:class:`anonkit.methods.mondrian.Mondrian`.

The work is level-synchronous: each round, a compiled kernel arranges every open partition
around the median of its chosen dimension, then every candidate half of the round is checked
against the models in one vectorised pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from anonkit.algorithms import _mondrian_kernel as kernel
from anonkit.algorithms.population_cuts import PopulationCodes, PopulationCounter
from anonkit.data.encoding import EncodedColumn, EncodedTable
from anonkit.errors import InputError
from anonkit.models.base import (
    Classes,
    KAnonymity,
    PrivacyModel,
    SensitiveAttribute,
    bind_models,
)
from anonkit.models.risk import fixed_to_sample
from anonkit.partition import Partition

#: a round moving more rows than this runs its partitions on all cores
PARALLEL_ROWS = 4_096


def strategy_code_of(strategy: str) -> int:
    """The kernel's number for a cut-dimension strategy, or a one-line error."""
    try:
        return kernel.STRATEGIES[strategy]
    except KeyError:
        raise InputError(f"unknown dimension strategy {strategy!r}; use one of "
                         f"{', '.join(kernel.STRATEGIES)}") from None


def partition(table: EncodedTable, models: Sequence[PrivacyModel], *,
              strategy: str = "widest", seed: int = 0, remove_cut_dimension: bool = False,
              single_dimensional: bool = False,
              reference_counts: Mapping[str, np.ndarray] | None = None,
              weights: np.ndarray | None = None,
              population: PopulationCodes | None = None) -> Partition:
    """Partition the encoded table; every class satisfies every model (bound to their
sensitive attributes here, if they are not yet).

    ``reference_counts`` (per sensitive column, one count per code) is the distribution
    t-closeness, δ and β compare classes with when ``table`` is a fragment of a larger
    table (then it is the whole table's, e.g. ``Encoding.reference_counts``); by default
    the table's own. ``weights``: per row, the survey weight the individual-risk model
    reads. ``population``: the population table k-map and δ-presence read, in the table's
    code space (:func:`~anonkit.algorithms.population_cuts.encode_population`): they are
    then cut constraints, each half judged by the population rows inside its hull.

    A model that cannot be judged on a cut's halves (:attr:`PrivacyModel.checkable_on_parts`:
    one that judges the whole table, or counts population rows under released labels
    without ``population``) is no cut constraint: a model judging the whole table is
    checked on the finished partition, which is refused (an :class:`InputError`) when it
    fails; one that needs a population table is judged when the release is verified, which
    refuses it likewise."""
    n, d = table.n_rows, len(table.quasi_identifiers)
    references = reference_counts or {}
    sensitive = [SensitiveAttribute.from_encoded(c, references.get(c.name))
                 for c in table.sensitive]
    # no-op for models bound already; thresholds that depend on the sample's size are
    # fixed to the whole table's, as every half is judged as a part of it
    models = fixed_to_sample(bind_models(models, sensitive), n)
    counter = None if population is None else PopulationCounter(population, table.qi_matrix)

    def on_parts(m: PrivacyModel) -> bool:
        return m.checkable_on_parts or (counter is not None and not m.table_level
                                        and m.population_table is counter.table)

    afterwards = [m for m in models if not on_parts(m)]
    models = [m for m in models if on_parts(m)] or [KAnonymity(1)]
    sizing = max(models, key=lambda m: m.min_class_size())
    min_size = sizing.min_class_size()
    if min_size > n:
        raise InputError(f"{sizing.title()} needs classes of at least {min_size} "
                         f"rows, larger than the number of rows ({n}); relax the model")
    heavy = [m for m in models if m.needs_sensitive or type(m) is not KAnonymity]
    whole = Classes(np.zeros(n, dtype=np.int64), 1, sensitive, weights=weights,
                    population_counts=None if counter is None else
                    {id(counter.table): np.array([counter.whole_count])})
    for m in models:
        if not m.holds(whole)[0]:
            raise InputError(
                f"the table as a whole does not satisfy {m!r} (measured "
                f"{m.levels(whole)[0]:g}), so no generalization can: relax the model")
    strategy_code = strategy_code_of(strategy)
    cols = table.quasi_identifiers
    # the kernel is bound by memory traffic: the narrowest integer type that holds codes
    code_type = np.int16 if all(c.cardinality < 2**15 for c in cols) else np.int32
    Xs = np.empty((2, n, d), dtype=code_type)
    Xs[0] = table.qi_matrix
    Rs = np.empty((2, n), dtype=np.int64)
    Rs[0] = np.arange(n)
    columns = _column_tables(cols)
    all_dims = (1 << d) - 1
    parts = kernel.first_round(Xs[0])
    done = kernel.new_done(n, min_size)
    n_done = 0
    rounds = 0
    while len(parts[0]):
        rounds += 1
        starts, ends, side, excluded, tried = parts[:5]
        proposal = kernel.propose(Xs, Rs, columns, parts, min_size, strategy_code,
                                  seed + rounds, PARALLEL_ROWS)
        dim, cut_le, cut_lt = proposal[:3]
        can = dim >= 0
        part_of_row = None if counter is None else counter.parts_of_rows(starts)
        ok_le = can & _allowable(starts, cut_le, ends, min_size, heavy, sensitive,
                                      Rs, side, weights, counter, part_of_row)
        ok_lt = can & _allowable(starts, cut_lt, ends, min_size, heavy, sensitive,
                                      Rs, side, weights, counter, part_of_row)
        # of two allowable cuts take the more balanced one
        middle = (starts + ends) / 2
        take_lt = ok_lt & (~ok_le | (np.abs(cut_lt - middle) < np.abs(cut_le - middle)))
        cut = np.where(take_lt, cut_lt, np.where(ok_le, cut_le, -1))
        # a cut that broke a model: try the partition's next dimension, if any is left
        tried_now = excluded | tried | (1 << np.maximum(dim, 0))
        keep_trying = can & (cut < 0) & ((tried_now & all_dims) != all_dims)
        if counter is not None and part_of_row is not None:
            cut_parts = np.flatnonzero(cut >= 0)
            counter.follow(_segment_rows(Rs, side, cut_parts, starts, ends), starts, cut,
                           ends, part_of_row, cut_parts)
        parts, n_done = kernel.advance(parts, proposal, cut, take_lt, keep_trying,
                                       min_size, remove_cut_dimension,
                                       single_dimensional, done, n_done)
    result = _partitioning(Rs, done[0][:n_done], done[1][:n_done], done[2][:n_done], rounds)
    _check_whole_tables(result, [m for m in afterwards if m.population_table is None])
    return result


def _check_whole_tables(result: Partition, models: Sequence[PrivacyModel]) -> None:
    """Refuse the partition when a model judging the whole table fails on its classes."""
    if not models:
        return
    classes = Classes.from_sizes(result.sizes)
    for m in models:
        verdict = m.verdict(classes)
        if not verdict.passed:
            raise InputError(
                f"Mondrian's classes do not meet {m.title()}: measured {verdict.measure} = "
                f"{verdict.measured:.6g}. The model judges the whole table, so no cut can "
                f"keep it: add a model that merges small classes (a larger -k) or relax it")


def _allowable(starts: np.ndarray, cuts: np.ndarray, ends: np.ndarray, min_size: int,
               heavy: Sequence[PrivacyModel], sensitive: Sequence[SensitiveAttribute],
               Rs: np.ndarray, side: np.ndarray,
               weights: np.ndarray | None = None, counter: PopulationCounter | None = None,
               part_of_row: np.ndarray | None = None) -> np.ndarray:
    """Per partition: do both halves of the cut satisfy every model?"""
    ok = (cuts - starts >= min_size) & (ends - cuts >= min_size)
    if not heavy or not ok.any():
        return ok
    # both halves of every candidate that passed the size test, as consecutive classes
    idx = np.flatnonzero(ok)
    s, c, e = starts[idx], cuts[idx], ends[idx]
    sizes = np.stack([c - s, e - c], axis=1).reshape(-1)
    # the halves are consecutive: together they are the partition's segment
    picked = _segment_rows(Rs, side, idx, starts, ends)
    attrs = [a.reordered(a.codes[picked]) for a in sensitive]
    halves = Classes.from_sizes(sizes, attrs,
                                weights=None if weights is None else weights[picked])
    if counter is not None and part_of_row is not None:
        pair = np.full(len(starts), -1, dtype=np.int64)
        pair[idx] = np.arange(len(idx))
        pair_of_row = np.where(part_of_row >= 0, pair[np.maximum(part_of_row, 0)], -1)
        _, segments = counter.cover(picked, sizes, pair_of_row)
        halves.population_counts.update(counter.counts(segments, len(sizes)))
    good = np.ones(len(sizes), dtype=bool)
    for m in heavy:
        good &= m.holds(halves)
    ok[idx] = good[0::2] & good[1::2]
    return ok


def _segment_rows(Rs: np.ndarray, side: np.ndarray, idx: np.ndarray, starts: np.ndarray,
                  ends: np.ndarray) -> np.ndarray:
    """The original rows of the partitions ``idx``, segment after segment."""
    s, e = starts[idx], ends[idx]
    sizes = e - s
    offsets = np.repeat(s - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    positions = np.arange(int(sizes.sum()), dtype=np.int64) + offsets
    return Rs[np.repeat(side[idx], sizes), positions]


def _partitioning(Rs: np.ndarray, starts: np.ndarray, ends: np.ndarray, sides: np.ndarray,
                  rounds: int) -> Partition:
    """Final segments, in row-position order, with the original rows they hold."""
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    held_in_1 = np.repeat(sides[order].astype(bool), ends - starts)
    rows = np.where(held_in_1, Rs[1], Rs[0])
    return Partition(rows, starts, ends, rounds)


def _column_tables(cols: Sequence[EncodedColumn]) -> tuple[np.ndarray, ...]:
    """The static description of the QIs the kernel works with (see its ``columns``)."""
    mags = np.concatenate([c.magnitudes for c in cols]) if cols else np.zeros(0)
    mag_offsets = np.concatenate([[0], np.cumsum([c.cardinality for c in cols])]).astype(
        np.int64)
    spans = np.array([c.domain_span for c in cols], dtype=np.float64)
    cards = np.array([c.cardinality for c in cols], dtype=np.int64)
    # a small categorical column is as wide as the values it holds, not its code span
    unordered = np.array([not c.kind.is_ordered and c.hierarchy is None
                          and 2 < c.cardinality <= 64 for c in cols], dtype=bool)
    return (mags, mag_offsets, spans, cards, unordered, *_hierarchy_tables(cols))


def _hierarchy_tables(cols: Sequence[EncodedColumn]) -> tuple[np.ndarray, ...]:
    """Per column with a usable hierarchy (its subtrees are runs of codes), the node of
    every (code, level) and the number of leaves under it, flattened for the kernel. The
    missing code, if any, hangs right under the root."""
    tree = np.zeros(len(cols), dtype=bool)
    nodes: list[np.ndarray] = []
    under: list[np.ndarray] = []
    offsets = np.zeros(len(cols), dtype=np.int64)
    heights = np.ones(len(cols), dtype=np.int64)
    position = 0
    for j, col in enumerate(cols):
        offsets[j] = position
        if not col.hierarchy_is_contiguous:
            continue
        hierarchy = col.hierarchy
        assert hierarchy is not None and col.hierarchy_leaf is not None
        leaf = col.hierarchy_leaf
        safe = np.maximum(leaf, 0)
        code_nodes = hierarchy.node_ids[safe].astype(np.int32)
        code_under = hierarchy.subtree_sizes[safe].astype(np.float64)
        missing = leaf < 0
        if missing.any():
            code_nodes[missing, :-1] = -1  # a node of its own below the root
            code_under[missing, :-1] = 1.0
        tree[j] = True
        heights[j] = hierarchy.height
        nodes.append(code_nodes.reshape(-1))
        under.append(code_under.reshape(-1))
        position += code_nodes.size
    flat_nodes = np.concatenate(nodes) if nodes else np.zeros(1, np.int32)
    flat_under = np.concatenate(under) if under else np.zeros(1, np.float64)
    return tree, flat_nodes, flat_under, offsets, heights
