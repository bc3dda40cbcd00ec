"""A served folder with the bundled Adult sample (with a record key), two versions of a
ward table taken from it, ARX hierarchies and a table with hostile cells; the app on it."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

with warnings.catch_warnings():  # (Starlette would rather see httpx's successor)
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from anonkit import jobs, web
from anonkit.datasets import load_adult

TOKEN = "test-token-not-secret"
HOSTILE = '<script>alert("x")</script>'
HOSTILE_NAME = "<img src=x onerror=alert(1)>"
QIS = ["age", "sex", "race", "education"]


def roles_for(columns: list[str], key: str, sensitive: str) -> dict[str, str]:
    """Every column's role in the workflow: the key an identifier, the QIs, one sensitive
    column, the others released unchanged."""
    return {c: "identifier" if c == key else "quasi-identifier" if c in QIS
            else "sensitive" if c == sensitive else "insensitive" for c in columns}


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("served")
    adult = load_adult()
    keyed = adult.data.copy()
    keyed.insert(0, "id", range(len(keyed)))
    keyed.to_csv(root / "adult.csv", index=False)
    for column in ("education", "age"):
        shutil.copy(adult.path.parent / f"adult_hierarchy_{column}.csv",
                    root / f"adult_hierarchy_{column}.csv")
    ward = adult.data.copy()
    ward.insert(0, "pid", [f"p{i:05d}" for i in range(len(ward))])
    ward.iloc[:3000].to_csv(root / "ward-1.csv", index=False)
    ward.iloc[300:3300].to_csv(root / "ward-2.csv", index=False)  # 300 left, 300 joined
    pd.DataFrame({"name": [HOSTILE, "b"], "age": [30, 40], HOSTILE_NAME: ["x", "y"]}).to_csv(
        root / "hostile.csv", index=False)
    return root


@pytest.fixture
def folder(served: Path, tmp_path: Path) -> Path:
    """A fresh copy of the served folder (a test writes releases and a history into it)."""
    root = tmp_path / "served"
    shutil.copytree(served, root)
    return root.resolve()


@pytest.fixture
def client(folder: Path, tmp_path: Path) -> Iterator[TestClient]:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    app = web.create_app(jobs.Workbench(str(folder / "anonkit.db")),
                         web.Config(folder, private, TOKEN, 80,
                                    frozenset({"testserver", "127.0.0.1"}), 200_000))
    with TestClient(app, base_url="http://testserver") as opened:
        yield opened
