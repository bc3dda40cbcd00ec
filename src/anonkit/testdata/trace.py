"""Running the program on one record: the concolic path, and an independent trace.

:func:`concolic_path` runs the instrumented copy on symbolic field values and returns the
path's key -- the sequence of branch outcomes, the pinned field values and how the run
ended (a return, or the type of the exception raised: exceptions are part of the path) --
with the decisions' expressions. Tuples are grouped by key (cheap); the expressions become
a Z3 path condition once per distinct key.

:func:`branch_trace` runs the *plain* copy under ``sys.settrace`` with opcode events and
returns every executed instruction of the program's own file, in order. It shares nothing
with the symbolic machinery, so it can check that a generated tuple really takes its
bucket's path.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

from anonkit.testdata import symbolic
from anonkit.testdata.symbolic import PathLimitExceeded, Sym, Tracer, Tree


@dataclass(frozen=True)
class PathKey:
    """What identifies a path: branch outcomes, pinned values, the ending."""

    outcomes: str  # "1" / "0" per decision
    pins: tuple[tuple[str, object], ...]
    end: str  # "return" or "raise <ExceptionType>"


@dataclass(frozen=True)
class PathCondition:
    """A path's decisions (expression, outcome) and its pins (field -> value, reason)."""

    key: PathKey
    decisions: tuple[tuple[Tree, bool], ...]
    pin_reasons: tuple[tuple[str, str], ...]

    def describe(self) -> list[str]:
        """The decisions as readable text, repeated decisions (loops) collapsed."""
        lines: list[str] = []
        for tree, outcome in self.decisions:
            text = symbolic.describe_decision(tree, outcome)
            if lines and lines[-1].split("  (x")[0] == text:
                count = int(lines[-1].split("  (x")[1][:-1]) + 1 if "  (x" in lines[-1] else 2
                lines[-1] = f"{text}  (x{count})"
            else:
                lines.append(text)
        for name, value in self.key.pins:
            reason = dict(self.pin_reasons).get(name, "")
            lines.append(f"{name} == {value!r}  [pinned: {reason}]")
        lines.append(self.key.end)
        return lines


class ProgramFailure(Exception):
    """The tuple could not be traced (path too long, time limit, blocked operation)."""


def _ending(exc: BaseException | None) -> str:
    if exc is None:
        return "return"
    return f"raise {type(exc).__qualname__}"


def symbolic_record(record: Mapping[str, object]) -> dict[str, object]:
    return {name: Sym(value, ("v", name)) for name, value in record.items()}


def concolic_path(fn: Callable[..., Any], record: Mapping[str, object],
                  max_decisions: int) -> tuple[PathKey, Tracer]:
    """Run ``fn`` on symbolic values of ``record``; the path key and the tracer."""
    tracer = Tracer(dict(record), max_decisions)
    symbolic.start(tracer)
    raised: BaseException | None = None
    try:
        fn(**symbolic_record(record))
    except PathLimitExceeded as exc:
        raise ProgramFailure(str(exc)) from None
    except MemoryError:  # the worker's memory cap, not a path of the program
        raise
    except (Exception, SystemExit) as exc:  # the program's own exception: part of the path
        raised = exc
    finally:
        symbolic.start(None)
    outcomes = "".join("1" if o else "0" for _, o in tracer.decisions)
    pins = tuple(sorted(tracer.pins.items()))
    return PathKey(outcomes, pins, _ending(raised)), tracer


def path_condition(key: PathKey, tracer: Tracer) -> PathCondition:
    return PathCondition(key, tuple(tracer.decisions), tuple(sorted(tracer.pin_reasons.items())))


def branch_trace(fn: Callable[..., Any], record: Mapping[str, object], filename: str,
                 max_events: int) -> tuple[tuple[int, ...], str]:
    """Every instruction of ``filename`` executed by ``fn(**record)`` (as code-object
    number and offset), and how the run ended."""
    events: list[int] = []
    codes: dict[object, int] = {}

    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event == "opcode":
            code = frame.f_code
            number = codes.setdefault(code, len(codes))
            events.append(number << 20 | frame.f_lasti)
            if len(events) > max_events:
                raise PathLimitExceeded(f"the trace exceeded {max_events} instructions")
        return local

    def start(frame: FrameType, event: str, arg: object) -> Any:
        if event != "call" or frame.f_code.co_filename != filename:
            return None
        frame.f_trace_opcodes = True
        return local

    raised: BaseException | None = None
    previous = sys.gettrace()
    sys.settrace(start)
    try:
        fn(**record)
    except PathLimitExceeded as exc:
        raise ProgramFailure(str(exc)) from None
    except MemoryError:
        raise
    except (Exception, SystemExit) as exc:
        raised = exc
    finally:
        sys.settrace(previous)
    return tuple(events), _ending(raised)
