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
(:func:`anonkit.labels.label_boxes`): ranges and exact numbers become intervals; any other
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

from anonkit.history.records import ReleaseView
from anonkit.history.requirements import requirements_of
from anonkit.history.store import HistoryStore
from anonkit.labels import INTERVAL, label_boxes


def parse_spans(labels: Sequence[object] | np.ndarray | pd.Series
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per label, its interval ``(low, high)``; NaN for a label that is no interval."""
    values = pd.Series(np.asarray(labels, dtype=object), dtype=object)
    codes, names = pd.factorize(values, use_na_sentinel=False)
    low, high = _name_spans(np.asarray(names, dtype=object))
    return low[codes], high[codes]


def _name_spans(names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``parse_spans`` of distinct labels. A set label (``{...}``) is no interval: it is
    left out of the parse, whose splitting of set elements would be most of its cost."""
    low, high = np.full(len(names), np.nan), np.full(len(names), np.nan)
    if not len(names):
        return low, high
    # a text in braces reads as a set (or is malformed): never an interval; a number or a
    # missing label never prints with braces
    text = names.astype(str)
    is_set = (np.strings.startswith(text, "{") & np.strings.endswith(text, "}")
              & (np.strings.find(text, "\n") < 0))
    rest = np.flatnonzero(~is_set)
    if len(rest):
        kind, lo, hi, *_ = label_boxes(names[rest])
        interval = kind == INTERVAL
        low[rest] = np.where(interval, lo, np.nan)
        high[rest] = np.where(interval, hi, np.nan)
    return low, high


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
    # every row is a class of its own
    return class_intersection(earlier[list(columns)], np.arange(len(earlier)),
                              later[list(columns)], np.arange(n), match, k)


def class_intersection(earlier_labels: pd.DataFrame, earlier_classes: np.ndarray,
                       later_labels: pd.DataFrame, later_classes: np.ndarray,
                       match: np.ndarray, k: int, *, bounds: bool = True
                       ) -> IntersectionResult:
    """:func:`intersection_attack` on releases given as class labels (one row per class,
    one column per quasi-identifier) and each record's class: ``match`` gives, per record
    of the later release, its record in the earlier one (-1: none). ``bounds=False``
    leaves ``low``/``high`` without columns (the counts need no per-record bounds)."""
    columns = [c for c in later_labels.columns if c in earlier_labels.columns]
    early, late = _label_spans([earlier_labels[columns], later_labels[columns]])
    return _intersect(early, len(earlier_labels), earlier_classes, late, later_classes,
                      match, k, bounds)


@dataclass(frozen=True)
class _Spans:
    """One quasi-identifier of a release: per class its label's code, and per distinct
    label its interval (NaN: no interval)."""

    codes: np.ndarray  # (n_classes,) int64
    low: np.ndarray  # (n_labels,)
    high: np.ndarray


def _label_spans(frames: Sequence[pd.DataFrame]) -> list[dict[str, _Spans]]:
    """Every column of every frame (class labels) as :class:`_Spans`. The distinct labels
    of all-text columns are parsed together, once (a parse has a fixed cost of
    milliseconds, and releases of a history share most labels); any other column on its
    own, as equal non-text labels of different types (``True`` and ``1``) parse
    differently."""
    found: list[tuple[int, str, np.ndarray, np.ndarray]] = []
    for i, frame in enumerate(frames):
        for name in frame.columns:
            codes, names = pd.factorize(pd.Series(frame[name].to_numpy(dtype=object),
                                                  dtype=object), use_na_sentinel=False)
            found.append((i, name, codes.astype(np.int64), np.asarray(names, dtype=object)))
    text = [pd.api.types.infer_dtype(names, skipna=False) == "string"
            for *_, names in found]
    pooled = [names for (*_, names), is_text in zip(found, text, strict=True) if is_text]
    every = np.concatenate(pooled) if pooled else np.empty(0, dtype=object)
    where, distinct = pd.factorize(pd.Series(every, dtype=object), use_na_sentinel=False)
    low, high = _name_spans(np.asarray(distinct, dtype=object))
    out: list[dict[str, _Spans]] = [{} for _ in frames]
    start = 0
    for (i, name, codes, names), is_text in zip(found, text, strict=True):
        if is_text:
            at = where[start:start + len(names)]
            start += len(names)
            out[i][name] = _Spans(codes, low[at], high[at])
        else:
            out[i][name] = _Spans(codes, *_name_spans(names))
    return out


def _intersect(earlier: dict[str, _Spans], n_earlier_classes: int,
               earlier_classes: np.ndarray, later: dict[str, _Spans],
               later_classes: np.ndarray, match: np.ndarray, k: int, bounds: bool
               ) -> IntersectionResult:
    """The attack over the columns of ``later`` (all in ``earlier``). A record's knowledge
    depends only on its later class and its earlier class (or none), so it is worked out
    once per such pair of classes -- and per column once per pair of labels -- and only
    the gathering runs over records."""
    columns = tuple(later)
    later_classes = np.asarray(later_classes, dtype=np.int64)
    earlier_classes = np.asarray(earlier_classes, dtype=np.int64)
    n = len(later_classes)
    match = np.asarray(match, dtype=np.int64)
    earlier_of = (np.where(match >= 0, earlier_classes[np.maximum(match, 0)], -1)
                  if len(earlier_classes) else np.full(n, -1, dtype=np.int64))
    base = n_earlier_classes + 1  # an earlier class, or none (0)
    record_pair, pairs = pd.factorize(later_classes * base + earlier_of + 1)
    pairs = np.asarray(pairs, dtype=np.int64)
    pair_late, pair_early = pairs // base, pairs % base - 1
    both = pair_early >= 0
    width = len(columns) if bounds else 0
    low = np.full((n, width), np.nan)
    high = np.full((n, width), np.nan)
    narrowed = np.zeros(len(pairs), dtype=bool)
    group = np.zeros(len(pairs), dtype=np.int64)
    for j, name in enumerate(columns):
        late, early = later[name], earlier[name]
        label_base = len(early.low) + 1  # an earlier label, or none (0)
        early_code = (np.where(both, early.codes[np.maximum(pair_early, 0)], -1)
                      if len(early.codes) else np.full(len(pairs), -1, dtype=np.int64))
        label_pair, labels = pd.factorize(late.codes[pair_late] * label_base + early_code + 1)
        labels = np.asarray(labels, dtype=np.int64)
        l_late, l_early = labels // label_base, labels % label_base - 1
        lo, hi = late.low[l_late], late.high[l_late]
        seen = l_early >= 0
        e_lo = (np.where(seen, early.low[np.maximum(l_early, 0)], np.nan) if len(early.low)
                else np.full(len(labels), np.nan))
        e_hi = (np.where(seen, early.high[np.maximum(l_early, 0)], np.nan) if len(early.high)
                else np.full(len(labels), np.nan))
        i_lo, i_hi = row_intersection((e_lo, e_hi), (lo, hi))
        meet = seen & ~np.isnan(i_lo) & ~np.isnan(i_hi) & (i_lo <= i_hi)
        narrowed |= (meet & ((i_lo > lo) | (i_hi < hi)))[label_pair]
        lo, hi = np.where(meet, i_lo, lo), np.where(meet, i_hi, hi)
        if bounds:
            low[:, j] = lo[label_pair][record_pair]
            high[:, j] = hi[label_pair][record_pair]
        # a record is known by its interval, or by its label when that is no interval
        interval = ~np.isnan(lo)
        known = np.zeros(len(labels), dtype=np.int64)
        for part in (np.where(interval, lo, -np.inf), np.where(interval, hi, -np.inf),
                     np.where(interval, -1, l_late)):
            known = _combine(known, pd.factorize(part)[0])
        group = _combine(group, known[label_pair])
    group = group[record_pair] if n else np.zeros(0, dtype=np.int64)
    sizes = np.bincount(group)[group] if n else np.zeros(0, dtype=np.int64)
    return IntersectionResult(columns, low, high, sizes, narrowed[record_pair], sizes < k, k)


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


def _packed_keys(view: ReleaseView) -> np.ndarray:
    """The view's pseudonyms as ``S16``, by joining their bytes (exact, trailing NULs
    included); keys of another length are converted one by one."""
    keys = view.record_keys
    joined = b"".join(keys.tolist()) if len(keys) else b""
    if len(joined) == 16 * len(keys):
        return np.frombuffer(joined, dtype="S16")
    return np.asarray(keys.tolist(), dtype="S16")


def _match(earlier: np.ndarray, later: np.ndarray) -> np.ndarray:
    """Per pseudonym of ``later``, its position in ``earlier`` (-1: absent)."""
    if not len(earlier):
        return np.full(len(later), -1, dtype=np.int64)
    order = None
    if len(earlier) > 1 and not (earlier[1:] > earlier[:-1]).all():
        order = np.argsort(earlier, kind="stable")
        earlier = earlier[order]
    pos = np.minimum(np.searchsorted(earlier, later), len(earlier) - 1)
    found = earlier[pos] == later
    if order is not None:
        pos = order[pos]
    return np.where(found, pos, -1).astype(np.int64)


def _k_of(view: ReleaseView) -> int | None:
    ks = [r.threshold for r in requirements_of(view.info) if r.measure == "candidates"]
    return int(max(ks)) if ks else None


def intersection_scopes(views: Sequence[ReleaseView], k: float | None = None
                        ) -> list[IntersectionScope]:
    """The attack on every pair of consecutive releases (views loaded with labels);
    ``k``: the threshold (default: the larger k the two releases promised; pairs with
    none are skipped)."""
    views = sorted(views, key=lambda v: v.info.seq)
    runs = []
    for earlier, later in pairwise(views):
        if not len(later.labels.columns) or not len(earlier.labels.columns):
            continue
        promised = [x for x in (_k_of(earlier), _k_of(later)) if x is not None]
        threshold = int(k) if k is not None else (max(promised) if promised else None)
        if threshold is not None:
            runs.append((earlier, later, threshold))
    # a view is the later release of one pair and the earlier of the next: its keys and
    # labels are worked out once, and all labels parsed together
    involved = list({id(v): v for run in runs for v in run[:2]}.values())
    spans = dict(zip([id(v) for v in involved],
                     _label_spans([v.labels for v in involved]), strict=True))
    packed = {id(v): _packed_keys(v) for v in involved}
    out = []
    for earlier, later, threshold in runs:
        shared = [c for c in later.labels.columns if c in earlier.labels.columns]
        result = _intersect({c: spans[id(earlier)][c] for c in shared}, earlier.n_classes,
                            earlier.record_classes,
                            {c: spans[id(later)][c] for c in shared}, later.record_classes,
                            _match(packed[id(earlier)], packed[id(later)]), threshold,
                            bounds=False)
        out.append(IntersectionScope((earlier.info.seq, later.info.seq), threshold,
                                     len(later.record_classes), int(result.narrowed.sum()),
                                     result.n_breached))
    return out


def intersection_audit(store: HistoryStore, dataset: str, k: float | None = None
                       ) -> list[IntersectionScope]:
    """:func:`intersection_scopes` over the releases of ``dataset`` in the history."""
    views = [store.load(info, labels=True) for info in store.releases(dataset)]
    return intersection_scopes(views, k)
