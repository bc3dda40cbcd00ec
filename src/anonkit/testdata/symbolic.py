"""Concolic values: a concrete value with a symbolic expression beside it.

A :class:`Sym` behaves like its concrete value (the program runs on real data) while every
operation also builds an expression tree over the record's fields. Each time the program
asks for the truth of a symbolic value (``if``, ``while``, ``and``/``or``/``not``, a
conditional expression, ``assert``) the outcome is recorded with the expression: the list
of those decisions is the tuple's path condition. Expression trees are plain tuples, so
recording costs little per tuple; they become Z3 terms once per distinct path
(:func:`to_z3`).

Tree nodes: ``("v", field)``, ``("c", value)``, ``(op, *children)`` with op one of the
arithmetic, comparison and logic operators below, ``("in", x, ("c", values))``,
``("prefix", s, ("c", p))``, ``("suffix", s, ("c", p))``, ``("ite", cond, a, b)``,
``("round", x)``, ``("floor", x)``, ``("ceil", x)``, ``("truth", x)``.

What is not modelled *pins* the fields the value depends on: ``field == value`` joins the
path condition and the pin is reported (:meth:`Tracer.pin`); a constraint is never
dropped.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator
from typing import Any

Tree = tuple[Any, ...]
Number = (int, float, bool)
PLAIN = (int, float, bool, str)


class PathLimitExceeded(BaseException):
    """The path is longer than the limit (a data-dependent loop ran too long)."""


class Tracer:
    """The decisions and pins of one run."""

    __slots__ = ("decisions", "max_decisions", "pin_reasons", "pins", "record")

    def __init__(self, record: dict[str, object], max_decisions: int) -> None:
        self.decisions: list[tuple[Tree, bool]] = []
        self.pins: dict[str, object] = {}
        self.pin_reasons: dict[str, str] = {}
        self.record = record
        self.max_decisions = max_decisions

    def decide(self, tree: Tree, outcome: bool) -> None:
        if len(self.decisions) >= self.max_decisions:
            raise PathLimitExceeded(f"the path took more than {self.max_decisions} branch "
                                    f"decisions (a loop whose trip count depends on the data?)")
        self.decisions.append((tree, outcome))

    def pin(self, tree: Tree, reason: str) -> None:
        for name in fields_of(tree):
            if name not in self.pins:
                self.pins[name] = self.record[name]
                self.pin_reasons[name] = reason


#: the tracer of the run in progress (a worker runs one tuple at a time)
_current: Tracer | None = None


def start(tracer: Tracer | None) -> None:
    global _current
    _current = tracer


def _tracer() -> Tracer:
    if _current is None:
        raise RuntimeError("a symbolic value was used outside a traced run")
    return _current


def fields_of(tree: Tree) -> set[str]:
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if node[0] == "v":
            found.add(node[1])
        elif node[0] != "c":
            stack.extend(n for n in node[1:] if isinstance(n, tuple))
    return found


def tree_of(value: object) -> Tree:
    return value.e if isinstance(value, Sym) else ("c", value)


def concrete(value: object) -> object:
    return value.v if isinstance(value, Sym) else value


def _operand(other: object) -> bool:
    return isinstance(other, Sym) or (isinstance(other, PLAIN) and not isinstance(other, str))


def _binary(op: str, fn: Callable[[Any, Any], Any], *, divides: bool = False
            ) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def forward(self: Sym, other: object) -> Any:
        if not _operand(other) or isinstance(self.v, str):
            return NotImplemented
        return _apply(op, fn, self, other, divides)

    def reflected(self: Sym, other: object) -> Any:
        if not _operand(other) or isinstance(self.v, str):
            return NotImplemented
        return _apply(op, fn, other, self, divides)

    return forward, reflected


def _apply(op: str, fn: Callable[[Any, Any], Any], a: object, b: object, divides: bool) -> Any:
    if divides and isinstance(b, Sym):
        # a division by zero raises: whether it does is a decision of the path
        zero = b.v == 0
        _tracer().decide(("==", b.e, ("c", 0)), zero)
    value = fn(concrete(a), concrete(b))
    if not isinstance(value, Number):
        return value
    return Sym(value, (op, tree_of(a), tree_of(b)))


def _compare(op: str, fn: Callable[[Any, Any], bool]) -> Callable[..., Any]:
    def compare(self: Sym, other: object) -> Any:
        if isinstance(other, Sym):
            if isinstance(self.v, str) != isinstance(other.v, str):
                return fn(self.v, other.v) if op in ("==", "!=") else NotImplemented
            return Sym(fn(self.v, other.v), (op, self.e, other.e))
        if isinstance(self.v, str):
            if isinstance(other, str) and op in ("==", "!="):
                return Sym(fn(self.v, other), (op, self.e, ("c", other)))
            if isinstance(other, str):  # string ordering is not modelled
                _tracer().pin(self.e, f"string ordering ({op})")
                return fn(self.v, other)
            return NotImplemented
        if isinstance(other, Number):
            return Sym(fn(self.v, other), (op, self.e, ("c", other)))
        return NotImplemented

    return compare


class Sym:
    """A field value (or a value computed from fields) carrying its expression."""

    __slots__ = ("e", "v")

    def __init__(self, value: object, tree: Tree) -> None:
        self.v = value
        self.e = tree

    # -- the branch decision -----------------------------------------------------------
    def __bool__(self) -> bool:
        outcome = bool(self.v)
        tree = self.e if isinstance(self.v, bool) else ("truth", self.e)
        _tracer().decide(tree, outcome)
        return outcome

    # -- arithmetic --------------------------------------------------------------------
    __add__, __radd__ = _binary("+", operator.add)
    __sub__, __rsub__ = _binary("-", operator.sub)
    __mul__, __rmul__ = _binary("*", operator.mul)
    __truediv__, __rtruediv__ = _binary("/", operator.truediv, divides=True)
    __floordiv__, __rfloordiv__ = _binary("//", operator.floordiv, divides=True)
    __mod__, __rmod__ = _binary("%", operator.mod, divides=True)

    def __pow__(self, other: object) -> Any:
        if isinstance(other, int) and not isinstance(other, bool) and 0 <= other <= 4:
            result: Any = 1
            for _ in range(other):
                result = result * self
            return result
        self._pin(f"power ** {other!r}")
        return self.v ** concrete(other)

    def __rpow__(self, other: object) -> Any:
        self._pin("a power with a symbolic exponent")
        return concrete(other) ** self.v

    def __neg__(self) -> Any:
        return Sym(-self.v, ("-", ("c", 0), self.e))

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return Sym(abs(self.v), ("ite", (">=", self.e, ("c", 0)), self.e,
                                 ("-", ("c", 0), self.e)))

    def __round__(self, ndigits: int | None = None) -> Any:
        value = self.v
        if isinstance(value, bool) or not (ndigits is None or isinstance(ndigits, int)):
            return self._pinned_value("round() of this value", round(value, ndigits))  # type: ignore[call-overload]
        if ndigits is None:
            return Sym(round(value), ("round", self.e))  # type: ignore[call-overload]
        if isinstance(value, int):
            if ndigits >= 0:
                return Sym(value, self.e)
            return self._pinned_value("round() to tens or more", round(value, ndigits))
        # round(x, n) as round(x * 10**n) / 10**n: exact on the reals, while the float may
        # differ at a tie; the tuples made from it are run again, so a difference is caught
        scale = 10 ** ndigits
        return Sym(round(value, ndigits),  # type: ignore[call-overload]
                   ("/", ("round", ("*", self.e, ("c", scale))), ("c", scale)))

    def __floor__(self) -> Any:
        return Sym(math.floor(self.v), ("floor", self.e))

    def __ceil__(self) -> Any:
        return Sym(math.ceil(self.v), ("ceil", self.e))

    def __trunc__(self) -> Any:
        return Sym(math.trunc(self.v), ("ite", (">=", self.e, ("c", 0)), ("floor", self.e),
                                        ("ceil", self.e)))

    # -- comparisons -------------------------------------------------------------------
    __lt__ = _compare("<", operator.lt)
    __le__ = _compare("<=", operator.le)
    __gt__ = _compare(">", operator.gt)
    __ge__ = _compare(">=", operator.ge)
    __eq__ = _compare("==", operator.eq)  # type: ignore[assignment]
    __ne__ = _compare("!=", operator.ne)  # type: ignore[assignment]

    # -- strings -----------------------------------------------------------------------
    def startswith(self, prefix: object, *args: object) -> Any:
        return self._affix("prefix", str.startswith, prefix, args)

    def endswith(self, suffix: object, *args: object) -> Any:
        return self._affix("suffix", str.endswith, suffix, args)

    def _affix(self, op: str, fn: Callable[..., bool], affix: object, args: tuple[object, ...]
               ) -> Any:
        if not isinstance(self.v, str):
            raise AttributeError(f"{type(self.v).__name__!r} object has no attribute "
                                 f"{'startswith' if op == 'prefix' else 'endswith'!r}")
        if args or not isinstance(affix, str | tuple) or (
                isinstance(affix, tuple) and not all(isinstance(a, str) for a in affix)):
            return self._pinned_value(f"str.{fn.__name__} with these arguments",
                                      fn(self.v, concrete(affix), *map(concrete, args)))
        options = affix if isinstance(affix, tuple) else (affix,)
        tree: Tree = ("c", False)
        for a in options:
            part = (op, self.e, ("c", a))
            tree = part if tree == ("c", False) else ("or", tree, part)
        return Sym(fn(self.v, affix), tree)

    # -- everything else pins ----------------------------------------------------------
    def _pin(self, reason: str) -> None:
        _tracer().pin(self.e, reason)

    def _pinned_value(self, reason: str, value: Any) -> Any:
        self._pin(reason)
        return value

    def __hash__(self) -> int:
        return self._pinned_value("hashing (a dict or set lookup)", hash(self.v))

    def __index__(self) -> int:
        return self._pinned_value("use as an index or count", operator.index(self.v))

    def __int__(self) -> int:
        return self._pinned_value("int()", int(self.v))

    def __float__(self) -> float:
        return self._pinned_value("float() or a math function", float(self.v))

    def __complex__(self) -> complex:
        return self._pinned_value("complex()", complex(self.v))

    def __str__(self) -> str:
        return self._pinned_value("str() or formatting", str(self.v))

    def __repr__(self) -> str:
        return self._pinned_value("repr()", repr(self.v))

    def __format__(self, spec: str) -> str:
        return self._pinned_value("formatting", format(self.v, spec))

    def __len__(self) -> int:
        return self._pinned_value("len()", len(self.v))  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        return self._pinned_value("iteration", iter(self.v))  # type: ignore[call-overload]

    def __getitem__(self, key: object) -> Any:
        return self._pinned_value("indexing or slicing", self.v[concrete(key)])  # type: ignore

    def __contains__(self, item: object) -> bool:
        return self._pinned_value("substring test (in)", concrete(item) in self.v)  # type: ignore

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._pinned_value(f".{name}", getattr(self.v, name))

    def __reduce__(self) -> Any:
        raise TypeError("symbolic values are not pickled")


# -- replacements put into the program's namespace (instrumented copy only) -------------
def sym_contains(item: object, container: object) -> Any:
    """``item in container``: one decision for membership in a literal collection."""
    if isinstance(item, Sym) and isinstance(container, tuple | list | set | frozenset | dict):
        values = tuple(container)
        if all(isinstance(v, PLAIN) for v in values):
            return Sym(item.v in values, ("in", item.e, ("c", values)))
    return item in container  # type: ignore[operator]


def sym_not_contains(item: object, container: object) -> Any:
    result = sym_contains(item, container)
    if isinstance(result, Sym):
        return Sym(not result.v, ("not", result.e))
    return not result


def _extreme(pick: Callable[..., Any], op: str) -> Callable[..., Any]:
    def extreme(*args: Any, **kwargs: Any) -> Any:
        items = list(args[0]) if len(args) == 1 else list(args)
        if kwargs or not items or not any(isinstance(a, Sym) for a in items) or \
                not all(isinstance(a, Sym | int | float) for a in items):
            return pick(*args, **kwargs)
        best = items[0]
        for other in items[1:]:
            # ties keep the first argument, as the builtin does
            chosen = pick(concrete(best), concrete(other)) == concrete(best) if \
                concrete(best) != concrete(other) else True
            value = concrete(best) if chosen else concrete(other)
            tree = ("ite", (op, tree_of(best), tree_of(other)), tree_of(best), tree_of(other))
            best = Sym(value, tree)
        return best

    return extreme


sym_min = _extreme(min, "<=")
sym_max = _extreme(max, ">=")


def sym_range(*args: Any) -> Any:
    """``range`` whose bounds may be symbolic: each iteration test is a decision."""
    if not any(isinstance(a, Sym) for a in args):
        return range(*args)
    return _symbolic_range(*args)


def _symbolic_range(*args: Any) -> Iterator[Any]:
    start, stop, step = (0, args[0], 1) if len(args) == 1 else \
        (args[0], args[1], args[2] if len(args) > 2 else 1)
    if isinstance(step, Sym):
        step = step.__index__()
    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    i = start
    while (i < stop) if step > 0 else (i > stop):
        yield i
        i = i + step


def sym_isinstance(obj: object, classes: Any) -> bool:
    return isinstance(concrete(obj), classes)


NAMESPACE: dict[str, object] = {
    "_anonkit_in": sym_contains,
    "_anonkit_not_in": sym_not_contains,
    "min": sym_min,
    "max": sym_max,
    "range": sym_range,
    "isinstance": sym_isinstance,
}


# -- reading trees -----------------------------------------------------------------------
_PRECEDENCE = {"or": 1, "and": 2, "not": 3, "in": 4, "<": 4, "<=": 4, ">": 4, ">=": 4,
               "==": 4, "!=": 4, "+": 5, "-": 5, "*": 6, "/": 6, "//": 6, "%": 6}


def render(tree: Tree, parent: int = 0) -> str:
    """The expression as Python-like text."""
    op = tree[0]
    if op == "v":
        return str(tree[1])
    if op == "c":
        return repr(tree[1])
    if op == "not":
        return _wrap(f"not {render(tree[1], 3)}", 3, parent)
    if op == "truth":
        return render(tree[1], parent)
    if op == "in":
        return _wrap(f"{render(tree[1], 5)} in {tree[2][1]!r}", 4, parent)
    if op in ("prefix", "suffix"):
        name = "startswith" if op == "prefix" else "endswith"
        return f"{render(tree[1], 9)}.{name}({tree[2][1]!r})"
    if op == "ite":
        return f"({render(tree[2])} if {render(tree[1])} else {render(tree[3])})"
    if op in ("round", "floor", "ceil"):
        return f"{op}({render(tree[1])})"
    level = _PRECEDENCE[op]
    text = f"{render(tree[1], level)} {op} {render(tree[2], level + 1)}"
    return _wrap(text, level, parent)


def _wrap(text: str, level: int, parent: int) -> str:
    return f"({text})" if level < parent else text


def describe_decision(tree: Tree, outcome: bool) -> str:
    text = render(tree)
    return text if outcome else f"not ({text})"


# -- to Z3 -------------------------------------------------------------------------------
class Z3Builder:
    """Turns trees into Z3 terms over one set of field variables.

    ``variables`` maps each field to its Z3 term: Int, Bool, String, or for a float field
    a Real (callers may define it as a scaled Int, see :mod:`anonkit.testdata.solve`).
    """

    def __init__(self, variables: dict[str, Any], context: Any = None) -> None:
        import z3

        self.z3 = z3
        self.ctx = context
        self.variables = variables
        self._memo: dict[int, tuple[Tree, Any]] = {}

    def condition(self, tree: Tree, outcome: bool) -> Any:
        term = self.boolean(tree)
        return term if outcome else self.z3.Not(term)

    def boolean(self, tree: Tree) -> Any:
        return self._as_bool(self.term(tree))

    def _as_bool(self, term: Any) -> Any:
        z3 = self.z3
        if z3.is_bool(term):
            return term
        if z3.is_string(term):
            return z3.Length(term) > 0
        return term != 0

    def _numeric(self, term: Any) -> Any:
        z3 = self.z3
        if z3.is_bool(term):
            return z3.If(term, z3.IntVal(1, self.ctx), z3.IntVal(0, self.ctx))
        return term

    def _align(self, a: Any, b: Any) -> tuple[Any, Any]:
        z3 = self.z3
        a, b = self._numeric(a), self._numeric(b)
        if z3.is_real(a) and z3.is_int(b):
            b = z3.ToReal(b)
        elif z3.is_int(a) and z3.is_real(b):
            a = z3.ToReal(a)
        return a, b

    def _constant(self, value: object) -> Any:
        z3 = self.z3
        if isinstance(value, bool):
            return z3.BoolVal(value, self.ctx)
        if isinstance(value, int):
            return z3.IntVal(value, self.ctx)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"the constant {value!r} has no Z3 counterpart")
            return z3.RealVal(repr(value), self.ctx) if "e" not in repr(value) else \
                z3.RealVal(str(__import__("fractions").Fraction(value)), self.ctx)
        if isinstance(value, str):
            return z3.StringVal(value, self.ctx)
        raise ValueError(f"the constant {value!r} has no Z3 counterpart")

    def term(self, tree: Tree) -> Any:
        key = id(tree)
        hit = self._memo.get(key)
        if hit is not None and hit[0] is tree:
            return hit[1]
        result = self._build(tree)
        self._memo[key] = (tree, result)
        return result

    def _build(self, tree: Tree) -> Any:
        z3 = self.z3
        op = tree[0]
        if op == "v":
            return self.variables[tree[1]]
        if op == "c":
            return self._constant(tree[1])
        if op == "not":
            return z3.Not(self.boolean(tree[1]))
        if op == "truth":
            return self.boolean(tree[1])
        if op in ("and", "or"):
            parts = [self.boolean(t) for t in tree[1:]]
            return z3.And(*parts) if op == "and" else z3.Or(*parts)
        if op == "in":
            x = self.term(tree[1])
            options = []
            for value in tree[2][1]:
                if isinstance(value, str) != z3.is_string(x):
                    continue
                a, b = self._align(x, self._constant(value)) if not z3.is_string(x) else \
                    (x, self._constant(value))
                options.append(a == b)
            return z3.Or(*options) if options else z3.BoolVal(False, self.ctx)
        if op == "prefix":
            return z3.PrefixOf(self._constant(tree[2][1]), self.term(tree[1]))
        if op == "suffix":
            return z3.SuffixOf(self._constant(tree[2][1]), self.term(tree[1]))
        if op == "ite":
            a, b = self.term(tree[2]), self.term(tree[3])
            if not (z3.is_bool(a) and z3.is_bool(b)):
                a, b = self._align(a, b)
            return z3.If(self.boolean(tree[1]), a, b)
        if op in ("floor", "ceil", "round"):
            x = self._numeric(self.term(tree[1]))
            if z3.is_int(x):
                return x
            floor = z3.ToInt(x)
            if op == "floor":
                return floor
            if op == "ceil":
                return z3.If(z3.ToReal(floor) == x, floor, floor + 1)
            frac = x - z3.ToReal(floor)
            half = z3.RealVal("1/2", self.ctx)
            return z3.If(frac > half, floor + 1, z3.If(frac < half, floor,
                                                        z3.If(floor % 2 == 0, floor, floor + 1)))
        a, b = self.term(tree[1]), self.term(tree[2])
        if op in ("==", "!="):
            if z3.is_string(a) or z3.is_string(b):
                if not (z3.is_string(a) and z3.is_string(b)):
                    return z3.BoolVal(op == "!=", self.ctx)
            elif z3.is_bool(a) and z3.is_bool(b):
                pass
            else:
                a, b = self._align(a, b)
            return a == b if op == "==" else a != b
        a, b = self._align(a, b)
        if op == "<":
            return a < b
        if op == "<=":
            return a <= b
        if op == ">":
            return a > b
        if op == ">=":
            return a >= b
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return z3.ToReal(a) / z3.ToReal(b) if z3.is_int(a) else a / b
        if op == "//":
            if z3.is_int(a):
                # Python floors; SMT-LIB's div rounds toward -inf only for a positive divisor
                return z3.If(b > 0, a / b, (-a) / (-b))
            return z3.ToReal(z3.ToInt(a / b))
        if op == "%":
            if z3.is_int(a):
                return a - b * z3.If(b > 0, a / b, (-a) / (-b))
            return a - b * z3.ToReal(z3.ToInt(a / b))
        raise ValueError(f"unknown operator {op!r} in a path condition")


# -- evaluating trees on many candidate values at once -----------------------------------
def evaluate(tree: Tree, env: dict[str, Any]) -> Any:
    """The value of ``tree`` with each field bound to a scalar or a numpy array (one
    candidate value per element), with Python's semantics for the modelled operators.
    Used to filter candidate tuples cheaply before they are run; never trusted alone."""
    import numpy as np

    op = tree[0]
    if op == "v":
        return env[tree[1]]
    if op == "c":
        return tree[1]
    if op == "not":
        return np.logical_not(_truth(evaluate(tree[1], env)))
    if op == "truth":
        return _truth(evaluate(tree[1], env))
    if op in ("and", "or"):
        parts = [_truth(evaluate(t, env)) for t in tree[1:]]
        fn = np.logical_and if op == "and" else np.logical_or
        result = parts[0]
        for p in parts[1:]:
            result = fn(result, p)
        return result
    if op == "in":
        x = evaluate(tree[1], env)
        values = list(tree[2][1])
        if isinstance(x, np.ndarray):
            return np.fromiter((v in values for v in x.tolist()), dtype=bool, count=len(x))
        return x in values
    if op in ("prefix", "suffix"):
        x = evaluate(tree[1], env)
        affix = tree[2][1]
        fn = str.startswith if op == "prefix" else str.endswith
        if isinstance(x, np.ndarray):
            return np.fromiter((fn(v, affix) for v in x.tolist()), dtype=bool, count=len(x))
        return fn(x, affix)
    if op == "ite":
        return np.where(_truth(evaluate(tree[1], env)), evaluate(tree[2], env),
                        evaluate(tree[3], env))
    if op == "round":
        return np.round(evaluate(tree[1], env))
    if op == "floor":
        return np.floor(evaluate(tree[1], env))
    if op == "ceil":
        return np.ceil(evaluate(tree[1], env))
    a, b = evaluate(tree[1], env), evaluate(tree[2], env)
    fn = _NUMPY_OPS[op]
    return fn(a, b)


def _truth(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.ndarray):
        if value.dtype == bool:
            return value
        if value.dtype == object:
            return np.fromiter((bool(v) for v in value.tolist()), dtype=bool,
                               count=len(value))
        return value != 0
    return bool(value)


_NUMPY_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
}
