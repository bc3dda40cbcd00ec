"""The audit as one self-contained HTML file: plots inlined as base64 PNG, no external CSS
or scripts, so it can be mailed or attached to a ticket and still open anywhere."""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path

import numpy as np

from anonkit.models.base import exact_number
from anonkit.releases.attacks import ADVERSARIES, EXACT_ONLY, PINNED, AuditReport, ScopeResult

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
.verdict { font-size: 1.1em; padding: .6em 1em; border-radius: .3em; display: inline-block; }
.bad { background: #fde2e1; color: #8a1c14; } .good { background: #e3f5e1; color: #1d5e17; }
code { font-size: .85em; } img { max-width: 100%; }
"""


def render_html(report: AuditReport) -> str:
    """The audit report: verdict, plots of breaches per release (and per release pair when
    the pairs were audited), and the findings."""
    e = html.escape
    verdict = (f'<p class="verdict bad">{report.records_breached} records breached across '
               f'releases</p>' if report.breached else
               '<p class="verdict good">No cross-release breach found</p>')
    parts = [f"<!doctype html><html><head><meta charset='utf-8'>"
             f"<title>anonkit release audit: {e(report.dataset)}</title>"
             f"<style>{_STYLE}</style></head><body>",
             f"<h1>Release audit: dataset <code>{e(report.dataset)}</code></h1>", verdict,
             f"<p>Releases audited: {', '.join(map(str, report.releases))}.</p>",
             "<h2>Adversaries</h2><ul>"]
    parts += [f"<li><b>{e(name)}</b>: {e(text)}</li>" for name, text in ADVERSARIES.items()]
    parts.append("</ul><h2>Requirements</h2><ul>")
    parts += [f"<li>{e(r.model)}{e(f' on {r.attribute!r}') if r.attribute else ''}: "
              f"{e(r.describe())}</li>" for r in report.requirements]
    parts.append(f"<li>{PINNED}: more than one candidate sensitive value (always)</li>")
    parts += [f"<li>{e(model)}: {EXACT_ONLY}</li>" for model in report.exact_only]
    parts.append("</ul>")
    if report.overall is not None:
        parts.append("<h2>Breaches per release</h2>")
        parts.append("<p>Each record is judged over every release that contains it; a "
                     "release's bar counts its records in two or more releases, and those "
                     "of them breached.</p>")
        parts.append(_img(_release_plot(report.overall)))
    if report.pairs:
        parts.append("<h2>Breaches per release pair</h2>")
        parts.append(_img(_pairs_plot(report)))
        if len(report.releases) > 2:
            parts.append(_img(_matrix_plot(report)))
    if report.overall is not None:
        parts.append(_scope_table(report))
    else:
        parts.append("<p>Fewer than two releases: there is nothing to intersect yet.</p>")
    for scope in [*report.pairs, *([report.overall] if report.overall else [])]:
        parts.append(_findings_section(scope))
    parts.append("<h2>Machine-readable findings</h2><details><summary>JSON</summary><pre>"
                 + e(json.dumps(report.to_dict(), indent=1)) + "</pre></details>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_html(report: AuditReport, path: str | Path) -> Path:
    """Write the report atomically (a reader never sees half a file)."""
    from anonkit.io import atomic_write

    path = Path(path)
    with atomic_write(path) as tmp:
        tmp.write_text(render_html(report), encoding="utf-8")
    return path


def _scope_name(scope: ScopeResult) -> str:
    return (" & ".join(map(str, scope.releases)) if scope.kind == "pair"
            else "all releases")


def _scope_table(report: AuditReport) -> str:
    rows = ["<table><tr><th class='l'>releases</th><th>records compared</th>"
            "<th>breached (qi)</th><th>breached (linkage)</th><th>breached (any)</th>"
            "<th>share</th></tr>"]
    scopes = [*report.pairs, *([report.overall] if report.overall else [])]
    for s in scopes:
        share = s.records_breached / s.records_compared if s.records_compared else 0.0
        rows.append(f"<tr><td class='l'>{_scope_name(s)}</td><td>{s.records_compared}</td>"
                    f"<td>{s.breached_by.get('qi', 0)}</td>"
                    f"<td>{s.breached_by.get('linkage', 0)}</td>"
                    f"<td>{s.records_breached}</td><td>{share:.1%}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def _findings_section(scope: ScopeResult) -> str:
    e = html.escape
    title = ("Releases " + _scope_name(scope) if scope.kind == "pair"
             else "All releases (each record over every release that contains it)")
    out = [f"<h2>{e(title)}</h2>"]
    if not scope.findings:
        out.append(f"<p>{scope.records_compared} records compared, no breach.</p>")
        return "".join(out)
    out.append("<table><tr><th class='l'>adversary</th><th class='l'>model broken</th>"
               "<th class='l'>attribute</th><th class='l'>requirement</th><th>records</th>"
               "<th class='l'>worst cases</th></tr>")
    for f in scope.findings:
        requirement = ("one value left" if f.model == PINNED else
                       f"{e(f.measure)} &gt;= {exact_number(f.threshold)}")
        worst = "<br>".join(e(_case_text(case)) for case in f.worst[:3])
        # shown, never hidden, but marked: it does not count as a breach of this release
        outside = " <i>(outside the claimed threat model)</i>" if f.outside_claim else ""
        out.append(f"<tr><td class='l'>{e(f.adversary)}{outside}</td>"
                   f"<td class='l'>{e(f.model)}</td>"
                   f"<td class='l'>{e(f.attribute or '-')}</td><td class='l'>{requirement}</td>"
                   f"<td>{f.records}</td><td class='l'>{worst}</td></tr>")
    out.append("</table>")
    return "".join(out)


def _case_text(case: dict[str, object]) -> str:
    """One worst case as a sentence: the record's pseudonym, its class in each release,
    how many candidates each adversary is left with, and the values left."""
    record = str(case.get("record", ""))[:12]
    parts = [f"record {record}…" if record else "record"]
    classes = case.get("classes")
    sizes = case.get("class_sizes")
    if isinstance(classes, dict):
        sized = sizes if isinstance(sizes, dict) else {}
        parts.append("classes " + ", ".join(
            f"r{seq} #{cls}" + (f" ({sized[seq]} rows)" if seq in sized else "")
            for seq, cls in classes.items()))
    if "candidates_linkage" in case or "candidates_qi" in case:
        parts.append(f"candidates: {case.get('candidates_linkage', '?')} linked, "
                     f"{case.get('candidates_qi', '?')} by QIs")
    for key, value in case.items():
        if key.startswith("values"):
            shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            parts.append(f"{key[len('values'):].strip('[]') or 'values'} left: {shown}")
        elif key.startswith("range"):
            parts.append(f"{key[len('range'):].strip('[]') or 'values'} range left: {value}")
    return "; ".join(parts)


def _release_plot(overall: ScopeResult) -> bytes:
    seqs = list(overall.by_release)
    return _breach_bars(
        [str(s) for s in seqs], [overall.by_release[s][0] for s in seqs],
        "records in two or more releases",
        [(0.0, 0.5, [overall.by_release[s][1] for s in seqs], "#b3261e", "breached")],
        "release", "Records breached over all their releases, by release", rotate_over=20,
        inches_each=0.45)


def _pairs_plot(report: AuditReport) -> bytes:
    return _breach_bars(
        [_scope_name(p) for p in report.pairs], [p.records_compared for p in report.pairs],
        "records in both",
        [(offset, 0.38, [p.breached_by.get(adversary, 0) for p in report.pairs], color,
          f"breached ({adversary} adversary)")
         for offset, adversary, color in ((-0.2, "qi", "#d9822b"),
                                          (0.2, "linkage", "#b3261e"))],
        "release pair", "Records breached by intersecting two releases", rotate_over=8,
        inches_each=0.7)


def _breach_bars(names: list[str], compared: list[int], compared_label: str,
                 bars: list[tuple[float, float, list[int], str, str]], xlabel: str,
                 title: str, rotate_over: int, inches_each: float) -> bytes:
    """Records compared per scope (grey) with the breached ones over them: each bar
    ``(offset, width, values, color, label)``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(max(6.0, inches_each * len(names) + 3), 3.6), dpi=100)
    ax.bar(x, compared, width=0.8, color="#e5e5e5", label=compared_label)
    for offset, bar_width, values, color, label in bars:
        ax.bar(x + offset, values, width=bar_width, color=color, label=label)
    ax.set_xticks(x, names, rotation=45 if len(names) > rotate_over else 0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("records")
    ax.set_title(title)
    ax.set_ylim(0, max(max(compared, default=0), 1) * 1.3)  # room for the legend
    ax.legend(fontsize=8, frameon=False, ncol=len(bars) + 1, loc="upper center")
    return _png(fig)


def _matrix_plot(report: AuditReport) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seqs = report.releases
    index = {s: i for i, s in enumerate(seqs)}
    share = np.full((len(seqs), len(seqs)), np.nan)
    for p in report.pairs:
        i, j = index[p.releases[0]], index[p.releases[1]]
        value = p.records_breached / p.records_compared if p.records_compared else 0.0
        share[i, j] = share[j, i] = value
    fig, ax = plt.subplots(figsize=(4.2, 3.6), dpi=100)
    image = ax.imshow(share, vmin=0, vmax=1, cmap="Reds")
    ax.set_xticks(range(len(seqs)), seqs)
    ax.set_yticks(range(len(seqs)), seqs)
    ax.set_xlabel("release")
    ax.set_ylabel("release")
    ax.set_title("Share of common records breached")
    fig.colorbar(image, ax=ax, fraction=0.046)
    return _png(fig)


def _png(fig: object) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()  # type: ignore[attr-defined]
    fig.savefig(buf, format="png")  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[arg-type]
    return buf.getvalue()


def _img(png: bytes) -> str:
    return (f"<p><img alt='plot' src='data:image/png;base64,"
            f"{base64.b64encode(png).decode('ascii')}'></p>")
