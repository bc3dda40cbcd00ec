"""Turning equivalence classes into released values: one label per class and QI.

Given the rows of each class (as consecutive runs of an ordering of the table), every
quasi-identifier gets one released value per class, in one of these forms:

- ``range``: numeric / date / ordinal interval ``[lo-hi]`` (the value itself when lo == hi);
- ``set``: the set of values present in the class, ``{a,b}``;
- ``hierarchy``: the label of the lowest common ancestor in the column's hierarchy;
- ``prefix``: the common prefix of the values, the rest masked: ``801**``;
- ``mean`` / ``median``: microaggregation of a numeric column (values replaced by one number).

Labels are written, and read back, by :mod:`anonkit.labels` (:func:`parse_label`,
:func:`covers`): a class whose values are all missing is released as an empty field; the
bare word ``missing`` inside a label (``{a,missing}``, ``[20-29] or missing``) stands for a
missing cell, and a value that could be misread is quoted as in CSV: ``{"a,b",c}``,
``{"missing",x}``.

Labels are built once per distinct label, never per row: classes are keyed by what their
label depends on (lowest and highest code, set of codes, ...) and each distinct key is
labelled once; classes with equal labels get equal label codes, and the released column is a
Categorical of those. Each form also reports its information loss per class (normalised
certainty penalty, NCP, in [0, 1]), which the utility metrics aggregate.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import pandas as pd

from anonkit._util.grouping import first_appearances
from anonkit._util.numbers import exact_numbers
from anonkit._util.parallel import on_all_cores
from anonkit.data.encoding import EncodedColumn, code_type_for
from anonkit.data.schema import Kind
from anonkit.errors import InputError
from anonkit.labels import MISSING_LABEL, or_missing, quote_alone, range_labels, set_labels
from anonkit.partition import Partition, runs


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
    #: (per class, the index of its label in the second array; the distinct labels, in
    #: order of first appearance): classes with the same label have the same index
    #: (a class of missing cells only has index -1: released as an empty field)
    label_codes: tuple[np.ndarray, np.ndarray] = field(repr=False)

    def released(self, class_ids: np.ndarray) -> pd.Series | pd.Categorical:
        """The released column: per row, its class's label (a Categorical, no row strings)."""
        if self.form in (Form.MEAN, Form.MEDIAN):
            return pd.Series(np.asarray(self.labels, dtype=np.float64)[class_ids])
        codes, categories = self.label_codes
        # codes in the type pandas keeps them in, so they are not converted once more
        narrow = codes.astype(np.int8 if len(categories) < 2**7 - 1 else
                              np.int16 if len(categories) < 2**15 - 1 else np.int32)
        return pd.Categorical.from_codes(narrow[class_ids], categories=categories,
                                         validate=False)


def generalize_column(column: EncodedColumn, order: np.ndarray, starts: np.ndarray,
                      form: Form) -> ColumnGeneralization:
    """Generalize ``column`` for classes laid out as runs of ``order``.

    ``order`` lists row indices class by class; class ``c`` is
    ``order[starts[c]:starts[c + 1]]`` (the last runs to the end).
    """
    # codes in the narrowest type that holds them (as encode gives them): less to gather
    grouped = column.codes.astype(code_type_for(column.cardinality), copy=False).take(order)
    code_type = column.codes.dtype
    if form is Form.SET:  # a class's set of values gives its smallest and largest
        label_codes, loss, lo, hi = _sets(column, grouped, starts)
    else:
        lo = np.minimum.reduceat(grouped, starts)
        hi = np.maximum.reduceat(grouped, starts)
        if form is Form.RANGE:
            label_codes, loss = _ranges(column, grouped, starts, lo, hi)
        elif form is Form.HIERARCHY:
            label_codes, loss = _hierarchy(column, grouped, starts, lo, hi)
        elif form is Form.PREFIX:
            label_codes, loss = _prefixes(column, grouped, starts, lo, hi)
        else:  # numbers: labels kept as computed (0.0 and -0.0 are one label, two values)
            labels, loss = _aggregate(column, grouped, starts, form)
            codes, distinct = pd.factorize(labels)
            return ColumnGeneralization(column.name, form, labels, loss, lo.astype(code_type),
                                        hi.astype(code_type), (codes, np.asarray(distinct)))
    codes, distinct = label_codes
    labels = np.where(codes >= 0, distinct[np.maximum(codes, 0)], None) if len(distinct) else \
        np.full(len(codes), None, dtype=object)
    return ColumnGeneralization(column.name, form, labels, loss,
                                lo.astype(code_type), hi.astype(code_type), label_codes)


def generalize_columns(columns: Sequence[EncodedColumn], forms: Mapping[str, Form],
                       partition: Partition
                       ) -> tuple[list[ColumnGeneralization],
                                  dict[str, pd.Series | pd.Categorical]]:
    """Every column generalized over the classes of ``partition``
    (:func:`generalize_column`, each in its form), in their order; and each column as
    released, row by row of the table (:meth:`ColumnGeneralization.released`), by name."""
    class_ids = partition.class_ids()

    def generalize(column: EncodedColumn) -> tuple[ColumnGeneralization,
                                                   pd.Series | pd.Categorical]:
        g = generalize_column(column, partition.order, partition.starts, forms[column.name])
        return g, g.released(class_ids)

    done = on_all_cores(generalize, columns, cost=[c.cardinality for c in columns])
    return [g for g, _ in done], {g.column: released for g, released in done}


def _labels_by_key(keys: np.ndarray,
                   label_of: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Label codes (see :attr:`ColumnGeneralization.label_codes`) when a class's label
    depends on an integer key only (e.g. its lowest and highest code): each distinct key,
    taken in order of first appearance, is labelled once by ``label_of``. Keys whose
    labels coincide are merged, so codes are equal exactly when labels are."""
    key_of_class, distinct_keys = pd.factorize(keys)
    return _merged(key_of_class, label_of(distinct_keys))


def _merged(key_of_class: np.ndarray, key_labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per class the index of its label, from per class the index of its key and the keys'
    labels, keys in order of first appearance; keys with equal labels become one."""
    label_of_key, distinct = pd.factorize(key_labels)
    return label_of_key[key_of_class], np.asarray(distinct, dtype=object)


def _class_of_position(starts: np.ndarray, n: int) -> np.ndarray:
    sizes = np.diff(np.append(starts, n))
    return np.repeat(np.arange(len(starts)), sizes)


def _ranges(column: EncodedColumn, grouped: np.ndarray, starts: np.ndarray, lo: np.ndarray,
            hi: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    has_missing = np.zeros(len(starts), dtype=bool)
    if column.missing_code >= 0:
        # the missing code is the largest: a class holds it when its largest code is it,
        # and the range proper ends at the largest other code
        has_missing = hi == column.missing_code
        if has_missing.any():
            masked = np.where(grouped == column.missing_code, -1, grouped)
            hi = np.maximum.reduceat(masked, starts)
        lo = np.where(lo == column.missing_code, -1, lo)
    all_missing = hi < 0
    safe_lo = np.where(all_missing, 0, lo).astype(np.int64)
    safe_hi = np.where(all_missing, 0, hi).astype(np.int64)
    mags = column.magnitudes
    width = mags[safe_hi] - mags[safe_lo]
    span = column.domain_span
    loss = np.where(all_missing, 0.0, width / span if span > 0 else 0.0)
    mixed = has_missing & ~all_missing
    loss = np.where(mixed, 1.0, loss)
    # a label depends on the class's lowest and highest code and whether it misses values
    card = column.cardinality
    state = np.where(all_missing, 2, mixed.astype(np.int64))

    def label_of(keys: np.ndarray) -> np.ndarray:
        key_lo, key_hi, key_state = keys // (3 * card), keys // 3 % card, keys % 3
        labels = quote_alone(_value_text(column, key_lo))
        many = key_lo != key_hi
        if many.any():
            labels[many] = range_labels(_value_text(column, key_lo[many]),
                                        _value_text(column, key_hi[many]),
                                        dates=column.kind is Kind.DATE)
        labels[key_state == 2] = None
        labels[key_state == 1] = or_missing(labels[key_state == 1])
        return labels

    return _labels_by_key((safe_lo * card + safe_hi) * 3 + state, label_of), loss


#: up to this many distinct values a class's set is a bitmask over the codes (one uint64
#: per 64 values and class); above, sets are found by sorting (class, code) pairs
SET_BITMASK_LIMIT = 256


def _sets(column: EncodedColumn, grouped: np.ndarray, starts: np.ndarray
          ) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """The set of values present in each class: (label codes, loss, lo, hi). Many classes
    share a set, so each distinct set is labelled once."""
    card = column.cardinality
    if card > SET_BITMASK_LIMIT:
        set_of_class, member, set_sizes = _distinct_sets_by_sorting(grouped, starts, card)
    else:
        set_of_class, member, set_sizes = _distinct_sets_by_bitmask(grouped, starts, card)
    labels = _set_labels(column, member, set_sizes)
    # distinct sets have distinct labels, except a set of the missing cell alone: no label
    label_codes = _merged(set_of_class, labels)
    distinct = set_sizes[set_of_class]
    loss = (distinct - 1) / (card - 1) if card > 1 else np.zeros(len(starts))
    # smallest and largest member: members are in code order
    last_member = np.cumsum(set_sizes) - 1
    lo = member[last_member - set_sizes + 1][set_of_class]
    hi = member[last_member][set_of_class]
    return label_codes, loss, lo, hi


def _distinct_sets_by_bitmask(grouped: np.ndarray, starts: np.ndarray, card: int
                              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(per class, its set; the members of every set, set after set, in code order; the
    sizes of the sets), sets numbered in order of first appearance. Classes are keyed by a
    bitmask of their codes."""
    masks = _bitmasks(grouped, starts, card)
    if masks.shape[1] == 1:  # a 1-D factorize is much faster than a row-wise unique
        set_of_class, distinct_masks = pd.factorize(masks[:, 0])
        distinct_masks = distinct_masks[:, None]
    else:
        distinct_masks, set_of_class = np.unique(masks, axis=0, return_inverse=True)
        set_of_class, first_order = pd.factorize(set_of_class.reshape(-1))
        distinct_masks = distinct_masks[first_order]
    bits = np.unpackbits(distinct_masks.view(np.uint8), axis=1, bitorder="little")[:, :card]
    set_of_member, member = np.nonzero(bits)
    return set_of_class, member, np.bincount(set_of_member, minlength=len(distinct_masks))


def _bitmasks(grouped: np.ndarray, starts: np.ndarray, card: int) -> np.ndarray:
    """``(n_classes, words)`` uint64: bit ``i`` of a class's mask is set when it holds code
    ``i``. With one word, the bits are built in the narrowest unsigned type."""
    words = (card + 63) // 64
    if words == 1:
        bit_type = np.uint8 if card <= 8 else np.uint16 if card <= 16 else \
            np.uint32 if card <= 32 else np.uint64
        bit = grouped.astype(bit_type)
        np.left_shift(bit_type(1), bit, out=bit)
        return np.bitwise_or.reduceat(bit, starts).astype(np.uint64)[:, None]
    masks = np.empty((len(starts), words), dtype=np.uint64)
    bit = np.left_shift(np.uint64(1), (grouped & 63).astype(np.uint64))
    word_of = grouped >> 6
    for w in range(words):
        masks[:, w] = np.bitwise_or.reduceat(np.where(word_of == w, bit, np.uint64(0)), starts)
    return masks


def _distinct_sets_by_sorting(grouped: np.ndarray, starts: np.ndarray, card: int
                              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_distinct_sets_by_bitmask` for many distinct values: the (class, code) pairs
    present, sorted, give each class's members; classes with equal fingerprints of their
    members have the same set once their members are checked to be equal."""
    n_classes = len(starts)
    key_type = np.uint32 if n_classes * card < 2**32 else np.uint64
    # one key per row, class * card + code; sorted, each class's codes are a run in order
    keys = np.repeat(np.arange(n_classes, dtype=key_type) * key_type(card),
                     np.diff(np.append(starts, len(grouped))))
    keys += grouped.view(f"u{grouped.itemsize}")  # (codes are >= 0: the same numbers)
    keys.sort()
    new = np.empty(len(keys), dtype=bool)
    new[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=new[1:])
    # every class's codes, class after class, in code order (classes keep their rows)
    sizes = np.add.reduceat(new, starts, dtype=np.int64)
    member = (np.compress(new, keys) % key_type(card)).astype(grouped.dtype)
    first_member = np.cumsum(sizes) - sizes
    for seed in itertools.count():
        set_of_class, _, first_class = first_appearances(
            np.add.reduceat(_code_weights(card, seed)[member], first_member))
        # sets are equal exactly when the fingerprints are, unless by some accident
        # two sets' sums coincide: check every class against its set's first class
        same_as = first_class[set_of_class]
        again = np.flatnonzero(same_as != np.arange(n_classes))
        if (sizes[again] == sizes[same_as[again]]).all() and (
                member[runs(first_member[again], sizes[again])]
                == member[runs(first_member[same_as[again]], sizes[again])]).all():
            break
    set_sizes = sizes[first_class]
    return set_of_class, member[runs(first_member[first_class], set_sizes)], set_sizes


def _code_weights(card: int, seed: int) -> np.ndarray:
    """A random 64-bit number per code: a set's fingerprint is their sum over its members
    (wrapping around)."""
    return np.random.default_rng(seed).integers(0, 2**64, card, dtype=np.uint64)


def _set_labels(column: EncodedColumn, member: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per set, its label (:func:`anonkit.labels.set_labels`), from the members' codes set
    after set and the sets' sizes."""
    return set_labels(_value_text(column), column.missing_code, member, sizes)


def _hierarchy(column: EncodedColumn, grouped: np.ndarray, starts: np.ndarray,
               lo: np.ndarray, hi: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray],
                                                         np.ndarray]:
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
    under = hierarchy.subtree_sizes[first_leaf, level]
    n_leaves = len(hierarchy)
    loss = (under - 1) / (n_leaves - 1) if n_leaves > 1 else np.zeros(n_classes)
    loss = np.where(all_missing, 0.0, loss)

    def label_of(keys: np.ndarray) -> np.ndarray:  # key: (leaf, level), -1 if all missing
        safe = np.maximum(keys, 0)
        labels = hierarchy.labels[safe // hierarchy.height, safe % hierarchy.height]
        labels = labels.astype(object)  # a node is written as it is: its hierarchy reads it
        labels[keys < 0] = None
        return labels

    keys = np.where(all_missing, -1, first_leaf.astype(np.int64) * hierarchy.height + level)
    return _labels_by_key(keys, label_of), loss


def _prefixes(column: EncodedColumn, grouped: np.ndarray, starts: np.ndarray,
              lo: np.ndarray, hi: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray],
                                                       np.ndarray]:
    """The common prefix of a set of strings is that of its alphabetically first and last
    member, so each class needs only its smallest and largest value in alphabetical order
    (codes are alphabetical unless a hierarchy orders them: rank them to be sure). Each
    distinct (first, last, with a missing cell) triple is labelled once. A missing cell is no
    text to share a prefix with: the label says `` or missing`` instead, and a class of
    missing cells only is an empty field. A label that would read as another form is quoted
    (:func:`anonkit.labels.quote_alone`)."""
    if column.kind is not Kind.CATEGORICAL:
        raise InputError(f"column {column.name!r}: 'prefix' generalization needs a text column")
    card = column.cardinality
    missing_code = column.missing_code
    text = _value_text(column).astype(str)
    if missing_code >= 0:
        text[missing_code] = "\U0010ffff"  # ranks last: never a class's first value
    alphabetical = np.argsort(text, kind="stable")
    if missing_code < 0 and np.array_equal(alphabetical, np.arange(card)):  # ranks are codes
        first_rank, last_rank = lo.astype(np.int64), hi.astype(np.int64)
        with_missing = np.zeros(len(starts), dtype=bool)
    else:
        rank = np.empty(card, dtype=np.int64)
        rank[alphabetical] = np.arange(card)
        ranks = rank[grouped]
        missing = grouped == missing_code if missing_code >= 0 else \
            np.zeros(len(grouped), dtype=bool)
        first_rank = np.minimum.reduceat(ranks, starts)  # the missing cell ranks last
        last_rank = np.maximum.reduceat(np.where(missing, -1, ranks), starts)
        with_missing = np.maximum.reduceat(missing, starts)
    only_missing = last_rank < 0
    last_rank = np.where(only_missing, first_rank, last_rank)
    key = (first_rank * card + last_rank) * 2 + with_missing
    triple_of_class, triples = pd.factorize(key)
    pairs, triple_missing = triples // 2, (triples % 2).astype(bool)
    sorted_text = text[alphabetical]
    first, last = sorted_text[pairs // card], sorted_text[pairs % card]
    common = np.array([len(os.path.commonprefix([a, b])) for a, b in  # noqa: RUF071
                       zip(first, last, strict=True)], dtype=np.int64)
    masked = np.empty(len(pairs), dtype=object)
    masked[:] = [a if a == b else a[:c] + "*" * (max(len(a), len(b)) - c)
                 for a, b, c in zip(first, last, common, strict=True)]
    labels = quote_alone(masked)
    labels[triple_missing] = or_missing(labels[triple_missing])
    # values a label covers: those sharing its prefix, a run in alphabetical order
    prefixes = np.array([a[:c] for a, c in zip(first, common, strict=True)], dtype=str)
    left = np.searchsorted(sorted_text, prefixes, side="left")
    right = np.searchsorted(sorted_text, np.char.add(prefixes, "\U0010ffff"), side="left")
    covered = (np.where(first == last, 1, right - left) + triple_missing)[triple_of_class]
    if missing_code >= 0:  # a class of missing cells only: an empty field
        missing_rank = int(np.flatnonzero(alphabetical == missing_code)[0])
        alone = pairs == missing_rank * card + missing_rank
        labels[alone] = None
        covered = np.where(only_missing, 1, covered)
    loss = (covered - 1) / (card - 1) if card > 1 else np.zeros(len(starts))
    return _merged(triple_of_class, labels), loss


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
        out[present] = exact_numbers(values)
    else:
        out[present] = np.asarray(values).astype(str)
    return out
