"""Reading a written release back as an adversary would: the csv module, every cell as the
text it is (no type guessing, no missing-value markers)."""

from __future__ import annotations

import csv
from pathlib import Path


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the rows of a written CSV file, cells as text."""
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        return list(reader.fieldnames or []), rows
