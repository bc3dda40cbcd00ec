"""Mondrian with the risk models (k-map, δ-presence, individual risk, population
uniqueness): on random tables (the population holding values the sample lacks, the letters
released as sets or as hierarchy nodes), every written release passes the brute-force
oracle of ``tests/oracles/risk.py``, every release the checker fails, the oracle fails too,
and with the monotone models every release passes (cuts are judged by the very population
counts the labels give); a model
judging the whole table refuses the partition with a clear message; the command line's
``--population``, ``--sampling-fraction``, ``--population-size`` and ``--weight`` on
``anonymize`` and ``check``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anonkit
from anonkit.cli import main
from anonkit.errors import InputError, ModelNotMetError
from anonkit.hierarchy.base import Hierarchy
from anonkit.verify import write_release
from oracles import risk as oracle

# random small tables often leave no information: that warning is expected here
pytestmark = pytest.mark.filterwarnings("ignore::anonkit.errors.NoInformationWarning")

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
QIS = ["x", "y", "c"]


@st.composite
def samples(draw: st.DrawFn) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A sample (x, y numbers, c a letter, a sensitive s and a weight w) and a population
    holding it and some more people."""
    n = draw(st.integers(8, 50))
    extra = draw(st.integers(0, 120))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def rows(count: int, wider: int = 0) -> pd.DataFrame:
        return pd.DataFrame({"x": rng.integers(0, 10 + wider, count) * 2 - wider,
                             "y": rng.integers(0, 4, count),
                             "c": rng.choice(["a", "b", "c", "d"][:3 + bool(wider)], count)})

    sample = rows(n)
    sample["s"] = rng.choice(["p", "q"], n)
    sample["w"] = rng.integers(1, 30, n).astype(float)
    # the others may hold values the sample has not: odd x between the sample's even ones,
    # x below and above them, a letter it lacks
    population = pd.concat([sample[QIS], rows(extra, wider=draw(st.integers(0, 3)))],
                           ignore_index=True)
    return sample, population


#: a hierarchy over the letters, for the examples that release c as hierarchy nodes
LETTERS = [["a", "ab", "*"], ["b", "ab", "*"], ["c", "cd", "*"], ["d", "cd", "*"]]
LEAVES_BELOW = {"ab": {"a", "b"}, "cd": {"c", "d"}, "*": {"a", "b", "c", "d"}}


def written_rows(release: anonkit.Release, tmp_path: Path) -> tuple[list[tuple[str, ...]],
                                                                    list[float]]:
    """The release as written, read back as text: QI labels per row, and the weights."""
    path = tmp_path / "release.csv"
    write_release(release, path)
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    path.unlink()
    return ([tuple(r) for r in table[QIS].itertuples(index=False)],
            table["w"].astype(float).tolist())


def whole_table(sample: pd.DataFrame, nodes: bool) -> list[tuple[str, ...]]:
    """Every row in one class, labelled by the table's ranges and its letters (their set,
    or the lowest hierarchy node over them)."""
    def span(column: pd.Series) -> str:
        low, high = int(column.min()), int(column.max())
        return str(low) if low == high else f"[{low}-{high}]"
    letters = sorted(set(sample["c"]))
    if nodes:
        letter = next(node for node in (*letters, "ab", "cd", "*")
                      if set(letters) <= LEAVES_BELOW.get(node, {node}))
    else:
        letter = letters[0] if len(letters) == 1 else "{" + ",".join(letters) + "}"
    return [(span(sample["x"]), span(sample["y"]), letter)] * len(sample)


MODELS = st.one_of(
    st.integers(2, 12).map(lambda k: ("k-map", f"k-map={k}", k)),
    st.tuples(st.sampled_from([0.0, 0.05, 0.2]), st.sampled_from([0.3, 0.6, 1.0])).map(
        lambda d: ("delta-presence", f"delta-presence={d[0]},{d[1]}", d)),
    st.sampled_from([0.05, 0.1, 0.3]).map(lambda t: ("individual-risk",
                                                     f"individual-risk={t}", t)),
    st.sampled_from([0.001, 0.01, 0.05]).map(lambda t: ("uniqueness",
                                                        f"population-uniqueness={t},"
                                                        "model=zayatz", t)),
    st.tuples(st.integers(2, 10), st.sampled_from([0.05, 0.2, 0.5])).map(
        lambda kp: ("k-map-estimated", f"k-map={kp[0]}", kp)),
)


@pytest.mark.slow
@SETTINGS
@given(table=samples(), model=MODELS, k=st.integers(1, 4), nodes=st.booleans())
def test_every_release_agrees_with_the_brute_force_oracle(
        table: tuple[pd.DataFrame, pd.DataFrame], model: tuple[str, str, object], k: int,
        nodes: bool, tmp_path_factory: pytest.TempPathFactory) -> None:
    sample, population = table
    kind, text, parameter = model
    pop_rows = population[QIS].to_numpy().tolist()
    # c released as hierarchy nodes: a node covers the letters below it
    below = LEAVES_BELOW if nodes else None
    context: dict[str, object] = {"hierarchies": {"c": Hierarchy(LETTERS)}} if nodes else {}
    if kind in ("k-map", "delta-presence"):
        context["population"] = population
    elif kind == "individual-risk":
        context["weight"] = "w"
    elif kind == "uniqueness":
        context["population_size"] = len(population) + 1000
    else:
        context["sampling_fraction"] = parameter[1]  # type: ignore[index]
    def holds(rows: list[tuple[str, ...]], weights: list[float]) -> bool:
        if kind == "k-map":
            return oracle.k_map(parameter, rows, pop_rows, below)  # type: ignore[arg-type]
        if kind == "delta-presence":
            return oracle.delta_presence(*parameter, rows, pop_rows, below)  # type: ignore[misc]
        if kind == "individual-risk":
            return oracle.individual_risk(parameter, rows, weights)  # type: ignore[arg-type]
        if kind == "uniqueness":
            pi = len(rows) / (len(population) + 1000)
            return oracle.population_uniqueness_zayatz(parameter, rows, pi)  # type: ignore[arg-type]
        k_map, pi = parameter  # type: ignore[misc]
        return oracle.k_map_estimated(k_map, rows, pi)

    try:
        release = anonkit.anonymize(sample, "mondrian", quasi_identifiers=QIS, sensitive="s",
                                    insensitive="*", k=k, models=[text], **context)
    except InputError as refused:
        if kind == "uniqueness":  # judged on the finished partition, which it refused
            assert "judges the whole table" in str(refused)
            return
        # refused before any cut: the table as one class fails the model too
        assert "the table as a whole does not satisfy" in str(refused), refused
        assert not holds(whole_table(sample, nodes), sample["w"].tolist())
        return
    if kind in ("k-map", "individual-risk", "k-map-estimated"):
        # cut constraints judged with the counts the labels give, and monotone: classes
        # the labels merge still pass, so Mondrian's release always does
        assert release.passed, (text, release.verdicts)
    if release.passed:
        rows, weights = written_rows(release, tmp_path_factory.mktemp("w"))
        assert holds(rows, weights), (text, release.verdicts)
    else:
        with pytest.raises(ModelNotMetError):
            write_release(release, tmp_path_factory.mktemp("w") / "refused.csv")
        rows = [tuple(str(v) for v in r) for r in release.data[QIS].itertuples(index=False)]
        assert not holds(rows, release.data["w"].astype(float).tolist()), (text,
                                                                         release.verdicts)


def test_a_whole_table_model_refuses_the_partition() -> None:
    rng = np.random.default_rng(7)
    sample = pd.DataFrame({"x": rng.integers(0, 100, 300), "y": rng.integers(0, 50, 300)})
    with pytest.raises(InputError, match=r"do not meet population uniqueness .* judges the "
                                         r"whole table, so no cut can keep it"):
        anonkit.anonymize(sample, "mondrian", quasi_identifiers=["x", "y"], insensitive="*",
                          models=["population-uniqueness=0.0001"], sampling_fraction=0.01)
    # with classes of at least 2 rows there are no sample uniques: 0 population uniques
    release = anonkit.anonymize(sample, "mondrian", quasi_identifiers=["x", "y"],
                                insensitive="*", k=2, models=["population-uniqueness=0.0001"],
                                sampling_fraction=0.01)
    assert release.passed and release.verdicts[1].measured == 0


def test_individual_risk_is_a_cut_constraint() -> None:
    adult = anonkit.load_adult().data.head(3000).assign(w=20.0)
    release = anonkit.anonymize(adult, "mondrian", quasi_identifiers=["age", "sex", "race"],
                                sensitive="salary-class", insensitive="*",
                                models=["individual-risk=0.05"], weight="w")
    verdict = release.verdicts[0]
    assert release.passed and verdict.measured <= 0.05
    # weights of 20 (p = 0.05): a class of one row has risk 0.158, of two rows 0.0443, so
    # cuts stop at classes of two rows
    assert int(np.bincount(release.class_ids).min()) >= 2


# -- the command line ------------------------------------------------------------------------

def run(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("risk")
    adult = anonkit.load_adult().data
    population = folder / "population.csv"
    adult.to_csv(population, index=False)
    sample = folder / "sample.csv"
    adult.sample(n=3000, random_state=3).assign(w=10.0).to_csv(sample, index=False)
    return sample, population


def test_cli_anonymize_and_check_with_every_risk_model(files: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    sample, population = files
    out = tmp_path / "release.csv"
    code, output = run("anonymize", sample, "--qi", "age,sex,race,education", "--sensitive",
                       "salary-class", "--insensitive", "*", "-k", "5", "--model",
                       "individual-risk=0.05", "--weight", "w", "-o", out)
    assert code == 0, output
    assert "w" in pd.read_csv(out, nrows=1).columns  # the weights are released
    code, output = run("check", out, "--qi", "age,sex,race,education",
                       "--model", "individual-risk=0.05", "--weight", "w",
                       "--model", "population-uniqueness=0.01,model=zayatz",
                       "--sampling-fraction", "0.1", "--model", "k-map=5",
                       "--population", population, "--model", "delta-presence=0,0.5",
                       "--json")
    verdicts = json.loads(output)["verdicts"]
    assert [v["model"] for v in verdicts] == ["individual risk", "population uniqueness",
                                              "k-map", "δ-presence"]
    assert all(v["passed"] for v in verdicts[:3]), verdicts
    # every sample row is in the population, so every class covers as many people as rows
    assert verdicts[2]["measured"] >= 5
    assert code == (0 if verdicts[3]["passed"] else 2)


def test_cli_k_map_against_a_population_is_a_cut_constraint(files: tuple[Path, Path],
                                                             tmp_path: Path) -> None:
    sample, population = files
    out = tmp_path / "release.csv"
    code, output = run("anonymize", sample, "--qi", "age,sex,race,education", "--sensitive",
                       "salary-class", "--insensitive", "*", "-k", "2", "--model",
                       "k-map=500", "--population", population, "-o", out)
    assert code == 0, output
    code, output = run("check", out, "--qi", "age,sex,race,education", "--model",
                       "k-map=500", "--population", population, "--json")
    verdict = json.loads(output)["verdicts"][0]
    assert code == 0 and verdict["passed"] and verdict["measured"] >= 500
    # a mean label covers no population row by hull: judged on the release, fail closed
    code, output = run("anonymize", sample, "--qi", "age,sex,race,education", "--sensitive",
                       "salary-class", "--insensitive", "*", "-k", "2", "--model",
                       "k-map=50", "--population", population, "--generalization",
                       "age=mean", "-o", tmp_path / "mean.csv")
    assert code == 2 and "FAIL k-map" in output and not (tmp_path / "mean.csv").exists()


def test_cli_population_size_is_the_sampling_fraction(files: tuple[Path, Path]) -> None:
    sample, _ = files  # 3,000 rows: a population of 30,000 is a sampling fraction of 0.1
    figures = []
    for option in (["--sampling-fraction", "0.1"], ["--population-size", "30000"]):
        code, output = run("check", sample, "--qi", "age,sex,race", "--model",
                           "population-uniqueness=0.5,model=zayatz", *option, "--json")
        assert code == 0, output
        figures.append(json.loads(output)["verdicts"][0]["measured"])
    assert figures[0] == pytest.approx(figures[1], rel=1e-12) and figures[0] > 0
    code, output = run("check", sample, "--qi", "age,sex,race", "--model",
                       "population-uniqueness=0.5", "--population-size", "2999")
    assert code == 2 and "smaller than the sample" in output, output


@pytest.mark.parametrize("extra, message", [
    (["--model", "population-uniqueness=0.01"], "needs the sampling fraction"),
    (["--model", "delta-presence=0.1,0.6"], "needs a population table"),
    (["-k", "2", "--weight", "w"], "--weight is given but no model reads it"),
    (["--model", "individual-risk=0.1", "--weight", "nope"], "'nope'"),
    (["--model", "k-map=5", "--population", "missing.csv"], "missing.csv"),
])
def test_cli_check_refuses_missing_context(files: tuple[Path, Path], extra: list[str],
                                           message: str) -> None:
    sample, _ = files
    code, output = run("check", sample, "--qi", "age,sex", *extra)
    assert code == 2 and message in output, output
    assert len(output.strip().splitlines()) == 1, output
