"""Mondrian on Dask: the same anonymization for tables that outgrow one machine.

The job, on a cluster (a :class:`distributed.LocalCluster` by default):

1. **Encoding, fitted once.** Every piece of the input is read on a worker; the distinct
   values of each quasi-identifier and sensitive column and their counts are summed into
   one :class:`~anonkit.data.encoding.Encoding` (the same codes
   :func:`anonkit.data.encoding.encode` gives the whole table). The sensitive columns'
   counts are the *global* reference distribution of t-closeness, δ and β.
2. **Fragments.** A sample is encoded and cut as Mondrian starts (see
   :mod:`anonkit.distributed.fragments`), as the Spark implementation of Mondrian does.
   Every fragment is then counted on the *full* data, and a fragment too small, or whose
   rows break a model, is merged back with its sibling (the cut is undone).
3. **Anonymization.** Each fragment goes to a worker, which runs the Core's
   :meth:`Mondrian.partition <anonkit.methods.mondrian.Mondrian.partition>` on it with
   the global encoding and the global reference distribution, generalizes it with the
   Core's forms and writes it as one Parquet file in a temporary directory.
4. **Verification on the whole output** (:mod:`anonkit.distributed.check`): the written
   rows are regrouped by their released values across every fragment and every model is
   checked on those classes. Only then is the temporary directory renamed into place; a
   release that fails is removed, never written (fail closed).

Merging relies on monotonicity: fragments are anonymized apart, and two classes of
different fragments that happen to get the same released values are one class to anyone
reading the output; the union of two classes that satisfy a *monotonic* model satisfies it.
k-anonymity, the l-diversities, t-closeness (with the global reference), β-likeness and
m-uniqueness are monotonic; δ-disclosure privacy is not and is refused here (the
single-process engine takes it).

A worker lost mid-job is handled by Dask: its tasks run again elsewhere (a fragment's
file is written under a temporary name and renamed, so a rerun replaces it whole), and the
output is verified before anything is renamed into place.
"""

from __future__ import annotations

import math
import os
import shutil
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from anonkit._util.files import atomic_write, system_error
from anonkit._util.numbers import whole_number
from anonkit._util.randomness import privacy_rng
from anonkit.assemble import release_table
from anonkit.data.encoding import EncodedColumn, EncodedTable, Encoding
from anonkit.data.schema import Kind, Schema
from anonkit.distributed.check import (
    DistributedCheck,
    _value_counts,
    check_parts,
    domains_of,
    reference_of,
    sensitive_encoding,
)
from anonkit.distributed.cluster import dask_client, wait_for
from anonkit.distributed.fragments import CutTree, build_cut_tree, merge_fragments
from anonkit.distributed.source import (
    ParquetPiece,
    concat_frames,
    read_parquet_piece,
    source_columns,
    source_parts,
)
from anonkit.errors import InputError, ModelNotMetError
from anonkit.generalization import Form, generalize_columns
from anonkit.hierarchy.base import Hierarchy
from anonkit.methods.mondrian import Mondrian
from anonkit.metrics import class_metrics
from anonkit.models.base import Classes, PrivacyModel, SensitiveAttribute, Verdict, exact_number

#: rows of the sample the first cuts are taken on
SAMPLE_ROWS = 200_000
#: a fragment holds about this many rows (a worker anonymizes it in memory)
FRAGMENT_ROWS = 1_000_000
#: suffixes of a single table file, which a Dask release (a folder) must not be named with
_FILE_SUFFIXES = (".csv", ".tsv", ".txt", ".gz", ".bz2", ".zst", ".xz", ".zip", ".json")


@dataclass
class DistributedRelease:
    """The outcome of :meth:`DaskMondrian.anonymize`: where the release was written and
    what the verifier found on the whole of it."""

    output: str
    files: list[str]
    verdicts: list[Verdict]
    metrics: dict[str, float]
    parameters: dict[str, object]
    timings: dict[str, float] = field(default_factory=dict)
    n_fragments: int = 0
    merged_cuts: int = 0
    #: rows per class of the whole output, as the verifier grouped it (for the report)
    class_sizes: np.ndarray | None = None

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)

    def summary(self, verbose: bool = False) -> str:
        m = self.metrics
        lines = [f"mondrian on dask: {int(m['n_rows'])} rows in {int(m['n_classes'])} "
                 f"classes, {self.n_fragments} fragments ({self.merged_cuts} sample cuts "
                 f"undone on the full data)"]
        lines += [f"  {v}" for v in self.verdicts]
        keys = sorted(m) if verbose else ["gcp", "discernibility", "cavg"]
        lines.append("  " + ", ".join(f"{key} = {exact_number(round(m[key], 6))}"
                                      for key in keys if key in m))
        if verbose:
            lines.append("  timings: " + ", ".join(f"{k} {v:.2f} s"
                                                    for k, v in self.timings.items()))
        return "\n".join(lines)


class DaskMondrian:
    """Mondrian on a Dask cluster; see the module docstring.

    Args:
        k, models, strategy, generalization, allow_missing: as :class:`Mondrian` (the
            Core algorithm each fragment runs).
        sample_rows: rows of the sample the fragments are cut from.
        fragment_rows: about how many rows a fragment holds (its memory on a worker).
        min_fragments: at least this many fragments (default: two per worker), so every
            worker has work.
        seed: for the sample and ``strategy="random"`` (tests); by default the sample is
            drawn from operating-system entropy.
    """

    def __init__(self, k: int | None = None, models: Sequence[PrivacyModel | str] = (),
                 strategy: str = "widest", generalization: Mapping[str, Form | str] | None = None,
                 allow_missing: bool = False, sample_rows: int = SAMPLE_ROWS,
                 fragment_rows: int = FRAGMENT_ROWS, min_fragments: int | None = None,
                 seed: int | None = None) -> None:
        self.k = k
        self.models = models
        self.strategy = strategy
        self.generalization = generalization
        self.allow_missing = allow_missing
        self.sample_rows = sample_rows
        self.fragment_rows = fragment_rows
        self.min_fragments = min_fragments
        self.seed = seed

    def parameters(self) -> dict[str, object]:
        return self._core().parameters() | {
            "engine": "dask", "sample_rows": self.sample_rows,
            "fragment_rows": self.fragment_rows, "min_fragments": self.min_fragments}

    def _core(self) -> Mondrian:
        return Mondrian(self.k, self.models, self.strategy, self.generalization,
                        allow_missing=self.allow_missing,
                        seed=0 if self.seed is None else self.seed)

    def _validate(self) -> None:
        for name in ("sample_rows", "fragment_rows"):
            whole_number(name, getattr(self, name), "python", 1)
        if self.min_fragments is not None:
            whole_number("min_fragments", self.min_fragments, "python", 1)

    # -- the public entry point ----------------------------------------------------------
    def anonymize(
        self,
        source: str | Path,
        output: str | Path,
        quasi_identifiers: Sequence[str],
        sensitive: Sequence[str] | str | None = None,
        identifiers: Sequence[str] = (),
        hierarchies: Mapping[str, Hierarchy] | None = None,
        kinds: Mapping[str, Kind | str] | None = None,
        orders: Mapping[str, Sequence[object]] | None = None,
        drop: Sequence[str] = (),
        client: Any = None,
        workers: int | None = None,
        scheduler: str | None = None,
        progress: bool = False,
    ) -> DistributedRelease:
        """Anonymize the table at ``source`` (CSV or Parquet file, or a directory of
        Parquet files) into the directory ``output`` (Parquet files), verified on the
        whole output first. Columns other than the QIs, sensitive columns and
        ``identifiers`` / ``drop`` (left out) are released unchanged.

        ``client``: a :class:`distributed.Client` to run on; without one, a local cluster
        of ``workers`` processes (or the scheduler at ``scheduler``) is used for this call
        and shut down at its end.
        """
        self._validate()
        target = self._output_path(Path(source), Path(output))
        if client is None:
            with dask_client(workers, scheduler) as own:
                return self.anonymize(source, target, quasi_identifiers, sensitive,
                                      identifiers, hierarchies, kinds, orders, drop,
                                      client=own, progress=progress)
        return self._run(client, source, target, list(quasi_identifiers),
                         [sensitive] if isinstance(sensitive, str) else list(sensitive or ()),
                         list(identifiers), dict(hierarchies or {}), dict(kinds or {}),
                         dict(orders or {}), list(drop), progress)

    @staticmethod
    def _output_path(source: Path, output: Path) -> Path:
        if output.exists() and not output.is_dir():
            raise InputError(f"the output {output} is a file; the Dask engine writes a "
                             f"directory of Parquet files: give a directory name")
        if not output.exists() and "".join(output.suffixes[-2:]).lower().endswith(
                _FILE_SUFFIXES):
            # a folder named release.csv would look like a file and read as none
            raise InputError(f"the output {output} names a file, but the Dask engine writes "
                             f"a folder of Parquet files: give a folder name (e.g. "
                             f"{output.name.split('.')[0] or 'release'}/)")
        if not output.resolve().parent.is_dir():
            raise InputError(f"output folder {output.resolve().parent} does not exist; "
                             f"create it first")
        if source.resolve() == output.resolve() or output.resolve() in source.resolve().parents:
            raise InputError(f"the output {output} would overwrite the input {source}; "
                             f"give another output")
        return output

    def _run(self, client: Any, source: str | Path, output: Path, qis: list[str],
             sens: list[str], identifiers: list[str], hierarchies: dict[str, Hierarchy],
             kinds: dict[str, Kind | str], orders: dict[str, Sequence[object]],
             drop: list[str], show: bool) -> DistributedRelease:
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        names = source_columns(source)
        for role, columns in (("quasi-identifier", qis), ("sensitive", sens),
                              ("identifier", identifiers), ("drop", drop)):
            for name in columns:
                if name not in names:
                    raise InputError(f"unknown column {name!r} given as {role}; the table "
                                     f"has: {', '.join(names)}")
        read_columns = [n for n in names if n not in identifiers and n not in drop]
        parts = client.compute(source_parts(source, read_columns))
        wait_for(parts, "reading", show)
        n_workers = max(len(client.scheduler_info()["workers"]), 1)

        # 1. the encoding, fitted once on every row; the sample, drawn from every piece
        counts = _value_counts(client, parts, qis + sens)
        n_rows = int(next(iter(counts.values())).sum())
        rng, _ = privacy_rng(self.seed)
        fraction = min(1.0, self.sample_rows / max(n_rows, 1))
        seeds = rng.integers(0, 2**31, size=len(parts)).tolist()
        sample = pd.concat(client.gather([client.submit(_sample, p, fraction, s, pure=False)
                                          for p, s in zip(parts, seeds, strict=True)]))
        if not len(sample):
            raise InputError(f"the input {source} has no rows; give at least one data row")
        schema = Schema.from_roles(sample, qis, sens or None, (), kinds=kinds or None,
                                   hierarchies=hierarchies or None, orders=orders or None)
        encoding = Encoding.from_domain(schema, domains_of(counts), self.allow_missing,
                                        reference_counts=reference_of(
                                            {name: counts[name] for name in sens}))
        sample_table = encoding.transform(sample)
        core = self._core()
        references = encoding.reference_counts
        models = core.resolved_models([SensitiveAttribute.from_encoded(c, references[c.name])
                                        for c in sample_table.sensitive])
        refused = [m for m in models if not m.monotonic]
        if refused:
            raise InputError(f"{refused[0].title()} is not monotonic, so fragments anonymized "
                             f"apart cannot be merged safely; use the single-process engine "
                             f"(--engine local) for it")
        forms = core.forms(sample_table)
        timings["encode"] = time.perf_counter() - t0

        # 2. fragments: the first cuts on the sample, counted and merged on the full data
        t0 = time.perf_counter()
        wanted = max(self.min_fragments or 2 * n_workers,
                     math.ceil(n_rows / self.fragment_rows))
        min_size = max(m.min_class_size() for m in models)
        tree = build_cut_tree(sample_table.qi_matrix, sample_table.quasi_identifiers, wanted,
                              min_sample_rows=max(1, math.ceil(min_size * fraction)))
        enc = client.scatter(encoding, broadcast=True, hash=False)
        # each piece encoded once: counted by leaf, and kept split by leaf with its codes
        staged = client.map(_count_and_split, parts, encoding=enc, tree=tree, pure=False)
        del parts
        leaf_counts = client.gather(client.map(_counts_of, staged, pure=False))
        merged, fragment_of = merge_fragments(
            tree, _fragment_test(tree, leaf_counts, encoding, models))
        n_fragments = int(fragment_of.max()) + 1
        timings["fragments"] = time.perf_counter() - t0

        # 3. every fragment anonymized by the Core on a worker, written to a temp directory
        t0 = time.perf_counter()
        staging = output.resolve().parent / f".{output.name}.{uuid.uuid4().hex[:12]}.tmp"
        staging.mkdir()
        try:
            leaves_of = [np.flatnonzero(fragment_of[tree.leaves] == index)
                         for index in range(n_fragments)]
            jobs = [client.submit(_anonymize_fragment, index,
                                  [client.submit(_leaf_piece, s, int(leaf), pure=False)
                                   for s in staged for leaf in leaves_of[index]],
                                  enc, core, models, forms, str(staging), pure=False)
                    for index in range(n_fragments)]
            del staged
            wait_for(jobs, "anonymizing fragments", show)
            written = client.gather(jobs)
            timings["anonymize"] = time.perf_counter() - t0

            # 4. verified on the whole output before it is renamed into place
            t0 = time.perf_counter()
            files = [w["file"] for w in written]
            pieces = client.map(_read_file, files, columns=qis + sens, pure=False)
            report = check_parts(client, pieces, qis, sens, models,
                                 sensitive_encoding(encoding), show_progress=show)
            del pieces
            timings["verify"] = time.perf_counter() - t0
            if not report.passed:
                raise ModelNotMetError("release refused, nothing written: the whole output "
                                       "does not satisfy its models:\n" + str(report))
            metrics = _metrics(written, report, [c.name for c in
                                                 sample_table.quasi_identifiers], min_size)
            for leftover in staging.iterdir():  # a rerun task's temp file, if any
                if leftover.name not in {Path(f).name for f in files}:
                    leftover.unlink()
            _replace_directory(staging, output)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        params = self.parameters() | {
            "quasi_identifiers": qis, "sensitive": sens,
            "forms": {name: form.value for name, form in forms.items()}}
        return DistributedRelease(
            str(output), [str(output / Path(f).name) for f in files], report.verdicts,
            metrics, params, timings, n_fragments, tree.n_cuts - merged.n_cuts,
            report.class_sizes)


# -- tasks run on the workers --------------------------------------------------------------
def _sample(df: pd.DataFrame, fraction: float, seed: int) -> pd.DataFrame:
    if fraction >= 1.0:
        return df
    return df.sample(frac=fraction, random_state=seed)


#: a piece of a fragment: rows of the input, and their QI and sensitive codes
LeafPiece = tuple[pd.DataFrame, list[np.ndarray]]


def _count_and_split(df: pd.DataFrame, encoding: Encoding, tree: CutTree
                     ) -> tuple[tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]]],
                                list[LeafPiece]]:
    """Encode ``df`` once; return the rows per node of ``tree`` with, per sensitive column,
    the (node * cardinality + code) pairs present and their counts; and the rows of each
    leaf (in the order of ``tree.leaves``) with their codes."""
    table = encoding.transform(df)
    leaf = tree.leaf_of(table.qi_matrix)
    rows = np.bincount(leaf, minlength=tree.n_nodes)
    pairs = {}
    for column in table.sensitive:
        keys, n = np.unique(leaf * column.cardinality + column.codes, return_counts=True)
        pairs[column.name] = (keys, n)
    position = np.searchsorted(tree.leaves, leaf)
    order = np.argsort(position, kind="stable")
    bounds = np.searchsorted(position[order], np.arange(len(tree.leaves) + 1))
    columns = (*table.quasi_identifiers, *table.sensitive)
    df = df.reset_index(drop=True)
    pieces = []
    for i in range(len(tree.leaves)):
        taken = order[bounds[i]:bounds[i + 1]]
        pieces.append((df.iloc[taken], [c.codes[taken] for c in columns]))
    return (rows, pairs), pieces


def _counts_of(staged: tuple[Any, list[LeafPiece]]) -> Any:
    return staged[0]


def _leaf_piece(staged: tuple[Any, list[LeafPiece]], leaf: int) -> LeafPiece:
    return staged[1][leaf]


def _fragment_table(encoding: Encoding, pieces: list[LeafPiece]
                    ) -> tuple[pd.DataFrame, EncodedTable]:
    """The fragment's rows and its encoded table, from its pieces' codes (no re-encoding)."""
    pieces = [p for p in pieces if len(p[0])]
    df = concat_frames([p[0] for p in pieces])
    schema = encoding.schema
    columns = []
    for j, name in enumerate([*schema.quasi_identifiers, *schema.sensitive]):
        c = encoding.column(name)
        codes = np.concatenate([p[1][j] for p in pieces])
        columns.append(EncodedColumn(name, c.kind, codes, c.values, c.hierarchy,
                                     c.decode_leaf, c.missing_code))
    n_qis = len(schema.quasi_identifiers)
    return df, EncodedTable(schema, len(df), tuple(columns[:n_qis]), tuple(columns[n_qis:]),
                            df.index)


def _anonymize_fragment(index: int, pieces: list[LeafPiece], encoding: Encoding,
                        core: Mondrian, models: list[PrivacyModel], forms: dict[str, Form],
                        directory: str) -> dict[str, Any]:
    """Anonymize one fragment with the Core's Mondrian (global encoding and reference
    distribution) and write it; return what the metrics need."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    df, table = _fragment_table(encoding, pieces)
    partition = core.partition(table, models, encoding.reference_counts)
    generalized, released = generalize_columns(table.quasi_identifiers, forms, partition)
    data = release_table(df, encoding.schema, released)
    final = Path(directory) / f"part-{index:05d}.parquet"
    arrow = pa.Table.from_pandas(data, preserve_index=False)
    # one index type for every file's dictionaries, so the directory reads as one dataset
    arrow = arrow.cast(pa.schema(
        [pa.field(f.name, pa.dictionary(pa.int32(), f.type.value_type))
         if pa.types.is_dictionary(f.type) else f for f in arrow.schema],
        metadata=arrow.schema.metadata))
    # no column statistics: min / max of generalized labels tell nothing, and computing
    # them takes half the writing time
    with atomic_write(final, refuse=system_error) as temporary:
        pq.write_table(arrow, temporary, write_statistics=False)
    sizes = partition.sizes
    return {"file": str(final), "rows": int(sizes.sum()), "partitions": len(sizes),
            "loss": [float(np.asarray(g.loss, dtype=np.float64) @ sizes) for g in generalized]}


def _read_file(path: str, columns: list[str]) -> pd.DataFrame:
    import pyarrow.parquet as pq

    groups = tuple(range(pq.ParquetFile(path).metadata.num_row_groups))
    return read_parquet_piece(ParquetPiece(path, groups, 0), columns)


# -- on the client ---------------------------------------------------------------------
def _fragment_test(tree: CutTree, leaf_counts: list[Any], encoding: Encoding,
                   models: Sequence[PrivacyModel]) -> Any:
    """``holds(groups, n_groups)`` for :func:`merge_fragments`: whether each group of
    leaves, as a whole and on the full data, satisfies every model."""
    rows = np.sum([r for r, _ in leaf_counts], axis=0)
    sensitive_pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name in encoding.schema.sensitive:
        keys = np.concatenate([p[name][0] for _, p in leaf_counts])
        n = np.concatenate([p[name][1] for _, p in leaf_counts])
        unique, inverse = np.unique(keys, return_inverse=True)
        sensitive_pairs[name] = (unique, np.bincount(inverse.reshape(-1), weights=n)
                                 .astype(np.int64))
    references = encoding.reference_counts

    def holds(groups: np.ndarray, n_groups: int) -> np.ndarray:
        member = groups >= 0
        sizes = np.bincount(groups[member], weights=rows[member],
                            minlength=n_groups).astype(np.int64)
        attributes = []
        for name in encoding.schema.sensitive:
            column = encoding.column(name)
            card = column.cardinality
            keys, n = sensitive_pairs[name]
            group = groups[keys // card]
            # one row per counted row, group after group: what the models evaluate
            order = np.lexsort((keys % card, group))
            codes = np.repeat((keys % card)[order], n[order])
            attributes.append(SensitiveAttribute.from_encoded(
                EncodedColumn(name, column.kind, codes, column.values, column.hierarchy,
                              column.decode_leaf, column.missing_code), references[name]))
        classes = Classes.from_sizes(sizes, attributes)
        ok = sizes > 0
        for model in models:
            ok &= model.holds(classes)
        return ok

    whole = holds(np.zeros(tree.n_nodes, dtype=np.int64), 1)
    if not whole[0]:
        raise InputError("the table as a whole does not satisfy the models, so no "
                         "generalization can: relax the model")
    return holds


def _metrics(written: list[dict[str, Any]], report: DistributedCheck, qis: list[str],
             k: int) -> dict[str, float]:
    """The release's figures: the certainty penalties from the fragments' classes, the
    class figures from the classes as the verifier grouped the whole output."""
    n = sum(w["rows"] for w in written)
    per_qi = np.sum([w["loss"] for w in written], axis=0) / max(n, 1)
    out = {"gcp": float(per_qi.mean()) if len(per_qi) else 0.0,
           **{f"ncp.{name}": float(v) for name, v in zip(qis, per_qi, strict=True)}}
    out |= class_metrics(report.class_sizes, k)
    out["n_partitions"] = float(sum(w["partitions"] for w in written))
    return out


def _replace_directory(staging: Path, output: Path) -> None:
    """Put ``staging`` at ``output`` with a rename; an existing output is moved aside
    first and removed after, so ``output`` is always either the old or the new release."""
    if not output.exists():
        os.replace(staging, output)
        return
    aside = output.resolve().parent / f".{output.name}.{uuid.uuid4().hex[:12]}.old"
    os.replace(output, aside)
    try:
        os.replace(staging, output)
    except OSError:
        os.replace(aside, output)
        raise
    shutil.rmtree(aside, ignore_errors=True)
