"""The one grouping helper: equivalence classes of rows by exact equality of some columns,
numbered in order of first appearance. The verifier, the checker, the metrics and the
generalization all group through here, so "a class" means the same thing everywhere."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def group_rows(df: pd.DataFrame, columns: Sequence[str]) -> tuple[np.ndarray, int, np.ndarray]:
    """Equivalence classes of ``df`` by exact equality of the ``columns`` tuple.

    Returns one class id per row (classes numbered in order of first appearance), the
    number of classes, and each class's first row position. Missing values are a value
    of their own (``use_na_sentinel=False``), so they are grouped, never dropped.
    """
    return group_codes([_value_codes(df[name]) for name in columns], len(df))


def _value_codes(column: pd.Series) -> tuple[np.ndarray, int]:
    """Per row, a code for its value in ``0 .. n_values - 1``; and ``n_values``."""
    if isinstance(column.dtype, pd.CategoricalDtype):  # its codes already are codes
        codes = column.cat.codes.to_numpy()
        n_values = len(column.cat.categories)
    else:
        codes, uniques = pd.factorize(column, use_na_sentinel=False)
        n_values = len(uniques)
    # a Categorical (and some extension dtypes, e.g. Arrow dictionaries) gives -1 for a
    # missing value: make it a value of its own, past the others
    if len(codes) and codes.min() < 0:
        codes = np.where(codes < 0, n_values, codes)
        n_values += 1
    return codes, n_values


def group_codes(columns: Sequence[tuple[np.ndarray, int]],
                n_rows: int) -> tuple[np.ndarray, int, np.ndarray]:
    """:func:`group_rows` for columns given as (codes in ``0 .. n_values - 1``, n_values):
    the codes are combined column by column into one number per row, then factorized."""
    key = np.zeros(n_rows, dtype=np.int64)
    span = 1  # keys are < span
    for codes, n_values in columns:
        if span * n_values >= 2**62:  # compact the keys before they could overflow
            key, distinct = pd.factorize(key, size_hint=_groups_hint(span, n_rows))
            span = len(distinct)
        key *= n_values
        key += codes
        span *= n_values
    return first_appearances(key, size_hint=_groups_hint(span, n_rows))


def first_appearances(values: np.ndarray, size_hint: int | None = None
                      ) -> tuple[np.ndarray, int, np.ndarray]:
    """(per element, the index of its value among the distinct values numbered in order of
    first appearance; how many distinct values; the position of each one's first
    appearance). ``size_hint``: the expected number of distinct values."""
    ids, distinct = pd.factorize(values, size_hint=size_hint)
    ids = ids.astype(np.int64, copy=False)
    # in first-appearance order an element opens a value exactly when its id exceeds all
    # before it
    running = np.maximum.accumulate(ids)
    opens = np.empty(len(ids), dtype=bool)
    opens[:1] = True
    np.greater(running[1:], running[:-1], out=opens[1:])
    return ids, len(distinct), np.flatnonzero(opens)


def _groups_hint(span: int, n_rows: int) -> int:
    """How many groups to size the hash table for: a table with room for a group per row
    is slow to fill when groups hold several rows, and it grows when need be."""
    return max(1, min(span, n_rows, max(n_rows // 8, 2**17)))
