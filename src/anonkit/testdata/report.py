"""The kb-anonymity report: per bucket (path) its description, its size, the tuples
released for it, the reason when none were and the pinned fields; the coverage; the tuples
that could not be traced. As HTML (:func:`write_html`) and JSON (``TestData.to_dict``)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import TYPE_CHECKING

from anonkit._util.files import write_atomic
from anonkit.report.page import PLAIN_STYLE, page

if TYPE_CHECKING:
    from anonkit.testdata import TestData

_STYLE = PLAIN_STYLE + """
body { margin: 2em; }
table { margin: 1em 0; }
td, th { padding: 4px 8px; text-align: left; }
code { font-size: 90%; }
.bad { color: #a00; } .good { color: #060; }
"""


def render_html(result: TestData, program: str) -> str:
    e = html.escape
    stats = result.stats
    rows = []
    for b in result.buckets:
        path = "<br>".join(f"<code>{e(line)}</code>" for line in b.path)
        pinned = "<br>".join(f"{e(name)}: {e(why)}" for name, why in b.pinned.items()) or "-"
        reason = e(b.reason) if b.reason else ""
        if b.unsatisfied_groups and b.released:
            reason += f"<br>{len(b.unsatisfied_groups)} k-group(s) without a tuple, e.g. " \
                      f"{e(b.unsatisfied_groups[0])}"
        status = "good" if b.released else "bad"
        rows.append(f"<tr><td>{b.index}</td><td>{path}</td><td>{b.size}</td>"
                    f"<td class='{status}'>{b.released}</td><td>{reason}</td>"
                    f"<td>{pinned}</td></tr>")
    failures = "".join(f"<li>row {row + 1}: {e(why)}</li>" for row, why in result.failures[:200])
    more = len(result.failures) - 200
    check = "passed" if not result.problems else "<br>".join(map(e, result.problems))
    return page("kb-anonymity report", f"""<h1>kb-anonymity test data</h1>
<p>Program <code>{e(program)}</code>, option <b>{e(result.option)}</b>, k = {result.k}.</p>
<table>
<tr><th>raw tuples</th><td>{int(stats['raw_tuples'])}</td></tr>
<tr><th>distinct paths (buckets)</th><td>{int(stats['paths'])}</td></tr>
<tr><th>released tuples</th><td>{len(result.release.data)}</td></tr>
<tr><th>coverage (raw tuples whose path the release exercises)</th>
<td>{result.coverage:.1%}</td></tr>
<tr><th>tuples that could not be traced</th><td>{len(result.failures)}</td></tr>
<tr><th>output check</th><td>{check}</td></tr>
<tr><th>time</th><td>{result.timings['total']:.2f} s (tracing
{stats['tracing_tuples_per_second']:.0f} tuples/s)</td></tr>
</table>
<p>The program ran with your own rights in guarded worker processes; the guard stops
accidents, not an adversary (it is not a sandbox).</p>
<h2>Buckets</h2>
<table><tr><th>#</th><th>path condition</th><th>|B|</th><th>released</th>
<th>reason</th><th>pinned fields</th></tr>
{''.join(rows)}
</table>
<h2>Tuples that could not be traced</h2>
<ul>{failures or '<li>none</li>'}{f'<li>... and {more} more</li>' if more > 0 else ''}</ul>""",
                stylesheet=_STYLE)


def write_html(result: TestData, program: str, path: str | Path) -> Path:
    return write_atomic(path, render_html(result, program))


def to_json(result: TestData) -> str:
    return json.dumps(result.to_dict(), indent=2, default=str)
