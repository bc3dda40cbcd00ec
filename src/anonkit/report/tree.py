"""A picture of a truncated code tree (spec 003's ``privateTree``).

Every node is drawn with its count; the released nodes (the cut) are marked, and the
subtrees below them -- what truncation hides -- are faded. Leaves are laid out in symbol
order (an in-order walk), so an alphabetic tree reads left to right like its values.

The picture shows counts below the cut: it is for the data steward's report, never for
publication.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from anonkit.algorithms.compression import CodeTree
    from anonkit.release import Release

CUT_COLOUR = "#c0392b"
NODE_COLOUR = "#2c3e50"


def _layout(tree: CodeTree) -> tuple[np.ndarray, np.ndarray]:
    """Per node (x, depth): leaves at consecutive x in in-order, parents centred."""
    x = np.zeros(tree.n_nodes)
    depth = tree.depths()
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
    for nodes in reversed(tree.levels()):
        inner = nodes[tree.left[nodes] >= 0]
        x[inner] = (x[tree.left[inner]] + x[tree.right[inner]]) / 2
    return x, depth


def plot_tree(tree: CodeTree, owner: np.ndarray | None = None, *,
              labels: Sequence[str] | None = None, max_nodes: int = 400) -> Figure:
    """The tree as a matplotlib figure. ``owner``: per node its released node (from
    :func:`anonkit.algorithms.compression.truncate`), -1 above the cut; ``labels``: per
    symbol, its text (shown under the leaves when there are few). Only the top levels are
    drawn when the tree has more than ``max_nodes`` nodes."""
    from matplotlib.figure import Figure

    x, depth = _layout(tree)
    shown = np.ones(tree.n_nodes, dtype=bool)
    levels = tree.levels()
    if tree.n_nodes > max_nodes:
        total = 0
        keep = 0
        for d, nodes in enumerate(levels):
            total += len(nodes)
            if total > max_nodes:
                break
            keep = d
        shown = depth <= keep
    released = np.zeros(tree.n_nodes, dtype=bool)
    below = np.zeros(tree.n_nodes, dtype=bool)
    if owner is not None:
        released = owner == np.arange(tree.n_nodes)
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
    if labels is not None and tree.n_symbols <= 40 and shown[:tree.n_symbols].all():
        for s in range(tree.n_symbols):
            ax.text(x[s], -depth[s] - 0.45, str(labels[s]), ha="center", va="top",
                    fontsize=6.5, rotation=90 if len(str(labels[s])) > 3 else 0,
                    alpha=0.5 if below[s] else 1.0)
    ax.set_axis_off()
    ax.set_ylim(-max_depth - 1.2, 0.6)
    ax.set_title("code tree: node counts; released nodes outlined in red, hidden subtrees "
                 "faded", fontsize=8)
    return fig


def tree_section(result: Release, original: pd.DataFrame) -> str:
    """The report section with the picture of a huffman or alphabetic release's tree
    (rebuilt from the original table and the release's parameters); empty for other
    methods."""
    if result.method not in ("huffman", "alphabetic"):
        return ""
    from anonkit.algorithms.compression import CompressionAnonymizer
    from anonkit.data.table import encode
    from anonkit.report.plots import to_chart

    params = result.parameters
    table = encode(original, result.schema)
    sensitive = table.sensitive[0].codes if params.get("l") is not None and table.sensitive \
        else None
    model = CompressionAnonymizer(result.method, k=int(params["k"]),  # type: ignore[call-overload]
                                  l=params.get("l"),  # type: ignore[arg-type]
                                  tree=None if result.method == "huffman"
                                  else str(params.get("tree")),
                                  summary=str(params.get("summary", "range")))
    model.fit_codes(table.qi_matrix, sensitive)
    labels = [", ".join(str(c.values[code]) for c, code in zip(
        table.quasi_identifiers, codes, strict=True)) for codes in model.symbol_codes_.tolist()]
    chart = to_chart(model.tree_.plot(model.owner_, labels=labels))
    caption = (f"The {html.escape(str(model.tree_.kind))} tree over "
               f"{model.tree_.n_symbols} distinct values: each node shows its rows; values "
               f"are released as the red-outlined node their walk from the root stops at. "
               f"This picture shows counts below the cut: keep it with the steward.")
    return (f'<section id="tree"><h2>Code tree</h2><figure><img src="{chart.uri}" '
            f'alt="code tree" style="max-width: {chart.width}px"><figcaption>{caption}'
            f'</figcaption></figure></section>')
