"""Generalization hierarchies: a tree over a column's values, stored level by level.

A hierarchy is a table with one row per leaf value: column 0 is the value itself, the
following columns are ever coarser labels, and the last column is the root (usually ``*``).
This is ARX's layout. Rows of different length ("ragged depth") are padded by repeating the
leaf label right after the leaf, so every row reaches the common root at the same level.
"""

from __future__ import annotations

import datetime
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cached_property

import numpy as np
import pandas as pd

from anonkit.errors import InputError


class Hierarchy:
    """A generalization tree over the values of one column.

    Attributes:
        leaves: the leaf values as strings, in the hierarchy's order (file order).
        labels: ``(n_leaves, height)`` object array; ``labels[i, 0]`` is leaf ``i`` and
            ``labels[i, height - 1]`` the root.
        node_ids: ``(n_leaves, height)`` int32 array; two leaves share an ancestor at level
            ``L`` exactly when their ``node_ids[:, L]`` are equal.
        height: number of levels, leaf level included.
    """

    def __init__(self, rows: Sequence[Sequence[object]], name: str = "") -> None:
        self.name = name
        # a label is its text exactly, as ARX reads it (a data value " a" is not "a");
        # a cell of spaces only is an empty one
        cleaned = [[str(cell) if str(cell).strip() else "" for cell in row] for row in rows]
        cleaned = [_strip_trailing_empty(row) for row in cleaned]
        cleaned = [row for row in cleaned if row]
        for number, row in enumerate(cleaned, start=1):
            if "" in row:
                raise InputError(f"hierarchy{' for ' + repr(name) if name else ''} has an "
                                 f"empty label in row {number} ({';'.join(row)}); fill it in")
        where = f" for '{name}'" if name else ""
        if not cleaned:
            raise InputError(f"hierarchy{where} is empty: give one row per value, leaf first")
        height = max(len(row) for row in cleaned)
        padded = [
            [row[0]] * (height - len(row) + 1) + row[1:] if len(row) < height else row
            for row in cleaned
        ]
        labels = np.array(padded, dtype=object)
        roots = set(labels[:, -1])
        if len(roots) > 1:
            shown = ", ".join(sorted(map(repr, roots))[:5])
            raise InputError(
                f"hierarchy{where} has inconsistent depth: its rows end in different roots "
                f"({shown}); every row must end in the same root label, e.g. '*'"
            )
        leaves = labels[:, 0]
        uniq, counts = np.unique(leaves.astype(str), return_counts=True)
        if (counts > 1).any():
            dup = ", ".join(repr(str(u)) for u in uniq[counts > 1][:5])
            raise InputError(f"hierarchy{where} lists a value more than once: {dup}")
        self.labels = labels
        self.leaves = leaves.astype(str)
        self.height = height
        self.node_ids = self._node_ids(labels, where)
        self._leaf_index = {leaf: i for i, leaf in enumerate(self.leaves)}

    @staticmethod
    def _node_ids(labels: np.ndarray, where: str) -> np.ndarray:
        n_leaves, height = labels.shape
        node_ids = np.empty((n_leaves, height), dtype=np.int32)
        for level in range(height):
            _, ids = np.unique(labels[:, level].astype(str), return_inverse=True)
            node_ids[:, level] = ids.reshape(-1)
        # A label must have a single parent: otherwise it is a graph, not a tree, and a
        # released label would not tell which subtree it stands for.
        for level in range(1, height - 1):
            pairs = np.unique(node_ids[:, level : level + 2], axis=0)
            child, counts = np.unique(pairs[:, 0], return_counts=True)
            if (counts > 1).any():
                bad = child[counts > 1][0]
                label = labels[node_ids[:, level] == bad, level][0]
                parents = sorted(set(labels[node_ids[:, level] == bad, level + 1]))
                raise InputError(
                    f"hierarchy{where} is not a tree: label {label!r} at level {level} has "
                    f"parents {parents}; give every label one parent"
                )
        return node_ids

    @classmethod
    def from_mapping(cls, mapping: dict[object, Sequence[object]], name: str = "") -> Hierarchy:
        """Build from ``{leaf: [level1, level2, ..., root]}``."""
        return cls([[leaf, *path] for leaf, path in mapping.items()], name=name)

    def __repr__(self) -> str:
        return f"Hierarchy({self.name!r}, leaves={len(self.leaves)}, height={self.height})"

    def __len__(self) -> int:
        return len(self.leaves)

    @cached_property
    def _number_index(self) -> dict[float, int]:
        """The leaves that read as numbers, by value; a number two leaves spell is left out
        (which of them a value means is not said)."""
        index: dict[float, int] = {}
        seen: Counter[float] = Counter()
        for i, leaf in enumerate(self.leaves.tolist()):
            if _NUMBER.fullmatch(leaf) is None:
                continue
            number = float(leaf)
            if math.isfinite(number):
                index[number] = i
                seen[number] += 1
        return {n: i for n, i in index.items() if seen[n] == 1}

    def leaf_codes(self, values: Iterable[object], column: str = "") -> np.ndarray:
        """Index of each value among the leaves; an unknown value is an :class:`InputError`."""
        values = list(values)
        as_text = [_leaf_text(v) for v in values]
        if any(t not in self._leaf_index for t in as_text):
            # a number matches the leaf of the same number however either is spelled
            # (data 1e-05 and leaf 0.00001, 5 and 5.0), when one leaf holds it
            numbers = self._number_index
            for i, v in enumerate(values):
                if as_text[i] not in self._leaf_index and _is_number(v) \
                        and float(v) in numbers:  # type: ignore[arg-type]
                    as_text[i] = str(self.leaves[numbers[float(v)]])  # type: ignore[arg-type]
        missing = sorted({v for v in as_text if v not in self._leaf_index})
        if missing:
            col = column or self.name
            shown = ", ".join(map(repr, missing[:10]))
            more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            spaced = any(v.strip() in self._leaf_index for v in missing)
            raise InputError(
                f"column '{col}' has values missing from its hierarchy: {shown}{more}; "
                + ("they differ from its values only in spaces at either end: trim the "
                   "column (--skipinitialspace for spaces after the separator) or add "
                   "them to the hierarchy file" if spaced else
                   "add a row for each to the hierarchy file")
            )
        return np.fromiter((self._leaf_index[v] for v in as_text), dtype=np.int32,
                           count=len(as_text))

    def lowest_common_level(self, grouped_leaves: np.ndarray,
                            starts: np.ndarray) -> np.ndarray:
        """For each class, the lowest level at which all of its leaves share one node.
        Classes are consecutive runs of ``grouped_leaves`` starting at ``starts`` (one
        reduction per level)."""
        level = np.full(len(starts), self.height - 1, dtype=np.int32)
        for lv in range(self.height - 2, -1, -1):
            nodes = self.node_ids[grouped_leaves, lv]
            same = np.minimum.reduceat(nodes, starts) == np.maximum.reduceat(nodes, starts)
            # sharing a node at lv implies sharing one at every level above: going down,
            # the last level where the class still shares a node wins
            level = np.where(same, lv, level)
        return level

    def lowest_common_level_of_pairs(self, first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """The lowest level at which leaves ``first[i]`` and ``last[i]`` share a node. For
        a hierarchy whose subtrees are contiguous in the order the leaves are taken (see
        :meth:`is_contiguous`), this is the lowest common level of everything between."""
        same = self.node_ids[first] == self.node_ids[last]  # (n, height); the root always
        return np.argmax(same, axis=1).astype(np.int32)

    @cached_property
    def subtree_sizes(self) -> np.ndarray:
        """``(n_leaves, height)``: leaves below each leaf's ancestor at each level."""
        out = np.empty_like(self.node_ids)
        for level in range(self.height):
            ids = self.node_ids[:, level]
            out[:, level] = np.bincount(ids)[ids]
        return out

    def is_contiguous(self, order: np.ndarray | None = None) -> bool:
        """Whether every node's leaves are consecutive in ``order`` (default: file order).

        When true, the lowest common ancestor of a set of leaves is that of its first and
        last leaf, which lets algorithms work on code ranges alone.
        """
        ids = self.node_ids if order is None else self.node_ids[order]
        for level in range(1, self.height):
            col = ids[:, level]
            changes = np.count_nonzero(col[1:] != col[:-1]) + 1
            if changes != len(np.unique(col)):
                return False
        return True

    def dfs_order(self) -> np.ndarray:
        """Leaf indices sorted so that every subtree is a consecutive run (stable)."""
        keys = [self.node_ids[:, lv] for lv in range(self.height)]
        first_seen = []
        for col in keys:
            # rank nodes by first appearance so file order is kept inside each group
            _, first = np.unique(col, return_index=True)
            rank = np.empty(col.max() + 1, dtype=np.int64)
            rank[np.unique(col)] = np.argsort(np.argsort(first))
            first_seen.append(rank[col])
        return np.lexsort(first_seen)  # last key (root) is the primary sort key


def _strip_trailing_empty(row: list[str]) -> list[str]:
    while row and row[-1] == "":
        row.pop()
    return row


#: a leaf spelled as a number (no spaces, no ``_``, no ``nan``)
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) \
        and not isinstance(value, bool | np.bool_)


def _leaf_text(value: object) -> str:
    """Text of a data value as it appears in a hierarchy file (3.0 -> '3', a date at
    midnight -> '2021-03-04', other datetimes -> '2021-03-04T10:30:00')."""
    if isinstance(value, (np.datetime64, datetime.date)):
        stamp = pd.Timestamp(value)
        return stamp.strftime("%Y-%m-%d") if stamp == stamp.normalize() \
            else stamp.strftime("%Y-%m-%dT%H:%M:%S")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)
