"""The stream tree with a history (spec 003): the counts, the records counted and the
nodes split so far travel from release to release in the method state, so a row's spans
only narrow and intersecting releases narrows nothing."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from anonkit.algorithms.stream_tree import (
    KEY_DTYPE,
    Records,
    StreamTree,
    history_split,
)
from anonkit.errors import InputError
from anonkit.history.engines.context import PublishContext, PublishRequest
from anonkit.methods.options import parse_domain
from anonkit.methods.stream_tree import column_values, first_tree, parameters_of, stream_release
from anonkit.release import Release


def publish(df: pd.DataFrame, request: PublishRequest, context: PublishContext) -> Release:
    """The next release of a dataset with the stream tree (``--method stream-tree``).

    The counts live in the history's method state with the records counted so far (by
    pseudonym) and the nodes split so far. A record is counted once, when first seen (and
    again if its value moved: the old count stays). Spans follow :func:`history_split`:
    nodes once split stay split, so a row's spans only narrow and intersecting releases
    narrows nothing. Deletions keep their counts and never undo a split: spans never
    widen back; if the rows that left take a released class of this release below ``k``
    rows, the boundary refuses the release (nothing is written). A domain taken from the
    first release's data grows with later values (:meth:`StreamTree.grow`); a declared
    ``--domain`` is fixed.
    """
    options = dict(request.options)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    name, values = column_values(df, context.schema)
    keys = np.asarray(context.pseudonyms, dtype=KEY_DTYPE)
    previous = context.previous
    state = context.previous_state
    split_before: np.ndarray | None = None
    if previous is None:
        tree, _ = first_tree(df, context.schema, options)
        records = Records.empty()
    elif state is None or previous.method != "stream-tree":
        raise InputError(f"the previous release of {context.dataset!r} was made with "
                         f"{previous.method!r}; the stream tree needs its counts from the "
                         f"first release on: start a new dataset")
    else:
        tree, records, split_before = StreamTree.from_bytes(state)
        if options.get("k") is not None and options["k"] != tree.k:
            raise InputError(f"the stream tree of {context.dataset!r} was built for k={tree.k}; "
                             f"a different k would change spans released before: keep "
                             f"-k {tree.k}")
        declared = options.get("domain")
        if declared is not None:
            declared = parse_domain(declared) if isinstance(declared, str) else tuple(declared)
            if tuple(declared) != tree.domain and tree.growable:
                raise InputError(f"the domain of {context.dataset!r} was taken from its data "
                                 f"and grows with it (now {tree.domain[0]},{tree.domain[1]}); "
                                 f"got --domain {declared[0]},{declared[1]}: leave --domain "
                                 f"out after the first release")
            if tuple(declared) != tree.domain:
                raise InputError(f"the domain of {context.dataset!r} is fixed at "
                                 f"{tree.domain[0]},{tree.domain[1]} since its first release; "
                                 f"got --domain {declared[0]},{declared[1]}")
    if tree.growable and len(values):
        # a domain taken from the data grows to hold later values: doubling the tree
        # keeps every earlier node a node, so every span released before stays one
        as_float = np.asarray(values, dtype=np.float64)
        low, high = np.floor(np.nanmin(as_float)), np.ceil(np.nanmax(as_float))
        if np.isfinite(low) and np.isfinite(high):
            split_before, shift = tree.grow(int(low), int(high), split_before)
            if shift:
                records = Records(records.keys, records.codes + shift, records.cohort)
    codes = tree.codes_of(values, where=f" of column {name!r}")
    pos, known = records.lookup(keys)
    moved = known & (records.codes[pos] != codes) if len(records.keys) else known
    fresh = ~known | moved
    tree.count_codes(codes[fresh])
    cohort = np.where(known, records.cohort[pos] if len(records.keys) else 0, context.seq)
    split = history_split(tree, split_before, codes, cohort, context.seq)
    # every record counted so far: the latest code of those here, the others as they were
    here = np.zeros(len(records.keys), dtype=bool)
    here[pos[known]] = True
    all_keys = np.concatenate([records.keys[~here], keys])
    order = np.argsort(all_keys, kind="stable")
    updated = Records(all_keys[order],
                      np.concatenate([records.codes[~here], codes])[order],
                      np.concatenate([records.cohort[~here], cohort])[order])
    timings["count"] = time.perf_counter() - t0
    return stream_release(df, context.schema, tree, split=split,
                          method_state=tree.to_bytes(updated, split), timings=timings,
                          parameters=parameters_of(tree) | {"counted_now": int(fresh.sum())})
