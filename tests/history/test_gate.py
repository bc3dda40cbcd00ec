"""The gate against the difference attack: whoever joins or leaves between two releases is
disclosed by their difference, and the gate refuses it (issue: the history's promise).

The ward of the issue's reproduction: five people aged 20-24 and four aged 60-63, each with
a distinct diagnosis; Mondrian with k = 4 and l = 4 puts each age band in one class. A
release that adds or removes people of the 60s class changes that class's multiset by
exactly their diagnoses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner, Result

from anonkit.cli.release import release
from anonkit.history.store import HistoryStore

WARD = pd.DataFrame({
    "pid": list(range(1, 17)),
    "age": [20, 21, 22, 23, 24, 60, 61, 62, 63, 64, 65, 66, 90, 91, 92, 93],
    "diag": ["a1", "a2", "a3", "a4", "a5", "cancer", "cold", "flu", "hiv", "asthma",
             "migraine", "gout", "d1", "d2", "d3", "d4"],
})
BASE = list(range(1, 10))  # the nine people of release 1


class Ward:
    def __init__(self, tmp_path: Path, table: pd.DataFrame = WARD) -> None:
        self.tmp = tmp_path
        self.table = table
        self.history = ["--history", str(tmp_path / "h.db"), "--secret-file",
                        str(tmp_path / "h.secret")]
        self.n = 0

    def publish(self, pids: list[int], *extra: str) -> Result:
        self.n += 1
        source = self.tmp / f"in{self.n}.csv"
        self.table[self.table["pid"].isin(pids)].to_csv(source, index=False)
        return self.run("publish", str(source), "--dataset", "ward", "--key", "pid",
                        "--qi", "age", "--sensitive", "diag", "-k", "4", "-l", "4",
                        "-o", str(self.tmp / f"r{self.n}.csv"), *extra)

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(release, [*args, *self.history], catch_exceptions=False)

    def pseudonym(self, pid: int) -> str:
        with HistoryStore.open(self.tmp / "h.db", secret_file=self.tmp / "h.secret",
                               read_only=True) as store:
            return bytes(store.pseudonyms("ward", pd.Series([str(pid)]))[0]).hex()

    def files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(self.tmp.iterdir()) if p.is_file()}


def assert_refused_then_forced(ward: Ward, pids: list[int], exposed: list[int]) -> None:
    """The gate refuses (exit 3, one line, nothing written); forced, the release is recorded
    as overridden, and the audit exits 3 naming each exposed person's record."""
    before = ward.files()
    refused = ward.publish(pids)
    assert refused.exit_code == 3, refused.output
    # one line, and nothing in it but counts and names: no key, no value
    assert re.fullmatch(r"error: release \d+ of 'ward' refused: with the earlier releases it "
                        r"would disclose \d+ records? to the qi adversary( and the linkage "
                        r"adversary)?; nothing was written\. Publish with a method that "
                        r"honours the history \([^)]*\); --json shows the findings\n",
                        refused.output), refused.output
    assert ward.files() == {**before, f"in{ward.n}.csv": ward.files()[f"in{ward.n}.csv"]}
    ward.n -= 1
    forced = ward.publish(pids, "--allow-breach")
    assert forced.exit_code == 0, forced.output
    assert "published over the gate (--allow-breach)" in forced.output
    assert "qi adversary" in forced.output
    listing = json.loads(ward.run("list", "--json").output)
    assert listing[-1]["gate_overridden"] is True
    assert listing[-1]["gate"]["new_breaches"] >= len(exposed)
    shown = json.loads(ward.run("show", "ward", str(listing[-1]["seq"]), "--json").output)
    assert shown["gate_overridden"] is True and shown["gate"]["overridden"] is True
    assert "OVERRIDDEN" in ward.run("show", "ward", str(listing[-1]["seq"])).output
    audit = ward.run("audit", "--dataset", "ward", "--json", "--worst", "100")
    assert audit.exit_code == 3, audit.output
    report = json.loads(audit.output)
    (override,) = report["gate_overrides"]
    assert override["seq"] == listing[-1]["seq"] and override["overridden"] is True
    text = ward.run("audit", "--dataset", "ward").output
    assert f"release {listing[-1]['seq']}: published over the gate (--allow-breach)" in text
    named = {case["record"] for f in report["all_releases"]["findings"]
             if f["adversary"] == "qi" for case in f["worst"]}
    for pid in exposed:
        assert ward.pseudonym(pid) in named, pid


def test_a_joiner_is_refused(tmp_path: Path) -> None:
    """Release 2 adds a 64-year-old with asthma: the one value added to the 60s class."""
    ward = Ward(tmp_path)
    assert ward.publish(BASE).exit_code == 0
    assert_refused_then_forced(ward, [*BASE, 10], exposed=[10])


def test_a_leaver_is_refused(tmp_path: Path) -> None:
    """The 64-year-old is in release 1 and leaves: the one value that vanished."""
    ward = Ward(tmp_path)
    assert ward.publish([*BASE, 10]).exit_code == 0
    assert_refused_then_forced(ward, BASE, exposed=[10])


def test_a_leaver_after_two_releases_is_refused_when_another_joins(tmp_path: Path) -> None:
    """The issue's second reproduction: the gate and the audit are one judgement. A person
    in releases 1 and 2 leaves before release 3, when another joins; both are exposed."""
    ward = Ward(tmp_path)
    assert ward.publish([*BASE, 10]).exit_code == 0
    assert ward.publish([*BASE, 10]).exit_code == 0
    assert_refused_then_forced(ward, [*BASE, 11], exposed=[10, 11])


def test_a_swap_is_refused(tmp_path: Path) -> None:
    """One leaves (asthma) and one joins (migraine) in the same release."""
    ward = Ward(tmp_path)
    assert ward.publish([*BASE, 10]).exit_code == 0
    assert_refused_then_forced(ward, [*BASE, 11], exposed=[10, 11])


@pytest.mark.parametrize("joiners", [[10, 11], [10, 11, 12]])  # 2, and k - 1 = 3
def test_several_joiners_in_one_class_are_refused(tmp_path: Path, joiners: list[int]) -> None:
    """Joiners share the values added: fewer than l = 4 of them, so each is left fewer
    than 4 values."""
    ward = Ward(tmp_path)
    assert ward.publish(BASE).exit_code == 0
    assert_refused_then_forced(ward, [*BASE, *joiners], exposed=joiners)


def test_joiners_in_classes_of_their_own_pass(tmp_path: Path) -> None:
    """No false refusal where nothing can be subtracted: eight people aged 90-98 join and
    form two classes of their own, each meeting the model; Mondrian's median cuts keep the
    earlier classes as they were."""
    bands = [20, 21, 22, 23, 60, 61, 62, 63, 90, 91, 92, 93, 95, 96, 97, 98]
    ward = Ward(tmp_path, pd.DataFrame({
        "pid": range(1, 17), "age": bands,
        "diag": [f"{band}-{i % 4}" for i, band in enumerate(b // 10 for b in bands)]}))
    assert ward.publish(list(range(1, 9))).exit_code == 0
    second = ward.publish(list(range(1, 17)))
    assert second.exit_code == 0, second.output
    assert "gate: passed (16 records judged" in second.output
    assert ward.run("audit", "--dataset", "ward").exit_code == 0


def test_the_refusal_details_go_to_json_only(tmp_path: Path) -> None:
    """The refusal is one line on stderr; --json gives the findings (pseudonyms only)."""
    ward = Ward(tmp_path)
    assert ward.publish(BASE).exit_code == 0
    refused = ward.publish([*BASE, 10], "--json")
    assert refused.exit_code == 3
    out = refused.stdout if hasattr(refused, "stdout") else refused.output
    body = json.loads(out[:out.rindex("}") + 1])
    assert body["refused"] is True
    records = {case["record"] for f in body["gate"]["all_releases"]["findings"]
               for case in f["worst"]}
    assert ward.pseudonym(10) in records
    assert "asthma" in out  # the adversary's evidence: the value it deduces
    assert "64" not in out.replace(ward.pseudonym(10), "")  # no key, no raw QI


def test_the_seed_is_never_recorded(tmp_path: Path) -> None:
    """--seed marks the release seeded; the seed itself is not kept anywhere."""
    ward = Ward(tmp_path)
    assert ward.publish(BASE, "--seed", "424242").exit_code == 0
    shown = json.loads(ward.run("show", "ward", "1", "--json").output)
    assert shown["seeded"] is True
    assert "seed" not in shown["parameters"]
    assert b"424242" not in (tmp_path / "h.db").read_bytes()
