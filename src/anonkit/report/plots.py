"""The report's charts, as PNG data URIs.

Drawn with matplotlib's object API on the Agg canvas, never through ``pyplot``: no global
figure registry to leak into, and no backend switch in a host process (a notebook, a GUI)
that already uses matplotlib. This module imports matplotlib at its top, so it is itself
imported lazily, from inside the render functions: ``import anonkit.report`` stays cheap.

Data-derived text ends up in pixels, not in HTML, so it needs no HTML escaping; it does need
mathtext escaping (a ``$`` pair in a value would be typeset as a formula, or fail to parse).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

ORIGINAL = "#8795a8"
RELEASED = "#2f6db5"
RISK = "#d9822b"
ALERT = "#b42318"
INK = "#1f2933"
MUTED = "#616e7c"
OTHER = "#c5ccd3"
DPI = 120
WIDTH = 10.4  # inches: ~1250 px at DPI, shown scaled to the page's content width
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
    with mpl.rc_context(STYLE):
        yield


def to_data_uri(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(height: float, width: float = WIDTH) -> Figure:
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


def _panels(fig: Figure, margins: list[float]) -> list:
    """One row of axes sharing the figure's width, each with its own left margin."""
    width, height = fig.get_size_inches()
    free = width - sum(margins) - GAP * (len(margins) - 1) - RIGHT_MARGIN
    each = max(free / len(margins), 0.5)
    axes, x = [], 0.0
    for i, margin in enumerate(margins):
        x += margin + (GAP if i else 0.0)
        axes.append(fig.add_axes((x / width, BOTTOM_MARGIN / height, each / width,
                                  (height - BOTTOM_MARGIN - TOP_MARGIN) / height)))
        x += each
    return axes


def plot_text(value: object, limit: int = LABEL_CHARS) -> str:
    """A label safe for matplotlib: shortened with an ellipsis, ``$`` not mathtext."""
    text = "missing" if value is None or (isinstance(value, float) and np.isnan(value)) \
        else str(value)
    text = " ".join(text.split())  # no line breaks or tabs inside a tick label
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("$", r"\$")


# --------------------------------------------------------------------------- class sizes


def class_size_plot(sizes: np.ndarray, k: float | None) -> str:
    """Two panels: how many classes have each size, and how many rows live in them."""
    sizes = np.asarray(sizes, dtype=np.int64)
    fig = _figure(2.9)
    left, right = _panels(fig, [NUMBER_MARGIN, NUMBER_MARGIN])
    lo, hi = int(sizes.min()), int(sizes.max())
    if hi - lo <= 60:
        values, counts = np.unique(sizes, return_counts=True)
        left.bar(values, counts, width=0.8, color=RELEASED)
        right.bar(values, values * counts / sizes.sum(), width=0.8, color=RELEASED)
        for ax in (left, right):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlim(lo - 1, hi + 1)
    else:
        bins = np.unique(np.geomspace(lo, hi + 1, 40).round().astype(np.int64))
        left.hist(sizes, bins=bins, color=RELEASED)
        right.hist(sizes, bins=bins, weights=sizes / sizes.sum(), color=RELEASED)
        for ax in (left, right):
            ax.set_xscale("log")
    left.set_title("Classes by size")
    left.set_ylabel("classes")
    left.yaxis.set_major_locator(MaxNLocator(integer=True))
    right.set_title("Rows by the size of their class")
    right.set_ylabel("share of rows")
    right.yaxis.set_major_formatter(PercentFormatter(1.0))
    for ax in (left, right):
        ax.set_xlabel("class size (rows)")
        ax.grid(axis="x", visible=False)
        if k is not None:
            ax.axvline(k, color=ALERT, linestyle="--", linewidth=1)
    if k is not None:
        left.annotate(f"required ≥ {k:g}", xy=(k, 1), xycoords=("data", "axes fraction"),
                      xytext=(4, -10), textcoords="offset points", color=ALERT, fontsize=8.5)
    return to_data_uri(fig)


# --------------------------------------------------------------------------- risk


def risk_plot(sizes: np.ndarray, threshold: float) -> str:
    """Per-record prosecutor risk (1 / class size), as a share of the records."""
    sizes = np.asarray(sizes, dtype=np.float64)
    risks = 1.0 / sizes
    top = max(float(risks.max()), threshold) * 1.05
    fig = _figure(2.7)
    (ax,) = _panels(fig, [NUMBER_MARGIN])
    ax.hist(risks, bins=np.linspace(0, top, 41), weights=sizes / sizes.sum(), color=RISK)
    ax.axvline(threshold, color=ALERT, linestyle="--", linewidth=1)
    ax.annotate(f"threshold {threshold:g}", xy=(threshold, 1),
                xycoords=("data", "axes fraction"), xytext=(-4, -10),
                textcoords="offset points", color=ALERT, fontsize=8.5, ha="right")
    ax.set_xlim(0, top)
    ax.set_title("Prosecutor risk per record (1 / size of its class)")
    ax.set_xlabel("re-identification risk")
    ax.set_ylabel("share of records")
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.grid(axis="x", visible=False)
    return to_data_uri(fig)


# --------------------------------------------------------------------------- utility


def ncp_plot(ncp: Mapping[str, float], gcp: float | None = None) -> str:
    """Information loss per quasi-identifier, so one sees which QI pays for the release."""
    names = [plot_text(n) for n in ncp]
    values = np.array(list(ncp.values()), dtype=np.float64)
    fig = _figure(max(1.8, 0.3 * len(names) + 1.0), width=WIDTH * 0.62)
    (ax,) = _panels(fig, [_label_margin(names)])
    y = np.arange(len(names))
    bars = ax.barh(y, values, color=RELEASED, height=0.65)
    ax.bar_label(bars, labels=[f"{v:.1%}" for v in values], padding=3, fontsize=8.5,
                 color=INK)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    upper = max(float(values.max(initial=0)) * 1.18, 0.02)
    ax.set_xlim(0, min(upper, 1.12))
    ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0 if upper > 0.05 else 1))
    if gcp is not None:
        ax.axvline(gcp, color=ALERT, linestyle="--", linewidth=1)
        ax.annotate(f"GCP {gcp:.1%}", xy=(gcp, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(4, 3), textcoords="offset points", color=ALERT, fontsize=8.5)
    ax.set_xlabel("NCP: share of the domain a released value covers, averaged over rows")
    ax.grid(axis="y", visible=False)
    return to_data_uri(fig)


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


def _bar_data(counts: pd.Series, n: int, other: str) -> tuple[list[str], np.ndarray, bool]:
    """Labels and shares of the top bars of ``counts`` (already ordered), the rest summed
    into one last bar."""
    shown = counts.iloc[:TOP]
    labels = [plot_text(v) for v in shown.index]
    shares = shown.to_numpy(dtype=np.float64) / max(n, 1)
    rest = len(counts) - len(shown)
    if rest > 0:
        labels.append(f"{rest:,} other {other}")
        shares = np.append(shares, counts.iloc[TOP:].sum() / max(n, 1))
    return labels, shares, rest > 0


def _draw_bars(ax, labels: list[str], shares: np.ndarray, color: str, rest: bool) -> None:
    y = np.arange(len(labels))
    colors = [color] * (len(labels) - rest) + ([OTHER] if rest else [])
    bars = ax.barh(y, shares, color=colors, height=0.7)
    ax.bar_label(bars, labels=[f"{s:.1%}" for s in shares], padding=2, fontsize=7.5,
                 color=MUTED)
    ax.set_yticks(y, labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)  # first bar on top
    ax.set_xlim(0, max(float(shares.max(initial=0)) * 1.22, 0.01))
    ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("share of rows")


def _hist(ax, values: pd.Series, bins: np.ndarray | int, color: str) -> np.ndarray:
    present = values.dropna()
    if pd.api.types.is_datetime64_any_dtype(present):
        data = present.to_numpy("datetime64[ns]")
    else:
        data = present.to_numpy(dtype=np.float64)
    weights = np.full(len(data), 1.0 / max(len(values), 1))
    _, edges, _ = ax.hist(data, bins=bins, weights=weights, color=color)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=1))
    ax.set_ylabel("share of rows")
    ax.grid(axis="x", visible=False)
    missing = len(values) - len(present)
    if missing:
        ax.annotate(f"+ {missing / len(values):.1%} missing", xy=(1, 1),
                    xycoords="axes fraction", ha="right", va="top", fontsize=8, color=MUTED)
    return edges


def qi_plot(original: pd.Series, released: pd.Series) -> str:
    """Before / after: the original values next to the released ones, as shares of rows.

    Categorical values and released labels: the most frequent ones as bars (the rest in one
    bar, so a column with hundreds of values stays readable); a numeric or date original
    with many values: a histogram. Labels of an ordered column are shown in the order of
    the original values they stand for (``[20-29]`` before ``[30-39]``), when the rows of
    both tables correspond.
    """
    original = original.reset_index(drop=True)
    released = released.reset_index(drop=True)
    orig_counts = original.value_counts(dropna=False, sort=True)
    rel_counts = released.value_counts(dropna=False, sort=True)
    rel_counts = rel_counts[rel_counts > 0]  # unused categories of a Categorical
    orig_continuous = _is_continuous(original, len(orig_counts))
    rel_continuous = _is_continuous(released, len(rel_counts))
    mags = _magnitudes(original)
    if not orig_continuous and mags is not None:  # few numeric values: in value order
        orig_counts = orig_counts.sort_index(kind="stable")
    if not rel_continuous and mags is not None and len(original) == len(released):
        rel_counts = _in_value_order(rel_counts, released, mags)
    panels = []
    for counts, continuous, n, other in ((orig_counts, orig_continuous, len(original),
                                          "values"),
                                         (rel_counts, rel_continuous, len(released),
                                          "labels")):
        panels.append(None if continuous else _bar_data(counts, n, other))
    n_bars = max((len(p[0]) for p in panels if p is not None), default=0)
    fig = _figure(max(2.5, 0.2 * n_bars + 1.0))
    left, right = _panels(fig, [NUMBER_MARGIN if p is None else _label_margin(p[0])
                                for p in panels])
    bins: np.ndarray | int = 40
    if panels[0] is None:
        bins = _hist(left, original, min(40, len(orig_counts)), ORIGINAL)
    else:
        _draw_bars(left, panels[0][0], panels[0][1], ORIGINAL, panels[0][2])
    if panels[1] is None:
        _hist(right, released, bins if orig_continuous else 40, RELEASED)
    else:
        _draw_bars(right, panels[1][0], panels[1][1], RELEASED, panels[1][2])
    left.set_title(f"Original: {len(orig_counts):,} distinct value"
                   f"{'' if len(orig_counts) == 1 else 's'}")
    what = "value" if rel_continuous else "label"
    right.set_title(f"Released: {len(rel_counts):,} distinct {what}"
                    f"{'' if len(rel_counts) == 1 else 's'}")
    return to_data_uri(fig)


def _in_value_order(counts: pd.Series, released: pd.Series, mags: np.ndarray) -> pd.Series:
    """The most frequent labels ordered by the mean original value of their rows."""
    codes, uniques = pd.factorize(released, use_na_sentinel=False)
    present = ~np.isnan(mags)
    totals = np.bincount(codes[present], weights=mags[present], minlength=len(uniques))
    rows = np.bincount(codes[present], minlength=len(uniques))
    with np.errstate(invalid="ignore", divide="ignore"):
        position = pd.Series(totals / rows, index=pd.Index(np.asarray(uniques, dtype=object)))
    top = counts.iloc[:TOP]
    pos = position.reindex(top.index.astype(object)).to_numpy()
    return pd.concat([top.iloc[np.argsort(pos, kind="stable")], counts.iloc[TOP:]])
