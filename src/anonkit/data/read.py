"""Reading tables (CSV, Parquet) fast, with errors a user can act on.

CSV goes through pyarrow's multi-threaded reader (pandas' own is several times slower on a
million rows); the DataFrame returned is numpy-backed (object for text, or Categorical with
``categorical_text=True``).

Reading CSV, types are inferred per column (int64, float64, bool, dates, text). Two
deviations from plain pyarrow inference:

* A column of whole numbers of which some are written with a leading zero (zip codes such
  as ``02139``) stays text, so ``02139`` does not become ``2139``. ``text_columns`` forces
  text for other columns (codes that happen to have no leading zero in this file).
* ``YYYY-MM-DD`` columns become ``datetime64[ms]`` (pyarrow's date32), not ``date`` objects.
* Integers stay exact: int64 where they fit, and a column that would become float64 stays
  text when one of its integers is one float64 cannot hold (``12345678901234567891`` would
  read back as ``12345678901234567168``). Parquet decimals become float64 only where every
  value converts exactly, text otherwise.

``as_text=True`` reads every column as the text it holds instead (a CSV cell's text, a
Parquet column's values as text where that is lossless): what a check of a released table
compares, where ``02139``, ``2139`` and ``2139.0`` are three labels.

Missing values: an empty cell (or ``NA``, ``null``, ``NaN``, …) is missing in a numeric or
date column; in a text column the cell is kept as the text (``""``, ``"NA"``), which
:func:`anonkit.data.encoding.encode` treats as missing when blank. ``na_values`` adds markers
(``?``) that are missing in every column, text ones included.

Dialects (each costs nothing when not asked for): a file without a header line
(``header=False`` with ``names``), a separator of several characters (``', '`` is ``,``
with the spaces after it skipped; others such as ``::`` are replaced on the fly, without
quoting), ``skipinitialspace`` (spaces after a separator dropped in every column), an
``encoding`` other than UTF-8, and compressed files (``.gz``, ``.bz2``, ``.zst``, ``.lz4``)
read as they are.
"""

from __future__ import annotations

import codecs
import csv
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from anonkit.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

_T = TypeVar("_T")

__all__ = [
    "COMPRESSED_SUFFIXES",
    "CSV_SEPARATORS",
    "PARQUET_SUFFIXES",
    "Dialect",
    "first_data_line",
    "read_table",
    "separator_hint",
    "sniff_separator",
    "table_format",
]

#: Separators tried when none is given, in order of preference on a tie.
CSV_SEPARATORS = (",", ";", "\t", "|")
PARQUET_SUFFIXES = (".parquet", ".pq")

_SAMPLE_BLOCK = 1 << 20  # bytes used to find the integer columns before the full read
# blocks the reader parses in parallel: pyarrow's 1 MiB default makes a million rows into
# ~100 chunks, each with its own dictionary to unify later, and refuses longer values
_READ_BLOCK = 8 << 20
_SEP_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}
#: suffixes of compressed files, read through the codec (pyarrow's own detection)
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".zst", ".lz4")
#: what stands for a separator of several characters while parsing (control character US)
_PLACEHOLDER = "\x1f"


@dataclass(frozen=True)
class Dialect:
    """How a CSV file is written, where it differs from a plain UTF-8 CSV with a header.

    ``header=False``: the first line is data; ``names`` then gives the columns (with a
    header, ``names`` replaces the header's). ``na_values``: cells that are missing in
    every column. ``skipinitialspace``: spaces after a separator are dropped in every
    column. ``encoding``: the file's text encoding (``latin-1``, ``cp1252``, ...)."""

    header: bool = True
    names: tuple[str, ...] | None = None
    na_values: tuple[str, ...] = ()
    skipinitialspace: bool = False
    encoding: str | None = None

    @classmethod
    def of(cls, header: bool = True, names: Sequence[str] | None = None,
           na_values: Sequence[str] | str = (), skipinitialspace: bool = False,
           encoding: str | None = None) -> Dialect:
        if names is not None:
            names = tuple([names] if isinstance(names, str) else names)
            if not names:
                raise InputError("names is empty; give one name per column")
            _check_duplicates(Path("names"), [n.strip() for n in names])
        elif not header:
            raise InputError("a file without a header line needs its column names: pass "
                             "--names a,b,c (or a file with one name a line)")
        na = (na_values,) if isinstance(na_values, str) else tuple(na_values)
        if encoding is not None:
            try:
                encoding = codecs.lookup(encoding).name
            except LookupError:
                raise InputError(f"unknown encoding {encoding!r}; use e.g. utf-8, latin-1 or "
                                 f"cp1252") from None
            if encoding in ("utf-8", "utf-8-sig"):
                encoding = None
        return cls(bool(header), names, na, bool(skipinitialspace), encoding)


_PLAIN = Dialect()


def table_format(path: str | Path, fmt: str | None = None) -> str:
    """``'csv'`` or ``'parquet'``: ``fmt`` when given, else from the file's suffix
    (``.parquet``/``.pq`` are Parquet, anything else CSV)."""
    if fmt is not None:
        fmt = fmt.lower().strip().lstrip(".")
        if fmt in ("pq", "parquet"):
            return "parquet"
        if fmt in ("csv", "tsv", "txt"):
            return "csv"
        raise InputError(f"unknown table format {fmt!r}; use 'csv' or 'parquet'")
    return "parquet" if Path(path).suffix.lower() in PARQUET_SUFFIXES else "csv"


def read_table(
    path: str | Path,
    sep: str | None = None,
    columns: Sequence[str] | None = None,
    *,
    text_columns: Sequence[str] = (),
    fmt: str | None = None,
    categorical_text: bool = False,
    as_text: bool = False,
    header: bool = True,
    names: Sequence[str] | None = None,
    na_values: Sequence[str] | str = (),
    skipinitialspace: bool = False,
    encoding: str | None = None,
) -> pd.DataFrame:
    """Read a CSV or Parquet file into a numpy-backed DataFrame.

    ``sep`` (CSV only) is sniffed from the header line among ``, ; \\t |`` when not
    given. ``columns`` reads only those columns, in that order. ``text_columns`` (CSV)
    keeps those columns as text whatever they look like. Column names are stripped of
    surrounding spaces (``a, b`` headers are common). Every problem with the file is an
    :class:`InputError` naming the file and, where it can, the line.

    ``categorical_text=True`` returns text columns as pandas Categorical, dictionary-encoded
    inside Arrow: a million rows then never become a million Python strings (that costs
    more than parsing the file) and encoding, grouping and writing work on the codes. The
    command line reads this way; the default (object text) is what pandas users expect.

    ``as_text=True`` reads every column as text (see the module docstring).

    CSV dialects: ``header``, ``names``, ``na_values``, ``skipinitialspace``,
    ``encoding`` (see :class:`Dialect`); ``sep`` may have several characters (``', '``).
    A compressed CSV (``.csv.gz``, ``.csv.bz2``, ``.csv.zst``) is read as it is.
    """
    table = read_arrow(path, sep, columns, text_columns=text_columns, fmt=fmt,
                       dictionary_text=categorical_text, as_text=as_text,
                       dialect=Dialect.of(header, names, na_values, skipinitialspace,
                                          encoding))
    return to_pandas(table, categorical_text)


def read_arrow(
    path: str | Path,
    sep: str | None = None,
    columns: Sequence[str] | None = None,
    *,
    text_columns: Sequence[str] = (),
    fmt: str | None = None,
    dictionary_text: bool = False,
    as_text: bool = False,
    dialect: Dialect | None = None,
) -> pa.Table:
    """:func:`read_table` without the conversion to pandas: an Arrow table (imports no
    pandas, so a caller can read while pandas is still being imported).

    ``dictionary_text=True`` (CSV) dictionary-encodes text columns while parsing, which
    :func:`to_pandas` with ``categorical_text=True`` then takes as they are; the
    ``text_columns`` stay plain text. ``as_text=True`` reads every column as text (see the
    module docstring); then with ``dictionary_text`` every CSV column is a dictionary.
    ``dialect`` (CSV): see :class:`Dialect`; None is a plain CSV with a header line."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"input file not found: {path}; check the path")
    if path.is_dir():
        raise InputError(f"input path {path} is a directory; give a CSV or Parquet file")
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
    if table_format(path, fmt) == "parquet":
        table = _read_parquet(path, columns)
        if as_text:
            table = _lossless_text(table)
    else:
        table = _read_csv(path, sep, columns, list(text_columns), dictionary_text, as_text,
                          dialect or _PLAIN)
    if table.num_rows == 0:
        what = "has no rows" if table_format(path, fmt) == "parquet" else \
            "has a header but no data rows"
        raise InputError(f"{path} {what}; give at least one data row")
    return table


def table_columns(path: str | Path, sep: str | None = None, fmt: str | None = None,
                  dialect: Dialect | None = None) -> list[str]:
    """The column names of a CSV or Parquet file (stripped, as :func:`read_table` gives
    them), from its header or schema alone (or the dialect's ``names``)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"input file not found: {path}; check the path")
    if table_format(path, fmt) == "parquet":
        try:
            return [name.strip() for name in pq.read_schema(path).names]
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"cannot read {path} as Parquet ({_first_line(exc)})") from None
    return [name.strip() for name in _csv_layout(path, sep, dialect or _PLAIN).raw_names]


def _read_parquet(path: Path, columns: list[str] | None) -> pa.Table:
    try:
        schema = pq.read_schema(path)
        if columns is not None:
            _check_requested(path, columns, schema.names)
        table = pq.read_table(path, columns=columns)
    except InputError:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(
            f"cannot read {path} as Parquet ({_first_line(exc)}); check that it is a "
            f"complete Parquet file, or give a .csv file") from None
    _check_duplicates(path, table.column_names)
    return table


def _read_csv(path: Path, sep: str | None, columns: list[str] | None,
              text_columns: list[str], dictionary_text: bool = False,
              as_text: bool = False, dialect: Dialect = _PLAIN) -> pa.Table:
    layout = _csv_layout(path, sep, dialect)
    raw_names = layout.raw_names
    # raw names (before stripping) are what pyarrow matches in include_columns/column_types
    header = [name.strip() for name in raw_names]
    _check_duplicates(path, header)
    raw_of = dict(zip(header, raw_names, strict=True))
    if columns is not None:
        _check_requested(path, columns, header)
    unknown_text = [c for c in text_columns if c not in header]
    if unknown_text:
        raise InputError(f"text column {unknown_text[0]!r} is not in {path}; its columns "
                         f"are: {', '.join(header)}{separator_hint(header)}")
    wanted = {raw_of[c] for c in (header if columns is None else columns)}
    forced = wanted if as_text else {raw_of[c] for c in text_columns} & wanted
    include = None if columns is None else [raw_of[c] for c in columns]
    source = layout.source(path)
    null_values = _null_values(dialect, layout.skip_spaces)

    def read_with(parse: pa_csv.ParseOptions, types: dict[str, pa.DataType],
                  names: list[str] | None = include) -> pa.Table:
        if null_values is None:  # the ordinary file: pyarrow's defaults
            convert = pa_csv.ConvertOptions(include_columns=names, column_types=types)
        else:
            convert = pa_csv.ConvertOptions(include_columns=names, column_types=types,
                                            null_values=null_values)
        return _growing_blocks(lambda block: pa_csv.read_csv(
            source(), read_options=layout.read_options(block), parse_options=parse,
            convert_options=convert), _READ_BLOCK)

    def read(parse: pa_csv.ParseOptions) -> tuple[pa.Table, list[str]]:
        if as_text:  # nothing to infer
            text = pa.dictionary(pa.int32(), pa.string()) if dictionary_text else pa.string()
            return read_with(parse, dict.fromkeys(forced, text)), []
        sample = [f for f in _sample_schema(source, parse, layout, null_values)
                  if f.name in wanted and f.name not in forced]
        # integers may hide leading zeros: read as text, decided below
        int_columns = [f.name for f in sample if pa.types.is_integer(f.type)]
        types = {c: pa.string() for c in (*forced, *int_columns)}
        if dictionary_text:
            types |= {f.name: pa.dictionary(pa.int32(), pa.string()) for f in sample
                      if pa.types.is_string(f.type)}
        return read_with(parse, types), int_columns

    parse = pa_csv.ParseOptions(delimiter=layout.delimiter)
    try:
        try:
            table, int_columns = read(parse)
        except pa.ArrowInvalid as exc:
            if "Expected" not in str(exc) or "columns" not in str(exc):
                raise
            # A quoted value holding a line break splits rows unless the (slower) parser
            # mode that allows it is on; retry so such files read, ragged ones still fail.
            parse = pa_csv.ParseOptions(delimiter=layout.delimiter, newlines_in_values=True)
            table, int_columns = read(parse)
        # Past 2**53 float64 no longer holds every integer, and the parsed floats cannot
        # tell a rounded integer from an exact one: a floating column with numbers that
        # large is read again as text (rare; the screen is one pass over the floats) and
        # stays text if one of its integers would be rounded.
        inexact = [name for name, column in zip(table.column_names, table.columns,
                                                strict=True)
                   if pa.types.is_floating(column.type) and _beyond_exact_integers(column)]
        if inexact:
            texts = read_with(parse, dict.fromkeys(inexact, pa.string()), inexact)
            for name, text in zip(inexact, texts.columns, strict=True):
                if _inexact_integer_text(text) is not None:
                    i = table.schema.get_field_index(name)
                    table = table.set_column(i, name, text)
    except UnicodeDecodeError:
        raise _not_utf8(path, dialect.encoding) from None
    except pa.ArrowInvalid as exc:
        raise _csv_error(path, layout, dialect, exc) from None
    if any(pa.types.is_binary(t) or pa.types.is_large_binary(t) for t in table.schema.types):
        raise _not_utf8(path, dialect.encoding)
    table = table.rename_columns([c.strip() for c in table.column_names])
    if layout.skip_spaces or dialect.na_values:
        table = _clean_text(table, layout.skip_spaces, dialect.na_values)
    for name in int_columns:
        i = table.schema.get_field_index(name.strip())
        table = table.set_column(i, name.strip(), _integers_unless_leading_zeros(table[i]))
    return table


@dataclass(frozen=True)
class _Layout:
    """How pyarrow is to parse one CSV file (see :func:`_csv_layout`)."""

    delimiter: str  # one character: what pyarrow splits on
    separator: str  # the separator as the user knows it (for messages)
    raw_names: list[str]
    skip_spaces: bool  # drop the spaces after a separator, in every column
    multi: str | None  # a separator of several characters, replaced by _PLACEHOLDER
    dialect: Dialect

    def read_options(self, block: int, use_threads: bool = True) -> pa_csv.ReadOptions:
        dialect = self.dialect
        if dialect.names is None and dialect.encoding is None:  # the ordinary file
            return pa_csv.ReadOptions(block_size=block, use_threads=use_threads)
        extra: dict[str, object] = {}
        if dialect.names is not None:
            extra["column_names"] = list(self.raw_names)
            extra["skip_rows"] = 1 if dialect.header else 0
        if dialect.encoding is not None:
            extra["encoding"] = dialect.encoding
        return pa_csv.ReadOptions(block_size=block, use_threads=use_threads, **extra)

    def source(self, path: Path) -> Callable[[], object]:
        """What pyarrow reads: the path (pyarrow decompresses by the suffix), or, for a
        separator of several characters, the text with each one replaced."""
        if self.multi is None:
            return lambda: path
        data = _raw_bytes(path)
        encoding = self.dialect.encoding or "utf-8"
        buffer = pa.py_buffer(data.replace(self.multi.encode(encoding),
                                           _PLACEHOLDER.encode(encoding)))
        return lambda: pa.BufferReader(buffer)


def _null_values(dialect: Dialect, skip_spaces: bool) -> list[str] | None:
    """The cells pyarrow reads as missing in numeric and date columns; None for its
    defaults (text columns get ``na_values`` in :func:`_clean_text`)."""
    if not dialect.na_values:
        return None
    na = list(dialect.na_values)
    if skip_spaces:  # ' ?' after ', ': pyarrow sees the space (numbers it trims itself)
        na += [f" {v}" for v in dialect.na_values]
    return [*pa_csv.ConvertOptions().null_values, *na]


def _clean_text(table: pa.Table, skip_spaces: bool, na_values: Sequence[str]) -> pa.Table:
    """Text columns with the spaces after the separator dropped and the ``na_values``
    made missing (only when asked for: the ordinary file never comes here)."""
    value_set = pa.array(list(na_values), type=pa.string())
    for i, field in enumerate(table.schema):
        is_dictionary = pa.types.is_dictionary(field.type)
        if not (is_dictionary or pa.types.is_string(field.type)
                or pa.types.is_large_string(field.type)):
            continue
        column = table[i]
        if is_dictionary:  # work on the labels, then encode again (two may become one)
            column = pc.cast(column, field.type.value_type)
        if skip_spaces:
            column = pc.utf8_ltrim_whitespace(column)
        if len(value_set):
            column = pc.if_else(pc.is_in(column, value_set=value_set),
                                pa.scalar(None, column.type), column)
        if is_dictionary:
            column = pc.dictionary_encode(column)
            if column.type != field.type:
                column = pc.cast(column, field.type)
        table = table.set_column(i, field.name, column)
    return table


def _csv_layout(path: Path, sep: str | None, dialect: Dialect) -> _Layout:
    """The separator (given or sniffed), the column names and how to parse a CSV file."""
    if not dialect.header and dialect.names is None:
        Dialect.of(header=False)  # (raises: the names are needed)
    header_line = _header_line(path)
    if header_line is None:
        raise InputError(f"{path} is empty; give a CSV file with a header line and rows")
    try:
        header_text = header_line.decode(dialect.encoding or "utf-8-sig")
    except UnicodeDecodeError:
        raise _not_utf8(path, dialect.encoding) from None
    multi, skip_spaces = None, dialect.skipinitialspace
    separator = _SEP_NAMES.get(sep.lower(), sep) if isinstance(sep, str) else sep
    if isinstance(separator, str) and len(separator) > 1:
        if separator.strip(" \t") == separator[0] and separator[0] not in " \t":
            separator, skip_spaces = separator[0], True  # ', ' is ',' and the spaces after
        elif any(c in separator for c in "\r\n\""):
            raise InputError(f"separator {separator!r} holds a quote or a line break; give "
                             f"the characters between two fields")
        else:
            multi = separator
    if multi is not None:
        delimiter = _PLACEHOLDER
        header_text = header_text.replace(multi, _PLACEHOLDER)
    else:
        delimiter = _resolve_sep(separator, header_text)
    fields = next(csv.reader([header_text.rstrip("\r\n")], delimiter=delimiter,
                             skipinitialspace=skip_spaces), [])
    if dialect.names is not None:
        names = [name.strip() for name in dialect.names]
        if len(names) != len(fields):
            first = "its header" if dialect.header else "its first line"
            hint = separator_hint(fields) if len(fields) == 1 else ""
            raise InputError(f"{len(names)} column names given (--names) but {first} in "
                             f"{path} has {len(fields)} field(s) separated by "
                             f"{multi or delimiter!r}; give one name per column, or the right "
                             f"separator (--sep){hint}")
        fields = names
    return _Layout(delimiter, multi or separator or delimiter, fields, skip_spaces, multi,
                   dialect)


def _is_compressed(path: Path) -> bool:
    return path.suffix.lower() in COMPRESSED_SUFFIXES


def _raw_bytes(path: Path) -> bytes:
    """The whole file, decompressed when its suffix says so."""
    if not _is_compressed(path):
        return path.read_bytes()
    try:
        with pa.input_stream(str(path), compression="detect") as stream:
            return stream.read()
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"cannot decompress {path} ({_first_line(exc)}); check that the "
                         f"file is complete") from None


def first_data_line(path: str | Path, dialect: Dialect | None = None,
                    fmt: str | None = None) -> int | None:
    """The line number in the file (from 1) of a CSV file's first data row: what the
    command line numbers rows by in its errors (exact unless a blank line or a quoted line
    break comes between rows). None for Parquet."""
    path = Path(path)
    if table_format(path, fmt) == "parquet":
        return None
    found = _first_nonblank(path)
    if found is None:
        return None
    return found[0] + (1 if (dialect or _PLAIN).header else 0)


def _header_line(path: Path) -> bytes | None:
    """The first non-blank line (pyarrow skips blank lines too); None for a blank file."""
    found = _first_nonblank(path)
    return None if found is None else found[1]


def _first_nonblank(path: Path) -> tuple[int, bytes] | None:
    """The first non-blank line and its number (from 1); None for a blank file."""
    if _is_compressed(path):
        return _first_line_compressed(path)
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            if line.lstrip(codecs.BOM_UTF8).strip():
                return number, line
    return None


def _first_line_compressed(path: Path) -> tuple[int, bytes] | None:
    """:func:`_first_nonblank` of a compressed file: decompresses only the blocks needed."""
    pending, number = b"", 0
    try:
        with pa.input_stream(str(path), compression="detect") as stream:
            while True:
                block = stream.read(1 << 16)
                pending += block
                lines = pending.split(b"\n")
                for line in lines[:-1] if block else lines:
                    number += 1
                    if line.lstrip(codecs.BOM_UTF8).strip():
                        return number, line + b"\n"
                if not block:
                    return None
                pending = lines[-1]
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"cannot decompress {path} ({_first_line(exc)}); check that the "
                         f"file is complete") from None


def _sample_schema(source: Callable[[], object], parse: pa_csv.ParseOptions,
                   layout: _Layout, null_values: list[str] | None) -> pa.Schema:
    """The column types pyarrow infers from the first block of the file."""
    convert = None if null_values is None else pa_csv.ConvertOptions(null_values=null_values)

    def sample(block: int) -> pa.Schema:
        options = layout.read_options(block, use_threads=False)
        with pa_csv.open_csv(source(), read_options=options, parse_options=parse,
                             convert_options=convert) as reader:
            return reader.schema

    return _growing_blocks(sample, _SAMPLE_BLOCK)


def _growing_blocks(read: Callable[[int], _T], block: int) -> _T:
    """``read(block_size)``, again with blocks four times larger while a row does not fit
    in one (pyarrow refuses a row longer than its block), up to 1 GiB."""
    while True:
        try:
            return read(block)
        except pa.ArrowInvalid as exc:
            if "straddl" not in str(exc) or block >= 1 << 30:
                raise
            block *= 4


def _integers_unless_leading_zeros(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column read as text because its sample looked integer: int64 as pyarrow would
    infer it, but kept as text when some value starts with a 0 followed by more (a code,
    not a number), and float64 or text when later rows are not whole numbers or not int64
    (text when float64 would round one of its integers)."""
    if pc.any(pc.starts_with(column, "0")).as_py():  # cheap test first: '0' itself is common
        trimmed = pc.utf8_trim_whitespace(column)
        code_like = pc.match_substring_regex(trimmed, "^0.")  # (no scalars: see below)
        if pc.any(code_like).as_py():
            return column
    with suppress(pa.ArrowInvalid):  # fast path: plain digits, no missing cells
        return pc.cast(column, pa.int64())
    trimmed = pc.utf8_trim_whitespace(column)
    if pc.any(pc.starts_with(trimmed, "0")).as_py():  # ' 0213' hides behind a space
        code_like = pc.match_substring_regex(trimmed, "^0.")
        if pc.any(code_like).as_py():
            return column
    # pyarrow imports pandas on its first conversion of a Python value (a scalar, a list):
    # the usual path has none, so reading can run while pandas is being imported
    null_texts = pa.array(pa_csv.ConvertOptions().null_values, type=pa.string())
    values = pc.if_else(pc.is_in(trimmed, value_set=null_texts),
                        pa.scalar(None, pa.string()), trimmed)
    with suppress(pa.ArrowInvalid):
        return pc.cast(values, pa.int64())
    try:
        floats = pc.cast(values, pa.float64())
    except pa.ArrowInvalid:
        return column
    return column if _inexact_integer_text(values) is not None else floats


#: float64 holds every integer of smaller magnitude exactly (2**53 + 1 it does not)
_EXACT_INTEGERS = 2**53
#: an integer literal of 16 significant digits or more (smaller ones are below 2**53)
_LONG_INTEGER = r"^[+-]?0*[1-9][0-9]{15,}$"


def _beyond_exact_integers(floats: pa.ChunkedArray) -> bool:
    """Whether a floating column holds a number of a magnitude where float64 no longer
    holds every integer (one pass; NaN is not looked at)."""
    bounds = pc.min_max(floats).as_py()
    low, high = bounds["min"], bounds["max"]
    return low is not None and (low <= -_EXACT_INTEGERS or high >= _EXACT_INTEGERS)


def _inexact_integer_text(text: pa.ChunkedArray | pa.Array) -> str | None:
    """The first integer literal among the cells of ``text`` (surrounding spaces allowed)
    that float64 cannot hold exactly, or None. Per distinct long literal, which are few
    where this is asked (a column with numbers beyond 2**53)."""
    trimmed = pc.utf8_trim_whitespace(text)
    candidates = pc.unique(pc.filter(trimmed, pc.match_substring_regex(trimmed, _LONG_INTEGER)))
    for literal in candidates.to_pylist():
        if int(literal) != int(float(literal)):
            return literal
    return None


def _lossless_text(table: pa.Table) -> pa.Table:
    """Each column as text where its values read back from that text unchanged (integers,
    decimals, dates, booleans, floats without NaN), else as it is."""
    for i, field in enumerate(table.schema):
        value_type = field.type.value_type if pa.types.is_dictionary(field.type) \
            else field.type
        if pa.types.is_string(value_type) or pa.types.is_large_string(value_type):
            continue
        try:
            text = pc.cast(table[i], pa.string())
            same = pc.cast(text, field.type).equals(table[i])
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            # no text form that reads back (lists, structs, binary): judged as it is
            continue
        if same:
            table = table.set_column(i, field.name, text)
    return table


def _resolve_sep(sep: str | None, head: str) -> str:
    if sep is None:
        return sniff_separator(head)
    sep = _SEP_NAMES.get(sep.lower(), sep) if isinstance(sep, str) else sep
    if not isinstance(sep, str) or len(sep.encode()) != 1 or sep in "\r\n\"":
        raise InputError(f"separator must be one ASCII character such as ',' ';' or "
                         f"'\\t' (or 'tab'), got {sep!r}")
    return sep


def sniff_separator(head: bytes | str) -> str:
    """The separator of a CSV from its first line: the most frequent of ``, ; \\t |``
    outside quotes (',' when none occurs, e.g. a one-column file)."""
    text = head.decode("utf-8", errors="replace") if isinstance(head, bytes) else head
    line = text.lstrip("\ufeff").splitlines()[0] if text.strip() else ""
    outside = "".join(part for i, part in enumerate(line.split('"')) if i % 2 == 0)
    counts = [outside.count(s) for s in CSV_SEPARATORS]
    best = max(range(len(CSV_SEPARATORS)), key=lambda i: (counts[i], -i))
    return CSV_SEPARATORS[best] if counts[best] else ","


def _check_duplicates(path: Path, names: Sequence[str]) -> None:
    seen: set[str] = set()
    dups = sorted({n for n in names if n in seen or seen.add(n)})  # type: ignore[func-returns-value]
    if dups:
        raise InputError(
            f"{path} has duplicate column names: {', '.join(map(repr, dups))}; rename them "
            f"so each column has its own name")


def _check_requested(path: Path, columns: Sequence[str], names: Sequence[str]) -> None:
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise InputError(f"column {unknown[0]!r} is not in {path}; its columns are: "
                         f"{', '.join(names)}{separator_hint(names)}")


def separator_hint(names: Sequence[str]) -> str:
    """A hint for a table read with the wrong separator: one column whose name holds
    another separator (``age;sex;zip`` read with ``,``); empty otherwise."""
    if len(names) != 1:
        return ""
    name = names[0]
    found = [s for s in (", ", *CSV_SEPARATORS) if s in name]
    if not found:
        return ""
    best = max(found, key=lambda s: (name.count(s), len(s)))
    shown = "tab" if best == "\t" else best
    return (f" (the file was read as one column named {name!r}: its separator looks like "
            f"{best!r}; pass --sep {shown!r})")


def _csv_error(path: Path, layout: _Layout, dialect: Dialect, exc: Exception) -> InputError:
    message = str(exc)
    sep = layout.separator
    if "Empty CSV" in message:
        return InputError(f"{path} is empty; give a CSV file with a header line and rows")
    if "UTF8" in message or "UTF-8" in message:
        return _not_utf8(path, dialect.encoding)
    if "Expected" in message and "columns" in message:
        found = _ragged_line(path, layout)
        if found is not None:
            line, got, expected = found
            first = "the header" if dialect.header else "the first line"
            return InputError(
                f"{path} line {line} has {got} field(s) but {first} has {expected} (a line "
                f"number of the file, counting from 1 at its first line); fix that row (a "
                f"stray {sep!r} or quote?) or give the right separator (--sep)")
    return InputError(f"cannot read {path} as CSV ({_first_line(exc)}); check the "
                      f"separator (--sep) and quoting")


def _ragged_line(path: Path, layout: _Layout) -> tuple[int, int, int] | None:
    """(line number in the file, fields, expected) of the first row whose field count
    differs from the first row's. Error path only: a Python pass over the file is fine."""
    import io

    text = _raw_bytes(path).decode(layout.dialect.encoding or "utf-8-sig", errors="replace")
    if layout.multi is not None:
        text = text.replace(layout.multi, _PLACEHOLDER)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=layout.delimiter,
                        skipinitialspace=layout.skip_spaces)
    expected = None
    for row in reader:
        if not row:  # blank lines are skipped by the reader too
            continue
        if expected is None:
            expected = len(row)
        elif len(row) != expected:
            return reader.line_num, len(row), expected
    return None


def _not_utf8(path: Path, encoding: str | None = None) -> InputError:
    """Locate the first byte that is not UTF-8 (or not ``encoding``; error path: reads the
    whole file)."""
    data = _raw_bytes(path)
    if encoding is not None:
        try:
            data.decode(encoding)
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            return InputError(f"{path} is not {encoding} text: line {line}, byte {exc.start} "
                              f"is 0x{data[exc.start]:02x}; give its encoding (--encoding)")
        return InputError(f"{path} is not {encoding} text; give its encoding (--encoding)")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return InputError(
            f"{path} is not UTF-8 text: line {line}, byte {exc.start} (column {column}) is "
            f"0x{data[exc.start]:02x}; give its encoding (e.g. --encoding latin-1) or "
            f"re-save the file as UTF-8")
    return InputError(f"{path} is not UTF-8 text; re-save it as UTF-8")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def to_pandas(table: pa.Table, categorical_text: bool = False) -> pd.DataFrame:
    """A table read by :func:`read_arrow` as :func:`read_table` returns it: numpy-backed
    columns, text as object (or Categorical, see :func:`read_table`), dictionaries decoded
    unless text is wanted categorical, decimals as float64 where every value converts
    exactly and as text otherwise."""
    for i, field in enumerate(table.schema):
        if pa.types.is_decimal(field.type):
            table = table.set_column(i, field.name, _exact_decimals(table[i]))
            field = table.schema.field(i)
        is_text = pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
        if categorical_text and is_text:
            table = table.set_column(i, field.name, pc.dictionary_encode(table[i]))
        elif pa.types.is_dictionary(field.type) and not categorical_text:
            table = table.set_column(i, field.name, pc.cast(table[i], field.type.value_type))
    frame = table.to_pandas(date_as_object=False, split_blocks=True, self_destruct=True)
    del table
    # Arrow's allocator keeps the parse buffers for reuse; hand them back, or a million-row
    # read holds ~0.4 GiB it no longer needs for the rest of the run
    pa.default_memory_pool().release_unused()
    return frame


def _exact_decimals(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A decimal column as float64 when every value comes back from the float at the
    column's scale (``0.10`` does, ``12345678901234567891`` does not), else as its text."""
    text = pc.cast(column, pa.string())
    # through the text: Arrow's direct cast is not correctly rounded (-1.13 would become
    # -1.1300000000000001)
    with suppress(pa.ArrowInvalid):
        floats = pc.cast(text, pa.float64())
        if pc.cast(floats, column.type).equals(column):
            return floats
    return text
