"""Full-domain global recoding with a suppression limit (issue 23): the chosen node is the
optimum of an exhaustive search over the whole lattice (tests/oracles/global_recoding.py),
every column uses one level, the suppressed rows stay within the limit, and the release --
written and read back -- passes the verifier and, without its suppressed rows, pycanon."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pycanon.anonymity as pycanon
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anonkit
from anonkit import Hierarchy as AnonkitHierarchy
from anonkit.algorithms import global_recoding
from anonkit.algorithms.recoding_metrics import METRICS
from anonkit.checker import check
from anonkit.data.read import read_table
from anonkit.errors import InputError
from anonkit.methods.options import RECODING_METRICS
from anonkit.models.base import KAnonymity
from anonkit.models.population_table import PopulationTable
from anonkit.models.risk import bind_population
from anonkit.models.text import parse_model
from anonkit.release import Release
from anonkit.verify import write_release
from oracles.global_recoding import Best, Hierarchy, Risk, close, optima, risk_optimum

ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country",
             "workclass", "occupation"]
#: the default suite's Adult: five QIs (240 nodes), the oracle sweeps it in about a second
SMALL_QIS = ["sex", "age", "race", "marital-status", "education"]


def arx_hierarchy(path: Path) -> Hierarchy:
    """An ARX hierarchy file as the oracle reads it: value -> labels above it."""
    with path.open(newline="") as f:
        return {row[0]: row[1:] for row in csv.reader(f, delimiter=";") if row}


@pytest.fixture(scope="module")
def adult() -> tuple[pd.DataFrame, dict[str, Hierarchy]]:
    dataset = anonkit.load_adult()
    assert dataset.path is not None
    folder = dataset.path.parent
    return dataset.data, {q: arx_hierarchy(folder / f"adult_hierarchy_{q}.csv")
                          for q in ADULT_QIS}


def run_global(frame: pd.DataFrame, qis: Sequence[str], hierarchies: Mapping[str, Hierarchy],
               *, k: int, l: int, limit: float, metric: str) -> Release:  # noqa: E741
    return anonkit.anonymize(
        frame, "global", quasi_identifiers=list(qis), sensitive="s" if "s" in frame
        else "salary-class", insensitive="*",
        hierarchies={q: AnonkitHierarchy([[v, *labels] for v, labels in h.items()], name=q)
                     for q, h in hierarchies.items() if q in qis},
        k=k, **({"l": l} if l > 1 else {}), suppression=limit, metric=metric)


def labels_at(values: pd.Series, hierarchy: Hierarchy | None, level: int) -> set[str]:
    texts = values.astype(str)
    if level == 0:
        return set(texts)
    if hierarchy is None:
        return {"*"}
    return {hierarchy[t][level - 1] for t in texts}


def assert_release_holds(release: Release, frame: pd.DataFrame, qis: Sequence[str],
                         sensitive: str, hierarchies: Mapping[str, Hierarchy], *, k: int,
                         l: int, limit: float, tmp_path: Path) -> None:  # noqa: E741
    assert release.passed, release.summary()
    data = release.data[list(qis)].astype(str)
    suppressed = (data == "*").all(axis=1).to_numpy()
    assert release.recoding is not None
    if release.recoding.suppressed_rows:
        assert release.recoding.suppressed_rows == suppressed.sum()
    else:  # nothing suppressed: a row shows * everywhere only at the top of the lattice
        assert not suppressed.any() or all(
            level == release.recoding.heights[q] - 1
            for q, level in release.recoding.levels.items())
        suppressed[:] = False
    assert suppressed.sum() <= limit * len(data) + 1e-9
    for q in qis:  # one level per column, for every row that is not suppressed
        level = release.recoding.levels[q]
        shown = set(data.loc[~suppressed, q])
        assert shown <= labels_at(frame[q], hierarchies.get(q), level), q
    path = write_release(release, tmp_path / "release.csv")
    back = read_table(path)
    if release.recoding.suppressed_rows:
        report = check(back, list(qis), sensitive, release.models, suppressed="*")
        assert report.suppressed_rows == int(suppressed.sum())
    else:  # strict: every class holds every model
        report = check(back, list(qis), sensitive, release.models)
    assert report.passed, str(report)
    kept = back.loc[~suppressed].astype(str).reset_index(drop=True)
    if len(kept):
        assert pycanon.k_anonymity(kept, list(qis)) >= k
        if l > 1:
            assert pycanon.l_diversity(kept, list(qis), [sensitive]) >= l


def test_the_metric_names_agree() -> None:
    assert RECODING_METRICS == METRICS


#: the default suite's settings on five QIs: (k, l, suppression limit)
SMALL_GRID = [(2, 1, 0.0), (10, 1, 0.05), (5, 2, 0.0), (50, 2, 0.01)]
EXACT_METRICS = ("precision", "discernibility")


@pytest.fixture(scope="module")
def small_optima(adult) -> dict[tuple[int, int, float], dict[str, Best | None]]:
    frame, hierarchies = adult
    return optima(frame, SMALL_QIS, "salary-class", hierarchies, SMALL_GRID, EXACT_METRICS)


@pytest.mark.parametrize(("k", "l", "limit"), SMALL_GRID)
def test_adult_five_qis_the_optimum_of_the_whole_lattice(adult, small_optima, k, l,  # noqa: E741
                                                         limit, tmp_path: Path) -> None:
    frame, hierarchies = adult
    for metric in EXACT_METRICS:
        expected = small_optima[(k, l, limit)][metric]
        assert expected is not None
        release = run_global(frame, SMALL_QIS, hierarchies, k=k, l=l, limit=limit,
                             metric=metric)
        assert release.recoding is not None
        assert close(release.recoding.value, expected.value), (metric, expected,
                                                               release.recoding)
        assert_release_holds(release, frame, SMALL_QIS, "salary-class", hierarchies, k=k,
                             l=l, limit=limit, tmp_path=tmp_path)


@pytest.mark.slow
def test_adult_eight_qis_the_full_acceptance_grid(adult, tmp_path: Path) -> None:
    frame, hierarchies = adult
    grid = [(k, diversity, limit) for k in (2, 5, 10, 50) for diversity in (1, 2)
            for limit in (0.0, 0.01, 0.05)]
    metrics = EXACT_METRICS
    best = optima(frame, ADULT_QIS, "salary-class", hierarchies, grid, metrics)
    for k, l, limit in grid:  # noqa: E741
        for metric in metrics:
            expected = best[(k, l, limit)][metric]
            assert expected is not None
            release = run_global(frame, ADULT_QIS, hierarchies, k=k, l=l, limit=limit,
                                 metric=metric)
            assert release.recoding is not None
            assert close(release.recoding.value, expected.value), (k, l, limit, metric)
            assert_release_holds(release, frame, ADULT_QIS, "salary-class", hierarchies,
                                 k=k, l=l, limit=limit, tmp_path=tmp_path)


# -- random tables with random hierarchies ----------------------------------------------


@st.composite
def tables(draw: st.DrawFn) -> tuple[pd.DataFrame, list[str], dict[str, Hierarchy]]:
    n_qis = draw(st.integers(2, 4))
    n_rows = draw(st.integers(1, 30))
    qis = [f"q{j}" for j in range(n_qis)]
    columns: dict[str, list[str]] = {}
    hierarchies: dict[str, Hierarchy] = {}
    for q in qis:
        n_values = draw(st.integers(1, 5))
        values = [f"{q}v{i}" for i in range(n_values)]
        columns[q] = [values[draw(st.integers(0, n_values - 1))] for _ in range(n_rows)]
        if draw(st.booleans()):
            # a random tree: each level groups the nodes below into fewer ones
            path: dict[str, list[str]] = {v: [] for v in values}
            current = {v: v for v in values}  # value -> its node at the level below
            for level in range(1, draw(st.integers(1, 3))):
                nodes = sorted(set(current.values()))
                width = draw(st.integers(1, max(1, len(nodes) - 1)))
                parent = {node: f"{q}L{level}g{draw(st.integers(0, width - 1))}"
                          for node in nodes}
                for v in values:
                    current[v] = parent[current[v]]
                    path[v].append(current[v])
            hierarchies[q] = {v: [*labels, "*"] for v, labels in path.items()}
    sensitive = [f"s{draw(st.integers(0, 3))}" for _ in range(n_rows)]
    return pd.DataFrame({**columns, "s": sensitive}), qis, hierarchies


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables(), k=st.integers(1, 4), l=st.integers(1, 2),
       limit=st.sampled_from([0.0, 0.1, 0.3]), metric=st.sampled_from(METRICS))
def test_random_tables_the_chosen_node_is_the_brute_force_optimum(
        table: tuple[pd.DataFrame, list[str], dict[str, Hierarchy]], k: int,
        l: int, limit: float, metric: str, tmp_path: Path) -> None:  # noqa: E741
    frame, qis, hierarchies = table
    expected: Best | None = optima(frame, qis, "s", hierarchies, [(k, l, limit)],
                                   [metric])[(k, l, limit)][metric]
    if expected is None:
        with pytest.raises(InputError):
            run_global(frame, qis, hierarchies, k=k, l=l, limit=limit, metric=metric)
        return
    release = run_global(frame, qis, hierarchies, k=k, l=l, limit=limit, metric=metric)
    assert release.recoding is not None
    assert close(release.recoding.value, expected.value), (expected, release.recoding)
    assert_release_holds(release, frame, qis, "s", hierarchies, k=k, l=l, limit=limit,
                         tmp_path=tmp_path)


# -- the search itself -------------------------------------------------------------------


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4)), min_size=1, max_size=40),
       st.lists(st.integers(0, 1), min_size=5, max_size=5))
def test_a_rollup_merges_exactly_the_tuples_that_become_equal(
        rows: list[tuple[int, int]], second_map: list[int]) -> None:
    codes = np.array(rows, dtype=np.int32)
    columns = [global_recoding.ColumnLattice("a", (np.arange(4, dtype=np.int32),
                                                   np.array([0, 0, 1, 1], np.int32))),
               global_recoding.ColumnLattice("b", (np.arange(5, dtype=np.int32),
                                                   np.array(second_map, np.int32)))]
    bottom = global_recoding.group_rows_of(codes)
    up = global_recoding.rollup(bottom, columns, (1, 1))
    expected = pd.DataFrame({"a": [(0, 0, 1, 1)[a] for a, _ in rows],
                             "b": [second_map[b] for _, b in rows]}).value_counts()
    got = pd.Series(up.counts, index=pd.MultiIndex.from_arrays(up.codes.T, names=["a", "b"]))
    assert got.sort_index().to_dict() == expected.sort_index().to_dict()
    assert bottom.group_of is not None
    rows_per_group = up.of_bottom()[bottom.group_of]
    assert (up.codes[rows_per_group] == np.stack([np.array([0, 0, 1, 1])[codes[:, 0]],
                                                  np.array(second_map)[codes[:, 1]]],
                                                 axis=1)).all()


def test_a_model_that_is_not_monotone_is_searched_without_pruning() -> None:
    census = anonkit.make_census(400, seed=2).data
    release = anonkit.anonymize(census, "global", quasi_identifiers=["age", "sex"],
                                sensitive="disease", identifiers=["id"], insensitive="*",
                                models=["delta=4"], suppression=0.05,
                                build={"age": "intervals:5,10,20"})
    assert release.passed
    assert release.recoding is not None
    assert release.recoding.lattice["tagged"] == 0  # δ tags nothing


def test_suppression_monotonicity_is_declared_for_count_models_only() -> None:
    parsed = [parse_model(m) for m in ("k=3", "l=2", "entropy-l=2", "t=0.3")]
    assert [m.name for m in global_recoding.monotone_models(parsed, suppression=True)] == \
        ["k-anonymity", "distinct l-diversity"]
    assert len(global_recoding.monotone_models(parsed, suppression=False)) == 4


def test_no_qualifying_node_is_an_error_naming_the_limit() -> None:
    frame = pd.DataFrame({"a": ["x", "y", "z"], "s": ["1", "2", "3"]})
    with pytest.raises(InputError, match="suppression"):
        anonkit.anonymize(frame, "global", quasi_identifiers=["a"], sensitive="s", k=5)


def test_options_are_checked_like_every_method_s() -> None:
    census = anonkit.make_census(100, seed=1).data
    common = {"quasi_identifiers": ["age"], "sensitive": "disease", "identifiers": ["id"],
              "insensitive": "*", "k": 2}
    with pytest.raises(InputError, match="suppression"):
        anonkit.anonymize(census, "global", suppression=1.5, **common)
    with pytest.raises(InputError, match="metric"):
        anonkit.anonymize(census, "global", metric="gcp", **common)
    with pytest.raises(InputError, match="builder"):
        anonkit.anonymize(census, "global", build={"age": "spline"}, **common)


def test_the_cli_and_a_job_file_run_it(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from anonkit.cli import main

    census = anonkit.make_census(500, seed=4).data.drop(columns=["birth_date"])
    source = tmp_path / "census.csv"
    census.to_csv(source, index=False)
    out = tmp_path / "release.csv"
    result = CliRunner().invoke(main, [
        "anonymize", str(source), "-o", str(out), "--method", "global", "--qi", "age,sex",
        "--sensitive", "disease", "--id", "id", "--insensitive", "*", "-k", "5",
        "--suppression", "0.02", "--metric", "precision", "--build", "age=intervals:5,10,20"])
    assert result.exit_code == 0, result.output
    back = read_table(out)
    assert set(back["age"].astype(str)) <= {"*"} | {f"[{a}-{a + 4}]" for a in range(0, 100, 5)} \
        | {f"[{a}-{a + 9}]" for a in range(0, 100, 10)} \
        | {f"[{a}-{a + 19}]" for a in range(0, 100, 20)} | set(census["age"].astype(str))


def test_the_search_prunes_and_tags_on_adult() -> None:
    dataset = anonkit.load_adult()
    release = anonkit.anonymize(dataset.data, "global", quasi_identifiers=ADULT_QIS,
                                sensitive="salary-class", insensitive="*",
                                hierarchies=dataset.hierarchies, k=5)
    assert release.recoding is not None
    lattice = release.recoding.lattice
    assert lattice["nodes"] == 6480
    assert lattice["checked"] + lattice["tagged"] + lattice["pruned"] == 6480
    assert lattice["checked"] < 6480 // 10  # Flash checks a small part of the lattice
    assert release.metrics["lattice.checked"] == lattice["checked"]
    line = release.summary()
    assert "levels sex=" in line and "6480 nodes" in line


def test_the_search_roll_ups_come_from_specialisations() -> None:
    codes = np.array([[0, 0], [1, 0], [2, 1], [3, 1]], dtype=np.int32)
    columns = [global_recoding.ColumnLattice("a", (np.arange(4, dtype=np.int32),
                                                   np.array([0, 0, 1, 1], np.int32),
                                                   np.zeros(4, np.int32))),
               global_recoding.ColumnLattice("b", (np.arange(2, dtype=np.int32),
                                                   np.zeros(2, np.int32)))]
    result = global_recoding.search(columns, codes, [], [KAnonymity(2)], metric="precision")
    assert result.levels == (1, 0)
    assert result.stats.rolled_up <= result.stats.checked


def test_a_job_file_runs_it(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from anonkit.cli import main

    census = anonkit.make_census(500, seed=5).data[["id", "age", "sex", "race", "disease"]]
    census.to_csv(tmp_path / "census.csv", index=False)
    (tmp_path / "job.toml").write_text(
        'input = "census.csv"\noutput = "out.csv"\nquasi_identifiers = ["age", "sex", '
        '"race"]\nsensitive = "disease"\nidentifiers = ["id"]\ninsensitive = "*"\nk = 5\n'
        'method = "global"\nsuppression = 0.02\nmetric = "discernibility"\n\n[build]\n'
        'age = "intervals:10,20"\n')
    result = CliRunner().invoke(main, ["anonymize", "--config", str(tmp_path / "job.toml")])
    assert result.exit_code == 0, result.output
    back = read_table(tmp_path / "out.csv")
    suppressed = (back[["age", "sex", "race"]].astype(str) == "*").all(axis=1)
    assert suppressed.sum() <= 0.02 * len(back)


def _adult_release(limit: float) -> Release:
    dataset = anonkit.load_adult()
    return anonkit.anonymize(dataset.data, "global", quasi_identifiers=SMALL_QIS,
                             sensitive="salary-class", insensitive="*",
                             hierarchies=dataset.hierarchies, k=10, suppression=limit)


def test_the_verifier_counts_the_suppressed_rows_and_refuses_more_than_the_limit(
        tmp_path: Path) -> None:
    from anonkit.errors import ModelNotMetError
    from anonkit.verify import verify_release

    release = _adult_release(0.05)
    assert release.recoding is not None and release.recoding.suppressed_rows > 0
    verdict = release.verdicts[-1]
    assert verdict.model == "suppression limit" and verdict.passed
    assert verdict.details["rows"] == release.recoding.suppressed_rows
    release.suppression_limit = 0.0001  # fewer than the release suppressed: fail closed
    verify_release(release, force=True)
    assert not release.passed
    with pytest.raises(ModelNotMetError):
        write_release(release, tmp_path / "refused.csv")
    assert not (tmp_path / "refused.csv").exists()
    release.suppression_limit = None  # no exemption: the * class is held to k like any
    verify_release(release, force=True)
    assert release.passed == (release.recoding.suppressed_rows >= 10)


def test_the_report_shows_the_lattice_and_the_suppressed_classes(tmp_path: Path) -> None:
    from anonkit.report import render_report

    release = _adult_release(0.05)
    page = render_report(release, anonkit.load_adult().data, tmp_path / "r.html").read_text()
    assert 'id="lattice"' in page and "Lattice search" in page and "qualifying" in page
    assert "Suppressed rows" in page and "loss (minimised)" in page


def test_a_star_below_the_top_of_a_hierarchy_is_refused_naming_the_column_only() -> None:
    frame = pd.DataFrame({"a": ["secret-1", "secret-2", "x"], "s": ["1", "2", "1"]})
    hierarchy = AnonkitHierarchy([["secret-1", "*", "any"], ["secret-2", "*", "any"],
                                  ["x", "y", "any"]], name="a")
    with pytest.raises(InputError, match="column 'a': level 1") as caught:
        anonkit.anonymize(frame, "global", quasi_identifiers=["a"], sensitive="s", k=1,
                          hierarchies={"a": hierarchy})
    assert "secret" not in str(caught.value)


def test_a_builder_that_cannot_read_a_row_names_the_row_not_the_value() -> None:
    frame = pd.DataFrame({"a": ["12", "secret-text", "14"], "s": ["1", "2", "1"]})
    with pytest.raises(InputError, match="data row 2") as caught:
        anonkit.anonymize(frame, "global", quasi_identifiers=["a"], sensitive="s", k=1,
                          kinds={"a": "categorical"}, build={"a": "intervals:5,10"})
    assert "secret" not in str(caught.value)


def test_check_exempts_suppressed_rows_only_when_told_and_counts_them(tmp_path: Path) -> None:
    """``anonkit check --suppression SHARE``: rows with every QI ``*`` are one class exempt
    from k (as ARX and pycanon judge a release with suppression), counted against SHARE."""
    from click.testing import CliRunner

    from anonkit.cli import main

    rows = [("[20-29]", "a")] * 6 + [("[30-39]", "b")] * 5 + [("*", "*")] * 2
    path = tmp_path / "r.csv"
    pd.DataFrame(rows, columns=["age", "zip"]).to_csv(path, index=False)
    plain = CliRunner().invoke(main, ["check", str(path), "--qi", "age,zip", "-k", "5"])
    assert plain.exit_code == 2 and "FAIL k-anonymity" in plain.output  # the * class: 2 rows
    exempt = CliRunner().invoke(main, ["check", str(path), "--qi", "age,zip", "-k", "5",
                                       "--suppression", "0.2"])
    assert exempt.exit_code == 0, exempt.output
    assert "PASS suppression limit" in exempt.output and "rows=2" in exempt.output
    tight = CliRunner().invoke(main, ["check", str(path), "--qi", "age,zip", "-k", "5",
                                      "--suppression", "0.1"])
    assert tight.exit_code == 2 and "FAIL suppression limit" in tight.output  # 2 > 1.3


# -- the risk models as privacy models (issue 24) ----------------------------------------


def run_with_risk(frame: pd.DataFrame, qis: Sequence[str],
                  hierarchies: Mapping[str, Hierarchy], risk: Risk, *, limit: float,
                  metric: str) -> Release:
    models = ([f"k-map={risk.k_map}"] if risk.k_map is not None else []) \
        + ([f"delta-presence={risk.delta[0]},{risk.delta[1]}"] if risk.delta else []) \
        + ([f"individual-risk={risk.risk}"] if risk.risk is not None else [])
    context: dict[str, object] = {}
    if risk.population is not None:
        context["population"] = risk.population
    if risk.weights is not None:
        frame = frame.assign(w=list(risk.weights))
        context["weight"] = "w"
    return anonkit.anonymize(
        frame, "global", quasi_identifiers=list(qis), sensitive="s", insensitive="*",
        hierarchies={q: AnonkitHierarchy([[v, *labels] for v, labels in h.items()], name=q)
                     for q, h in hierarchies.items() if q in qis},
        models=models, suppression=limit, metric=metric, **context)


def assert_optimal_and_verified(frame: pd.DataFrame, qis: Sequence[str],
                                hierarchies: Mapping[str, Hierarchy], risk: Risk, *,
                                limit: float, metric: str, tmp_path: Path) -> Release | None:
    expected = risk_optimum(frame, qis, hierarchies, risk, limit, metric)
    if expected is None:
        with pytest.raises(InputError):
            run_with_risk(frame, qis, hierarchies, risk, limit=limit, metric=metric)
        return None
    release = run_with_risk(frame, qis, hierarchies, risk, limit=limit, metric=metric)
    assert release.recoding is not None
    assert close(release.recoding.value, expected.value), (expected, release.recoding)
    assert_release_holds(release, frame, qis, "s", hierarchies, k=1, l=1, limit=limit,
                         tmp_path=tmp_path)
    return release


@st.composite
def risks(draw: st.DrawFn, frame: pd.DataFrame, qis: Sequence[str]) -> Risk:
    kind = draw(st.sampled_from(["k-map", "individual-risk", "delta-presence"]))
    if kind == "individual-risk":
        weights = [float(draw(st.integers(2, 20))) for _ in range(len(frame))]
        return Risk(weights=weights, risk=draw(st.sampled_from([0.05, 0.1, 0.2, 0.3])))
    # the population holds the sample and more rows over the same values
    extra = {q: [draw(st.sampled_from(sorted(set(frame[q])))) for _ in range(n)]
             for n in [draw(st.integers(0, 30))] for q in qis}
    population = pd.concat([frame[list(qis)], pd.DataFrame(extra, columns=list(qis))],
                           ignore_index=True)
    if kind == "k-map":
        return Risk(population=population, k_map=draw(st.integers(1, 6)))
    low = draw(st.sampled_from([0.0, 0.2]))
    return Risk(population=population, delta=(low, draw(st.sampled_from([0.5, 0.8, 1.0]))))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), table=tables(), limit=st.sampled_from([0.0, 0.1, 0.3]),
       metric=st.sampled_from(METRICS))
def test_risk_models_the_chosen_node_is_the_brute_force_optimum(
        data: st.DataObject, table: tuple[pd.DataFrame, list[str], dict[str, Hierarchy]],
        limit: float, metric: str, tmp_path: Path) -> None:
    frame, qis, hierarchies = table
    risk = data.draw(risks(frame, qis))
    assert_optimal_and_verified(frame, qis, hierarchies, risk, limit=limit, metric=metric,
                                tmp_path=tmp_path)


def small_survey(seed: int) -> tuple[pd.DataFrame, list[str], dict[str, Hierarchy],
                                     pd.DataFrame]:
    """A table of 60 rows over three coded QIs with two-level hierarchies, and a population
    of 400 rows over the same values that holds it."""
    rng = np.random.default_rng(seed)
    qis = ["region", "job", "band"]
    values = {q: [f"{q}{i}" for i in range(6)] for q in qis}
    hierarchies = {q: {v: [f"{q}-group{i // 2}", f"{q}-half{i // 4}", "*"]
                       for i, v in enumerate(vs)} for q, vs in values.items()}
    population = pd.DataFrame({q: rng.choice(vs, 400) for q, vs in values.items()})
    frame = population.sample(60, random_state=seed).reset_index(drop=True)
    frame["s"] = rng.choice(["a", "b"], len(frame))
    return frame, qis, hierarchies, population


@pytest.mark.parametrize("limit", [0.0, 0.1])
def test_k_map_against_a_population_table_is_optimal_and_verified(limit: float,
                                                                    tmp_path: Path) -> None:
    frame, qis, hierarchies, population = small_survey(3)
    for metric in ("precision", "loss"):
        release = assert_optimal_and_verified(
            frame, qis, hierarchies, Risk(population=population, k_map=12), limit=limit,
            metric=metric, tmp_path=tmp_path)
        assert release is not None and release.passed
        assert release.recoding is not None and release.recoding.lattice["tagged"] > 0


@pytest.mark.parametrize("limit", [0.0, 0.1])
def test_individual_risk_with_weights_is_optimal_and_verified(limit: float,
                                                              tmp_path: Path) -> None:
    frame, qis, hierarchies, _ = small_survey(4)
    weights = list(np.random.default_rng(5).integers(2, 15, len(frame)).astype(float))
    for metric in ("precision", "discernibility"):
        release = assert_optimal_and_verified(
            frame, qis, hierarchies, Risk(weights=weights, risk=0.15), limit=limit,
            metric=metric, tmp_path=tmp_path)
        assert release is not None and release.passed
        assert "individual risk" in release.summary()


def test_risk_models_that_are_not_monotone_never_prune(tmp_path: Path) -> None:
    frame, qis, hierarchies, population = small_survey(6)
    bound = bind_population([parse_model(m) for m in (
        "k-map=3", "individual-risk=0.2", "delta-presence=0.1,0.5",
        "population-uniqueness=0.1")], population=PopulationTable(population),
        sampling_fraction=0.2)
    for suppression in (True, False):
        assert [m.name for m in global_recoding.monotone_models(bound, suppression)] == \
            ["k-map", "individual risk"]
    # δ-presence alone tags nothing (every node it passes is checked on its own) and still
    # finds the optimum
    release = assert_optimal_and_verified(
        frame, qis, hierarchies, Risk(population=population, delta=(0.05, 0.3)), limit=0.1,
        metric="precision", tmp_path=tmp_path)
    assert release is not None and release.recoding is not None
    assert release.recoding.lattice["tagged"] == 0
