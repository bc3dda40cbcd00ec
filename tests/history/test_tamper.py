"""Tamper evidence (anonkit.history.chain): a history changed by someone who can write the
database but does not hold the secret is reported, and the gate and the audit refuse it
until ``recover --accept-tampered`` (or ``--accept-tampered`` once)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from anonkit.cli.release import release
from anonkit.history.chain import TamperedHistoryError
from anonkit.history.publish import publish
from anonkit.history.schema import schema_table
from anonkit.history.store import HistoryStore
from history_helpers import churned_versions, make_request


def run(tmp: Path, *args: str) -> Result:
    return CliRunner().invoke(release, [*args, "--history", str(tmp / "h.db"),
                                        "--secret-file", str(tmp / "h.secret")],
                              catch_exceptions=False)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """Three releases of a churning table (published over the gate: it breaches)."""
    versions = churned_versions(200, 3, churn=0.1, seed=5)
    with HistoryStore.open(tmp_path / "h.db", secret_file=tmp_path / "h.secret",
                           create=True) as store:
        for n, df in enumerate(versions, start=1):
            publish(store, df, make_request(), tmp_path / f"r{n}.csv", allow_breach=True)
        assert store.check_chain() == []
    assert run(tmp_path, "audit", "--dataset", "census").exit_code == 3
    return tmp_path


def sql(tmp: Path, *statements: str) -> None:
    with sqlite3.connect(tmp / "h.db") as conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        for statement in statements:
            conn.execute(statement)


def delete_release(seq: int) -> Callable[[Path], None]:
    def edit(tmp: Path) -> None:
        sql(tmp, "DELETE FROM anonkit_knowledge",
            *(f"DELETE FROM {t} WHERE release_id = (SELECT id FROM anonkit_releases "
              f"WHERE seq = {seq})" for t in ("anonkit_classes", "anonkit_class_values",
                                               "anonkit_record_maps", "anonkit_record_values")),
            f"DELETE FROM anonkit_releases WHERE seq = {seq}")
    return edit


def reorder(tmp: Path) -> None:
    sql(tmp, "UPDATE anonkit_releases SET seq = 99 WHERE seq = 1",
        "UPDATE anonkit_releases SET seq = 1 WHERE seq = 2",
        "UPDATE anonkit_releases SET seq = 2 WHERE seq = 99")


def lower_requirement(tmp: Path) -> None:
    with sqlite3.connect(tmp / "h.db") as conn:
        (requirements,) = conn.execute(
            "SELECT requirements FROM anonkit_releases WHERE seq = 2").fetchone()
        lowered = [dict(r, threshold=1.0) for r in json.loads(requirements)]
        conn.execute("UPDATE anonkit_releases SET requirements = ? WHERE seq = 2",
                     (json.dumps(lowered),))


def forge_file(tmp: Path) -> None:
    forged = b"age,zip,sex,disease\n1,2,F,flu\n"
    (tmp / "r2.csv").write_bytes(forged)
    sql(tmp, f"UPDATE anonkit_releases SET content_hash = "
             f"'{hashlib.sha256(forged).hexdigest()}', file_size = {len(forged)} "
             f"WHERE seq = 2")


@pytest.mark.parametrize("edit", [delete_release(2), delete_release(3), reorder,
                                  lower_requirement, forge_file],
                         ids=["deleted", "deleted-latest", "reordered", "requirement",
                              "forged-file"])
def test_a_changed_row_is_reported_and_refused(history: Path,
                                               edit: Callable[[Path], None]) -> None:
    edit(history)
    with HistoryStore.open(history / "h.db", secret_file=history / "h.secret",
                           read_only=True) as store:
        assert store.tampered
    listed = run(history, "list")
    assert listed.exit_code == 0 and "changed without its secret" in listed.output
    audited = run(history, "audit", "--dataset", "census")
    assert audited.exit_code == 1, audited.output
    assert "refused: the history" in audited.output and "changed without its secret" in \
        audited.output
    before = {p.name: p.read_bytes() for p in history.iterdir()}
    versions = churned_versions(200, 4, churn=0.1, seed=5)
    with HistoryStore.open(history / "h.db", secret_file=history / "h.secret") as store, \
            pytest.raises(TamperedHistoryError, match="publishing to 'census' refused"):
        publish(store, versions[3], make_request(), history / "r9.csv", allow_breach=True)
    assert {p.name: p.read_bytes() for p in history.iterdir()} == before
    refused = run(history, "recover")
    assert refused.exit_code == 1 and "--accept-tampered" in refused.output
    if edit is reorder:
        # the classes are encrypted under each release's number: a reordered history cannot
        # be read, accepted or not (one line, no traceback)
        failed = run(history, "audit", "--dataset", "census", "--accept-tampered")
        assert failed.exit_code == 1 and "does not decrypt to its classes" in failed.output
        assert "Traceback" not in failed.output
        return
    # accepted once, or for good
    assert run(history, "audit", "--dataset", "census", "--accept-tampered").exit_code in (0, 3)
    assert run(history, "recover", "--accept-tampered").exit_code == 0
    assert run(history, "audit", "--dataset", "census").exit_code in (0, 3)


def test_an_edited_record_map_is_refused_when_read(history: Path) -> None:
    with sqlite3.connect(history / "h.db") as conn:
        (classes,) = conn.execute(
            "SELECT m.classes FROM anonkit_record_maps m JOIN anonkit_releases r "
            "ON r.id = m.release_id WHERE r.seq = 1").fetchone()
        edited = bytearray(classes)
        edited[16] ^= 1  # after the nonce: the first record moves to another class
        conn.execute("UPDATE anonkit_record_maps SET classes = ? WHERE release_id = "
                     "(SELECT id FROM anonkit_releases WHERE seq = 1)", (bytes(edited),))
    audited = run(history, "audit", "--dataset", "census")
    assert audited.exit_code == 1
    assert "release 1 of 'census': its map does not match the digest" in audited.output
    with HistoryStore.open(history / "h.db", secret_file=history / "h.secret",
                           read_only=True) as store, pytest.raises(TamperedHistoryError):
        store.load(store.release("census", 1))


def test_recover_moves_only_a_publish_s_own_temporary_file(history: Path) -> None:
    """``pending_path`` is not authenticated (a publish clears it after the commit), so
    recover accepts only the temporary name a publish of that output makes, beside it."""
    victim = history / "victim.txt"
    victim.write_text("a user's file")
    sql(history, f"UPDATE anonkit_releases SET pending_path = '{victim}' WHERE seq = 3")
    with pytest.warns(UserWarning, match="left alone"), \
            HistoryStore.open(history / "h.db", secret_file=history / "h.secret"):
        pass
    assert victim.read_text() == "a user's file"
    assert (history / "r3.csv").exists()


def test_an_upgraded_history_is_authenticated(tmp_path: Path) -> None:
    """A version-3 history gets the chain on upgrade; a change afterwards shows."""
    from history_helpers import as_version_3

    versions = churned_versions(100, 2, churn=0.1, seed=1)
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        for n, df in enumerate(versions, start=1):
            publish(store, df, make_request(), tmp_path / f"r{n}.csv", allow_breach=True)
        as_version_3(store)
    with pytest.warns(UserWarning, match="from format version 3 to 4"), \
            HistoryStore.open(tmp_path / "h.db") as store:
        assert store.check_chain() == []
    lower_requirement(tmp_path)
    with HistoryStore.open(tmp_path / "h.db", read_only=True) as store:
        assert any("release 2 of 'census'" in p for p in store.tampered)


def test_a_stolen_history_does_not_follow_anyone(history: Path) -> None:
    """Without the secret, the database does not tell which record is in which class of a
    release (the record maps' classes and the kept knowledge are encrypted), so nobody can
    be followed across two releases; with another secret it decrypts to nothing usable."""
    import numpy as np

    from anonkit.history.secret import Secret

    with HistoryStore.open(history / "h.db", secret_file=history / "h.secret",
                           read_only=True) as store:
        truth = {seq: store.load(store.release("census", seq), labels=False)
                 for seq in (1, 2, 3)}
    with sqlite3.connect(history / "h.db") as conn:
        stored = dict(conn.execute(
            "SELECT r.seq, m.classes FROM anonkit_record_maps m JOIN anonkit_releases r "
            "ON r.id = m.release_id").fetchall())
        knowledge = conn.execute("SELECT state FROM anonkit_knowledge").fetchone()[0]
    for seq, view in truth.items():
        blob = bytes(stored[seq])
        assert len(blob) == 16 + 4 * len(view.record_classes)
        as_clear = np.frombuffer(blob[16:], dtype="<i4")
        # no better than chance at the record's class
        assert (as_clear == view.record_classes).mean() < 0.2
    assert truth[1].record_classes.astype("<i4").tobytes() not in knowledge
    # a thief who makes the history accept another secret reads no class at all
    thief = Secret(b"\x42" * 32, "a guess")
    with sqlite3.connect(history / "h.db") as conn:
        conn.execute(f"UPDATE {schema_table.name} SET secret_check = ?",
                     (thief.check_value(),))
    with HistoryStore.open(history / "h.db", secret=thief.value, read_only=True) as store:
        assert store.tampered  # nothing authenticates under the thief's secret
        store.accept_tampered = True
        for seq in (1, 2, 3):
            with pytest.raises(TamperedHistoryError, match="does not decrypt to its classes"):
                store.load(store.release("census", seq), labels=False)
        with pytest.raises(Exception, match="damaged"):
            store.knowledge_state("census")
