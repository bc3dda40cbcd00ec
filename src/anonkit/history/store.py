"""An open release history, :class:`HistoryStore`: opening (or creating) it, reading its
releases back and recording new ones. Its tables are described in
:mod:`anonkit.history.schema`, what it returns in :mod:`anonkit.history.records`.

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

import io
import json
import os
import sqlite3
import urllib.parse
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, Engine

from anonkit import __version__
from anonkit._util.files import atomic_write, fsync_directory, sha256_file
from anonkit.errors import ConcurrentPublishError, HistoryError
from anonkit.history.chain import TamperedHistoryError, check_chain, check_part, head_tag
from anonkit.history.crypto import (
    decrypt_fingerprints,
    decrypt_knowledge,
    decrypt_record_values,
    encrypt_classes,
    encrypt_fingerprints,
    encrypt_knowledge,
    encrypt_record_values,
)
from anonkit.history.location import (
    DEFAULT_HISTORY,
    HISTORY_ENV,
    SQLITE_BUSY_TIMEOUT,
    HistoryLocation,
)
from anonkit.history.migrations import upgrade
from anonkit.history.records import (
    ClassValues,
    PreparedRelease,
    RecordMap,
    ReleaseInfo,
    ReleaseView,
    SharedRecords,
    pseudonym_array,
    release_info,
    release_values,
)
from anonkit.history.rows import fetch_raw, load_record_map
from anonkit.history.schema import (
    APPLICATION,
    MAX_NAME,
    SCHEMA_VERSION,
    auxiliary_table,
    class_values_table,
    classes_table,
    knowledge_table,
    metadata,
    method_state_table,
    record_maps_table,
    record_values_table,
    records_table,
    releases_table,
    schema_table,
)
from anonkit.history.sealing import (
    authenticate,
    blob_digest,
    content_digest,
    labels_digest,
    map_digest,
    record_values_digest,
    seal_history,
    values_digest,
)
from anonkit.history.secret import (
    Secret,
    canonical_keys,
    create_secret_file,
    resolve_secret,
    secret_path_beside,
    warn_if_beside,
)
from anonkit.history.tempfiles import TMP_PREFIX, drop_lock, token_of
from anonkit.release import auxiliary_path


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
        created = False
        if path is not None:
            if path.is_dir():
                raise HistoryError(f"the history {path} is a folder; name the history file "
                                   f"in it, e.g. --history {path / DEFAULT_HISTORY}")
            if not path.exists():
                if not create:
                    raise HistoryError(f"no release history at {path}: publish a release "
                                       f"first (anonkit release publish ...), or name the "
                                       f"history with --history / {HISTORY_ENV}")
                if not path.parent.is_dir():
                    raise HistoryError(f"cannot create the history {path}: the folder "
                                       f"{path.parent} does not exist")
                if not os.access(path.parent, os.W_OK | os.X_OK):
                    raise HistoryError(f"cannot create the history {path}: the folder "
                                       f"{path.parent} is not writable; choose another "
                                       f"folder")
                _create_sqlite(location, secret, explicit_file)
                created = True
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
                    note = upgrade(engine, location, given)
                    created = True  # new to this version: its warnings are due once
                    if note is not None:
                        warnings.warn(note, HistoryUpgradedWarning, stacklevel=2)
        except sa.exc.DBAPIError as exc:
            engine.dispose()
            raise _unreadable(location, exc) from None
        except BaseException:
            engine.dispose()
            raise
        if path is not None and (created or found is None):
            # once per history, when it is created (or upgraded): every later list, show
            # and audit repeating it would teach the steward to skip the warnings
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
            infos = [release_info(row) for row in conn.execute(
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
            out = [release_info(row) for row in conn.execute(query).mappings()]
        if dataset is not None and not out:
            raise self._unknown_dataset(dataset)
        return out

    def latest(self, dataset: str) -> ReleaseInfo | None:
        query = (sa.select(releases_table).where(releases_table.c.dataset == dataset)
                 .order_by(releases_table.c.seq.desc()).limit(1))
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        return release_info(row) if row is not None else None

    def release(self, dataset: str, seq: int) -> ReleaseInfo:
        query = sa.select(releases_table).where(releases_table.c.dataset == dataset,
                                                releases_table.c.seq == seq)
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        if row is None:
            known = [r.seq for r in self.releases(dataset)]  # raises for an unknown dataset
            raise HistoryError(f"dataset {dataset!r} has no release {seq}; it has releases "
                               f"{_ranges(known)}")
        return release_info(row)

    def load(self, release: ReleaseInfo, labels: bool = True) -> ReleaseView:
        """The release's classes, multisets and pseudonym -> class map, as arrays."""
        classes = classes_table.c
        with self.engine.connect() as conn:
            record_map = load_record_map(conn, release, self.secret)
            # the labels only when asked for: the other columns are in the record map
            label_texts = [r[0] for r in fetch_raw(
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
        check_part(release, "map", map_digest(record_map), accept)
        if labels:
            check_part(release, "labels", labels_digest(label_texts), accept)  # type: ignore[arg-type]
        check_part(release, "values", values_digest(value_rows), accept)  # type: ignore[arg-type]
        check_part(release, "record_values", record_values_digest(coded), accept)  # type: ignore[arg-type]
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
        ``load_record_map`` returns them), from its ``record_values_table`` rows."""
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
        check_part(release, "fingerprints", blob_digest(row[2]), self.accept_tampered)
        check_part(release, "persons", blob_digest(row[1]), self.accept_tampered)
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
                    releases_table.insert().values(release_values(release))
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
                content = content_digest(record_map, map_row["persons"],  # type: ignore[arg-type]
                                         prints, labels_by_id, value_rows, coded)
                authenticate(conn, self.secret, release_id, previous_auth, content)
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
            return [release_info(row) for row in rows.mappings()]

    def recover(self) -> list[str]:
        """Finish publishes that committed but did not rename their file (the process
        died in between; see :mod:`anonkit.history.publish`): the file, and the auxiliary
        tables still at their temporary names, are moved to their names, and the dead
        publisher's lock file is removed. Returns what was done."""
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
        rows = fetch_raw(conn, sa.select(records_table.c.person_hash)
                         .where(records_table.c.release_id == release_id))
        if any(r[0] is None for r in rows):
            return None
        return pseudonym_array([bytes(r[0]) for r in rows])  # type: ignore[arg-type]
    n, blob = int(row[0]), row[1]
    if release is not None:
        check_part(release, "persons", blob_digest(blob), accept_tampered)
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


def _our_pending_file(pending: Path, output: Path) -> bool:
    """Whether ``pending`` is the temporary file a publish of ``output`` makes: in the
    output's own folder, named ``.anonkit-tmp-<pid>-<16 hex>-<output name>`` (so a row
    edited to name any other file is never moved over anything)."""
    if not pending.is_absolute() or not output.is_absolute():
        return False
    if os.path.normpath(pending.parent) != os.path.normpath(output.parent):
        return False
    token = token_of(pending.name)
    return token is not None and pending.name == f"{TMP_PREFIX}{token}-{output.name}"


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
        try:
            given = create_secret_file(new_secret_path)
        except OSError as exc:  # a folder that refuses writes even where access() said yes
            raise _cannot_create(path, exc) from None
    draft_path: Path | None = None
    try:
        with atomic_write(path, mode=0o600, exclusive=True,
                          refuse=_cannot_create) as draft_path:
            draft = HistoryLocation(URL.create("sqlite", database=str(draft_path)), draft_path)
            engine = _make_engine(draft)
            try:
                _create_schema(engine, draft, given)
            finally:
                engine.dispose()
    except FileExistsError:
        return  # another process created it; opened (and checked) as any history
    finally:
        if draft_path is not None:
            draft_path.with_name(draft_path.name + "-journal").unlink(missing_ok=True)


def _cannot_create(path: Path, exc: OSError) -> HistoryError:
    return HistoryError(f"cannot create the history {path}: "
                        f"{(exc.strerror or str(exc)).lower()}; choose another folder")


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


_CLASS_COLUMNS = ("release_id", "class_id", "size", "qi_labels")


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


def _ranges(numbers: Sequence[int]) -> str:
    if not numbers:
        return "none"
    return f"{numbers[0]}..{numbers[-1]}" if len(numbers) > 2 else ", ".join(map(str, numbers))
