"""Reading and writing hierarchies in ARX's CSV layout (``;``, leaf first, no header)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from anonkit.errors import InputError
from anonkit.hierarchy.base import Hierarchy


def read_arx_hierarchy(path: str | Path, name: str = "", delimiter: str = ";") -> Hierarchy:
    """Read an ARX hierarchy CSV as ARX writes it: no header, leaf in column 0, root last.

    Ragged rows are allowed (see :class:`Hierarchy`); a missing trailing newline and a
    UTF-8 byte-order mark are tolerated.
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"hierarchy file {path} is a folder; give the hierarchy's CSV file "
                         f"(--hierarchy {name or 'column'}=FILE)")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"hierarchy file not found: {path}") from None
    except OSError as exc:
        raise InputError(f"cannot read the hierarchy file {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InputError(
            f"hierarchy file {path} is not UTF-8 (byte {exc.start}); re-save it as UTF-8"
        ) from None
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if not any(any(cell.strip() for cell in row) for row in rows):
        raise InputError(f"hierarchy file {path} is empty: give one row per value, leaf first")
    return Hierarchy(rows, name=name or path.stem)


def write_arx_hierarchy(hierarchy: Hierarchy, path: str | Path, delimiter: str = ";") -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    for row in hierarchy.labels:
        writer.writerow([str(cell) for cell in row])
    Path(path).write_text(buf.getvalue(), encoding="utf-8")
