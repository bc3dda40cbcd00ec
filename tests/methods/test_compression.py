"""Compression anonymity (spec 003): Huffman and alphabetic trees, truncation to k, l-diverse
trees, summaries, the notebook's known answers, the CLI, and pycanon's agreement."""

from __future__ import annotations

import json
from itertools import pairwise

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from anonkit import methods
from anonkit.algorithms.compression import (
    CodeTree,
    garsia_wachs_depths,
    halving_tree,
    huffman_tree,
    optimal_alphabetic_tree,
    truncate,
)
from anonkit.cli import main
from anonkit.data.schema import Schema
from anonkit.errors import InputError
from anonkit.methods.compression import CompressionAnonymizer
from anonkit.report.tree import plot_tree, tree_section
from oracles.compression import (
    garsia_wachs_depths_reference,
    halving_tree_reference,
    huffman_tree_reference,
    tree_from_depths_reference,
)

AGES = [5, 15, 19, 22, 25, 33, 33, 39, 31, 44, 41, 42, 48, 55, 59, 70]
# the notebook's answer for the ages, k = 2, alphabetic tree
AGES_K2 = {5: (5, 15), 15: (5, 15), 19: (19, 22), 22: (19, 22), 25: (25, 31), 31: (25, 31),
           33: (33, 33), 39: (39, 41), 41: (39, 41), 42: (42, 44), 44: (42, 44),
           48: (48, 55), 55: (48, 55), 59: (59, 70), 70: (59, 70)}
VOTES = list("DRDDRDRRRRDDRRDD")


def node_ranges(values: list[int], model: CompressionAnonymizer) -> list[tuple[int, int]]:
    """Per row, (min, max) of the values under its released node."""
    distinct = np.unique(values)
    owner = model.owner_[:model.tree_.n_symbols]
    out = []
    for node in model.row_nodes_.tolist():
        members = distinct[owner == node]
        out.append((int(members.min()), int(members.max())))
    return out


def fit(values: list[int], method: str = "alphabetic", **kw: object) -> CompressionAnonymizer:
    _, codes = np.unique(values, return_inverse=True)
    return CompressionAnonymizer(method, **kw).fit_codes(codes)  # type: ignore[arg-type]


# -- known answers ------------------------------------------------------------------------


@pytest.mark.parametrize("tree", ["halving", "optimal"])
def test_notebook_ages_alphabetic_k2(tree: str) -> None:
    model = fit(AGES, k=2, tree=tree)
    assert node_ranges(AGES, model) == [AGES_K2[a] for a in AGES]


def test_notebook_incremental_example_halving_tree() -> None:
    # [1..5] -> 1,2 -> [1,2]; 3,4,5 -> [3,5]; then [1,2,3,4,5,3] -> 1,2,3 -> [1,3]; 4,5 -> [4,5]
    assert node_ranges([1, 2, 3, 4, 5], fit([1, 2, 3, 4, 5], k=2, tree="halving")) == \
        [(1, 2), (1, 2), (3, 5), (3, 5), (3, 5)]
    assert node_ranges([1, 2, 3, 4, 5, 3], fit([1, 2, 3, 4, 5, 3], k=2, tree="halving")) == \
        [(1, 3), (1, 3), (1, 3), (4, 5), (4, 5), (1, 3)]


def test_huffman_tree_of_the_notebook_text_is_optimal() -> None:
    text = "this is an example of a huffman tree"
    _, counts = np.unique(list(text), return_counts=True)
    tree = huffman_tree(counts)
    # the known optimum for this sentence: 135 bits
    assert tree.cost() == 135
    assert tree.counts[tree.root] == len(text)


def test_halving_tree_is_the_notebooks_construction() -> None:
    # weights 3,1,1: target 5 -> left target 2 -> leaf 3 (3 >= 2); rest 2 -> left target 1
    # -> leaf 1; rest 1 -> leaf 1
    tree = halving_tree([3, 1, 1])
    assert tree.is_alphabetic()
    assert tree.depths()[:3].tolist() == [1, 2, 2]


# -- optimal alphabetic tree against the O(n^3) dynamic programme -------------------------


def optimal_alphabetic_cost(w: list[int]) -> int:
    n = len(w)
    prefix = np.concatenate([[0], np.cumsum(w)])
    cost = [[0] * n for _ in range(n)]
    for span in range(2, n + 1):
        for i in range(n - span + 1):
            j = i + span - 1
            cost[i][j] = min(cost[i][m] + cost[m + 1][j] for m in range(i, j)) + \
                int(prefix[j + 1] - prefix[i])
    return cost[0][n - 1]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=12))
def test_garsia_wachs_is_optimal_and_alphabetic(weights: list[int]) -> None:
    tree = optimal_alphabetic_tree(weights)
    assert tree.is_alphabetic()
    assert tree.cost() == optimal_alphabetic_cost(weights)
    assert (tree.depths()[:len(weights)] == garsia_wachs_depths(weights)).all()
    halving = halving_tree(weights)
    assert halving.is_alphabetic()
    assert halving.cost() >= tree.cost()
    # Huffman is optimal among all trees: never worse than the best alphabetic one
    assert huffman_tree(weights).cost() <= tree.cost()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 1000), min_size=1, max_size=300))
def test_compiled_trees_equal_their_python_references(weights: list[int]) -> None:
    for compiled, reference in ((huffman_tree, huffman_tree_reference),
                                (halving_tree, halving_tree_reference)):
        a, b = compiled(weights), reference(weights)
        assert (a.left == b.left).all() and (a.right == b.right).all()
        assert (a.counts == b.counts).all() and a.root == b.root
    depths = garsia_wachs_depths(weights)
    assert (depths == garsia_wachs_depths_reference(weights)).all()
    a = optimal_alphabetic_tree(weights)
    b = tree_from_depths_reference(np.asarray(weights), depths, "optimal")
    assert (a.left == b.left).all() and (a.right == b.right).all()


def test_huffman_is_not_order_preserving_but_alphabetic_trees_are() -> None:
    weights = [1, 50, 1, 50, 1]
    assert not huffman_tree(weights).is_alphabetic()
    assert optimal_alphabetic_tree(weights).is_alphabetic()


# -- the O(n log n) Garsia--Wachs against the reference, the DP and the clock ---------------


def count_profiles(max_size: int) -> st.SearchStrategy[list[int]]:
    """Counts shaped like the hard cases: monotone, V-shaped, plateaus (ties) and random."""
    base = st.lists(st.integers(1, 60), min_size=1, max_size=max_size)
    return st.one_of(
        base,
        st.lists(st.integers(1, 3), min_size=1, max_size=max_size),  # many ties
        base.map(sorted),
        base.map(lambda c: sorted(c, reverse=True)),
        st.tuples(base, base).map(lambda p: sorted(p[0], reverse=True) + sorted(p[1])),
        st.tuples(base, base).map(lambda p: sorted(p[0]) + sorted(p[1], reverse=True)),
        st.tuples(st.integers(1, 50), st.integers(1, max_size)).map(lambda p: [p[0]] * p[1]),
    )


@settings(max_examples=300, deadline=None)
@given(count_profiles(13))
def test_garsia_wachs_profiles_are_optimal_and_match_the_reference(counts: list[int]) -> None:
    depths = garsia_wachs_depths(counts)
    # the same joins as the reference, so the same depths; the cost is the DP's optimum
    assert (depths == garsia_wachs_depths_reference(counts)).all()
    tree = optimal_alphabetic_tree(counts)
    assert tree.is_alphabetic()
    assert (tree.depths()[:len(counts)] == depths).all()
    assert tree.cost() == optimal_alphabetic_cost(counts)


@settings(max_examples=60, deadline=None)
@given(count_profiles(1500))
def test_garsia_wachs_long_profiles_match_the_reference(counts: list[int]) -> None:
    depths = garsia_wachs_depths(counts)
    assert (depths == garsia_wachs_depths_reference(counts)).all()
    assert optimal_alphabetic_tree(counts).is_alphabetic()


def test_garsia_wachs_equal_counts_cost_is_known() -> None:
    # n equal counts: every optimal tree (alphabetic or not) has 2(n - 2^f) leaves at depth
    # f + 1 and the rest at depth f, f = floor(log2 n)
    for n in (1, 2, 3, 5, 1000, 1 << 17, 300_001):
        f = n.bit_length() - 1
        tree = optimal_alphabetic_tree(np.ones(n, dtype=np.int64))
        assert tree.cost() == n * f + 2 * (n - (1 << f))


def _profiles(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(12)
    half = np.arange(n // 2, 0, -1)
    return {"random": rng.integers(1, 10**9, n), "increasing": np.arange(1, n + 1),
            "decreasing": np.arange(n, 0, -1),
            "V-shaped": np.concatenate([half, np.arange(1, n - len(half) + 1)]),
            "peak": np.concatenate([np.arange(1, n - len(half) + 1), half])}


@pytest.mark.parametrize("profile", ["random", "increasing", "decreasing", "V-shaped", "peak"])
def test_garsia_wachs_worst_cases_give_optimal_alphabetic_trees(profile: str) -> None:
    # the profiles that made the two-stack version quadratic; their speed is a benchmark
    # figure (benchmarks/compression.py) and their growth is checked by the work count
    # below, never by a clock
    counts = _profiles(200_000)[profile]
    depths = garsia_wachs_depths(counts)
    tree = optimal_alphabetic_tree(counts)
    assert tree.is_alphabetic()
    assert (tree.depths()[:len(counts)] == depths).all()
    # an optimal alphabetic tree: no better than Huffman, no worse than the halving tree
    assert huffman_tree(counts).cost() <= tree.cost() <= halving_tree(counts).cost()


@pytest.mark.parametrize("profile", ["random", "increasing", "decreasing", "V-shaped", "peak"])
def test_garsia_wachs_work_grows_as_n_log_n(profile: str) -> None:
    # the extension counts its steps (rotations, descents, scan steps): a clock-free check
    # that 10x the symbols costs about 10 log(10n) / log(n) times the work, not 100x
    from anonkit.algorithms import _compression_c  # type: ignore[attr-defined]

    work = {}
    for n in (20_000, 200_000):
        counts = np.ascontiguousarray(_profiles(n)[profile], dtype=np.int64)
        work[n] = _compression_c.gw_depths(counts, np.empty(n, dtype=np.int64))
        assert work[n] <= 3 * n * np.log2(n)
    assert work[200_000] <= 13 * work[20_000]


def test_optimal_tree_refuses_a_zero_count() -> None:
    with pytest.raises(InputError, match="symbol 1 has count 0"):
        optimal_alphabetic_tree([3, 0, 2])


def test_gw_depths_refuses_mismatched_buffers() -> None:
    from anonkit.algorithms import _compression_c  # type: ignore[attr-defined]

    with pytest.raises(ValueError, match="equal length"):
        _compression_c.gw_depths(np.ones(4, dtype=np.int64), np.empty(3, dtype=np.int64))


# -- truncation ---------------------------------------------------------------------------


def test_node_is_split_only_if_both_children_pass() -> None:
    # root(4) = (a:3, b:1): b fails k=2, so nothing below the root is released
    tree = CodeTree(np.array([-1, -1, 0]), np.array([-1, -1, 1]), np.array([3, 1, 4]), 2, 2,
                    "test")
    owner = truncate(tree, tree.counts >= 2)
    assert owner.tolist() == [2, 2, 2]
    owner = truncate(tree, tree.counts >= 1)
    assert owner.tolist() == [0, 1, -1]


multisets = st.lists(st.integers(0, 60), min_size=1, max_size=120)


@settings(max_examples=80, deadline=None)
@given(multisets, st.integers(1, 12), st.sampled_from(["huffman", "halving", "optimal"]))
def test_every_class_has_k_rows_and_holds_its_values(values: list[int], k: int,
                                                     tree: str) -> None:
    k = min(k, len(values))
    method = "huffman" if tree == "huffman" else "alphabetic"
    model = fit(values, method, k=k, tree=None if tree == "huffman" else tree)
    sizes = np.bincount(np.unique(model.row_nodes_, return_inverse=True)[1].reshape(-1))
    assert sizes.min() >= k
    for value, (lo, hi) in zip(values, node_ranges(values, model), strict=True):
        assert lo <= value <= hi
    if method == "alphabetic":
        spans = sorted(set(node_ranges(values, model)))
        for (_, hi), (lo, _) in pairwise(spans):
            assert hi < lo  # disjoint, ordered ranges
        # contiguous: a range holds every value of the table between its bounds
        distinct = np.unique(values)
        ranges = node_ranges(values, model)
        for v in distinct:
            (lo, hi) = ranges[values.index(int(v))]
            inside = distinct[(distinct >= lo) & (distinct <= hi)]
            assert all(ranges[values.index(int(u))] == (lo, hi) for u in inside)


def anonymize(df: pd.DataFrame, method: str, qis: list[str], sensitive: list[str] | None = None,
              **options: object):
    schema = Schema.from_roles(df, qis, sensitive)
    m = methods.get(method)
    return m.anonymize(df, schema, m.parse_options(options, "python"))


pycanon = pytest.importorskip("pycanon.anonymity")


@settings(max_examples=40, deadline=None)
@given(multisets, st.integers(1, 8), st.sampled_from(["huffman", "alphabetic"]),
       st.sampled_from(["range", "set", "histogram"]))
def test_release_verified_by_ours_and_pycanon(values: list[int], k: int, method: str,
                                              summary: str) -> None:
    k = min(k, len(values))
    df = pd.DataFrame({"age": values, "s": [v % 3 for v in values]})
    release = anonymize(df, method, ["age"], ["s"], k=k, summary=summary)
    assert release.passed
    data = release.data.astype({"age": str}).reset_index(drop=True)
    assert pycanon.k_anonymity(data, ["age"]) >= k
    assert release.verdicts[0].passed
    # every value lies inside its summary (the JSON side table)
    side = release.auxiliary["summaries"]
    summaries = {row.label: json.loads(row.summary) for row in side.itertuples()}
    for value, label in zip(values, data["age"], strict=True):
        content = summaries[label]
        if "histogram" in content:
            assert str(value) in content["histogram"]
        elif "values" in content:
            assert value in content["values"]
        else:
            assert content["min"] <= value <= content["max"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.sampled_from("ABCD")), min_size=4,
                max_size=80), st.integers(1, 5), st.integers(1, 3))
def test_l_diverse_trees(rows: list[tuple[int, str]], k: int, l: int) -> None:  # noqa: E741
    df = pd.DataFrame(rows, columns=["age", "vote"])
    k = min(k, len(df))
    if df["vote"].nunique() < l:
        with pytest.raises(Exception, match="relax l"):
            anonymize(df, "alphabetic", ["age"], ["vote"], k=k, l=l)
        return
    release = anonymize(df, "alphabetic", ["age"], ["vote"], k=k, l=l)
    assert release.passed
    data = release.data.astype({"age": str}).reset_index(drop=True)
    assert pycanon.k_anonymity(data, ["age"]) >= k
    assert pycanon.l_diversity(data, ["age"], ["vote"]) >= l


def test_notebook_ages_and_votes_l_diverse() -> None:
    df = pd.DataFrame({"age": AGES, "vote": VOTES})
    plain = anonymize(df, "alphabetic", ["age"], ["vote"], k=2)
    # the notebook's point: k = 2 alone leaves most votes revealed
    votes_per_class = plain.data.groupby("age", observed=True)["vote"].nunique()
    assert (votes_per_class == 1).sum() >= 4
    diverse = anonymize(df, "alphabetic", ["age"], ["vote"], k=2, l=2)
    assert diverse.passed
    assert (diverse.data.groupby("age", observed=True)["vote"].nunique() >= 2).all()


def test_several_columns_are_one_symbol_and_summarised_per_column() -> None:
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"age": rng.integers(20, 60, 200), "zip": rng.integers(100, 110, 200)})
    release = anonymize(df, "huffman", ["age", "zip"], k=5)
    assert release.passed
    side = release.auxiliary["summaries"]
    assert set(side["column"]) == {"age", "zip"}
    for column in ("age", "zip"):
        mapping = {r.label: json.loads(r.summary) for r in side[side.column == column]
                   .itertuples()}
        for value, label in zip(df[column], release.data[column].astype(str), strict=True):
            assert mapping[label]["min"] <= value <= mapping[label]["max"]


def test_alphabetic_reports_both_trees() -> None:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": np.round(rng.normal(40, 12, 2000)).astype(int)})
    release = anonymize(df, "alphabetic", ["age"], k=10)
    m = release.metrics
    assert m["optimal.cost"] <= m["halving.cost"]
    assert 0 <= m["optimal.gcp"] <= 1 and 0 <= m["halving.gcp"] <= 1
    assert m["optimal.gcp"] == pytest.approx(m["gcp"])


def test_alphabetic_refuses_a_categorical_column() -> None:
    df = pd.DataFrame({"city": list("abcabcabca")})
    with pytest.raises(Exception, match="categorical"):
        anonymize(df, "alphabetic", ["city"], k=2)
    assert anonymize(df, "huffman", ["city"], k=2).passed


def test_tree_plot_is_a_figure() -> None:
    model = fit(AGES, k=2, tree="optimal")
    fig = plot_tree(model.tree_, model.owner_, labels=[str(v) for v in np.unique(AGES)])
    assert fig.axes
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert "16" in texts  # the root's count


def test_the_release_carries_the_tree_its_report_draws() -> None:
    release = anonymize(pd.DataFrame({"age": AGES}), "alphabetic", ["age"], k=2)
    model = fit(AGES, k=2)
    cut = release.cut_tree
    assert cut is not None and cut.kind == "optimal"
    np.testing.assert_array_equal(cut.owner, model.owner_)
    np.testing.assert_array_equal(cut.counts, model.tree_.counts)
    assert cut.symbol_values["age"].tolist() == sorted(set(AGES))
    section = tree_section(release)  # from the release alone: no input table, no re-run
    assert 'id="tree"' in section and "optimal tree over 15 distinct values" in section
    plain = anonymize(pd.DataFrame({"age": AGES}), "mondrian", ["age"], k=2)
    assert plain.cut_tree is None and tree_section(plain) == ""


# -- command line -------------------------------------------------------------------------


@pytest.fixture
def ages_csv(tmp_path):
    path = tmp_path / "ages.csv"
    pd.DataFrame({"age": AGES, "vote": VOTES}).to_csv(path, index=False)
    return path


def test_cli_alphabetic_with_report(ages_csv, tmp_path) -> None:
    out = tmp_path / "out.csv"
    report = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["anonymize", str(ages_csv), "--method", "alphabetic",
                                       "--tree", "halving", "-k", "2", "--qi", "age",
                                       "-l", "2", "--sensitive", "vote", "-o", str(out),
                                       "--report", str(report)])
    assert result.exit_code == 0, result.output
    released = pd.read_csv(out)
    assert released.groupby("age")["vote"].nunique().min() >= 2
    assert (tmp_path / "out.summaries.csv").exists()
    assert 'id="tree"' in report.read_text()


def test_cli_huffman_refuses_tree_option(ages_csv, tmp_path) -> None:
    result = CliRunner().invoke(main, ["anonymize", str(ages_csv), "--method", "huffman",
                                       "--tree", "halving", "-k", "2", "--qi", "age",
                                       "--insensitive", "vote", "-o", str(tmp_path / "o.csv")])
    assert result.exit_code == 2
    assert "no option --tree" in result.output
    assert not (tmp_path / "o.csv").exists()
