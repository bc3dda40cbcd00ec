"""The audit as one self-contained HTML file: plots inlined as base64 PNG, no external CSS
or scripts, so it can be mailed or attached to a ticket and still open anywhere."""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path

import numpy as np

from anonkit._util.files import write_atomic
from anonkit.history.attacks import (
    ADVERSARIES,
    EXACT_ONLY,
    OUTSIDE_CLAIM,
    PINNED,
    AdversaryVerdict,
    AuditReport,
    Finding,
    ScopeResult,
    override_text,
    records_text,
)
from anonkit.models.base import exact_number
from anonkit.report.page import PLAIN_STYLE, plain_report, provenance

_STYLE = PLAIN_STYLE + """
body { margin: 2em auto; max-width: 70em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; } h3 { font-size: 1em; }
table { margin: .5em 0; font-size: .9em; }
th, td { padding: .25em .6em; text-align: right; }
td.l, th.l { text-align: left; }
.verdict { font-size: 1.1em; padding: .6em 1em; border-radius: .3em; display: inline-block; }
ul.verdicts { list-style: none; padding: 0; } ul.verdicts li { margin: .4em 0; padding: .4em 1em;
  border-left: .3em solid; }
.bad { background: #fde2e1; color: #8a1c14; } .good { background: #e3f5e1; color: #1d5e17; }
.note { background: #fdf1dc; color: #6b4506; }
code { font-size: .85em; } img { max-width: 100%; }
"""

#: how a worst case's evidence is headed, per adversary (see _worst in attacks.py:
#: ``values[attr]`` is each adversary's own value set)
_VALUES_HEADING = {"qi": "values not ruled out", "linkage": "values on its linked rows"}
_PROVED_POSSIBLE = "proved_possible["
#: a linkage case with no values on rows (no release of its scope shows them) carries the
#: values counting leaves: over such releases that is all linking rows tells
_NO_ROW_VALUES = "no release of these shows values on rows"
_MEASURE_LEFT = {"distinct": "distinct values", "distinct_present": "distinct present values",
                 "range": "range"}


def render_html(report: AuditReport, *, history: str | Path | None = None,
                command: str | None = None) -> str:
    """The audit report: a summary first (the overall status, one verdict per adversary,
    the releases audited and any published over the gate), its provenance (the history
    file and its SHA-256, ``command``, the version, the time), then plots of breaches per
    release (and per release pair when the pairs were audited), then each adversary's
    findings with its own evidence."""
    e = html.escape
    verdicts = report.verdicts()
    summary = ["<ul class='verdicts'>"]
    summary += [f"<li class='{_severity(v)}'>{e(v.sentence())}</li>" for v in verdicts]
    summary.append("</ul>")
    summary.append(f"<p>Releases audited: {e(', '.join(map(str, report.releases)))}.</p>")
    if report.overrides:
        summary.append("<h3>Published over the gate</h3><ul>" + "".join(
            f"<li>{e(override_text(o))}</li>" for o in report.overrides) + "</ul>")
    parts = ["<h2>Requirements</h2><ul>"]
    parts += [f"<li>{e(r.model)}{e(f' on {r.attribute!r}') if r.attribute else ''}: "
              f"{e(r.describe())}</li>" for r in report.requirements]
    parts.append(f"<li>{PINNED}: more than one candidate sensitive value (always)</li>")
    parts += [f"<li>{e(model)}: {EXACT_ONLY}</li>" for model in report.exact_only]
    parts.append("</ul>")
    if report.overall is not None:
        parts.append("<h2>Breaches per release</h2>")
        parts.append("<p>Each record is judged over every release that contains it; a "
                     "release's bar counts its records (in it alone or in others too: a "
                     "record that joined or left is judged as well), and those of them "
                     "breached (findings outside the claimed threat model are not "
                     "counted).</p>")
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
    for verdict in verdicts:
        parts.append(_adversary_section(report, verdict))
    if report.intersections:
        parts.append("<h2>Row-wise intersection of released ranges</h2><p>The attack the "
                     "released labels alone allow; every record it breaches, the linkage "
                     "adversary breaches too.</p><ul>")
        parts += [f"<li>{e(scope.describe())}</li>" for scope in report.intersections]
        parts.append("</ul>")
    parts.append("<h2>Machine-readable findings</h2><details><summary>JSON</summary><pre>"
                 + e(json.dumps(report.to_dict(), indent=1)) + "</pre></details>")
    return plain_report(f"Release audit: dataset {report.dataset}", status=_status(report),
                        summary="\n".join(summary), sections=["\n".join(parts)],
                        made=provenance([("history", history)] if history is not None else [],
                                        command=command,
                                        more={"dataset": report.dataset}),
                        stylesheet=_STYLE)


def write_html(report: AuditReport, path: str | Path, *, history: str | Path | None = None,
               command: str | None = None) -> Path:
    """Write the report atomically (a reader never sees half a file); ``history`` (the
    history's file; never a database URL) and ``command`` go in its provenance."""
    return write_atomic(path, render_html(report, history=history, command=command))


def _status(report: AuditReport) -> str:
    """The overall status: what counts as breached, and never "no breach" over findings
    outside the claimed threat model without saying so."""
    outside = [f for scope in report.scopes() for f in scope.findings if f.outside_claim]
    also = (f"{records_text(report.records_outside_claim)} exposed only by adversaries "
            f"{OUTSIDE_CLAIM}s (shown below, not counted)" if report.records_outside_claim
            else f"findings by adversaries {OUTSIDE_CLAIM}s are shown below, not counted")
    if report.breached:
        text = f"{records_text(report.records_breached)} breached across releases"
        if outside:
            text += f"; besides, {also}"
        return f'<p class="verdict bad">{html.escape(text)}</p>'
    if outside:
        return (f'<p class="verdict note">No breach within the claimed threat models; '
                f"{html.escape(also)}</p>")
    if report.overall is None:
        return '<p class="verdict good">Fewer than two releases: nothing to intersect yet</p>'
    return '<p class="verdict good">No cross-release breach found</p>'


def _severity(verdict: AdversaryVerdict) -> str:
    return "bad" if verdict.breach else "note" if verdict.exposed else "good"


def _scope_name(scope: ScopeResult) -> str:
    return (" & ".join(map(str, scope.releases)) if scope.kind == "pair"
            else "all releases")


def _scope_table(report: AuditReport) -> str:
    rows = ["<table><tr><th class='l'>releases</th><th>records compared</th>"
            "<th>exposed to qi</th><th>exposed to linkage</th><th>breached (counted)</th>"
            f"<th>share</th><th>exposed only {OUTSIDE_CLAIM}s</th></tr>"]
    for s in report.scopes():
        share = s.records_breached / s.records_compared if s.records_compared else 0.0
        rows.append(f"<tr><td class='l'>{html.escape(_scope_name(s))}</td>"
                    f"<td>{s.records_compared}</td>"
                    f"<td>{s.breached_by.get('qi', 0)}</td>"
                    f"<td>{s.breached_by.get('linkage', 0)}</td>"
                    f"<td>{s.records_breached}</td><td>{share:.1%}</td>"
                    f"<td>{s.records_outside_claim}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def _adversary_section(report: AuditReport, verdict: AdversaryVerdict) -> str:
    """One adversary: its verdict, then per scope its findings and their worst cases,
    with this adversary's evidence only."""
    e = html.escape
    adversary = verdict.adversary
    mine = [f for scope in report.scopes() for f in scope.findings if f.adversary == adversary]
    marker = (f" <i>({OUTSIDE_CLAIM})</i>" if mine and all(f.outside_claim for f in mine)
              else "")
    out = [f"<section id='adversary-{e(adversary)}'>",
           f"<h2>Adversary {e(adversary)}{marker}</h2>",
           f"<p>The {e(adversary)} adversary {e(ADVERSARIES.get(adversary, ''))}.</p>",
           f"<p class='{_severity(verdict)}'>{e(verdict.sentence())}</p>"]
    for scope in report.scopes():
        title = ("Releases " + _scope_name(scope) if scope.kind == "pair"
                 else "All releases (each record over every release that contains it)")
        out.append(f"<h3>{e(title)}</h3>")
        findings = [f for f in scope.findings if f.adversary == adversary]
        if not findings:
            out.append(f"<p>{scope.records_compared} records compared: none exposed to "
                       f"this adversary.</p>")
            continue
        out.append(_findings_table(findings))
        out += [_worst_table(f) for f in findings if f.worst]
    if report.overall is None:
        out.append("<p>Fewer than two releases: nothing to judge.</p>")
    out.append("</section>")
    return "\n".join(out)


def _requirement(f: Finding) -> str:
    return ("one value left" if f.model == PINNED
            else f"{html.escape(f.measure)} &gt;= {html.escape(exact_number(f.threshold))}")


def _findings_table(findings: list[Finding]) -> str:
    e = html.escape
    rows = ["<table><tr><th class='l'>model broken</th><th class='l'>attribute</th>"
            "<th class='l'>requirement</th><th>records</th><th class='l'>finding</th>"
            "<th class='l'>counted</th></tr>"]
    for f in findings:
        # shown, never hidden, but marked: it does not count as a breach of these releases
        counted = f"no: {OUTSIDE_CLAIM}" if f.outside_claim else "yes"
        rows.append(f"<tr><td class='l'>{e(f.model)}</td><td class='l'>{e(f.attribute or '-')}"
                    f"</td><td class='l'>{_requirement(f)}</td><td>{f.records}</td>"
                    f"<td class='l'>{e(f.certainty)}</td><td class='l'>{e(counted)}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def _worst_table(f: Finding) -> str:
    """The finding's most exposed records: their classes, the adversary's candidates and
    its own values per attribute (for qi also those proved possible)."""
    e = html.escape
    attributes = list(dict.fromkeys(
        key[len("values["):-1] for case in f.worst for key in case
        if key.startswith("values[")))
    head = ["record", "classes", "candidates"]
    if f.measure in _MEASURE_LEFT:  # the finding's measure, unless it is the candidates
        head.append(f"{_MEASURE_LEFT[f.measure]} "
                    + ("left" if f.proved else "proved possible"))
    no_row_values: dict[str, list[bool]] = {}
    for attr in attributes:
        if f.adversary == "qi":
            head += [f"values not ruled out ({attr})", f"proved possible ({attr})"]
            continue
        no_row_values[attr] = [f"{_PROVED_POSSIBLE}{attr}]" in case for case in f.worst]
        head.append(f"values not ruled out ({attr}): {_NO_ROW_VALUES}"
                    if all(no_row_values[attr])
                    else f"{_VALUES_HEADING.get(f.adversary, 'values')} ({attr})")
    attr_text = f" on {f.attribute!r}" if f.attribute else ""
    out = [f"<p>Most exposed records, {e(f.model)}{e(attr_text)} ({e(f.certainty)}):</p>",
           "<table><tr>" + "".join(f"<th class='l'>{e(h)}</th>" for h in head) + "</tr>"]
    for i, case in enumerate(f.worst):
        record = str(case.get("record", ""))[:12]
        cells = [f"{record}…" if record else "?", _classes_text(case),
                 _text(case.get(f"candidates_{f.adversary}", "?"))]
        if f.measure in _MEASURE_LEFT:
            cells.append(_text(case.get("level", "?")))
        for attr in attributes:
            values = _values_text(case.get(f"values[{attr}]"))
            if f.adversary == "qi":
                cells += [values, _values_text(case.get(f"{_PROVED_POSSIBLE}{attr}]"))]
            elif no_row_values[attr][i] and not all(no_row_values[attr]):
                cells.append(f"{values} (not ruled out: {_NO_ROW_VALUES})")
            else:
                cells.append(values)
        out.append("<tr>" + "".join(f"<td class='l'>{e(c)}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _classes_text(case: dict[str, object]) -> str:
    """``r1 #0 (4 rows, 1 counterfeit)``, per release of the record."""
    classes = case.get("classes")
    if not isinstance(classes, dict):
        return "?"
    sizes, fakes = case.get("class_sizes"), case.get("class_counterfeits")
    sizes = sizes if isinstance(sizes, dict) else {}
    fakes = fakes if isinstance(fakes, dict) else {}
    out = []
    for seq, cls in classes.items():
        detail = [f"{sizes[seq]} rows"] if seq in sizes else []
        if fakes.get(seq):
            detail.append(f"{fakes[seq]} counterfeit")
        out.append(f"r{seq} #{cls}" + (f" ({', '.join(detail)})" if detail else ""))
    return ", ".join(out)


def _values_text(values: object) -> str:
    if values is None:
        return "-"
    if not isinstance(values, list):
        return _text(values)
    return ", ".join(_text(v) for v in values) if values else "(none)"


def _text(value: object) -> str:
    """A value as shown: numbers as given, never rounded; a missing value says so."""
    if value is None:
        return "(missing)"
    return exact_number(value)


def _release_plot(overall: ScopeResult) -> bytes:
    seqs = list(overall.by_release)
    return _breach_bars(
        [str(s) for s in seqs], [overall.by_release[s][0] for s in seqs],
        "records in the release",
        [(0.0, 0.5, [overall.by_release[s][1] for s in seqs], "#b3261e", "breached")],
        "release", "Records breached over all their releases, by release", rotate_over=20,
        inches_each=0.45)


def _pairs_plot(report: AuditReport) -> bytes:
    return _breach_bars(
        [_scope_name(p) for p in report.pairs], [p.records_compared for p in report.pairs],
        "records in both",
        [(offset, 0.38, [p.breached_by.get(adversary, 0) for p in report.pairs], color,
          f"exposed to the {adversary} adversary")
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
