"""The steps every generalizing method shares after its own partition step.

A one-shot method is encode -> partition -> generalize -> assemble -> verify -> measure;
an algorithm implements its partition step only (e.g.
:func:`anonkit.algorithms.mondrian.partition`) and the method hands the
:class:`~anonkit.partition.Partition` to :func:`generalized_release`, which generalizes,
assembles and verifies the same way for every method; the method then measures the
release (:mod:`anonkit.metrics`) from what this returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext

import pandas as pd

from anonkit.data.encoding import EncodedTable
from anonkit.data.schema import Schema
from anonkit.generalization import ColumnGeneralization, Form, generalize_columns
from anonkit.models.base import PrivacyModel
from anonkit.partition import Partition
from anonkit.release import Release, ReleaseKind, ThreatModel
from anonkit.verify import verify_release

#: Told each step of a long run as it happens: called with the step's name ("encoding",
#: "partitioning", "generalizing", "verifying") and the rows it works on, it returns a
#: context manager around the step (the command line draws a bar with it on a terminal).
Progress = Callable[[str, int], AbstractContextManager[None]]


def no_progress(step: str, rows: int) -> AbstractContextManager[None]:
    return nullcontext()


def generalized_release(df: pd.DataFrame, table: EncodedTable, partition: Partition,
                        forms: Mapping[str, Form], models: Sequence[PrivacyModel], *,
                        method: str, parameters: dict[str, object],
                        timings: dict[str, float] | None = None,
                        threat_model: ThreatModel = ThreatModel.ONE_SHOT,
                        progress: Progress | None = None
                        ) -> tuple[Release, list[ColumnGeneralization]]:
    """Generalize every quasi-identifier over ``partition``'s classes, assemble the
    released table (row ``i`` is input row ``i``) and verify it as an adversary groups it.
    Returns the release and each column's generalization (what its measures need)."""
    step = progress or no_progress
    timings = {} if timings is None else timings
    t0 = time.perf_counter()
    with step("generalizing", len(df)):
        generalized, released = generalize_columns(table.quasi_identifiers, forms, partition)
        data = release_table(df, table.schema, released)
    timings["generalize"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    with step("verifying", len(df)):
        release = Release(data, partition.class_ids(), pd.DataFrame(), [], {}, table.schema,
                          method, parameters, timings, kind=ReleaseKind.GENERALIZED,
                          models=list(models), threat_model=threat_model)
        verify_release(release)
    timings["verify"] = time.perf_counter() - t0
    return release, list(generalized)


def release_table(df: pd.DataFrame, schema: Schema,
                  released: Mapping[str, pd.Series | pd.Categorical]) -> pd.DataFrame:
    """The released table: identifiers dropped, QIs replaced by their ``released`` columns
    (see :meth:`ColumnGeneralization.released`), the other columns as they were, rows in the
    input's order."""
    out = {}
    for name in schema.released_columns:
        # .array keeps a Categorical a Categorical (to_numpy would make row objects); the
        # columns not generalized are copied, the released ones are new already
        out[name] = released[name] if name in released else df[name].array.copy()
    return pd.DataFrame(out, index=pd.RangeIndex(len(df)), copy=False)
