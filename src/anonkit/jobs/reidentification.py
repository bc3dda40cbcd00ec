"""``anonkit risk``: the re-identification risk of a table file (see
:mod:`anonkit.metrics.reidentification`), its columns read as the text they hold, and its
HTML report."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from anonkit._util.options import as_list
from anonkit.data.database import database_columns, read_source, source_of
from anonkit.data.read import column_list, read_table, separator_hint, table_columns, to_pandas
from anonkit.errors import InputError
from anonkit.jobs.common import Columns, Job, PathText
from anonkit.jobs.outputs import refuse_overwrites
from anonkit.jobs.reading import job_dialect
from anonkit.metrics.reidentification import RiskReport, risk
from anonkit.report.risk import write_risk_report


def risk_file(path: PathText, quasi_identifiers: Columns, *, reading: Job | None = None,
              sampling_fraction: float | None = None, population_size: float | None = None,
              weight: str | None = None, household: str | None = None,
              max_msu: int | None = 5, report: PathText | None = None,
              command: str | None = None) -> RiskReport:
    """:func:`risk` of the table at ``path``, its columns read as the text they hold (so
    02139 and 2139 are two values, as a release is read back); the weights as numbers.
    ``reading``: how the file is written (a job's ``separator``, ``header``, ...).
    ``report``: write the HTML report there (``command``: the command, for its
    provenance)."""
    if report is not None:
        refuse_overwrites({"input": path}, [(report, "report")])
    job: Mapping[str, object] = dict(reading or {})
    dialect = job_dialect(job)
    separator = job.get("separator")
    database = source_of(path, job.get("table"), job.get("query"))
    names = table_columns(path, separator, dialect=dialect) if database is None \
        else database_columns(database)  # type: ignore[arg-type]
    qis = as_list(quasi_identifiers)
    for role, columns in (("quasi-identifier", qis), ("weight", [weight] if weight else []),
                          ("household", [household] if household else [])):
        for name in columns:
            if name not in names:
                raise InputError(f"unknown column {name!r} given as {role}; the table has: "
                                 f"{column_list(names)}{separator_hint(names)}")
    # one read: every column as text (the weights are made numbers from theirs)
    wanted = list(dict.fromkeys([*qis, *(c for c in (weight, household) if c)]))
    if database is not None:
        df = to_pandas(read_source(database, wanted, as_text=True), categorical_text=True)
    else:
        df = read_table(path, sep=separator, columns=wanted,  # type: ignore[arg-type]
                        categorical_text=True, as_text=True, header=dialect.header,
                        names=dialect.names, na_values=dialect.na_values,
                        skipinitialspace=dialect.skipinitialspace, encoding=dialect.encoding,
                        max_input_bytes=dialect.max_input_bytes)
    if weight is not None:
        df[weight] = _numbers(df[weight], weight)
    measured = risk(df.reset_index(drop=True), qis, sampling_fraction=sampling_fraction,
                    population_size=population_size, weight=weight, household=household,
                    max_msu=max_msu)
    if report is not None:
        write_risk_report(measured, report, source=path if database is None else str(database),
                          command=command)
    return measured


def _numbers(column: pd.Series, name: str) -> np.ndarray:
    """The weights as numbers, from the text read (a Categorical's values parsed once each,
    not once per row); a cell that is no number is refused naming its row."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        parsed = pd.to_numeric(pd.Series(column.cat.categories), errors="coerce")
        # (code -1, a missing cell, takes the NaN appended last)
        values = np.append(parsed.to_numpy(dtype=np.float64), np.nan)[
            column.cat.codes.to_numpy()]
    else:
        values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.isnan(values)
    if bad.any():
        raise InputError(f"the weight column {name!r} must hold numbers; row "
                         f"{int(np.argmax(bad))} does not")
    return values

