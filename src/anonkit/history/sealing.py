"""A release's place in the history's authentication chain (see
:mod:`anonkit.history.chain`): the digests of every part the history keeps of it, its tag,
and the chain's head moved to it. The store seals each release it commits; the upgrade to
version 4 and ``recover --accept-tampered`` seal every release as it is then.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from anonkit.history.chain import head_tag, part_digest, release_tag
from anonkit.history.records import RecordMap, release_info
from anonkit.history.rows import fetch_raw, load_record_map
from anonkit.history.schema import (
    class_values_table,
    classes_table,
    record_maps_table,
    record_values_table,
    releases_table,
    schema_table,
)
from anonkit.history.secret import Secret


def map_digest(record_map: RecordMap) -> str:
    row = record_map.row()
    return part_digest([row["keys"], row["classes"], row["sizes"],  # type: ignore[list-item]
                        row["counterfeits"]])


def blob_digest(blob: bytes | None) -> str:
    """The digest of a blob that may be absent (NULL and empty differ)."""
    return part_digest([b"" if blob is None else b"\x01" + bytes(blob)])


def labels_digest(texts: Sequence[str]) -> str:
    return part_digest(t.encode("utf-8") for t in texts)


def values_digest(rows: Sequence[tuple[str, bool, bytes]]) -> str:
    return part_digest(chunk for attribute, numeric, blob in sorted(rows, key=lambda r: r[0])
                       for chunk in (attribute.encode("utf-8"), b"1" if numeric else b"0",
                                     bytes(blob)))


def record_values_digest(rows: Sequence[tuple[str, bytes, bytes]]) -> str:
    return part_digest(chunk for attribute, nonce, codes in sorted(rows, key=lambda r: r[0])
                       for chunk in (attribute.encode("utf-8"), bytes(nonce), bytes(codes)))


def content_digest(record_map: RecordMap, persons: bytes | None, prints: bytes | None,
                   labels: Sequence[str], values: Sequence[tuple[str, bool, bytes]],
                   coded: Sequence[tuple[str, bytes, bytes]]) -> dict[str, str]:
    """The digests of every part the history keeps of a release (see chain.py), as stored."""
    return {"map": map_digest(record_map), "persons": blob_digest(persons),
            "fingerprints": blob_digest(prints), "labels": labels_digest(labels),
            "values": values_digest(values), "record_values": record_values_digest(coded)}


def authenticate(conn: Connection, secret: Secret, release_id: int, previous: str,
                 content: dict[str, str]) -> str:
    """Record a release's content digests and its ``auth`` (from its row as read back, so
    the check later reads the same values; neither column is part of what the tag covers),
    and move the history's head to it."""
    info = release_info(conn.execute(sa.select(releases_table)
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
        info = release_info(conn.execute(
            sa.select(releases_table).where(releases_table.c.id == release_id)).mappings().one())
        record_map = load_record_map(conn, info, secret)
        maps = record_maps_table.c
        persons = conn.execute(sa.select(maps.persons).where(maps.release_id == release_id)
                               ).scalar()
        labels = [r[0] for r in fetch_raw(
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
        content = content_digest(record_map, persons, prints, labels,  # type: ignore[arg-type]
                                 values, coded)  # type: ignore[arg-type]
        previous = authenticate(conn, secret, release_id, previous, content)
    return len(ids)
