"""kb-anonymity (spec 000): the path a program takes on one tuple, and the release's rules,
written from the specification (and, where a docstring says so, the README's documented
rules); nothing here imports anonkit.

The specification groups the raw tuples by their *path condition* (``pc = execute P with t
and collect the path condition``) and releases, per bucket, tuples that satisfy ``S U pc``:
a released tuple must drive the program down its bucket's path. For a deterministic program
the path condition is fixed by the control flow and the control flow by its branch outcomes,
so the oracle records the path as the program's control flow, observed from outside:

* the plain function, loaded from its file the ordinary way, runs under ``sys.settrace``
  with opcode events; every conditional jump (``if``/``elif``/``while``, ``and``/``or``,
  conditional expressions, ``not``) and every ``FOR_ITER`` (a loop's next trip or its exit)
  executed in the program's own file is a :class:`Decision`: where it was and whether the
  jump was taken, in execution order, helpers of the same file included;
* an exception raised in the program's file is part of the path (where, and its type), and
  so is how the run ended: ``return`` or ``raise <ExceptionType>``.

:func:`release_problems` then checks a written release against the raw table with the
specification's guarantees, :func:`unexercised_paths` that no kept bucket with a satisfiable
constraint set went without a tuple, and :func:`coverage` measures the share of raw tuples
whose path the release exercises.
"""

from __future__ import annotations

import dis
import importlib.util
import itertools
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

#: jumps that are taken whatever the data: not decisions
_UNCONDITIONAL = frozenset({"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT",
                            "JUMP_ABSOLUTE", "JUMP", "JUMP_NO_INTERRUPT"})
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)

OPTIONS = ("P-F", "P-T", "I-T")
_loaded = itertools.count()


@dataclass(frozen=True)
class Decision:
    """One branch outcome: the conditional jump at ``offset`` (``line``) of ``function``,
    taken or not (for ``FOR_ITER``: taken means the loop ended)."""

    function: str
    line: int
    offset: int
    instruction: str
    taken: bool

    def __str__(self) -> str:
        return f"{self.function}:{self.line}@{self.offset} {self.instruction} " \
               f"{'taken' if self.taken else 'not taken'}"


@dataclass(frozen=True)
class Raised:
    """An exception raised (or passing) at ``offset`` of ``function``."""

    function: str
    line: int
    offset: int
    exception: str

    def __str__(self) -> str:
        return f"{self.function}:{self.line}@{self.offset} raises {self.exception}"


@dataclass(frozen=True)
class ProgramPath:
    """A run's control flow: its decisions and exceptions in order, and its ending."""

    events: tuple[Decision | Raised, ...]
    ending: str  # "return" or "raise <ExceptionType>"

    def describe(self) -> list[str]:
        return [str(e) for e in self.events] + [self.ending]


class PathTooLong(BaseException):
    """The run made more decisions than allowed (a loop that does not end); a
    ``BaseException``, so that the program's own ``except Exception`` cannot swallow it."""


@dataclass(frozen=True)
class _Jump:
    line: int
    name: str
    fallthrough: int


def _jumps(code: CodeType) -> dict[int, _Jump]:
    """The conditional jumps of one code object by offset, with the offset that follows
    each when it is not taken."""
    instructions = list(dis.get_instructions(code))
    jumps: dict[int, _Jump] = {}
    line = code.co_firstlineno
    for here, after in itertools.zip_longest(instructions, instructions[1:]):
        if here.starts_line is not None:
            line = here.starts_line
        if here.opcode in _JUMPS and here.opname not in _UNCONDITIONAL:
            jumps[here.offset] = _Jump(line, here.opname,
                                       after.offset if after is not None else -1)
    return jumps


def load_function(file: str | Path, name: str) -> Callable[..., Any]:
    """The function ``name`` of the Python file ``file``, imported the ordinary way (under a
    module name of its own, so that nothing the package loaded is reused)."""
    file = Path(file).resolve()
    spec = importlib.util.spec_from_file_location(f"kb_oracle_{next(_loaded)}_{file.stem}",
                                                  file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def program_path(fn: Callable[..., Any], record: Mapping[str, Any], *,
                 max_events: int = 100_000) -> ProgramPath:
    """Run ``fn(**record)`` and return its path: the decisions and exceptions inside the
    file that defines ``fn``, in order, and how the run ended."""
    filename = fn.__code__.co_filename
    events: list[Decision | Raised] = []
    tables: dict[CodeType, dict[int, _Jump]] = {}

    def frame_tracer(code: CodeType) -> Callable[[FrameType, str, Any], Any]:
        jumps = tables.setdefault(code, _jumps(code))
        pending: list[int] = []  # the offset of a conditional jump just executed

        def trace(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "opcode":
                if pending:
                    offset = pending.pop()
                    jump = jumps[offset]
                    events.append(Decision(code.co_qualname, jump.line, offset, jump.name,
                                           frame.f_lasti != jump.fallthrough))
                    if len(events) > max_events:
                        raise PathTooLong(f"more than {max_events} decisions")
                if frame.f_lasti in jumps:
                    pending.append(frame.f_lasti)
            elif event == "exception":
                pending.clear()
                events.append(Raised(code.co_qualname, frame.f_lineno, frame.f_lasti,
                                     arg[0].__name__))
            elif event == "return":
                pending.clear()
            return trace

        return trace

    def start(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != filename:
            return None
        frame.f_trace_opcodes = True
        return frame_tracer(frame.f_code)

    previous = sys.gettrace()
    sys.settrace(start)
    try:
        fn(**record)
        ending = "return"
    except PathTooLong:
        raise
    except Exception as exc:
        ending = f"raise {type(exc).__name__}"
    finally:
        sys.settrace(previous)
    return ProgramPath(tuple(events), ending)


# -- the release's rules -----------------------------------------------------------------------
def release_problems(fn: Callable[..., Any], fields: Sequence[str],
                     raw: Sequence[tuple[Any, ...]], released: Sequence[tuple[Any, ...]],
                     k: int, option: str, opt_out: Sequence[str] = (),
                     pf_scope: str = "bucket") -> list[str]:
    """What a written kb-anonymous release breaks, from the raw table and the release alone.

    The specification's guarantees, with B the raw tuples sharing a released tuple's path:

    1. *the path* -- the released tuple satisfies ``S U pc``: it drives the program down the
       path of raw tuples; and that path's bucket was kept, so ``len(B) >= k`` (smaller
       buckets are deleted as unsatisfiable);
    2. *k* -- B is k-anonymized and one tuple is generated per distinct k-group (each of at
       least k raw tuples of B), so a path has at most ``len(B) // k`` released tuples;
    3. *a set* -- ``R' = R' U {r}``: no released tuple appears twice;
    4. *the option's constraints* -- P-T: ``field != t.field`` for every t in B on some field,
       so the released tuple equals no tuple of B (I-T too: its constraint set has the same
       form); P-F: ``field != t.field`` for every field (but the opted-out ones) and every t
       in B (with ``pf_scope="table"``, the package's stricter variant: every t of the raw
       table).

    Buckets are what the specification says, raw tuples with the same path condition; the
    oracle's path is the control flow, the same partition when the program's path
    condition is exact (no value pinned by an unmodelled operation).
    """
    if option not in OPTIONS or pf_scope not in ("bucket", "table"):
        raise ValueError(f"unknown option {option!r} or P-F scope {pf_scope!r}")
    problems: list[str] = []
    table_values = [{t[j] for t in raw} for j in range(len(fields))]
    path_of: dict[tuple[Any, ...], ProgramPath] = {}
    bucket: dict[ProgramPath, list[tuple[Any, ...]]] = {}
    for t in raw:
        p = path_of.get(t) or program_path(fn, dict(zip(fields, t, strict=True)))
        path_of[t] = p
        bucket.setdefault(p, []).append(t)
    copies = Counter(released)
    for r, n in copies.items():
        if n > 1:
            problems.append(f"{r} is released {n} times")
    per_path: Counter[ProgramPath] = Counter()
    for r in released:
        p = program_path(fn, dict(zip(fields, r, strict=True)))
        members = bucket.get(p)
        if members is None:
            problems.append(f"{r} takes a path no raw tuple takes: {p.describe()}")
            continue
        per_path[p] += 1
        if len(members) < k:
            problems.append(f"{r} takes the path of {len(members)} raw tuple(s), fewer than "
                            f"k={k}: {p.describe()}")
        if r in members:
            problems.append(f"{option}: {r} repeats a raw tuple of its path")
        if option == "P-F":
            for j, name in enumerate(fields):
                scope = {t[j] for t in members} if pf_scope == "bucket" else table_values[j]
                if name not in opt_out and r[j] in scope:
                    where = f"the {len(members)} raw tuple(s) of its path" \
                        if pf_scope == "bucket" else "the raw table"
                    problems.append(f"P-F: {r}: {name}={r[j]!r} repeats a value of {where}")
    for p, n in per_path.items():
        size = len(bucket[p])
        if n > size // k:
            problems.append(f"{n} tuples released for a path of {size} raw tuple(s): at "
                            f"most {size // k} k-groups of k={k} fit: {p.describe()}")
    return problems


def coverage(fn: Callable[..., Any], fields: Sequence[str], raw: Sequence[tuple[Any, ...]],
             released: Sequence[tuple[Any, ...]]) -> float:
    """The share of raw tuples whose path some released tuple takes."""
    def path(t: tuple[Any, ...]) -> ProgramPath:
        return program_path(fn, dict(zip(fields, t, strict=True)))

    exercised = {path(r) for r in released}
    return sum(path(t) in exercised for t in raw) / len(raw) if raw else 0.0


def unexercised_paths(fn: Callable[..., Any], fields: Sequence[str],
                      raw: Sequence[tuple[Any, ...]], released: Sequence[tuple[Any, ...]],
                      k: int, option: str, candidates: Mapping[str, Sequence[Any]],
                      opt_out: Sequence[str] = ()) -> list[str]:
    """Paths of at least k raw tuples that the release does not exercise although a tuple
    exists that takes the path and meets the option's constraint.

    The specification's solver step: ``r = gen_new_tuple(S U pc)``; *if a tuple r satisfies
    the constraints*, ``R' = R' U {r}``. So a kept bucket whose constraints some tuple meets
    gets at least one released tuple. The witness is searched by brute force over
    ``candidates`` (per field, values the generator may use: a subset of its domain) with
    the constraint P-T: the tuple equals no raw tuple of the path (the paper's rule, which
    the spec's ``field != t.field`` on one field implies); P-F: every field but the
    opted-out ones takes a value no raw tuple of the path has. I-T also keeps the k-group's
    concrete fields, which depend on the grouping: it is not checked here.
    """
    if option not in ("P-T", "P-F"):
        raise ValueError(f"the witness search covers P-T and P-F, not {option!r}")
    bucket: dict[ProgramPath, list[tuple[Any, ...]]] = {}
    for t in raw:
        bucket.setdefault(program_path(fn, dict(zip(fields, t, strict=True))), []).append(t)
    exercised = {program_path(fn, dict(zip(fields, r, strict=True))) for r in released}
    missing = {p: members for p, members in bucket.items()
               if len(members) >= k and p not in exercised}
    problems: list[str] = []
    if not missing:
        return problems
    paths: dict[tuple[Any, ...], ProgramPath] = {}
    for p, members in missing.items():
        raw_set = set(members)
        used = [{t[j] for t in members} for j in range(len(fields))]
        for r in itertools.product(*(candidates[name] for name in fields)):
            if option == "P-T" and r in raw_set:
                continue
            if option == "P-F" and any(name not in opt_out and r[j] in used[j]
                                       for j, name in enumerate(fields)):
                continue
            if r not in paths:
                paths[r] = program_path(fn, dict(zip(fields, r, strict=True)))
            if paths[r] == p:
                problems.append(f"the path of {len(members)} raw tuple(s) has no released "
                                f"tuple, though {r} takes it and meets {option}: "
                                f"{p.describe()}")
                break
    return problems
