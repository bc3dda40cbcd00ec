"""A release's record map as the database holds it: its ``anonkit_record_maps`` row, or,
for a release recorded before version 3, its ``anonkit_records`` and ``anonkit_classes``
rows. Both :class:`~anonkit.history.store.HistoryStore` and the upgrade
(:mod:`anonkit.history.migrations`) read them: here, so the upgrade need not import the store.
"""

from __future__ import annotations

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from anonkit.errors import HistoryError
from anonkit.history.chain import TamperedHistoryError
from anonkit.history.crypto import decrypt_classes
from anonkit.history.records import RecordMap, ReleaseInfo
from anonkit.history.schema import classes_table, record_maps_table, records_table
from anonkit.history.secret import Secret


def fetch_raw(conn: Connection, query: sa.Select[tuple[object, ...]]) -> list[tuple[object, ...]]:
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


def load_record_map(conn: Connection, release: ReleaseInfo,
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
    records = fetch_raw(conn, sa.select(*columns).where(records_c.release_id == release_id)
                        .order_by(records_c.key_hash))
    record_type = [("key", "S16"), ("cls", np.int64)] + (
        [("person", "S16")] if with_persons else [])
    by_key = np.array(records, dtype=record_type) if records else np.zeros(0, record_type)
    counts = fetch_raw(conn, sa.select(classes_table.c.size, classes_table.c.counterfeits)
                       .where(classes_table.c.release_id == release_id)
                       .order_by(classes_table.c.class_id))
    class_type = [("size", np.int64), ("fake", np.int64)]
    by_class = np.array(counts, dtype=class_type) if counts else np.zeros(0, class_type)
    return RecordMap(np.ascontiguousarray(by_key["key"]), by_key["cls"], by_class["size"],
                     by_class["fake"],
                     np.ascontiguousarray(by_key["person"]) if with_persons else None)
