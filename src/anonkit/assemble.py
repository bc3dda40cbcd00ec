"""The steps every generalizing method shares after its own partition step.

A one-shot method is encode -> partition -> generalize -> assemble -> verify -> metrics; an
algorithm implements its partition step only (e.g. :meth:`Mondrian.partition`) and hands
the :class:`~anonkit.partition.Partition` to :func:`generalized_release`, which does the
rest the same way for every method.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext

import pandas as pd

from anonkit.data.table import EncodedTable, Schema
from anonkit.generalization import Form, generalize_columns
from anonkit.models.base import PrivacyModel
from anonkit.partition import Partition
from anonkit.release import Release, ReleaseKind, ThreatModel

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
                        progress: Progress | None = None) -> Release:
    """Generalize every quasi-identifier over ``partition``'s classes, assemble the
    released table (row ``i`` is input row ``i``), verify it as an adversary groups it,
    and measure it."""
    from anonkit.metrics import release_metrics
    from anonkit.verify import verify_release

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
        report = verify_release(release)
    assert report is not None
    timings["verify"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    release.metrics = release_metrics(generalized, partition.sizes, report.class_sizes,
                                      k=max(m.min_class_size() for m in models))
    timings["metrics"] = time.perf_counter() - t0
    return release


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
