"""What every anonymization algorithm returns: the release plus the evidence about it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from anonkit.errors import ModelNotMetError
from anonkit.models.base import Verdict
from anonkit.table import Schema

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass
class AnonymizationResult:
    """A release and its verification.

    Attributes:
        data: the released table: identifiers dropped, quasi-identifiers generalized, rows in
            the input's order (row ``i`` of ``data`` is row ``i`` of the input).
        class_ids: per row of ``data``, the index of its equivalence class -- classes as an
            adversary sees them: rows with the same released quasi-identifiers.
        classes: one row per class: ``size``, then each quasi-identifier's released label.
        verdicts: one per privacy model, measured on ``data`` as an adversary sees it (rows
            grouped by their released quasi-identifier values), not on the algorithm's own
            bookkeeping.
        metrics: utility and risk figures (see :mod:`anonkit.metrics`).
        schema: roles and kinds of the input's columns.
        method: the algorithm's name, e.g. ``"mondrian"``.
        parameters: every setting that produced this release (for the history and report).
        timings: seconds spent per phase (``encode``, ``algorithm``, ``verify``, ...).
    """

    data: pd.DataFrame
    class_ids: np.ndarray
    classes: pd.DataFrame
    verdicts: list[Verdict]
    metrics: dict[str, float]
    schema: Schema
    method: str
    parameters: dict[str, object]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when every verdict passes: only then may the release be written."""
        return bool(self.verdicts) and all(v.passed for v in self.verdicts)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def failures(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.passed]

    def require_passed(self) -> None:
        """Raise :class:`ModelNotMetError` naming each failed model (fail closed)."""
        if not self.passed:
            failed = "; ".join(str(v) for v in self.failures()) or "no verdict was computed"
            raise ModelNotMetError(f"release refused, the privacy model is not met: {failed}")

    def write(self, path: str | Path, fmt: str | None = None, *,
              unchanged: pa.Table | None = None, column_order: Sequence[str] | None = None,
              verbatim: bool = False) -> Path:
        """Write the release atomically (temp file + rename); refused unless it passed.

        ``unchanged``: further columns released as they are, kept in Arrow and never
        loaded into pandas (the command line reads the columns nobody gave a role this
        way). They join the columns of ``data`` in ``column_order`` (default: those of
        ``data``, then the others). ``verbatim``: their text holds cells exactly as read
        from a CSV file (see :func:`anonkit.io.write_table`).
        """
        import pyarrow as pa

        from anonkit.io import to_arrow, write_table

        self.require_passed()
        table = to_arrow(self.data)
        if unchanged is not None:
            if unchanged.num_rows != table.num_rows:
                raise ValueError(f"the unchanged columns have {unchanged.num_rows} rows, the "
                                 f"release {table.num_rows}")
            columns = dict(zip(table.column_names, table.columns, strict=True))
            columns |= dict(zip(unchanged.column_names, unchanged.columns, strict=True))
            order = list(column_order) if column_order is not None else list(columns)
            table = pa.table({name: columns[name] for name in order if name in columns})
        write_table(table, path, fmt=fmt,
                    verbatim=unchanged.column_names if unchanged is not None and verbatim
                    else ())
        return Path(path)

    def summary(self) -> str:
        lines = [f"{self.method}: {len(self.data)} rows in {self.n_classes} classes"]
        lines += [f"  {v}" for v in self.verdicts]
        lines += [f"  {k} = {_number(v)}" for k, v in self.metrics.items()]
        return "\n".join(lines)


def _number(value: float) -> str:
    """Whole numbers as such (30162, not 3.016e+04); others to four significant digits."""
    return f"{int(value)}" if float(value).is_integer() else f"{value:.4g}"
