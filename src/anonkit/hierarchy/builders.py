"""Builders for the common hierarchies, so users need not write ARX files by hand.

Every builder returns a :class:`Hierarchy` whose leaf labels are the text that
:meth:`Hierarchy.leaf_codes` looks up for a data value (``3.0`` -> ``'3'``), so a hierarchy
built from a column's distinct values always covers that column. Work is per distinct value,
never per row: pass ``df[col].unique()`` or the column itself (it is de-duplicated first).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from anonkit.errors import InputError
from anonkit.hierarchy.base import Hierarchy, _leaf_text

__all__ = [
    "DATE_LEVELS",
    "date_hierarchy",
    "grouping_hierarchy",
    "interval_hierarchy",
    "masking_hierarchy",
]


def _where(name: str) -> str:
    return f" for '{name}'" if name else ""


def _check_root(root: str, name: str) -> str:
    root = str(root).strip()
    if not root:
        raise InputError(f"hierarchy{_where(name)}: the root label is empty; use e.g. '*'")
    return root


# --------------------------------------------------------------------------- intervals


def interval_hierarchy(
    values: Iterable[object],
    widths: Sequence[float] | float = (5, 10, 20),
    *,
    fanout: Sequence[int] | None = None,
    start: float = 0,
    root: str = "*",
    name: str = "",
) -> Hierarchy:
    """Fixed-width intervals, one width per level, for a numeric column.

    All levels share the anchor ``start`` (default 0, as ARX's age hierarchy does), and each
    width must be a whole multiple of the one below: only then does every interval lie inside
    one interval of the next level, which a tree requires. ``fanout`` is the other way to say
    the same thing: ``widths=5, fanout=(2, 2)`` means widths 5, 10, 20.

    Labels are inclusive ``[20-24]`` when the values, widths and anchor are all whole
    numbers, and half-open ``[2.5-5)`` otherwise, so no value sits on two labels.
    """
    base_widths = [widths] if isinstance(widths, int | float | np.number) else list(widths)
    if fanout is not None:
        fanout = list(fanout)
        if len(base_widths) != 1:
            raise InputError(
                f"interval hierarchy{_where(name)}: with fanout give one base width "
                f"(widths=5, fanout=(2, 2)), not {len(base_widths)} widths")
        bad = [f for f in fanout if not _is_whole(f) or f < 2]
        if bad:
            raise InputError(
                f"interval hierarchy{_where(name)}: fanout must be whole numbers >= 2, "
                f"got {bad[0]!r}")
        level_widths = [float(base_widths[0])]
        for f in fanout:
            level_widths.append(level_widths[-1] * int(f))
    else:
        level_widths = [_as_number(w, "width", name) for w in base_widths]
    if not level_widths:
        raise InputError(f"interval hierarchy{_where(name)}: give at least one width")
    for w in level_widths:
        if not (math.isfinite(w) and w > 0):
            raise InputError(f"interval hierarchy{_where(name)}: widths must be positive "
                             f"numbers, got {w!r}")
    for lower, upper in itertools.pairwise(level_widths):
        ratio = upper / lower
        if upper <= lower or abs(ratio - round(ratio)) > 1e-9:
            raise InputError(
                f"interval hierarchy{_where(name)}: width {_fmt(upper)} is not a multiple of "
                f"the width below it ({_fmt(lower)}); each level's intervals must nest in the "
                f"next, e.g. widths=(5, 10, 20)")
    start = _as_number(start, "start", name)
    root = _check_root(root, name)

    distinct = _distinct_numbers(values, name)
    integral = bool(np.all(np.mod(distinct, 1) == 0)) and all(map(_is_whole, level_widths)) \
        and _is_whole(start)
    columns: list[np.ndarray] = [np.array([_leaf_text(v) for v in _native(distinct)],
                                          dtype=object)]
    for w in level_widths:
        bins = np.floor((distinct - start) / w + 1e-12)
        uniq_bins, inverse = np.unique(bins, return_inverse=True)
        labels = np.array([_interval_label(start + b * w, w, integral) for b in uniq_bins],
                          dtype=object)
        columns.append(labels[inverse.reshape(-1)])
    columns.append(np.full(len(distinct), root, dtype=object))
    return Hierarchy(np.stack(columns, axis=1).tolist(), name=name)


def _interval_label(lo: float, width: float, integral: bool) -> str:
    if integral:
        lo_i, hi_i = round(lo), round(lo + width - 1)
        return f"[{lo_i}]" if lo_i == hi_i else f"[{lo_i}-{hi_i}]"
    return f"[{_fmt(lo)}-{_fmt(lo + width)})"


def _fmt(x: float) -> str:
    """Short text of a bound: whole numbers without '.0', others without float noise."""
    x = round(float(x), 10)
    return str(int(x)) if x.is_integer() else np.format_float_positional(x, trim="-")


def _is_whole(x: object) -> bool:
    try:
        return float(x).is_integer()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def _as_number(x: object, what: str, name: str) -> float:
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"interval hierarchy{_where(name)}: {what} must be a number, "
                         f"got {x!r}") from None


def _distinct_numbers(values: Iterable[object], name: str) -> np.ndarray:
    arr = _unique(values)
    if arr.dtype.kind in "iuf":
        numbers = arr.astype(np.float64)
    else:
        numbers = pd.to_numeric(pd.Series(arr, dtype=object), errors="coerce").to_numpy(
            dtype=np.float64)
        bad = np.isnan(numbers) & pd.notna(arr)
        if bad.any():
            shown = ", ".join(map(repr, arr[bad][:5].tolist()))
            raise InputError(
                f"interval hierarchy{_where(name)} needs numbers, got {shown}; build a "
                f"grouping or masking hierarchy for text columns")
    numbers = numbers[~np.isnan(numbers)]  # missing values are not leaves
    if not np.all(np.isfinite(numbers)):
        raise InputError(f"interval hierarchy{_where(name)}: values must be finite "
                         f"(found inf)")
    if len(numbers) == 0:
        raise InputError(f"interval hierarchy{_where(name)}: no values given")
    return np.unique(numbers)


def _native(distinct: np.ndarray) -> list[object]:
    """Whole floats as ints so leaf text is '3', exactly as ``_leaf_text(3.0)`` gives."""
    return [int(v) if float(v).is_integer() else float(v) for v in distinct]


# --------------------------------------------------------------------------- masking


def masking_hierarchy(
    values: Iterable[object],
    *,
    levels: int | None = None,
    mask_char: str = "*",
    root: str = "*",
    name: str = "",
) -> Hierarchy:
    """Mask codes (zip codes, phone prefixes) from the right, one character per level.

    ``80123 -> 8012* -> 801** -> 80*** -> 8**** -> *****``. The prefix is what carries
    meaning in such codes, so it is kept longest. ``levels`` caps the number of masking
    levels (``levels=2``: ``80123 -> 8012* -> 801** -> *``).

    Values of different lengths are masked independently (never padded: a leaf must stay
    the value itself, so ``'2139'`` cannot become ``'02139'``). A shorter value stays fully
    masked once it is (``***``) while longer ones continue, and a final ``root`` joins the
    lengths. A fully masked label therefore still shows the value's length; pad the codes
    to one length first if that matters. When all values have one length and every
    character gets masked, the fully masked string is the root.
    """
    if len(mask_char) != 1:
        raise InputError(f"masking hierarchy{_where(name)}: mask_char must be one character, "
                         f"got {mask_char!r}")
    root = _check_root(root, name)
    leaves = [v for v in (_leaf_text(x) for x in _unique(values, drop_missing=True)) if v]
    leaves = sorted(set(leaves))
    if not leaves:
        raise InputError(f"masking hierarchy{_where(name)}: no values given")
    lengths = np.array([len(v) for v in leaves])
    max_len = int(lengths.max())
    if levels is None:
        levels = max_len
    elif not _is_whole(levels) or levels < 1:
        raise InputError(f"masking hierarchy{_where(name)}: levels must be a whole number "
                         f">= 1, got {levels!r}")
    levels = min(int(levels), max_len)
    rows = []
    for leaf in leaves:
        row = [leaf]
        for k in range(1, levels + 1):
            keep = max(len(leaf) - k, 0)
            row.append(leaf[:keep] + mask_char * (len(leaf) - keep))
        rows.append(row)
    single_top = len({row[-1] for row in rows}) == 1 and rows[0][-1].strip(mask_char) == ""
    if not single_top:
        rows = [[*row, root] for row in rows]
    return Hierarchy(rows, name=name)


# --------------------------------------------------------------------------- dates

#: Levels a date hierarchy can have, finest first, with how each labels a date.
DATE_LEVELS: dict[str, str] = {
    "month": "2021-03",
    "quarter": "2021-Q1",
    "year": "2021",
    "decade": "2020s",
    "century": "2000-2099",
}


def date_hierarchy(
    values: Iterable[object],
    levels: Sequence[str] = ("month", "year", "decade"),
    *,
    root: str = "*",
    name: str = "",
) -> Hierarchy:
    """Day -> month -> year -> decade -> ``*`` (levels selectable from :data:`DATE_LEVELS`).

    A leaf must be the text :meth:`Hierarchy.leaf_codes` looks up for the value, so text
    values are kept as given (``'03/04/2021'`` stays the leaf; it is parsed, month first,
    only to find its month and year), while ``datetime64``/``Timestamp``/``date`` values
    become ISO text: ``2021-03-04``, or ``2021-03-04T10:30:00`` when they have a time of
    day. Timezones are dropped (local wall time is kept).
    """
    levels = list(levels)
    order = list(DATE_LEVELS)
    unknown = [lv for lv in levels if lv not in DATE_LEVELS]
    if unknown:
        raise InputError(f"date hierarchy{_where(name)}: unknown level {unknown[0]!r}; "
                         f"choose from {', '.join(order)}")
    ranks = [order.index(lv) for lv in levels]
    if ranks != sorted(set(ranks)):
        raise InputError(f"date hierarchy{_where(name)}: levels must go from fine to coarse "
                         f"without repeats ({', '.join(order)}), got {levels}")
    root = _check_root(root, name)
    raw = _unique(values, drop_missing=True)
    if len(raw) == 0:
        raise InputError(f"date hierarchy{_where(name)}: no values given")
    days, leaf = _parse_dates(raw, name)
    order_ = np.lexsort((leaf, days))
    days, leaf = days[order_], leaf[order_]
    keep = np.ones(len(leaf), dtype=bool)  # equal text from values of different types
    keep[1:] = leaf[1:] != leaf[:-1]
    days, leaf = days[keep], leaf[keep]
    columns = [leaf]
    month = days.astype("datetime64[M]")
    year = month.astype("datetime64[Y]").astype(np.int64) + 1970
    for lv in levels:
        if lv == "month":
            labels = np.datetime_as_string(month)
        else:  # few distinct years: label each once, then index
            years, inverse = np.unique(year, return_inverse=True)
            if lv == "quarter":
                quarter = (month.astype(np.int64) % 12) // 3 + 1
                keys, inverse = np.unique(year * 10 + quarter, return_inverse=True)
                names = [f"{k // 10}-Q{k % 10}" for k in keys]
            elif lv == "year":
                names = [str(y) for y in years]
            elif lv == "decade":
                names = [f"{y // 10 * 10}s" for y in years]
            else:
                names = [f"{y // 100 * 100}-{y // 100 * 100 + 99}" for y in years]
            labels = np.array(names, dtype=object)[inverse.reshape(-1)]
        columns.append(np.asarray(labels, dtype=object))
    columns.append(np.full(len(leaf), root, dtype=object))
    return Hierarchy(np.stack(columns, axis=1).tolist(), name=name)


def _parse_dates(raw: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(datetime64[s] per value, leaf text per value)``."""
    if raw.dtype.kind == "M":
        days = raw.astype("datetime64[s]")
        is_text = np.zeros(len(raw), dtype=bool)
    else:
        series = pd.Series(raw, dtype=object)
        is_text = series.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
        text = series.where(~is_text, series.astype(str).str.strip())
        parsed = pd.to_datetime(text, errors="coerce", format="ISO8601")
        if parsed.isna().any():  # not all ISO: parse each distinct value on its own
            parsed = pd.to_datetime(text, errors="coerce", format="mixed")
        bad = parsed.isna().to_numpy()
        if bad.any():
            shown = ", ".join(map(repr, raw[bad][:5].tolist()))
            raise InputError(f"date hierarchy{_where(name)}: cannot read {shown} as dates; "
                             f"use ISO dates (2024-01-31)")
        if getattr(parsed.dt, "tz", None) is not None:
            parsed = parsed.dt.tz_localize(None)
        days = parsed.to_numpy().astype("datetime64[s]")
        raw = text.to_numpy(dtype=object)
    midnight = days == days.astype("datetime64[D]")
    iso = np.where(midnight, np.datetime_as_string(days, unit="D"),
                   np.datetime_as_string(days, unit="s")).astype(object)
    return days, np.where(is_text, raw, iso).astype(object)


# --------------------------------------------------------------------------- grouping


def grouping_hierarchy(
    mapping_levels: Sequence[Mapping[object, object]],
    values: Iterable[object] | None = None,
    *,
    root: str = "*",
    name: str = "",
) -> Hierarchy:
    """A hierarchy from one dict per level: level 1 maps values to groups, level 2 maps
    those groups to coarser groups, and so on; ``root`` tops it (unless the last level
    already maps everything to it).

    ``[{"Bachelors": "Higher", "HS-grad": "Secondary"}, {"Higher": "Education",
    "Secondary": "Education"}]``. Each label is looked up in the next level, so a group
    missing there, or a key there that no group below produces (a typo, most likely), is an
    error. ``values``, when given, must all be keys of the first level; with no levels at
    all they give a flat hierarchy (value -> ``*``).
    """
    root = _check_root(root, name)
    if isinstance(mapping_levels, Mapping):
        mapping_levels = [mapping_levels]
    levels = []
    for i, level in enumerate(mapping_levels, start=1):
        if not isinstance(level, Mapping):
            raise InputError(f"grouping hierarchy{_where(name)}: level {i} must be a dict "
                             f"from labels to groups, got {type(level).__name__}")
        converted: dict[str, str] = {}
        for key, group in level.items():
            k, g = _leaf_text(key), _leaf_text(group)
            if not k or not g:
                raise InputError(f"grouping hierarchy{_where(name)}: level {i} has an empty "
                                 f"label ({key!r}: {group!r})")
            if k in converted and converted[k] != g:
                raise InputError(f"grouping hierarchy{_where(name)}: level {i} maps {k!r} to "
                                 f"both {converted[k]!r} and {g!r}")
            converted[k] = g
        levels.append(converted)
    given = None if values is None else sorted(
        {v for v in (_leaf_text(x) for x in _unique(values, drop_missing=True)) if v})
    if not levels:
        if not given:
            raise InputError(f"grouping hierarchy{_where(name)}: give at least one level "
                             f"(a dict from values to groups) or the values")
        return Hierarchy([[v, root] for v in given], name=name)
    leaves = list(levels[0])
    if given is not None:
        missing = [v for v in given if v not in levels[0]]
        if missing:
            shown = ", ".join(map(repr, missing[:10]))
            raise InputError(f"grouping hierarchy{_where(name)}: values {shown} have no group "
                             f"in level 1; add them to the first dict")
    columns = [leaves, [levels[0][v] for v in leaves]]
    for i, level in enumerate(levels[1:], start=2):
        below = columns[-1]
        produced = set(below)
        missing = sorted(g for g in produced if g not in level)
        if missing:
            shown = ", ".join(map(repr, missing[:10]))
            raise InputError(f"grouping hierarchy{_where(name)}: level {i} has no group for "
                             f"{shown} (from level {i - 1}); add them to dict {i}")
        unused = sorted(k for k in level if k not in produced)
        if unused:
            shown = ", ".join(map(repr, unused[:10]))
            raise InputError(f"grouping hierarchy{_where(name)}: level {i} maps {shown}, which "
                             f"no group of level {i - 1} is called; check the spelling")
        columns.append([level[g] for g in below])
    if set(columns[-1]) != {root}:
        columns.append([root] * len(leaves))
    return Hierarchy([list(row) for row in zip(*columns, strict=True)], name=name)


# --------------------------------------------------------------------------- helpers


def _unique(values: Iterable[object], drop_missing: bool = False) -> np.ndarray:
    """Distinct values, in one hash pass (pandas) rather than per row in Python."""
    if isinstance(values, str):
        raise InputError(f"expected a collection of values, got the string {values!r}")
    if isinstance(values, np.ndarray):
        arr = np.asarray(pd.unique(values.ravel()))
    elif isinstance(values, pd.Series | pd.Index):
        arr = np.asarray(pd.unique(values))
    else:
        arr = np.asarray(pd.unique(pd.Series(list(values), dtype=object)))
    if drop_missing:
        arr = arr[pd.notna(arr)]
    return arr
