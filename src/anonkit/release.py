"""What every method returns: the released table plus the evidence about it.

A :class:`Release` is one of three kinds (:class:`ReleaseKind`):

- ``generalized``: quasi-identifiers generalized, sensitive values kept on their rows
  (Mondrian; m-invariance, which may add counterfeit rows);
- ``permuted``: quasi-identifiers exact, sensitive values permuted within explicit groups
  named by a group column ((k,e)-anonymity);
- ``synthetic``: tuples with no input row behind them (kb-anonymity test data).

Each released row has a provenance (:class:`Provenance`): an input row, a counterfeit, or
synthetic. A class is either implicit -- the rows with equal released quasi-identifiers,
as an adversary groups them -- or explicit, the rows with equal values in
:attr:`Release.group_column`. A release is data, with no I/O: writing
(:func:`anonkit.verify.write_release`) and publishing pass one boundary
(:func:`anonkit.verify.verify_release`): the classes are regrouped from the released values
alone, every model is evaluated on them, and identifier columns are refused, whichever
method produced the release.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from html import escape
from pathlib import Path

import numpy as np
import pandas as pd

from anonkit._util.numbers import display_number, measured_text
from anonkit._util.randomness import privacy_rng
from anonkit.data.schema import Schema
from anonkit.data.write import output_codec
from anonkit.errors import InputError, ModelNotMetError, NoInformationWarning
from anonkit.models.base import PrivacyModel, Verdict, format_parameters


class ReleaseKind(StrEnum):
    GENERALIZED = "generalized"
    PERMUTED = "permuted"
    SYNTHETIC = "synthetic"


class Provenance(IntEnum):
    """Where a released row comes from."""

    INPUT = 0  # an input row (its values generalized or kept)
    COUNTERFEIT = 1  # a made-up row that hides which values left (m-invariance)
    SYNTHETIC = 2  # a generated tuple standing for a group of input rows (kb-anonymity)


class ThreatModel(StrEnum):
    """What a method claims against an adversary who combines several releases."""

    #: nothing: a one-shot method ignores earlier releases; re-running it on a changed
    #: table usually leaks through the intersection (the history's gate refuses that)
    ONE_SHOT = "one-shot"
    #: m-invariance: a record keeps its class signature of m values in every release
    M_INVARIANCE = "m-invariance"
    #: incremental (k,e)-anonymity: no two releases intersect below k values or range e
    INCREMENTAL_KE = "incremental-(k,e)"
    #: monotone generalization: later releases only refine, so intersections narrow nothing
    MONOTONE = "monotone-generalization"


#: a release's overall status, as its report's banner, its console summary and ``--json``
#: say it: only a release with a formal guarantee whose every model holds is "passed"; a
#: heuristic one is "no formal guarantee" whatever its verdicts say (its k >= 1 holds for
#: any table)
PASSED = "passed"
NO_FORMAL_GUARANTEE = "no formal guarantee"
FAILED = "failed"
#: what the status NO FORMAL GUARANTEE means, where it is printed
NO_FORMAL_GUARANTEE_TEXT = ("a heuristic release, accepted explicitly; its verdicts hold "
                            "for any table and protect no one")


def release_status(passed: bool, formal_guarantee: bool) -> str:
    """:data:`PASSED`, :data:`NO_FORMAL_GUARANTEE` or :data:`FAILED`."""
    if not passed:
        return FAILED
    return PASSED if formal_guarantee else NO_FORMAL_GUARANTEE


def recorded_formal_guarantee(parameters: Mapping[str, object]) -> bool:
    """Whether a release recorded with ``parameters`` (a history's, a report's) has a
    formal guarantee: a heuristic method records ``guarantee = "none: ..."`` with it."""
    return not str(parameters.get("guarantee", "")).startswith("none")


def fully_generalized(quasi_identifiers: Sequence[str], metrics: Mapping[str, float]) -> bool:
    """Whether every quasi-identifier lost all its information (NCP 100 %: one value for
    the whole domain). False when a QI has no NCP (kept exact, or not measured)."""
    ncps = [metrics.get(f"ncp.{q}") for q in quasi_identifiers]
    return bool(ncps) and all(x is not None and float(x) >= 1 - 1e-9 for x in ncps)


NO_INFORMATION = ("every quasi-identifier is fully generalized (NCP 100 %): the release "
                  "meets its models by telling nothing about them; a smaller k, fewer "
                  "models or a hierarchy with middle levels usually keeps something")


def warn_if_no_information(release: Release) -> None:
    """:class:`NoInformationWarning` when every quasi-identifier of ``release`` is fully
    generalized (see :func:`fully_generalized`)."""
    if fully_generalized(release.schema.quasi_identifiers, release.metrics):
        warnings.warn(NoInformationWarning(f"{release.method}: {NO_INFORMATION}"),
                      stacklevel=3)


#: what a suppressed cell shows (a suppressed row shows it in every quasi-identifier)
SUPPRESSED = "*"


@dataclass(frozen=True)
class RecodingSummary:
    """What a full-domain global recoding chose and how it searched: per quasi-identifier
    its ``levels`` (0: the value) of ``heights`` levels, the ``metric`` minimised and its
    ``value``, the ``lattice`` statistics (nodes, checked, tagged, pruned, qualifying), the
    suppressed rows per class of the chosen node (``suppressed_classes``: its labels and
    ``rows``; counts below k, so for the steward only) and every metric at the chosen node
    (``utility``, against the original)."""

    levels: dict[str, int]
    heights: dict[str, int]
    metric: str
    value: float
    lattice: dict[str, int]
    suppressed_classes: pd.DataFrame
    utility: dict[str, float]

    @property
    def suppressed_rows(self) -> int:
        return int(self.suppressed_classes["rows"].sum()) if len(self.suppressed_classes) \
            else 0

    def describe(self) -> str:
        """One line: the levels, the metric, the suppressed rows and the lattice."""
        levels = ", ".join(f"{name}={level}/{self.heights[name] - 1}"
                           for name, level in self.levels.items())
        lattice = ", ".join(f"{count} {what}" for what, count in self.lattice.items())
        return (f"levels {levels}; {self.metric} = {_number(self.value)}; "
                f"{self.suppressed_rows} rows suppressed; lattice: {lattice}")


@dataclass(frozen=True)
class CutTree:
    """A truncated code tree (spec 003) as plain arrays: what the report draws of a huffman
    or alphabetic release, so that drawing it needs neither the input nor the method. It
    holds counts below the cut, which the release hides: keep it with the steward.

    Node ``i < n_symbols`` is the leaf of symbol ``i`` (the symbols are the distinct
    quasi-identifier tuples, in order); the internal nodes follow, ``root`` among them.
    """

    kind: str  # huffman | optimal | halving
    left: np.ndarray  # per node, its left child; -1 at a leaf
    right: np.ndarray  # per node, its right child; -1 at a leaf
    counts: np.ndarray  # per node, the rows under it
    root: int
    n_symbols: int
    owner: np.ndarray  # per node, the released node its symbols stop at; -1 above the cut
    #: per quasi-identifier (in the schema's order), per symbol its value
    symbol_values: dict[str, np.ndarray]


@dataclass
class Release:
    """A release and its verification.

    Attributes:
        data: the released table: identifiers dropped, rows as released (for a
            generalized release without counterfeits made by a one-shot method, row ``i``
            is input row ``i``; see ``source_rows``).
        class_ids: per row of ``data``, the index of its class as the verifier grouped it:
            rows with equal released quasi-identifiers, or with equal ``group_column``
            values; classes numbered in order of first appearance.
        classes: one row per class: ``size``, ``counterfeits`` when the release has any,
            then each quasi-identifier's released label (the group id for explicit groups).
        verdicts: one per privacy model, measured on ``data`` as an adversary groups it.
        metrics: utility and risk figures (see :mod:`anonkit.metrics`).
        schema: roles and kinds of the input's columns.
        method: the method's name, e.g. ``"mondrian"``.
        parameters: every setting that produced this release (never a privacy seed).
        kind: generalized, permuted or synthetic.
        models: the privacy models the release claims; the boundary re-evaluates them.
        provenance: per row of ``data``, a :class:`Provenance` code (None: all input rows).
        source_rows: per row of ``data``, the input row it was made from, -1 for a
            counterfeit or synthetic row (None: row ``i`` is input row ``i``).
        group_column: the column of ``data`` naming each row's group (None: implicit).
        auxiliary: tables published beside the release, by name (``counterfeits``: per
            class its counterfeit count; ``groups``: the (k,e) group table).
        threat_model: what the method claims against repeated releases.
        formal_guarantee: False for a heuristic release (no provable model): writing it
            then needs ``accept_heuristic=True``.
        seeded: a user-given seed drove the privacy randomness (tests and studies only);
            the seed itself is never recorded.
        method_state: opaque bytes a sequential method keeps in the history.
        cut_tree: the code tree a huffman or alphabetic release was cut from, for the
            steward's report (None for every other method); never written or published.
        timings: seconds spent per phase.
    """

    data: pd.DataFrame
    class_ids: np.ndarray
    classes: pd.DataFrame
    verdicts: list[Verdict]
    metrics: dict[str, float]
    schema: Schema
    method: str
    parameters: dict[str, object]
    timings: dict[str, float] = field(default_factory=dict)
    kind: ReleaseKind = ReleaseKind.GENERALIZED
    models: list[PrivacyModel] = field(default_factory=list)
    provenance: np.ndarray | None = None
    source_rows: np.ndarray | None = None
    group_column: str | None = None
    auxiliary: dict[str, pd.DataFrame] = field(default_factory=dict)
    threat_model: ThreatModel = ThreatModel.ONE_SHOT
    formal_guarantee: bool = True
    seeded: bool = False
    method_state: bytes | None = None
    cut_tree: CutTree | None = None
    #: the share of rows the method may release suppressed (every quasi-identifier
    #: :data:`SUPPRESSED`): the verifier takes those rows as one class exempt from the
    #: models and refuses the release when they exceed the share. None: no row is
    #: suppressed, and every class is held to every model
    suppression_limit: float | None = None
    #: a global recoding's search (levels, lattice, suppressed classes), for the steward's
    #: report (None for every other method); never written or published
    recoding: RecodingSummary | None = None
    #: set by the verifier: the ``data`` object it verified and what it found there;
    #: the boundary restores its findings over anything set since, and verifies again
    #: when ``data`` was replaced
    verification: Verification | None = field(default=None, repr=False)

    # -- rows ----------------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        return len(self.data)

    def row_provenance(self) -> np.ndarray:
        """Per released row, its :class:`Provenance` code (int8)."""
        if self.provenance is None:
            return np.zeros(len(self.data), dtype=np.int8)
        return np.asarray(self.provenance, dtype=np.int8)

    def input_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(positions in ``data`` of the rows made from input rows, those input rows)."""
        if self.source_rows is None:
            positions = np.arange(len(self.data))
            if self.provenance is not None:
                positions = positions[self.row_provenance() == Provenance.INPUT]
            return positions, positions.copy()
        source = np.asarray(self.source_rows, dtype=np.int64)
        positions = np.flatnonzero(source >= 0)
        return positions, source[positions]

    @property
    def n_counterfeits(self) -> int:
        return int((self.row_provenance() == Provenance.COUNTERFEIT).sum())

    def counterfeits_per_class(self) -> np.ndarray:
        """Per class, how many of its rows are counterfeit."""
        fake = self.row_provenance() == Provenance.COUNTERFEIT
        return np.bincount(np.asarray(self.class_ids, dtype=np.int64)[fake],
                           minlength=len(self.classes)).astype(np.int64)

    def shuffle_rows(self, seed: int | None = None) -> np.ndarray:
        """Put the released rows in a random order (operating-system entropy unless a seed
        is given, for tests): the input's row order would let anyone line up a person's
        rows across releases. Provenance and source rows follow their rows; the release is
        verified again, and its classes renumbered in the new order, at the boundary.
        Returns the order (new row ``i`` is old row ``order[i]``), for columns kept
        elsewhere."""
        rng, seeded = privacy_rng(seed)
        order = rng.permutation(len(self.data))
        self.data = self.data.iloc[order].reset_index(drop=True)
        self.class_ids = np.asarray(self.class_ids)[order]
        if self.provenance is not None:
            self.provenance = np.asarray(self.provenance)[order]
        positions, rows = self.input_rows()
        source = np.full(len(order), -1, dtype=np.int64)
        source[positions] = rows
        self.source_rows = source[order]
        self.seeded = self.seeded or seeded
        self.verification = None
        return order

    # -- verdicts ------------------------------------------------------------------------
    @property
    def passed(self) -> bool:
        """True when every verdict passes: only then may the release be written."""
        return bool(self.verdicts) and all(v.passed for v in self.verdicts)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def status(self) -> str:
        """:data:`PASSED`, :data:`NO_FORMAL_GUARANTEE` or :data:`FAILED`."""
        return release_status(self.passed, self.formal_guarantee)

    def failures(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.passed]

    def require_passed(self, accept_heuristic: bool = False) -> None:
        """Raise :class:`ModelNotMetError` naming each failed model (fail closed), and for
        a heuristic release unless ``accept_heuristic``."""
        if not self.passed:
            failed = "; ".join(str(v) for v in self.failures()) or "no verdict was computed"
            raise ModelNotMetError(f"release refused, the privacy model is not met: {failed}")
        if not self.formal_guarantee and not accept_heuristic:
            raise ModelNotMetError(
                f"release refused: {self.method} gives no formal privacy guarantee (its "
                f"measure is a heuristic); accept that explicitly (--accept-heuristic / "
                f"accept_heuristic=True) to write it")

    # -- writing -------------------------------------------------------------------------
    def summary(self, verbose: bool = False) -> str:
        """What a person wants to see first: rows and classes, every verdict, the
        information lost and the highest risk. ``verbose``: every metric."""
        counterfeit = f" ({self.n_counterfeits} counterfeit)" if self.n_counterfeits else ""
        groups = f", groups in {self.group_column!r}" if self.group_column else ""
        lines = [f"{self.method}: {len(self.data)} rows{counterfeit} in {self.n_classes} "
                 f"classes{groups} ({self.kind.value} release)"]
        if self.seeded:
            lines.append("  seeded: the privacy randomness came from a given seed (tests and "
                         "studies only)")
        if not self.formal_guarantee:
            lines.append(f"  status: NO FORMAL GUARANTEE: {NO_FORMAL_GUARANTEE_TEXT}")
        lines += [f"  {v}" for v in self.verdicts]
        if self.recoding is not None:
            lines.append("  " + self.recoding.describe())
        if verbose:
            lines += [f"  {k} = {_number(v)}" for k, v in self.metrics.items()]
            return "\n".join(lines)
        m = self.metrics
        if "gcp" in m:
            lines.append(f"  information loss (GCP) {m['gcp'] * 100:.2f} %")
        if "prosecutor.max" in m:
            lines.append(f"  highest re-identification risk {m['prosecutor.max'] * 100:.2f} % "
                         f"(prosecutor; the smallest class has "
                         f"{_number(1 / m['prosecutor.max'])} rows)")
        lines.append("  (--verbose or --json for every figure)")
        return "\n".join(lines)

    # -- in a notebook -------------------------------------------------------------------
    def __repr__(self) -> str:
        """One line: what a notebook or a debugger shows (the table is ``data``)."""
        verdicts = "; ".join(f"{v.model} {'passed' if v.passed else 'FAILED'}"
                             for v in self.verdicts) or "not verified"
        heuristic = ", NO FORMAL GUARANTEE" if not self.formal_guarantee else ""
        seeded = ", seeded" if self.seeded else ""
        return (f"<Release {self.method}: {len(self.data)} rows in {self.n_classes} classes "
                f"({self.kind.value}{heuristic}{seeded}); {verdicts}>")

    def _repr_html_(self) -> str:
        """A notebook's view: the verdicts, then the first released rows (escaped)."""
        rows = "".join(
            f"<tr><td>{escape(v.model)}</td><td>{escape(format_parameters(v.parameters))}"
            f"</td><td>{'PASS' if v.passed else 'FAIL'}</td>"
            f"<td>{escape(v.measure)} = {escape(measured_text(v.measured, v.required, v.passed))}"
            f"</td></tr>" for v in self.verdicts)
        heuristic = ("<p><b>NO FORMAL GUARANTEE</b>: a heuristic release.</p>"
                     if not self.formal_guarantee else "")
        return (f"<div><p><b>{escape(self.method)}</b>: {len(self.data)} rows in "
                f"{self.n_classes} classes ({escape(self.kind.value)} release)</p>{heuristic}"
                f"<table><tr><th>model</th><th>parameters</th><th>verdict</th>"
                f"<th>measured</th></tr>{rows}</table>"
                f"{self.data.head(5).to_html(escape=True, max_cols=20)}</div>")


@dataclass(frozen=True)
class Verification:
    data_id: int
    verdicts: tuple[Verdict, ...]
    class_ids: np.ndarray
    classes: pd.DataFrame


def auxiliary_path(release_path: Path, name: str) -> Path:
    """Where an auxiliary table of the release at ``release_path`` is written:
    ``ward.csv`` -> ``ward.counterfeits.csv``, ``ward.csv.gz`` -> ``ward.counterfeits.csv.gz``."""
    if output_codec(release_path) is not None:
        inner = Path(release_path.stem)
        return release_path.with_name(f"{inner.stem}.{name}{inner.suffix}"
                                      f"{release_path.suffix}")
    return release_path.with_name(f"{release_path.stem}.{name}{release_path.suffix}")


def _number(value: float) -> str:
    """Whole numbers as such (30162, not 3.016e+04); others to four significant digits."""
    return display_number(value)


def require_input_rows(release: Release, n_input_rows: int) -> None:
    """Refuse a release whose input-row mapping is not a valid one: every row that claims an
    input row names one that exists, and no input row is released twice."""
    _, rows = release.input_rows()
    if len(rows) and (rows.min() < 0 or rows.max() >= n_input_rows):
        raise InputError(f"method {release.method!r} released a row of input row "
                         f"{int(rows.max())}, but the input has {n_input_rows} rows")
    if len(np.unique(rows)) != len(rows):
        raise InputError(f"method {release.method!r} released some input rows twice")
