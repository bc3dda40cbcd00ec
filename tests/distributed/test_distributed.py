"""Mondrian on Dask (issue 14): fragments from a sample's first cuts, counted and merged on
the full data, anonymized by the Core on worker processes, verified on the whole output.

The release is checked by pycanon and by our single-process checker on the concatenated
output (independent of the distributed checker), its GCP is compared with single-process
Mondrian's, a worker is killed mid-job, and a release that fails is never written.
Tables are small except the 200,000-row acceptance test (slow).
"""

from __future__ import annotations

import os
import signal
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonkit.checker import bind_models, check, parse_model
from anonkit.cli import main
from anonkit.data.encoding import Encoding, encode
from anonkit.data.schema import Schema
from anonkit.data.write import write_table
from anonkit.datasets import CENSUS_QUASI_IDENTIFIERS, make_census
from anonkit.distributed import engine as engine_module
from anonkit.distributed.check import check_parts, fit_sensitive_encoding
from anonkit.distributed.cluster import dask_client
from anonkit.distributed.engine import DaskMondrian
from anonkit.distributed.fragments import CutTree, build_cut_tree, merge_fragments
from anonkit.distributed.source import source_parts
from anonkit.errors import InputError, ModelNotMetError
from anonkit.methods.mondrian import Mondrian
from anonkit.models import KAnonymity
from anonkit.models.base import Classes, SensitiveAttribute
from anonkit.models.closeness import TCloseness

pycanon = pytest.importorskip("pycanon.anonymity")

QIS = CENSUS_QUASI_IDENTIFIERS
COLUMNS = [*QIS, "disease"]


@pytest.fixture(scope="module")
def client() -> Any:
    """A LocalCluster of 2 worker processes, shared by the tests of this module."""
    with dask_client(workers=2) as c:
        yield c


def census(n: int, seed: int = 0) -> pd.DataFrame:
    return make_census(n, seed=seed).data[["id", *COLUMNS]]


def write_parquet(df: pd.DataFrame, folder: Path, files: int = 1) -> Path:
    """``df`` as a directory of ``files`` Parquet files (one file when ``files == 1``)."""
    if files == 1:
        path = folder / "input.parquet"
        write_table(df, path)
        return path
    path = folder / "input"
    path.mkdir()
    for i, chunk in enumerate(np.array_split(np.arange(len(df)), files)):
        write_table(df.iloc[chunk].reset_index(drop=True), path / f"part-{i}.parquet")
    return path


def released(output: Path) -> pd.DataFrame:
    """The whole output read back, QI labels as plain text (as pycanon needs them)."""
    data = pd.concat([pd.read_parquet(p) for p in sorted(output.glob("*.parquet"))],
                     ignore_index=True)
    for name in data.columns:
        if isinstance(data[name].dtype, pd.CategoricalDtype) or (data[name].dtype != object \
                and not pd.api.types.is_numeric_dtype(data[name])):
            data[name] = data[name].astype(str).astype(object)
    return data


def assert_verified(data: pd.DataFrame, k: int, l: int | None = None,  # noqa: E741
                    t: float | None = None) -> None:
    """The whole output passes our single-process checker and pycanon."""
    models = [f"k={k}"] + ([f"l={l}"] if l else []) + ([f"t={t}"] if t else [])
    report = check(data, QIS, "disease", models)
    assert report.passed, str(report)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert pycanon.k_anonymity(data, QIS) >= k
        if l is not None:
            assert pycanon.l_diversity(data, QIS, ["disease"]) >= l
        if t is not None:
            assert pycanon.t_closeness(data, QIS, ["disease"]) <= t + 1e-9


def single_process_gcp(df: pd.DataFrame, k: int, models: tuple[str, ...] = ()) -> float:
    release = Mondrian(k, list(models)).anonymize(df[COLUMNS], QIS, "disease")
    return float(release.metrics["gcp"])


# -- fragments (no cluster) ----------------------------------------------------------------

def test_cut_tree_puts_every_row_in_one_box() -> None:
    df = census(20_000, seed=4)
    schema = Schema.from_roles(df, QIS, "disease")
    table = encode(df[COLUMNS], schema)
    codes = table.qi_matrix
    tree = build_cut_tree(codes[::7], table.quasi_identifiers, n_fragments=8)
    assert len(tree.leaves) == 8
    leaf = tree.leaf_of(codes)
    assert set(np.unique(leaf)) <= set(tree.leaves.tolist())
    # leaves are boxes: each row satisfies every cut on its leaf's path, and no other leaf's
    for node in tree.leaves:
        inside = np.ones(len(codes), dtype=bool)
        child = node
        while child != 0:
            parent = tree.parent[child]
            below = codes[:, tree.dimension[parent]] <= tree.threshold[parent]
            inside &= below if tree.left[parent] == child else ~below
            child = parent
        assert np.array_equal(inside, leaf == node)


def fragment_of_leaf(tree: CutTree, codes: np.ndarray) -> np.ndarray:
    """Per row, the index of its leaf among ``tree``'s leaves."""
    return np.searchsorted(tree.leaves, tree.leaf_of(codes))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(50, 400), fragments=st.integers(1, 12), k=st.integers(1, 60),
       seed=st.integers(0, 10))
def test_merge_leaves_only_fragments_that_hold(n: int, fragments: int, k: int,
                                               seed: int) -> None:
    df = census(n, seed=seed)
    table = encode(df[COLUMNS], Schema.from_roles(df, QIS, "disease"))
    codes = table.qi_matrix
    tree = build_cut_tree(codes[: max(n // 3, 1)], table.quasi_identifiers, fragments)
    leaf = tree.leaf_of(codes)
    rows = np.bincount(leaf, minlength=tree.n_nodes)

    def holds(groups: np.ndarray, n_groups: int) -> np.ndarray:
        member = groups >= 0
        return np.bincount(groups[member], weights=rows[member], minlength=n_groups) >= k

    if k > n:
        return
    merged, fragment_of = merge_fragments(tree, holds)
    sizes = np.bincount(fragment_of[leaf])
    assert (sizes >= k).all()
    assert sizes.sum() == n
    # the merged tree's leaves are exactly the fragments
    assert len(merged.leaves) == len(sizes)
    assert merged.n_cuts == len(sizes) - 1
    # a row's fragment is the merged tree's leaf it falls in
    assert np.array_equal(fragment_of[leaf], fragment_of_leaf(merged, codes))


def test_core_mondrian_judges_a_fragment_by_the_global_reference() -> None:
    df = census(4_000, seed=12)[COLUMNS]
    encoding = Encoding.fit(df, Schema.from_roles(df, QIS, "disease"))
    fragment = df[df["age"] <= 30]  # young people: acute diseases, far from the whole
    table = encoding.transform(fragment)
    reference = encoding.reference_counts
    global_view = SensitiveAttribute.from_encoded(table.sensitive[0], reference["disease"])
    local_view = SensitiveAttribute.from_encoded(table.sensitive[0])
    whole = np.zeros(table.n_rows, dtype=np.int64)
    distance = TCloseness(1.0, attribute="disease")
    global_level = distance.levels(Classes(whole, 1, [global_view]))[0]
    assert distance.levels(Classes(whole, 1, [local_view]))[0] == 0.0 < global_level
    t = float(global_level) + 0.02
    partition = Mondrian(5).partition(table, [KAnonymity(5), TCloseness(t)], reference)
    assert partition.n_classes > 1
    assert TCloseness(t, attribute="disease").holds(partition.classes([global_view])).all()
    # judged by the whole table's distribution the fragment as a whole sits at
    # global_level (by its own it would sit at 0): a smaller t cannot be met at all
    with pytest.raises(InputError, match="relax the model"):
        Mondrian(5).partition(table, [KAnonymity(5), TCloseness(float(global_level) / 2)],
                              reference)


# -- the release on a 2-worker LocalCluster ------------------------------------------------

def test_release_passes_pycanon_and_our_checker(client: Any, tmp_path: Path) -> None:
    df = census(5_000, seed=1)
    source = write_parquet(df, tmp_path, files=3)
    release = DaskMondrian(k=5, models=["l=2", "t=0.35"], seed=1, min_fragments=6).anonymize(
        source, tmp_path / "out", QIS, "disease", identifiers=["id"], client=client)
    assert release.passed and release.n_fragments >= 4
    data = released(tmp_path / "out")
    assert len(data) == len(df) and "id" not in data.columns
    assert_verified(data, k=5, l=2, t=0.35)
    # the sensitive column is released as it was, row for row (as a multiset)
    assert sorted(data["disease"]) == sorted(df["disease"])
    # no staging directory is left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input", "out"]


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(n=st.integers(200, 2_000), k=st.integers(2, 40), files=st.integers(1, 3),
       fragments=st.integers(1, 9), extra=st.sampled_from([None, "l=2", "t=0.4"]),
       seed=st.integers(0, 1_000))
def test_random_tables_give_verified_releases(client: Any, tmp_path_factory: Any, n: int,
                                              k: int, files: int, fragments: int,
                                              extra: str | None, seed: int) -> None:
    folder = tmp_path_factory.mktemp("random")
    df = census(n, seed=seed)
    source = write_parquet(df, folder, files=files)
    models = [extra] if extra else []
    release = DaskMondrian(k=k, models=models, seed=seed, min_fragments=fragments,
                           sample_rows=max(n // 3, 1)).anonymize(
        source, folder / "out", QIS, "disease", identifiers=["id"], client=client)
    data = released(folder / "out")
    assert release.passed and len(data) == n
    assert check(data, QIS, "disease", [f"k={k}", *models]).passed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert pycanon.k_anonymity(data, QIS) >= k


def test_t_closeness_uses_the_global_reference(client: Any, tmp_path: Path) -> None:
    # disease depends on age, so fragments cut on age have very different local
    # distributions: judged against each fragment's own, classes would pass that fail
    # against the whole table's; the verifier regroups the whole output with the global one
    df = census(10_000, seed=2)
    source = write_parquet(df, tmp_path)
    release = DaskMondrian(k=4, models=["t=0.25"], seed=2, min_fragments=8).anonymize(
        source, tmp_path / "out", QIS, "disease", identifiers=["id"], client=client)
    assert release.passed
    data = released(tmp_path / "out")
    assert_verified(data, k=4, t=0.25)


def test_gcp_close_to_single_process(client: Any, tmp_path: Path) -> None:
    df = census(30_000, seed=3)
    source = write_parquet(df, tmp_path, files=2)
    # a sample of a fifth of the rows: the cuts are the sample's, not the table's
    release = DaskMondrian(k=10, seed=3, sample_rows=6_000, min_fragments=8).anonymize(
        source, tmp_path / "out", QIS, "disease", identifiers=["id"], client=client)
    single = single_process_gcp(df, 10)
    assert release.metrics["gcp"] <= single * 1.10, (release.metrics["gcp"], single)
    # the GCP reported is the output's: recomputed from its classes it is the same
    assert release.metrics["n_rows"] == len(df)


def test_distributed_checker_agrees_with_ours(client: Any, tmp_path: Path) -> None:
    df = census(8_000, seed=5)
    source = write_parquet(df, tmp_path)
    DaskMondrian(k=6, seed=5).anonymize(source, tmp_path / "out", QIS, "disease",
                                        identifiers=["id"], client=client)
    data = released(tmp_path / "out")
    parts = client.compute(source_parts(tmp_path / "out", COLUMNS))
    encoding = fit_sensitive_encoding(client, parts, ["disease"], {})
    column = encoding.column("disease")
    for model in ("k=6", "k=7", "l=3", "t=0.2"):
        ours = check(data, QIS, "disease", model)
        bound = bind_models([parse_model(model)], [SensitiveAttribute(
            "disease", np.zeros(0, np.int64), column.values, column.kind,
            column.reference_counts)])
        theirs = check_parts(client, parts, QIS, ["disease"], bound, encoding)
        assert theirs.passed == ours.passed, model
        assert theirs.verdicts[0].measured == pytest.approx(ours.verdicts[0].measured)
        assert theirs.verdicts[0].failing_classes == ours.verdicts[0].failing_classes
        assert theirs.n_classes == ours.n_classes


def test_an_existing_output_is_replaced_whole(client: Any, tmp_path: Path) -> None:
    df = census(3_000, seed=11)
    source = write_parquet(df, tmp_path)
    output = tmp_path / "out"
    output.mkdir()
    (output / "stale.parquet").write_text("an older release")
    release = DaskMondrian(k=8, seed=11).anonymize(source, output, QIS, "disease",
                                                   identifiers=["id"], client=client)
    assert sorted(p.name for p in output.iterdir()) == sorted(Path(f).name
                                                             for f in release.files)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.parquet", "out"]
    assert_verified(released(output), k=8)


def test_a_failing_release_is_never_written(tmp_path: Path, monkeypatch: Any) -> None:
    # an in-process cluster, so the fragment step can be replaced by one that breaks k
    from distributed import Client, LocalCluster

    real = engine_module._anonymize_fragment

    def weakened(index: int, pieces: list[pd.DataFrame], encoding: Any, core: Mondrian,
                 models: list[Any], forms: Any, directory: str) -> dict[str, Any]:
        return real(index, pieces, encoding, Mondrian(1), [KAnonymity(1)], forms, directory)

    monkeypatch.setattr(engine_module, "_anonymize_fragment", weakened)
    df = census(3_000, seed=6)
    source = write_parquet(df, tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "earlier.parquet").write_text("the release published before")
    with (LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                       dashboard_address=":0") as cluster, Client(cluster) as local,
          pytest.raises(ModelNotMetError, match="nothing written")):
        DaskMondrian(k=5, seed=6).anonymize(source, tmp_path / "out", QIS, "disease",
                                            identifiers=["id"], client=local)
    # the earlier output is left as it was, and no staging directory remains
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.parquet", "out"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["earlier.parquet"]


def test_worker_killed_mid_job_still_gives_a_verified_output(tmp_path: Path) -> None:
    df = census(30_000, seed=7)
    source = write_parquet(df, tmp_path, files=4)
    output = tmp_path / "out"
    outcome: dict[str, Any] = {}
    with dask_client(workers=2) as own:
        pids = list(own.run(os.getpid).values())

        def run() -> None:
            try:
                outcome["release"] = DaskMondrian(k=5, seed=7, fragment_rows=2_000).anonymize(
                    source, output, QIS, "disease", identifiers=["id"], client=own)
            except BaseException as exc:
                outcome["error"] = exc

        job = threading.Thread(target=run)
        job.start()
        # the staging directory appears when the fragments start: kill a worker then
        while not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
            assert job.is_alive(), outcome  # the job ended before its fragments started
            time.sleep(0.01)
        alive_at_kill = job.is_alive()
        os.kill(pids[0], signal.SIGKILL)
        job.join(180)
        new_pids = list(own.run(os.getpid).values())
    assert alive_at_kill  # the worker died mid-job, not after it
    assert "error" not in outcome, outcome.get("error")
    assert pids[0] not in new_pids  # the worker really was lost (and replaced)
    assert outcome["release"].passed
    assert_verified(released(output), k=5)


def test_refusals(client: Any, tmp_path: Path) -> None:
    df = census(2_000, seed=8)
    source = write_parquet(df, tmp_path)
    engine = DaskMondrian(k=5, seed=8)
    with pytest.raises(InputError, match="unknown column 'nope'"):
        engine.anonymize(source, tmp_path / "out", ["nope"], "disease", client=client)
    with pytest.raises(InputError, match="not monotonic"):
        DaskMondrian(k=5, models=["delta=3"], seed=8).anonymize(
            source, tmp_path / "out", QIS, "disease", identifiers=["id"], client=client)
    with pytest.raises(InputError, match="only 10 distinct values"):
        DaskMondrian(k=5, models=["l=11"], seed=8).anonymize(
            source, tmp_path / "out", QIS, "disease", identifiers=["id"], client=client)
    with pytest.raises(InputError, match="relax the model"):
        DaskMondrian(k=2_001, seed=8).anonymize(
            source, tmp_path / "out", QIS, "disease", identifiers=["id"], client=client)
    holes = df.copy()
    holes.loc[1234, "age"] = np.nan
    (tmp_path / "holes").mkdir()
    write_table(holes.iloc[:1000], tmp_path / "holes" / "a.parquet")
    write_table(holes.iloc[1000:].reset_index(drop=True), tmp_path / "holes" / "b.parquet")
    # the row is named as a row of the whole table, not of its file
    with pytest.raises(InputError, match=r"'age' has 1 missing value.*\[1234\]"):
        engine.anonymize(tmp_path / "holes", tmp_path / "out", QIS, "disease",
                         identifiers=["id"], client=client)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file"):
        engine.anonymize(source, tmp_path / "file", QIS, "disease", client=client)
    with pytest.raises(InputError, match="sample_rows"):
        DaskMondrian(k=5, sample_rows=0).anonymize(source, tmp_path / "out", QIS,
                                                   client=client)
    assert not (tmp_path / "out").exists()


# -- the command line -----------------------------------------------------------------------

def test_cli_anonymize_and_check_with_dask(tmp_path: Path) -> None:
    df = make_census(4_000, seed=9).data
    write_table(df, tmp_path / "in.csv")
    runner = CliRunner()
    out = tmp_path / "out"
    result = runner.invoke(main, [
        "anonymize", str(tmp_path / "in.csv"), "-o", str(out), "--qi", "age,sex,race,zip",
        "--sensitive", "disease", "--id", "id", "--insensitive", "*", "-k", "5",
        "--engine", "dask", "--workers", "1", "--json"])
    assert result.exit_code == 0, result.output
    data = released(out)
    assert len(data) == len(df)
    assert data["zip"].str.len().min() >= 5  # zip codes stay text (leading zeros kept)
    assert check(data, ["age", "sex", "race", "zip"], "disease", "k=5").passed
    base = ["check", str(out), "--qi", "age,sex,race,zip", "--sensitive", "disease",
            "--engine", "dask", "--workers", "1"]
    assert runner.invoke(main, [*base, "-k", "5"]).exit_code == 0
    failing = runner.invoke(main, [*base, "-k", "500"])
    assert failing.exit_code == 2 and "FAIL k-anonymity" in failing.output
    wrong = runner.invoke(main, ["anonymize", str(tmp_path / "in.csv"), "-o",
                                 str(tmp_path / "x.csv"), "--qi", "age", "-k", "2",
                                 "--workers", "2"])
    assert wrong.exit_code == 2 and "--engine dask" in wrong.output
    # the same job from a job file: engine, workers and scheduler are job keys too
    job = tmp_path / "job.toml"
    job.write_text('input = "in.csv"\noutput = "from-toml"\nquasi_identifiers = ["age", "sex"]\n'
                   'sensitive = "disease"\nidentifiers = ["id"]\ninsensitive = "*"\nk = 5\n'
                   'engine = "dask"\nworkers = 1\n')
    from_file = runner.invoke(main, ["anonymize", "--config", str(job)])
    assert from_file.exit_code == 0, from_file.output
    assert check(released(tmp_path / "from-toml"), ["age", "sex"], "disease", "k=5").passed


# -- acceptance: 200,000 rows ----------------------------------------------------------------

@pytest.mark.slow
def test_200k_rows_pass_pycanon_and_ours_with_gcp_within_10_percent(client: Any,
                                                                    tmp_path: Path) -> None:
    df = census(200_000, seed=10)
    source = write_parquet(df, tmp_path, files=4)
    release = DaskMondrian(k=10, models=["l=2"], sample_rows=50_000).anonymize(
        source, tmp_path / "out", QIS, "disease", identifiers=["id"], client=client)
    assert release.passed
    data = released(tmp_path / "out")
    assert len(data) == len(df)
    assert_verified(data, k=10, l=2)
    single = single_process_gcp(df, 10, ("l=2",))
    assert abs(release.metrics["gcp"] - single) <= 0.10 * single, (release.metrics["gcp"],
                                                                  single)
