"""Compression anonymity (Kidney 2018): the huffman, alphabetic and randomized methods.

The code trees and their truncation are :mod:`anonkit.algorithms.compression`; here they
become releases:

- huffman / alphabetic (:class:`CompressionAnonymizer`): every row is released as the
  summary of the node its symbol's walk from the root stops at (range or set, one label
  per column, with a JSON side table; or a histogram in that table). The release carries
  the cut tree (:attr:`Release.cut_tree`) for the steward's report.
- randomized (:func:`randomized_release`): per row a value drawn from its representative
  subtree; a heuristic, and the release says so (``formal_guarantee=False``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from anonkit._util.numbers import stored_number
from anonkit._util.randomness import privacy_rng
from anonkit.algorithms.compression import (
    ALPHABETIC_TREES,
    SUMMARIES,
    CodeTree,
    TreeCut,
    balance_measure,
    build_tree,
    cut_gcp,
    randomized_symbols,
    symbols_of,
    truncated_tree,
)
from anonkit.assemble import Progress, generalized_release, no_progress
from anonkit.data.encoding import EncodedColumn, encode
from anonkit.data.schema import Schema
from anonkit.errors import InputError
from anonkit.generalization import Form, default_form
from anonkit.metrics import measure_classes, measure_generalized
from anonkit.models.base import KAnonymity, PrivacyModel
from anonkit.models.diversity import DistinctLDiversity
from anonkit.partition import Partition
from anonkit.release import CutTree, Release, ReleaseKind
from anonkit.verify import verify_release

# -- huffman and alphabetic ---------------------------------------------------------------


@dataclass
class CompressionAnonymizer:
    """k-anonymity (and distinct l-diversity) by truncating a code tree.

    Configuration in the constructor, validation when run; after :meth:`anonymize` the
    results are plain attributes: ``tree_`` (the :class:`CodeTree`), ``owner_`` (per
    node, its released node), ``row_nodes_`` (per row, its released node), and for an
    alphabetic method ``trees_`` (both alphabetic trees and their figures on this data).
    """

    method: str = "alphabetic"  # huffman | alphabetic
    k: int = 2
    l: int | None = None  # noqa: E741
    tree: str | None = None  # halving | optimal (alphabetic); default optimal
    summary: str = "range"

    def _tree_kind(self) -> str:
        if self.method == "huffman":
            if self.tree not in (None, "huffman"):
                raise InputError(f"--tree {self.tree} is for the alphabetic method; the "
                                 f"huffman method builds the Huffman tree")
            return "huffman"
        if self.method != "alphabetic":
            raise InputError(f"unknown compression method {self.method!r}")
        tree = self.tree or "optimal"
        if tree not in ("optimal", "halving"):
            raise InputError(f"--tree must be optimal or halving, got {tree!r}")
        return tree

    def fit_codes(self, codes: np.ndarray, sensitive: np.ndarray | None = None
                  ) -> CompressionAnonymizer:
        """Build and truncate the tree over integer ``codes`` (n, d) (ordered codes for an
        alphabetic tree); ``sensitive``: per row a sensitive code, needed with ``l``."""
        kind = self._tree_kind()
        if self.summary not in SUMMARIES:
            raise InputError(f"--summary must be one of {', '.join(SUMMARIES)}, got "
                             f"{self.summary!r}")
        cut = truncated_tree(codes, kind, self.k, self.l, sensitive,
                             compare=() if kind == "huffman" else ALPHABETIC_TREES)
        self.cut_: TreeCut = cut
        self.tree_: CodeTree = cut.tree
        self.distinct_: np.ndarray | None = cut.distinct
        self.owner_: np.ndarray = cut.owner
        self.symbol_: np.ndarray = cut.symbol
        self.symbol_codes_: np.ndarray = cut.symbol_codes
        self.row_nodes_: np.ndarray = cut.row_nodes
        self.trees_: dict[str, tuple[CodeTree, np.ndarray]] = cut.compared
        return self

    def anonymize(self, df: pd.DataFrame, schema: Schema,
                  progress: Progress | None = None) -> Release:
        """The verified release of ``df``: every row's QIs replaced by its node's summary."""
        step = progress or no_progress
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        with step("encoding", len(df)):
            table = encode(df, schema)
        timings["encode"] = time.perf_counter() - t0
        qis = table.quasi_identifiers
        if self.method == "alphabetic":
            unordered = [c.name for c in qis if not c.kind.is_ordered]
            if unordered:
                raise InputError(f"the alphabetic tree keeps values in order; column "
                                 f"{unordered[0]!r} is categorical (give its order with "
                                 f"--order, or use --method huffman)")
        sensitive = None
        if self.l is not None:
            if len(table.sensitive) != 1:
                raise InputError(f"l-diverse trees protect one sensitive column; "
                                 f"{len(table.sensitive)} were given: name one with "
                                 f"--sensitive")
            sensitive = table.sensitive[0].codes
        t0 = time.perf_counter()
        with step("partitioning", len(df)):
            self.fit_codes(table.qi_matrix, sensitive)
        timings["algorithm"] = time.perf_counter() - t0
        cut = self.cut_
        class_of_symbol, n_classes = cut.symbol_classes()
        partition = Partition.from_class_ids(class_of_symbol[cut.symbol], n_classes)
        forms = {c.name: (Form.SET if self.summary == "set" else default_form(c))
                 for c in qis}
        models: list[PrivacyModel] = [KAnonymity(self.k)]
        if self.l is not None:
            models.append(DistinctLDiversity(self.l))
        params: dict[str, object] = {
            "k": self.k, "tree": self._tree_kind(), "summary": self.summary,
            "quasi_identifiers": schema.quasi_identifiers, "sensitive": schema.sensitive,
            "forms": {name: form.value for name, form in forms.items()}}
        if self.l is not None:
            params["l"] = self.l
        release, generalized = generalized_release(df, table, partition, forms, models,
                                                   method=self.method, parameters=params,
                                                   timings=timings, progress=progress)
        measure_generalized(release, generalized, partition.sizes)
        first_row = partition.order[partition.starts]
        labels = {c.name: release.data[c.name].iloc[first_row].astype(str).to_numpy()
                  for c in qis}
        release.auxiliary["summaries"] = summary_table(
            labels, class_of_symbol, cut.tree.counts[:cut.tree.n_symbols], cut.symbol_codes,
            qis, self.summary)
        release.metrics["tree.cost"] = float(cut.tree.cost())
        release.metrics["tree.released_nodes"] = float(n_classes)
        for name, (t, o) in cut.compared.items():
            release.metrics[f"{name}.cost"] = float(t.cost())
            release.metrics[f"{name}.gcp"] = cut_gcp(t, o, qis, cut.symbol_codes)
        release.cut_tree = cut_tree_of(cut, qis)
        return release


def cut_tree_of(cut: TreeCut, columns: Sequence[EncodedColumn]) -> CutTree:
    """What the report draws of ``cut``, as plain arrays; ``columns``: the quasi-identifiers
    whose codes the symbols are made of."""
    tree = cut.tree
    return CutTree(kind=tree.kind, left=tree.left, right=tree.right, counts=tree.counts,
                   root=tree.root, n_symbols=tree.n_symbols, owner=cut.owner,
                   symbol_values={c.name: c.values[cut.symbol_codes[:, j]]
                                  for j, c in enumerate(columns)})


def summary_table(labels: dict[str, np.ndarray], class_of_symbol: np.ndarray,
                  counts: np.ndarray, symbol_codes: np.ndarray,
                  columns: Sequence[EncodedColumn], summary: str) -> pd.DataFrame:
    """The JSON side table: per quasi-identifier and released label (``labels[column]``:
    per class), its rows and its summary (``{"min", "max"}`` for a range, ``{"values"}``
    for a set, and with ``histogram`` the count of every value under the label). Built
    from the symbols and their counts, never from the rows."""
    rows = []
    for j, column in enumerate(columns):
        label_of_class, names = pd.factorize(labels[column.name])
        label = label_of_class[class_of_symbol]
        code = symbol_codes[:, j].astype(np.int64)
        card = int(code.max()) + 1 if len(code) else 1
        keys, where = np.unique(label * card + code, return_inverse=True)
        weights = np.bincount(where.reshape(-1), weights=counts, minlength=len(keys))
        key_label, key_code = keys // card, keys % card
        bounds = np.searchsorted(key_label, np.arange(len(names) + 1))
        for i, name in enumerate(names):
            codes = key_code[bounds[i]:bounds[i + 1]]  # sorted: the column's order
            present = [_plain(v) for v in column.values[codes]]
            if summary == "histogram":
                content: dict[str, object] = {"histogram": {
                    str(v): int(c) for v, c in zip(present, weights[bounds[i]:bounds[i + 1]],
                                                   strict=True)}}
            elif summary == "set" or not column.kind.is_ordered:
                content = {"values": present}
            else:
                content = {"min": present[0], "max": present[-1]}
            rows.append({"column": column.name, "label": str(name),
                         "rows": int(weights[bounds[i]:bounds[i + 1]].sum()),
                         "summary": json.dumps(content, sort_keys=True)})
    return pd.DataFrame(rows, columns=["column", "label", "rows", "summary"])


def _plain(value: object) -> object:
    """A value of a column's decode table as the summary's JSON holds it: a numpy number
    as :func:`stored_number` gives it (a domain holds no NaN: a missing value is the
    table's None); a Python number as it is (the decode table of a column with missing
    values is an object array, whose numbers were always kept as they are); anything else
    as text."""
    if isinstance(value, np.integer | np.floating):
        return stored_number(value)
    return value if isinstance(value, int | float) else str(value)


# -- the randomised representative release -------------------------------------------------


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov--Smirnov statistic: the largest gap between the two
    empirical distribution functions."""
    a, b = np.sort(a), np.sort(b)
    points = np.concatenate([a, b])
    gap = np.searchsorted(a, points, side="right") / len(a) - \
        np.searchsorted(b, points, side="right") / len(b)
    return float(np.abs(gap).max()) if len(points) else 0.0


def randomized_release(df: pd.DataFrame, schema: Schema, *, threshold: float,
                       tree: str | None = None, seed: int | None = None) -> Release:
    """The randomised representative release (``randomized``): per row, a value drawn
    from its representative subtree; heuristic (``formal_guarantee=False``)."""
    kind = tree or "optimal"
    if kind not in ("optimal", "halving"):
        raise InputError(f"--tree must be optimal or halving for the randomized release, got "
                         f"{kind!r}")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    table = encode(df, schema)
    unordered = [c.name for c in table.quasi_identifiers if not c.kind.is_ordered]
    if unordered:
        raise InputError(f"the randomized release draws from ordered runs of values; column "
                         f"{unordered[0]!r} is categorical (give its order with --order)")
    symbol, counts, symbol_codes = symbols_of(table.qi_matrix)
    code_tree = build_tree(counts, kind)
    rng, seeded = privacy_rng(seed)
    names = [", ".join(f"{c.name}={_plain(c.values[code])!r}" for c, code in zip(
        table.quasi_identifiers, codes, strict=True)) for codes in symbol_codes.tolist()]
    drawn, row_node = randomized_symbols(code_tree, symbol, threshold, rng, names)
    timings["algorithm"] = time.perf_counter() - t0
    data = pd.DataFrame({c: df[c].array.copy() for c in schema.released_columns},
                        index=pd.RangeIndex(len(df)))
    metrics: dict[str, float] = {}
    for j, column in enumerate(table.quasi_identifiers):
        values = column.values[symbol_codes[drawn, j]]
        data[column.name] = values
        if column.kind.name == "NUMERIC":
            metrics[f"ks.{column.name}"] = ks_statistic(
                df[column.name].to_numpy(dtype=np.float64),
                np.asarray(values, dtype=np.float64))
    measure = balance_measure(code_tree)
    metrics["heuristic.measure.min"] = float(measure[row_node].min()) if len(row_node) else 0.0
    metrics["heuristic.changed"] = float((drawn != symbol).mean()) if len(symbol) else 0.0
    params: dict[str, object] = {"threshold": threshold, "tree": kind,
                                 "quasi_identifiers": schema.quasi_identifiers,
                                 "guarantee": "none: the balance measure is a heuristic, "
                                              "not differential privacy"}
    release = Release(data, np.zeros(len(df), dtype=np.int64), pd.DataFrame(), [], {},
                      schema, "randomized", params, timings, kind=ReleaseKind.GENERALIZED,
                      # claims nothing beyond what every release has: a class of one row
                      models=[KAnonymity(1)], formal_guarantee=False, seeded=seeded)
    verify_release(release)
    measure_classes(release)
    release.metrics |= metrics
    return release


__all__ = ["CompressionAnonymizer", "cut_tree_of", "ks_statistic", "randomized_release",
           "summary_table"]


def _code_tree(name: str, df: pd.DataFrame, schema: Schema, options: dict[str, Any],
               progress: Progress | None) -> Release:
    if options.get("k") is None:
        raise InputError(f"method {name!r} needs -k")
    return CompressionAnonymizer(name, k=options["k"], l=options.get("l"),
                                 tree=options.get("tree"),
                                 summary=options.get("summary") or "range").anonymize(
        df, schema, progress=progress)


def run_huffman(df: pd.DataFrame, schema: Schema, options: dict[str, Any],
                progress: Progress | None = None) -> Release:
    """The ``huffman`` method of the registry."""
    return _code_tree("huffman", df, schema, options, progress)


def run_alphabetic(df: pd.DataFrame, schema: Schema, options: dict[str, Any],
                   progress: Progress | None = None) -> Release:
    """The ``alphabetic`` method of the registry."""
    return _code_tree("alphabetic", df, schema, options, progress)


def run_randomized(df: pd.DataFrame, schema: Schema, options: dict[str, Any],
                   progress: Progress | None = None) -> Release:
    """The ``randomized`` method of the registry."""
    if options.get("threshold") is None:
        raise InputError("method 'randomized' needs --threshold")
    return randomized_release(df, schema, threshold=options["threshold"],
                              tree=options.get("tree"), seed=options.get("seed"))
