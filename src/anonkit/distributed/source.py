"""Input for the Dask engine: a CSV or Parquet file, or a directory of Parquet files, as
pieces that workers read on their own (the client never holds the table).

A Parquet piece is a run of row groups of one file, read with :mod:`anonkit.data.read`'s
conversion (text as Categorical), so a worker sees the same dtypes the single-process
command line gives. A CSV file is cut into byte blocks by :func:`dask.dataframe.read_csv`,
with the column types of its first rows; Parquet is the better input for large tables
(typed, and cut at row groups).
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pandas.api.types import union_categoricals

from anonkit.data.read import read_table, table_columns, to_pandas
from anonkit.errors import InputError

#: a Parquet piece holds about this many rows (whole row groups)
PIECE_ROWS = 500_000
#: a CSV block has about this many bytes
CSV_BLOCK = "64MB"
#: the first lines of a CSV file the column types are taken from
HEAD_LINES = 20_000


@dataclass(frozen=True)
class ParquetPiece:
    path: str
    row_groups: tuple[int, ...]
    rows: int
    #: the position of its first row in the whole table (files in name order), so errors
    #: name rows of the table, not of the piece
    first_row: int = 0


def table_files(source: str | Path) -> list[Path]:
    """The files of ``source``: the file itself, or a directory's ``*.parquet`` / ``*.pq``
    files (recursively, in name order; hidden and ``_``-prefixed ones are metadata)."""
    path = Path(source)
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file()
                       and p.suffix.lower() in (".parquet", ".pq")
                       and not any(part.startswith((".", "_"))
                                   for part in p.relative_to(path).parts))
        if not files:
            raise InputError(f"the directory {path} holds no .parquet files; give a CSV or "
                             f"Parquet file, or a directory of Parquet files")
        return files
    raise InputError(f"input not found: {path}; check the path")


def is_parquet(path: Path) -> bool:
    return path.suffix.lower() in (".parquet", ".pq")


def source_columns(source: str | Path) -> list[str]:
    """The column names of ``source`` (of its first file)."""
    files = table_files(source)
    names = table_columns(files[0])
    for other in files[1:]:
        if is_parquet(other) and table_columns(other) != names:
            raise InputError(f"{other} has other columns than {files[0]}; every file of a "
                             f"partitioned table needs the same columns")
    return names


def parquet_pieces(files: Sequence[Path], piece_rows: int = PIECE_ROWS) -> list[ParquetPiece]:
    """Runs of whole row groups of about ``piece_rows`` rows, file by file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pieces: list[ParquetPiece] = []
    first_row = 0
    for path in files:
        try:
            meta = pq.ParquetFile(path).metadata
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"cannot read {path} as Parquet ({exc}); check that it is a "
                             f"Parquet file") from None
        run: list[int] = []
        rows = 0
        for group in range(meta.num_row_groups):
            run.append(group)
            rows += meta.row_group(group).num_rows
            if rows >= piece_rows:
                pieces.append(ParquetPiece(str(path), tuple(run), rows, first_row))
                first_row += rows
                run, rows = [], 0
        if run and rows:
            pieces.append(ParquetPiece(str(path), tuple(run), rows, first_row))
            first_row += rows
    return pieces


def read_parquet_piece(piece: ParquetPiece, columns: Sequence[str] | None) -> pd.DataFrame:
    """One piece as :func:`anonkit.data.read.read_table` would give its rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.read_schema(piece.path)
    # text read straight into dictionaries (Parquet stores it so): 4x faster than strings
    text = [f.name for f in schema if pa.types.is_string(f.type)
            or pa.types.is_large_string(f.type)]
    table = pq.ParquetFile(piece.path, read_dictionary=text).read_row_groups(
        list(piece.row_groups), columns=None if columns is None else list(columns))
    df = to_pandas(table, categorical_text=True)
    df.index = pd.RangeIndex(piece.first_row, piece.first_row + len(df))
    return df


def source_parts(source: str | Path, columns: Sequence[str] | None) -> list[Any]:
    """The pieces of ``source`` as dask delayed objects, each a pandas DataFrame of
    ``columns`` (all when None); compute them on the cluster."""
    import dask

    files = table_files(source)
    if all(is_parquet(p) for p in files):
        read = dask.delayed(read_parquet_piece, pure=True)
        return [read(piece, columns) for piece in parquet_pieces(files)]
    if len(files) != 1:
        raise InputError("a directory input holds Parquet files only")
    return _csv_parts(files[0], columns)


def _csv_parts(path: Path, columns: Sequence[str] | None) -> list[Any]:
    """Byte blocks of a CSV file, each read with the column types :func:`anonkit.data.read.
    read_table` gives the file's first rows (a block must not guess its own: a zip code
    column is text in every block, or in none)."""
    import dask.dataframe as dd

    sep = _separator(path)
    with path.open(encoding="utf-8", errors="replace") as file, \
            tempfile.TemporaryDirectory() as folder:
        head_path = Path(folder) / "head.csv"
        head_path.write_text("".join(itertools.islice(file, HEAD_LINES + 1)),
                             encoding="utf-8")
        head = read_table(head_path, sep=sep, columns=list(columns) if columns else None)
    dtypes: dict[str, str] = {}
    dates: list[str] = []
    for name, dtype in head.dtypes.items():
        if pd.api.types.is_datetime64_any_dtype(dtype):
            dates.append(str(name))
        else:
            dtypes[str(name)] = "object" if not pd.api.types.is_numeric_dtype(dtype) \
                else str(dtype)
    try:
        frame = dd.read_csv(str(path), blocksize=CSV_BLOCK, usecols=columns, dtype=dtypes,
                            parse_dates=dates or False, sep=sep, keep_default_na=False,
                            na_values=[""])
    except (ValueError, OSError) as exc:
        raise InputError(f"cannot read {path} as CSV ({exc})") from None
    return list(frame.to_delayed())


def _separator(path: Path) -> str:
    header = path.open(encoding="utf-8", errors="replace").readline()
    names = table_columns(path)
    for sep in (",", ";", "\t", "|"):
        if len(header.split(sep)) == len(names):
            return sep
    return ","


def concat_frames(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The rows of ``frames`` in one DataFrame with a RangeIndex. A column that is
    Categorical in every frame stays Categorical (its categories united): pieces read
    apart have categories of their own, and pandas would turn the column into objects."""
    frames = [f for f in frames if len(f)] or list(frames[:1])
    if len(frames) == 1:
        return frames[0].reset_index(drop=True)
    columns = {}
    for name in frames[0].columns:
        parts = [f[name] for f in frames]
        if all(isinstance(p.dtype, pd.CategoricalDtype) for p in parts):
            columns[name] = pd.Series(union_categoricals(parts, ignore_order=True), name=name)
        else:
            columns[name] = pd.concat(parts, ignore_index=True)
    return pd.DataFrame(columns)
