"""Seeded data generators for the subject programs: the same seed gives the same table."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd


def loan(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    income = np.round(rng.lognormal(10.8, 0.45, n), 2)
    return pd.DataFrame({
        "age": rng.integers(19, 75, n),
        "income": income,
        "debts": np.round(income * rng.beta(2, 6, n), 2),
        "credit_score": np.clip(rng.normal(690, 55, n).round(), 450, 850).astype(np.int64),
        "employment": rng.choice(["permanent", "self-employed", "contract", "student",
                                  "unemployed"], n, p=[0.55, 0.15, 0.2, 0.05, 0.05]),
        "has_default": rng.random(n) < 0.12,
    })


def shipping(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "weight": np.round(rng.gamma(2.0, 3.0, n) + 0.1, 1),
        "distance": rng.integers(10, 1200, n),
        "country": rng.choice(["DE", "FR", "NL", "US", "UK", "CH", "NO"], n,
                              p=[0.3, 0.2, 0.1, 0.15, 0.1, 0.1, 0.05]),
        "express": rng.random(n) < 0.3,
        "parcels": rng.choice([1, 2, 3], n, p=[0.6, 0.3, 0.1]),
        "postcode": rng.choice(["10115", "20095", "80331", "50667", "60311", "70173"], n),
    })


def insurance(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(18, 80, n),
        "bmi": np.round(rng.normal(25, 4.5, n).clip(15, 45), 1),
        "smoker": rng.random(n) < 0.2,
        "region": rng.choice(["urban", "suburban", "rural"], n, p=[0.5, 0.3, 0.2]),
        "claims": rng.choice([0, 1, 2, 3], n, p=[0.6, 0.25, 0.1, 0.05]),
    })


def grading(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "score": rng.integers(30, 101, n),
        "attendance": np.round(rng.beta(6, 2, n), 2),
        "late_days": rng.choice([0, 1, 2, 3, 4], n, p=[0.5, 0.2, 0.15, 0.1, 0.05]),
        "track": rng.choice(["regular", "audit", "exchange"], n, p=[0.8, 0.1, 0.1]),
        "honors": rng.random(n) < 0.25,
    })


#: name -> (program file's stem and function, generator)
SUBJECTS: dict[str, tuple[str, Callable[[int, int], pd.DataFrame]]] = {
    "loan": ("loan.py:approve", loan),
    "shipping": ("shipping.py:shipping_cost", shipping),
    "insurance": ("insurance.py:premium", insurance),
    "grading": ("grading.py:grade", grading),
}
