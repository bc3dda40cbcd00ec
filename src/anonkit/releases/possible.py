"""Which sensitive values the qi adversary can give each record: bounded from both sides.

The qi adversary (:mod:`anonkit.releases.attacks`) knows every record's class, or its
absence, in every release, and each class's multiset of sensitive values; a value is
*possible* for a record when some assignment of one fixed value to every person (plus any
values to the counterfeit rows of a class) reproduces every released multiset. Exhaustive
enumeration decides that, at a cost exponential in the records.

:class:`~anonkit.releases.knowledge.Accumulated`'s constraint propagation gives an *upper*
bound: a value it rules out is impossible (each step is a valid implication), a value it
leaves may still be impossible. The gate must not rely on that side alone: a record whose
left values look diverse may in truth be pinned (the difference attack on a record that
joined or left). So this module adds a *lower* bound, values proved possible by an
assignment that exists:

- **the truth**: every record's own value is possible for its atom (the records that shared
  its class, or its absence, in every release);
- **value symmetry**: the classes linked by shared records form *components* (a record's
  classes are all in one). Two values with the same count in every class of a component can
  be swapped for every row of the component at once -- every class keeps its multiset -- so
  each is possible wherever the other is. This is m-invariance's own argument (every class
  of a signature holds the same values), and it is why its releases cost no false refusal;
- **a lone class**: a component of one class (its records are in no other release) can
  hand its values out in any order.

Between the two bounds a value is *undecided*. :func:`settle` decides such values exactly,
for components small enough, with an integer program (HiGHS, through SciPy): per atom and
value, how many of the atom's people have it; per class and value, the atoms' sum lies
between the rows that must be people and the rows there are. Each solution proves every
value it uses possible; an optimum of zero proves the rest impossible. Whatever stays
undecided (too large, or out of time) is judged by the lower bound: the gate errs towards
refusal, and the audit calls such a finding *not ruled out* rather than *proved*.

A component holding a record whose value changed between releases, or whose value the
history does not keep (a history migrated from version 1), has no consistent truth to
start from: there the lower bound falls back to the upper one, as before this module.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from anonkit.releases.knowledge import _VALUE_BITS, Accumulated, _expand

#: an entry's status: proved possible / neither proved / ruled out
POSSIBLE, UNDECIDED, IMPOSSIBLE = 1, 0, -1
#: components with more (atom, value) entries than this are not solved exactly
MAX_EXACT_ENTRIES = 20_000
#: seconds one judgement may spend solving, over all components and attributes
EXACT_SECONDS = 10.0
_VALUE_MASK = (1 << _VALUE_BITS) - 1


@dataclass
class Structure:
    """The classes of every release, numbered globally, and how records link them."""

    class_base: np.ndarray  # release index -> its first global class number
    component: np.ndarray  # global class -> component
    n_components: int
    record_component: np.ndarray  # record -> component of its classes
    atom_component: np.ndarray  # atom -> component
    atom_classes: tuple[np.ndarray, np.ndarray]  # (atom, global class), sorted by atom


def structure(acc: Accumulated) -> Structure:
    """Components of the classes linked by shared records (a record's classes are in one
    component; so are an atom's, and a class's counterfeit rows)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    class_base = np.cumsum([0, *(len(r.sizes) for r in acc.releases)]).astype(np.int64)
    n_classes = int(class_base[-1])
    g = class_base[acc.mem_release] + acc.mem_class
    linked = acc.mem_record[1:] == acc.mem_record[:-1]
    a, b = g[:-1][linked], g[1:][linked]
    graph = coo_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(n_classes, n_classes))
    n_components, component = connected_components(graph, directed=False)
    component = component.astype(np.int64)
    first = np.searchsorted(acc.mem_record, np.arange(acc.n_records))
    record_component = component[g[first]] if acc.n_records else np.zeros(0, dtype=np.int64)
    n_atoms = len(acc.atom_size)
    representative = np.zeros(n_atoms, dtype=np.int64)
    representative[acc.atom] = np.arange(acc.n_records)
    atom_component = record_component[representative] if n_atoms else np.zeros(
        0, dtype=np.int64)
    owner, release, klass = acc.memberships(representative)
    return Structure(class_base, component, int(n_components), record_component,
                     atom_component, (owner, class_base[release] + klass))


def truth(acc: Accumulated, attr: str) -> np.ndarray:
    """Each record's value id, the same in every release it is in (-1: it changed, or the
    history does not keep it)."""
    if not acc.n_records:
        return np.zeros(0, dtype=np.int64)
    value = acc.mem_value[attr]
    starts = np.searchsorted(acc.mem_record, np.arange(acc.n_records))
    low = np.minimum.reduceat(value, starts)
    high = np.maximum.reduceat(value, starts)
    return np.where((low == high) & (low >= 0), low, -1)


def _class_entries(acc: Accumulated, attr: str, st: Structure
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every release's multiset entries: (global class, value id, count, need)."""
    g, v, c, n = [], [], [], []
    for i, r in enumerate(acc.releases):
        ms = r.multisets[attr]
        g.append(st.class_base[i] + (ms.key >> _VALUE_BITS))
        v.append(ms.key & _VALUE_MASK)
        c.append(ms.count)
        n.append(ms.need)
    if not g:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0), np.zeros(0)
    return (np.concatenate(g).astype(np.int64), np.concatenate(v).astype(np.int64),
            np.concatenate(c).astype(np.float64), np.concatenate(n).astype(np.float64))


def _mix(x: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each integer (splitmix64's finaliser): only groups candidates for
    an exact comparison, never decides equality alone."""
    z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _symmetric_values(comp: np.ndarray, g: np.ndarray, value: np.ndarray, count: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group the values of each component by their counts in every class of it: values of
    one group have equal counts everywhere (compared exactly). Returns, sorted by
    (component, value), the pairs' component, value and group number."""
    if not len(g):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    order = np.lexsort((g, value, comp))
    comp, g, value, count = comp[order], g[order], value[order], count[order].astype(np.int64)
    start = np.flatnonzero(np.r_[True, (comp[1:] != comp[:-1]) | (value[1:] != value[:-1])])
    length = np.diff(np.r_[start, len(g)])
    with np.errstate(over="ignore"):
        token = _mix(g * np.int64(1 << 24) + count)
        digest = np.add.reduceat(token, start)
    pair_comp, pair_value = comp[start], value[start]
    # candidates: the same component, length and digest; then compared entry by entry
    by = np.lexsort((digest, length, pair_comp))
    same = np.zeros(len(by), dtype=bool)
    if len(by) > 1:
        prev, cur = by[:-1], by[1:]
        maybe = np.flatnonzero((pair_comp[prev] == pair_comp[cur]) & (length[prev] == length[cur])
                               & (digest[prev] == digest[cur]))
        if len(maybe):
            p, c = prev[maybe], cur[maybe]
            owner, at = _expand(start[c], start[c] + length[c])
            other = at - start[c][owner] + start[p][owner]
            differs = (g[at] != g[other]) | (count[at] != count[other])
            exact = np.bincount(owner, differs, minlength=len(maybe)) == 0
            same[maybe[exact] + 1] = True
    group_sorted = np.cumsum(~same) - 1
    group = np.empty(len(by), dtype=np.int64)
    group[by] = group_sorted
    return pair_comp, pair_value, group


def entry_status(acc: Accumulated, attr: str, st: Structure | None = None) -> np.ndarray:
    """Per entry of ``acc.entries[attr]`` (an atom and a value of its plain intersection):
    :data:`POSSIBLE`, :data:`UNDECIDED` or :data:`IMPOSSIBLE` (see the module)."""
    st = st or structure(acc)
    e = acc.entries[attr]
    status = np.where(e.high >= 1, UNDECIDED, IMPOSSIBLE).astype(np.int8)
    if not len(e.atom):
        return status
    n_values = max(len(acc.values[attr].array), 1)
    entry_key = e.atom * n_values + e.value  # sorted: entries are by atom, then value
    true = truth(acc, attr)
    broken = np.bincount(st.record_component[true < 0], minlength=st.n_components) > 0
    g, value, count, _ = _class_entries(acc, attr, st)
    comp = st.component[g]
    pair_comp, pair_value, group = _symmetric_values(comp, g, value, count)
    witnessed: list[np.ndarray] = []
    ok = np.flatnonzero(true >= 0)
    witnessed.append(acc.atom[ok] * n_values + true[ok])
    # value symmetry: every value of the truth's group, once per (atom, group)
    pair_key = pair_comp * n_values + pair_value
    holder = ok[~broken[st.record_component[ok]]]
    at = np.searchsorted(pair_key, st.record_component[holder] * n_values + true[holder])
    found = (at < len(pair_key)) & (pair_key[np.minimum(at, len(pair_key) - 1)] == (
        st.record_component[holder] * n_values + true[holder]))
    holder, at = holder[found], at[found]
    n_groups = int(group.max()) + 1 if len(group) else 0
    atom_group = np.unique(acc.atom[holder] * max(n_groups, 1) + group[at])
    members = np.argsort(group, kind="stable")
    group_start = np.searchsorted(group[members], np.arange(n_groups + 1))
    a_of, grp = atom_group // max(n_groups, 1), atom_group % max(n_groups, 1)
    owner, pos = _expand(group_start[grp], group_start[grp + 1])
    witnessed.append(a_of[owner] * n_values + pair_value[members[pos]])
    # a lone class: any of its values, for every atom of it
    classes_per_component = np.bincount(st.component, minlength=st.n_components)
    lone = classes_per_component[st.atom_component] == 1
    lone_atoms = np.flatnonzero(lone)
    if len(lone_atoms):
        a_owner, a_class = st.atom_classes
        pick = lone[a_owner]
        lone_atom, lone_class = a_owner[pick], a_class[pick]
        by_class = np.argsort(g, kind="stable")
        class_start = np.searchsorted(g[by_class], np.arange(len(st.component) + 1))
        owner, pos = _expand(class_start[lone_class], class_start[lone_class + 1])
        witnessed.append(lone_atom[owner] * n_values + value[by_class[pos]])
    keys = np.unique(np.concatenate(witnessed))
    at = np.searchsorted(entry_key, keys)
    hit = at < len(entry_key)
    hit[hit] = entry_key[at[hit]] == keys[hit]
    proved = np.zeros(len(status), dtype=bool)
    proved[at[hit]] = True
    # errs towards refusal: a value the propagation ruled out stays ruled out
    status[proved & (status == UNDECIDED)] = POSSIBLE
    # no consistent truth in the component: the propagation's bound stands (see the module)
    status[broken[st.atom_component[e.atom]] & (status == UNDECIDED)] = POSSIBLE
    return status


@dataclass
class Settled:
    """What :func:`settle` did: components solved, and the time it took."""

    components: int = 0
    solves: int = 0
    skipped_large: int = 0
    out_of_time: int = 0
    seconds: float = 0.0


def settle(acc: Accumulated, attr: str, status: np.ndarray, atoms: np.ndarray,
           st: Structure, *, deadline: float, report: Settled | None = None) -> np.ndarray:
    """Decide the undecided entries of ``atoms`` exactly (see the module), component by
    component, smallest first, until ``deadline`` (a ``time.monotonic()`` value). Returns
    the updated statuses; entries left undecided stay so."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    report = report or Settled()
    e = acc.entries[attr]
    status = status.copy()
    wanted = np.zeros(len(acc.atom_size), dtype=bool)
    wanted[atoms] = True
    open_entry = (status == UNDECIDED) & wanted[e.atom]
    comps = np.unique(st.atom_component[e.atom[open_entry]])
    if not len(comps):
        return status
    g_all, v_all, count_all, need_all = _class_entries(acc, attr, st)
    # the class entries by component, then (class, value); the entries by component
    cv_all = g_all * (1 << _VALUE_BITS) + v_all
    cv_comp = st.component[g_all]
    cv_order = np.lexsort((cv_all, cv_comp))
    cv_start = np.searchsorted(cv_comp[cv_order], np.arange(st.n_components + 1))
    entry_comp = st.atom_component[e.atom]
    entry_order = np.argsort(entry_comp, kind="stable")  # within a component: by atom
    entry_start = np.searchsorted(entry_comp[entry_order], np.arange(st.n_components + 1))
    size = np.bincount(entry_comp[status != IMPOSSIBLE], minlength=st.n_components)
    a_owner, a_class = st.atom_classes
    started = time.monotonic()
    for k in comps[np.argsort(size[comps], kind="stable")]:
        if time.monotonic() >= deadline:
            report.out_of_time += 1
            continue
        here = entry_order[entry_start[k]:entry_start[k + 1]]
        live = here[status[here] != IMPOSSIBLE]
        if len(live) > MAX_EXACT_ENTRIES:
            report.skipped_large += 1
            continue
        report.components += 1
        atoms_k = np.unique(e.atom[live])
        local_atom = np.searchsorted(atoms_k, e.atom[live])
        n_x = len(live)
        # atom sums: every person of an atom has one value
        rows = [local_atom]
        cols = [np.arange(n_x)]
        lb = [acc.atom_size[atoms_k].astype(np.float64)]
        ub = [acc.atom_size[atoms_k].astype(np.float64)]
        n_rows = len(atoms_k)
        # class sums: per (class, value) of the component, need <= sum <= count
        in_k = cv_order[cv_start[k]:cv_start[k + 1]]
        cv_key = cv_all[in_k]
        # each live entry appears in the sum of each class of its atom
        starts = np.searchsorted(a_owner, e.atom[live])
        ends = np.searchsorted(a_owner, e.atom[live], side="right")
        x_of, pos = _expand(starts, ends)
        key = a_class[pos] * (1 << _VALUE_BITS) + e.value[live][x_of]
        at = np.minimum(np.searchsorted(cv_key, key), max(len(cv_key) - 1, 0))
        if len(key) and not (cv_key[at] == key).all():
            continue  # a value outside its class's multiset: inconsistent, leave undecided
        rows.append(n_rows + at)
        cols.append(x_of)
        lb.append(need_all[in_k])
        ub.append(count_all[in_k])
        n_rows += len(cv_key)
        x_lo = np.ceil(np.maximum(e.low[live], 0.0) - 1e-9)
        x_hi = np.floor(np.minimum(e.high[live], acc.atom_size[e.atom[live]]) + 1e-9)
        targets = np.flatnonzero(status[live] == UNDECIDED)
        targets = targets[wanted[e.atom[live][targets]]]
        while len(targets):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                report.out_of_time += 1
                break
            n_y = len(targets)
            # y_t <= x_t: y counts the open entries a solution uses
            link_rows = n_rows + np.arange(n_y)
            a = coo_matrix((np.concatenate([np.ones(sum(len(c) for c in cols)),
                                            np.ones(n_y), -np.ones(n_y)]),
                            (np.concatenate([*rows, link_rows, link_rows]),
                             np.concatenate([*cols, targets, n_x + np.arange(n_y)]))),
                           shape=(n_rows + n_y, n_x + n_y)).tocsr()
            lower = np.concatenate([*lb, np.zeros(n_y)])
            upper = np.concatenate([*ub, np.full(n_y, np.inf)])
            cost = np.concatenate([np.zeros(n_x), -np.ones(n_y)])
            result = milp(cost, constraints=LinearConstraint(a, lower, upper),
                          integrality=np.ones(n_x + n_y),
                          bounds=Bounds(np.concatenate([x_lo, np.zeros(n_y)]),
                                        np.concatenate([x_hi, np.ones(n_y)])),
                          options={"time_limit": max(remaining, 0.01), "disp": False})
            report.solves += 1
            if result.x is None:
                if result.status == 2:  # infeasible: no assignment at all (values changed)
                    status[live[status[live] == UNDECIDED]] = POSSIBLE
                else:
                    report.out_of_time += 1
                break
            used = result.x[:n_x] > 0.5
            newly = live[used & (status[live] == UNDECIDED)]
            status[newly] = POSSIBLE
            if result.status == 0 and -result.fun < 0.5:
                # proved optimal at zero: no assignment uses any of the open entries
                status[live[targets]] = IMPOSSIBLE
                break
            if not len(newly) and result.status != 0:
                report.out_of_time += 1
                break
            targets = targets[status[live[targets]] == UNDECIDED]
    report.seconds += time.monotonic() - started
    return status
