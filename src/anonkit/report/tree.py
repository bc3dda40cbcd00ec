"""A picture of a truncated code tree (spec 003's ``privateTree``).

Only the truncated tree is drawn: the nodes above the cut with their counts, and the
released nodes, each with the range of values it covers and its rows, one line each,
root on the left, in symbol order (an in-order walk), so an alphabetic tree reads top to
bottom like its values. A tree with more released nodes than fit collapses its lightest
subtrees into one line each.

The picture is drawn from the tree the release carries (:attr:`Release.cut_tree`), never by
running the method again. It shows counts below the cut: it is for the data steward's
report, never for publication.
"""

from __future__ import annotations

import heapq
import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from anonkit._util.numbers import exact_number
from anonkit.report.plots import WIDTH, plot_text, style, to_chart

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from anonkit.release import Release


class DrawableTree(Protocol):
    """What :func:`plot_tree` reads of a tree: node ``i < n_symbols`` is the leaf of symbol
    ``i``, ``left``/``right`` are -1 at a leaf, ``counts`` holds the rows under each node.
    A release's :class:`~anonkit.release.CutTree` has it, and so has the algorithms'
    ``CodeTree`` (structurally: the report does not depend on the algorithms)."""

    @property
    def left(self) -> np.ndarray: ...
    @property
    def right(self) -> np.ndarray: ...
    @property
    def counts(self) -> np.ndarray: ...
    @property
    def root(self) -> int: ...
    @property
    def n_symbols(self) -> int: ...


CUT_COLOUR = "#c0392b"
NODE_COLOUR = "#2c3e50"
#: the picture shows at most this many end nodes (released nodes, or subtrees of the
#: truncated tree collapsed into one): each gets a line of text at a readable size
MAX_TERMINALS = 36
#: leaves were labelled with their values up to this many symbols (kept for callers)
MAX_LABELLED = 40
#: points: at :data:`~anonkit.report.plots.CSS_PX_PER_INCH` 9 pt is 12.5 CSS px, and the
#: figure is never wider than the page, so it is never shrunk below that
FONT_PT = 9.0
#: values listed in a node's text before they are summarised as "a … z (n values)"
VALUES_LISTED = 3


def _terminals(tree: DrawableTree, visible: np.ndarray, limit: int) -> np.ndarray:
    """Which visible nodes end the picture: expand the root, heaviest node first, while
    the end nodes stay within ``limit`` (a node whose children are hidden ends it)."""
    ends = {int(tree.root)}
    heap = [(-int(tree.counts[tree.root]), int(tree.root))]
    while heap and len(ends) < limit:
        _, node = heapq.heappop(heap)
        left, right = int(tree.left[node]), int(tree.right[node])
        if left < 0 or not visible[left]:
            continue
        ends.discard(node)
        for child in (left, right):
            ends.add(child)
            heapq.heappush(heap, (-int(tree.counts[child]), child))
    return np.fromiter(sorted(ends), dtype=np.int64)


def _subtree_symbols(tree: DrawableTree, node: int) -> np.ndarray:
    """The symbols (leaves) under ``node``, in order."""
    out: list[int] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if tree.left[n] < 0:
            out.append(n)
        else:
            stack += [int(tree.right[n]), int(tree.left[n])]
    return np.asarray(out, dtype=np.int64)


def _values_text(values: np.ndarray) -> str:
    """One quasi-identifier's values under a node: a range for numbers, else a list."""
    if values.dtype.kind in "iuf":
        lo, hi = values.min(), values.max()
        return exact_number(lo) if lo == hi else f"{exact_number(lo)}–{exact_number(hi)}"
    distinct = sorted({str(v) for v in values})
    if len(distinct) <= VALUES_LISTED:
        return ", ".join(distinct)
    return f"{distinct[0]} … {distinct[-1]} ({len(distinct)} values)"


def _node_text(symbols: np.ndarray, values: Mapping[str, np.ndarray] | None,
               labels: Sequence[str] | None) -> str:
    if values:
        return "; ".join(_values_text(np.asarray(v)[symbols]) for v in values.values())
    if labels is not None:
        first, last = labels[int(symbols.min())], labels[int(symbols.max())]
        return first if first == last else f"{first}–{last}"
    return f"{len(symbols)} values"


def plot_tree(tree: DrawableTree, owner: np.ndarray | None = None, *,
              labels: Sequence[str] | None = None,
              values: Mapping[str, np.ndarray] | None = None,
              max_terminals: int = MAX_TERMINALS) -> Figure:
    """The truncated tree as a matplotlib figure, root on the left: only the nodes above
    the cut and the released nodes (``owner``: per node its released node, as
    :attr:`CutTree.owner <anonkit.release.CutTree.owner>`, -1 above the cut; None: the
    whole tree). Each end node is labelled with the values it covers (``values``: per
    quasi-identifier, per symbol its value; else ``labels``: per symbol its text, in
    order) and its rows. When more than ``max_terminals`` end nodes would be drawn, the
    lightest subtrees are drawn as one node each, saying how many released nodes they
    hold."""
    from matplotlib.figure import Figure

    n_nodes = len(tree.left)
    released = np.zeros(n_nodes, dtype=bool)
    visible = np.ones(n_nodes, dtype=bool)
    if owner is not None:
        released = owner == np.arange(n_nodes)
        visible = (owner < 0) | released
    ends = _terminals(tree, visible, max_terminals)
    is_end = np.zeros(n_nodes, dtype=bool)
    is_end[ends] = True
    # the drawn tree: from the root down to the end nodes
    depth = np.full(n_nodes, -1, dtype=np.int64)
    order: list[int] = []  # end nodes top to bottom, left subtree first
    drawn: list[int] = []
    stack = [(int(tree.root), 0)]
    while stack:
        node, d = stack.pop()
        depth[node] = d
        drawn.append(node)
        if is_end[node]:
            order.append(node)
        else:
            stack += [(int(tree.right[node]), d + 1), (int(tree.left[node]), d + 1)]
    y = np.zeros(n_nodes)
    y[np.asarray(order, dtype=np.int64)] = -np.arange(len(order), dtype=np.float64)
    for node in sorted(drawn, key=lambda n: -depth[n]):
        if not is_end[node]:
            y[node] = (y[tree.left[node]] + y[tree.right[node]]) / 2
    max_depth = int(depth[drawn].max())
    height = 0.9 + 0.3 * len(order)
    width = WIDTH
    fig = Figure(figsize=(width, height))
    # the tree takes the left part, the end nodes' text the rest
    tree_part = min(0.45, 0.07 * (max_depth + 1))
    ax = fig.add_axes((0.02, 0.3 / height, 0.96, 1 - 0.75 / height))
    ax.set_xlim(-0.5, (max_depth + 0.5) / tree_part)
    ax.set_ylim(-len(order) + 0.5, 0.5)
    for node in drawn:
        if is_end[node]:
            continue
        for child in (int(tree.left[node]), int(tree.right[node])):
            ax.plot([depth[node], depth[node], depth[child]], [y[node], y[child], y[child]],
                    color=NODE_COLOUR, alpha=0.7, lw=1, zorder=1)
    counts_at = {}
    for node in drawn:
        edge = CUT_COLOUR if released[node] else NODE_COLOUR
        ax.scatter([depth[node]], [y[node]], s=70, facecolor="white", edgecolor=edge,
                   linewidths=2.0 if released[node] else 1.0, zorder=2)
        counts_at[node] = int(tree.counts[node])
        if not is_end[node]:
            ax.text(depth[node] - 0.08, y[node] + 0.12, f"{counts_at[node]:,}", ha="right",
                    va="bottom", fontsize=FONT_PT - 1, color=NODE_COLOUR, zorder=3)
    text_x = max_depth + 0.45
    for node in order:
        symbols = _subtree_symbols(tree, node)
        what = _node_text(symbols, values, labels)
        rows = f"{int(tree.counts[node]):,} rows"
        if released[node] or owner is None:
            tail = rows
        else:
            below = int(np.count_nonzero(released[_subtree_nodes(tree, node)]))
            tail = f"{rows}, {below:,} released nodes below"
        ax.plot([depth[node], text_x - 0.1], [y[node], y[node]], color="#c5ccd3", lw=0.6,
                ls=":", zorder=0)
        ax.text(text_x, y[node], f"{plot_text(what, 52)}  ·  {tail}", ha="left",
                va="center", fontsize=FONT_PT,
                color=CUT_COLOUR if released[node] else NODE_COLOUR, zorder=3)
    ax.set_axis_off()
    ax.set_title("The truncated code tree: root on the left; released nodes in red, with "
                 "the values they cover and their rows", fontsize=FONT_PT + 1, loc="left")
    return fig


def _subtree_nodes(tree: DrawableTree, node: int) -> np.ndarray:
    out: list[int] = []
    stack = [node]
    while stack:
        n = stack.pop()
        out.append(n)
        if tree.left[n] >= 0:
            stack += [int(tree.left[n]), int(tree.right[n])]
    return np.asarray(out, dtype=np.int64)


def tree_section(result: Release, original: pd.DataFrame | None = None) -> str:
    """The report section with the picture of the tree a huffman or alphabetic release was
    cut from (:attr:`Release.cut_tree`); empty for a release without one. ``original`` is
    not needed: the release carries the tree."""
    tree = result.cut_tree
    if tree is None:
        return ""
    with style():
        chart = to_chart(plot_tree(tree, tree.owner, values=tree.symbol_values))
    n_released = int(np.count_nonzero(tree.owner == np.arange(len(tree.owner))))
    caption = (f"The {html.escape(str(tree.kind))} tree over {tree.n_symbols:,} distinct "
               f"values, truncated: only the nodes above the cut and the {n_released:,} "
               f"released nodes (red) are drawn, each with the values it covers "
               f"({html.escape(', '.join(tree.symbol_values))}) and its rows; a row is "
               f"released as the node its walk from the root stops at. This picture "
               f"shows counts: keep it with the steward.")
    return (f'<section id="tree"><h2>Code tree</h2><div class="card"><figure>'
            f'<img src="{chart.uri}" alt="truncated code tree" '
            f'style="max-width: {chart.width}px"><figcaption>{caption}</figcaption>'
            f"</figure></div></section>")
