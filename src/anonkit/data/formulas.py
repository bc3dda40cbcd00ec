"""Cells a spreadsheet would run as formulas (CSV injection, OWASP): text starting with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return, unless it is a plain number (``-3``,
``+1.5e3`` are values, not formulas). A release that holds such cells is written as it is,
with a warning; neutralized, each gets a leading ``'``, as OWASP recommends, which a
spreadsheet shows as text (and so does a cell that begins with ``'`` already, so that no two
cells become one). Vectorised in Arrow: one pass per text column."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from anonkit.errors import AnonkitWarning

FORMULA_START = r"^[=+\-@\t\r]"
PLAIN_NUMBER = r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$"


class FormulaCellsWarning(AnonkitWarning):
    """A release holds cells a spreadsheet would run as formulas."""


def _text_mask(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    starts = pc.match_substring_regex(values, FORMULA_START)
    number = pc.match_substring_regex(values, PLAIN_NUMBER)
    return pc.fill_null(pc.and_(starts, pc.invert(number)), False)


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def formula_cells(table: pa.Table) -> dict[str, int]:
    """Per text column of ``table`` (plain or dictionary-encoded, as released labels are),
    how many of its cells a spreadsheet would run as formulas (columns with none left
    out). A dictionary is judged once per distinct value, then counted through the
    indices."""
    counts: dict[str, int] = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        n = 0
        if _is_text(column.type):
            n = int(pc.sum(_text_mask(column)).as_py() or 0)
        elif pa.types.is_dictionary(column.type) and _is_text(column.type.value_type):
            for chunk in column.chunks:
                marked = _text_mask(chunk.dictionary)
                if pc.any(marked).as_py():
                    hits = pc.fill_null(pc.take(marked, chunk.indices), False)
                    n += int(pc.sum(hits).as_py() or 0)
        if n:
            counts[name] = n
    return counts


def _quoted(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A ``'`` before every formula cell, and before every cell that already begins with
    one: otherwise ``=x`` and ``'=x`` would both become ``'=x``, two released values one
    (and two classes one to an adversary)."""
    quoted = pc.fill_null(pc.starts_with(values, "'"), False)
    mark = pc.or_(_text_mask(values), quoted)
    return pc.if_else(mark, pc.binary_join_element_wise("'", values, ""), values)


def neutralized(table: pa.Table) -> pa.Table:
    """``table`` with a ``'`` before every cell a spreadsheet would run as a formula and
    before every cell that begins with ``'`` already (a dictionary's values changed in place):
    one-to-one, so equal cells stay equal and distinct ones distinct."""
    for i, column in enumerate(table.columns):
        if _is_text(column.type):
            table = table.set_column(i, table.field(i), _quoted(column))
        elif pa.types.is_dictionary(column.type) and _is_text(column.type.value_type):
            chunks = [pa.DictionaryArray.from_arrays(chunk.indices, _quoted(chunk.dictionary))
                      for chunk in column.chunks]
            table = table.set_column(i, table.field(i),
                                     pa.chunked_array(chunks, type=column.type))
    return table


def formula_warning(counts: dict[str, int]) -> str:
    """The warning for a release with formula cells (columns named, no value shown)."""
    columns = ", ".join(repr(name) for name in list(counts)[:5])
    more = f" and {len(counts) - 5} more" if len(counts) > 5 else ""
    return (f"{sum(counts.values())} cell(s) in {columns}{more} begin with =, +, -, @, a tab "
            f"or a carriage return: a spreadsheet may run them as formulas. Pass "
            f"--neutralize-formulas to write them with a leading ' (they then read as text)")
