"""What an adversary has accumulated about each record over a dataset's releases.

Every release of a dataset puts a record into one class; an adversary who holds several
releases intersects them (see :mod:`anonkit.history.attacks` for the two adversaries).
:class:`Accumulated` keeps, per record, everything that intersection leaves, and is
updated one release at a time (:meth:`Accumulated.add`): a release costs time in its own
records (times the releases each of them was in), never in the earlier releases' rows. The
history keeps it after every publish (:mod:`anonkit.history.knowledge.state`; encrypted: it
holds per-record values), so the publish-time gate and the audit read it instead of
intersecting every earlier release.

Per record it holds

- the releases and classes it was in (its *memberships*);
- its *cell*: the records that shared every one of its classes (what an adversary who links
  rows across releases is left with), with, per pair and sensitive attribute, the value
  the linked rows agree on;
- its *atom*: the records that shared its class, or its absence, in every release. Per
  atom and sensitive attribute, the values left in the intersection of its classes'
  multisets (the plain intersection, with the smallest count), and bounds ``[lo, hi]`` on
  how many of the atom's people have each value: the qi adversary's counting argument.

The counting argument: each class's multiset is the sum over its atoms (less up to its rows
that are no record: counterfeits), and each atom's values sum to its size. Bounds are
tightened from these sums until nothing changes (if the other atoms of a class must use up
its flu, the atom has none). When a release splits atoms, the new atoms inherit their
parent's bounds and only they are tightened again, against the sums of every release they
are in (kept per multiset entry); earlier atoms keep their bounds. Each step is a valid
implication, so the result is sound -- it never rules out a value some assignment allows --
though not complete: it may leave a value none allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from anonkit.errors import HistoryError
from anonkit.history import _knowledge_c
from anonkit.history.records import ReleaseInfo, ReleaseView

#: release kinds whose released rows carry a record's own sensitive value: an adversary who
#: links a record's rows sees the values of its candidates (in a permuted release values
#: are shuffled within the group, so linking rows does not give a person's value)
ROW_VALUE_KINDS = ("generalized", "synthetic")

#: rounds of constraint propagation per release at most (each round is sound: stopping
#: early only leaves values a longer run might rule out)
_MAX_ROUNDS = 50
#: a multiset entry's key: class << _VALUE_BITS | value id
_VALUE_BITS = 31
#: a membership's key: record << _RELEASE_BITS | release index
_RELEASE_BITS = 24
#: a pair's agreed value: no release of the scope shows values on rows yet / rows disagree
_NO_ROWS, _DISAGREE = -1, -2


def _key(cls: np.ndarray, value: np.ndarray) -> np.ndarray:
    return (np.asarray(cls, dtype=np.int64) << _VALUE_BITS) | np.asarray(value, dtype=np.int64)


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For runs ``[lo[j], hi[j])``: the run of every position, and the positions."""
    lengths = hi - lo
    owner = np.repeat(np.arange(len(lo)), lengths)
    within = np.arange(len(owner)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return owner, np.repeat(lo, lengths) + within


def _runs(sorted_ids: np.ndarray, n: int) -> np.ndarray:
    """Start offsets of ids ``0..n-1`` in a sorted id array (n + 1 of them)."""
    return np.searchsorted(sorted_ids, np.arange(n + 1))


@dataclass


class _Multisets:
    """One release's multisets of one attribute with global value ids, sorted by key, and
    the qi adversary's running sums over the atoms' bounds per entry."""

    key: np.ndarray  # class << _VALUE_BITS | value, sorted
    count: np.ndarray  # float64: rows with the value
    need: np.ndarray  # float64: of which at least this many are records (not counterfeit)
    sum_lo: np.ndarray  # float64: sum of the bounds of the atom entries linked to it
    sum_hi: np.ndarray
    _starts: np.ndarray | None = field(default=None, repr=False)

    def class_starts(self, n_classes: int) -> np.ndarray:
        """Where each class's entries start (n_classes + 1 offsets; the keys never change,
        so once per release, not once per later release)."""
        if self._starts is None:
            self._starts = np.searchsorted(self.key >> _VALUE_BITS, np.arange(n_classes + 1))
        return self._starts


@dataclass


class _Release:
    """What the engine keeps of a release: its classes and, per attribute, its multisets."""

    seq: int
    sizes: np.ndarray  # rows per class
    counterfeits: np.ndarray  # counterfeit rows per class
    records: np.ndarray  # records (people of the history) per class
    row_values: bool  # the release's rows carry the records' own values
    values_known: bool  # the history keeps every record's value of this release
    multisets: dict[str, _Multisets]
    info: ReleaseInfo | None = None  # attached when read (not kept in the state)

    @property
    def real_sizes(self) -> np.ndarray:
        return self.sizes - self.counterfeits


class _Values:
    """Global value ids of one attribute: ids in order of first appearance. The values are
    kept as one array (float64, NaN missing; or object, None missing), read on every
    judgement, and extended only when a release brings new ones."""

    def __init__(self, numeric: bool, names: Sequence[object] = ()) -> None:
        self.numeric = numeric
        self.array = _value_array(names, numeric)
        self._index: pd.Index | None = None

    @property
    def names(self) -> list[object]:
        return self.array.tolist()

    def ids(self, values: np.ndarray) -> np.ndarray:
        values = _value_array(values, self.numeric)
        if not len(values):
            return np.zeros(0, dtype=np.int64)
        known = self._lookup().get_indexer(values).astype(np.int64)
        new = known < 0
        if new.any():
            fresh = pd.unique(pd.Series(values[new], dtype=values.dtype))
            self.array = np.concatenate([self.array, _value_array(fresh, self.numeric)])
            self._index = None
            known[new] = self._lookup().get_indexer(values[new])
        return known

    def _lookup(self) -> pd.Index:
        if self._index is None:
            self._index = pd.Index(self.array)
        return self._index

    @property
    def magnitude(self) -> np.ndarray:
        return self.array if self.numeric else np.full(len(self.array), np.nan)

    @property
    def missing(self) -> int:
        """The id of the missing value (-1: never seen)."""
        found = np.flatnonzero(pd.isna(self.array))
        return int(found[0]) if len(found) else -1


def _value_array(values: Sequence[object] | np.ndarray, numeric: bool) -> np.ndarray:
    if numeric:
        return np.asarray(values, dtype=np.float64)
    out = np.empty(len(values), dtype=object)
    out[:] = list(values) if not isinstance(values, np.ndarray) else values
    return out


@dataclass


class _Entries:
    """Per atom (sorted by atom, then value): the values left in the intersection of its
    classes' multisets, the smallest count, and the qi adversary's bounds on how many of
    its people have the value (``hi < 1``: ruled out)."""

    atom: np.ndarray
    value: np.ndarray
    low: np.ndarray  # float64
    high: np.ndarray
    smallest: np.ndarray  # smallest count over the atom's classes


class Accumulated:
    """Everything an adversary holding a dataset's releases knows, per record (see the
    module). ``add`` one release at a time, in publication order."""

    def __init__(self, attributes: Sequence[str] = ()) -> None:
        self.attributes = list(attributes)
        self.releases: list[_Release] = []
        self.values: dict[str, _Values] = {}
        # records, in order of first appearance
        self.keys = np.zeros(0, dtype="S16")
        self._index: pd.Index | None = None
        self.n_in = np.zeros(0, dtype=np.int64)  # releases the record was in
        self.min_real = np.zeros(0)  # its smallest class, people only
        self.row_values = np.zeros(0, dtype=bool)  # some release of it shows row values
        self.unknown_rows = np.zeros(0, dtype=bool)  # ... whose record values are not kept
        self.homogeneous: dict[str, np.ndarray] = {}  # some release left it one value
        #: breached when a release was published over the gate (``--allow-breach``): the
        #: gate does not refuse later releases for them again (the audit still reports them)
        self.accepted = np.zeros(0, dtype=bool)
        # memberships, sorted by record then release
        self.mem_record = np.zeros(0, dtype=np.int64)
        self.mem_release = np.zeros(0, dtype=np.int64)
        self.mem_class = np.zeros(0, dtype=np.int64)
        self.mem_value: dict[str, np.ndarray] = {}  # the record's value id (-1: unknown)
        # cells of records in two or more releases (a record in one release: its class)
        self.cell_owner = np.zeros(0, dtype=np.int64)
        self.cell_member = np.zeros(0, dtype=np.int64)
        self.cell_value: dict[str, np.ndarray] = {}
        # atoms
        self.atom = np.zeros(0, dtype=np.int64)
        self.atom_size = np.zeros(0, dtype=np.int64)
        self.entries: dict[str, _Entries] = {}
        self._start_attributes()

    def _start_attributes(self) -> None:
        for attr in self.attributes:
            self.cell_value.setdefault(attr, np.zeros(0, dtype=np.int64))
            self.mem_value.setdefault(attr, np.zeros(0, dtype=np.int64))
            self.homogeneous.setdefault(attr, np.zeros(self.n_records, dtype=bool))

    # -- records ---------------------------------------------------------------------------
    @property
    def n_records(self) -> int:
        return len(self.keys)

    @property
    def n_releases(self) -> int:
        return len(self.releases)

    def index(self) -> pd.Index:
        """Pseudonym (16 bytes) -> record id. Built from the S16 array, whose conversion
        drops trailing NUL bytes: injective on 16-byte pseudonyms, and used both ways."""
        if self._index is None:
            self._index = pd.Index(self.keys.astype(object))
        return self._index

    def record_ids(self, pseudonyms: Sequence[bytes] | np.ndarray) -> np.ndarray:
        """Record ids of ``pseudonyms`` (-1: never released)."""
        wanted = np.asarray(list(pseudonyms) if not isinstance(pseudonyms, np.ndarray)
                            else pseudonyms, dtype="S16")
        return self.index().get_indexer(wanted.astype(object)).astype(np.int64)

    def pseudonym(self, r: int) -> bytes:
        return self.keys[r : r + 1].tobytes()

    def memberships(self, records: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(owner, release, class)`` of every membership of ``records`` (owner: position
        in ``records``), sorted by owner then release."""
        records = np.asarray(records, dtype=np.int64)
        if len(records) == self.n_records and (
                not len(records) or (records[0] == 0 and (np.diff(records) == 1).all())):
            return self.mem_record, self.mem_release, self.mem_class  # every record, in order
        if len(records) * 16 > self.n_records and (np.diff(records) > 0).all():
            # many records, in order: one pass over the memberships beats a search each
            position = np.full(self.n_records, -1, dtype=np.int64)
            position[records] = np.arange(len(records))
            at = np.flatnonzero(position[self.mem_record] >= 0)
            return position[self.mem_record[at]], self.mem_release[at], self.mem_class[at]
        owner, at = self._membership_rows(records)
        return owner, self.mem_release[at], self.mem_class[at]

    def _membership_rows(self, records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        starts = np.searchsorted(self.mem_record, records)
        ends = np.searchsorted(self.mem_record, records, side="right")
        return _expand(starts, ends)

    def _membership_at(self, records: np.ndarray, release: np.ndarray) -> np.ndarray:
        """The row of each record's membership of ``release`` (-1: it was not in it)."""
        key = (self.mem_record << _RELEASE_BITS) | self.mem_release
        query = (np.asarray(records, dtype=np.int64) << _RELEASE_BITS) | release
        if not len(key):
            return np.full(len(query), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(key, query), len(key) - 1)
        return np.where(key[at] == query, at, -1)

    def in_release(self, j: int) -> np.ndarray:
        """Record ids of release index ``j``."""
        return self.mem_record[self.mem_release == j]

    # -- one release -----------------------------------------------------------------------
    def add(self, view: ReleaseView) -> None:
        """Fold release ``view`` (the next in publication order) into the knowledge."""
        if self.releases and view.info.seq <= self.releases[-1].seq:
            raise HistoryError(f"release {view.info.seq} of {view.info.dataset!r} comes after "
                               f"release {self.releases[-1].seq}: releases are added in order")
        if not self.releases and not self.attributes:
            self.attributes = list(view.info.sensitive)
            self._start_attributes()
        j = len(self.releases)
        keys = np.asarray(view.record_keys.tolist() if view.record_keys.dtype == object
                          else view.record_keys, dtype="S16")
        rid = self._register(keys)
        cls = np.asarray(view.record_classes, dtype=np.int64)
        order = np.argsort(rid, kind="stable")
        rid, cls = rid[order], cls[order]
        n_classes = view.n_classes
        records = np.bincount(cls, minlength=n_classes)
        row_values = view.info.release_kind in ROW_VALUE_KINDS
        values_known = view.record_values is not None and all(
            a in view.record_values for a in self.attributes)
        release = _Release(view.info.seq, np.asarray(view.sizes, dtype=np.int64),
                           np.asarray(view.counterfeits, dtype=np.int64), records, row_values,
                           values_known, {}, view.info)
        # per attribute: global value ids of the entries and of every record's value
        entry_value: dict[str, np.ndarray] = {}
        record_value: dict[str, np.ndarray] = {}
        for attr in self.attributes:
            cv = view.values[attr]
            if attr not in self.values:
                self.values[attr] = _Values(bool(cv.numeric))
            gid = self.values[attr].ids(cv.value)
            entry_value[attr] = gid
            if values_known:
                assert view.record_values is not None
                record_value[attr] = gid[np.asarray(view.record_values[attr])[order]]
            else:
                record_value[attr] = np.full(len(rid), -1, dtype=np.int64)
        self._link(release, rid, cls, record_value)
        self._record_flags(release, rid, cls, view)
        # memberships: each after the record's earlier ones (rid is sorted)
        at = np.searchsorted(self.mem_record, rid, side="right")
        self.mem_record = np.insert(self.mem_record, at, rid)
        self.mem_release = np.insert(self.mem_release, at, j)
        self.mem_class = np.insert(self.mem_class, at, cls)
        for attr in self.attributes:
            self.mem_value[attr] = np.insert(self.mem_value[attr], at, record_value[attr])
        self._split_atoms(release, rid, cls, view, entry_value)
        self.releases.append(release)

    def _register(self, keys: np.ndarray) -> np.ndarray:
        """Record ids of a release's pseudonyms, new records appended."""
        ids = self.index().get_indexer(keys.astype(object)).astype(np.int64) if len(
            self.keys) else np.full(len(keys), -1, dtype=np.int64)
        new = ids < 0
        if new.any():
            n_new = int(new.sum())
            ids[new] = np.arange(self.n_records, self.n_records + n_new)
            self.keys = np.concatenate([self.keys, keys[new]])
            self._index = None
            grow = {"n_in": 0, "min_real": np.inf, "row_values": False,
                    "unknown_rows": False, "atom": -1, "accepted": False}
            for name, fill in grow.items():
                old = getattr(self, name)
                setattr(self, name, np.concatenate([old, np.full(n_new, fill,
                                                                 dtype=old.dtype)]))
            for attr in self.attributes:
                old = self.homogeneous.get(attr, np.zeros(0, dtype=bool))
                self.homogeneous[attr] = np.concatenate([old, np.zeros(n_new, dtype=bool)])
        return ids

    def _record_flags(self, release: _Release, rid: np.ndarray, cls: np.ndarray,
                      view: ReleaseView) -> None:
        self.n_in[rid] += 1
        self.min_real[rid] = np.minimum(self.min_real[rid], release.real_sizes[cls])
        self.row_values[rid] |= release.row_values
        self.unknown_rows[rid] |= release.row_values and not release.values_known
        for attr in self.attributes:
            distinct = np.bincount(view.values[attr].class_index, minlength=view.n_classes)
            self.homogeneous[attr][rid] |= distinct[cls] == 1

    # -- the linkage adversary -------------------------------------------------------------
    def _link(self, release: _Release, rid: np.ndarray, cls: np.ndarray,
              record_value: dict[str, np.ndarray]) -> None:
        """Narrow the cells of the release's records to their class in it: a record seen
        once before gets the records of its earlier class that are in its class now; a
        record with a cell keeps the members that are."""
        class_now = np.full(self.n_records, -1, dtype=np.int64)
        class_now[rid] = cls
        value_now = {a: np.full(self.n_records, -1, dtype=np.int64) for a in self.attributes}
        for a in self.attributes:
            value_now[a][rid] = record_value[a]
        seen = self.n_in[rid]
        # records with a cell: keep the members in the owner's class now
        owners_now = np.zeros(self.n_records, dtype=bool)
        owners_now[rid[seen >= 2]] = True
        mine = owners_now[self.cell_owner]
        keep_rows = ~mine  # cells of records not in this release stay as they are
        owner, member = self.cell_owner[mine], self.cell_member[mine]
        stays = class_now[member] == class_now[owner]
        owner, member = owner[stays], member[stays]
        values = {a: self.cell_value[a][mine][stays] for a in self.attributes}
        values = {a: self._agree(values[a], value_now[a][member], release) for a in values}
        # records seen once: pairs with the records of their class now, kept when the
        # member was in the owner's earlier class (the member's membership there)
        once = rid[seen == 1]
        new_owner, new_member, new_values = self._first_cells(once, class_now, rid, cls,
                                                              value_now, release)
        self.cell_owner = np.concatenate([self.cell_owner[keep_rows], owner, new_owner])
        self.cell_member = np.concatenate([self.cell_member[keep_rows], member, new_member])
        for a in self.attributes:
            self.cell_value[a] = np.concatenate([
                self.cell_value.get(a, np.zeros(0, dtype=np.int64))[keep_rows], values[a],
                new_values[a]])

    def _first_cells(self, once: np.ndarray, class_now: np.ndarray, rid: np.ndarray,
                     cls: np.ndarray, value_now: dict[str, np.ndarray], release: _Release
                     ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        empty = np.zeros(0, dtype=np.int64)
        if not len(once):
            return empty, empty, {a: empty for a in self.attributes}
        # the only earlier membership of each record seen once
        _, first_release, first_class = self.memberships(once)  # one each
        # pairs (owner, member) of the same class now
        by_class = np.argsort(cls, kind="stable")
        members_sorted, classes_sorted = rid[by_class], cls[by_class]
        starts = np.searchsorted(classes_sorted, np.arange(release.sizes.size + 1))
        c = class_now[once]
        pair_owner, pos = _expand(starts[c], starts[c + 1])
        member = members_sorted[pos]
        owner = once[pair_owner]
        # the member's class in the owner's earlier release
        rel, was = first_release[pair_owner], first_class[pair_owner]
        member_pos = self._membership_at(member, rel)
        member_class = np.where(member_pos >= 0, self.mem_class[member_pos], -2)
        kept = member_class == was
        owner, member, member_pos, rel = owner[kept], member[kept], member_pos[kept], rel[kept]
        values = {}
        for a in self.attributes:
            earlier_rows = np.array([r.row_values for r in self.releases], dtype=bool)
            agreed = np.where(earlier_rows[rel], self.mem_value[a][member_pos], _NO_ROWS)
            values[a] = self._agree(agreed, value_now[a][member], release)
        return owner, member, values

    @staticmethod
    def _agree(agreed: np.ndarray, now: np.ndarray, release: _Release) -> np.ndarray:
        """A pair's agreed value after a release shows ``now`` (when it shows row values;
        ``now`` -1: not kept, which the owner's ``unknown_rows`` flag records)."""
        if not release.row_values or not release.values_known:
            return agreed
        out = np.where(agreed == _NO_ROWS, now, agreed)
        return np.where((agreed >= 0) & (agreed != now), _DISAGREE, out)

    # -- the qi adversary ------------------------------------------------------------------
    def _split_atoms(self, release: _Release, rid: np.ndarray, cls: np.ndarray,
                     view: ReleaseView, entry_value: dict[str, np.ndarray]) -> None:
        """Split the atoms by the release's classes, give the new atoms their entries and
        tighten their bounds (see the module)."""
        j = len(self.releases)
        width = len(release.sizes) + 1
        class_now = np.full(self.n_records, -1, dtype=np.int64)
        class_now[rid] = cls
        child_key, atom_new = np.unique((self.atom + 1) * width + class_now + 1,
                                        return_inverse=True)
        atom_new = atom_new.reshape(-1)
        parent, child_class = child_key // width - 1, child_key % width - 1
        child_size = np.bincount(atom_new, minlength=len(child_key))
        old_size = self.atom_size
        touched = np.zeros(len(old_size), dtype=bool)
        touched[parent[(child_class >= 0) & (parent >= 0)]] = True
        # the releases and classes of every touched parent (its representative's)
        representative = np.zeros(len(old_size), dtype=np.int64)
        old = np.flatnonzero(self.atom >= 0)
        representative[self.atom[old]] = old
        touched_atoms = np.flatnonzero(touched)
        sig_owner, sig_release, sig_class = self.memberships(representative[touched_atoms])
        keep = sig_release < j  # this release's memberships are already appended
        sig_owner, sig_release, sig_class = sig_owner[keep], sig_release[keep], sig_class[keep]
        sig_atom = touched_atoms[sig_owner]
        for attr in self.attributes:
            release.multisets[attr] = self._multisets(view, attr, entry_value[attr], release)
            self._split_entries(attr, j, release, parent, child_class, child_size, old_size,
                                touched, sig_atom, sig_release, sig_class)
        self.atom, self.atom_size = atom_new, child_size

    def _multisets(self, view: ReleaseView, attr: str, gid: np.ndarray,
                   release: _Release) -> _Multisets:
        cv = view.values[attr]
        key = _key(cv.class_index, gid)
        order = np.argsort(key, kind="stable")
        key, count = key[order], cv.count[order].astype(np.float64)
        zero = np.zeros(len(key))
        return _Multisets(key, count, _need(key, count, release.sizes, release.records),
                          zero, zero.copy())

    def _split_entries(self, attr: str, j: int, release: _Release, parent: np.ndarray,
                       child_class: np.ndarray, child_size: np.ndarray,
                       old_size: np.ndarray, touched: np.ndarray, sig_atom: np.ndarray,
                       sig_release: np.ndarray, sig_class: np.ndarray) -> None:
        now = release.multisets[attr]
        old = self.entries.get(attr) or _Entries(*(np.zeros(0, dtype=np.int64),) * 2,
                                                 *(np.zeros(0),) * 3)
        every = [*self.releases, release]
        table = _Table([r.multisets[attr] for r in every], [len(r.sizes) for r in every])
        # new records' atoms: their class's multiset
        fresh = np.flatnonzero(parent < 0)
        starts = table.class_start[table.class_base[j]:table.class_base[j + 1]]
        f_owner, f_idx = _expand(starts[child_class[fresh]], starts[child_class[fresh] + 1])
        f_atom = fresh[f_owner]
        f_count = now.count[f_idx]
        fresh_entries = _Entries(f_atom, now.key[f_idx] & ((1 << _VALUE_BITS) - 1),
                                 np.zeros(len(f_idx)),
                                 np.minimum(f_count, child_size[f_atom]), f_count)
        if not len(old.atom) and len(f_idx) == len(now.key) and (now.need == now.count).all():
            # the first release without counterfeits: each atom is a class, and each of its
            # values is held by exactly the multiset's count of its people
            fresh_entries.low, fresh_entries.high = f_count.copy(), f_count.copy()
            now.sum_lo, now.sum_hi = f_count.copy(), f_count.copy()
            self.entries[attr] = fresh_entries
            return
        # every other atom: its parent's entries, narrowed to its class now
        kids = np.flatnonzero(parent >= 0)
        runs = _runs(old.atom, len(old_size))
        k_owner, k_idx = _expand(runs[parent[kids]], runs[parent[kids] + 1])
        k_atom = kids[k_owner]
        k_class = child_class[k_atom]
        value = old.value[k_idx]
        count = np.full(len(k_idx), np.inf)
        inside = np.flatnonzero(k_class >= 0)
        pos = table.locate(np.full(len(inside), j), k_class[inside], value[inside])
        found = pos >= 0
        count[inside[found]] = table.count[pos[found]]
        kept = np.ones(len(k_idx), dtype=bool)
        kept[inside[~found]] = False
        k_idx, k_atom, value, count = k_idx[kept], k_atom[kept], value[kept], count[kept]
        size, p_size = child_size[k_atom], old_size[parent[k_atom]]
        inherited = _Entries(k_atom, value,
                             np.maximum(old.low[k_idx] - (p_size - size), 0.0),
                             np.minimum(np.minimum(old.high[k_idx], size), count),
                             np.minimum(old.smallest[k_idx], count))
        entries = _Entries(*(np.concatenate([getattr(fresh_entries, f), getattr(inherited, f)])
                             for f in ("atom", "value", "low", "high", "smallest")))
        n_fresh = len(f_idx)
        from_parent = np.concatenate([np.full(n_fresh, -1, dtype=np.int64), k_idx])
        # the earlier releases' sums: a touched parent's entries give way to its children's
        moved = np.flatnonzero(touched[old.atom])  # parent entries that split
        child_of = np.flatnonzero(from_parent >= 0)
        child_of = child_of[touched[old.atom[from_parent[child_of]]]]
        d_low = -np.bincount(moved, old.low[moved], minlength=len(old.atom))
        d_high = -np.bincount(moved, old.high[moved], minlength=len(old.atom))
        d_low += np.bincount(from_parent[child_of], entries.low[child_of],
                             minlength=len(old.atom))
        d_high += np.bincount(from_parent[child_of], entries.high[child_of],
                              minlength=len(old.atom))
        # links of the moved parent entries: one per earlier release of their atom
        sig_runs = _runs(sig_atom, len(old_size))
        l_owner, l_idx = _expand(sig_runs[old.atom[moved]], sig_runs[old.atom[moved] + 1])
        link_entry = moved[l_owner]  # parent entry, sorted
        link_pos = table.locate(sig_release[l_idx], sig_class[l_idx], old.value[link_entry])
        if (link_pos < 0).any():
            raise HistoryError(f"the accumulated knowledge of {attr!r} is inconsistent with "
                               f"the releases' multisets")
        s_low, s_high = table.sum_lo, table.sum_hi
        s_low += np.bincount(link_pos, d_low[link_entry], minlength=len(s_low))
        s_high += np.bincount(link_pos, d_high[link_entry], minlength=len(s_high))
        # this release's sums: every entry of an atom in it
        here = np.flatnonzero(child_class[entries.atom] >= 0)
        here_g = table.locate(np.full(len(here), j), child_class[entries.atom[here]],
                              entries.value[here])
        s_low += np.bincount(here_g, entries.low[here], minlength=len(s_low))
        s_high += np.bincount(here_g, entries.high[here], minlength=len(s_high))
        # live entries: the new atoms' (fresh, or children of a touched parent)
        live = np.ones(len(entries.atom), dtype=bool)
        live[n_fresh:] = touched[parent[entries.atom[n_fresh:]]]
        # an atom whose values cannot fill it had a value change between releases: no
        # assignment fits it, so it is left out of the counting (its bounds stay)
        room = np.bincount(entries.atom, entries.high, minlength=len(child_size))
        live &= room[entries.atom] >= child_size[entries.atom]
        live_idx = np.flatnonzero(live)
        # their links, entry by entry: the parent's links, then this release's
        parent_link_runs = _runs(link_entry, len(old.atom) + 1)  # one spare: fp may be -1
        fp = from_parent[live_idx]
        n_parent_links = np.where(fp >= 0, parent_link_runs[np.maximum(fp, 0) + 1]
                                  - parent_link_runs[np.maximum(fp, 0)], 0)
        in_here = child_class[entries.atom[live_idx]] >= 0
        link_start = np.concatenate([[0], np.cumsum(n_parent_links + in_here)])
        link_g = np.empty(int(link_start[-1]), dtype=np.int64)
        has_parent = np.flatnonzero(fp >= 0)
        p_owner, p_idx = _expand(parent_link_runs[fp[has_parent]],
                                 parent_link_runs[fp[has_parent] + 1])
        within = p_idx - parent_link_runs[fp[has_parent]][p_owner]
        link_g[link_start[has_parent][p_owner] + within] = link_pos[p_idx]
        here_of = np.full(len(entries.atom), -1, dtype=np.int64)
        here_of[here] = here_g
        with_here = np.flatnonzero(in_here)
        link_g[link_start[with_here + 1] - 1] = here_of[live_idx[with_here]]
        low, high, s_low, s_high, _ = _propagate(
            entries.low[live_idx], entries.high[live_idx], entries.atom[live_idx],
            child_size, link_start, link_g, table.count, table.need, s_low, s_high)
        entries.low[live_idx], entries.high[live_idx] = low, high
        for i, r in enumerate(every):
            ms = r.multisets[attr]
            lo, hi = table.offsets[i], table.offsets[i + 1]
            ms.sum_lo, ms.sum_hi = s_low[lo:hi], s_high[lo:hi]
        self.entries[attr] = entries


class _Table:
    """Every release's multisets of one attribute, end to end (global positions)."""

    def __init__(self, multisets: list[_Multisets], n_classes: list[int]) -> None:
        self.offsets = np.cumsum([0, *(len(m.key) for m in multisets)]).astype(np.int64)
        self.key = np.concatenate([m.key for m in multisets]).astype(np.int64)
        self.count = np.concatenate([m.count for m in multisets]).astype(np.float64)
        self.need = np.concatenate([m.need for m in multisets]).astype(np.float64)
        self.sum_lo = np.concatenate([m.sum_lo for m in multisets]).astype(np.float64)
        self.sum_hi = np.concatenate([m.sum_hi for m in multisets]).astype(np.float64)
        starts = [m.class_starts(n) for m, n in zip(multisets, n_classes, strict=True)]
        self.class_start = np.concatenate(starts).astype(np.int64)
        self.class_base = np.cumsum([0, *(len(x) for x in starts)]).astype(np.int64)

    def locate(self, release: np.ndarray, klass: np.ndarray, value: np.ndarray) -> np.ndarray:
        """Global positions of (release index, class, value) entries (-1: absent)."""
        out = np.empty(len(release), dtype=np.int64)
        _knowledge_c.locate(self.key, self.offsets, self.class_start, self.class_base,
                            np.ascontiguousarray(release, dtype=np.int64),
                            np.ascontiguousarray(klass, dtype=np.int64),
                            np.ascontiguousarray(value, dtype=np.int64), out)
        return out


def _propagate(low: np.ndarray, high: np.ndarray, atom: np.ndarray, atom_size: np.ndarray,
               link_start: np.ndarray, link_g: np.ndarray, count: np.ndarray,
               need: np.ndarray, s_low: np.ndarray, s_high: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Tighten the bounds of the live entries (entry ``e`` linked to the multiset entries
    ``link_g[link_start[e]:link_start[e + 1]]``, one per release of its atom) from the
    multiset sums (``s_low`` / ``s_high``, over every atom's entries) and the atom sums,
    until nothing changes (compiled: ``_knowledge_c.propagate``; the tests keep the numpy
    rule it replaced as the reference). Every update is computed from bounds that hold, so
    every bound it gives holds. Releases that contradict each other (a value changed) leave
    the bounds and sums as they came in. ``s_low`` and ``s_high`` are updated in place."""
    low, high = np.array(low, dtype=np.float64), np.array(high, dtype=np.float64)
    if not len(low):
        return low, high, s_low, s_high, 0
    new_low, new_high = low.copy(), high.copy()
    link_start = np.ascontiguousarray(link_start, dtype=np.int64)
    link_g = np.ascontiguousarray(link_g, dtype=np.int64)
    # the sums are updated in place (no copy of every release's sums): a contradiction
    # takes the applied changes back out
    rounds, contradiction = _knowledge_c.propagate(
        new_low, new_high, np.ascontiguousarray(atom, dtype=np.int64),
        np.ascontiguousarray(atom_size, dtype=np.float64), link_start, link_g,
        np.ascontiguousarray(count, dtype=np.float64),
        np.ascontiguousarray(need, dtype=np.float64), s_low, s_high, _MAX_ROUNDS)
    if contradiction:
        link_e = np.repeat(np.arange(len(low)), np.diff(link_start))
        s_low -= np.bincount(link_g, (new_low - low)[link_e], minlength=len(s_low))
        s_high -= np.bincount(link_g, (new_high - high)[link_e], minlength=len(s_high))
        return low, high, s_low, s_high, int(rounds)
    return new_low, new_high, s_low, s_high, int(rounds)


def _need(key: np.ndarray, count: np.ndarray, sizes: np.ndarray, records: np.ndarray
          ) -> np.ndarray:
    """Of each multiset entry's rows, how many at least are records: the class's rows that
    are no record (counterfeits) may all carry its value."""
    slack = (sizes - records)[key >> _VALUE_BITS]
    return count - np.minimum(slack, count)


def fold(views: Sequence[ReleaseView]) -> Accumulated:
    """The knowledge of releases already loaded, one after the other."""
    views = sorted(views, key=lambda v: v.info.seq)
    acc = Accumulated(list(views[-1].info.sensitive) if views else [])
    for v in views:
        acc.add(v)
    return acc


# -- what each adversary is left with, per record ---------------------------------------------


@dataclass


class Measures:
    """Per target record (after every release of the knowledge): what each adversary is
    left with. ``distinct`` ... ``bound``: the plain intersection of its classes'
    multisets; ``qi_values`` / ``linkage_values``: ``(distinct, distinct_present, low,
    high)`` of the values each adversary cannot rule out."""

    targets: np.ndarray  # record ids
    n_releases: np.ndarray
    candidates_linkage: np.ndarray
    candidates_qi: np.ndarray
    row_values: np.ndarray
    distinct: dict[str, np.ndarray]
    distinct_present: dict[str, np.ndarray]
    low: dict[str, np.ndarray]
    high: dict[str, np.ndarray]
    bound: dict[str, np.ndarray]
    qi_values: dict[str, tuple[np.ndarray, ...]]
    linkage_values: dict[str, tuple[np.ndarray, ...]]
    homogeneous: dict[str, np.ndarray]
    #: the same two, from the values proved possible (:mod:`anonkit.history.possible`):
    #: a record breached on these is *not ruled out*; on the ones above, *proved*
    qi_possible: dict[str, tuple[np.ndarray, ...]] = field(default_factory=dict)
    linkage_possible: dict[str, tuple[np.ndarray, ...]] = field(default_factory=dict)

    def span(self, attr: str) -> np.ndarray:
        return self.high[attr] - self.low[attr]

    def qi(self, attr: str, proved: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(distinct, distinct_present, range)`` of the values the qi adversary cannot
        rule out (``proved``: of those proved possible)."""
        d, dp, lo, hi = (self.qi_possible if proved else self.qi_values)[attr]
        return d, dp, hi - lo

    def linkage(self, attr: str, proved: bool = False
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        d, dp, lo, hi = (self.linkage_possible if proved else self.linkage_values)[attr]
        return d, dp, hi - lo


def _measure(acc: Accumulated, targets: np.ndarray,
             status: dict[str, np.ndarray] | None = None,
             upper: Measures | None = None) -> Measures:
    """What each adversary is left with per target; ``status``: per attribute, each
    entry's status (:func:`anonkit.history.possible.entry_status`), which narrows the
    values left to those not ruled out and gives the values proved possible (without it,
    both are the propagation's). ``upper``: the same targets measured without ``status``,
    whose values left are reused (``status`` must rule out no more than the propagation)."""
    targets = np.asarray(targets, dtype=np.int64)
    n_in = acc.n_in[targets]
    # linkage candidates: the cell; a record seen once: its class's records
    cell_size = np.bincount(acc.cell_owner, minlength=acc.n_records)[targets]
    owner, release, klass = acc.memberships(targets[n_in == 1])
    once_size = np.zeros(len(owner), dtype=np.int64)
    for i in np.unique(release):
        sel = release == i
        once_size[sel] = acc.releases[i].records[klass[sel]]
    candidates_linkage = cell_size.copy()
    candidates_linkage[np.flatnonzero(n_in == 1)[owner]] = once_size
    candidates_qi = acc.min_real[targets].astype(np.float64)
    out: dict[str, dict[str, np.ndarray]] = {k: {} for k in (
        "distinct", "distinct_present", "low", "high", "bound")}
    qi_values, linkage_values, homogeneous = {}, {}, {}
    qi_possible: dict[str, tuple[np.ndarray, ...]] = {}
    linkage_possible: dict[str, tuple[np.ndarray, ...]] = {}
    atom = acc.atom[targets]
    for attr in acc.attributes:
        e = acc.entries[attr]
        n_atoms = len(acc.atom_size)
        plain = _summarize(acc, attr, e.atom, e.value, n_atoms)
        bound = np.bincount(e.atom, e.smallest, minlength=n_atoms)
        for name, per_atom in zip(("distinct", "distinct_present", "low", "high", "bound"),
                                  (*plain, bound), strict=True):
            out[name][attr] = per_atom[atom].astype(np.float64)
        candidates_qi = np.minimum(candidates_qi, bound[atom])
        code = status[attr] if status is not None else np.where(e.high >= 1, 1, -1)
        plain_here = tuple(x[atom].astype(np.float64) for x in plain)
        bounds: tuple[tuple[str, np.ndarray, dict[str, tuple[np.ndarray, ...]]], ...] = ()
        if upper is None:
            bounds = (("upper", code >= 0, qi_values),)
        else:
            qi_values[attr], linkage_values[attr] = upper.qi_values[attr], \
                upper.linkage_values[attr]
        if status is not None:
            bounds += (("lower", code > 0, qi_possible),)
        for name, left, into in bounds:
            qi = _summarize(acc, attr, e.atom[left], e.value[left], n_atoms)
            into[attr] = tuple(x[atom].astype(np.float64) for x in qi)
            (linkage_values if name == "upper" else linkage_possible)[attr] = _linkage_values(
                acc, attr, targets, candidates_linkage, into[attr], plain_here)
        if status is None:  # one bound: the propagation's, on both sides
            qi_possible[attr], linkage_possible[attr] = qi_values[attr], linkage_values[attr]
        homogeneous[attr] = acc.homogeneous[attr][targets]
    return Measures(targets, n_in, candidates_linkage, candidates_qi,
                    acc.row_values[targets], out["distinct"], out["distinct_present"],
                    out["low"], out["high"], out["bound"], qi_values, linkage_values,
                    homogeneous, qi_possible, linkage_possible)


def _linkage_values(acc: Accumulated, attr: str, targets: np.ndarray, candidates: np.ndarray,
                    qi: tuple[np.ndarray, ...], plain: tuple[np.ndarray, ...]
                    ) -> tuple[np.ndarray, ...]:
    """The linkage adversary links a person's rows; a release that shows values on rows
    shows each linked person's value, so the target's value is one of its cell's: exactly
    those (a person whose rows show different values is no candidate for a value that does
    not change). Without row values it links a person to groups, not values: what the qi
    adversary deduces. When a release of the scope keeps no per-record values (a migrated
    history): at most as many values as candidates, a lone candidate pins one."""
    d, dp, lo, hi = (x.copy() for x in qi)
    rows = acc.row_values[targets]
    unknown = acc.unknown_rows[targets] & rows
    lone = unknown & (candidates == 1)
    d[unknown] = np.minimum(d[unknown], candidates[unknown])
    dp[unknown] = np.minimum(dp[unknown], candidates[unknown])
    hi[lone] = lo[lone]
    exact = rows & ~unknown
    once = exact & (acc.n_in[targets] == 1)  # its cell is its class: the class's values
    for x, p in zip((d, dp, lo, hi), plain, strict=True):
        x[once] = p[once]
    many = np.flatnonzero(exact & (acc.n_in[targets] >= 2))
    if len(many):
        position = np.full(acc.n_records, -1, dtype=np.int64)
        position[targets[many]] = np.arange(len(many))
        at = position[acc.cell_owner]
        value = acc.cell_value[attr]
        sel = np.flatnonzero((at >= 0) & (value >= 0))
        n_values = max(len(acc.values[attr].array), 1)
        pairs = np.unique(at[sel] * n_values + value[sel])
        found = _summarize(acc, attr, pairs // n_values, pairs % n_values, len(many))
        for x, f in zip((d, dp, lo, hi), found, strict=True):
            x[many] = f
    return d, dp, lo, hi


def _summarize(acc: Accumulated, attr: str, group: np.ndarray, value: np.ndarray,
               n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group, from (group, value id) entries sorted by group and each pair once: how
    many values (with and without the missing one) and their smallest and largest magnitude
    (NaN if none, or not numeric)."""
    distinct = np.bincount(group, minlength=n_groups)
    missing = acc.values[attr].missing
    present = distinct - np.bincount(group[value == missing], minlength=n_groups)
    low, high = np.full(n_groups, np.nan), np.full(n_groups, np.nan)
    if len(group):
        mags = acc.values[attr].magnitude[value]
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        low[group[starts]] = np.fmin.reduceat(mags, starts)
        high[group[starts]] = np.fmax.reduceat(mags, starts)
    return distinct, present, low, high
