"""History format version 2: what a release records of its kind, and upgrading version-1
histories (the fixture ``tests/data/history_v1``, made by the version-1 code, is copied
first: it is never modified)."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from test_attacks import hand_release

from anonkit.cli.release import release as release_cli
from anonkit.errors import HistoryError
from anonkit.history import secret as secret_module
from anonkit.history.attacks import audit
from anonkit.history.location import HistoryLocation
from anonkit.history.migrations import (
    MIGRATION_HOOKS,
    V2_COLUMNS,
    upgrade,
    v1_metadata,
    v1_requirements,
)
from anonkit.history.schema import SCHEMA_VERSION, schema_table
from anonkit.history.secret import SECRET_ENV, SecretBesideHistoryWarning
from anonkit.history.store import HistoryStore, HistoryUpgradedWarning
from anonkit.models.base import CrossReleaseRequirement
from locations import FIXTURES

if TYPE_CHECKING:
    from pg_fixtures import HistoryTarget, TemporaryPostgres

pytest_plugins = ["pg_fixtures"]

FIXTURE = FIXTURES / "history_v1"
DATASETS = ("ward", "clinic")


def v1_copy(tmp_path: Path) -> Path:
    """A copy of the version-1 fixture history (with its secret beside it)."""
    folder = tmp_path / "v1"
    folder.mkdir()
    for name in ("history_v1.db", "history_v1.db.secret"):
        shutil.copy2(FIXTURE / name, folder / name)
    (folder / "history_v1.db.secret").chmod(0o600)
    return folder / "history_v1.db"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dump(path: Path) -> list[str]:
    """Every table's definition and rows (the file's header counters aside)."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def sqlite_version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT version FROM anonkit_schema").fetchone()[0])


# -- what a version-2 release records -------------------------------------------------------


def test_a_release_records_its_kind_state_and_auxiliary_tables(history: HistoryTarget) -> None:
    prepared = hand_release(1, {"a": 0, "b": 0, "c": 1, "d": 1},
                            {"a": "flu", "b": "hiv", "c": "flu", "d": "cold"},
                            kind="permuted", fakes={1: ["cancer"]}, k=2)
    prepared.threat_model = "incremental-(k,e)"
    prepared.seeded = True
    prepared.requirements = [CrossReleaseRequirement("(k,e)-anonymity", "distinct_present",
                                                     2.0, "disease")]
    prepared.method_state = b"\x00opaque\xffstate"
    prepared.auxiliary = {"groups": pd.DataFrame({"group": [0, 1], "size": [2, 3]}),
                          "counterfeits": pd.DataFrame({"class": [1], "fakes": [1]})}
    with HistoryStore.open(history.url, secret_file=history.secret_file, create=True) as store:
        info = store.commit_release(prepared)
        plain = store.commit_release(hand_release(2, {"a": 0, "b": 0}, {"a": "x", "b": "y"}))
        view = store.load(info)
        assert (info.release_kind, info.threat_model, info.seeded, info.group_column) == (
            "permuted", "incremental-(k,e)", True, "group")
        assert info.requirements == [{"model": "(k,e)-anonymity", "measure": "distinct_present",
                                      "threshold": 2.0, "attribute": "disease"}]
        assert view.sizes.tolist() == [2, 3] and view.counterfeits.tolist() == [0, 1]
        assert view.real_sizes.tolist() == [2, 2]
        assert store.method_state(info) == b"\x00opaque\xffstate"
        assert store.auxiliary_names(info) == ["counterfeits", "groups"]
        pd.testing.assert_frame_equal(store.auxiliary(info, "groups"),
                                      prepared.auxiliary["groups"])
        with pytest.raises(HistoryError, match=r"no auxiliary table 'nope'.*'counterfeits'"):
            store.auxiliary(info, "nope")
        # a release without them: today's defaults
        assert (plain.release_kind, plain.threat_model, plain.seeded, plain.group_column) == (
            "generalized", "one-shot", False, None)
        assert store.method_state(plain) is None and store.auxiliary_names(plain) == []
        assert store.load(plain).counterfeits.tolist() == [0]
        assert json.loads(json.dumps(info.to_dict()))["release_kind"] == "permuted"


def test_malformed_release_fields_are_refused_and_nothing_is_written(tmp_path: Path) -> None:
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        bad = hand_release(1, {"a": 0, "b": 0}, {"a": "x", "b": "y"})
        bad.counterfeits = [5]
        with pytest.raises(HistoryError, match="class 0 has 5 counterfeit rows but 2 rows"):
            store.commit_release(bad)
        bad.counterfeits, bad.release_kind = None, "shuffled"
        with pytest.raises(HistoryError, match="unknown release kind 'shuffled'"):
            store.commit_release(bad)
        assert store.releases() == []


# -- the version-1 requirements --------------------------------------------------------------


def test_v1_requirements_map_the_recorded_model_names() -> None:
    verdicts = [
        {"model": "k-anonymity", "parameters": {"k": 4}},
        {"model": "distinct l-diversity", "parameters": {"l": 2}},
        {"model": "distinct l-diversity", "parameters": {"l": 2}},  # second attribute
        {"model": "entropy l-diversity", "parameters": {"l": 2.5}},
        {"model": "recursive (c,l)-diversity", "parameters": {"c": 3, "l": 3}},
        {"model": "(k,e)-anonymity", "parameters": {"k": 3, "e": 2000.0}},
        {"model": "t-closeness", "parameters": {"t": 0.2}},
        {"model": "δ-disclosure privacy", "parameters": {"delta": 1.0}},
    ]
    assert [(r.model, r.measure, r.threshold, r.attribute)
            for r in v1_requirements(verdicts)] == [
        ("k-anonymity", "candidates", 4.0, None),
        ("distinct l-diversity", "distinct", 2.0, None),
        ("entropy l-diversity", "distinct", 3.0, None),
        ("recursive (c,l)-diversity", "distinct", 3.0, None),
        ("(k,e)-anonymity", "distinct_present", 3.0, None),
        ("(k,e)-anonymity", "range", 2000.0, None),
    ]


# -- upgrading a version-1 history -------------------------------------------------------------


def _findings(scope: dict) -> list[tuple[object, ...]]:  # type: ignore[type-arg]
    return [(f["adversary"], f["model"], f["measure"], f["attribute"], f["threshold"],
             f["records"]) for f in scope["findings"]]


def assert_audits_as_stored(store: HistoryStore) -> None:
    """The upgraded history audits as the version-1 code did (audit_*.json), but for what
    the adversaries deduce about values, which got stronger since (the audit now counts
    what every class's multiset leaves, across all releases, and the linkage adversary knows
    at least that): value findings may only grow.

    Compared exactly: both adversaries' candidate findings
    with their worst cases. The value findings (distinct values, range, exact disclosure)
    and the records breached, overall and per adversary, must be at least the stored
    ones. Two more differences are intended: (k,e)-anonymity's
    distinct-value requirement is now the measure ``distinct_present`` (version 1 called it
    ``distinct`` and special-cased the model's name), and the all-releases scope no longer
    sums (k,e)'s distinct and range findings into one (version 1 merged findings of one
    model and attribute across measures): there the stored count is compared with the sum
    of the two findings now reported.
    """
    for dataset in DATASETS:
        stored = json.loads((FIXTURE / f"audit_{dataset}.json").read_text())
        got = audit(store, dataset, pairs=True).to_dict()
        assert got["records_breached"] >= stored["records_breached"], dataset
        assert got["releases"] == stored["releases"]
        scopes = [*zip(got["pairs"], stored["pairs"], strict=True),
                  (got["all_releases"], stored["all_releases"])]
        for now, then in scopes:
            assert now["releases"] == then["releases"]
            # every record is judged now, not only those in two or more releases
            assert now["records_compared"] >= then["records_compared"]
            by_now, by_then = (now["records_breached_by_adversary"],
                               then["records_breached_by_adversary"])
            for adversary in ("qi", "linkage"):
                assert by_now[adversary] >= by_then[adversary], (dataset, now["releases"])
            expected = [(a, m, "distinct_present" if (m, s) == ("(k,e)-anonymity", "distinct")
                         else s, at, t, n) for a, m, s, at, t, n in _findings(then)]
            found = _findings(now)
            worst_then = {(f["adversary"], f["model"], f["attribute"], f["threshold"]):
                          f["worst"] for f in then["findings"]}
            if now["kind"] == "all":  # (k,e)'s findings were summed into one: compare sums
                for adversary in ("qi", "linkage"):
                    total_then = sum(f[5] for f in expected
                                     if f[:2] == (adversary, "(k,e)-anonymity"))
                    total_now = sum(f[5] for f in found
                                    if f[:2] == (adversary, "(k,e)-anonymity"))
                    assert total_now >= total_then
                expected = [f for f in expected if f[1] != "(k,e)-anonymity"]
                found = [f for f in found if f[1] != "(k,e)-anonymity"]

            def exact(f: tuple[object, ...]) -> bool:
                return f[2] == "candidates"

            assert [f for f in found if exact(f)] == [f for f in expected if exact(f)]
            grown = {f[:5]: f[5] for f in found if not exact(f)}
            for f in expected:
                if not exact(f):
                    assert grown.get(f[:5], -1) >= f[5], (dataset, now["releases"], f)
            for f in now["findings"]:
                if (now["kind"], f["model"]) != ("all", "(k,e)-anonymity") and \
                        f["measure"] == "candidates":
                    then_worst = worst_then[(f["adversary"], f["model"], f["attribute"],
                                             f["threshold"])]
                    assert _value_sets(f["worst"]) == _value_sets(then_worst)


#: what a worst case showed then and shows now (the evidence shown is now each adversary's
#: own: its candidates and its values)
_CASE_KEYS = ("record", "level", "classes", "class_sizes")


def _value_sets(cases: list[dict[str, object]]) -> list[dict[str, object]]:
    """Worst cases, the keys both versions show."""
    return [{k: case[k] for k in _CASE_KEYS} for case in cases]


def test_a_v1_history_is_upgraded_with_a_backup(tmp_path: Path) -> None:
    path = v1_copy(tmp_path)
    with pytest.warns(HistoryUpgradedWarning, match=r"from format version 1 to 4; the "
                      r"version-1 history was copied to .*history_v1\.db\.v1-backup"), \
            HistoryStore.open(path) as store:
        assert_audits_as_stored(store)
        infos = store.releases()
        assert [(i.dataset, i.seq) for i in infos] == [("clinic", 1), ("clinic", 2),
                                                       ("ward", 1), ("ward", 2), ("ward", 3)]
        for info in infos:
            assert (info.release_kind, info.threat_model, info.seeded, info.group_column) == (
                "generalized", "one-shot", False, None)
            assert store.method_state(info) is None and store.auxiliary_names(info) == []
            assert store.load(info).counterfeits.sum() == 0
        assert infos[0].requirements == [
            {"model": "k-anonymity", "measure": "candidates", "threshold": 3.0,
             "attribute": None},
            {"model": "(k,e)-anonymity", "measure": "distinct_present", "threshold": 3.0,
             "attribute": None},
            {"model": "(k,e)-anonymity", "measure": "range", "threshold": 2000.0,
             "attribute": None}]
    assert sqlite_version(path) == SCHEMA_VERSION
    backup = path.with_name("history_v1.db.v1-backup")
    assert dump(backup) == dump(FIXTURE / "history_v1.db")  # the version-1 history
    assert sqlite_version(backup) == 1
    # opening again: nothing more to do
    with warnings.catch_warnings():
        warnings.simplefilter("error", HistoryUpgradedWarning)
        HistoryStore.open(path).close()
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "history_v1.db", "history_v1.db.secret", "history_v1.db.v1-backup"]


def test_the_backup_is_a_readable_v1_history_and_never_overwritten(tmp_path: Path) -> None:
    path = v1_copy(tmp_path)
    taken = path.with_name("history_v1.db.v1-backup")
    taken.write_text("someone's file")
    with pytest.warns(HistoryUpgradedWarning, match=r"copied to .*\.v1-backup-2"):
        HistoryStore.open(path).close()
    assert taken.read_text() == "someone's file"
    backup = path.with_name("history_v1.db.v1-backup-2")
    # the backup is a complete version-1 history: it opens (and upgrades) with its secret
    restored = tmp_path / "restored.db"
    shutil.copy2(backup, restored)
    with pytest.warns(HistoryUpgradedWarning), \
            HistoryStore.open(restored, secret_file=path.with_name("history_v1.db.secret")) \
            as store:
        assert_audits_as_stored(store)


def test_a_failed_upgrade_leaves_the_v1_history_unchanged(tmp_path: Path) -> None:
    path = v1_copy(tmp_path)
    original = digest(path)

    def fail() -> None:
        raise RuntimeError("power cut")

    MIGRATION_HOOKS["upgraded"] = fail  # every change made, not committed
    with pytest.raises(RuntimeError, match="power cut"):
        HistoryStore.open(path)
    assert digest(path) == original and sqlite_version(path) == 1
    assert not list(path.parent.glob("*.v1-backup*"))  # nothing to restore from
    MIGRATION_HOOKS.clear()
    with pytest.warns(HistoryUpgradedWarning), HistoryStore.open(path) as store:
        assert_audits_as_stored(store)


def test_a_newer_version_is_still_refused(tmp_path: Path) -> None:
    path = v1_copy(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE anonkit_schema SET version = ?", (SCHEMA_VERSION + 1,))
    before = digest(path)
    with pytest.raises(HistoryError, match=rf"version {SCHEMA_VERSION + 1}.*newer anonkit"):
        HistoryStore.open(path)
    assert digest(path) == before and not list(path.parent.glob("*.v1-backup*"))


def test_a_wrong_secret_does_not_upgrade(tmp_path: Path) -> None:
    path = v1_copy(tmp_path)
    before = digest(path)
    with pytest.raises(HistoryError, match="wrong secret"):
        HistoryStore.open(path, secret="another secret that is long enough")
    assert digest(path) == before and not list(path.parent.glob("*.v1-backup*"))


_OPENER = textwrap.dedent("""
    import sys, time, warnings
    from anonkit.history.migrations import MIGRATION_HOOKS
    from anonkit.history.store import HistoryStore
    history, secret, hold_lock = sys.argv[1], sys.argv[2], sys.argv[3] == "hold"
    def hold():
        print("upgrading", flush=True)
        time.sleep(1.5)  # the other opener arrives meanwhile
    if hold_lock:
        MIGRATION_HOOKS["upgraded"] = hold
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with HistoryStore.open(history, secret_file=secret) as store:
            n = len(store.releases())
    upgraded = any("upgraded" in str(w.message) for w in caught)
    print(f"ok {n} {'upgraded' if upgraded else 'found'}", flush=True)
""")


def _opener(history: str, secret: Path, hold_lock: bool) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _OPENER, history, str(secret),
                             "hold" if hold_lock else "-"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _concurrent_openers(history: str, secret: Path) -> list[str]:
    first = _opener(history, secret, hold_lock=True)
    # the first opener says when it holds the upgrade's lock (its first line)
    assert first.stdout is not None
    said = first.stdout.readline()
    assert said.strip() == "upgrading", (said, first.communicate())
    second = _opener(history, secret, hold_lock=False)  # arrives while the first holds it
    outs = [p.communicate(timeout=180) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], outs
    return [out.strip() for out, _ in outs]


def test_concurrent_openers_of_a_v1_sqlite_history(tmp_path: Path) -> None:
    path = v1_copy(tmp_path)
    results = _concurrent_openers(str(path), path.with_name("history_v1.db.secret"))
    assert results == ["ok 5 upgraded", "ok 5 found"]
    assert sqlite_version(path) == SCHEMA_VERSION
    assert len(list(path.parent.glob("*.v1-backup*"))) == 1


# -- PostgreSQL --------------------------------------------------------------------------------


def v1_postgres(server: TemporaryPostgres, name: str) -> str:
    """A version-1 history on PostgreSQL: the version-1 tables, filled with the fixture's
    rows."""
    url = server.create_database(name)
    source = sa.create_engine(f"sqlite:///{FIXTURE / 'history_v1.db'}")
    target = sa.create_engine(url)
    v1_metadata.create_all(target)
    with source.connect() as read, target.begin() as write:
        for table in v1_metadata.sorted_tables:
            rows = [dict(r) for r in read.execute(sa.select(table)).mappings()]
            if rows:
                write.execute(table.insert(), rows)
        # ids were given explicitly: move the sequence past them, as the v1 code would have
        write.exec_driver_sql("SELECT setval(pg_get_serial_sequence('anonkit_releases', "
                              "'id'), (SELECT max(id) FROM anonkit_releases))")
    source.dispose()
    target.dispose()
    return url


def _pg_version(url: str) -> int:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.select(schema_table.c.version)).scalar_one())
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_v1_postgres_history_is_upgraded(postgres_server: TemporaryPostgres,
                                           tmp_path: Path) -> None:
    url = v1_postgres(postgres_server, "v1_upgrade")
    secret = v1_copy(tmp_path).with_name("history_v1.db.secret")
    assert _pg_version(url) == 1
    with pytest.warns(HistoryUpgradedWarning, match="from format version 1 to 4") as caught, \
            HistoryStore.open(url, secret_file=secret) as store:
        assert_audits_as_stored(store)
        assert store.releases("ward")[0].requirements[0]["measure"] == "candidates"
        # the upgraded history takes new releases
        info = store.commit_release(hand_release(1, {"a": 0, "b": 0}, {"a": "x", "b": "y"}))
        assert info.id == 6
    assert "copied" not in str(caught[0].message)  # PostgreSQL: no file to copy
    assert _pg_version(url) == SCHEMA_VERSION


@pytest.mark.postgres
def test_concurrent_openers_of_a_v1_postgres_history(postgres_server: TemporaryPostgres,
                                                     tmp_path: Path) -> None:
    url = v1_postgres(postgres_server, "v1_concurrent")
    secret = v1_copy(tmp_path).with_name("history_v1.db.secret")
    assert _concurrent_openers(url, secret) == ["ok 5 upgraded", "ok 5 found"]
    assert _pg_version(url) == SCHEMA_VERSION


@pytest.mark.postgres
def test_a_failed_postgres_upgrade_leaves_v1(postgres_server: TemporaryPostgres,
                                             tmp_path: Path) -> None:
    url = v1_postgres(postgres_server, "v1_failed")
    secret = v1_copy(tmp_path).with_name("history_v1.db.secret")

    def fail() -> None:
        raise RuntimeError("power cut")

    MIGRATION_HOOKS["upgraded"] = fail
    with pytest.raises(RuntimeError, match="power cut"):
        HistoryStore.open(url, secret_file=secret)
    assert _pg_version(url) == 1
    engine = sa.create_engine(url)
    try:
        columns = {c["name"] for c in sa.inspect(engine).get_columns("anonkit_releases")}
        assert not {c.name for c in V2_COLUMNS} & columns
        assert not sa.inspect(engine).has_table("anonkit_method_state")
        MIGRATION_HOOKS.clear()
        # and it upgrades afterwards (authenticating the releases needs the secret)
        from anonkit.history.secret import resolve_secret

        given, _ = resolve_secret(explicit=None, secret_file=secret, beside=None)
        assert given is not None
        assert upgrade(engine, _location(url), given) is not None
    finally:
        engine.dispose()
    assert _pg_version(url) == SCHEMA_VERSION


def _location(url: str):  # type: ignore[no-untyped-def]
    return HistoryLocation.parse(url)


# -- the secret beside the history -------------------------------------------------------------


def test_a_secret_beside_the_history_warns_once_per_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secret_module, "_warned_beside", False)
    with pytest.warns(SecretBesideHistoryWarning,
                      match=r"lies in the folder of the history .*--secret-file FILE, "
                            r"\$ANONKIT_HISTORY_SECRET_FILE or \$ANONKIT_HISTORY_SECRET"):
        HistoryStore.open(tmp_path / "a.db", create=True).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SecretBesideHistoryWarning)
        HistoryStore.open(tmp_path / "a.db").close()  # once per process
        HistoryStore.open(tmp_path / "b.db", create=True).close()


def test_a_secret_beside_the_history_warns_when_the_history_is_created_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command is a process of its own: list, show and audit of an existing history
    (another process, here a reset flag) do not repeat the warning its creation gave."""
    monkeypatch.setattr(secret_module, "_warned_beside", False)
    with pytest.warns(SecretBesideHistoryWarning):
        HistoryStore.open(tmp_path / "a.db", create=True).close()
    monkeypatch.setattr(secret_module, "_warned_beside", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SecretBesideHistoryWarning)
        HistoryStore.open(tmp_path / "a.db", read_only=True).close()
        HistoryStore.open(tmp_path / "a.db").close()


def test_a_secret_kept_elsewhere_does_not_warn(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secret_module, "_warned_beside", False)
    (tmp_path / "data").mkdir()
    (tmp_path / "keys").mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SecretBesideHistoryWarning)
        HistoryStore.open(tmp_path / "data" / "h.db", create=True,
                          secret_file=tmp_path / "keys" / "h.secret").close()
        monkeypatch.setenv(SECRET_ENV, "7f" * 2 + "a1b2c3d4e5f60718293a4b5c6d7e8f90" * 2)
        HistoryStore.open(tmp_path / "data" / "e.db", create=True).close()
    assert not secret_module._warned_beside


def test_the_cli_says_where_to_keep_the_secret(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secret_module, "_warned_beside", False)
    help_text = " ".join(CliRunner().invoke(release_cli, ["list", "--help"]).output.split())
    assert "a backup of that folder carries both" in help_text
    assert "$ANONKIT_HISTORY_SECRET_FILE" in help_text
    path = v1_copy(tmp_path)
    before = digest(path)
    refused = CliRunner().invoke(release_cli, ["list", "--history", str(path)])
    assert refused.exit_code == 2  # list never writes: it names the command that upgrades
    assert "format version 1" in refused.output and "anonkit release recover" in refused.output
    assert digest(path) == before and not list(path.parent.glob("*.v1-backup*"))
    result = CliRunner().invoke(release_cli, ["recover", "--history", str(path)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("warning: ")]
    assert len(lines) == 2
    assert "upgraded the history" in lines[0] and ".v1-backup" in lines[0]
    assert "lies in the folder of the history" in lines[1]
    again = CliRunner().invoke(release_cli, ["list", "--history", str(path)])
    assert "warning:" not in again.output  # upgraded already; warned once per process
    assert all(" generalized " in line for line in again.output.splitlines()[1:])
