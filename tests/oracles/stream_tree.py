"""The stream tree (spec 003): the notebook's ``incrementalAnon``, written plainly from its
``follow`` without the package: after each insertion, every value so far walks down the
perfect binary tree over ``0 .. 2^depth - 1`` from the root, and stops at the first node one
of whose children holds fewer than k of the values so far."""

from __future__ import annotations


def follow(k: int, depth: int, value: int, values: list[int]) -> tuple[int, int]:
    """The span (first, last) where ``value`` stops, the tree counting ``values``."""
    prefix, left_bits = 0, depth
    while left_bits > 0:
        width = 1 << (left_bits - 1)  # values under each child
        low = prefix << left_bits
        in_left = sum(low <= v < low + width for v in values)
        in_right = sum(low + width <= v < low + 2 * width for v in values)
        if in_left < k or in_right < k:
            break
        prefix = (prefix << 1) | ((value >> (left_bits - 1)) & 1)
        left_bits -= 1
    return prefix << left_bits, ((prefix + 1) << left_bits) - 1


def incremental_spans(k: int, depth: int, values: list[int]) -> list[list[tuple[int, int]]]:
    """The notebook's ``incrementalAnon k depth values``: after each insertion, the span of
    every value so far."""
    out = []
    for n in range(1, len(values) + 1):
        seen = values[:n]
        out.append([follow(k, depth, v, seen) for v in seen])
    return out
