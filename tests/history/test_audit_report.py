"""The audit as it is read: one verdict per adversary at the top of the summary and of the
HTML report, never contradicted by the status above it, and under each adversary its own
evidence only (:meth:`anonkit.history.attacks.AuditReport.summary`,
:mod:`anonkit.history.report`)."""

from __future__ import annotations

import dataclasses
import re

from anonkit.history.attacks import (
    OUTSIDE_CLAIM,
    PINNED,
    AuditReport,
    Requirement,
    ScopeResult,
    audit_views,
)
from anonkit.history.records import PreparedRelease, ReleaseView
from anonkit.history.report import render_html
from history_helpers import pid, release

# four people in two classes per release; release 2 swaps b and d. Each class keeps {flu,
# cold}, so counting leaves everyone both values; linking rows leaves each person alone
# with the value on their rows.
SWAP_VALUES = {"a": "flu", "b": "cold", "c": "flu", "d": "cold"}
SWAP_1 = {"a": 0, "b": 0, "c": 1, "d": 1}
SWAP_2 = {"a": 0, "d": 0, "c": 1, "b": 1}


def m_invariant(prepared: PreparedRelease) -> ReleaseView:
    """The release as an m-invariance release records itself: it claims the qi adversary
    only."""
    return dataclasses.replace(prepared, threat_model="m-invariance").view()


def swap_history(**given: object) -> list[ReleaseView]:
    """The swap, as two m-invariance releases (values on rows, one counterfeit row)."""
    return [m_invariant(release(1, SWAP_1, SWAP_VALUES, record_values=True, **given)),
            m_invariant(release(2, SWAP_2, SWAP_VALUES, record_values=True,
                                fakes={1: ["flu"]}, **given))]


def difference_history() -> list[ReleaseView]:
    """The README's difference attack: release 2 adds p10 (asthma) to the class of p6..p9,
    so p10 holds the one value added (tests/test_possible.py)."""
    old = {"p6": 1, "p7": 1, "p8": 1, "p9": 1}
    diagnosis = {"p6": "cancer", "p7": "cold", "p8": "flu", "p9": "hiv", "p10": "asthma"}
    young = {f"p{i}": 0 for i in range(1, 6)}
    young_values = {f"p{i}": f"a{i}" for i in range(1, 6)}
    return [release(1, young | old, young_values | diagnosis, record_values=True).view(),
            release(2, young | old | {"p10": 1}, young_values | diagnosis,
                    record_values=True).view()]


def section(page: str, adversary: str) -> str:
    start = page.index(f"<section id='adversary-{adversary}'>")
    return page[start:page.index("</section>", start)]


def verdict_line(text: str, adversary: str) -> str:
    """The adversary's verdict (the first line starting with its name)."""
    return next(line.strip() for line in text.splitlines()
                if line.strip().startswith(f"{adversary} adversary ("))


def worst_rows(part: str, key: str) -> list[str]:
    """The worst-case table rows of a record (by its key) in a part of the page."""
    shown = pid(key).hex()[:12]
    return [row for row in re.findall(r"<tr>.*?</tr>", part) if shown in row]


def unqualified_no_breach(page: str) -> list[str]:
    """Sentences saying there is no breach without saying what lies outside the claim."""
    sentences = re.findall(r"(?i)no (?:cross-release )?breach[^<]*", page)
    return [s for s in sentences if OUTSIDE_CLAIM not in s]


def test_only_the_adversary_outside_the_claim_finds_something() -> None:
    report = audit_views(swap_history(), worst=10)
    assert not report.breached and report.records_outside_claim == 4
    text = report.summary()
    first, qi, linkage = text.splitlines()[:3]
    assert first == ("audit of 'hand', releases 1, 2: no breach found; 4 more records only "
                     f"by adversaries {OUTSIDE_CLAIM}s (shown, not counted)")
    assert qi.strip().startswith("qi adversary (") and qi.endswith(": no record exposed.")
    assert linkage.strip().startswith("linkage adversary (")
    assert f"{OUTSIDE_CLAIM} (m-invariance); 4 records would be exposed" in linkage
    assert linkage.endswith("shown for information, not counted.")
    page = render_html(report)
    assert f"<li class='good'>{verdict_line(qi, 'qi')}</li>" in page.replace("&#x27;", "'")
    assert f"{OUTSIDE_CLAIM} (m-invariance); 4 records would be exposed" in page
    assert "No cross-release breach found" not in page
    assert not unqualified_no_breach(page), unqualified_no_breach(page)
    assert "none exposed to this adversary" in section(page, "qi")
    # the linkage findings are shown, and marked as not counted
    linkage_part = section(page, "linkage")
    assert f"<h2>Adversary linkage <i>({OUTSIDE_CLAIM})</i></h2>" in linkage_part
    assert f"no: {OUTSIDE_CLAIM}" in linkage_part and PINNED in linkage_part


def test_a_qi_breach_is_counted_and_proved() -> None:
    report = audit_views(difference_history(), worst=10)
    assert report.breached and report.records_breached == 1
    text = report.summary()
    assert text.splitlines()[0] == "audit of 'hand', releases 1, 2: 1 records breached"
    qi = verdict_line(text, "qi")
    assert qi.endswith(": 1 record exposed, proved.")
    assert verdict_line(text, "linkage").endswith(": no record exposed.")
    page = render_html(report)
    assert '<p class="verdict bad">1 record breached across releases</p>' in page
    assert f"<li class='bad'>{qi}</li>" in page.replace("&#x27;", "'")
    assert not unqualified_no_breach(page)
    qi_part = section(page, "qi")
    assert "<td class='l'>proved</td>" in qi_part and "not ruled out</td>" not in qi_part
    (row,) = worst_rows(qi_part, "p10")
    # the values it cannot rule out, then those proved possible: asthma alone
    assert row.count("<td class='l'>asthma</td>") == 2


def test_each_adversary_shows_its_own_evidence() -> None:
    """The swap under l = 3, claimed by both: counting leaves a {cold, flu}; its linked rows
    show flu."""
    l3 = (Requirement("distinct l-diversity", "distinct", 3),)
    views = [release(1, SWAP_1, SWAP_VALUES, record_values=True, requirements=l3).view(),
             release(2, SWAP_2, SWAP_VALUES, record_values=True, requirements=l3).view()]
    report = audit_views(views, worst=10)
    assert report.overall is not None
    by_adversary = {f.adversary: f for f in report.overall.findings if f.model != PINNED}
    assert by_adversary["qi"].worst[0]["values[v]"] == ["cold", "flu"]
    assert by_adversary["linkage"].worst[0]["values[v]"] == ["flu"]
    page = render_html(report)
    qi_part, linkage_part = section(page, "qi"), section(page, "linkage")
    assert "proved possible (v)" in qi_part and "values not ruled out (v)" in qi_part
    assert "proved possible" not in linkage_part
    assert "values on its linked rows (v)" in linkage_part
    for row in worst_rows(qi_part, "a"):
        assert row.count("<td class='l'>cold, flu</td>") == 2  # never the linked flu
    rows = worst_rows(linkage_part, "a")
    assert rows and all("<td class='l'>flu</td>" in row and "cold" not in row for row in rows)
    for adversary in ("qi", "linkage"):
        assert verdict_line(report.summary(), adversary).endswith(
            ": 4 records exposed, all proved.")


def test_permuted_releases_give_the_linkage_adversary_no_proved_possible_column() -> None:
    """Over permuted releases linking rows tells no values: the linkage adversary's
    evidence is what counting leaves, shown as that, without the qi adversary's
    proved-possible column."""
    k2 = (Requirement("k-anonymity", "candidates", 2),)
    views = [m_invariant(release(1, SWAP_1, SWAP_VALUES, kind="permuted", requirements=k2)),
             m_invariant(release(2, SWAP_2, SWAP_VALUES, kind="permuted", requirements=k2,
                                 fakes={0: ["flu"]}))]
    report = audit_views(views, worst=10)
    linkage_part = section(render_html(report), "linkage")
    assert "k-anonymity" in linkage_part and "proved possible" not in linkage_part
    assert "values not ruled out (v): no release of these shows values on rows" in linkage_part


def test_evidence_is_escaped() -> None:
    script = "<script>x</script>"
    values = {**SWAP_VALUES, "a": script, "c": script}
    views = [m_invariant(release(1, SWAP_1, values, record_values=True)),
             m_invariant(release(2, SWAP_2, values, record_values=True))]
    report = audit_views(views, worst=10)
    assert report.overall is not None
    assert any(script in f.worst[0]["values[v]"]  # type: ignore[operator]
               for f in report.overall.findings)
    page = render_html(report)
    assert "<script" not in page
    assert "&lt;script&gt;x&lt;/script&gt;" in section(page, "linkage")


def test_the_verdict_counts_records_not_findings() -> None:
    """One record can be in several findings: the verdict reads the judgement's own record
    counts (exposed, proved, counted under the claim), never a sum of findings."""

    def verdict(exposed: int, proved: int, counted: int) -> str:
        scope = ScopeResult("all", (1, 2), 20, counted, [], {"qi": 0, "linkage": exposed},
                            proved_by={"qi": 0, "linkage": proved},
                            counted_by={"qi": 0, "linkage": counted})
        report = AuditReport("d", [1, 2], [], [], scope, counted)
        (linkage,) = (v for v in report.verdicts() if v.adversary == "linkage")
        return linkage.sentence().split("): ", 1)[1]

    assert verdict(12, 10, 12) == "12 records exposed, 10 proved and 2 not ruled out."
    assert verdict(3, 0, 3) == "3 records exposed, none proved, all not ruled out."
    assert verdict(1, 1, 1) == "1 record exposed, proved."
    assert verdict(5, 5, 3) == (
        "5 records exposed, all proved; 2 of them only in releases whose threat model does "
        "not claim it (m-invariance): shown, not counted.")
    assert verdict(4, 4, 0).startswith("outside the claimed threat model (m-invariance); "
                                       "4 records would be exposed, all proved")
