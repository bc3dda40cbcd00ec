"""The randomised representative release (spec 003's diffAnonymize): a heuristic, refused
without an explicit acceptance, drawn from OS entropy, close to the original distribution."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from anonkit import methods
from anonkit.algorithms.compression import (
    balance_measure,
    halving_tree,
    optimal_alphabetic_tree,
    randomized_symbols,
    representative_nodes,
)
from anonkit.cli import main
from anonkit.data.schema import Schema
from anonkit.errors import InputError, ModelNotMetError
from anonkit.methods.compression import ks_statistic
from anonkit.verify import write_release


def randomized(df: pd.DataFrame, **options: object):
    method = methods.get("randomized")
    return method.anonymize(df, Schema.from_roles(df, ["age"]),
                            method.parse_options(options, "python"))


def test_balance_measure_is_the_notebooks() -> None:
    # "aabbbcdee": the notebook's example node of 'b' (3) against 'c','d' (2): 1 / 25
    tree = halving_tree([2, 3, 1, 1, 2])
    measure = balance_measure(tree)
    inner = np.flatnonzero(tree.left >= 0)
    for node in inner:
        left, right = tree.counts[tree.left[node]], tree.counts[tree.right[node]]
        assert measure[node] == pytest.approx(abs(left - right) / (left + right) ** 2)
    assert (measure[:5] == 0).all()  # leaves


def test_representative_is_the_last_node_above_the_threshold() -> None:
    tree = optimal_alphabetic_tree([5, 1, 1, 1, 8, 2])
    measure = balance_measure(tree)
    chosen = representative_nodes(tree, 0.01)
    parent = np.full(tree.n_nodes, -1)
    inner = np.flatnonzero(tree.left >= 0)
    parent[tree.left[inner]] = inner
    parent[tree.right[inner]] = inner
    for leaf in range(tree.n_symbols):
        path = []
        node = leaf
        while node >= 0:
            path.append(node)
            node = parent[node]
        above = [n for n in reversed(path) if measure[n] > 0.01]
        assert chosen[leaf] == (above[-1] if above else -1)


def test_draws_stay_inside_the_subtree_and_follow_its_counts() -> None:
    counts = np.array([30, 10, 50, 10, 1, 60])
    tree = optimal_alphabetic_tree(counts)
    symbol = np.repeat(np.arange(len(counts)), counts)
    rng = np.random.default_rng(1)
    drawn, node = randomized_symbols(tree, np.repeat(symbol, 50), 0.0, rng)
    first, last = tree.leaf_runs()
    assert ((drawn >= first[node]) & (drawn <= last[node])).all()
    # per chosen subtree, the draws follow its counts
    for n in np.unique(node):
        mine = drawn[node == n]
        run = np.arange(first[n], last[n] + 1)
        expected = counts[run] / counts[run].sum()
        observed = np.bincount(mine - first[n], minlength=len(run)) / len(mine)
        assert np.abs(observed - expected).max() < 0.05


def test_ks_on_ten_thousand_normal_ages() -> None:
    rng = np.random.default_rng(7)
    ages = np.round(rng.normal(40, 5, 10_000), 1)
    release = randomized(pd.DataFrame({"age": ages}), threshold=0.0, seed=3)
    released = release.data["age"].to_numpy(dtype=float)
    assert (released != ages).mean() > 0.3  # values really were replaced
    ks = ks_statistic(ages, released)
    assert ks == pytest.approx(release.metrics["ks.age"])
    # the two-sample KS critical value at 5 % for n = m = 10,000 is 0.0192
    assert ks < 0.0192
    from scipy.stats import ks_2samp

    assert ks == pytest.approx(ks_2samp(ages, released).statistic)


def test_no_formal_guarantee_is_refused_without_acceptance(tmp_path) -> None:
    rng = np.random.default_rng(2)
    release = randomized(pd.DataFrame({"age": np.round(rng.normal(40, 5, 500), 1)}),
                         threshold=0.0)
    assert not release.formal_guarantee
    assert not release.seeded  # OS entropy unless a seed is given
    with pytest.raises(ModelNotMetError, match="no formal privacy guarantee"):
        write_release(release, tmp_path / "r.csv")
    assert not (tmp_path / "r.csv").exists()
    write_release(release, tmp_path / "r.csv", accept_heuristic=True)
    assert "heuristic" in release.summary()


def test_unseeded_draws_differ_and_seeded_ones_repeat() -> None:
    df = pd.DataFrame({"age": np.round(np.random.default_rng(0).normal(40, 5, 300), 1)})
    a, b = randomized(df, threshold=0.0), randomized(df, threshold=0.0)
    assert not a.data["age"].equals(b.data["age"])
    c, d = randomized(df, threshold=0.0, seed=5), randomized(df, threshold=0.0, seed=5)
    assert c.data["age"].equals(d.data["age"]) and c.seeded


def test_a_threshold_no_node_exceeds_is_an_error_naming_the_value() -> None:
    df = pd.DataFrame({"age": [1, 2, 3, 4]})  # a perfect tree: every measure is 0
    with pytest.raises(InputError, match=r"age=1 .*lower --threshold"):
        randomized(df, threshold=0.0)


def test_cli_refuses_without_accept_heuristic_and_reports_it(tmp_path) -> None:
    path = tmp_path / "ages.csv"
    rng = np.random.default_rng(4)
    pd.DataFrame({"age": np.round(rng.normal(40, 5, 2000), 1)}).to_csv(path, index=False)
    out = tmp_path / "o.csv"
    runner = CliRunner()
    args = ["anonymize", str(path), "--method", "randomized", "--threshold", "0.0001",
            "--qi", "age", "-o", str(out)]
    refused = runner.invoke(main, args)
    assert refused.exit_code == 2
    assert "no formal privacy guarantee" in refused.output
    assert not out.exists()
    report = tmp_path / "r.html"
    done = runner.invoke(main, [*args, "--accept-heuristic", "--report", str(report)])
    assert done.exit_code == 0, done.output
    assert out.exists()
    text = report.read_text()
    # the first line under the title says so
    sub = text.index('<div class="sub">') + len('<div class="sub">')
    assert text[sub:].startswith("<b>This release has no formal privacy guarantee")
