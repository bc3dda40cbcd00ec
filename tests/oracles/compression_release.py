"""Compression anonymity (spec 003) as a reader of the written file sees it: the released
labels read back from their text (README, "Labels read back exactly": a value alone, a set
``{a,b}``, a range ``[lo-hi]`` or ``[lo, hi]`` when a bound holds a ``-``, CSV-style quoting,
`` or missing``), the classes an adversary forms (rows with equal labels), and the
properties the notebook's truncated code trees promise: every class holds k rows, a label
is the summary of its class's values (the node's range or set), and an alphabetic
(order-preserving) tree releases classes that are intervals of the value order, so their
ranges never overlap.

Written from the README and the notebook only; it imports nothing from anonkit."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import combinations
from typing import Literal

OR_MISSING = " or missing"


@dataclass(frozen=True)
class Label:
    """A released label as read: ``kind`` ``value`` (``values`` holds the one value),
    ``set`` (``values``), ``range`` (``low``, ``high``) or ``missing`` (an empty field);
    ``missing``: a missing cell is among the class's values."""

    kind: Literal["value", "set", "range", "missing"]
    values: tuple[str, ...] = ()
    low: str = ""
    high: str = ""
    missing: bool = False


def _token(text: str, i: int, stops: str) -> tuple[str, bool, int]:
    """The token starting at ``text[i]``: a CSV-quoted one (``"`` doubled inside) or a bare
    one running to the next character of ``stops``. Returns (token, quoted, next index)."""
    if i < len(text) and text[i] == '"':
        out: list[str] = []
        j = i + 1
        while True:
            if j >= len(text):
                raise ValueError(f"unterminated quote in {text!r}")
            if text[j] == '"':
                if j + 1 < len(text) and text[j + 1] == '"':
                    out.append('"')
                    j += 2
                    continue
                return "".join(out), True, j + 1
            out.append(text[j])
            j += 1
    j = i
    while j < len(text) and text[j] not in stops:
        j += 1
    return text[i:j], False, j


def parse_label(text: str | None) -> Label:
    """Read a released label back (README, "Labels read back exactly")."""
    if text is None or text == "":
        return Label("missing", missing=True)
    missing = False
    if text.endswith(OR_MISSING):  # a value alone ending so is quoted, so this is the flag
        text, missing = text[: -len(OR_MISSING)], True
    if text.startswith("{") and text.endswith("}"):
        inner, values, i = text[1:-1], [], 0
        while True:
            member, quoted, i = _token(inner, i, ",")
            if member == "missing" and not quoted:
                missing = True
            else:
                values.append(member)
            if i >= len(inner):
                break
            if inner[i] != ",":
                raise ValueError(f"bad set label {text!r}")
            i += 1
        return Label("set", tuple(values), missing=missing)
    if text.startswith("[") and text.endswith("]"):
        # "[lo, hi]" when a bound holds a "-", else "[lo-hi]"; a bound holding "," is quoted
        inner = text[1:-1]
        low, quoted, i = _token(inner, 0, ",")
        if inner.startswith(", ", i):
            i += 2
        elif quoted and inner.startswith("-", i):
            i += 1
        else:
            low, _, i = _token(inner, 0, "-")
            if not inner.startswith("-", i):
                raise ValueError(f"bad range label {text!r}")
            i += 1
        high, _, j = _token(inner, i, "")
        if j != len(inner):
            raise ValueError(f"bad range label {text!r}")
        return Label("range", low=low, high=high, missing=missing)
    if text.startswith('"'):
        value, _, j = _token(text, 0, "")
        if j != len(text):
            raise ValueError(f"bad quoted label {text!r}")
        return Label("value", (value,), missing=missing)
    return Label("value", (text,), missing=missing)


def number(text: str) -> Decimal:
    return Decimal(text.strip())


def bounds(label: Label) -> tuple[Decimal, Decimal]:
    """The smallest and largest number a label of numbers stands for."""
    if label.kind == "range":
        return number(label.low), number(label.high)
    if label.kind in ("value", "set") and label.values:
        values = [number(v) for v in label.values]
        return min(values), max(values)
    raise ValueError(f"{label} stands for no number")


def covers(label: Label, value: Decimal) -> bool:
    """Whether a label of numbers stands for ``value`` (a range: lo <= value <= hi)."""
    if label.kind == "range":
        low, high = bounds(label)
        return low <= value <= high
    return any(number(v) == value for v in label.values)


def summarises(label: Label, values: Sequence[Decimal]) -> bool:
    """Whether ``label`` is exactly the summary of a class holding ``values``: the node's
    range (its least and greatest value), its set, or its value alone when it holds one."""
    distinct = set(values)
    if label.kind == "range":
        return bounds(label) == (min(distinct), max(distinct))
    if label.kind == "set":
        return {number(v) for v in label.values} == distinct and len(label.values) == \
            len(distinct)
    if label.kind == "value":
        return distinct == {number(label.values[0])}
    return False


def classes(labels: Sequence[tuple[str, ...]]) -> dict[tuple[str, ...], list[int]]:
    """The adversary's classes: per tuple of released labels, its rows (by position)."""
    out: dict[tuple[str, ...], list[int]] = {}
    for i, key in enumerate(labels):
        out.setdefault(key, []).append(i)
    return out


def overlapping_ranges(ranges: Mapping[object, tuple[Decimal, Decimal]]
                       ) -> list[tuple[object, object]]:
    """The pairs of classes whose closed intervals ``[lo, hi]`` share a point."""
    return [(a, b) for (a, (lo_a, hi_a)), (b, (lo_b, hi_b)) in
            combinations(ranges.items(), 2) if lo_a <= hi_b and lo_b <= hi_a]


def interleaved(members: Mapping[object, Sequence[tuple[Decimal, ...]]]
                ) -> list[tuple[object, object]]:
    """The pairs of classes that are not intervals of the lexicographic order of value
    tuples (the order of the notebook's ``Ord`` on rows): a tuple of one class lies
    between the least and greatest tuple of another."""
    spans = {c: (min(t), max(t)) for c, t in members.items()}
    bad = []
    for a, b in combinations(members, 2):
        for x, y in ((a, b), (b, a)):
            lo, hi = spans[y]
            if any(lo <= t <= hi for t in members[x]):
                bad.append((a, b))
                break
    return bad


def histogram_of(values: Sequence[Decimal]) -> dict[Decimal, int]:
    return dict(Counter(values))
