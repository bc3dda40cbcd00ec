"""The row-wise intersection attack on two releases (spec 003, "Incremental Anonymity").

An adversary holding two releases of a table lines up each person's rows (by row position,
as in the notebook, or by the history's pseudonyms) and intersects their released ranges:
``[1,2]`` then ``[1,3]`` leaves ``[1,2]``; ``[3,5]`` then ``[1,3]`` leaves ``3``. Each row of
the later release is then known by its *knowledge*: the intersection of its ranges for a
row in both releases (a row whose value moved, so that the ranges do not meet, keeps its
later range), its later range otherwise. Rows with equal knowledge on every
quasi-identifier are what the adversary can no longer tell apart; a row sharing its
knowledge with fewer than ``k`` rows is *breached*.

Rebuilding an alphabetic tree for every release breaches rows (the notebook's ``[1..5]``
then ``[1,2,3,4,5,3]``); the stream tree never does: its spans only refine, so a row's
knowledge is its latest span, a whole class. Labels are parsed as the audit parses them
(:mod:`anonkit.releases.knowledge`): ranges and exact numbers become intervals; any other
label (a set, a hierarchy node) is compared as it is and never narrowed.

This attack assumes less than the audit's linkage adversary, who also knows which records
were in the earlier release and so counts only those as candidates; every row this attack
breaches, that adversary breaches too. It is reported beside the audit (and available on
its own: :func:`intersection_attack`) because it is the attack the releases' labels alone
allow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pandas as pd

from anonkit.releases.knowledge import _parse_labels
from anonkit.releases.store import HistoryStore, ReleaseView


def parse_spans(labels: Sequence[object] | np.ndarray | pd.Series
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per label, its interval ``(low, high)``; NaN for a label that is no interval."""
    values = pd.Series(np.asarray(labels, dtype=object), dtype=object)
    codes, names = pd.factorize(values, use_na_sentinel=False)
    kind, low, high, *_ = _parse_labels(np.asarray(names, dtype=object))
    interval = kind == 0
    low = np.where(interval, low, np.nan)
    high = np.where(interval, high, np.nan)
    return low[codes], high[codes]


def row_intersection(first: tuple[np.ndarray, np.ndarray], second: tuple[np.ndarray, np.ndarray]
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Row by row, the intersection of two interval columns (empty: low > high)."""
    return np.maximum(first[0], second[0]), np.minimum(first[1], second[1])


@dataclass(frozen=True)
class IntersectionResult:
    """Per row of the later release: its knowledge per quasi-identifier (``low``,
    ``high``; NaN where the label is no interval), how many rows share it (``sizes``),
    whether it was narrowed below its later label, and whether it is breached."""

    columns: tuple[str, ...]
    low: np.ndarray  # (n_rows, n_columns)
    high: np.ndarray
    sizes: np.ndarray
    narrowed: np.ndarray
    breached: np.ndarray
    k: int

    @property
    def n_breached(self) -> int:
        return int(self.breached.sum())

    def knowledge(self) -> pd.DataFrame:
        """One column per quasi-identifier: the intersected range as a label."""
        out = {}
        for j, name in enumerate(self.columns):
            lo, hi = self.low[:, j], self.high[:, j]
            out[name] = [None if np.isnan(a) else _label(a, b)
                         for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]
        return pd.DataFrame(out)


def _label(low: float, high: float) -> str:
    def text(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else repr(x)

    return text(low) if low == high else f"[{text(low)},{text(high)}]"


def intersection_attack(earlier: pd.DataFrame, later: pd.DataFrame, k: int, *,
                        earlier_keys: Sequence[object] | np.ndarray | None = None,
                        later_keys: Sequence[object] | np.ndarray | None = None
                        ) -> IntersectionResult:
    """Intersect the released quasi-identifier labels of ``earlier`` and ``later`` row by
    row and find the rows of ``later`` left with fewer than ``k`` look-alikes.

    Rows are lined up by ``earlier_keys``/``later_keys`` when given, else by position
    (row ``i`` of both; rows past the end of ``earlier`` are new). The columns compared are
    those of ``later`` that ``earlier`` has too. Each distinct label is parsed once."""
    columns = tuple(c for c in later.columns if c in earlier.columns)
    n = len(later)
    if later_keys is None or earlier_keys is None:
        match = np.where(np.arange(n) < len(earlier), np.arange(n), -1)
    else:
        first = pd.Index(pd.Series(np.asarray(earlier_keys, dtype=object), dtype=object))
        match = first.get_indexer(pd.Series(np.asarray(later_keys, dtype=object),
                                            dtype=object))
    both = match >= 0
    safe = np.maximum(match, 0)
    low = np.full((n, len(columns)), np.nan)
    high = np.full((n, len(columns)), np.nan)
    narrowed = np.zeros(n, dtype=bool)
    group = np.zeros(n, dtype=np.int64)
    for j, name in enumerate(columns):
        late_codes, late_names = pd.factorize(pd.Series(later[name].to_numpy(dtype=object),
                                                        dtype=object), use_na_sentinel=False)
        lo, hi = (x[late_codes] for x in parse_spans(np.asarray(late_names, dtype=object)))
        e_lo, e_hi = parse_spans(earlier[name].to_numpy(dtype=object))
        e_lo = np.where(both, e_lo[safe], np.nan) if len(e_lo) else np.full(n, np.nan)
        e_hi = np.where(both, e_hi[safe], np.nan) if len(e_hi) else np.full(n, np.nan)
        i_lo, i_hi = row_intersection((e_lo, e_hi), (lo, hi))
        meet = both & ~np.isnan(i_lo) & ~np.isnan(i_hi) & (i_lo <= i_hi)
        narrowed |= meet & ((i_lo > lo) | (i_hi < hi))
        lo, hi = np.where(meet, i_lo, lo), np.where(meet, i_hi, hi)
        low[:, j], high[:, j] = lo, hi
        # a row is known by its interval, or by its label when that is no interval
        interval = ~np.isnan(lo)
        for part in (np.where(interval, lo, -np.inf), np.where(interval, hi, -np.inf),
                     np.where(interval, -1, late_codes)):
            group = _combine(group, pd.factorize(part)[0])
    sizes = np.bincount(group)[group] if n else np.zeros(0, dtype=np.int64)
    return IntersectionResult(columns, low, high, sizes, narrowed, sizes < k, k)


def _combine(group: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Group ids of the pairs (``group``, ``codes``), by hashing (no sort)."""
    if not len(group):
        return group
    return pd.factorize(group.astype(np.int64) * (int(codes.max()) + 1) + codes)[0]


# -- over the history --------------------------------------------------------------------


@dataclass(frozen=True)
class IntersectionScope:
    """The attack on one pair of consecutive releases of a history."""

    releases: tuple[int, int]
    k: int
    records: int  # records of the later release
    narrowed: int
    breached: int

    def describe(self) -> str:
        return (f"releases {self.releases[0]} & {self.releases[1]}: row-wise intersection of "
                f"the released ranges narrows {self.narrowed} of {self.records} records, "
                f"{self.breached} below k={self.k}")

    def to_dict(self) -> dict[str, object]:
        return {"releases": list(self.releases), "k": self.k, "records": self.records,
                "narrowed": self.narrowed, "breached": self.breached}


def _record_labels(view: ReleaseView) -> tuple[np.ndarray, pd.DataFrame]:
    keys = np.asarray([bytes(k) for k in view.record_keys], dtype=object)
    labels = view.labels.iloc[view.record_classes].reset_index(drop=True)
    return keys, labels


def _k_of(view: ReleaseView) -> int | None:
    from anonkit.releases.attacks import requirements_of

    ks = [r.threshold for r in requirements_of(view.info) if r.measure == "candidates"]
    return int(max(ks)) if ks else None


def intersection_scopes(views: Sequence[ReleaseView], k: float | None = None
                        ) -> list[IntersectionScope]:
    """The attack on every pair of consecutive releases (views loaded with labels);
    ``k``: the threshold (default: the larger k the two releases promised; pairs with
    none are skipped)."""
    views = sorted(views, key=lambda v: v.info.seq)
    out = []
    for earlier, later in pairwise(views):
        if not len(later.labels.columns) or not len(earlier.labels.columns):
            continue
        promised = [x for x in (_k_of(earlier), _k_of(later)) if x is not None]
        threshold = int(k) if k is not None else (max(promised) if promised else None)
        if threshold is None:
            continue
        e_keys, e_labels = _record_labels(earlier)
        l_keys, l_labels = _record_labels(later)
        result = intersection_attack(e_labels, l_labels, threshold, earlier_keys=e_keys,
                                     later_keys=l_keys)
        out.append(IntersectionScope((earlier.info.seq, later.info.seq), threshold,
                                     len(l_keys), int(result.narrowed.sum()),
                                     result.n_breached))
    return out


def intersection_audit(store: HistoryStore, dataset: str, k: float | None = None
                       ) -> list[IntersectionScope]:
    """:func:`intersection_scopes` over the releases of ``dataset`` in the history."""
    views = [store.load(info, labels=True) for info in store.releases(dataset)]
    return intersection_scopes(views, k)
