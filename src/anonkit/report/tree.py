"""A picture of a truncated code tree (spec 003's ``privateTree``).

Every node is drawn with its count; the released nodes (the cut) are marked, and the
subtrees below them -- what truncation hides -- are faded. Leaves are laid out in symbol
order (an in-order walk), so an alphabetic tree reads left to right like its values.

The picture is drawn from the tree the release carries (:attr:`Release.cut_tree`), never by
running the method again. It shows counts below the cut: it is for the data steward's
report, never for publication.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from anonkit.report.plots import to_chart

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
#: leaves are labelled with their values only up to this many symbols (more do not fit)
MAX_LABELLED = 40


def _levels(tree: DrawableTree) -> list[np.ndarray]:
    """The nodes level by level from the root (one array per depth)."""
    out = [np.array([tree.root], dtype=np.int64)]
    while True:
        frontier = out[-1]
        inner = frontier[tree.left[frontier] >= 0]
        if not len(inner):
            return out
        out.append(np.stack([tree.left[inner], tree.right[inner]], axis=1).reshape(-1))


def _layout(tree: DrawableTree, levels: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per node (x, depth): leaves at consecutive x in in-order, parents centred."""
    n_nodes = len(tree.left)
    x = np.zeros(n_nodes)
    depth = np.zeros(n_nodes, dtype=np.int64)
    for d, nodes in enumerate(levels):
        depth[nodes] = d
    # in-order: leaves in the order an in-order walk meets them
    order: list[int] = []
    stack = [tree.root]
    while stack:
        node = stack.pop()
        if tree.left[node] < 0:
            order.append(node)
        else:
            stack.append(int(tree.right[node]))
            stack.append(int(tree.left[node]))
    x[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.float64)
    for nodes in reversed(levels):
        inner = nodes[tree.left[nodes] >= 0]
        x[inner] = (x[tree.left[inner]] + x[tree.right[inner]]) / 2
    return x, depth


def plot_tree(tree: DrawableTree, owner: np.ndarray | None = None, *,
              labels: Sequence[str] | None = None, max_nodes: int = 400) -> Figure:
    """The tree as a matplotlib figure. ``owner``: per node its released node (as
    :attr:`CutTree.owner <anonkit.release.CutTree.owner>`), -1 above the cut; ``labels``:
    per symbol, its text (shown under the leaves when there are at most
    :data:`MAX_LABELLED`). Only the top levels are drawn when the tree has more than
    ``max_nodes`` nodes."""
    from matplotlib.figure import Figure

    n_nodes = len(tree.left)
    levels = _levels(tree)
    x, depth = _layout(tree, levels)
    shown = np.ones(n_nodes, dtype=bool)
    if n_nodes > max_nodes:
        total = 0
        keep = 0
        for d, nodes in enumerate(levels):
            total += len(nodes)
            if total > max_nodes:
                break
            keep = d
        shown = depth <= keep
    released = np.zeros(n_nodes, dtype=bool)
    below = np.zeros(n_nodes, dtype=bool)
    if owner is not None:
        released = owner == np.arange(n_nodes)
        below = (owner >= 0) & ~released
    max_depth = int(depth[shown].max()) if shown.any() else 0
    width = min(max(4.0, 0.35 * len(np.unique(x[shown]))), 14.0)
    fig = Figure(figsize=(width, min(1.0 + 0.6 * (max_depth + 1), 8.0)))
    ax = fig.add_axes((0.02, 0.04, 0.96, 0.84))
    inner = np.flatnonzero((tree.left >= 0) & shown)
    for node in inner.tolist():
        for child in (int(tree.left[node]), int(tree.right[node])):
            if not shown[child]:
                continue
            faded = below[child]
            ax.plot([x[node], x[child]], [-depth[node], -depth[child]],
                    color=NODE_COLOUR, alpha=0.2 if faded else 0.8, lw=1, zorder=1)
    for node in np.flatnonzero(shown).tolist():
        faded = bool(below[node])
        edge = CUT_COLOUR if released[node] else NODE_COLOUR
        ax.scatter([x[node]], [-depth[node]], s=260, facecolor="white", edgecolor=edge,
                   linewidths=2.2 if released[node] else 1.0, alpha=0.25 if faded else 1.0,
                   zorder=2)
        ax.text(x[node], -depth[node], str(int(tree.counts[node])), ha="center",
                va="center", fontsize=7, alpha=0.35 if faded else 1.0, zorder=3)
    if labels is not None and tree.n_symbols <= MAX_LABELLED and shown[:tree.n_symbols].all():
        for s in range(tree.n_symbols):
            ax.text(x[s], -depth[s] - 0.45, str(labels[s]), ha="center", va="top",
                    fontsize=6.5, rotation=90 if len(str(labels[s])) > 3 else 0,
                    alpha=0.5 if below[s] else 1.0)
    ax.set_axis_off()
    ax.set_ylim(-max_depth - 1.2, 0.6)
    ax.set_title("code tree: node counts; released nodes outlined in red, hidden subtrees "
                 "faded", fontsize=8)
    return fig


def tree_section(result: Release, original: pd.DataFrame | None = None) -> str:
    """The report section with the picture of the tree a huffman or alphabetic release was
    cut from (:attr:`Release.cut_tree`); empty for a release without one. ``original`` is
    not needed: the release carries the tree."""
    tree = result.cut_tree
    if tree is None:
        return ""
    labels = None
    if tree.n_symbols <= MAX_LABELLED:  # only then are leaves labelled: spare a big table
        labels = [", ".join(str(v) for v in values)
                  for values in zip(*tree.symbol_values.values(), strict=True)]
    chart = to_chart(plot_tree(tree, tree.owner, labels=labels))
    caption = (f"The {html.escape(str(tree.kind))} tree over "
               f"{tree.n_symbols} distinct values: each node shows its rows; values "
               f"are released as the red-outlined node their walk from the root stops at. "
               f"This picture shows counts below the cut: keep it with the steward.")
    return (f'<section id="tree"><h2>Code tree</h2><figure><img src="{chart.uri}" '
            f'alt="code tree" style="max-width: {chart.width}px"><figcaption>{caption}'
            f'</figcaption></figure></section>')
