"""The release history's database layout: its tables, their format version, and the
tables each version added (what :mod:`anonkit.history.migrations` creates when upgrading).

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
  sizes: what :meth:`~anonkit.history.store.HistoryStore.load` and the lineage check read;
- ``anonkit_records``: the same, one row per record, for releases recorded before version 3
  only (kept as they were; a new release writes none: a million rows were a third of the
  time of recording a million-row release);
- ``anonkit_knowledge`` (since version 3): per dataset, the adversary's accumulated
  knowledge after its latest release, an opaque blob, encrypted and authenticated;
- ``anonkit_method_state``: an opaque blob a sequential method keeps for its next release;
- ``anonkit_auxiliary``: tables published beside a release (counterfeit counts per class,
  the (k,e) group table), one Parquet blob per name.

``anonkit_schema`` holds the format version, :data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

import sqlalchemy as sa

SCHEMA_VERSION = 4
APPLICATION = "anonkit-history"

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

#: the tables a version-3 history adds to a version-2 one
V3_TABLES = (record_maps_table, knowledge_table)

#: the longest text a name column of the history holds (on PostgreSQL, VARCHAR(200))
MAX_NAME = 200
