"""Cells a spreadsheet would run as formulas (CSV injection, OWASP): text starting with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return, unless it is a plain number (``-3``,
``+1.5e3`` are values, not formulas). A release that holds such cells is written as it is,
with a warning; neutralized, each gets a leading ``'``, as OWASP recommends, which a
spreadsheet shows as text. Vectorised in Arrow: one pass per text column."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from anonkit.errors import AnonkitWarning

FORMULA_START = r"^[=+\-@\t\r]"
PLAIN_NUMBER = r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$"


class FormulaCellsWarning(AnonkitWarning):
    """A release holds cells a spreadsheet would run as formulas."""


def _formula_mask(column: pa.ChunkedArray) -> pa.ChunkedArray | None:
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return None
    starts = pc.match_substring_regex(column, FORMULA_START)
    number = pc.match_substring_regex(column, PLAIN_NUMBER)
    return pc.fill_null(pc.and_(starts, pc.invert(number)), False)


def formula_cells(table: pa.Table) -> dict[str, int]:
    """Per text column of ``table``, how many of its cells a spreadsheet would run as
    formulas (columns with none left out)."""
    counts: dict[str, int] = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        mask = _formula_mask(column)
        if mask is not None:
            n = int(pc.sum(mask).as_py() or 0)
            if n:
                counts[name] = n
    return counts


def neutralized(table: pa.Table) -> pa.Table:
    """``table`` with a ``'`` before every cell a spreadsheet would run as a formula."""
    for i, column in enumerate(table.columns):
        mask = _formula_mask(column)
        if mask is not None and pc.any(mask).as_py():
            quoted = pc.binary_join_element_wise("'", column, "")
            table = table.set_column(i, table.field(i), pc.if_else(mask, quoted, column))
    return table


def formula_warning(counts: dict[str, int]) -> str:
    """The warning for a release with formula cells (columns named, no value shown)."""
    columns = ", ".join(repr(name) for name in list(counts)[:5])
    more = f" and {len(counts) - 5} more" if len(counts) > 5 else ""
    return (f"{sum(counts.values())} cell(s) in {columns}{more} begin with =, +, -, @, a tab "
            f"or a carriage return: a spreadsheet may run them as formulas. Pass "
            f"--neutralize-formulas to write them with a leading ' (they then read as text)")
