"""The one boundary every release passes before it is written or published.

:func:`verify_release` regroups the released rows from the released values alone -- by
equal quasi-identifiers, or by the explicit group column of a permuted release -- and
evaluates every model the release claims on those classes. It never reads the method's own
class bookkeeping: a method that mislabels its classes is caught here. Counterfeit rows
are rows of the release like any other (an adversary cannot tell them apart), so they count
in every class they sit in. A synthetic release has no classes of input rows to regroup: it
is judged by the verdicts its method computed on the tuples it generated.

:func:`refuse_identifiers` refuses a release that would contain an identifier or key
column, whichever method produced it. :func:`write_release` writes a release only through
both: a release that fails its models is never written.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from anonkit._util.grouping import group_rows
from anonkit.checker import CheckReport, check, suppression_verdict
from anonkit.data.formulas import (
    FormulaCellsWarning,
    formula_cells,
    formula_warning,
    neutralized,
)
from anonkit.data.write import output_format, to_arrow, write_table
from anonkit.errors import InputError, ModelNotMetError
from anonkit.models.base import Verdict
from anonkit.release import (
    SUPPRESSED,
    Provenance,
    Release,
    ReleaseKind,
    Verification,
    auxiliary_path,
)


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
    report, release.verdicts = judged(release, release.data)
    release.class_ids = report.class_ids
    release.classes = class_table(release, report.class_ids, report.first_rows,
                                  report.quasi_identifiers)
    release.verification = Verification(id(release.data), tuple(release.verdicts),
                                         release.class_ids, release.classes)
    return report


def judged(release: Release, rows: pd.DataFrame) -> tuple[CheckReport, list[Verdict]]:
    """Every model ``release`` claims, judged on ``rows`` (its table as made, or as written
    and read back) grouped as an adversary groups them; the rows suppressed whole are one
    class exempt from the models when the release declares a suppression limit, and then
    counted against it."""
    schema = release.schema
    sensitive = [schema[name] for name in schema.sensitive]
    report = check(rows, schema.quasi_identifiers, schema.sensitive or None,
                   release.models,
                   kinds={c.name: c.kind for c in sensitive if c.kind},
                   hierarchies={c.name: c.hierarchy for c in sensitive if c.hierarchy},
                   orders={c.name: c.order for c in sensitive if c.order},
                   group_column=release.group_column,
                   suppressed=SUPPRESSED if release.suppression_limit is not None else None)
    verdicts = list(report.verdicts)
    if release.suppression_limit is not None:
        verdicts.append(suppression_verdict(report.suppressed_rows, report.n_rows,
                                            release.suppression_limit))
    return report, verdicts


def columns_judged(release: Release) -> list[str]:
    """The columns :func:`judged` reads: the group column, the quasi-identifiers, the
    sensitive columns and any survey-weight column a model reads."""
    schema = release.schema
    group = [release.group_column] if release.group_column is not None else []
    weights = sorted({m.weight_column for m in release.models if m.weight_column is not None})
    return list(dict.fromkeys([*group, *schema.quasi_identifiers, *schema.sensitive,
                               *weights]))


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


def released_table(release: Release, *, unchanged: pa.Table | None = None,
                   column_order: Sequence[str] | None = None, accept_heuristic: bool = False,
                   forbidden: Sequence[str] = ()) -> pa.Table:
    """The table to write for ``release``, after the boundary check (refused unless every
    model holds, and without identifiers): its columns and the ``unchanged`` ones in
    ``column_order`` (see :func:`write_release`)."""
    verify_release(release)
    release.require_passed(accept_heuristic)
    extra = unchanged.column_names if unchanged is not None else []
    refuse_identifiers(release, [*release.data.columns, *extra], forbidden)
    table = to_arrow(release.data)
    if unchanged is not None:
        if unchanged.num_rows != table.num_rows:
            raise ValueError(f"the unchanged columns have {unchanged.num_rows} rows, the "
                             f"release {table.num_rows}")
        columns = dict(zip(table.column_names, table.columns, strict=True))
        columns |= dict(zip(unchanged.column_names, unchanged.columns, strict=True))
        order = list(column_order) if column_order is not None else list(columns)
        # a column the method added (a permuted release's group column) is never lost
        # to an order taken from the input
        order += [c for c in table.column_names if c not in order]
        table = pa.table({name: columns[name] for name in order if name in columns})
    return table


def write_release(release: Release, path: str | Path, fmt: str | None = None, *,
          unchanged: pa.Table | None = None, column_order: Sequence[str] | None = None,
          verbatim: bool = False, accept_heuristic: bool = False,
          forbidden: Sequence[str] = (),
          auxiliary_paths: Mapping[str, Path] | None = None,
          neutralize_formulas: bool = False) -> Path:
    """Write ``release`` atomically (temp file + rename) after the boundary check
    (:func:`anonkit.verify.verify_release`); refused unless every model holds.

    ``unchanged``: further columns released as they are, kept in Arrow and never
    loaded into pandas (the command line reads the columns nobody gave a role this
    way). They join the columns of ``data`` in ``column_order`` (default: those of
    ``data``, then the others). ``verbatim``: their text holds cells exactly as read
    from a CSV file (see :func:`anonkit.data.write.write_table`). ``forbidden``: further column
    names that must not be released (e.g. the history's key column). Auxiliary
    tables are written beside the file as ``<stem>.<name>.csv`` (or ``.parquet``), or
    to ``auxiliary_paths[name]``; first, so that a failure leaves no release without
    them (they are removed again if the release cannot be written).

    A CSV release holding cells a spreadsheet would run as formulas is written with a
    :class:`~anonkit.data.formulas.FormulaCellsWarning`, or, ``neutralize_formulas``, with a
    leading ``'`` in those cells (:mod:`anonkit.data.formulas`).
    """
    table = released_table(release, unchanged=unchanged, column_order=column_order,
                           accept_heuristic=accept_heuristic, forbidden=forbidden)
    target = Path(path)
    fmt = output_format(target, fmt)  # the auxiliary tables take the release's format
    if fmt == "csv":
        counts = formula_cells(table)
        if counts and neutralize_formulas:
            table = neutralized(table)
        elif counts:
            warnings.warn(FormulaCellsWarning(formula_warning(counts)), stacklevel=2)
    written: list[Path] = []
    try:
        for name, aux in release.auxiliary.items():
            aux_path = (auxiliary_paths or {}).get(name) or auxiliary_path(target, name)
            write_table(aux, aux_path, fmt=fmt)
            written.append(Path(aux_path))
        write_table(table, target, fmt=fmt,
                    verbatim=unchanged.column_names if unchanged is not None and verbatim
                    else ())
    except BaseException:
        for done in written:
            done.unlink(missing_ok=True)
        raise
    return target
