"""What an adversary has accumulated about each record over a dataset's releases.

Every release of a dataset puts a record into one class; an adversary who holds several
releases intersects them (see :mod:`anonkit.releases.attacks` for the two adversaries).
:func:`knowledge` gives, per record (pseudonym), everything that intersection leaves:

- the releases and classes it was in;
- its *linkage candidates*: the records that shared every one of its classes (what an
  adversary who links rows across releases is left with);
- per sensitive attribute, the intersection of its classes' multisets: the values left
  (distinct count, with and without the missing value), their numeric range, and the qi
  adversary's candidate bound ``sum over the values of min_i count_i(v)`` -- together with
  the class sizes less counterfeit rows, which are no people;
- per quasi-identifier, the intersection of its classes' released labels: for ranges
  (``[20-29]``, ``20-29``, ``[-5, 3]``) and exact numbers the intersected interval, for sets
  (``{a,b}``) the intersected set, otherwise the labels seen.

The audit's "all releases" scope is computed by the same engine
(:class:`Intersections`, :meth:`Intersections.accumulate`), so the two cannot disagree.
Everything is vectorised over records: a scope costs a few sorts and searches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from anonkit.errors import HistoryError
from anonkit.releases.store import HistoryStore, ReleaseView

#: release kinds whose released rows carry a record's own sensitive value: an adversary who
#: links a record's rows sees the values of its candidates (in a permuted release values
#: are shuffled within the group, so linking rows does not give a person's value)
ROW_VALUE_KINDS = ("generalized", "synthetic")

QI_KINDS = ("interval", "set", "labels")
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
#: rounds of constraint propagation at most (each round is sound: stopping early
#: only leaves values a longer run might rule out)
_MAX_ROUNDS = 50
_RANGE = rf"^\s*[\[(]?\s*({_NUM})\s*(?:-|,|\.\.)\s*({_NUM})\s*[\])]?\s*$"


# -- the engine ------------------------------------------------------------------------------


@dataclass
class _Sparse:
    """One release's multisets of one attribute with global value ids, sorted by
    (class, value): ``key = class * n_values + value`` is sorted too."""

    starts: np.ndarray  # (n_classes + 1,)
    value: np.ndarray
    count: np.ndarray
    key: np.ndarray


@dataclass
class Measures:
    """Per target record of a scope (a set of releases that all contain the targets):
    what each adversary is left with. Records sharing every class form a *class tuple*;
    value intersections are computed once per tuple."""

    releases: tuple[int, ...]  # indices of the views in the scope
    targets: np.ndarray  # global record ids
    candidates_linkage: np.ndarray  # records that shared every class of the target
    candidates_qi: np.ndarray  # upper bound on people consistent with every class
    distinct: dict[str, np.ndarray]  # values in every class's multiset, per attribute
    distinct_present: dict[str, np.ndarray]  # the same, not counting a missing value
    low: dict[str, np.ndarray]  # smallest / largest numeric value left (NaN: none)
    high: dict[str, np.ndarray]
    value_bound: dict[str, np.ndarray]  # sum over the values left of the smallest count
    tuple_classes: np.ndarray  # (len(releases), n_tuples): the classes of each tuple
    tuple_of: np.ndarray  # per target: its class tuple
    entries: dict[str, tuple[np.ndarray, np.ndarray]]  # per tuple: (starts, value ids)
    members: np.ndarray  # records present in every release of the scope
    member_group: np.ndarray  # their class tuple id (records sharing every class)
    target_group: np.ndarray  # per target: its group among the members
    row_values: bool  # some release of the scope carries values on rows
    #: per attribute, per target: (distinct, distinct_present, low, high) of the values the
    #: qi adversary cannot rule out (constraint propagation over the class multisets)
    qi_values: dict[str, tuple[np.ndarray, ...]] = field(default_factory=dict)
    #: the same for the linkage adversary (exact per cell when the values are recorded)
    linkage_values: dict[str, tuple[np.ndarray, ...]] = field(default_factory=dict)
    #: per attribute, per target: some single release of the scope already left it one
    #: value (a homogeneous class: no cross-release disclosure)
    homogeneous: dict[str, np.ndarray] = field(default_factory=dict)

    def span(self, attr: str) -> np.ndarray:
        """The numeric range of the values left (NaN: none, or not numeric)."""
        return self.high[attr] - self.low[attr]

    def qi(self, attr: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(distinct, distinct_present, range)`` for the qi adversary."""
        d, dp, lo, hi = self.qi_values[attr]
        return d, dp, hi - lo

    def linkage(self, attr: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(distinct, distinct_present, range)`` for the linkage adversary (see
        :meth:`Intersections.cell_values`)."""
        d, dp, lo, hi = self.linkage_values[attr]
        return d, dp, hi - lo


class Intersections:
    """The releases of a dataset indexed for intersecting: every record's class in every
    release as one dense matrix, and every attribute's multisets with global value ids."""

    def __init__(self, views: Sequence[ReleaseView]) -> None:
        self.views = list(views)
        all_keys = (np.concatenate([v.record_keys for v in self.views]) if self.views
                    else np.zeros(0, dtype=object))
        gids, self.pseudonyms = pd.factorize(all_keys)
        self.n_records = len(self.pseudonyms)
        # class of every record in every release (-1: absent)
        self.cls = np.full((len(self.views), self.n_records), -1, dtype=np.int32)
        self.record_ids: list[np.ndarray] = []  # per view: its records' global ids
        offset = 0
        for i, v in enumerate(self.views):
            n = len(v.record_keys)
            self.record_ids.append(np.asarray(gids[offset:offset + n], dtype=np.int64))
            self.cls[i, gids[offset:offset + n]] = v.record_classes
            offset += n
        # rows of a class that are no record of the history (counterfeit, synthetic)
        self.slack = [v.sizes - np.bincount(v.record_classes, minlength=v.n_classes)
                      for v in self.views]
        #: per attribute: (n_views, n_records) global value id of each record's released
        #: value (-1: absent, or the release keeps no per-record values)
        self.record_value: dict[str, np.ndarray] = {}
        self.values_known = [v.record_values is not None for v in self.views]
        self._deduced: dict[tuple[int, ...], tuple[np.ndarray, dict[str, tuple]]] = {}
        self.real_sizes = [v.real_sizes for v in self.views]
        self.row_values = [v.info.release_kind in ROW_VALUE_KINDS for v in self.views]
        self.attributes = list(self.views[-1].info.sensitive) if self.views else []
        self.value_names: dict[str, np.ndarray] = {}
        self.magnitude: dict[str, np.ndarray] = {}
        self.numeric: dict[str, bool] = {}
        self.sparse: dict[str, list[_Sparse]] = {}
        for attr in self.attributes:
            self._index_values(attr)

    def _index_values(self, attr: str) -> None:
        """Global value ids over all releases, in numeric order for a numeric attribute
        (so a range is the last minus the first value of a sorted run)."""
        per_release = [v.values[attr] for v in self.views]
        numeric = all(cv.numeric for cv in per_release)
        lengths = [len(cv.value) for cv in per_release]
        if numeric:
            every = np.concatenate([cv.value.astype(np.float64) for cv in per_release])
            names = np.unique(every)  # sorted; missing (NaN) last
            gids = np.searchsorted(names, every)
            mags = names
        else:
            every = np.concatenate([cv.value.astype(object) for cv in per_release])
            codes, uniques = pd.factorize(pd.Series(every, dtype=object))
            names = np.append(np.asarray(uniques, dtype=object), None)  # -1: missing
            gids = np.where(codes < 0, len(uniques), codes)
            mags = np.full(len(names), np.nan)
        self.value_names[attr], self.magnitude[attr] = names, mags
        self.numeric[attr] = numeric
        n_values = max(len(names), 1)
        sparse = []
        bounds = np.cumsum([0, *lengths])
        for v, cv, lo, hi in zip(self.views, per_release, bounds[:-1], bounds[1:], strict=True):
            gid = gids[lo:hi].astype(np.int64)
            key = cv.class_index * n_values + gid
            order = np.argsort(key, kind="stable")
            starts = np.searchsorted(cv.class_index[order], np.arange(v.n_classes + 1))
            sparse.append(_Sparse(starts, gid[order], cv.count[order], key[order]))
        self.sparse[attr] = sparse
        record_value = np.full((len(self.views), self.n_records), -1, dtype=np.int64)
        for i, (v, lo) in enumerate(zip(self.views, bounds[:-1], strict=False)):
            if v.record_values is not None and attr in v.record_values:
                entry = np.asarray(v.record_values[attr], dtype=np.int64)
                record_value[i, self.record_ids[i]] = gids[lo + entry]
            else:
                self.values_known[i] = False
        self.record_value[attr] = record_value

    def missing_id(self, attr: str) -> int:
        """The global id of the missing value of ``attr`` (-1 when it never occurs)."""
        names = self.value_names[attr]
        if self.numeric[attr]:
            nan = np.flatnonzero(np.isnan(names.astype(np.float64)))
            return int(nan[0]) if len(nan) else -1
        return len(names) - 1  # a None is appended after the values

    # -- scopes ------------------------------------------------------------------------
    def accumulate(self, targets: np.ndarray) -> list[Measures]:
        """Every target over all the releases that contain it (the tightest intersection:
        intersecting more releases only narrows it), one :class:`Measures` per set of
        releases the targets are in."""
        targets = np.asarray(targets, dtype=np.int64)
        if not len(targets) or not self.views:
            return []
        presence = self.cls[:, targets] >= 0
        # the qi adversary deduces from every release at once (the tightest)
        everything = tuple(range(len(self.views)))
        patterns, pattern_of = np.unique(presence.T, axis=0, return_inverse=True)
        pattern_of = pattern_of.reshape(-1)
        order = np.argsort(pattern_of, kind="stable")
        bounds = np.searchsorted(pattern_of[order], np.arange(len(patterns) + 1))
        parts = []
        for p, pattern in enumerate(patterns):
            releases = tuple(int(i) for i in np.flatnonzero(pattern))
            if releases:
                parts.append(self.measures(releases, targets[order[bounds[p]:bounds[p + 1]]],
                                           deduce_over=everything))
        return parts

    def measures(self, releases: tuple[int, ...], targets: np.ndarray | None = None,
                 deduce_over: tuple[int, ...] | None = None) -> Measures:
        """What intersecting ``releases`` leaves of each of ``targets`` (records present in
        every one of them; default: all such records). The qi adversary's deduction uses
        ``deduce_over`` (default: ``releases``)."""
        rel = list(releases)
        present = (self.cls[rel] >= 0).all(axis=0)
        members = np.flatnonzero(present)
        if targets is None:
            targets = members
        cls = self.cls[np.ix_(rel, members)].astype(np.int64)
        # records sharing every class: one group id per distinct class tuple
        group = np.zeros(len(members), dtype=np.int64)
        for row in cls:
            _, group = np.unique(group * (int(row.max(initial=0)) + 1) + row,
                                 return_inverse=True)
            group = group.reshape(-1)
        target_group = group[np.searchsorted(members, targets)]
        candidates_link = np.bincount(group, minlength=1)[target_group]
        # per distinct class tuple among the targets: the value intersection
        tuples, tuple_of = np.unique(target_group, return_inverse=True)
        tuple_of = tuple_of.reshape(-1)
        representative = np.zeros(len(tuples), dtype=np.int64)
        representative[tuple_of[::-1]] = np.arange(len(targets))[::-1]
        tuple_classes = self.cls[np.ix_(rel, targets[representative])].astype(np.int64)
        # counterfeit rows are no people: they are not candidates
        real = np.stack([self.real_sizes[i][tuple_classes[j]] for j, i in enumerate(rel)])
        candidates_qi = real.min(axis=0).astype(np.float64)
        out: dict[str, dict[str, np.ndarray]] = {
            k: {} for k in ("distinct", "distinct_present", "low", "high", "bound")}
        entries: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for attr in self.attributes:
            found = self._value_intersection(attr, releases, tuple_classes)
            for name, per_tuple in zip(out, found[:5], strict=True):
                out[name][attr] = per_tuple[tuple_of]
            candidates_qi = np.minimum(candidates_qi, found[4])
            entries[attr] = found[5]
        m = Measures(releases, targets, candidates_link, candidates_qi[tuple_of],
                     out["distinct"], out["distinct_present"], out["low"], out["high"],
                     out["bound"], tuple_classes, tuple_of, entries, members, group,
                     target_group, any(self.row_values[i] for i in releases))
        atom_of, deduced = self.deduce(deduce_over if deduce_over is not None else releases)
        target_atom = atom_of[targets]
        for attr in self.attributes:
            m.qi_values[attr] = tuple(x[target_atom] for x in deduced[attr])
            m.linkage_values[attr] = self.cell_values(attr, m)
            single = np.zeros(len(tuple_classes[0]) if len(tuple_classes) else 0, dtype=bool)
            for j, i in enumerate(rel):
                single |= np.diff(self.sparse[attr][i].starts)[tuple_classes[j]] == 1
            m.homogeneous[attr] = single[tuple_of]
        return m

    # -- the linkage adversary: exact per cell ---------------------------------------------
    def cell_values(self, attr: str, m: Measures) -> tuple[np.ndarray, ...]:
        """Per target, ``(distinct, distinct_present, low, high)`` of the values the
        linkage adversary is left with. It links a person's rows; a release that carries
        values on rows shows each linked person's value, so the target's value is one of
        its cell's (the records that shared all its classes): exactly those, when the
        history keeps the records' values (a person whose rows show different values is
        no candidate for a value that does not change). Over permuted releases alone it
        links a person to groups, not values: what the qi adversary deduces. When a release
        of the scope keeps no per-record values (a migrated history), the bound of the
        multisets: at most as many values as candidates, a lone candidate pins one."""
        d, dp, lo, hi = m.qi_values[attr]
        rows = [i for i in m.releases if self.row_values[i]]
        if not rows:
            return d, dp, lo, hi
        if not all(self.values_known[i] for i in rows):
            cand = m.candidates_linkage
            lone = cand == 1
            # a lone candidate pins one value: its range is 0 (high = low)
            return (np.minimum(d, cand), np.minimum(dp, cand), lo, np.where(lone, lo, hi))
        seen = self.record_value[attr][np.ix_(rows, m.members)]
        value = seen[0]
        consistent = (seen == value).all(axis=0)
        n_values = max(len(self.value_names[attr]), 1)
        pairs = np.unique(m.member_group[consistent] * n_values + value[consistent])
        group, vid = pairs // n_values, pairs % n_values
        n_groups = int(m.member_group.max(initial=-1)) + 1
        distinct, present, low, high = self.summarize(attr, group, vid, n_groups)
        t = m.target_group
        return (distinct[t].astype(np.float64), present[t].astype(np.float64), low[t],
                high[t])

    # -- the qi adversary: constraint propagation ------------------------------------------
    def deduce(self, releases: tuple[int, ...]
               ) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, ...]]]:
        """What the qi adversary deduces from ``releases``: per record its *atom* (the
        records sharing its class, or absence, in every one of them) and per attribute and
        atom ``(distinct, distinct_present, low, high)`` of the values it cannot rule out.

        Unknowns: ``x[atom, value]``, how many of the atom's people have the value. Each
        class's multiset is the sum over its atoms (less up to its rows that are no
        record: counterfeits), each atom's values sum to its size. Bounds on every unknown
        are tightened from these sums until nothing changes (the counting argument: if the
        other atoms of a class must use up its flu, the atom has none). A value is left
        when its upper bound is at least one. Sound, not complete: it never rules out a
        value some assignment allows; it may leave a value none allows. Releases that
        contradict each other (a value changed) make the deduction fall back to the
        intersection of the multisets."""
        key = tuple(releases)
        if key in self._deduced:
            return self._deduced[key]
        rel = list(key)
        cls = self.cls[rel].astype(np.int64)
        anywhere = (cls >= 0).any(axis=0)
        atom = np.full(self.n_records, -1, dtype=np.int64)
        group = np.zeros(int(anywhere.sum()), dtype=np.int64)
        sub = cls[:, anywhere]
        group = _combine(group, sub)
        atom[anywhere] = group
        n_atoms = int(group.max(initial=-1)) + 1
        size = np.bincount(group, minlength=n_atoms).astype(np.float64)
        first = np.zeros(n_atoms, dtype=np.int64)
        first[group[::-1]] = np.arange(len(group))[::-1]
        atom_cls = sub[:, first]
        out = {attr: self._propagate(attr, rel, atom_cls, size) for attr in self.attributes}
        self._deduced[key] = (atom, out)
        return atom, out

    def _propagate(self, attr: str, rel: list[int], atom_cls: np.ndarray,
                   size: np.ndarray) -> tuple[np.ndarray, ...]:
        n_atoms = len(size)
        n_values = max(len(self.value_names[attr]), 1)
        sparse = [self.sparse[attr][i] for i in rel]
        present = atom_cls >= 0
        first = np.argmax(present, axis=0)
        # the intersection of each atom's multisets: expand its first release's classes
        parts_a, parts_v, parts_c = [], [], []
        for j, sp in enumerate(sparse):
            atoms = np.flatnonzero(first == j)
            c = atom_cls[j, atoms]
            owner, idx = _expand(sp.starts[c], sp.starts[c + 1])
            parts_a.append(atoms[owner])
            parts_v.append(sp.value[idx])
            parts_c.append(sp.count[idx])
        a_e = np.concatenate(parts_a) if parts_a else np.zeros(0, dtype=np.int64)
        v_e = np.concatenate(parts_v) if parts_v else np.zeros(0, dtype=np.int64)
        hi = (np.concatenate(parts_c) if parts_c else np.zeros(0)).astype(np.float64)
        by_atom = np.argsort(a_e, kind="stable")
        a_e, v_e, hi = a_e[by_atom], v_e[by_atom], hi[by_atom]
        runs = np.searchsorted(a_e, np.arange(n_atoms + 1))
        # per release: the entries of the atoms in it, and their multiset entry there; a
        # value missing from one of the atom's multisets is no candidate
        keep = np.ones(len(a_e), dtype=bool)
        looked = []
        for j, sp in enumerate(sparse):
            atoms = np.flatnonzero(present[j])
            owner, inside = _expand(runs[atoms], runs[atoms + 1])
            pos, found = _lookup(sp, atom_cls[j, atoms][owner] * n_values + v_e[inside])
            keep[inside[~found]] = False
            hi[inside[found]] = np.minimum(hi[inside[found]], sp.count[pos[found]])
            looked.append((inside, pos))
        renumber = np.cumsum(keep) - 1
        links = []  # per release: (entries, their multiset entry)
        for inside, pos in looked:
            kept = keep[inside]
            links.append((renumber[inside[kept]], pos[kept]))
        a_e, v_e, hi = a_e[keep], v_e[keep], hi[keep]
        hi = np.minimum(hi, size[a_e])
        start_hi = hi.copy()
        # the sums: per release, its multiset entries (count, less its class's rows that
        # are no record: need); per atom, its size. Unknowns fixed (lo == hi) are folded
        # into their sums' bounds and dropped, so each round works on what can still move.
        count, need = [], []
        for j, sp in enumerate(sparse):
            c = sp.count.astype(np.float64)
            slack = self.slack[rel[j]][sp.key // n_values] if len(sp.key) else c
            count.append(c)
            need.append(c - np.minimum(slack, c))
        atom_size = size.astype(np.float64).copy()
        final_hi = hi.copy()
        live = np.arange(len(hi))  # the entries still in play
        a_live = a_e
        lo = np.zeros(len(hi))
        contradiction = False
        for _ in range(_MAX_ROUNDS):
            before_lo, before_hi = lo.copy(), hi.copy()
            for j, (entries, pos) in enumerate(links):
                n_keys = len(count[j])
                s_lo = np.bincount(pos, lo[entries], minlength=n_keys)
                s_hi = np.bincount(pos, hi[entries], minlength=n_keys)
                hi[entries] = np.minimum(hi[entries], count[j][pos] - (s_lo[pos] - lo[entries]))
                lo[entries] = np.maximum(lo[entries], need[j][pos] - (s_hi[pos] - hi[entries]))
            s_lo = np.bincount(a_live, lo, minlength=n_atoms)
            s_hi = np.bincount(a_live, hi, minlength=n_atoms)
            hi = np.minimum(hi, atom_size[a_live] - (s_lo[a_live] - lo))
            lo = np.maximum(lo, atom_size[a_live] - (s_hi[a_live] - hi))
            if (lo > hi).any():  # contradictory releases: no deduction
                contradiction = True
                break
            if np.array_equal(lo, before_lo) and np.array_equal(hi, before_hi):
                break
            fixed = lo == hi
            if not fixed.any():
                continue
            final_hi[live[fixed]] = hi[fixed]
            renumber = np.cumsum(~fixed) - 1
            # a sum left without unknowns must hold as it is
            broken = False
            for j, (entries, pos) in enumerate(links):
                n_keys = len(count[j])
                out = fixed[entries]
                gone = pos[out]
                taken = np.bincount(gone, hi[entries[out]], minlength=n_keys)
                count[j] = count[j] - taken
                need[j] = need[j] - taken
                pos = pos[~out]
                links[j] = (renumber[entries[~out]], pos)
                empty = np.zeros(n_keys, dtype=bool)
                empty[gone] = True
                empty[pos] = False
                broken |= bool((count[j][gone] < 0).any() or (need[j][empty] > 0).any())
            gone = a_live[fixed]
            atom_size -= np.bincount(gone, hi[fixed], minlength=n_atoms)
            live, lo, hi, a_live = live[~fixed], lo[~fixed], hi[~fixed], a_live[~fixed]
            empty = np.zeros(n_atoms, dtype=bool)
            empty[gone] = True
            empty[a_live] = False
            if broken or (atom_size[gone] < 0).any() or (atom_size[empty] != 0).any():
                contradiction = True
                break
        if contradiction:
            hi = start_hi
        else:
            final_hi[live] = hi
            hi = final_hi
        left = hi >= 1
        a_e, v_e = a_e[left], v_e[left]
        order = np.lexsort((v_e, a_e))
        a_e, v_e = a_e[order], v_e[order]
        distinct, dp, low, high = self.summarize(attr, a_e, v_e, n_atoms)
        return distinct.astype(np.float64), dp.astype(np.float64), low, high

    def _value_intersection(self, attr: str, releases: tuple[int, ...],
                            tuple_classes: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                       np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """Per class tuple: number of values in every class's multiset (with and without
        the missing value), their smallest and largest magnitude (NaN if none or not
        numeric), the sum over them of the smallest count, and the values themselves."""
        n_tuples = tuple_classes.shape[1]
        group, value, count = self.entries(attr, releases, tuple_classes)
        distinct, distinct_present, low, high = self.summarize(attr, group, value, n_tuples)
        bound = np.bincount(group, weights=count, minlength=n_tuples)
        offsets = np.concatenate([[0], np.cumsum(distinct)])
        return distinct, distinct_present, low, high, bound, (offsets, value)

    def summarize(self, attr: str, group: np.ndarray, value: np.ndarray, n_groups: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per group, from (group, value id) entries sorted by group and each pair once:
        how many values (with and without the missing one) and their smallest and largest
        magnitude (NaN if none, or not numeric)."""
        distinct = np.bincount(group, minlength=n_groups)
        present = distinct - np.bincount(group[value == self.missing_id(attr)],
                                         minlength=n_groups)
        low, high = np.full(n_groups, np.nan), np.full(n_groups, np.nan)
        if len(group):
            mags = self.magnitude[attr][value]
            starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
            low[group[starts]] = np.fmin.reduceat(mags, starts)
            high[group[starts]] = np.fmax.reduceat(mags, starts)
        return distinct, present, low, high

    def entries(self, attr: str, releases: tuple[int, ...],
                tuple_classes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The (tuple, value, min count) entries of the value intersection, sorted by
        tuple then value: expand the first release's multisets, look the values up in
        every other release's class."""
        sparse = [self.sparse[attr][i] for i in releases]
        n_values = max(len(self.value_names[attr]), 1)
        first = sparse[0]
        lo = first.starts[tuple_classes[0]]
        lengths = first.starts[tuple_classes[0] + 1] - lo
        group = np.repeat(np.arange(tuple_classes.shape[1]), lengths)
        within = np.arange(len(group)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        idx = np.repeat(lo, lengths) + within
        value, count = first.value[idx], first.count[idx]
        for j, sp in enumerate(sparse[1:], start=1):
            query = tuple_classes[j][group] * n_values + value
            pos = np.minimum(np.searchsorted(sp.key, query), max(len(sp.key) - 1, 0))
            found = sp.key[pos] == query if len(sp.key) else np.zeros(len(query), bool)
            count = np.minimum(count, sp.count[pos] if len(sp.key) else 0)
            group, value, count = group[found], value[found], count[found]
        return group, value, count


# -- what an adversary knows, per record ------------------------------------------------------


class _Parts:
    """Where each record's measures are: which scope (:class:`Measures`) and which target
    of it, so value lists and candidates are only expanded for the records asked about."""

    def __init__(self, parts: list[Measures], part_of: np.ndarray, at: np.ndarray,
                 pseudonyms: np.ndarray) -> None:
        self.parts, self.part_of, self.at, self.pseudonyms = parts, part_of, at, pseudonyms

    def value_ids(self, attr: str, i: int) -> np.ndarray:
        m = self.parts[self.part_of[i]]
        t = m.tuple_of[self.at[i]]
        offsets, values = m.entries[attr]
        return values[offsets[t]:offsets[t + 1]]

    def candidates(self, i: int) -> list[bytes]:
        m = self.parts[self.part_of[i]]
        same = m.members[m.member_group == m.target_group[self.at[i]]]
        return [bytes(k) for k in self.pseudonyms[same]]


@dataclass
class AttributeKnowledge:
    """One sensitive attribute: per record, the intersection of its classes' multisets."""

    name: str
    numeric: bool
    distinct: np.ndarray  # values left (a missing value counts)
    distinct_present: np.ndarray  # values left, not counting a missing value
    low: np.ndarray  # smallest / largest numeric value left (NaN: none or not numeric)
    high: np.ndarray
    candidates_qi: np.ndarray  # sum over the values left of the smallest count
    linkage_distinct: np.ndarray  # the same three as the linkage adversary sees them
    linkage_distinct_present: np.ndarray
    linkage_range: np.ndarray
    qi_distinct: np.ndarray  # the same three as the qi adversary deduces them
    qi_distinct_present: np.ndarray
    qi_range: np.ndarray
    names: np.ndarray = field(repr=False)  # value id -> value (None / NaN: missing)
    _parts: _Parts = field(repr=False)

    @property
    def range(self) -> np.ndarray:
        return self.high - self.low

    def values(self, i: int) -> list[object]:
        """The values left for record ``i`` (in value order for a numeric attribute)."""
        return [_plain(v) for v in self.names[self._parts.value_ids(self.name, i)]]


@dataclass
class QIKnowledge:
    """One quasi-identifier: per record, the intersection of its classes' labels."""

    name: str
    kind: np.ndarray  # per record: "interval", "set" or "labels"
    low: np.ndarray  # an interval's bounds (NaN unless kind is "interval"); low > high:
    high: np.ndarray  # the intervals do not meet (the value changed between releases)
    label_codes: np.ndarray = field(repr=False)  # (n_releases, n_records), -1: absent
    label_names: np.ndarray = field(repr=False)
    set_offsets: np.ndarray = field(repr=False)  # record i's set (kind "set"):
    set_elements: np.ndarray = field(repr=False)  # set_elements[set_offsets[i]:...[i + 1]]

    def value(self, i: int) -> object:
        """``[low, high]``, the sorted set left, or the labels seen (in release order)."""
        kind = self.kind[i]
        if kind == "interval":
            return [_plain(self.low[i]), _plain(self.high[i])]
        if kind == "set":
            return sorted(self.set_elements[self.set_offsets[i]:self.set_offsets[i + 1]]
                          .tolist())
        codes = self.label_codes[:, i]
        return [_plain(v) for v in self.label_names[codes[codes >= 0]]]


@dataclass
class Knowledge:
    """Per record of a dataset, what the adversaries know after every release (see the
    module). Arrays are indexed by record, in the order of :attr:`records`."""

    dataset: str
    releases: list[int]  # the releases' numbers
    records: np.ndarray  # (n,) object: 16-byte pseudonyms
    classes: np.ndarray  # (n_releases, n) int64: class per release, -1 absent
    candidates: np.ndarray  # linkage candidates: records that shared all its classes
    candidates_qi: np.ndarray  # the qi adversary's candidate bound (people, no counterfeits)
    row_values: np.ndarray  # bool: some release the record is in carries values on rows
    attributes: dict[str, AttributeKnowledge]
    quasi_identifiers: dict[str, QIKnowledge]  # empty when labels were not loaded
    _parts: _Parts = field(repr=False)

    def __len__(self) -> int:
        return len(self.records)

    @property
    def n_releases(self) -> np.ndarray:
        return (self.classes >= 0).sum(axis=0)

    def index(self, pseudonym: bytes) -> int:
        found = np.flatnonzero(self.records == bytes(pseudonym))
        if not len(found):
            raise HistoryError(f"record {bytes(pseudonym).hex()} is not in this knowledge of "
                               f"{self.dataset!r}")
        return int(found[0])

    def releases_of(self, i: int) -> dict[int, int]:
        """Release number -> the record's class there."""
        return {seq: int(c) for seq, c in zip(self.releases, self.classes[:, i], strict=True)
                if c >= 0}

    def candidate_records(self, i: int) -> list[bytes]:
        """The records that shared every class of record ``i`` (itself included)."""
        return self._parts.candidates(i)

    def record(self, i: int) -> dict[str, object]:
        """Everything known about record ``i``, JSON-ready."""
        out: dict[str, object] = {
            "record": bytes(self.records[i]).hex(),
            "releases": {str(s): c for s, c in self.releases_of(i).items()},
            "candidates": int(self.candidates[i]),
            "candidates_qi": _plain(self.candidates_qi[i]),
            "candidate_records": [k.hex() for k in self.candidate_records(i)],
        }
        for name, a in self.attributes.items():
            out[f"values[{name}]"] = a.values(i)
            out[f"distinct[{name}]"] = int(a.distinct[i])
            out[f"distinct_present[{name}]"] = int(a.distinct_present[i])
            if not math.isnan(a.low[i]):
                out[f"range[{name}]"] = [_plain(a.low[i]), _plain(a.high[i])]
        for name, q in self.quasi_identifiers.items():
            out[f"qi[{name}]"] = q.value(i)
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per record, its figures as columns; the values left and the QI boxes
        are lists (built per record: for reading, not for large-scale processing)."""
        columns: dict[str, object] = {
            "record": [bytes(k).hex() for k in self.records],
            "n_releases": self.n_releases, "candidates": self.candidates,
            "candidates_qi": self.candidates_qi}
        for name, a in self.attributes.items():
            columns[f"distinct[{name}]"] = a.distinct
            columns[f"distinct_present[{name}]"] = a.distinct_present
            if a.numeric:
                columns[f"low[{name}]"], columns[f"high[{name}]"] = a.low, a.high
            columns[f"values[{name}]"] = [a.values(i) for i in range(len(self))]
        for name, q in self.quasi_identifiers.items():
            columns[f"qi[{name}]"] = [q.value(i) for i in range(len(self))]
        return pd.DataFrame(columns)


def knowledge(store: HistoryStore, dataset: str,
              pseudonyms: Sequence[bytes] | None = None) -> Knowledge:
    """What the adversaries know of every record of ``dataset`` (or of ``pseudonyms``,
    in that order) after all its releases."""
    views = [store.load(info) for info in store.releases(dataset)]
    return knowledge_views(views, pseudonyms)


def knowledge_views(views: Sequence[ReleaseView],
                    pseudonyms: Sequence[bytes] | None = None) -> Knowledge:
    """:func:`knowledge` of releases already loaded (e.g. with a release about to be
    published). Quasi-identifier boxes need the views' labels; views loaded without them
    give no ``quasi_identifiers``."""
    views = sorted(views, key=lambda v: v.info.seq)
    index = Intersections(views)
    dataset = views[0].info.dataset if views else ""
    if pseudonyms is None:
        targets = np.arange(index.n_records)
    else:
        wanted = np.empty(len(pseudonyms), dtype=object)
        wanted[:] = [bytes(p) for p in pseudonyms]
        targets = pd.Index(index.pseudonyms).get_indexer(wanted)
        if (targets < 0).any():
            missing = int((targets < 0).sum())
            raise HistoryError(f"{missing} of the {len(targets)} records given are in no "
                               f"release of {dataset!r} (first: "
                               f"{wanted[targets < 0][0].hex()}); ask only about recorded "
                               f"records")
    return _collect(index, dataset, np.asarray(targets, dtype=np.int64))


def _collect(index: Intersections, dataset: str, targets: np.ndarray) -> Knowledge:
    """Scatter the per-scope measures of :meth:`Intersections.accumulate` into per-record
    arrays, in the order of ``targets``."""
    n = len(targets)
    position = np.zeros(index.n_records, dtype=np.int64)
    position[targets] = np.arange(n)
    parts = index.accumulate(targets)
    part_of, at = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    candidates = np.zeros(n, dtype=np.int64)
    candidates_qi = np.zeros(n, dtype=np.float64)
    row_values = np.zeros(n, dtype=bool)
    fields = ("distinct", "distinct_present", "low", "high", "bound", "l_distinct",
              "l_present", "l_range", "q_distinct", "q_present", "q_range")
    per_attr = {a: {k: np.full(n, np.nan) for k in fields} for a in index.attributes}
    for p, m in enumerate(parts):
        where = position[m.targets]
        part_of[where], at[where] = p, np.arange(len(where))
        candidates[where] = m.candidates_linkage
        candidates_qi[where] = m.candidates_qi
        row_values[where] = m.row_values
        for a in index.attributes:
            found = (m.distinct[a], m.distinct_present[a], m.low[a], m.high[a],
                     m.value_bound[a], *m.linkage(a), *m.qi(a))
            for name, values in zip(fields, found, strict=True):
                per_attr[a][name][where] = values
    lookup = _Parts(parts, part_of, at, np.asarray(index.pseudonyms, dtype=object))
    attributes = {}
    for a in index.attributes:
        out = per_attr[a]
        attributes[a] = AttributeKnowledge(
            a, index.numeric[a], _counts(out["distinct"]), _counts(out["distinct_present"]),
            out["low"], out["high"], out["bound"], _counts(out["l_distinct"]),
            _counts(out["l_present"]), out["l_range"], _counts(out["q_distinct"]),
            _counts(out["q_present"]), out["q_range"], index.value_names[a], lookup)
    classes = index.cls[:, targets].astype(np.int64)
    records = np.asarray(index.pseudonyms, dtype=object)[targets]
    return Knowledge(dataset, [v.info.seq for v in index.views], records, classes,
                     candidates, candidates_qi, row_values, attributes,
                     _qi_knowledge(index.views, classes), lookup)


def _counts(values: np.ndarray) -> np.ndarray:
    return np.nan_to_num(values, nan=0.0).astype(np.int64)


def _combine(group: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Dense ids of the distinct (group, rows[0], rows[1], ...) tuples (rows >= -1): rows
    are folded into one int64 key while it cannot overflow, then renumbered."""
    n_groups = int(group.max(initial=-1)) + 1
    key, span = group, max(n_groups, 1)
    for row in rows:
        width = int(row.max(initial=0)) + 2
        if span * width >= 2 ** 62:
            _, key = np.unique(key, return_inverse=True)
            key = key.reshape(-1)
            span = int(key.max(initial=-1)) + 1
        key, span = key * width + row + 1, span * width
    _, key = np.unique(key, return_inverse=True)
    return key.reshape(-1)


def _lookup(sp: _Sparse, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the (class, value) keys ``query`` in a release's multisets, and
    whether each is there."""
    if not len(sp.key):
        return np.zeros(len(query), dtype=np.int64), np.zeros(len(query), dtype=bool)
    pos = np.minimum(np.searchsorted(sp.key, query), len(sp.key) - 1)
    return pos, sp.key[pos] == query


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For runs ``[lo[j], hi[j])``: the run of every position, and the positions."""
    lengths = hi - lo
    owner = np.repeat(np.arange(len(lo)), lengths)
    within = np.arange(len(owner)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return owner, np.repeat(lo, lengths) + within


# -- quasi-identifier boxes --------------------------------------------------------------------


def _qi_knowledge(views: Sequence[ReleaseView], classes: np.ndarray) -> dict[str, QIKnowledge]:
    if not views:
        return {}
    qis = list(views[-1].info.quasi_identifiers)
    if not all(q in v.labels.columns for v in views for q in qis):
        return {}
    return {q: _qi_box(q, views, classes) for q in qis}


def _qi_box(qi: str, views: Sequence[ReleaseView], classes: np.ndarray) -> QIKnowledge:
    """Intersect the labels of a quasi-identifier: each distinct label is parsed once."""
    n = classes.shape[1]
    per_view = [v.labels[qi].to_numpy(dtype=object) for v in views]
    codes, names = pd.factorize(pd.Series(np.concatenate(per_view) if per_view else [],
                                          dtype=object), use_na_sentinel=False)
    names = np.asarray(names, dtype=object)
    kind, low, high, set_offsets, set_elements, elements = _parse_labels(names)
    starts = np.cumsum([0, *(len(p) for p in per_view)])
    label = np.full(classes.shape, -1, dtype=np.int64)
    for i in range(len(views)):
        here = classes[i] >= 0
        label[i, here] = codes[starts[i] + classes[i, here]]
    present = label >= 0
    safe = np.where(present, label, 0)
    kinds = np.where(present, kind[safe], -1)
    k_max = kinds.max(axis=0, initial=-1)
    k_min = np.where(present, kinds, len(QI_KINDS)).min(axis=0, initial=len(QI_KINDS))
    record_kind = np.where((k_min == k_max) & (k_max >= 0), k_max, 2)
    low_r = np.where(present, low[safe], -np.inf).max(axis=0, initial=-np.inf)
    high_r = np.where(present, high[safe], np.inf).min(axis=0, initial=np.inf)
    interval = record_kind == 0
    low_r, high_r = np.where(interval, low_r, np.nan), np.where(interval, high_r, np.nan)
    # sets: an element is left when every release's label of the record holds it
    is_set = record_kind == 1
    view_of, rec = np.nonzero(present & is_set[None, :])
    lab = label[view_of, rec]
    owner, idx = _expand(set_offsets[lab], set_offsets[lab + 1])
    n_elements = max(len(elements), 1)
    keys, counts = np.unique(rec[owner] * n_elements + set_elements[idx], return_counts=True)
    kept = keys[counts == present.sum(axis=0)[keys // n_elements]]
    rec_offsets = np.concatenate([[0], np.cumsum(np.bincount(kept // n_elements,
                                                             minlength=n))])
    return QIKnowledge(qi, np.asarray(QI_KINDS, dtype=object)[record_kind], low_r, high_r,
                       label, names, rec_offsets, elements[kept % n_elements])


def _parse_labels(names: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                              np.ndarray, np.ndarray]:
    """Per distinct label: its kind (0 interval, 1 set, 2 other), bounds, and set elements
    (as offsets into global element ids, and the element names)."""
    series = pd.Series(names, dtype=object)
    n = len(series)
    kind = np.full(n, 2, dtype=np.int64)
    low, high = np.full(n, np.nan), np.full(n, np.nan)
    missing = series.isna().to_numpy()
    number = pd.to_numeric(series.where(~series.map(type).eq(bool)), errors="coerce")
    exact = number.notna().to_numpy() & ~missing
    low[exact] = high[exact] = number[exact].astype(np.float64)
    kind[exact] = 0
    text = series.where(~missing & ~exact).astype("string")
    bounds = text.str.extract(_RANGE)
    ranged = bounds[0].notna().to_numpy()
    low[ranged] = bounds[0][ranged].astype(np.float64)
    high[ranged] = bounds[1][ranged].astype(np.float64)
    kind[ranged] = 0
    is_set = text.str.fullmatch(r"\{.*\}", flags=0).fillna(False).to_numpy(dtype=bool)
    kind[is_set] = 1
    inner = text[is_set].str.slice(1, -1).str.split(",").explode().str.strip()
    inner = inner[inner.fillna("") != ""]
    owners = inner.index.to_numpy(dtype=np.int64)
    element_codes, elements = pd.factorize(inner.astype(object))
    offsets = np.concatenate([[0], np.cumsum(np.bincount(owners, minlength=n))])
    order = np.argsort(owners, kind="stable")
    return (kind, low, high, offsets.astype(np.int64), element_codes[order].astype(np.int64),
            np.asarray(elements, dtype=object))


def _plain(value: object) -> object:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return value
        return int(value) if value.is_integer() else value
    return value
