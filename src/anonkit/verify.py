"""The one boundary every release passes before it is written or published.

:func:`verify_release` regroups the released rows from the released values alone -- by
equal quasi-identifiers, or by the explicit group column of a permuted release -- and
evaluates every model the release claims on those classes. It never reads the method's own
class bookkeeping: a method that mislabels its classes is caught here. Counterfeit rows
are rows of the release like any other (an adversary cannot tell them apart), so they count
in every class they sit in. A synthetic release has no classes of input rows to regroup: it
is judged by the verdicts its method computed on the tuples it generated.

:func:`refuse_identifiers` refuses a release that would contain an identifier or key
column, whichever method produced it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from anonkit.checker import CheckReport, check, group_rows
from anonkit.errors import InputError, ModelNotMetError
from anonkit.release import Provenance, Release, ReleaseKind, Verification


def verify_release(release: Release, *, force: bool = False) -> CheckReport | None:
    """Verify ``release`` in place: its ``verdicts``, ``class_ids`` and ``classes`` become
    the verifier's. Returns the check report (None for a synthetic release, which keeps its
    method's verdicts). A release already verified with the same ``data`` object is not
    verified again unless ``force``."""
    done = release.verification
    if done is not None and done.data_id == id(release.data) and not force:
        release.verdicts = list(done.verdicts)
        release.class_ids, release.classes = done.class_ids, done.classes
        return None
    if release.kind is ReleaseKind.SYNTHETIC:
        if release.source_rows is not None and (np.asarray(release.source_rows) >= 0).any():
            raise InputError(f"method {release.method!r} made a synthetic release whose rows "
                             f"name input rows; a synthetic tuple stands for no input row")
        # no classes of people to evaluate models on; the tuples are still grouped as an
        # adversary groups them, for the history and the report
        qis = release.schema.quasi_identifiers
        class_ids, _, first_rows = group_rows(release.data, qis)
        release.class_ids = class_ids
        release.classes = class_table(release, class_ids, first_rows, qis)
        release.verification = Verification(id(release.data), tuple(release.verdicts),
                                            release.class_ids, release.classes)
        return None
    if not release.models:
        raise ModelNotMetError(f"release refused: method {release.method!r} declares no "
                               f"privacy model for it, so nothing can be verified")
    if release.kind is ReleaseKind.PERMUTED and release.group_column is None:
        raise InputError(f"method {release.method!r} made a permuted release without a group "
                         f"column; its groups must be published explicitly")
    schema = release.schema
    sensitive = [schema[name] for name in schema.sensitive]
    report = check(release.data, schema.quasi_identifiers, schema.sensitive or None,
                   release.models,
                   kinds={c.name: c.kind for c in sensitive if c.kind},
                   hierarchies={c.name: c.hierarchy for c in sensitive if c.hierarchy},
                   orders={c.name: c.order for c in sensitive if c.order},
                   group_column=release.group_column)
    release.verdicts = list(report.verdicts)
    release.class_ids = report.class_ids
    release.classes = class_table(release, report.class_ids, report.first_rows,
                                  report.quasi_identifiers)
    if not release.metrics:  # a method that measured nothing still gets the class figures
        from anonkit.metrics import class_metrics

        release.metrics = class_metrics(report.class_sizes,
                                        max(m.min_class_size() for m in release.models))
    release.verification = Verification(id(release.data), tuple(release.verdicts),
                                         release.class_ids, release.classes)
    return report


def class_table(release: Release, class_ids: np.ndarray, first_rows: np.ndarray,
                quasi_identifiers: Sequence[str]) -> pd.DataFrame:
    """One row per class, in the verifier's numbering: ``size``, ``counterfeits`` when the
    release has counterfeit rows, then each quasi-identifier's released value (for explicit
    groups, the group column first)."""
    columns = ([release.group_column] if release.group_column is not None else []) + \
        list(quasi_identifiers)
    table = release.data[columns].iloc[first_rows].reset_index(drop=True)
    table.insert(0, "size", np.bincount(class_ids, minlength=len(first_rows)).astype(np.int64))
    fake = release.row_provenance() == Provenance.COUNTERFEIT
    if fake.any():
        table.insert(1, "counterfeits", np.bincount(class_ids[fake],
                                                    minlength=len(first_rows)))
    return table


def refuse_identifiers(release: Release, columns: Iterable[str],
                       forbidden: Sequence[str] = ()) -> None:
    """Refuse to release any identifier of the release's schema, or any ``forbidden``
    column (the history's key), among ``columns``."""
    banned = {*release.schema.identifiers, *forbidden}
    leaked = [str(c) for c in columns if c in banned]
    if leaked:
        raise InputError(f"release refused: it contains the identifier or key column(s) "
                         f"{', '.join(map(repr, leaked))}, which are never released; "
                         f"method {release.method!r} must drop them")
