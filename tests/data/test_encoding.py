"""An encoding fitted once and applied to many tables: the codes of a fragment agree with
the table it was fitted on, values outside the domain are refused, the stored form gives
the same codes back, and ``encode`` is exactly fit-then-transform."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonkit.data.encoding import EncodedColumn, EncodedTable, Encoding, encode
from anonkit.data.schema import Kind, Schema
from anonkit.errors import InputError
from anonkit.hierarchy.base import Hierarchy
from anonkit.models.base import Classes, SensitiveAttribute
from anonkit.models.closeness import TCloseness

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

ZIP_TREE = Hierarchy([["02139", "021**", "*"], ["02141", "021**", "*"],
                      ["10001", "100**", "*"], ["10002", "100**", "*"]], name="zip")


def table_a() -> pd.DataFrame:
    return pd.DataFrame({
        "age": [34, 51, 27, 51, 45, 34],
        "zip": ["10001", "02139", "10002", "02141", "02139", "10001"],
        "edu": ["BSc", "PhD", "HS", "MSc", "BSc", "HS"],
        "day": pd.to_datetime(["2024-01-03", "2024-02-01", "2024-01-03", "2024-03-09",
                               "2024-02-01", "2024-01-03"]).astype("datetime64[ms]"),
        "disease": ["flu", "cold", None, "flu", "hiv", "cold"],
        "salary": [3000.5, 4000.0, 5000.0, 3000.5, 7000.25, 4000.0],
    })


def schema_of(df: pd.DataFrame) -> Schema:
    return Schema.from_roles(df, ["age", "zip", "edu", "day"], ["disease", "salary"],
                             hierarchies={"zip": ZIP_TREE},
                             orders={"edu": ["HS", "BSc", "MSc", "PhD"]})


def assert_same_column(got: EncodedColumn, expected: EncodedColumn) -> None:
    assert got.name == expected.name and got.kind is expected.kind
    assert got.codes.dtype == expected.codes.dtype
    np.testing.assert_array_equal(got.codes, expected.codes)
    assert got.values.dtype == expected.values.dtype
    assert got.values.tolist() == expected.values.tolist()
    assert got.missing_code == expected.missing_code
    assert got.hierarchy is expected.hierarchy or (
        got.hierarchy is not None and expected.hierarchy is not None
        and got.hierarchy.labels.tolist() == expected.hierarchy.labels.tolist())
    if expected.hierarchy_leaf is None:
        assert got.hierarchy_leaf is None
    else:
        assert got.hierarchy_leaf is not None
        assert got.hierarchy_leaf.dtype == expected.hierarchy_leaf.dtype
        np.testing.assert_array_equal(got.hierarchy_leaf, expected.hierarchy_leaf)


def assert_same_table(got: EncodedTable, expected: EncodedTable) -> None:
    assert got.n_rows == expected.n_rows
    assert got.index.equals(expected.index)
    assert len(got.quasi_identifiers) == len(expected.quasi_identifiers)
    assert len(got.sensitive) == len(expected.sensitive)
    for g, e in zip((*got.quasi_identifiers, *got.sensitive),
                    (*expected.quasi_identifiers, *expected.sensitive), strict=True):
        assert_same_column(g, e)


def test_a_fragment_gets_the_codes_of_the_fitted_table() -> None:
    a = table_a()
    encoding = Encoding.fit(a, schema_of(a))
    full = encoding.transform(a)
    # a subset in another order, whose values are fewer than the domain's
    b = a.iloc[[5, 2, 0]]
    part = encoding.transform(b)
    assert part.index.tolist() == [5, 2, 0]
    for whole, piece in zip((*full.quasi_identifiers, *full.sensitive),
                            (*part.quasi_identifiers, *part.sensitive), strict=True):
        assert piece.values.tolist() == whole.values.tolist()  # one dictionary
        np.testing.assert_array_equal(piece.codes, whole.codes[[5, 2, 0]])
        assert piece.decode().tolist() == whole.decode()[[5, 2, 0]].tolist()
    # a fragment alone would have been encoded with its own, smaller dictionary
    alone = encode(b, schema_of(a))
    assert alone.column("age").values.tolist() == [27, 34]
    assert part.column("age").values.tolist() == [27, 34, 45, 51]
    # the ordinal order and the hierarchy's leaves are the domain, used or not
    assert part.column("edu").values.tolist() == ["HS", "BSc", "MSc", "PhD"]
    assert part.column("zip").values.tolist() == ["02139", "02141", "10001", "10002"]
    # the sensitive column had a missing value when fitted: its code stays
    assert part.column("disease").missing_code == full.column("disease").missing_code == 3


def test_values_outside_the_domain_are_refused() -> None:
    a = table_a()
    encoding = Encoding.fit(a, schema_of(a))
    b = a.copy()
    b.loc[4, "age"] = 99
    with pytest.raises(InputError, match=r"column 'age' row 4 has a value outside its "
                                         r"encoding's domain .*declare a domain that includes "
                                         r"it, or refit"):
        encoding.transform(b)
    c = a.assign(edu=["HS", "HS", "HS", "Dr", "HS", "HS"])
    with pytest.raises(InputError, match=r"column 'edu' row 3 has a value outside"):
        encoding.transform(c)
    d = a.assign(disease=["flu", "flu", "flu", "flu", "flu", "measles"])
    with pytest.raises(InputError, match=r"column 'disease' row 5 has a value outside") as err:
        encoding.transform(d)
    assert "measles" not in str(err.value)  # a sensitive value never goes into a message
    with pytest.raises(InputError, match=r"column 'salary' of the encoding is not in the table"):
        encoding.transform(a.drop(columns="salary"))


def test_missing_values_need_a_missing_code() -> None:
    a = table_a()
    encoding = Encoding.fit(a, schema_of(a))
    b = a.assign(salary=[3000.5, None, 4000.0, 3000.5, 7000.25, 4000.0])
    with pytest.raises(InputError, match=r"column 'salary' is missing a value in row 1, but its "
                                         r"encoding has no missing value"):
        encoding.transform(b)
    c = a.assign(age=[34, 51, None, 51, 45, 34])
    with pytest.raises(InputError, match=r"column 'age' has 1 missing value\(s\)"):
        encoding.transform(c)
    # a declared domain with missing values allowed takes them in every column
    schema = schema_of(a)
    declared = Encoding.from_domain(
        schema, {"age": (18, 99), "edu": ["HS", "BSc", "MSc", "PhD"],
                 "day": ("2024-01-01", "2024-12-31"), "disease": ["flu", "cold", "hiv"],
                 "salary": [3000.5, 4000.0, 5000.0, 7000.25]}, allow_missing=True)
    encoded = declared.transform(c.assign(salary=b["salary"]))
    age = encoded.column("age")
    assert age.missing_code == 82 and age.codes.tolist() == [16, 33, 82, 33, 27, 16]
    assert encoded.column("salary").decode().tolist() == [3000.5, None, 4000.0, 3000.5,
                                                          7000.25, 4000.0]


def test_a_declared_domain() -> None:
    a = table_a()
    schema = schema_of(a)
    encoding = Encoding.from_domain(schema, {
        "age": (18, 99),
        "edu": ["PhD", "HS"],  # checked against the order, which is the domain
        "day": ("2024-01-01", "2024-12-31"),
        "disease": ["hiv", "flu", "cold", "measles"],
        "salary": [7000.25, 3000.5, 4000.0, 5000.0, 9999.0],
    }, reference_counts={"disease": {"flu": 50, "cold": 30, "hiv": 1, "measles": 19}})
    table = encoding.transform(a)
    assert table.column("age").values.tolist() == list(range(18, 100))
    assert table.column("age").decode().tolist() == a["age"].tolist()
    assert table.column("zip").values.tolist() == ["02139", "02141", "10001", "10002"]
    assert len(table.column("day").values) == 366
    assert table.column("day").decode().tolist() == a["day"].tolist()
    disease = table.column("disease")
    assert disease.values.tolist() == ["cold", "flu", "hiv", "measles", None]
    assert encoding.reference_counts["disease"].tolist() == [30, 50, 1, 19, 0]
    # the declared reference distribution, not the table's, is what classes are compared
    # with: the table's own distribution has no 'measles'
    declared = SensitiveAttribute.from_encoded(disease, encoding.reference_counts["disease"])
    own = SensitiveAttribute.from_encoded(disease)
    assert own.reference_counts.tolist() == [2, 2, 1, 0, 1]
    one_class = np.zeros(len(a), dtype=np.int64)
    emd = [TCloseness(0.5, "equal").levels(Classes(one_class, 1, [attr]))[0]
           for attr in (declared, own)]
    assert emd[1] == pytest.approx(0.0) and emd[0] > 0.2
    with pytest.raises(InputError, match="have 2 entries but the column has 5 codes"):
        SensitiveAttribute.from_encoded(disease, np.array([1, 2]))


def test_declared_domain_errors() -> None:
    a = table_a()
    schema = schema_of(a)
    full = {"age": (18, 99), "day": ("2024-01-01", "2024-12-31"),
            "disease": ["flu", "cold", "hiv"], "salary": [3000.5, 4000.0, 5000.0, 7000.25]}
    with pytest.raises(InputError, match="no domain is given for column 'salary'"):
        Encoding.from_domain(schema, {k: v for k, v in full.items() if k != "salary"})
    with pytest.raises(InputError, match="a domain is given for 'name'"):
        Encoding.from_domain(schema, full | {"name": ["x"]})
    with pytest.raises(InputError, match=r"range given for column 'age' is \(18.5, 99\)"):
        Encoding.from_domain(schema, full | {"age": (18.5, 99)})
    with pytest.raises(InputError, match="column 'age' is numeric but its declared domain has "
                                         "a value that is not a number"):
        Encoding.from_domain(schema, full | {"age": [20, "old"]})
    with pytest.raises(InputError, match="'zip' has values missing from its hierarchy: '99999'"):
        Encoding.from_domain(schema, full | {"zip": ["02139", "99999"]})
    with pytest.raises(InputError, match="declared domain of column 'disease' lists a missing"):
        Encoding.from_domain(schema, full | {"disease": ["flu", None]})
    with pytest.raises(InputError, match="reference counts for 'disease' count 'measles', "
                                         "which is outside its domain"):
        Encoding.from_domain(schema, full, reference_counts={"disease": {"measles": 3}})
    with pytest.raises(InputError, match="'age', which is not a sensitive column"):
        Encoding.from_domain(schema, full, reference_counts={"age": {20: 3}})


def test_the_stored_form_round_trips() -> None:
    a = table_a()
    a["n"] = np.array([2**64 - 1, 2**63, 5, 7, 2**63, 5], dtype=np.uint64)
    schema = Schema.from_roles(a, ["age", "zip", "edu", "day", "n"], ["disease", "salary"],
                               hierarchies={"zip": ZIP_TREE},
                               orders={"edu": ["HS", "BSc", "MSc", "PhD"]})
    encoding = Encoding.fit(a, schema)
    stored = json.loads(json.dumps(encoding.to_dict()))
    back = Encoding.from_dict(stored)
    assert back.to_dict() == stored
    for table in (a, a.iloc[::-1], a.iloc[[1, 3]]):
        assert_same_table(back.transform(table), encoding.transform(table))
    assert back.column("n").domain.dtype == np.uint64
    assert back.column("n").domain.tolist() == [5, 7, 2**63, 2**64 - 1]  # exactly
    assert back.reference_counts["disease"].tolist() == [2, 2, 1, 1]
    assert back.schema["zip"].hierarchy is back.column("zip").hierarchy
    with pytest.raises(InputError, match="not a stored encoding"):
        Encoding.from_dict({"format": "something else"})
    damaged = json.loads(json.dumps(stored))
    del damaged["columns"][0]["domain"]
    with pytest.raises(InputError, match="the stored encoding is damaged"):
        Encoding.from_dict(damaged)


def test_a_hierarchy_on_a_numeric_column_is_stored_and_infinite_numbers_refused() -> None:
    df = pd.DataFrame({"age": [25, 31, 25, 47], "x": [1.5, 2.0, -3.0, 1.5]})
    ages = Hierarchy([["25", "20-39", "*"], ["31", "20-39", "*"], ["47", "40-59", "*"],
                      ["52", "40-59", "*"]], name="age")
    schema = Schema.from_roles(df, ["age", "x"], hierarchies={"age": ages})
    encoding = Encoding.fit(df, schema)
    back = Encoding.from_dict(json.loads(json.dumps(encoding.to_dict(), allow_nan=False)))
    assert_same_table(back.transform(df), encode(df, schema))
    # an infinite number is no value a range can generalize: refused, naming the row
    infinite = df.assign(x=[1.5, np.inf, -np.inf, 1.5])
    with pytest.raises(InputError, match=r"column 'x' is numeric but row 1 has an infinite number"):
        Encoding.fit(infinite, Schema.from_roles(infinite, ["age", "x"],
                                                 hierarchies={"age": ages}))
    from_leaves = Encoding.from_domain(schema, {"x": [1.5, 2.0, -3.0]})
    assert from_leaves.column("age").domain.tolist() == [25, 31, 47, 52]
    assert from_leaves.transform(df).column("age").hierarchy_leaf.tolist() == [0, 1, 2, 3]


# -- encode is fit then transform ---------------------------------------------------------

values_of = {
    "int": st.integers(-5, 40),
    "wide": st.sampled_from([0, 10**12, -(10**12), 2**40, 3]),
    "float": st.sampled_from([0.5, 1.25, -3.0, 1e20, np.nan]),
    "text": st.sampled_from(["a", "b", "c", " ", "", None, "a "]),
    "day": st.sampled_from(["2024-01-01", "2023-12-31", "2024-02-29", None]),
    "edu": st.sampled_from(["HS", "BSc", "MSc"]),
}


@st.composite
def tables(draw: st.DrawFn) -> tuple[pd.DataFrame, Schema, bool]:
    n = draw(st.integers(1, 30))
    columns = {name: draw(st.lists(strategy, min_size=n, max_size=n))
               for name, strategy in values_of.items()}
    df = pd.DataFrame(columns)
    df["day"] = pd.to_datetime(df["day"]).astype("datetime64[ms]")
    if draw(st.booleans()):
        df["text"] = df["text"].astype("category")
    df["int"] = df["int"].astype(draw(st.sampled_from([np.int64, np.int8, np.uint16]))) \
        if (df["int"] >= 0).all() else df["int"]
    qis = draw(st.lists(st.sampled_from(list(values_of)), min_size=1, max_size=4,
                        unique=True))
    sensitive = [c for c in values_of if c not in qis][:draw(st.integers(0, 2))]
    blank = pd.DataFrame({c: df[c].isna() | df[c].astype(str).str.strip().eq("") for c in qis})
    complete = df[~blank.any(axis=1)]
    # missing QI values are refused unless allowed: without, keep the rows that have none
    allow_missing = draw(st.booleans()) or len(complete) == 0
    if not allow_missing:
        df = complete
    hierarchy = {"edu": Hierarchy([["HS", "school", "*"], ["BSc", "uni", "*"],
                                   ["MSc", "uni", "*"], ["PhD", "uni", "*"]])} \
        if draw(st.booleans()) else {}
    orders = {"edu": ["HS", "BSc", "MSc", "PhD"]} if not hierarchy and draw(st.booleans()) \
        else {}
    schema = Schema.from_roles(df, qis, sensitive, hierarchies=hierarchy, orders=orders,
                               kinds={"text": "categorical"})
    return df, schema, allow_missing


@SETTINGS
@given(case=tables(), picks=st.lists(st.integers(0, 10**6), max_size=12))
def test_encode_is_fit_then_transform(case: tuple[pd.DataFrame, Schema, bool],
                                      picks: list[int]) -> None:
    df, schema, allow_missing = case
    expected = encode(df, schema, allow_missing=allow_missing)
    encoding = Encoding.fit(df, schema, allow_missing=allow_missing)
    assert_same_table(encoding.transform(df), expected)
    stored = Encoding.from_dict(json.loads(json.dumps(encoding.to_dict())))
    assert_same_table(stored.transform(df), expected)
    # any fragment: the fitted table's codes of those rows
    if picks:
        rows = [p % len(df) for p in picks]
        part = encoding.transform(df.iloc[rows])
        for whole, piece in zip((*expected.quasi_identifiers, *expected.sensitive),
                                (*part.quasi_identifiers, *part.sensitive), strict=True):
            np.testing.assert_array_equal(piece.codes, whole.codes[rows])
            assert piece.values.tolist() == whole.values.tolist()


def test_a_numeric_column_of_text_keeps_its_type() -> None:
    df = pd.DataFrame({"q": ["3", "10", "3"], "s": ["1.5", "2", "1.5"]})
    schema = Schema.from_roles(df, ["q"], ["s"], kinds={"q": Kind.NUMERIC, "s": Kind.NUMERIC})
    encoding = Encoding.fit(df, schema)
    assert encoding.column("q").domain.dtype == np.int64
    assert_same_table(Encoding.from_dict(encoding.to_dict()).transform(df), encode(df, schema))
    other = pd.DataFrame({"q": [10, 3], "s": [2.0, 2.0]})  # numbers, not text: same values
    assert encoding.transform(other).column("q").codes.tolist() == [1, 0]
