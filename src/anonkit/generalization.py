"""Turning equivalence classes into released values: one label per class and QI.

Given the rows of each class (as consecutive runs of an ordering of the table), every
quasi-identifier gets one released value per class, in one of these forms:

- ``range``: numeric / date / ordinal interval ``[lo-hi]`` (the value itself when lo == hi);
- ``set``: the set of values present in the class, ``{a,b}``;
- ``hierarchy``: the label of the lowest common ancestor in the column's hierarchy;
- ``prefix``: the common prefix of the values, the rest masked: ``801**``;
- ``mean`` / ``median``: microaggregation of a numeric column (values replaced by one number).

Labels are built once per class, never per row; the released column is a Categorical whose
codes are the class ids. Each form also reports its information loss per class (normalised
certainty penalty, NCP, in [0, 1]), which the utility metrics aggregate.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

import numpy as np
import pandas as pd

from anonkit.errors import InputError
from anonkit.table import EncodedColumn, Kind

MISSING_LABEL = "missing"


class Form(StrEnum):
    RANGE = "range"
    SET = "set"
    HIERARCHY = "hierarchy"
    PREFIX = "prefix"
    MEAN = "mean"
    MEDIAN = "median"


def default_form(column: EncodedColumn) -> Form:
    """Hierarchy when one is given, else a range for ordered kinds and a set otherwise."""
    if column.hierarchy is not None:
        return Form.HIERARCHY
    return Form.RANGE if column.kind.is_ordered else Form.SET


def validate_form(column: EncodedColumn, form: Form | str) -> Form:
    try:
        form = Form(form)
    except ValueError:
        raise InputError(
            f"unknown generalization {form!r} for column {column.name!r}; use one of "
            f"{', '.join(f.value for f in Form)}") from None
    if form is Form.HIERARCHY and column.hierarchy is None:
        raise InputError(f"column {column.name!r}: generalization 'hierarchy' needs a "
                         f"hierarchy (--hierarchy {column.name}=FILE)")
    if form in (Form.MEAN, Form.MEDIAN, Form.RANGE) and not column.kind.is_ordered:
        raise InputError(f"column {column.name!r} is categorical: generalization {form.value!r}"
                         f" needs an ordered column; use 'set', 'prefix' or 'hierarchy'")
    if form in (Form.MEAN, Form.MEDIAN) and column.kind is not Kind.NUMERIC:
        raise InputError(f"column {column.name!r}: {form.value!r} needs a numeric column")
    return form


@dataclass(frozen=True)
class ColumnGeneralization:
    """One quasi-identifier's released value in every class."""

    column: str
    form: Form
    labels: np.ndarray  # (n_classes,) released value per class (str, or float for mean/median)
    loss: np.ndarray  # (n_classes,) NCP in [0, 1]
    lo: np.ndarray  # (n_classes,) smallest code in the class
    hi: np.ndarray  # (n_classes,) largest code in the class

    @cached_property
    def label_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """(per class, the index of its label in the second array; the distinct labels):
        classes with the same label have the same index."""
        codes, distinct = pd.factorize(self.labels)  # hashing: no sort of strings
        return codes, np.asarray(distinct)

    def released(self, class_ids: np.ndarray) -> pd.Series | pd.Categorical:
        """The released column: per row, its class's label (a Categorical, no row strings)."""
        if self.form in (Form.MEAN, Form.MEDIAN):
            return pd.Series(np.asarray(self.labels, dtype=np.float64)[class_ids])
        codes, categories = self.label_codes
        narrow = codes.astype(np.int32 if len(categories) >= 2**15 else np.int16)
        return pd.Categorical.from_codes(narrow[class_ids], categories=categories)


def generalize_column(column: EncodedColumn, order: np.ndarray, starts: np.ndarray,
                      form: Form) -> ColumnGeneralization:
    """Generalize ``column`` for classes laid out as runs of ``order``.

    ``order`` lists row indices class by class; class ``c`` is
    ``order[starts[c]:starts[c + 1]]`` (the last runs to the end).
    """
    grouped = column.codes[order]
    lo = np.minimum.reduceat(grouped, starts)
    hi = np.maximum.reduceat(grouped, starts)
    if form is Form.RANGE:
        labels, loss = _ranges(column, grouped, starts, lo, hi)
    elif form is Form.SET:
        labels, loss = _sets(column, grouped, starts)
    elif form is Form.HIERARCHY:
        labels, loss = _hierarchy(column, grouped, starts, lo, hi)
    elif form is Form.PREFIX:
        labels, loss = _prefixes(column, grouped, starts)
    else:
        labels, loss = _aggregate(column, grouped, starts, form)
    return ColumnGeneralization(column.name, form, labels, loss, lo, hi)


def _class_of_position(starts: np.ndarray, n: int) -> np.ndarray:
    sizes = np.diff(np.append(starts, n))
    return np.repeat(np.arange(len(starts)), sizes)


def _ranges(column: EncodedColumn, grouped: np.ndarray, starts: np.ndarray, lo: np.ndarray,
            hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    has_missing = np.zeros(len(starts), dtype=bool)
    if column.missing_code >= 0:
        # the missing code is the largest: the range proper ends at the largest other code
        is_missing = grouped == column.missing_code
        has_missing = np.logical_or.reduceat(is_missing, starts)
        masked = np.where(is_missing, -1, grouped)
        hi = np.maximum.reduceat(masked, starts)
        lo = np.where(lo == column.missing_code, -1, lo)
    mags = column.magnitudes
    all_missing = hi < 0
    safe_lo = np.where(all_missing, 0, lo)
    safe_hi = np.where(all_missing, 0, hi)
    width = mags[safe_hi] - mags[safe_lo]
    span = column.domain_span
    loss = np.where(all_missing, 0.0, width / span if span > 0 else 0.0)
    labels = _value_text(column, safe_lo)
    many = safe_lo != safe_hi
    if many.any():
        low, high = labels[many].astype(str), _value_text(column, safe_hi[many]).astype(str)
        # "[20-29]" unless a bound holds a "-" itself (dates, negatives, 1e-05)
        has_dash = (np.char.find(low, "-") >= 0).any() or (np.char.find(high, "-") >= 0).any()
        sep = ", " if column.kind is Kind.DATE or has_dash else "-"
        labels[many] = np.char.add(np.char.add(np.char.add("[", low), sep),
                                   np.char.add(high, "]")).astype(object)
    if has_missing.any():
        labels[all_missing] = MISSING_LABEL
        mixed = has_missing & ~all_missing
        labels[mixed] = [f"{lab} or {MISSING_LABEL}" for lab in labels[mixed]]
        loss = np.where(mixed, 1.0, loss)
    return labels, loss


#: up to this many distinct values a class's set is a bitmask over the codes (one uint64
#: per 64 values and class); above, sets are found by sorting (class, code) pairs
SET_BITMASK_LIMIT = 256


def _sets(column: EncodedColumn, grouped: np.ndarray,
          starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The set of values present in each class. Many classes share a set, so each distinct
    set is labelled once: classes are keyed by a bitmask of their codes."""
    n_classes = len(starts)
    card = column.cardinality
    if card > SET_BITMASK_LIMIT:
        return _sets_by_sorting(column, grouped, starts)
    words = (card + 63) // 64
    masks = np.empty((n_classes, words), dtype=np.uint64)
    bit = np.left_shift(np.uint64(1), (grouped & 63).astype(np.uint64))
    word_of = grouped >> 6
    for w in range(words):
        masks[:, w] = np.bitwise_or.reduceat(np.where(word_of == w, bit, np.uint64(0)), starts)
    if words == 1:  # a 1-D unique is ~30x faster than a row-wise one
        distinct_words, set_of_class = np.unique(masks[:, 0], return_inverse=True)
        distinct_masks = distinct_words[:, None]
    else:
        distinct_masks, set_of_class = np.unique(masks, axis=0, return_inverse=True)
    set_of_class = set_of_class.reshape(-1)
    set_labels = np.empty(len(distinct_masks), dtype=object)
    set_sizes = np.empty(len(distinct_masks), dtype=np.int64)
    text = _value_text(column)
    for i, row in enumerate(distinct_masks):
        bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:card]
        members = text[np.flatnonzero(bits)]
        set_sizes[i] = len(members)
        set_labels[i] = members[0] if len(members) == 1 else "{" + ",".join(members) + "}"
    distinct = set_sizes[set_of_class]
    loss = (distinct - 1) / (card - 1) if card > 1 else np.zeros(n_classes)
    return set_labels[set_of_class], loss


def _sets_by_sorting(column: EncodedColumn, grouped: np.ndarray,
                     starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow as pa
    import pyarrow.compute as pc

    n_classes = len(starts)
    card = column.cardinality
    cls = _class_of_position(starts, len(grouped))
    # classes are runs of ascending ids already: a stable sort only orders each run
    keys = np.sort(cls * card + grouped.astype(np.int64), kind="stable")
    first = np.concatenate([[True], keys[1:] != keys[:-1]]) if len(keys) else keys
    keys = keys[first]
    key_class = keys // card
    key_code = keys % card
    distinct = np.bincount(key_class, minlength=n_classes)
    loss = (distinct - 1) / (card - 1) if card > 1 else np.zeros(n_classes)
    # "{a,b,c}" per class, joined in Arrow: no Python string per member
    member_offsets = np.concatenate([[0], np.cumsum(distinct)]).astype(np.int32)
    members = pa.array(_value_text(column).astype(str)).take(pa.array(key_code))
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(member_offsets), members), ",")
    braced = pc.binary_join_element_wise("{", joined, "}", "")
    labels = pc.if_else(pa.array(distinct == 1), joined, braced)
    return labels.to_numpy(zero_copy_only=False), loss


def _hierarchy(column: EncodedColumn, grouped: np.ndarray, starts: np.ndarray,
               lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hierarchy = column.hierarchy
    assert hierarchy is not None and column.hierarchy_leaf is not None
    n_classes = len(starts)
    leaf_of_code = column.hierarchy_leaf
    if column.hierarchy_is_contiguous:
        # the missing code (leaf -1) is the largest code: a class holds it iff hi is it
        first_leaf = leaf_of_code[lo]
        last_leaf = leaf_of_code[hi]
        all_missing = first_leaf < 0
        mixed = (last_leaf < 0) & ~all_missing
        last_leaf = np.where(mixed, first_leaf, last_leaf)
        first_leaf = np.maximum(first_leaf, 0)
        level = hierarchy.lowest_common_level_of_pairs(first_leaf, np.maximum(last_leaf, 0))
    else:
        leaf = leaf_of_code[grouped]
        missing = leaf < 0
        safe_leaf = np.where(missing, 0, leaf)
        level = hierarchy.lowest_common_level(safe_leaf, starts)
        all_missing = np.logical_and.reduceat(missing, starts)
        mixed = np.logical_or.reduceat(missing, starts) & ~all_missing
        first_leaf = safe_leaf[starts]
    # a class mixing missing and present values is generalized to the root
    level = np.where(mixed, hierarchy.height - 1, level)
    labels = hierarchy.labels[first_leaf, level].astype(object)
    labels[all_missing] = MISSING_LABEL
    under = hierarchy.subtree_sizes[first_leaf, level]
    n_leaves = len(hierarchy)
    loss = (under - 1) / (n_leaves - 1) if n_leaves > 1 else np.zeros(n_classes)
    loss = np.where(all_missing, 0.0, loss)
    return labels, loss


def _prefixes(column: EncodedColumn, grouped: np.ndarray,
              starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The common prefix of a set of strings is that of its alphabetically first and last
    member, so each class needs only its smallest and largest value in alphabetical order
    (codes are alphabetical unless a hierarchy orders them: rank them to be sure)."""
    if column.kind is not Kind.CATEGORICAL:
        raise InputError(f"column {column.name!r}: 'prefix' generalization needs a text column")
    text = _value_text(column).astype(str)
    alphabetical = np.argsort(text, kind="stable")
    rank = np.empty(len(text), dtype=np.int64)
    rank[alphabetical] = np.arange(len(text))
    ranks = rank[grouped]
    first = text[alphabetical[np.minimum.reduceat(ranks, starts)]]
    last = text[alphabetical[np.maximum.reduceat(ranks, starts)]]
    common = np.array([len(os.path.commonprefix([a, b])) for a, b in  # noqa: RUF071
                       zip(first, last, strict=True)], dtype=np.int64)
    labels = np.empty(len(starts), dtype=object)
    labels[:] = [a if a == b else a[:c] + "*" * (max(len(a), len(b)) - c)
                 for a, b, c in zip(first, last, common, strict=True)]
    # values a label covers: those sharing its prefix, a run in alphabetical order
    sorted_text = text[alphabetical]
    prefixes = np.array([a[:c] for a, c in zip(first, common, strict=True)], dtype=str)
    left = np.searchsorted(sorted_text, prefixes, side="left")
    right = np.searchsorted(sorted_text, np.char.add(prefixes, "\U0010ffff"), side="left")
    covered = np.where(first == last, 1, right - left)
    card = column.cardinality
    loss = (covered - 1) / (card - 1) if card > 1 else np.zeros(len(starts))
    return labels, loss


def _aggregate(column: EncodedColumn, grouped: np.ndarray, starts: np.ndarray,
               form: Form) -> tuple[np.ndarray, np.ndarray]:
    mags = column.magnitudes[grouped]
    if np.isnan(mags).any():
        raise InputError(f"column {column.name!r}: {form.value} generalization cannot take "
                         f"missing values; use 'range'")
    n_classes = len(starts)
    sizes = np.diff(np.append(starts, len(grouped)))
    if form is Form.MEAN:
        labels = np.add.reduceat(mags, starts) / sizes
    else:
        cls = _class_of_position(starts, len(grouped))
        order = np.lexsort((mags, cls))
        sorted_m = mags[order]
        lower = sorted_m[starts + (sizes - 1) // 2]
        upper = sorted_m[starts + sizes // 2]
        labels = (lower + upper) / 2
    width = np.maximum.reduceat(mags, starts) - np.minimum.reduceat(mags, starts)
    span = column.domain_span
    loss = width / span if span > 0 else np.zeros(n_classes)
    return labels.astype(np.float64), loss


def _value_text(column: EncodedColumn, codes: np.ndarray | None = None) -> np.ndarray:
    """Released text of the values at ``codes`` (default: every code): integers without
    '.0', dates as ISO days, the missing code as ``missing``. Vectorised: a numeric column
    may have a million distinct values."""
    if codes is None:
        codes = np.arange(column.cardinality)
    elif len(codes) > column.cardinality:  # format each value once, then look it up
        return _value_text(column)[codes]
    codes = np.asarray(codes)
    out = np.full(len(codes), MISSING_LABEL, dtype=object)
    present = codes != column.missing_code if column.missing_code >= 0 else slice(None)
    values = column.values[codes[present]]
    if column.kind is Kind.DATE:
        out[present] = pd.to_datetime(pd.Series(values)).dt.strftime("%Y-%m-%d").to_numpy(
            dtype=object)
    elif column.kind is Kind.NUMERIC:
        # exact text: a label must cover the values it stands for, so no rounding
        raw = np.asarray(values)
        if raw.dtype.kind in "iu":
            out[present] = raw.astype(str)
        else:
            f = raw.astype(np.float64)
            # whole numbers print without ".0" where float64 holds them exactly
            whole = np.isfinite(f) & (f == np.round(f)) & (np.abs(f) < 2.0**53)
            text = np.empty(len(f), dtype=object)
            text[whole] = f[whole].astype(np.int64).astype(str)
            text[~whole] = [repr(float(x)) for x in f[~whole]]  # shortest round-trip
            out[present] = text
    else:
        out[present] = np.asarray(values).astype(str)
    return out
