"""What a folder holds, to compare before and after a command that must change nothing."""

from __future__ import annotations

import hashlib
from pathlib import Path


def snapshot(*folders: Path) -> dict[str, str]:
    """Every file under ``folders`` (recursively, hidden ones too) with the SHA-256 of its
    bytes, and every folder (as ``"dir"``), by path: equal snapshots mean no file was
    created, removed or changed."""
    out: dict[str, str] = {}
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            out[str(path)] = "dir" if path.is_dir() else \
                hashlib.sha256(path.read_bytes()).hexdigest()
    return out
