"""The import-layers contract: the package's layout is its map, and dependencies run one way.

Each module belongs to a layer (:data:`LAYERS`, top first); a module imports only modules of
its own layer or below, never one above; no two modules import each other, directly or
round a loop; and only the command line imports anonkit modules inside functions (to start
quickly): anywhere else an import inside a function would hide a dependency. The imports
are read from the source (``ast``), so a module that is never imported is checked too.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "anonkit"

#: top to bottom; a module's layer is the first whose prefix names it (a prefix is a module
#: or a package, dotted, below ``anonkit``)
LAYERS: list[tuple[str, ...]] = [
    ("cli", "__main__"),
    ("jobs",),
    ("history", "distributed", "testdata", "web"),
    ("report",),
    ("methods",),
    ("metrics",),
    ("assemble", "verify", "checker", "release"),
    ("algorithms",),
    ("labels", "generalization", "partition"),
    ("models",),
    ("data", "hierarchy", "datasets"),
    ("_util", "errors"),
]
#: the package's own ``__init__`` re-exports the public names lazily (importlib) and
#: imports only the errors when imported, so taking ``__version__`` from it is no upward
#: dependency: it counts as the bottom layer
TOP = "anonkit"
FUNCTION_IMPORTS_ALLOWED = ("cli",)


@dataclass(frozen=True)
class Import:
    path: str  # the importing file, relative to the source folder
    source: str  # the importing module, dotted below anonkit
    target: str  # the imported anonkit module, dotted below anonkit
    line: int
    in_function: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool
             ) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name == "anonkit" or alias.name.startswith("anonkit."):
                yield alias.name.removeprefix("anonkit").lstrip(".")
        return
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
        stem = ".".join([*base, *([node.module] if node.module else [])])
    elif node.module == "anonkit" or (node.module or "").startswith("anonkit."):
        stem = (node.module or "").removeprefix("anonkit").lstrip(".")
    else:
        return
    for alias in node.names:
        # "from anonkit.x import y": y may be a module of package x, or a name in it
        candidate = f"{stem}.{alias.name}" if stem else alias.name
        yield candidate if _exists(candidate) else stem


def _exists(module: str) -> bool:
    path = SOURCE.joinpath(*module.split("."))
    # a compiled extension counts by its C source
    return any(path.with_suffix(suffix).is_file() for suffix in (".py", ".c")) or \
        (path / "__init__.py").is_file()


def imports() -> list[Import]:
    out = []
    for path in sorted(SOURCE.rglob("*.py")):
        module = module_name(path)
        tree = ast.parse(path.read_text(), str(path))
        functions = {id(n) for f in ast.walk(tree)
                     if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                     for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _targets(node, module, path.name == "__init__.py"):
                    if target != module:
                        out.append(Import(f"anonkit/{path.relative_to(SOURCE)}", module,
                                          target, node.lineno, id(node) in functions))
    return out


def layer_of(module: str) -> int:
    if module == "":  # the package itself: it imports no layer when imported (see TOP)
        return len(LAYERS)
    for index, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    raise AssertionError(f"anonkit.{module} is in no layer: add its package to LAYERS")


def test_every_module_has_a_layer() -> None:
    for path in SOURCE.rglob("*.py"):
        module = module_name(path)
        if module:
            layer_of(module)


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = [f"{i.path}:{i.line} imports anonkit.{i.target} "
              f"(layer {layer_of(i.target)} above {layer_of(i.source)})"
              for i in imports()
              if i.source != "" and layer_of(i.target) < layer_of(i.source)]
    assert not upward, "\n".join(upward)


def test_imports_inside_functions_only_in_the_command_line() -> None:
    hidden = [f"{i.path}:{i.line} imports anonkit.{i.target}"
              for i in imports() if i.in_function
              and not any(i.source == p or i.source.startswith(p + ".")
                          for p in FUNCTION_IMPORTS_ALLOWED)]
    assert not hidden, "\n".join(hidden)


def test_no_import_cycles() -> None:
    graph: dict[str, set[str]] = {}
    for i in imports():
        if not i.in_function:
            graph.setdefault(i.source, set()).add(i.target)
    cycles = [c for c in _strongly_connected(graph) if len(c) > 1]
    assert not cycles, "\n".join(" <-> ".join(sorted(c)) for c in cycles)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    out.append(component)
    return out


def test_the_contract_catches_what_it_forbids(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks above can fail: an upward import, a hidden one and a cycle, planted in a
    copy of the layout, are each found."""
    fake = tmp_path / "anonkit"
    for name in ("algorithms", "methods", "_util"):
        (fake / name).mkdir(parents=True)
        (fake / name / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "algorithms" / "step.py").write_text("from anonkit.methods import runner\n")
    (fake / "methods" / "runner.py").write_text(
        "from anonkit.algorithms import step\n\ndef run():\n    import anonkit._util.x\n")
    (fake / "_util" / "x.py").write_text("")
    monkeypatch.setattr(sys.modules[__name__], "SOURCE", fake)
    found = imports()
    assert any(i.source == "algorithms.step" and i.target == "methods.runner" for i in found)
    assert any(i.in_function and i.source == "methods.runner" for i in found)
    upward = "anonkit/algorithms/step.py:1 imports anonkit.methods"
    with pytest.raises(AssertionError, match=re.escape(upward)):
        test_no_module_imports_a_layer_above_its_own()
    with pytest.raises(AssertionError, match=re.escape("anonkit/methods/runner.py:4")):
        test_imports_inside_functions_only_in_the_command_line()
    with pytest.raises(AssertionError, match=re.escape("algorithms.step <-> methods.runner")):
        test_no_import_cycles()
