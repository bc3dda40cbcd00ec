"""Reading and writing hierarchies in ARX's CSV layout (``;``, leaf first, no header)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from anonkit.data.read import check_input_file
from anonkit.errors import InputError
from anonkit.hierarchy.base import Hierarchy


def read_arx_hierarchy(path: str | Path, name: str = "", delimiter: str = ";") -> Hierarchy:
    """Read an ARX hierarchy CSV as ARX writes it: no header, leaf in column 0, root last.

    Ragged rows are allowed (see :class:`Hierarchy`); a missing trailing newline and a
    UTF-8 byte-order mark are tolerated.
    """
    path = Path(path)
    # a folder, a pipe or a device (/dev/zero never ends) is refused as what it is
    check_input_file(path, "hierarchy file",
                     expected=f"the hierarchy's CSV file (--hierarchy {name or 'column'}=FILE)")
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
    try:
        return Hierarchy(rows, name=name or path.stem)
    except InputError:
        hint = _layout_hint(text, delimiter, name or path.stem)
        if hint is None:
            raise
        raise InputError(f"hierarchy file {path}: {hint}") from None


def _layout_hint(text: str, delimiter: str, name: str) -> str | None:
    """What is wrong with a hierarchy file that does not read, when it is its layout: another
    separator than ARX's, or a header line (ARX's files have none). None otherwise."""
    others = [d for d in (",", "\t", "|", ";") if d != delimiter and d in text]
    for sep in [delimiter, *others]:
        rows = [row for row in csv.reader(io.StringIO(text), delimiter=sep)
                if any(cell.strip() for cell in row)]
        for skip in (0, 1):
            if sep == delimiter and skip == 0:
                continue  # that is what failed
            if len(rows) <= skip + 1 and skip:
                continue
            try:
                Hierarchy(rows[skip:], name=name)
            except InputError:
                continue
            if len(rows) - skip < 2 and sep != delimiter:
                continue  # one row reads with anything: no evidence
            what = []
            if sep != delimiter:
                what.append(f"it is separated by {sep!r}, but hierarchy files are separated "
                            f"by {delimiter!r} (ARX's layout): re-save it with {delimiter!r}")
            if skip:
                what.append(f"its first line ({';'.join(rows[0])}) looks like a header, but "
                            f"hierarchy files have none (leaf first, root last): remove it")
            return "; and ".join(what)
    return None


def write_arx_hierarchy(hierarchy: Hierarchy, path: str | Path, delimiter: str = ";") -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    for row in hierarchy.labels:
        writer.writerow([str(cell) for cell in row])
    Path(path).write_text(buf.getvalue(), encoding="utf-8")
