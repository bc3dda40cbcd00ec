"""Issue 22, the sign-off report's pieces: honest badges (item 2), readable code trees
(item 10), one page skeleton with provenance and a summary first (item 11), display
rounding (item 20)."""

from __future__ import annotations

import hashlib
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import anonkit
from anonkit._util.numbers import display_number, measured_text
from anonkit.errors import NoInformationWarning
from anonkit.models.base import Verdict
from anonkit.report import render_report
from anonkit.report.page import PLAIN_STYLE, plain_report, provenance
from anonkit.report.plots import CSS_PX_PER_INCH, WIDTH
from anonkit.report.recorded import ReleaseFacts, render_recorded_report
from anonkit.report.tree import MAX_TERMINALS, plot_tree, tree_section
from anonkit.testdata.report import reason_kind

#: the smallest text a reader at 1280 px should have to read, in CSS px
MIN_TEXT_PX = 11


def _banner(page: str) -> str:
    return page[page.index('<div class="status">'):page.index("</header>")]


def _census(n: int = 1_500) -> pd.DataFrame:
    return anonkit.make_census(n).data


# -- item 2: a heuristic release is never PASSED ---------------------------------------------


def test_a_heuristic_release_gets_no_formal_guarantee_not_passed(tmp_path: Path) -> None:
    census = _census()
    release = anonkit.anonymize(census, "randomized", quasi_identifiers=["age"],
                                sensitive="disease", identifiers=["id"], insensitive="*",
                                threshold=0.0, accept_heuristic=True)
    assert release.passed and release.status == "no formal guarantee"
    assert "status: NO FORMAL GUARANTEE" in release.summary()
    page = render_report(release, census, tmp_path / "r.html").read_text()
    banner = _banner(page)
    assert "NO FORMAL GUARANTEE" in banner and "banner warn" in banner
    assert "PASSED" not in banner and "banner pass" not in banner


def test_a_formal_release_keeps_its_green_passed(tmp_path: Path) -> None:
    census = _census()
    release = anonkit.anonymize(census, "mondrian", quasi_identifiers=["age", "zip"],
                                sensitive="disease", identifiers=["id"], insensitive="*", k=5)
    assert release.status == "passed"
    banner = _banner(render_report(release, census, tmp_path / "r.html").read_text())
    assert "banner pass" in banner and "NO FORMAL GUARANTEE" not in banner
    assert "WARNING" not in banner


def test_every_qi_fully_generalized_warns_in_python_and_in_the_report(tmp_path: Path) -> None:
    census = _census(300)
    with pytest.warns(NoInformationWarning, match="every quasi-identifier is fully"):
        release = anonkit.anonymize(census, "mondrian", quasi_identifiers=["age", "sex"],
                                    sensitive="disease", identifiers=["id"],
                                    insensitive="*", k=300)
    banner = _banner(render_report(release, census, tmp_path / "r.html").read_text())
    assert "banner pass" in banner and "WARNING: every quasi-identifier" in banner
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoInformationWarning)  # one QI keeps information
        anonkit.anonymize(census, "mondrian", quasi_identifiers=["age", "sex"],
                          sensitive="disease", identifiers=["id"], insensitive="*", k=5)


def test_a_recorded_heuristic_release_is_amber_too(tmp_path: Path) -> None:
    verdict = Verdict("k-anonymity", {"k": 1}, True, 1.0, 1.0, 0, 1, 0, 3, measure="k")
    facts = ReleaseFacts("randomized", "generalized", [verdict], np.array([1, 2, 3]), ["age"],
                         [], 6, parameters={"guarantee": "none: a heuristic"},
                         formal_guarantee=False)
    banner = _banner(render_recorded_report(facts, tmp_path / "r.html").read_text())
    assert "NO FORMAL GUARANTEE" in banner and "PASSED" not in banner


# -- item 10: the truncated tree, readable ----------------------------------------------------


def _text_px(fig: object) -> list[float]:
    return [t.get_fontsize() * CSS_PX_PER_INCH / 72 for ax in fig.axes  # type: ignore[attr-defined]
            for t in [*ax.texts, ax.title] if t.get_text()]


def test_a_large_huffman_tree_is_drawn_truncated_and_readable() -> None:
    census = _census(6_000)
    release = anonkit.anonymize(census, "huffman", quasi_identifiers=["age", "zip"],
                                sensitive="disease", identifiers=["id"], insensitive="*", k=5)
    tree = release.cut_tree
    assert tree is not None and tree.n_symbols > 1_000  # a tree of thousands of symbols
    fig = plot_tree(tree, tree.owner, values=tree.symbol_values)
    ax = fig.axes[0]
    lines = [t.get_text() for t in ax.texts if "rows" in t.get_text()]
    assert 2 <= len(lines) <= MAX_TERMINALS  # one line per end node, never thousands
    assert min(_text_px(fig)) >= MIN_TEXT_PX
    assert fig.get_figwidth() <= WIDTH  # never shrunk to fit the page
    # each end node names the values it covers: an age range, then the zip codes
    assert all(re.match(r"\d+(–\d+)?; ", line) for line in lines), lines[:3]
    # and the rows of every end node add up to the table
    rows = [int(re.search(r"·\s+([\d,]+) rows", line).group(1).replace(",", ""))  # type: ignore[union-attr]
            for line in lines]
    assert sum(rows) == len(census)


def test_a_small_alphabetic_tree_shows_every_released_node_with_its_range() -> None:
    census = _census(400)
    release = anonkit.anonymize(census, "alphabetic", quasi_identifiers=["age"],
                                sensitive="disease", identifiers=["id"], insensitive="*",
                                k=25)
    tree = release.cut_tree
    assert tree is not None
    released = np.flatnonzero(tree.owner == np.arange(len(tree.owner)))
    above = np.flatnonzero(tree.owner < 0)
    fig = plot_tree(tree, tree.owner, values=tree.symbol_values)
    lines = [t.get_text() for t in fig.axes[0].texts if "rows" in t.get_text()]
    assert len(lines) == len(released)  # nothing below the cut is drawn
    drawn = sum(len(c.get_offsets()) for c in fig.axes[0].collections)
    assert drawn == len(released) + len(above)
    # in symbol order, the ranges are disjoint and increasing (an alphabetic tree)
    bounds = [tuple(int(x) for x in re.match(r"(\d+)(?:–(\d+))?", line).groups(  # type: ignore[union-attr]
        default="-1")) for line in lines]
    highs = [hi if hi >= 0 else lo for lo, hi in bounds]
    lows = [lo for lo, _ in bounds]
    assert all(h < lo for h, lo in zip(highs, lows[1:], strict=False))
    assert min(_text_px(fig)) >= MIN_TEXT_PX
    section = tree_section(release)
    assert f"the {len(released)} released nodes" in section


# -- item 11: one skeleton, provenance and a summary first -------------------------------------


def test_provenance_names_inputs_with_their_digest(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("a\n1\n")
    rows = dict(provenance([("data", data)], command="anonkit x", more={"dataset": "d"}))
    assert rows["data"] == f"{data} (SHA-256 {hashlib.sha256(data.read_bytes()).hexdigest()})"
    assert rows["command"] == "anonkit x" and rows["dataset"] == "d"
    assert rows["anonkit"] == anonkit.__version__ and rows["made"]
    page = plain_report("T <x>", status="<p>s</p>", summary="<p>sum</p>",
                        sections=["<section id='later'>later</section>"],
                        made=list(rows.items()), stylesheet=PLAIN_STYLE)
    assert "T &lt;x&gt;" in page
    assert page.index('id="summary"') < page.index('id="provenance"') < page.index("later")


def test_reasons_count_together_whatever_their_numbers() -> None:
    assert reason_kind("unsatisfiable: the path has 3 raw tuple(s), fewer than k=5") == \
        reason_kind("unsatisfiable: the path has 1 raw tuple(s), fewer than k=20")
    assert reason_kind("P-F unsatisfiable: field 'zip' is pinned") == \
        reason_kind("P-F unsatisfiable: field 'age' is pinned")


# -- item 20: measured numbers rounded for reading, thresholds exact --------------------------


@pytest.mark.parametrize(("value", "shown"), [
    (5.000000000000001, "5"), (1.4939728988278327, "1.494"), (30162, "30162"),
    (30162.0, "30162"), (0.000123456, "0.0001235"), (float("inf"), "inf"), (2.5, "2.5")])
def test_display_number(value: float, shown: str) -> None:
    assert display_number(value) == shown


def test_a_failing_level_is_never_rounded_onto_its_threshold() -> None:
    assert measured_text(0.999999999, 1, passed=False) == "0.999999999"
    assert measured_text(1.99999999999, 2, passed=True) == "2"  # within the tolerance
    assert measured_text(1.99999999999, 2, passed=False) == "1.99999999999"
    assert measured_text(2.00004, 2.00003, passed=True) == "2.00004"  # same side, always
    verdict = Verdict("entropy l-diversity", {"l": 5}, True, 5.000000000000001, 5.0, 0, 4,
                      0, 3, measure="exp(entropy)")
    assert "measured exp(entropy) = 5, required exp(entropy) >= 5" in str(verdict)
    exact = Verdict("β-likeness", {"beta": 1.4939728988278}, False, 1.4939728988278327,
                    1.4939728988278, 0, 4, 1, 3, measure="β", comparison="<=")
    assert "measured β = 1.494, required β <= 1.4939728988278" in str(exact)


def test_write_report_follows_the_output_rules(tmp_path: Path) -> None:
    from anonkit.jobs import write_report

    census = _census(400)
    source = tmp_path / "in.csv"
    census.to_csv(source, index=False)
    release = anonkit.anonymize(census, "mondrian", quasi_identifiers=["age", "zip"],
                                sensitive="disease", identifiers=["id"], insensitive="*", k=5)
    before = source.read_bytes()
    with pytest.raises(anonkit.InputError, match="input"):
        write_report(release, census, source, job={"input": str(source)})
    assert source.read_bytes() == before
    with pytest.raises(anonkit.InputError, match="does not exist"):
        write_report(release, census, tmp_path / "no" / "r.html")
    written = write_report(release, census, tmp_path / "r.html", job={"input": str(source)},
                           provenance={"input": str(source)})
    assert "PASSED" in written.read_text()
