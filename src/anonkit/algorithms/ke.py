"""(k,e)-anonymity: the optimal partition (Zhang, Koudas, Srivastava, Yu, ICDE 2007) and its
incremental form (Srisungsittisunti and Natwichai; spec 004).

The partition step works on the tuples sorted by the sensitive value S. A group is a run
``[j, i)`` of that order; it is valid when it holds >= k distinct values and
``v[i-1] - v[j] >= e``. The optimal partition minimises the sum of group ranges; contiguous
groups are optimal (proven against every set partition in the tests). Moving a group's start
left only adds values and widens its range, so the valid starts of a group ending at ``i - 1``
form a prefix ``[0, J(i)]`` and ``f[i] = v[i-1] + min_{j <= J(i)} (f[j] - v[j])`` is a running
prefix minimum: O(n) after the sort (:func:`optimal_partition`, compiled). The chapter's
O(n^2) double loop is kept as the reference (:func:`reference_partition`).

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
refused naming it (:class:`BlockedRecords`). :func:`naive_incremental_partition` reaches the
same constraints by consulting every earlier release instead; the tests check both agree.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from anonkit.errors import InputError
from anonkit.models.base import exact_number

from . import _ke_c  # type: ignore[attr-defined]

if TYPE_CHECKING:
    import pandas as pd

    from anonkit.release import Release
    from anonkit.releases.publish import PublishContext
    from anonkit.releases.store import ReleaseView
    from anonkit.table import Schema

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
    values = np.ascontiguousarray(values, dtype=np.float64)
    if np.isnan(values).any():
        raise InputError(f"(k,e)-anonymity: the sensitive attribute has "
                         f"{int(np.isnan(values).sum())} missing values; fill or drop those "
                         f"rows first")
    order = np.empty(len(values), dtype=np.int64)
    _ke_c.argsort(values, order)
    return order, values[order]


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
    order, v = sort_values(values)
    require_feasible(v, k, e, name, places)
    return _solve(order, v, k, e, places, None)


def _solve(order: np.ndarray, v: np.ndarray, k: int, e: float, places: int | None,
           allowed: np.ndarray | None, fresh: np.ndarray | None = None) -> KEPartition:
    """The compiled programme. ``fresh`` (per sorted position): records absent from the
    previous release; a group's fresh records must meet (k,e) on their own or be none,
    since subtracting the earlier groups it covers leaves exactly their values."""
    starts = np.empty(len(v) + 1, dtype=np.int64)
    mask = None if allowed is None else np.ascontiguousarray(allowed, dtype=np.uint8)
    new = None if fresh is None else np.ascontiguousarray(fresh, dtype=np.uint8)
    n_groups, cost, checks = _ke_c.partition(v, int(k), float(e), _scale(places), mask,
                                             starts, new)
    if n_groups < 0:
        raise InputError("(k,e)-anonymity: no grouping meets k and e under the constraints")
    return KEPartition(order, v, starts[:n_groups + 1].copy(), float(cost), int(checks))


def reference_partition(sorted_values: np.ndarray, k: int, e: float, *,
                        places: int | None = None, allowed: np.ndarray | None = None
                        ) -> tuple[np.ndarray, float]:
    """The chapter's O(n^2) programme (every start ``j`` for every end ``i``, the earliest
    start kept on ties), vectorised over ``j``: the reference for tests and the benchmark.
    Returns (starts incl. n, cost); cost is inf when no partition exists."""
    v = np.asarray(sorted_values, dtype=np.float64)
    n = len(v)
    new_run = np.ones(n, dtype=np.int64)
    new_run[1:] = v[1:] != v[:-1]
    runs = np.cumsum(new_run)  # run number of each position (1-based)
    f = np.full(n + 1, np.inf)
    f[0] = 0.0
    parent = np.full(n + 1, -1, dtype=np.int64)
    ok_start = np.ones(n + 1, dtype=bool) if allowed is None else np.asarray(allowed, bool)
    for i in range(1, n + 1):
        if not ok_start[i] and i < n:
            continue
        j = np.arange(i)
        distinct = runs[i - 1] - runs[j] + 1
        valid = (distinct >= k) & (spread(v[i - 1], v[j], places) >= e) & ok_start[:i]
        cost = np.where(valid, f[:i] + v[i - 1] - v[:i], np.inf)
        best = int(np.argmin(cost))
        if np.isfinite(cost[best]):
            f[i], parent[i] = cost[best], best
    if not np.isfinite(f[n]):
        return np.array([0, n], dtype=np.int64), float("inf")
    starts = [n]
    i = n
    while i > 0:
        i = int(parent[i])
        starts.append(i)
    return np.array(starts[::-1], dtype=np.int64), float(f[n])


# -- knowledge carried between releases ----------------------------------------------------


@dataclass
class Knowledge:
    """Per record ever released (by history pseudonym), the values an adversary holding every
    release so far has left for it: the intersection of its groups' value sets. Sets are
    sorted unique values in CSR form (``values[ptr[s]:ptr[s + 1]]``)."""

    keys: np.ndarray  # (n_records,) S16, sorted
    set_of: np.ndarray  # (n_records,) int64
    ptr: np.ndarray  # (n_sets + 1,) int64
    values: np.ndarray  # float64

    def to_bytes(self) -> bytes:
        sink = io.BytesIO()
        np.savez_compressed(sink, keys=self.keys, set_of=self.set_of, ptr=self.ptr,
                            values=self.values, version=np.array([1]))
        return sink.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes) -> Knowledge:
        with np.load(io.BytesIO(blob), allow_pickle=False) as data:
            if int(data["version"][0]) != 1:
                raise InputError("the previous (k,e) release's state has an unknown version")
            return cls(data["keys"].astype(KEY_DTYPE), data["set_of"], data["ptr"],
                       data["values"])

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


def first_knowledge(part: KEPartition, keys: np.ndarray) -> Knowledge:
    """The knowledge after a first release: each record's group's values."""
    ptr, values = group_value_sets(part)
    order = np.argsort(keys, kind="stable")
    return Knowledge(keys[order], part.group_ids()[order], ptr, values)


# -- incremental releases -----------------------------------------------------------------


@dataclass(frozen=True)
class Blocker:
    """A record no breach-free partition can protect: what is left of its knowledge."""

    row: int  # input row
    previous_group: int  # its group in the previous release (-1: not in it)
    distinct: int
    range: float


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


def _check_blockers(set_ids: np.ndarray, ptr: np.ndarray, values: np.ndarray, k: int,
                    e: float, places: int | None, previous_group: np.ndarray) -> None:
    distinct, width = _set_figures(ptr, values, places)
    has = set_ids >= 0
    bad_set = (distinct < k) | (width < e)
    rows = np.flatnonzero(has & bad_set[np.maximum(set_ids, 0)])
    if len(rows):
        raise BlockedRecords([Blocker(int(r), int(previous_group[r]),
                                      int(distinct[set_ids[r]]), float(width[set_ids[r]]))
                              for r in rows])


def incremental_partition(values: np.ndarray, keys: np.ndarray, previous: EarlierRelease,
                          knowledge: Knowledge, k: int, e: float, *,
                          places: int | None = None, name: str = "S"
                          ) -> tuple[KEPartition, Knowledge]:
    """The optimal partition of the new table with no incremental breach, consulting only
    the previous release and the knowledge it carried forward (Theorem 1).

    ``keys``: per input row its history pseudonym (S16). Raises :class:`BlockedRecords` when
    deletions left some record's knowledge below (k,e), InputError when the table itself
    cannot be (k,e)-anonymous."""
    order, v = sort_values(values)
    require_feasible(v, k, e, name, places)
    present_values = np.unique(v)
    # Lemma 1: a group covers each previous group it meets, or misses it
    lo, hi, consulted = _spans(previous, np.isin(previous.values, present_values), v)
    allowed = _forbidden_inside(v, lo, hi)
    # Theorem 1 + deletions: what each returning record has left must still meet (k,e)
    old_set = knowledge.lookup(keys)
    ptr, kvalues = _filter_sets(knowledge.ptr, knowledge.values,
                                np.isin(knowledge.values, present_values))
    _check_blockers(old_set, ptr, kvalues, k, e, places, previous.group_of_row)
    # a returning record absent from the previous release: its own knowledge is its span
    returning = (old_set >= 0) & (previous.group_of_row < 0)
    if returning.any():
        s = old_set[returning]
        allowed &= _forbidden_inside(v, kvalues[ptr[s]], kvalues[ptr[s + 1] - 1])
    part = _solve(order, v, k, e, places, allowed, previous.group_of_row[order] < 0)
    checks = consulted + int((old_set >= 0).sum())
    part = KEPartition(part.order, part.sorted_values, part.starts, part.cost, part.checks,
                       checks)
    return part, next_knowledge(part, keys, knowledge, old_set, ptr, kvalues)


def next_knowledge(part: KEPartition, keys: np.ndarray, knowledge: Knowledge,
                   old_set: np.ndarray, ptr: np.ndarray, kvalues: np.ndarray) -> Knowledge:
    """Knowledge after publishing ``part``: a returning record keeps what it had (restricted
    to the values still present: covering puts all of those into its group); a new record
    gets its group's values; records not in this release keep theirs."""
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
    all_keys = np.concatenate([absent_keys, keys.astype(KEY_DTYPE)])
    all_sets = np.concatenate([absent_sets, now])
    order = np.argsort(all_keys, kind="stable")
    return _compact(Knowledge(all_keys[order], all_sets[order], all_ptr, all_values))


def _compact(knowledge: Knowledge) -> Knowledge:
    """Drop the sets no record refers to (renumbering the others in order)."""
    used, set_of = np.unique(knowledge.set_of, return_inverse=True)
    sizes = np.diff(knowledge.ptr)[used]
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    take = np.arange(int(ptr[-1])) + np.repeat(knowledge.ptr[used] - ptr[:-1], sizes)
    return Knowledge(knowledge.keys, set_of.reshape(-1).astype(np.int64), ptr,
                     knowledge.values[take])


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
    checks = 0
    for row in tuples:
        current = present_values
        for t, g in enumerate(row):
            if g >= 0:
                r = earlier[t]
                current = np.intersect1d(current, r.values[r.ptr[g]:r.ptr[g + 1]],
                                         assume_unique=True)
                checks += 1
        sets.append(current)
    set_of = np.full(len(keys), -1, dtype=np.int64)
    set_of[seen] = inverse.reshape(-1)
    sizes = np.array([len(s) for s in sets], dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    values = np.concatenate(sets) if sets else np.zeros(0)
    return set_of, ptr, values, checks


def naive_incremental_partition(values: np.ndarray, keys: np.ndarray,
                                earlier: Sequence[EarlierRelease], k: int, e: float, *,
                                places: int | None = None, name: str = "S") -> KEPartition:
    """The same release as :func:`incremental_partition`, without Theorem 1: every group of
    every earlier release that meets the table constrains the new groups, and each record's
    intersection is computed afresh from all the releases it was in."""
    order, v = sort_values(values)
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
    _check_blockers(set_of, ptr, kvalues, k, e, places, previous_group)
    fresh = earlier[-1].group_of_row[order] < 0 if earlier else None
    part = _solve(order, v, k, e, places, allowed, fresh)
    return KEPartition(part.order, part.sorted_values, part.starts, part.cost, part.checks,
                       consulted + checks)


# -- the permuted release -----------------------------------------------------------------


def decimal_places(values: np.ndarray) -> int | None:
    """The fewest decimal places (<= 9) that write every value exactly, as the model finds
    them (so that ranges here are compared as the verifier compares them)."""
    mags = np.unique(values[np.isfinite(values)])
    for places in range(10):
        scale = 10.0 ** places
        scaled = mags * scale
        if len(mags) and np.abs(scaled).max() >= 2.0 ** 50:
            return None
        if (np.rint(scaled) / scale == mags).all():
            return places
    return None


def sensitive_values(df: pd.DataFrame, schema: Schema) -> tuple[str, np.ndarray]:
    """The one numeric sensitive column and its values as floats."""
    import pandas as pd

    if len(schema.sensitive) != 1:
        raise InputError(f"(k,e)-anonymity protects one numeric sensitive attribute; "
                         f"{len(schema.sensitive)} were given "
                         f"({', '.join(schema.sensitive) or 'none'}): name one with "
                         f"--sensitive")
    name = schema.sensitive[0]
    column = df[name]
    if not pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        raise InputError(f"(k,e)-anonymity needs a numeric sensitive attribute; {name!r} has "
                         f"values such as {column.dropna().head(1).tolist()}")
    return name, column.to_numpy(dtype=np.float64, na_value=np.nan)


def permuted_release(df: pd.DataFrame, schema: Schema, part: KEPartition, *, k: int,
                     e: float, group_column: str, seed: int | None, method: str,
                     parameters: dict[str, object], timings: dict[str, float],
                     method_state: bytes | None = None) -> Release:
    """QIs exact, the sensitive values permuted at random within each group, the group in
    ``group_column``, identifiers dropped; the group table as the ``groups`` auxiliary."""
    import time

    import pandas as pd

    from anonkit.metrics import class_metrics
    from anonkit.models.ke import KEAnonymity
    from anonkit.randomness import privacy_rng
    from anonkit.release import Release, ReleaseKind, ThreatModel
    from anonkit.verify import verify_release

    t0 = time.perf_counter()
    name = schema.sensitive[0]
    if group_column in df.columns or group_column in schema.released_columns:
        raise InputError(f"the group column {group_column!r} is already a column of the table; "
                         f"choose another name with --group-column")
    rng, seeded = privacy_rng(seed)
    group_sorted = part.group_of_sorted()
    # a random order within each group (groups stay in place: they are sorted already)
    shuffled = part.order[np.lexsort((rng.random(len(part.order)), group_sorted))]
    source = df[name].to_numpy()
    permuted = np.empty_like(source)
    permuted[part.order] = source[shuffled]
    data = pd.DataFrame({c: df[c].array.copy() for c in schema.released_columns},
                        index=pd.RangeIndex(len(df)))
    data[name] = permuted
    groups = part.group_ids()
    data[group_column] = groups
    ptr, _ = group_value_sets(part)
    v = part.sorted_values
    table = pd.DataFrame({"id": np.arange(part.n_groups),
                          "size": np.diff(part.starts),
                          "min": df[name].to_numpy()[part.order[part.starts[:-1]]],
                          "max": df[name].to_numpy()[part.order[part.starts[1:] - 1]],
                          "distinct": np.diff(ptr)})
    timings["permute"] = time.perf_counter() - t0
    model = KEAnonymity(k, e, attribute=name)
    metrics = {"ke.error": float(spread(v[part.starts[1:] - 1], v[part.starts[:-1]]).sum()),
               "ke.groups": float(part.n_groups)}
    release = Release(data, groups, pd.DataFrame(), [], metrics, schema, method, parameters,
                      timings, kind=ReleaseKind.PERMUTED, models=[model],
                      group_column=group_column, auxiliary={"groups": table},
                      threat_model=ThreatModel.INCREMENTAL_KE, seeded=seeded,
                      method_state=method_state)
    t0 = time.perf_counter()
    verify_release(release)  # the boundary regroups by the group column; done once here
    release.metrics |= class_metrics(np.diff(part.starts), k)
    timings["verify"] = time.perf_counter() - t0
    return release


def anonymize(df: pd.DataFrame, schema: Schema, options: dict[str, Any]) -> Release:
    """One-shot (k,e)-anonymity of ``df`` (the ``ke`` method)."""
    return _one_shot(df, schema, options)[0]


def _one_shot(df: pd.DataFrame, schema: Schema,
              options: dict[str, Any]) -> tuple[Release, KEPartition]:
    import time

    k, e = options.get("k"), options.get("e")
    if k is None or e is None:
        raise InputError("method 'ke' needs both -k (distinct values per group) and -e "
                         "(least range per group)")
    name, values = sensitive_values(df, schema)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    part = optimal_partition(values, k, e, places=decimal_places(values), name=name)
    timings["partition"] = time.perf_counter() - t0
    release = permuted_release(df, schema, part, k=k, e=e,
                               group_column=options.get("group_column") or "group",
                               seed=options.get("seed"), method="ke",
                               parameters=_parameters(options), timings=timings)
    return release, part


def _parameters(options: dict[str, Any]) -> dict[str, object]:
    # never the seed: a recorded seed would let a reader replay the permutation
    return {n: options[n] for n in ("k", "e", "group_column", "history")
            if options.get(n) is not None}


def earlier_release(view: ReleaseView, keys: np.ndarray, attribute: str) -> EarlierRelease:
    """An earlier release from the history: each current row's group there (matched by
    pseudonym), and each group's distinct released values."""
    record_keys = np.asarray(view.record_keys.tolist(), dtype=KEY_DTYPE)
    sort = np.argsort(record_keys, kind="stable")
    record_keys, record_classes = record_keys[sort], view.record_classes[sort]
    group_of_row = np.full(len(keys), -1, dtype=np.int64)
    if len(record_keys):
        pos = np.minimum(np.searchsorted(record_keys, keys), len(record_keys) - 1)
        hit = record_keys[pos] == keys
        group_of_row[hit] = record_classes[pos[hit]]
    cv = view.values[attribute]
    # entries are sorted by class then value: distinct values per class directly
    counts = np.bincount(cv.class_index, minlength=view.n_classes)
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return EarlierRelease(group_of_row, ptr, np.asarray(cv.value, dtype=np.float64))


def publish(df: pd.DataFrame, request: Any, context: PublishContext) -> Release:
    """The next release of a dataset (the ``ke`` method with a history): the optimal
    partition with no incremental breach against any earlier release."""
    import time

    from anonkit.releases.attacks import CrossReleaseBreachError

    options = dict(request.options)
    strategy = options.get("history") or "pruned"
    if context.previous is None or strategy == "ignore":
        # the first release, or a deliberate re-partition that ignores the history (the
        # publishing gate then judges it like any one-shot release)
        release, part = _one_shot(df, context.schema, options)
        keys = np.asarray(context.pseudonyms, dtype=KEY_DTYPE)
        release.method_state = first_knowledge(part, keys).to_bytes()
        return release
    k, e = options.get("k"), options.get("e")
    if k is None or e is None:
        raise InputError("method 'ke' needs both -k and -e")
    name, values = sensitive_values(df, context.schema)
    keys = np.asarray(context.pseudonyms, dtype=KEY_DTYPE)
    places = decimal_places(values)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    view = context.previous_view()
    assert view is not None and context.previous is not None
    if name not in view.values:
        raise InputError(f"the previous release of {context.dataset!r} has no sensitive "
                         f"attribute {name!r}")
    previous = earlier_release(view, keys, name)
    state = context.store.method_state(context.previous)
    try:
        if strategy == "pruned" and state is not None and context.previous.method == "ke":
            part, knowledge = incremental_partition(values, keys, previous,
                                                    Knowledge.from_bytes(state), k, e,
                                                    places=places, name=name)
        else:
            # every earlier release (also when the previous one carries no knowledge)
            infos = context.store.releases(context.dataset)
            earlier = [earlier_release(context.store.load(info, labels=False), keys, name)
                       for info in infos]
            part = naive_incremental_partition(values, keys, earlier, k, e, places=places,
                                               name=name)
            knowledge = _knowledge_after(part, keys, earlier)
    except BlockedRecords as blocked:
        raise CrossReleaseBreachError(_blocked_message(blocked, df, request, context,
                                                       view)) from None
    timings["partition"] = time.perf_counter() - t0
    parameters = _parameters(options) | {"breach_checks": part.breach_checks}
    return permuted_release(df, context.schema, part, k=k, e=e,
                            group_column=options.get("group_column") or "group",
                            seed=options.get("seed"), method="ke", parameters=parameters,
                            timings=timings, method_state=knowledge.to_bytes())


def _knowledge_after(part: KEPartition, keys: np.ndarray,
                     earlier: Sequence[EarlierRelease]) -> Knowledge:
    """The knowledge after ``part`` computed from every release (the naive path)."""
    present = np.unique(part.sorted_values)
    set_of, ptr, values, _ = knowledge_from_releases(keys, earlier, present)
    empty = Knowledge(np.zeros(0, dtype=KEY_DTYPE), np.zeros(0, np.int64),
                      np.zeros(1, np.int64), np.zeros(0))
    return next_knowledge(part, keys, empty, set_of, ptr, values)


def _blocked_message(blocked: BlockedRecords, df: pd.DataFrame, request: Any,
                     context: PublishContext, view: ReleaseView) -> str:
    labels = view.labels
    shown = []
    for b in blocked.blockers[:10]:
        group = b.previous_group
        if group >= 0 and view.info.group_column and view.info.group_column in labels:
            group = labels[view.info.group_column].iloc[group]
        where = f"group {group} of release {view.info.seq}" if b.previous_group >= 0 else \
            "an earlier release"
        shown.append(f"{request.key}={df[request.key].iloc[b.row]!r} ({where}: "
                     f"{b.distinct} values left, range {exact_number(b.range)})")
    more = f" and {len(blocked.blockers) - 10} more" if len(blocked.blockers) > 10 else ""
    k, e = request.options.get("k"), request.options.get("e")
    return (f"release {context.seq} of {context.dataset!r} was refused: after the deletions "
            f"no partition avoids an incremental breach of (k={k}, e={exact_number(e)}) for "
            f"{len(blocked.blockers)} records: {'; '.join(shown)}{more}. Their earlier groups "
            f"lost the values that protected them. Nothing was written; see the README "
            f"(history: refused incremental releases) for what to do")
