"""Issue 8, item 2: the gate is not bypassed by another dataset name.

Records are matched across the datasets of a history by their history-wide pseudonym; a
release sharing records with another dataset is refused (exit code 3) unless it is declared a
new lineage, which is recorded with it and shown by ``show`` and ``audit``."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from test_attacks import WARD, WARD_1, WARD_2
from test_history_v3 import release as hand_release

from anonkit.cli.release import release as release_cli
from anonkit.errors import ConcurrentPublishError, HistoryError
from anonkit.history.attacks import CrossReleaseBreachError, audit
from anonkit.history.publish import LineageError, publish
from anonkit.history.records import RecordMap, ReleaseInfo
from anonkit.history.schema import record_maps_table, records_table
from anonkit.history.store import HistoryStore, HistoryUpgradedWarning
from history_helpers import as_version_2, history_state, make_request, write_record_rows
from locations import FIXTURES

if TYPE_CHECKING:
    from pg_fixtures import HistoryTarget

pytest_plugins = ["pg_fixtures"]

V1_FIXTURE = FIXTURES / "history_v1"


def open_store(target: HistoryTarget) -> HistoryStore:
    return HistoryStore.open(target.url, secret_file=target.secret_file, create=True)


def ward(dataset: str, classes: dict[str, int]):  # type: ignore[no-untyped-def]
    return make_request(dataset=dataset, method="given-classes", k=2, classes=classes)


def decision(info: ReleaseInfo) -> dict[str, object]:
    """The lineage decision with other datasets (without the re-keying comparisons)."""
    assert info.lineage is not None
    return {k: v for k, v in info.lineage.items() if k != "rekey"}


def test_the_hand_example_under_another_dataset_name_is_refused(history: HistoryTarget,
                                                                 tmp_path: Path) -> None:
    """Release 2 of the issue's hand example breaches P0 and P1 with release 1. Published
    as ``ward-copy`` it used to pass (pseudonyms are keyed by dataset): now it is refused
    without --new-lineage, --allow-breach does not waive that, and nothing is written."""
    with open_store(history) as store:
        publish(store, WARD, ward("ward", WARD_1), tmp_path / "r1.csv")
        before = history_state(store)
        for allow in (False, True):
            with pytest.raises(CrossReleaseBreachError, match=r"shares 10 records with "
                               r"dataset 'ward' \(releases 1\).*--new-lineage") as caught:
                publish(store, WARD, ward("ward-copy", WARD_2), tmp_path / "copy.csv",
                        allow_breach=allow)
            assert isinstance(caught.value, LineageError)
            assert caught.value.exit_code == 3
        assert history_state(store) == before
        assert not (tmp_path / "copy.csv").exists()
        assert store.datasets() == ["ward"]

        # declared a new lineage: published, and the decision is recorded
        info = publish(store, WARD, ward("ward-copy", WARD_2), tmp_path / "copy.csv",
                       new_lineage=True)
        assert decision(info) == {"new_lineage": True, "shared": [
            {"dataset": "ward", "records": 10, "releases": [1], "unmatched_releases": [],
             "separated_by": {"dataset": "ward-copy", "seq": 1}}]}
        assert not audit(store, "ward").breached  # not audited together: the notes say so
    notes = CliRunner().invoke(release_cli, ["audit", "--dataset", "ward",
                                             *history.cli_args()])
    assert notes.exit_code == 0, notes.output
    assert ("release 1 of 'ward-copy' lineage: shares 10 records with 'ward' (releases 1); "
            "declared a separate lineage by this release (--new-lineage): not audited together"
            ) in notes.output
    own = CliRunner().invoke(release_cli, ["audit", "--dataset", "ward-copy", "--json",
                                           *history.cli_args()])
    assert own.exit_code == 0, own.output
    (note,) = json.loads(own.output)["lineage"]
    assert (note["dataset"], note["seq"], note["lineage"]["new_lineage"]) == (
        "ward-copy", 1, True)
    shown = CliRunner().invoke(release_cli, ["show", "ward-copy", "1", *history.cli_args()])
    assert shown.exit_code == 0, shown.output
    assert "lineage: shares 10 records with 'ward'" in shown.output


def test_the_gate_still_audits_the_same_dataset(history: HistoryTarget,
                                                tmp_path: Path) -> None:
    """Published as release 2 of ``ward`` the hand example is refused by the breach gate,
    and a release of records no other dataset holds passes the lineage check."""
    with open_store(history) as store:
        first = publish(store, WARD, ward("ward", WARD_1), tmp_path / "r1.csv")
        assert decision(first) == {"new_lineage": False, "shared": []}
        with pytest.raises(CrossReleaseBreachError, match="would disclose 2 records"):
            publish(store, WARD, ward("ward", WARD_2), tmp_path / "r2.csv")
        others = WARD.assign(pid=[f"Q{i}" for i in range(10)])
        classes = {f"Q{i}": WARD_2[f"P{i}"] for i in range(10)}
        info = publish(store, others, ward("clinic", classes), tmp_path / "c1.csv")
        assert decision(info) == {"new_lineage": False, "shared": []}


def test_a_declared_lineage_covers_later_releases_of_both_datasets(history: HistoryTarget,
                                                                   tmp_path: Path) -> None:
    with open_store(history) as store:
        publish(store, WARD, ward("ward", WARD_1), tmp_path / "r1.csv")
        publish(store, WARD, ward("ward-copy", WARD_1), tmp_path / "c1.csv", new_lineage=True)
        # later releases of either: not refused for sharing records with the other
        later = publish(store, WARD, ward("ward-copy", WARD_1), tmp_path / "c2.csv")
        assert later.lineage["shared"][0]["separated_by"] == {"dataset": "ward-copy",
                                                              "seq": 1}
        back = publish(store, WARD, ward("ward", WARD_1), tmp_path / "r2.csv")
        assert decision(back) == {"new_lineage": False, "shared": [
            {"dataset": "ward-copy", "records": 10, "releases": [1, 2],
             "unmatched_releases": [], "separated_by": {"dataset": "ward-copy", "seq": 1}}]}
        # a third dataset of the same records is refused again: it was declared for no pair
        with pytest.raises(LineageError, match=r"'ward'.*'ward-copy'|'ward-copy'.*'ward'"):
            publish(store, WARD, ward("ward-third", WARD_1), tmp_path / "t1.csv")


def test_history_wide_pseudonyms(tmp_path: Path) -> None:
    """One per key value, the same in every dataset (7 and "7" alike), unlike the
    per-dataset ones; kept per record."""
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        keys = pd.Series(["P0", "7"])
        assert store.history_pseudonyms(keys) == store.history_pseudonyms(
            pd.Series(["P0", 7], dtype=object))
        assert store.pseudonyms("a", keys) != store.pseudonyms("b", keys)
        assert not set(store.history_pseudonyms(keys)) & set(store.pseudonyms("a", keys))
        info = publish(store, WARD, ward("ward", WARD_1), tmp_path / "r1.csv")
        persons = store.release_persons(info)
        assert persons is not None
        # as S16 arrays on both sides: a pseudonym may end in a NUL byte, which an S16
        # item drops when it becomes a Python bytes (1 in 256 keys: the test was flaky)
        expected = np.asarray(store.history_pseudonyms(WARD["pid"]), dtype=persons.dtype)
        assert np.array_equal(np.sort(persons), np.sort(expected))


def test_the_changed_columns_error_no_longer_advises_a_new_dataset(tmp_path: Path) -> None:
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, WARD, ward("ward", WARD_1), tmp_path / "r1.csv")
        wider = WARD.assign(extra=1)
        request = make_request(dataset="ward", method="given-classes", k=2, classes=WARD_1)
        request = type(request)(**{**request.__dict__, "quasi_identifiers": [
            "age", "zip", "sex", "extra"]})
        with pytest.raises(HistoryError, match="must have the same columns") as caught:
            publish(store, wider, request, tmp_path / "r2.csv")
        assert "new dataset" not in str(caught.value)


def test_migrated_records_cannot_be_matched_so_they_count_as_shared(tmp_path: Path) -> None:
    """A version-1 history kept no history-wide pseudonyms: migrated records get NULL (no
    key to recompute them from), and a new dataset is refused unless --new-lineage."""
    folder = tmp_path / "v1"
    folder.mkdir()
    for name in ("history_v1.db", "history_v1.db.secret"):
        shutil.copy2(V1_FIXTURE / name, folder / name)
    (folder / "history_v1.db.secret").chmod(0o600)
    with pytest.warns(UserWarning), HistoryStore.open(folder / "history_v1.db") as store:
        with store.engine.connect() as conn:
            persons = conn.execute(sa.select(records_table.c.person_hash)).all()
        # the version-1 rows are kept, and their maps keep no history-wide pseudonyms
        assert persons and all(r[0] is None for r in persons)
        assert store.releases() and all(store.release_persons(info) is None
                                        for info in store.releases())
        assert all(info.lineage is None for info in store.releases())
        with pytest.raises(LineageError, match="migrated from an older history"):
            publish(store, WARD, ward("fresh", WARD_1), tmp_path / "f1.csv")
        info = publish(store, WARD, ward("fresh", WARD_1), tmp_path / "f1.csv",
                       new_lineage=True)
        assert {e["dataset"] for e in info.lineage["shared"]} == {"ward", "clinic"}
    shown = CliRunner().invoke(release_cli, ["show", "ward", "1", "--history",
                                             str(folder / "history_v1.db")])
    assert "lineage: not checked" in shown.output, shown.output


def test_the_cli_refuses_another_name_unless_new_lineage(tmp_path: Path) -> None:
    data = tmp_path / "ward.csv"
    WARD.to_csv(data, index=False)
    db = str(tmp_path / "h.db")
    base = ["publish", "--insensitive", "*",
            str(data), "--key", "pid", "--qi", "age,zip,sex", "--sensitive",
            "disease", "--method", "mondrian", "-k", "2", "--history", db]
    first = CliRunner().invoke(release_cli, [*base, "--dataset", "ward", "-o",
                                             str(tmp_path / "r1.csv")])
    assert first.exit_code == 0, first.output
    refused = CliRunner().invoke(release_cli, [*base, "--dataset", "ward-copy", "-o",
                                               str(tmp_path / "c1.csv")])
    assert refused.exit_code == 3, refused.output
    assert "--new-lineage" in refused.output and not (tmp_path / "c1.csv").exists()
    done = CliRunner().invoke(release_cli, [*base, "--dataset", "ward-copy", "-o",
                                            str(tmp_path / "c1.csv"), "--new-lineage"])
    assert done.exit_code == 0, done.output
    assert "lineage: shares 10 records with 'ward'" in done.output


def test_two_datasets_sharing_records_cannot_both_pass_the_lineage_gate(
        history: HistoryTarget, tmp_path: Path) -> None:
    """Two publishes of different datasets with the same records, interleaved: each checks
    its lineage before the other is recorded. The second to commit is refused (nothing
    written) instead of recording a lineage decision that never saw the first; published
    again, it meets the lineage gate. A concurrent release of records nobody else holds
    does not disturb it."""
    from anonkit.errors import ConcurrentPublishError
    from anonkit.history.publish import PUBLISH_HOOKS

    with open_store(history) as store:
        # the other process: a release of 'ward-copy' recorded while 'ward' is being checked
        def other_process() -> None:
            PUBLISH_HOOKS.pop("written")
            publish(store, WARD, ward("ward-copy", WARD_2), tmp_path / "copy.csv")

        PUBLISH_HOOKS["written"] = other_process
        with pytest.raises(ConcurrentPublishError, match=r"release 1 of 'ward-copy' was "
                                                         r"published by another process"):
            publish(store, WARD, ward("ward", WARD_1), tmp_path / "r1.csv")
        assert store.datasets() == ["ward-copy"]
        assert not (tmp_path / "r1.csv").exists()
        with pytest.raises(LineageError, match="shares 10 records with dataset 'ward-copy'"):
            publish(store, WARD, ward("ward", WARD_1), tmp_path / "r1.csv")

        # unrelated records recorded meanwhile: no refusal
        others = WARD.assign(pid=[f"Q{i}" for i in range(10)])
        classes = {f"Q{i}": WARD_2[f"P{i}"] for i in range(10)}

        def unrelated() -> None:
            PUBLISH_HOOKS.pop("written")
            publish(store, others, ward("clinic", classes), tmp_path / "c1.csv")

        PUBLISH_HOOKS["written"] = unrelated
        info = publish(store, WARD, ward("ward", WARD_1), tmp_path / "r1.csv",
                       new_lineage=True)
        assert info.seq == 1 and store.datasets() == ["clinic", "ward", "ward-copy"]


# -- the history-wide pseudonyms live in the record maps (no anonkit_records rows) --------


def test_a_new_release_writes_no_record_rows_and_its_map_keeps_persons(
        history: HistoryTarget, tmp_path: Path) -> None:
    with open_store(history) as store:
        info = publish(store, WARD, ward("ward", WARD_1), tmp_path / "r1.csv")
        with store.engine.connect() as conn:
            n_rows = conn.execute(sa.select(sa.func.count()).select_from(records_table)
                                  ).scalar()
        assert n_rows == 0
        persons = store.release_persons(info)
        view = store.load(info, labels=False)
        # aligned with the record pseudonyms: each record's history-wide pseudonym is the
        # one of its key
        key_of = dict(zip(store.pseudonyms("ward", WARD["pid"]), WARD["pid"], strict=True))
        person_of = dict(zip(WARD["pid"], store.history_pseudonyms(WARD["pid"]), strict=True))
        assert persons is not None and persons.dtype == np.dtype("S16")
        assert [bytes(p) for p in persons.view("V16")] == [
            person_of[key_of[k]] for k in view.record_keys.tolist()]
        assert history_state(store)[-4:] == [("record rows", 0), ("record maps", 1),
                                             ("classes", 2), ("records", 10)]


def test_the_record_map_orders_persons_with_their_keys() -> None:
    rng = np.random.default_rng(3)
    keys = [bytes(rng.integers(0, 256, 16, dtype=np.uint8)) for _ in range(50)]
    keys[7] = b"a" + b"\x00" * 15  # trailing NUL bytes survive
    persons = [hashlib.sha256(k).digest()[:16] for k in keys]
    classes = rng.integers(0, 3, 50)
    built = RecordMap.build(keys, classes, [10, 20, 20], [0, 0, 0], persons)
    as_arrays = RecordMap.build(np.array(keys, dtype="S16"), classes, [10, 20, 20],
                                [0, 0, 0], np.array(persons, dtype="S16"))
    order = sorted(range(50), key=lambda i: keys[i])
    for record_map in (built, as_arrays):
        assert record_map.keys.tobytes() == b"".join(keys[i] for i in order)
        assert record_map.persons is not None
        assert record_map.persons.tobytes() == b"".join(persons[i] for i in order)
        assert record_map.classes.tolist() == [int(classes[i]) for i in order]
        assert record_map.row()["persons"] == b"".join(persons[i] for i in order)
    assert RecordMap.build(keys, classes, [10, 20, 20], [0, 0, 0]).row()["persons"] is None
    with pytest.raises(HistoryError, match="50 record pseudonyms but 49 history-wide"):
        RecordMap.build(keys, classes, [10, 20, 20], [0, 0, 0], persons[1:])
    # the map refuses the same record twice, as the records' primary key did
    with pytest.raises(HistoryError, match="1 repeated record pseudonyms"):
        RecordMap.build([*keys, keys[3]], [*classes, 0], [10, 20, 20], [0, 0, 0])


def test_a_v2_history_s_persons_migrate_and_lineage_works_after_the_upgrade(
        history: HistoryTarget, tmp_path: Path) -> None:
    """A version-2 history keeps the history-wide pseudonyms in ``anonkit_records``: the
    upgrade copies them into the record maps, and the rows stay."""
    with open_store(history) as store:
        info = publish(store, WARD, ward("ward", WARD_1), tmp_path / "r1.csv")
        before = store.release_persons(info)
        assert before is not None
        before = before.copy()
        as_version_2(store)
    with pytest.warns(HistoryUpgradedWarning, match="from format version 2 to 4"), \
            open_store(history) as store:
        after = store.release_persons(info)
        assert after is not None and after.tobytes() == before.tobytes()
        with store.engine.connect() as conn:
            n_rows = conn.execute(sa.select(sa.func.count()).select_from(records_table)
                                  ).scalar()
        assert n_rows == 10  # the version-2 rows are kept
        with pytest.raises(LineageError, match=r"shares 10 records with dataset 'ward' "
                                               r"\(releases 1\)") as caught:
            publish(store, WARD, ward("ward-copy", WARD_2), tmp_path / "copy.csv")
        assert "migrated" not in str(caught.value)  # matched, not "cannot tell"
        shared = store.shared_records("ward-copy", store.history_pseudonyms(WARD["pid"][:3]))
        assert [s.to_dict() for s in shared] == [
            {"dataset": "ward", "records": 3, "releases": [1], "unmatched_releases": []}]


def test_a_release_without_persons_is_unmatched(history: HistoryTarget) -> None:
    """A record map whose ``persons`` is NULL cannot tell whom it holds: reported as an
    unmatched release, by the lineage check and by the commit's check of releases recorded
    meanwhile; a release of no records holds nobody."""
    keys = [bytes([i]) * 16 for i in range(1, 5)]
    persons = [bytes([i + 100]) * 16 for i in range(1, 5)]
    with open_store(history) as store:
        store.commit_release(hand_release(1, keys, [0, 0, 1, 1], ["x", "y"], dataset="old"))
        store.commit_release(hand_release(1, [], [], [], dataset="empty"))
        known = hand_release(1, keys, [0, 0, 1, 1], ["x", "y"], dataset="known")
        known.record_persons = persons
        store.commit_release(known)
        assert store.release_persons(store.release("old", 1)) is None
        assert store.release_persons(store.release("empty", 1)).tolist() == []
        shared = {s.dataset: s.to_dict() for s in store.shared_records("new", [b"z" * 16])}
        assert shared == {"old": {"dataset": "old", "records": 0, "releases": [],
                                  "unmatched_releases": [1]}}
        shared = {s.dataset: s.to_dict() for s in store.shared_records("new", persons[:2])}
        assert shared["known"] == {"dataset": "known", "records": 2, "releases": [1],
                                   "unmatched_releases": []}
        assert shared["old"]["unmatched_releases"] == [1]
        # recorded after the lineage decision: a release that cannot tell is refused
        mark = store.last_release_id()
        store.commit_release(hand_release(2, keys, [0, 0, 1, 1], ["x", "y"], dataset="old"))
        late = hand_release(1, [b"z" * 16], [0], ["x"], dataset="new")
        late.record_persons, late.lineage_mark = [b"y" * 16], mark
        with pytest.raises(ConcurrentPublishError, match="release 2 of 'old' was published"):
            store.commit_release(late)
        # a release of persons shared with nobody, recorded meanwhile, is no reason
        late.lineage_mark = store.last_release_id()
        other = hand_release(2, keys, [0, 0, 1, 1], ["x", "y"], dataset="known")
        other.record_persons = [bytes([i + 50]) * 16 for i in range(4)]
        store.commit_release(other)
        store.commit_release(hand_release(2, [], [], [], dataset="empty"))
        assert store.commit_release(late).seq == 1


def test_a_release_without_a_record_map_is_matched_by_its_rows(history: HistoryTarget,
                                                               tmp_path: Path) -> None:
    with open_store(history) as store:
        publish(store, WARD, ward("ward", WARD_1), tmp_path / "r1.csv")
        write_record_rows(store)  # as a release recorded before version 3 had them
        with store.engine.begin() as conn:
            conn.execute(record_maps_table.delete())
        shared = store.shared_records("copy", store.history_pseudonyms(WARD["pid"][:4]))
        assert [s.to_dict() for s in shared] == [
            {"dataset": "ward", "records": 4, "releases": [1], "unmatched_releases": []}]
        with store.engine.begin() as conn:
            conn.execute(records_table.update().where(records_table.c.key_hash ==
                                                      store.pseudonyms("ward", WARD["pid"])[0])
                         .values(person_hash=None))
        shared = store.shared_records("copy", store.history_pseudonyms(WARD["pid"][:4]))
        assert [s.to_dict() for s in shared] == [
            {"dataset": "ward", "records": 0, "releases": [], "unmatched_releases": [1]}]
