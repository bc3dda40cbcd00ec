"""What a released cell claims about the value it replaced, read from the written file as the
README documents the label format ("Missing values" and "Labels read back exactly"), written
plainly and independently of :mod:`anonkit.labels`:

- an empty field is a missing cell, and only that;
- ``X or missing``: X, or a missing cell;
- ``{a,"b,c",missing}``: one of the members; a quoted member is its text (``""`` is one
  ``"``), the bare word ``missing`` a missing cell;
- ``[lo-hi]`` or ``[lo, hi]``: a value between the bounds, which may be quoted;
- ``"text"``: that text (a value that would read as another form is quoted);
- anything else: that value;
- under ``prefix``: a value starting with the text before the trailing ``*`` (quoted, and
  followed by `` or missing``, as a value alone is);
- under ``hierarchy``: a value whose leaf has that node among its ancestors, the node's text
  written as it is; the root stands for a missing cell too (a class mixing missing and
  present values is released as it).

Values are compared in the column's kind: numbers as exact rationals, dates as days,
ordinal values by their declared order, text exactly.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

OR_MISSING = " or missing"


@dataclass(frozen=True)
class Claim:
    """What a cell says: a missing cell may be meant (``missing``), and the values are
    ``members`` (a set or one value), or ``low``..``high``, or ``raw`` (prefix, hierarchy,
    mean and median labels, read with the form)."""

    missing: bool = False
    members: tuple[str, ...] = ()
    low: str | None = None
    high: str | None = None
    raw: str | None = None


def _quoted(text: str, at: int) -> tuple[str, int]:
    """The quoted text opening at ``text[at]``, and the index past its closing quote."""
    out, i = [], at + 1
    while True:
        j = text.index('"', i)
        out.append(text[i:j])
        if text[j + 1:j + 2] == '"':
            out.append('"')
            i = j + 2
        else:
            return "".join(out), j + 1


def _is_bound(text: str, sep: str) -> bool:
    """A range bound as written: quoted whole, or bare without ``, [ ] "`` (and without
    ``-`` when ``-`` separates the bounds), nor spaces at either end."""
    if text.startswith('"'):
        try:
            return _quoted(text, 0)[1] == len(text)
        except ValueError:
            return False
    return bool(text) and not any(c in text for c in ',[]"') and \
        not (sep == "-" and "-" in text) and text == text.strip() and text != "missing"


def _one_bound(text: str) -> str:
    if text.startswith('"'):
        value, end = _quoted(text, 0)
        assert end == len(text), text
        return value
    return text


def read_cell(cell: str, form: str) -> Claim:
    if cell == "":
        return Claim(missing=True)
    if form in ("hierarchy", "mean", "median"):  # a node or a number, as it is
        return Claim(raw=cell)
    if form == "prefix":
        missing = cell.endswith(OR_MISSING)
        body = cell[:-len(OR_MISSING)] if missing else cell
        if body.startswith('"'):
            body, end = _quoted(body, 0)
            assert end == len(cell) - (len(OR_MISSING) if missing else 0), cell
        return Claim(missing=missing, raw=body)
    missing = cell.endswith(OR_MISSING)
    body = cell[:-len(OR_MISSING)] if missing else cell
    if body.startswith("{") and body.endswith("}"):
        inner, members, i = body[1:-1], [], 0
        while True:
            if inner[i:i + 1] == '"':
                value, i = _quoted(inner, i)
                members.append(value)
            else:
                j = inner.find(",", i)
                j = len(inner) if j < 0 else j
                if inner[i:j] == "missing":
                    missing = True
                else:
                    members.append(inner[i:j])
                i = j
            if i >= len(inner):
                return Claim(missing=missing, members=tuple(members))
            assert inner[i] == ",", cell
            i += 1
    if body.startswith("[") and body.endswith("]"):
        inner = body[1:-1]
        # every way to cut the inside at a separator into two bounds as the format writes
        # them; the format is unambiguous exactly when one way remains
        cuts = [(inner[:i], inner[i + len(sep):]) for sep in (", ", "-")
                for i in range(len(inner)) if inner.startswith(sep, i)
                and _is_bound(inner[:i], sep) and _is_bound(inner[i + len(sep):], sep)]
        assert len(cuts) == 1, (cell, cuts)
        low, high = cuts[0]
        return Claim(missing=missing, low=_one_bound(low), high=_one_bound(high))
    if body.startswith('"'):
        value, end = _quoted(body, 0)
        assert end == len(body), cell
        return Claim(missing=missing, members=(value,))
    return Claim(missing=missing, members=(body,))


def _number(text: str) -> Fraction:
    return Fraction(Decimal(text.strip()))


def _day(text: str) -> dt.date:
    return dt.date.fromisoformat(text.strip()[:10])


def is_missing(value: str) -> bool:
    """A blank input cell is a missing value."""
    return value.strip() == ""


def covers(cell: str, value: str, *, kind: str, form: str,
           order: Sequence[str] = (),
           ancestors: Mapping[str, Sequence[str]] | None = None) -> bool:
    """Whether the released ``cell`` stands for the input ``value`` (its text as read)."""
    claim = read_cell(cell, form)
    if is_missing(value):
        # the root of a hierarchy stands for every value, a missing cell too
        root = ancestors is not None and claim.raw == next(iter(ancestors.values()))[-1]
        return claim.missing or (form == "hierarchy" and root)
    if form == "prefix":
        return claim.raw is not None and value.startswith(claim.raw.rstrip("*"))
    if form == "hierarchy":
        assert ancestors is not None
        return claim.raw in ancestors[value]
    if form in ("mean", "median"):
        return claim.raw is not None  # judged per class by the caller
    if kind == "numeric":
        key, same = _number, _number
    elif kind == "date":
        key, same = _day, _day
    elif kind == "ordinal":
        key, same = order.index, order.index
    else:
        key, same = str, str
    if claim.low is not None:
        assert claim.high is not None
        return key(claim.low) <= key(value) <= key(claim.high)
    return any(same(m) == same(value) for m in claim.members)
