"""Upgrading a release history to this anonkit's format.

Version 1 (the first release history) knew one kind of release (generalized, one row per
input row) and kept no cross-release requirements: the audit derived them from the names
of the recorded models. Version 2 adds, per release, ``release_kind``, ``threat_model``,
``requirements``, ``seeded`` and ``group_column``; per class ``counterfeits``; and the tables
``anonkit_method_state`` and ``anonkit_auxiliary``; per release its ``lineage`` decision and per
record its history-wide pseudonym ``person_hash``. A migrated release's ``lineage`` and its
records' ``person_hash`` are NULL: the history-wide pseudonym is a keyed hash of the record
key, which a version-1 history never kept, so it cannot be recomputed. A new release that
may share records with such releases of another dataset is treated as sharing them (see
:func:`anonkit.history.publish.check_lineage`).

Version 3 adds two tables: ``anonkit_record_maps`` (per release its pseudonym -> class map,
its records' history-wide pseudonyms and its class sizes as blobs, filled from
``anonkit_records`` and ``anonkit_classes`` on upgrade; a release any of whose records has a
NULL ``person_hash`` -- every release migrated from version 1 -- gets NULL ``persons``: it
still cannot tell whom it holds) and ``anonkit_knowledge`` (per dataset an encrypted
knowledge state; left empty on upgrade: it is rebuilt when missing). A version-3 release
writes no ``anonkit_records`` rows; the rows of the releases recorded before are kept where
they are (nothing is deleted by an upgrade), and read only for a release without a map.

Version 4 adds, per release, ``gate``: what the publish-time gate found and whether
``--allow-breach`` overrode it (NULL for a migrated release: not recorded), and ``auth`` and
``content_digest``, its place in the history's authentication chain, with the chain's head
in ``anonkit_schema.chain`` (:mod:`anonkit.history.chain`). The upgrade authenticates every
release as it is then.

Opening a version-1 history upgrades it, in one transaction: columns are added with the
defaults a version-1 release has (``generalized``, ``one-shot``, not seeded, no group column,
no counterfeits), the new tables are created, every release gets the requirements its
recorded verdicts imply (:func:`v1_requirements`), then the version-3 tables are added and
filled, the version-4 column is added, and the version is bumped. A version-2 history
gets the last three steps, a version-3 one the last two. Either all
of it commits or none: a failed upgrade leaves the old history as it was.

Before that, an SQLite history is copied with SQLite's online backup API to
``<history>.v1-backup`` (``.v2-backup`` for a version-2 one; ``-2``, ``-3``, ... appended when
that name is taken: an existing backup is never overwritten), while the upgrade holds the
write lock, so the copy is exactly the history that was upgraded. PostgreSQL databases are
backed up by their operators' own means.

Concurrent openers: the upgrade takes the write lock first (SQLite ``BEGIN IMMEDIATE``;
PostgreSQL ``LOCK TABLE anonkit_schema``) and reads the version again under it, so of two
processes opening an old history at once one upgrades and the other, once the lock is
released, finds the current version and does nothing.
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from anonkit.errors import HistoryError
from anonkit.history.crypto import decrypt_knowledge_v3, encrypt_classes, encrypt_knowledge
from anonkit.history.location import SQLITE_BUSY_TIMEOUT, HistoryLocation
from anonkit.history.rows import record_map_from_rows
from anonkit.history.schema import (
    SCHEMA_VERSION,
    V2_TABLES,
    V3_TABLES,
    classes_table,
    knowledge_table,
    record_maps_table,
    records_table,
    releases_table,
    schema_table,
)
from anonkit.history.sealing import seal_history
from anonkit.history.secret import Secret
from anonkit.models.base import CrossReleaseRequirement

#: Test seam: a step name -> a function called there (``upgraded``: every change made,
#: not committed). Empty in normal use.
MIGRATION_HOOKS: dict[str, Callable[[], None]] = {}

#: the backup of a version-1 history (a version-n one: ``.vn-backup``)
BACKUP_SUFFIX = ".v1-backup"


def backup_suffix(version: int) -> str:
    return f".v{int(version)}-backup"


# -- version 1, as it was created (the description of what is upgraded) -------------------

v1_metadata = sa.MetaData()

sa.Table(
    "anonkit_schema", v1_metadata,
    sa.Column("application", sa.String(64), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("created_by", sa.String(64), nullable=False),
    sa.Column("secret_check", sa.String(64), nullable=False),
)

sa.Table(
    "anonkit_releases", v1_metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("dataset", sa.String(200), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("method", sa.String(100), nullable=False),
    sa.Column("parameters", sa.JSON, nullable=False),
    sa.Column("key_column", sa.String(200), nullable=False),
    sa.Column("columns", sa.JSON, nullable=False),
    sa.Column("quasi_identifiers", sa.JSON, nullable=False),
    sa.Column("sensitive", sa.JSON, nullable=False),
    sa.Column("models", sa.JSON, nullable=False),
    sa.Column("verdicts", sa.JSON, nullable=False),
    sa.Column("n_input_rows", sa.Integer, nullable=False),
    sa.Column("n_released_rows", sa.Integer, nullable=False),
    sa.Column("n_classes", sa.Integer, nullable=False),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("file_size", sa.BigInteger, nullable=False),
    sa.Column("output_path", sa.Text, nullable=False),
    sa.Column("pending_path", sa.Text, nullable=True),
    sa.Column("anonkit_version", sa.String(32), nullable=False),
    sa.UniqueConstraint("dataset", "seq", name="anonkit_releases_dataset_seq"),
)

sa.Table(
    "anonkit_classes", v1_metadata,
    sa.Column("release_id", sa.Integer,
              sa.ForeignKey("anonkit_releases.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("class_id", sa.Integer, primary_key=True),
    sa.Column("size", sa.Integer, nullable=False),
    sa.Column("qi_labels", sa.Text, nullable=False),
    sqlite_with_rowid=False,
)

sa.Table(
    "anonkit_class_values", v1_metadata,
    sa.Column("release_id", sa.Integer,
              sa.ForeignKey("anonkit_releases.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("attribute", sa.String(200), primary_key=True),
    sa.Column("numeric", sa.Boolean, nullable=False),
    sa.Column("n_entries", sa.Integer, nullable=False),
    sa.Column("multisets", sa.LargeBinary, nullable=False),
)

sa.Table(
    "anonkit_records", v1_metadata,
    sa.Column("release_id", sa.Integer,
              sa.ForeignKey("anonkit_releases.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("key_hash", sa.LargeBinary(16), primary_key=True),
    sa.Column("class_id", sa.Integer, nullable=False),
    sqlite_with_rowid=False,
)

#: the columns version 2 adds to version-1 tables (each with the default a v1 row gets)
V2_COLUMNS: tuple[sa.Column[object], ...] = (
    releases_table.c.release_kind, releases_table.c.threat_model,
    releases_table.c.requirements, releases_table.c.seeded, releases_table.c.group_column,
    releases_table.c.lineage, classes_table.c.counterfeits, records_table.c.person_hash,
)
V4_COLUMNS: tuple[sa.Column[object], ...] = (
    releases_table.c.gate, releases_table.c.auth, releases_table.c.content_digest,
    schema_table.c.chain, record_maps_table.c.fingerprints,
)


# -- requirements of a version-1 release ---------------------------------------------------


def v1_requirements(verdicts: Sequence[Mapping[str, object]]
                    ) -> list[CrossReleaseRequirement]:
    """What a version-1 release promised across releases, from its recorded verdicts.

    This is the only place that maps model *names* to requirements, and only for releases
    recorded before models declared their requirements themselves; the mapping is the one
    the version-1 audit applied, so an upgraded history audits as it did:

    - ``k-anonymity`` (k): ``candidates >= k``;
    - any ``... diversity`` with an ``l``: ``distinct >= l`` (every l-diversity variant implies
      l distinct values per class), for entropy l-diversity ``distinct >= ceil(l)`` (a count
      below a fractional l is below its ceiling too);
    - ``(k,e)-anonymity`` (k, e): ``distinct_present >= k`` (it does not count a missing
      value) and ``range >= e``;
    - anything else (t-closeness, δ-disclosure, β-likeness): no requirement (the audit still
      checks those releases for exact disclosure).

    Version-1 verdicts do not name the sensitive attribute, so the requirements concern
    every sensitive attribute (``attribute=None``), as the version-1 audit did.
    """
    out: list[CrossReleaseRequirement] = []
    for verdict in verdicts:
        name = str(verdict.get("model", ""))
        params = verdict.get("parameters") or {}
        if not isinstance(params, Mapping):
            continue
        found = []
        if name == "k-anonymity" and "k" in params:
            found.append(("candidates", _number(params["k"])))
        elif "diversity" in name and "l" in params:
            level = _number(params["l"])
            found.append(("distinct", float(math.ceil(level)) if name.startswith("entropy")
                          else level))
        elif name == "(k,e)-anonymity":
            if "k" in params:
                found.append(("distinct_present", _number(params["k"])))
            if "e" in params:
                found.append(("range", _number(params["e"])))
        for measure, threshold in found:
            requirement = CrossReleaseRequirement(name, measure, threshold)
            if requirement not in out:  # one verdict per sensitive attribute repeats them
                out.append(requirement)
    return out


def _number(value: object) -> float:
    return float(value)  # type: ignore[arg-type]


# -- the upgrade ---------------------------------------------------------------------------


def upgrade(engine: Engine, location: HistoryLocation, secret: Secret) -> str | None:
    """Upgrade the version-1 or version-2 history behind ``engine`` to the current version
    (see the module). Returns what was done, for the user, or None when another process
    upgraded it first."""
    backup: Path | None = None
    version: int | None = None
    try:
        with engine.connect() as conn:
            conn.execution_options(anonkit_begin="IMMEDIATE")
            with conn.begin():
                if conn.dialect.name == "postgresql":
                    conn.exec_driver_sql(
                        f"LOCK TABLE {schema_table.name} IN ACCESS EXCLUSIVE MODE")
                version = conn.execute(sa.select(schema_table.c.version)).scalar()
                if version == SCHEMA_VERSION:
                    return None  # upgraded by another process while we waited for the lock
                if version not in (1, 2, 3):
                    raise HistoryError(f"the history {location} has format version {version}, "
                                       f"which this anonkit (version {SCHEMA_VERSION}) cannot "
                                       f"migrate; the history was not changed")
                if location.sqlite_path is not None:
                    backup = _backup(location.sqlite_path, version)
                if version == 1:
                    _to_v2(conn)
                if version <= 2:
                    _to_v3(conn)
                _add_columns(conn, V4_COLUMNS)
                _encrypt_classes_and_knowledge(conn, secret)
                # every release as it is now is authenticated: from here on, a change made
                # without the secret shows (see anonkit.history.chain)
                seal_history(conn, secret)
                conn.execute(schema_table.update().values(version=SCHEMA_VERSION))
                hook = MIGRATION_HOOKS.get("upgraded")
                if hook is not None:
                    hook()
    except BaseException as exc:
        if backup is not None:
            backup.unlink(missing_ok=True)  # the history is still the old one: nothing to keep
        if isinstance(exc, sa.exc.DBAPIError):
            raise HistoryError(f"could not upgrade the history {location} to format version "
                               f"{SCHEMA_VERSION} ({exc.orig}); it was not changed") from None
        raise
    where = (f"; the version-{version} history was copied to {backup} first"
             if backup is not None else "")
    return (f"upgraded the history {location} from format version {version} to "
            f"{SCHEMA_VERSION}{where}")


def _add_columns(conn: Connection, columns: Sequence[sa.Column[object]]) -> None:
    """Add the columns a table lacks (a table the upgrade itself just created from the
    current metadata has them already)."""
    inspector = sa.inspect(conn)
    for column in columns:
        present = {c["name"] for c in inspector.get_columns(column.table.name)}
        if column.name in present:
            continue
        ddl = sa.schema.CreateColumn(column).compile(dialect=conn.dialect)
        conn.exec_driver_sql(f"ALTER TABLE {column.table.name} ADD COLUMN {ddl}")


def _to_v2(conn: Connection) -> None:
    _add_columns(conn, V2_COLUMNS)
    for table in V2_TABLES:
        table.create(conn)
    rows = conn.execute(sa.select(releases_table.c.id, releases_table.c.verdicts)).all()
    derived = [{"release": row.id, "derived": [r.to_dict() for r in v1_requirements(
        row.verdicts or [])]} for row in rows]
    if derived:
        conn.execute(releases_table.update()
                     .where(releases_table.c.id == sa.bindparam("release"))
                     .values(requirements=sa.bindparam("derived")), derived)


def _to_v3(conn: Connection) -> None:
    """Create the version-3 tables and give every release its record map, with its
    records' history-wide pseudonyms when every record has one (one release's records in
    memory at a time)."""
    for table in V3_TABLES:
        table.create(conn)
    ids = conn.execute(sa.select(releases_table.c.id).order_by(releases_table.c.id)).scalars()
    for release_id in list(ids):
        conn.execute(record_maps_table.insert().values(
            release_id=release_id,
            **record_map_from_rows(conn, release_id, persons=True).row()))


def _encrypt_classes_and_knowledge(conn: Connection, secret: Secret) -> None:
    """Version 4 keeps which record is in which class encrypted: the record maps' classes,
    and the whole kept knowledge (its public part was in clear). A knowledge state that
    cannot be read is dropped: it is derived, and rebuilt from the releases."""
    maps, releases = record_maps_table.c, releases_table.c
    rows = conn.execute(sa.select(maps.release_id, releases.dataset, releases.seq,
                                  maps.n_records, maps.classes)
                        .join(releases_table, releases.id == maps.release_id)).all()
    for release_id, dataset, seq, n, classes in rows:
        if len(classes) == 4 * int(n):  # in clear
            conn.execute(record_maps_table.update().where(maps.release_id == release_id)
                         .values(classes=encrypt_classes(secret, dataset, seq, bytes(classes))))
    known = knowledge_table.c
    for dataset, through, nonce, tag, state in conn.execute(
            sa.select(known.dataset, known.through_seq, known.nonce, known.tag,
                      known.state)).all():
        try:
            parts = decrypt_knowledge_v3(secret, dataset, through, bytes(nonce), bytes(tag),
                                         bytes(state))
        except HistoryError:
            conn.execute(knowledge_table.delete().where(known.dataset == dataset))
            continue
        new_nonce, new_tag, stored = encrypt_knowledge(secret, dataset, through, parts)
        conn.execute(knowledge_table.update().where(known.dataset == dataset)
                     .values(nonce=new_nonce, tag=new_tag, state=stored))


def _backup(database: Path, version: int) -> Path:
    """Copy the SQLite history to a new file beside it, never over an existing one (the
    caller holds the write lock: the copy is the history it is about to upgrade)."""
    target = _reserve(database, backup_suffix(version))
    try:
        # a second connection: the backup API cannot read through the one holding the
        # write lock, while another reader may (SQLite's RESERVED lock admits readers)
        source = sqlite3.connect(database, timeout=SQLITE_BUSY_TIMEOUT)
        try:
            copy = sqlite3.connect(target)
            try:
                source.backup(copy)
            finally:
                copy.close()
        finally:
            source.close()
    except BaseException as exc:
        target.unlink(missing_ok=True)
        if isinstance(exc, sqlite3.Error | OSError):
            raise HistoryError(f"could not copy the history {database} to {target} before "
                               f"upgrading it ({exc}); it was not changed") from None
        raise
    return target


def _reserve(database: Path, suffix: str = BACKUP_SUFFIX) -> Path:
    """Create an empty file named ``<history><suffix>`` (or ``-2``, ``-3``, ...) with the
    history's permissions: created exclusively, so no backup is ever overwritten."""
    mode = database.stat().st_mode & 0o777
    for n in range(1, 1000):
        name = database.name + suffix + ("" if n == 1 else f"-{n}")
        target = database.with_name(name)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            continue
        os.close(fd)
        return target
    raise HistoryError(f"could not upgrade the history {database}: 999 backups of it already "
                       f"exist beside it ({database.name}{suffix}...); move them away")
