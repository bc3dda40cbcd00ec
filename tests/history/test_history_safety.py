"""File safety of the release history: outputs that would destroy it, permissions, the lock
that protects a live publisher's temporary files, read-only commands, and small defects
(empty history files, foreign PostgreSQL databases, long names, big float keys, broken
Unicode, bidirectional names, the secret check)."""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import secrets
import sqlite3
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import psycopg
import pytest
from click.testing import CliRunner, Result

from anonkit.cli.release import release as release_cli
from anonkit.errors import HistoryError, InputError
from anonkit.history import secret as secret_module
from anonkit.history.publish import PUBLISH_HOOKS, publish
from anonkit.history.secret import SECRET_ENV, RecordHasher, canonical_keys
from anonkit.history.store import HistoryStore
from history_helpers import churned_versions, history_state, make_request, people

if TYPE_CHECKING:
    from pg_fixtures import HistoryTarget, TemporaryPostgres

pytest_plugins = ["pg_fixtures"]


def open_store(target: HistoryTarget, create: bool = True, **kw: object) -> HistoryStore:
    return HistoryStore.open(target.url, secret_file=target.secret_file, create=create, **kw)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cli(*args: str) -> Result:
    return CliRunner().invoke(release_cli, list(args))


def publish_args(data: Path, out: Path, history: Path, *extra: str) -> list[str]:
    return ["publish", "--insensitive", "*",
            str(data), "--dataset", "census", "--key", "pid", "--method",
            "sorted-chunks", "--qi", "age,zip,sex", "--sensitive", "disease", "-k", "5",
            "-o", str(out), "--history", str(history), "--allow-breach", *extra]


@pytest.fixture
def published(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An SQLite history with one release: (history, release file, input CSV)."""
    data = tmp_path / "v1.csv"
    people(np.arange(60)).to_csv(data, index=False)
    history, out = tmp_path / "h.db", tmp_path / "r1.csv"
    result = cli(*publish_args(data, out, history))
    assert result.exit_code == 0, result.output
    return history, out, data


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: digest(p) for p in sorted(folder.iterdir()) if p.is_file()}


# -- item 4: outputs that would destroy the history ------------------------------------------


@pytest.mark.parametrize("victim", ["h.db", "h.db.secret", "h.db-journal", "h.db-wal",
                                    "r1.csv"])
def test_an_output_that_is_the_history_or_a_release_is_refused(
        published: tuple[Path, Path, Path], tmp_path: Path, victim: str) -> None:
    history, _, data = published
    before = snapshot(tmp_path)
    result = cli(*publish_args(data, tmp_path / victim, history))
    assert result.exit_code == 2, result.output
    assert "writing it would destroy that file, so nothing was written" in result.output
    assert snapshot(tmp_path) == before
    with HistoryStore.open(history, read_only=True) as store:
        assert [r.file_status() for r in store.releases()] == ["ok"]


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
@pytest.mark.parametrize("victim", ["h.db", "h.db.secret", "r1.csv"])
def test_links_to_the_history_or_a_release_are_refused(
        published: tuple[Path, Path, Path], tmp_path: Path, link: str, victim: str) -> None:
    history, _, data = published
    sneaky = tmp_path / "sub" / "innocent.csv"
    sneaky.parent.mkdir()
    if link == "symlink":
        sneaky.symlink_to(tmp_path / victim)
    else:
        os.link(tmp_path / victim, sneaky)
    before = snapshot(tmp_path)
    result = cli(*publish_args(data, sneaky, history))
    assert result.exit_code == 2, result.output
    assert snapshot(tmp_path) == before


def test_the_python_api_refuses_a_recorded_release_file_too(history: HistoryTarget,
                                                            tmp_path: Path) -> None:
    v1, v2 = churned_versions(60, 2, 0.1)
    with open_store(history) as store:
        publish(store, v1, make_request(), tmp_path / "a.csv")
        state, before = history_state(store), digest(tmp_path / "a.csv")
        with pytest.raises(InputError, match="file of release 1 of 'census'"):
            publish(store, v2, make_request(dataset="other"), tmp_path / "a.csv")
        assert history_state(store) == state
    assert digest(tmp_path / "a.csv") == before


# -- item 5: permissions ----------------------------------------------------------------------


def test_history_journal_and_releases_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        with HistoryStore.open(tmp_path / "h.db", create=True) as store:
            publish(store, people(np.arange(50)), make_request(), tmp_path / "r.csv")
        writer = sqlite3.connect(tmp_path / "h.db", isolation_level=None)
        try:  # a write transaction: SQLite's journal exists meanwhile
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("CREATE TABLE scratch (a INTEGER)")
            journal_mode = stat.S_IMODE((tmp_path / "h.db-journal").stat().st_mode)
            writer.execute("ROLLBACK")
        finally:
            writer.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "h.db").stat().st_mode) == 0o600
    assert journal_mode == 0o600
    assert stat.S_IMODE((tmp_path / "r.csv").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "h.db.secret").stat().st_mode) == 0o600


def test_a_release_respects_a_stricter_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        with HistoryStore.open(tmp_path / "h.db", create=True) as store:
            publish(store, people(np.arange(50)), make_request(), tmp_path / "r.csv")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.csv").stat().st_mode) == 0o600


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620])
def test_a_secret_others_may_access_is_refused(tmp_path: Path, mode: int) -> None:
    HistoryStore.open(tmp_path / "h.db", create=True).close()
    before = digest(tmp_path / "h.db")
    (tmp_path / "h.db.secret").chmod(mode)
    with pytest.raises(HistoryError, match=r"accessible to other users .*chmod 600"):
        HistoryStore.open(tmp_path / "h.db")
    assert digest(tmp_path / "h.db") == before


def test_a_secret_planted_by_another_user_is_refused(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    planted = tmp_path / "h.db.secret"
    planted.write_text(secrets.token_hex(32) + "\n")
    planted.chmod(0o600)
    if os.geteuid() == 0:
        os.chown(planted, 54321, -1)
    else:  # the file is ours: play another user
        monkeypatch.setattr(secret_module.os, "getuid", lambda: os.geteuid() + 1)
    with pytest.raises(HistoryError, match="belongs to another user"):
        HistoryStore.open(tmp_path / "h.db", create=True)
    assert not (tmp_path / "h.db").exists()


@pytest.mark.parametrize("weak", ["x" * 40, "a secret typed by hand, long enough",
                                  "0" * 64, secrets.token_hex(16),
                                  base64.b64encode(os.urandom(24)).decode()])
def test_a_weak_environment_secret_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              weak: str) -> None:
    monkeypatch.setenv(SECRET_ENV, weak)
    with pytest.raises(HistoryError, match="too weak"):
        HistoryStore.open(tmp_path / "h.db", create=True)
    assert not (tmp_path / "h.db").exists()


@pytest.mark.parametrize("strong", [secrets.token_hex(32),
                                    base64.b64encode(os.urandom(32)).decode(),
                                    secrets.token_urlsafe(32)])
def test_a_strong_environment_secret_is_accepted(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 strong: str) -> None:
    monkeypatch.setenv(SECRET_ENV, strong)
    HistoryStore.open(tmp_path / "h.db", create=True).close()
    HistoryStore.open(tmp_path / "h.db").close()
    assert not (tmp_path / "h.db.secret").exists()


# -- item 6 and 8: a live publisher's temporary files, and leftovers of ended ones -----------


def _foreign_publisher(folder: Path, name: str) -> tuple[int, list[Path]]:
    """A publisher in another PID namespace: a process id that is not alive here, its lock
    held (by this process, standing in for it)."""
    token = f"999999-{secrets.token_hex(8)}"
    lock = folder / f".anonkit-lock-{token}"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    files = [folder / f".anonkit-tmp-{token}-{name}",
             folder / f"..anonkit-tmp-{token}-{name}.0123abcd.tmp"]
    for f in files:
        f.write_text("half a release")
    return fd, [lock, *files]


def test_a_live_publishers_temporary_files_survive_another_publish(tmp_path: Path) -> None:
    fd, files = _foreign_publisher(tmp_path, "r.csv")
    try:
        with HistoryStore.open(tmp_path / "h.db", create=True) as store:
            publish(store, people(np.arange(50)), make_request(), tmp_path / "r.csv")
            assert all(f.exists() for f in files)  # its lock is held: it is alive
    finally:
        os.close(fd)  # the publisher ends (is killed)
    with HistoryStore.open(tmp_path / "h.db") as store:  # any later publish into the folder
        publish(store, people(np.arange(50)), make_request("other"), tmp_path / "o.csv",
                new_lineage=True)
    assert not any(f.exists() for f in files)


def test_only_exact_temporary_names_of_ended_publishes_are_removed(tmp_path: Path) -> None:
    mine = [tmp_path / ".anonkit-tmp-999999-abcdef12-r.csv.keep",  # no lock: not ours
            tmp_path / ".anonkit-tmp-999999-0123456789abcdef-r.csv",  # no lock file
            tmp_path / ".anonkit-lock-999999-0123"]  # not a lock name
    for f in mine:
        f.write_text("someone's file")
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, people(np.arange(50)), make_request(), tmp_path / "r.csv")
    assert all(f.exists() for f in mine)


# -- item 7: read-only commands -----------------------------------------------------------------


def _pending_history(tmp_path: Path) -> tuple[Path, Path]:
    """A history whose release 1 committed but whose publisher died before the rename."""
    history, out = tmp_path / "h.db", tmp_path / "r.csv"

    def die() -> None:
        raise KeyboardInterrupt  # the process dies between commit and rename

    PUBLISH_HOOKS["committed"] = die
    with HistoryStore.open(history, create=True) as store, pytest.raises(KeyboardInterrupt):
        publish(store, people(np.arange(50)), make_request(), out)
    PUBLISH_HOOKS.clear()
    assert not out.exists()
    return history, out


def test_list_show_and_audit_never_write_and_report_a_pending_release(tmp_path: Path) -> None:
    history, out = _pending_history(tmp_path)
    before = snapshot(tmp_path)
    for args in (["list"], ["list", "--verify"], ["show", "census", "1"],
                 ["audit", "--dataset", "census"]):
        result = cli(*args, "--history", str(history))
        assert result.exit_code == 0, (args, result.output)
        assert "release 1 of 'census' is pending" in result.output
        assert "anonkit release recover" in result.output
        assert snapshot(tmp_path) == before, args  # no recovery, nothing written
    assert not out.exists()
    result = cli("recover", "--history", str(history))
    assert result.exit_code == 0, result.output
    assert "recovered release 1 of 'census'" in result.output
    assert out.exists()
    with HistoryStore.open(history, read_only=True) as store:
        assert store.release("census", 1).file_status() == "ok"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".anonkit")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only files")
def test_read_only_commands_work_on_a_read_only_history(tmp_path: Path) -> None:
    history, _ = _pending_history(tmp_path)
    (tmp_path / "h.db").chmod(0o400)
    (tmp_path / "h.db.secret").chmod(0o400)
    tmp_path.chmod(0o500)
    try:
        for args in (["list"], ["show", "census", "1"], ["audit", "--dataset", "census"]):
            result = cli(*args, "--history", str(history))
            assert result.exit_code == 0, (args, result.output)
            assert "Traceback" not in result.output
    finally:
        tmp_path.chmod(0o700)


def test_a_read_only_store_refuses_to_write(tmp_path: Path) -> None:
    HistoryStore.open(tmp_path / "h.db", create=True).close()
    with HistoryStore.open(tmp_path / "h.db", read_only=True) as store, \
            pytest.raises(HistoryError, match="read-only"):
        store.clear_pending(1)


@pytest.mark.parametrize("raised", ["crash", "breach-error"])
def test_a_crashing_audit_exits_1_never_0_or_3(tmp_path: Path, raised: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from anonkit.history import attacks
    from anonkit.jobs import history as history_jobs

    HistoryStore.open(tmp_path / "h.db", create=True).close()

    def broken(*args: object, **kwargs: object) -> None:
        if raised == "crash":
            raise RuntimeError("a bug in the audit")
        raise attacks.CrossReleaseBreachError("raised by a bug, not by a finding")

    monkeypatch.setattr(history_jobs, "audit", broken)  # where the command's audit is called
    result = CliRunner().invoke(release_cli, ["audit", "--dataset", "census", "--history",
                                              str(tmp_path / "h.db")])
    assert result.exit_code == 1, result.output


# -- item 8: smaller defects --------------------------------------------------------------------


def test_an_empty_history_file_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "h.db"
    empty.touch()
    with pytest.raises(HistoryError, match="empty file"):
        HistoryStore.open(empty, create=True)
    assert empty.stat().st_size == 0 and not (tmp_path / "h.db.secret").exists()
    data = tmp_path / "in.csv"
    people(np.arange(50)).to_csv(data, index=False)
    result = cli(*publish_args(data, tmp_path / "r.csv", empty))
    assert result.exit_code == 2 and "empty file" in result.output
    assert empty.stat().st_size == 0 and not (tmp_path / "r.csv").exists()


@pytest.mark.postgres
def test_postgres_needs_an_empty_database_or_a_dedicated_schema(
        postgres_server: TemporaryPostgres, tmp_path: Path) -> None:
    url = postgres_server.create_database("foreign_app")
    raw = dict(host=str(postgres_server.socket_dir), port=postgres_server.port,
               dbname="foreign_app", user=postgres_server_user())
    with psycopg.connect(**raw) as conn:
        conn.execute("CREATE TABLE customers (id int primary key, name text)")
    secret_file = tmp_path / "pg.secret"
    with pytest.raises(HistoryError, match=r"another application's tables .*\?schema=anonkit"):
        HistoryStore.open(url, secret_file=secret_file, create=True)
    dedicated = url + "&schema=anonkit"
    with HistoryStore.open(dedicated, secret_file=secret_file, create=True) as store:
        publish(store, people(np.arange(50)), make_request(), tmp_path / "r.csv")
    with HistoryStore.open(dedicated, secret_file=secret_file, read_only=True) as store:
        assert [r.seq for r in store.releases("census")] == [1]
    with psycopg.connect(**raw) as conn:
        tables = conn.execute("SELECT table_schema, table_name FROM information_schema.tables "
                              "WHERE table_schema NOT IN ('pg_catalog', "
                              "'information_schema')").fetchall()
    assert ("public", "customers") in tables
    assert {schema for schema, name in tables if name.startswith("anonkit_")} == {"anonkit"}
    with pytest.raises(HistoryError, match="schema 'nothere' does not exist"):
        HistoryStore.open(url + "&schema=nothere", secret_file=secret_file)


def postgres_server_user() -> str:
    from pg_fixtures import PG_USER

    return PG_USER


def test_a_name_over_200_characters_is_refused_clearly(history: HistoryTarget,
                                                       tmp_path: Path) -> None:
    long = "k" * 250
    df = people(np.arange(50)).rename(columns={"pid": long})
    with open_store(history) as store:
        with pytest.raises(InputError, match="250 characters"):
            publish(store, df, _with_key(long), tmp_path / "r.csv")
        assert store.releases() == []
    assert not (tmp_path / "r.csv").exists()


def _with_key(key: str):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    return replace(make_request(), key=key)


def test_float_keys_beyond_2_63_keep_distinct_pseudonyms() -> None:
    keys = pd.Series([2.0**63, 2.0**63 + 2048, 2.0**64, -(2.0**63) - 4096, 1e300, 12.0])
    texts = canonical_keys(keys)
    assert texts == [str(int(v)) for v in keys]
    assert len(set(RecordHasher(b"s" * 32, "d").hash_texts(texts))) == len(keys)
    big = pd.Series(np.array([2**63, 2**64 - 1], dtype=np.uint64))
    assert canonical_keys(big) == ["9223372036854775808", "18446744073709551615"]
    # the text of a key and its number are one record, as before
    assert canonical_keys(pd.Series(["9223372036854775808"])) == canonical_keys(big[:1])


def test_a_key_with_a_lone_surrogate_is_a_clear_error(tmp_path: Path) -> None:
    df = people(np.arange(50))
    df.loc[3, "pid"] = "P\udc80"
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        with pytest.raises(InputError, match=r"not valid Unicode text .* in rows 3"):
            publish(store, df, make_request(), tmp_path / "r.csv")
        with pytest.raises(HistoryError, match="lone surrogate"):
            store.pseudonyms("census", df["pid"])


@pytest.mark.parametrize("name", ["ward\u202e1-txt", "ward\u2066x", "a\u200bb", "x\udc80",
                                  "line\u2028break"])
def test_dataset_names_with_bidi_or_invisible_characters_are_refused(tmp_path: Path,
                                                                     name: str) -> None:
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        with pytest.raises(InputError, match="invalid dataset name"):
            publish(store, people(np.arange(50)), make_request(name), tmp_path / "r.csv")
        assert store.releases() == []


def test_the_secret_check_is_compared_in_constant_time(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    HistoryStore.open(tmp_path / "h.db", create=True).close()
    calls = []
    real = secret_module.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(secret_module.hmac, "compare_digest", spy)
    HistoryStore.open(tmp_path / "h.db").close()
    assert calls
    with pytest.raises(HistoryError, match="wrong secret"):
        HistoryStore.open(tmp_path / "h.db", secret=secrets.token_hex(32))
