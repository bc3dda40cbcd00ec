"""The demo: the main job on the bundled UCI Adult sample, with its report."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from anonkit._util.files import atomic_write
from anonkit.assemble import Progress
from anonkit.datasets import load_adult
from anonkit.jobs.anonymization import anonymize_file
from anonkit.jobs.common import (
    PathText,
)


def demo(output: PathText, progress: Progress | None = None, *, command: str | None = None,
         announce: Callable[[str], None] | None = None) -> dict[str, object]:
    """Anonymize the bundled UCI Adult sample with Mondrian (k=10, distinct l=2) into the
    folder ``output``: the release, ``verification.json`` and the report. ``announce`` is
    told what is about to run, before it runs; the outcome is :func:`anonymize_file`'s with
    ``verification``, the verification file."""
    folder = Path(output)
    adult = load_adult()
    folder.mkdir(parents=True, exist_ok=True)
    qis = list(adult.quasi_identifiers)
    job = {
        "input": str(adult.path), "output": str(folder / "adult-release.csv"),
        "quasi_identifiers": qis, "sensitive": adult.sensitive, "method": "mondrian",
        "options": {"k": 10, "l": 2},
        "hierarchies": {c: str(adult.path.parent / f"adult_hierarchy_{c}.csv")
                        for c in qis if c != "age"},
        "report": str(folder / "report.html"),
    }
    if announce is not None:
        announce(f"anonymizing UCI Adult ({len(adult.data):,} rows; QIs: {', '.join(qis)}; "
                 f"sensitive: {adult.sensitive}) with Mondrian, k=10, distinct l=2")
    outcome = anonymize_file(job, progress, command=command)
    verification = folder / "verification.json"
    with atomic_write(verification) as tmp:
        tmp.write_text(json.dumps({"verdicts": outcome["verdicts"],
                                   "metrics": outcome["metrics"]}, indent=2, default=str))
    return outcome | {"verification": str(verification)}


# -- the release history ---------------------------------------------------------------------
