"""What a folder holds, to prove a refused command created, removed and changed nothing:
compare ``snapshot(folder, ...)`` taken before and after."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

#: what stands for a path that is neither a file, a folder nor a link (never read: a named
#: pipe would block the read, a device never ends)
_KINDS = ((stat.S_ISFIFO, "fifo"), (stat.S_ISCHR, "character device"),
          (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))


def snapshot(*places: str | os.PathLike[str]) -> dict[str, str]:
    """Every path under ``places`` (folders, walked whole; or single files, such as a
    history kept elsewhere) -> what it is: a file's SHA-256 and permission bits, a folder's
    permission bits, a symbolic link's target (not followed), the kind of anything else.

    Two snapshots are equal exactly when no path was created, removed, changed in content or
    permissions, or turned into another kind. A place that does not exist is recorded as
    missing, so creating it is a change too. Modification times are left out: a refused
    command that rewrites a file with the same bytes changed nothing a user can see."""
    found: dict[str, str] = {}
    for place in places:
        root = Path(place).absolute()
        found[str(root)] = _entry(root)
        if root.is_dir() and not root.is_symlink():
            for folder, folders, files in os.walk(root):
                for name in sorted([*folders, *files]):
                    path = Path(folder) / name
                    found[str(path)] = _entry(path)
    return found


def _entry(path: Path) -> str:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return "missing"
    mode = info.st_mode
    permissions = f"{stat.S_IMODE(mode):04o}"
    if stat.S_ISLNK(mode):
        return f"link -> {os.readlink(path)}"
    if stat.S_ISDIR(mode):
        return f"folder {permissions}"
    if stat.S_ISREG(mode):
        digest = hashlib.sha256()
        try:
            with open(path, "rb") as fh:
                while block := fh.read(1 << 20):
                    digest.update(block)
        except PermissionError:  # (a test's unreadable file: its size and time stand in)
            return f"file {permissions} unreadable {info.st_size} {info.st_mtime_ns}"
        return f"file {permissions} sha256:{digest.hexdigest()}"
    kind = next((name for test, name in _KINDS if test(mode)), "other")
    return f"{kind} {permissions}"
