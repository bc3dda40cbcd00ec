"""Writing tables (CSV, Parquet), atomically so a failed run never leaves a half-written
release behind.

CSV is formatted from Arrow columns by a small C writer (``_csv_writer.c``): pandas' own
writer is several times slower on a million rows, and Categorical columns are written from
their codes, never through per-row Python strings.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from anonkit._util.files import atomic_write
from anonkit.data._csv_writer import write_csv as write_rows

# the separator, format and column-name rules are the reader's, so a written table reads back
from anonkit.data.read import (
    PARQUET_SUFFIXES,
    _check_duplicates,
    _first_line,
    _resolve_sep,
    _with_columns,
    table_format,
)
from anonkit.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "write_table",
]

#: the suffixes an output file may have (anything else would silently be written as CSV)
CSV_SUFFIXES = (".csv", ".tsv", ".txt")
OUTPUT_SUFFIXES = (*CSV_SUFFIXES, *PARQUET_SUFFIXES)
#: compressed CSV output: suffix -> Arrow codec
OUTPUT_CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}


def output_codec(path: str | Path) -> str | None:
    """The codec a CSV output is compressed with (``.csv.gz`` -> gzip), or None."""
    suffixes = [s.lower() for s in Path(path).suffixes[-2:]]
    if len(suffixes) == 2 and suffixes[0] in CSV_SUFFIXES:
        return OUTPUT_CODECS.get(suffixes[1])
    return None


def output_format(path: str | Path, fmt: str | None = None) -> str:
    """:func:`table_format` for a file to write: a suffix anonkit does not write (``.xlsx``,
    ``.json``) is refused rather than written as plain CSV. ``.csv.gz``, ``.csv.bz2`` and
    ``.csv.zst`` are compressed CSV."""
    path = Path(path)
    if output_codec(path) is not None:
        if fmt is not None and table_format(path, fmt) != "csv":
            raise InputError(f"cannot write {path.name} as {fmt}: its suffix says compressed "
                             f"CSV")
        return "csv"
    if fmt is None and path.suffix.lower() not in OUTPUT_SUFFIXES:
        raise InputError(f"cannot write {path.name}: anonkit writes CSV (.csv, .tsv, .txt, "
                         f"compressed as .csv.gz, .csv.bz2 or .csv.zst) or Parquet (.parquet, "
                         f".pq) files; give the output one of those suffixes")
    return table_format(path, fmt)


def write_table(table: pd.DataFrame | pa.Table, path: str | Path, fmt: str | None = None, *,
                sep: str | None = None, verbatim: Sequence[str] = ()) -> None:
    """Write ``table`` (a DataFrame, without its index, or an Arrow table) as CSV or
    Parquet, atomically.

    ``fmt`` defaults from the suffix (see :func:`table_format`). CSV uses ``sep``
    (default ',' and '\\t' for ``.tsv``) and is written by :func:`write_csv`: text is
    quoted only where it must be, missing values are empty cells, dates without a time of
    day are ``YYYY-MM-DD``. Categorical columns are written from their codes, never through
    per-row Python strings. ``verbatim`` names text columns that hold cells exactly as read
    from a CSV file (see :func:`~anonkit.data.read.read_arrow`): there an empty text is
    written as an empty cell, as it was read.
    """
    path = Path(path)
    fmt = output_format(path, fmt)
    if not isinstance(table, pa.Table):
        table = to_arrow(table)
    with atomic_write(path) as tmp:
        if fmt == "parquet":
            pq.write_table(table, tmp)
            return
        codec = output_codec(path)
        plain_suffix = Path(path.stem).suffix.lower() if codec else path.suffix.lower()
        if sep is None:
            sep = "\t" if plain_suffix == ".tsv" else ","
        sep = _resolve_sep(sep, "")
        try:
            if codec is None:
                write_csv(_csv_ready(table), tmp, sep, verbatim)
            else:
                _write_compressed_csv(_csv_ready(table), tmp, sep, verbatim, codec)
        except pa.ArrowException as exc:
            raise InputError(f"cannot write {path} as CSV ({_first_line(exc)})") from None


def _write_compressed_csv(table: pa.Table, path: Path, sep: str, verbatim: Sequence[str],
                          codec: str) -> None:
    """The CSV of :func:`write_csv`, compressed into ``path``: written plain beside it
    first (the fast writer needs a file), then streamed through the codec."""
    plain = path.with_name(path.name + ".plain")
    try:
        write_csv(table, plain, sep, verbatim)
        with pa.OSFile(str(plain), "rb") as source, \
                pa.CompressedOutputStream(str(path), codec) as sink:
            while chunk := source.read(8 << 20):
                sink.write(chunk)
    finally:
        with suppress(OSError):
            plain.unlink()


def to_arrow(df: pd.DataFrame) -> pa.Table:
    """``df`` (without its index) as an Arrow table, Categoricals as dictionaries. Column
    by column, so one column of mixed types (numbers and text in an object
    column) is written as text instead of failing the whole table."""
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise InputError(f"write_table needs a pandas DataFrame, got {type(df).__name__}")
    names = [str(c) for c in df.columns]
    _check_duplicates(Path("the table"), names)
    arrays = []
    for i in range(len(names)):
        series = df.iloc[:, i]
        try:
            array = pa.array(series, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            # mixed types: text of each value (rare; the only per-row Python here)
            text = series.astype(str).where(series.notna(), None)
            array = pa.array(text, type=pa.string(), from_pandas=True)
        arrays.append(array)
    return pa.Table.from_arrays(arrays, names=names)


def write_csv(table: pa.Table, path: str | Path, sep: str = ",",
              verbatim: Sequence[str] = ()) -> None:
    """Write ``table`` as CSV to ``path`` (not atomically: see :func:`write_table`).

    Text is quoted only where it must be (it holds the separator, a quote or a line
    break, or is empty: ``""`` is an empty text, an empty field a missing value, except in
    the ``verbatim`` columns, see :func:`write_table`); quotes inside are doubled.
    Dictionary columns are written from their codes, each label escaped once; other columns
    are cast to text by Arrow (numbers, dates, booleans).
    """
    names = _escaped_texts(pa.array(table.column_names, type=pa.string()), sep)
    header = sep.join(names.to_pylist()) + "\n"
    as_read = set(verbatim)  # (not the sequence: a wide table would make this quadratic)
    columns = [_csv_chunks(table[i], sep, name in as_read)
               for i, name in enumerate(table.column_names)]
    fd = _open_for_writing(path, direct=table.num_rows >= _DIRECT_ROWS)
    try:
        write_rows(fd, header.encode(), columns, table.num_rows, sep.encode())
    finally:
        os.close(fd)


#: from this many rows, CSV goes straight to the device (O_DIRECT, where the system has it)
_DIRECT_ROWS = 200_000


def _open_for_writing(path: str | Path, direct: bool) -> int:
    """A new (or truncated) file, opened with O_DIRECT when ``direct`` and possible.

    Copying hundreds of megabytes into the page cache costs the kernel as much CPU as
    formatting them; written directly they go from the writer's buffer to the device while
    the next rows are formatted. A file system without direct I/O (tmpfs on many kernels)
    refuses the flag: then the file is opened as usual."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    if direct and hasattr(os, "O_DIRECT"):
        with suppress(OSError):
            return os.open(path, flags | os.O_DIRECT, 0o666)
    return os.open(path, flags, 0o666)


def _escaped_texts(values: pa.Array, sep: str) -> pa.Array:
    """``values`` as CSV cells (see :func:`write_csv`), missing ones as empty text."""
    text = pc.cast(values, pa.string()) if not pa.types.is_string(values.type) else values
    special = pc.or_(pc.match_substring_regex(text, f'[{re.escape(sep)}"\r\n]'),
                     pc.equal(pc.binary_length(text), 0))
    quoted = pc.binary_join_element_wise(
        '"', pc.replace_substring(text, '"', '""'), '"', "")
    return pc.fill_null(pc.if_else(special, quoted, text), "")


def _csv_chunks(column: pa.ChunkedArray, sep: str, verbatim: bool) -> list[tuple[object, ...]]:
    """The chunks of one column as the C writer takes them (see ``_csv_writer.c``)."""
    if not pa.types.is_dictionary(column.type) and not pa.types.is_string(column.type) \
            and not pa.types.is_large_string(column.type):
        column = pc.cast(column, pa.string())
    chunks: list[tuple[object, ...]] = []
    # labels escaped once per dictionary; keyed by id: the chunks (and the dictionary each
    # caches) stay alive through the loop, so no id is reused for another dictionary
    escaped: dict[int, tuple[np.ndarray, pa.Buffer, int]] = {}
    for chunk in column.chunks:
        if len(chunk) == 0:
            continue
        valid = chunk.is_valid().to_numpy(zero_copy_only=False).view(np.uint8) \
            if chunk.null_count else None
        if pa.types.is_dictionary(chunk.type):
            key = id(chunk.dictionary)
            if key not in escaped:
                labels = _escaped_texts(chunk.dictionary, sep)
                escaped[key] = (*_string_buffers(labels, wide=True), len(labels))
            offsets, data, n_labels = escaped[key]
            indices = chunk.indices.fill_null(0).cast(pa.int32()).to_numpy()
            chunks.append((0, len(chunk), n_labels, valid, indices, offsets, data))
        else:
            offsets, data = _string_buffers(chunk, wide=pa.types.is_large_string(chunk.type))
            chunks.append((2 if verbatim else 1, len(chunk), offsets.itemsize, valid, offsets,
                           data, None))
    return chunks


def _string_buffers(array: pa.Array, wide: bool) -> tuple[np.ndarray, pa.Buffer]:
    """Offsets (``length + 1`` of them, int64 if ``wide`` else as stored) and data of a
    string array, zero-copy where Arrow's layout allows."""
    _, offsets_buf, data_buf = array.buffers()
    stored = np.int64 if pa.types.is_large_string(array.type) else np.int32
    offsets = np.frombuffer(offsets_buf, dtype=stored)[array.offset:array.offset + len(array) + 1]
    if data_buf is None:  # every value empty
        data_buf = pa.py_buffer(b"")
    return (offsets.astype(np.int64) if wide and stored is np.int32 else offsets), data_buf


def _csv_ready(table: pa.Table) -> pa.Table:
    """Timestamps that are all at midnight as date32 (``2021-03-04`` instead of
    ``2021-03-04 00:00:00.000``). Only timestamp columns are looked at, and replaced in one
    step (``set_column`` in a loop copied the list of columns each time: quadratic in the
    columns, two minutes for 20,000)."""
    dates: dict[int, pa.ChunkedArray] = {}
    for i, kind in enumerate(table.schema.types):
        if not pa.types.is_timestamp(kind) or kind.tz is not None:
            continue
        column = table[i]
        if pc.all(pc.equal(pc.floor_temporal(column, unit="day"), column)).as_py() \
                is not False:  # (a cast to date32 would silently drop a time of day)
            dates[i] = pc.cast(column, pa.date32())
    return _with_columns(table, dates)
