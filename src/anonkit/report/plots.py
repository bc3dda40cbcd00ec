"""The report's charts, as inline SVG (:mod:`anonkit.report.svg`).

Every chart of the release and check reports is a bar chart, a histogram or a class-size
distribution: drawn as SVG by hand they cost milliseconds, where matplotlib spent about a
second of the report of UCI Adult laying out and rasterising them (issue 25: the web app's
preview must be ready in under a second). Each bar carries its figure as a tooltip, and a
shortened label its whole text.

matplotlib stays for the one picture that earns it, the code tree of a huffman or
alphabetic release (:mod:`anonkit.report.tree`): :func:`style`, :func:`to_chart` and
:func:`plot_text` below. It is imported only inside them (about half a second to import):
``import anonkit.report`` stays cheap, and a report without a code tree never loads it.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

from anonkit._util.numbers import display_number
from anonkit.report.svg import (
    TICK_PX,
    TITLE_PX,
    VALUE_PX,
    Chart,
    Scale,
    Svg,
    date_ticks,
    log_ticks,
    nice_ticks,
    text_width,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["Chart", "class_size_plot", "ncp_plot", "qi_plot", "risk_plot", "sensitive_plot",
           "share_text"]

ORIGINAL = "#8795a8"
RELEASED = "#2f6db5"
RISK = "#d9822b"
ALERT = "#b42318"
INK = "#1f2933"
MUTED = "#616e7c"
OTHER = "#c5ccd3"
TOP = 15  # bars per categorical panel; the rest are summed into one "other" bar
LABEL_CHARS = 34
CONTINUOUS_MIN_DISTINCT = 26  # numeric/date columns with more distinct values: histogram

# Layout, in CSS px. A chart is as wide as a card's content (1,034 px in a window 1,280 px
# wide or wider; shrunk, text and all, on narrower screens).
CHART_WIDTH = 1032
TOP_MARGIN = 34  # panel title
BOTTOM_MARGIN = 50  # tick labels and axis label
RIGHT_MARGIN = 20
GAP = 45  # between two panels, besides the right panel's own label margin
NUMBER_MARGIN = 75  # y tick labels like "12.5%" plus the y axis label
ROW = 21  # per horizontal bar
MISSING_ROOM = 1.12  # a histogram's headroom for its "+ x% missing" note


# --------------------------------------------------------------------------- text


def label_text(value: object) -> str:
    """A value as one line of text (``missing`` for a missing one)."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NaT:
        return "missing"
    return " ".join(str(value).split())  # no line breaks or tabs inside a label


def short_text(text: str, limit: int = LABEL_CHARS) -> str:
    """``text`` shortened to ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def share_text(share: float) -> str:
    """A share as a percentage with one decimal; a non-zero share below 0.05 % is never
    shown as 0.0 %."""
    if 0 < share < 0.0005:
        return "<0.1%"
    return f"{share:.1%}"


def _pct_tick(x: float) -> str:
    return f"{x * 100:.6g}%"


def _pct_text(x: float) -> str:
    return f"{x * 100:.3g}%"


def _count(n: float) -> str:
    return f"{round(n):,}"


# --------------------------------------------------------------------------- panels


def _tick_bins(pixels: float, spacing: float) -> int:
    """How many intervals an axis of ``pixels`` gets: about one per ``spacing`` px."""
    return int(min(9, max(3, pixels // spacing)))


def _axis_number(x: float, largest: float) -> str:
    """A tick label, compact on an axis reaching ``largest``: 250k, 1.5M."""
    if x == 0:
        return "0"
    if largest >= 1e6:
        return f"{x / 1e6:.6g}M"
    if largest >= 1e4:
        return f"{x / 1e3:.6g}k"
    return display_number(x)


def _x_ticks(lo: float, hi: float, pixels: float,
             make: Callable[[int], tuple[list[float], list[str]]], most: int = 9
             ) -> tuple[list[float], list[str]]:
    """The most ticks (``make(bins)``, at most ``most`` intervals) whose labels fit side by
    side on an x axis of ``pixels``, with room between them."""
    ticks: list[float] = []
    labels: list[str] = []
    for bins in range(min(most, _tick_bins(pixels, 45)), 1, -1):
        ticks, labels = make(bins)
        if len(ticks) < 2:
            return ticks, labels
        spacing = (ticks[1] - ticks[0]) / (hi - lo) * pixels
        if max(text_width(t, TICK_PX) for t in labels) + 14 <= spacing:
            break
    return ticks, labels


def _numbers(lo: float, hi: float, *, integer: bool = False
             ) -> Callable[[int], tuple[list[float], list[str]]]:
    largest = max(abs(lo), abs(hi))

    def make(bins: int) -> tuple[list[float], list[str]]:
        ticks = nice_ticks(lo, hi, bins=bins, integer=integer)
        return ticks, [_axis_number(t, largest) if not integer or largest >= 1e4 else _count(t)
                       for t in ticks]
    return make


class _Panel:
    """One plot area of a chart: its box (px) and, once its axes are set, its scales."""

    def __init__(self, svg: Svg, slot: float, left: float, top: float, width: float,
                 height: float) -> None:
        self.svg, self.slot = svg, slot
        self.left, self.top, self.width, self.height = left, top, width, height
        self.right, self.bottom = left + width, top + height
        self.x = Scale(0.0, 1.0, left, width)
        self.y = Scale(0.0, 1.0, top, height, flip=True)

    def begin(self) -> None:
        """Start the panel's group: its texts are kept together, so a reader (or a test)
        can tell the panels of a chart apart."""
        self.svg.group("panel")

    def title(self, text: str) -> None:
        """Above the plot area, from its left edge; moved left (as far as the panel's own
        margin) when it would run past the chart's right edge."""
        room = self.svg.width - 4 - text_width(text, TITLE_PX, bold=True)
        self.svg.text(max(self.slot, min(self.left, room)), self.top - 12, text,
                      size=TITLE_PX, bold=True)

    def x_axis(self, lo: float, hi: float, ticks: Sequence[float], labels: Sequence[str], *,
               label: str = "", log: bool = False, grid: bool = False) -> None:
        self.x = Scale(lo, hi, self.left, self.width, log=log)
        for tick, text in zip(ticks, labels, strict=True):
            px = float(self.x(tick))
            if grid:
                self.svg.grid_line(px, self.top, px, self.bottom)
            self.svg.line(px, self.bottom, px, self.bottom + 4)
            self.svg.text(px, self.bottom + 17, text, color=MUTED, anchor="middle")
        self.svg.line(self.left, self.bottom, self.right, self.bottom)
        if label:
            self.svg.text(self.left + self.width / 2, self.bottom + 38, label, color=MUTED,
                          anchor="middle")

    def y_axis(self, lo: float, hi: float, ticks: Sequence[float], labels: Sequence[str], *,
               label: str = "", grid: bool = True) -> None:
        self.y = Scale(lo, hi, self.top, self.height, flip=True)
        for tick, text in zip(ticks, labels, strict=True):
            py = float(self.y(tick))
            if grid:
                self.svg.grid_line(self.left, py, self.right, py)
            self.svg.line(self.left - 4, py, self.left, py)
            self.svg.text(self.left - 7, py, text, anchor="end", middle=True)
        self.svg.line(self.left, self.top, self.left, self.bottom)
        if label:
            x = self.slot + 12
            self.svg.text(x, self.top + self.height / 2, label, color=MUTED, anchor="middle",
                          rotate=-90.0)

    def share_y(self, top: float, label: str) -> None:
        """A y axis of shares of rows from 0, with percent ticks at round steps."""
        top = top * 1.08 if top > 0 else 1.0
        ticks = [t for t in nice_ticks(0.0, top, bins=_tick_bins(self.height, 30))
                 if t <= 1.0 + 1e-9]
        self.y_axis(0.0, top, ticks, [_pct_tick(t) for t in ticks], label=label)

    def count_y(self, top: float, label: str) -> None:
        """A y axis of counts from 0, whole-number ticks."""
        top = top * 1.08 if top > 0 else 1.0
        ticks = nice_ticks(0.0, top, bins=_tick_bins(self.height, 30), integer=True)
        self.y_axis(0.0, top, ticks, [_count(t) for t in ticks], label=label)

    def vbars(self, x0: np.ndarray, x1: np.ndarray, heights: np.ndarray,
              colors: str | Sequence[str], tips: Sequence[str], *, edge: str | None = None
              ) -> None:
        """Vertical bars from 0 on the panel's scales."""
        left, right = self.x(x0), self.x(x1)
        tops, base = self.y(heights), float(self.y(0.0))
        fills = [colors] * len(tips) if isinstance(colors, str) else list(colors)
        self.svg.rects(left, tops, right - left, base - tops, fills, tips, edge=edge)

    def hbars(self, labels: Sequence[str], values: np.ndarray, colors: Sequence[str],
              upper: float, *, value_color: str = MUTED, value_size: float = VALUE_PX,
              halo: bool = False, tips: Sequence[str] = ()) -> None:
        """Horizontal bars, first on top, labelled on the left (shortened, the whole
        label as a tooltip) and valued on the right; the x scale is 0..``upper``."""
        self.x = Scale(0.0, upper, self.left, self.width)
        n = max(len(labels), 1)
        row = self.height / n
        centres = self.top + (np.arange(len(labels)) + 0.5) * row
        ends = self.x(values)
        self.svg.rects(np.full(len(labels), self.left), centres - 0.35 * row,
                       ends - self.left, np.full(len(labels), 0.7 * row), colors,
                       tips or [f"{t}: {share_text(v)}" for t, v in zip(labels, values,
                                                                          strict=True)])
        for label, centre, end, value in zip(labels, centres, ends, values, strict=True):
            self.svg.text(self.left - 8, centre, short_text(label), anchor="end",
                          middle=True, tip=label, kind="category")
            self.svg.text(end + 3, centre, share_text(value), size=value_size,
                          color=value_color, middle=True, halo=halo)
        self.svg.line(self.left, self.top, self.left, self.bottom)

    def share_x(self, upper: float, label: str = "share of rows") -> None:
        """Percent ticks along the bottom of a horizontal bar panel, with vertical grid."""
        def shares(bins: int) -> tuple[list[float], list[str]]:
            ticks = [t for t in nice_ticks(0.0, upper, bins=bins) if t <= 1.0 + 1e-9]
            return ticks, [_pct_tick(t) for t in ticks]

        ticks, labels = _x_ticks(0.0, upper, self.width, shares, most=6)
        self.x_axis(0.0, upper, ticks, labels, label=label, grid=True)

    def reference(self, value: float, colour: str = ALERT) -> float:
        """A dashed vertical line at ``value``; returns its x (px)."""
        px = float(self.x(value))
        self.svg.line(px, self.top, px, self.bottom, colour, dashed=True)
        return px

    def corner_note(self, text: str) -> None:
        self.svg.text(self.right, self.top + 10, text, size=VALUE_PX, color=MUTED,
                      anchor="end")

    def end(self) -> None:
        self.svg.end()


def _panels(svg: Svg, margins: Sequence[float], bottom: float = BOTTOM_MARGIN
            ) -> list[_Panel]:
    """One row of panels sharing the chart's width, each with its own left margin."""
    free = svg.width - sum(margins) - GAP * (len(margins) - 1) - RIGHT_MARGIN
    each = max(free / len(margins), 50.0)
    panels, x = [], 0.0
    for i, margin in enumerate(margins):
        slot = x + (GAP if i else 0.0)
        panels.append(_Panel(svg, slot, slot + margin, TOP_MARGIN, each,
                             svg.height - bottom - TOP_MARGIN))
        x = slot + margin + each
    return panels


def _label_margin(labels: Sequence[str]) -> float:
    """Left margin (px) for horizontal-bar labels."""
    return 20 + max((text_width(short_text(t), TICK_PX) for t in labels), default=30.0)


# --------------------------------------------------------------------------- class sizes


def _size_edges(lo: int, hi: int) -> np.ndarray:
    return np.unique(np.geomspace(lo, hi + 1, 40).round().astype(np.int64))


def size_axis(sizes: np.ndarray, k: float | None) -> tuple[float, float, bool]:
    """The class-size axis: its limits, and whether it is logarithmic (sizes spread over
    more than 60). It always reaches the required ``k``, so its dashed line is drawn."""
    lo, hi = int(sizes.min()), int(sizes.max())
    if hi - lo <= 60:
        return (min(lo, k if k is not None else lo) - 1.0,
                max(hi, k if k is not None else hi) + 1.0, False)
    edges = _size_edges(lo, hi)
    first, last = float(edges[0]), float(edges[-1])
    return (min(first, k if k is not None else first) / 1.1,
            max(last, k if k is not None else last) * 1.1, True)


def class_size_plot(sizes: np.ndarray, k: float | None) -> Chart:
    """Two panels: how many classes have each size, and how many rows live in them."""
    sizes = np.asarray(sizes, dtype=np.int64)
    svg = Svg(CHART_WIDTH, 290)
    left, right = _panels(svg, [NUMBER_MARGIN, NUMBER_MARGIN])
    lo, hi, log = size_axis(sizes, k)
    total = max(int(sizes.sum()), 1)
    if not log:
        values, counts = np.unique(sizes, return_counts=True)
        x0, x1 = values - 0.4, values + 0.4
        rows = values * counts / total
        what = [f"{v:,} rows per class" for v in values]
        ticks, _ = _x_ticks(lo, hi, left.width, _numbers(lo, hi, integer=True))
        edge = None
    else:
        edges = _size_edges(int(sizes.min()), int(sizes.max()))
        counts, _ = np.histogram(sizes, bins=edges)
        rows, _ = np.histogram(sizes, bins=edges, weights=sizes / total)
        x0, x1 = edges[:-1], edges[1:]
        what = [f"{a:,} rows per class" if b - 1 == a else f"{a:,}–{b - 1:,} rows per class"
                for a, b in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True)]
        ticks = log_ticks(lo, hi)
        edge = "#ffffff"
    tick_labels = [_count(t) for t in ticks]
    for panel, heights, tips in (
            (left, counts, [f"{w}: {_count(c)} classes" for w, c in
                            zip(what, counts, strict=True)]),
            (right, rows, [f"{w}: {share_text(r)} of rows" for w, r in
                           zip(what, rows, strict=True)])):
        panel.begin()
        panel.x_axis(lo, hi, ticks, tick_labels, label="class size (rows)", log=log)
        if panel is left:
            panel.count_y(float(counts.max(initial=0)), "classes")
            panel.title("Classes by size")
        else:
            panel.share_y(float(rows.max(initial=0)), "share of rows")
            panel.title("Rows by the size of their class")
        panel.vbars(x0, x1, heights, RELEASED, tips, edge=edge)
        if k is not None:
            px = panel.reference(k)
            if panel is left:
                svg.text(px + 4, panel.top + 12, f"required ≥ {k:g}", size=VALUE_PX,
                         color=ALERT, halo=True)
        panel.end()
    return svg.chart()


# --------------------------------------------------------------------------- risk


#: Upper bounds of the risk buckets, as in ARX's risk analysis: the bounds between 1/2 and
#: 1/8 are exact reciprocals, so each bucket there holds the records of one class size.
RISK_EDGES = np.array([0.0, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07,
                       0.08, 0.09, 0.1, 1 / 8, 1 / 7, 1 / 6, 1 / 5, 1 / 4, 1 / 3, 1 / 2, 1.0])


def risk_plot(sizes: np.ndarray, threshold: float) -> Chart:
    """Share of records per prosecutor-risk bucket ``(lo, hi]``; buckets above the
    threshold in red. The threshold is itself a bucket bound, so no bucket straddles it."""
    sizes = np.asarray(sizes, dtype=np.float64)
    risks = 1.0 / sizes
    edges = np.unique(np.append(RISK_EDGES, threshold))
    bucket = np.searchsorted(edges, risks, side="left") - 1  # r in (edges[i], edges[i+1]]
    shares = np.bincount(bucket, weights=sizes, minlength=len(edges) - 1) / sizes.sum()
    first = min(int(np.flatnonzero(shares)[0]),
                int(np.searchsorted(edges, threshold)) - 1)
    shares, lows, highs = shares[first:], edges[first:-1], edges[first + 1:]
    labels = [f"{_pct_text(lo)}–{_pct_text(hi)}" for lo, hi in zip(lows, highs, strict=True)]
    colors = [ALERT if lo >= threshold else RISK for lo in lows]
    svg = Svg(CHART_WIDTH, 310)
    (panel,) = _panels(svg, [NUMBER_MARGIN], bottom=100)
    panel.begin()
    x = np.arange(len(shares), dtype=np.float64)
    panel.x = Scale(-0.6, len(shares) - 0.4, panel.left, panel.width)
    panel.share_y(float(shares.max()), "share of records")
    panel.vbars(x - 0.4, x + 0.4, shares, colors,
                [f"risk {label}: {share_text(s)} of records"
                 for label, s in zip(labels, shares, strict=True)])
    for xi, share, label in zip(x, shares, labels, strict=True):
        px = float(panel.x(xi))
        if share > 0:
            svg.text(px, float(panel.y(share)) - 4, share_text(share), size=VALUE_PX,
                     color=MUTED, anchor="middle")
        svg.line(px, panel.bottom, px, panel.bottom + 4)
        svg.text(px + 4, panel.bottom + 14, label, color=MUTED, anchor="end", rotate=-35.0)
    svg.line(panel.left, panel.bottom, panel.right, panel.bottom)
    svg.text(panel.left + panel.width / 2, panel.bottom + 88,
             "risk (lower bound excluded, upper included)", color=MUTED, anchor="middle")
    panel.title(f"Records by prosecutor risk (1 / size of their class); red: above the "
                f"threshold {threshold:g}")
    panel.end()
    return svg.chart()


# --------------------------------------------------------------------------- utility


def ncp_plot(ncp: Mapping[str, float], gcp: float | None = None) -> Chart:
    """Information loss per quasi-identifier, so one sees which QI pays for the release."""
    names = [label_text(n) for n in ncp]
    values = np.array(list(ncp.values()), dtype=np.float64)
    svg = Svg(round(CHART_WIDTH * 0.62), max(180, 30 * len(names) + 100))
    (panel,) = _panels(svg, [_label_margin(names)])
    panel.begin()
    upper = min(max(float(values.max(initial=0)) * 1.18, 0.02), 1.12)
    panel.share_x(upper, "NCP: share of the domain a released value covers, averaged over "
                         "rows")
    panel.hbars(names, values, [RELEASED] * len(names), upper, value_color=INK,
                value_size=TICK_PX, halo=True,
                tips=[f"{n}: NCP {share_text(v)}" for n, v in zip(names, values, strict=True)])
    if gcp is not None:
        px = panel.reference(gcp)
        svg.text(px + 4, panel.top - 4, f"GCP {share_text(gcp)}", size=TICK_PX, color=ALERT)
    panel.end()
    return svg.chart()


# --------------------------------------------------------------------------- QIs


def _is_continuous(series: pd.Series, n_distinct: int) -> bool:
    numeric = (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
               and not isinstance(series.dtype, pd.CategoricalDtype))
    return (numeric or pd.api.types.is_datetime64_any_dtype(series)) and \
        n_distinct >= CONTINUOUS_MIN_DISTINCT


def _magnitudes(series: pd.Series) -> np.ndarray | None:
    """Values as floats (dates as day numbers) to order labels by; None if not ordered."""
    if pd.api.types.is_datetime64_any_dtype(series):
        values = series.to_numpy("datetime64[ns]")
        out = values.astype("datetime64[D]").astype(np.float64)
        out[np.isnat(values)] = np.nan
        return out
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series) \
            and not isinstance(series.dtype, pd.CategoricalDtype):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    return None


def _n_shown(n_values: int) -> int:
    """Bars drawn for a column with ``n_values`` values (never an "other" bar of one)."""
    return n_values if n_values <= TOP + 1 else TOP


class _Bars(NamedTuple):
    """A categorical panel: its labels (whole), shares of rows, and whether the last bar
    sums the rest."""

    labels: list[str]
    shares: np.ndarray
    rest: bool


def _bar_data(counts: pd.Series, n: int, other: str) -> _Bars:
    """Labels and shares of the top bars of ``counts`` (already ordered), the rest summed
    into one last bar."""
    shown = counts.iloc[:_n_shown(len(counts))]
    labels = [label_text(v) for v in shown.index]
    shares = shown.to_numpy(dtype=np.float64) / max(n, 1)
    rest = len(counts) - len(shown)
    if rest > 0:
        labels.append(f"{rest:,} other {other}")
        shares = np.append(shares, counts.iloc[len(shown):].sum() / max(n, 1))
    return _Bars(labels, shares, rest > 0)


def _draw_bars(panel: _Panel, bars: _Bars, *, color: str, upper: float) -> None:
    colors = [color] * (len(bars.labels) - bars.rest) + ([OTHER] if bars.rest else [])
    panel.share_x(upper)
    panel.hbars(bars.labels, bars.shares, colors, upper,
                tips=[f"{t}: {share_text(s)} of rows"
                      for t, s in zip(bars.labels, bars.shares, strict=True)])


class _Hist(NamedTuple):
    """A histogram of shares of rows: bin edges (day numbers for dates), shares, and the
    share of rows with no value."""

    edges: np.ndarray
    shares: np.ndarray
    dated: bool
    whole: bool  # bins centred on whole numbers
    missing: float


def _day_numbers(values: pd.Series) -> np.ndarray:
    """Dates as days since 1970-01-01 (fractional: a time of day is a fraction)."""
    return values.to_numpy("datetime64[ns]").astype(np.int64) / 86_400e9


def _hist_data(values: pd.Series, bins: np.ndarray | int) -> _Hist:
    present = values.dropna()
    dated = pd.api.types.is_datetime64_any_dtype(present)
    data = _day_numbers(present) if dated else present.to_numpy(dtype=np.float64)
    whole = not dated and len(data) > 0 and np.array_equal(data, np.round(data))
    if isinstance(bins, int) and whole:
        # whole numbers: bins of a whole width centred on them, or bins would alias
        # (alternately holding one and two values, a comb that is not in the data)
        lo, hi = float(data.min()), float(data.max())
        width = max(1.0, float(np.ceil((hi - lo + 1) / bins)))
        bins = np.arange(lo - 0.5, hi + 0.5 + width, width)
    counts, edges = np.histogram(data, bins=bins)
    n = max(len(values), 1)
    return _Hist(edges, counts / n, dated, whole and bool(np.all(edges % 1 == 0.5)),
                 (len(values) - len(present)) / n)


def _spread_data(released: pd.Series, mags: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The release on the original's bins: each label's rows spread evenly over the range
    of original values they hold (whole numbers and days as unit-wide cells, so a label
    for 20..24 puts a fifth on each). Vectorised over labels x bin edges."""
    codes, _ = pd.factorize(released, use_na_sentinel=False)
    present = ~np.isnan(mags)
    values = pd.Series(mags[present])
    grouped = values.groupby(codes[present], sort=False)
    lo = grouped.min().to_numpy()
    hi = grouped.max().to_numpy()
    rows = grouped.size().to_numpy().astype(np.float64)
    if np.array_equal(values.to_numpy(), np.round(values.to_numpy())):
        lo, hi = lo - 0.5, hi + 0.5
    width = hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        covered = np.clip((edges[None, :] - lo[:, None]) / width[:, None], 0.0, 1.0)
    point = width == 0
    covered[point] = edges[None, :] > lo[point][:, None]
    covered[:, -1] = 1.0  # the last bin includes its right edge
    cumulative = rows @ covered
    return np.diff(cumulative) / max(len(released), 1)


def _bin_text(lo: float, hi: float, hist: _Hist) -> str:
    if hist.dated:
        first, last = (str(np.datetime64(round(d * 86_400), "s"))[:10] for d in (lo, hi))
        return first if first == last else f"{first} – {last}"
    if hist.whole:
        a, b = round(lo + 0.5), round(hi - 0.5)
        return display_number(a) if a == b else f"{display_number(a)}–{display_number(b)}"
    return f"{display_number(lo)}–{display_number(hi)}"


def _draw_hist(panel: _Panel, hist: _Hist, shares: np.ndarray, color: str, top: float,
               missing: float) -> None:
    """Bars of ``shares`` on ``hist``'s bins, a y axis up to ``top``, dates on a date
    axis."""
    lo, hi = float(hist.edges[0]), float(hist.edges[-1])
    if hist.dated:
        ticks, labels = _x_ticks(lo, hi, panel.width,
                                 lambda bins: date_ticks(lo, hi, most=bins + 1))
    else:
        ticks, labels = _x_ticks(lo, hi, panel.width, _numbers(lo, hi))
    panel.x_axis(lo, hi, ticks, labels)
    panel.share_y(top, "share of rows")
    edges = hist.edges
    panel.vbars(edges[:-1], edges[1:], shares, color,
                [f"{_bin_text(a, b, hist)}: {share_text(s)} of rows"
                 for a, b, s in zip(edges[:-1].tolist(), edges[1:].tolist(), shares,
                                    strict=True)], edge="#ffffff")
    if missing:
        panel.corner_note(f"+ {share_text(missing)} missing")


def qi_plot(original: pd.Series, released: pd.Series) -> Chart:
    """Before / after: the original values next to the released ones, as shares of rows.

    Categorical values and released labels: the most frequent ones as bars (the rest in one
    bar, so a column with hundreds of values stays readable), labels of an ordered column
    in the order of the values they stand for (``[20-29]`` before ``[30-39]``). A numeric
    or date original with many values: a histogram, and the release on the same bins, each
    label's rows spread evenly over the range of original values it stands for -- what an
    analyst reading the release can reconstruct; hundreds of range labels as bars would
    show nothing. Both need the rows of the two tables to correspond (same order).
    """
    original = original.reset_index(drop=True)
    released = released.reset_index(drop=True)
    orig_counts = original.value_counts(dropna=False, sort=True)
    rel_counts = released.value_counts(dropna=False, sort=True)
    rel_counts = rel_counts[rel_counts > 0]  # unused categories of a Categorical
    orig_continuous = _is_continuous(original, len(orig_counts))
    rel_continuous = _is_continuous(released, len(rel_counts))
    mags = _magnitudes(original)
    if not orig_continuous and mags is not None:
        # few numeric values: the most frequent ones shown, in value order
        shown = _n_shown(len(orig_counts))
        orig_counts = pd.concat([orig_counts.iloc[:shown].sort_index(kind="stable"),
                                 orig_counts.iloc[shown:]])
    aligned = mags is not None and len(original) == len(released)
    spread = orig_continuous and not rel_continuous and aligned
    if not rel_continuous and aligned and not spread:
        rel_counts = _in_value_order(rel_counts, released, mags)
    bars = [None if orig_continuous else _bar_data(orig_counts, len(original), "values"),
            None if rel_continuous or spread
            else _bar_data(rel_counts, len(released), "labels")]
    # histograms: the release on the original's bins, on one vertical scale
    hists: list[_Hist | None] = [None, None]
    released_shares = None
    if orig_continuous:
        hists[0] = _hist_data(original, min(40, len(orig_counts)))
    if spread:
        assert mags is not None and hists[0] is not None
        hists[1] = hists[0]
        released_shares = _spread_data(released, mags, hists[0].edges)
    elif rel_continuous:
        hists[1] = _hist_data(released, hists[0].edges if hists[0] is not None else 40)
        released_shares = hists[1].shares
    hist_top = max([float(h.shares.max(initial=0)) for h in hists[:1] if h is not None]
                   + ([float(released_shares.max(initial=0))]
                      if released_shares is not None else []) + [0.0])
    if any(h is not None and h.missing for h in hists):
        hist_top *= MISSING_ROOM
    shown_bars = [b for b in bars if b is not None]
    n_bars = max((len(b.labels) for b in shown_bars), default=0)
    # one scale for both sides, so bar lengths compare across before and after
    upper = min(max([float(b.shares.max(initial=0)) for b in shown_bars] + [0.01]) * 1.22,
                1.2)
    svg = Svg(CHART_WIDTH, max(160 if len(shown_bars) == 2 else 260, ROW * n_bars + 100))
    panels = _panels(svg, [NUMBER_MARGIN if b is None else _label_margin(b.labels)
                           for b in bars])
    what = "value" if rel_continuous else "label"
    plural = "" if len(rel_counts) == 1 else "s"
    titles = (f"Original: {len(orig_counts):,} distinct value"
              f"{'' if len(orig_counts) == 1 else 's'}",
              f"Released: {len(rel_counts):,} {what}{plural}, spread over their ranges"
              if spread else f"Released: {len(rel_counts):,} distinct {what}{plural}")
    for panel, title, bar, hist, color, shares in (
            (panels[0], titles[0], bars[0], hists[0], ORIGINAL,
             hists[0].shares if hists[0] is not None else None),
            (panels[1], titles[1], bars[1], hists[1], RELEASED, released_shares)):
        panel.begin()
        if bar is not None:
            _draw_bars(panel, bar, color=color, upper=upper)
        elif hist is not None and shares is not None:
            # (spread: the rows without an original value are the ones not spread)
            _draw_hist(panel, hist, shares, color, hist_top, hist.missing)
        panel.title(title)
        panel.end()
    return svg.chart()


def _in_value_order(counts: pd.Series, released: pd.Series, mags: np.ndarray) -> pd.Series:
    """The most frequent labels ordered by the mean original value of their rows."""
    codes, uniques = pd.factorize(released, use_na_sentinel=False)
    present = ~np.isnan(mags)
    totals = np.bincount(codes[present], weights=mags[present], minlength=len(uniques))
    rows = np.bincount(codes[present], minlength=len(uniques))
    with np.errstate(invalid="ignore", divide="ignore"):
        position = pd.Series(totals / rows, index=pd.Index(np.asarray(uniques, dtype=object)))
    shown = _n_shown(len(counts))
    top = counts.iloc[:shown]
    pos = position.reindex(top.index.astype(object)).to_numpy()
    return pd.concat([top.iloc[np.argsort(pos, kind="stable")], counts.iloc[shown:]])


# --------------------------------------------------------------------------- sensitive


def sensitive_plot(values: pd.Series, class_ids: np.ndarray, n_classes: int) -> Chart:
    """A sensitive attribute: its distribution over the whole release (bars of the most
    frequent values, or a histogram of a numeric one with many values), and per class the
    number of distinct values it holds -- what l-diversity bounds."""
    values = values.reset_index(drop=True)
    counts = values.value_counts(dropna=False, sort=True)
    continuous = _is_continuous(values, len(counts))
    codes, _ = pd.factorize(values, use_na_sentinel=False)
    pairs = np.unique(np.asarray(class_ids, dtype=np.int64) * (int(codes.max(initial=0)) + 1)
                      + codes)
    distinct = np.bincount(pairs // (int(codes.max(initial=0)) + 1), minlength=n_classes)
    bars = None if continuous else _bar_data(counts, len(values), "values")
    svg = Svg(CHART_WIDTH, max(260, ROW * (len(bars.labels) if bars else 0) + 100))
    left, right = _panels(svg, [NUMBER_MARGIN if bars is None
                                else _label_margin(bars.labels) + 10, NUMBER_MARGIN])
    left.begin()
    if bars is None:
        hist = _hist_data(values, 40)
        _draw_hist(left, hist, hist.shares, ORIGINAL,
                   float(hist.shares.max(initial=0)) * (MISSING_ROOM if hist.missing else 1),
                   hist.missing)
    else:
        upper = min(float(bars.shares.max(initial=0)) * 1.22 + 0.01, 1.2)
        _draw_bars(left, bars, upper=upper, color=ORIGINAL)
    left.title(f"Whole release: {len(counts):,} distinct value"
               f"{'' if len(counts) == 1 else 's'}")
    left.end()
    right.begin()
    levels, per_level = np.unique(distinct, return_counts=True)
    lo, hi = float(levels.min(initial=1)) - 1, float(levels.max(initial=1)) + 1
    ticks, labels = _x_ticks(lo, hi, right.width, _numbers(lo, hi, integer=True))
    right.x_axis(lo, hi, ticks, labels,
                 label="distinct values in the class")
    right.count_y(float(per_level.max(initial=0)), "classes")
    right.vbars(levels - 0.4, levels + 0.4, per_level, RELEASED,
                [f"{v:,} distinct value{'' if v == 1 else 's'}: {_count(c)} classes"
                 for v, c in zip(levels.tolist(), per_level, strict=True)])
    right.title("Classes by their number of distinct values")
    right.end()
    return svg.chart()


# --------------------------------------------------------------------------- matplotlib
# for the code tree only (anonkit.report.tree)

DPI = 120  # PNG pixels per inch: 1.2 image pixels per CSS pixel, sharp on most screens
CSS_PX_PER_INCH = 100  # shown at 100 CSS px per inch: 9 pt text reads as about 12.5 px
WIDTH = CHART_WIDTH / CSS_PX_PER_INCH  # inches: the page's content width

STYLE: dict[str, object] = {
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial"],
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.titlepad": 8,
    "axes.labelsize": 9,
    "axes.labelcolor": MUTED,
    "axes.edgecolor": "#c5ccd3",
    "axes.linewidth": 0.8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#e6e9ed",
    "grid.linewidth": 0.7,
    "xtick.color": MUTED,
    "ytick.color": INK,
    "xtick.labelsize": 8.5,
    "ytick.labelsize": 8.5,
    "legend.frameon": False,
    "legend.fontsize": 8.5,
    "text.color": INK,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
}


@contextmanager
def style() -> Iterator[None]:
    """The report's look for a matplotlib figure, restored afterwards (rcParams are
    process-global)."""
    import matplotlib as mpl

    with mpl.rc_context(STYLE):
        yield


class PngChart(NamedTuple):
    """A matplotlib figure as a PNG data URI, and the width (CSS px) to show it at, so its
    text appears at the size of the SVG charts' text."""

    uri: str
    width: int


def to_chart(fig: Figure) -> PngChart:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    uri = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
    return PngChart(uri, round(fig.get_figwidth() * CSS_PX_PER_INCH))


def plot_text(value: object, limit: int = LABEL_CHARS) -> str:
    """A label safe for matplotlib: shortened with an ellipsis, ``$`` not mathtext."""
    return short_text(label_text(value), limit).replace("$", r"\$")
