"""The report's charts as inline SVG (issue 25: a preview of Adult in under a second): round
ticks on every axis kind, escaped text, readable sizes, a tooltip per bar, the whole of a
shortened label kept, dates on a calendar axis, and no matplotlib for a report without a
code tree. In a browser: no chart text outside its chart at 1280 px."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonkit.datasets import load_adult, make_census
from anonkit.methods.mondrian import Mondrian
from anonkit.report import plots, render_report
from anonkit.report.svg import date_ticks, log_ticks, nice_ticks, text_width

#: the smallest text a reader at 1280 px should have to read, in CSS px
MIN_TEXT_PX = 11
#: the page's content width at 1280 px: 1,120 px less the page's and a card's padding
CONTENT_PX = 1120 - 2 * 24 - 2 * 19


def _is_round(step: float) -> bool:
    mantissa = step / 10 ** np.floor(np.log10(step))
    return any(np.isclose(mantissa, m) for m in (1, 2, 2.5, 5, 10))


@pytest.mark.parametrize(("lo", "hi"), [(0, 1), (0, 0.137), (16.5, 90.5), (-3, 1234),
                                        (0, 1e-4), (1e6, 1.00002e6)])
def test_nice_ticks_are_round_evenly_spaced_and_inside(lo: float, hi: float) -> None:
    ticks = nice_ticks(lo, hi, bins=6)
    assert 2 <= len(ticks) <= 8
    assert all(lo - 1e-9 * abs(hi) <= t <= hi + 1e-9 * abs(hi) for t in ticks)
    steps = np.diff(ticks)
    assert np.allclose(steps, steps[0]) and _is_round(float(steps[0]))


def test_whole_number_ticks_for_counts() -> None:
    for hi in (1.08, 3.2, 259.2, 1600.0):
        ticks = nice_ticks(0, hi, bins=6, integer=True)
        assert ticks and all(float(t).is_integer() for t in ticks)
    assert nice_ticks(0, 259.2, bins=6, integer=True)[:3] == [0, 50, 100]


def test_log_ticks_are_one_two_five() -> None:
    assert log_ticks(9, 530) == [10, 20, 50, 100, 200, 500]
    assert log_ticks(0.9, 2e6) == [1, 10, 100, 1000, 10000, 100000, 1000000]


def test_date_ticks_follow_the_calendar() -> None:
    day = np.datetime64("1970-01-01")

    def days(text: str) -> float:
        return float((np.datetime64(text) - day).astype(int))

    positions, labels = date_ticks(days("1931-05-03"), days("2004-11-20"))
    assert labels == ["1940", "1950", "1960", "1970", "1980", "1990", "2000"]
    assert positions[0] == days("1940-01-01")
    _, labels = date_ticks(days("2023-01-10"), days("2023-12-20"))
    assert all(re.fullmatch(r"2023-\d\d", t) for t in labels) and 3 <= len(labels) <= 7
    _, labels = date_ticks(days("2023-03-01"), days("2023-03-20"))
    assert all(re.fullmatch(r"2023-03-\d\d", t) for t in labels)


def test_text_width_grows_with_the_text() -> None:
    assert text_width("WWW", 12) > text_width("iii", 12)
    assert text_width("Married-civ-spouse", 12) > text_width("Married", 12)
    assert text_width("abc", 24) == pytest.approx(2 * text_width("abc", 12))


def _charts(data: pd.DataFrame) -> list[plots.Chart]:
    sizes = data.groupby(["sex", "race"]).size().to_numpy()
    return [plots.class_size_plot(sizes, 5), plots.risk_plot(sizes, 0.2),
            plots.ncp_plot({"sex": 0.0, "race": 0.4}, 0.2),
            plots.qi_plot(data["age"], data["age"]),
            plots.qi_plot(data["education"], data["education"]),
            plots.sensitive_plot(data["salary-class"], np.zeros(len(data), dtype=int), 1)]


def test_every_chart_fits_the_page_with_readable_text_and_a_tip_per_bar() -> None:
    for chart in _charts(load_adult().data.head(2000)):
        assert chart.width <= CONTENT_PX  # never shrunk at 1280 px
        sizes = [float(s) for s in re.findall(r'font-size="([\d.]+)"', chart.body)]
        assert sizes and min(sizes) >= MIN_TEXT_PX
        bars = re.findall(r"<rect [^>]*>(.*?)</rect>", chart.body)
        assert bars and all(re.fullmatch(r"<title>[^<]+</title>", b) for b in bars)
        assert chart.body.count("<g") == chart.body.count("</g>")


def test_a_shortened_label_keeps_its_whole_text_as_a_tip() -> None:
    long = "a label far longer than any bar chart has room for, " * 2
    values = pd.Series([long] * 3 + ["short"])
    body = plots.qi_plot(values, values).body
    shown = re.search(r'<text class="category"[^>]*><title>([^<]+)</title>([^<]+)</text>', body)
    assert shown is not None
    assert html.unescape(shown.group(1)) == " ".join(long.split())
    assert shown.group(2).endswith("…") and len(shown.group(2)) == plots.LABEL_CHARS


def test_chart_text_is_escaped() -> None:
    values = pd.Series(["<script>alert(1)</script>", 'a "quoted" & <b>bold</b>', "x"] * 5)
    chart = plots.qi_plot(values, values)
    assert "<script" not in chart.body and "<b>" not in chart.body
    assert "&lt;script&gt;" in chart.body
    markup = chart.markup('<img src=x onerror="alert(1)">')
    assert "<img" not in markup and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in markup


def test_a_date_column_is_drawn_on_a_calendar_axis() -> None:
    census = make_census(2000).data
    body = plots.qi_plot(census["birth_date"], census["birth_date"]).body
    ticks = re.findall(r'text-anchor="middle">(\d{4}(?:-\d\d)?)</text>', body)
    assert len(ticks) >= 3 and all(1900 < int(t[:4]) < 2030 for t in ticks)
    assert re.search(r"<title>\d{4}-\d\d-\d\d – \d{4}-\d\d-\d\d: [\d.<]+% of rows</title>",
                     body)


def test_a_report_without_a_code_tree_never_loads_matplotlib(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from anonkit.datasets import load_adult\n"
        "from anonkit.methods.mondrian import Mondrian\n"
        "from anonkit.report import render_report\n"
        "data = load_adult().data.head(1000)\n"
        "release = Mondrian(k=5).anonymize(data, quasi_identifiers=['age', 'sex'], "
        "sensitive='salary-class', insensitive='*')\n"
        f"render_report(release, data, {str(tmp_path / 'r.html')!r})\n"
        "print(any(m.startswith('matplotlib') for m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
    assert (tmp_path / "r.html").stat().st_size > 10_000


CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")
def test_no_chart_text_leaves_its_chart_in_a_browser(tmp_path: Path) -> None:
    """The label margins are laid out from estimated text widths: in a real browser at
    1280 px, every text of every chart is inside its chart, and charts are not shrunk."""
    sync_api = pytest.importorskip("playwright.sync_api")
    data = load_adult().data
    release = Mondrian(k=10).anonymize(data, quasi_identifiers=load_adult().quasi_identifiers,
                                       sensitive="salary-class", insensitive="*")
    path = render_report(release, data, tmp_path / "r.html")
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                         args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(path.as_uri())
            outside = page.evaluate("""() => {
                const out = [];
                for (const svg of document.querySelectorAll('svg.chart')) {
                    const box = svg.getBoundingClientRect();
                    for (const t of svg.querySelectorAll('text')) {
                        const r = t.getBoundingClientRect();
                        if (r.left < box.left - 1 || r.right > box.right + 1 ||
                            r.top < box.top - 1 || r.bottom > box.bottom + 1)
                            out.push(t.textContent);
                    }
                }
                return out;
            }""")
            scale = page.evaluate("""() => Math.min(...[...document.querySelectorAll(
                'svg.chart')].map(s => s.getBoundingClientRect().width /
                s.viewBox.baseVal.width))""")
        finally:
            browser.close()
    assert outside == []
    assert scale == pytest.approx(1.0)
