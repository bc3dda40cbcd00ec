"""Publishing a release: the file and its history row appear together or not at all.

The protocol (one publish of release ``n`` of a dataset to ``OUTPUT``):

1. Validate: the key column has no missing or duplicate value; the columns and their roles
   are those of release ``n - 1``. Note ``n``: the latest release when we start, plus one.
2. Pseudonymise the keys, run the method (from the registry), require its verdicts to pass.
3. Lock this publish (:class:`anonkit.history.tempfiles.PublishFiles`: a lock file
   beside ``OUTPUT``, ``flock``-ed while the publisher lives), write the release to a
   temporary file beside ``OUTPUT`` (``.anonkit-tmp-<pid>-<random>-<name>``, created with
   mode 0600), flush it to disk, hash it (SHA-256).
4. One database transaction: insert release ``n`` (recording the temporary name as
   ``pending_path``), its classes and its records; commit. *This commit is the moment the
   release exists.* If release ``n`` was committed meanwhile by another process, the unique
   constraint on (dataset, seq) refuses it: :class:`ConcurrentPublishError`, nothing written.
5. Rename the temporary file to ``OUTPUT`` (atomic on POSIX) and flush the directory.
6. Clear ``pending_path`` (a second, tiny transaction).

Failures: before step 4 commits, the transaction rolls back (or, if the process is killed,
the database discards it: SQLite's journal, PostgreSQL's dropped connection) and the
temporary file is removed (a killed process leaves it; the next publish into the same
folder deletes the temporary files of publishes whose lock is free). The history and
``OUTPUT`` are as they were.

``OUTPUT`` may not be the history, its journal (``-journal``, ``-wal``, ``-shm``), its
secret, or the file of any recorded release (the same path, resolved, or the same file,
through a symbolic or hard link): such an output is refused before anything is done.

A kill between 4 and 6 leaves a committed release whose file is still at its temporary name,
complete and flushed, with its hash recorded. Whoever opens the history next
(:meth:`HistoryStore.recover`) finishes the job: renames the file if its hash matches and
clears ``pending_path``. We commit before renaming, not after, on purpose: the other order's
crash window leaves a *published file with no history row*, which the audit would never
see; ours leaves a recorded release whose file is not yet visible, which is only
conservative (the audit counts a release an adversary may not even have).

A sequential method's engine (:mod:`anonkit.history.engines`) is handed the past as data:
the previous release, its method state, the earlier releases' views and every input row's
pseudonym (:class:`~anonkit.history.engines.context.PublishContext`), so it can honour the
earlier releases (m-invariance keeps signatures, incremental (k,e) checks Lemma 1) without
ever touching the store; a one-shot method runs alone.
"""

from __future__ import annotations

import glob
import os
import time
import unicodedata
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from anonkit import methods
from anonkit._util.files import NamedPath, fsync_directory, refuse_collisions, sha256_file
from anonkit.data.schema import Schema
from anonkit.errors import ConcurrentPublishError, HistoryError, InputError
from anonkit.history.attacks import ADVERSARIES, CrossReleaseBreachError, judge
from anonkit.history.engines import engine_for
from anonkit.history.engines.context import PublishContext, PublishRequest
from anonkit.history.knowledge.engine import Accumulated
from anonkit.history.knowledge.state import accumulated
from anonkit.history.knowledge.state import to_bytes as knowledge_to_bytes
from anonkit.history.location import HistoryLocation
from anonkit.history.possible import EXACT_SECONDS
from anonkit.history.records import PreparedRelease, ReleaseInfo, ReleaseView, pseudonym_array
from anonkit.history.rekey import Comparison, compare, fingerprints, refusal
from anonkit.history.schema import MAX_NAME
from anonkit.history.secret import (
    PSEUDONYM_BYTES,
    canonical_keys,
    has_lone_surrogate,
    secret_path_beside,
)
from anonkit.history.sign_off import PublishReport
from anonkit.history.store import HistoryStore
from anonkit.history.summary import summarize_classes
from anonkit.history.tempfiles import PublishFiles, remove_orphans
from anonkit.metrics import measure_classes
from anonkit.release import (
    Release,
    ThreatModel,
    auxiliary_path,
    require_input_rows,
    warn_if_no_information,
)
from anonkit.verify import refuse_identifiers, verify_release, write_release

_MAX_ROWS_NAMED = 10

#: Test seam for the crash tests: a stage name -> a function called at that stage
#: (``written``: temp file complete; ``inserted``: rows inserted, not committed;
#: ``committed``: committed, file not yet renamed). Empty in normal use.
PUBLISH_HOOKS: dict[str, Callable[[], None]] = {}


# -- publishing ----------------------------------------------------------------------------


def publish(store: HistoryStore, df: pd.DataFrame, request: PublishRequest,
            output: str | os.PathLike[str], fmt: str | None = None, *,
            allow_breach: bool = False, accept_heuristic: bool = False,
            new_lineage: bool = False, shuffle: bool = True, shuffle_seed: int | None = None,
            exact_seconds: float = EXACT_SECONDS,
            timings: dict[str, float] | None = None,
            metrics: dict[str, float] | None = None,
            neutralize_formulas: bool = False,
            report: PublishReport | None = None) -> ReleaseInfo:
    """Anonymize ``df`` with ``request.method`` and publish it to ``output`` as the next
    release of ``request.dataset``, atomically with its history row (see the module).

    Fail closed: the new release is first added to the adversaries' knowledge the history
    keeps (:mod:`anonkit.history.knowledge`: no earlier release is read) and its records
    are judged over all their releases (:func:`anonkit.history.attacks.judge`, what
    ``audit`` does, focused on it); if any is breached, :class:`CrossReleaseBreachError`
    (exit code 3) is raised and nothing is written. The knowledge with the new release is
    recorded with it. On a clean history that means "this release would create a
    breach"; on a history that is already breached, intersections the new release joins
    count too, so it refuses releases of the exposed records even when they add nothing.
    A one-shot method (``mondrian``) re-run on a changing table is refused almost always:
    that is the point. ``allow_breach=True`` records such a release anyway (to study it
    with the audit, or when the steward accepts the risk); the audit still reports it.

    A release that shares records with another dataset of the history is refused
    (:class:`LineageError`, exit code 3) unless ``new_lineage=True`` declares it a separate
    lineage, which is recorded with it (see :func:`check_lineage`); ``allow_breach`` does not
    waive this.

    The released rows are shuffled with operating-system entropy (``shuffle=False``
    keeps the method's order; ``shuffle_seed`` is for tests only): in the input's order a
    person's rows would line up across releases.

    ``exact_seconds``: how long the gate may spend deciding exactly what the qi adversary
    can deduce about records the bounds leave undecided (see
    :mod:`anonkit.history.possible`); those it cannot decide in time count as exposed.

    ``timings``, when given, receives the seconds spent per phase: ``validate``,
    ``pseudonyms``, ``method``, ``summarize``, ``lineage`` (the check of records shared with
    other datasets), ``knowledge`` (reading the kept knowledge, adding the release, the
    gate, and packing the knowledge to keep), ``write`` (the file), ``hash`` (of the file),
    ``record`` (the history transaction), ``rename``. ``metrics``, when given, receives
    the release's utility and risk figures (the history keeps verdicts, not these).
    ``neutralize_formulas``: see :func:`anonkit.verify.write_release`. ``report``: the
    sign-off report to draw once the gate has judged the release, put in place with it.
    """
    clock = _Clock(timings)
    output = Path(output).absolute()
    engine = engine_for(request.method)
    declared = methods.get(request.method)
    request = replace(request, options=declared.parse_options(request.options, "python"))
    # the method's own switch (``--accept-heuristic``) accepts it as the parameter does
    accept_heuristic = accept_heuristic or request.options.get("accept_heuristic") is True
    check_request(df.columns, request, output)
    check_key_column(df, request.key)
    store.refuse_if_tampered(f"publishing to {request.dataset!r}")
    previous = store.latest(request.dataset)
    schema = _schema(df, request)
    if previous is not None:
        _check_same_roles(previous, schema, request)
    reported = [(report.path, "report")] if report is not None else []
    refuse_history_output(release_writes(output, declared.auxiliary) + reported, store)

    clock.lap("validate")
    pseudonyms, persons = store.both_pseudonyms(request.dataset, df[request.key])
    prints = fingerprints(df, [*schema.quasi_identifiers, *schema.sensitive],
                          store.secret.value)
    clock.lap("pseudonyms")
    seq = previous.seq + 1 if previous is not None else 1
    context = PublishContext(
        request.dataset, seq, schema, pseudonyms, previous,
        previous_state=(store.method_state(previous)
                        if previous is not None and declared.sequential else None),
        load_previous=lambda: store.load(previous) if previous is not None else None,
        load_earlier=lambda: release_views(store, request.dataset))
    result = engine(df, request, context)
    clock.lap("method")
    if shuffle:  # the input's order would line a person's rows up across releases
        seed = request.options.get("seed")
        result.shuffle_rows(shuffle_seed if shuffle_seed is not None
                            else seed if isinstance(seed, int) else None)
    # the boundary: regroup from the released values, evaluate the models, refuse
    # identifiers and the key, whatever the method did
    verify_release(result)
    measure_classes(result)
    warn_if_no_information(result)
    result.require_passed(accept_heuristic)
    refuse_identifiers(result, result.data.columns, forbidden=[request.key])
    require_input_rows(result, len(df))
    if metrics is not None:
        metrics.update(result.metrics)
    clock.lap("verify")
    release = prepare_release(result, request, seq, pseudonyms, len(df), persons=persons,
                              fingerprints=prints)
    clock.lap("summarize")
    # read before the check: whatever is recorded after it, the commit refuses to overlook
    release.lineage_mark = store.last_release_id()
    release.lineage = check_lineage(store, release, new_lineage)
    release.lineage["rekey"] = check_rekey(store, release, previous, new_lineage)
    clock.lap("lineage")
    _refuse_overtaken(store, request.dataset, seq)
    # what the adversaries know with this release: the gate judges every record (a record
    # that joined or left is disclosed by the difference), the history keeps it
    known = (accumulated(store, request.dataset) if previous is not None
             else Accumulated(schema.sensitive))
    known.add(release.view())
    if previous is not None:
        release.gate = gate(known, release, allow_breach, exact_seconds)
    release.knowledge_state = knowledge_to_bytes(known)
    clock.lap("knowledge")
    if report is not None:  # drawn before anything is written: a refusal leaves none
        report.draw(result, df, store, request.dataset, seq, release.gate, previous, output)
        clock.lap("report")

    # again: releases may have been recorded meanwhile (and with the tables the method made)
    refuse_history_output(release_writes(output, tuple(result.auxiliary)) + reported, store)
    _remove_orphans(output, store)
    try:
        files = PublishFiles(output.parent)
    except OSError as exc:  # a folder that refuses writes even where access() said yes
        raise InputError(f"cannot write to the output folder {output.parent}: "
                         f"{(exc.strerror or str(exc)).lower()}; choose another folder"
                         ) from None
    tmp = files.path(output.name)
    aux_tmp = {name: files.path(f"{output.name}.{name}") for name in result.auxiliary}
    committed = renamed = False
    try:
        for path in (tmp, *aux_tmp.values()):
            files.reserve(path)  # mode 0600: the release keeps it
        write_release(result, tmp, fmt=fmt, accept_heuristic=accept_heuristic,
                      forbidden=[request.key], auxiliary_paths=aux_tmp,
                      neutralize_formulas=neutralize_formulas)
        clock.lap("write")
        release.content_hash = sha256_file(tmp)
        release.file_size = tmp.stat().st_size
        release.output_path = str(output)
        release.pending_path = str(tmp)
        if report is not None:
            report.fill(release.content_hash)
        clock.lap("hash")
        _stage("written")
        files.mark(str(store.location))
        info = store.commit_release(release, before_commit=lambda: _stage("inserted"))
        committed = True
        clock.lap("record")
        _stage("committed")
        try:
            os.replace(tmp, output)
        except FileNotFoundError:  # a concurrent recover() renamed it for us
            if sha256_file(output) != release.content_hash:
                raise
        # the auxiliary tables follow (the history holds them too, should this fail)
        for name, aux in aux_tmp.items():
            os.replace(aux, auxiliary_path(output, name))
        fsync_directory(output.parent)
        renamed = True
        store.clear_pending(info.id)
        if report is not None:
            report.place()
        clock.lap("rename")
    finally:
        if report is not None:
            report.discard()
        if not committed:
            for leftover in (tmp, *aux_tmp.values()):
                with suppress(OSError):
                    leftover.unlink()
        # a committed release whose file could not be moved stays pending, with its lock
        # file naming the history: the next open of the history finishes it
        files.close(keep=committed and not renamed)
    return store.release(request.dataset, seq)


def release_views(store: HistoryStore, dataset: str
                  ) -> list[tuple[ReleaseInfo, ReleaseView]]:
    """Every release of ``dataset``, oldest first, with its view (values, no labels)."""
    return [(info, store.load(info, labels=False)) for info in store.releases(dataset)]


def prepare_release(result: Release, request: PublishRequest, seq: int,
                    pseudonyms: Sequence[bytes], n_input_rows: int, *,
                    persons: Sequence[bytes] | None = None,
                    fingerprints: np.ndarray | None = None) -> PreparedRelease:
    """The history rows of a release: classes as an adversary sees them (counterfeit rows
    counted in their class), and the records -- the input rows behind released rows, as
    pseudonym -> class, sorted by pseudonym, the order the primary key index wants. A
    counterfeit or synthetic row has no record. ``persons``: every input row's
    history-wide pseudonym (kept with its record); ``fingerprints``: every input row's
    content fingerprint (see :mod:`anonkit.history.rekey`)."""
    schema = result.schema
    class_rows, class_values, row_entries = summarize_classes(
        result.data, result.class_ids, result.classes, schema.quasi_identifiers,
        schema.sensitive)
    positions, rows = result.input_rows()
    all_keys = np.array(pseudonyms, dtype=f"S{PSEUDONYM_BYTES}")
    order = _byte_order(all_keys[rows])
    every_key = np.empty(len(pseudonyms), dtype=object)
    every_key[:] = pseudonyms
    keys = every_key[rows[order]]
    record_persons = None
    if persons is not None:
        every_person = np.empty(len(persons), dtype=object)
        every_person[:] = list(persons)
        record_persons = every_person[rows[order]].tolist()
    record_classes = np.asarray(result.class_ids, dtype=np.int64)[positions][order]
    requirements = [r.to_dict() for m in result.models
                    for r in m.cross_release_requirements()]
    counterfeits = result.counterfeits_per_class()
    # every record's released value, as its entry in the multisets (kept encrypted)
    record_values = {attr: entries[positions][order]
                     for attr, entries in zip(schema.sensitive, row_entries, strict=True)}
    # that a seed was used is recorded, never the seed: it would let a reader replay the
    # privacy randomness (the shuffle, counterfeits' places, permutations)
    parameters = {k: v for k, v in result.parameters.items() if k != "seed"}
    seeded = result.seeded or result.parameters.get("seed") is not None
    return PreparedRelease(
        dataset=request.dataset, seq=seq, method=result.method,
        parameters=parameters, key_column=request.key,
        columns=schema.describe(), quasi_identifiers=schema.quasi_identifiers,
        sensitive=schema.sensitive,
        models=[{"model": v.model, "parameters": dict(v.parameters)} for v in result.verdicts],
        verdicts=[v.to_dict() for v in result.verdicts], n_input_rows=n_input_rows,
        n_released_rows=len(result.data), class_rows=class_rows, class_values=class_values,
        record_hashes=keys.tolist(), record_classes=record_classes.tolist(),
        release_kind=result.kind.value, threat_model=result.threat_model.value,
        requirements=requirements, seeded=seeded, group_column=result.group_column,
        counterfeits=counterfeits.tolist() if counterfeits.any() else None,
        method_state=result.method_state, auxiliary=dict(result.auxiliary),
        record_values=record_values, record_persons=record_persons,
        record_fingerprints=None if fingerprints is None
        else np.asarray(fingerprints, dtype=np.uint64)[rows[order]])


def _byte_order(keys: np.ndarray) -> np.ndarray:
    """The stable order of 16-byte pseudonyms by their bytes: by their first 8 bytes as a
    big-endian integer (one integer sort, twice as fast as sorting the strings), then, for
    the rare equal prefixes, by all 16."""
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    words = np.ascontiguousarray(keys, dtype="S16").view(">u8").reshape(-1, 2)
    order = np.argsort(words[:, 0], kind="stable")
    first = words[order, 0]
    if (first[1:] == first[:-1]).any():
        order = np.lexsort((words[:, 1], words[:, 0]))
    return order


class LineageError(CrossReleaseBreachError):
    """A release shares records with another dataset, and was not declared a new lineage."""


def check_lineage(store: HistoryStore, release: PreparedRelease,
                  new_lineage: bool) -> dict[str, object]:
    """The lineage gate: refuse a release that shares records with another dataset of the
    history, unless ``new_lineage``; return the decision to record with the release.

    Records are matched by their history-wide pseudonym (the per-dataset ones differ by
    design). A release of another dataset kept without them (migrated from version 1)
    counts as sharing records: whether it does cannot be told.

    Why refuse rather than audit the release against the other dataset too: the audit
    compares the releases of one table (its quasi-identifiers, sensitive attributes and
    cross-release requirements); another dataset may have other columns, and a release
    combined with it may disclose what no requirement of either measures. Releasing the
    same people under a second name is the gate's bypass; publishing them as the next
    release of their dataset is what makes the gate audit them. So the default fails
    closed, and a steward who means a separate publication (another table of the same
    people, a key space that merely overlaps) says so with ``new_lineage``. That decision
    is recorded (``lineage`` of the release: the datasets shared with, how many records, in
    which releases), shown by ``show`` and by ``audit`` of either dataset, and it covers
    the pair: later releases of either dataset are not refused for sharing records with
    the other.
    """
    shared = store.shared_records(release.dataset, release.record_persons or [])
    separated = _separated(store, release.dataset)
    undeclared = [s for s in shared if s.dataset not in separated]
    if undeclared and not new_lineage:
        shown = "; ".join(
            f"{s.records} records with dataset {s.dataset!r}"
            + (f" (releases {_ranges_text(s.releases)})" if s.releases else "")
            + (f", and possibly more with its releases {_ranges_text(s.unmatched_releases)} "
               f"(migrated from an older history: they cannot be matched)"
               if s.unmatched_releases else "")
            for s in undeclared[:3])
        more = f" and {len(undeclared) - 3} more datasets" if len(undeclared) > 3 else ""
        raise LineageError(
            f"release {release.seq} of {release.dataset!r} was refused: it shares {shown}"
            f"{more}, and releases of different datasets are not audited together, so "
            f"publishing the same records under another dataset name would bypass the "
            f"cross-release gate. Nothing was written. Publish it as the next release of "
            f"that dataset (the gate then audits it), or, if it is a separate publication "
            f"whose combination with that dataset you accept, pass --new-lineage (the "
            f"decision is recorded, and shown by `show` and `audit`)")
    entries = []
    for s in shared:
        entry = s.to_dict()
        declared = separated.get(s.dataset)
        entry["separated_by"] = (declared if declared is not None
                                 else {"dataset": release.dataset, "seq": release.seq})
        entries.append(entry)
    return {"new_lineage": bool(new_lineage), "shared": entries}


def check_rekey(store: HistoryStore, release: PreparedRelease, previous: ReleaseInfo | None,
                new_lineage: bool) -> list[dict[str, object]]:
    """Refuse a re-keyed export (see :mod:`anonkit.history.rekey`) unless ``new_lineage``;
    return the comparisons, to record with the release. Compared: the dataset's previous
    release (by key and content), and the latest release of every other dataset with the
    same columns, not declared a separate lineage (by person and content)."""
    prints = release.record_fingerprints
    if prints is None:
        return []
    keys = pseudonym_array(release.record_hashes)
    comparisons: list[tuple[Comparison, bool]] = []
    if previous is not None:
        kept = store.release_fingerprints(previous)
        if kept is not None:
            comparisons.append((compare(keys, prints, kept[0], kept[2],
                                        f"release {previous.seq} of {previous.dataset!r}"),
                                True))
    columns = sorted([*release.quasi_identifiers, *release.sensitive])
    persons = (pseudonym_array(release.record_persons)
               if release.record_persons is not None else None)
    separated = _separated(store, release.dataset)
    for dataset in store.datasets():
        latest = store.latest(dataset) if dataset != release.dataset else None
        if latest is None or persons is None or dataset in separated or \
                sorted([*latest.quasi_identifiers, *latest.sensitive]) != columns:
            continue
        kept = store.release_fingerprints(latest)
        if kept is not None and kept[1] is not None:
            comparisons.append((compare(persons, prints, kept[1], kept[2],
                                        f"release {latest.seq} of {dataset!r}"), False))
    judged = [(c, refusal(c, same)) for c, same in comparisons]
    refused = [why for _, why in judged if why is not None]
    if refused and not new_lineage:
        why = refused[0]
        raise LineageError(
            f"release {release.seq} of {release.dataset!r} was refused as a re-keyed "
            f"export: {why}. Nothing was written. Publish it with its keys written as "
            f"before; if it really starts a new lineage (a new key space, another table), "
            f"pass --new-lineage (the decision is recorded)")
    return [c.to_dict() | {"re_keyed": why is not None} for c, why in judged]


def _separated(store: HistoryStore, dataset: str) -> dict[str, dict[str, object]]:
    """The datasets declared separate lineages from ``dataset`` (either way round), each
    with the release whose ``new_lineage`` declared it."""
    out: dict[str, dict[str, object]] = {}
    for info in store.releases():
        lineage = info.lineage or {}
        if not lineage.get("new_lineage"):
            continue
        for entry in lineage.get("shared") or []:  # type: ignore[union-attr]
            other = str(entry.get("dataset"))
            sep = entry.get("separated_by") or {}
            if sep.get("dataset") != info.dataset or sep.get("seq") != info.seq:
                continue  # inherited, not declared here
            if info.dataset == dataset:
                out.setdefault(other, {"dataset": info.dataset, "seq": info.seq})
            elif other == dataset:
                out.setdefault(info.dataset, {"dataset": info.dataset, "seq": info.seq})
    return out


def _ranges_text(numbers: Sequence[int]) -> str:
    numbers = sorted(numbers)
    return f"{numbers[0]}..{numbers[-1]}" if len(numbers) > 2 else ", ".join(map(str, numbers))


def refusal_advice(method: str, columns: Mapping[str, Mapping[str, str]]) -> str:
    """What a steward can do about a release the gate refused, fitting the method just used
    and the columns (roles and kinds, as :meth:`Schema.describe` gives them): never the
    method that was refused, never one the table cannot feed (m-invariance and (k,e) need
    a sensitive attribute, (k,e) a numeric one, the stream tree one whole-number
    quasi-identifier and no sensitive attribute to protect)."""
    sensitive = [c["kind"] for c in columns.values() if c.get("role") == "sensitive"]
    quasi = [c["kind"] for c in columns.values() if c.get("role") == "quasi_identifier"]
    fitting = {
        "m-invariance": (len(sensitive) == 1,
                         f"for a{' categorical' if sensitive == ['categorical'] else ''} "
                         f"sensitive attribute"),
        "ke": (sensitive == ["numeric"], "for a numeric sensitive attribute"),
        "stream-tree": (not sensitive and quasi == ["numeric"],
                        "for one whole-number quasi-identifier"),
    }
    others = [f"--method {name} {why}" for name, (fits, why) in fitting.items()
              if fits and name != method]
    instead = f" ({', '.join(others)})" if others else ""
    if method in fitting:
        # the sequential method itself was refused: re-running it cannot help
        return (f"Re-running {method} will not help: keep the records that left one more "
                f"release, or publish the table as a new dataset (--dataset NAME "
                f"--new-lineage)"
                + (f", or publish with another method that honours the history{instead}"
                   if others else ""))
    if not others:
        return ("No sequential method fits these columns (m-invariance and ke need one "
                "sensitive attribute, the stream tree one whole-number quasi-identifier): "
                "publish the table as a new dataset (--dataset NAME --new-lineage)")
    return f"Publish with a method that honours the history{instead}"


class GateOverriddenWarning(UserWarning):
    """A release was published with ``allow_breach`` over a breach the gate found."""


def gate(known: Accumulated, release: PreparedRelease, allow_breach: bool,
         exact_seconds: float = EXACT_SECONDS) -> dict[str, object]:
    """The publish-time gate: the audit's judgement of every record of the dataset with
    the new release added (``known``). Records breached by an adversary the releases claim
    to resist, and not already accepted by an earlier override, refuse the release
    (:class:`CrossReleaseBreachError`, one line; the report rides on the error) unless
    ``allow_breach``: then a :class:`GateOverriddenWarning` names them, they are marked
    accepted in ``known``, and the returned record -- kept with the release, in the same
    transaction -- says so. When a new breach is proved on the values left, the gate stops
    there (the findings not ruled out are not computed: the counts it records are then at
    least the true ones, and ``complete`` is False)."""
    # a one-shot method re-run on a changed table breaches almost always: look for a proof
    # on the values left first (cheap); a sequential method's release is meant to pass, so
    # it is judged in full at once (either way the same records are refused)
    one_shot = release.threat_model == ThreatModel.ONE_SHOT
    report = judge(known, settle_when_proved=False,
                   stop_at_proof=~known.accepted if one_shot else None,
                   exact_seconds=exact_seconds)
    scope = report.overall
    breached = scope.breached_records if scope is not None else np.zeros(0, dtype=np.int64)
    new = breached[~known.accepted[breached]]
    # per adversary the judgement's own counts: records exposed, of them counted (under a
    # threat model that claims the adversary), and proved
    by_adversary = {a: {"exposed": scope.breached_by.get(a, 0),
                        "counted": scope.counted_by.get(a, 0),
                        "proved": scope.proved_by.get(a, 0)}
                    for a in ADVERSARIES if scope is not None and scope.counted_by.get(a, 0)}
    record: dict[str, object] = {
        "judged_records": scope.records_compared if scope else 0,
        "breached_records": len(breached), "new_breaches": len(new),
        "adversaries": by_adversary, "overridden": bool(len(new)) and allow_breach,
        "complete": scope.complete if scope else True,
        "at": datetime.now(UTC).isoformat(timespec="seconds")}
    if not len(new):
        return record
    names = " and ".join(f"the {a} adversary" for a in by_adversary) or "an adversary"
    records = f"{len(new)} record{'s' if len(new) != 1 else ''}"
    if not allow_breach:
        proved = any(f.proved for f in (scope.findings if scope else []) if not f.outside_claim)
        hint = ("" if proved else " (none proved: the exact check ran out of time or the "
                "groups were too large; --exact-seconds gives it more)")
        raise CrossReleaseBreachError(
            f"release {release.seq} of {release.dataset!r} refused: with the earlier releases "
            f"it would disclose {records} to {names}{hint}; nothing was written. "
            f"{refusal_advice(release.method, release.columns)}; --json shows the findings",
            report=report)
    warnings.warn(GateOverriddenWarning(
        f"release {release.seq} of {release.dataset!r} published over the gate "
        f"(--allow-breach): it discloses {records} to {names}; the override is "
        f"recorded with the release, and `anonkit release audit` reports them"), stacklevel=3)
    known.accepted[new] = True
    return record


# -- validation ----------------------------------------------------------------------------


def _refuse_overtaken(store: HistoryStore, dataset: str, seq: int) -> None:
    """Refuse a publish another one overtook: it committed release ``seq`` of ``dataset``
    while this one ran, so this release was made and judged without it. (The commit
    refuses it too; this says why, in the user's words.)"""
    latest = store.latest(dataset)
    if latest is not None and latest.seq >= seq:
        raise ConcurrentPublishError(
            f"another publish committed release {latest.seq} of {dataset!r} while this one "
            f"ran; nothing was written. Publish again: the gate then judges this release "
            f"with that one")


def check_request(columns: Sequence[object], request: PublishRequest, output: Path) -> None:
    """What a publish refuses from its request alone, cheaply, before anything is read or
    opened: the dataset's name, the columns' names, a key column the table has not, and the
    output's folder. (The key's values are :func:`check_key_column`'s.)"""
    _check_dataset_name(request.dataset)
    _check_column_names(request)
    if request.key not in columns:
        raise InputError(f"key column {request.key!r} is not in the table; it has: "
                         f"{', '.join(map(str, columns))}")
    output = Path(output).absolute()
    if not output.parent.is_dir():
        raise InputError(f"output folder {output.parent} does not exist; create it first")
    if output.is_dir():
        raise InputError(f"output path {output} is a folder; give a file name")
    if not os.access(output.parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot write to the output folder {output.parent}: permission "
                         f"denied; choose another folder")


def check_key_column(df: pd.DataFrame, key: str) -> None:
    """The record key (a column of ``df``: see :func:`check_request`) must name every row
    once: refuse missing and duplicate values, naming the rows (0-based data rows, as pandas
    numbers them)."""
    column = df[key]
    if column.dtype == object:
        broken = [i for i, v in enumerate(column.tolist())
                  if isinstance(v, str) and has_lone_surrogate(v)]
        if broken:
            raise InputError(f"key column {key!r} has {len(broken)} values that are not valid "
                             f"Unicode text (they hold a lone surrogate), in rows "
                             f"{_rows(np.asarray(broken))}; fix the file's encoding")
    blank = column.isna().to_numpy()
    if column.dtype == object:
        blank |= column.astype(str).str.strip().eq("").to_numpy()
    if blank.any():
        rows = np.flatnonzero(blank)
        raise InputError(f"key column {key!r} has {len(rows)} missing values, in rows "
                         f"{_rows(rows)}; every record needs a key")
    # duplicates as the history sees keys: "a" and "a ", 7 and "7" are one record
    canonical = pd.Series(canonical_keys(column), index=column.index)
    dup = canonical.duplicated(keep=False).to_numpy()
    if dup.any():
        # rows, never the key values: a key names a person
        groups = pd.Series(np.flatnonzero(dup)).groupby(canonical[dup].to_numpy(), sort=False)
        shown = [f"rows {_rows(rows.to_numpy())}" for _, rows in list(groups)[:_MAX_ROWS_NAMED]]
        more = f" and {groups.ngroups - _MAX_ROWS_NAMED} more values" \
            if groups.ngroups > _MAX_ROWS_NAMED else ""
        raise InputError(f"key column {key!r} has duplicate values, {groups.ngroups} "
                         f"repeated ({'; '.join(shown)}{more}: each group of rows holds one "
                         f"value); the key must name each record once")


def _rows(rows: np.ndarray) -> str:
    shown = ", ".join(str(int(r)) for r in rows[:_MAX_ROWS_NAMED])
    return shown + (f" and {len(rows) - _MAX_ROWS_NAMED} more" if len(rows) > _MAX_ROWS_NAMED
                    else "")


def _check_dataset_name(name: str) -> None:
    """1 to 200 printable characters: no control or format characters (bidirectional
    overrides such as U+202E would make ``list`` show another name than the one stored),
    no lone surrogates, no line or paragraph separators."""
    if not isinstance(name, str) or not name or not name.strip() or len(name) > MAX_NAME \
            or any(unicodedata.category(c) in _UNPRINTABLE for c in name):
        bad = [f"U+{ord(c):04X}" for c in str(name)
               if unicodedata.category(c) in _UNPRINTABLE][:3]
        why = f" (it holds {', '.join(bad)})" if bad else ""
        raise InputError(f"invalid dataset name {name!r}{why}: give 1 to {MAX_NAME} printable "
                         f"characters, without control, format or bidirectional characters")


#: control, format (bidi overrides, zero-width), surrogate and separator characters
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _check_column_names(request: PublishRequest) -> None:
    """Names the history stores in columns of at most 200 characters."""
    for what, names in (("key column", [request.key]), ("sensitive column",
                                                        list(request.sensitive))):
        for name in names:
            if len(str(name)) > MAX_NAME:
                raise InputError(f"the {what} name {str(name)[:40]!r}... has {len(str(name))} "
                                 f"characters; the history keeps names of at most {MAX_NAME}: "
                                 f"rename the column")


def _schema(df: pd.DataFrame, request: PublishRequest) -> Schema:
    roles = {"quasi-identifier": request.quasi_identifiers, "sensitive": request.sensitive}
    for role, names in roles.items():
        if request.key in names:
            raise InputError(f"the key column {request.key!r} is also given as {role}; the "
                             f"key identifies records and is never released: give it one role")
    identifiers = [*request.identifiers]
    if request.key not in identifiers:
        identifiers.append(request.key)
    return Schema.from_roles(df, request.quasi_identifiers, list(request.sensitive),
                             identifiers, kinds=request.kinds, hierarchies=request.hierarchies,
                             orders=request.orders or None)


def _check_same_roles(previous: ReleaseInfo, schema: Schema, request: PublishRequest) -> None:
    """A release must have the columns, roles and kinds of the previous one (and the same
    key column): otherwise the releases do not describe the same records comparably."""
    problems = []
    if previous.key_column != request.key:
        problems.append(f"key column {request.key!r} (was {previous.key_column!r})")
    now, before = schema.describe(), previous.columns
    added = [c for c in now if c not in before]
    removed = [c for c in before if c not in now]
    if added:
        problems.append(f"new columns {', '.join(map(repr, added))}")
    if removed:
        problems.append(f"missing columns {', '.join(map(repr, removed))}")
    for name in now:
        if name in before and now[name] != before[name]:
            was, is_ = before[name], now[name]
            problems.append(f"column {name!r} is {is_['role']}/{is_['kind'] or '-'} (was "
                            f"{was['role']}/{was['kind'] or '-'})")
    if problems:
        raise HistoryError(f"this release of {previous.dataset!r} differs from release "
                           f"{previous.seq}: {'; '.join(problems)}. Every release of a dataset "
                           f"must have the same columns and roles, so that the cross-release "
                           f"audit can compare them; give this release the columns and roles "
                           f"of the earlier ones. Nothing was written")


class _Clock:
    def __init__(self, timings: dict[str, float] | None) -> None:
        self.timings = timings
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        if self.timings is not None:
            self.timings[name] = self.timings.get(name, 0.0) + now - self.last
        self.last = now


# -- files ---------------------------------------------------------------------------------


def _stage(name: str) -> None:
    hook = PUBLISH_HOOKS.get(name)
    if hook is not None:
        hook()


def _remove_orphans(output: Path, store: HistoryStore) -> None:
    """Delete the temporary files that ended publishes left in ``output``'s folder (see
    :mod:`anonkit.history.tempfiles`): never a live publisher's (its lock is held), nor
    one the history still points to (that one is recovered on open)."""
    remove_orphans(output.parent, str(store.location),
                   lambda: [str(info.pending_path) for info in store.pending()])


def history_files(location: HistoryLocation, secret_file: Path | None = None) -> list[Path]:
    """The files of a history that no release may overwrite: the SQLite file, its journals
    and its upgrade backups, its secret (beside it, or ``secret_file``)."""
    out = [] if secret_file is None else [Path(secret_file)]
    path = location.sqlite_path
    if path is not None:
        out += [path, *(path.with_name(path.name + suffix) for suffix in _JOURNALS),
                secret_path_beside(path)]
        with suppress(OSError):
            out += sorted(path.parent.glob(f"{glob.escape(path.name)}.v*-backup*"))
    return out


_JOURNALS = ("-journal", "-wal", "-shm")


def protected_files(store: HistoryStore | None = None, *,
                    location: HistoryLocation | None = None,
                    secret_file: Path | None = None) -> list[NamedPath]:
    """What no output may be, named for a message: the history, its journals, backups and
    secret, and the file of every release it records (any dataset; the auxiliary tables
    and a pending temporary file too)."""
    protected: list[NamedPath] = []
    if store is not None:
        location = store.location
        if store.secret.path is not None:
            protected.append((store.secret.path, "the history's secret"))
        protected += [(Path(p), what) for p, what in store.recorded_files()]
    if location is not None:
        for p in history_files(location, secret_file):
            what = ("the history's secret" if p.name.endswith(".secret") or p == secret_file
                    else "the history" if p == location.sqlite_path
                    else "a backup of the history" if "-backup" in p.name
                    else "the history's journal")
            protected.append((p, what))
    return protected


def release_writes(output: Path, auxiliary: Sequence[str]) -> list[NamedPath]:
    """The files publishing a release to ``output`` writes: it, and each auxiliary table
    beside it."""
    return [(output, "release"), *((auxiliary_path(output, name), f"{name} table")
                                   for name in auxiliary)]


def refuse_history_output(writes: Sequence[NamedPath], store: HistoryStore | None = None, *,
                          location: HistoryLocation | None = None,
                          secret_file: Path | None = None) -> None:
    """Refuse (:class:`InputError`, nothing done) an output that is the history, its
    journal, backup or secret, or the file of a release it records (see
    :func:`anonkit._util.files.refuse_collisions`: by resolved path, and by identity when
    both exist, so neither a symbolic nor a hard link gets past)."""
    refuse_collisions(writes, protected_files(store, location=location,
                                              secret_file=secret_file))
