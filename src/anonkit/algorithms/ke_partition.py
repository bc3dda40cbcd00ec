"""(k,e)-anonymity: the optimal partition (Zhang, Koudas, Srivastava, Yu, ICDE 2007) and its
incremental form (Srisungsittisunti and Natwichai; spec 004).

The partition step works on the tuples sorted by the sensitive value S. A group is a run
``[j, i)`` of that order; it is valid when it holds >= k distinct values and
``v[i-1] - v[j] >= e``. The optimal partition minimises the sum of group ranges; contiguous
groups are optimal (proven against every set partition in the tests). Moving a group's start
left only adds values and widens its range, so the valid starts of a group ending at ``i - 1``
form a prefix ``[0, J(i)]`` and ``f[i] = v[i-1] + min_{j <= J(i)} (f[j] - v[j])`` is a running
prefix minimum: O(n) after the sort (:func:`optimal_partition`, compiled). The chapter's
O(n^2) double loop is the tests' reference (``tests/oracles/ke.py``).

Incremental releases. An adversary intersects the value sets of a person's groups across
releases; a breach is an intersection with < k distinct values or a range < e. Each record's
*knowledge* ``K(r)`` is that intersection over every release it was in. The chapter's overlap
pruning (Lemma 1): a new group must fully cover every previous group it shares a record with,
or be disjoint from it; so a boundary may not fall strictly inside the span of a previous
group (computed on the values still in the table). That turns the constraint into a mask of
allowed boundaries, and the same O(n) programme solves it. Under covering, a record's new
intersection is its knowledge restricted to the values still present, so Theorem 1 holds:
checking the previous release (and the knowledge it carries forward in the method state) is
enough. With deletions that restricted knowledge may fall below (k,e); no partition can then
help that record (every group's values are a subset of the table's), and the release is
refused naming it (:class:`BlockedRecords`). Deletions expose those who left as well: their
former group-mates are released again, so subtracting those values from the old group's
leaves the leavers' values, whatever the partition; each leaver's knowledge restricted to
them must still meet (k,e), or the release is refused naming the group and its remaining
members (:func:`_departed_blockers`). That narrowed set is the leaver's knowledge from then
on (carried in the method state), so a leaver who comes back later is checked against it,
not against its old group's values. :func:`naive_incremental_partition` reaches the same
constraints by consulting every earlier release instead (the subtraction included, for
each release a record left); the tests check both agree. A refusal names groups by their
published group ids (the state records each record's), not by the history's class
numbers, which follow the shuffled row order.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from anonkit._util.arrays import pack_arrays
from anonkit.errors import InputError
from anonkit.models.base import exact_number

from . import _ke_c  # type: ignore[attr-defined]

KEY_DTYPE = "S16"


# -- the one-shot partition ---------------------------------------------------------------


@dataclass(frozen=True)
class KEPartition:
    """Groups as runs of the value order: group ``g`` is ``order[starts[g]:starts[g + 1]]``,
    numbered by value (group 0 holds the smallest values), whatever the input row order."""

    order: np.ndarray  # row positions sorted by value (stable)
    sorted_values: np.ndarray
    starts: np.ndarray  # (n_groups + 1,) int64, the last entry n
    cost: float  # sum of group ranges
    checks: int = 0  # candidate groups the programme evaluated
    breach_checks: int = 0  # intersections with earlier releases evaluated (incremental)

    @property
    def n_groups(self) -> int:
        return len(self.starts) - 1

    def group_of_sorted(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_groups, dtype=np.int64), np.diff(self.starts))

    def group_ids(self) -> np.ndarray:
        """Per input row, its group."""
        ids = np.empty(len(self.order), dtype=np.int64)
        ids[self.order] = self.group_of_sorted()
        return ids

    def ranges(self) -> np.ndarray:
        v = self.sorted_values
        return v[self.starts[1:] - 1] - v[self.starts[:-1]]


def sort_values(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(stable order of the rows by value, the sorted values): a compiled radix sort."""
    order, v, _ = sort_exact(values, None)
    return order, v


def exact_integers(values: np.ndarray, places: int | None) -> np.ndarray | None:
    """``values * 10^places`` as int64 when that is exact for every value (and small
    enough that differences of the floats round back to it), else None: the integer path
    is taken only when it decides exactly as the floats do."""
    if places is None or not len(values):
        return None
    ints = np.empty(len(values), dtype=np.int64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    return ints if _ke_c.exact_scaled(values, 10.0 ** places, ints) else None


def sort_exact(values: np.ndarray, places: int | None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`sort_values`, plus the sorted values as exact integers (``value * 10^places``)
    when they are exactly that (then the sort runs on them: they span fewer bits)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    if np.isnan(values).any():
        raise InputError(f"(k,e)-anonymity: the sensitive attribute has "
                         f"{int(np.isnan(values).sum())} missing values; fill or drop those "
                         f"rows first")
    order = np.empty(len(values), dtype=np.int64)
    ints = exact_integers(values, places)
    if ints is None:
        _ke_c.argsort(values, order)
        return order, values[order], None
    sorted_ints = np.empty(len(values), dtype=np.int64)
    _ke_c.argsort(values, order, ints, sorted_ints)
    # every value is exactly its integer / 10^places (exact_integers checked it): dividing
    # in order reads memory in sequence, where values[order] would gather at random
    assert places is not None
    return order, sorted_ints / 10.0 ** places, sorted_ints


def least_integer_spread(e: float, places: int) -> int:
    """The least integer difference ``d`` (in units of 10^-places) the model accepts:
    ``d / 10^places >= e``, as the floats compare."""
    scale = 10.0 ** places
    d = int(np.ceil(e * scale)) if np.isfinite(e) else 2 ** 62
    while d / scale < e:
        d += 1
    while (d - 1) / scale >= e:
        d -= 1
    return d


def _scale(places: int | None) -> float:
    return 0.0 if places is None else float(10.0 ** places)


def spread(high: np.ndarray | float, low: np.ndarray | float,
           places: int | None = None) -> np.ndarray:
    """``high - low`` as the model compares it (rounded to the values' decimal places)."""
    out = np.asarray(high, dtype=np.float64) - np.asarray(low, dtype=np.float64)
    return out if places is None else np.round(out, places)


def require_feasible(sorted_values: np.ndarray, k: int, e: float, name: str = "S",
                     places: int | None = None) -> None:
    """Refuse (InputError, exit 2) a table no grouping can make (k,e)-anonymous."""
    v = sorted_values
    distinct = int(np.count_nonzero(np.diff(v))) + 1 if len(v) else 0
    if distinct < k:
        raise InputError(f"(k,e)-anonymity: k={k} but {name!r} has only {distinct} distinct "
                         f"value{'s' if distinct != 1 else ''}; no grouping can meet it: "
                         f"lower k or add rows")
    total = float(spread(v[-1], v[0], places))
    if total < e:
        raise InputError(f"(k,e)-anonymity: e={exact_number(e)} but {name!r} ranges over only "
                         f"{exact_number(total)}; no grouping can meet it: lower e")


def optimal_partition(values: np.ndarray, k: int, e: float, *, places: int | None = None,
                      name: str = "S") -> KEPartition:
    """The partition of ``values`` into (k,e)-anonymous groups with the least sum of ranges
    (O(n) after a radix sort). InputError when none exists."""
    order, v, ints = sort_exact(values, places)
    require_feasible(v, k, e, name, places)
    return _solve(order, v, k, e, places, None, ints=ints)


def _solve(order: np.ndarray, v: np.ndarray, k: int, e: float, places: int | None,
           allowed: np.ndarray | None, fresh: np.ndarray | None = None, *,
           ints: np.ndarray | None = None) -> KEPartition:
    """The compiled programme. ``fresh`` (per sorted position): records absent from the
    previous release; a group's fresh records must meet (k,e) on their own or be none,
    since subtracting the earlier groups it covers leaves exactly their values. ``ints``:
    the sorted values as exact integers (see :func:`sort_exact`), for the faster range
    test."""
    starts = np.empty(len(v) + 1, dtype=np.int64)
    mask = None if allowed is None else np.ascontiguousarray(allowed, dtype=np.uint8)
    new = None if fresh is None else np.ascontiguousarray(fresh, dtype=np.uint8)
    if ints is not None and places is not None:
        n_groups, cost, checks = _ke_c.partition(v, int(k), float(e), _scale(places), mask,
                                                 starts, new, ints,
                                                 least_integer_spread(e, places))
    else:
        n_groups, cost, checks = _ke_c.partition(v, int(k), float(e), _scale(places), mask,
                                                 starts, new)
    if n_groups < 0:
        raise InputError("(k,e)-anonymity: no grouping meets k and e under the constraints")
    return KEPartition(order, v, starts[:n_groups + 1].copy(), float(cost), int(checks))


# -- knowledge carried between releases ----------------------------------------------------


@dataclass(frozen=True)
class Slots:
    """Lasting groups: ``slot_of`` per record of a :class:`ValuesLeft` (aligned with its
    keys; -1: none), and per slot its multiset in CSR form: distinct values sorted
    (``values[ptr[s]:ptr[s + 1]]``) with their counts."""

    slot_of: np.ndarray  # (n_records,) int64
    ptr: np.ndarray  # (n_slots + 1,) int64
    values: np.ndarray  # float64
    counts: np.ndarray  # int64

    @property
    def n_slots(self) -> int:
        return len(self.ptr) - 1


@dataclass
class ValuesLeft:
    """Per record ever released (by history pseudonym), the values an adversary holding every
    release so far has left for it: the intersection of its groups' value sets. Sets are
    sorted unique values in CSR form (``values[ptr[s]:ptr[s + 1]]``)."""

    keys: np.ndarray  # (n_records,) S16, sorted
    set_of: np.ndarray  # (n_records,) int64
    ptr: np.ndarray  # (n_sets + 1,) int64
    values: np.ndarray  # float64
    #: (n_records,) int64: per record, its group id in the release that carried this
    #: knowledge forward (the value of its group column), -1 when not in it; None when
    #: not recorded
    group: np.ndarray | None = None
    #: the lasting groups of releases with placeholders (:mod:`.ke_placeholders`; None
    #: for the chapter's covering releases): per record its slot (-1: none), and per slot
    #: the multiset it publishes whenever one of its members is in the table
    slots: Slots | None = None

    def to_bytes(self) -> bytes:
        extra: dict[str, np.ndarray] = {} if self.group is None else {"group": self.group}
        if self.slots is not None:
            # slots number fewer than 2^31: half the bytes to compress
            extra |= {"slot_of": self.slots.slot_of.astype(np.int32), "slot_ptr": self.slots.ptr,
                      "slot_values": self.slots.values, "slot_counts": self.slots.counts}
        # the keys are HMAC pseudonyms: random bytes, stored as they are
        return pack_arrays({"keys": self.keys, "set_of": self.set_of, "ptr": self.ptr,
                            "values": self.values,
                            "version": np.array([1 if self.slots is None else 2]), **extra},
                           stored=("keys",))

    @classmethod
    def from_bytes(cls, blob: bytes) -> ValuesLeft:
        with np.load(io.BytesIO(blob), allow_pickle=False) as data:
            version = int(data["version"][0])
            if version not in (1, 2):
                raise InputError("the previous (k,e) release's state has an unknown version")
            slots = Slots(data["slot_of"].astype(np.int64), data["slot_ptr"].astype(np.int64),
                          data["slot_values"].astype(np.float64),
                          data["slot_counts"].astype(np.int64)) if version == 2 else None
            return cls(data["keys"].astype(KEY_DTYPE), data["set_of"], data["ptr"],
                       data["values"], data["group"] if "group" in data.files else None,
                       slots)

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """Per key, its set, or -1 for a record never released."""
        pos = np.searchsorted(self.keys, keys)
        pos = np.minimum(pos, max(len(self.keys) - 1, 0))
        hit = (self.keys[pos] == keys) if len(self.keys) else np.zeros(len(keys), bool)
        return np.where(hit, self.set_of[pos] if len(self.keys) else -1, -1)


def _set_figures(ptr: np.ndarray, values: np.ndarray,
                 places: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Per CSR set of sorted unique values: (distinct count, range)."""
    sizes = np.diff(ptr)
    nonempty = sizes > 0
    lo = np.zeros(len(sizes))
    hi = np.zeros(len(sizes))
    lo[nonempty] = values[ptr[:-1][nonempty]]
    hi[nonempty] = values[ptr[1:][nonempty] - 1]
    return sizes, spread(hi, lo, places)


def _filter_sets(ptr: np.ndarray, values: np.ndarray,
                 keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR sets with only the values where ``keep``."""
    set_index = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    counts = np.bincount(set_index[keep], minlength=len(ptr) - 1)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), values[keep]


def group_value_sets(part: KEPartition) -> tuple[np.ndarray, np.ndarray]:
    """Per group, its distinct values (CSR)."""
    v = part.sorted_values
    group = part.group_of_sorted()
    first = np.ones(len(v), dtype=bool)
    first[1:] = (v[1:] != v[:-1]) | (group[1:] != group[:-1])
    counts = np.bincount(group[first], minlength=part.n_groups)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), v[first]


def group_multisets(part: KEPartition) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group, its distinct values (CSR) and how many rows hold each."""
    v = part.sorted_values
    group = part.group_of_sorted()
    first = np.ones(len(v), dtype=bool)
    first[1:] = (v[1:] != v[:-1]) | (group[1:] != group[:-1])
    runs = np.flatnonzero(first)
    counts = np.diff(np.append(runs, len(v))).astype(np.int64)
    per_group = np.bincount(group[first], minlength=part.n_groups)
    return (np.concatenate([[0], np.cumsum(per_group)]).astype(np.int64), v[first], counts)


def first_knowledge(part: KEPartition, keys: np.ndarray, *,
                    slots: bool = False) -> ValuesLeft:
    """The knowledge after a first release: each record's group's values; with ``slots``,
    each group becomes a lasting slot publishing its multiset (placeholder releases)."""
    ptr, values = group_value_sets(part)
    order = np.argsort(keys, kind="stable")
    groups = part.group_ids()
    lasting = None
    if slots:
        sptr, svalues, scounts = group_multisets(part)
        lasting = Slots(groups[order].astype(np.int64), sptr, svalues, scounts)
    return ValuesLeft(keys[order], groups[order], ptr, values, groups[order], lasting)


# -- incremental releases -----------------------------------------------------------------


@dataclass(frozen=True)
class Blocker:
    """A record no breach-free partition can protect: what is left of its knowledge.

    A returning record has its input ``row``. A record that left (``row`` -1, ``key`` its
    pseudonym) is exposed by its previous group's members still in the table
    (``survivors``, input rows): their values are all released again, so subtracting them
    from the group's values leaves the values of those who left."""

    row: int  # input row, or -1 for a record that left
    previous_group: int  # its group in the previous release (-1: not in it)
    distinct: int
    range: float
    key: bytes = b""
    survivors: tuple[int, ...] = ()


class BlockedRecords(Exception):
    """Every partition would breach these records (deletions removed what protected them)."""

    def __init__(self, blockers: list[Blocker]) -> None:
        super().__init__(f"{len(blockers)} records cannot be protected")
        self.blockers = blockers


@dataclass(frozen=True)
class EarlierRelease:
    """An earlier release as the partition step needs it: per current input row its group
    there (-1 when absent), and per group its distinct released values (CSR)."""

    group_of_row: np.ndarray
    ptr: np.ndarray
    values: np.ndarray
    # every record of that release (pseudonyms, sorted) and its group there: what tells
    # the records that left since
    record_keys: np.ndarray | None = None
    record_groups: np.ndarray | None = None

    def departed(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(pseudonyms, groups) of this release's records absent from ``keys``."""
        if self.record_keys is None or self.record_groups is None:
            return np.zeros(0, dtype=KEY_DTYPE), np.zeros(0, dtype=np.int64)
        gone = ~np.isin(self.record_keys, keys)
        return self.record_keys[gone], self.record_groups[gone]

    def groups_of(self, keys: np.ndarray) -> np.ndarray:
        """Per key, its group in this release (-1 when absent)."""
        out = np.full(len(keys), -1, dtype=np.int64)
        if self.record_keys is None or self.record_groups is None or not len(self.record_keys):
            return out
        pos = np.minimum(np.searchsorted(self.record_keys, keys), len(self.record_keys) - 1)
        hit = self.record_keys[pos] == keys
        out[hit] = self.record_groups[pos[hit]]
        return out


def _forbidden_inside(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Allowed boundaries (n + 1,) given spans [lo, hi] of values no group may cut: a boundary
    strictly inside the positions of a span's values is forbidden."""
    n = len(v)
    lo_pos = np.searchsorted(v, lo, side="left")
    hi_pos = np.searchsorted(v, hi, side="right")
    cut = hi_pos > lo_pos + 1
    diff = np.bincount(lo_pos[cut] + 1, minlength=n + 2)[:n + 2] - \
        np.bincount(hi_pos[cut], minlength=n + 2)[:n + 2]
    return np.cumsum(diff)[:n + 1] <= 0


def _spans(release: EarlierRelease, present: np.ndarray, v: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, int]:
    """Per group of ``release`` with a record in the table: the span of its values still in
    the table. Returns (lows, highs, number of groups consulted)."""
    n_groups = len(release.ptr) - 1
    rows_in = release.group_of_row[release.group_of_row >= 0]
    live = np.bincount(rows_in, minlength=n_groups) > 0
    ptr, values = _filter_sets(release.ptr, release.values, present)
    sizes = np.diff(ptr)
    use = live & (sizes > 0)
    return values[ptr[:-1][use]], values[ptr[1:][use] - 1], int(live.sum())


def _returning_blockers(set_ids: np.ndarray, ptr: np.ndarray, values: np.ndarray, k: int,
                        e: float, places: int | None,
                        previous_group: np.ndarray) -> list[Blocker]:
    distinct, width = _set_figures(ptr, values, places)
    has = set_ids >= 0
    bad_set = (distinct < k) | (width < e)
    rows = np.flatnonzero(has & bad_set[np.maximum(set_ids, 0)])
    return [Blocker(int(r), int(previous_group[r]), int(distinct[set_ids[r]]),
                    float(width[set_ids[r]])) for r in rows]


def _departed_blockers(previous: EarlierRelease, values: np.ndarray, keys: np.ndarray,
                       departed_keys: np.ndarray, departed_groups: np.ndarray,
                       departed_sets: list[np.ndarray | None], k: int, e: float,
                       places: int | None) -> tuple[list[Blocker], list[np.ndarray]]:
    """The subtraction across releases. Records of a previous group that are still in the
    table are released again, values and all: an adversary subtracts their values from the
    group's and is left with the values of the members who left. Each of those must still
    hold (k,e) within what it knew of them before (``departed_sets``: per record that left,
    its knowledge). Every value still in the table is taken as a survivor's (as it is
    whenever values are distinct), so the check never under-states the adversary; it does
    not depend on the new partition, which can only tell an adversary more about the
    survivors. Returns the blockers and, per record that left, what it is narrowed to: its
    knowledge from now on, should it come back.
    """
    out: list[Blocker] = []
    narrowed: list[np.ndarray] = []
    if not len(departed_keys):
        return out, narrowed
    present = np.unique(values)
    rows = np.flatnonzero(previous.group_of_row >= 0)
    survivor_group = previous.group_of_row[rows]
    for key, group, known in zip(departed_keys.tolist(), departed_groups.tolist(),
                                 departed_sets, strict=True):
        members = rows[survivor_group == group]
        left = _subtracted(previous, group, present)
        if known is not None:
            left = np.intersect1d(left, known, assume_unique=True)
        narrowed.append(left)
        distinct = len(left)
        width = float(spread(left[-1], left[0], places)) if distinct else 0.0
        if distinct < k or width < e:
            out.append(Blocker(-1, int(group), distinct, width, bytes(key),
                               tuple(int(m) for m in members)))
    return out, narrowed


def _subtracted(previous: EarlierRelease, group: int, present: np.ndarray) -> np.ndarray:
    """The values of ``previous``'s group ``group`` that no record of the table holds
    (``present``: the table's distinct values): what its members who left are narrowed to."""
    group_values = previous.values[previous.ptr[group]:previous.ptr[group + 1]]
    return group_values[~np.isin(group_values, present)]


def _raise_blocked(blockers: list[Blocker]) -> None:
    if blockers:
        raise BlockedRecords(blockers)


def incremental_partition(values: np.ndarray, keys: np.ndarray, previous: EarlierRelease,
                          knowledge: ValuesLeft, k: int, e: float, *,
                          places: int | None = None, name: str = "S"
                          ) -> tuple[KEPartition, ValuesLeft]:
    """The optimal partition of the new table with no incremental breach, consulting only
    the previous release and the knowledge it carried forward (Theorem 1).

    ``keys``: per input row its history pseudonym (S16). Raises :class:`BlockedRecords` when
    deletions left some record's knowledge below (k,e), InputError when the table itself
    cannot be (k,e)-anonymous."""
    order, v, ints = sort_exact(values, places)
    require_feasible(v, k, e, name, places)
    present_values = np.unique(v)
    # Lemma 1: a group covers each previous group it meets, or misses it
    lo, hi, consulted = _spans(previous, np.isin(previous.values, present_values), v)
    allowed = _forbidden_inside(v, lo, hi)
    # Theorem 1 + deletions: what each returning record has left must still meet (k,e)
    old_set = knowledge.lookup(keys)
    ptr, kvalues = _filter_sets(knowledge.ptr, knowledge.values,
                                np.isin(knowledge.values, present_values))
    blockers = _returning_blockers(old_set, ptr, kvalues, k, e, places, previous.group_of_row)
    gone_keys, gone_groups = previous.departed(keys)
    gone_sets = knowledge.lookup(gone_keys)
    gone_blockers, narrowed = _departed_blockers(
        previous, values, keys, gone_keys, gone_groups,
        [knowledge.values[knowledge.ptr[t]:knowledge.ptr[t + 1]] if t >= 0 else None
         for t in gone_sets.tolist()],
        k, e, places)
    _raise_blocked(blockers + gone_blockers)
    # a returning record absent from the previous release: its own knowledge is its span
    returning = (old_set >= 0) & (previous.group_of_row < 0)
    if returning.any():
        s = old_set[returning]
        allowed &= _forbidden_inside(v, kvalues[ptr[s]], kvalues[ptr[s + 1] - 1])
    part = _solve(order, v, k, e, places, allowed, previous.group_of_row[order] < 0,
                  ints=ints)
    # one check per previous group spanned, per returning record (against the knowledge
    # the previous release carried) and per record that left
    checks = consulted + int((old_set >= 0).sum()) + len(gone_keys)
    part = KEPartition(part.order, part.sorted_values, part.starts, part.cost, part.checks,
                       checks)
    return part, next_knowledge(part, keys, knowledge, old_set, ptr, kvalues,
                                (gone_keys, narrowed))


def next_knowledge(part: KEPartition, keys: np.ndarray, knowledge: ValuesLeft,
                   old_set: np.ndarray, ptr: np.ndarray, kvalues: np.ndarray,
                   departed: tuple[np.ndarray, list[np.ndarray]] | None = None
                   ) -> ValuesLeft:
    """The values left after publishing ``part``: a returning record keeps what it had (restricted
    to the values still present: covering puts all of those into its group); a new record
    gets its group's values; records not in this release keep theirs, except those who
    left the previous release (``departed``: their pseudonyms and what the subtraction
    narrowed each to), who keep the narrowed set."""
    gptr, gvalues = group_value_sets(part)
    n_old = len(knowledge.ptr) - 1
    n_filtered = len(ptr) - 1
    # sets: [old sets (records absent now)] + [filtered old sets] + [group sets]
    all_ptr = np.concatenate([knowledge.ptr, knowledge.ptr[-1] + ptr[1:],
                              knowledge.ptr[-1] + ptr[-1] + gptr[1:]])
    all_values = np.concatenate([knowledge.values, kvalues, gvalues])
    now = np.where(old_set >= 0, n_old + old_set, n_old + n_filtered + part.group_ids())
    present = np.zeros(len(knowledge.keys), dtype=bool)
    pos = np.searchsorted(knowledge.keys, keys)
    if len(knowledge.keys):
        pos_c = np.minimum(pos, len(knowledge.keys) - 1)
        present[pos_c[knowledge.keys[pos_c] == keys]] = True
    absent_keys = knowledge.keys[~present]
    absent_sets = knowledge.set_of[~present]
    if departed is not None and len(departed[0]):
        gone_keys, narrowed = departed
        first = len(all_ptr) - 1
        sizes = np.array([len(x) for x in narrowed], dtype=np.int64)
        all_ptr = np.concatenate([all_ptr, all_ptr[-1] + np.cumsum(sizes)])
        all_values = np.concatenate([all_values, *narrowed])
        # the departed replace whatever they carried (or join, if they carried nothing)
        keep = ~np.isin(absent_keys, gone_keys)
        absent_keys = np.concatenate([absent_keys[keep], gone_keys.astype(KEY_DTYPE)])
        absent_sets = np.concatenate([absent_sets[keep],
                                      first + np.arange(len(gone_keys), dtype=np.int64)])
    all_keys = np.concatenate([absent_keys, keys.astype(KEY_DTYPE)])
    all_sets = np.concatenate([absent_sets, now])
    all_groups = np.concatenate([np.full(len(absent_keys), -1, dtype=np.int64),
                                 part.group_ids()])
    order = np.argsort(all_keys, kind="stable")
    return _compact(ValuesLeft(all_keys[order], all_sets[order], all_ptr, all_values,
                              all_groups[order]))


def _compact(knowledge: ValuesLeft) -> ValuesLeft:
    """Drop the sets no record refers to (renumbering the others in order)."""
    used, set_of = np.unique(knowledge.set_of, return_inverse=True)
    sizes = np.diff(knowledge.ptr)[used]
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    take = np.arange(int(ptr[-1])) + np.repeat(knowledge.ptr[used] - ptr[:-1], sizes)
    return ValuesLeft(knowledge.keys, set_of.reshape(-1).astype(np.int64), ptr,
                     knowledge.values[take], knowledge.group, knowledge.slots)


def knowledge_from_releases(keys: np.ndarray, earlier: Sequence[EarlierRelease],
                            present_values: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray, int]:
    """Per current row, the intersection of its groups' values over every earlier release
    (restricted to ``present_values``), computed from the releases themselves. Returns
    (set per row or -1, ptr, values, number of intersections evaluated)."""
    if not earlier:
        return np.full(len(keys), -1), np.zeros(1, np.int64), np.zeros(0), 0
    groups = np.stack([r.group_of_row for r in earlier], axis=1)
    seen = (groups >= 0).any(axis=1)
    tuples, inverse = np.unique(groups[seen], axis=0, return_inverse=True)
    sets: list[np.ndarray] = []
    # a check is one record against one earlier release it was in (the unit the pruned
    # variant counts too), though records sharing all their groups share the work
    weight = np.bincount(inverse.reshape(-1), minlength=len(tuples))
    checks = int(((tuples >= 0).sum(axis=1) * weight).sum())
    for row in tuples:
        current = _known_from_releases(earlier, row.tolist(), present_values)
        sets.append(present_values if current is None else current)
    set_of = np.full(len(keys), -1, dtype=np.int64)
    set_of[seen] = inverse.reshape(-1)
    sizes = np.array([len(s) for s in sets], dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    values = np.concatenate(sets) if sets else np.zeros(0)
    return set_of, ptr, values, checks


def _known_from_releases(earlier: Sequence[EarlierRelease], groups: Sequence[int],
                         start: np.ndarray | None) -> np.ndarray | None:
    """One record's knowledge from the releases themselves (``groups``: its group in each,
    -1 when absent), intersected with ``start`` (None: no restriction; None back when the
    record was in none): its groups' values, and for each release it left, what the
    subtraction left of the group it left (that group's values no record of the release
    that followed holds; see :func:`_departed_blockers`)."""
    known = start
    for t, g in enumerate(groups):
        if g >= 0:
            r = earlier[t]
            here = r.values[r.ptr[g]:r.ptr[g + 1]]
        elif t > 0 and groups[t - 1] >= 0:
            here = _subtracted(earlier[t - 1], groups[t - 1], np.unique(earlier[t].values))
        else:
            continue
        known = here if known is None else np.intersect1d(known, here, assume_unique=True)
    return known


def naive_incremental_partition(values: np.ndarray, keys: np.ndarray,
                                earlier: Sequence[EarlierRelease], k: int, e: float, *,
                                places: int | None = None, name: str = "S") -> KEPartition:
    """The same release as :func:`incremental_partition`, without Theorem 1: every group of
    every earlier release that meets the table constrains the new groups, and each record's
    intersection is computed afresh from all the releases it was in."""
    order, v, ints = sort_exact(values, places)
    require_feasible(v, k, e, name, places)
    present_values = np.unique(v)
    allowed = np.ones(len(v) + 1, dtype=bool)
    consulted = 0
    for release in earlier:
        lo, hi, n = _spans(release, np.isin(release.values, present_values), v)
        allowed &= _forbidden_inside(v, lo, hi)
        consulted += n
    set_of, ptr, kvalues, checks = knowledge_from_releases(keys, earlier, present_values)
    previous_group = earlier[-1].group_of_row if earlier else np.full(len(keys), -1)
    blockers = _returning_blockers(set_of, ptr, kvalues, k, e, places, previous_group)
    if earlier:
        gone_keys, gone_groups = earlier[-1].departed(keys)
        gone_sets: list[np.ndarray | None] = []
        for key in gone_keys:  # each one's knowledge, from every earlier release
            one = np.array([key], dtype=KEY_DTYPE)
            gone_sets.append(_known_from_releases(
                earlier, [int(r.groups_of(one)[0]) for r in earlier], None))
            checks += len(earlier)  # each earlier release consulted for it
        blockers += _departed_blockers(earlier[-1], values, keys, gone_keys, gone_groups,
                                       gone_sets, k, e, places)[0]
    _raise_blocked(blockers)
    fresh = earlier[-1].group_of_row[order] < 0 if earlier else None
    part = _solve(order, v, k, e, places, allowed, fresh, ints=ints)
    return KEPartition(part.order, part.sorted_values, part.starts, part.cost, part.checks,
                       consulted + checks)
