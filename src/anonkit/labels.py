"""Released labels: how a class's values are written in a release, and how they are read
back. Both live here so that every reader (:func:`covers`, the history's audit) reads a
label exactly as the writer meant it.

The forms (:mod:`anonkit.generalization` writes them):

- a value alone: ``a``, ``34``;
- a set of values: ``{a,b,c}``;
- a range: ``[20-29]``, or ``[lo, hi]`` when a bound holds a ``-`` (dates, negative
  numbers, ``1e-05``): then every range of the column is written so;
- any of these followed by `` or missing``: a missing cell is among the class's values;
  inside a set the bare word ``missing`` is a missing cell (``{a,missing}``);
- a class of missing cells only: an empty field (None).

A value that could be misread is quoted as in CSV (``"`` doubled): a set member holding
``,``, ``{``, ``}`` or ``"``; a range bound holding ``,``, ``[``, ``]`` or ``"``; either
spelled ``missing``; a value alone that starts with ``{``, ``[`` or ``"`` or ends in
`` or missing``; in all three, an empty value or one with a space at either end. So
``{"a,b",c}``, ``{"missing",x}``, ``"[1-2]"``. :func:`parse_label` is the exact inverse:
``parse_label(format_label(p)) == p``.

Hierarchy nodes and mean / median numbers are written as they are; read back they are a
value alone, whose meaning needs the hierarchy or the form. A prefix (``801**``) is quoted
as a value alone is, and followed by `` or missing`` when a missing cell shares its class.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np

from anonkit._util.numbers import exact_number

if TYPE_CHECKING:
    from anonkit.hierarchy.base import Hierarchy

#: inside a label, the word for a missing cell (a class of missing cells only is released
#: as an empty field)
MISSING_LABEL = "missing"
OR_MISSING = f" or {MISSING_LABEL}"

#: a set member holding one of these, or spelled ``missing``, is quoted
SET_MEMBER_SPECIAL = r'[,{}"]|^$|^missing$|^\s|\s$'
#: a range bound holding one of these is quoted (ordinal values are text)
RANGE_BOUND_SPECIAL = r'[,\[\]"]|^$|^missing$|^\s|\s$'
#: a value released alone is quoted when it would read as a set, a range, a quoted value or
#: "value or missing"
ALONE_SPECIAL = r'^[\[{"]|^$|^\s|\s$| or missing$'

_BOUND_SPECIAL = re.compile(RANGE_BOUND_SPECIAL)


# -- writing ---------------------------------------------------------------------------------


def quote_where(texts: np.ndarray, special: str) -> np.ndarray:
    """``texts`` with the entries matching ``special`` quoted as in CSV (``"`` doubled);
    None entries stay None. Vectorised: a column may have a million distinct values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = np.asarray(texts, dtype=object).copy()
    hit = pc.fill_null(pc.match_substring_regex(pa.array(out, type=pa.string()), special),
                       False)
    for i in np.flatnonzero(hit.to_numpy(zero_copy_only=False)):
        out[i] = '"' + out[i].replace('"', '""') + '"'
    return out


def quote_alone(texts: np.ndarray) -> np.ndarray:
    """Value texts as released alone: quoted where they would be misread as another form."""
    return quote_where(texts, ALONE_SPECIAL)


def range_labels(low: np.ndarray, high: np.ndarray, *, dates: bool = False) -> np.ndarray:
    """``[low-high]`` per pair of value texts, bounds quoted where needed; ``[low, high]``
    throughout when ``dates`` or when any bound holds a ``-``, so that the separator is
    never part of a bound."""
    low = quote_where(low, RANGE_BOUND_SPECIAL)
    high = quote_where(high, RANGE_BOUND_SPECIAL)
    has_dash = any("-" in b for b in low) or any("-" in b for b in high)
    sep = ", " if dates or has_dash else "-"
    out = np.empty(len(low), dtype=object)
    out[:] = [f"[{a}{sep}{b}]" for a, b in zip(low, high, strict=True)]
    return out


def or_missing(labels: np.ndarray) -> np.ndarray:
    """Labels of classes that also hold a missing cell."""
    out = np.empty(len(labels), dtype=object)
    out[:] = [label + OR_MISSING for label in labels]
    return out


def set_labels(texts: np.ndarray, missing_code: int, member: np.ndarray,
               sizes: np.ndarray) -> np.ndarray:
    """Per set, its label: the value alone, or ``{a,b,c}``; None for the set of the missing
    cell alone. ``texts``: each code's value text (the entry of ``missing_code``, if >= 0, is
    not read); ``member``: the members' codes, set after set; ``sizes``: the sets' sizes.
    Joined in Arrow: no Python string per member."""
    import pyarrow as pa
    import pyarrow.compute as pc

    # each value's text as it stands alone or inside a set, opening one and closing one
    card = len(texts)
    inside = quote_where(texts, SET_MEMBER_SPECIAL)
    if missing_code >= 0:
        inside[missing_code] = MISSING_LABEL
    alone = quote_alone(texts)
    pieces = pa.array(np.concatenate([alone, inside, "{" + inside, inside + "}"]),
                      type=pa.string())
    piece = member.astype(np.int64)
    first = np.cumsum(sizes) - sizes
    several = sizes > 1
    piece += card * np.repeat(several, sizes)
    piece[first[several]] += card
    piece[(first + sizes - 1)[several]] += 2 * card
    offsets = pa.array(np.append(first, len(member)).astype(np.int32))
    labels = pc.binary_join(pa.ListArray.from_arrays(offsets, pieces.take(piece)), ",")
    labels = labels.to_numpy(zero_copy_only=False).astype(object)
    if missing_code >= 0:
        labels[(sizes == 1) & (member[first] == missing_code)] = None
    return labels


@dataclass(frozen=True)
class ParsedLabel:
    """What a released label says: the values it stands for (``values``, for a value or a
    set), or an interval (``low``, ``high``, as texts), and whether a missing cell is
    among them. Other labels (hierarchy nodes, prefixes, numbers) read as a single
    ``values`` entry: their meaning needs the hierarchy or the form."""

    values: tuple[str, ...] = ()
    low: str | None = None
    high: str | None = None
    missing: bool = False

    @property
    def is_range(self) -> bool:
        return self.low is not None


def format_label(parsed: ParsedLabel) -> str | None:
    """The label the writer gives what ``parsed`` says (with the writer's own functions):
    a range, a value alone, a set, each with `` or missing`` when a missing cell is among
    them and is not written as a set member; None for missing cells only."""
    if parsed.is_range:
        assert parsed.low is not None and parsed.high is not None
        label = str(range_labels(np.array([parsed.low], dtype=object),
                                 np.array([parsed.high], dtype=object))[0])
        return label + OR_MISSING if parsed.missing else label
    if not parsed.values:
        if parsed.missing:
            return None
        raise ValueError("a label stands for at least one value or a missing cell")
    if len(parsed.values) == 1:
        label = str(quote_alone(np.array(parsed.values, dtype=object))[0])
        return label + OR_MISSING if parsed.missing else label
    texts = np.array([*parsed.values, *([MISSING_LABEL] if parsed.missing else [])],
                     dtype=object)
    return str(set_labels(texts, len(parsed.values) if parsed.missing else -1,
                          np.arange(len(texts)), np.array([len(texts)]))[0])


# -- reading ---------------------------------------------------------------------------------

#: how a label is written (``quoted``: a value alone, quoted)
_Written = Literal["missing", "value", "quoted", "set", "range"]


def parse_label(label: object) -> ParsedLabel:
    """Read a released label back (the inverse of the writing above): a missing cell,
    a value, a set ``{a,"b,c",missing}``, a range ``[lo-hi]`` / ``[lo, hi]``, each
    possibly followed by `` or missing``. A number (a mean or median label) reads as its
    exact text. Raises ValueError on a malformed label."""
    return _parse(label)[1]


def _parse(label: object) -> tuple[_Written, ParsedLabel]:
    """:func:`parse_label`, and how the label is written."""
    if label is None or (isinstance(label, float) and math.isnan(label)) \
            or type(label).__name__ == "NAType":  # (pandas' NA, without importing pandas)
        return "missing", ParsedLabel(missing=True)
    text = label if isinstance(label, str) else exact_number(label)
    missing = False
    if text.endswith(OR_MISSING) and not (text.startswith('"') and text.endswith('"')):
        text, missing = text[:-len(OR_MISSING)], True
    if text.startswith("{") and text.endswith("}") and len(text) >= 2:
        members = _members(text[1:-1], text)
        values = tuple(m for m in members if m is not None)
        return "set", ParsedLabel(values=values, missing=missing or len(values) < len(members))
    if text.startswith("[") and text.endswith("]"):
        bounds = _bounds(text[1:-1])
        if bounds is not None:
            return "range", ParsedLabel(low=bounds[0], high=bounds[1], missing=missing)
    if text.startswith('"'):
        value, end = _quoted(text, 0, text)
        if end != len(text):
            raise ValueError(f"malformed quoted value in label {text!r}")
        return "quoted", ParsedLabel(values=(value,), missing=missing)
    return "value", ParsedLabel(values=(text,), missing=missing)


def _quoted(text: str, start: int, label: str) -> tuple[str, int]:
    """The quoted text opening at ``text[start]`` (``""`` inside is one ``"``), and the
    index just past its closing quote."""
    pieces, i = [], start + 1
    while True:
        k = text.find('"', i)
        if k < 0:
            raise ValueError(f"unterminated quote in label {label!r}")
        pieces.append(text[i:k])
        if not text.startswith('""', k):
            return "".join(pieces), k + 1
        pieces.append('"')
        i = k + 2


def _members(body: str, label: str) -> list[str | None]:
    """The members of a set label's inside, unquoted; None for a missing cell."""
    members: list[str | None] = []
    i, n = 0, len(body)
    while True:
        if i < n and body[i] == '"':
            value, i = _quoted(body, i, label)
            members.append(value)
            if i < n and body[i] != ",":
                raise ValueError(f"text after a quoted member in label {label!r}")
        else:
            k = body.find(",", i)
            k = n if k < 0 else k
            piece = body[i:k]
            members.append(None if piece == MISSING_LABEL else piece)
            i = k
        if i >= n:
            return members
        i += 1


def _bounds(body: str) -> tuple[str, str] | None:
    """A range's bounds from its inside, or None when the writer would not have written
    it so (then the label is a value alone, e.g. a hierarchy node ``[-5--1]``).

    The writer separates with ``-`` only when no bound holds one, and a bare bound holds
    no ``,`` and no ``"``: so a bare low bound ends at the first ``,`` (followed by a
    space) when nothing before it is quoted, else at the first ``-``."""
    if body.startswith('"'):
        try:
            _, i = _quoted(body, 0, body)  # (only where it ends)
        except ValueError:
            return None
        sep = next((s for s in (", ", "-") if body.startswith(s, i)), None)
        if sep is None:
            return None
        low_text, rest = body[:i], body[i + len(sep):]
    else:
        comma = body.find(",")
        if comma >= 0 and body.startswith(", ", comma) and '"' not in body[:comma]:
            sep, low_text, rest = ", ", body[:comma], body[comma + 2:]
        else:
            dash = body.find("-")
            if dash < 0:
                return None
            sep, low_text, rest = "-", body[:dash], body[dash + 1:]
    low_bound, high_bound = _bound(low_text), _bound(rest)
    if low_bound is None or high_bound is None or (sep == "-" and "-" in rest):
        return None
    return low_bound, high_bound


def _bound(text: str) -> str | None:
    """A bound as written: quoted whole, or bare holding nothing the writer quotes."""
    if text.startswith('"'):
        try:
            value, end = _quoted(text, 0, text)
        except ValueError:
            return None
        return value if end == len(text) else None
    return None if _BOUND_SPECIAL.search(text) else text


def covers(label: object, value: object) -> bool:
    """Whether the released ``label`` stands for the original ``value`` (None / NaN: a
    missing cell): a value, a set, or a range (numbers compared as numbers, other texts
    as equal bounds only). Hierarchy and prefix labels need their hierarchy or form and
    are not judged here (False unless the label is the value itself)."""
    parsed = parse_label(label)
    if value is None or (isinstance(value, float) and math.isnan(value)) \
            or type(value).__name__ == "NAType":
        return parsed.missing
    text = exact_number(value)  # as the writer gives a value's text
    if parsed.is_range:
        assert parsed.low is not None and parsed.high is not None
        try:
            return float(parsed.low) <= float(value) <= float(parsed.high)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return text in (parsed.low, parsed.high)
    return text in parsed.values


# -- reading for an adversary: intervals and sets ---------------------------------------------

#: what a label says to an adversary who intersects labels (the history's audit)
INTERVAL, SET, OTHER = 0, 1, 2

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf"
_NUMBER = re.compile(rf"\s*({_NUM})\s*")
#: numbers between two others as people write them, in hierarchy nodes (``[20-24]``,
#: ``[2.5-5)``, ``[-5--1]``) and by hand (``25-34``, ``[1,4]``, ``[1..5]``): an adversary
#: reads them as that interval, so the audit does too
_LOOSE_INTERVAL = re.compile(
    rf"\s*(?:[\[(]\s*({_NUM})\s*(?:-|,|\.\.)\s*({_NUM})\s*[\])]"
    rf"|({_NUM})\s*(?:-|\.\.)\s*({_NUM}))\s*")


class LabelBoxes(NamedTuple):
    """Per distinct label, what an adversary reads in it: its kind (:data:`INTERVAL`,
    :data:`SET` or :data:`OTHER`), an interval's bounds (NaN otherwise), and a set's
    members: ``member_ids[offsets[i]:offsets[i + 1]]`` index ``members`` (the distinct
    members, in order of first appearance; None is a missing cell)."""

    kind: np.ndarray
    low: np.ndarray
    high: np.ndarray
    offsets: np.ndarray
    member_ids: np.ndarray
    members: np.ndarray


def label_boxes(names: Sequence[object] | np.ndarray) -> LabelBoxes:
    """:class:`LabelBoxes` of distinct labels, each read by :func:`parse_label`.

    An interval: a range of numbers, a number (``[x, x]``), or a value alone written as an
    interval of numbers (:data:`_LOOSE_INTERVAL`). A set: a set label, its missing cell a
    member of its own. Anything else (texts, hierarchy nodes, ranges of texts or dates,
    and labels that may be a missing cell besides a range or a value) is compared as it
    is. A label the writer cannot have made is compared as it is, too."""
    n = len(names)
    kind = np.full(n, OTHER, dtype=np.int64)
    low, high = np.full(n, np.nan), np.full(n, np.nan)
    counts = np.zeros(n, dtype=np.int64)
    member_ids: list[int] = []
    ids: dict[str | None, int] = {}
    for i, name in enumerate(np.asarray(names, dtype=object).tolist()):
        if isinstance(name, bool):
            continue
        if isinstance(name, int | float):
            if not math.isnan(name):
                kind[i], low[i], high[i] = INTERVAL, name, name
            continue
        try:
            form, parsed = _parse(name)
        except ValueError:
            continue
        if form == "set":
            members: list[str | None] = [*parsed.values, *([None] if parsed.missing else [])]
            kind[i], counts[i] = SET, len(members)
            member_ids.extend(ids.setdefault(m, len(ids)) for m in members)
        elif parsed.missing:
            continue
        elif form == "range":
            assert parsed.low is not None and parsed.high is not None
            lo, hi = _NUMBER.fullmatch(parsed.low), _NUMBER.fullmatch(parsed.high)
            if lo and hi:
                kind[i], low[i], high[i] = INTERVAL, float(lo[1]), float(hi[1])
        elif form == "value":
            number = _NUMBER.fullmatch(parsed.values[0])
            loose = None if number else _LOOSE_INTERVAL.fullmatch(parsed.values[0])
            if number:
                kind[i], low[i], high[i] = INTERVAL, float(number[1]), float(number[1])
            elif loose:
                bounds = [b for b in loose.groups() if b is not None]
                kind[i], low[i], high[i] = INTERVAL, float(bounds[0]), float(bounds[1])
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    distinct = np.empty(len(ids), dtype=object)
    distinct[:] = list(ids)
    return LabelBoxes(kind, low, high, offsets, np.asarray(member_ids, dtype=np.int64),
                      distinct)


# -- reading against a population: which values a label covers --------------------------------


def cover_matrix(labels: Sequence[object], values: Sequence[object],
                 hierarchy: Hierarchy | None = None) -> np.ndarray:
    """Per (distinct label, distinct original value): does the label stand for the value,
    as :func:`covers` judges it (a value, a set, a range; a missing cell)? With the column's
    ``hierarchy``, a label that is one of its nodes also stands for every leaf below it.
    Each label is parsed once and compared with all the values at once, so a population of
    many rows costs one pass per distinct label, not per row; a label the writer cannot
    have made stands for its own text only."""
    texts: list[str] = []
    numbers = np.full(len(values), np.nan)
    missing = np.zeros(len(values), dtype=bool)
    for j, value in enumerate(values):
        if value is None or (isinstance(value, float) and math.isnan(value)) \
                or type(value).__name__ == "NAType":
            missing[j] = True
            texts.append("")
            continue
        texts.append(exact_number(value))
        with contextlib.suppress(TypeError, ValueError):  # a value that is no number
            numbers[j] = float(value)  # type: ignore[arg-type]
    where: dict[str, list[int]] = {}
    for j, text in enumerate(texts):
        if not missing[j]:
            where.setdefault(text, []).append(j)
    below = _leaves_below(hierarchy) if hierarchy is not None else {}
    out = np.zeros((len(labels), len(values)), dtype=bool)
    for i, label in enumerate(labels):
        try:
            parsed = parse_label(label)
        except ValueError:
            parsed = ParsedLabel(values=(str(label),))
        row = out[i]
        if parsed.missing:
            row |= missing
        if parsed.is_range:
            assert parsed.low is not None and parsed.high is not None
            try:
                low, high = float(parsed.low), float(parsed.high)
            except ValueError:  # bounds that are not numbers: equal values only
                for bound in (parsed.low, parsed.high):
                    row[where.get(bound, [])] = True
            else:
                row |= (numbers >= low) & (numbers <= high)
                # a value that is no number is covered by a bound equal to it (as covers)
                for bound in (parsed.low, parsed.high):
                    hits = [j for j in where.get(bound, []) if math.isnan(numbers[j])]
                    row[hits] = True
            continue
        for text in parsed.values:
            row[where.get(text, [])] = True
            for leaf in below.get(text, ()):
                row[where.get(leaf, [])] = True
    return out


def _leaves_below(hierarchy: Hierarchy) -> dict[str, tuple[str, ...]]:
    """Every inner node's label of ``hierarchy``, with the leaves below it."""
    below: dict[str, list[str]] = {}
    for row in hierarchy.labels.tolist():
        leaf = str(row[0])
        for node in dict.fromkeys(str(cell) for cell in row[1:]):
            below.setdefault(node, []).append(leaf)
    return {node: tuple(leaves) for node, leaves in below.items()}
