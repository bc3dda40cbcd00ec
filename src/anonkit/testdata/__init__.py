"""kb-anonymity: behaviour-preserving anonymized test data (Budi et al., PLDI 2011).

:func:`generate` takes an unmodified Python function and a raw table and releases
synthetic tuples that drive the function down the same paths as the raw ones, none of
which repeats the raw data (P-T: no released tuple; P-F: no released field value; I-T:
no tuple, keeping the k-group's concrete fields). Steps:

1. *program execution* -- every raw tuple runs on concolic values in worker processes
   (:mod:`~anonkit.testdata.workers`, each run under a time limit); its path key (branch
   outcomes, pins, ending) groups it into a bucket, and the path condition is built once
   per distinct path (:mod:`~anonkit.testdata.trace`);
2. *k-anonymization* -- a bucket smaller than k is reported unsatisfiable; the others are
   split into k-groups by Mondrian (:mod:`~anonkit.testdata.buckets`);
3. *constraints and solving* -- one tuple per k-group (:mod:`~anonkit.testdata.solve`),
   re-run and traced independently before it is kept;
4. *output check* -- the constraints, the domains and distinctness are checked again on the
   whole output (:func:`check_output`); the release is of kind ``synthetic``.

The program is the user's own code and runs with the user's rights, in worker processes
only (its top level included): see :mod:`~anonkit.testdata.workers` for the guard, which
stops accidents, not an adversary.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from anonkit._util.numbers import whole_number
from anonkit._util.randomness import privacy_rng
from anonkit.data.read import read_table
from anonkit.data.schema import Schema
from anonkit.errors import InputError
from anonkit.models.base import Verdict
from anonkit.release import Provenance, Release, ReleaseKind
from anonkit.testdata.buckets import Bucket, k_groups, merge_chunks, split_chunk, trace_chunk
from anonkit.testdata.domains import FieldDomain, typed_table
from anonkit.testdata.program import ProgramRef
from anonkit.testdata.solve import OPTIONS, BucketResult, BucketTask, Generated, solve_bucket
from anonkit.testdata.trace import PathKey
from anonkit.testdata.workers import Limits, TaskFailure, run_tasks

__all__ = ["OPTIONS", "BucketReport", "Limits", "ProgramRef", "TestData", "check_output",
           "generate"]

FIELD_CHOICES = ("largest", "random")
PF_SCOPES = ("bucket", "table")
IT_MODES = ("equal", "distinct")


@dataclass
class BucketReport:
    """One path: its description, its raw tuples and what was released for it."""

    index: int
    path: list[str]
    size: int
    released: int
    reason: str | None
    pinned: dict[str, str]
    unsatisfied_groups: list[str] = field(default_factory=list)
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)

    def to_dict(self) -> dict[str, object]:
        return {"bucket": self.index, "path": self.path, "size": self.size,
                "released": self.released, "reason": self.reason, "pinned": self.pinned,
                "unsatisfied_groups": self.unsatisfied_groups}


@dataclass
class TestData:
    """The outcome of :func:`generate`.

    Attributes:
        release: the synthetic release (write it with :func:`anonkit.verify.write_release`).
        buckets: one report per distinct path, largest first.
        failures: raw tuples that could not be traced: (row, reason).
        coverage: the share of raw tuples whose path the release exercises.
        bucket_of: per released row, its bucket's index.
        generated: per released row, how it was made (its k-group, the fields changed or
            kept); ``groups``: per bucket index, its k-groups as raw row positions.
        timings: seconds per phase; ``stats``: counts and rates.
    """

    __test__ = False  # not a pytest test class, despite the name

    release: Release
    buckets: list[BucketReport]
    failures: list[tuple[int, str]]
    coverage: float
    bucket_of: np.ndarray
    option: str
    k: int
    timings: dict[str, float]
    stats: dict[str, float]
    problems: list[str]
    generated: list[Generated] = field(default_factory=list)
    groups: dict[int, list[np.ndarray]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {"option": self.option, "k": self.k, "raw_tuples": int(self.stats["raw_tuples"]),
                "released": len(self.release.data), "coverage": self.coverage,
                "buckets": [b.to_dict() for b in self.buckets],
                "failures": [{"row": r + 1, "reason": why} for r, why in self.failures],
                "output_check": self.problems or "passed",
                "timings": self.timings, "stats": self.stats}


def generate(
    program: str | Callable[..., Any] | ProgramRef,
    data: pd.DataFrame | str | Path,
    k: int,
    option: str = "P-T",
    *,
    types: Mapping[str, str] | None = None,
    pf_scope: str = "bucket",
    opt_out: Sequence[str] = (),
    field_choice: str = "largest",
    it_mode: str = "equal",
    seed: int | None = None,
    limits: Limits | None = None,
    workers: int | None = None,
) -> TestData:
    """Behaviour-preserving k-anonymous test data for ``program`` from ``data``.

    Args:
        program: ``path/to/module.py:function`` or a module-level function; it takes the
            record's fields as keyword arguments.
        data: the raw table (DataFrame, or a CSV / Parquet path); columns are the
            function's parameters.
        k: each released tuple stands for a k-group of at least k raw tuples of its path.
        option: ``"P-T"``, ``"P-F"`` or ``"I-T"``.
        types: declared field types (``bool``, ``int``, ``float``, ``str``) by column.
        pf_scope: P-F: values must be new to the ``"bucket"`` (default) or the ``"table"``.
        opt_out: P-F: fields exempt from the new-value rule.
        field_choice: P-T / I-T: try the field with the ``"largest"`` domain first, or a
            ``"random"`` one (privacy randomness).
        it_mode: I-T: ``"equal"`` keeps the k-group's concrete fields (the paper);
            ``"distinct"`` requires them to differ (the specification document).
        seed: for tests only; otherwise the random choices use operating-system entropy.
        limits: per-run time limit, path length limit, worker memory cap.
        workers: worker processes (default: up to 2).
    """
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    _check_settings(k, option, pf_scope, field_choice, it_mode)
    ref = ProgramRef.parse(program)
    parameters, optional = _parameters(ref)
    frame = _read(data)
    if k > len(frame):  # no path could gather k raw tuples: say so, not "unsatisfiable"
        raise InputError(f"k={k} exceeds the {len(frame)} rows of the raw table: no path can "
                         f"hold k tuples; lower -k to at most {len(frame)}")
    table, domains = typed_table(frame, parameters, types, optional)
    raw_order = list(frame.columns)
    unknown = [f for f in opt_out if f not in raw_order]
    if unknown:
        raise InputError(f"--opt-out names unknown field(s) {', '.join(unknown)}; the fields "
                         f"are {', '.join(raw_order)}")
    limits = limits or Limits()
    names = [d.name for d in domains]
    rows = list(zip(*[table[n].tolist() for n in names], strict=True))
    timings["read"] = time.perf_counter() - t0

    # 1. program execution
    t0 = time.perf_counter()
    n_workers = workers or 2
    size = max(25, min(500, len(rows) // (n_workers * 8) + 1))
    chunks = [(names, rows[i:i + size]) for i in range(0, len(rows), size)]
    traced = run_tasks(ref, limits, trace_chunk, chunks,
                       # runs end at their time limit: a chunk overrunning this is stuck
                       # where no signal reaches it (its tuples are then retried alone)
                       [min(len(c[1]) * limits.time_limit, 60) + limits.time_limit + 10
                        for c in chunks],
                       split=split_chunk, merge=merge_chunks, workers=n_workers)
    outcomes: list[Any] = []
    conditions: dict[PathKey, Any] = {}
    for part in traced:
        part_outcomes, part_conditions = part if not isinstance(part, TaskFailure) else \
            ([part.reason], {})
        outcomes.extend(part_outcomes)
        conditions.update(part_conditions)
    timings["trace"] = time.perf_counter() - t0
    # a path whose condition went down with a worker that died later: its tuples are
    # reported, never released without a condition
    outcomes = [o if not isinstance(o, PathKey) or o in conditions else
                "its path condition was lost with a worker that died; run again" for o in outcomes]
    failures = [(i, o) for i, o in enumerate(outcomes) if isinstance(o, str)]
    by_key: dict[PathKey, list[int]] = {}
    for i, o in enumerate(outcomes):
        if isinstance(o, PathKey):
            by_key.setdefault(o, []).append(i)
    buckets = [Bucket(j, conditions[key], np.asarray(members, dtype=np.int64))
               for j, (key, members) in enumerate(sorted(by_key.items(),
                                                         key=lambda kv: (-len(kv[1]),
                                                                         kv[1][0])))]

    # 2. k-anonymization and 3. solving
    t0 = time.perf_counter()
    rng, seeded = privacy_rng(seed)
    pf_excluded = tuple(frozenset(table[n].tolist()) for n in names) \
        if option == "P-F" and pf_scope == "table" else None
    tasks: list[BucketTask] = []
    groups_of: dict[int, list[np.ndarray]] = {}
    for bucket in buckets:
        if len(bucket.rows) < k:
            continue
        groups = k_groups(table, bucket.rows, k)
        groups_of[bucket.index] = groups
        position = {int(r): p for p, r in enumerate(bucket.rows)}
        tasks.append(BucketTask(
            bucket=bucket.index, condition=bucket.condition, domains=tuple(domains),
            option=option, rows=tuple(rows[int(r)] for r in bucket.rows),
            groups=tuple(tuple(position[int(r)] for r in g) for g in groups),
            field_order=_field_order(domains, field_choice, rng), pf_excluded=pf_excluded,
            opt_out=tuple(opt_out), it_distinct=it_mode == "distinct"))
    timings["k-anonymize"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    per_group = 5 * (2 * limits.time_limit + 2)
    solved = run_tasks(ref, limits, solve_bucket, tasks,
                       [min(len(t.groups) * per_group, 600) + 30 for t in tasks],
                       workers=n_workers)
    timings["solve"] = time.perf_counter() - t0
    results: dict[int, BucketResult] = {}
    for task, outcome in zip(tasks, solved, strict=True):
        if isinstance(outcome, TaskFailure):
            outcome = BucketResult(task.bucket, reason=f"solving crashed or hung its worker "
                                                       f"({outcome.reason})")
        results[task.bucket] = outcome

    # 4. the output, checked before anything is released
    t0 = time.perf_counter()
    generated: list[tuple[int, Generated]] = [(b, g) for b, r in results.items()
                                              for g in r.tuples]
    problems = check_output(generated, buckets, rows, domains, option, groups_of,
                            pf_excluded, tuple(opt_out), it_mode)
    refused = {p[0] for p in problems}
    kept = [(b, g) for i, (b, g) in enumerate(generated) if i not in refused]
    timings["check"] = time.perf_counter() - t0
    released = pd.DataFrame([g.values for _, g in kept], columns=names) if kept else \
        pd.DataFrame({n: pd.Series(dtype=table[n].dtype) for n in names})
    released = released.astype({n: table[n].dtype for n in names})[raw_order]
    reports = _reports(buckets, results, groups_of, kept, k)
    covered = sum(len(b.rows) for b in buckets if reports[b.index].released > 0)
    coverage = covered / len(rows)
    release = _release(released, option, k, pf_scope, it_mode, field_choice, opt_out,
                       groups_of, kept, problems, seeded, ref)
    n_released = max(len(kept), 1)
    stats = {"raw_tuples": float(len(rows)), "paths": float(len(buckets)),
             "released": float(len(kept)),
             "tracing_tuples_per_second": len(rows) / max(timings["trace"], 1e-9),
             "solve_seconds_per_released_tuple": timings["solve"] / n_released,
             "z3_calls": float(sum(r.z3_calls for r in results.values())),
             "untraceable": float(len(failures))}
    timings["total"] = sum(timings.values())
    return TestData(release, [reports[b.index] for b in buckets], failures, coverage,
                    np.asarray([b for b, _ in kept], dtype=np.int64), option, k, timings,
                    stats, [p[1] for p in problems], [g for _, g in kept], groups_of)


def _check_settings(k: object, option: str, pf_scope: str, field_choice: str,
                    it_mode: str) -> None:
    whole_number("k", k, "python", 1)
    for value, allowed, what in ((option, OPTIONS, "option"), (pf_scope, PF_SCOPES, "P-F scope"),
                                 (field_choice, FIELD_CHOICES, "field choice"),
                                 (it_mode, IT_MODES, "I-T mode")):
        if value not in allowed:
            raise InputError(f"unknown {what} {value!r}; use one of {', '.join(allowed)}")


def _parameters(ref: ProgramRef) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The function's parameter names and those with a default, read from its source
    without running it."""
    try:
        tree = ast.parse(Path(ref.path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError) as exc:
        raise InputError(f"cannot read the program {ref.path}: {exc}") from None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == ref.function:
            args = node.args
            if args.vararg or args.posonlyargs:
                raise InputError(f"{ref}: the function must take named parameters (the "
                                 f"record's fields as keyword arguments)")
            positional = [a.arg for a in args.args]
            with_default = positional[len(positional) - len(args.defaults):] + [
                a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                if d is not None]
            return tuple(positional + [a.arg for a in args.kwonlyargs]), tuple(with_default)
    raise InputError(f"{ref.path} defines no top-level function {ref.function!r}")


def _read(data: pd.DataFrame | str | Path) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        return data

    return read_table(data)


def _field_order(domains: Sequence[FieldDomain], choice: str, rng: np.random.Generator
                 ) -> tuple[int, ...]:
    if choice == "random":
        return tuple(int(j) for j in rng.permutation(len(domains)))
    sizes = [d.size() for d in domains]
    return tuple(sorted(range(len(domains)), key=lambda j: -sizes[j]))


def check_output(generated: Sequence[tuple[int, Generated]], buckets: Sequence[Bucket],
                 rows: Sequence[tuple[Any, ...]], domains: Sequence[FieldDomain], option: str,
                 groups_of: Mapping[int, list[np.ndarray]],
                 pf_excluded: Sequence[frozenset[Any]] | None, opt_out: Sequence[str],
                 it_mode: str) -> list[tuple[int, str]]:
    """Every rule the output must keep, checked on the tuples themselves; the problems
    found as (position in ``generated``, text). Independent of how the tuples were made."""
    names = [d.name for d in domains]
    raw = set(rows)
    problems: list[tuple[int, str]] = []
    seen: dict[tuple[Any, ...], int] = {}
    bucket_values: dict[int, list[set[Any]]] = {}
    for b in buckets:
        members = [rows[int(r)] for r in b.rows]
        bucket_values[b.index] = [set(col) for col in zip(*members, strict=True)]
    for i, (b, g) in enumerate(generated):
        values = g.values
        for d, v in zip(domains, values, strict=True):
            if not d.contains(v):
                problems.append((i, f"{d.name}={v!r} lies outside the field's domain"))
        if values in seen:
            problems.append((i, f"tuple {values!r} is released twice"))
        seen.setdefault(values, i)
        if values in raw and not (option == "P-F" and opt_out == tuple(names)):
            problems.append((i, f"tuple {values!r} repeats a raw tuple"))
        used = bucket_values[b]
        if option == "P-F":
            for j, name in enumerate(names):
                scope = pf_excluded[j] if pf_excluded is not None else used[j]
                if name not in opt_out and values[j] in scope:
                    problems.append((i, f"P-F: {name}={values[j]!r} repeats a raw value"))
        else:
            for name in g.changed:
                j = names.index(name)
                if values[j] in used[j]:
                    problems.append((i, f"{option}: {name}={values[j]!r} was to be new to its "
                                        f"bucket"))
            if option == "I-T":
                group = [rows[int(r)] for r in groups_of[b][g.group]]
                for name in g.kept:
                    j = names.index(name)
                    if any(r[j] != values[j] for r in group):
                        problems.append((i, f"I-T: {name}={values[j]!r} is not the k-group's "
                                            f"concrete value"))
                if it_mode == "distinct":
                    for j in range(len(names)):
                        if all(r[j] == group[0][j] for r in group) and \
                                values[j] == group[0][j] and names[j] not in g.changed:
                            problems.append((i, f"I-T (distinct): {names[j]} repeats the "
                                                f"k-group's value"))
    return problems


def _reports(buckets: Sequence[Bucket], results: Mapping[int, BucketResult],
             groups_of: Mapping[int, list[np.ndarray]], kept: Sequence[tuple[int, Generated]],
             k: int) -> dict[int, BucketReport]:
    released = {b.index: 0 for b in buckets}
    for b, _ in kept:
        released[b] += 1
    reports = {}
    for b in buckets:
        result = results.get(b.index)
        reason: str | None = None
        unsatisfied: list[str] = []
        if len(b.rows) < k:
            reason = f"unsatisfiable: the path has {len(b.rows)} raw tuple(s), fewer than k={k}"
        elif result is not None:
            reason = result.reason
            unsatisfied = [f"group {g} ({len(groups_of[b.index][g])} tuples): {why}"
                           for g, why in result.unsatisfied]
            if released[b.index] == 0 and reason is None:
                reason = result.unsatisfied[0][1] if result.unsatisfied else \
                    "no tuple passed the output check"
        reports[b.index] = BucketReport(b.index, b.condition.describe(), len(b.rows),
                                        released[b.index], reason,
                                        dict(b.condition.pin_reasons), unsatisfied, b.rows)
    return reports


def _release(data: pd.DataFrame, option: str, k: int, pf_scope: str, it_mode: str,
             field_choice: str, opt_out: Sequence[str], groups_of: Mapping[int, list[Any]],
             kept: Sequence[tuple[int, Generated]], problems: Sequence[tuple[int, str]],
             seeded: bool, ref: ProgramRef) -> Release:
    sizes = [len(groups_of[b][g.group]) for b, g in kept]
    smallest = min(sizes) if sizes else 0
    verdict = Verdict(
        model="kb-anonymity", parameters={"k": k, "option": option},
        passed=bool(kept) and smallest >= k and not problems, measured=float(smallest),
        required=float(k), worst_class=int(np.argmin(sizes)) if sizes else -1,
        worst_class_size=smallest, failing_classes=sum(s < k for s in sizes),
        n_classes=len(sizes), measure="raw tuples per released tuple",
        details={"output_check": "passed" if not problems else f"{len(problems)} problem(s)"})
    schema = Schema.from_roles(data, list(data.columns), kinds={
        c: "categorical" for c in data.columns if not pd.api.types.is_numeric_dtype(data[c])
        or pd.api.types.is_bool_dtype(data[c])})
    n = len(data)
    return Release(
        data=data, class_ids=np.arange(n), classes=pd.DataFrame(), verdicts=[verdict],
        metrics={"released": float(n)}, schema=schema, method="kb-anonymity",
        parameters={"program": f"{Path(ref.path).name}:{ref.function}", "k": k,
                    "option": option, "pf_scope": pf_scope, "opt_out": list(opt_out),
                    "field_choice": field_choice, "it_mode": it_mode},
        kind=ReleaseKind.SYNTHETIC,
        provenance=np.full(n, int(Provenance.SYNTHETIC), dtype=np.int8),
        source_rows=np.full(n, -1, dtype=np.int64), seeded=seeded)
