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
runs over rows in Python; loops run over distinct sensitive values, and the split is a
compiled kernel (``_minvariance_c``).

The QIs enter as coordinates (a float per tuple and QI) with each QI's range; categorical
QIs by their code order (the hierarchy's leaf order when one is given). Nothing here knows
the history, pandas or files: :mod:`anonkit.history.engines.minvariance` is the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from anonkit.errors import InputError
from anonkit.partition import runs

from . import _minvariance_c  # type: ignore[attr-defined]

NO_SIGNATURE = -1


def _dense_ranks_fit(n_pairs: int, n_queries: int) -> bool:
    """Whether a table of every (signature, value) pair costs no more than the look-ups."""
    return n_pairs <= max(n_queries, 1 << 12)


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
        if _dense_ranks_fit(len(self) * n_values, len(sig)) and sig.min() >= 0 \
                and values.min() >= 0 and sig.max() < len(self):
            # few signatures and values: one gather from a (signature, value) table
            table = np.full((len(self), n_values), -1, dtype=np.int64)
            owner = np.repeat(np.arange(len(self), dtype=np.int64), self.sizes())
            table[owner, self.codes] = np.arange(len(self.codes)) - self.ptr[owner]
            return table[sig, values]
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
    giving the most frequent value's share and the largest m that is feasible (never the
    value itself: a message must not carry a raw sensitive value). ``names`` is accepted
    for the callers and unused."""
    if not len(values):
        return
    counts = np.bincount(values)
    top = int(np.argmax(counts))
    n = len(values)
    if int(counts[top]) * m <= n:
        return
    largest = n // int(counts[top])
    fix = (f"the largest feasible m is {largest}" if largest >= 2 else
           "no m >= 2 is feasible")
    raise InfeasibleError(
        f"m-invariance with m={m} is infeasible: the most frequent sensitive value is "
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
    pair_value = signatures.codes[runs(signatures.ptr[bucket_sig], sizes)]
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
    of its lists sorted by one QI (equal coordinates in slot order), scored by
    ``sum over halves of size * sum_q (max_q - min_q) / range_q`` (``weighted=False``: without
    the size); the lowest score wins, the earliest index and then the earliest QI on ties;
    until every segment holds one row per list. Returns the class per slot: buckets of one
    row per list first (in bucket order), then level by level, left half before right.

    The compiled kernel ``_minvariance_c.split`` does the work: each list is sorted once per
    QI and every split partitions those orders stably, so no level sorts again; the scores
    are the expression of the plainly written rule (``split_scores`` in the tests' oracles)
    in the same order (bit-identical, so ties resolve alike).
    """
    bucket = np.ascontiguousarray(bucket, dtype=np.int64).reshape(-1)
    value_rank = np.ascontiguousarray(value_rank, dtype=np.int64).reshape(-1)
    coords = np.ascontiguousarray(coords, dtype=np.float64)
    ranges = np.asarray(ranges, dtype=np.float64).reshape(-1)
    if coords.ndim != 2 or len(coords) != len(bucket) or len(value_rank) != len(bucket):
        raise ValueError("perimeter_split: bucket, value_rank and coords need one entry per "
                         "slot")
    if len(ranges) != coords.shape[1]:
        raise ValueError("perimeter_split: one range per QI (column of coords)")
    if not np.isfinite(coords).all():
        raise ValueError("perimeter_split: coordinates must be finite")
    spans = np.ascontiguousarray(np.where(ranges > 0, ranges, 1.0))
    class_of = np.empty(len(bucket), dtype=np.int64)
    _minvariance_c.split(bucket, value_rank, coords, spans, weighted, class_of)
    return class_of
