"""Released labels in one place (:mod:`anonkit.labels`): the reader is the exact inverse of
the writer, for every form and whatever the values hold; the history's audit reads labels
with the same reader (it split ``{"a,b",c}`` at every comma, so an adversary who knew the
value "a,b" was counted as knowing less)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonkit.data.encoding import encode_column
from anonkit.data.schema import ColumnSpec, Kind, Role
from anonkit.generalization import Form, generalize_column
from anonkit.history.knowledge import knowledge
from anonkit.history.store import HistoryStore
from anonkit.labels import (
    INTERVAL,
    OTHER,
    SET,
    ParsedLabel,
    covers,
    format_label,
    label_boxes,
    parse_label,
    range_labels,
)
from history_helpers import pid, release

SETTINGS = settings(max_examples=400, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

#: pieces of texts that the writer must quote, or that the reader could take for syntax
PIECES = ["a", "b", "7", "-3", "1e-05", ",", ", ", "{", "}", "[", "]", "(", ")", '"', '""',
          "-", " ", "\t", "missing", " or missing", "..", "é"]
TEXT = st.lists(st.sampled_from(PIECES), max_size=5).map("".join)

LABELS = st.one_of(
    st.builds(lambda v, m: ParsedLabel(values=(v,), missing=m), TEXT, st.booleans()),
    st.builds(lambda vs, m: ParsedLabel(values=tuple(vs), missing=m),
              st.lists(TEXT, min_size=2, max_size=5), st.booleans()),
    st.builds(lambda lo, hi, m: ParsedLabel(low=lo, high=hi, missing=m), TEXT, TEXT,
              st.booleans()),
    st.just(ParsedLabel(missing=True)),
)


@SETTINGS
@given(LABELS)
def test_every_label_reads_back_as_written(parsed: ParsedLabel) -> None:
    assert parse_label(format_label(parsed)) == parsed


@SETTINGS
@given(st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=6), st.booleans())
def test_ranges_written_together_read_back(bounds: list[tuple[str, str]], dates: bool) -> None:
    """Ranges share one separator per column (``, `` as soon as one bound holds a ``-``)."""
    low = np.array([lo for lo, _ in bounds], dtype=object)
    high = np.array([hi for _, hi in bounds], dtype=object)
    for label, (lo, hi) in zip(range_labels(low, high, dates=dates), bounds, strict=True):
        assert parse_label(label) == ParsedLabel(low=lo, high=hi)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_released_ranges_of_tricky_texts_read_back(data: st.DataObject) -> None:
    """The generalization's own ranges, over ordinal texts holding syntax (as a table
    holds them: read values are stripped, and an empty one is missing)."""
    stripped = TEXT.filter(lambda t: t != "" and t == t.strip())
    order = data.draw(st.lists(stripped, min_size=2, max_size=8, unique=True))
    n = data.draw(st.integers(2, 20))
    values = data.draw(st.lists(st.sampled_from(order), min_size=n, max_size=n))
    spec = ColumnSpec("c", Role.QUASI_IDENTIFIER, Kind.ORDINAL, None, tuple(order))
    col = encode_column(pd.Series(values, dtype=object), spec, allow_missing=False)
    cuts = sorted(data.draw(st.sets(st.integers(1, n - 1), max_size=n)))
    starts = np.array([0, *cuts], dtype=np.int64)
    g = generalize_column(col, np.arange(n), starts, Form.RANGE)
    for c, (s, e) in enumerate(zip(starts, np.append(starts[1:], n), strict=True)):
        ranks = sorted(order.index(v) for v in values[s:e])
        lo, hi = order[ranks[0]], order[ranks[-1]]
        expected = ParsedLabel(values=(lo,)) if lo == hi else ParsedLabel(low=lo, high=hi)
        assert parse_label(g.labels[c]) == expected


# -- the three readings that disagreed -------------------------------------------------------


@pytest.mark.parametrize("label, parsed, box", [
    # a member holding a comma is one member, not '"a' and 'b"'
    ('{"a,b",c}', ParsedLabel(values=("a,b", "c")), (SET, ["a,b", "c"])),
    # a quoted bound: the range from -3 to 7, not a label compared as it is
    ('["-3", 7]', ParsedLabel(low="-3", high="7"), (INTERVAL, [-3.0, 7.0])),
    # the bare word is a missing cell, not the text "missing"
    ("{x,missing}", ParsedLabel(values=("x",), missing=True), (SET, ["x", None])),
    ('{"missing",x}', ParsedLabel(values=("missing", "x")), (SET, ["missing", "x"])),
])
def test_the_writer_the_generalization_and_the_audit_read_alike(
        label: str, parsed: ParsedLabel, box: tuple[int, list[object]]) -> None:
    assert parse_label(label) == parsed
    boxes = label_boxes([label])
    assert boxes.kind.tolist() == [box[0]]
    if box[0] == SET:
        ids = boxes.member_ids[boxes.offsets[0]:boxes.offsets[1]]
        assert boxes.members[ids].tolist() == box[1]
    else:
        assert [boxes.low[0], boxes.high[0]] == box[1]


def test_the_audit_reads_numbers_and_loose_intervals() -> None:
    """Numbers are one-point intervals; hierarchy nodes and hand-written intervals of
    numbers are intervals; texts, dates, quoted values and ranges that may be missing are
    compared as they are."""
    names = [40, 2.5, "7", "[20-29]", "[-5, 3]", "25-34", "[1,4]", "[2.5-5)", "[-5--1]",
             "x", '"7"', "[2020-01-01, 2020-12-31]", "[20-29] or missing", None, True,
             float("nan"), '{"a', "{a,b} or missing"]
    boxes = label_boxes(names)
    intervals = {names[i]: (boxes.low[i], boxes.high[i])
                 for i in np.flatnonzero(boxes.kind == INTERVAL)}
    assert intervals == {40: (40, 40), 2.5: (2.5, 2.5), "7": (7, 7), "[20-29]": (20, 29),
                         "[-5, 3]": (-5, 3), "25-34": (25, 34), "[1,4]": (1, 4),
                         "[2.5-5)": (2.5, 5), "[-5--1]": (-5, -1)}
    assert boxes.kind[names.index("{a,b} or missing")] == SET
    assert (boxes.kind == OTHER).sum() == len(names) - len(intervals) - 1


def test_covers_reads_numbers_as_the_writer_writes_them() -> None:
    assert covers("{1,5}", 5.0) and covers("[1-2]", 1.5) and covers(34.0, 34)
    assert covers('{"a,b",c}', "a,b") and not covers('{"a,b",c}', "a")
    assert covers("{x,missing}", None) and not covers("{x,missing}", "missing")


def test_the_audit_counts_a_value_holding_a_comma(tmp_path: Path) -> None:
    """Two releases put record a in ``{"a,b",c}`` then ``{"a,b",d}``: the adversary knows
    its value is "a,b" (one value), not one of '"a' and 'b"'."""
    values = {"a": "flu", "b": "flu", "c": "hiv", "d": "cold"}
    first = {"a": 0, "b": 0, "c": 1, "d": 1}
    second = {"a": 0, "b": 1, "c": 0, "d": 1}
    labels_1 = {0: ['{"a,b",c}'], 1: ["{d,missing}"]}
    labels_2 = {0: ['{"a,b",d}'], 1: ['{c,"missing"}']}
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        store.commit_release(release(1, first, values, labels=labels_1))
        store.commit_release(release(2, second, values, labels=labels_2))
        known = knowledge(store, "hand")
    age = known.quasi_identifiers["age"]
    a, b, d = (known.index(pid(k)) for k in "abd")
    assert age.kind[a] == "set" and age.value(a) == ["a,b"]
    # b: {"a,b",c} then {c,"missing"}: c; d: {d,missing} then {c,"missing"}: nothing left
    # (the text "missing" is not a missing cell)
    assert age.value(b) == ["c"] and age.value(d) == []
    assert json.loads(json.dumps(known.record(a)))["qi[age]"] == ["a,b"]


def test_a_missing_cell_in_two_sets_is_what_is_left(tmp_path: Path) -> None:
    values = {"a": "flu", "b": "hiv"}
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        store.commit_release(release(1, {"a": 0, "b": 0}, values,
                                     labels={0: ["{x,missing}"]}))
        store.commit_release(release(2, {"a": 0, "b": 0}, values,
                                     labels={0: ["{y,missing}"]}))
        known = knowledge(store, "hand")
    assert known.quasi_identifiers["age"].value(known.index(pid("a"))) == [None]
