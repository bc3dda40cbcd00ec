"""Generating one released tuple per k-group: the P-F, P-T and I-T constraints, solved.

Runs in a worker process, one bucket (one path) per task. For each k-group ``b`` of the
bucket ``B`` (Budi et al., PLDI 2011):

- **P-T**: one field's value is new to ``B``; the field is chosen first (at random, or the
  largest domain first) and the next one is tried when a domain is exhausted;
- **P-F**: every field's value is new to ``B`` (or to the whole table, ``scope="table"``),
  except the opted-out fields; a field the path pins, or whose domain ``B`` exhausts,
  makes the bucket unsatisfiable and is named;
- **I-T**: as P-T on a field that ``b`` generalizes, with the fields ``b`` keeps concrete
  pinned to their values (the paper's equality); ``it_distinct`` gives the specification
  document's ``!=`` instead.

Solving prefers values near the group's typical values: first a few candidates built
directly around the group's median (a field set to the nearest allowed value), then Z3 with
the path condition, the constraints and the field domains, in tiers of growing distance
from the median. Every tuple found is run through the program again: its concolic path key
and its independent branch trace (the plain program under ``sys.settrace``) must equal the
bucket's. A mismatch becomes a blocking clause and Z3 is asked again, a bounded number of
times.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from anonkit.testdata import symbolic, workers
from anonkit.testdata.domains import FieldDomain, snap
from anonkit.testdata.symbolic import Z3Builder
from anonkit.testdata.trace import PathCondition, ProgramFailure, branch_trace, concolic_path

OPTIONS = ("P-F", "P-T", "I-T")
Row = tuple[Any, ...]


@dataclass(frozen=True)
class BucketTask:
    bucket: int
    condition: PathCondition
    domains: tuple[FieldDomain, ...]
    option: str
    rows: tuple[Row, ...]  # the bucket's raw tuples
    groups: tuple[tuple[int, ...], ...]  # its k-groups, as positions in rows
    field_order: tuple[int, ...]  # P-T / I-T: the order in which fields are tried
    pf_excluded: tuple[frozenset[Any], ...] | None = None  # P-F scope "table": R's values
    opt_out: tuple[str, ...] = ()
    it_distinct: bool = False
    max_attempts: int = 5
    solver_timeout_ms: int = 2_000


@dataclass
class Generated:
    values: Row
    group: int
    changed: tuple[str, ...]  # the fields whose values are new
    kept: tuple[str, ...]  # I-T: the fields pinned to the group's concrete value
    how: str  # "near-median" or "z3"


@dataclass
class BucketResult:
    bucket: int
    tuples: list[Generated] = field(default_factory=list)
    unsatisfied: list[tuple[int, str]] = field(default_factory=list)  # (group, reason)
    reason: str | None = None  # the whole bucket failed
    solve_seconds: float = 0.0
    z3_calls: int = 0


class _Verifier:
    """Runs a tuple and compares its path with the bucket's (both ways)."""

    def __init__(self, task: BucketTask) -> None:
        self.program = workers.program()
        self.limits = workers.limits()
        self.names = [d.name for d in task.domains]
        self.key = task.condition.key
        reference = dict(zip(self.names, task.rows[0], strict=True))
        self.reference = self._trace(reference)

    def _trace(self, record: dict[str, Any]) -> tuple[tuple[int, ...], str]:
        with workers.guarded():
            return branch_trace(self.program.plain, record, self.program.ref.path,
                                self.limits.max_decisions * 200)

    def same_path(self, values: Row) -> bool:
        record = dict(zip(self.names, values, strict=True))
        try:
            with workers.guarded():
                key, _ = concolic_path(self.program.instrumented, record,
                                       self.limits.max_decisions)
            if key != self.key:
                return False
            return self._trace(record) == self.reference
        except (ProgramFailure, workers.RunTimeout, workers.BlockedOperation, MemoryError):
            return False


def solve_bucket(task: BucketTask) -> BucketResult:
    """Every k-group's released tuple, or the reason it has none."""
    started = time.perf_counter()
    result = BucketResult(task.bucket)
    try:
        verifier = _Verifier(task)
    except (ProgramFailure, workers.RunTimeout, workers.BlockedOperation, MemoryError) as exc:
        result.reason = f"the bucket's own tuple cannot be traced: {workers.failure_text(exc)}"
        return result
    import z3

    solver = _Solver(task, verifier)
    precheck = solver.pf_precheck() if task.option == "P-F" else None
    if precheck is not None:
        result.reason = precheck
        result.unsatisfied = [(g, precheck) for g in range(len(task.groups))]
    else:
        try:
            for g in range(len(task.groups)):
                found = solver.group(g)
                if isinstance(found, Generated):
                    result.tuples.append(found)
                else:
                    result.unsatisfied.append((g, found))
        except (ValueError, z3.Z3Exception) as exc:
            # a path condition with a constant or operation Z3 cannot take (an infinite
            # float, say): the bucket is reported, its tuples so far kept (each verified)
            result.reason = f"the path condition cannot be solved: {exc}"
    result.z3_calls = solver.z3_calls
    result.solve_seconds = time.perf_counter() - started
    return result


class _Solver:
    def __init__(self, task: BucketTask, verifier: _Verifier) -> None:
        self.task = task
        self.verifier = verifier
        self.domains = task.domains
        self.names = [d.name for d in task.domains]
        columns = list(zip(*task.rows, strict=True))
        self.bucket_values = [frozenset(c) for c in columns]
        # insertion-ordered, so that a seeded run hands Z3 the same constraints every time
        self.released: dict[Row, None] = {}
        self.pinned = {name for name, _ in task.condition.key.pins}
        self.raw_rows = frozenset(task.rows)
        self.z3_calls = 0
        self._z3: _Z3Bucket | None = None
        self._grids: dict[int, np.ndarray | None] = {}
        self._unsat: set[tuple[Any, ...]] = set()

    # -- P-F: fields that can never change on this path ---------------------------------
    def excluded(self, j: int) -> frozenset[Any]:
        if self.task.option == "P-F" and self.task.pf_excluded is not None:
            return self.task.pf_excluded[j]
        return self.bucket_values[j]

    def pf_fields(self) -> list[int]:
        return [j for j, n in enumerate(self.names) if n not in self.task.opt_out]

    def pf_precheck(self) -> str | None:
        for j in self.pf_fields():
            name = self.names[j]
            if name in self.pinned:
                reason = dict(self.task.condition.pin_reasons).get(name, "")
                return (f"P-F unsatisfiable: field {name!r} is pinned by the path ({reason}), "
                        f"so it cannot take a new value; opt it out of P-F")
            if not self._has_free_value(j):
                return (f"P-F unsatisfiable: field {name!r} has no value left outside the "
                        f"{'table' if self.task.pf_excluded is not None else 'bucket'} "
                        f"({self.domains[j].type} domain exhausted); opt it out of P-F")
        return None

    def _has_free_value(self, j: int) -> bool:
        d, used = self.domains[j], self.excluded(j)
        if d.type == "bool":
            return len(used) < 2
        if d.type == "str":
            # the rule never invents a string; only a path that needs one gets it
            return any(c not in used for c in d.categories)
        return d.size() > len(used)

    # -- one group ---------------------------------------------------------------------
    def base(self, group: Sequence[int]) -> list[Any]:
        """The group's typical tuple: medians of numbers, the most common other value."""
        rows = [self.task.rows[i] for i in group]
        values: list[Any] = []
        for j, d in enumerate(self.domains):
            column = [r[j] for r in rows]
            if d.type in ("int", "float"):
                values.append(snap(d, float(np.median(np.asarray(column, dtype=np.float64)))))
            else:
                counts: dict[Any, int] = {}
                for v in column:
                    counts[v] = counts.get(v, 0) + 1
                values.append(max(sorted(counts, key=str), key=lambda v: counts[v]))
        return values

    def group(self, g: int) -> Generated | str:
        task = self.task
        members = task.groups[g]
        base = self.base(members)
        if task.option == "P-F":
            changed = self.pf_fields()
            return self._attempt(g, base, changed, {}, {}) or \
                self._pf_culprit(g, base, changed)
        rows = [task.rows[i] for i in members]
        concrete = {j: rows[0][j] for j in range(len(self.names))
                    if all(r[j] == rows[0][j] for r in rows)}
        kept: dict[int, Any] = {}
        differ: dict[int, Any] = {}
        order = list(task.field_order)
        if task.option == "I-T":
            if not concrete:
                return "I-T unsatisfiable: the k-group keeps no field concrete"
            if len(self.names) <= 1:
                return "I-T unsatisfiable: the tuple has a single field"
            general = [j for j in order if j not in concrete]
            order = general or order
        exhausted = []
        for j in order:
            if task.option == "I-T":
                others = {i: v for i, v in concrete.items() if i != j}
                kept, differ = ({}, others) if task.it_distinct else (others, {})
            found = self._attempt(g, base, [j], kept, differ)
            if found is not None:
                return found
            exhausted.append(self.names[j])
        # every field's domain is exhausted on this path: the paper's tuple-level rule,
        # a tuple equal to no raw tuple of the bucket (hence of the table: other buckets
        # take other paths)
        if task.option == "I-T":
            kept, differ = ({}, concrete) if task.it_distinct else (concrete, {})
        found = self._attempt_tuple(g, base, kept, differ)
        if found is not None:
            return found
        held = ""
        if task.option == "I-T":
            names = ", ".join(self.names[j] for j in concrete)
            held = f" with the k-group's concrete field(s) {names} " + \
                ("made different (it_mode distinct)" if task.it_distinct else "kept")
        return (f"{task.option} unsatisfiable: no field can take a value new to the bucket "
                f"on this path ({', '.join(exhausted)}){held}, and no new tuple takes the "
                f"path")

    def _attempt_tuple(self, g: int, base: list[Any], kept: dict[int, Any],
                       differ: dict[int, Any]) -> Generated | None:
        start = list(base)
        for j, v in kept.items():
            start[j] = v
        for j, v in differ.items():
            if start[j] == v:
                alternatives = self._nearest(j, v, 1, also=frozenset([v]), free=False)
                if not alternatives:
                    return None
                start[j] = alternatives[0]
        tried = 0
        for row in self._tuple_candidates(g, start, kept, differ):
            if row in self.raw_rows or row in self.released:
                continue
            if self.verifier.same_path(row):
                return self._accept(row, g, [], kept, "near-median")
            tried += 1
            if tried >= 8:
                break
        return self._z3_attempt(g, base, [], kept, differ, [])

    def _tuple_candidates(self, g: int, start: list[Any], kept: dict[int, Any],
                          differ: dict[int, Any]) -> Iterator[Row]:
        """The group's median tuple, then members of the group with one field moved to the
        nearest values that keep the path."""
        yield tuple(start)
        members = [list(self.task.rows[i]) for i in self.task.groups[g]]
        for member in members:
            for j, v in kept.items():
                member[j] = v
            for j in differ:
                member[j] = start[j]
        for member in members:
            for j in self.task.field_order:
                if j in kept or j in differ:
                    continue
                values = [v for v in self._window(j, member[j], free=False, width=200)
                          if v != member[j]]
                for value in self._on_path(member, j, values)[:20]:
                    yield (*member[:j], value, *member[j + 1:])

    def _attempt(self, g: int, base: list[Any], changed: list[int], kept: dict[int, Any],
                 differ: dict[int, Any]) -> Generated | None:
        if self._signature(changed, kept, differ) in self._unsat:
            return None  # Z3 proved it impossible on this path for an earlier group
        start = list(base)
        for j, v in kept.items():
            start[j] = v
        options = [self._nearest(j, start[j], 3) for j in changed]
        if any(not values for values in options):
            return None  # a field's domain is exhausted: no solver can help
        # only values that keep the path (an empty list leaves the search to Z3)
        options = [self._on_path(start, j, self._window(j, start[j], free=True))[:3]
                   for j in changed]
        tried: list[Row] = []
        for attempt in range(3):
            candidate = list(start)
            ok = True
            for j, values in zip(changed, options, strict=True):
                if not values:
                    ok = False
                    break
                candidate[j] = values[min(attempt, len(values) - 1)]
            for j, v in differ.items():
                if candidate[j] == v:
                    alternatives = self._nearest(j, v, 1, also=frozenset([v]), free=False)
                    if not alternatives:
                        ok = False
                        break
                    candidate[j] = alternatives[0]
            if not ok:
                break
            row = tuple(candidate)
            if row in self.released or row in tried:
                continue
            tried.append(row)
            if self.verifier.same_path(row):
                return self._accept(row, g, changed, kept, "near-median")
        return self._z3_attempt(g, base, changed, kept, differ, tried)

    @staticmethod
    def _signature(changed: list[int], kept: dict[int, Any], differ: dict[int, Any]
                   ) -> tuple[Any, ...]:
        return tuple(changed), tuple(sorted(kept.items())), tuple(sorted(differ.items()))

    def _accept(self, row: Row, g: int, changed: list[int], kept: dict[int, Any], how: str
                ) -> Generated:
        self.released[row] = None
        return Generated(row, g, tuple(self.names[j] for j in changed),
                         tuple(self.names[j] for j in kept), how)

    def _nearest(self, j: int, target: Any, count: int, also: frozenset[Any] = frozenset(),
                 free: bool = True) -> list[Any]:
        """Up to ``count`` domain values for field ``j`` nearest to ``target``, none in
        ``also`` and, when ``free``, none excluded by the option's rule."""
        d = self.domains[j]
        used = (self.excluded(j) if free else frozenset()) | also
        if d.type == "bool":
            return [v for v in (not target, target) if v not in used][:count]
        if d.type == "str":
            return [c for c in d.categories if c not in used][:count]
        assert d.low is not None and d.high is not None
        scale = d.scale if d.type == "float" else 1
        grid = self._free_grid(j) if free else None
        found: list[Any] = []
        centre = round(float(target) * scale)
        if grid is not None:
            # walk outward from the target through the free grid points
            at = int(np.searchsorted(grid, centre))
            lo, hi = at - 1, at
            while len(found) < count and (lo >= 0 or hi < len(grid)):
                take_hi = lo < 0 or (hi < len(grid) and grid[hi] - centre <= centre - grid[lo])
                point = int(grid[hi] if take_hi else grid[lo])
                if take_hi:
                    hi += 1
                else:
                    lo -= 1
                value = point if d.type == "int" else round(point / scale, d.decimals)
                if value not in used:
                    found.append(value)
            return found
        low, high = round(d.low * scale), round(d.high * scale)
        for i in range(20_000):
            point = centre + (i + 1) // 2 * (1 if i % 2 else -1)
            if not low <= point <= high:
                continue
            value = point if d.type == "int" else round(point / scale, d.decimals)
            if value not in used and value not in found:
                found.append(value)
                if len(found) == count:
                    break
        return found

    def _window(self, j: int, target: Any, free: bool, width: int = 1_000) -> list[Any]:
        """Domain values of field ``j`` around ``target`` (nearest first): free ones from the
        listed grid, otherwise the nearest grid points either side."""
        d = self.domains[j]
        if d.type in ("bool", "str"):
            return self._nearest(j, target, 1_000, free=free)
        assert d.low is not None and d.high is not None
        scale = d.scale if d.type == "float" else 1
        centre = round(float(target) * scale)
        grid = self._free_grid(j) if free else None
        if grid is not None:
            at = int(np.searchsorted(grid, centre))
            points = grid[max(0, at - width):at + width]
        elif free:
            return self._nearest(j, target, 64)
        else:
            low, high = round(d.low * scale), round(d.high * scale)
            points = np.arange(max(low, centre - width), min(high, centre + width) + 1)
        points = points[np.argsort(np.abs(points - centre), kind="stable")]
        if d.type == "int":
            return [int(p) for p in points]
        return [round(int(p) / scale, d.decimals) for p in points]

    def _on_path(self, start: Sequence[Any], j: int, values: list[Any]) -> list[Any]:
        """The ``values`` of field ``j`` that keep every decision of the path with the other
        fields as in ``start`` -- the path condition evaluated on all of them at once. A
        filter only: every tuple is still run before it is kept."""
        if not values:
            return values
        d = self.domains[j]
        dtype = {"int": np.int64, "float": np.float64, "bool": bool}.get(d.type, object)
        column = np.array(values, dtype=dtype)
        env = {name: start[i] for i, name in enumerate(self.names)}
        env[self.names[j]] = column
        keep = np.ones(len(values), dtype=bool)
        try:
            with np.errstate(all="ignore"):
                for tree, outcome in self.task.condition.decisions:
                    keep &= np.asarray(symbolic.evaluate(tree, env)) == outcome
                for name, value in self.task.condition.key.pins:
                    keep &= np.asarray(env[name] == value)
        except Exception:  # an operation numpy does not mirror: no filtering
            return values
        return [v for v, k in zip(values, np.broadcast_to(keep, (len(values),)), strict=True)
                if k]

    def _free_grid(self, j: int) -> np.ndarray | None:
        """The domain's grid points (scaled to integers) that the rule leaves free, for a
        domain small enough to list; None for a larger one (free values abound there)."""
        if j in self._grids:
            return self._grids[j]
        d = self.domains[j]
        assert d.low is not None and d.high is not None
        scale = d.scale if d.type == "float" else 1
        low, high = round(d.low * scale), round(d.high * scale)
        grid = None
        if high - low <= 2_000_000:
            points = np.arange(low, high + 1, dtype=np.int64)
            used = np.fromiter((round(float(v) * scale) for v in self.excluded(j)),
                               dtype=np.int64)
            grid = points[~np.isin(points, used)]
        self._grids[j] = grid
        return grid

    # -- Z3 ----------------------------------------------------------------------------
    def _z3_attempt(self, g: int, base: list[Any], changed: list[int], kept: dict[int, Any],
                    differ: dict[int, Any], blocked: list[Row]) -> Generated | None:
        """Ask Z3; a model that repeats a raw or released tuple, or leaves the path when
        run, is blocked and Z3 asked again (a bounded number of times)."""
        if self._z3 is None:
            self._z3 = _Z3Bucket(self.task)
        # the same constraints were unsatisfiable for an earlier group: they still are
        # (the tuples blocked since only add constraints)
        signature = self._signature(changed, kept, differ)
        if signature in self._unsat:
            return None
        blocked = [*self.released, *blocked]
        path_misses = 0
        for _ in range(self.task.max_attempts * 4):
            self.z3_calls += 1
            row = self._z3.solve(base, changed, [self.excluded(j) for j in changed], kept,
                                 differ, blocked)
            if row is None:
                if self._z3.last_unsat:
                    self._unsat.add(signature)
                return None
            blocked.append(row)
            if row in self.released or (not changed and row in self.raw_rows):
                continue  # repeats a tuple: blocked, asked again
            if self.verifier.same_path(row):
                return self._accept(row, g, changed, kept, "z3")
            path_misses += 1
            if path_misses >= self.task.max_attempts:
                break
        return None

    def _pf_culprit(self, g: int, base: list[Any], changed: list[int]) -> str:
        """Name the field(s) that make P-F impossible on this path."""
        if self._z3 is None:
            self._z3 = _Z3Bucket(self.task)
        culprits = [self.names[j] for j in changed
                    if not self._z3.satisfiable([j], [self.excluded(j)])]
        if culprits:
            return (f"P-F unsatisfiable: on this path field(s) {', '.join(culprits)} cannot "
                    f"take a value new to the {self._scope()}; opt them out of P-F")
        return (f"P-F unsatisfiable: no tuple on this path gives every field a value new to "
                f"the {self._scope()} (no single field is to blame)")

    def _scope(self) -> str:
        return "table" if self.task.pf_excluded is not None else "bucket"


class _Z3Bucket:
    """One solver per path: the path condition and the domains, asserted once."""

    def __init__(self, task: BucketTask) -> None:
        import z3

        self.z3 = z3
        self.domains = task.domains
        # a context of its own: the models Z3 finds then do not depend on what else the
        # worker solved before (seeded runs repeat exactly)
        ctx = self.ctx = z3.Context()
        self.raw: dict[str, Any] = {}  # the solver's own variables
        terms: dict[str, Any] = {}
        for d in task.domains:
            if d.type == "int":
                self.raw[d.name] = terms[d.name] = z3.Int(d.name, ctx)
            elif d.type == "float":
                n = self.raw[d.name] = z3.Int(f"{d.name}__grid", ctx)
                terms[d.name] = z3.ToReal(n) / z3.RealVal(d.scale, ctx)
            elif d.type == "bool":
                self.raw[d.name] = terms[d.name] = z3.Bool(d.name, ctx)
            else:
                self.raw[d.name] = terms[d.name] = z3.String(d.name, ctx)
        self.terms = terms
        self._excluded_terms: dict[tuple[int, frozenset[Any]], Any] = {}
        self._row_terms: dict[Row, Any] = {}
        self.solver = z3.Solver(ctx=ctx)
        self.solver.set("timeout", task.solver_timeout_ms)
        self.solver.set("random_seed", 7)
        builder = Z3Builder(terms, ctx)
        for tree, outcome in task.condition.decisions:
            self.solver.add(builder.condition(tree, outcome))
        for name, value in task.condition.key.pins:
            self.solver.add(self._equals(name, value))
        for d in task.domains:
            x = self.raw[d.name]
            if d.type == "int":
                self.solver.add(x >= int(d.low), x <= int(d.high))  # type: ignore[arg-type]
            elif d.type == "float":
                self.solver.add(x >= round(d.low * d.scale), x <= round(d.high * d.scale))  # type: ignore[operator]
            elif d.type == "str":
                # strings stay among the observed categories: the bucket's raw tuples show
                # that its path needs no new one, and no rule asks for an invented string
                self.solver.add(z3.Or(*[x == z3.StringVal(c, ctx) for c in d.categories]))

    def _equals(self, name: str, value: Any) -> Any:
        z3 = self.z3
        d = next(d for d in self.domains if d.name == name)
        x = self.raw[name]
        if d.type == "float":
            return x == round(float(value) * d.scale)
        if d.type == "str":
            return x == z3.StringVal(str(value), self.ctx)
        return x == value

    def _value(self, model: Any, d: FieldDomain) -> Any:
        x = model.eval(self.raw[d.name], model_completion=True)
        if d.type == "int":
            return x.as_long()
        if d.type == "float":
            return round(x.as_long() / d.scale, d.decimals)
        if d.type == "bool":
            return bool(self.z3.is_true(x))
        return x.as_string()

    def _exclusions(self, changed: Sequence[int], excluded: Sequence[frozenset[Any]]
                    ) -> list[Any]:
        z3 = self.z3
        out = []
        for j, used in zip(changed, excluded, strict=True):
            name = self.domains[j].name
            if not used:
                continue
            key = (j, used)
            if key not in self._excluded_terms:
                self._excluded_terms[key] = z3.Not(z3.Or(*[self._equals(name, v)
                                                           for v in sorted(used, key=repr)]))
            out.append(self._excluded_terms[key])
        return out

    def _not_row(self, row: Row) -> Any:
        term = self._row_terms.get(row)
        if term is None:
            term = self._row_terms[row] = self.z3.Or(*[
                self.z3.Not(self._equals(d.name, v))
                for d, v in zip(self.domains, row, strict=True)])
        return term

    def satisfiable(self, changed: Sequence[int], excluded: Sequence[frozenset[Any]]) -> bool:
        s = self.solver
        s.push()
        try:
            s.add(*self._exclusions(changed, excluded))
            return s.check() != self.z3.unsat
        finally:
            s.pop()

    def solve(self, base: list[Any], changed: Sequence[int],
              excluded: Sequence[frozenset[Any]], kept: dict[int, Any],
              differ: dict[int, Any], blocked: Sequence[Row]) -> Row | None:
        z3 = self.z3
        s = self.solver
        s.push()
        try:
            s.add(*self._exclusions(changed, excluded))
            for j, v in kept.items():
                s.add(self._equals(self.domains[j].name, v))
            for j, v in differ.items():
                s.add(z3.Not(self._equals(self.domains[j].name, v)))
            for row in blocked:
                s.add(self._not_row(row))
            return self._nearest_model(base)
        finally:
            s.pop()

    def _nearest_model(self, base: list[Any]) -> Row | None:
        """A model in the tightest of a few boxes around the group's typical tuple (the
        solver's own choice would often be an extreme of a domain)."""
        z3 = self.z3
        s = self.solver
        answer = s.check()
        self.last_unsat = answer == z3.unsat
        if answer != z3.sat:
            return None
        fallback = tuple(self._value(s.model(), d) for d in self.domains)
        for fraction in (0.05, 0.25):
            s.push()
            for d, target in zip(self.domains, base, strict=True):
                if d.type not in ("int", "float"):
                    continue
                assert d.low is not None and d.high is not None
                radius = max((d.high - d.low) * fraction, 1 / d.scale)
                x = self.raw[d.name]
                scale = d.scale if d.type == "float" else 1
                s.add(x >= int((target - radius) * scale),
                      x <= int((target + radius) * scale) + 1)
            answer = s.check()
            model = s.model() if answer == z3.sat else None
            s.pop()
            if model is not None:
                return tuple(self._value(model, d) for d in self.domains)
        return fallback
