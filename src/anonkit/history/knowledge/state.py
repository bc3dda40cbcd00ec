"""The accumulated knowledge as the history keeps it: packed into two blobs (numpy arrays,
no pickles) and read back, and :func:`accumulated`, the knowledge of a dataset after its
latest release -- the one kept, or rebuilt from the releases when it cannot be used."""

from __future__ import annotations

import json
import warnings

import numpy as np

from anonkit.errors import HistoryError
from anonkit.history.knowledge.engine import (
    Accumulated,
    _Entries,
    _Multisets,
    _need,
    _Release,
    _Values,
    fold,
)
from anonkit.history.store import HistoryStore

#: the arrays of the knowledge that hold records' sensitive values: the history encrypts
#: them (the rest -- who was in which class, the multisets, the bounds derived from them --
#: is what the records and the releases show already; it is authenticated, not encrypted)
PRIVATE = ("mem_value", "cell_value")
_STATE_FORMAT = 1
_STATE_MAGIC = b"anonkit-knowledge\x00"


def to_bytes(acc: Accumulated) -> tuple[bytes, bytes]:
    """The knowledge as two blobs (numpy arrays, no pickles), ``(public, private)``: the
    history keeps them (see :data:`PRIVATE`)."""
    arrays: dict[str, np.ndarray] = {
        "keys": acc.keys, "n_in": acc.n_in, "min_real": acc.min_real,
        "row_values": acc.row_values, "unknown_rows": acc.unknown_rows,
        "mem_release": acc.mem_release, "mem_record": acc.mem_record,
        "mem_class": acc.mem_class, "cell_owner": acc.cell_owner,
        "cell_member": acc.cell_member, "atom": acc.atom, "atom_size": acc.atom_size,
        "accepted": acc.accepted}
    private: dict[str, np.ndarray] = {}
    meta: dict[str, object] = {
        "format": _STATE_FORMAT, "attributes": acc.attributes,
        "releases": [{"seq": r.seq, "row_values": r.row_values,
                      "values_known": r.values_known} for r in acc.releases],
        "values": {a: {"numeric": v.numeric, "names": v.names}
                   for a, v in acc.values.items()}}
    for i, attr in enumerate(acc.attributes):
        arrays[f"homogeneous.{i}"] = acc.homogeneous[attr]
        private[f"mem_value.{i}"] = acc.mem_value[attr]
        private[f"cell_value.{i}"] = acc.cell_value[attr]
        e = acc.entries[attr]
        for name in ("atom", "value", "low", "high", "smallest"):
            arrays[f"entries.{i}.{name}"] = getattr(e, name)
    for j, r in enumerate(acc.releases):
        for name in ("sizes", "counterfeits", "records"):
            arrays[f"release.{j}.{name}"] = getattr(r, name)
        for i, attr in enumerate(acc.attributes):
            ms = r.multisets[attr]
            for name in ("key", "count", "sum_lo", "sum_hi"):  # need: from the sizes
                arrays[f"release.{j}.{i}.{name}"] = getattr(ms, name)
    return _pack(arrays, meta), _pack(private, {})


def _pack(arrays: dict[str, np.ndarray], meta: dict[str, object]) -> bytes:
    """One header (names, dtypes, lengths) and the arrays' bytes end to end, compressed."""
    import pyarrow as pa

    arrays = {name: np.ascontiguousarray(_compact(a)) for name, a in arrays.items()}
    layout = {name: [a.dtype.str, len(a)] for name, a in arrays.items()}
    header = json.dumps({"meta": meta, "arrays": layout}).encode("utf-8")
    raw = b"".join([len(header).to_bytes(8, "little"), header,
                    *(a.tobytes() for a in arrays.values())])
    return _STATE_MAGIC + len(raw).to_bytes(8, "little") + pa.compress(raw, codec="zstd",
                                                                          asbytes=True)


def _unpack(blob: bytes) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    import pyarrow as pa

    if blob[:len(_STATE_MAGIC)] != _STATE_MAGIC:
        raise ValueError("not an anonkit knowledge blob")
    size = int.from_bytes(blob[len(_STATE_MAGIC):len(_STATE_MAGIC) + 8], "little")
    raw = pa.decompress(blob[len(_STATE_MAGIC) + 8:], decompressed_size=size, codec="zstd",
                        asbytes=True)
    n_header = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n_header].decode("utf-8"))
    data, at = {}, 8 + n_header
    for name, (dtype, length) in header["arrays"].items():
        a = np.frombuffer(raw, dtype=np.dtype(dtype), count=int(length), offset=at)
        at += a.nbytes
        data[name] = _widen(a) if a.dtype.kind in "iuf" else a.copy()
    return data, header["meta"]


def _compact(a: np.ndarray) -> np.ndarray:
    """The narrowest of int32 / float32 that holds ``a`` exactly (ids, classes, counts and
    bounds are small whole numbers), so the kept blob is about half as large."""
    if a.dtype.kind in "iu" and len(a) and a.min() >= -(2**31) and a.max() < 2**31:
        return a.astype(np.int32)
    if a.dtype.kind == "f" and len(a):
        narrow = a.astype(np.float32)
        if np.array_equal(narrow.astype(a.dtype), a, equal_nan=True):
            return narrow
    return a


def _widen(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return a.astype(np.int64)
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    return a


def from_bytes(public: bytes, private: bytes) -> Accumulated:
    """The knowledge :func:`to_bytes` packed."""
    try:
        data, meta = _unpack(public)
        data.update(_unpack(private)[0])
        if meta.get("format") != _STATE_FORMAT:
            raise ValueError(f"format {meta.get('format')}")
        acc = Accumulated(meta["attributes"])  # type: ignore[arg-type]
        for name in ("keys", "n_in", "min_real", "row_values", "unknown_rows", "mem_release",
                     "mem_record", "mem_class", "cell_owner", "cell_member", "atom",
                     "atom_size"):
            setattr(acc, name, data[name])
        # kept since the gate judges every record; an older state accepted none
        acc.accepted = data.get("accepted", np.zeros(len(acc.keys), dtype=bool)).astype(bool)
        acc.values = {a: _Values(bool(v["numeric"]), v["names"])
                      for a, v in meta["values"].items()}  # type: ignore[attr-defined]
        for i, attr in enumerate(acc.attributes):
            acc.homogeneous[attr] = data[f"homogeneous.{i}"]
            acc.mem_value[attr] = data[f"mem_value.{i}"]
            acc.cell_value[attr] = data[f"cell_value.{i}"]
            acc.entries[attr] = _Entries(*(data[f"entries.{i}.{name}"] for name in (
                "atom", "value", "low", "high", "smallest")))
        for j, r in enumerate(meta["releases"]):  # type: ignore[arg-type]
            sizes, fakes, records = (data[f"release.{j}.{name}"] for name in (
                "sizes", "counterfeits", "records"))
            multisets = {}
            for i, attr in enumerate(acc.attributes):
                key, count, sum_lo, sum_hi = (data[f"release.{j}.{i}.{name}"] for name in (
                    "key", "count", "sum_lo", "sum_hi"))
                multisets[attr] = _Multisets(key, count, _need(key, count, sizes, records),
                                             sum_lo, sum_hi)
            acc.releases.append(_Release(int(r["seq"]), sizes, fakes, records,
                                         bool(r["row_values"]), bool(r["values_known"]),
                                         multisets))
    except (KeyError, ValueError, TypeError, OSError, ArithmeticError) as exc:
        raise HistoryError(f"the accumulated knowledge kept in the history cannot be read "
                           f"({exc})") from None
    return acc


class KnowledgeRebuiltWarning(UserWarning):
    """The knowledge kept in the history could not be used and was rebuilt."""


def accumulated(store: HistoryStore, dataset: str) -> Accumulated:
    """The knowledge of ``dataset`` after its latest release: the one the history keeps
    when it is that recent, else rebuilt from the releases. Read-only: a rebuilt knowledge
    is kept by the next publish, not here."""
    infos = store.releases(dataset)
    acc: Accumulated | None = None
    try:
        kept = store.knowledge_state(dataset)
        if kept is not None and infos and kept[0] == infos[-1].seq:
            acc = from_bytes(*kept[1])
            if [r.seq for r in acc.releases] != [i.seq for i in infos]:
                raise HistoryError(f"the knowledge kept for {dataset!r} does not hold its "
                                   f"releases {[i.seq for i in infos]}")
    except HistoryError as exc:
        # derived data: the releases are the record, so rebuild rather than refuse
        warnings.warn(KnowledgeRebuiltWarning(f"{exc}; rebuilt from the releases"),
                      stacklevel=2)
        acc = None
    if acc is None:
        acc = fold([store.load(info, labels=False) for info in infos])
    for r, info in zip(acc.releases, infos, strict=True):
        r.info = info
    return acc
