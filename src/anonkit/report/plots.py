"""The report's charts, as PNG data URIs.

Drawn with matplotlib's object API on the Agg canvas, never through ``pyplot``: no global
figure registry to leak into, and no backend switch in a host process (a notebook, a GUI)
that already uses matplotlib. matplotlib takes about half a second to import, so each
drawing function imports what it uses: ``import anonkit.report`` stays cheap, and a run
without a report never loads it.

Data-derived text ends up in pixels, not in HTML, so it needs no HTML escaping; it does need
mathtext escaping (a ``$`` pair in a value would be typeset as a formula, or fail to parse).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ORIGINAL = "#8795a8"
RELEASED = "#2f6db5"
RISK = "#d9822b"
ALERT = "#b42318"
INK = "#1f2933"
MUTED = "#616e7c"
OTHER = "#c5ccd3"
DPI = 120  # PNG pixels per inch: 1.2 image pixels per CSS pixel, sharp on most screens
CSS_PX_PER_INCH = 100  # shown at 100 CSS px per inch: 9 pt text reads as about 12.5 px
WIDTH = 10.4  # inches: 1,040 CSS px, the page's content width
TOP = 15  # bars per categorical panel; the rest are summed into one "other" bar
LABEL_CHARS = 34
CONTINUOUS_MIN_DISTINCT = 26  # numeric/date columns with more distinct values: histogram

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
    """The report's look, restored afterwards (rcParams are process-global)."""
    import matplotlib as mpl

    with mpl.rc_context(STYLE):
        yield


class Chart(NamedTuple):
    """A rendered chart: its PNG as a data URI, and the width (CSS px) to show it at, so
    text in every chart appears at the same size whatever the figure's width."""

    uri: str
    width: int


def to_chart(fig: Figure) -> Chart:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    uri = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
    return Chart(uri, round(fig.get_figwidth() * CSS_PX_PER_INCH))


def _figure(height: float, width: float = WIDTH) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


# Margins are laid out by hand, in inches: matplotlib's constrained layout measures every
# tick label by drawing the figure an extra time, which doubled the report's render time.
CHAR_WIDTH = 0.068  # inches per character of an 8.5 pt tick label (DejaVu Sans, average)
TOP_MARGIN = 0.34  # panel title
BOTTOM_MARGIN = 0.5  # tick labels and axis label
RIGHT_MARGIN = 0.2
GAP = 0.45  # between two panels, besides the right panel's own label margin
NUMBER_MARGIN = 0.75  # y tick labels like "12.5%" plus the y axis label


def _label_margin(labels: list[str]) -> float:
    """Left margin (inches) for horizontal-bar tick labels."""
    return 0.15 + CHAR_WIDTH * max((len(t) for t in labels), default=4)


def _panels(fig: Figure, margins: list[float], bottom: float = BOTTOM_MARGIN) -> list:
    """One row of axes sharing the figure's width, each with its own left margin."""
    width, height = fig.get_size_inches()
    free = width - sum(margins) - GAP * (len(margins) - 1) - RIGHT_MARGIN
    each = max(free / len(margins), 0.5)
    axes, x = [], 0.0
    for i, margin in enumerate(margins):
        x += margin + (GAP if i else 0.0)
        axes.append(fig.add_axes((x / width, bottom / height, each / width,
                                  (height - bottom - TOP_MARGIN) / height)))
        x += each
    return axes


def _rects(ax, x0: np.ndarray | float, x1: np.ndarray | float, y0: np.ndarray | float,
           y1: np.ndarray | float, colors: str | list[str], edge: str = "none") -> None:
    """Bars as one collection. ``bar`` / ``hist`` add a Rectangle artist per bar, and each
    costs about a millisecond of limit and transform bookkeeping; one collection costs it
    once. Limits are set by the callers."""
    from matplotlib.collections import PolyCollection

    x0, x1, y0, y1 = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64)
                                           for v in (x0, x1, y0, y1)))
    corners = [np.stack(c, axis=-1) for c in ((x0, y0), (x0, y1), (x1, y1), (x1, y0))]
    verts = np.stack(corners, axis=1)
    ax.add_collection(PolyCollection(verts, facecolors=colors, edgecolors=edge,
                                     linewidths=0.6 if edge != "none" else 0),
                      autolim=False)


def _ylim_from_zero(ax, top: float) -> None:
    ax.set_ylim(0, top * 1.08 if top > 0 else 1)


def plot_text(value: object, limit: int = LABEL_CHARS) -> str:
    """A label safe for matplotlib: shortened with an ellipsis, ``$`` not mathtext."""
    text = "missing" if value is None or (isinstance(value, float) and np.isnan(value)) \
        else str(value)
    text = " ".join(text.split())  # no line breaks or tabs inside a tick label
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("$", r"\$")


# --------------------------------------------------------------------------- class sizes


def class_size_plot(sizes: np.ndarray, k: float | None) -> Chart:
    """Two panels: how many classes have each size, and how many rows live in them."""
    from matplotlib.ticker import MaxNLocator

    sizes = np.asarray(sizes, dtype=np.int64)
    fig = _figure(2.9)
    left, right = _panels(fig, [NUMBER_MARGIN, NUMBER_MARGIN])
    lo, hi = int(sizes.min()), int(sizes.max())
    if hi - lo <= 60:
        values, counts = np.unique(sizes, return_counts=True)
        rows = values * counts / sizes.sum()
        _rects(left, values - 0.4, values + 0.4, 0, counts, RELEASED)
        _rects(right, values - 0.4, values + 0.4, 0, rows, RELEASED)
        for ax in (left, right):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            # the axis reaches the required k, so its dashed line is always drawn
            ax.set_xlim(min(lo, k if k is not None else lo) - 1,
                        max(hi, k if k is not None else hi) + 1)
    else:
        edges = np.unique(np.geomspace(lo, hi + 1, 40).round().astype(np.int64))
        counts, _ = np.histogram(sizes, bins=edges)
        rows, _ = np.histogram(sizes, bins=edges, weights=sizes / sizes.sum())
        _rects(left, edges[:-1], edges[1:], 0, counts, RELEASED, edge="white")
        _rects(right, edges[:-1], edges[1:], 0, rows, RELEASED, edge="white")
        for ax in (left, right):
            ax.set_xscale("log")
            ax.set_xlim(min(edges[0], k or edges[0]) / 1.1, max(edges[-1], k or 0) * 1.1)
    _ylim_from_zero(left, float(counts.max()))
    _ylim_from_zero(right, float(rows.max()))
    left.set_title("Classes by size")
    left.set_ylabel("classes")
    left.yaxis.set_major_locator(MaxNLocator(integer=True))
    right.set_title("Rows by the size of their class")
    right.set_ylabel("share of rows")
    _share_axis(right.yaxis)
    for ax in (left, right):
        ax.set_xlabel("class size (rows)")
        ax.grid(axis="x", visible=False)
        if k is not None:
            ax.axvline(k, color=ALERT, linestyle="--", linewidth=1)
    if k is not None:
        left.annotate(f"required ≥ {k:g}", xy=(k, 1), xycoords=("data", "axes fraction"),
                      xytext=(4, -10), textcoords="offset points", color=ALERT, fontsize=8.5)
    return to_chart(fig)


# --------------------------------------------------------------------------- risk


#: Upper bounds of the risk buckets, as in ARX's risk analysis: the bounds between 1/2 and
#: 1/8 are exact reciprocals, so each bucket there holds the records of one class size.
RISK_EDGES = np.array([0.0, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07,
                       0.08, 0.09, 0.1, 1 / 8, 1 / 7, 1 / 6, 1 / 5, 1 / 4, 1 / 3, 1 / 2, 1.0])


def _pct_text(x: float) -> str:
    return f"{x * 100:.3g}%"


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
    fig = _figure(3.1)
    (ax,) = _panels(fig, [NUMBER_MARGIN], bottom=1.0)
    x = np.arange(len(shares), dtype=np.float64)
    _rects(ax, x - 0.4, x + 0.4, 0, shares, colors)
    for xi, share in zip(x, shares, strict=True):
        if share > 0:
            ax.text(xi, share, f"{share:.1%}", ha="center", va="bottom", fontsize=7.5,
                    color=MUTED)
    ax.set_xlim(-0.6, len(shares) - 0.4)
    _ylim_from_zero(ax, float(shares.max()))
    ax.set_xticks(x, labels, rotation=35, ha="right", rotation_mode="anchor")
    ax.set_title(f"Records by prosecutor risk (1 / size of their class); red: above the "
                 f"threshold {threshold:g}")
    ax.set_xlabel("risk (lower bound excluded, upper included)")
    ax.set_ylabel("share of records")
    _share_axis(ax.yaxis)
    ax.grid(axis="x", visible=False)
    return to_chart(fig)


# --------------------------------------------------------------------------- utility


def ncp_plot(ncp: Mapping[str, float], gcp: float | None = None) -> Chart:
    """Information loss per quasi-identifier, so one sees which QI pays for the release."""
    names = [plot_text(n) for n in ncp]
    values = np.array(list(ncp.values()), dtype=np.float64)
    fig = _figure(max(1.8, 0.3 * len(names) + 1.0), width=WIDTH * 0.62)
    (ax,) = _panels(fig, [_label_margin(names)])
    upper = min(max(float(values.max(initial=0)) * 1.18, 0.02), 1.12)
    _hbars(ax, names, values, [RELEASED] * len(names), upper, 8.5, INK, boxed=True)
    _share_axis(ax.xaxis)
    if gcp is not None:
        ax.axvline(gcp, color=ALERT, linestyle="--", linewidth=1)
        ax.annotate(f"GCP {gcp:.1%}", xy=(gcp, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(4, 3), textcoords="offset points", color=ALERT, fontsize=8.5)
    ax.set_xlabel("NCP: share of the domain a released value covers, averaged over rows")
    ax.grid(axis="y", visible=False)
    return to_chart(fig)


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


def _bar_data(counts: pd.Series, n: int, other: str) -> tuple[list[str], np.ndarray, bool]:
    """Labels and shares of the top bars of ``counts`` (already ordered), the rest summed
    into one last bar."""
    shown = counts.iloc[:_n_shown(len(counts))]
    labels = [plot_text(v) for v in shown.index]
    shares = shown.to_numpy(dtype=np.float64) / max(n, 1)
    rest = len(counts) - len(shown)
    if rest > 0:
        labels.append(f"{rest:,} other {other}")
        shares = np.append(shares, counts.iloc[len(shown):].sum() / max(n, 1))
    return labels, shares, rest > 0


def _hbars(ax, labels: list[str], values: np.ndarray, colors: list[str], upper: float,
           value_size: float, value_color: str, boxed: bool = False) -> None:
    """Horizontal bars, first on top, labelled on the left and valued on the right. The
    labels are plain texts: tick labels would cost a Tick object (two lines, two texts)
    each."""
    from matplotlib.ticker import NullLocator

    y = np.arange(len(labels), dtype=np.float64)
    _rects(ax, 0, values, y - 0.35, y + 0.35, colors)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlim(0, upper)
    ax.yaxis.set_major_locator(NullLocator())
    at_left = ax.get_yaxis_transform()
    for yi, label, value in zip(y, labels, values, strict=True):
        ax.text(-0.012, yi, label, transform=at_left, ha="right", va="center")
        ax.text(value, yi, f" {share_text(value)}", va="center", fontsize=value_size,
                color=value_color, zorder=4,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5} if boxed
                else None)
    ax.grid(axis="y", visible=False)


def share_text(share: float) -> str:
    """A share as a percentage with one decimal; a non-zero share below 0.05 % is never
    shown as 0.0 %."""
    if 0 < share < 0.0005:
        return "<0.1%"
    return f"{share:.1%}"


def _share_axis(axis) -> None:
    """Percent ticks at round steps (1, 2, 5 x 10^n): no "8%" tick standing for 7.5 %."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    axis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
    axis.set_major_formatter(FuncFormatter(lambda x, _: f"{x * 100:.6g}%"))


def _draw_bars(ax, labels: list[str], shares: np.ndarray, rest: bool, *, color: str,
               upper: float) -> None:
    colors = [color] * (len(labels) - rest) + ([OTHER] if rest else [])
    _hbars(ax, labels, shares, colors, upper, 7.5, MUTED)
    _share_axis(ax.xaxis)
    ax.set_xlabel("share of rows")


def _hist(ax, values: pd.Series, bins: np.ndarray | int, color: str) -> np.ndarray:
    """Histogram of shares of rows; dates on a date axis. Returns the bin edges."""
    from matplotlib import dates as mdates

    present = values.dropna()
    dated = pd.api.types.is_datetime64_any_dtype(present)
    data = mdates.date2num(present.to_numpy("datetime64[ns]")) if dated \
        else present.to_numpy(dtype=np.float64)
    if isinstance(bins, int) and len(data) and not dated and \
            np.array_equal(data, np.round(data)):
        # whole numbers: bins of a whole width centred on them, or bins would alias
        # (alternately holding one and two values, a comb that is not in the data)
        lo, hi = float(data.min()), float(data.max())
        width = max(1.0, float(np.ceil((hi - lo + 1) / bins)))
        bins = np.arange(lo - 0.5, hi + 0.5 + width, width)
    shares, edges = np.histogram(data, bins=bins)
    shares = shares / max(len(values), 1)
    _rects(ax, edges[:-1], edges[1:], 0, shares, color, edge="white")
    ax.set_xlim(edges[0], edges[-1])
    _ylim_from_zero(ax, float(shares.max(initial=0)))
    if dated:
        _date_axis(ax)
    _share_axis(ax.yaxis)
    ax.set_ylabel("share of rows")
    ax.grid(axis="x", visible=False)
    missing = len(values) - len(present)
    if missing:
        ax.annotate(f"+ {missing / len(values):.1%} missing", xy=(1, 1),
                    xycoords="axes fraction", ha="right", va="top", fontsize=8, color=MUTED)
    return edges


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
    panels = []
    for counts, continuous, n, other in ((orig_counts, orig_continuous, len(original),
                                          "values"),
                                         (rel_counts, rel_continuous, len(released),
                                          "labels")):
        panels.append(None if continuous or (spread and other == "labels")
                      else _bar_data(counts, n, other))
    bar_panels = [p for p in panels if p is not None]
    n_bars = max((len(p[0]) for p in bar_panels), default=0)
    # one scale for both sides, so bar lengths compare across before and after
    upper = min(max([float(p[1].max(initial=0)) for p in bar_panels] + [0.01]) * 1.22, 1.2)
    fig = _figure(max(1.6 if len(bar_panels) == 2 else 2.6, 0.21 * n_bars + 1.0))
    left, right = _panels(fig, [NUMBER_MARGIN if p is None else _label_margin(p[0])
                                for p in panels])
    bins: np.ndarray | int = 40
    if panels[0] is None:
        bins = _hist(left, original, min(40, len(orig_counts)), ORIGINAL)
    else:
        _draw_bars(left, *panels[0], upper=upper, color=ORIGINAL)
    if spread:
        assert mags is not None and not isinstance(bins, int)
        _spread_hist(right, released, mags, bins, RELEASED)
    elif panels[1] is None:
        _hist(right, released, bins if orig_continuous else 40, RELEASED)
    else:
        _draw_bars(right, *panels[1], upper=upper, color=RELEASED)
    left.set_title(f"Original: {len(orig_counts):,} distinct value"
                   f"{'' if len(orig_counts) == 1 else 's'}")
    what = "value" if rel_continuous else "label"
    plural = "" if len(rel_counts) == 1 else "s"
    right.set_title(f"Released: {len(rel_counts):,} {what}{plural}, spread over their ranges"
                    if spread else f"Released: {len(rel_counts):,} distinct {what}{plural}")
    if panels[0] is None and panels[1] is None:  # two histograms: one vertical scale
        top = max(left.get_ylim()[1], right.get_ylim()[1])
        left.set_ylim(0, top)
        right.set_ylim(0, top)
        right.set_xlim(left.get_xlim())
        if pd.api.types.is_datetime64_any_dtype(original):
            _date_axis(right)
    return to_chart(fig)


def _spread_hist(ax, released: pd.Series, mags: np.ndarray, edges: np.ndarray,
                 color: str) -> None:
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
    shares = np.diff(cumulative) / max(len(released), 1)
    _rects(ax, edges[:-1], edges[1:], 0, shares, color, edge="white")
    ax.set_xlim(edges[0], edges[-1])
    _ylim_from_zero(ax, float(shares.max(initial=0)))
    _share_axis(ax.yaxis)
    ax.set_ylabel("share of rows")
    ax.grid(axis="x", visible=False)


def _date_axis(ax) -> None:
    from matplotlib import dates as mdates

    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


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
    from matplotlib.ticker import MaxNLocator

    values = values.reset_index(drop=True)
    counts = values.value_counts(dropna=False, sort=True)
    continuous = _is_continuous(values, len(counts))
    codes, _ = pd.factorize(values, use_na_sentinel=False)
    pairs = np.unique(np.asarray(class_ids, dtype=np.int64) * (int(codes.max(initial=0)) + 1)
                      + codes)
    distinct = np.bincount(pairs // (int(codes.max(initial=0)) + 1), minlength=n_classes)
    bars = None if continuous else _bar_data(counts, len(values), "values")
    fig = _figure(max(2.6, 0.21 * (len(bars[0]) if bars else 0) + 1.0))
    left, right = _panels(fig, [NUMBER_MARGIN if bars is None else _label_margin(bars[0]) + 0.1,
                                NUMBER_MARGIN])
    if bars is None:
        _hist(left, values, 40, ORIGINAL)
    else:
        upper = min(float(bars[1].max(initial=0)) * 1.22 + 0.01, 1.2)
        _draw_bars(left, *bars, upper=upper, color=ORIGINAL)
    left.set_title(f"Whole release: {len(counts):,} distinct value"
                   f"{'' if len(counts) == 1 else 's'}")
    levels, per_level = np.unique(distinct, return_counts=True)
    _rects(right, levels - 0.4, levels + 0.4, 0, per_level, RELEASED)
    right.set_xlim(levels.min(initial=1) - 1, levels.max(initial=1) + 1)
    _ylim_from_zero(right, float(per_level.max(initial=0)))
    right.xaxis.set_major_locator(MaxNLocator(integer=True))
    right.yaxis.set_major_locator(MaxNLocator(integer=True))
    right.set_title("Classes by their number of distinct values")
    right.set_xlabel("distinct values in the class")
    right.set_ylabel("classes")
    right.grid(axis="x", visible=False)
    return to_chart(fig)
