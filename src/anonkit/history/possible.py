"""Which sensitive values the qi adversary can give each record: bounded from both sides.

The qi adversary (:mod:`anonkit.history.attacks`) knows every record's class, or its
absence, in every release, and each class's multiset of sensitive values; a value is
*possible* for a record when some assignment of one fixed value to every person (plus any
values to the counterfeit rows of a class) reproduces every released multiset. Exhaustive
enumeration decides that, at a cost exponential in the records.

:class:`~anonkit.history.knowledge.Accumulated`'s constraint propagation gives an *upper*
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

from anonkit.history import _knowledge_c
from anonkit.history.knowledge.engine import _VALUE_BITS, Accumulated, _expand

#: an entry's status: proved possible / neither proved / ruled out
POSSIBLE, UNDECIDED, IMPOSSIBLE = 1, 0, -1
#: components with more (atom, value) entries than this are not solved exactly
MAX_EXACT_ENTRIES = 20_000
#: value symmetry is looked for in components of at most this many classes: in a larger
#: one (a one-shot method re-run on a churning table links almost every class) two values
#: with equal counts in every class hardly occur, and sorting its entries costs most of a
#: judgement; fewer witnesses only err towards refusal
MAX_SYMMETRIC_CLASSES = 50_000
#: seconds one judgement may spend solving, over all components and attributes, by
#: default (``--exact-seconds``): what is left undecided then counts as not ruled out
EXACT_SECONDS = 0.5
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
    class_base = np.cumsum([0, *(len(r.sizes) for r in acc.releases)]).astype(np.int64)
    n_classes = int(class_base[-1])
    g = np.ascontiguousarray(class_base[acc.mem_release] + acc.mem_class, dtype=np.int64)
    component = np.empty(n_classes, dtype=np.int64)
    n_components = _knowledge_c.components(
        np.ascontiguousarray(acc.mem_record, dtype=np.int64), g, component)
    first = _record_starts(acc)
    record_component = component[g[first]] if acc.n_records else np.zeros(0, dtype=np.int64)
    n_atoms = len(acc.atom_size)
    representative = np.zeros(n_atoms, dtype=np.int64)
    representative[acc.atom] = np.arange(acc.n_records)
    atom_component = record_component[representative] if n_atoms else np.zeros(
        0, dtype=np.int64)
    # an atom's classes: its representative's memberships, sorted by atom
    chosen = np.zeros(acc.n_records, dtype=bool)
    chosen[representative] = True
    rows = np.flatnonzero(chosen[acc.mem_record])
    owner = acc.atom[acc.mem_record[rows]]
    by_atom = np.argsort(owner, kind="stable")
    return Structure(class_base, component, int(n_components), record_component,
                     atom_component, (owner[by_atom], g[rows][by_atom]))


def _record_starts(acc: Accumulated) -> np.ndarray:
    """Where each record's memberships start (every record has one; they are sorted by
    record): one pass, not a search per record."""
    if not acc.n_records:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, acc.mem_record[1:] != acc.mem_record[:-1]])


def truth(acc: Accumulated, attr: str) -> np.ndarray:
    """Each record's value id, the same in every release it is in (-1: it changed, or the
    history does not keep it)."""
    if not acc.n_records:
        return np.zeros(0, dtype=np.int64)
    value = acc.mem_value[attr]
    starts = _record_starts(acc)
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


def _order_by(*keys: np.ndarray) -> np.ndarray:
    """The order of rows by ``keys`` (first the most significant; non-negative integers):
    one stable sort of the keys packed into one integer when they fit in 63 bits (numpy
    sorts integers by radix), else a lexicographic sort."""
    widths = [max(int(k.max()), 0).bit_length() if len(k) else 0 for k in keys]
    if sum(widths) > 63:
        return np.lexsort(keys[::-1])
    packed = np.zeros(len(keys[0]), dtype=np.int64)
    for k, w in zip(keys, widths, strict=True):
        packed = (packed << np.int64(w)) | k.astype(np.int64)
    return np.argsort(packed, kind="stable")


def _uniform_components(comp: np.ndarray, g: np.ndarray, value: np.ndarray,
                        count: np.ndarray, n_components: int) -> np.ndarray:
    """Per component: whether every class of it holds the same set of values, each as often
    as the others within the class (m-invariance's classes: each value of the signature
    once, or twice where two classes share labels). Then any permutation of the set keeps
    every class's multiset, so every value of the set is possible for every record of the
    component: what :func:`_symmetric_values` finds, without sorting. The entries are
    sorted by class, then value; the sets are compared exactly, value by value."""
    out = np.zeros(n_components, dtype=bool)
    if not len(g):
        return out
    start = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    length = np.diff(np.r_[start, len(g)])
    flat = np.minimum.reduceat(count, start) == np.maximum.reduceat(count, start)
    class_comp = comp[start]
    # each class against its component's first class (classes come in class order)
    _, first = np.unique(class_comp, return_index=True)
    reference = np.empty(n_components, dtype=np.int64)
    reference[class_comp[first]] = first
    ref = reference[class_comp]
    candidate = np.flatnonzero(flat & (length == length[ref]))
    owner, at = _expand(start[candidate], start[candidate] + length[candidate])
    other = at - start[candidate][owner] + start[ref[candidate]][owner]
    differs = np.bincount(owner, value[at] != value[other], minlength=len(candidate)) > 0
    same = np.zeros(len(start), dtype=bool)
    same[candidate[~differs]] = True
    out[class_comp] = True
    out[class_comp[~same]] = False
    return out


def _symmetric_values(comp: np.ndarray, g: np.ndarray, value: np.ndarray, count: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group the values of each component by their counts in every class of it: values of
    one group have equal counts everywhere (compared exactly). Returns, sorted by
    (component, value), the pairs' component, value and group number."""
    if not len(g):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    order = _order_by(comp, value, g)
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
    g, value, count, _ = _class_entries(acc, attr, st)  # sorted by class, then value
    classes_per_component = np.bincount(st.component, minlength=st.n_components)
    comp = st.component[g]
    # the common case first (m-invariance's): every value of the component, everywhere
    uniform = _uniform_components(comp, g, value, count, st.n_components) & ~broken
    status[uniform[st.atom_component[e.atom]] & (status == UNDECIDED)] = POSSIBLE
    small = (classes_per_component[comp] <= MAX_SYMMETRIC_CLASSES) & ~uniform[comp]
    pair_comp, pair_value, group = _symmetric_values(comp[small], g[small], value[small],
                                                     count[small])
    witnessed: list[np.ndarray] = []
    ok = np.flatnonzero(true >= 0)
    ok = ok[~uniform[st.record_component[ok]]]
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
    lone = classes_per_component[st.atom_component] == 1
    lone_atoms = np.flatnonzero(lone)
    if len(lone_atoms):
        a_owner, a_class = st.atom_classes
        pick = lone[a_owner]
        lone_atom, lone_class = a_owner[pick], a_class[pick]
        class_start = np.searchsorted(g, np.arange(len(st.component) + 1))
        owner, pos = _expand(class_start[lone_class], class_start[lone_class + 1])
        witnessed.append(lone_atom[owner] * n_values + value[pos])
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
class _Block:
    """One component's integer program: ``x`` per live entry (an atom and a value), rows
    for the atoms' sizes and the classes' (value) counts."""

    live: np.ndarray  # entry numbers
    rows: np.ndarray  # coefficient rows (local), one per (row, column) pair
    cols: np.ndarray
    lower: np.ndarray  # per row
    upper: np.ndarray
    x_lower: np.ndarray  # per entry
    x_upper: np.ndarray
    targets: np.ndarray  # local positions of the entries to decide


def _block(acc: Accumulated, attr: str, st: Structure, live: np.ndarray,
           cv: tuple[np.ndarray, np.ndarray, np.ndarray]) -> _Block | None:
    """The program of one component (None: a value outside its class's multiset, which only
    a changed value explains: left undecided)."""
    e = acc.entries[attr]
    cv_key, need, count = cv
    atoms_k = np.unique(e.atom[live])
    n_atoms = len(atoms_k)
    a_owner, a_class = st.atom_classes
    # each live entry appears in its atom's row and in the row of each class of its atom
    starts = np.searchsorted(a_owner, e.atom[live])
    ends = np.searchsorted(a_owner, e.atom[live], side="right")
    x_of, pos = _expand(starts, ends)
    key = a_class[pos] * (1 << _VALUE_BITS) + e.value[live][x_of]
    at = np.minimum(np.searchsorted(cv_key, key), max(len(cv_key) - 1, 0))
    if len(key) and not (cv_key[at] == key).all():
        return None
    size = acc.atom_size[atoms_k].astype(np.float64)
    return _Block(
        live, np.concatenate([np.searchsorted(atoms_k, e.atom[live]), n_atoms + at]),
        np.concatenate([np.arange(len(live)), x_of]),
        np.concatenate([size, need]), np.concatenate([size, count]),
        np.ceil(np.maximum(e.low[live], 0.0) - 1e-9),
        np.floor(np.minimum(e.high[live], acc.atom_size[e.atom[live]]) + 1e-9),
        np.zeros(0, dtype=np.int64))


def _solve(blocks: list[_Block], remaining: float
           ) -> tuple[int, list[np.ndarray], list[float]] | None:
    """One program for independent blocks: maximise the open entries used (``y <= x``).
    Returns the status, each block's ``x`` and each block's sum of ``y``; None: no solution
    found in time. The blocks share nothing, so the joint maximum maximises each block."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    rows, cols, lower, upper, x_lo, x_hi = [], [], [], [], [], []
    row_at = col_at = 0
    x_at: list[int] = []
    for b in blocks:
        rows.append(b.rows + row_at)
        cols.append(b.cols + col_at)
        lower.append(b.lower)
        upper.append(b.upper)
        x_lo.append(b.x_lower)
        x_hi.append(b.x_upper)
        x_at.append(col_at)
        row_at += len(b.lower)
        col_at += len(b.live)
    n_x = col_at
    targets = np.concatenate([b.targets + at for b, at in zip(blocks, x_at, strict=True)])
    n_y = len(targets)
    link = row_at + np.arange(n_y)
    a = coo_matrix((np.concatenate([np.ones(sum(len(c) for c in cols)), np.ones(n_y),
                                    -np.ones(n_y)]),
                    (np.concatenate([*rows, link, link]),
                     np.concatenate([*cols, targets, n_x + np.arange(n_y)]))),
                   shape=(row_at + n_y, n_x + n_y)).tocsr()
    result = milp(np.concatenate([np.zeros(n_x), -np.ones(n_y)]),
                  constraints=LinearConstraint(a, np.concatenate([*lower, np.zeros(n_y)]),
                                               np.concatenate([*upper, np.full(n_y, np.inf)])),
                  integrality=np.ones(n_x + n_y),
                  bounds=Bounds(np.concatenate([*x_lo, np.zeros(n_y)]),
                                np.concatenate([*x_hi, np.ones(n_y)])),
                  options={"time_limit": max(remaining, 0.01), "disp": False})
    if result.x is None:
        return (int(result.status), [], []) if result.status == 2 else None
    xs = [result.x[at:at + len(b.live)] for b, at in zip(blocks, x_at, strict=True)]
    y = result.x[n_x:]
    bounds = np.cumsum([0, *(len(b.targets) for b in blocks)])
    return int(result.status), xs, [float(y[bounds[i]:bounds[i + 1]].sum())
                                    for i in range(len(blocks))]


def settle(acc: Accumulated, attr: str, status: np.ndarray, atoms: np.ndarray,
           st: Structure, *, deadline: float) -> np.ndarray:
    """Decide the undecided entries of ``atoms`` exactly (see the module), smallest
    component first, until ``deadline`` (a ``time.monotonic()`` value). Independent
    components are solved together, up to :data:`MAX_EXACT_ENTRIES` entries a program.
    Returns the updated statuses; entries left undecided stay so."""
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
    pending: list[_Block] = []
    batch_size = 0

    def run(blocks: list[_Block]) -> None:
        while blocks:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            solved = _solve(blocks, remaining)
            if solved is None:  # no solution in time
                return
            code, xs, used = solved
            if code == 2:  # no assignment at all (a value changed): the upper bound stands
                for b in blocks:
                    status[b.live[status[b.live] == UNDECIDED]] = POSSIBLE
                return
            still = []
            for b, x, y in zip(blocks, xs, used, strict=True):
                status[b.live[(x > 0.5) & (status[b.live] == UNDECIDED)]] = POSSIBLE
                if code == 0 and y < 0.5:
                    # proved optimal at zero: no assignment uses any of its open entries
                    status[b.live[b.targets]] = IMPOSSIBLE
                    continue
                b.targets = b.targets[status[b.live[b.targets]] == UNDECIDED]
                if len(b.targets):
                    still.append(b)
            if code != 0 and len(still) == len(blocks) and all(y < 0.5 for y in used):
                return  # out of time, and nothing gained
            blocks = still

    for k in comps[np.argsort(size[comps], kind="stable")]:
        here = entry_order[entry_start[k]:entry_start[k + 1]]
        live = here[status[here] != IMPOSSIBLE]
        if len(live) > MAX_EXACT_ENTRIES:
            continue
        in_k = cv_order[cv_start[k]:cv_start[k + 1]]
        block = _block(acc, attr, st, live, (cv_all[in_k], need_all[in_k], count_all[in_k]))
        if block is None:
            continue
        targets = np.flatnonzero((status[live] == UNDECIDED) & wanted[e.atom[live]])
        block.targets = targets
        if batch_size + len(live) > MAX_EXACT_ENTRIES:
            run(pending)
            pending, batch_size = [], 0
        pending.append(block)
        batch_size += len(live)
    run(pending)
    return status
