"""Incremental (k,e)-anonymity that publishes when people leave: lasting groups with
placeholders (issue 22; the chapter's covering partition is :mod:`.ke_partition`).

Why. Under the chapter's covering rule (Lemma 1) a release after departures can be
impossible: the values of those who left vanish, so what a returning record's groups
still share may fall below (k,e), and subtracting the survivors' values from an old group
leaves the leavers' own. And with insertions only, each new group must cover every old
group it meets while holding its newcomers' k values spanning e on their own, so groups
merge release after release. Both come from a group's multiset changing between releases.

The design. A group, once published, is a *slot* that keeps its multiset for good: it is
published whenever one of its members is in the table, its members' rows real and the
values of its members who are not (they left) as *placeholder* rows -- blank
quasi-identifiers, a value of the group as every row of a permuted release has, the count
per group published beside the release -- like m-invariance's counterfeits (Xiao & Tao
2007), but never made up: a placeholder holds the value of a member who left. A slot none
of whose members is in the table is not published (it comes back, whole, with the first
member who returns). Records new to the table form groups of their own, the one-shot
optimal partition of the newcomers alone: a newcomer put into an earlier group would be
exposed by subtracting that group's earlier multiset (the difference attack), so the
newcomers of a group must meet (k,e) by themselves anyway, and a group of newcomers alone
does that at the least cost.

What it guarantees. Every record's groups over all releases publish one value set, its
slot's, which met (k,e) when first published: intersecting a person's groups leaves that
set, and counting (the qi adversary) finds every release's multiset of the slot the same,
with placeholders that may hold any of its values. Leavers are exposed by nothing: their
values stay in their group. No group ever merges; the price is the placeholder rows and
that newcomers' groups overlap the old ones in value (``benchmarks/ke_leavers.py``
measures each release against the one-shot optimum of the same table).

A record whose value is not in its slot's multiset (its value changed since) is refused,
naming rows, never values. Records the history knew before slots existed (a history whose
earlier releases used the covering partition) and that come back without a slot join the
newcomers' groups if what they have left still meets (k,e) there, else the release is
refused naming them (:class:`~anonkit.algorithms.ke_partition.BlockedRecords`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from anonkit.algorithms.ke_partition import (
    KEY_DTYPE,
    BlockedRecords,
    Blocker,
    KEPartition,
    Slots,
    ValuesLeft,
    _compact,
    group_multisets,
    group_value_sets,
    optimal_partition,
    spread,
)
from anonkit.errors import InputError
from anonkit.models.base import exact_number


@dataclass(frozen=True)
class PlaceholderRelease:
    """A release with lasting groups: ``part`` covers the input rows followed by the
    placeholder rows (``placeholder_values``, one per row), groups numbered by their
    smallest value; ``knowledge`` is what the next release continues from."""

    part: KEPartition
    placeholder_values: np.ndarray  # float64, (n_placeholders,)
    knowledge: ValuesLeft
    continuing: int  # input rows in the slot they were in before
    fresh: int  # input rows in new groups
    retired: int  # slots with no member in the table (not published now)

    def placeholders_per_group(self) -> np.ndarray:
        n_rows = len(self.part.order) - len(self.placeholder_values)
        group = self.part.group_ids()[n_rows:]
        return np.bincount(group, minlength=self.part.n_groups).astype(np.int64)


def _lookup(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Per key, its position in ``sorted_keys``, or -1."""
    out = np.full(len(keys), -1, dtype=np.int64)
    if not len(sorted_keys) or not len(keys):
        return out
    pos = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    hit = sorted_keys[pos] == keys
    out[hit] = pos[hit]
    return out


def _entries(slots: Slots, slot: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per (slot, value) pair, the index of that value in the slot's multiset, or -1."""
    entry_slot = np.repeat(np.arange(slots.n_slots, dtype=np.int64), np.diff(slots.ptr))
    if not len(entry_slot) or not len(values):
        return np.full(len(values), -1, dtype=np.int64)
    # one sort ranks every value; entries are sorted by slot, then value: one code each
    universe, rank = np.unique(np.concatenate([slots.values, values]), return_inverse=True)
    width = np.int64(len(universe))
    entry_code = entry_slot * width + rank[:len(entry_slot)]
    code = slot * width + rank[len(entry_slot):]
    order = np.argsort(code, kind="stable")  # sorted needles: the search reads in order
    pos = np.empty(len(code), dtype=np.int64)
    pos[order] = np.minimum(np.searchsorted(entry_code, code[order]), len(entry_code) - 1)
    return np.where(entry_code[pos] == code, pos, -1).astype(np.int64)


def _rows(rows: np.ndarray) -> str:
    shown = ", ".join(str(int(r)) for r in rows[:5])
    return shown + (f" and {len(rows) - 5} more" if len(rows) > 5 else "")


def placeholder_partition(values: np.ndarray, keys: np.ndarray, state: ValuesLeft, k: int,
                          e: float, *, places: int | None = None,
                          name: str = "S") -> PlaceholderRelease:
    """The next release with lasting groups (see the module's docstring).

    ``keys``: per input row its history pseudonym (S16); ``state``: the knowledge with
    slots the previous release carried forward. Raises InputError when a record's value
    left its slot's multiset or the newcomers cannot form (k,e) groups of their own, and
    :class:`BlockedRecords` when a record back without a slot would be narrowed."""
    if state.slots is None:
        raise ValueError("placeholder_partition needs a state with slots")
    vals = np.ascontiguousarray(values, dtype=np.float64)
    if np.isnan(vals).any():
        raise InputError(f"(k,e)-anonymity: the sensitive attribute has "
                         f"{int(np.isnan(vals).sum())} missing values; fill or drop those "
                         f"rows first")
    keys = np.asarray(keys, dtype=KEY_DTYPE)
    slots = state.slots
    n = len(vals)
    record = _lookup(state.keys, keys)
    slot = np.full(n, -1, dtype=np.int64)
    slot[record >= 0] = slots.slot_of[record[record >= 0]]

    # members back in their slot: their values must be among the slot's
    cont = np.flatnonzero(slot >= 0)
    entry = _entries(slots, slot[cont], vals[cont])
    used = np.bincount(entry[entry >= 0], minlength=len(slots.values))
    changed = (entry < 0) | (used[np.maximum(entry, 0)] > slots.counts[np.maximum(entry, 0)])
    if changed.any():
        rows = cont[changed]
        raise InputError(f"(k,e)-anonymity: {len(rows)} record{'s' if len(rows) != 1 else ''} "
                         f"(data rows {_rows(rows)}) hold a value of {name!r} their earlier "
                         f"group did not publish for them: their value changed since. Their "
                         f"group keeps its values for good; publish a changed record under a "
                         f"new key")
    entry_slot = np.repeat(np.arange(slots.n_slots, dtype=np.int64), np.diff(slots.ptr))
    active = np.zeros(slots.n_slots, dtype=bool)
    active[slot[cont]] = True
    # the values of members not in the table stay, as placeholder rows
    left = np.where(active[entry_slot], slots.counts - used, 0)
    placeholder_slot = np.repeat(entry_slot, left)
    placeholder_values = np.repeat(slots.values, left)

    # newcomers: the one-shot optimum of their values alone
    fresh = np.flatnonzero(slot < 0)
    fresh_part: KEPartition | None = None
    if len(fresh):
        try:
            fresh_part = optimal_partition(vals[fresh], k, e, places=places, name=name)
        except InputError:
            raise InputError(
                f"(k,e)-anonymity: the {len(fresh)} record{'s' if len(fresh) != 1 else ''} "
                f"new to this dataset cannot form groups of their own with k={k} distinct "
                f"values of {name!r} spanning e={exact_number(e)}, and a newcomer put into "
                f"an earlier group would be exposed by subtracting that group's earlier "
                f"values; publish them with a later release, when more have joined") from None
    fresh_group = fresh_part.group_ids() if fresh_part is not None else \
        np.zeros(0, dtype=np.int64)
    n_fresh_groups = fresh_part.n_groups if fresh_part is not None else 0

    # groups: the active slots, then the newcomers' groups; numbered by smallest value
    active_slots = np.flatnonzero(active)
    group_of_slot = np.full(slots.n_slots, -1, dtype=np.int64)
    group_of_slot[active_slots] = np.arange(len(active_slots))
    row_group = np.empty(n, dtype=np.int64)
    row_group[cont] = group_of_slot[slot[cont]]
    row_group[fresh] = len(active_slots) + fresh_group
    all_values = np.concatenate([vals, placeholder_values])
    all_groups = np.concatenate([row_group, group_of_slot[placeholder_slot]])
    n_groups = len(active_slots) + n_fresh_groups
    order = np.lexsort((all_values, all_groups))
    sizes = np.bincount(all_groups, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    lowest = all_values[order][starts[:-1]]
    highest = all_values[order][starts[1:] - 1]
    rank = np.empty(n_groups, dtype=np.int64)
    rank[np.lexsort((highest, lowest))] = np.arange(n_groups)
    all_groups = rank[all_groups]
    order = np.lexsort((all_values, all_groups))
    sizes = np.bincount(all_groups, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    v = all_values[order]
    cost = float(spread(v[starts[1:] - 1], v[starts[:-1]], places).sum()) if n_groups else 0.0
    part = KEPartition(order, v, starts, cost, fresh_part.checks if fresh_part else 0,
                       breach_checks=len(cont) + len(fresh))

    knowledge = _next_knowledge(state, keys, record, slot, cont, fresh, fresh_part,
                                fresh_group, rank, group_of_slot, len(active_slots), k, e,
                                places)
    return PlaceholderRelease(part, placeholder_values, knowledge, len(cont), len(fresh),
                              int(slots.n_slots - active.sum()))


def _next_knowledge(state: ValuesLeft, keys: np.ndarray, record: np.ndarray,
                    slot: np.ndarray, cont: np.ndarray, fresh: np.ndarray,
                    fresh_part: KEPartition | None, fresh_group: np.ndarray,
                    rank: np.ndarray, group_of_slot: np.ndarray, n_active: int, k: int,
                    e: float, places: int | None) -> ValuesLeft:
    """The knowledge and slots after this release. A member of a slot keeps what it had
    (its slot's values are all published again); a newcomer gets its group's values and a
    new slot; a record back without a slot keeps what its new group's values leave of its
    knowledge (refused below (k,e)); everyone else keeps theirs: the values of those who
    left stay published, so nothing is subtracted."""
    assert state.slots is not None
    slots = state.slots
    n_old_sets = len(state.ptr) - 1
    if fresh_part is not None:
        gptr, gvalues = group_value_sets(fresh_part)
        mptr, mvalues, mcounts = group_multisets(fresh_part)
    else:
        gptr, gvalues = np.zeros(1, dtype=np.int64), np.zeros(0)
        mptr, mvalues, mcounts = np.zeros(1, dtype=np.int64), np.zeros(0), \
            np.zeros(0, dtype=np.int64)
    n_fresh_groups = len(gptr) - 1
    set_of = np.empty(len(keys), dtype=np.int64)
    set_of[cont] = state.set_of[record[cont]]
    set_of[fresh] = n_old_sets + fresh_group
    extra_sets: list[np.ndarray] = []
    # rare: records known before slots existed, back now (each is checked on its own)
    carried = fresh[record[fresh] >= 0]
    blockers: list[Blocker] = []
    for row in carried.tolist():
        had = state.set_of[record[row]]
        known = state.values[state.ptr[had]:state.ptr[had + 1]]
        g = int(fresh_group[np.searchsorted(fresh, row)])
        now = np.intersect1d(known, gvalues[gptr[g]:gptr[g + 1]], assume_unique=True)
        width = float(spread(now[-1], now[0], places)) if len(now) else 0.0
        if len(now) < k or width < e:
            blockers.append(Blocker(int(row), -1, len(now), width))
        set_of[row] = n_old_sets + n_fresh_groups + len(extra_sets)
        extra_sets.append(now)
    if blockers:
        raise BlockedRecords(blockers)
    sizes = np.array([len(x) for x in extra_sets], dtype=np.int64)
    all_ptr = np.concatenate([state.ptr, state.ptr[-1] + gptr[1:],
                              state.ptr[-1] + gptr[-1] + np.cumsum(sizes)]).astype(np.int64)
    all_values = np.concatenate([state.values, gvalues, *extra_sets])

    new_slot = np.empty(len(keys), dtype=np.int64)
    new_slot[cont] = slot[cont]
    new_slot[fresh] = slots.n_slots + fresh_group
    slot_group = np.concatenate([group_of_slot, n_active + np.arange(n_fresh_groups)])
    slot_group = np.where(slot_group >= 0, rank[np.maximum(slot_group, 0)], -1)
    lasting_ptr = np.concatenate([slots.ptr, slots.ptr[-1] + mptr[1:]]).astype(np.int64)
    lasting_values = np.concatenate([slots.values, mvalues])
    lasting_counts = np.concatenate([slots.counts, mcounts]).astype(np.int64)

    present = np.zeros(len(state.keys), dtype=bool)
    present[record[record >= 0]] = True
    absent = ~present
    all_keys = np.concatenate([state.keys[absent], keys])
    all_sets = np.concatenate([state.set_of[absent], set_of])
    all_slots = np.concatenate([slots.slot_of[absent], new_slot])
    # per record its group in this release: a member who left is there as a placeholder
    group = np.where(all_slots >= 0, slot_group[np.maximum(all_slots, 0)], -1)
    order = np.argsort(all_keys, kind="stable")
    lasting = Slots(all_slots[order], lasting_ptr, lasting_values, lasting_counts)
    return _compact(ValuesLeft(all_keys[order], all_sets[order], all_ptr, all_values,
                               group[order], lasting))
