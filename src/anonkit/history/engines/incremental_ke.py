"""Incremental (k,e)-anonymity: the next release of a dataset whose groups never
intersect an earlier release's below k values or range e.

By default (``--history-check placeholders``) groups last: each keeps its multiset for
good, the values of members who left published as placeholder rows, and newcomers form
groups of their own (:func:`anonkit.algorithms.ke_placeholders.placeholder_partition`;
its docstring says why). ``pruned`` and ``naive`` are the chapter's covering partition
(Srisungsittisunti and Natwichai; spec 004,
:func:`anonkit.algorithms.ke_partition.incremental_partition`), which refuses, naming
counts only, when departures leave no partition that spares a record. The state in the
history carries the values left per record, and the slots.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from anonkit.algorithms.ke_partition import (
    KEY_DTYPE,
    BlockedRecords,
    EarlierRelease,
    KEPartition,
    Slots,
    ValuesLeft,
    first_knowledge,
    group_multisets,
    group_value_sets,
    incremental_partition,
    knowledge_from_releases,
    naive_incremental_partition,
    next_knowledge,
)
from anonkit.algorithms.ke_placeholders import placeholder_partition
from anonkit.errors import InputError
from anonkit.history.attacks import CrossReleaseBreachError
from anonkit.history.engines.context import PublishContext, PublishRequest
from anonkit.history.records import ReleaseView
from anonkit.methods.ke import one_shot, parameters_of, permuted_release, sensitive_values
from anonkit.models.base import decimal_places, exact_number
from anonkit.release import Release


def earlier_release(view: ReleaseView, keys: np.ndarray, attribute: str) -> EarlierRelease:
    """An earlier release from the history: each current row's group there (matched by
    pseudonym), and each group's distinct released values."""
    record_keys = np.asarray(view.record_keys.tolist(), dtype=KEY_DTYPE)
    sort = np.argsort(record_keys, kind="stable")
    record_keys, record_classes = record_keys[sort], view.record_classes[sort]
    group_of_row = np.full(len(keys), -1, dtype=np.int64)
    if len(record_keys):
        pos = np.minimum(np.searchsorted(record_keys, keys), len(record_keys) - 1)
        hit = record_keys[pos] == keys
        group_of_row[hit] = record_classes[pos[hit]]
    cv = view.values[attribute]
    # entries are sorted by class then value: distinct values per class directly
    counts = np.bincount(cv.class_index, minlength=view.n_classes)
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return EarlierRelease(group_of_row, ptr, np.asarray(cv.value, dtype=np.float64),
                          record_keys, np.asarray(record_classes, dtype=np.int64))


def publish(df: pd.DataFrame, request: PublishRequest, context: PublishContext) -> Release:
    """The next release of a dataset (the ``ke`` method with a history): the optimal
    partition with no incremental breach against any earlier release."""
    options = dict(request.options)
    strategy = options.get("history_check") or "placeholders"
    if context.previous is None or strategy == "ignore":
        # the first release, or a deliberate re-partition that ignores the history (the
        # publishing gate then judges it like any one-shot release); its groups are the
        # slots a release with placeholders continues from
        release, part = one_shot(df, context.schema, options)
        keys = np.asarray(context.pseudonyms, dtype=KEY_DTYPE)
        release.method_state = first_knowledge(part, keys, slots=True).to_bytes()
        return release
    k, e = options.get("k"), options.get("e")
    if k is None or e is None:
        raise InputError("method 'ke' needs both -k and -e")
    name, values = sensitive_values(df, context.schema)
    keys = np.asarray(context.pseudonyms, dtype=KEY_DTYPE)
    places = decimal_places(values)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    view = context.previous_view()
    assert view is not None and context.previous is not None
    if name not in view.values:
        raise InputError(f"the previous release of {context.dataset!r} has no sensitive "
                         f"attribute {name!r}")
    state = context.previous_state if context.previous.method == "ke" else None
    if strategy == "placeholders" and state is not None:
        carried = ValuesLeft.from_bytes(state)
        if carried.slots is None:  # the previous release used the covering partition
            carried = _slots_from_view(carried, view, name)
        try:
            lasting = placeholder_partition(values, keys, carried, k, e, places=places,
                                            name=name)
        except BlockedRecords as blocked:
            raise CrossReleaseBreachError(_blocked_message(blocked, request, context),
                                          details=_blocked_details(blocked, context, view)
                                          ) from None
        timings["partition"] = time.perf_counter() - t0
        parameters = parameters_of(options) | {
            "breach_checks": lasting.part.breach_checks, "history_check": "placeholders",
            "continuing": lasting.continuing, "new": lasting.fresh,
            "groups_not_published": lasting.retired}
        return permuted_release(df, context.schema, lasting.part, k=k, e=e,
                                group_column=options.get("group_column") or "group",
                                seed=options.get("seed"), method="ke", parameters=parameters,
                                timings=timings, method_state=lasting.knowledge.to_bytes(),
                                placeholders=lasting.placeholder_values)
    previous = earlier_release(view, keys, name)
    try:
        if strategy == "pruned" and state is not None:
            part, knowledge = incremental_partition(values, keys, previous,
                                                    ValuesLeft.from_bytes(state), k, e,
                                                    places=places, name=name)
        else:
            # every earlier release (also when the previous one carries no knowledge)
            earlier = [earlier_release(view, keys, name)
                       for _, view in context.earlier_views()]
            part = naive_incremental_partition(values, keys, earlier, k, e, places=places,
                                               name=name)
            knowledge = _knowledge_after(part, keys, earlier)
    except BlockedRecords as blocked:
        raise CrossReleaseBreachError(_blocked_message(blocked, request, context),
                                      details=_blocked_details(blocked, context, view)
                                      ) from None
    timings["partition"] = time.perf_counter() - t0
    parameters = parameters_of(options) | {"breach_checks": part.breach_checks}
    if strategy == "placeholders":
        # no state to continue from (the previous release was not a (k,e) one): this
        # release covers every earlier one; its groups become the slots from now on
        sptr, svalues, scounts = group_multisets(part)
        slot_of = np.full(len(knowledge.keys), -1, dtype=np.int64)
        here = np.searchsorted(knowledge.keys, keys)
        slot_of[here] = part.group_ids()
        knowledge.slots = Slots(slot_of, sptr, svalues, scounts)
    return permuted_release(df, context.schema, part, k=k, e=e,
                            group_column=options.get("group_column") or "group",
                            seed=options.get("seed"), method="ke", parameters=parameters,
                            timings=timings, method_state=knowledge.to_bytes())


def _knowledge_after(part: KEPartition, keys: np.ndarray,
                     earlier: Sequence[EarlierRelease]) -> ValuesLeft:
    """The knowledge after ``part`` computed from every release (the naive path)."""
    present = np.unique(part.sorted_values)
    set_of, ptr, values, _ = knowledge_from_releases(keys, earlier, present)
    # the records of earlier releases absent from this one keep theirs (narrowed by the
    # subtraction for each release they left, this one included)
    ever = [r.record_keys for r in earlier if r.record_keys is not None]
    absent = np.setdiff1d(np.concatenate(ever), keys) if ever else \
        np.zeros(0, dtype=KEY_DTYPE)
    absent = absent.astype(KEY_DTYPE)
    gptr, gvalues = group_value_sets(part)
    releases = [EarlierRelease(r.groups_of(absent), r.ptr, r.values) for r in earlier]
    releases.append(EarlierRelease(np.full(len(absent), -1, dtype=np.int64), gptr, gvalues))
    universe = np.unique(np.concatenate([r.values for r in releases]))
    a_set, a_ptr, a_values, _ = knowledge_from_releases(absent, releases, universe)
    carried = ValuesLeft(absent, a_set, a_ptr, a_values)
    return next_knowledge(part, keys, carried, set_of, ptr, values)


def _slots_from_view(knowledge: ValuesLeft, view: ReleaseView, attribute: str) -> ValuesLeft:
    """Slots for a state the covering partition carried: the previous release's groups,
    with their multisets as released; records not in it have none."""
    cv = view.values[attribute]
    per_class = np.bincount(cv.class_index, minlength=view.n_classes)
    ptr = np.concatenate([[0], np.cumsum(per_class)]).astype(np.int64)
    record_keys = np.asarray(view.record_keys.tolist(), dtype=KEY_DTYPE)
    sort = np.argsort(record_keys, kind="stable")
    record_keys, record_classes = record_keys[sort], view.record_classes[sort]
    slot_of = np.full(len(knowledge.keys), -1, dtype=np.int64)
    if len(record_keys):
        pos = np.minimum(np.searchsorted(record_keys, knowledge.keys), len(record_keys) - 1)
        hit = record_keys[pos] == knowledge.keys
        slot_of[hit] = record_classes[pos[hit]]
    slots = Slots(slot_of, ptr, np.asarray(cv.value, dtype=np.float64),
                  np.asarray(cv.count, dtype=np.int64))
    return ValuesLeft(knowledge.keys, knowledge.set_of, knowledge.ptr, knowledge.values,
                      knowledge.group, slots)


def _published_group_ids(context: PublishContext, view: ReleaseView) -> np.ndarray | None:
    """Per class of the previous release (as the history numbers them), its group id in
    the published file: the history numbers classes in the order of the released rows,
    which are shuffled, so the two differ. Taken from the group ids the previous release
    carried forward in its method state (None when it carries none)."""
    assert context.previous is not None
    state = context.previous_state
    if state is None or context.previous.method != "ke":
        return None
    carried = ValuesLeft.from_bytes(state)
    if carried.group is None or not len(carried.keys):
        return None
    keys = np.asarray(view.record_keys.tolist(), dtype=KEY_DTYPE)
    pos = np.minimum(np.searchsorted(carried.keys, keys), len(carried.keys) - 1)
    hit = carried.keys[pos] == keys
    out = np.full(view.n_classes, -1, dtype=np.int64)
    out[view.record_classes[hit]] = carried.group[pos[hit]]
    return out




def _blocked_details(blocked: BlockedRecords, context: PublishContext,
                     view: ReleaseView) -> dict[str, object]:
    """What a steward needs to act (see the README), for ``--json`` and the Python caller,
    never in the message: the input rows (0-based data rows) to keep one more release --
    the returning records, with the values and range left to each, and the group-mates still
    in the table of those that left -- and those leavers' groups as published (the
    ``group`` value of the previous release's file; -1 when it carries none)."""
    published = _published_group_ids(context, view)

    def group(g: int) -> int:
        return int(published[g]) if published is not None and 0 <= g < len(published) else -1

    returning = [{"row": int(b.row), "values_left": int(b.distinct),
                  "range_left": float(b.range)} for b in blocked.blockers if b.row >= 0]
    survivors = sorted({int(r) for b in blocked.blockers if b.row < 0 for r in b.survivors})
    return {"returning": returning, "group_mates_of_leavers_rows": survivors,
            "leavers_groups": sorted({group(b.previous_group) for b in blocked.blockers
                                      if b.row < 0}),
            "rows": sorted({*(r["row"] for r in returning), *survivors})}


def _blocked_message(blocked: BlockedRecords, request: PublishRequest,
                     context: PublishContext) -> str:
    """One line of counts: no key and no value goes into a refusal (it ends up in logs)."""
    returning = sum(1 for b in blocked.blockers if b.row >= 0)
    groups = len({b.previous_group for b in blocked.blockers if b.row < 0})
    left = len(blocked.blockers) - returning
    k, e = request.options.get("k"), request.options.get("e")
    return (f"release {context.seq} of {context.dataset!r} refused: after the deletions no "
            f"partition avoids an incremental breach of (k={k}, e={exact_number(e)}) for "
            f"{len(blocked.blockers)} records ({returning} returning, {left} that left, from "
            f"{groups} earlier groups) to the linkage adversary; nothing was written. See the "
            f"README (history: refused incremental releases) for what to do")
