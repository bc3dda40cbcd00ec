"""The release history: storage, secrets, atomic and concurrent publishing, bad input.

Every test that touches a database runs on SQLite and on a real PostgreSQL server (the
``history`` fixture); the crash and concurrency tests use real child processes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from anonkit import methods
from anonkit._util.files import sha256_file
from anonkit.errors import ConcurrentPublishError, HistoryError, InputError
from anonkit.history.engines import engine_for, register_engine
from anonkit.history.engines.context import PublishContext
from anonkit.history.publish import PUBLISH_HOOKS, prepare_release, publish
from anonkit.history.schema import SCHEMA_VERSION, schema_table
from anonkit.history.secret import SECRET_ENV, RecordHasher, canonical_keys
from anonkit.history.store import HistoryStore
from anonkit.verify import verify_release
from history_helpers import (
    churned_versions,
    history_state,
    make_request,
    people,
    sorted_chunks,
)
from locations import TESTS

if TYPE_CHECKING:
    from pg_fixtures import HistoryTarget, TemporaryPostgres

pytest_plugins = ["pg_fixtures"]



def open_store(target: HistoryTarget, create: bool = True, **kw: object) -> HistoryStore:
    return HistoryStore.open(target.url, secret_file=target.secret_file, create=create, **kw)


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- pseudonyms ----------------------------------------------------------------------------


def test_pseudonyms_are_hmac_sha256_under_a_per_dataset_key() -> None:
    secret = b"0123456789abcdef0123456789abcdef"
    hasher = RecordHasher(secret, "census")
    derived = hmac.digest(secret, b"anonkit record key\x00census", "sha256")
    keys = ["P1", "P22", "émile", ""]
    # HMAC-SHA256 truncated to 128 bits
    expected = [hmac.new(derived, k.encode(), hashlib.sha256).digest()[:16] for k in keys]
    assert hasher.hash_texts(keys) == expected
    assert RecordHasher(secret, "other").hash_texts(keys) != expected
    assert RecordHasher(b"another secret, 32 bytes long...", "census").hash_texts(keys) \
        != expected


def test_a_key_has_one_pseudonym_whatever_dtype_it_was_read_as() -> None:
    hasher = RecordHasher(b"0123456789abcdef0123456789abcdef", "d")
    as_int = hasher.hash_keys(pd.Series([12, 7, 100000]))
    assert hasher.hash_keys(pd.Series(["12", "7", "100000"])) == as_int
    assert hasher.hash_keys(pd.Series([12.0, 7.0, 100000.0])) == as_int
    assert hasher.hash_keys(pd.Series([" 12", "7 ", "100000"], dtype=object)) == as_int
    assert canonical_keys(pd.Series([1.5, 2.0])) == ["1.5", "2"]


# -- opening -----------------------------------------------------------------------------


def test_a_new_sqlite_history_gets_a_private_secret_beside_it(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with HistoryStore.open(db, create=True) as store:
        assert store.releases() == []
    secret_file = tmp_path / "h.db.secret"
    assert secret_file.exists()
    assert secret_file.stat().st_mode & 0o777 == 0o600
    secret = secret_file.read_text().strip()
    assert len(secret) >= 32
    assert secret.encode() not in db.read_bytes()  # the secret never enters the database


def test_a_new_history_has_the_current_format(history: HistoryTarget) -> None:
    with open_store(history) as store:
        inspector = sa.inspect(store.engine)
        assert {"anonkit_method_state", "anonkit_auxiliary"} <= set(
            inspector.get_table_names())
        columns = {c["name"] for c in inspector.get_columns("anonkit_releases")}
        assert {"release_kind", "threat_model", "requirements", "seeded",
                "group_column"} <= columns
        assert "counterfeits" in {c["name"] for c in inspector.get_columns("anonkit_classes")}
        with store.engine.connect() as conn:
            assert conn.execute(sa.select(schema_table.c.version)).scalar() == SCHEMA_VERSION


def test_opening_a_missing_history_without_create_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="no release history"):
        HistoryStore.open(tmp_path / "none.db")
    assert not (tmp_path / "none.db").exists()


def test_a_file_that_is_not_a_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("a,b\n1,2\n" * 100)
    before = file_digest(path)
    with pytest.raises(HistoryError, match="not an anonkit history"):
        HistoryStore.open(path, create=True)
    assert file_digest(path) == before
    assert not (tmp_path / "data.csv.secret").exists()


def test_another_sqlite_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
        conn.execute("INSERT INTO customers VALUES (1, 'Ann')")
    before = file_digest(path)
    with pytest.raises(HistoryError, match=r"not an anonkit history.*customers"):
        HistoryStore.open(path, create=True)
    assert file_digest(path) == before


def test_a_newer_history_version_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    HistoryStore.open(path, create=True).close()
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.execute(schema_table.update().values(version=99))
    engine.dispose()
    before = file_digest(path)
    with pytest.raises(HistoryError, match=r"version 99.*newer anonkit"):
        HistoryStore.open(path)
    assert file_digest(path) == before


def test_wrong_or_missing_secret_is_refused(history: HistoryTarget, tmp_path: Path) -> None:
    with open_store(history) as store:
        publish(store, people(np.arange(50)), make_request(), tmp_path / "r1.csv")
        state = history_state(store)
    with pytest.raises(HistoryError, match="wrong secret"):
        HistoryStore.open(history.url, secret="not the secret of this history at all")
    os.environ[SECRET_ENV] = secrets.token_hex(32)  # strong, but not this history's
    try:
        with pytest.raises(HistoryError, match="wrong secret"):
            HistoryStore.open(history.url)
    finally:
        del os.environ[SECRET_ENV]
    history.secret_file.rename(tmp_path / "moved.secret")
    with pytest.raises(HistoryError, match=r"secret .* is missing"):
        HistoryStore.open(history.url, secret_file=history.secret_file)
    history.secret_file.with_name("moved.secret").rename(history.secret_file)
    with open_store(history, create=False) as store:
        assert history_state(store) == state


@pytest.mark.postgres
def test_a_postgres_history_needs_a_secret_outside_it(
        postgres_server: TemporaryPostgres) -> None:
    url = postgres_server.create_database("needs_secret")
    with pytest.raises(HistoryError, match=SECRET_ENV):
        HistoryStore.open(url, create=True)


# -- publishing ----------------------------------------------------------------------------


def test_a_release_records_what_an_adversary_sees(history: HistoryTarget,
                                                  tmp_path: Path) -> None:
    df = people(np.arange(203))
    out = tmp_path / "release.csv"
    with open_store(history) as store:
        info = publish(store, df, make_request(sensitive=("disease", "income")), out,
                       shuffle=False)  # compared row by row below
        view = store.load(info)
        pseudonyms = store.pseudonyms("census", df["pid"])
    # the same result, computed again outside the history
    expected = sorted_chunks(df, make_request(sensitive=("disease", "income")),
                             _context(df, ("disease", "income")))
    verify_release(expected)  # classes numbered as the verifier, and so the history, does
    assert (info.dataset, info.seq, info.method) == ("census", 1, "sorted-chunks")
    assert info.parameters == {"k": 5}
    assert info.key_column == "pid"
    assert info.columns["pid"]["role"] == "identifier"
    assert info.columns["age"] == {"role": "quasi_identifier", "kind": "numeric"}
    assert info.quasi_identifiers == ["age", "zip", "sex"]
    assert info.sensitive == ["disease", "income"]
    assert [v["model"] for v in info.verdicts] == ["k-anonymity"] and info.passed
    assert (info.n_input_rows, info.n_released_rows, info.n_classes) == (203, 203, 40)
    assert info.content_hash == sha256_file(out) and info.file_size == out.stat().st_size
    assert info.output_path == str(out) and info.pending_path is None
    assert info.file_status() == "ok"
    released = pd.read_csv(out)
    assert "pid" not in released.columns and len(released) == 203

    np.testing.assert_array_equal(view.sizes, np.bincount(expected.class_ids))
    pd.testing.assert_frame_equal(
        view.labels.astype(str), expected.classes[["age", "zip", "sex"]].astype(str))
    for attr in ("disease", "income"):
        got = view.values[attr]
        stored = Counter(zip(got.class_index.tolist(), got.value.tolist(),
                             got.count.tolist(), strict=True))
        truth = Counter(
            (c, v, n) for (c, v), n in
            Counter(zip(expected.class_ids.tolist(), df[attr].tolist(), strict=True)).items())
        assert stored == truth
    assert view.values["income"].numeric and not view.values["disease"].numeric
    mapping = dict(zip(view.record_keys.tolist(), view.record_classes.tolist(), strict=True))
    assert mapping == dict(zip(pseudonyms, expected.class_ids.tolist(), strict=True))


def _context(df: pd.DataFrame, sensitive: tuple[str, ...]) -> PublishContext:
    from anonkit.data.schema import Schema

    schema = Schema.from_roles(df, ["age", "zip", "sex"], list(sensitive), ["pid"])
    return PublishContext("census", 1, schema, [], None)


def test_raw_keys_and_the_secret_never_enter_the_database(tmp_path: Path) -> None:
    df = people(np.arange(300))
    df["pid"] = [f"citizen-{i:08d}-passport" for i in range(300)]
    db = tmp_path / "h.db"
    with HistoryStore.open(db, create=True) as store:
        publish(store, df, make_request(), tmp_path / "r.csv")
    content = db.read_bytes()
    assert not any(key.encode() in content for key in df["pid"])
    assert b"citizen-" not in content
    assert (tmp_path / "h.db.secret").read_text().strip().encode() not in content


def test_releases_are_numbered_per_dataset(history: HistoryTarget, tmp_path: Path) -> None:
    v1, v2 = churned_versions(120, 2, 0.1)
    with open_store(history) as store:
        assert publish(store, v1, make_request(), tmp_path / "a1.csv").seq == 1
        assert publish(store, v2, make_request(), tmp_path / "a2.csv", allow_breach=True).seq == 2
        # the same records under another name: a new lineage, declared
        assert publish(store, v1, make_request(dataset="other"), tmp_path / "b1.csv",
                       new_lineage=True).seq == 1
        assert store.datasets() == ["census", "other"]
        assert [r.seq for r in store.releases("census")] == [1, 2]
        assert store.latest("census").seq == 2  # type: ignore[union-attr]
        # the same person gets unrelated pseudonyms in two datasets
        one = store.load(store.release("census", 1)).record_keys
        other = store.load(store.release("other", 1)).record_keys
        assert not set(one.tolist()) & set(other.tolist())


def test_duplicate_and_missing_keys_are_refused_naming_rows(history: HistoryTarget,
                                                            tmp_path: Path) -> None:
    df = people(np.arange(40))
    with open_store(history) as store:
        publish(store, df, make_request(), tmp_path / "r1.csv")
        state = history_state(store)
        dup = df.copy()
        dup.loc[[3, 17, 30], "pid"] = "P5"
        with pytest.raises(InputError, match=r"duplicate values, 1 repeated \(rows 3, 5, 17, "
                                              r"30: each group of rows holds one value\)") as err:
            publish(store, dup, make_request(), tmp_path / "r2.csv")
        assert "P5" not in str(err.value)  # a key names a person: never in a message
        missing = df.copy()
        missing["pid"] = missing["pid"].astype(object)
        missing.loc[[8, 9], "pid"] = None
        missing.loc[12, "pid"] = "  "
        with pytest.raises(InputError, match=r"3 missing values, in rows 8, 9, 12"):
            publish(store, missing, make_request(), tmp_path / "r2.csv")
        assert history_state(store) == state
    assert not (tmp_path / "r2.csv").exists()


def test_a_release_with_other_columns_or_roles_is_refused(history: HistoryTarget,
                                                          tmp_path: Path) -> None:
    df = people(np.arange(60))
    with open_store(history) as store:
        publish(store, df, make_request(), tmp_path / "r1.csv")
        state = history_state(store)
        with pytest.raises(HistoryError, match=r"'income' is sensitive.*was insensitive"):
            publish(store, df, make_request(sensitive=("disease", "income")),
                    tmp_path / "r2.csv")
        with pytest.raises(HistoryError, match="new columns 'extra'"):
            publish(store, df.assign(extra=1), make_request(), tmp_path / "r2.csv")
        with pytest.raises(HistoryError, match="missing columns 'income'"):
            publish(store, df.drop(columns="income"), make_request(), tmp_path / "r2.csv")
        assert history_state(store) == state
    assert not (tmp_path / "r2.csv").exists()


def test_unknown_dataset_and_release_are_clear_errors(history: HistoryTarget,
                                                      tmp_path: Path) -> None:
    with open_store(history) as store:
        publish(store, people(np.arange(30)), make_request(), tmp_path / "r1.csv")
        with pytest.raises(HistoryError, match=r"unknown dataset 'nope'.*'census'"):
            store.releases("nope")
        with pytest.raises(HistoryError, match="no release 7; it has releases 1"):
            store.release("census", 7)


def test_the_method_registry() -> None:
    assert {"mondrian", "sorted-chunks"} <= set(methods.names())
    with pytest.raises(ValueError, match="already registered"):
        register_engine("mondrian", sorted_chunks)
    with pytest.raises(InputError, match=r"unknown release method 'nope'.*mondrian"):
        engine_for("nope")


# -- atomicity -----------------------------------------------------------------------------


def test_an_error_before_commit_leaves_history_and_files_as_they_were(
        history: HistoryTarget, tmp_path: Path) -> None:
    v1, v2 = churned_versions(80, 2, 0.1)
    first, out = tmp_path / "first.csv", tmp_path / "release.csv"
    with open_store(history) as store:
        publish(store, v1, make_request(), first)
        state, published = history_state(store), file_digest(first)

        def fail() -> None:
            raise RuntimeError("disk on fire")

        PUBLISH_HOOKS["inserted"] = fail  # every row inserted, not yet committed
        with pytest.raises(RuntimeError, match="disk on fire"):
            publish(store, v2, make_request(), out, allow_breach=True)
        assert history_state(store) == state
    assert file_digest(first) == published  # the previous release's file is untouched
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()
                  if p.name.startswith(".")) == []  # no temporary file left


def _child(target: HistoryTarget, tmp_path: Path, name: str, df: pd.DataFrame,
           output: Path, stage: str | None = None, go: Path | None = None,
           sleep: float = 0.0) -> tuple[subprocess.Popen[str], Path]:
    data = tmp_path / f"{name}.pkl"
    df.to_pickle(data)
    marker = tmp_path / f"{name}.reached"
    spec = {"history": target.url, "secret_file": str(target.secret_file),
            "input": str(data), "output": str(output), "stage": stage,
            "marker": str(marker), "go": str(go) if go else None, "sleep": sleep}
    spec_path = tmp_path / f"{name}.json"
    spec_path.write_text(json.dumps(spec))
    proc = subprocess.Popen([sys.executable, str(TESTS / "history_helpers.py"), str(spec_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=TESTS)
    return proc, marker


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"child ended early ({proc.returncode}): {out}\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"child never reached {path.name}")
        time.sleep(0.02)


@pytest.mark.parametrize("stage", ["written", "inserted"])
def test_a_publisher_killed_before_commit_leaves_the_history_as_it_was(
        history: HistoryTarget, tmp_path: Path, stage: str) -> None:
    v1, v2 = churned_versions(3000, 2, 0.1)
    out = tmp_path / "release.csv"
    with open_store(history) as store:
        publish(store, v1, make_request(), tmp_path / "first.csv")
        state = history_state(store)
    proc, reached = _child(history, tmp_path, "victim", v2, out, stage=stage, sleep=300)
    _wait_for(reached, proc)
    if stage == "inserted":  # the child holds an open transaction with every row inserted
        with open_store(history, create=False) as store:
            assert history_state(store) == state  # uncommitted rows are invisible
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    leftovers = list(tmp_path.glob(".anonkit-tmp-*-release.csv"))
    assert leftovers  # the killed process could not clean up its temporary file
    with open_store(history, create=False) as store:
        assert history_state(store) == state
        # the history works on: the next publish is release 2 and sweeps the dead temp file
        assert publish(store, v2, make_request(), out, allow_breach=True).seq == 2
    assert not any(p.exists() for p in leftovers)
    assert out.exists()


def test_a_publisher_killed_after_commit_is_finished_by_the_next_open(
        history: HistoryTarget, tmp_path: Path) -> None:
    v1, v2 = churned_versions(2000, 2, 0.1)
    out = tmp_path / "release.csv"
    with open_store(history) as store:
        publish(store, v1, make_request(), tmp_path / "first.csv")
    proc, reached = _child(history, tmp_path, "victim", v2, out, stage="committed", sleep=300)
    _wait_for(reached, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not out.exists()  # committed, but the file is still at its temporary name
    with open_store(history, create=False) as store:  # opening finishes the publish
        info = store.release("census", 2)
        assert info.pending_path is None
        assert out.exists() and sha256_file(out) == info.content_hash
        assert info.file_status() == "ok"
    assert not list(tmp_path.glob(".anonkit-tmp-*"))


def test_two_concurrent_publishers_one_wins_the_other_is_refused(
        history: HistoryTarget, tmp_path: Path) -> None:
    v1, v2 = churned_versions(3000, 2, 0.1)
    with open_store(history) as store:
        publish(store, v1, make_request(), tmp_path / "first.csv")
        state = history_state(store)
    go = tmp_path / "go"
    # both compute release 2 and write their file, wait at the start line, then commit at
    # once: whichever comes second must lose, by the in-transaction check or the unique key
    a, reached_a = _child(history, tmp_path, "a", v2, tmp_path / "a.csv", stage="written",
                          go=go)
    b, reached_b = _child(history, tmp_path, "b", v2.sample(frac=1.0, random_state=1),
                          tmp_path / "b.csv", stage="written", go=go)
    _wait_for(reached_a, a)
    _wait_for(reached_b, b)
    go.touch()
    outcomes = sorted((proc.communicate(timeout=180)[0].strip(), name)
                      for proc, name in ((a, "a"), (b, "b")))
    (loser, loser_name), (winner, winner_name) = outcomes
    assert winner == "ok 2", outcomes
    assert loser.startswith(f"error {ConcurrentPublishError.__name__}: release 2 of dataset "
                            f"'census' was published by another process"), outcomes
    assert (tmp_path / f"{winner_name}.csv").exists()
    assert not (tmp_path / f"{loser_name}.csv").exists()
    assert not list(tmp_path.glob(".anonkit-tmp-*"))
    with open_store(history, create=False) as store:
        after = history_state(store)
        assert [r.seq for r in store.releases("census")] == [1, 2]
        assert store.release("census", 2).output_path == str(tmp_path / f"{winner_name}.csv")
    assert len(after) == len(state) + 1


def test_the_unique_key_refuses_a_release_committed_meanwhile(history: HistoryTarget,
                                                               tmp_path: Path) -> None:
    """Writer A inserts release 1 and holds its transaction open; writer B starts its own
    (on PostgreSQL it sees no release yet and its insert waits on A's row; on SQLite it
    waits for A's write lock); A commits; B must fail, and write nothing."""
    df = people(np.arange(100))
    req = make_request()
    with open_store(history) as store:
        pseudonyms = store.pseudonyms("census", df["pid"])
        result = sorted_chunks(df, req, _context(df, ("disease",)))
        first = prepare_release(result, req, 1, pseudonyms, len(df))
        second = prepare_release(result, req, 1, pseudonyms, len(df))
        for release, name in ((first, "a"), (second, "b")):
            release.content_hash, release.output_path = "0" * 64, str(tmp_path / name)
        inserted, outcome = threading.Event(), {}

        def hold() -> None:
            inserted.set()
            time.sleep(1.0)  # B starts meanwhile and runs into A's open transaction

        def writer_b() -> None:
            inserted.wait(30)
            try:
                store.commit_release(second)
                outcome["b"] = "ok"
            except ConcurrentPublishError as exc:
                outcome["b"] = str(exc)

        b = threading.Thread(target=writer_b)
        b.start()
        store.commit_release(first, before_commit=hold)
        b.join(60)
        assert outcome["b"].startswith("release 1 of dataset 'census' was published by "
                                       "another process")
        assert [r.output_path for r in store.releases()] == [str(tmp_path / "a")]
        assert history_state(store)[-1] == ("records", 100)


@pytest.mark.slow
def test_a_large_release_is_stored_completely(history: HistoryTarget, tmp_path: Path) -> None:
    df = people(np.arange(250_000))
    with open_store(history) as store:
        info = publish(store, df, make_request(), tmp_path / "big.parquet")
        view = store.load(info, labels=False)
    assert len(view.record_keys) == 250_000 == len(set(view.record_keys.tolist()))
    assert view.sizes.sum() == 250_000 and info.n_classes == 50_000
    assert info.content_hash == sha256_file(tmp_path / "big.parquet")


def test_keys_equal_as_the_history_sees_them_are_duplicates(tmp_path: Path) -> None:
    """"a" and "a " (and 7 and "7") get one pseudonym, so they are one record: an input
    error naming both spellings and rows, not a database crash."""
    df = people(np.arange(40)).astype({"pid": object})
    df.loc[1, "pid"] = f"{df.loc[0, 'pid']} "
    with HistoryStore.open(tmp_path / "h.db", create=True) as store, \
            pytest.raises(InputError, match=r"duplicate values, 1 repeated \(rows 0, 1:"):
        publish(store, df, make_request(), tmp_path / "r.csv")
    assert not (tmp_path / "r.csv").exists()


def test_published_rows_are_shuffled_and_still_recorded_right(tmp_path: Path) -> None:
    """In the input's order a person's rows would line up across releases: publishing
    shuffles them (operating-system entropy; a seed here, for the test), and every record
    still maps to the class of its row."""
    df = people(np.arange(300))
    request = make_request(k=5)
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        info = publish(store, df, request, tmp_path / "r.csv", shuffle_seed=7)
        view = store.load(info)
        pseudonyms = store.pseudonyms("census", df["pid"])
    released = pd.read_csv(tmp_path / "r.csv", dtype=str)
    in_order = sorted_chunks(df, request, _context(df, ("disease",)))
    assert not released["age"].equals(in_order.data["age"].astype(str))
    # each record's class holds a row with its own disease (the record's row moved along)
    labels = [tuple(r) for r in view.labels.astype(str).to_numpy().tolist()]
    class_of = dict(zip(view.record_keys.tolist(), view.record_classes.tolist(), strict=True))
    rows_of: dict[tuple[str, ...], list[str]] = {}
    for row in released[["age", "zip", "sex", "disease"]].itertuples(index=False):
        rows_of.setdefault(tuple(row[:3]), []).append(row[3])
    for key, disease in zip(pseudonyms, df["disease"], strict=True):
        assert disease in rows_of[labels[class_of[key]]]
