"""HTML reports: every section present, self-contained (inline SVG charts, nothing fetched),
data escaped, balanced markup, written atomically, matplotlib imported only for a code
tree."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonkit.checker import check
from anonkit.datasets import load_adult, make_census
from anonkit.methods.mondrian import Mondrian
from anonkit.report import render_check_report, render_report
from complexity import GROWTH_BOUND, growth

QIS = ["age", "sex", "race", "education", "marital-status"]
SECTIONS = ["summary", "verdicts", "classes", "qis", "sensitive", "risk", "utility",
            "glossary"]
EVIL = "<script>alert('x')</script>"


@pytest.fixture(scope="module")
def adult_head() -> pd.DataFrame:
    return load_adult().data.head(3000)


@pytest.fixture(scope="module")
def result(adult_head):
    return Mondrian(k=5).anonymize(adult_head, quasi_identifiers=QIS, sensitive="salary-class",
                                   insensitive="*")


@pytest.fixture(scope="module")
def page(result, adult_head, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("report") / "report.html"
    assert render_report(result, adult_head, path) == path
    return path.read_text(encoding="utf-8")


class _Balance(HTMLParser):
    """Records tags closed out of order (void elements excluded)."""

    VOID = frozenset({"meta", "img", "br", "hr", "link", "input", "source", "wbr"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def assert_well_formed(text: str) -> None:
    parser = _Balance()
    parser.feed(text)
    assert parser.errors == [] and parser.stack == []


def assert_self_contained(text: str) -> None:
    # no resource may be fetched: no scripts, stylesheets, fonts or remote images
    assert "<script" not in text.lower()
    assert "<link" not in text.lower()
    assert "@import" not in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text, re.I)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", text, re.I)
    for src in re.findall(r'<img[^>]*\ssrc="([^"]*)"', text):
        assert src.startswith("data:image/png;base64,")  # a code tree's picture
    for svg in re.findall(r"<svg.*?</svg>", text, re.S):  # charts draw, never link
        assert "<image" not in svg and "<foreignObject" not in svg and "href" not in svg


#: a chart: an inline SVG with its accessible name, as its first child too (a tooltip)
CHART = re.compile(r'<svg class="chart" [^>]*role="img" aria-label="([^"]+)"[^>]*>'
                   r"<title>([^<]+)</title>")


def test_report_has_every_section(page, result) -> None:
    for anchor in SECTIONS:
        assert f'<section id="{anchor}">' in page
        assert f'href="#{anchor}"' in page
    for name in QIS:
        assert f"<h3>{name}</h3>" in page
    assert "PASSED" in page and "k-anonymity" in page
    assert f"{len(result.data):,}" in page  # rows in / out
    # metrics shown as computed
    assert f"{result.metrics['gcp'] * 100:.2f} %" in page
    assert f"{result.metrics['prosecutor.max'] * 100:.2f} %" in page
    # weakest class values of the verdict: one line per QI
    assert '<span class="key">sex</span>' in page and '<span class="key">age</span>' in page
    assert_well_formed(page)


def test_report_is_self_contained(page) -> None:
    assert_self_contained(page)
    charts = CHART.findall(page)
    # class sizes, one per QI, one per sensitive attribute, risk, NCP
    assert len(charts) == page.count("<svg") == 1 + len(QIS) + 1 + 2
    assert all(label == title for label, title in charts)
    assert ("distribution of age", "distribution of age") in charts
    assert "<img" not in page  # no picture: a code tree only
    assert "<style>" in page and ".card" in page  # the stylesheet is inlined


def test_report_escapes_data(tmp_path) -> None:
    rng = np.random.default_rng(0)
    n = 60
    df = pd.DataFrame({
        "age": rng.integers(20, 70, n),
        EVIL: rng.choice([EVIL, "$5$ & <b>bold</b>", "a $ sign"], n),  # name and values
        "disease": rng.choice(["flu", "cold", "<img src=x onerror=alert(1)>"], n),
    })
    result = Mondrian(k=5).anonymize(df, quasi_identifiers=["age", EVIL], sensitive="disease")
    path = render_report(result, df, tmp_path / "evil.html", title="<i>title</i> & more")
    text = path.read_text(encoding="utf-8")
    assert "<script" not in text
    assert "<b>bold" not in text and "<i>title" not in text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text
    assert "&lt;i&gt;title&lt;/i&gt; &amp; more" in text
    assert_self_contained(text)
    assert_well_formed(text)


def test_report_written_atomically(result, adult_head, tmp_path, monkeypatch) -> None:
    path = tmp_path / "report.html"
    render_report(result, adult_head, path)
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    before = path.read_bytes()

    from anonkit.report import plots

    def broken(*args, **kwargs):
        raise RuntimeError("drawing failed")

    monkeypatch.setattr(plots, "qi_plot", broken)
    with pytest.raises(RuntimeError, match="drawing failed"):
        render_report(result, adult_head, path)
    assert path.read_bytes() == before  # the old report is intact
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temp file left


def test_report_needs_the_original_columns(result, adult_head, tmp_path) -> None:
    from anonkit.errors import InputError

    with pytest.raises(InputError, match="'race'"):
        render_report(result, adult_head.drop(columns=["race"]), tmp_path / "r.html")
    assert list(tmp_path.iterdir()) == []


def test_report_on_dates_means_and_missing_values(tmp_path) -> None:
    ds = make_census(3000)
    df = ds.data
    df.loc[df.index[:40], "occupation"] = None
    qis = ["age", "birth_date", "zip", "occupation", "income"]
    result = Mondrian(k=10, generalization={"income": "mean"}, allow_missing=True).anonymize(
        df, quasi_identifiers=qis, sensitive=ds.sensitive, insensitive="*")
    text = render_report(result, df, tmp_path / "census.html").read_text(encoding="utf-8")
    for name in qis:
        assert f"<h3>{name}</h3>" in text
    assert_self_contained(text)
    assert_well_formed(text)


def test_check_report(result, tmp_path) -> None:
    report = check(result.data, QIS, "salary-class", ["k=5", "l=1", "k=50"])
    path = render_check_report(report, tmp_path / "check.html")
    text = path.read_text(encoding="utf-8")
    assert [p.name for p in tmp_path.iterdir()] == ["check.html"]
    for anchor in ("summary", "verdicts", "classes", "risk"):
        assert f'<section id="{anchor}">' in text
    assert "FAILED: 1 of 3" in text  # k=50 does not hold
    assert text.count('class="pill pass"') == 2 and text.count('class="pill fail"') == 1
    assert "distinct l-diversity" in text
    assert len(CHART.findall(text)) == 2
    assert_self_contained(text)
    assert_well_formed(text)


def test_import_does_not_load_matplotlib() -> None:
    code = ("import sys, anonkit.report, anonkit.metrics; "
            "print(any(m.startswith('matplotlib') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_adult_report_grows_linearly(tmp_path) -> None:
    """The whole of Adult (30,162 rows) against a tenth of it: at most GROWTH_BOUND times
    as long (its speed, < 3 s, is a benchmark figure, not a test)."""
    ds = load_adult()
    small_data = ds.data.head(len(ds.data) // 10)
    results = [Mondrian(k=5).anonymize(data, quasi_identifiers=ds.quasi_identifiers,
                                       sensitive=ds.sensitive, hierarchies=ds.hierarchies)
               for data in (small_data, ds.data)]
    ratio = growth(lambda: render_report(results[0], small_data, tmp_path / "small.html"),
                   lambda: render_report(results[1], ds.data, tmp_path / "adult.html"),
                   runs=1)
    assert ratio < GROWTH_BOUND, ratio
    assert Path(tmp_path / "adult.html").stat().st_size < 3_000_000


# -- what a steward's first day found in the report ------------------------------------------


def test_the_original_panel_shows_the_most_frequent_values() -> None:
    """A numeric column with a few more values than bars (20): the bars are the most
    frequent values, in value order -- not the lowest values, cut."""
    from anonkit.report import plots

    # value 20 is the most frequent and the largest: a cut by value order would hide it
    values = pd.Series(np.repeat(np.arange(1, 21), [1] * 19 + [50]))
    original = _panel_labels(plots.qi_plot(values, values).body)[0]
    assert "20" in original and original[-1].endswith("other values")
    shown = [int(x) for x in original[:-1]]
    assert shown == sorted(shown)


def test_share_labels_never_round_a_present_category_to_zero() -> None:
    from anonkit.report.plots import share_text

    assert share_text(0.0) == "0.0%" and share_text(1 / 30162) == "<0.1%"
    assert share_text(0.0005) == "0.1%" and share_text(0.256) == "25.6%"


def _panel_labels(svg: str) -> list[list[str]]:
    """The category labels of each panel of a chart, as drawn (unescaped)."""
    import html

    return [[html.unescape(t) for t in re.findall(
        r'<text class="category"[^>]*>(?:<title>[^<]*</title>)?([^<]*)</text>', panel)]
        for panel in svg.split('<g class="panel">')[1:]]


def test_the_class_size_axis_reaches_k() -> None:
    """All classes far above k: the axis still reaches k, where the dashed line is."""
    from anonkit.report import plots

    for sizes in (np.array([40, 41, 45]), np.arange(100, 400)):
        lo, hi, _ = plots.size_axis(sizes, 10)
        assert lo < 10 < hi
        # the dashed line, in both panels, inside the plot area (over its x axis line)
        body = plots.class_size_plot(sizes, 10).body
        dashed = [float(x) for x in re.findall(r'<line x1="([\d.]+)"[^>]*dasharray', body)]
        axes = [(float(x1), float(x2)) for x1, y1, x2, y2 in re.findall(
            r'<line x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)" '
            r'stroke="#c5ccd3"', body)
            if y1 == y2 and float(x2) - float(x1) > 100]
        assert len(dashed) == len(axes) == 2 and "required ≥ 10" in body
        assert all(x1 < x < x2 for x, (x1, x2) in zip(dashed, axes, strict=True))


def test_sensitive_section_names_the_weakest_classes(page, result) -> None:
    section = page[page.index('<section id="sensitive">'):]
    section = section[:section.index("</section>")]
    assert "<h3>salary-class</h3>" in section and "Weakest classes" in section
    for measure in ("l: distinct values", "t: distance (EMD)", "δ: max |log ratio|"):
        assert section.count(measure) == 3
    # the weakest class for l holds the fewest distinct values of any class
    from anonkit.checker import check

    report = check(result.data, QIS, "salary-class", ["l=1"])
    fewest = int(report.verdicts[0].measured)
    first_l_row = section[section.index("l: distinct values"):]
    assert f'<td class="num">{fewest}</td>' in first_l_row[:200]


def test_labels_from_several_hierarchy_levels_are_explained(tmp_path) -> None:
    ds = load_adult()
    data = ds.data.head(3000)
    release = Mondrian(k=10).anonymize(data, quasi_identifiers=QIS, sensitive="salary-class",
                                       hierarchies={"education": ds.hierarchies["education"]},
                                       insensitive="*")
    text = render_report(release, data, tmp_path / "r.html").read_text(encoding="utf-8")
    card = text[text.index("<h3>education</h3>"):]
    card = card[:card.index("</div></div>") + 200]
    levels = {lvl for lvl in range(ds.hierarchies["education"].height)
              if set(release.data["education"].astype(str)) &
              {str(x) for x in ds.hierarchies["education"].labels[:, lvl]}}
    assert len(levels) >= 2  # this release does mix levels
    assert f"Labels from {len(levels)} levels of the hierarchy" in text


def test_the_report_header_names_files_digest_version_and_command(tmp_path) -> None:
    import hashlib

    from click.testing import CliRunner

    from anonkit import __version__
    from anonkit.cli import main

    src = tmp_path / "in.csv"
    load_adult().data.head(500).to_csv(src, index=False)
    out, report = tmp_path / "out.csv", tmp_path / "r.html"
    result = CliRunner().invoke(main, ["anonymize", str(src), "-o", str(out), "--qi",
                                       ",".join(QIS), "--sensitive", "salary-class",
                                       "--insensitive", "*", "-k", "5", "--report",
                                       str(report)])
    assert result.exit_code == 0, result.output
    text = report.read_text(encoding="utf-8")
    head = text[:text.index("</header>")] if "</header>" in text else text[:20000]
    assert hashlib.sha256(out.read_bytes()).hexdigest() in head
    assert str(src) in head and str(out) in head and __version__ in head
    # (the command shown is sys.argv: pytest's own under CliRunner)
    assert 'command <span class="mono">anonkit' in head
    assert "not yet written" not in text


def test_the_report_warns_that_unchanged_columns_link_releases(tmp_path) -> None:
    from click.testing import CliRunner

    from anonkit.cli import main

    src = tmp_path / "in.csv"
    load_adult().data.head(300).to_csv(src, index=False)
    report = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["anonymize", str(src), "-o", str(tmp_path / "o.csv"),
                                       "--qi", "age,sex", "--sensitive", "salary-class",
                                       "--insensitive", "race,education", "--drop",
                                       "marital-status,native-country,workclass,occupation",
                                       "-k", "5", "--report", str(report)])
    assert result.exit_code == 0, result.output
    text = report.read_text(encoding="utf-8")
    row = text[text.index("Released unchanged"):][:400]
    assert "race, education" in row and "link a person's rows across releases" in row


def test_the_parameters_show_what_was_given_and_no_seed_for_an_unseeded_run(
        tmp_path: Path) -> None:
    """Issue 22, item 9: -k 10 showed 'k —' (it travels as the model k=10) and an unseeded
    run 'seed 0'."""
    from click.testing import CliRunner

    from anonkit.cli import main

    source = tmp_path / "in.csv"
    make_census(300, seed=2).data.to_csv(source, index=False)
    for seeded in (False, True):
        report = tmp_path / f"r{seeded}.html"
        method = ["--method", "ke", "--sensitive", "income", "-e", "1000", "--seed", "4"] \
            if seeded else []
        result = CliRunner().invoke(main, [
            "anonymize", str(source), "-o", str(tmp_path / f"o{seeded}.csv"), "--qi", "age,zip",
            "--id", "id", "--insensitive", "*", "-k", "10", "--report", str(report), *method])
        assert result.exit_code == 0, result.output
        text = re.sub(r"<[^>]+>", " ", report.read_text(encoding="utf-8"))
        text = re.sub(r"\s+", " ", text)
        assert " k — " not in text
        assert ("Randomness seeded" in text) == seeded and " seed 0 " not in text
        if not seeded:
            assert "models k=10" in text
