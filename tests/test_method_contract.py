"""The contract every registered method keeps, in the spirit of scikit-learn's
``check_estimator``: run on a table, its release passes the independent checker on the
models it claims; written, read back as an adversary reads it and regrouped, it passes
again, and pycanon agrees where pycanon has the model. A sequential method is run through
the history (twice). A method added to the registry is covered without a line here: the
settings below are the only per-method knowledge, and a method without them fails.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pycanon.anonymity as pycanon
import pytest

from anonkit import jobs, methods
from anonkit.checker import check
from anonkit.data.read import read_table
from anonkit.datasets import census_versions, make_census
from anonkit.history.attacks import CrossReleaseBreachError
from anonkit.history.engines import sequential_without_engine
from anonkit.release import Release
from anonkit.verify import write_release

ROLES = {"identifiers": ["id"], "insensitive": "*"}
#: per method: its roles and options on the synthetic census (every method needs some)
SETTINGS: dict[str, dict[str, object]] = {
    "mondrian": {"quasi_identifiers": ["age", "sex", "zip"], "sensitive": "disease",
                 "k": 5, "l": 2, "seed": 1},
    "huffman": {"quasi_identifiers": ["age", "education"], "sensitive": "disease", "k": 5},
    "alphabetic": {"quasi_identifiers": ["age", "hours-per-week"], "sensitive": "disease",
                   "k": 5, "l": 2},
    "randomized": {"quasi_identifiers": ["age", "hours-per-week"], "sensitive": "disease",
                   "threshold": 0.0, "accept_heuristic": True, "seed": 1},
    "stream-tree": {"quasi_identifiers": ["age"], "sensitive": "disease", "k": 5},
    "ke": {"quasi_identifiers": ["age", "zip"], "sensitive": "salary", "drop": ["disease"],
           "k": 4, "e": 2000, "seed": 1},
    "m-invariance": {"quasi_identifiers": ["age", "zip"], "sensitive": "disease", "m": 3,
                     "seed": 1},
    "global": {"quasi_identifiers": ["age", "sex", "race"], "sensitive": "disease", "k": 5,
               "l": 2, "build": {"age": "intervals:5,10,20"}},
}
ROWS = 1_500
#: the models a sequential method's releases claim, as text, for the independent re-check
CLAIMS = {"m-invariance": ["m=3"], "ke": ["ke=4,2000"], "stream-tree": ["k=5"]}


def built_in() -> list[str]:
    """The registered methods with typed options: the built-in ones, and any a user adds the
    same way (the test suite's own engines register untyped)."""
    return [m.name for m in methods.methods() if m.typed]


def test_every_registered_method_has_settings_and_every_sequential_one_an_engine() -> None:
    assert sorted(SETTINGS) == built_in()
    assert sequential_without_engine() == []


def _regrouped(release: Release, path: Path) -> pd.DataFrame:
    """The written release read back with its text as text, as an adversary reads it."""
    back = read_table(path)
    assert len(back) == len(release.data)
    return back


def _check_again(release: Release, table: pd.DataFrame) -> None:
    schema = release.schema
    report = check(table, schema.quasi_identifiers, schema.sensitive or None, release.models,
                   group_column=release.group_column)
    assert report.passed, str(report)
    verdicts = {v.model: v.measured for v in release.verdicts}
    assert {v.model: v.measured for v in report.verdicts} == pytest.approx(verdicts)


def _pycanon_agrees(release: Release, table: pd.DataFrame) -> None:
    """k-anonymity and distinct l-diversity, where the release groups by its quasi-identifiers
    (pycanon has no explicit group column)."""
    if release.group_column is not None:
        return
    qis = list(release.schema.quasi_identifiers)
    for verdict in release.verdicts:
        if verdict.model == "k-anonymity":
            assert pycanon.k_anonymity(table, qis) == verdict.measured
        if verdict.model == "distinct l-diversity":
            sens = list(release.schema.sensitive)
            assert pycanon.l_diversity(table, qis, sens) == verdict.measured


def _settings(name: str) -> tuple[list[str], dict[str, object]]:
    settings = dict(SETTINGS[name])
    qis = list(settings.pop("quasi_identifiers"))  # type: ignore[call-overload]
    return qis, settings


@pytest.mark.parametrize("name", [n for n in SETTINGS if methods.get(n).anonymize is not None])
def test_a_one_shot_release_holds_when_written_and_read_back(name: str, tmp_path: Path
                                                             ) -> None:
    census = make_census(ROWS, seed=3).data
    qis, settings = _settings(name)
    release = jobs.anonymize(census, name, quasi_identifiers=qis, **ROLES,  # type: ignore[arg-type]
                             **settings)
    assert release.method == name and release.verdicts and release.passed
    assert "id" not in release.data.columns
    # the tables beside the release are declared, so their paths are checked before a run
    assert set(release.auxiliary) <= set(methods.get(name).auxiliary)
    assert release.metrics, "every release is measured"
    _check_again(release, release.data)
    path = write_release(release, tmp_path / "release.csv",
                         accept_heuristic=not release.formal_guarantee)
    table = _regrouped(release, path)
    _check_again(release, table)
    _pycanon_agrees(release, table)


@pytest.mark.parametrize("name", [n for n in SETTINGS if methods.get(n).sequential])
def test_a_sequential_method_publishes_twice_and_each_release_holds(name: str,
                                                                    tmp_path: Path) -> None:
    first, second = census_versions(ROWS, 2, 0.1, seed=3)
    qis, settings = _settings(name)
    settings.pop("seed", None)  # the history's gate judges OS-entropy releases too
    sensitive = settings.pop("sensitive")
    if name == "stream-tree":
        settings["domain"] = "0,127"
    outputs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the secret beside a test history
        with jobs.History(tmp_path / "h.db") as history:
            for i, table in enumerate((first, second), start=1):
                output = tmp_path / f"r{i}.csv"
                try:
                    history.publish(table, dataset="d", key="id", output=output, method=name,
                                    quasi_identifiers=qis, sensitive=[sensitive],
                                    insensitive="*", **settings)  # type: ignore[arg-type]
                except CrossReleaseBreachError:
                    assert i == 2, "a first release has nothing to combine with"
                    assert not output.exists()
                    break
                outputs.append(output)
            infos = history.releases("d")
    assert [info.seq for info in infos] == list(range(1, len(outputs) + 1))
    for info, output in zip(infos, outputs, strict=True):
        assert info.verdicts and all(v["passed"] for v in info.verdicts)
        beside = {p.name.split(".")[1] for p in output.parent.glob(f"{output.stem}.*.csv")}
        assert beside <= set(methods.get(name).auxiliary)
        table = read_table(output)
        assert "id" not in table.columns
        report = check(table, qis, sensitive, CLAIMS[name],
                       group_column="group" if name == "ke" else None)
        assert report.passed, str(report)
        claimed = {v["model"]: v["measured"] for v in info.verdicts}
        assert {v.model: v.measured for v in report.verdicts} == pytest.approx(claimed)
