"""Buckets: raw tuples grouped by path, and each bucket's k-groups.

Tracing runs in the workers in chunks (:func:`trace_chunk`): each tuple's path key is
computed from its concrete branch outcomes, and a path's condition (its decision
expressions) is sent back only the first time a worker meets it -- the symbolic work is
per distinct path, not per tuple. The k-anonymization of a bucket is the Mondrian partition
step (:class:`anonkit.methods.mondrian.Mondrian`) over all its fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonkit.data.encoding import encode
from anonkit.data.schema import Schema
from anonkit.methods.mondrian import Mondrian
from anonkit.models.base import KAnonymity
from anonkit.testdata import workers
from anonkit.testdata.trace import (
    PathCondition,
    PathKey,
    ProgramFailure,
    concolic_path,
    path_condition,
)
from anonkit.testdata.workers import TaskFailure

#: per tuple: its key, or why it could not be traced
Outcome = PathKey | str



def trace_chunk(chunk: tuple[Sequence[str], list[tuple[object, ...]]]
                ) -> tuple[list[Outcome], dict[PathKey, PathCondition]]:
    """Worker side: the path of every record in ``chunk`` (field names, rows)."""
    names, rows = chunk
    program = workers.program()
    limits = workers.limits()
    outcomes: list[Outcome] = []
    conditions: dict[PathKey, PathCondition] = {}
    for row in rows:
        record = dict(zip(names, row, strict=True))
        try:
            with workers.guarded():
                key, tracer = concolic_path(program.instrumented, record,
                                            limits.max_decisions)
        except (ProgramFailure, workers.RunTimeout, workers.BlockedOperation,
                MemoryError) as exc:
            outcomes.append(workers.failure_text(exc))
            continue
        outcomes.append(key)
        if key not in workers.sent:
            workers.sent.add(key)
            conditions[key] = path_condition(key, tracer)
    return outcomes, conditions


def split_chunk(chunk: tuple[Sequence[str], list[tuple[object, ...]]]
                ) -> list[tuple[Sequence[str], list[tuple[object, ...]]]]:
    names, rows = chunk
    return [(names, [row]) for row in rows]


def merge_chunks(parts: list[object]) -> tuple[list[Outcome], dict[PathKey, PathCondition]]:
    outcomes: list[Outcome] = []
    conditions: dict[PathKey, PathCondition] = {}
    for part in parts:
        if isinstance(part, TaskFailure):
            outcomes.append(f"the program crashed or hung its worker ({part.reason})")
        else:
            assert isinstance(part, tuple)
            outcomes.extend(part[0])
            conditions.update(part[1])
    return outcomes, conditions


@dataclass
class Bucket:
    """The raw tuples (row positions) that share one path."""

    index: int
    condition: PathCondition
    rows: np.ndarray


def k_groups(table: pd.DataFrame, rows: np.ndarray, k: int) -> list[np.ndarray]:
    """The bucket's k-groups (each >= k tuples) by Mondrian over every field."""
    part = table.iloc[rows].reset_index(drop=True)
    # bools as text: the encoder treats them as categories either way, text keeps it simple
    part = part.apply(lambda c: c.astype(str) if c.dtype == bool else c)
    schema = Schema.from_roles(part, list(part.columns), kinds={
        c: "categorical" for c in part.columns if part[c].dtype == object})
    encoded = encode(part, schema)
    partition = Mondrian(k=k).partition(encoded, [KAnonymity(k)])
    return [rows[partition.order[s:e]] for s, e in zip(partition.starts, partition.ends,
                                                           strict=True)]
