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


def parse_span(label: str) -> tuple[int, int]:
    """A released age label, ``"42"``, ``"[32-47]"`` or ``"[-8, 7]"``, as (first, last)."""
    text = str(label).strip()
    if not text.startswith("["):
        return int(float(text)), int(float(text))
    inner = text[1:-1]
    if "," in inner:
        first, last = inner.split(",")
    else:
        first, last = inner[0] + inner[1:].split("-", 1)[0], inner[1:].split("-", 1)[1]
    return int(first), int(last)


def thin_intersections(spans_per_release: list[dict[str, str]], latest_values: dict[str, int],
                       k: int) -> dict[str, int]:
    """The linkage adversary, brute force: for every person, intersect the spans released
    for them in every release they are in (labels by person) and count the rows of the
    latest release (``latest_values``: each person's true value) whose value lies in that
    intersection. Returns the persons left with fewer than ``k``, with their count."""
    thin: dict[str, int] = {}
    for person in latest_values:
        first, last = -(10**18), 10**18
        for spans in spans_per_release:
            if person in spans:
                lo, hi = parse_span(spans[person])
                first, last = max(first, lo), min(last, hi)
        inside = sum(first <= v <= last for v in latest_values.values())
        if inside < k:
            thin[person] = inside
    return thin
