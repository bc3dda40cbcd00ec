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
    return Figure(figsize=(width, height), layout="constrained")


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
    left, right = fig.subplots(1, 2)
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
    left.set_xlabel("class size (rows)")
    left.set_ylabel("classes")
    left.yaxis.set_major_locator(MaxNLocator(integer=True))
    right.set_title("Rows by the size of their class")
    right.set_xlabel("class size (rows)")
    right.set_ylabel("share of rows")
    right.yaxis.set_major_formatter(PercentFormatter(1.0))
    if k is not None:
        for ax in (left, right):
            ax.axvline(k, color=ALERT, linestyle="--", linewidth=1)
        left.annotate(f"required ≥ {k:g}", xy=(k, 1), xycoords=("data", "axes fraction"),
                      xytext=(4, -10), textcoords="offset points", color=ALERT, fontsize=8.5)
    for ax in (left, right):
        ax.grid(axis="x", visible=False)
    return to_data_uri(fig)


# --------------------------------------------------------------------------- risk


def risk_plot(sizes: np.ndarray, threshold: float) -> str:
    """Per-record prosecutor risk (1 / class size), as a share of the records."""
    sizes = np.asarray(sizes, dtype=np.float64)
    risks = 1.0 / sizes
    top = max(float(risks.max()), threshold) * 1.05
    fig = _figure(2.7)
    ax = fig.subplots()
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
    names = list(ncp)
    values = np.array([ncp[n] for n in names], dtype=np.float64)
    fig = _figure(max(1.6, 0.3 * len(names) + 0.8), width=WIDTH * 0.62)
    ax = fig.subplots()
    y = np.arange(len(names))
    bars = ax.barh(y, values, color=RELEASED, height=0.65)
    ax.bar_label(bars, labels=[f"{v:.1%}" for v in values], padding=3, fontsize=8.5,
                 color=INK)
    ax.set_yticks(y, [plot_text(n) for n in names])
    ax.invert_yaxis()
    upper = max(float(values.max(initial=0)) * 1.18, 0.02)
    ax.set_xlim(0, min(upper, 1.12))
    ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0 if upper > 0.05 else 1))
    if gcp is not None:
        ax.axvline(gcp, color=ALERT, linestyle="--", linewidth=1)
        ax.annotate(f"GCP {gcp:.1%}", xy=(gcp, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(4, 2), textcoords="offset points", color=ALERT, fontsize=8.5)
    ax.set_xlabel("NCP (share of the domain a released value covers, averaged over rows)")
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


def _bars(ax, counts: pd.Series, n: int, color: str, n_distinct: int,
          other_label: str) -> int:
    """Top bars of ``counts`` (already ordered), the rest summed into one bar."""
    shown = counts.iloc[:TOP]
    labels = [plot_text(v) for v in shown.index]
    shares = shown.to_numpy(dtype=np.float64) / n
    rest = n_distinct - len(shown)
    if rest > 0:
        labels.append(f"{rest:,} other {other_label}")
        shares = np.append(shares, counts.iloc[TOP:].sum() / n)
    y = np.arange(len(labels))
    colors = [color] * len(shown) + (["#c5ccd3"] if rest > 0 else [])
    bars = ax.barh(y, shares, color=colors, height=0.7)
    ax.bar_label(bars, labels=[f"{s:.1%}" for s in shares], padding=2, fontsize=7.5,
                 color=MUTED)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlim(0, max(float(shares.max(initial=0)) * 1.2, 0.01))
    ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("share of rows")
    return len(labels)


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
        # order the most frequent labels by the mean original value of their rows
        codes, uniques = pd.factorize(released, use_na_sentinel=False)
        present = ~np.isnan(mags)
        totals = np.bincount(codes[present], weights=mags[present], minlength=len(uniques))
        counts = np.bincount(codes[present], minlength=len(uniques))
        with np.errstate(invalid="ignore", divide="ignore"):
            position = pd.Series(totals / counts,
                                 index=pd.Index(np.asarray(uniques, dtype=object)))
        top = rel_counts.iloc[:TOP]
        pos = position.reindex(top.index.astype(object)).to_numpy()
        rel_counts = pd.concat([top.iloc[np.argsort(pos, kind="stable")],
                                rel_counts.iloc[TOP:]])
    n_bars = max(0 if orig_continuous else min(len(orig_counts), TOP + 1),
                 0 if rel_continuous else min(len(rel_counts), TOP + 1))
    fig = _figure(max(2.5, 0.2 * n_bars + 1.0))
    left, right = fig.subplots(1, 2)
    bins: np.ndarray | int = 40
    if orig_continuous:
        bins = _hist(left, original, min(40, len(orig_counts)), ORIGINAL)
    else:
        _bars(left, orig_counts, len(original), ORIGINAL, len(orig_counts), "values")
    if rel_continuous:
        _hist(right, released, bins if orig_continuous else 40, RELEASED)
    else:
        _bars(right, rel_counts, len(released), RELEASED, len(rel_counts), "labels")
    left.set_title(f"Original: {len(orig_counts):,} distinct value"
                   f"{'' if len(orig_counts) == 1 else 's'}")
    what = "value" if rel_continuous else "label"
    right.set_title(f"Released: {len(rel_counts):,} distinct {what}"
                    f"{'' if len(rel_counts) == 1 else 's'}")
    return to_data_uri(fig)
