"""Generalization forms: hand-computed labels and losses for every form (range, set,
hierarchy, prefix, mean, median), missing values, form validation, the released column —
and, on random columns and random classes, agreement of every form with a plain per-class
definition (pandas groupby)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonkit.data.encoding import EncodedColumn, encode_column
from anonkit.data.schema import ColumnSpec, Kind, Role
from anonkit.errors import InputError
from anonkit.generalization import (
    ColumnGeneralization,
    Form,
    default_form,
    generalize_column,
    validate_form,
)
from anonkit.hierarchy import date_hierarchy, grouping_hierarchy, interval_hierarchy
from anonkit.hierarchy.base import Hierarchy
from anonkit.labels import MISSING_LABEL, ParsedLabel, covers, parse_label

SETTINGS = settings(max_examples=50, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# -- helpers ---------------------------------------------------------------------------

def column(values: list[object], kind: Kind | None = None, hierarchy: Hierarchy | None = None,
           order: tuple[object, ...] | None = None, allow_missing: bool = False,
           name: str = "c") -> EncodedColumn:
    spec = ColumnSpec(name, Role.QUASI_IDENTIFIER, kind, hierarchy, order)
    return encode_column(pd.Series(values), spec, allow_missing=allow_missing)


def runs(*sizes: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows 0..n-1 in order, cut into classes of the given sizes: ``(order, starts)``."""
    n = sum(sizes)
    return np.arange(n), np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


def gen(col: EncodedColumn, form: Form | str, *sizes: int,
        order: np.ndarray | None = None) -> tuple[list[object], list[float]]:
    default_order, starts = runs(*sizes)
    g = generalize_column(col, default_order if order is None else order, starts, Form(form))
    return list(g.labels), [float(x) for x in g.loss]


# -- known answers: range ----------------------------------------------------------------

def test_range_numeric() -> None:
    col = column([23, 25, 31, 35, 42, 42])
    labels, loss = gen(col, "range", 2, 2, 2)
    assert labels == ["[23-25]", "[31-35]", "42"]
    assert loss == pytest.approx([2 / 19, 4 / 19, 0.0])


def test_range_uses_values_not_codes() -> None:
    # codes 0..3 but the numeric gaps are uneven: loss follows the values
    col = column([0, 1, 2, 100])
    labels, loss = gen(col, "range", 3, 1)
    assert labels == ["[0-2]", "100"]
    assert loss == pytest.approx([0.02, 0.0])


def test_range_negative_and_fractional_values() -> None:
    col = column([-5, 3, 0.5, 1.25])
    labels, loss = gen(col, "range", 2, 2)
    assert labels == ["[-5, 3]", "[0.5, 1.25]"]
    assert loss == pytest.approx([1.0, 0.75 / 8])


def test_range_dates() -> None:
    days = pd.to_datetime(["2020-01-01", "2020-01-11", "2020-03-01", "2020-03-01"])
    col = column(list(days))
    assert col.kind is Kind.DATE
    labels, loss = gen(col, "range", 2, 2)
    assert labels == ["[2020-01-01, 2020-01-11]", "2020-03-01"]
    assert loss == pytest.approx([10 / 60, 0.0])


def test_range_ordinal_uses_the_declared_order() -> None:
    order = ("low", "mid", "high", "top")
    col = column(["high", "low", "mid", "mid"], kind=Kind.ORDINAL, order=order)
    labels, loss = gen(col, "range", 2, 2)
    # rank span over the declared domain (4 levels, span 3)
    assert labels == ["[low-high]", "mid"]
    assert loss == pytest.approx([2 / 3, 0.0])


def test_range_follows_the_given_row_order() -> None:
    col = column([1, 50, 2, 60])
    labels, _ = gen(col, "range", 2, 2, order=np.array([0, 2, 1, 3]))
    assert labels == ["[1-2]", "[50-60]"]


def test_range_with_missing_values() -> None:
    col = column([1.0, None, None, 5.0, 9.0, 3.0], allow_missing=True)
    labels, loss = gen(col, "range", 2, 1, 3)
    # a class mixing missing and present values says nothing: NCP 1
    # a class of missing cells only is released as an empty field
    assert labels == [f"1 or {MISSING_LABEL}", None, "[3-9]"]
    assert loss == pytest.approx([1.0, 0.0, 6 / 8])


# -- known answers: set, hierarchy, prefix, mean, median ---------------------------------

def test_set() -> None:
    col = column(["b", "a", "c", "c", "d", "a"])
    labels, loss = gen(col, "set", 3, 1, 2)
    assert labels == ["{a,b,c}", "c", "{a,d}"]
    assert loss == pytest.approx([2 / 3, 0.0, 1 / 3])


@pytest.mark.parametrize("card", [2, 63, 64, 65, 150, 256, 257, 700])
def test_set_labels_for_many_values(card: int) -> None:
    """Sets of one word, several 64-bit words, and beyond the bitmask limit (sorting)."""
    rng = np.random.default_rng(card)
    n = 3 * card
    values = [f"v{i:04d}" for i in rng.permutation(np.arange(n) % card)]
    col = column(values)
    assert col.cardinality == card
    order = rng.permutation(n)
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(n - 1, card // 2 + 1),
                              replace=False))
    starts = np.concatenate([[0], cuts]).astype(np.int64)
    g = generalize_column(col, order, starts, Form.SET)
    for c, (s, e) in enumerate(zip(starts, np.append(starts[1:], n), strict=True)):
        members = sorted({values[i] for i in order[s:e]})
        expected = members[0] if len(members) == 1 else "{" + ",".join(members) + "}"
        assert g.labels[c] == expected
        assert g.loss[c] == pytest.approx((len(members) - 1) / (card - 1))
        codes = col.codes[order[s:e]]
        assert (g.lo[c], g.hi[c]) == (codes.min(), codes.max())
    assert_label_codes_number_the_labels(g)


@pytest.mark.parametrize("filler", [0, 300])  # one word of bits, or sets by sorting
def test_set_members_that_could_be_misread_are_quoted(filler: int) -> None:
    """{"a,b", "c"} and {"a", "b,c"} would both print "{a,b,c}", the value "{a,b}" like the
    set {a, b}: members holding a comma, a brace or a quote are quoted as in CSV, so every
    set has a label of its own and reads back as itself."""
    values = ["a,b", "c", "a", "b,c", "{a,b}", "a", "b", 'say "hi"', "x",
              *[f"f{i:03d}" for i in range(filler)]]
    col = column(values)
    starts = [0, 2, 4, 5, 7] + ([9] if filler else [])
    g = generalize_column(col, np.arange(len(values)), np.array(starts, dtype=np.int64),
                          Form.SET)
    assert list(g.labels[:5]) == ['{"a,b",c}', '{a,"b,c"}', '"{a,b}"', "{a,b}",
                                  '{"say ""hi""",x}']
    assert len(set(g.label_codes[0][:5])) == 5
    for label, members in zip(g.labels[:5], [{"a,b", "c"}, {"a", "b,c"}, {"{a,b}"},
                                             {"a", "b"}, {'say "hi"', "x"}], strict=True):
        assert set(parse_label(label).values) == members
        assert all(covers(label, m) for m in members)
        assert not covers(label, "a,b,c")
    assert_label_codes_number_the_labels(g)


@pytest.mark.parametrize("filler", [0, 300])
def test_the_text_missing_and_a_missing_cell_stay_apart(filler: int) -> None:
    """A class of missing cells is released as an empty field; the text "missing" stays
    itself alone and is quoted inside a set, where the bare word means a missing cell."""
    values = ["missing", None, "x", "missing", None, "y", None,
              *[f"f{i:03d}" for i in range(filler)]]
    col = column(values, allow_missing=True)
    starts = [0, 1, 2, 3, 5] + ([7] if filler else [])
    g = generalize_column(col, np.arange(len(values)), np.array(starts, dtype=np.int64),
                          Form.SET)
    assert list(g.labels[:5]) == ["missing", None, "x", '{"missing",missing}',
                                  "{y,missing}"]
    assert g.label_codes[0][1] == -1 and len(set(g.label_codes[0][[0, 2, 3, 4]])) == 4
    assert parse_label('{"missing",missing}') == ParsedLabel(values=("missing",), missing=True)
    assert covers("missing", "missing") and not covers("missing", None)
    assert covers(None, None) and not covers(None, "missing")
    assert covers("{y,missing}", None) and not covers("{y,missing}", "missing")
    released = g.released(np.arange(len(g.labels[:5])))
    assert pd.isna(released[1]) and released[0] == "missing"
    assert_label_codes_number_the_labels(g)


def test_a_value_spelled_like_a_range_is_quoted() -> None:
    # the range of "1" and "2" and the value "[1-2]" would print alike
    col = column(["1", "2", "[1-2]"], kind=Kind.ORDINAL, order=("1", "2", "[1-2]"))
    g = generalize_column(col, np.arange(3), np.array([0, 2]), Form.RANGE)
    assert list(g.labels) == ["[1-2]", '"[1-2]"']
    assert g.label_codes[0].tolist() == [0, 1]
    assert parse_label("[1-2]") == ParsedLabel(low="1", high="2")
    assert parse_label('"[1-2]"') == ParsedLabel(values=("[1-2]",))


def test_sets_by_sorting_survive_fingerprints_that_collide(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Classes are put in one set only when their members are equal, not merely their
    fingerprints: with every fingerprint colliding, the sets are still told apart."""
    from anonkit import generalization

    rng = np.random.default_rng(7)
    values = [f"v{i:03d}" for i in rng.integers(0, 400, 3000)]
    col = column(values)
    order = rng.permutation(len(values))
    starts = np.concatenate([[0], np.sort(rng.choice(np.arange(1, 3000), 400,
                                                     replace=False))]).astype(np.int64)
    expected = generalize_column(col, order, starts, Form.SET)
    weights = generalization._code_weights
    seeds: list[int] = []

    def colliding(card: int, seed: int) -> np.ndarray:
        seeds.append(seed)
        return np.zeros(card, dtype=np.uint64) if seed == 0 else weights(card, seed)

    monkeypatch.setattr(generalization, "_code_weights", colliding)
    g = generalize_column(col, order, starts, Form.SET)
    assert seeds == [0, 1]
    assert list(g.labels) == list(expected.labels)
    assert g.label_codes[0].tolist() == expected.label_codes[0].tolist()
    assert_label_codes_number_the_labels(g)


def test_set_counts_each_value_once() -> None:
    col = column(["x", "x", "x", "y"])
    labels, loss = gen(col, "set", 3, 1)
    assert labels == ["x", "y"]
    assert loss == [0.0, 0.0]


def test_hierarchy_lowest_common_ancestor() -> None:
    h = grouping_hierarchy([{"Bachelors": "Higher", "Masters": "Higher", "HS-grad": "School",
                             "9th": "School"}])
    col = column(["Masters", "Bachelors", "HS-grad", "9th", "Bachelors", "9th"],
                 hierarchy=h)
    labels, loss = gen(col, "hierarchy", 2, 2, 1, 1)
    assert labels == ["Higher", "School", "Bachelors", "9th"]
    assert loss == pytest.approx([1 / 3, 1 / 3, 0.0, 0.0])
    labels, loss = gen(col, "hierarchy", 3, 3)
    assert labels == ["*", "*"]
    assert loss == [1.0, 1.0]


def test_hierarchy_on_numbers() -> None:
    values = [21, 24, 27, 33, 38, 39]
    h = interval_hierarchy(values, widths=(5, 10))
    col = column(values, hierarchy=h)
    labels, loss = gen(col, "hierarchy", 2, 1, 3)
    assert labels == ["[20-24]", "27", "[30-39]"]
    assert loss == pytest.approx([1 / 5, 0.0, 2 / 5])


def test_hierarchy_whose_subtrees_are_not_runs_of_codes() -> None:
    # numbers are coded by value, so 'odd' = {1, 3} is not a run of codes: the lowest common
    # ancestor of {1, 2, 3} is the root, not that of its smallest and largest value
    h = grouping_hierarchy([{1: "odd", 2: "even", 3: "odd", 4: "even"}])
    col = column([1, 2, 3, 1, 3, 4], hierarchy=h)
    labels, loss = gen(col, "hierarchy", 3, 2, 1)
    assert labels == ["*", "odd", "4"]
    assert loss == pytest.approx([1.0, 1 / 3, 0.0])


def test_hierarchy_on_dates() -> None:
    days = list(pd.to_datetime(["2021-03-04", "2021-03-20", "2021-07-01", "2022-01-01"]))
    col = column(days, hierarchy=date_hierarchy(days, levels=("month", "year")))
    labels, _ = gen(col, "hierarchy", 2, 2)
    assert labels == ["2021-03", "*"]
    labels, _ = gen(col, "hierarchy", 3, 1)
    assert labels == ["2021", "2022-01-01"]


def test_prefix() -> None:
    col = column(["80123", "80124", "80299", "81000", "90000"])
    labels, loss = gen(col, "prefix", 2, 2, 1)
    assert labels == ["8012*", "8****", "90000"]
    # '8012' covers 2 of the 5 values, '8' covers 4
    assert loss == pytest.approx([1 / 4, 3 / 4, 0.0])


def test_prefix_loss_with_missing_values() -> None:
    # the missing value's text ('missing') must not break the alphabetical search
    col = column(["zz1", "zz2", None, "aa"], allow_missing=True)
    labels, loss = gen(col, "prefix", 2, 1, 1)
    assert labels == ["zz*", None, "aa"]
    assert loss == pytest.approx([1 / 3, 0.0, 0.0])


def test_prefix_needs_text() -> None:
    with pytest.raises(InputError, match="text column"):
        gen(column([1, 2]), "prefix", 2)


def test_prefix_is_truthful_for_a_hierarchy_ordered_column() -> None:
    """BUG: with a hierarchy the codes of a categorical column follow the hierarchy's
    subtree order, not the alphabet, yet ``_prefixes`` takes the class's smallest and
    largest *code* as its alphabetically first and last value. Here the codes are
    ab=0, zz=1, ac=2: the class {ab, zz, ac} is released as 'a*', a label that does not
    cover 'zz', with loss 0 (the searchsorted over the unsorted texts finds nothing)."""
    h = grouping_hierarchy([{"ab": "G1", "zz": "G1", "ac": "G2"}])
    col = column(["ab", "zz", "ac"], hierarchy=h)
    labels, loss = gen(col, "prefix", 3)
    assert labels == ["**"]
    assert loss == [1.0]


def test_mean_and_median() -> None:
    col = column([1, 2, 9, 4, 4, 5, 100])
    labels, loss = gen(col, "mean", 3, 4)
    assert labels == pytest.approx([4.0, 28.25])
    assert loss == pytest.approx([8 / 99, 96 / 99])
    labels, _ = gen(col, "median", 3, 4)
    assert labels == pytest.approx([2.0, 4.5])


def test_mean_refuses_missing_values() -> None:
    col = column([1.0, None, 3.0], allow_missing=True)
    with pytest.raises(InputError, match="missing"):
        gen(col, "mean", 3)


def test_constant_column_loses_nothing() -> None:
    for form, values in (("range", [7, 7, 7]), ("set", ["a", "a", "a"]),
                         ("prefix", ["ab", "ab", "ab"]), ("mean", [7, 7, 7])):
        _, loss = gen(column(values), form, 3)
        assert loss == [0.0], form


# -- validation and defaults -------------------------------------------------------------

def test_default_forms() -> None:
    h = grouping_hierarchy([{"a": "g"}])
    assert default_form(column([1, 2])) is Form.RANGE
    assert default_form(column(["a", "b"])) is Form.SET
    assert default_form(column(list(pd.to_datetime(["2020-01-01"])))) is Form.RANGE
    assert default_form(column(["a"], hierarchy=h)) is Form.HIERARCHY


@pytest.mark.parametrize("values, form, message", [
    (["a", "b"], "range", "categorical"),
    (["a", "b"], "mean", "categorical"),
    ([1, 2], "hierarchy", "needs a hierarchy"),
    ([1, 2], "blur", "unknown generalization"),
    (list(pd.to_datetime(["2020-01-01", "2020-02-01"])), "median", "numeric"),
])
def test_validate_form_errors(values: list[object], form: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        validate_form(column(values), form)


def test_released_column_is_categorical_per_class() -> None:
    col = column([1, 2, 5, 6])
    order, starts = runs(2, 2)
    g = generalize_column(col, order, starts, Form.RANGE)
    out = g.released(np.array([1, 0, 1, 0]))
    assert isinstance(out, pd.Categorical)
    assert list(out) == ["[5-6]", "[1-2]", "[5-6]", "[1-2]"]
    mean = generalize_column(col, order, starts, Form.MEAN).released(np.array([0, 1]))
    assert mean.tolist() == [1.5, 5.5]


# -- every form against a per-class definition, on random columns and classes -----------

WORDS = ["ab", "abc", "abd", "b", "ba", "bb", "c"]


@st.composite
def columns_and_classes(draw: st.DrawFn) -> tuple[pd.DataFrame, list[int], str, str]:
    """A random column (numeric, text, date; skewed, duplicates), a random row order cut
    into random classes, and a form valid for the column."""
    n = draw(st.integers(1, 30))
    kind = draw(st.sampled_from(["int", "float", "text", "date"]))
    if kind == "int":
        values: list[object] = draw(st.lists(st.integers(-20, 60), min_size=n, max_size=n))
    elif kind == "float":
        values = draw(st.lists(st.sampled_from([0.5, 1.25, 2.0, 7.75, -3.5]),
                               min_size=n, max_size=n))
    elif kind == "text":
        values = draw(st.lists(st.sampled_from(WORDS), min_size=n, max_size=n))
    else:
        days = draw(st.lists(st.integers(0, 800), min_size=n, max_size=n))
        values = list(pd.Timestamp("2020-01-01") + pd.to_timedelta(days, unit="D"))
    forms = {"int": ["range", "mean", "median", "hierarchy", "set"],
             "float": ["range", "mean", "median", "set"],
             "text": ["set", "prefix", "hierarchy"],
             "date": ["range", "hierarchy"]}[kind]
    form = draw(st.sampled_from(forms))
    order = draw(st.permutations(range(n)))
    cuts = sorted(draw(st.sets(st.integers(1, max(n - 1, 1)), max_size=n)) if n > 1 else [])
    class_of_position = np.searchsorted(np.array(cuts, dtype=int), np.arange(n), side="right")
    cls = np.empty(n, dtype=int)
    cls[np.array(order)] = class_of_position
    df = pd.DataFrame({"v": values, "cls": cls})
    return df, list(order), kind, form


def hierarchy_for(kind: str, values: pd.Series, contiguous: bool) -> Hierarchy | None:
    if kind == "int":
        if contiguous:
            return interval_hierarchy(values, widths=(5, 20))
        # by parity, then sign: subtrees are not runs of the value-ordered codes
        return grouping_hierarchy([{v: "odd" if v % 2 else "even" for v in range(-20, 61)}])
    if kind == "text":
        if contiguous:
            return grouping_hierarchy([{w: w[0].upper() for w in WORDS}])
        # by last letter: interleaves the alphabetical order of the codes
        return grouping_hierarchy([{w: w[-1].upper() for w in WORDS}])
    if kind == "date":
        return date_hierarchy(values, levels=("month", "year"))
    return None


@SETTINGS
@given(case=columns_and_classes(), contiguous=st.booleans())
def test_forms_match_per_class_definition(
        case: tuple[pd.DataFrame, list[int], str, str], contiguous: bool) -> None:
    df, order_list, kind, form = case
    hierarchy = hierarchy_for(kind, df["v"], contiguous) if form == "hierarchy" else None
    col = column(df["v"].tolist(), hierarchy=hierarchy)
    order = np.array(order_list, dtype=np.int64)
    sizes = df.groupby("cls").size().to_numpy()
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    g = generalize_column(col, order, starts, Form(form))
    assert len(g.labels) == len(sizes)
    assert ((g.loss >= 0) & (g.loss <= 1 + 1e-12)).all()
    released = g.released(df["cls"].to_numpy())
    for c, rows in df.groupby("cls"):
        vals = rows["v"]
        label, loss = g.labels[c], g.loss[c]
        one_value = vals.nunique() == 1
        # a single value is released as itself and loses nothing; the hierarchy form
        # releases a leaf then too
        if one_value and form not in ("mean", "median"):
            assert loss == 0.0
        if form == "range":
            lo, hi = vals.min(), vals.max()
            if kind == "date":
                span = (df["v"].max() - df["v"].min()).days
                width = (hi - lo).days
            else:
                span = df["v"].max() - df["v"].min()
                width = hi - lo
            assert loss == pytest.approx(width / span if span else 0.0)
            if one_value:
                assert label == (lo.strftime("%Y-%m-%d") if kind == "date" else f"{lo:g}")
            else:
                assert label.startswith("[") and label.endswith("]")
        elif form == "set":
            text = {v if isinstance(v, str) else f"{v:g}" for v in vals}
            assert set(label.strip("{}").split(",")) == text
            card = df["v"].nunique()
            assert loss == pytest.approx((len(text) - 1) / (card - 1) if card > 1 else 0.0)
        elif form == "mean":
            assert label == pytest.approx(vals.mean())
        elif form == "median":
            assert label == pytest.approx(vals.median())
        elif form == "prefix":
            unmasked = label.rstrip("*")
            assert all(v.startswith(unmasked) for v in vals)
            if not one_value:
                # the longest common prefix, nothing shorter
                longer = [v[: len(unmasked) + 1] for v in vals]
                assert len(set(longer)) > 1 or min(map(len, vals)) == len(unmasked)
            covered = sum(w.startswith(unmasked) for w in df["v"].unique())
            card = df["v"].nunique()
            expected = 0.0 if one_value else (covered - 1) / (card - 1)
            assert loss == pytest.approx(expected)
        else:  # hierarchy: the label is an ancestor of every value, and the lowest one
            assert hierarchy is not None
            leaves = hierarchy.leaf_codes(vals.tolist())
            levels = [np.flatnonzero(hierarchy.labels[leaf] == label) for leaf in leaves]
            assert all(len(lv) for lv in levels), (label, vals.tolist())
            level = int(levels[0][0])
            if level > 0:
                below = {hierarchy.labels[leaf, level - 1] for leaf in leaves}
                assert len(below) > 1
        # every row of the class shows its class's label
        shown = released[rows.index.to_numpy()]
        assert len(set(np.asarray(shown, dtype=object).tolist())) == 1
    assert_label_codes_number_the_labels(g)


def assert_label_codes_number_the_labels(g: ColumnGeneralization) -> None:
    """``label_codes`` is what factorizing the labels gives: equal codes exactly for equal
    labels, numbered in order of first appearance."""
    codes, distinct = g.label_codes
    expected_codes, expected = pd.factorize(g.labels)
    assert codes.tolist() == expected_codes.tolist()
    assert distinct.dtype == np.asarray(expected).dtype
    assert list(distinct) == list(expected)
    assert [type(x) for x in distinct] == [type(x) for x in expected]


def test_numeric_labels_are_exact() -> None:
    """Labels must cover the values they stand for: no rounding of bounds (1234567.5 is
    not "1.23457e+06"), no int64 overflow for huge values, no ambiguous "-" separator."""
    from anonkit.methods.mondrian import Mondrian

    def labels(values: list[float]) -> list[str]:
        df = pd.DataFrame({"x": values, "s": ["a", "b"] * (len(values) // 2)})
        return sorted(set(Mondrian(k=2).anonymize(df, ["x"], "s").data["x"].astype(str)))

    assert labels([1234567.5, 1234568.5, 1234569.5, 1234570.5]) == [
        "[1234567.5-1234568.5]", "[1234569.5-1234570.5]"]
    assert labels([1e20, 2e20, 3e20, 4e20]) == ["[1e+20-2e+20]", "[3e+20-4e+20]"]
    assert labels([1e-5, 2e-5, 3e-5, 4e-5]) == ["[1e-05, 2e-05]", "[3e-05, 4e-05]"]
    assert labels([2**62, 2**62 + 1, 2**62 + 2, 2**62 + 3]) == [
        f"[{2**62}-{2**62 + 1}]", f"[{2**62 + 2}-{2**62 + 3}]"]


# -- labels read back ---------------------------------------------------------------------

# (no surrounding blanks: encoding trims them from QI values)
TRICKY = ["a", "b", "a,b", "{a}", "}", '"', 'x"y', "missing", "[1-2]", "q or missing",
          "plain text", "{a,b}", '"quoted"', "a, b"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_set_label_reads_back_as_its_set(data: st.DataObject) -> None:
    """Whatever the values hold (commas, braces, quotes, the text "missing", missing
    cells), each set label reads back as exactly the set of its class's values, and
    distinct sets get distinct labels."""
    n = data.draw(st.integers(1, 25))
    values = data.draw(st.lists(st.sampled_from([*TRICKY, None]), min_size=n, max_size=n))
    col = column(values, allow_missing=True)
    order = np.asarray(data.draw(st.permutations(range(n))), dtype=np.int64)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(n - 1, 1)), max_size=n)) - {n})
    starts = np.array([0, *cuts], dtype=np.int64)
    g = generalize_column(col, order, starts, Form.SET)
    ends = np.append(starts[1:], n)
    seen: dict[object, frozenset[object]] = {}
    for c, (s, e) in enumerate(zip(starts, ends, strict=True)):
        members = frozenset(values[i] for i in order[s:e])
        label = g.labels[c]
        parsed = parse_label(label)
        assert frozenset(parsed.values) | ({None} if parsed.missing else set()) == members
        assert all(covers(label, values[i]) for i in order[s:e])
        assert seen.setdefault(label, members) == members
    assert_label_codes_number_the_labels(g)
