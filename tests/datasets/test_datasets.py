"""Bundled UCI Adult and the synthetic census generator."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd
import pytest

from anonkit.data.encoding import encode
from anonkit.data.schema import Kind
from anonkit.datasets import (
    ADULT_QUASI_IDENTIFIERS,
    CENSUS_QUASI_IDENTIFIERS,
    load_adult,
    make_census,
)
from anonkit.errors import InputError
from complexity import GROWTH_BOUND, growth

# --------------------------------------------------------------------------- adult


def test_adult_table() -> None:
    ds = load_adult()
    assert ds.data.shape == (30162, 9)
    assert list(ds.data.columns) == ["sex", "age", "race", "marital-status", "education",
                                     "native-country", "workclass", "occupation",
                                     "salary-class"]
    assert ds.quasi_identifiers == ADULT_QUASI_IDENTIFIERS
    assert ds.sensitive == "salary-class" and ds.numeric_sensitive is None
    assert ds.data["age"].dtype == np.int64 and ds.data["sex"].dtype == object
    assert (ds.data["age"].min(), ds.data["age"].max()) == (17, 90)
    # distinct counts from the data README
    assert ds.data.nunique().to_dict() == {
        "sex": 2, "age": 72, "race": 5, "marital-status": 7, "education": 16,
        "native-country": 41, "workclass": 7, "occupation": 14, "salary-class": 2}
    assert ds.data.iloc[0].tolist() == ["Male", 39, "White", "Never-married", "Bachelors",
                                        "United-States", "State-gov", "Adm-clerical", "<=50K"]
    assert ds.path is not None and ds.path.is_file() and ds.path.name == "adult.csv"


def test_adult_hierarchies_cover_the_data_and_give_arx_lattice() -> None:
    ds = load_adult()
    assert set(ds.hierarchies) == {*ADULT_QUASI_IDENTIFIERS, "salary-class"}
    for column, h in ds.hierarchies.items():
        h.leaf_codes(ds.data[column].unique(), column=column)  # raises on a gap
    assert np.prod([ds.hierarchies[q].height for q in ds.quasi_identifiers]) == 6480


def test_adult_schema_encodes() -> None:
    ds = load_adult()
    table = encode(ds.data, ds.schema())
    assert [c.name for c in table.quasi_identifiers] == ADULT_QUASI_IDENTIFIERS
    assert table.column("age").kind is Kind.NUMERIC
    assert table.column("education").hierarchy is ds.hierarchies["education"]
    assert [c.name for c in table.sensitive] == ["salary-class"]


def test_adult_returns_a_fresh_table_each_time() -> None:
    first = load_adult()
    first.data.loc[0, "sex"] = "changed"
    first.quasi_identifiers.append("salary-class")
    second = load_adult()
    assert second.data.loc[0, "sex"] == "Male"
    assert second.quasi_identifiers == ADULT_QUASI_IDENTIFIERS


def test_bundled_files_and_attribution_are_packaged() -> None:
    data = resources.files("anonkit.datasets").joinpath("data")
    names = {p.name for p in data.iterdir()}
    assert {"adult.csv", "ATTRIBUTION.md", "ARX_LICENSE.txt"} <= names
    assert sum(n.startswith("adult_hierarchy_") for n in names) == 9
    text = data.joinpath("ATTRIBUTION.md").read_text()
    assert "CC BY 4.0" in text and "Apache" in text
    assert "Apache License" in data.joinpath("ARX_LICENSE.txt").read_text()


# --------------------------------------------------------------------------- census


@pytest.fixture(scope="module")
def census() -> pd.DataFrame:
    return make_census(50_000, seed=7).data


def test_census_columns_and_roles() -> None:
    ds = make_census(100)
    assert list(ds.data.columns) == [
        "id", "age", "sex", "race", "marital-status", "education", "native-country",
        "workclass", "occupation", "hours-per-week", "income", "zip", "birth_date",
        "disease", "salary"]
    assert ds.quasi_identifiers == CENSUS_QUASI_IDENTIFIERS and len(ds.quasi_identifiers) == 8
    assert ds.identifiers == ["id"]
    assert (ds.sensitive, ds.numeric_sensitive) == ("disease", "salary")
    assert ds.sensitive_columns == ["disease", "salary"]
    assert ds.data.dtypes.astype(str).to_dict() == {
        "id": "int64", "age": "int64", "sex": "object", "race": "object",
        "marital-status": "object", "education": "object", "native-country": "object",
        "workclass": "object", "occupation": "object", "hours-per-week": "int64",
        "income": "int64", "zip": "object", "birth_date": "datetime64[ms]",
        "disease": "object", "salary": "int64"}


def test_census_is_deterministic_per_seed() -> None:
    a, b, c = make_census(3000, seed=1), make_census(3000, seed=1), make_census(3000, seed=2)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert not a.data.equals(c.data)
    # a longer table is not a prefix-extension promise, but sizes are exact
    assert len(make_census(1).data) == 1


def test_census_value_distributions(census: pd.DataFrame) -> None:
    n = len(census)
    assert census["id"].is_unique
    age = census["age"]
    assert age.min() >= 17 and age.max() <= 90 and age.max() == 90  # top-coded tail
    assert age.mean() > age.median()  # right-skewed
    assert 30 <= age.median() <= 45
    assert 0.3 < (census["hours-per-week"] == 40).mean() < 0.7  # the spike at 40
    assert census["hours-per-week"].between(1, 99).all()
    assert census["income"].nunique() > n // 4 and census["income"].gt(0).all()
    assert census["income"].mean() > census["income"].median()  # log-normal tail
    assert census["salary"].nunique() > n // 4
    for column in ["sex", "race", "education", "native-country", "occupation", "workclass",
                   "marital-status"]:
        shares = census[column].value_counts(normalize=True).to_numpy()
        assert shares[0] > 1.5 * shares[-1], column  # skewed, not uniform
    assert census["disease"].nunique() == 10
    assert census["native-country"].value_counts(normalize=True).iloc[0] > 0.5


def test_census_zip_codes(census: pd.DataFrame) -> None:
    zips = census["zip"]
    assert zips.str.fullmatch(r"\d{5}").all()
    assert zips.str.startswith("0").any()  # codes with a leading zero exist
    counts = zips.value_counts()
    assert 100 < len(counts) < 2000
    assert counts.iloc[0] > 20 * counts.median()  # heavily skewed
    # skewed at the 3-digit prefix level too
    prefix = zips.str[:3].value_counts(normalize=True)
    assert prefix.iloc[0] > 5 * prefix.median()


def test_census_correlations(census: pd.DataFrame) -> None:
    years = (pd.Timestamp("2024-01-01") - census["birth_date"]).dt.days / 365.2425
    assert (np.floor(years).astype(int) - census["age"]).abs().le(1).all()
    assert (2023 - census["birth_date"].dt.year == census["age"]).all()
    old = census.loc[census["age"] >= 65, "disease"].value_counts(normalize=True)
    young = census.loc[census["age"] < 30, "disease"].value_counts(normalize=True)
    assert old["Hypertension"] > 2 * young["Hypertension"]
    assert young["Flu"] > old["Flu"]
    higher = census["education"].isin(["Masters", "Doctorate", "Prof-school"])
    assert census.loc[higher, "salary"].median() > 1.3 * census.loc[~higher, "salary"].median()


def test_census_hierarchies_cover_every_value(census: pd.DataFrame) -> None:
    ds = make_census(10, seed=7)
    assert set(ds.quasi_identifiers) <= set(ds.hierarchies)
    assert {"workclass", "hours-per-week", "birth_date", "disease"} <= set(ds.hierarchies)
    for column, h in ds.hierarchies.items():
        if column == "birth_date":
            values = census[column].dt.strftime("%Y-%m-%d").unique()  # see the report note
        else:
            values = census[column].unique()
        h.leaf_codes(values, column=column)
    assert ds.hierarchies["zip"].labels[0, -1] == "*****"
    assert ds.hierarchies["age"].height == 5 and ds.hierarchies["education"].height == 4


def test_census_schema_encodes() -> None:
    ds = make_census(2000, seed=3)
    schema = ds.schema()
    assert schema.identifiers == ["id"] and schema.sensitive == ["disease", "salary"]
    table = encode(ds.data, schema)
    assert [c.name for c in table.quasi_identifiers] == CENSUS_QUASI_IDENTIFIERS
    assert table.column("zip").kind is Kind.CATEGORICAL
    assert table.column("salary").kind is Kind.NUMERIC
    other = ds.schema(quasi_identifiers=["age", "workclass"], sensitive="disease")
    assert other.quasi_identifiers == ["age", "workclass"] and other.sensitive == ["disease"]


@pytest.mark.parametrize("bad", [0, -5, 2.5, "10", True])
def test_census_bad_size(bad: object) -> None:
    with pytest.raises(InputError, match="whole number of rows"):
        make_census(bad)  # type: ignore[arg-type]


@pytest.mark.slow
def test_census_generation_grows_linearly() -> None:
    """1,000,000 rows take at most GROWTH_BOUND times as long as 100,000 (how fast it is
    is a benchmark figure, not a test)."""
    make_census(1000)  # build the shared hierarchies once
    ratio = growth(lambda: make_census(100_000, seed=11), lambda: make_census(1_000_000, seed=11))
    assert ratio < GROWTH_BOUND, ratio
