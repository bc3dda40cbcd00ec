"""The drawing kit of the report's charts: inline SVG written by hand.

matplotlib spent about a second of a report's 1.3 s drawing a dozen bar charts into PNGs
(laying out and rasterising each glyph); the same charts as SVG text take milliseconds,
stay sharp at any zoom, are searchable, and carry their numbers as tooltips. The cost is
that text cannot be measured before the browser draws it: :func:`text_width` estimates it
from Arial's advance widths (the page's fonts: Liberation Sans, Helvetica and Arial share
them), with a little to spare.

Every piece of text goes through :func:`html.escape` here (the SVG is parsed as part of the
HTML page); callers pass plain text, never markup.
"""

from __future__ import annotations

import html
import math
import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["Chart", "Scale", "Svg", "date_ticks", "log_ticks", "nice_ticks", "text_width"]

INK = "#1f2933"
MUTED = "#616e7c"
GRID = "#e6e9ed"
SPINE = "#c5ccd3"

TICK_PX = 12  # tick labels and category labels: the page's small text
TITLE_PX = 14
VALUE_PX = 11  # a bar's value beside it: the smallest text of a chart

# Arial's advance widths (thousandths of an em) for ASCII; anything else counts as 0.6 em
# (1 em when East Asian wide)
_ADVANCES: dict[str, int] = {}
for _chars, _width in (("'", 191), ("ijl", 222), ("|", 260), (" !,./:;I[\\]ft", 278),
                       ("()-`r", 333), ("{}", 334), ('"', 355), ("*", 389), ("^", 469),
                       ("Jckvxyzs", 500), ("#$0123456789?L_abdeghnopqu–", 556),
                       ("+<=>~", 584), ("FTZ", 611), ("&ABEKPSVXY", 667), ("CDHNRUw", 722),
                       ("GOQ", 778), ("Mm", 833), ("%", 889), ("W", 944), ("@", 1015),
                       ("…", 1000)):
    for _char in _chars:
        _ADVANCES[_char] = _width
SPARE = 1.05  # for fonts a little wider than Arial (Segoe UI, Roboto)


def text_width(text: str, size: float, *, bold: bool = False) -> float:
    """The estimated width (px) of ``text`` drawn at ``size`` px in the page's sans-serif."""
    thousandths = 0
    for char in text:
        advance = _ADVANCES.get(char)
        if advance is None:
            advance = 1000 if unicodedata.east_asian_width(char) in "WF" else 600
        thousandths += advance
    return thousandths / 1000 * size * SPARE * (1.07 if bold else 1.0)


def _n(x: float) -> str:
    """A coordinate: a tenth of a pixel is finer than any screen shows."""
    return f"{x:.1f}".rstrip("0").rstrip(".") if math.isfinite(x) else "0"


def _e(text: str) -> str:
    return html.escape(text, quote=True)


class Chart(NamedTuple):
    """A chart's SVG drawing (``body``: markup) and its natural size in CSS px; shown at
    that width, shrunk on narrow screens, so text appears at the same size in every
    chart."""

    body: str
    width: int
    height: int

    def markup(self, alt: str) -> str:
        """The ``<svg>`` element; ``alt`` (text) is its accessible name and tooltip."""
        return (f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" role="img" '
                f'aria-label="{_e(alt)}" viewBox="0 0 {self.width} {self.height}" '
                f'width="{self.width}" height="{self.height}" '
                f'style="max-width: {self.width}px"><title>{_e(alt)}</title>'
                f"{self.body}</svg>")


class Svg:
    """A drawing in layers (grid below the marks, text on top), in CSS px."""

    def __init__(self, width: float, height: float) -> None:
        self.width = round(width)
        self.height = round(height)
        self._grid: list[str] = []
        self._marks: list[str] = []
        self._front: list[str] = []

    def chart(self) -> Chart:
        return Chart("".join([*self._grid, *self._marks, *self._front]), self.width,
                     self.height)

    def grid_line(self, x1: float, y1: float, x2: float, y2: float) -> None:
        self._grid.append(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" '
                          f'stroke="{GRID}"/>')

    def line(self, x1: float, y1: float, x2: float, y2: float, color: str = SPINE, *,
             dashed: bool = False, width: float = 1.0) -> None:
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        self._front.append(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" '
                           f'stroke="{color}" stroke-width="{_n(width)}"{dash}/>')

    def rects(self, x: np.ndarray, y: np.ndarray, w: np.ndarray, h: np.ndarray,
              colors: Sequence[str], tips: Sequence[str], *, edge: str | None = None) -> None:
        """Bars (top-left corners and sizes), each with its tooltip (text)."""
        stroke = f' stroke="{edge}" stroke-width="0.6"' if edge else ""
        for xi, yi, wi, hi, color, tip in zip(x, y, w, h, colors, tips, strict=True):
            self._marks.append(
                f'<rect x="{_n(xi)}" y="{_n(yi)}" width="{_n(max(wi, 0.0))}" '
                f'height="{_n(max(hi, 0.0))}" fill="{color}"{stroke}>'
                f"<title>{_e(tip)}</title></rect>")

    def text(self, x: float, y: float, text: str, *, size: float = TICK_PX,
             color: str = INK, anchor: str = "start", middle: bool = False,
             bold: bool = False, rotate: float = 0.0, halo: bool = False,
             tip: str | None = None, kind: str | None = None) -> None:
        """``text`` (plain) at (x, y): its baseline there, or its middle with ``middle``;
        ``halo``: a white outline, readable over lines; ``tip``: a tooltip (the whole of a
        shortened label); ``kind``: its class (what the text is, as ``category``)."""
        attrs = [f'class="{_e(kind)}"'] if kind else []
        attrs += [f'x="{_n(x)}" y="{_n(y)}"', f'font-size="{_n(size)}"']
        if color != INK:
            attrs.append(f'fill="{color}"')
        if anchor != "start":
            attrs.append(f'text-anchor="{anchor}"')
        if middle:
            attrs.append('dy=".35em"')
        if bold:
            attrs.append('font-weight="bold"')
        if rotate:
            attrs.append(f'transform="rotate({_n(rotate)} {_n(x)} {_n(y)})"')
        if halo:
            attrs.append('stroke="#fff" stroke-width="3" paint-order="stroke"')
        title = f"<title>{_e(tip)}</title>" if tip and tip != text else ""
        self._front.append(f'<text {" ".join(attrs)}>{title}{_e(text)}</text>')

    def group(self, kind: str) -> None:
        """Start a ``<g class="kind">`` in the front layer (ended by :meth:`end`): what a
        reader (or a test) can tell apart, as the panels of a chart."""
        self._front.append(f'<g class="{_e(kind)}">')

    def end(self) -> None:
        self._front.append("</g>")


class Scale(NamedTuple):
    """Data ``lo..hi`` onto pixels ``start..start+length`` (``flip``: upwards, as a y
    axis), linear or logarithmic."""

    lo: float
    hi: float
    start: float
    length: float
    log: bool = False
    flip: bool = False

    def __call__(self, values: np.ndarray | float) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        lo, hi = self.lo, self.hi
        if self.log:
            v, lo, hi = np.log10(np.maximum(v, 1e-300)), math.log10(lo), math.log10(hi)
        span = hi - lo if hi != lo else 1.0
        frac = (v - lo) / span
        return self.start + (1.0 - frac if self.flip else frac) * self.length


def nice_ticks(lo: float, hi: float, *, bins: int = 6,
               steps: Sequence[float] = (1, 2, 2.5, 5, 10), integer: bool = False) -> list[float]:
    """At most about ``bins`` + 1 ticks at round steps (``steps`` x 10^n) within
    ``lo..hi``; ``integer``: whole-number steps only."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / bins
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = steps[-1] * magnitude
    for s in steps:
        candidate = s * magnitude
        if integer and (candidate < 1 or not float(candidate).is_integer()):
            continue
        if candidate >= raw * (1 - 1e-9):
            step = candidate
            break
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks of a logarithmic axis: 1, 2, 5 x 10^n within ``lo..hi``, thinned to every
    decade when that makes too many."""
    if lo <= 0 or hi <= lo:
        return []
    ticks = [m * 10.0 ** p for p in range(math.floor(math.log10(lo)),
                                          math.ceil(math.log10(hi)) + 1)
             for m in (1, 2, 5) if lo <= m * 10.0 ** p <= hi]
    if len(ticks) > 9:
        ticks = [t for t in ticks if math.log10(t).is_integer()] or ticks
    return ticks


_DAY_STEPS = ((1, "D"), (2, "D"), (7, "D"), (14, "D"), (1, "M"), (2, "M"), (3, "M"),
              (6, "M"), (1, "Y"), (2, "Y"), (5, "Y"), (10, "Y"), (20, "Y"), (50, "Y"),
              (100, "Y"), (200, "Y"), (500, "Y"), (1000, "Y"))
_UNIT_DAYS = {"D": 1.0, "M": 30.44, "Y": 365.25}


def date_ticks(lo: float, hi: float, most: int = 7) -> tuple[list[float], list[str]]:
    """At most ``most`` ticks of a date axis in day numbers (days since 1970-01-01) at
    round calendar steps, labelled as ISO dates as precise as the step: years, months or
    days."""
    span = max(hi - lo, 1.0)
    for n, unit in _DAY_STEPS:
        if span / (n * _UNIT_DAYS[unit]) > most + 1:
            continue  # (too many, without counting them)
        first = np.datetime64(math.floor(lo), "D").astype(f"datetime64[{unit}]")
        last = np.datetime64(math.ceil(hi), "D").astype(f"datetime64[{unit}]")
        whole = np.arange(first, last + 1)
        whole = whole[whole.astype(np.int64) % n == 0]
        days = whole.astype("datetime64[D]")
        positions = days.astype(np.int64).astype(np.float64)
        keep = (positions >= lo) & (positions <= hi)
        if np.count_nonzero(keep) <= most or (n, unit) == _DAY_STEPS[-1]:
            text = {"Y": 4, "M": 7, "D": 10}[unit]
            return positions[keep].tolist(), [str(d)[:text] for d in days[keep]]
    return [], []
