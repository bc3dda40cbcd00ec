"""What the adversaries know per record, as a user or a report reads it: :func:`knowledge`
of a dataset's history, :func:`knowledge_views` of releases already loaded; per record its
classes, candidates, the values left of each sensitive attribute
(:class:`AttributeKnowledge`) and the box left of each quasi-identifier
(:class:`QIKnowledge`), read from the accumulated knowledge
(:mod:`anonkit.history.knowledge.engine`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from anonkit._util.numbers import stored_number
from anonkit.errors import HistoryError
from anonkit.history.knowledge.engine import Accumulated, _expand, _measure, fold
from anonkit.history.knowledge.state import accumulated
from anonkit.history.records import ReleaseView
from anonkit.history.store import HistoryStore
from anonkit.labels import label_boxes

QI_KINDS = ("interval", "set", "labels")  # (anonkit.labels' INTERVAL, SET, OTHER)


@dataclass
class AttributeKnowledge:
    """One sensitive attribute: per record, the intersection of its classes' multisets."""

    name: str
    numeric: bool
    distinct: np.ndarray  # values left (a missing value counts)
    distinct_present: np.ndarray  # values left, not counting a missing value
    low: np.ndarray  # smallest / largest numeric value left (NaN: none or not numeric)
    high: np.ndarray
    candidates_qi: np.ndarray  # sum over the values left of the smallest count
    linkage_distinct: np.ndarray  # the same three as the linkage adversary sees them
    linkage_distinct_present: np.ndarray
    linkage_range: np.ndarray
    qi_distinct: np.ndarray  # the same three as the qi adversary deduces them
    qi_distinct_present: np.ndarray
    qi_range: np.ndarray
    _acc: Accumulated = field(repr=False)
    _records: np.ndarray = field(repr=False)  # record ids, in the knowledge's order

    @property
    def range(self) -> np.ndarray:
        return self.high - self.low

    def values(self, i: int) -> list[object]:
        """The values left for record ``i`` (in value order for a numeric attribute)."""
        return [stored_number(v) for v in _values_left(self._acc, self.name, int(self._records[i]))]

    def deduced(self, i: int) -> list[object]:
        """The values the qi adversary cannot rule out for record ``i``."""
        return [stored_number(v) for v in _values_left(self._acc, self.name, int(self._records[i]),
                                                deduced=True)]


def _values_left(acc: Accumulated, attr: str, record: int, deduced: bool = False
                 ) -> list[object]:
    """The values of the plain intersection of the record's multisets (``deduced``: those
    the qi adversary cannot rule out)."""
    e = acc.entries[attr]
    a = acc.atom[record]
    lo, hi = np.searchsorted(e.atom, [a, a + 1])
    ids = e.value[lo:hi][e.high[lo:hi] >= 1] if deduced else e.value[lo:hi]
    return sorted_values(acc, attr, ids)


def sorted_values(acc: Accumulated, attr: str, ids: np.ndarray) -> list[object]:
    """The values of ``ids`` in one order whatever releases the knowledge holds: numbers
    ascending, text by its text; missing last."""
    names = acc.values[attr].array[np.asarray(ids, dtype=np.int64)]
    if acc.values[attr].numeric:
        return sorted(names.tolist(), key=lambda x: (math.isnan(x), x))
    return sorted(names.tolist(), key=lambda x: (x is None, str(x)))


@dataclass


class QIKnowledge:
    """One quasi-identifier: per record, the intersection of its classes' labels."""

    name: str
    kind: np.ndarray  # per record: "interval", "set" or "labels"
    low: np.ndarray  # an interval's bounds (NaN unless kind is "interval"); low > high:
    high: np.ndarray  # the intervals do not meet (the value changed between releases)
    label_codes: np.ndarray = field(repr=False)  # (n_releases, n_records), -1: absent
    label_names: np.ndarray = field(repr=False)
    set_offsets: np.ndarray = field(repr=False)  # record i's set (kind "set"):
    set_elements: np.ndarray = field(repr=False)  # set_elements[set_offsets[i]:...[i + 1]]

    def value(self, i: int) -> object:
        """``[low, high]``, the sorted set left, or the labels seen (in release order)."""
        kind = self.kind[i]
        if kind == "interval":
            return [stored_number(self.low[i]), stored_number(self.high[i])]
        if kind == "set":
            # (None, a missing cell, last: the knowledge's one order)
            return sorted(self.set_elements[self.set_offsets[i]:self.set_offsets[i + 1]]
                          .tolist(), key=lambda v: (v is None, v or ""))
        codes = self.label_codes[:, i]
        return [stored_number(v) for v in self.label_names[codes[codes >= 0]]]


@dataclass


class Knowledge:
    """Per record of a dataset, what the adversaries know after every release (see
    :mod:`anonkit.history.knowledge.engine`). Arrays are indexed by record, in the order
    of :attr:`records`."""

    dataset: str
    releases: list[int]  # the releases' numbers
    records: np.ndarray  # (n,) object: 16-byte pseudonyms
    classes: np.ndarray  # (n_releases, n) int64: class per release, -1 absent
    candidates: np.ndarray  # linkage candidates: records that shared all its classes
    candidates_qi: np.ndarray  # the qi adversary's candidate bound (people, no counterfeits)
    row_values: np.ndarray  # bool: some release the record is in carries values on rows
    attributes: dict[str, AttributeKnowledge]
    quasi_identifiers: dict[str, QIKnowledge]  # empty when labels were not loaded
    _acc: Accumulated = field(repr=False)
    _ids: np.ndarray = field(repr=False)

    def __len__(self) -> int:
        return len(self.records)

    @property
    def n_releases(self) -> np.ndarray:
        return (self.classes >= 0).sum(axis=0)

    def index(self, pseudonym: bytes) -> int:
        found = np.flatnonzero(self.records == bytes(pseudonym))
        if not len(found):
            raise HistoryError(f"record {bytes(pseudonym).hex()} is not in this knowledge of "
                               f"{self.dataset!r}")
        return int(found[0])

    def releases_of(self, i: int) -> dict[int, int]:
        """Release number -> the record's class there."""
        return {seq: int(c) for seq, c in zip(self.releases, self.classes[:, i], strict=True)
                if c >= 0}

    def candidate_records(self, i: int) -> list[bytes]:
        """The records that shared every class of record ``i`` (itself included)."""
        return [self._acc.pseudonym(int(s)) for s in cell_members(self._acc, int(self._ids[i]))]

    def record(self, i: int) -> dict[str, object]:
        """Everything known about record ``i``, JSON-ready."""
        out: dict[str, object] = {
            "record": bytes(self.records[i]).hex(),
            "releases": {str(s): c for s, c in self.releases_of(i).items()},
            "candidates": int(self.candidates[i]),
            "candidates_qi": stored_number(self.candidates_qi[i]),
            "candidate_records": [k.hex() for k in self.candidate_records(i)],
        }
        for name, a in self.attributes.items():
            out[f"values[{name}]"] = a.values(i)
            out[f"distinct[{name}]"] = int(a.distinct[i])
            out[f"distinct_present[{name}]"] = int(a.distinct_present[i])
            if not math.isnan(a.low[i]):
                out[f"range[{name}]"] = [stored_number(a.low[i]), stored_number(a.high[i])]
        for name, q in self.quasi_identifiers.items():
            out[f"qi[{name}]"] = q.value(i)
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per record, its figures as columns; the values left and the QI boxes
        are lists (built per record: for reading, not for large-scale processing)."""
        columns: dict[str, object] = {
            "record": [bytes(k).hex() for k in self.records],
            "n_releases": self.n_releases, "candidates": self.candidates,
            "candidates_qi": self.candidates_qi}
        for name, a in self.attributes.items():
            columns[f"distinct[{name}]"] = a.distinct
            columns[f"distinct_present[{name}]"] = a.distinct_present
            if a.numeric:
                columns[f"low[{name}]"], columns[f"high[{name}]"] = a.low, a.high
            columns[f"values[{name}]"] = [a.values(i) for i in range(len(self))]
        for name, q in self.quasi_identifiers.items():
            columns[f"qi[{name}]"] = [q.value(i) for i in range(len(self))]
        return pd.DataFrame(columns)


def cell_members(acc: Accumulated, record: int) -> np.ndarray:
    """Record ids that shared every class of ``record`` (itself included)."""
    if acc.n_in[record] >= 2:
        return np.sort(acc.cell_member[acc.cell_owner == record])
    _, release, klass = acc.memberships(np.array([record]))
    same = (acc.mem_release == release[0]) & (acc.mem_class == klass[0])
    return np.sort(acc.mem_record[same])


def knowledge(store: HistoryStore, dataset: str,
              pseudonyms: Sequence[bytes] | None = None) -> Knowledge:
    """What the adversaries know of every record of ``dataset`` (or of ``pseudonyms``,
    in that order) after all its releases."""
    acc = accumulated(store, dataset)
    views = [store.load(r.info, labels=True) for r in acc.releases if r.info is not None]
    return _knowledge(acc, dataset, pseudonyms, views)


def knowledge_views(views: Sequence[ReleaseView],
                    pseudonyms: Sequence[bytes] | None = None) -> Knowledge:
    """:func:`knowledge` of releases already loaded (e.g. with a release about to be
    published). Quasi-identifier boxes need the views' labels; views loaded without them
    give no ``quasi_identifiers``."""
    views = sorted(views, key=lambda v: v.info.seq)
    acc = fold(views)
    return _knowledge(acc, views[0].info.dataset if views else "", pseudonyms, views)


def _knowledge(acc: Accumulated, dataset: str, pseudonyms: Sequence[bytes] | None,
               views: Sequence[ReleaseView]) -> Knowledge:
    if pseudonyms is None:
        ids = np.arange(acc.n_records)
    else:
        ids = acc.record_ids([bytes(p) for p in pseudonyms]) if len(pseudonyms) else \
            np.zeros(0, dtype=np.int64)
        if (ids < 0).any():
            missing = int((ids < 0).sum())
            first = bytes(list(pseudonyms)[int(np.flatnonzero(ids < 0)[0])])
            raise HistoryError(f"{missing} of the {len(ids)} records given are in no "
                               f"release of {dataset!r} (first: {first.hex()}); ask only "
                               f"about recorded records")
    m = _measure(acc, ids)
    owner, release, klass = acc.memberships(ids)
    classes = np.full((acc.n_releases, len(ids)), -1, dtype=np.int64)
    classes[release, owner] = klass
    attributes = {}
    for a in acc.attributes:
        ld, ldp, lr = m.linkage(a)
        qd, qdp, qr = m.qi(a)
        attributes[a] = AttributeKnowledge(
            a, acc.values[a].numeric, _counts(m.distinct[a]), _counts(m.distinct_present[a]),
            m.low[a], m.high[a], m.bound[a], _counts(ld), _counts(ldp), lr, _counts(qd),
            _counts(qdp), qr, acc, ids)
    records = np.empty(len(ids), dtype=object)
    records[:] = [acc.pseudonym(int(r)) for r in ids]
    return Knowledge(dataset, [r.seq for r in acc.releases], records, classes,
                     m.candidates_linkage, m.candidates_qi, m.row_values, attributes,
                     _qi_knowledge(views, classes), acc, ids)


def _counts(values: np.ndarray) -> np.ndarray:
    return np.nan_to_num(values, nan=0.0).astype(np.int64)


# -- quasi-identifier boxes --------------------------------------------------------------------


def _qi_knowledge(views: Sequence[ReleaseView], classes: np.ndarray) -> dict[str, QIKnowledge]:
    if not views:
        return {}
    qis = list(views[-1].info.quasi_identifiers)
    if not all(q in v.labels.columns for v in views for q in qis):
        return {}
    return {q: _qi_box(q, views, classes) for q in qis}


def _qi_box(qi: str, views: Sequence[ReleaseView], classes: np.ndarray) -> QIKnowledge:
    """Intersect the labels of a quasi-identifier: each distinct label is parsed once."""
    n = classes.shape[1]
    per_view = [v.labels[qi].to_numpy(dtype=object) for v in views]
    codes, names = pd.factorize(pd.Series(np.concatenate(per_view) if per_view else [],
                                          dtype=object), use_na_sentinel=False)
    names = np.asarray(names, dtype=object)
    kind, low, high, set_offsets, set_elements, elements = label_boxes(names)
    starts = np.cumsum([0, *(len(p) for p in per_view)])
    label = np.full(classes.shape, -1, dtype=np.int64)
    for i in range(len(views)):
        here = classes[i] >= 0
        label[i, here] = codes[starts[i] + classes[i, here]]
    present = label >= 0
    safe = np.where(present, label, 0)
    kinds = np.where(present, kind[safe], -1)
    k_max = kinds.max(axis=0, initial=-1)
    k_min = np.where(present, kinds, len(QI_KINDS)).min(axis=0, initial=len(QI_KINDS))
    record_kind = np.where((k_min == k_max) & (k_max >= 0), k_max, 2)
    low_r = np.where(present, low[safe], -np.inf).max(axis=0, initial=-np.inf)
    high_r = np.where(present, high[safe], np.inf).min(axis=0, initial=np.inf)
    interval = record_kind == 0
    low_r, high_r = np.where(interval, low_r, np.nan), np.where(interval, high_r, np.nan)
    # sets: an element is left when every release's label of the record holds it
    is_set = record_kind == 1
    view_of, rec = np.nonzero(present & is_set[None, :])
    lab = label[view_of, rec]
    owner, idx = _expand(set_offsets[lab], set_offsets[lab + 1])
    n_elements = max(len(elements), 1)
    keys, counts = np.unique(rec[owner] * n_elements + set_elements[idx], return_counts=True)
    kept = keys[counts == present.sum(axis=0)[keys // n_elements]]
    rec_offsets = np.concatenate([[0], np.cumsum(np.bincount(kept // n_elements,
                                                             minlength=n))])
    return QIKnowledge(qi, np.asarray(QI_KINDS, dtype=object)[record_kind], low_r, high_r,
                       label, names, rec_offsets, elements[kept % n_elements])

