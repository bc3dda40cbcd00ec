"""Datasets for examples, tests and benchmarks: the UCI Adult extract with ARX's
hierarchies, and a seeded synthetic census generator of any size.

A :class:`Dataset` carries the roles along with the table, so ``ds.schema()`` is all an
example needs. ``make_census`` returns the same dtypes :func:`anonkit.data.read.read_table` gives
(object strings, int64, float64, ``datetime64[ms]``), so a generated table written to disk
and read back is equal to the original.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from anonkit.data.read import read_table  # read imports nothing from here; keep import cheap
from anonkit.data.schema import Schema
from anonkit.errors import InputError
from anonkit.hierarchy import (
    Hierarchy,
    date_hierarchy,
    grouping_hierarchy,
    interval_hierarchy,
    masking_hierarchy,
    read_arx_hierarchy,
)

__all__ = ["ADULT_QUASI_IDENTIFIERS", "CENSUS_QUASI_IDENTIFIERS", "Dataset",
           "census_versions", "load_adult", "make_census"]


@dataclass
class Dataset:
    """A table with its column roles and hierarchies.

    ``quasi_identifiers`` is a list (not a tuple) so ``ds.data[ds.quasi_identifiers]``
    selects columns. ``sensitive`` is the categorical sensitive attribute;
    ``numeric_sensitive`` the numeric one where the table has one (for (k,e)-anonymity).
    """

    name: str
    data: pd.DataFrame
    quasi_identifiers: list[str]
    sensitive: str
    hierarchies: dict[str, Hierarchy]
    identifiers: list[str] = field(default_factory=list)
    numeric_sensitive: str | None = None
    path: Path | None = None

    @property
    def sensitive_columns(self) -> list[str]:
        return [self.sensitive] + ([self.numeric_sensitive] if self.numeric_sensitive else [])

    def schema(self, quasi_identifiers: Sequence[str] | None = None,
               sensitive: Sequence[str] | str | None = None) -> Schema:
        """The dataset's roles as a :class:`Schema`, with every hierarchy it has for the
        columns named; override the QIs or the sensitive columns to try other setups."""
        qis = list(self.quasi_identifiers if quasi_identifiers is None else quasi_identifiers)
        sens = self.sensitive_columns if sensitive is None else sensitive
        sens_list = [sens] if isinstance(sens, str) else list(sens)
        named = set(qis) | set(sens_list)
        return Schema.from_roles(
            self.data, qis, sens_list, identifiers=self.identifiers,
            hierarchies={k: h for k, h in self.hierarchies.items() if k in named})


# --------------------------------------------------------------------------- UCI Adult

#: ARX's standard setup: every Adult column but salary-class (6,480 full-domain nodes).
ADULT_QUASI_IDENTIFIERS = ["sex", "age", "race", "marital-status", "education",
                           "native-country", "workclass", "occupation"]


def load_adult() -> Dataset:
    """UCI Adult (30,162 rows, rows with missing values removed) in ARX's 9-column layout,
    with ARX's hierarchies for all 9 columns. Each call returns a fresh copy of the table,
    so callers may modify it."""
    data, path, hierarchies = _load_adult_cached()
    return Dataset(
        name="adult",
        data=data.copy(),
        quasi_identifiers=list(ADULT_QUASI_IDENTIFIERS),
        sensitive="salary-class",
        hierarchies=dict(hierarchies),
        path=path,
    )


@functools.lru_cache(maxsize=1)
def _load_adult_cached() -> tuple[pd.DataFrame, Path, dict[str, Hierarchy]]:
    folder = resources.files("anonkit.datasets").joinpath("data")
    # The package is installed as files (setuptools package-data), not zipped; as_file
    # keeps this correct for a zipped install too, at the cost of a temp copy.
    with resources.as_file(folder) as base:
        path = Path(base) / "adult.csv"
        data = read_table(path, sep=";")
        hierarchies = {
            col: read_arx_hierarchy(Path(base) / f"adult_hierarchy_{col}.csv", name=col)
            for col in [*ADULT_QUASI_IDENTIFIERS, "salary-class"]
        }
    return data, path, hierarchies


# --------------------------------------------------------------------------- synthetic census

#: The default QIs of :func:`make_census`; workclass, hours-per-week and birth_date have
#: hierarchies too and can be swapped in.
CENSUS_QUASI_IDENTIFIERS = ["age", "sex", "race", "marital-status", "education",
                            "native-country", "occupation", "zip"]

# Categories in descending frequency: sampling weights are Zipf-like over this order.
_SEX = {"Male": "*", "Female": "*"}
_RACE = {"White": "*", "Black": "*", "Asian-Pac-Islander": "*", "Amer-Indian-Eskimo": "*",
         "Other": "*"}
_MARITAL = {
    "Married-civ-spouse": "spouse present", "Never-married": "spouse not present",
    "Divorced": "spouse not present", "Separated": "spouse not present",
    "Widowed": "spouse not present", "Married-spouse-absent": "spouse not present",
    "Married-AF-spouse": "spouse present",
}
_EDUCATION = {  # value -> (group, coarser group), as ARX's Adult hierarchy
    "HS-grad": ("High School", "Secondary education"),
    "Some-college": ("Undergraduate", "Higher education"),
    "Bachelors": ("Undergraduate", "Higher education"),
    "Masters": ("Graduate", "Higher education"),
    "Assoc-voc": ("Professional Education", "Higher education"),
    "11th": ("High School", "Secondary education"),
    "Assoc-acdm": ("Professional Education", "Higher education"),
    "10th": ("High School", "Secondary education"),
    "7th-8th": ("High School", "Secondary education"),
    "Prof-school": ("Professional Education", "Higher education"),
    "9th": ("High School", "Secondary education"),
    "12th": ("High School", "Secondary education"),
    "Doctorate": ("Graduate", "Higher education"),
    "5th-6th": ("Primary School", "Primary education"),
    "1st-4th": ("Primary School", "Primary education"),
    "Preschool": ("Primary School", "Primary education"),
}
# years of schooling, for the income model
_EDU_YEARS = {"Preschool": 1, "1st-4th": 3, "5th-6th": 6, "7th-8th": 8, "9th": 9, "10th": 10,
              "11th": 11, "12th": 12, "HS-grad": 12, "Some-college": 13, "Assoc-voc": 14,
              "Assoc-acdm": 14, "Bachelors": 16, "Masters": 18, "Prof-school": 19,
              "Doctorate": 21}
_OCCUPATION = {
    "Prof-specialty": "Technical", "Craft-repair": "Technical",
    "Exec-managerial": "Nontechnical", "Adm-clerical": "Other", "Sales": "Nontechnical",
    "Other-service": "Other", "Machine-op-inspct": "Technical",
    "Transport-moving": "Other", "Handlers-cleaners": "Nontechnical",
    "Farming-fishing": "Other", "Tech-support": "Technical", "Protective-serv": "Other",
    "Priv-house-serv": "Other", "Armed-Forces": "Other",
}
_WORKCLASS = {
    "Private": "Non-Government", "Self-emp-not-inc": "Non-Government",
    "Local-gov": "Government", "State-gov": "Government", "Self-emp-inc": "Non-Government",
    "Federal-gov": "Government", "Without-pay": "Unemployed",
}
_COUNTRY = {
    "United-States": "North America", "Mexico": "North America", "Philippines": "Asia",
    "Germany": "Europe", "Canada": "North America", "India": "Asia",
    "El-Salvador": "North America", "Cuba": "North America", "England": "Europe",
    "Jamaica": "North America", "Italy": "Europe", "China": "Asia",
    "Dominican-Republic": "North America", "Vietnam": "Asia", "Guatemala": "North America",
    "Japan": "Asia", "Poland": "Europe", "Columbia": "South America", "Iran": "Asia",
    "Portugal": "Europe", "Peru": "South America", "France": "Europe",
    "Ecuador": "South America", "Ireland": "Europe", "Nigeria": "Africa",
}
_DISEASES = ["Flu", "Gastritis", "Bronchitis", "Migraine", "Asthma", "Hypertension",
             "Diabetes", "Arthritis", "Heart-disease", "Cancer"]
# log-odds of each disease at age 40 and its change per 20 years: acute ones fade with
# age, chronic ones grow, so disease is correlated with the age QI as in real data
_DISEASE_BASE = np.array([1.2, 0.6, 0.4, 0.3, 0.0, 0.2, -0.4, -0.6, -0.9, -1.3])
_DISEASE_SLOPE = np.array([-0.5, -0.2, 0.0, -0.4, -0.3, 0.6, 0.5, 0.7, 0.8, 0.6])

_REFERENCE_DAY = np.datetime64("2024-01-01", "D")  # ages are completed years on this day
_MIN_AGE, _MAX_AGE = 17, 90


def make_census(n_rows: int, seed: int = 0) -> Dataset:
    """A synthetic census-like table of ``n_rows`` rows; the same seed gives the same table.

    Columns: ``id`` (identifier, 1..n), ``age`` (17-90, right-skewed, top-coded at 90),
    ``sex``, ``race``, ``marital-status``, ``education``, ``native-country``,
    ``workclass``, ``occupation`` (Zipf-like skew over Adult's categories),
    ``hours-per-week`` (spike at 40), ``income`` (household, log-normal, whole dollars),
    ``zip`` (5-digit strings, some with a leading zero, skewed over ~1,200 codes),
    ``birth_date`` (consistent with age), ``disease`` (10 values, sensitive, depends on
    age) and ``salary`` (numeric sensitive, log-normal, depends on education and hours).

    Everything is drawn column-wise with numpy; a million rows take a fraction of a
    second. Hierarchies cover every value the generator can produce (not only those
    drawn), so they stay valid for any sample or seed.
    """
    if isinstance(n_rows, bool) or not isinstance(n_rows, int | np.integer) or n_rows < 1:
        raise InputError(f"make_census needs a whole number of rows >= 1, got {n_rows!r}")
    n = int(n_rows)
    rng = np.random.default_rng(seed)

    age = np.minimum(_MIN_AGE + np.floor(rng.gamma(2.2, 10.0, n)), _MAX_AGE).astype(np.int64)
    sex = _draw(rng, list(_SEX), n, 1.0)
    race = _draw(rng, list(_RACE), n, 2.2)
    marital = _draw(rng, list(_MARITAL), n, 1.3)
    edu_code = _zipf_codes(rng, len(_EDUCATION), n, 1.1)
    education = np.array(list(_EDUCATION), dtype=object)[edu_code]
    country = _draw(rng, list(_COUNTRY), n, 2.6)
    workclass = _draw(rng, list(_WORKCLASS), n, 1.6)
    occupation = _draw(rng, list(_OCCUPATION), n, 0.6)

    hours = np.clip(np.rint(rng.normal(40.0, 12.0, n)), 1, 99).astype(np.int64)
    hours[rng.random(n) < 0.45] = 40

    edu_years = np.array([_EDU_YEARS[e] for e in _EDUCATION], dtype=np.float64)[edu_code]
    experience = np.minimum(age - _MIN_AGE, 40) / 40.0
    log_income = 10.2 + 0.08 * edu_years + 0.5 * experience + rng.normal(0.0, 0.7, n)
    income = np.rint(np.exp(log_income)).astype(np.int64)
    log_salary = (8.6 + 0.1 * edu_years + 0.6 * experience + 0.012 * hours
                  + rng.normal(0.0, 0.5, n))
    salary = np.rint(np.exp(log_salary)).astype(np.int64)

    zips = _draw_zips(rng, n, seed)
    birth_date = _birth_dates(rng, age)
    disease = _diseases(rng, age)

    # copy=False also skips block consolidation (a full copy of the object columns)
    data = pd.DataFrame({
        "id": np.arange(1, n + 1, dtype=np.int64),
        "age": age,
        "sex": sex,
        "race": race,
        "marital-status": marital,
        "education": education,
        "native-country": country,
        "workclass": workclass,
        "occupation": occupation,
        "hours-per-week": hours,
        "income": income,
        "zip": zips,
        "birth_date": birth_date,
        "disease": disease,
        "salary": salary,
    }, copy=False)
    return Dataset(
        name=f"census-{n}-seed{seed}",
        data=data,
        quasi_identifiers=list(CENSUS_QUASI_IDENTIFIERS),
        sensitive="disease",
        numeric_sensitive="salary",
        identifiers=["id"],
        hierarchies=dict(_census_hierarchies(seed)),
    )


def _zipf_weights(k: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1, dtype=np.float64) ** s
    return w / w.sum()


def _alias_tables(probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias tables for each row of ``probs`` (m, k): drawing then costs two
    random numbers and two lookups per row, cheaper than a binary search over the CDF.
    The loop is over the k categories of each distribution, never over rows of data."""
    probs = np.atleast_2d(np.asarray(probs, dtype=np.float64))
    m, k = probs.shape
    accept = np.ones((m, k))
    alias = np.tile(np.arange(k), (m, 1))
    for r in range(m):
        scaled = probs[r] / probs[r].sum() * k
        small = [i for i in range(k) if scaled[i] < 1.0]
        large = [i for i in range(k) if scaled[i] >= 1.0]
        while small and large:
            lo, hi = small.pop(), large.pop()
            accept[r, lo], alias[r, lo] = scaled[lo], hi
            scaled[hi] -= 1.0 - scaled[lo]
            (small if scaled[hi] < 1.0 else large).append(hi)
    return accept, alias


def _alias_draw(rng: np.random.Generator, accept: np.ndarray, alias: np.ndarray,
                row: np.ndarray | int, n: int) -> np.ndarray:
    """One draw per data row from distribution ``row`` (an int, or one per data row).
    A single uniform gives both the column (integer part) and the coin (fraction)."""
    k = accept.shape[1]
    u = rng.random(n) * k
    pick = u.astype(np.intp)
    if isinstance(row, int | np.integer):
        acc, ali = accept[row], alias[row]
        return np.where(u - pick < acc[pick], pick, ali[pick])
    return np.where(u - pick < accept[row, pick], pick, alias[row, pick])


def _zipf_codes(rng: np.random.Generator, k: int, n: int, s: float) -> np.ndarray:
    accept, alias = _alias_tables(_zipf_weights(k, s))
    return _alias_draw(rng, accept, alias, 0, n)


def _draw(rng: np.random.Generator, categories: list[str], n: int, s: float) -> np.ndarray:
    """Object array of strings drawn with Zipf weights over ``categories``' order. The
    strings are shared by reference, so no per-row Python object is created."""
    return np.array(categories, dtype=object)[_zipf_codes(rng, len(categories), n, s)]


_N_AREAS, _CODES_PER_AREA = 50, 30


@functools.lru_cache(maxsize=8)
def _zip_layout(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(slot, pool)``: ``pool`` holds every distinct code as a 5-character string,
    sorted; ``pool[slot[a, j]]`` is the j-th code of area ``a`` (50 three-digit areas, a
    few starting with 0)."""
    rng = np.random.default_rng([seed, 5])
    areas = rng.choice(np.arange(100, 1000), size=_N_AREAS, replace=False)
    areas[[1, 7, 20]] = rng.choice(np.arange(10, 100), size=3, replace=False)  # '0xx..'
    suffixes = rng.choice(100, size=(_N_AREAS, _CODES_PER_AREA), replace=True)
    distinct, slot = np.unique(areas[:, None] * 100 + suffixes, return_inverse=True)
    pool = np.array([f"{c:05d}" for c in distinct], dtype=object)
    return slot.reshape(_N_AREAS, _CODES_PER_AREA), pool


def _draw_zips(rng: np.random.Generator, n: int, seed: int) -> np.ndarray:
    """Zipf over areas, then Zipf over the codes of the area: skew at every prefix length,
    as real zip codes have (a masking hierarchy then has uneven subtrees)."""
    slot, pool = _zip_layout(seed)
    area = _zipf_codes(rng, _N_AREAS, n, 1.0)
    within = _zipf_codes(rng, _CODES_PER_AREA, n, 1.2)
    return pool[slot[area, within]]


def _birth_dates(rng: np.random.Generator, age: np.ndarray) -> np.ndarray:
    """A birth date for each age: born in year ``ref - age - 1`` after 1 January, so the
    completed age on the reference day is exactly ``age``."""
    ref_year = _REFERENCE_DAY.astype("datetime64[Y]").astype(np.int64) + 1970
    year = ref_year - age - 1
    start = (year - 1970).astype("datetime64[Y]").astype("datetime64[D]")
    end = (year - 1970 + 1).astype("datetime64[Y]").astype("datetime64[D]")
    span = (end - start).astype(np.int64) - 1  # days from 2 January to 31 December
    offset = 1 + np.floor(rng.random(len(age)) * span).astype(np.int64)
    return (start + offset).astype("datetime64[ms]")


@functools.lru_cache(maxsize=1)
def _disease_tables() -> tuple[np.ndarray, np.ndarray]:
    ages = np.arange(_MIN_AGE, _MAX_AGE + 1)
    logits = _DISEASE_BASE[None, :] + _DISEASE_SLOPE[None, :] * ((ages[:, None] - 40) / 20.0)
    return _alias_tables(np.exp(logits))


def _diseases(rng: np.random.Generator, age: np.ndarray) -> np.ndarray:
    """A disease per row from its age's distribution (one alias table per age)."""
    accept, alias = _disease_tables()
    idx = _alias_draw(rng, accept, alias, age - _MIN_AGE, len(age))
    return np.array(_DISEASES, dtype=object)[idx]


def _census_hierarchies(seed: int) -> dict[str, Hierarchy]:
    """Only the zip hierarchy depends on the seed; all are built once per process and
    shared (hierarchies are not modified by their users)."""
    return {**_fixed_census_hierarchies(), "zip": _zip_hierarchy(seed)}


@functools.lru_cache(maxsize=8)
def _zip_hierarchy(seed: int) -> Hierarchy:
    return masking_hierarchy(_zip_layout(seed)[1], name="zip")


@functools.lru_cache(maxsize=1)
def _fixed_census_hierarchies() -> dict[str, Hierarchy]:
    ref_year = int(str(_REFERENCE_DAY.astype("datetime64[Y]")))
    first = np.datetime64(f"{ref_year - _MAX_AGE - 1}-01-02")
    last = np.datetime64(f"{ref_year - _MIN_AGE - 1}-12-31")
    all_days = np.arange(first, last + 1, dtype="datetime64[D]")
    return {
        "age": interval_hierarchy(range(_MIN_AGE, _MAX_AGE + 1), widths=(5, 10, 20),
                                  name="age"),
        "hours-per-week": interval_hierarchy(range(1, 100), widths=(5, 10, 20, 40),
                                             name="hours-per-week"),
        "sex": grouping_hierarchy([_SEX], name="sex"),
        "race": grouping_hierarchy([_RACE], name="race"),
        "marital-status": grouping_hierarchy([_MARITAL], name="marital-status"),
        "education": grouping_hierarchy(
            [{k: g for k, (g, _) in _EDUCATION.items()},
             {g: c for g, c in _EDUCATION.values()}], name="education"),
        "native-country": grouping_hierarchy([_COUNTRY], name="native-country"),
        "occupation": grouping_hierarchy([_OCCUPATION], name="occupation"),
        "workclass": grouping_hierarchy([_WORKCLASS], name="workclass"),
        "birth_date": date_hierarchy(all_days, levels=("month", "year", "decade"),
                                     name="birth_date"),
        "disease": grouping_hierarchy([{d: "*" for d in _DISEASES}], name="disease"),
    }


def census_versions(n_rows: int, n_versions: int, churn: float,
                    seed: int = 0) -> list[pd.DataFrame]:
    """Successive versions of a changing synthetic census, for trying re-publication.

    Each version replaces ``churn`` (a share) of the previous one's people by people not
    seen before and shuffles the rows, as a new extract would; everyone keeps their own
    values and ``id`` across versions (all are drawn from one larger census).
    """
    if not 0 <= churn <= 1:
        raise InputError(f"churn is a share of the rows, between 0 and 1; got {churn}")
    n_new = round(churn * n_rows)
    pool = make_census(n_rows + n_new * max(n_versions - 1, 0), seed=seed).data
    rng = np.random.default_rng(seed)
    current = np.arange(n_rows)
    fresh = n_rows
    versions = []
    for _ in range(n_versions):
        versions.append(pool.iloc[rng.permutation(current)].reset_index(drop=True))
        leaving = rng.choice(n_rows, n_new, replace=False)
        current = current.copy()
        current[leaving] = np.arange(fresh, fresh + n_new)
        fresh += n_new
    return versions
