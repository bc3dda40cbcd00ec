"""Hierarchies: the tree model, the ARX reader/writer on real files, and the builders."""

from __future__ import annotations

import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonkit.data.encoding import encode
from anonkit.data.schema import Kind, Schema
from anonkit.errors import InputError
from anonkit.hierarchy import (
    Hierarchy,
    date_hierarchy,
    grouping_hierarchy,
    interval_hierarchy,
    masking_hierarchy,
    read_arx_hierarchy,
    write_arx_hierarchy,
)

SHARED = Path("/work/shared/data")
ARX = SHARED / "adult_arx"
MONDRIAN = SHARED / "adult_mondrian"
needs_shared = pytest.mark.skipif(not ARX.is_dir(), reason="shared benchmark data not present")


# --------------------------------------------------------------------------- Hierarchy


def test_ragged_rows_are_padded_with_the_leaf() -> None:
    h = Hierarchy([["Never-married", "*"], ["Married-civ-spouse", "Married", "*"],
                   ["Married-AF-spouse", "Married", "*"]])
    assert h.height == 3
    assert h.labels[0].tolist() == ["Never-married", "Never-married", "*"]
    # the padded leaf is its own group at level 1, the married ones share one
    assert h.node_ids[1, 1] == h.node_ids[2, 1] != h.node_ids[0, 1]
    assert len(set(h.node_ids[:, 2])) == 1


def test_trailing_empty_cells_and_blank_rows_are_ignored() -> None:
    h = Hierarchy([["a", "g", "*", ""], [], ["b", "g", "*"], ["", ""]])
    assert h.leaves.tolist() == ["a", "b"]
    assert h.height == 3


def test_not_a_tree_is_an_error() -> None:
    with pytest.raises(InputError, match=r"not a tree: label 'g' at level 1 has parents"):
        Hierarchy([["a", "g", "x", "*"], ["b", "g", "y", "*"]])


def test_rows_ending_in_different_roots_are_an_error() -> None:
    with pytest.raises(InputError, match=r"different roots \('\*', 'ALL'\)"):
        Hierarchy([["a", "*"], ["b", "ALL"]], name="sex")


def test_duplicate_leaf_is_an_error() -> None:
    # (base.py currently shows the value as np.str_('a'); reported, matched loosely)
    with pytest.raises(InputError, match=r"more than once: .*'a'"):
        Hierarchy([["a", "*"], ["a", "*"]])


def test_empty_hierarchy_is_an_error() -> None:
    with pytest.raises(InputError, match="empty"):
        Hierarchy([[""], []])


def test_values_missing_from_the_hierarchy_are_named() -> None:
    h = Hierarchy([["a", "*"], ["b", "*"]], name="col")
    with pytest.raises(InputError, match=r"column 'col' has values missing from its hierarchy: "
                                          r"'c', 'd'"):
        h.leaf_codes(["a", "c", "d", "c"])


def test_leaf_codes_normalise_whole_floats() -> None:
    h = Hierarchy([["3", "*"], ["4.5", "*"]])
    assert h.leaf_codes([3.0, np.float64(3.0), 3, np.int64(3), 4.5]).tolist() == \
        [0, 0, 0, 0, 1]


def test_a_text_with_spaces_around_is_not_the_leaf_without_them() -> None:
    # " a" and "a" are two inputs: matching them to one leaf would merge them silently
    h = Hierarchy([["a", "*"], ["b", "*"]], name="col")
    with pytest.raises(InputError, match=r"column 'col' has values missing from its "
                                          r"hierarchy: ' a'; they differ from its values only "
                                          r"in spaces at either end"):
        h.leaf_codes(["a", " a"])
    assert Hierarchy([[" a", "x", "*"], ["a", "y", "*"]]).leaf_codes(["a", " a"]).tolist() \
        == [1, 0]


def test_lowest_common_level_and_dfs_order() -> None:
    h = Hierarchy([["a", "x", "*"], ["c", "y", "*"], ["b", "x", "*"]])
    assert not h.is_contiguous()
    order = h.dfs_order()
    assert h.leaves[order].tolist() == ["a", "b", "c"]
    assert h.is_contiguous(order)
    # classes {a, b}, {a, c}, {c} as runs of leaf indices
    levels = h.lowest_common_level(np.array([0, 2, 0, 1, 1]), np.array([0, 2, 4]))
    assert levels.tolist() == [1, 2, 0]


# --------------------------------------------------------------------------- ARX files

ARX_SHAPES = {  # column -> (leaves, height), from the data README
    "age": (100, 5), "education": (16, 4), "marital-status": (7, 3),
    "native-country": (41, 3), "occupation": (14, 3), "race": (5, 2),
    "salary-class": (2, 2), "sex": (2, 2), "workclass": (8, 3),
}


@needs_shared
@pytest.mark.parametrize("column", sorted(ARX_SHAPES))
def test_real_arx_hierarchies(column: str) -> None:
    h = read_arx_hierarchy(ARX / f"adult_hierarchy_{column}.csv")
    assert h.name == f"adult_hierarchy_{column}"
    assert (len(h), h.height) == ARX_SHAPES[column]
    assert set(h.labels[:, -1]) == {"*"}
    assert h.is_contiguous(h.dfs_order())


@needs_shared
def test_arx_hierarchies_cover_adult_and_give_the_6480_lattice() -> None:
    data = pd.read_csv(ARX / "adult.csv", sep=";", dtype=str)
    heights = 1
    for column in data.columns[:-1]:
        h = read_arx_hierarchy(ARX / f"adult_hierarchy_{column}.csv", name=column)
        h.leaf_codes(data[column].unique(), column=column)  # raises if a value is missing
        heights *= h.height
    assert heights == 6480


@needs_shared
def test_arx_labels_read_as_written() -> None:
    h = read_arx_hierarchy(ARX / "adult_hierarchy_education.csv")
    row = h.labels[h.leaf_codes(["Masters"])[0]].tolist()
    assert row == ["Masters", "Graduate", "Higher education", "*"]
    age = read_arx_hierarchy(ARX / "adult_hierarchy_age.csv")
    assert age.labels[age.leaf_codes([97])[0]].tolist() == ["97", "95-99", "90-99", "80-99",
                                                           "*"]


MONDRIAN_SHAPES = {"marital_status": (7, 3), "native_country": (41, 2),
                   "occupation": (14, 2), "race": (5, 2), "relationship": (6, 2),
                   "sex": (2, 2), "workclass": (8, 3)}


@needs_shared
@pytest.mark.parametrize("name", sorted(MONDRIAN_SHAPES))
def test_ragged_basic_mondrian_hierarchies(name: str) -> None:
    h = read_arx_hierarchy(MONDRIAN / f"basic_mondrian_adult_{name}.txt")
    assert (len(h), h.height) == MONDRIAN_SHAPES[name]
    assert set(h.labels[:, -1]) == {"*"}


@needs_shared
def test_ragged_marital_status_keeps_short_rows_as_own_group() -> None:
    h = read_arx_hierarchy(MONDRIAN / "basic_mondrian_adult_marital_status.txt")
    by_leaf = {row[0]: row.tolist() for row in h.labels}
    assert by_leaf["Never-married"] == ["Never-married", "Never-married", "*"]
    assert by_leaf["Married-AF-spouse"] == ["Married-AF-spouse", "Married", "*"]
    assert by_leaf["Widowed"][1] == by_leaf["Married-spouse-absent"][1] == "alone"


def test_arx_round_trip(tmp_path: Path) -> None:
    h = Hierarchy([["a;b", "g 1", "*"], ["c", "g\"2", "*"], ["d", "*"]])
    write_arx_hierarchy(h, tmp_path / "h.csv")
    back = read_arx_hierarchy(tmp_path / "h.csv")
    assert back.labels.tolist() == h.labels.tolist()


def test_arx_reader_tolerates_bom_and_missing_newline(tmp_path: Path) -> None:
    (tmp_path / "h.csv").write_bytes(b"\xef\xbb\xbfa;x;*\r\nb;x;*")
    h = read_arx_hierarchy(tmp_path / "h.csv", name="col")
    assert h.leaves.tolist() == ["a", "b"] and h.name == "col"


def test_arx_reader_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        read_arx_hierarchy(tmp_path / "nope.csv")
    (tmp_path / "empty.csv").write_text("\n\n")
    with pytest.raises(InputError, match="is empty"):
        read_arx_hierarchy(tmp_path / "empty.csv")
    (tmp_path / "latin.csv").write_bytes(b"caf\xe9;*\n")
    with pytest.raises(InputError, match=r"not UTF-8 \(byte 3\)"):
        read_arx_hierarchy(tmp_path / "latin.csv")
    (tmp_path / "graph.csv").write_text("a;g;x;*\nb;g;y;*\n")
    with pytest.raises(InputError, match="not a tree"):
        read_arx_hierarchy(tmp_path / "graph.csv")


# --------------------------------------------------------------------------- interval


def test_interval_hierarchy_labels_like_arx() -> None:
    h = interval_hierarchy(range(17, 91), widths=(5, 10, 20))
    assert h.height == 5
    row = {r[0]: r.tolist() for r in h.labels}
    assert row["17"] == ["17", "[15-19]", "[10-19]", "[0-19]", "*"]
    assert row["24"] == ["24", "[20-24]", "[20-29]", "[20-39]", "*"]
    assert row["90"] == ["90", "[90-94]", "[90-99]", "[80-99]", "*"]
    assert h.is_contiguous()  # leaves sorted by value


def test_interval_fanout_equals_widths() -> None:
    a = interval_hierarchy([1, 7, 12, 33], widths=5, fanout=(2, 2))
    b = interval_hierarchy([1, 7, 12, 33], widths=(5, 10, 20))
    assert a.labels.tolist() == b.labels.tolist()


def test_interval_start_shifts_the_bins() -> None:
    h = interval_hierarchy([17, 21], widths=(5,), start=2)
    assert h.labels[:, 1].tolist() == ["[17-21]", "[17-21]"]


def test_interval_non_integer_values_get_half_open_labels() -> None:
    h = interval_hierarchy([0.5, 2.5, 9.75], widths=(2.5, 5))
    assert h.labels.tolist() == [["0.5", "[0-2.5)", "[0-5)", "*"],
                                 ["2.5", "[2.5-5)", "[0-5)", "*"],
                                 ["9.75", "[7.5-10)", "[5-10)", "*"]]


def test_interval_leaves_match_leaf_codes_of_int_and_float_columns() -> None:
    ints = pd.Series([30, 41, 30, 55])
    floats = ints.astype(float).where(ints != 41)  # whole floats plus a NaN
    h = interval_hierarchy(floats)  # the NaN is not a leaf
    assert sorted(h.leaves.tolist()) == ["30", "55"]
    assert h.leaf_codes(floats.dropna()).tolist() == h.leaf_codes(ints[ints != 41]).tolist()
    h = interval_hierarchy(np.array([-7, 3]), widths=(5, 10))
    assert h.labels[0].tolist() == ["-7", "[-10--6]", "[-10--1]", "*"]


def test_interval_hierarchy_encodes_a_numeric_column() -> None:
    df = pd.DataFrame({"age": [23, 37, 23, 61]})
    h = interval_hierarchy(df["age"].unique(), name="age")
    schema = Schema.from_roles(df, ["age"], hierarchies={"age": h})
    col = encode(df, schema).column("age")
    assert col.kind is Kind.NUMERIC
    assert h.leaves[col.hierarchy_leaf[col.codes]].tolist() == ["23", "37", "23", "61"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"widths": (5, 7)}, "not a multiple"),
    ({"widths": (10, 5)}, "not a multiple"),
    ({"widths": (0,)}, "positive"),
    ({"widths": ()}, "at least one width"),
    ({"widths": (5, 10), "fanout": (2,)}, "one base width"),
    ({"widths": 5, "fanout": (1,)}, ">= 2"),
    ({"widths": ("x",)}, "must be a number"),
])
def test_interval_bad_widths(kwargs: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        interval_hierarchy([1, 2, 3], **kwargs)


def test_interval_bad_values() -> None:
    with pytest.raises(InputError, match=r"needs numbers, got 'abc'"):
        interval_hierarchy(["1", "abc"], name="age")
    with pytest.raises(InputError, match="no values"):
        interval_hierarchy([np.nan])
    with pytest.raises(InputError, match="finite"):
        interval_hierarchy([1.0, np.inf])


# --------------------------------------------------------------------------- masking


def test_masking_hierarchy_masks_from_the_right() -> None:
    h = masking_hierarchy(["80123", "80124", "02139", "80123"])
    assert h.height == 6
    row = {r[0]: r.tolist() for r in h.labels}
    assert row["80123"] == ["80123", "8012*", "801**", "80***", "8****", "*****"]
    assert row["02139"] == ["02139", "0213*", "021**", "02***", "0****", "*****"]
    assert h.node_ids[h.leaf_codes(["80123"])[0], 1] == h.node_ids[h.leaf_codes(["80124"])[0], 1]


def test_masking_levels_cap_then_root() -> None:
    h = masking_hierarchy(["80123", "80999"], levels=2, root="*")
    assert h.labels.tolist() == [["80123", "8012*", "801**", "*"],
                                 ["80999", "8099*", "809**", "*"]]


def test_masking_different_lengths_are_never_padded() -> None:
    h = masking_hierarchy(["123", "4567", 80123])  # ints are read as their text
    row = {r[0]: r.tolist() for r in h.labels}
    assert row["123"] == ["123", "12*", "1**", "***", "***", "***", "*"]
    assert row["80123"] == ["80123", "8012*", "801**", "80***", "8****", "*****", "*"]
    assert h.leaf_codes([80123]).tolist() == [h.leaves.tolist().index("80123")]


def test_masking_errors() -> None:
    with pytest.raises(InputError, match="no values"):
        masking_hierarchy(["", None])
    with pytest.raises(InputError, match="one character"):
        masking_hierarchy(["1"], mask_char="##")
    with pytest.raises(InputError, match="levels"):
        masking_hierarchy(["1"], levels=0)
    with pytest.raises(InputError, match="collection of values"):
        masking_hierarchy("80123")


# --------------------------------------------------------------------------- dates


def test_date_hierarchy_day_month_year_decade() -> None:
    h = date_hierarchy(["2021-03-04", "2019-12-31", "2021-03-30", "2021-03-04"])
    assert h.labels.tolist() == [
        ["2019-12-31", "2019-12", "2019", "2010s", "*"],
        ["2021-03-04", "2021-03", "2021", "2020s", "*"],
        ["2021-03-30", "2021-03", "2021", "2020s", "*"],
    ]


def test_date_levels_are_selectable() -> None:
    h = date_hierarchy(["1999-11-05", "2003-01-01"], levels=("quarter", "century"))
    assert h.labels.tolist() == [["1999-11-05", "1999-Q4", "1900-1999", "*"],
                                 ["2003-01-01", "2003-Q1", "2000-2099", "*"]]


def test_date_leaves_for_datetime_values_are_iso() -> None:
    values = pd.Series(pd.to_datetime(["2021-03-04", "2021-03-04 10:30:00"], format="ISO8601"))
    h = date_hierarchy(values.astype("datetime64[ms]"))
    assert h.leaves.tolist() == ["2021-03-04", "2021-03-04T10:30:00"]
    h = date_hierarchy([datetime.date(2020, 1, 1), pd.Timestamp("2020-01-01"), "2020-01-01"])
    assert h.leaves.tolist() == ["2020-01-01"]


def test_date_text_leaves_stay_as_given() -> None:
    h = date_hierarchy(["03/04/2021", "2021-03-04"])
    assert sorted(h.leaves.tolist()) == ["03/04/2021", "2021-03-04"]
    assert set(h.labels[:, 1]) == {"2021-03"}


def test_date_hierarchy_of_a_text_column_encodes() -> None:
    df = pd.DataFrame({"d": ["2021-03-04", "2020-12-01", "2021-03-04"]})
    h = date_hierarchy(df["d"])
    schema = Schema.from_roles(df, ["d"], hierarchies={"d": h})
    col = encode(df, schema).column("d")
    assert h.labels[col.hierarchy_leaf[col.codes], 2].tolist() == ["2021", "2020", "2021"]


def test_date_errors() -> None:
    with pytest.raises(InputError, match="unknown level 'week'"):
        date_hierarchy(["2021-01-01"], levels=("week",))
    with pytest.raises(InputError, match="fine to coarse"):
        date_hierarchy(["2021-01-01"], levels=("year", "month"))
    with pytest.raises(InputError, match=r"cannot read 'soon' as dates"):
        date_hierarchy(["2021-01-01", "soon"], name="d")
    with pytest.raises(InputError, match="no values"):
        date_hierarchy([None])


# --------------------------------------------------------------------------- grouping


EDUCATION = [{"Bachelors": "Higher", "Masters": "Higher", "HS-grad": "Secondary"},
             {"Higher": "Education", "Secondary": "Education"}]


def test_grouping_hierarchy() -> None:
    h = grouping_hierarchy(EDUCATION, name="education")
    assert h.labels.tolist() == [["Bachelors", "Higher", "Education", "*"],
                                 ["Masters", "Higher", "Education", "*"],
                                 ["HS-grad", "Secondary", "Education", "*"]]


def test_grouping_whose_last_level_is_the_root_adds_no_level() -> None:
    h = grouping_hierarchy([{"a": "g", "b": "g", "c": "h"}, {"g": "*", "h": "*"}])
    assert h.height == 3


def test_grouping_flat_from_values() -> None:
    h = grouping_hierarchy([], values=["b", "a", "b"])
    assert h.labels.tolist() == [["a", "*"], ["b", "*"]]


def test_grouping_with_values_checks_coverage() -> None:
    grouping_hierarchy(EDUCATION, values=["Masters", "HS-grad"])  # a subset is fine
    with pytest.raises(InputError, match=r"values 'Doctorate' have no group in level 1"):
        grouping_hierarchy(EDUCATION, values=["Masters", "Doctorate"])


def test_grouping_errors() -> None:
    with pytest.raises(InputError, match=r"level 2 has no group for 'Secondary'"):
        grouping_hierarchy([EDUCATION[0], {"Higher": "Education"}])
    with pytest.raises(InputError, match=r"level 2 maps 'Hihger'.*spelling"):
        grouping_hierarchy([EDUCATION[0], {**EDUCATION[1], "Hihger": "Education"}])
    with pytest.raises(InputError, match="empty label"):
        grouping_hierarchy([{"a": ""}])
    with pytest.raises(InputError, match="at least one level"):
        grouping_hierarchy([])
    with pytest.raises(InputError, match="must be a dict"):
        grouping_hierarchy([["a", "b"]])  # type: ignore[list-item]


def test_grouping_hierarchy_encodes_a_categorical_column() -> None:
    df = pd.DataFrame({"edu": ["HS-grad", "Masters", "Bachelors", "Masters"]})
    h = grouping_hierarchy(EDUCATION)
    col = encode(df, Schema.from_roles(df, ["edu"], hierarchies={"edu": h})).column("edu")
    # codes follow subtree order, so 'Higher' (Bachelors, Masters) is a run of codes
    assert col.values.tolist() == ["Bachelors", "Masters", "HS-grad"]
    assert col.codes.tolist() == [2, 1, 0, 1]


def test_from_mapping_builds_the_same_tree_as_rows() -> None:
    from anonkit.hierarchy import Hierarchy

    h = Hierarchy.from_mapping({"a": ["AB", "*"], "b": ["AB", "*"], "c": ["*"]}, name="x")
    assert h.height == 3 and list(h.leaves) == ["a", "b", "c"]
    assert list(h.labels[2]) == ["c", "c", "*"]  # ragged: padded with the leaf
    assert h.node_ids[0, 1] == h.node_ids[1, 1] != h.node_ids[2, 1]
