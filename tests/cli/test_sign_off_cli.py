"""Issue 22 on the command line: a sign-off report for every command that writes a release
(item 1: ``release publish --report`` for every method, ``anonymize --engine dask
--report``, ``release show N --report``), honest status lines (item 2), what a measure
means where it is printed (item 16), and rounded console numbers (item 20); the audit,
kb-anonymity and check reports' provenance and summary (item 11)."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner, Result

import anonkit
from anonkit.cli import main
from locations import FIXTURES


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def section(page: str, anchor: str) -> str:
    start = page.index(f'<section id="{anchor}">')
    return page[start:page.index("</section>", start)]


@pytest.fixture(scope="module")
def quarters(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two versions of a salary table: the second adds 150 people (insertions only)."""
    folder = tmp_path_factory.mktemp("quarters")
    census = anonkit.make_census(1_650).data
    paths = []
    for n, rows in enumerate((1_500, 1_650), start=1):
        path = folder / f"q{n}.csv"
        census.iloc[:rows].to_csv(path, index=False)
        paths.append(path)
    return paths


def publish(history: Path, source: Path, out: Path, method: str, *extra: str | Path) -> Result:
    roles = {"ke": ["--qi", "age,zip", "--sensitive", "salary", "-k", "3", "-e", "2000"],
             "m-invariance": ["--qi", "age,zip", "--sensitive", "disease", "-m", "2"],
             "stream-tree": ["--qi", "age", "--drop", "disease", "-k", "5",
                             "--domain", "0,127"],
             "mondrian": ["--qi", "age,zip", "--sensitive", "disease", "-k", "5"]}[method]
    return run("release", "publish", source, "--history", history, "--dataset", method,
               "--key", "id", "--method", method, "--insensitive", "*", *roles, "-o", out,
               *extra)


# -- item 1: publish, show and Dask write the sign-off report --------------------------------


def test_publish_writes_the_report_with_the_release_place_in_the_history(
        quarters: list[Path], tmp_path: Path) -> None:
    history = tmp_path / "h.db"
    first = publish(history, quarters[0], tmp_path / "r1.csv", "ke", "--report",
                    tmp_path / "r1.html")
    assert first.exit_code == 0, first.output
    second = publish(history, quarters[1], tmp_path / "r2.csv", "ke", "--report",
                     tmp_path / "r2.html")
    assert second.exit_code == 0, second.output
    assert f"report written to {tmp_path / 'r2.html'}" in second.output
    page = (tmp_path / "r2.html").read_text()
    # the anonymize report's sections, and the release's own digest in its provenance
    for anchor in ("summary", "verdicts", "classes", "qis", "risk", "utility"):
        assert f'<section id="{anchor}">' in page, anchor
    assert sha256(tmp_path / "r2.csv") in page and "not yet written" not in page
    assert sha256(quarters[1]) in page  # the input, by its digest
    place = section(page, "history")
    assert re.search(r"Release number</th><td>2<", place)
    assert "release 1, published" in place and sha256(tmp_path / "r1.csv") in place
    assert "passed (1650 records judged" in place
    for adversary in ("qi", "linkage"):  # the gate per adversary
        assert f'<td class="strong">{adversary}</td>' in place
    assert "OVERRIDDEN" not in place
    assert "Release number</th><td>1<" in section((tmp_path / "r1.html").read_text(),
                                                  "history")
    assert "none: the first release" in (tmp_path / "r1.html").read_text()


@pytest.mark.parametrize("method", ["m-invariance", "stream-tree"])
def test_every_sequential_method_publishes_with_a_report(method: str, quarters: list[Path],
                                                         tmp_path: Path) -> None:
    done = publish(tmp_path / "h.db", quarters[0], tmp_path / "r1.csv", method, "--report",
                   tmp_path / "r1.html", "--json")
    assert done.exit_code == 0, done.output
    outcome = json.loads(done.output[done.output.index("{"):])
    assert outcome["status"] == "passed" and outcome["report"] == str(tmp_path / "r1.html")
    page = (tmp_path / "r1.html").read_text()
    assert "PASSED" in page and 'id="history"' in page and method in page


def test_an_overridden_gate_is_in_the_report(quarters: list[Path], tmp_path: Path) -> None:
    history = tmp_path / "h.db"
    assert publish(history, quarters[0], tmp_path / "r1.csv", "mondrian").exit_code == 0
    done = publish(history, quarters[1], tmp_path / "r2.csv", "mondrian", "--allow-breach",
                   "--report", tmp_path / "r2.html")
    assert done.exit_code == 0, done.output
    place = section((tmp_path / "r2.html").read_text(), "history")
    assert "OVERRIDDEN" in place and "published over the gate" in place


def test_a_refused_publish_leaves_no_report(quarters: list[Path], tmp_path: Path) -> None:
    history = tmp_path / "h.db"
    assert publish(history, quarters[0], tmp_path / "r1.csv", "mondrian").exit_code == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    refused = publish(history, quarters[1], tmp_path / "r2.csv", "mondrian", "--report",
                      tmp_path / "r2.html")
    assert refused.exit_code == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no report, no leftover


@pytest.mark.parametrize("target", ["input", "earlier release", "history", "release"])
def test_a_report_never_overwrites_what_the_history_or_the_job_holds(
        target: str, quarters: list[Path], tmp_path: Path) -> None:
    history = tmp_path / "h.db"
    assert publish(history, quarters[0], tmp_path / "r1.csv", "ke").exit_code == 0
    report = {"input": quarters[1], "earlier release": tmp_path / "r1.csv",
              "history": history, "release": tmp_path / "r2.csv"}[target]
    digests = {p: sha256(p) for p in (quarters[1], tmp_path / "r1.csv", history)}
    refused = publish(history, quarters[1], tmp_path / "r2.csv", "ke", "--report", report)
    assert refused.exit_code == 2, refused.output
    assert "nothing was written" in refused.output or "would" in refused.output
    assert not (tmp_path / "r2.csv").exists()
    assert {p: sha256(p) for p in digests} == digests


def test_show_rebuilds_the_report_of_a_recorded_release(quarters: list[Path],
                                                        tmp_path: Path) -> None:
    history = tmp_path / "h.db"
    for n in (1, 2):
        assert publish(history, quarters[n - 1], tmp_path / f"r{n}.csv", "ke").exit_code == 0
    state = sha256(history)
    shown = run("release", "show", "ke", "2", "--history", history, "--report",
                tmp_path / "show.html")
    assert shown.exit_code == 0, shown.output
    assert sha256(history) == state  # read-only
    page = (tmp_path / "show.html").read_text()
    assert "PASSED" in page and sha256(tmp_path / "r2.csv") in page
    place = section(page, "history")
    assert "Release number</th><td>2<" in place and "release 1, published" in place
    verdicts = section(page, "verdicts")
    assert "(k,e)-anonymity" in verdicts and "min(distinct/k, range/e)" in verdicts
    refused = run("release", "show", "ke", "2", "--history", history, "--report",
                  tmp_path / "r1.csv")
    assert refused.exit_code == 2 and "release 1" in refused.output


def test_python_publish_takes_a_report(tmp_path: Path) -> None:
    census = anonkit.make_census(600).data
    with anonkit.History(tmp_path / "h.db") as history:
        history.publish(census, dataset="d", key="id", output=tmp_path / "r1.csv",
                        method="m-invariance", quasi_identifiers=["age", "zip"],
                        sensitive=["disease"], insensitive="*", m=2,
                        report=tmp_path / "r1.html")
        with pytest.raises(anonkit.InputError, match="report"):
            history.publish(census, dataset="d", key="id", output=tmp_path / "r2.csv",
                            method="m-invariance", quasi_identifiers=["age", "zip"],
                            sensitive=["disease"], insensitive="*", m=2,
                            report=tmp_path / "r1.csv")
    assert 'id="history"' in (tmp_path / "r1.html").read_text()


def test_dask_writes_the_report(quarters: list[Path], tmp_path: Path) -> None:
    out, report = tmp_path / "release", tmp_path / "dask.html"
    done = run("anonymize", quarters[0], "--engine", "dask", "--workers", "1", "-k", "10",
               "--qi", "age,zip", "--sensitive", "disease", "--id", "id", "--insensitive",
               "*", "-o", out, "--report", report)
    assert done.exit_code == 0, done.output
    page = report.read_text()
    assert "PASSED" in page and "k-anonymity" in page and "Dask" in page
    assert 'id="classes"' in page and 'id="risk"' in page
    inside = run("anonymize", quarters[0], "--engine", "dask", "--workers", "1", "-k", "10",
                 "--qi", "age,zip", "--sensitive", "disease", "--id", "id", "--insensitive",
                 "*", "-o", out, "--report", out / "r.html")
    assert inside.exit_code == 2 and "inside the output folder" in inside.output


# -- item 2: the heuristic status on the console and in --json --------------------------------


def test_a_heuristic_release_is_never_passed_on_the_console(quarters: list[Path],
                                                            tmp_path: Path) -> None:
    args = ["anonymize", quarters[0], "--method", "randomized", "--threshold", "0",
            "--accept-heuristic", "--qi", "age", "--sensitive", "disease", "--id", "id",
            "--insensitive", "*"]
    shown = run(*args, "-o", tmp_path / "a.csv")
    assert shown.exit_code == 0 and "status: NO FORMAL GUARANTEE" in shown.output
    as_json = run(*args, "-o", tmp_path / "b.csv", "--json")
    outcome = json.loads(as_json.output[as_json.output.index("{"):])
    assert outcome["status"] == "no formal guarantee" and not outcome["formal_guarantee"]


def test_no_information_left_is_a_warning_line(quarters: list[Path], tmp_path: Path) -> None:
    done = run("anonymize", quarters[0], "-k", "1500", "--qi", "age,sex", "--sensitive",
               "disease", "--id", "id", "--insensitive", "*", "-o", tmp_path / "a.csv")
    assert done.exit_code == 0
    assert "warning: mondrian: every quasi-identifier is fully generalized" in done.output


# -- items 16 and 20: what is printed ----------------------------------------------------------


def test_publish_and_show_print_what_a_measure_means(quarters: list[Path],
                                                     tmp_path: Path) -> None:
    history = tmp_path / "h.db"
    done = publish(history, quarters[0], tmp_path / "r1.csv", "ke")
    line = "PASS (k,e)-anonymity (k=3, e=2000): measured min(distinct/k, range/e) = 1, " \
           "required min(distinct/k, range/e) >= 1"
    assert line in done.output
    assert line in run("release", "show", "ke", "1", "--history", history).output


def test_console_numbers_are_rounded_thresholds_exact(quarters: list[Path],
                                                      tmp_path: Path) -> None:
    done = run("anonymize", quarters[0], "--qi", "age,zip", "--sensitive", "disease", "--id",
               "id", "--insensitive", "*", "-o", tmp_path / "a.csv", "--model",
               "entropy-l=1.7", "--model", "beta=1.4939728988278327", "-k", "5")
    assert done.exit_code == 0, done.output
    measured = re.findall(r"measured \S+ = (\S+), required \S+ \S+ (\S+);", done.output)
    assert measured and all(len(m.rstrip(",").split(".")[-1]) <= 4 or "." not in m
                            for m, _ in measured)
    assert "1.4939728988278327;" in done.output  # the threshold as given


# -- item 11: provenance and a summary first in the audit, kb and check reports ---------------


def test_audit_and_check_reports_have_provenance_and_a_summary_first(
        quarters: list[Path], tmp_path: Path) -> None:
    history = tmp_path / "h.db"
    for n in (1, 2):
        assert publish(history, quarters[n - 1], tmp_path / f"r{n}.csv", "ke").exit_code == 0
    audit = run("release", "audit", "--dataset", "ke", "--history", history, "--report",
                tmp_path / "audit.html")
    assert audit.exit_code == 0, audit.output
    page = (tmp_path / "audit.html").read_text()
    made = section(page, "provenance")
    # (the history's bytes as the audit read them: SQLite may checkpoint when it closes)
    assert re.search(rf"{re.escape(str(history))} \(SHA-256 [0-9a-f]{{64}}\)", made)
    assert "<th>command</th>" in made and anonkit.__version__ in made
    assert page.index('id="summary"') < page.index('id="provenance"') < page.index(
        "Requirements")
    checked = run("check", tmp_path / "r1.csv", "--qi", "age,zip", "--group", "group",
                  "-k", "3", "--report", tmp_path / "check.html")
    assert checked.exit_code == 0, checked.output
    page = (tmp_path / "check.html").read_text()
    header = page[:page.index("</header>")]
    assert sha256(tmp_path / "r1.csv") in header and "command" in header
    assert page.index('id="summary"') < page.index('id="verdicts"')


@pytest.mark.slow
def test_the_kb_report_summarises_why_paths_were_not_released(tmp_path: Path) -> None:
    sys.path.insert(0, str(FIXTURES))
    from subjects.generators import shipping

    raw = tmp_path / "raw.csv"
    shipping(600, 2).to_csv(raw, index=False)
    program = f"{FIXTURES / 'subjects' / 'shipping.py'}:shipping_cost"
    done = run("testdata", "--program", program, "--data", raw, "-k", "40", "-o",
               tmp_path / "out.csv", "--report", tmp_path / "kb.html", "--seed", "1",
               "--type", "postcode=str")
    assert done.exit_code == 0, done.output
    page = (tmp_path / "kb.html").read_text()
    summary = section(page, "summary")
    assert "Why paths were not released" in summary
    counted = [int(n.replace(",", "")) for n in re.findall(
        r"<tr><td>[^<]*</td><td>([\d,]+)</td><td>[\d,]+</td></tr>", summary)]
    not_released = int(re.search(r"paths not released</th><td>([\d,]+)<",  # type: ignore[union-attr]
                                 summary).group(1).replace(",", ""))
    assert counted and sum(counted) == not_released
    assert sha256(raw) in section(page, "provenance")
    assert page.index('id="summary"') < page.index("<details>")  # the paths collapsed
    assert pd.read_csv(tmp_path / "out.csv").shape[0] > 0
