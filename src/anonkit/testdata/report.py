"""The kb-anonymity report: per bucket (path) its description, its size, the tuples
released for it, the reason when none were and the pinned fields; the coverage; the tuples
that could not be traced. As HTML (:func:`write_html`) and JSON (``TestData.to_dict``)."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from anonkit._util.files import write_atomic
from anonkit.report.page import PLAIN_STYLE, plain_report, provenance, section

if TYPE_CHECKING:
    from anonkit.testdata import TestData

_STYLE = PLAIN_STYLE + """
body { margin: 2em; }
table { margin: 1em 0; }
td, th { padding: 4px 8px; text-align: left; }
code { font-size: 90%; }
.bad { color: #a00; } .good { color: #060; }
"""


#: path conditions shown per bucket, and buckets listed, before the rest is summarised
_CONDITIONS_SHOWN = 6
_BUCKETS_SHOWN = 200


def reason_kind(reason: str) -> str:
    """A reason with its numbers and quoted names generalised, so the reasons of many
    paths count together (``fewer than k=5`` and ``fewer than k=3`` are one kind)."""
    kind = re.sub(r"'[^']*'", "'…'", reason)
    return re.sub(r"\d+(?:\.\d+)?", "N", kind)


def render_html(result: TestData, program: str, *, data: str | Path | None = None,
                command: str | None = None) -> str:
    """The report: a summary first (the counts, and why paths were not released, by
    reason), its provenance (the program and data file with their SHA-256, the command,
    the version, the time), then the buckets, collapsed."""
    e = html.escape
    stats = result.stats
    not_released = [b for b in result.buckets if not b.released]
    kind_of = {b.index: reason_kind(b.reason or "no tuple released") for b in not_released}
    kinds = Counter(kind_of.values())
    tuples_of: Counter[str] = Counter()  # raw tuples on the paths of each reason
    for b in not_released:
        tuples_of[kind_of[b.index]] += b.size
    check = "passed" if not result.problems else "<br>".join(map(e, result.problems))
    figures = [
        ("program", f"<code>{e(program)}</code>"),
        ("option, k", f"{e(result.option)}, k = {result.k}"),
        ("raw tuples", f"{int(stats['raw_tuples']):,}"),
        ("distinct paths (buckets)", f"{len(result.buckets):,}"),
        ("paths released", f"{len(result.buckets) - len(not_released):,}"),
        ("paths not released", f"{len(not_released):,}"),
        ("released tuples", f"{len(result.release.data):,}"),
        ("coverage (raw tuples whose path the release exercises)", f"{result.coverage:.1%}"),
        ("tuples that could not be traced", f"{len(result.failures):,}"),
        ("output check", check),
        ("time", f"{result.timings['total']:.2f} s (tracing "
                 f"{stats['tracing_tuples_per_second']:.0f} tuples/s)"),
    ]
    summary = ("<table>" + "".join(f"<tr><th>{e(k)}</th><td>{v}</td></tr>"
                                   for k, v in figures) + "</table>")
    if kinds:
        summary += ("<h3>Why paths were not released</h3><table><tr><th>reason</th>"
                    "<th>paths</th><th>raw tuples on them</th></tr>" + "".join(
                        f"<tr><td>{e(kind)}</td><td>{n:,}</td><td>{tuples_of[kind]:,}</td></tr>"
                        for kind, n in kinds.most_common()) + "</table>")
    summary += ("<p>The program ran with your own rights in guarded worker processes; the "
                "guard stops accidents, not an adversary (it is not a sandbox).</p>")
    status = ('<p class="good"><b>Released tuples for every path</b></p>' if not not_released
              else f'<p class="bad"><b>{len(not_released):,} of {len(result.buckets):,} '
                   f"paths have no released tuple</b> (reasons below)</p>")
    rows = []
    for b in result.buckets[:_BUCKETS_SHOWN]:
        lines = [f"<code>{e(line)}</code>" for line in b.path[:_CONDITIONS_SHOWN]]
        if len(b.path) > _CONDITIONS_SHOWN:
            lines.append(f"… {len(b.path) - _CONDITIONS_SHOWN} more conditions")
        pinned = "<br>".join(f"{e(name)}: {e(why)}" for name, why in b.pinned.items()) or "-"
        reason = e(b.reason) if b.reason else ""
        if b.unsatisfied_groups and b.released:
            reason += f"<br>{len(b.unsatisfied_groups)} k-group(s) without a tuple, e.g. " \
                      f"{e(b.unsatisfied_groups[0])}"
        rows.append(f"<tr><td>{b.index}</td><td>{'<br>'.join(lines)}</td><td>{b.size}</td>"
                    f"<td class='{'good' if b.released else 'bad'}'>{b.released}</td>"
                    f"<td>{reason}</td><td>{pinned}</td></tr>")
    hidden = len(result.buckets) - _BUCKETS_SHOWN
    shown = (f"; the first {_BUCKETS_SHOWN} shown, the JSON output has all" if hidden > 0
             else "")
    buckets = (f"<details><summary>Every path ({len(result.buckets):,}, largest first{shown})"
               "</summary><table><tr><th>#</th><th>path condition</th><th>|B|</th>"
               "<th>released</th><th>reason</th><th>pinned fields</th></tr>"
               f"{''.join(rows)}</table></details>")
    failures = "".join(f"<li>row {row + 1}: {e(why)}</li>" for row, why in result.failures[:200])
    more = len(result.failures) - 200
    untraced = (f"<details><summary>{len(result.failures):,} tuples could not be traced"
                f"</summary><ul>{failures}"
                f"{f'<li>... and {more} more</li>' if more > 0 else ''}</ul></details>"
                if result.failures else "<p>Every tuple was traced.</p>")
    program_file = program.rpartition(":")[0] or program
    inputs: list[tuple[str, str | Path]] = [("program", program_file)]
    if data is not None:
        inputs.append(("data", data))
    return plain_report(
        "kb-anonymity test data", status=status, summary=summary,
        sections=[section("buckets", "Paths (buckets)", buckets),
                  section("untraced", "Tuples that could not be traced", untraced)],
        made=provenance(inputs, command=command), stylesheet=_STYLE)


def write_html(result: TestData, program: str, path: str | Path, *,
               data: str | Path | None = None, command: str | None = None) -> Path:
    """Write the report (see :func:`render_html`) atomically."""
    return write_atomic(path, render_html(result, program, data=data, command=command))


def to_json(result: TestData) -> str:
    return json.dumps(result.to_dict(), indent=2, default=str)
