"""History format version 3: the record map (one row per release instead of one per record),
the encrypted knowledge state, upgrading version-2 histories, and the row-wise
intersection attack on class arrays."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import sqlite3
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from anonkit.errors import HistoryError
from anonkit.history.crypto import decrypt_classes, decrypt_record_values, encrypt_record_values
from anonkit.history.intersection import (
    class_intersection,
    intersection_attack,
    intersection_scopes,
    parse_spans,
)
from anonkit.history.migrations import MIGRATION_HOOKS
from anonkit.history.records import PreparedRelease
from anonkit.history.rows import record_map_from_rows
from anonkit.history.schema import SCHEMA_VERSION, knowledge_table, record_maps_table, records_table
from anonkit.history.store import HistoryStore, HistoryUpgradedWarning
from anonkit.history.summary import multisets, record_entries
from anonkit.models.base import CrossReleaseRequirement
from history_helpers import as_version_2, write_record_rows
from locations import FIXTURES

if TYPE_CHECKING:
    from pg_fixtures import HistoryTarget, TemporaryPostgres

pytest_plugins = ["pg_fixtures"]

V1_FIXTURE = FIXTURES / "history_v1"

#: pseudonyms that an "S16" numpy string would shorten: trailing NUL bytes
NUL_KEYS = [b"\x00" * 16, b"tail-nul" + b"\x00" * 8, b"x" * 15 + b"\x00", b"\xff" * 16]


def release(seq: int, keys: list[bytes], classes: list[int], labels: list[str], *,
            dataset: str = "d", state: tuple[bytes, bytes] | None = None,
            diseases: list[str] | None = None, fakes: list[int] | None = None
            ) -> PreparedRelease:
    """A release built by hand: record ``keys[i]`` in class ``classes[i]``; class ``c``
    released as ``labels[c]``, with ``fakes[c]`` counterfeit rows more."""
    order = np.argsort(np.array(keys, dtype="V16"), kind="stable") if keys else []
    keys = [keys[i] for i in order]
    classes = [classes[i] for i in order]
    class_ids = np.array(classes, dtype=np.int64)
    diseases = ([diseases[i] for i in order] if diseases is not None
                else [f"v{c}" for c in classes])
    values = pd.Series(diseases, dtype=object)
    sizes = np.bincount(class_ids, minlength=len(labels)) + np.asarray(
        fakes if fakes is not None else np.zeros(len(labels)), dtype=np.int64)
    return PreparedRelease(
        dataset=dataset, seq=seq, method="hand", parameters={}, key_column="pid",
        columns={}, quasi_identifiers=["q"], sensitive=["disease"],
        models=[{"model": "k-anonymity", "parameters": {"k": 2}}], verdicts=[],
        n_input_rows=len(keys), n_released_rows=len(keys),
        class_rows=[(c, int(sizes[c]), json.dumps([labels[c]])) for c in range(len(labels))],
        class_values=[multisets("disease", values, class_ids)],
        record_hashes=list(keys), record_classes=classes,
        requirements=[CrossReleaseRequirement("k-anonymity", "candidates", 2.0)],
        record_values={"disease": record_entries("disease", values, class_ids)},
        knowledge_state=state, counterfeits=fakes)


def rows_of(store: HistoryStore, release_id: int) -> tuple[list[bytes], list[int]]:
    """The release's records as rows of ``anonkit_records``, in key order."""
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(records_table.c.key_hash, records_table.c.class_id)
                            .where(records_table.c.release_id == release_id)
                            .order_by(records_table.c.key_hash)).all()
    return [bytes(r[0]) for r in rows], [int(r[1]) for r in rows]


def open_store(history: HistoryTarget, **kwargs: object) -> HistoryStore:
    return HistoryStore.open(history.url, secret_file=history.secret_file, **kwargs)


# -- the record map ------------------------------------------------------------------------


def test_the_record_map_keeps_pseudonyms_with_trailing_nul_bytes(history: HistoryTarget
                                                                 ) -> None:
    keys = [*NUL_KEYS, b"a" * 16, b"b" * 16]
    classes = [0, 1, 0, 1, 1, 0]
    with open_store(history, create=True) as store:
        info = store.commit_release(release(1, keys, classes, ["[1,2]", "[3,4]", "[5,9]"],
                                            fakes=[0, 2, 1]))
        view = store.load(info, labels=False)
        assert view.sizes.tolist() == [3, 5, 1] and view.counterfeits.tolist() == [0, 2, 1]
        labelled = store.load(info, labels=True)
        assert labelled.labels["q"].tolist() == ["[1,2]", "[3,4]", "[5,9]"]
        assert labelled.sizes.tolist() == [3, 5, 1]
        expected_keys = sorted(keys)
        expected_classes = [dict(zip(keys, classes, strict=True))[k] for k in expected_keys]
        assert rows_of(store, info.id) == ([], [])  # the map alone keeps them
        assert view.record_keys.dtype == object
        assert [type(k) for k in view.record_keys] == [bytes] * len(keys)
        assert view.record_keys.tolist() == expected_keys == sorted(keys)
        assert view.record_classes.dtype == np.int64
        assert view.record_classes.tolist() == expected_classes
        assert dict(zip(view.record_keys.tolist(), view.record_classes.tolist(),
                        strict=True)) == dict(zip(keys, classes, strict=True))
        # the per-record values stay aligned with the keys
        assert view.record_values is not None
        cv = view.values["disease"]
        assert [cv.value[i] for i in view.record_values["disease"]] == \
            [f"v{dict(zip(keys, classes, strict=True))[k]}" for k in view.record_keys]
        with store.engine.connect() as conn:
            row = conn.execute(sa.select(record_maps_table)).one()
        assert row.n_records == len(keys)
        assert bytes(row[2]) == b"".join(sorted(keys))  # the column "keys"
        # the classes are kept encrypted (a nonce, then AES-CTR under the secret)
        assert len(row.classes) == 16 + 4 * len(keys)
        assert np.frombuffer(bytes(row.classes)[16:], dtype="<i4").tolist() != expected_classes
        clear = decrypt_classes(store.secret, info.dataset, info.seq, bytes(row.classes))
        assert np.frombuffer(clear, dtype="<i4").tolist() == expected_classes


def test_a_release_without_a_record_map_is_read_from_its_records(history: HistoryTarget
                                                                 ) -> None:
    keys = [*NUL_KEYS, b"m" * 16]
    with open_store(history, create=True) as store:
        info = store.commit_release(release(1, keys, [1, 0, 1, 0, 1], ["[1,2]", "x"]))
        mapped = store.load(info)
        write_record_rows(store)  # as a release recorded before version 3 had them
        with store.engine.begin() as conn:
            conn.execute(record_maps_table.delete())
        fallback = store.load(info)
        with store.engine.connect() as conn:
            from_rows = record_map_from_rows(conn, info.id)
    assert fallback.record_keys.tolist() == mapped.record_keys.tolist() == sorted(keys)
    assert fallback.record_classes.tolist() == mapped.record_classes.tolist()
    assert fallback.sizes.tolist() == mapped.sizes.tolist() == [2, 3]
    assert fallback.counterfeits.tolist() == mapped.counterfeits.tolist() == [0, 0]
    assert from_rows.keys.tobytes() == b"".join(sorted(keys))
    assert from_rows.classes.tolist() == mapped.record_classes.tolist()
    assert from_rows.sizes.tolist() == [2, 3]
    assert fallback.record_values is not None and mapped.record_values is not None
    assert fallback.record_values["disease"].tolist() == \
        mapped.record_values["disease"].tolist()


def test_a_damaged_record_map_is_refused(tmp_path: Path) -> None:
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        info = store.commit_release(release(1, [b"a" * 16, b"b" * 16], [0, 0], ["x"]))
        with store.engine.begin() as conn:
            conn.execute(record_maps_table.update().values(n_records=3))
        with pytest.raises(HistoryError, match=r"record map of release 1 .* is damaged"):
            store.load(info)


def test_a_pseudonym_longer_than_16_bytes_is_refused(tmp_path: Path) -> None:
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        bad = release(1, [b"a" * 16, b"b" * 16], [0, 0], ["x"])
        bad.record_hashes = [b"a" * 16, b"b" * 17]
        with pytest.raises(HistoryError, match="17 bytes"):
            store.commit_release(bad)
        assert store.releases() == []


def test_record_values_encryption_is_unchanged(tmp_path: Path) -> None:
    """The version-2 blobs must still decrypt: the keystream is the SHAKE-256 of the HMAC
    of (domain, context, NUL, nonce), read as little-endian uint32."""
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        secret = store.secret
    codes = np.array([0, 1, 7, 2**31 + 5, 2**32 - 1], dtype=np.int64)
    nonce, blob = encrypt_record_values(secret, "ds", 3, "disease", codes)
    context = json.dumps(["ds", 3, "disease"]).encode()
    key = hmac.digest(secret.value, b"anonkit record values\x00" + context + b"\x00" + nonce,
                      "sha256")
    stream = np.frombuffer(hashlib.shake_256(key).digest(4 * len(codes)), dtype="<u4")
    assert blob == (codes.astype("<u4") ^ stream).tobytes()
    assert decrypt_record_values(secret, "ds", 3, "disease", nonce, blob).tolist() == \
        codes.tolist()


# -- the knowledge state -------------------------------------------------------------------


def test_the_knowledge_state_follows_the_releases(history: HistoryTarget) -> None:
    state = (b"public part", bytes(range(256)) * 3 + b"\x00\x00")
    keys = [b"a" * 16, b"b" * 16]
    with open_store(history, create=True) as store:
        assert store.knowledge_state("d") is None
        store.commit_release(release(1, keys, [0, 0], ["x"], state=state))
        assert store.knowledge_state("d") == (1, state)
        # another dataset's release leaves it alone
        store.commit_release(release(1, keys, [0, 0], ["x"], dataset="e",
                                     state=(b"", b"other")))
        assert store.knowledge_state("d") == (1, state)
        assert store.knowledge_state("e") == (1, (b"", b"other"))
        # a release that brings none drops the state it did not update
        store.commit_release(release(2, keys, [0, 0], ["x"]))
        assert store.knowledge_state("d") is None
        store.commit_release(release(3, keys, [0, 0], ["x"], state=(b"", b"")))
        assert store.knowledge_state("d") == (3, (b"", b""))
        store.commit_release(release(4, keys, [0, 0], ["x"],
                                     state=(b"public four", b"secret four")))
        with store.engine.connect() as conn:
            rows = conn.execute(sa.select(knowledge_table.c.dataset,
                                          knowledge_table.c.through_seq,
                                          knowledge_table.c.state)).all()
    assert sorted((r[0], r[1]) for r in rows) == [("d", 4), ("e", 1)]
    stored = {r[0]: bytes(r[2]) for r in rows}
    # the private part is encrypted, the public one only authenticated
    # both parts encrypted since version 4 (who was in which class is not for a thief)
    assert b"secret four" not in stored["d"] and b"public four" not in stored["d"]
    assert b"other" not in stored["e"]
    with open_store(history, read_only=True) as store:
        assert store.knowledge_state("d") == (4, (b"public four", b"secret four"))
        assert store.knowledge_state("nope") is None


def test_a_failed_commit_keeps_the_old_knowledge_state(tmp_path: Path) -> None:
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        keys = [b"a" * 16, b"b" * 16]
        store.commit_release(release(1, keys, [0, 0], ["x"], state=(b"1", b"one")))

        def fail() -> None:
            raise RuntimeError("power cut")

        with pytest.raises(RuntimeError, match="power cut"):
            store.commit_release(release(2, keys, [0, 0], ["x"], state=(b"2", b"two")),
                                 before_commit=fail)
        assert store.knowledge_state("d") == (1, (b"1", b"one"))


@pytest.mark.parametrize("damage", ["state", "tag", "nonce", "through_seq", "dataset"])
def test_a_damaged_knowledge_state_is_refused(tmp_path: Path, damage: str) -> None:
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        keys = [b"a" * 16, b"b" * 16]
        store.commit_release(release(1, keys, [0, 0], ["x"],
                                     state=(b"public " * 10, b"the state " * 10)))
        store.commit_release(release(1, keys, [0, 0], ["x"], dataset="e",
                                     state=(b"e", b"e's")))
        with store.engine.begin() as conn:
            row = conn.execute(sa.select(knowledge_table)
                               .where(knowledge_table.c.dataset == "d")).one()
            where = knowledge_table.c.dataset == "d"
            if damage in ("state", "tag", "nonce"):
                blob = bytearray(row._mapping[damage])
                blob[5] ^= 1
                conn.execute(knowledge_table.update().where(where)
                             .values({damage: bytes(blob)}))
            elif damage == "through_seq":
                conn.execute(knowledge_table.update().where(where).values(through_seq=2))
            else:  # d's state moved to dataset e
                conn.execute(knowledge_table.delete()
                             .where(knowledge_table.c.dataset == "e"))
                conn.execute(knowledge_table.update().where(where).values(dataset="e"))
        victim = "e" if damage == "dataset" else "d"
        with pytest.raises(HistoryError, match=f"knowledge state of dataset '{victim}' is "
                                               f"damaged"):
            store.knowledge_state(victim)


# -- upgrading a version-2 history ---------------------------------------------------------


def sqlite_version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT version FROM anonkit_schema").fetchone()[0])


def dump(path: Path) -> list[str]:
    """Every table's definition and rows (the file's header counters aside)."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


Loaded = dict[tuple[str, int], tuple[list[bytes], list[int], list[int], list[int]]]


def two_datasets(store: HistoryStore) -> Loaded:
    """Releases of two datasets (one empty); returns each one's records as loaded."""
    rng = np.random.default_rng(5)
    keys = [*NUL_KEYS, *(bytes(rng.integers(0, 256, 16, dtype=np.uint8)) for _ in range(40))]
    for seq in (1, 2, 3):
        chosen = [keys[i] for i in sorted(rng.choice(len(keys), 30, replace=False))]
        classes = rng.integers(0, 4, len(chosen)).tolist()
        store.commit_release(release(seq, chosen, classes, ["[1,5]", "[2,3]", "{a,b}", "9"],
                                     state=(b"", b"s%d" % seq), fakes=[seq, 0, 1, 0]))
    store.commit_release(release(1, keys[:5], [0, 1, 0, 1, 1], ["x", "y"], dataset="e"))
    store.commit_release(release(2, [], [], [], dataset="e"))
    out = {}
    for info in store.releases():
        view = store.load(info)
        out[(info.dataset, info.seq)] = (view.record_keys.tolist(),
                                         view.record_classes.tolist(), view.sizes.tolist(),
                                         view.counterfeits.tolist())
    return out


def assert_upgraded(store: HistoryStore, loaded: Loaded) -> None:
    for info in store.releases():
        view = store.load(info)
        assert (view.record_keys.tolist(), view.record_classes.tolist(), view.sizes.tolist(),
                view.counterfeits.tolist()) == loaded[(info.dataset, info.seq)]
        assert rows_of(store, info.id) == loaded[(info.dataset, info.seq)][:2]
    with store.engine.connect() as conn:
        maps = conn.execute(sa.select(record_maps_table.c.release_id,
                                      record_maps_table.c.n_records)).all()
    assert sorted(maps) == sorted((i.id, len(loaded[(i.dataset, i.seq)][0]))
                                  for i in store.releases())
    # the state is rebuilt by the next publish: none survives the upgrade
    assert store.knowledge_state("d") is None and store.knowledge_state("e") is None


def test_a_v2_history_is_upgraded_with_a_backup(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with HistoryStore.open(path, create=True) as store:
        loaded = two_datasets(store)
        as_version_2(store)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    rows_before = dump(path)
    with pytest.raises(HistoryError, match="format version 2"):
        HistoryStore.open(path, read_only=True)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    with pytest.warns(HistoryUpgradedWarning, match=r"from format version 2 to 4; the "
                      r"version-2 history was copied to .*h\.db\.v2-backup"), \
            HistoryStore.open(path) as store:
        assert_upgraded(store, loaded)
        # and it takes new releases, with their state
        store.commit_release(release(4, [b"z" * 16], [0], ["x"], state=(b"", b"four")))
        assert store.knowledge_state("d") == (4, (b"", b"four"))
    assert sqlite_version(path) == SCHEMA_VERSION == 4
    backup = path.with_name("h.db.v2-backup")
    assert sqlite_version(backup) == 2
    assert dump(backup) == rows_before  # the version-2 history, as it was
    with warnings.catch_warnings():
        warnings.simplefilter("error", HistoryUpgradedWarning)
        HistoryStore.open(path).close()  # nothing more to do
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.db", "h.db.secret",
                                                          "h.db.v2-backup"]


def test_a_failed_v2_upgrade_leaves_the_history_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with HistoryStore.open(path, create=True) as store:
        loaded = two_datasets(store)
        as_version_2(store)
    before = hashlib.sha256(path.read_bytes()).hexdigest()

    def fail() -> None:
        raise RuntimeError("power cut")

    MIGRATION_HOOKS["upgraded"] = fail
    try:
        with pytest.raises(RuntimeError, match="power cut"):
            HistoryStore.open(path)
    finally:
        MIGRATION_HOOKS.clear()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sqlite_version(path) == 2 and not list(tmp_path.glob("*-backup*"))
    with pytest.warns(HistoryUpgradedWarning), HistoryStore.open(path) as store:
        assert_upgraded(store, loaded)


def test_a_v1_history_gets_record_maps(tmp_path: Path) -> None:
    path = tmp_path / "history_v1.db"
    for name in ("history_v1.db", "history_v1.db.secret"):
        shutil.copy2(V1_FIXTURE / name, tmp_path / name)
    (tmp_path / "history_v1.db.secret").chmod(0o600)
    with pytest.warns(HistoryUpgradedWarning, match=r"from format version 1 to 4; the "
                      r"version-1 history was copied to .*\.v1-backup"), \
            HistoryStore.open(path) as store:
        infos = store.releases()
        assert infos
        with store.engine.connect() as conn:
            n_maps = conn.execute(sa.select(sa.func.count())
                                  .select_from(record_maps_table)).scalar()
        assert n_maps == len(infos)
        for info in infos:
            view = store.load(info)
            assert len(view.record_keys) == info.n_input_rows > 0
            assert (view.record_keys.tolist(), view.record_classes.tolist()) == \
                rows_of(store, info.id)
    assert sqlite_version(path) == 4


@pytest.mark.postgres
def test_a_v2_postgres_history_is_upgraded(postgres_server: TemporaryPostgres,
                                           tmp_path: Path) -> None:
    url = postgres_server.create_database("v2_upgrade")
    secret = tmp_path / "h.secret"
    with HistoryStore.open(url, secret_file=secret, create=True) as store:
        loaded = two_datasets(store)
        as_version_2(store)
    with pytest.warns(HistoryUpgradedWarning, match="from format version 2 to 4") as caught, \
            HistoryStore.open(url, secret_file=secret) as store:
        assert_upgraded(store, loaded)
        store.commit_release(release(4, [b"z" * 16], [0], ["x"], state=(b"", b"four")))
        assert store.knowledge_state("d") == (4, (b"", b"four"))
    assert "copied" not in str(caught[0].message)


# -- the row-wise intersection attack ------------------------------------------------------


def reference_attack(earlier: list[list[object]], later: list[list[object]],
                     match: list[int], k: int) -> tuple[list[int], list[bool], list[bool]]:
    """Per later row, with Python scalars: how many rows share its knowledge, whether it
    was narrowed and whether it is breached."""
    def span(label: object) -> tuple[float, float] | None:
        lo, hi = parse_spans([label])
        return None if np.isnan(lo[0]) else (float(lo[0]), float(hi[0]))

    knowledge, narrowed = [], []
    for i, row in enumerate(later):
        known, narrow = [], False
        for j, label in enumerate(row):
            mine = span(label)
            if mine is None:
                known.append(("label", label if label == label else None))
                continue
            old = span(earlier[match[i]][j]) if match[i] >= 0 else None
            if old is not None and max(old[0], mine[0]) <= min(old[1], mine[1]):
                cut = (max(old[0], mine[0]), min(old[1], mine[1]))
                narrow |= cut != mine
                mine = cut
            known.append(("span", mine))
        knowledge.append(tuple(known))
        narrowed.append(narrow)
    sizes = [knowledge.count(x) for x in knowledge]
    return sizes, narrowed, [s < k for s in sizes]


LABELS = ["[1,4]", "[2,3]", "[3,9]", 3, 2.5, "[5,6]", "{a,b}", "{b}", "x", None, "[0,2]",
          "7", "[10,20]"]


@pytest.mark.parametrize("seed", range(6))
def test_the_attack_on_class_arrays_matches_a_row_by_row_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_e, n_l, c_e, c_l = 40, 50, 9, 11
    e_labels = pd.DataFrame({q: [LABELS[i] for i in rng.integers(0, len(LABELS), c_e)]
                             for q in ("a", "b")})
    l_labels = pd.DataFrame({q: [LABELS[i] for i in rng.integers(0, len(LABELS), c_l)]
                             for q in ("b", "c", "a")})
    e_classes = rng.integers(0, c_e, n_e)
    l_classes = rng.integers(0, c_l, n_l)
    match = np.where(rng.random(n_l) < 0.7, rng.integers(0, n_e, n_l), -1)
    k = int(rng.integers(2, 5))
    result = class_intersection(e_labels, e_classes, l_labels, l_classes, match, k)
    assert result.columns == ("b", "a")
    earlier_rows = e_labels[["b", "a"]].to_numpy(dtype=object)[e_classes].tolist()
    later_rows = l_labels[["b", "a"]].to_numpy(dtype=object)[l_classes].tolist()
    sizes, narrowed, breached = reference_attack(earlier_rows, later_rows, match.tolist(), k)
    assert result.sizes.tolist() == sizes
    assert result.narrowed.tolist() == narrowed
    assert result.breached.tolist() == breached
    # the row-level entry point agrees, bounds included
    rows = intersection_attack(pd.DataFrame(earlier_rows, columns=["b", "a"]),
                               pd.DataFrame(later_rows, columns=["b", "a"]), k,
                               earlier_keys=np.arange(n_e).astype(object),
                               later_keys=np.where(match >= 0, match, -7).astype(object))
    assert rows.sizes.tolist() == sizes and rows.narrowed.tolist() == narrowed
    np.testing.assert_array_equal(rows.low, result.low)
    np.testing.assert_array_equal(rows.high, result.high)


def test_intersection_scopes_line_records_up_by_pseudonym(tmp_path: Path) -> None:
    """Release 2 drops a record; records whose pseudonyms end in NUL bytes are matched
    with theirs (a wrong match changes what is narrowed)."""
    keys = [*NUL_KEYS, b"p" * 16, b"q" * 16]
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        store.commit_release(release(1, keys, [0, 0, 1, 1, 0, 1], ["[1,2]", "[3,4]"]))
        store.commit_release(release(2, keys[1:], [0, 0, 0, 0, 0], ["[1,4]"]))
        store.commit_release(release(3, keys, [0, 1, 0, 0, 0, 0], ["[2,3]", "[1,9]"]))
        views = [store.load(info, labels=True) for info in store.releases("d")]
    first, second = intersection_scopes(views)
    # every record of release 2 is narrowed back to its release-1 range: [1,2] twice,
    # [3,4] three times
    assert first.to_dict() == {"releases": [1, 2], "k": 2, "records": 5, "narrowed": 5,
                               "breached": 0}
    # keys[1] alone is narrowed ([1,9] to [1,4]) and alone there; keys[0] is new in
    # release 3 (it keeps [2,3], with the other four)
    assert second.to_dict() == {"releases": [2, 3], "k": 2, "records": 6, "narrowed": 1,
                                "breached": 1}


def test_labels_equal_across_types_are_parsed_by_their_own_column() -> None:
    """``True`` in one column and ``1`` in another are equal to a hash table, but only the
    number is an interval: pooling their parse must not give one the other's."""
    earlier = pd.DataFrame({"a": [True, True, "[0,5]"], "b": [1, "[0,2]", "[0,2]"]})
    later = pd.DataFrame({"a": [True, "[1,2]", "[1,3]"], "b": ["[0,2]", 1, "[1,2]"]})
    match = np.array([0, 1, 2])
    result = class_intersection(earlier, np.arange(3), later, np.arange(3), match, 2)
    rows = [list(r) for r in earlier.itertuples(index=False)]
    sizes, narrowed, _ = reference_attack(rows, [list(r) for r in later.itertuples(index=False)],
                                          match.tolist(), 2)
    assert result.sizes.tolist() == sizes and result.narrowed.tolist() == narrowed
    assert narrowed == [True, False, False]  # row 0: b [0,2] narrowed to 1 (a: True, kept)
    assert np.isnan(result.low[0, 0]) and result.low[0, 1] == result.high[0, 1] == 1
