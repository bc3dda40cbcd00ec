"""m-invariance (Xiao and Tao, SIGMOD 2007): the partition steps, on arrays.

A *bucket* is keyed by a *signature*, a set of at least m distinct sensitive values; it holds
one list of tuples per value of the signature, all lists of one length N. Each release is
cut from buckets into classes holding exactly one tuple per value of their signature (so
every class is m-unique), and a record keeps its signature in every release it appears in:
intersecting its classes across releases always leaves the signature's values.

The phases of a later release (spec 001, and the notes on it in the specification index):

1. *division* (in :func:`balance`): every record with a signature from the history goes to
   the bucket of that signature -- also a record that left and came back;
2. *balancing* (:func:`balance`): each bucket's lists are filled to the longest with new
   tuples of the list's value, else with *counterfeit* tuples (made up; their count per
   class is published); new tuples are held back while the rest of them would not be
   m-eligible;
3. *assignment* (:func:`assign`): the remaining new tuples are dealt into groups of >= m
   distinct values; groups with one signature join one bucket (an existing one if it has
   that signature);
4. *the split* (:func:`perimeter_split`): a bucket is cut in two at the split index with
   the lowest size-weighted normalised half-perimeter of both halves, over every QI, until
   each class holds one tuple per value.

The first release is phases 3 and 4 on the whole table. Everything is vectorised: no loop
runs over rows; loops run over distinct sensitive values or over the split's levels.

The QIs enter as coordinates (a float per tuple and QI) with each QI's range; categorical
QIs by their code order (the hierarchy's leaf order when one is given). Nothing here knows
the history, pandas or files: :mod:`anonkit.releases.minvariance` is the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from anonkit.errors import InputError

NO_SIGNATURE = -1


# -- signatures ---------------------------------------------------------------------------


@dataclass
class Signatures:
    """A table of signatures: signature ``i`` is ``codes[ptr[i]:ptr[i + 1]]`` (sorted
    distinct value codes)."""

    ptr: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    codes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        self._index = {tuple(self.members(i).tolist()): i for i in range(len(self))}

    def __len__(self) -> int:
        return len(self.ptr) - 1

    def members(self, i: int) -> np.ndarray:
        return self.codes[self.ptr[i]:self.ptr[i + 1]]

    def sizes(self) -> np.ndarray:
        return np.diff(self.ptr)

    def id_of(self, values: tuple[int, ...]) -> int:
        """The id of the signature with these (sorted, distinct) values, added if new."""
        found = self._index.get(values)
        if found is not None:
            return found
        self.codes = np.concatenate([self.codes, np.asarray(values, dtype=np.int64)])
        self.ptr = np.append(self.ptr, len(self.codes))
        self._index[values] = len(self) - 1
        return len(self) - 1

    def _member_keys(self, n_values: int) -> np.ndarray:
        """``signature * n_values + code`` of every member, sorted (signatures in id order,
        codes sorted within each)."""
        owner = np.repeat(np.arange(len(self), dtype=np.int64), self.sizes())
        return owner * n_values + self.codes

    def rank_of(self, sig: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Per pair, the position of ``values[i]`` in signature ``sig[i]``, -1 if absent."""
        sig = np.asarray(sig, dtype=np.int64)
        values = np.asarray(values, dtype=np.int64)
        out = np.full(len(sig), -1, dtype=np.int64)
        if not len(sig) or not len(self.codes):
            return out
        n_values = int(max(self.codes.max(), values.max())) + 1
        member_keys = self._member_keys(n_values)
        keys = sig * n_values + values
        pos = np.minimum(np.searchsorted(member_keys, keys), len(member_keys) - 1)
        hit = member_keys[pos] == keys
        out[hit] = pos[hit] - self.ptr[sig[hit]]
        return out

    def contains(self, sig: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Per pair, whether ``values[i]`` is in signature ``sig[i]``."""
        return self.rank_of(sig, values) >= 0

    def ids_of_groups(self, group: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Per group (ids ``0 .. G - 1``), the id of the signature made of the distinct
        values of its members (added when new): one sort, then one dictionary look-up per
        distinct signature, not per group."""
        group = np.asarray(group, dtype=np.int64)
        values = np.asarray(values, dtype=np.int64)
        if not len(group):
            return np.zeros(0, dtype=np.int64)
        n_values = int(values.max()) + 1
        pairs = np.unique(group * n_values + values)
        pair_group, pair_value = pairs // n_values, pairs % n_values
        n_groups = int(group.max()) + 1
        sizes = np.bincount(pair_group, minlength=n_groups)
        width = int(sizes.max())
        rank = np.arange(len(pairs)) - np.repeat(np.r_[0, np.cumsum(sizes)[:-1]], sizes)
        matrix = np.full((n_groups, width), -1, dtype=np.int64)
        matrix[pair_group, rank] = pair_value
        if width * np.log2(n_values + 1) < 62:  # each row as one number: a 1-d unique
            weights = (n_values + 1) ** np.arange(width, dtype=np.int64)
            _, first, inverse = np.unique((matrix + 1) @ weights, return_index=True,
                                          return_inverse=True)
            distinct = matrix[first]
        else:
            distinct, inverse = np.unique(matrix, axis=0, return_inverse=True)
        ids = np.array([self.id_of(tuple(int(v) for v in row if v >= 0))
                        for row in distinct], dtype=np.int64)
        return ids[np.asarray(inverse).reshape(-1)]


# -- feasibility ----------------------------------------------------------------------------


class InfeasibleError(InputError):
    """No m-eligible partition exists: a value holds more than 1/m of the tuples."""


def require_eligible(values: np.ndarray, m: int, names: np.ndarray | None = None,
                     what: str = "rows") -> None:
    """Refuse (InputError, exit 2) values none of which may exceed a share of 1/m,
    naming the value, its share and the largest m that is feasible."""
    if not len(values):
        return
    counts = np.bincount(values)
    top = int(np.argmax(counts))
    n = len(values)
    if int(counts[top]) * m <= n:
        return
    name = names[top] if names is not None else top
    largest = n // int(counts[top])
    fix = (f"the largest feasible m is {largest}" if largest >= 2 else
           "no m >= 2 is feasible")
    raise InfeasibleError(
        f"m-invariance with m={m} is infeasible: the sensitive value {name!r} is "
        f"{int(counts[top])} of {n} {what} ({counts[top] / n:.1%}), more than 1/m = "
        f"{1 / m:.1%}, so no class of {m} distinct values can hold them all; {fix} "
        f"(or add rows with other values)")


# -- phase 2: balancing ------------------------------------------------------------------


@dataclass
class Balanced:
    bucket_sig: np.ndarray  # (n_buckets,) signature ids of the buckets from division
    bucket_n: np.ndarray  # (n_buckets,) list length N after balancing
    member_slot: np.ndarray  # slots in the buckets (real tuples and counterfeits)
    member_bucket: np.ndarray
    member_value: np.ndarray
    counterfeit_values: np.ndarray
    counterfeit_like: np.ndarray
    remaining: np.ndarray  # new tuples left for assignment


def balance(values: np.ndarray, known: np.ndarray, coords: np.ndarray, m: int,
            signatures: Signatures, rng: np.random.Generator) -> Balanced:
    """Division and balancing: the buckets of the records with a signature, each list
    filled to the bucket's longest with new tuples of its value (nearest first along the
    first QI), else with counterfeits; new tuples are kept back while the others would
    not be m-eligible."""
    n = len(values)
    kept = np.flatnonzero(known != NO_SIGNATURE)
    new = np.flatnonzero(known == NO_SIGNATURE)
    n_values = int(max(values.max(initial=-1), signatures.codes.max(initial=-1))) + 1
    bucket_sig, bucket_of_kept = np.unique(known[kept], return_inverse=True)
    n_buckets = len(bucket_sig)
    # (bucket, value) pairs of every bucket's signature, and their surviving counts
    sizes = signatures.sizes()[bucket_sig]
    pair_bucket = np.repeat(np.arange(n_buckets, dtype=np.int64), sizes)
    pair_value = signatures.codes[_runs(signatures.ptr[bucket_sig], sizes)]
    pair_key = pair_bucket * n_values + pair_value
    kept_key = bucket_of_kept.astype(np.int64) * n_values + values[kept]
    pair_count = np.zeros(len(pair_key), dtype=np.int64)
    if len(kept):
        pos = np.searchsorted(pair_key, kept_key)  # pairs are sorted by bucket, value
        np.add.at(pair_count, pos, 1)
    bucket_n = (np.maximum.reduceat(pair_count, np.r_[0, np.cumsum(sizes)[:-1]])
                if n_buckets else np.zeros(0, dtype=np.int64))
    deficit = bucket_n[pair_bucket] - pair_count

    # how many new tuples of each value fill lists: all that are needed, less those kept
    # back for the remaining new tuples to be m-eligible
    new_count = np.bincount(values[new], minlength=n_values)
    demand = np.bincount(pair_value, weights=deficit, minlength=n_values).astype(np.int64)
    fill = np.minimum(new_count, demand)
    fill = _keep_eligible(new_count, fill, m)

    # bucket positions along the first QI, for matching new tuples to nearby buckets
    centre = np.zeros(n_buckets)
    if len(kept) and coords.shape[1]:
        centre = np.bincount(bucket_of_kept, weights=coords[kept, 0],
                             minlength=n_buckets) / np.maximum(
            np.bincount(bucket_of_kept, minlength=n_buckets), 1)
    used = np.zeros(n, dtype=bool)
    member_slot = [kept]
    member_bucket = [bucket_of_kept.astype(np.int64)]
    member_value = [values[kept]]
    fake_value: list[np.ndarray] = []
    fake_bucket: list[np.ndarray] = []
    new_by_value = new[np.lexsort((coords[new, 0] if coords.shape[1] else new,
                                   values[new]))]
    starts = np.r_[0, np.cumsum(new_count)]
    for v in np.flatnonzero(demand):
        pairs = np.flatnonzero((pair_value == v) & (deficit > 0))
        pairs = pairs[np.argsort(centre[pair_bucket[pairs]], kind="stable")]
        slots_bucket = np.repeat(pair_bucket[pairs], deficit[pairs])  # one per missing tuple
        k = int(fill[v])
        if k:
            candidates = new_by_value[starts[v]:starts[v + 1]]
            # spread the chosen tuples and the filled places evenly along the first QI
            pick = candidates[((np.arange(k) + 0.5) * len(candidates) / k).astype(np.int64)]
            place = ((np.arange(k) + 0.5) * len(slots_bucket) / k).astype(np.int64)
            used[pick] = True
            member_slot.append(pick)
            member_bucket.append(slots_bucket[place])
            member_value.append(np.full(k, v, dtype=np.int64))
            rest = np.ones(len(slots_bucket), dtype=bool)
            rest[place] = False
            slots_bucket = slots_bucket[rest]
        fake_bucket.append(slots_bucket)
        fake_value.append(np.full(len(slots_bucket), v, dtype=np.int64))
    fb = np.concatenate(fake_bucket) if fake_bucket else np.zeros(0, dtype=np.int64)
    fv = np.concatenate(fake_value) if fake_value else np.zeros(0, dtype=np.int64)
    like = _copy_from(fb, bucket_of_kept, kept, rng)
    n_fake = len(fb)
    return Balanced(bucket_sig, bucket_n,
                    np.concatenate([*member_slot, n + np.arange(n_fake)]).astype(np.int64),
                    np.concatenate([*member_bucket, fb]).astype(np.int64),
                    np.concatenate([*member_value, fv]).astype(np.int64),
                    fv, like, new[~used[new]])


def _copy_from(target_group: np.ndarray, group_of: np.ndarray, rows: np.ndarray,
               rng: np.random.Generator) -> np.ndarray:
    """Per counterfeit in group ``target_group[i]``, a random real row of that group (rows
    ``rows`` with groups ``group_of``) whose QIs it copies."""
    if not len(target_group):
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(group_of, kind="stable")
    counts = np.bincount(group_of, minlength=int(target_group.max()) + 1)
    first = np.r_[0, np.cumsum(counts)[:-1]]
    pick = first[target_group] + (rng.random(len(target_group)) *
                                  counts[target_group]).astype(np.int64)
    return rows[order[pick]].astype(np.int64)


def _keep_eligible(available: np.ndarray, fill: np.ndarray, m: int) -> np.ndarray:
    """Lower ``fill`` (new tuples used in balancing, per value) until the tuples left over
    (``available - fill``) are m-eligible: no value above a share of 1/m. Keeping back a
    tuple of any value but the most frequent one grows the rest without growing its top;
    the values with the fewest left are kept back first. Stops when nothing more helps
    (the assignment then adds counterfeits)."""
    fill = fill.copy()
    while True:
        rest = available - fill
        total = int(rest.sum())
        top = int(rest.max(initial=0))
        need = m * top - total
        if total == 0 or need <= 0:
            return fill
        candidates = np.flatnonzero((fill > 0) & (rest < top))
        if not len(candidates):
            candidates = np.flatnonzero(fill > 0)
            if len(candidates) <= 1:
                return fill
            v = candidates[np.argmin(rest[candidates])]
            fill[v] -= 1
            continue
        v = candidates[np.argmin(rest[candidates])]
        fill[v] -= min(int(fill[v]), need, top - int(rest[v]))


# -- phase 3: assignment -------------------------------------------------------------------


def deal(values: np.ndarray, coords: np.ndarray, m: int) -> np.ndarray:
    """Groups of distinct values for m-eligible ``values``: listed value by value (most
    frequent first, each value's tuples along the QIs), position ``p`` goes to group
    ``p mod G`` with ``G = n // m``. A value fills at most ``G`` consecutive positions, so
    never twice in one group, and every group gets ``m`` to ``2m - 1`` tuples. Returns the
    group per tuple."""
    n = len(values)
    groups = n // m
    counts = np.bincount(values)
    if not groups or int(counts.max()) > groups:
        raise ValueError(f"the values are not {m}-eligible: make them so first")
    keys = [coords[:, q] for q in reversed(range(coords.shape[1]))]
    order = np.lexsort((*keys, values, -counts[values]))
    group = np.empty(n, dtype=np.int64)
    group[order] = np.arange(n) % groups
    return group


def assign(values: np.ndarray, coords: np.ndarray, m: int, signatures: Signatures
           ) -> tuple[np.ndarray, np.ndarray]:
    """The remaining new tuples (m-eligible) as rows of buckets: per tuple its signature id
    and its row number within that bucket's new rows."""
    if not len(values):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    group = deal(values, coords, m)
    sig_group = signatures.ids_of_groups(group, values)
    n_groups = len(sig_group)
    # row within the bucket: groups of one signature, in group order
    group_row = np.empty(n_groups, dtype=np.int64)
    by_sig = np.argsort(sig_group, kind="stable")
    counts = np.bincount(sig_group)
    group_row[by_sig] = np.arange(n_groups) - np.repeat(np.r_[0, np.cumsum(counts)[:-1]],
                                                        counts)
    return sig_group[group], group_row[group]


def eligible_with_counterfeits(values: np.ndarray, m: int, n_values: int
                               ) -> np.ndarray:
    """The fewest counterfeit values to add so that ``values`` (the new tuples left after
    balancing) become m-eligible: values of the least frequent codes first. Refuses when
    the domain has fewer than m values."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    counts = np.bincount(values, minlength=n_values).astype(np.int64)
    top = int(counts.max())
    need = m * top - int(counts.sum())
    if need <= 0:
        return np.zeros(0, dtype=np.int64)
    if n_values < m:
        raise InfeasibleError(f"m-invariance with m={m} is infeasible: the sensitive "
                              f"attribute has only {n_values} distinct values")
    added = np.zeros(n_values, dtype=np.int64)
    # raise the least frequent values towards the top, never above it
    while need > 0:
        room = top - (counts + added)
        candidates = np.flatnonzero(room > 0)
        if not len(candidates):  # every value at the top: each new round lifts the top
            added += 1
            top += 1
            need = m * top - int((counts + added).sum())
            continue
        v = candidates[np.argmin((counts + added)[candidates])]
        step = min(int(room[v]), need)
        added[v] += step
        need -= step
    return np.repeat(np.arange(n_values, dtype=np.int64), added)


# -- phase 4: the split -------------------------------------------------------------------


def perimeter_split(bucket: np.ndarray, value_rank: np.ndarray, coords: np.ndarray,
                    ranges: np.ndarray, *, weighted: bool = True) -> np.ndarray:
    """Split buckets into classes of one tuple per value (spec 001).

    ``bucket`` and ``value_rank`` give each slot's bucket and list (the rank of its value in
    the bucket's signature); every list of a bucket must have the same length N.
    ``coords[slot, q]`` is the slot's position on QI ``q`` and ``ranges[q]`` that QI's
    range. A segment of N rows per list is cut at the split index ``i`` in ``1 .. N - 1``
    of its lists sorted by one QI, scored by
    ``sum over halves of size * sum_q (max_q - min_q) / range_q`` (``weighted=False``: without
    the size); the lowest score wins, the earliest index and then the earliest QI on ties;
    until every segment holds one row per list. Returns the class per slot.

    Level-synchronous and vectorised: per QI, a permutation of the open slots sorted by
    (segment, list, coordinate) is kept from level to level by stable partitioning, so no
    level sorts; per level and QI, the extremes over the lists are reduced per split
    position, then accumulated forwards and backwards.
    """
    n_slots = len(bucket)
    bucket = np.asarray(bucket, dtype=np.int64)
    value_rank = np.asarray(value_rank, dtype=np.int64)
    n_q = coords.shape[1]
    class_of = np.full(n_slots, -1, dtype=np.int64)
    if not n_slots:
        return class_of
    # each QI as dense integer ranks: exact extremes whatever the accumulation order
    ranks = np.empty((n_q, n_slots), dtype=np.int32)  # int32: half the bytes to gather
    levels_of: list[np.ndarray] = []
    spans = np.where(np.asarray(ranges, dtype=np.float64) > 0, ranges, 1.0)
    for q in range(n_q):
        levels, ranks[q] = np.unique(coords[:, q], return_inverse=True)
        levels_of.append(levels)
    max_rank = int(ranks.max(initial=0)) + 1

    # segments: an open bucket part with s lists of n rows, laid out list after list
    seg_of = bucket.copy()
    n_buckets = int(bucket.max()) + 1
    seg_s = np.bincount(bucket, minlength=n_buckets)
    seg_lists = np.zeros(n_buckets, dtype=np.int64)
    np.maximum.at(seg_lists, bucket, value_rank + 1)
    if np.any(seg_s % np.maximum(seg_lists, 1)):
        raise ValueError("every list of a bucket must have the same length")
    seg_n = seg_s // np.maximum(seg_lists, 1)
    seg_s = seg_lists
    next_class = 0
    done = seg_n == 1
    if done.any():  # buckets of one row per list are classes already
        ids = np.cumsum(done) - 1
        mask = done[seg_of]
        class_of[mask] = ids[seg_of[mask]]
        next_class = int(done.sum())
    alive = np.flatnonzero(~done[seg_of])
    keep = ~done
    remap = np.cumsum(keep) - 1
    seg_s, seg_n = seg_s[keep], seg_n[keep]
    perms = [alive[np.lexsort((ranks[q][alive], value_rank[alive], remap[seg_of[alive]]))]
             for q in range(n_q)]
    seg_of = np.where(keep[seg_of], remap[seg_of], -1)
    # positions fit in 32 bits (checked): half the memory every per-slot step streams
    if n_slots >= 2**31:
        raise ValueError("the split handles fewer than 2**31 rows")
    perms = [p.astype(np.int32) for p in perms]
    while len(seg_s):
        n_seg = len(seg_s)
        size = (seg_s * seg_n).astype(np.int32)
        start = np.r_[0, np.cumsum(size)[:-1]].astype(np.int32)
        total = int(size.sum())
        # positions in the (segment, list, row) layout and the (segment, row, list) one
        seg_pos = np.repeat(np.arange(n_seg, dtype=np.int32), size)
        seg_start = start[seg_pos]
        local = np.arange(total, dtype=np.int32) - seg_start
        lists_n = seg_n.astype(np.int32)[seg_pos]
        row, lst_pos = np.divmod(local, lists_n)[::-1]
        to_rows = seg_start + row * seg_s.astype(np.int32)[seg_pos] + lst_pos
        by_rows = np.empty(total, dtype=np.int32)
        by_rows[to_rows] = np.arange(total, dtype=np.int32)
        cell_start = np.r_[0, np.cumsum(seg_n)[:-1]]  # per segment, its first (seg, row)
        n_cells = int(seg_n.sum())
        cell_seg = np.repeat(np.arange(n_seg), seg_n)
        cell_row = np.arange(n_cells) - cell_start[cell_seg]
        reduce_at = start[cell_seg] + cell_row * seg_s[cell_seg]
        # segment offsets that make one running maximum restart at every segment
        forward = cell_seg * (2 * max_rank)
        backward = (n_seg - 1 - cell_seg) * (2 * max_rank)
        best_score = np.full(n_seg, np.inf)
        best_q = np.zeros(n_seg, dtype=np.int64)
        best_i = np.ones(n_seg, dtype=np.int64)
        w_left = cell_row * seg_s[cell_seg] if weighted else np.ones(n_cells)
        w_right = (seg_n[cell_seg] - cell_row) * seg_s[cell_seg] if weighted \
            else np.ones(n_cells)
        for q in range(n_q):
            idx = perms[q][by_rows]  # slots in (segment, row, list) order
            left = np.zeros(n_cells)
            right = np.zeros(n_cells)
            r = ranks[:, idx]  # every QI at once: one gather, two reductions
            his = np.maximum.reduceat(r, reduce_at, axis=1).astype(np.int64)
            los = np.minimum.reduceat(r, reduce_at, axis=1).astype(np.int64)
            for q2 in range(n_q):
                hi, lo = his[q2], los[q2]
                pre_hi = _segment_cummax(hi, forward)
                pre_lo = -_segment_cummax(-lo, forward)
                suf_hi = _segment_cummax(hi, backward, reverse=True)
                suf_lo = -_segment_cummax(-lo, backward, reverse=True)
                levels = levels_of[q2]
                # split at row i: left = rows < i (prefix at i - 1), right = rows >= i
                left[1:] += (levels[pre_hi[:-1]] - levels[pre_lo[:-1]]) / spans[q2]
                right += (levels[suf_hi] - levels[suf_lo]) / spans[q2]
            score = w_left * left + w_right * right
            score[cell_row == 0] = np.inf
            seg_min = np.minimum.reduceat(score, cell_start)
            hit = np.flatnonzero(score == seg_min[cell_seg])
            first = hit[np.unique(cell_seg[hit], return_index=True)[1]]
            better = seg_min < best_score  # strictly: the earlier QI wins ties
            best_score = np.where(better, seg_min, best_score)
            best_q = np.where(better, q, best_q)
            best_i = np.where(better, cell_row[first], best_i)
        # which slots go left: rows < best_i in the chosen QI's order
        goes_left = np.zeros(n_slots, dtype=bool)
        for q in range(n_q):
            chosen = best_q[seg_pos] == q
            pos = np.flatnonzero(chosen & (row < best_i[seg_pos]))
            goes_left[perms[q][pos]] = True
        # children: left (s lists, best_i rows), right (s lists, n - best_i rows)
        child_n = np.stack([best_i, seg_n - best_i], axis=1).reshape(-1)
        child_s = np.repeat(seg_s, 2)
        finished = child_n == 1
        class_ids = np.full(2 * n_seg, -1, dtype=np.int64)
        class_ids[finished] = next_class + np.arange(int(finished.sum()))
        next_class += int(finished.sum())
        open_child = ~finished
        child_new = np.cumsum(open_child) - 1
        # every slot's child, then classes for the finished ones
        slots = perms[0]
        child_of_slot = 2 * seg_of[slots] + (~goes_left[slots])
        fin = finished[child_of_slot]
        class_of[slots[fin]] = class_ids[child_of_slot[fin]]
        new_seg = np.full(n_slots, -1, dtype=np.int64)
        new_seg[slots] = np.where(fin, -1, child_new[child_of_slot])
        # stable partition of every permutation by child: lists and order are kept
        n_left = best_i * seg_s
        # after the partition, segment k holds its left child then its right child
        is_right = local >= n_left[seg_pos]
        keep_pos = open_child[2 * seg_pos + is_right]
        for q in range(n_q):
            perms[q] = _stable_by_child(perms[q], ~goes_left[perms[q]], seg_pos, start,
                                        n_left)[keep_pos]
        seg_of = new_seg
        seg_s, seg_n = child_s[open_child], child_n[open_child]
    return class_of


def _stable_by_child(perm: np.ndarray, right: np.ndarray, seg_pos: np.ndarray,
                     start: np.ndarray, n_left: np.ndarray) -> np.ndarray:
    """``perm`` (segment ``k`` at ``start[k]``) with each segment's left slots first and its
    right slots after, both in their order: a stable partition by two running counts."""
    right = right.astype(np.int32)
    before = np.cumsum(right, dtype=np.int32) - right  # right slots before each position
    seg_start = start[seg_pos]
    right_before = before - before[seg_start]
    left_before = np.arange(len(perm), dtype=np.int32) - seg_start - right_before
    target = np.where(right == 1, seg_start + n_left.astype(np.int32)[seg_pos] + right_before,
                      seg_start + left_before)
    out = np.empty_like(perm)
    out[target] = perm
    return out


def _segment_cummax(x: np.ndarray, offset: np.ndarray, reverse: bool = False) -> np.ndarray:
    """The running maximum of ``x`` within each segment (forwards, or backwards), with
    ``offset`` growing by more than twice ``x``'s span per segment in the direction of
    travel: integers, so exact."""
    if reverse:
        return (np.maximum.accumulate((x + offset)[::-1]))[::-1] - offset
    return np.maximum.accumulate(x + offset) - offset


def _runs(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])``, vectorised."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    first = np.r_[0, np.cumsum(lengths)[:-1]]
    return np.repeat(np.asarray(starts, dtype=np.int64) - first, lengths) + np.arange(total)


def split_scores(lists: list[np.ndarray], ranges: np.ndarray, q: int, *,
                 weighted: bool = True) -> np.ndarray:
    """The score of every split index ``i = 1 .. N - 1`` of one bucket's ``lists`` (one
    (N, Q) coordinate array per value) sorted by QI ``q``, written plainly: the reference
    for the tests and the known-answer example of spec 001."""
    ordered = [lst[np.argsort(lst[:, q], kind="stable")] for lst in lists]
    spans = np.where(np.asarray(ranges, dtype=np.float64) > 0, ranges, 1.0)
    out = []
    for i in range(1, len(lists[0])):
        score = 0.0
        for half in ([o[:i] for o in ordered], [o[i:] for o in ordered]):
            stacked = np.concatenate(half)
            perimeter = 0.0
            for width in (stacked.max(axis=0) - stacked.min(axis=0)) / spans:
                perimeter += width  # in QI order, as the vectorised split adds them
            score += perimeter * (len(stacked) if weighted else 1)
        out.append(score)
    return np.asarray(out)


def reference_split(lists: list[np.ndarray], ranges: np.ndarray, *, weighted: bool = True
                    ) -> list[list[np.ndarray]]:
    """The split rule written plainly, for tests: ``lists`` holds one (N, Q) coordinate array
    per value; returns the final classes, each as one coordinate row per list."""
    if len(lists[0]) == 1:
        return [[lst[0] for lst in lists]]
    best: tuple[float, int, int] | None = None
    for q in range(lists[0].shape[1]):
        scores = split_scores(lists, ranges, q, weighted=weighted)
        i = int(np.argmin(scores))  # the earliest of equal scores
        if best is None or scores[i] < best[0]:  # the earlier QI keeps a tie
            best = (float(scores[i]), q, i + 1)
    assert best is not None
    _, q, i = best
    ordered = [lst[np.argsort(lst[:, q], kind="stable")] for lst in lists]
    return (reference_split([o[:i] for o in ordered], ranges, weighted=weighted) +
            reference_split([o[i:] for o in ordered], ranges, weighted=weighted))
