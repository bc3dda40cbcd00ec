"""Encoding a column: every input form of the same values (object text, pandas
Categorical with unused categories and missing values, integers dense or sparse) gives the
same codes and decode table, in the narrowest integer type that holds the codes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anonkit.data.encoding import EncodedColumn, encode_column
from anonkit.data.schema import ColumnSpec, Kind, Role, infer_kind
from anonkit.errors import InputError


def encoded(series: pd.Series, kind: Kind | None = None,
            allow_missing: bool = True) -> EncodedColumn:
    return encode_column(series, ColumnSpec("c", Role.QUASI_IDENTIFIER, kind),
                         allow_missing=allow_missing)


def decoded(col: EncodedColumn) -> list[object]:
    return col.values[col.codes].tolist()


def test_a_categorical_encodes_like_its_values() -> None:
    values = ["b", None, "a", " ", "b", "c", None, "a"]
    plain = encoded(pd.Series(values, dtype=object))
    # unused categories ('z', 'y') are not values of the column
    as_category = encoded(pd.Series(pd.Categorical(values, categories=["z", "c", "b", " ", "a",
                                                                       "y"])))
    for col in (plain, as_category):
        assert col.values.tolist() == ["a", "b", "c", None]
        assert col.missing_code == 3
        assert col.codes.tolist() == [1, 3, 0, 3, 1, 2, 3, 0]
        assert col.codes.dtype == np.int8


def test_unused_categories_past_the_first_rows_are_dropped() -> None:
    n = 200_000
    values = np.where(np.arange(n) % 2 == 0, "x", "y").astype(object)
    values[-1] = "late"  # first seen after the rows looked at first
    col = encoded(pd.Series(pd.Categorical(values, categories=["never", "x", "late", "y"])))
    assert col.values.tolist() == ["late", "x", "y"]
    assert decoded(col) == values.tolist()


@pytest.mark.parametrize("values, dtype", [
    ([5, -3, 5, 100, -3, 7], np.int64),
    ([5, -3, 5, 100, -3, 7], np.int8),
    ([0, 65535, 7, 7], np.uint16),
    ([-128, 127, 0], np.int8),
    ([10**12, -(10**12), 3], np.int64),  # far apart: hashed, not counted
    ([2**63 - 1, 0, 2**63 - 1], np.uint64),
])
def test_integers(values: list[int], dtype: type) -> None:
    series = pd.Series(np.array(values, dtype=dtype))
    col = encoded(series)
    assert col.kind is Kind.NUMERIC
    assert col.values.tolist() == sorted(set(values))
    assert col.values.dtype == dtype
    assert decoded(col) == values
    assert col.missing_code == -1


def test_integers_with_gaps_in_their_range() -> None:
    values = np.array([10, 14, 10, 19, 14], dtype=np.int32)
    col = encoded(pd.Series(values))
    assert col.values.tolist() == [10, 14, 19]
    assert col.codes.tolist() == [0, 1, 0, 2, 1]


@pytest.mark.parametrize("cardinality, dtype", [
    (1, np.int8), (128, np.int8), (129, np.int16), (2**15, np.int16), (2**15 + 1, np.int32)])
def test_codes_take_the_narrowest_type(cardinality: int, dtype: type) -> None:
    values = np.arange(cardinality).repeat(2)
    for series in (pd.Series(values), pd.Series(values.astype(str)).astype("category")):
        col = encoded(series, kind=Kind.CATEGORICAL)
        assert col.cardinality == cardinality
        assert col.codes.dtype == dtype
        assert (col.codes.astype(np.int64) == np.searchsorted(col.values.astype(str).tolist(),
                                                             series.astype(str))).all()


def test_a_categorical_is_not_the_callers_codes() -> None:
    series = pd.Series(pd.Categorical(["a", "b", "a"]))
    col = encoded(series)
    col.codes[:] = 1
    assert series.tolist() == ["a", "b", "a"]


def test_missing_values_need_allow_missing() -> None:
    series = pd.Series(pd.Categorical(["a", None, "b", " "]))
    with pytest.raises(InputError, match=r"2 missing value\(s\) \(first rows: \[1, 3\]\)"):
        encoded(series, allow_missing=False)


def test_text_that_is_mostly_numbers_is_refused() -> None:
    values = ["1", "2", "3", "x"]
    for series in (pd.Series(values, dtype=object), pd.Series(values, dtype="category")):
        with pytest.raises(InputError, match="mixes numbers and text: row 3 has 'x'"):
            infer_kind(series, "c")
    # only numbers, or only text: categorical
    assert infer_kind(pd.Series(["02139", "10001"], dtype="category"), "c") is Kind.CATEGORICAL
    assert infer_kind(pd.Series(["a", "b"], dtype="category"), "c") is Kind.CATEGORICAL


@pytest.mark.parametrize("text", ["12345678901234567891", "-12345678901234567891",
                                  "9007199254740993", " 00009007199254740993 "])
def test_text_that_float64_would_round_is_refused_as_numeric(text: str) -> None:
    series = pd.Series(["5", text, "7", text], dtype=object)
    with pytest.raises(InputError, match=r"column 'c' is numeric but row 1 has an integer "
                                         r"that float64 cannot hold exactly .*--kind "
                                         r"c=categorical") as err:
        encoded(series, kind=Kind.NUMERIC)
    assert text.strip() not in str(err.value)  # (it may be a sensitive value)
    # as text the values are kept as they are, spaces included
    assert encoded(series, kind=Kind.CATEGORICAL).values.tolist() == sorted(
        {"5", "7", text})


def test_numbers_float64_holds_are_numeric() -> None:
    series = pd.Series(["9007199254740992", "100000000000000000000", "1e300", "2.5", "3"],
                       dtype=object)
    col = encoded(series, kind=Kind.NUMERIC)
    assert col.values.tolist() == [2.5, 3.0, 2.0**53, 1e20, 1e300]
    ints = encoded(pd.Series(["7", "-9007199254740992"], dtype=object), kind=Kind.NUMERIC)
    assert ints.values.dtype == np.int64 and ints.values.tolist() == [-(2**53), 7]
