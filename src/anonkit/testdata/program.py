"""The subject program: an ordinary Python function, loaded twice from its file.

``ProgramRef`` names a function as ``path/to/module.py:function`` (or is made from a
module-level callable). Worker processes load it from that file by themselves, so nothing
unpicklable crosses a process boundary. Two copies are loaded:

- the *plain* copy, the file exactly as written: tuples are verified on it by an
  independent line/branch trace (:mod:`anonkit.testdata.trace`);
- the *instrumented* copy, for concolic runs: the same source with ``x in literal`` /
  ``x not in literal`` turned into calls that model membership as one decision, and
  ``min``, ``max``, ``range`` and ``isinstance`` replaced by versions that understand
  symbolic values (:data:`anonkit.testdata.symbolic.NAMESPACE`). Helper functions defined
  in the same file are instrumented with it.

The program is the user's own code and runs with the user's rights. Its top level runs when
a copy is loaded: :func:`load` runs each copy under the ``guard`` it is given, which is how
the worker processes put loading under the same guard and time limit as a run
(:mod:`anonkit.testdata.workers`); the parent process never loads the program.
"""

from __future__ import annotations

import ast
import inspect
import sys
import types
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anonkit.errors import InputError
from anonkit.testdata.symbolic import NAMESPACE


@dataclass(frozen=True)
class ProgramRef:
    """Where the function lives: a Python file and a function name in it."""

    path: str
    function: str

    @classmethod
    def parse(cls, program: str | Callable[..., Any] | ProgramRef) -> ProgramRef:
        if isinstance(program, ProgramRef):
            return program
        if callable(program):
            return cls._of_callable(program)
        if not isinstance(program, str) or ":" not in program:
            raise InputError(f"the program must be given as path/to/module.py:function, got "
                             f"{program!r}")
        path, _, name = program.rpartition(":")
        file = Path(path)
        if not file.is_file():
            raise InputError(f"program file not found: {path} (give path/to/module.py:"
                             f"function)")
        if not name.isidentifier():
            raise InputError(f"{name!r} is not a function name; give path/to/module.py:"
                             f"function")
        return cls(str(file.resolve()), name)

    @classmethod
    def _of_callable(cls, fn: Callable[..., Any]) -> ProgramRef:
        name = getattr(fn, "__qualname__", "")
        if not isinstance(fn, types.FunctionType) or "." in name or "<" in name:
            raise InputError(f"the program {fn!r} must be a function defined at the top level "
                             f"of a Python file (it is loaded again from that file)")
        source = inspect.getsourcefile(fn)
        if source is None or not Path(source).is_file():
            raise InputError(f"the source file of {name} cannot be found; give "
                             f"path/to/module.py:function")
        return cls(str(Path(source).resolve()), name)

    def __str__(self) -> str:
        return f"{self.path}:{self.function}"


class _Membership(ast.NodeTransformer):
    """``a in b`` -> ``_anonkit_in(a, b)``; ``a not in b`` -> ``_anonkit_not_in(a, b)``."""

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(node.ops[0], ast.In | ast.NotIn):
            return node
        name = "_anonkit_in" if isinstance(node.ops[0], ast.In) else "_anonkit_not_in"
        call = ast.Call(func=ast.Name(id=name, ctx=ast.Load()),
                        args=[node.left, node.comparators[0]], keywords=[])
        return ast.copy_location(call, node)


@dataclass
class LoadedProgram:
    ref: ProgramRef
    plain: Callable[..., Any]
    instrumented: Callable[..., Any]
    parameters: tuple[str, ...]


def load(ref: ProgramRef,
         guard: Callable[[], AbstractContextManager[object]] = nullcontext) -> LoadedProgram:
    """Load both copies of the function, each one's top level run inside ``guard()``; an
    InputError when the file or name is wrong or the top level raises an ``Exception``
    (other exceptions, such as the guard's refusals and time-outs, pass through)."""
    path = Path(ref.path)
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError) as exc:
        raise InputError(f"cannot read the program {path}: {exc}") from None
    plain = _module(path, compile(tree, str(path), "exec"), "plain", {}, guard)
    changed = ast.fix_missing_locations(_Membership().visit(ast.parse(source, str(path))))
    instrumented = _module(path, compile(changed, str(path), "exec"), "instrumented",
                           NAMESPACE, guard)
    fn = getattr(plain, ref.function, None)
    if not callable(fn):
        raise InputError(f"{path} defines no function {ref.function!r}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        raise InputError(f"{ref} has no readable signature") from None
    names = tuple(p.name for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    return LoadedProgram(ref, fn, getattr(instrumented, ref.function), names)


def _module(path: Path, code: types.CodeType, flavour: str, namespace: dict[str, object],
            guard: Callable[[], AbstractContextManager[object]]) -> types.ModuleType:
    name = f"anonkit_subject_{flavour}_{abs(hash(str(path)))}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__dict__.update(namespace)
    # the program may import modules beside it
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        with guard():
            exec(code, module.__dict__)
    except Exception as exc:
        raise InputError(f"its top level ({path}) raised {type(exc).__name__}: {exc}"
                         ) from None
    return module
