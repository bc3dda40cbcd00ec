"""The release history: what was published, when, how, and what an adversary saw in it.

One history (an SQLite file by default, or a PostgreSQL database) holds any number of
*datasets*; each dataset is a sequence of releases numbered 1, 2, 3, ... Per release it keeps

- ``anonkit_releases``: dataset, sequence number, time, method and all its parameters, the
  columns and their roles, the privacy models and their verdicts, row counts, the SHA-256 and
  path of the published file;
- ``anonkit_classes``: per equivalence class what an adversary sees of its quasi-identifiers:
  its size and the released label of every quasi-identifier;
- ``anonkit_class_values``: per sensitive attribute, the multiset of released values of every
  class (a Parquet table ``class_id, value, count`` stored as one value per attribute:
  with a numeric attribute whose values are nearly unique, a million-row release has a
  million entries, which a row per entry or a JSON per class would make the slowest part of
  recording and of auditing);
- ``anonkit_record_maps`` (since version 3): per release one row of blobs: per input
  record its pseudonym ``HMAC(secret, key)`` (see :mod:`anonkit.history.secret`) and the
  class it went to -- what lets the next release honour this one, and the audit follow a
  record across releases, without raw keys --, its history-wide pseudonym (the same in every
  dataset), which shows a new release that shares records with another dataset (none for
  records migrated from version 1: it cannot be computed without their keys), and the class
  sizes: what :meth:`HistoryStore.load` and the lineage check read;
- ``anonkit_records``: the same, one row per record, for releases recorded before version 3
  only (kept as they were; a new release writes none: a million rows were a third of the
  time of recording a million-row release);
- ``anonkit_knowledge`` (since version 3): per dataset, the adversary's accumulated
  knowledge after its latest release, an opaque blob, encrypted and authenticated;
- ``anonkit_method_state``: an opaque blob a sequential method keeps for its next release;
- ``anonkit_auxiliary``: tables published beside a release (counterfeit counts per class,
  the (k,e) group table), one Parquet blob per name.

A release is of one *kind*: ``generalized`` (one generalized row per input row, classes are
rows with equal released QIs, possibly with counterfeit rows added: they count in a class's
size, and in its ``counterfeits``), ``permuted`` (exact QIs, sensitive values permuted within
explicit groups: a group is a class) or ``synthetic`` (tuples with no input row behind them:
no record map). It records its *threat model* (what its method claims against repeated
releases), the *cross-release requirements* of its privacy models (what the audit checks),
and whether a user-given seed drove its randomness (never the seed).

``anonkit_schema`` holds the format version. A history of an older version is upgraded when
opened for writing (:mod:`anonkit.history.migrations`; a read-only open refuses it); a
newer version, or a database that is not an anonkit history at all, is a
:class:`HistoryError`, and nothing is ever created in or rewritten in a database this module
did not create.

Everything is SQLAlchemy Core. The bulk insert of classes (up to a million rows for a
million-row release) bypasses per-row Core processing: rows are plain tuples, sorted by
primary key so the B-tree only ever appends, handed to the driver's ``executemany``
(SQLite) or ``COPY`` (PostgreSQL).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import secrets
import sqlite3
import urllib.parse
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, Engine, make_url

from anonkit.data.io import sha256_file
from anonkit.errors import ConcurrentPublishError, HistoryError
from anonkit.history.chain import (
    TamperedHistoryError,
    check_chain,
    check_part,
    head_tag,
    part_digest,
    release_tag,
)
from anonkit.history.secret import (
    Secret,
    canonical_keys,
    create_secret_file,
    resolve_secret,
    secret_path_beside,
    warn_if_beside,
)
from anonkit.models.base import CrossReleaseRequirement

SCHEMA_VERSION = 4
RELEASE_KINDS = ("generalized", "permuted", "synthetic")
APPLICATION = "anonkit-history"
HISTORY_ENV = "ANONKIT_HISTORY"
DEFAULT_HISTORY = "anonkit.db"
#: how long a publisher waits for another one's SQLite write lock before giving up
SQLITE_BUSY_TIMEOUT = 60.0

metadata = sa.MetaData()

schema_table = sa.Table(
    "anonkit_schema", metadata,
    sa.Column("application", sa.String(64), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("created_by", sa.String(64), nullable=False),
    # HMAC(secret, CHECK_MESSAGE): recognises the right secret, reveals nothing of it
    sa.Column("secret_check", sa.String(64), nullable=False),
    # since version 4: the head of the releases' authentication chain (see chain.py)
    sa.Column("chain", sa.String(100), nullable=True),
)

releases_table = sa.Table(
    "anonkit_releases", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("dataset", sa.String(200), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("method", sa.String(100), nullable=False),
    sa.Column("parameters", sa.JSON, nullable=False),
    sa.Column("key_column", sa.String(200), nullable=False),
    sa.Column("columns", sa.JSON, nullable=False),  # name -> {role, kind}, table order
    sa.Column("quasi_identifiers", sa.JSON, nullable=False),
    sa.Column("sensitive", sa.JSON, nullable=False),
    sa.Column("models", sa.JSON, nullable=False),  # [{model, parameters}]
    sa.Column("verdicts", sa.JSON, nullable=False),  # [Verdict.to_dict()]
    sa.Column("n_input_rows", sa.Integer, nullable=False),
    sa.Column("n_released_rows", sa.Integer, nullable=False),
    sa.Column("n_classes", sa.Integer, nullable=False),
    sa.Column("content_hash", sa.String(64), nullable=False),  # SHA-256 of the file
    sa.Column("file_size", sa.BigInteger, nullable=False),
    sa.Column("output_path", sa.Text, nullable=False),
    # set while the file is still at its temporary name (see anonkit.history.publish)
    sa.Column("pending_path", sa.Text, nullable=True),
    sa.Column("anonkit_version", sa.String(32), nullable=False),
    # since version 2; the server defaults are what a migrated version-1 release gets
    sa.Column("release_kind", sa.String(20), nullable=False,
              server_default=sa.text("'generalized'")),
    sa.Column("threat_model", sa.String(100), nullable=False,
              server_default=sa.text("'one-shot'")),
    sa.Column("requirements", sa.JSON, nullable=False,  # [CrossReleaseRequirement.to_dict()]
              server_default=sa.text("'[]'")),
    # a user-given seed drove the privacy randomness (the seed itself is never recorded)
    sa.Column("seeded", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("group_column", sa.String(200), nullable=True),  # a permuted release's groups
    # the lineage decision: the records it shares with other datasets, and whether it was
    # published as a new lineage (see anonkit.history.publish.check_lineage); NULL for a
    # release migrated from version 1 (never checked)
    sa.Column("lineage", sa.JSON(none_as_null=True), nullable=True),
    # since version 4: what the publish-time gate found, and whether --allow-breach
    # overrode it (adversaries, records, time); NULL for a first release or a migrated one
    sa.Column("gate", sa.JSON(none_as_null=True), nullable=True),
    # since version 4: the release's HMAC in the history's chain, and the digests of its
    # content (record map, labels, multisets, ...) that the HMAC covers (see chain.py)
    sa.Column("auth", sa.String(64), nullable=True),
    sa.Column("content_digest", sa.JSON(none_as_null=True), nullable=True),
    # one release per (dataset, seq): the second of two concurrent publishers fails here
    sa.UniqueConstraint("dataset", "seq", name="anonkit_releases_dataset_seq"),
)

classes_table = sa.Table(
    "anonkit_classes", metadata,
    sa.Column("release_id", sa.Integer,
              sa.ForeignKey("anonkit_releases.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("class_id", sa.Integer, primary_key=True),
    sa.Column("size", sa.Integer, nullable=False),
    # JSON text: the released label of each quasi-identifier, in the release's QI order
    sa.Column("qi_labels", sa.Text, nullable=False),
    # counterfeit rows of the class (counted in size); since version 2
    sa.Column("counterfeits", sa.Integer, nullable=False, server_default=sa.text("0")),
    sqlite_with_rowid=False,
)

class_values_table = sa.Table(
    "anonkit_class_values", metadata,
    sa.Column("release_id", sa.Integer,
              sa.ForeignKey("anonkit_releases.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("attribute", sa.String(200), primary_key=True),
    sa.Column("numeric", sa.Boolean, nullable=False),
    sa.Column("n_entries", sa.Integer, nullable=False),
    # Parquet: class_id (int32), value (float64 or string; null = missing), count (int32),
    # sorted by class then value -- every class's released multiset of this attribute
    sa.Column("multisets", sa.LargeBinary, nullable=False),
)

#: Since version 3 this table holds only the records of releases recorded before it (kept
#: where they were; the upgrade copied them into ``record_maps_table``): a new release's
#: records are in its record map alone. Read only for a release without a record map.
records_table = sa.Table(
    "anonkit_records", metadata,
    sa.Column("release_id", sa.Integer,
              sa.ForeignKey("anonkit_releases.id", ondelete="CASCADE"), primary_key=True),
    # the record's pseudonym: HMAC-SHA256 of its key, truncated to 128 bits
    sa.Column("key_hash", sa.LargeBinary(16), primary_key=True),
    sa.Column("class_id", sa.Integer, nullable=False),
    # the history-wide pseudonym (the same key in every dataset gets the same one); NULL for
    # a record migrated from version 1
    sa.Column("person_hash", sa.LargeBinary(16), nullable=True),
    sqlite_with_rowid=False,
)

method_state_table = sa.Table(
    "anonkit_method_state", metadata,
    sa.Column("release_id", sa.Integer,
              sa.ForeignKey("anonkit_releases.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("state", sa.LargeBinary, nullable=False),
)

auxiliary_table = sa.Table(
    "anonkit_auxiliary", metadata,
    sa.Column("release_id", sa.Integer,
              sa.ForeignKey("anonkit_releases.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("n_rows", sa.Integer, nullable=False),
    sa.Column("content", sa.LargeBinary, nullable=False),  # Parquet
)

# -- per-record sensitive values, encrypted (the linkage adversary's exact measure) -------
#: Per release and sensitive attribute, every record's released value, as the index of its
#: entry in the release's multisets (class, value), one little-endian uint32 per record in
#: pseudonym order, XORed with a keystream: SHAKE-256 of HMAC(secret, domain, dataset,
#: release, attribute, nonce). Without the secret the blob is uniformly random and reveals
#: nothing; with it, the history is a table pseudonym -> value (as protected as the
#: pseudonyms themselves). A migrated version-1 release has none: the audit then bounds the
#: linkage adversary from the multisets.
record_values_table = sa.Table(
    "anonkit_record_values", metadata,
    sa.Column("release_id", sa.Integer,
              sa.ForeignKey("anonkit_releases.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("attribute", sa.String(200), primary_key=True),
    sa.Column("nonce", sa.LargeBinary(16), nullable=False),
    sa.Column("codes", sa.LargeBinary, nullable=False),
)
_VALUES_DOMAIN = b"anonkit record values\x00"
_FINGERPRINTS_DOMAIN = b"anonkit record fingerprints\x00"


def encrypt_fingerprints(secret: Secret, dataset: str, seq: int,
                         prints: np.ndarray) -> bytes:
    """A release's record fingerprints (uint64, in its record map's order), as stored."""
    nonce = os.urandom(16)
    data = np.ascontiguousarray(prints, dtype="<u8").tobytes()
    context = json.dumps([dataset, int(seq)]).encode("utf-8")
    stream = np.frombuffer(_keystream_bytes(secret, _FINGERPRINTS_DOMAIN, context, nonce,
                                            len(data)), dtype=np.uint8)
    return nonce + (np.frombuffer(data, dtype=np.uint8) ^ stream).tobytes()


def decrypt_fingerprints(secret: Secret, dataset: str, seq: int, blob: bytes) -> np.ndarray:
    nonce, data = blob[:16], np.frombuffer(blob[16:], dtype=np.uint8)
    context = json.dumps([dataset, int(seq)]).encode("utf-8")
    stream = np.frombuffer(_keystream_bytes(secret, _FINGERPRINTS_DOMAIN, context, nonce,
                                            len(data)), dtype=np.uint8)
    return np.frombuffer((data ^ stream).tobytes(), dtype="<u8").astype(np.uint64)


def _keystream_bytes(secret: Secret, domain: bytes, context: bytes, nonce: bytes,
                     n_bytes: int) -> bytes:
    """``n_bytes`` of SHAKE-256 of HMAC(secret, domain, context, nonce): a keystream that
    only the secret's holder can compute, a new one for every nonce."""
    import hmac

    key = hmac.digest(secret.value, domain + context + b"\x00" + nonce, "sha256")
    return hashlib.shake_256(key).digest(n_bytes)


def aes_ctr(secret: Secret, domain: bytes, context: bytes, nonce: bytes, data: bytes) -> bytes:
    """``data`` XORed with AES-256-CTR under a key only the secret's holder can compute
    (HMAC(secret, domain, context, nonce)): encrypts and decrypts. For the large blobs a
    publish reads and writes (record maps, the kept knowledge): gigabytes a second, where
    the SHAKE keystream of the records' values runs at about 230 MB/s."""
    import hmac

    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    key = hmac.digest(secret.value, domain + context + b"\x00" + nonce, "sha256")
    cipher = Cipher(algorithms.AES(key), modes.CTR(nonce)).encryptor()
    return cipher.update(data) + cipher.finalize()


_CLASSES_DOMAIN = b"anonkit record classes\x00"


def encrypt_classes(secret: Secret, dataset: str, seq: int, classes: bytes) -> bytes:
    """A record map's classes as stored: nonce + AES-CTR (which record is in which class is
    what a stolen history must not tell)."""
    nonce = os.urandom(16)
    context = json.dumps([dataset, int(seq)]).encode("utf-8")
    return nonce + aes_ctr(secret, _CLASSES_DOMAIN, context, nonce, classes)


def decrypt_classes(secret: Secret, dataset: str, seq: int, stored: bytes) -> bytes:
    context = json.dumps([dataset, int(seq)]).encode("utf-8")
    return aes_ctr(secret, _CLASSES_DOMAIN, context, stored[:16], stored[16:])


def _value_keystream(secret: Secret, dataset: str, seq: int, attribute: str, nonce: bytes,
                     n: int) -> np.ndarray:
    context = json.dumps([dataset, int(seq), attribute]).encode("utf-8")
    stream = _keystream_bytes(secret, _VALUES_DOMAIN, context, nonce, 4 * n)
    return np.frombuffer(stream, dtype="<u4").astype(np.int64)


def encrypt_record_values(secret: Secret, dataset: str, seq: int, attribute: str,
                          codes: np.ndarray) -> tuple[bytes, bytes]:
    """``(nonce, blob)`` of per-record entry indices (see ``record_values_table``)."""
    codes = np.asarray(codes, dtype=np.int64)
    nonce = os.urandom(16)
    mask = _value_keystream(secret, dataset, seq, attribute, nonce, len(codes))
    return nonce, (codes ^ mask).astype("<u4").tobytes()


def decrypt_record_values(secret: Secret, dataset: str, seq: int, attribute: str,
                          nonce: bytes, blob: bytes) -> np.ndarray:
    cipher = np.frombuffer(blob, dtype="<u4").astype(np.int64)
    return cipher ^ _value_keystream(secret, dataset, seq, attribute, nonce, len(cipher))


def record_entries(attr: str, column: pd.Series, class_ids: np.ndarray) -> np.ndarray:
    """Per row of ``column``, the index of its (class, value) entry in
    ``multisets(attr, column, class_ids)``."""
    return multisets_and_entries(attr, column, class_ids)[1]


#: the tables a version-2 history adds to a version-1 one
V2_TABLES = (method_state_table, auxiliary_table, record_values_table)

# -- since version 3 -----------------------------------------------------------------------
#: Per release, its pseudonym -> class map and its class sizes as blobs: what ``load``
#: reads in one row instead of one row per record and per class (a 50,000-record release:
#: ~0.15 s as rows, ~1 ms as blobs). ``keys``: the 16-byte pseudonyms concatenated in
#: ascending byte order (the order of ``anonkit_records``' primary key); ``classes``: their
#: classes, little-endian int32, aligned; ``sizes`` and ``counterfeits``: per class (by
#: class id) its rows and counterfeit rows, little-endian int32 -- copies of
#: ``anonkit_classes``' columns, whose rows are wide with labels: reading them was a third
#: of a load; ``persons``: the records' history-wide pseudonyms (16 bytes each), aligned
#: with ``keys``, or NULL when the release has none (migrated from version 1, or recorded
#: without them): what the lineage check reads, one row per release instead of one per
#: record. ``anonkit_classes`` stays what the labels read; ``anonkit_records`` holds only
#: releases recorded before version 3.
record_maps_table = sa.Table(
    "anonkit_record_maps", metadata,
    sa.Column("release_id", sa.Integer,
              sa.ForeignKey("anonkit_releases.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("n_records", sa.Integer, nullable=False),
    sa.Column("keys", sa.LargeBinary, nullable=False),
    sa.Column("classes", sa.LargeBinary, nullable=False),
    sa.Column("sizes", sa.LargeBinary, nullable=False),
    sa.Column("counterfeits", sa.LargeBinary, nullable=False),
    sa.Column("persons", sa.LargeBinary, nullable=True),
    # since version 4: per record (in keys' order) a keyed 64-bit fingerprint of its exact
    # quasi-identifier and sensitive values, encrypted (nonce + XOR with a keystream): what
    # tells a re-keyed export (see anonkit.history.rekey); NULL: none kept
    sa.Column("fingerprints", sa.LargeBinary, nullable=True),
    sqlite_with_rowid=False,
)

#: Per dataset, the adversary's accumulated knowledge after release ``through_seq`` (built
#: by :mod:`anonkit.history.knowledge`, so neither the gate nor the audit replays the
#: releases), as two opaque parts. The public part holds what the records and the releases
#: show already (who was in which class, the multisets, what follows from them); the
#: private part holds records' sensitive values, so it is encrypted like
#: ``record_values_table`` (a keystream of HMAC(secret, domain, [dataset, through_seq],
#: nonce)). Both are authenticated: ``tag`` is HMAC(secret, tag domain, context, nonce,
#: stored bytes), so a damaged or transplanted state is refused instead of audited.
knowledge_table = sa.Table(
    "anonkit_knowledge", metadata,
    sa.Column("dataset", sa.String(200), primary_key=True),
    sa.Column("through_seq", sa.Integer, nullable=False),
    sa.Column("nonce", sa.LargeBinary(16), nullable=False),
    sa.Column("tag", sa.LargeBinary(32), nullable=False),
    sa.Column("state", sa.LargeBinary, nullable=False),
    sqlite_with_rowid=False,
)
_KNOWLEDGE_DOMAIN = b"anonkit knowledge state\x00"
# a domain of its own: a tag's message never equals a keystream's (same secret, same HMAC)
_KNOWLEDGE_TAG_DOMAIN = b"anonkit knowledge state tag\x00"

#: the tables a version-3 history adds to a version-2 one
V3_TABLES = (record_maps_table, knowledge_table)


def _knowledge_context(dataset: str, through_seq: int) -> bytes:
    return json.dumps([dataset, int(through_seq)]).encode("utf-8")


def _knowledge_tag(secret: Secret, context: bytes, nonce: bytes, cipher: bytes) -> bytes:
    import hmac

    return hmac.digest(secret.value, _KNOWLEDGE_TAG_DOMAIN + context + nonce + cipher,
                       "sha256")


def encrypt_knowledge(secret: Secret, dataset: str, through_seq: int,
                      state: tuple[bytes, bytes]) -> tuple[bytes, bytes, bytes]:
    """``(nonce, tag, stored)`` of a dataset's knowledge state ``(public, private)`` (see
    ``knowledge_table``): ``stored`` is the public part's length (8 bytes, little-endian),
    then both parts encrypted (AES-CTR: who was in which class is what a stolen history
    must not tell, as much as the records' values); the tag covers all of it."""
    public, private = bytes(state[0]), bytes(state[1])
    context = _knowledge_context(dataset, through_seq)
    nonce = os.urandom(16)
    stored = len(public).to_bytes(8, "little") + aes_ctr(
        secret, _KNOWLEDGE_DOMAIN, context, nonce, public + private)
    return nonce, _knowledge_tag(secret, context, nonce, stored), stored


def decrypt_knowledge(secret: Secret, dataset: str, through_seq: int, nonce: bytes,
                      tag: bytes, stored: bytes) -> tuple[bytes, bytes]:
    """The knowledge state ``(public, private)``; :class:`HistoryError` when its tag does
    not match."""
    import hmac

    context = _knowledge_context(dataset, through_seq)
    n_public = int.from_bytes(stored[:8], "little")
    if not hmac.compare_digest(_knowledge_tag(secret, context, nonce, stored), tag) or \
            len(stored) < 8 + n_public:
        raise HistoryError(f"the knowledge state of dataset {dataset!r} is damaged (its "
                           f"integrity tag does not match); it is not used. Publishing the "
                           f"next release rebuilds it")
    plain = aes_ctr(secret, _KNOWLEDGE_DOMAIN, context, nonce, bytes(stored[8:]))
    return plain[:n_public], plain[n_public:]


def decrypt_knowledge_v3(secret: Secret, dataset: str, through_seq: int, nonce: bytes,
                         tag: bytes, stored: bytes) -> tuple[bytes, bytes]:
    """A version-3 knowledge state (the public part in clear, the private part under the
    SHAKE keystream): what the upgrade to version 4 encrypts again."""
    import hmac

    context = _knowledge_context(dataset, through_seq)
    n_public = int.from_bytes(stored[:8], "little")
    if not hmac.compare_digest(_knowledge_tag(secret, context, nonce, stored), tag) or \
            len(stored) < 8 + n_public:
        raise HistoryError(f"the knowledge state of dataset {dataset!r} is damaged")
    data = np.frombuffer(stored, dtype=np.uint8, offset=8 + n_public)
    mask = np.frombuffer(_keystream_bytes(secret, _KNOWLEDGE_DOMAIN, context, nonce,
                                          len(data)), dtype=np.uint8)
    return stored[8:8 + n_public], (data ^ mask).tobytes()


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
        from anonkit import __version__

        values = _release_values(self)
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


# -- where a history is ------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryLocation:
    """A history given as a path (SQLite) or a URL (``sqlite:///...``,
    ``postgresql+psycopg://...``)."""

    url: URL  # without the ``schema`` parameter
    sqlite_path: Path | None
    #: PostgreSQL: the dedicated schema the history lives in (``?schema=anonkit``)
    schema: str | None = None

    @classmethod
    def parse(cls, history: str | os.PathLike[str] | URL | None) -> HistoryLocation:
        if history is None:
            history = os.environ.get(HISTORY_ENV) or DEFAULT_HISTORY
        if isinstance(history, URL):
            url = history
        elif "://" in str(history):
            try:
                url = make_url(str(history))
            except sa.exc.ArgumentError as exc:
                raise HistoryError(f"cannot parse the history URL {history!r}: {exc}") from None
        else:
            url = URL.create("sqlite", database=str(Path(history).expanduser().absolute()))
        backend = url.get_backend_name()
        if backend == "sqlite":
            if url.database in (None, "", ":memory:"):
                raise HistoryError("an in-memory SQLite history would vanish with the "
                                   "process; give a file (--history anonkit.db)")
            return cls(url, Path(url.database).expanduser().absolute())
        if backend == "postgresql":
            schema = url.query.get("schema")
            if isinstance(schema, tuple):
                raise HistoryError(f"the history URL {history!r} names several schemas; give "
                                   f"one: ?schema=anonkit")
            if schema is not None and not _SCHEMA_NAME.fullmatch(schema):
                raise HistoryError(f"invalid schema name {schema!r} in the history URL: give "
                                   f"1 to 63 lower-case letters, digits or _ (e.g. "
                                   f"?schema=anonkit)")
            return cls(url.difference_update_query(["schema"]), None, schema)
        raise HistoryError(f"unsupported history database {backend!r}: use an SQLite file or "
                           f"a postgresql+psycopg:// URL")

    def __str__(self) -> str:
        if self.sqlite_path is not None:
            return str(self.sqlite_path)
        shown = self.url.render_as_string(hide_password=True)
        if self.schema is not None:
            shown += ("&" if "?" in shown else "?") + f"schema={self.schema}"
        return shown


_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def _make_engine(location: HistoryLocation, read_only: bool = False) -> Engine:
    if location.sqlite_path is None:
        args: dict[str, object] = {}
        if location.schema is not None:  # every unqualified name, raw SQL too, lands there
            args["options"] = f"-c search_path={location.schema}"
        if read_only:
            args["options"] = (str(args.get("options", "")) +
                               " -c default_transaction_read_only=on").strip()
        return sa.create_engine(location.url, pool_pre_ping=True, connect_args=args)
    if read_only:
        # mode=ro: SQLite never writes (no journal, no recovery of a hot journal), so a
        # read-only file or folder is read as it is
        target = "file:" + urllib.parse.quote(str(location.sqlite_path)) + "?mode=ro"

        def _connect() -> sqlite3.Connection:
            return sqlite3.connect(target, uri=True, timeout=SQLITE_BUSY_TIMEOUT,
                                   check_same_thread=False)

        engine = sa.create_engine("sqlite://", creator=_connect, poolclass=sa.pool.QueuePool)
    else:
        engine = sa.create_engine(location.url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: object, _record: object) -> None:
        # Take transaction control from the sqlite3 module (which would BEGIN only before
        # DML, leaving DDL and reads outside transactions); we BEGIN below.
        dbapi_connection.isolation_level = None  # type: ignore[attr-defined]
        cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
        if not read_only:
            cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA cache_size = -65536")  # 64 MB: bulk inserts stay in memory
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Writers take the write lock up front (BEGIN IMMEDIATE): two publishers queue
        # instead of deadlocking on a read lock each wants to upgrade.
        mode = conn.get_execution_options().get("anonkit_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")

    return engine


# -- the store ---------------------------------------------------------------------------


class HistoryStore:
    """An open release history. Use :meth:`open`; close it (or use ``with``) when done."""

    def __init__(self, engine: Engine, location: HistoryLocation, secret: Secret) -> None:
        self.engine = engine
        self.location = location
        self.secret = secret
        self.read_only = False
        #: what :meth:`open` finished of publishes a killed publisher left half done
        self.recovered: list[str] = []
        #: what does not match the releases' authentication (see chain.py); checked when
        #: the history is opened. The gate and the audit refuse such a history unless
        #: ``accept_tampered``; a part read later that does not match its digest is refused
        #: the same way
        self.tampered: list[str] = []
        self.accept_tampered = False

    # -- opening ------------------------------------------------------------------------
    @classmethod
    def open(cls, history: str | os.PathLike[str] | URL | None = None, *,
             secret: bytes | str | None = None,
             secret_file: str | os.PathLike[str] | None = None,
             create: bool = False, read_only: bool = False) -> HistoryStore:
        """Open the history at ``history`` (path or URL; default ``$ANONKIT_HISTORY`` or
        ``anonkit.db``). With ``create``, a missing history is created (with a new secret
        beside an SQLite file); without, it is an error. See :mod:`anonkit.history.secret`
        for where the secret comes from. A history of an older format is upgraded
        (:mod:`anonkit.history.migrations`; :class:`HistoryUpgradedWarning` says where the
        old one was copied), publishes a killed publisher left half done are finished
        (:meth:`recover`), and a secret kept in the folder of an SQLite history is warned of
        once per process.

        ``read_only``: nothing is written, ever (``list``, ``show``, ``audit``): no
        creation, no upgrade, no recovery; an SQLite history is opened read-only, so a
        read-only file or folder works. A history of an older format is refused (upgrade
        it with ``anonkit release recover``, or by publishing), and a pending release is
        left pending (:meth:`pending`; ``recover`` finishes it).

        An SQLite history is created atomically with mode 0600 (its journal gets the same
        mode from SQLite); an existing empty file is refused, not turned into a history. A
        PostgreSQL history needs an empty database or a dedicated schema
        (``postgresql+psycopg://.../db?schema=anonkit``, created if missing): anonkit never
        creates its tables among another application's."""
        if read_only and create:
            raise ValueError("a history cannot be created read-only")
        location = HistoryLocation.parse(history)
        path = location.sqlite_path
        explicit_file = Path(secret_file) if secret_file is not None else None
        if path is not None:
            if not path.exists():
                if not create:
                    raise HistoryError(f"no release history at {path}: publish a release "
                                       f"first (anonkit release publish ...), or name the "
                                       f"history with --history / {HISTORY_ENV}")
                if not path.parent.is_dir():
                    raise HistoryError(f"cannot create the history {path}: the folder "
                                       f"{path.parent} does not exist")
                _create_sqlite(location, secret, explicit_file)
            elif path.is_file() and path.stat().st_size == 0:
                raise HistoryError(f"{path} is an empty file, not a release history; it is "
                                   f"refused (nothing was changed). Name the history with "
                                   f"--history, or remove the empty file to create a new one")
        elif location.schema is not None and not _ensure_pg_schema(location, create):
            raise HistoryError(f"no release history at {location}: the schema "
                               f"{location.schema!r} does not exist; publish a release first")
        engine = _make_engine(location, read_only)
        try:
            try:
                found = _inspect(engine, location)
            except sa.exc.DBAPIError as exc:
                raise _unreadable(location, exc) from None
            given, new_secret_path = resolve_secret(
                explicit=secret, secret_file=explicit_file,
                beside=secret_path_beside(path) if path is not None else None)
            if found is None:
                if not create:
                    raise HistoryError(f"no release history at {location}: publish a release "
                                       f"first (anonkit release publish ...)")
                if given is None:
                    if new_secret_path is None:
                        raise HistoryError(
                            f"a PostgreSQL history needs a secret kept outside the database: "
                            f"set ANONKIT_HISTORY_SECRET or pass --secret-file FILE "
                            f"(created if missing) for {location}")
                    given = create_secret_file(new_secret_path)
                _create_schema(engine, location, given)
            else:
                version, check = found
                _check_version(version, location)
                if given is None:
                    where = (f"the file {new_secret_path}" if new_secret_path is not None
                             else "ANONKIT_HISTORY_SECRET or --secret-file")
                    raise HistoryError(
                        f"the secret of the history {location} is missing: it was created with "
                        f"one, expected in {where}. Restore it; a new secret would not "
                        f"recognise any record of the history")
                if not given.matches(check):
                    raise HistoryError(
                        f"wrong secret for the history {location} (from {given.source}): it "
                        f"is not the secret the history was created with. Use that secret; "
                        f"nothing was changed")
                if version < SCHEMA_VERSION:
                    if read_only:
                        raise HistoryError(
                            f"the history {location} has format version {version}; this "
                            f"anonkit reads version {SCHEMA_VERSION}, and this command does not "
                            f"write. Upgrade it with `anonkit release recover --history ...` "
                            f"(it keeps a copy of the old history), or by publishing the "
                            f"next release; nothing was changed")
                    from anonkit.history.migrations import upgrade

                    note = upgrade(engine, location, given)
                    if note is not None:
                        warnings.warn(note, HistoryUpgradedWarning, stacklevel=2)
        except sa.exc.DBAPIError as exc:
            engine.dispose()
            raise _unreadable(location, exc) from None
        except BaseException:
            engine.dispose()
            raise
        if path is not None:
            warn_if_beside(given, path)
        store = cls(engine, location, given)
        store.read_only = read_only
        try:
            store.tampered = store.check_chain()
        except BaseException:
            store.close()
            raise
        # recover() acts on paths read from the rows: only on an authenticated history
        if not read_only and not store.tampered:
            try:
                store.recovered = store.recover()
            except BaseException:
                store.close()
                raise
        return store

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ------------------------------------------------------------------------
    # -- tamper evidence (see chain.py) -------------------------------------------------
    def check_chain(self) -> list[str]:
        """What does not match the releases' authentication chain (empty: nothing)."""
        with self.engine.connect() as conn:
            infos = [_info(row) for row in conn.execute(
                sa.select(releases_table).order_by(releases_table.c.id)).mappings()]
            head = conn.execute(sa.select(schema_table.c.chain)).scalar()
        return check_chain(self.secret.value, infos, head)

    def refuse_if_tampered(self, what: str) -> None:
        """Refuse ``what`` (the gate, the audit) on a history whose authentication does not
        match, unless ``accept_tampered``."""
        if self.tampered and not self.accept_tampered:
            more = f" (and {len(self.tampered) - 1} more)" if len(self.tampered) > 1 else ""
            raise TamperedHistoryError(
                f"{what} refused: the history {self.location} was changed without its "
                f"secret: {self.tampered[0]}{more}. Nothing was changed. Restore the history "
                f"from a backup, or accept it as it is now with `anonkit release recover "
                f"--accept-tampered`, or run this once with --accept-tampered")

    def seal(self) -> int:
        """Authenticate every release as it is now (``recover --accept-tampered``): the
        chain, the content digests and the head are recomputed. Returns the releases
        sealed."""
        with self._write() as conn:
            n = seal_history(conn, self.secret)
        self.tampered = []
        return n

    def datasets(self) -> list[str]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(releases_table.c.dataset).distinct()
                                .order_by(releases_table.c.dataset))
            return [r[0] for r in rows]

    def releases(self, dataset: str | None = None) -> list[ReleaseInfo]:
        """Releases in (dataset, seq) order; an unknown ``dataset`` is an error."""
        query = sa.select(releases_table).order_by(releases_table.c.dataset,
                                                   releases_table.c.seq)
        if dataset is not None:
            query = query.where(releases_table.c.dataset == dataset)
        with self.engine.connect() as conn:
            out = [_info(row) for row in conn.execute(query).mappings()]
        if dataset is not None and not out:
            raise self._unknown_dataset(dataset)
        return out

    def latest(self, dataset: str) -> ReleaseInfo | None:
        query = (sa.select(releases_table).where(releases_table.c.dataset == dataset)
                 .order_by(releases_table.c.seq.desc()).limit(1))
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        return _info(row) if row is not None else None

    def release(self, dataset: str, seq: int) -> ReleaseInfo:
        query = sa.select(releases_table).where(releases_table.c.dataset == dataset,
                                                releases_table.c.seq == seq)
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        if row is None:
            known = [r.seq for r in self.releases(dataset)]  # raises for an unknown dataset
            raise HistoryError(f"dataset {dataset!r} has no release {seq}; it has releases "
                               f"{_ranges(known)}")
        return _info(row)

    def load(self, release: ReleaseInfo, labels: bool = True) -> ReleaseView:
        """The release's classes, multisets and pseudonym -> class map, as arrays."""
        classes = classes_table.c
        with self.engine.connect() as conn:
            record_map = _load_record_map(conn, release, self.secret)
            # the labels only when asked for: the other columns are in the record map
            label_texts = [r[0] for r in _fetch_raw(
                conn, sa.select(classes.qi_labels).where(classes.release_id == release.id)
                .order_by(classes.class_id))] if labels else []
            value_rows = conn.execute(
                sa.select(class_values_table.c.attribute, class_values_table.c.numeric,
                          class_values_table.c.multisets)
                .where(class_values_table.c.release_id == release.id)).all()
            coded = conn.execute(
                sa.select(record_values_table.c.attribute, record_values_table.c.nonce,
                          record_values_table.c.codes)
                .where(record_values_table.c.release_id == release.id)).all()
        n_classes = len(record_map.sizes)
        if labels and len(label_texts) != n_classes:
            raise HistoryError(f"release {release.seq} of {release.dataset!r} has "
                               f"{len(label_texts)} classes but its record map {n_classes}; "
                               f"the history is damaged")
        accept = self.accept_tampered
        check_part(release, "map", _map_digest(record_map), accept)
        if labels:
            check_part(release, "labels", _labels_digest(label_texts), accept)  # type: ignore[arg-type]
        check_part(release, "values", _values_digest(value_rows), accept)  # type: ignore[arg-type]
        check_part(release, "record_values", _record_values_digest(coded), accept)  # type: ignore[arg-type]
        values = {attr: ClassValues.from_parquet(attr, bytes(blob), bool(numeric))
                  for attr, numeric, blob in value_rows}
        if labels:  # one JSON parse for all classes, not one per class
            parsed = json.loads("[" + ",".join(label_texts) + "]")  # type: ignore[arg-type]
            label_frame = pd.DataFrame(parsed, columns=release.quasi_identifiers)
        else:
            label_frame = pd.DataFrame(index=pd.RangeIndex(n_classes))
        packed = record_map.keys
        # V16, not S16: an "S" item converted to bytes loses its trailing NUL bytes
        keys = packed.view("V16").astype(object) if len(packed) else np.empty(0, dtype=object)
        record_values = self._record_values(release, len(keys), coded)
        return ReleaseView(release, record_map.sizes, label_frame,
                           {a: values[a] for a in release.sensitive}, keys,
                           record_map.classes, record_map.counterfeits, record_values)

    # -- per-record values (see record_values_table) ---------------------------------------
    def _record_values(self, release: ReleaseInfo, n_records: int,
                       rows: Sequence[sa.Row[tuple[str, bytes, bytes]]]
                       ) -> dict[str, np.ndarray] | None:
        """The decrypted entry indices of the release's records (in pseudonym order, as
        ``_load_record_map`` returns them), from its ``record_values_table`` rows."""
        found = {attr: (bytes(nonce), bytes(blob)) for attr, nonce, blob in rows}
        if not release.sensitive or any(a not in found for a in release.sensitive):
            return None
        out = {}
        for attr in release.sensitive:
            codes = decrypt_record_values(self.secret, release.dataset, release.seq, attr,
                                          *found[attr])
            if len(codes) != n_records:
                raise HistoryError(f"release {release.seq} of {release.dataset!r} keeps "
                                   f"{len(codes)} record values of {attr!r} for {n_records} "
                                   f"records; the history is damaged")
            out[attr] = codes
        return out

    def _insert_record_values(self, conn: Connection, release_id: int,
                              release: PreparedRelease) -> list[tuple[str, bytes, bytes]]:
        """Insert the records' encrypted values; returns (attribute, nonce, codes) rows."""
        if not release.record_values:
            return []
        rows = []
        for attr, codes in release.record_values.items():
            nonce, blob = encrypt_record_values(self.secret, release.dataset, release.seq,
                                                attr, np.asarray(codes))
            rows.append({"release_id": release_id, "attribute": attr, "nonce": nonce,
                         "codes": blob})
        conn.execute(record_values_table.insert(), rows)
        return [(r["attribute"], r["nonce"], r["codes"]) for r in rows]  # type: ignore[misc]

    def method_state(self, release: ReleaseInfo) -> bytes | None:
        """The opaque state the release's method kept for its next release (None: none)."""
        with self.engine.connect() as conn:
            blob = conn.execute(sa.select(method_state_table.c.state).where(
                method_state_table.c.release_id == release.id)).scalar()
        return None if blob is None else bytes(blob)

    def knowledge_state(self, dataset: str) -> tuple[int, tuple[bytes, bytes]] | None:
        """``(through_seq, (public, private))``: the dataset's accumulated adversary
        knowledge after its release ``through_seq`` (see ``knowledge_table``), or None.
        :class:`HistoryError` when the stored state is damaged."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(knowledge_table.c.through_seq, knowledge_table.c.nonce,
                                         knowledge_table.c.tag, knowledge_table.c.state)
                               .where(knowledge_table.c.dataset == dataset)).first()
        if row is None:
            return None
        through_seq = int(row.through_seq)
        return through_seq, decrypt_knowledge(self.secret, dataset, through_seq,
                                              bytes(row.nonce), bytes(row.tag),
                                              bytes(row.state))

    def auxiliary_names(self, release: ReleaseInfo) -> list[str]:
        """The names of the tables published beside the release, sorted."""
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(auxiliary_table.c.name)
                                .where(auxiliary_table.c.release_id == release.id)
                                .order_by(auxiliary_table.c.name))
            return [r[0] for r in rows]

    def auxiliary(self, release: ReleaseInfo, name: str) -> pd.DataFrame:
        """The table ``name`` published beside the release."""
        import pyarrow.parquet as pq

        with self.engine.connect() as conn:
            blob = conn.execute(sa.select(auxiliary_table.c.content).where(
                auxiliary_table.c.release_id == release.id,
                auxiliary_table.c.name == name)).scalar()
        if blob is None:
            known = self.auxiliary_names(release)
            raise HistoryError(f"release {release.seq} of {release.dataset!r} has no auxiliary "
                               f"table {name!r}; it has: "
                               f"{', '.join(map(repr, known)) if known else 'none'}")
        return pq.read_table(io.BytesIO(bytes(blob))).to_pandas()

    def recorded_files(self) -> list[tuple[str, str]]:
        """Every file the history records, as ``(path, what)``: each release's file, its
        pending temporary file, and the auxiliary tables published beside it."""
        from anonkit.release import auxiliary_path

        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(
                releases_table.c.id, releases_table.c.dataset, releases_table.c.seq,
                releases_table.c.output_path, releases_table.c.pending_path)).all()
            aux = conn.execute(sa.select(auxiliary_table.c.release_id,
                                         auxiliary_table.c.name)).all()
        by_id = {row.id: row for row in rows}
        out = []
        for row in rows:
            what = f"the file of release {row.seq} of {row.dataset!r}"
            out.append((row.output_path, what))
            if row.pending_path:
                out.append((row.pending_path, what + " (pending)"))
        for release_id, name in aux:
            row = by_id.get(release_id)
            if row is not None:
                out.append((str(auxiliary_path(Path(row.output_path), name)),
                            f"the table {name!r} of release {row.seq} of {row.dataset!r}"))
        return out

    def pseudonyms(self, dataset: str, keys: pd.Series) -> list[bytes]:
        """The pseudonyms this history gives the record keys ``keys`` in ``dataset``."""
        return self.secret.record_hasher(dataset).hash_keys(keys)

    def history_pseudonyms(self, keys: pd.Series) -> list[bytes]:
        """The history-wide pseudonyms of the record keys ``keys`` (any dataset)."""
        return self.secret.history_hasher().hash_keys(keys)

    def both_pseudonyms(self, dataset: str, keys: pd.Series
                        ) -> tuple[list[bytes], list[bytes]]:
        """:meth:`pseudonyms` and :meth:`history_pseudonyms` of ``keys``, the keys made
        canonical once for both (a sizeable share of the hashing of a big release)."""
        texts = canonical_keys(keys)
        return (self.secret.record_hasher(dataset).hash_texts(texts),
                self.secret.history_hasher().hash_texts(texts))

    def last_release_id(self) -> int:
        """The id of the history's latest recorded release (0: none)."""
        with self.engine.connect() as conn:
            return last_release_id(conn)

    def release_fingerprints(self, release: ReleaseInfo
                             ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray] | None:
        """A release's record pseudonyms, their history-wide pseudonyms (None: not kept) and
        their content fingerprints, in its record map's order (None: none kept)."""
        maps = record_maps_table.c
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(maps["keys"], maps.persons, maps.fingerprints)
                               .where(maps.release_id == release.id)).first()
        if row is None or row[2] is None:
            return None
        check_part(release, "fingerprints", _blob_digest(row[2]), self.accept_tampered)
        check_part(release, "persons", _blob_digest(row[1]), self.accept_tampered)
        keys = np.frombuffer(row[0], dtype="S16")
        persons = None if row[1] is None else np.frombuffer(row[1], dtype="S16")
        prints = decrypt_fingerprints(self.secret, release.dataset, release.seq, bytes(row[2]))
        if len(prints) != len(keys):
            raise HistoryError(f"the fingerprints of release {release.seq} of "
                               f"{release.dataset!r} do not match its record map; the history "
                               f"is damaged")
        return keys, persons, prints

    def release_persons(self, release: ReleaseInfo) -> np.ndarray | None:
        """The history-wide pseudonyms of the release's records (S16, in the order of its
        record pseudonyms), or None when the history does not keep them (a release
        migrated from version 1, or recorded without them)."""
        with self.engine.connect() as conn:
            return _release_persons(conn, release.id, release, self.accept_tampered)

    def shared_records(self, dataset: str, persons: Sequence[bytes] | np.ndarray
                       ) -> list[SharedRecords]:
        """What the records of history-wide pseudonyms ``persons`` share with every other
        dataset of the history: per dataset, how many of them it holds and in which releases,
        and its releases that cannot tell (migrated from version 1, or recorded without
        history-wide pseudonyms). Datasets that share nothing and can tell are left out.
        Reads one record map row per release of another dataset."""
        others = [info for info in self.releases() if info.dataset != dataset]
        if not others:
            return []
        wanted = np.unique(pseudonym_array(persons, "history-wide pseudonym"))
        found: dict[str, SharedRecords] = {}
        hits: dict[str, list[np.ndarray]] = {}
        with self.engine.connect() as conn:
            for info in others:
                packed = _release_persons(conn, info.id, info, self.accept_tampered)
                entry = found.setdefault(info.dataset, SharedRecords(info.dataset))
                if packed is None:
                    entry.unmatched_releases.append(info.seq)
                    continue
                if not len(packed):
                    continue
                # a release's records are distinct people: its persons are unique
                common = packed[np.isin(packed, wanted, assume_unique=True)]
                if len(common):
                    entry.releases.append(info.seq)
                    hits.setdefault(info.dataset, []).append(common)
        for name, arrays in hits.items():
            found[name].records = len(np.unique(np.concatenate(arrays)))
        return [e for e in found.values() if e.records or e.unmatched_releases]

    def _unknown_dataset(self, dataset: str) -> HistoryError:
        known = self.datasets()
        listing = ", ".join(map(repr, known)) if known else "none yet"
        return HistoryError(f"unknown dataset {dataset!r} in the history {self.location}; "
                            f"it has: {listing}")

    # -- writing ------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A write transaction (BEGIN IMMEDIATE on SQLite); rolled back on any error."""
        if self.read_only:
            raise HistoryError(f"the history {self.location} was opened read-only; nothing "
                               f"was written")
        with self.engine.connect() as conn:
            conn.execution_options(anonkit_begin="IMMEDIATE")
            with conn.begin():
                yield conn

    def commit_release(self, release: PreparedRelease,
                       before_commit: Callable[[], None] | None = None) -> ReleaseInfo:
        """Insert the release, its classes and its records in one transaction.

        The release must be number ``latest + 1`` of its dataset; if another process
        published that number first (or publishes it concurrently), nothing is written
        and :class:`ConcurrentPublishError` is raised.

        Commits are serialized across the history (SQLite's write lock; a transaction-level
        advisory lock on PostgreSQL), and a release whose lineage was decided before a
        release of another dataset was recorded (``lineage_mark``) is refused the same way:
        two publishes of different datasets sharing records could otherwise both pass the
        lineage gate, each before the other was recorded.
        """
        _check_names(release)
        try:
            with self._write() as conn:
                if conn.dialect.name == "postgresql":
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"),
                                 {"key": _COMMIT_LOCK})
                if release.lineage_mark is not None:
                    _refuse_unseen_releases(conn, release)
                latest = conn.execute(
                    sa.select(sa.func.max(releases_table.c.seq))
                    .where(releases_table.c.dataset == release.dataset)).scalar()
                if (latest or 0) != release.seq - 1:
                    raise _lost_race(release, latest)
                previous_auth = conn.execute(
                    sa.select(releases_table.c.auth).order_by(releases_table.c.id.desc())
                    .limit(1)).scalar() or ""
                # the release row first: a concurrent publisher of the same number blocks
                # (PostgreSQL) or fails here, before either inserts a million records
                release_id = conn.execute(
                    releases_table.insert().values(_release_values(release))
                    .returning(releases_table.c.id)).scalar_one()
                if release.counterfeits is None:  # the column's default: none
                    self._bulk_insert(conn, classes_table,
                                      ((release_id, *row) for row in release.class_rows),
                                      columns=_CLASS_COLUMNS)
                else:
                    self._bulk_insert(conn, classes_table, (
                        (release_id, *row, fake) for row, fake in
                        zip(release.class_rows, _counterfeits(release), strict=True)))
                if release.method_state is not None:
                    conn.execute(method_state_table.insert().values(
                        release_id=release_id, state=bytes(release.method_state)))
                if release.auxiliary:
                    conn.execute(auxiliary_table.insert(), [
                        {"release_id": release_id, "name": name, "n_rows": len(table),
                         "content": _parquet(table)}
                        for name, table in _auxiliary(release).items()])
                value_rows = [(cv.attribute, cv.numeric, cv.to_parquet())
                              for cv in release.class_values]
                if value_rows:
                    conn.execute(class_values_table.insert(), [
                        {"release_id": release_id, "attribute": attribute, "numeric": numeric,
                         "n_entries": len(cv.count), "multisets": blob}
                        for (attribute, numeric, blob), cv in zip(
                            value_rows, release.class_values, strict=True)])
                # the records go into the record map alone (no anonkit_records rows: see
                # records_table), their history-wide pseudonyms with them
                by_id = np.argsort(np.fromiter((row[0] for row in release.class_rows),
                                               dtype=np.int64, count=release.n_classes),
                                   kind="stable")
                sizes = np.fromiter((row[1] for row in release.class_rows), dtype=np.int64,
                                    count=release.n_classes)
                record_map = RecordMap.build(release.record_hashes, release.record_classes,
                                             sizes[by_id], release.counterfeit_array()[by_id],
                                             release.record_persons)
                map_row = record_map.row()
                map_row["classes"] = encrypt_classes(self.secret, release.dataset, release.seq,
                                                     map_row["classes"])  # type: ignore[arg-type]
                prints = None
                if release.record_fingerprints is not None:
                    by_key = np.argsort(pseudonym_array(release.record_hashes), kind="stable")
                    prints = encrypt_fingerprints(
                        self.secret, release.dataset, release.seq,
                        np.asarray(release.record_fingerprints, dtype=np.uint64)[by_key])
                conn.execute(record_maps_table.insert().values(
                    release_id=release_id, fingerprints=prints, **map_row))
                coded = self._insert_record_values(conn, release_id, release)
                labels_by_id = [row[2] for row in sorted(release.class_rows,
                                                         key=lambda r: r[0])]
                content = _content_digest(record_map, map_row["persons"],  # type: ignore[arg-type]
                                          prints, labels_by_id, value_rows, coded)
                _authenticate(conn, self.secret, release_id, previous_auth, content)
                # a state that did not see this release must not outlive it
                conn.execute(knowledge_table.delete()
                             .where(knowledge_table.c.dataset == release.dataset))
                if release.knowledge_state is not None:
                    nonce, tag, cipher = encrypt_knowledge(
                        self.secret, release.dataset, release.seq, release.knowledge_state)
                    conn.execute(knowledge_table.insert().values(
                        dataset=release.dataset, through_seq=release.seq, nonce=nonce,
                        tag=tag, state=cipher))
                if before_commit is not None:
                    before_commit()
        except sa.exc.IntegrityError as exc:
            # SQLite names the columns (anonkit_releases.dataset), PostgreSQL the constraint
            if "anonkit_releases" in str(exc.orig):
                raise _lost_race(release, None) from None
            raise
        except sa.exc.OperationalError as exc:
            if "locked" in str(exc.orig) or "busy" in str(exc.orig):
                raise ConcurrentPublishError(
                    f"the history {self.location} stayed locked by another publisher for "
                    f"{SQLITE_BUSY_TIMEOUT:g} s; nothing was written; try again") from None
            raise
        return self.release(release.dataset, release.seq)

    def _bulk_insert(self, conn: Connection, table: sa.Table,
                     rows: Iterator[tuple[object, ...]],
                     columns: Sequence[str] | None = None) -> None:
        """Stream plain tuples to the driver inside the current transaction: ``COPY`` on
        PostgreSQL, ``executemany`` of the Core-compiled INSERT on SQLite (fed by the
        iterator: no list of a million tuples, no per-row Core processing). ``columns``:
        the table's columns the tuples hold, in table order (default: all)."""
        columns = [c.name for c in table.columns] if columns is None else list(columns)
        raw = conn.connection.driver_connection
        try:
            if conn.dialect.name == "postgresql":
                with raw.cursor() as cursor, cursor.copy(  # type: ignore[union-attr]
                        f"COPY {table.name} ({', '.join(columns)}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
                return
            sql = str(table.insert().compile(dialect=conn.dialect, column_keys=columns))
            cursor = raw.cursor()  # type: ignore[union-attr]
            try:
                cursor.executemany(sql, rows)
            finally:
                cursor.close()
        except Exception as exc:
            # the raw driver's errors bypass SQLAlchemy's wrapping; a constraint violation
            # (class IntegrityError / SQLSTATE 23xxx) is a refusal, not a crash
            integrity = any(k.__name__ == "IntegrityError" for k in type(exc).__mro__)
            if integrity or str(getattr(exc, "sqlstate", "") or "").startswith("23"):
                raise HistoryError(f"the history refused the rows of {table.name} ({exc}); "
                                   f"nothing was written") from None
            raise

    def clear_pending(self, release_id: int) -> None:
        """The file of ``release_id`` is at its final name: forget the temporary one."""
        with self._write() as conn:
            conn.execute(releases_table.update().where(releases_table.c.id == release_id)
                         .values(pending_path=None))

    def pending(self) -> list[ReleaseInfo]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(releases_table)
                                .where(releases_table.c.pending_path.is_not(None)))
            return [_info(row) for row in rows.mappings()]

    def recover(self) -> list[str]:
        """Finish publishes that committed but did not rename their file (the process
        died in between; see :mod:`anonkit.history.publish`): the file, and the auxiliary
        tables still at their temporary names, are moved to their names, and the dead
        publisher's lock file is removed. Returns what was done."""
        from anonkit.history.tempfiles import drop_lock
        from anonkit.release import auxiliary_path

        done = []
        for info in self.pending():
            pending, output = Path(info.pending_path or ""), Path(info.output_path)
            if not _our_pending_file(pending, output):
                warnings.warn(
                    f"release {info.seq} of {info.dataset!r} is pending, but its recorded "
                    f"temporary file is not one a publish of {output.name} makes in "
                    f"{output.parent}; it is left alone (the history may have been edited)",
                    stacklevel=2)
                continue
            try:
                if pending.exists() and sha256_file(pending) == info.content_hash:
                    for name in self.auxiliary_names(info):
                        aux = pending.with_name(f"{pending.name}.{name}")
                        if aux.exists():
                            os.replace(aux, auxiliary_path(output, name))
                    os.replace(pending, output)
                    fsync_directory(output.parent)
                    done.append(f"release {info.seq} of {info.dataset!r}: moved {pending} to "
                                f"{output}")
                elif not (output.exists() and sha256_file(output) == info.content_hash):
                    warnings.warn(
                        f"release {info.seq} of {info.dataset!r} is recorded but its file is "
                        f"neither at {output} nor at {pending}; the history keeps the "
                        f"release (an adversary may have it)", stacklevel=2)
                    continue
            except FileNotFoundError:  # a live publisher renamed it meanwhile: fine
                if not (output.exists() and sha256_file(output) == info.content_hash):
                    continue
            self.clear_pending(info.id)
            drop_lock(pending)
        return done


# -- helpers -----------------------------------------------------------------------------


def _fetch_raw(conn: Connection, query: sa.Select[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """All rows of a Core query as plain driver tuples: for a million rows, SQLAlchemy's
    per-row result processing would cost more than the query. The query's only parameters
    are integers, so it is rendered with literal values."""
    sql = str(query.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql)
        return cursor.fetchall()
    finally:
        cursor.close()


def _load_record_map(conn: Connection, release: ReleaseInfo,
                     secret: Secret | None = None) -> RecordMap:
    """The release's ``record_maps_table`` row (its classes decrypted with ``secret``;
    without it, only a map whose classes are still in clear -- during the upgrade -- is
    read), or, for a release without one, what its ``anonkit_records`` and
    ``anonkit_classes`` rows say."""
    maps = record_maps_table.c
    # maps["keys"]: ``maps.keys`` is the collection's method, not the column
    row = conn.execute(sa.select(maps.n_records, maps["keys"], maps.classes, maps.sizes,
                                 maps.counterfeits)
                       .where(maps.release_id == release.id)).first()
    if row is None:
        return record_map_from_rows(conn, release.id)
    n, keys, classes, sizes, fakes = int(row[0]), row[1], row[2], row[3], row[4]
    if secret is not None and len(classes) == 4 * n + 16:
        classes = decrypt_classes(secret, release.dataset, release.seq, bytes(classes))
    if len(keys) != 16 * n or len(classes) != 4 * n or len(sizes) != len(fakes) or \
            len(sizes) % 4:
        raise HistoryError(f"the record map of release {release.seq} of {release.dataset!r} "
                           f"is damaged ({len(keys)} bytes of pseudonyms and {len(classes)} "
                           f"of classes for {n} records, {len(sizes)} and {len(fakes)} of "
                           f"class sizes)")
    codes = np.frombuffer(classes, dtype="<i4").astype(np.int64)
    if n and (codes.min() < 0 or codes.max() >= len(sizes) // 4):
        # the classes are encrypted under the release's dataset and number: a map moved to
        # another release (reordered, renumbered) decrypts to noise
        raise TamperedHistoryError(
            f"the record map of release {release.seq} of {release.dataset!r} does not "
            f"decrypt to its classes: it was moved, renumbered or edited without the "
            f"history's secret. Restore the history from a backup")
    return RecordMap(np.frombuffer(keys, dtype="S16"), codes,
                     np.frombuffer(sizes, dtype="<i4").astype(np.int64),
                     np.frombuffer(fakes, dtype="<i4").astype(np.int64))


def _release_persons(conn: Connection, release_id: int,
                     release: ReleaseInfo | None = None, accept_tampered: bool = False
                     ) -> np.ndarray | None:
    """The history-wide pseudonyms of a release's records (S16, in its record map's order)
    from its record map row; None when it keeps none for some record (it cannot tell whom
    it holds). A release with no record map (none should be left after the upgrade) is
    read from its ``anonkit_records`` rows, as before version 3. A release of no records
    holds nobody: an empty array, whatever it kept."""
    maps = record_maps_table.c
    row = conn.execute(sa.select(maps.n_records, maps.persons)
                       .where(maps.release_id == release_id)).first()
    if row is None:
        rows = _fetch_raw(conn, sa.select(records_table.c.person_hash)
                          .where(records_table.c.release_id == release_id))
        if any(r[0] is None for r in rows):
            return None
        return pseudonym_array([bytes(r[0]) for r in rows])  # type: ignore[arg-type]
    n, blob = int(row[0]), row[1]
    if release is not None:
        check_part(release, "persons", _blob_digest(blob), accept_tampered)
    if n == 0:
        return np.zeros(0, dtype="S16")
    if blob is None:
        return None
    if len(blob) != 16 * n:
        what = (f"release {release.seq} of {release.dataset!r}" if release is not None
                else f"release id {release_id}")
        raise HistoryError(f"the record map of {what} is damaged ({len(blob)} bytes of "
                           f"history-wide pseudonyms for {n} records)")
    return np.frombuffer(blob, dtype="S16")


def record_map_from_rows(conn: Connection, release_id: int, *,
                         persons: bool = False) -> RecordMap:
    """A release's :class:`RecordMap` from its rows of ``anonkit_records`` and
    ``anonkit_classes``: the driver's tuples go straight into structured arrays (no Python
    loop over them). ``persons``: with the records' history-wide pseudonyms (None when any
    record has none: a version-1 record; the upgrade to version 3 asks for them)."""
    records_c = records_table.c
    # a NULL person_hash cannot go into an S16 field: when there is one, they are not read
    with_persons = persons and not conn.execute(
        sa.select(sa.func.count()).select_from(records_table)
        .where(records_c.release_id == release_id, records_c.person_hash.is_(None))).scalar()
    columns = [records_c.key_hash, records_c.class_id] + (
        [records_c.person_hash] if with_persons else [])
    records = _fetch_raw(conn, sa.select(*columns).where(records_c.release_id == release_id)
                         .order_by(records_c.key_hash))
    record_type = [("key", "S16"), ("cls", np.int64)] + (
        [("person", "S16")] if with_persons else [])
    by_key = np.array(records, dtype=record_type) if records else np.zeros(0, record_type)
    counts = _fetch_raw(conn, sa.select(classes_table.c.size, classes_table.c.counterfeits)
                        .where(classes_table.c.release_id == release_id)
                        .order_by(classes_table.c.class_id))
    class_type = [("size", np.int64), ("fake", np.int64)]
    by_class = np.array(counts, dtype=class_type) if counts else np.zeros(0, class_type)
    return RecordMap(np.ascontiguousarray(by_key["key"]), by_key["cls"], by_class["size"],
                     by_class["fake"],
                     np.ascontiguousarray(by_key["person"]) if with_persons else None)


def _our_pending_file(pending: Path, output: Path) -> bool:
    """Whether ``pending`` is the temporary file a publish of ``output`` makes: in the
    output's own folder, named ``.anonkit-tmp-<pid>-<16 hex>-<output name>`` (so a row
    edited to name any other file is never moved over anything)."""
    from anonkit.history.tempfiles import TMP_PREFIX, token_of

    if not pending.is_absolute() or not output.is_absolute():
        return False
    if os.path.normpath(pending.parent) != os.path.normpath(output.parent):
        return False
    token = token_of(pending.name)
    return token is not None and pending.name == f"{TMP_PREFIX}{token}-{output.name}"


def _map_digest(record_map: RecordMap) -> str:
    row = record_map.row()
    return part_digest([row["keys"], row["classes"], row["sizes"],  # type: ignore[list-item]
                        row["counterfeits"]])


def _blob_digest(blob: bytes | None) -> str:
    """The digest of a blob that may be absent (NULL and empty differ)."""
    return part_digest([b"" if blob is None else b"\x01" + bytes(blob)])


def _labels_digest(texts: Sequence[str]) -> str:
    return part_digest(t.encode("utf-8") for t in texts)


def _values_digest(rows: Sequence[tuple[str, bool, bytes]]) -> str:
    return part_digest(chunk for attribute, numeric, blob in sorted(rows, key=lambda r: r[0])
                       for chunk in (attribute.encode("utf-8"), b"1" if numeric else b"0",
                                     bytes(blob)))


def _record_values_digest(rows: Sequence[tuple[str, bytes, bytes]]) -> str:
    return part_digest(chunk for attribute, nonce, codes in sorted(rows, key=lambda r: r[0])
                       for chunk in (attribute.encode("utf-8"), bytes(nonce), bytes(codes)))


def _content_digest(record_map: RecordMap, persons: bytes | None, prints: bytes | None,
                    labels: Sequence[str], values: Sequence[tuple[str, bool, bytes]],
                    coded: Sequence[tuple[str, bytes, bytes]]) -> dict[str, str]:
    """The digests of every part the history keeps of a release (see chain.py), as stored."""
    return {"map": _map_digest(record_map), "persons": _blob_digest(persons),
            "fingerprints": _blob_digest(prints), "labels": _labels_digest(labels),
            "values": _values_digest(values), "record_values": _record_values_digest(coded)}


def _authenticate(conn: Connection, secret: Secret, release_id: int, previous: str,
                  content: dict[str, str]) -> str:
    """Record a release's content digests and its ``auth`` (from its row as read back, so
    the check later reads the same values; neither column is part of what the tag covers),
    and move the history's head to it."""
    info = _info(conn.execute(sa.select(releases_table)
                              .where(releases_table.c.id == release_id)).mappings().one())
    auth = release_tag(secret.value, previous, info, content)
    conn.execute(releases_table.update().where(releases_table.c.id == release_id)
                 .values(content_digest=content, auth=auth))
    count = conn.execute(sa.select(sa.func.count()).select_from(releases_table)).scalar_one()
    conn.execute(schema_table.update().values(chain=head_tag(secret.value, int(count), auth)))
    return auth


def seal_history(conn: Connection, secret: Secret) -> int:
    """Authenticate every release of the history as it is now, in commit order: the
    upgrade to version 4 and ``recover --accept-tampered`` (see chain.py). Returns how many
    releases there are."""
    ids = [int(i) for i in conn.execute(sa.select(releases_table.c.id)
                                        .order_by(releases_table.c.id)).scalars()]
    previous = ""
    if not ids:
        conn.execute(schema_table.update().values(chain=head_tag(secret.value, 0, "")))
    for release_id in ids:
        info = _info(conn.execute(sa.select(releases_table)
                                  .where(releases_table.c.id == release_id)).mappings().one())
        record_map = _load_record_map(conn, info, secret)
        maps = record_maps_table.c
        persons = conn.execute(sa.select(maps.persons).where(maps.release_id == release_id)
                               ).scalar()
        labels = [r[0] for r in _fetch_raw(
            conn, sa.select(classes_table.c.qi_labels)
            .where(classes_table.c.release_id == release_id).order_by(classes_table.c.class_id))]
        values = conn.execute(
            sa.select(class_values_table.c.attribute, class_values_table.c.numeric,
                      class_values_table.c.multisets)
            .where(class_values_table.c.release_id == release_id)).all()
        coded = conn.execute(
            sa.select(record_values_table.c.attribute, record_values_table.c.nonce,
                      record_values_table.c.codes)
            .where(record_values_table.c.release_id == release_id)).all()
        prints = conn.execute(sa.select(maps.fingerprints)
                              .where(maps.release_id == release_id)).scalar()
        content = _content_digest(record_map, persons, prints, labels,  # type: ignore[arg-type]
                                  values, coded)  # type: ignore[arg-type]
        previous = _authenticate(conn, secret, release_id, previous, content)
    return len(ids)


def fsync_directory(path: Path) -> None:
    """Make a rename in ``path`` durable (POSIX; a no-op elsewhere)."""
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _inspect(engine: Engine, location: HistoryLocation) -> tuple[int, str] | None:
    """``(version, secret_check)`` of an anonkit history; None for an empty database;
    :class:`HistoryError` for a database that holds something else."""
    inspector = sa.inspect(engine)
    tables = set(inspector.get_table_names())
    ours = {t for t in tables if t.startswith("anonkit_")}
    if schema_table.name not in tables:
        if ours:
            raise HistoryError(f"{location} has anonkit tables ({', '.join(sorted(ours))}) but "
                               f"no {schema_table.name} table: it is damaged or not an anonkit "
                               f"history; nothing was changed")
        if location.sqlite_path is not None and tables:
            raise HistoryError(f"{location} is an SQLite database but not an anonkit history "
                               f"(it has the tables {', '.join(sorted(tables)[:8])}); name "
                               f"another file with --history; nothing was changed")
        if tables or (location.schema is None and _has_other_objects(engine)):
            where = (f"its schema {location.schema!r}" if location.schema is not None
                     else "the database")
            raise HistoryError(
                f"{location} is not an anonkit history and {where} holds another "
                f"application's tables ({', '.join(sorted(tables)[:8]) or 'in other schemas'})"
                f"; anonkit creates its tables only in an empty database or in a dedicated "
                f"schema: add ?schema=anonkit to the URL. Nothing was changed")
        return None
    with engine.connect() as conn:
        try:
            row = conn.execute(sa.select(schema_table.c.application, schema_table.c.version,
                                         schema_table.c.secret_check)).first()
        except sa.exc.DBAPIError as exc:
            raise HistoryError(f"{location}: cannot read the history's format version "
                               f"({exc.orig}); it was not written by this anonkit") from None
    if row is None or row.application != APPLICATION:
        raise HistoryError(f"{location} is not an anonkit history (its {schema_table.name} "
                           f"table does not name {APPLICATION!r}); nothing was changed")
    return int(row.version), str(row.secret_check)


def _has_other_objects(engine: Engine) -> bool:
    """A PostgreSQL database holds tables in schemas other than the default one."""
    if engine.dialect.name != "postgresql":
        return False
    with engine.connect() as conn:
        return conn.execute(sa.text(
            "SELECT 1 FROM information_schema.tables WHERE table_schema NOT IN "
            "('pg_catalog', 'information_schema') AND table_schema <> current_schema() "
            "LIMIT 1")).first() is not None


def _check_version(version: int, location: HistoryLocation) -> None:
    if version > SCHEMA_VERSION:
        raise HistoryError(f"the history {location} has format version {version}, written by "
                           f"a newer anonkit; this anonkit reads version {SCHEMA_VERSION}. "
                           f"Upgrade anonkit; the history was not changed")
    if version < 1:
        raise HistoryError(f"the history {location} has format version {version}, which this "
                           f"anonkit (version {SCHEMA_VERSION}) cannot migrate; the history was "
                           f"not changed")


class HistoryUpgradedWarning(UserWarning):
    """Opening the history upgraded it to this anonkit's format (the message says where
    the copy of the old history is)."""


def _create_schema(engine: Engine, location: HistoryLocation, secret: Secret) -> None:
    from anonkit import __version__

    try:
        with engine.connect() as conn:
            conn.execution_options(anonkit_begin="IMMEDIATE")
            with conn.begin():
                if sa.inspect(conn).has_table(schema_table.name):
                    return  # another process created it meanwhile; checked on next open
                metadata.create_all(conn)
                conn.execute(schema_table.insert().values(
                    application=APPLICATION, version=SCHEMA_VERSION,
                    created_at=datetime.now(UTC), created_by=f"anonkit {__version__}",
                    secret_check=secret.check_value(),
                    chain=head_tag(secret.value, 0, "")))
    except (sa.exc.IntegrityError, sa.exc.ProgrammingError):
        # a concurrent creator won the race (PostgreSQL); its history is checked below
        pass
    found = _inspect(engine, location)
    if found is None or not secret.matches(found[1]):
        raise HistoryError(f"another process created the history {location} at the same time "
                           f"with another secret; open it with that one")


def _create_sqlite(location: HistoryLocation, secret: bytes | str | None,
                   secret_file: Path | None) -> None:
    """Create the SQLite history at ``location`` atomically, with mode 0600: the schema is
    built in a temporary file beside it, which is then linked to the history's name
    (failing, harmlessly, when another process created the history first). So no other
    process ever sees an empty or half-created history, and an empty file found at the
    history's name is never one of ours (it is refused)."""
    path = location.sqlite_path
    assert path is not None
    given, new_secret_path = resolve_secret(explicit=secret, secret_file=secret_file,
                                            beside=secret_path_beside(path))
    if given is None:
        assert new_secret_path is not None
        given = create_secret_file(new_secret_path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.creating")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise HistoryError(f"cannot create the history {path}: {exc.strerror or exc}") from None
    os.close(fd)
    try:
        draft = HistoryLocation(URL.create("sqlite", database=str(tmp)), tmp)
        engine = _make_engine(draft)
        try:
            _create_schema(engine, draft, given)
        finally:
            engine.dispose()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # atomic, and fails if the history exists meanwhile
        except FileExistsError:
            return  # another process created it; opened (and checked) as any history
        fsync_directory(path.parent)
    finally:
        tmp.unlink(missing_ok=True)
        tmp.with_name(tmp.name + "-journal").unlink(missing_ok=True)


def _ensure_pg_schema(location: HistoryLocation, create: bool) -> bool:
    """Whether the dedicated schema of a PostgreSQL history exists (created if ``create``)."""
    engine = sa.create_engine(location.url, pool_pre_ping=True)
    try:
        with engine.connect() as conn:
            found = conn.execute(sa.text("SELECT 1 FROM information_schema.schemata "
                                         "WHERE schema_name = :name"),
                                 {"name": location.schema}).first() is not None
            if found or not create:
                return found
            conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{location.schema}"')
            conn.commit()
            return True
    except sa.exc.DBAPIError as exc:
        raise HistoryError(f"cannot open the history {location}: {exc.orig}") from None
    finally:
        engine.dispose()


def _unreadable(location: HistoryLocation, exc: sa.exc.DBAPIError) -> HistoryError:
    if location.sqlite_path is not None:
        text = str(exc.orig)
        if "readonly" in text.replace("-", "").replace(" ", "").lower() or \
                "unable to open" in text:
            return HistoryError(f"cannot read the history {location} ({exc.orig}); a "
                                f"read-only command never writes, but SQLite could not read "
                                f"it as it is (an interrupted write may need `anonkit release "
                                f"recover` by a user who may write it)")
        return HistoryError(f"{location} is not an anonkit history: it is not an SQLite "
                            f"database ({exc.orig}); name the history file with --history; "
                            f"nothing was changed")
    return HistoryError(f"cannot open the history {location}: {exc.orig}")


#: the longest text a name column of the history holds (on PostgreSQL, VARCHAR(200))
MAX_NAME = 200


def _check_names(release: PreparedRelease) -> None:
    """Refuse names longer than their column (PostgreSQL would fail mid-transaction)."""
    names = [("dataset name", release.dataset), ("key column name", release.key_column),
             *(("sensitive column name", cv.attribute) for cv in release.class_values),
             *(("group column name", g) for g in [release.group_column] if g is not None)]
    for what, name in names:
        if len(str(name)) > MAX_NAME:
            raise HistoryError(f"the {what} {str(name)[:40]!r}... has {len(str(name))} "
                               f"characters; the history keeps at most {MAX_NAME}: rename it; "
                               f"nothing was written")
    if len(release.method) > 100:
        raise HistoryError(f"the method name {release.method[:40]!r}... is longer than 100 "
                           f"characters; nothing was written")


#: PostgreSQL advisory lock key that serializes commits of releases (any 64-bit number that
#: no other application of the database uses for its own lock: "anonkit" in ASCII)
_COMMIT_LOCK = int.from_bytes(b"anonkit", "big")


def last_release_id(conn: Connection) -> int:
    """The id of the history's latest recorded release (0: none)."""
    return int(conn.execute(sa.select(sa.func.max(releases_table.c.id))).scalar() or 0)


def _refuse_unseen_releases(conn: Connection, release: PreparedRelease) -> None:
    """Inside the commit: refuse when a release of another dataset that shares records
    with this one was recorded after the lineage decision (ids grow in commit order:
    commits are serialized). A release without history-wide pseudonyms cannot tell, and
    counts as sharing."""
    candidates = conn.execute(
        sa.select(releases_table.c.id, releases_table.c.dataset, releases_table.c.seq)
        .where(releases_table.c.id > release.lineage_mark,
               releases_table.c.dataset != release.dataset)
        .order_by(releases_table.c.id)).all()
    if not candidates:  # the usual case: nothing recorded meanwhile, nothing to convert
        return
    wanted = pseudonym_array([] if release.record_persons is None else release.record_persons,
                             "history-wide pseudonym")
    unseen = []
    for release_id, dataset, seq in candidates:
        known = _release_persons(conn, release_id)
        if known is None or np.isin(known, wanted).any():
            unseen.append((dataset, seq))
    if unseen:
        shown = ", ".join(f"release {seq} of {dataset!r}" for dataset, seq in unseen[:3])
        raise ConcurrentPublishError(
            f"release {release.seq} of dataset {release.dataset!r} was not recorded: "
            f"{shown} was published by another process while this one was checked, and it "
            f"may share records with this one; nothing was written. Publish again: the "
            f"lineage check must see every recorded release")


def _lost_race(release: PreparedRelease, latest: int | None) -> ConcurrentPublishError:
    now = f" (it now has release {latest})" if latest else ""
    return ConcurrentPublishError(
        f"release {release.seq} of dataset {release.dataset!r} was published by another "
        f"process while this one ran{now}; nothing was written. Publish again: the new "
        f"release must be computed against the latest one")


def _release_values(release: PreparedRelease) -> dict[str, object]:
    from anonkit import __version__

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


_CLASS_COLUMNS = ("release_id", "class_id", "size", "qi_labels")


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


def _counterfeits(release: PreparedRelease) -> list[int]:
    fake = release.counterfeit_array()
    sizes = np.fromiter((row[1] for row in release.class_rows), dtype=np.int64,
                        count=release.n_classes)
    if len(fake) != len(sizes):
        raise HistoryError(f"the release has {len(sizes)} classes but {len(fake)} counterfeit "
                           f"counts; give one count per class")
    if len(fake) and ((fake < 0) | (fake > sizes)).any():
        bad = int(np.flatnonzero((fake < 0) | (fake > sizes))[0])
        raise HistoryError(f"class {bad} has {int(fake[bad])} counterfeit rows but "
                           f"{int(sizes[bad])} rows; a class's counterfeits are among its rows")
    return fake.tolist()


def _auxiliary(release: PreparedRelease) -> dict[str, pd.DataFrame]:
    for name, table in release.auxiliary.items():
        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise HistoryError(f"invalid auxiliary table name {name!r}: give 1 to 200 "
                               f"characters")
        if not isinstance(table, pd.DataFrame):
            raise HistoryError(f"auxiliary table {name!r} must be a pandas DataFrame, got "
                               f"{type(table).__name__}")
    return release.auxiliary


def _parquet(table: pd.DataFrame) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), sink, compression="zstd")
    return sink.getvalue()


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


def _info(row: sa.RowMapping) -> ReleaseInfo:
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


def _ranges(numbers: Sequence[int]) -> str:
    if not numbers:
        return "none"
    return f"{numbers[0]}..{numbers[-1]}" if len(numbers) > 2 else ", ".join(map(str, numbers))


# -- what an adversary sees in a release, as class rows ----------------------------------


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
    """A JSON-ready scalar: integral numbers as int, other numbers as float, missing as
    None, anything else as text."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not np.isfinite(value):
            return None
        return int(value) if value.is_integer() else value
    if value is None or (not isinstance(value, str) and pd.isna(value)):
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
            text = text.map(lambda v: None if _plain(v) is None else str(_plain(v)))
        codes, uniques = pd.factorize(text, sort=True)
        names = np.append(np.asarray(uniques, dtype=object), None)
    n_values = len(uniques) + 1
    codes = np.where(codes < 0, len(uniques), codes).astype(np.int64)  # missing: last code
    keys, inverse, counts = np.unique(class_ids * n_values + codes, return_inverse=True,
                                      return_counts=True)
    return (ClassValues(attr, keys // n_values, names[keys % n_values],
                        counts.astype(np.int64), numeric), inverse.reshape(-1))
