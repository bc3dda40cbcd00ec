"""The stream tree (spec 003): the notebook's spans, one insertion at a time."""

from __future__ import annotations

from anonkit.algorithms.stream_tree import StreamTree


def incremental_spans(k: int, depth: int, values: list[int]) -> list[list[tuple[int, int]]]:
    """The notebook's ``incrementalAnon k depth values``: after each insertion, the span of
    every value so far (domain ``0 .. 2^depth - 1``)."""
    tree = StreamTree(k, (0, (1 << depth) - 1))
    out = []
    for v in values:
        tree.insert(v)
        out.append(tree.spans())
    return out
