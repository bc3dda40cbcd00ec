"""A published release's sign-off report: the anonymize report plus the release's place
in its history (:class:`~anonkit.report.history_place.HistoryPlace`), drawn while it is
published (:class:`PublishReport`: drawn before the commit, renamed into place after the
release's file) or rebuilt later from what the history recorded
(:func:`write_recorded_report`: ``anonkit release show N --report``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path

import numpy as np
import pandas as pd

from anonkit.errors import InputError
from anonkit.history.attacks import ADVERSARIES, CLAIMED_ADVERSARIES, records_text
from anonkit.history.records import ReleaseInfo, ReleaseView
from anonkit.history.store import HistoryStore
from anonkit.models.base import Verdict
from anonkit.release import Release, recorded_formal_guarantee
from anonkit.report import render_report
from anonkit.report.history_place import AdversaryGate, HistoryPlace, PreviousRelease
from anonkit.report.html import RELEASE_DIGEST_PENDING, fill_release_digest
from anonkit.report.recorded import ReleaseFacts, render_recorded_report

__all__ = ["PublishReport", "gate_text", "history_place", "refuse_missing_folder",
           "write_recorded_report"]


def refuse_missing_folder(path: Path) -> None:
    """:class:`InputError` when the folder a report goes to does not exist."""
    folder = Path(path).resolve().parent
    if not folder.is_dir():
        raise InputError(f"the report's folder {folder} does not exist; create it first")


def gate_text(gate: Mapping[str, object] | None, seq: int) -> str:
    """What the publish-time gate found, in one line (``gate: passed (...)``)."""
    if gate is None:
        return ("gate: none (the first release of its dataset)" if seq == 1
                else "gate: not recorded (published before the history kept it)")
    judged = gate.get("judged_records", 0)
    if not gate.get("new_breaches"):
        return f"gate: passed ({judged} records judged over all their releases)"
    adversaries: Mapping[str, Mapping[str, object]] = gate.get("adversaries") or {}  # type: ignore[assignment]
    who = ", ".join(f"{a} adversary: {records_text(int(v.get('counted', 0)))}, "  # type: ignore[call-overload]
                    f"{v.get('proved', 0)} proved" for a, v in adversaries.items())
    return (f"gate: OVERRIDDEN with --allow-breach at {gate.get('at')}: "
            f"{records_text(int(gate.get('new_breaches', 0)))} newly breached "  # type: ignore[call-overload]
            f"({who})")


def history_place(dataset: str, seq: int, threat_model: str,
                  gate: Mapping[str, object] | None, previous: ReleaseInfo | None, *,
                  published: str | None = None,
                  history: str | None = None) -> HistoryPlace:
    """Release ``seq`` of ``dataset``'s place in its history, from its gate record (None:
    the first release, or one published before the history kept it)."""
    claimed = CLAIMED_ADVERSARIES.get(threat_model, tuple(ADVERSARIES))
    found: Mapping[str, Mapping[str, object]] = (gate or {}).get("adversaries") or {}  # type: ignore[assignment]
    overridden = bool(gate and gate.get("overridden"))
    lines = []
    if gate is not None:
        for adversary, description in ADVERSARIES.items():
            counts = found.get(adversary)
            counted = int(counts.get("counted", 0)) if counts else 0  # type: ignore[call-overload]
            result = "no record breached" if not counted else (
                f"{records_text(counted)} breached over all their releases "
                f"({int(counts.get('proved', 0)):,} proved)"  # type: ignore[union-attr, call-overload]
                + ("; published over the gate" if overridden else ""))
            lines.append(AdversaryGate(adversary, description, adversary in claimed, result,
                                       bool(counted)))
    return HistoryPlace(
        dataset=dataset, seq=seq, published=published,
        previous=None if previous is None else PreviousRelease(
            previous.seq, previous.created_at.isoformat(timespec="seconds"),
            previous.output_path, previous.content_hash),
        gate=gate_text(gate, seq).removeprefix("gate: "), adversaries=lines,
        overridden=overridden, threat_model=threat_model, history=history)


def _history_shown(store: HistoryStore) -> str | None:
    """The history's file, for the report; never a database URL (it may hold a password)."""
    path = store.location.sqlite_path
    return str(path) if path is not None else None


class PublishReport:
    """The sign-off report of a release being published: :meth:`draw` it once the gate has
    judged it (to a temporary name beside ``path``), :meth:`fill` in the release's digest
    once it is written, :meth:`place` it after the release is renamed into place;
    :meth:`discard` (always, in a ``finally``) removes what is left of a publish that
    failed. So a refused publish leaves no report, and a report names only a release
    that exists."""

    def __init__(self, path: Path, provenance: Mapping[str, str] | None = None) -> None:
        refuse_missing_folder(path)
        self.path = Path(path)
        self.provenance = dict(provenance or {})
        self.pending = self.path.with_name(f".{self.path.name}.{os.getpid()}.pending")
        self.drawn = False

    def draw(self, result: Release, original: pd.DataFrame, store: HistoryStore,
             dataset: str, seq: int, gate: Mapping[str, object] | None,
             previous: ReleaseInfo | None, output: Path) -> None:
        """Draw the report of ``result`` (made from ``original``), release ``seq`` of
        ``dataset`` going to ``output``, with the gate's record (None: no gate ran)."""
        place = history_place(dataset, seq, result.threat_model.value, gate, previous,
                              history=_history_shown(store))
        provenance = {"input": self.provenance.get("input", "(a DataFrame)"),
                      "release": str(output), "release SHA-256": RELEASE_DIGEST_PENDING,
                      **{k: v for k, v in self.provenance.items() if k != "input"}}
        columns = [c for c in result.schema.quasi_identifiers if c in original.columns]
        render_report(result, original[columns], self.pending, provenance=provenance,
                      history=place)
        self.drawn = True

    def fill(self, digest: str) -> None:
        if self.drawn:
            fill_release_digest(self.pending, digest)

    def place(self) -> None:
        if self.drawn:
            os.replace(self.pending, self.path)
            self.drawn = False

    def discard(self) -> None:
        with suppress(OSError):
            self.pending.unlink()


def recorded_facts(info: ReleaseInfo, view: ReleaseView) -> ReleaseFacts:
    """What the history recorded of a release, as the recorded report shows it."""
    verdicts = [Verdict(**v) for v in info.verdicts]  # type: ignore[arg-type]
    return ReleaseFacts(
        method=info.method, kind=info.release_kind, verdicts=verdicts,
        class_sizes=np.asarray(view.sizes, dtype=np.int64),
        quasi_identifiers=list(info.quasi_identifiers), sensitive=list(info.sensitive),
        n_released_rows=info.n_released_rows, n_input_rows=info.n_input_rows,
        parameters=dict(info.parameters),
        formal_guarantee=recorded_formal_guarantee(info.parameters), seeded=info.seeded,
        counterfeits=int(np.asarray(view.counterfeits).sum()),
        class_labels=view.labels,
        without_table="the history keeps the classes and their labels, never the input")


def write_recorded_report(store: HistoryStore, info: ReleaseInfo, view: ReleaseView,
                          path: Path, *, command: str | None = None) -> Path:
    """Rebuild the sign-off report of a recorded release from the history, to ``path``
    (checked against the history's files by the caller)."""
    previous = store.release(info.dataset, info.seq - 1) if info.seq > 1 else None
    place = history_place(info.dataset, info.seq, info.threat_model, info.gate, previous,
                          published=info.created_at.isoformat(timespec="seconds"),
                          history=_history_shown(store))
    provenance = {"release": info.output_path, "release SHA-256": info.content_hash,
                  "file now": info.file_status(),
                  "published with": f"anonkit {info.anonkit_version}"}
    if command is not None:
        provenance["command"] = command
    return render_recorded_report(
        recorded_facts(info, view), path, provenance=provenance, history=place,
        title=f"Release {info.seq} of {info.dataset}: {info.method}")
