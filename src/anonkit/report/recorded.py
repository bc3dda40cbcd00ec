"""The report of a release known by its classes only (:func:`render_recorded_report`): a
release the
history recorded (``anonkit release show N --report``), or one the Dask engine wrote
fragment by fragment (``anonymize --engine dask --report``).

The recorded report has the anonymize report's sections but the before/after
distributions, which need the input table: the same summary, status badge, privacy
models, class sizes, risk, utility figures (when measured) and definitions.
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from anonkit.models.base import Verdict
from anonkit.release import NO_INFORMATION, fully_generalized
from anonkit.report.history_place import HistoryPlace, history_section
from anonkit.report.html import (
    _class_size_section,
    _glossary,
    _int,
    _kv_table,
    _pct,
    _required_k,
    _risk_section,
    _stat,
    _utility_section,
    _value,
    _verdict_table,
    _write_page,
    release_subtitle,
)
from anonkit.report.page import section

__all__ = ["ReleaseFacts", "render_recorded_report"]

e = html.escape


@dataclass(frozen=True)
class ReleaseFacts:
    """A release known by its classes: what the recorded report shows."""

    method: str
    kind: str
    verdicts: Sequence[Verdict]
    class_sizes: np.ndarray  # rows per class, as an adversary groups them
    quasi_identifiers: Sequence[str]
    sensitive: Sequence[str]
    n_released_rows: int
    n_input_rows: int | None = None
    parameters: Mapping[str, object] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)
    formal_guarantee: bool = True
    seeded: bool = False
    counterfeits: int = 0
    #: one row per class (the ``class_sizes`` order), one column per quasi-identifier:
    #: the released labels, shown for each model's weakest class
    class_labels: pd.DataFrame | None = None
    #: why the before/after distributions are not in this report
    without_table: str = "the input table is not at hand"


def render_recorded_report(facts: ReleaseFacts, path: str | Path, *,
                           title: str | None = None,
                           provenance: Mapping[str, str] | None = None,
                           history: HistoryPlace | None = None) -> Path:
    """Write the report of a release known by its classes (``facts``) to ``path``,
    atomically; ``history``: its place in the history (a section after the summary).
    Returns the path."""
    t0 = time.perf_counter()
    sizes = np.asarray(facts.class_sizes, dtype=np.int64)
    worst = [_labels_of(facts.class_labels, v.worst_class) for v in facts.verdicts]
    metrics = dict(facts.metrics)
    sections = [
        _summary(facts, sizes),
        history_section(history) if history is not None else "",
        section("verdicts", "Privacy models",
                _verdict_table(facts.verdicts, [None] * len(facts.verdicts), worst)
                + '<p class="note">As recorded when the release was verified: measured '
                  "on the released table as an adversary groups it.</p>"),
        _class_size_section(sizes, _required_k(facts.verdicts)) if len(sizes) else "",
        _risk_section(sizes, float(metrics.get("risk_threshold", 0.2))) if len(sizes)
        else "",
        _utility_section(metrics, facts.quasi_identifiers) if metrics else "",
        _glossary(),
    ]
    nav = [("summary", "Summary"), *([("history", "History")] if history else []),
           ("verdicts", "Privacy models"), ("classes", "Classes"), ("risk", "Risk"),
           *([("utility", "Utility")] if metrics else []), ("glossary", "Definitions")]
    subtitle = release_subtitle(provenance, facts.method, facts.kind,
                                f"{_int(facts.n_released_rows)} rows released", t0,
                                formal_guarantee=facts.formal_guarantee, seeded=facts.seeded)
    cautions = [NO_INFORMATION] if fully_generalized(facts.quasi_identifiers, metrics) else []
    return _write_page(path, title or f"Anonymization report: {facts.method}", subtitle,
                       facts.verdicts, nav, [s for s in sections if s],
                       formal_guarantee=facts.formal_guarantee, warnings=cautions)


def _labels_of(labels: pd.DataFrame | None, row: int) -> dict[str, object]:
    if labels is None or not 0 <= row < len(labels):
        return {}
    return {str(c): labels.iloc[row][c] for c in labels.columns}


def _summary(facts: ReleaseFacts, sizes: np.ndarray) -> str:
    m = facts.metrics
    cards = "".join([
        _stat("Rows in", _int(facts.n_input_rows) if facts.n_input_rows is not None else "—"),
        _stat("Rows released", _int(facts.n_released_rows),
              f"{_int(facts.counterfeits)} counterfeit" if facts.counterfeits else ""),
        _stat("Classes", _int(len(sizes))),
        _stat("Smallest class", _int(sizes.min()) if len(sizes) else "—"),
        _stat("GCP", _pct(m["gcp"]) if "gcp" in m else "—", "information loss"),
        _stat("Highest risk", _pct(1 / sizes.min()) if len(sizes) and sizes.min() else "—",
              "prosecutor"),
    ])
    params = {k: v for k, v in facts.parameters.items()
              if k not in ("quasi_identifiers", "sensitive", "forms", "seed")
              and v is not None and v != {} and v != []}
    rows = [("Quasi-identifiers", _value(list(facts.quasi_identifiers))),
            ("Sensitive", _value(list(facts.sensitive))),
            ("Release kind", e(facts.kind))]
    if facts.seeded:
        rows.append(("Randomness", "seeded (tests and studies only): reproducible"))
    rows += [(str(k).replace("_", " "), _value(v)) for k, v in params.items()]
    note = (f'<p class="note">Not in this report: the before/after distribution of each '
            f"quasi-identifier, which needs the input table ({e(facts.without_table)}).</p>")
    return section("summary", "Summary",
                   f'<div class="cards">{cards}</div><div class="card"><h3>Parameters</h3>'
                   f"{_kv_table(rows)}</div>{note}")
