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

Limits (a hostile file is refused in one line naming the limit, never read for hours or
until memory runs out):

* ``max_input_bytes`` (``--max-input-bytes``): the most bytes of table read from one file,
  a compressed file's counted as they decompress (a 1 MB ``.gz`` can hold terabytes).
  Default: :func:`default_max_input_bytes`, twice the machine's physical memory (a table
  read from more text than that could not be held anyway).
* :data:`MAX_LINE_BYTES`: the most bytes one line (a row, the header too) may hold; the
  parser holds a whole row in one block, so this bounds what a row costs.
* :data:`MAX_FIELD_BYTES`: the most bytes one cell may hold.
* :data:`MAX_NUMBER_DIGITS`: the most digits of an integer in a column read as numbers.
* :data:`MAX_COLUMNS`: the most columns a table may have.
"""

from __future__ import annotations

import codecs
import csv
import io
import math
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from anonkit._util.parallel import on_all_cores
from anonkit._util.progress import Meter
from anonkit.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

_T = TypeVar("_T")

__all__ = [
    "COMPRESSED_SUFFIXES",
    "CSV_SEPARATORS",
    "MAX_COLUMNS",
    "MAX_FIELD_BYTES",
    "MAX_LINE_BYTES",
    "MAX_NUMBER_DIGITS",
    "PARQUET_SUFFIXES",
    "Dialect",
    "check_input_file",
    "column_list",
    "default_max_input_bytes",
    "first_data_line",
    "parse_size",
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

#: The most bytes one line of a CSV file (a row, the header too) may hold. The parser
#: needs a whole row in one block: blocks grow up to this size, no further, so a file of
#: one endless line is refused instead of filling the memory. Wide rows (thousands of
#: columns of long text) stay well below it.
MAX_LINE_BYTES = 128 << 20
#: The most bytes one cell may hold (a spreadsheet's cell holds at most 32,767
#: characters; this is a thousand times that).
MAX_FIELD_BYTES = 32 << 20
#: The most digits of an integer in a column read as numbers: Python's own limit on
#: turning text into an int (a guard against quadratic conversions). No measurement has
#: that many; a code that does is read as text when declared so (``--kind c=categorical``).
MAX_NUMBER_DIGITS = 4300
#: The most columns a table may have: every column costs its own parse, type inference
#: and encoding, and a table this wide takes minutes already.
MAX_COLUMNS = 100_000
#: ``--max-input-bytes`` defaults to this many times the machine's physical memory
INPUT_MEMORY_MULTIPLE = 2
#: and to this where the system does not tell its memory (os.sysconf)
_FALLBACK_MAX_INPUT_BYTES = 64 << 30
#: bytes read at a time while scanning a file for lines
_SCAN_BLOCK = 1 << 20
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
#: a byte that is not ASCII whitespace (what bytes.strip() strips)
_NOT_BLANK = re.compile(rb"[^ \t\n\r\x0b\x0c]")


def default_max_input_bytes() -> int:
    """The default of ``max_input_bytes``: :data:`INPUT_MEMORY_MULTIPLE` (2) times the
    machine's physical memory (``os.sysconf``: page size times physical pages), or 64 GiB
    where the system does not tell. Generous on purpose: a table read from more text than
    twice the memory cannot be held anyway (its numbers take 8 bytes each), while a
    decompression bomb is stopped long before it fills the disk or the swap."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        memory = 0
    return INPUT_MEMORY_MULTIPLE * memory if memory > 0 else _FALLBACK_MAX_INPUT_BYTES


def parse_size(value: int | str, what: str = "--max-input-bytes") -> int:
    """A number of bytes: an integer, or a text such as ``500M``, ``8G`` or ``1.5GiB``
    (K, M, G, T, P are powers of 1024; a trailing ``B`` or ``iB`` is allowed)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InputError(f"{what} must be a number of bytes such as 8G or 500M, got {value!r}")
    if isinstance(value, int):
        size = value
    else:
        found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?\s*", value.lower())
        if found is None:
            raise InputError(f"{what} must be a number of bytes such as 8G, 500M or "
                             f"1000000, got {value!r}")
        size = int(float(found.group(1)) * _UNITS[found.group(2)])
    if size <= 0:
        raise InputError(f"{what} must be a positive number of bytes, got {value!r}")
    return size


def _size_text(size: int) -> str:
    """``size`` bytes for a message: ``16 MiB``, ``47.1 GiB``, ``500 bytes``."""
    for unit, name in ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= unit:
            return f"{size / unit:.3g} {name}"
    return f"{size} bytes"


@dataclass(frozen=True)
class Dialect:
    """How a CSV file is written, where it differs from a plain UTF-8 CSV with a header.

    ``header=False``: the first line is data; ``names`` then gives the columns (with a
    header, ``names`` replaces the header's). ``na_values``: cells that are missing in
    every column. ``skipinitialspace``: spaces after a separator are dropped in every
    column. ``encoding``: the file's text encoding (``latin-1``, ``cp1252``, ...).
    ``max_input_bytes``: the most bytes read from the file, counted after decompression
    (None: :func:`default_max_input_bytes`); it applies to Parquet files too."""

    header: bool = True
    names: tuple[str, ...] | None = None
    na_values: tuple[str, ...] = ()
    skipinitialspace: bool = False
    encoding: str | None = None
    max_input_bytes: int | None = None

    @property
    def input_limit(self) -> int:
        """``max_input_bytes``, or its default."""
        return self.max_input_bytes or default_max_input_bytes()

    @classmethod
    def of(cls, header: bool = True, names: Sequence[str] | None = None,
           na_values: Sequence[str] | str = (), skipinitialspace: bool = False,
           encoding: str | None = None,
           max_input_bytes: int | str | None = None) -> Dialect:
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
            encoding = _text_encoding(encoding)
        limit = None if max_input_bytes is None else parse_size(max_input_bytes)
        return cls(bool(header), names, na, bool(skipinitialspace), encoding, limit)


def _text_encoding(name: object) -> str | None:
    """The canonical name of a text encoding a CSV file can be in; None for UTF-8. Refused:
    names Python does not know, codecs that are not text encodings (``rot13``, ``base64``:
    Python knows them, but they turn text into text or bytes into bytes) and encodings that
    do not write ASCII as ASCII (UTF-16, UTF-32), which the line scan and the parser need."""
    hint = "use e.g. utf-8, latin-1 or cp1252"
    if not isinstance(name, str):
        raise InputError(f"the encoding must be a name such as utf-8, got {name!r}")
    try:
        info = codecs.lookup(name)
    except LookupError:
        raise InputError(f"unknown encoding {name!r}; {hint}") from None
    # (_is_text_encoding is how the codec registry marks the codecs str.encode may use)
    if not getattr(info, "_is_text_encoding", True):
        raise InputError(f"encoding {name!r} is not a text encoding (it is one of Python's "
                         f"codecs for transforms); {hint}")
    if info.name in ("utf-8", "utf-8-sig"):
        return None
    try:
        ascii_safe = "a,\n".encode(info.name) == b"a,\n"
    except (UnicodeError, LookupError, TypeError):
        ascii_safe = False
    if not ascii_safe:
        raise InputError(f"encoding {name!r} does not write ASCII characters as one byte "
                         f"each (as UTF-16 and UTF-32 do not), which anonkit reads; re-save "
                         f"the file as UTF-8")
    return info.name


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
    max_input_bytes: int | str | None = None,
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

    ``max_input_bytes`` (bytes, or a text such as ``"8G"``): the most bytes read from the
    file, a compressed one's counted as they decompress; default
    :func:`default_max_input_bytes`. See the module docstring for the other limits.
    """
    table = read_arrow(path, sep, columns, text_columns=text_columns, fmt=fmt,
                       dictionary_text=categorical_text, as_text=as_text,
                       dialect=Dialect.of(header, names, na_values, skipinitialspace,
                                          encoding, max_input_bytes))
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
    meter: Meter | None = None,
) -> pa.Table:
    """:func:`read_table` without the conversion to pandas: an Arrow table (imports no
    pandas, so a caller can read while pandas is still being imported).

    ``dictionary_text=True`` (CSV) dictionary-encodes text columns while parsing, which
    :func:`to_pandas` with ``categorical_text=True`` then takes as they are; the
    ``text_columns`` stay plain text. ``as_text=True`` reads every column as text (see the
    module docstring); then with ``dictionary_text`` every CSV column is a dictionary.
    ``dialect`` (CSV): see :class:`Dialect`; None is a plain CSV with a header line. Its
    ``max_input_bytes`` applies to Parquet files too."""
    path = Path(path)
    dialect = dialect or _PLAIN
    check_input_file(path, limit=dialect.input_limit if not _is_compressed(path) else None)
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
    parquet = table_format(path, fmt) == "parquet"
    if parquet:
        table = _read_parquet(path, columns, dialect.input_limit)
        if as_text:
            table = _lossless_text(table)
    else:
        table = _read_csv(path, sep, columns, list(text_columns), dictionary_text, as_text,
                          dialect, meter)
    if table.num_rows == 0:
        what = "has no rows" if parquet else "has a header but no data rows"
        raise InputError(f"{path} {what}; give at least one data row")
    _check_cell_sizes(path, table, lambda: None if parquet else
                      first_data_line(path, dialect, fmt))
    return table


def _first_entries(folder: Path, most: int = 100) -> list[Path]:
    """Up to ``most`` entries of a folder (enough to tell what it holds; a huge folder is
    not listed in full), none if it cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            return [Path(e.path) for _, e in zip(range(most), entries, strict=False)]
    except OSError:
        return []


def check_input_file(path: str | Path, what: str = "input file", *,
                     expected: str = "a CSV or Parquet file", limit: int | None = None
                     ) -> None:
    """Refuse, naming what it is, a path that is not a readable regular file: a missing
    file, a folder, a named pipe (it could be read only once, and anonkit reads its input
    more than once), a device (``/dev/zero`` never ends), a socket, or a file it may not
    read. ``limit``: refuse a file larger than that many bytes (``--max-input-bytes``).
    ``what`` names the file in the message (``"hierarchy file"``), ``expected`` what to
    give instead."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        broken = " (a symbolic link to a file that does not exist)" if path.is_symlink() \
            else ""
        raise InputError(f"{what} not found: {path}{broken}; check the path") from None
    except PermissionError:
        raise InputError(f"cannot reach {what} {path}: permission denied on a folder of "
                         f"its path; check the folders' permissions") from None
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror}") from None
    kind = ("a folder" if stat.S_ISDIR(mode) else
            "a named pipe (FIFO), which can be read only once" if stat.S_ISFIFO(mode) else
            "a device, not a file" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
            "a socket, not a file" if stat.S_ISSOCK(mode) else
            None if stat.S_ISREG(mode) else "not a regular file")
    if stat.S_ISDIR(mode) and any(p.suffix.lower() in (".parquet", ".pq")
                                  for p in _first_entries(path)):
        raise InputError(f"{what} {path} is a folder of Parquet files (as --engine dask "
                         f"writes a release): read it with --engine dask, or give one file")
    if kind is not None:
        save = "" if stat.S_ISDIR(mode) else " (save what it gives to a file first)"
        raise InputError(f"{what} {path} is {kind}; give {expected}{save}")
    try:
        with open(path, "rb"):
            pass
    except PermissionError:
        raise InputError(f"cannot read {what} {path}: permission denied; check its "
                         f"permissions (chmod u+r)") from None
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror}") from None
    if limit is not None:
        size = path.stat().st_size
        if size > limit:
            raise _too_big(path, limit, size, decompressed=False)


def table_columns(path: str | Path, sep: str | None = None, fmt: str | None = None,
                  dialect: Dialect | None = None) -> list[str]:
    """The column names of a CSV or Parquet file (stripped, as :func:`read_table` gives
    them), from its header or schema alone (or the dialect's ``names``)."""
    path = Path(path)
    dialect = dialect or _PLAIN
    check_input_file(path, limit=dialect.input_limit if not _is_compressed(path) else None)
    if table_format(path, fmt) == "parquet":
        try:
            names = pq.read_schema(path).names
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"cannot read {path} as Parquet ({_first_line(exc)})") from None
        _check_width(path, len(names))
        return [name.strip() for name in names]
    return [name.strip() for name in _csv_layout(path, sep, dialect).raw_names]


def _read_parquet(path: Path, columns: list[str] | None, limit: int) -> pa.Table:
    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _not_parquet(path, exc) from None
    # before reading: pyarrow refuses to pick a column whose name is taken twice with a
    # message about field references ("Multiple matches for FieldRef")
    _check_width(path, len(schema.names))
    _check_duplicates(path, schema.names)
    if columns is not None:
        _check_requested(path, columns, schema.names)
    try:
        # what the columns take decompressed, from the file's own account of itself (a
        # page of zeros compresses a thousandfold): refused before anything is inflated
        metadata = pq.read_metadata(path)
        groups = range(metadata.num_row_groups)
        if columns is None:
            size = sum(metadata.row_group(g).total_byte_size for g in groups)
        else:  # the leaves of the columns read (a nested column has several)
            wanted = set(columns)
            leaves = [i for i in range(metadata.num_columns)
                      if metadata.schema.column(i).path in wanted
                      or metadata.schema.column(i).path.split(".")[0] in wanted]
            size = sum(metadata.row_group(g).column(i).total_uncompressed_size
                       for g in groups for i in leaves)
        if size > limit:
            raise _too_big(path, limit, size)
        table = pq.read_table(path, columns=columns)
    except InputError:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _not_parquet(path, exc) from None
    return table


def _not_parquet(path: Path, exc: BaseException) -> InputError:
    return InputError(f"cannot read {path} as Parquet ({_first_line(exc)}); check that it is "
                      f"a complete Parquet file, or give a .csv file")


def _check_width(path: Path, columns: int) -> None:
    """Refuse a table of more than :data:`MAX_COLUMNS` columns."""
    if columns > MAX_COLUMNS:
        raise InputError(f"{path} has {columns:,} columns, more than the {MAX_COLUMNS:,} "
                         f"anonkit reads (a limit of anonkit: every column costs its own "
                         f"parse and encoding); split the table by columns, or check the "
                         f"separator (--sep)")


def _too_big(path: Path, limit: int, size: int | None = None,
             decompressed: bool = True) -> InputError:
    """The error for an input past ``--max-input-bytes`` (``size`` None: it decompresses
    to more than the limit, counted while reading)."""
    if size is None:
        what = f"decompresses to more than {limit:,} bytes ({_size_text(limit)})"
    else:
        what = (f"holds {size:,} bytes once decompressed" if decompressed else
                f"is {size:,} bytes") + f", more than {limit:,} ({_size_text(limit)})"
    return InputError(
        f"{path} {what}, the most --max-input-bytes allows (default: twice this machine's "
        f"memory, {_size_text(default_max_input_bytes())}); if the file is genuine, raise "
        f"the limit with --max-input-bytes")


def _read_csv(path: Path, sep: str | None, columns: list[str] | None,
              text_columns: list[str], dictionary_text: bool = False,
              as_text: bool = False, dialect: Dialect = _PLAIN,
              meter: Meter | None = None) -> pa.Table:
    layout = _csv_layout(path, sep, dialect)
    raw_names = layout.raw_names
    # raw names (before stripping) are what pyarrow matches in include_columns/column_types
    header = [name.strip() for name in raw_names]
    _check_duplicates(path, header)
    raw_of = dict(zip(header, raw_names, strict=True))
    if columns is not None:
        _check_requested(path, columns, header)
    unknown_text = [c for c in text_columns if c not in raw_of]  # (a set: tables are wide)
    if unknown_text:
        raise InputError(f"text column {unknown_text[0]!r} is not in {path}; its columns "
                         f"are: {column_list(header)}{separator_hint(header)}")
    wanted = {raw_of[c] for c in (header if columns is None else columns)}
    forced = wanted if as_text else {raw_of[c] for c in text_columns} & wanted
    include = None if columns is None else [raw_of[c] for c in columns]
    source = layout.source(path, meter)
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
            convert_options=convert), _READ_BLOCK, path, layout)

    def read(parse: pa_csv.ParseOptions) -> tuple[pa.Table, list[str]]:
        if as_text:  # nothing to infer
            text = pa.dictionary(pa.int32(), pa.string()) if dictionary_text else pa.string()
            return read_with(parse, dict.fromkeys(forced, text)), []
        sample = [f for f in _sample_schema(source, parse, layout, null_values, path)
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
            position = {name: i for i, name in enumerate(table.column_names)}
            kept = {position[name]: text
                    for name, text in zip(inexact, texts.columns, strict=True)
                    if _inexact_integer_text(text) is not None}
            for i, text in kept.items():
                _check_number_digits(path, table.column_names[i].strip(), text, dialect)
            table = _with_columns(table, kept)
    except UnicodeDecodeError:
        raise _not_utf8(path, dialect.encoding, dialect.input_limit) from None
    except pa.ArrowInvalid as exc:
        raise _csv_error(path, layout, dialect, exc) from None
    except (pa.ArrowException, OSError) as exc:  # (an I/O error half-way, a codec's own)
        raise InputError(f"cannot read {path} as CSV ({_arrow_reason(exc)}); check that the "
                         f"file is complete and readable") from None
    if any(pa.types.is_binary(t) or pa.types.is_large_binary(t) for t in table.schema.types):
        raise _not_utf8(path, dialect.encoding, dialect.input_limit)
    table = table.rename_columns([c.strip() for c in table.column_names])
    if layout.skip_spaces or dialect.na_values:
        table = _clean_text(table, layout.skip_spaces, dialect.na_values)
    if int_columns:
        position = {name: i for i, name in enumerate(table.column_names)}
        numbers = {position[name.strip()]: _integers_unless_leading_zeros(
            table[position[name.strip()]]) for name in int_columns}
        for i, column in numbers.items():
            if pa.types.is_string(column.type):  # (kept as text: are its numbers sane?)
                _check_number_digits(path, table.column_names[i], column, dialect)
        table = _with_columns(table, numbers)
    return table


def _check_number_digits(path: Path, name: str, text: pa.ChunkedArray,
                         dialect: Dialect) -> None:
    """Refuse an integer of more than :data:`MAX_NUMBER_DIGITS` digits in a column read
    as numbers (kept as text because float64 cannot hold it), naming its line."""
    trimmed = pc.utf8_trim_whitespace(text)
    long = pc.greater(pc.utf8_length(trimmed), MAX_NUMBER_DIGITS)
    if not pc.any(long).as_py():
        return
    huge = pc.and_(long, pc.match_substring_regex(trimmed, r"^[+-]?[0-9]+$"))
    row = pc.index(huge, True).as_py()
    if row < 0:
        return
    digits = len(trimmed[row].as_py().lstrip("+-"))
    line = first_data_line(path, dialect)
    where = f"line {line + row}" if line is not None else f"row {row + 1}"
    raise InputError(f"{path} {where}: column {name!r} holds a number of {digits:,} digits, "
                     f"more than the {MAX_NUMBER_DIGITS:,} a number may have (a limit of "
                     f"anonkit, as of Python's int()); if the column is a code rather than "
                     f"a number, declare it text (--kind {name}=categorical)")


def _with_columns(table: pa.Table, replaced: dict[int, pa.ChunkedArray | pa.Array]
                  ) -> pa.Table:
    """``table`` with the columns at the given positions replaced, names and metadata
    kept, in one step: ``set_column`` copies the table's list of columns each time, which
    made a loop over the columns of a wide table quadratic (hours for 100,000 columns)."""
    if not replaced:
        return table
    columns: list[pa.ChunkedArray | pa.Array] = list(table.columns)
    for i, column in replaced.items():
        columns[i] = column
    return pa.Table.from_arrays(columns, names=table.column_names,
                                metadata=table.schema.metadata)


@dataclass(frozen=True)
class _Layout:
    """How pyarrow is to parse one CSV file (see :func:`_csv_layout`)."""

    delimiter: str  # one character: what pyarrow splits on
    separator: str  # the separator as the user knows it (for messages)
    raw_names: list[str]
    skip_spaces: bool  # drop the spaces after a separator, in every column
    multi: str | None  # a separator of several characters, replaced by _PLACEHOLDER
    dialect: Dialect
    first_line: int = 1  # the line number of the header (the first data line without one)

    def read_options(self, block: int, use_threads: bool = True) -> pa_csv.ReadOptions:
        dialect = self.dialect
        # pyarrow keeps the spaces after a separator in the header's names: with
        # skip_spaces the names are given (" b" would not be the "b" asked for)
        named = dialect.names is not None or (self.skip_spaces and dialect.header)
        if not named and dialect.encoding is None:  # the ordinary file
            return pa_csv.ReadOptions(block_size=block, use_threads=use_threads)
        extra: dict[str, object] = {}
        if named:
            extra["column_names"] = list(self.raw_names)
            # (pyarrow counts blank lines among the rows it skips, and so does first_line)
            extra["skip_rows"] = self.first_line if dialect.header else 0
        if dialect.encoding is not None:
            extra["encoding"] = dialect.encoding
        return pa_csv.ReadOptions(block_size=block, use_threads=use_threads, **extra)

    def source(self, path: Path, meter: Meter | None = None) -> Callable[[], object]:
        """What pyarrow reads: the path; a compressed file's text as it decompresses,
        counted against ``max_input_bytes``; or, for a separator of several characters,
        the text with each one replaced. ``meter``: told the bytes handed to the parser
        (from 0 at each read)."""
        limit = self.dialect.input_limit
        if self.multi is None:
            if _is_compressed(path):
                return lambda: _Decompressed(path, limit, meter)
            if meter is not None:
                return lambda: _Counted(path, meter)
            return lambda: str(path)
        data = _raw_bytes(path, limit)
        encoding = self.dialect.encoding or "utf-8"
        buffer = pa.py_buffer(data.replace(self.multi.encode(encoding),
                                           _PLACEHOLDER.encode(encoding)))
        return lambda: pa.BufferReader(buffer)


class _Decompressed(io.RawIOBase):
    """A compressed file's bytes as they decompress, refused past ``limit`` of them: a
    1 MB ``.gz`` can hold a terabyte of one repeated byte (a decompression bomb), so the
    size of the file says nothing. Read by pyarrow's parser a block at a time, so the
    Python call per read costs nothing next to the parse."""

    def __init__(self, path: Path, limit: int, meter: Meter | None = None) -> None:
        super().__init__()
        self.path, self.limit, self.given = path, limit, 0
        self.meter = meter
        if meter is not None:
            meter.total, meter.done = None, 0
        try:
            self._stream = pa.input_stream(str(path), compression="detect")
        except (pa.ArrowException, OSError) as exc:
            raise _not_decompressed(path, exc) from None

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        # never more than one byte past the limit at once: that byte is the proof
        left = self.limit + 1 - self.given
        want = left if size is None or size < 0 else min(size, left)
        parts: list[bytes] = []
        try:
            while want > 0:
                # in pieces: Arrow allocates what is asked for before it decompresses
                part = self._stream.read(min(want, _READ_BLOCK))
                if not part:
                    break
                parts.append(part)
                want -= len(part)
        except (pa.ArrowException, OSError) as exc:
            raise _not_decompressed(self.path, exc) from None
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        self.given += len(data)
        if self.meter is not None:
            self.meter.done = self.given
        if self.given > self.limit:
            raise _too_big(self.path, self.limit)
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        with suppress(Exception):
            self._stream.close()
        super().close()


class _Counted(io.RawIOBase):
    """A plain file whose bytes are counted into ``meter`` as the parser takes them (a
    block of megabytes at a time, so the Python call per read costs nothing)."""

    def __init__(self, path: Path, meter: Meter) -> None:
        super().__init__()
        self._file = open(path, "rb", buffering=0)  # noqa: SIM115 (closed with this)
        self.meter = meter
        meter.total, meter.done = os.fstat(self._file.fileno()).st_size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        count = self._file.readinto(buffer) or 0
        self.meter.advance(count)
        return count

    def close(self) -> None:
        self._file.close()
        super().close()


def _not_decompressed(path: Path, exc: BaseException) -> InputError:
    return InputError(f"cannot decompress {path} ({_first_line(exc)}); check that the file "
                      f"is complete")


#: the first bytes of files that are tables but not text: what they are, and what to do
_NOT_TEXT = (
    (b"PAR1", "a Parquet file", "give it a .parquet name"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an Excel 97-2003 workbook (.xls) or another "
     "Office file", "save the sheet as CSV (UTF-8) or Parquet and give that file"),
    (b"SQLite format 3\x00", "an SQLite database", "export the table as CSV or Parquet"),
)


def _refuse_other_formats(path: Path, limit: int | None) -> None:
    """Name a spreadsheet, a database or a Parquet file given as CSV, instead of the
    encoding error its bytes would give (``--encoding latin-1`` would then "read" it as
    one line of noise)."""
    try:
        with _open_bytes(path, limit or default_max_input_bytes()) as stream:
            head = stream.read(4096)
    except (OSError, InputError):
        return  # the reader itself reports a file it cannot open or decompress
    found = next(((what, todo) for magic, what, todo in _NOT_TEXT if head.startswith(magic)),
                 None)
    if found is None and head.startswith(b"PK\x03\x04"):
        found = (("an Excel workbook (.xlsx)" if b"xl/" in head or b"[Content_Types]" in head
                  else "an OpenDocument spreadsheet" if b"opendocument.spreadsheet" in head
                  else "a ZIP archive"),
                 "save the sheet as CSV (UTF-8) or Parquet and give that file"
                 if b"xl/" in head or b"[Content_Types]" in head
                 or b"opendocument.spreadsheet" in head
                 else "extract the table from it and give that file")
    if found is not None:
        raise InputError(f"{path} is {found[0]}, not CSV text; {found[1]}")


@contextmanager
def _open_bytes(path: Path, limit: int) -> Iterator[io.BufferedIOBase]:
    """The file's bytes as a stream, decompressed when its suffix says so (and then
    refused past ``limit``)."""
    raw: io.RawIOBase = _Decompressed(path, limit) if _is_compressed(path) \
        else open(path, "rb", buffering=0)  # noqa: SIM115 (closed by the reader below)
    with io.BufferedReader(raw, buffer_size=_SCAN_BLOCK) as stream:
        yield stream


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
    cleaned: dict[int, pa.ChunkedArray] = {}
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
        cleaned[i] = column
    return _with_columns(table, cleaned)


def _csv_layout(path: Path, sep: str | None, dialect: Dialect) -> _Layout:
    """The separator (given or sniffed), the column names and how to parse a CSV file."""
    if not dialect.header and dialect.names is None:
        Dialect.of(header=False)  # (raises: the names are needed)
    _refuse_other_formats(path, dialect.input_limit)
    found = _first_nonblank(path, dialect.input_limit)
    if found is None:
        raise InputError(f"{path} is empty; give a CSV file with a header line and rows")
    first_line, header_line = found
    try:
        header_text = header_line.decode(dialect.encoding or "utf-8-sig")
    except UnicodeDecodeError:
        raise _not_utf8(path, dialect.encoding, dialect.input_limit) from None
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
    line = header_text.rstrip("\r\n")
    if "\r" in line and not _quoted_cr(line):
        raise _cr_only(path)
    try:
        with _csv_field_limit():
            fields = next(csv.reader([line], delimiter=delimiter,
                                     skipinitialspace=skip_spaces), [])
    except csv.Error as exc:
        raise InputError(f"cannot read the header line of {path} ({exc}); check its "
                         f"quotes and the separator (--sep)") from None
    _check_width(path, len(fields))
    if fields and max(len(name.encode()) for name in fields) > MAX_FIELD_BYTES:
        raise InputError(f"a column name in the header of {path} is longer than the "
                         f"{_size_text(MAX_FIELD_BYTES)} a cell may hold (a limit of "
                         f"anonkit); check that this is a CSV file with a header line")
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
                   dialect, first_line)


def _quoted_cr(line: str) -> bool:
    """Whether every carriage return of the header line stands inside quotes (a column
    name may hold one; a CR outside quotes is a line end)."""
    return all(i % 2 == 1 for i, part in enumerate(line.split('"')) if "\r" in part)


def _cr_only(path: Path) -> InputError:
    return InputError(f"{path} ends its lines with a carriage return (CR) alone, as old Mac "
                      f"files do, which anonkit does not read; convert the line ends to LF "
                      f"(e.g. tr '\\r' '\\n' < old.csv > new.csv)")


@contextmanager
def _csv_field_limit() -> Iterator[None]:
    """Python's csv module, for the header and the error messages, takes fields up to
    :data:`MAX_LINE_BYTES` (its own default, 128 KiB, is far below what the parser reads)."""
    previous = csv.field_size_limit(MAX_LINE_BYTES)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _is_compressed(path: Path) -> bool:
    return path.suffix.lower() in COMPRESSED_SUFFIXES


def _raw_bytes(path: Path, limit: int) -> bytes:
    """The whole file, decompressed when its suffix says so (refused past ``limit``)."""
    if not _is_compressed(path):
        return path.read_bytes()
    with _Decompressed(path, limit) as stream:
        return stream.read()


def first_data_line(path: str | Path, dialect: Dialect | None = None,
                    fmt: str | None = None) -> int | None:
    """The line number in the file (from 1) of a CSV file's first data row: what the
    command line numbers rows by in its errors (exact unless a blank line or a quoted line
    break comes between rows). None for Parquet."""
    path = Path(path)
    if table_format(path, fmt) == "parquet":
        return None
    dialect = dialect or _PLAIN
    found = _first_nonblank(path, dialect.input_limit)
    if found is None:
        return None
    return found[0] + (1 if dialect.header else 0)


def _header_line(path: Path, limit: int) -> bytes | None:
    """The first non-blank line (pyarrow skips blank lines too); None for a blank file."""
    found = _first_nonblank(path, limit)
    return None if found is None else found[1]


def _first_nonblank(path: Path, limit: int) -> tuple[int, bytes] | None:
    """The first non-blank line (only ASCII whitespace, after a UTF-8 byte-order mark at
    the start of the file) and its number (from 1); None for a blank file.

    Linear in the bytes it reads, a compressed file's decompressed only as far as needed:
    each block is searched once (a run of blank lines with one regular expression, the end
    of the line with one ``find``), and a line longer than :data:`MAX_LINE_BYTES` is refused
    instead of held. (Splitting what was read so far again at every block made a 1 GiB
    first line take hours.)"""
    with _open_bytes(path, limit) as stream:
        number = 1  # the line being read
        held: list[bytes] = []  # its bytes from earlier blocks
        size = 0  # how many bytes those are
        blank = True  # whether it is blank so far
        start = True
        while True:
            block = stream.read(_SCAN_BLOCK)
            pos = 0
            if start:
                start = False
                if block.startswith(codecs.BOM_UTF8):  # kept in the line, not looked at
                    held.append(block[:3])
                    size, pos = 3, 3
            if not block:
                return (number, b"".join(held)) if not blank else None
            if blank:
                found = _NOT_BLANK.search(block, pos)
                stop = len(block) if found is None else found.start()
                newline = block.rfind(b"\n", pos, stop)
                if newline >= 0:  # the blank lines that end before the first byte that is not
                    number += block.count(b"\n", pos, newline + 1)
                    held, size, pos = [], 0, newline + 1
                blank = found is None
            if not blank:
                end = block.find(b"\n", pos)
                if end >= 0:
                    return number, b"".join([*held, block[pos:end + 1]])
            held.append(block[pos:])
            size += len(block) - pos
            if size > MAX_LINE_BYTES:
                raise _long_line(path, number, b"".join(held[:2])[:_SCAN_BLOCK])


def _long_line(path: Path, number: int | None, head: bytes = b"") -> InputError:
    """The error for a line past :data:`MAX_LINE_BYTES` (``number`` None: a row of
    several lines, a quoted field holding line breaks)."""
    where = f"line {number}" if number is not None else "a row"
    cr = re.search(rb"\r(?!\n)", head) is not None
    reason = ("; its lines seem to end in a carriage return (CR) alone, as old Mac files "
              "do: convert the line ends to LF (e.g. tr '\\r' '\\n' < old.csv > new.csv)"
              if cr else
              "; check that this is a CSV file, that no quote is left open, or split that line"
              if number is not None else
              " (a quoted field with line breaks, or a quote left open?); check the quotes")
    return InputError(f"{path} {where} is longer than {_size_text(MAX_LINE_BYTES)}, the most "
                      f"a line (a row) may hold (a limit of anonkit){reason}")


def _find_long_line(path: Path, limit: int) -> int | None:
    """The number (from 1) of the first line of the file longer than
    :data:`MAX_LINE_BYTES`, or None. Error path: one pass over the file, a block at a time
    (numpy finds the line ends; no Python per line)."""
    import numpy as np

    number, run = 1, 0  # the line being read, and its bytes in earlier blocks
    with _open_bytes(path, limit) as stream:
        while block := stream.read(8 << 20):
            ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == ord("\n"))
            if not len(ends):
                run += len(block)
                if run > MAX_LINE_BYTES:
                    return number
                continue
            if run + ends[0] > MAX_LINE_BYTES:
                return number
            longer = np.flatnonzero(np.diff(ends) - 1 > MAX_LINE_BYTES)
            if len(longer):
                return number + 1 + int(longer[0])
            number += len(ends)
            run = len(block) - int(ends[-1]) - 1
            if run > MAX_LINE_BYTES:
                return number
    return None


def _sample_schema(source: Callable[[], object], parse: pa_csv.ParseOptions,
                   layout: _Layout, null_values: list[str] | None, path: Path) -> pa.Schema:
    """The column types pyarrow infers from the first block of the file."""
    convert = None if null_values is None else pa_csv.ConvertOptions(null_values=null_values)

    def sample(block: int) -> pa.Schema:
        options = layout.read_options(block, use_threads=False)
        with pa_csv.open_csv(source(), read_options=options, parse_options=parse,
                             convert_options=convert) as reader:
            return reader.schema

    return _growing_blocks(sample, _SAMPLE_BLOCK, path, layout)


def _growing_blocks(read: Callable[[int], _T], block: int, path: Path, layout: _Layout) -> _T:
    """``read(block_size)``, again with blocks four times larger while a row does not fit
    in one (pyarrow refuses a row longer than its block), up to :data:`MAX_LINE_BYTES`:
    a longer row is refused, naming its line."""
    while True:
        try:
            return read(block)
        except pa.ArrowInvalid as exc:
            if "straddl" not in str(exc):
                raise
            if block >= MAX_LINE_BYTES:
                raise _long_line(path, _find_long_line(path, layout.dialect.input_limit)
                                 ) from None
            block = min(block * 4, MAX_LINE_BYTES)


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
        # past 309 digits a literal is beyond float64's range; int() would also refuse one
        # of more than 4,300 digits (Python's guard against slow conversions)
        if len(literal.lstrip("+-").lstrip("0")) > _FLOAT_DIGITS:
            return literal
        value = float(literal)
        if math.isinf(value) or int(literal) != int(value):
            return literal
    return None


#: the most digits of an integer float64 can hold at all (its largest is about 1.8e308)
_FLOAT_DIGITS = 309


def _lossless_text(table: pa.Table) -> pa.Table:
    """Each column as text where its values read back from that text unchanged (integers,
    decimals, dates, booleans, floats without NaN), else as it is."""
    texts: dict[int, pa.ChunkedArray] = {}
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
            texts[i] = text
    return _with_columns(table, texts)


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
    lines = text.lstrip("\ufeff").splitlines()  # (none when the text is only marks)
    line = lines[0] if lines else ""
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
    known = set(names)  # (not the list: a wide table would make this quadratic)
    unknown = [c for c in columns if c not in known]
    if unknown:
        raise InputError(f"column {unknown[0]!r} is not in {path}; its columns are: "
                         f"{column_list(names)}{separator_hint(names)}")


def column_list(names: Sequence[str]) -> str:
    """Column names for a message, comma-separated: as they are, or quoted with their
    escapes when they hold a line break or another unprintable character (a message is
    one line)."""
    return ", ".join(name if name.isprintable() else repr(name) for name in names)


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
        # pyarrow says so of a header without a line end too: the header scan knows better
        if _header_line(path, dialect.input_limit) is not None:
            return InputError(f"{path} has a header but no data rows; give at least one "
                              f"data row")
        return InputError(f"{path} is empty; give a CSV file with a header line and rows")
    if "UTF8" in message or "UTF-8" in message:
        return _not_utf8(path, dialect.encoding, dialect.input_limit)
    if "Expected" in message and "columns" in message:
        found = _ragged_line(path, layout)
        if found is not None:
            start, end, got, expected, open_quote = found
            first = "the header" if dialect.header else "the first line"
            if open_quote:
                return InputError(
                    f"{path} line {start} opens a quote that is never closed, so the rest of "
                    f"the file (to line {end}) reads as one field (a line number of the "
                    f"file, counting from 1 at its first line); close that quote or remove "
                    f"it")
            if end > start:
                return InputError(
                    f"{path} line {start} has {got} field(s) but {first} has {expected}: a "
                    f"quote opened on line {start} closes only on line {end}, so those lines "
                    f"read as one row (line numbers of the file, counting from 1 at its first "
                    f"line); fix the quotes on line {start}")
            return InputError(
                f"{path} line {start} has {got} field(s) but {first} has {expected} (a line "
                f"number of the file, counting from 1 at its first line); fix that row (a "
                f"stray {sep!r} or quote?) or give the right separator (--sep)")
    return InputError(f"cannot read {path} as CSV ({_arrow_reason(exc)}); check the "
                      f"separator (--sep) and quoting")


def _arrow_reason(exc: BaseException) -> str:
    """The first line of pyarrow's message without the cells it quotes (``Expected 3
    columns, got 2: <the row>``, ``invalid value '<the cell>'``): an error message never
    shows a value of the table, which may be sensitive."""
    reason = _first_line(exc)
    reason = re.sub(r"(Expected \d+ columns?, got \d+).*", r"\1", reason)
    reason = re.sub(r"(invalid value) '.*'", r"\1", reason)
    return re.sub(r"(: )?'.*'", "", reason)


def _ragged_line(path: Path, layout: _Layout
                 ) -> tuple[int, int, int, int, bool] | None:
    """(first line, last line, fields, expected, quote left open) of the first row whose
    field count differs from the first row's: the lines of the file it spans (several when
    a quoted field holds line breaks, or a quote is left open), and whether it is a quote
    opened and never closed, which takes the rest of the file. Error path only: a Python
    pass over the file (streamed, not held) is fine."""
    dialect = layout.dialect
    row_lines: list[str] = []  # the lines of the row being read

    def lines() -> Iterator[str]:
        with _open_bytes(path, dialect.input_limit) as raw, \
                io.TextIOWrapper(raw, encoding=dialect.encoding or "utf-8-sig",
                                 errors="replace", newline="") as text:
            for line in text:
                if layout.multi is not None:  # (a separator never spans lines)
                    line = line.replace(layout.multi, _PLACEHOLDER)
                row_lines.append(line)
                yield line

    def reader(source: Iterator[str] | list[str], strict: bool = False) -> Iterator[list[str]]:
        return csv.reader(source, delimiter=layout.delimiter,
                          skipinitialspace=layout.skip_spaces, strict=strict)

    with _csv_field_limit():
        rows = reader(lines())
        expected, start = None, 1
        try:
            for row in rows:
                end = rows.line_num  # type: ignore[attr-defined]
                if row:  # (blank lines are skipped by pyarrow too)
                    if expected is None:
                        expected = len(row)
                    elif len(row) != expected:
                        open_quote = False
                        if end > start and next(rows, None) is None:
                            # the last row, over several lines: a quote never closed?
                            try:
                                list(reader(row_lines[:end - start + 1], strict=True))
                            except csv.Error:
                                open_quote = True
                        return start, end, len(row), expected, open_quote
                start = end + 1
                row_lines.clear()
        except csv.Error as exc:
            if "field larger" not in str(exc):
                return None
            # a field past MAX_LINE_BYTES: a quote opened there and never closed
            return start, rows.line_num, 1, expected or 1, True  # type: ignore[attr-defined]
    return None


def _not_utf8(path: Path, encoding: str | None = None,
              limit: int | None = None) -> InputError:
    """Locate the first byte that is not UTF-8 (or not ``encoding``). Error path: reads
    the file in blocks through an incremental decoder, never all of it at once."""
    decoder = codecs.getincrementaldecoder(encoding or "utf-8")(errors="strict")
    offset, lines, line_start = 0, 1, 0  # bytes before the block; line; where it began
    with _open_bytes(path, limit or default_max_input_bytes()) as stream:
        while True:
            block = stream.read(_SCAN_BLOCK)
            held = decoder.getstate()[0]  # an unfinished character from the block before
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError as exc:
                data = held + block
                at = offset - len(held) + exc.start  # the byte's place in the file
                before = max(0, exc.start - len(held))  # ... in this block
                line = lines + block.count(b"\n", 0, before)
                newline = block.rfind(b"\n", 0, before)
                column = at - (offset + newline + 1 if newline >= 0 else line_start) + 1
                byte = data[exc.start] if exc.start < len(data) else 0
                if encoding is not None:
                    return InputError(f"{path} is not {encoding} text: line {line}, byte "
                                      f"{at} is 0x{byte:02x}; give its encoding (--encoding)")
                return InputError(
                    f"{path} is not UTF-8 text: line {line}, byte {at} (column {column}) is "
                    f"0x{byte:02x}; give its encoding (e.g. --encoding latin-1) or re-save "
                    f"the file as UTF-8")
            if not block:
                break
            lines += block.count(b"\n")
            newline = block.rfind(b"\n")
            if newline >= 0:
                line_start = offset + newline + 1
            offset += len(block)
    if encoding is not None:
        return InputError(f"{path} is not {encoding} text; give its encoding (--encoding)")
    return InputError(f"{path} is not UTF-8 text; re-save it as UTF-8")


def _check_cell_sizes(path: Path, table: pa.Table, first_line: Callable[[], int | None]
                      ) -> None:
    """Refuse a cell of more than :data:`MAX_FIELD_BYTES` (text; numbers are parsed into
    eight bytes), naming its column and row. One vectorised pass per text column: over
    the labels of a dictionary column, not its rows."""
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)
                or pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):
            continue
        if column.nbytes <= MAX_FIELD_BYTES:  # (no cell can be longer than all of them)
            continue
        if pa.types.is_dictionary(column.type):
            longest = max((pc.max(pc.binary_length(chunk.dictionary)).as_py() or 0
                           for chunk in column.chunks), default=0)
        else:
            longest = pc.max(pc.binary_length(column)).as_py() or 0
        if longest <= MAX_FIELD_BYTES:
            continue
        if pa.types.is_dictionary(column.type):  # (error path: decode to find the row)
            column = pc.cast(column, kind)
        row = pc.index(pc.greater(pc.binary_length(column), MAX_FIELD_BYTES), True).as_py()
        line = first_line()
        where = f"line {line + row} (data row {row + 1})" if line is not None \
            else f"row {row + 1}"
        raise InputError(f"{path} {where}: a cell of column {name!r} is longer than the "
                         f"{_size_text(MAX_FIELD_BYTES)} a cell may hold (a limit of "
                         f"anonkit; the column's longest has {longest:,} bytes); shorten "
                         f"that cell, or check that no quote is left open before it")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def to_pandas(table: pa.Table, categorical_text: bool = False) -> pd.DataFrame:
    """A table read by :func:`read_arrow` as :func:`read_table` returns it: numpy-backed
    columns, text as object (or Categorical, see :func:`read_table`), dictionaries decoded
    unless text is wanted categorical, decimals as float64 where every value converts
    exactly and as text otherwise."""
    converted: dict[int, pa.ChunkedArray] = {}  # (replaced at once: see _with_columns)
    to_encode: list[int] = []
    for i, field in enumerate(table.schema):
        column = table[i]
        if pa.types.is_decimal(field.type):
            column = converted[i] = _exact_decimals(column)
        is_text = pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
        if categorical_text and is_text:
            to_encode.append(i)
        elif pa.types.is_dictionary(column.type) and not categorical_text:
            converted[i] = pc.cast(column, column.type.value_type)
    # text from a database or a Parquet file comes undictionaried: hashing a million
    # labels is the costliest step here, and Arrow hashes without the GIL
    texts = [converted.get(i, table[i]) for i in to_encode]
    encoded = on_all_cores(pc.dictionary_encode, texts, [column.nbytes for column in texts])
    converted.update(zip(to_encode, encoded, strict=True))
    table = _with_columns(table, converted)
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
