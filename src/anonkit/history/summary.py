"""What an adversary sees in a release, from the released table: per class its size and
the released label of every quasi-identifier, and per sensitive attribute every class's
multiset of released values (:class:`~anonkit.history.records.ClassValues`), with per record
the index of its entry in them (what the history keeps, encrypted, of each record's value).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd

from anonkit._util.numbers import stored_number
from anonkit.errors import HistoryError
from anonkit.history.records import ClassValues


def summarize_classes(data: pd.DataFrame, class_ids: np.ndarray, labels: pd.DataFrame,
                      quasi_identifiers: Sequence[str], sensitive: Sequence[str]
                      ) -> tuple[list[tuple[int, int, str]], list[ClassValues],
                                 list[np.ndarray]]:
    """What an adversary sees in each class of a release: ``(class_id, size, qi_labels)``
    rows, and per sensitive attribute every class's multiset of released values -- with,
    per row of ``data``, the index of its entry in them (what the history keeps, encrypted,
    of each record's value).

    ``data`` is the released table, ``class_ids`` its class per row and ``labels`` one row
    per class with each quasi-identifier's released label (an :class:`~anonkit.release.Release`'s
    ``data``, ``class_ids`` and ``classes``). The labels' JSON is assembled from per-label
    texts, so ``json.dumps`` runs once per distinct label, not once per class.
    """
    class_ids = np.asarray(class_ids, dtype=np.int64)
    n_classes = len(labels)
    if len(class_ids) and (class_ids.min() < 0 or class_ids.max() >= n_classes):
        raise HistoryError(f"the method returned class ids outside 0..{n_classes - 1}; "
                           f"the release cannot be recorded")
    sizes = np.bincount(class_ids, minlength=n_classes)
    if (sizes == 0).any():
        raise HistoryError(f"the method returned {int((sizes == 0).sum())} empty classes; "
                           f"the release cannot be recorded")
    label_parts = [_json_texts(labels[q].to_numpy(dtype=object)) for q in quasi_identifiers]
    label_rows = ["[" + ",".join(parts) + "]" for parts in zip(*label_parts, strict=True)] \
        if label_parts else ["[]"] * n_classes
    rows = list(zip(range(n_classes), sizes.tolist(), label_rows, strict=True))
    found = [multisets_and_entries(attr, data[attr], class_ids) for attr in sensitive]
    return rows, [cv for cv, _ in found], [entries for _, entries in found]


def _json_texts(values: np.ndarray) -> list[str]:
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    texts = np.array([json.dumps(_plain(u)) for u in uniques] + ["null"], dtype=object)
    return texts[codes].tolist()


def _plain(value: object) -> object:
    """A JSON-ready label: a number as :func:`stored_number` gives it, missing as None (an
    infinity too, as stored labels always held it), anything else (a bool too) as text."""
    value = stored_number(value)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if value is None or isinstance(value, int | float):
        return value
    if not isinstance(value, str) and pd.isna(value):
        return None
    return str(value)


def multisets(attr: str, column: pd.Series, class_ids: np.ndarray) -> ClassValues:
    """Every class's multiset of ``column``'s values: one sort of (class, value) codes.
    A numeric column keeps its numbers (5 and 5.0 are one value in every release); any
    other column is compared as text."""
    return multisets_and_entries(attr, column, class_ids)[0]


def multisets_and_entries(attr: str, column: pd.Series, class_ids: np.ndarray
                          ) -> tuple[ClassValues, np.ndarray]:
    """:func:`multisets`, and per row its entry's index in them."""
    class_ids = np.asarray(class_ids, dtype=np.int64)
    numeric = (pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column))
    if numeric:
        codes, uniques = pd.factorize(column.astype(np.float64), sort=True)
        names: np.ndarray = np.append(np.asarray(uniques, dtype=np.float64), np.nan)
    else:
        text = column.astype(object)
        if pd.api.types.infer_dtype(text, skipna=True) not in ("string", "empty"):
            # mixed types (rare): compare as text, integral numbers without ".0"
            text = text.map(lambda v: None if (plain := _plain(v)) is None else str(plain))
        codes, uniques = pd.factorize(text, sort=True)
        names = np.append(np.asarray(uniques, dtype=object), None)
    n_values = len(uniques) + 1
    codes = np.where(codes < 0, len(uniques), codes).astype(np.int64)  # missing: last code
    keys, inverse, counts = np.unique(class_ids * n_values + codes, return_inverse=True,
                                      return_counts=True)
    return (ClassValues(attr, keys // n_values, names[keys % n_values],
                        counts.astype(np.int64), numeric), inverse.reshape(-1))


def record_entries(attr: str, column: pd.Series, class_ids: np.ndarray) -> np.ndarray:
    """Per row of ``column``, the index of its (class, value) entry in
    ``multisets(attr, column, class_ids)``."""
    return multisets_and_entries(attr, column, class_ids)[1]
