"""What the history records and returns: a recorded release (:class:`ReleaseInfo`, one
row of ``anonkit_releases``), a release ready to be recorded (:class:`PreparedRelease`), a
release as an adversary sees it (:class:`ReleaseView`, with its :class:`ClassValues` and the
:class:`RecordMap` behind it), and the records a release shares with other datasets
(:class:`SharedRecords`).

A release is of one *kind*: ``generalized`` (one generalized row per input row, classes are
rows with equal released QIs, possibly with counterfeit rows added: they count in a class's
size, and in its ``counterfeits``), ``permuted`` (exact QIs, sensitive values permuted within
explicit groups: a group is a class) or ``synthetic`` (tuples with no input row behind them:
no record map). It records its *threat model* (what its method claims against repeated
releases), the *cross-release requirements* of its privacy models (what the audit checks),
and whether a user-given seed drove its randomness (never the seed).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa

from anonkit import __version__
from anonkit._util.files import sha256_file
from anonkit.errors import HistoryError
from anonkit.models.base import CrossReleaseRequirement

RELEASE_KINDS = ("generalized", "permuted", "synthetic")


@dataclass(frozen=True)
class RecordMap:
    """A release's pseudonym -> class map and class sizes, as arrays (one row of
    ``record_maps_table``)."""

    keys: np.ndarray  # (n_records,) S16, ascending
    classes: np.ndarray  # (n_records,) int64, aligned with keys
    sizes: np.ndarray  # (n_classes,) int64, by class id
    counterfeits: np.ndarray  # (n_classes,) int64
    #: (n_records,) S16: the history-wide pseudonyms, aligned with keys; None when the
    #: release has none (or they were not read: ``load`` does not need them)
    persons: np.ndarray | None = None

    @classmethod
    def build(cls, hashes: Sequence[bytes] | np.ndarray, classes: Sequence[int] | np.ndarray,
              sizes: Sequence[int] | np.ndarray, counterfeits: Sequence[int] | np.ndarray,
              persons: Sequence[bytes] | np.ndarray | None = None) -> RecordMap:
        """Checked, with the pseudonyms sorted by bytes (their classes and history-wide
        pseudonyms follow). Pseudonyms are lists of bytes or S16 arrays (taken as they are:
        converting a list of a million costs ~0.1 s)."""
        packed = pseudonym_array(hashes, "record pseudonym")
        codes = np.asarray(classes, dtype=np.int64)
        if len(packed) != len(codes):
            raise HistoryError(f"the release has {len(packed)} record pseudonyms but "
                               f"{len(codes)} record classes; nothing was written")
        people = None if persons is None else pseudonym_array(persons, "history-wide pseudonym")
        if people is not None and len(people) != len(packed):
            raise HistoryError(f"the release has {len(packed)} record pseudonyms but "
                               f"{len(people)} history-wide pseudonyms; nothing was written")
        if len(packed) > 1 and not (packed[1:] > packed[:-1]).all():
            order = np.argsort(packed, kind="stable")
            packed, codes = packed[order], codes[order]
            if people is not None:
                people = people[order]
            # the primary key of anonkit_records refused a repeated pseudonym; the map must
            # too (one record, two classes, is no map)
            repeated = np.flatnonzero(packed[1:] == packed[:-1])
            if len(repeated):
                raise HistoryError(f"the release has {len(repeated)} repeated record "
                                   f"pseudonyms (the same record twice); nothing was written")
        sizes = np.asarray(sizes, dtype=np.int64)
        fakes = np.asarray(counterfeits, dtype=np.int64)
        int32 = np.iinfo(np.int32)
        for what in (codes, sizes, fakes):
            if len(what) and (what.min() < int32.min or what.max() > int32.max):
                raise HistoryError("a class id or class size does not fit 32 bits; nothing "
                                   "was written")
        return cls(packed, codes, sizes, fakes, people)

    def row(self) -> dict[str, object]:
        """The columns of ``record_maps_table`` (but ``release_id``)."""
        return {"n_records": len(self.keys), "keys": self.keys.tobytes(),
                "classes": self.classes.astype("<i4").tobytes(),
                "sizes": self.sizes.astype("<i4").tobytes(),
                "counterfeits": self.counterfeits.astype("<i4").tobytes(),
                "persons": None if self.persons is None else self.persons.tobytes()}


def pseudonym_array(values: Sequence[bytes] | np.ndarray, what: str = "pseudonym"
                    ) -> np.ndarray:
    """16-byte pseudonyms as a contiguous S16 array: an S16 array as it is (no copy), a
    list converted (a longer item is refused: "S16" would cut it silently; a shorter one
    is padded with NUL bytes, as numpy keeps it anyway)."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "S" and \
            values.dtype.itemsize == 16:
        return np.ascontiguousarray(values)
    if not len(values):
        return np.zeros(0, dtype="S16")
    raw = np.asarray(values, dtype="S")
    if raw.dtype.itemsize > 16:
        raise HistoryError(f"a {what} has {raw.dtype.itemsize} bytes; the history keeps 16; "
                           f"nothing was written")
    return raw.astype("S16")


# -- what a release is ------------------------------------------------------------------


@dataclass(frozen=True)
class ReleaseInfo:
    """One row of ``anonkit_releases``: everything about a release but its classes."""

    id: int
    dataset: str
    seq: int
    created_at: datetime
    method: str
    parameters: dict[str, object]
    key_column: str
    columns: dict[str, dict[str, str]]
    quasi_identifiers: list[str]
    sensitive: list[str]
    models: list[dict[str, object]]
    verdicts: list[dict[str, object]]
    n_input_rows: int
    n_released_rows: int
    n_classes: int
    content_hash: str
    file_size: int
    output_path: str
    pending_path: str | None
    anonkit_version: str
    release_kind: str = "generalized"
    threat_model: str = "one-shot"
    requirements: list[dict[str, object]] = field(default_factory=list)
    seeded: bool = False
    group_column: str | None = None
    #: the lineage decision (see ``check_lineage``); None: never checked (migrated)
    lineage: dict[str, object] | None = None
    #: the gate's judgement (see ``anonkit.history.publish``); None: first or migrated
    gate: dict[str, object] | None = None
    #: the release's authentication and content digests (see :mod:`anonkit.history.chain`)
    auth: str | None = None
    content_digest: dict[str, str] | None = None

    @property
    def gate_overridden(self) -> bool:
        """Published with ``--allow-breach`` over a breach the gate found."""
        return bool(self.gate and self.gate.get("overridden"))

    @property
    def passed(self) -> bool:
        return bool(self.verdicts) and all(bool(v.get("passed")) for v in self.verdicts)

    def to_dict(self) -> dict[str, object]:
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["created_at"] = self.created_at.isoformat()
        return out

    def file_status(self) -> str:
        """``ok``, ``missing``, ``modified`` (the file is not the one published) or
        ``pending`` (the publish committed but the file is still at its temporary name)."""
        if self.pending_path is not None:
            return "pending"
        path = Path(self.output_path)
        if not path.exists():
            return "missing"
        if path.stat().st_size != self.file_size or sha256_file(path) != self.content_hash:
            return "modified"
        return "ok"


@dataclass
class PreparedRelease:
    """A release ready for the history: built by :mod:`anonkit.history.publish`."""

    dataset: str
    seq: int
    method: str
    parameters: dict[str, object]
    key_column: str
    columns: dict[str, dict[str, str]]
    quasi_identifiers: list[str]
    sensitive: list[str]
    models: list[dict[str, object]]
    verdicts: list[dict[str, object]]
    n_input_rows: int
    n_released_rows: int
    class_rows: list[tuple[int, int, str]]  # (class_id, size, qi_labels)
    class_values: list[ClassValues]  # one per sensitive attribute, in order
    record_hashes: list[bytes]  # sorted
    record_classes: list[int]  # aligned with record_hashes
    content_hash: str = ""
    file_size: int = 0
    output_path: str = ""
    pending_path: str | None = None
    release_kind: str = "generalized"
    threat_model: str = "one-shot"
    requirements: list[CrossReleaseRequirement] = field(default_factory=list)
    seeded: bool = False
    group_column: str | None = None
    counterfeits: list[int] | None = None  # per class, aligned with class_rows
    method_state: bytes | None = None
    auxiliary: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: per sensitive attribute, every record's entry in its multisets (aligned with
    #: record_hashes; see ``record_values_table``); None: not known
    record_values: dict[str, np.ndarray] | None = None
    #: history-wide pseudonyms, aligned with record_hashes (a list of bytes or an S16
    #: array; None: not known)
    record_persons: Sequence[bytes] | np.ndarray | None = None
    #: per record, the fingerprint of its exact values (uint64, aligned with
    #: record_hashes; see anonkit.history.rekey); None: not kept
    record_fingerprints: np.ndarray | None = None
    #: the lineage decision recorded with the release (see ``check_lineage``)
    lineage: dict[str, object] | None = None
    #: the gate's judgement recorded with the release (see ``ReleaseInfo.gate``)
    gate: dict[str, object] | None = None
    #: the history's last release id when the lineage was decided: a release of another
    #: dataset recorded after it was not seen by that decision (see ``commit_release``)
    lineage_mark: int | None = None
    #: the dataset's accumulated adversary knowledge through this release (opaque; see
    #: ``knowledge_table``); None: none, and any older state of the dataset is dropped
    knowledge_state: tuple[bytes, bytes] | None = None

    @property
    def n_classes(self) -> int:
        return len(self.class_rows)

    def counterfeit_array(self) -> np.ndarray:
        """Counterfeit rows per class (zeros when the release has none)."""
        if self.counterfeits is None:
            return np.zeros(self.n_classes, dtype=np.int64)
        return np.asarray(self.counterfeits, dtype=np.int64)

    def view(self) -> ReleaseView:
        """The release as the audit sees it, before it is recorded (to check a candidate
        against the history)."""
        values = release_values(self)
        info = ReleaseInfo(id=-1, **{k: v for k, v in values.items()  # type: ignore[arg-type]
                                     if k != "anonkit_version"}, anonkit_version=__version__)
        keys = np.empty(len(self.record_hashes), dtype=object)
        keys[:] = self.record_hashes
        return ReleaseView(info, np.array([row[1] for row in self.class_rows], dtype=np.int64),
                           pd.DataFrame(index=pd.RangeIndex(self.n_classes)),
                           {cv.attribute: cv for cv in self.class_values}, keys,
                           np.asarray(self.record_classes, dtype=np.int64),
                           self.counterfeit_array(),
                           None if self.record_values is None else
                           {a: np.asarray(c, dtype=np.int64)
                            for a, c in self.record_values.items()})


@dataclass
class SharedRecords:
    """Records a release shares with another dataset of the history."""

    dataset: str
    records: int = 0  # how many of the release's records that dataset holds
    releases: list[int] = field(default_factory=list)  # its releases holding some
    #: its releases migrated from version 1: they keep no history-wide pseudonyms, so
    #: whether they hold the release's records is unknown
    unmatched_releases: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {"dataset": self.dataset, "records": self.records,
                "releases": list(self.releases),
                "unmatched_releases": list(self.unmatched_releases)}


@dataclass(frozen=True)
class ClassValues:
    """One sensitive attribute's released multisets: entries sorted by class, then value."""

    attribute: str
    class_index: np.ndarray  # (n_entries,) int64
    value: np.ndarray  # (n_entries,) float64 if numeric, else object (str; None = missing)
    count: np.ndarray  # (n_entries,) int64
    numeric: bool

    def to_parquet(self) -> bytes:
        import pyarrow as pa
        import pyarrow.parquet as pq

        values = (pa.array(self.value, type=pa.float64()) if self.numeric
                  else pa.array(self.value, type=pa.string(), from_pandas=True))
        table = pa.table({"class_id": pa.array(self.class_index, type=pa.int32()),
                          "value": values, "count": pa.array(self.count, type=pa.int32())})
        sink = io.BytesIO()
        pq.write_table(table, sink, compression="zstd")
        return sink.getvalue()

    @classmethod
    def from_parquet(cls, attribute: str, blob: bytes, numeric: bool) -> ClassValues:
        import pyarrow as pa
        import pyarrow.parquet as pq

        # text read as a dictionary: one str object per distinct value, not per entry (a
        # third of the time of a load); no threads: a thread pool costs more than it saves
        # on a table this small
        table = pq.ParquetFile(pa.BufferReader(blob),
                               read_dictionary=None if numeric else ["value"]
                               ).read(use_threads=False)
        if numeric:
            value = table["value"].to_numpy(zero_copy_only=False)
        else:
            value = _dictionary_values(table["value"])
        return cls(attribute, table["class_id"].to_numpy().astype(np.int64), value,
                   table["count"].to_numpy().astype(np.int64), numeric)


def _dictionary_values(column: object) -> np.ndarray:
    """A dictionary-encoded text column as an object array (None where missing)."""
    parts = []
    for chunk in column.chunks:  # type: ignore[attr-defined]
        if not hasattr(chunk, "dictionary"):  # a reader that ignored read_dictionary
            parts.append(np.asarray(chunk.to_numpy(zero_copy_only=False), dtype=object))
            continue
        names = np.append(np.asarray(chunk.dictionary.to_numpy(zero_copy_only=False),
                                     dtype=object), None)
        # a missing value points past the dictionary, at the appended None
        codes = chunk.indices.fill_null(len(names) - 1).to_numpy().astype(np.int64)
        parts.append(names[codes])
    return np.concatenate(parts) if parts else np.empty(0, dtype=object)


@dataclass
class ReleaseView:
    """A release as an adversary sees it, plus the pseudonym -> class map."""

    info: ReleaseInfo
    sizes: np.ndarray  # (n_classes,) int64
    labels: pd.DataFrame  # one row per class, one column per quasi-identifier
    values: dict[str, ClassValues]
    record_keys: np.ndarray  # (n_records,) object: 16-byte pseudonyms
    record_classes: np.ndarray  # (n_records,) int64
    #: (n_classes,) int64: counterfeit rows per class, counted in ``sizes``
    counterfeits: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: per sensitive attribute, every record's entry index in ``values[attr]`` (aligned with
    #: ``record_keys``); None when the history has none for this release
    record_values: dict[str, np.ndarray] | None = None

    def __post_init__(self) -> None:
        if len(self.counterfeits) == 0 and len(self.sizes):
            self.counterfeits = np.zeros(len(self.sizes), dtype=np.int64)

    @property
    def n_classes(self) -> int:
        return len(self.sizes)

    @property
    def real_sizes(self) -> np.ndarray:
        """People per class: its rows less its counterfeits."""
        return self.sizes - self.counterfeits


# -- a release as a row of anonkit_releases ---------------------------------------------


def release_values(release: PreparedRelease) -> dict[str, object]:
    """The columns of the release's ``anonkit_releases`` row (its id, ``auth`` and
    ``content_digest`` are set by the database and the chain)."""
    return {
        "dataset": release.dataset, "seq": release.seq, "created_at": datetime.now(UTC),
        "method": release.method, "parameters": _jsonable(release.parameters),
        "key_column": release.key_column, "columns": release.columns,
        "quasi_identifiers": release.quasi_identifiers, "sensitive": release.sensitive,
        "models": _jsonable(release.models), "verdicts": _jsonable(release.verdicts),
        "n_input_rows": release.n_input_rows, "n_released_rows": release.n_released_rows,
        "n_classes": release.n_classes, "content_hash": release.content_hash,
        "file_size": release.file_size, "output_path": release.output_path,
        "pending_path": release.pending_path, "anonkit_version": __version__,
        "release_kind": _kind(release.release_kind), "threat_model": str(release.threat_model),
        "requirements": _requirement_dicts(release.requirements),
        "seeded": bool(release.seeded), "group_column": release.group_column,
        "lineage": _jsonable(release.lineage) if release.lineage is not None else None,
        "gate": _jsonable(release.gate) if release.gate is not None else None,
    }


def _kind(kind: object) -> str:
    text = str(kind)
    if text not in RELEASE_KINDS:
        raise HistoryError(f"unknown release kind {text!r}; one of {', '.join(RELEASE_KINDS)}")
    return text


def _requirement_dicts(requirements: Sequence[object]) -> list[dict[str, object]]:
    """Requirements as stored: ``CrossReleaseRequirement.to_dict()`` (mappings are read
    through ``from_dict``, so a malformed one fails here, not in a later audit)."""
    out = []
    for r in requirements:
        if not isinstance(r, CrossReleaseRequirement):
            if not isinstance(r, dict):
                raise HistoryError(f"a cross-release requirement must be a "
                                   f"CrossReleaseRequirement, got {r!r}")
            try:
                r = CrossReleaseRequirement.from_dict(r)
            except (KeyError, TypeError, ValueError) as exc:
                raise HistoryError(f"malformed cross-release requirement {r!r}: {exc}") from None
        out.append(_jsonable(r.to_dict()))
    return out  # type: ignore[return-value]


def _jsonable(value: object) -> object:
    """Parameters as plain JSON: numpy scalars as numbers, NaN as null, tuples and sets as
    lists, anything else (paths, enums, model objects) as its text."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_jsonable(v) for v in value), key=str)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def release_info(row: sa.RowMapping) -> ReleaseInfo:
    """A release read back from its ``anonkit_releases`` row."""
    created = row["created_at"]
    if isinstance(created, str):
        created = datetime.fromisoformat(created)
    if created.tzinfo is None:  # SQLite keeps no time zone; we always write UTC
        created = created.replace(tzinfo=UTC)
    return ReleaseInfo(
        id=row["id"], dataset=row["dataset"], seq=row["seq"], created_at=created,
        method=row["method"], parameters=row["parameters"], key_column=row["key_column"],
        columns=row["columns"], quasi_identifiers=row["quasi_identifiers"],
        sensitive=row["sensitive"], models=row["models"], verdicts=row["verdicts"],
        n_input_rows=row["n_input_rows"], n_released_rows=row["n_released_rows"],
        n_classes=row["n_classes"], content_hash=row["content_hash"],
        file_size=row["file_size"], output_path=row["output_path"],
        pending_path=row["pending_path"], anonkit_version=row["anonkit_version"],
        release_kind=row["release_kind"], threat_model=row["threat_model"],
        requirements=list(row["requirements"] or []), seeded=bool(row["seeded"]),
        group_column=row["group_column"], lineage=row["lineage"], gate=row["gate"],
        auth=row["auth"], content_digest=row["content_digest"])
