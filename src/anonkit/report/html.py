"""One self-contained HTML file per release (or per check): it must open offline, in a mail
attachment or a ticket, years later. So the stylesheet is inlined, the charts are inline
SVG (a code tree a PNG data URI), and nothing is fetched: no scripts, fonts or images from
anywhere.

Every piece of text that comes from the data or the user (column names, labels, parameter
values, the title) goes through :func:`html.escape`; only the fixed markup of this module
is written raw.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from anonkit import __version__
from anonkit._util.files import write_atomic
from anonkit._util.grouping import group_rows
from anonkit._util.numbers import exact_number
from anonkit.checker import CheckReport, bind_models, sensitive_attribute
from anonkit.data.schema import Role
from anonkit.errors import InputError
from anonkit.metrics import journalist_risk, marketer_risk, prosecutor_risk, sample_uniques
from anonkit.models.base import Classes, Verdict
from anonkit.models.closeness import TCloseness
from anonkit.models.diversity import DistinctLDiversity
from anonkit.models.likeness import DeltaDisclosure
from anonkit.release import (
    NO_FORMAL_GUARANTEE_TEXT,
    NO_INFORMATION,
    Release,
    fully_generalized,
)

# the charts are SVG; only the code tree imports matplotlib, inside its drawing function
from anonkit.report import plots
from anonkit.report.history_place import HistoryPlace, history_section
from anonkit.report.lattice import lattice_section
from anonkit.report.page import now as _now
from anonkit.report.page import page, report_stylesheet
from anonkit.report.page import section as _section
from anonkit.report.tree import tree_section

__all__ = ["render_check_report", "render_report"]

DEFAULT_RISK_THRESHOLD = 0.2

e = html.escape


# --------------------------------------------------------------------------- formatting


def _int(n: float | int) -> str:
    return f"{round(n):,}"


def _pct(x: float, digits: int = 2) -> str:
    return f"{x * 100:.{digits}f} %"


def _num(x: float) -> str:
    """A figure for a table: integers with separators, others with 4 significant digits."""
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "—"
    if float(x).is_integer() and abs(x) >= 1:
        return _int(x)
    return f"{x:.4g}"


def _value(v: object) -> str:
    """A parameter value as escaped text."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, Mapping):
        return e(", ".join(f"{k}: {_plain(x)}" for k, x in v.items())) if v else "—"
    if isinstance(v, (list, tuple, set)):
        return e(", ".join(_plain(x) for x in v)) if v else "—"
    return e(_plain(v))


def _given(x: float) -> str:
    """A number a person gave (a threshold): never rounded, as the command line prints it;
    whole ones as figures."""
    return _num(x) if float(x).is_integer() else exact_number(x)


def _plain(v: object) -> str:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, (str, int, float)):
        return exact_number(v)  # parameters and labels as given: t=0.12345678 stays so
    try:
        return json.dumps(v, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(v)


def _stat(label: str, value: str, hint: str = "") -> str:
    """A figure card; ``label``, ``value`` and ``hint`` are markup (escape data first)."""
    hint_html = f'<div class="hint">{hint}</div>' if hint else ""
    return (f'<div class="stat"><div class="label">{label}</div>'
            f'<div class="value">{value}</div>{hint_html}</div>')


def _kv_table(rows: Iterable[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{e(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="kv"><tbody>{body}</tbody></table>'


def _figure(chart: plots.Chart, alt: str, caption: str = "") -> str:
    """A chart at its natural width (shrunk on narrow screens); ``alt`` is text (its
    accessible name), ``caption`` markup."""
    cap = f"<figcaption>{caption}</figcaption>" if caption else ""
    return f"<figure>{chart.markup(alt)}{cap}</figure>"


def _pill(passed: bool) -> str:
    return '<span class="pill pass">PASS</span>' if passed else \
        '<span class="pill fail">FAIL</span>'


# --------------------------------------------------------------------------- page


def _page(title: str, subtitle: str, banner: str, nav: Sequence[tuple[str, str]],
          sections: Sequence[str]) -> str:
    links = "".join(f'<a href="#{e(anchor)}">{e(text)}</a>' for anchor, text in nav)
    return page(
        title,
        f'<header class="top"><div class="page"><h1>{e(title)}</h1>'
        f'<div class="sub">{subtitle}</div><div class="status">{banner}</div></div></header>'
        f'<nav class="toc"><div class="page">{links}</div></nav>'
        f'<main class="page">{"".join(sections)}'
        f"<footer>Generated by anonkit on {e(_now())}. This file is self-contained: "
        "it loads nothing from the network.</footer></main>",
        stylesheet=report_stylesheet())


def _banner(verdicts: Sequence[Verdict], formal_guarantee: bool = True,
            warnings: Sequence[str] = ()) -> str:
    """The status under the title: green PASSED only for a release with a formal
    guarantee whose every model holds; amber NO FORMAL GUARANTEE for a heuristic one
    (its k >= 1 holds for any table); then an amber line per warning (text)."""
    return _status_badge(verdicts, formal_guarantee) + "".join(
        f'<span class="banner warn">WARNING: {e(text)}</span>' for text in warnings)


def _status_badge(verdicts: Sequence[Verdict], formal_guarantee: bool) -> str:
    if not verdicts:
        return '<span class="banner fail">No privacy model was checked</span>'
    failed = [v for v in verdicts if not v.passed]
    if not failed and not formal_guarantee:
        return f'<span class="banner warn">NO FORMAL GUARANTEE: {NO_FORMAL_GUARANTEE_TEXT}</span>'
    if not failed:
        what = "the privacy model holds" if len(verdicts) == 1 else \
            f"all {len(verdicts)} privacy model checks hold"
        return f'<span class="banner pass">PASSED: {what}</span>'
    return (f'<span class="banner fail">FAILED: {len(failed)} of {len(verdicts)} privacy '
            f'model checks do not hold; the release must not be published</span>')


def _verdict_table(verdicts: Sequence[Verdict], attributes: Sequence[str | None],
                   worst_values: Sequence[Mapping[str, object]]) -> str:
    show_attr = any(a is not None for a in attributes)
    head = ("<tr><th>Status</th><th>Model</th>" + ("<th>Attribute</th>" if show_attr else "")
            + '<th class="num">Measured</th><th class="num">Required</th>'
            '<th class="num">Weakest class</th><th class="num">Failing classes</th>'
            "<th>Weakest class values</th></tr>")
    rows = []
    for v, attr, worst in zip(verdicts, attributes, worst_values, strict=True):
        params = ", ".join(f"{k}={_plain(x)}" for k, x in v.parameters.items())
        details = ""
        if v.details:
            details = '<div class="details">' + e(", ".join(
                f"{k}={_plain(x)}" for k, x in v.details.items())) + "</div>"
        values = "".join(
            f'<div><span class="key">{e(str(k))}</span> '
            f"<code>{e('missing' if x is None else _plain(x))}</code></div>"
            for k, x in worst.items())
        rows.append(
            f'<tr class="{"pass" if v.passed else "fail"}"><td>{_pill(v.passed)}</td>'
            f'<td class="model"><b>{e(v.model)}</b><div class="details">{e(params)}</div>'
            f"{details}</td>"
            + (f'<td class="nowrap">{e(attr) if attr is not None else "—"}</td>'
               if show_attr else "")
            + f'<td class="num">{e(v.measure)} = {e(_num(v.measured))}</td>'
            f'<td class="num">{e(v.measure)} {e(_COMPARISON.get(v.comparison, v.comparison))} '
            f"{e(_given(v.required))}</td>"
            f'<td class="num">{_int(v.worst_class_size)} row'
            f'{"" if v.worst_class_size == 1 else "s"}</td>'
            f'<td class="num">{_int(v.failing_classes)} of {_int(v.n_classes)}</td>'
            f'<td class="values">{values or "—"}</td></tr>')
    return (f'<div class="card"><table><thead>{head}</thead><tbody>{"".join(rows)}'
            f"</tbody></table></div>")


_COMPARISON = {">=": "≥", "<=": "≤"}


def _required_k(verdicts: Sequence[Verdict]) -> float | None:
    for v in verdicts:
        if v.model == "k-anonymity":
            return float(v.required)
    return None


def _class_size_section(sizes: np.ndarray, k: float | None) -> str:
    stats = "".join([
        _stat("Classes", _int(len(sizes))),
        _stat("Smallest", _int(sizes.min())),
        _stat("Median", _num(float(np.median(sizes)))),
        _stat("Mean", f"{sizes.mean():.2f}"),
        _stat("Largest", _int(sizes.max())),
    ])
    caption = ("Classes as an adversary sees them: rows with equal released "
               "quasi-identifier values.")
    if k is not None:
        caption += f" The dashed line marks the required minimum size (k = {_num(k)})."
    return _section("classes", "Equivalence classes",
                    f'<div class="cards">{stats}</div><div class="card">'
                    + _figure(plots.class_size_plot(sizes, k), "class size histogram",
                              e(caption)) + "</div>")


def _risk_section(sizes: np.ndarray, threshold: float, population_size: int | None = None,
                  sample_size: int | None = None) -> str:
    p = prosecutor_risk(sizes, threshold)
    j = journalist_risk(sizes, threshold, population_size=population_size,
                        sample_size=sample_size)
    m = marketer_risk(sizes, population_size=population_size, sample_size=sample_size)
    u = sample_uniques(sizes)
    rows = "".join(
        f'<tr><td class="strong">{name}</td><td class="num">{_pct(f.max)}</td>'
        f'<td class="num">{_pct(f.avg)}</td><td class="num">{_pct(f.records_at_risk)}</td>'
        f"<td>{what}</td></tr>"
        for name, f, what in (
            ("Prosecutor", p, "knows the person is in the release"),
            ("Journalist", j, "knows the person is in the population"
             + ("" if population_size else " (population = this table)")),
        ))
    table = (f'<table><thead><tr><th>Adversary</th><th class="num">Highest</th>'
             f'<th class="num">Average</th><th class="num">Records at risk '
             f"(&gt; {e(f'{threshold:g}')})</th><th>Assumption</th></tr></thead>"
             f"<tbody>{rows}</tbody></table>")
    cards = "".join([
        _stat("Highest risk", _pct(p.max), f"1 / smallest class ({_int(round(1 / p.max))})"
              if p.max else ""),
        _stat("Average risk", _pct(p.avg), "classes / records"),
        _stat("Records at risk", _pct(p.records_at_risk), f"risk &gt; {threshold:g}"),
        _stat("Marketer risk", _pct(m), "expected share re-identified"),
        _stat("Sample uniques", _pct(u), "records alone in their class"),
    ])
    caption = ("Each record's prosecutor risk is 1 / the size of its class: the chance that "
               "an adversary who knows a person's quasi-identifiers and that the person is "
               "in the release picks the right row.")
    return _section("risk", "Re-identification risk",
                    f'<div class="cards">{cards}</div><div class="card">{table}</div>'
                    '<div class="card">'
                    + _figure(plots.risk_plot(sizes, threshold), "risk histogram", e(caption))
                    + "</div>")


# --------------------------------------------------------------------------- release report


def render_report(result: Release, original: pd.DataFrame, path: str | Path, *,
                  title: str | None = None,
                  provenance: Mapping[str, str] | None = None,
                  unchanged: Sequence[str] = (),
                  history: HistoryPlace | None = None) -> Path:
    """Write the HTML report of ``result`` (anonymized from ``original``) to ``path``.

    Sections: summary (method, parameters, rows in and out, classes, timings), verdicts,
    class sizes, the before/after distribution of every quasi-identifier, risk, utility.
    ``provenance``: what made the release, shown under the title (the command line passes
    the input file, the release file and the command). ``unchanged``: columns written
    beside the release as they were (the command line keeps them out of ``result``); with
    the release's own insensitive columns they are named in the summary, with the warning
    that they can link a person's rows across releases. ``history``: a published release's
    place in its history (a section after the summary). Written atomically: a reader never
    sees half a report. Returns the path.
    """
    t0 = time.perf_counter()
    path = Path(path)
    qis = list(result.schema.quasi_identifiers)
    absent = [q for q in qis if q not in original.columns]
    if absent:
        raise InputError(f"the original table has no column {absent[0]!r}; pass the table "
                         f"the release was made from")
    metrics = result.metrics
    # classes as the verifier grouped them: by released QIs, or by the explicit group
    grouping = [result.group_column] if result.group_column is not None else qis
    class_ids, n_classes, first_row = group_rows(result.data, grouping)
    sizes = np.bincount(class_ids, minlength=n_classes)
    threshold = float(metrics.get("risk_threshold", DEFAULT_RISK_THRESHOLD))
    population = metrics.get("population_size")
    suppressed = int(metrics.get("suppressed", 0))
    k = _required_k(result.verdicts)
    worst_values = [_class_values(result.data, qis, first_row, v.worst_class)
                    for v in result.verdicts]
    title = title or f"Anonymization report: {result.method}"

    sections = [
        _summary_section(result, original, sizes, suppressed, unchanged),
        history_section(history) if history is not None else "",
        _section("verdicts", "Privacy models",
                 _verdict_table(result.verdicts, [None] * len(result.verdicts),
                                worst_values)
                 + '<p class="note">Measured on the released table as an adversary sees '
                   "it (rows grouped by their released quasi-identifier values"
                 + (f", or by the published group column {e(result.group_column)}"
                    if result.group_column is not None else "")
                 + (", counterfeit rows included: nothing tells them apart"
                    if result.n_counterfeits else "") + ").</p>"),
        _class_size_section(sizes, k) if len(sizes) else "",
        _qi_section(result, original, qis),
        _sensitive_section(result, class_ids, n_classes, first_row),
        _risk_section(sizes, threshold,
                      int(population) if population is not None else None,
                      len(result.data) + suppressed) if len(sizes) else "",
        _utility_section(metrics, qis),
        tree_section(result, original),  # huffman / alphabetic only
        lattice_section(result),  # global recoding only
        _glossary(),
    ]
    nav = [("summary", "Summary"), *([("history", "History")] if history else []),
           ("verdicts", "Privacy models"), ("classes", "Classes"),
           ("qis", "Quasi-identifiers"), ("sensitive", "Sensitive"), ("risk", "Risk"),
           ("utility", "Utility"), ("glossary", "Definitions")]
    subtitle = release_subtitle(
        provenance, result.method, result.kind.value,
        f"{_int(len(original))} rows in, {_int(len(result.data))} released", t0,
        formal_guarantee=result.formal_guarantee, seeded=result.seeded)
    cautions = ([NO_INFORMATION] if fully_generalized(qis, metrics) else [])
    return _write_page(path, title, subtitle, result.verdicts, nav, sections,
                       formal_guarantee=result.formal_guarantee, warnings=cautions)


#: what a report shows for the release's SHA-256 until the release is written: the report is
#: drawn first (a failure then leaves no release), the digest filled in just before the
#: report is renamed into place (:func:`fill_release_digest`)
RELEASE_DIGEST_PENDING = "(sha-256 of the release: not yet written)"


def fill_release_digest(path: str | Path, digest: str) -> None:
    """Put the written release's SHA-256 into a report drawn with
    :data:`RELEASE_DIGEST_PENDING` in its provenance."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    write_atomic(path, text.replace(e(RELEASE_DIGEST_PENDING), digest, 1))


def release_subtitle(provenance: Mapping[str, str] | None, method: str, kind: str,
                     rows: str, started: float, *, formal_guarantee: bool,
                     seeded: bool) -> str:
    """The line under a release report's title: what made it (the version, then
    ``provenance``), the method, kind and rows, how long the report took since
    ``started``, and the two facts a reader must not miss: no formal guarantee, a seed."""
    made = {"anonkit": __version__, **dict(provenance or {})}
    subtitle = (" · ".join(f"{e(k)} <span class=\"mono\">{e(v)}</span>" for k, v in made.items())
                + "<br>")
    subtitle += (f"Method <b>{e(method)}</b> · {e(kind)} release · {rows} · report drawn in "
                 f"{time.perf_counter() - started:.2f} s")
    if not formal_guarantee:
        subtitle = ("<b>This release has no formal privacy guarantee: its measure is a "
                    "heuristic, accepted explicitly.</b> " + subtitle)
    if seeded:
        subtitle += (" · <b>seeded</b>: its randomness came from a given seed, for tests "
                     "and studies only")
    return subtitle


def _write_page(path: str | Path, title: str, subtitle: str, verdicts: Sequence[Verdict],
                nav: list[tuple[str, str]], sections: list[str], *,
                formal_guarantee: bool = True, warnings: Sequence[str] = ()) -> Path:
    """Assemble the page and write it atomically (temp file + rename)."""
    return write_atomic(path, _page(title, subtitle,
                                    _banner(verdicts, formal_guarantee, warnings), nav,
                                    sections))


def _class_values(data: pd.DataFrame, qis: Sequence[str], first_row: np.ndarray,
                  worst_class: int) -> dict[str, object]:
    """The released QI values of class ``worst_class`` (``group_rows`` numbering, the one
    the verdicts use)."""
    if not 0 <= worst_class < len(first_row):
        return {}
    row = data.iloc[int(first_row[worst_class])]
    return {q: (None if _is_missing(row[q]) else row[q]) for q in qis}


def _is_missing(value: object) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _summary_section(result: Release, original: pd.DataFrame, sizes: np.ndarray,
                     suppressed: int, unchanged: Sequence[str] = ()) -> str:
    m = result.metrics
    cards = "".join([
        _stat("Rows in", _int(len(original))),
        _stat("Rows released", _int(len(result.data)),
              f"{_int(suppressed)} suppressed" if suppressed else ""),
        _stat("Classes", _int(len(sizes)),
              f"{_int(result.n_classes)} partitions" if result.n_classes != len(sizes)
              else ""),
        _stat("Smallest class", _int(sizes.min()) if len(sizes) else "—"),
        _stat("GCP", _pct(m["gcp"]) if "gcp" in m else "—", "information loss"),
        _stat("Highest risk", _pct(1 / sizes.min()) if len(sizes) else "—", "prosecutor"),
    ])
    params = dict(result.parameters)
    roles = [("Quasi-identifiers", _value(params.pop("quasi_identifiers",
                                                     result.schema.quasi_identifiers))),
             ("Sensitive", _value(params.pop("sensitive", result.schema.sensitive)))]
    identifiers = result.schema.identifiers
    roles.append(("Identifiers (dropped)", _value(identifiers)))
    as_they_were = [*result.schema.names(Role.INSENSITIVE),
                    *[c for c in unchanged if c not in result.schema.names(Role.INSENSITIVE)]]
    if as_they_were:
        roles.append(("Released unchanged", _value(as_they_were)
                      + '<div class="details">Columns released as they were can link a '
                        "person's rows across releases, and identify people by "
                        "themselves: release only what the recipients need.</div>"))
    roles.append(("Release kind", e(result.kind.value)))
    roles.append(("Threat model across releases", e(result.threat_model.value)))
    if result.group_column is not None:
        roles.append(("Group column", e(result.group_column)))
    if result.n_counterfeits:
        roles.append(("Counterfeit rows", _int(result.n_counterfeits)))
    if result.seeded:
        roles.append(("Randomness", "seeded (tests and studies only): reproducible"))
    params.pop("forms", None)  # shown per QI
    if not result.seeded:
        params.pop("seed", None)  # an unseeded run drew from OS entropy: no seed to show
    # a parameter not given is not shown (-k given as a model is in "models", not "k —")
    param_rows = roles + [(str(k).replace("_", " "), _value(v)) for k, v in params.items()
                          if v is not None and v != {} and v != []]
    timings = dict(result.timings)
    total = sum(timings.values())
    timing_rows = [(phase, f'<span class="mono">{seconds * 1000:,.1f} ms</span>')
                   for phase, seconds in timings.items()]
    timing_rows.append(("total", f'<span class="mono"><b>{total * 1000:,.1f} ms</b></span>'))
    body = (f'<div class="cards">{cards}</div><div class="grid2">'
            f'<div class="card"><h3>Parameters</h3>{_kv_table(param_rows)}</div>'
            f'<div class="card"><h3>Timings</h3>{_kv_table(timing_rows)}</div></div>')
    return _section("summary", "Summary", body)


def _qi_section(result: Release, original: pd.DataFrame, qis: Sequence[str]) -> str:
    forms = result.parameters.get("forms", {})
    forms = forms if isinstance(forms, Mapping) else {}
    cards = []
    for name in qis:
        spec = result.schema[name]
        kind = getattr(spec, "kind", None)
        ncp = result.metrics.get(f"ncp.{name}")
        meta = [f'<span class="tag">{e(str(kind))}</span>' if kind else "",
                f'<span class="tag">generalized as {e(str(forms[name]))}</span>'
                if name in forms else "",
                f'<span class="meta">NCP {_pct(ncp, 1)}</span>' if ncp is not None else ""]
        chart = plots.qi_plot(original[name], result.data[name])
        cards.append(f'<div class="card"><div class="qi-head"><h3>{e(name)}</h3>'
                     f'{"".join(meta)}</div>{_figure(chart, f"distribution of {name}")}'
                     f'{_mixed_levels_note(spec, result.data[name])}</div>')
    note = ('<p class="note">Left: the original values; right: the released ones, as shares '
            "of rows. Bars show the most frequent values (the grey bar sums the rest). A "
            "numeric or date column with many values is a histogram, and its release is drawn "
            "on the same bins with each label's rows spread evenly over the range of values "
            "it stands for: what an analyst can reconstruct from the release.</p>")
    return _section("qis", "Quasi-identifiers before and after", note + "".join(cards))


def _mixed_levels_note(spec: object, released: pd.Series) -> str:
    """When a column's labels come from several levels of its hierarchy, say why: each
    class is generalized only as far as its own rows need (multidimensional), so a leaf
    and one of its ancestors can both appear, and their rows overlap in meaning."""
    hierarchy = getattr(spec, "hierarchy", None)
    if hierarchy is None:
        return ""
    labels = set(pd.unique(released.dropna().astype(str)))
    levels = []
    for level in range(hierarchy.height):
        at_level = labels & {str(x) for x in np.unique(hierarchy.labels[:, level])}
        if at_level:
            levels.append((level, len(at_level), sorted(at_level)[0]))
    if len(levels) < 2:
        return ""
    described = "; ".join(f"level {level}: {n} label{'s' if n != 1 else ''} (e.g. "
                          f"<code>{e(example)}</code>)" for level, n, example in levels)
    return (f'<p class="note">Labels from {len(levels)} levels of the hierarchy ({described}). '
            "Mondrian generalizes each class only as far as its own rows need, so a value "
            "and one of its ancestors can both be released: a row labelled with an "
            "ancestor may hold any value below it. Compare labels by the values they "
            "cover, not as separate categories.</p>")


def _sensitive_section(result: Release, class_ids: np.ndarray, n_classes: int,
                       first_row: np.ndarray) -> str:
    """Per sensitive attribute: its distribution and each class's number of distinct
    values, then the weakest classes for l (fewest distinct values), t (farthest from the
    whole table's distribution) and δ (largest log-ratio of a value's share in a class
    to its share overall), whichever models the release was asked to meet."""
    names = [s for s in result.schema.sensitive if s in result.data.columns]
    if not names or n_classes == 0:
        return ""
    qis = list(result.schema.quasi_identifiers)
    shown = [result.group_column] if result.group_column is not None else qis
    cards = []
    for name in names:
        spec = result.schema[name]
        attribute = sensitive_attribute(
            result.data[name], name, {name: spec.kind} if spec.kind else None,
            {name: spec.hierarchy} if spec.hierarchy is not None else None,
            {name: spec.order} if spec.order else None)
        classes = Classes(class_ids, n_classes, [attribute])
        measures = bind_models([DistinctLDiversity(1), TCloseness(1.0),
                                DeltaDisclosure(1.0)], [attribute])
        rows = []
        for model, what in zip(measures, ("l: distinct values", "t: distance (EMD)",
                                          "δ: max |log ratio|"), strict=True):
            levels = np.asarray(model.levels(classes), dtype=np.float64)
            order = np.argsort(levels if model.higher_is_better else -levels, kind="stable")
            for c in order[:3]:
                labels = ", ".join(f"{q}={_plain(result.data[q].iloc[int(first_row[c])])}"
                                   for q in shown)
                rows.append(f"<tr><td>{e(what)}</td><td class=\"num\">{e(_num(levels[c]))}"
                            f"</td><td class=\"num\">{_int(classes.sizes[c])}</td>"
                            f"<td class=\"values\">{e(labels)}</td></tr>")
        table = ('<table><thead><tr><th>Measure</th><th class="num">Value</th>'
                 '<th class="num">Rows</th><th>Class</th></tr></thead><tbody>'
                 + "".join(rows) + "</tbody></table>")
        chart = plots.sensitive_plot(result.data[name], class_ids, n_classes)
        cards.append(f'<div class="card"><h3>{e(name)}</h3>'
                     f'{_figure(chart, f"distribution of {name}")}'
                     f"<h3>Weakest classes</h3>{table}</div>")
    note = ('<p class="note">Each sensitive attribute over the whole release and per class '
            "(classes as an adversary groups the rows), and the three weakest classes for "
            "each measure, whatever models were required: the fewest distinct values (l), "
            "the largest distance to the whole release's distribution (t), the largest "
            "log-ratio of a value's share in the class to its share overall (δ; ∞ when a "
            "value of the table is absent from the class).</p>")
    return _section("sensitive", "Sensitive attributes", note + "".join(cards))


def _utility_section(metrics: Mapping[str, float], qis: Sequence[str]) -> str:
    ncp = {q: float(metrics[f"ncp.{q}"]) for q in qis if f"ncp.{q}" in metrics}
    cards = "".join([
        _stat("GCP", _pct(metrics["gcp"]) if "gcp" in metrics else "—",
              "mean NCP over all cells"),
        _stat("Discernibility", _num(metrics["discernibility"])
              if "discernibility" in metrics else "—", "Σ class size²"),
        _stat("C<sub>avg</sub>", f"{metrics['cavg']:.3f}" if "cavg" in metrics else "—",
              "(rows / classes) / k"),
        _stat("Suppression", _pct(metrics.get("suppression_rate", 0.0)), "rows left out"),
    ])
    if "ke.relative_error.mean" in metrics:  # permuted (k,e) releases: aggregate queries
        cards += "".join([
            _stat("SUM query error", _pct(metrics["ke.relative_error.mean"]),
                  f"mean relative error, {_num(metrics.get('ke.queries', 0))} random range "
                  f"queries"),
            _stat("Sum of group ranges", _num(metrics.get("ke.error", 0)),
                  f"{_num(metrics.get('ke.groups', 0))} groups"),
        ])
    if "count_query.relative_error" in metrics:  # m-invariance: COUNT queries
        cards += _stat("COUNT query error", _pct(metrics["count_query.relative_error"]),
                       f"mean relative error, {_num(metrics.get('count_query.queries', 0))} "
                       f"random queries over QI ranges × sensitive value")
    figure = ""
    if ncp:
        figure = ('<div class="card">' + _figure(
            plots.ncp_plot(ncp, metrics.get("gcp")), "information loss per quasi-identifier",
            "Normalised certainty penalty per quasi-identifier: 0 % = values kept, "
            "100 % = fully generalized.") + "</div>")
    return _section("utility", "Utility", f'<div class="cards">{cards}</div>{figure}')


def _glossary() -> str:
    items = [
        ("Equivalence class", "Rows that share every released quasi-identifier value; an "
         "adversary cannot tell them apart."),
        ("NCP / GCP", "Normalised certainty penalty: the share of a column's domain a released "
         "value covers (range width / domain width; (values covered − 1) / (domain − 1) for "
         "sets and hierarchy nodes). GCP averages it over every released cell; a suppressed "
         "row counts as 100 %."),
        ("Discernibility (DM)", "Each row is charged the size of its class (a suppressed row: "
         "the size of the table); lower is better."),
        ("C<sub>avg</sub>", "Average class size divided by the required k; 1 is ideal."),
        ("Prosecutor risk", "The adversary knows the person is in the release: risk 1 / class "
         "size."),
        ("Journalist risk", "The adversary only knows the person is in the population: risk "
         "1 / population class size. Without a population size the table is taken as the "
         "population; with one, each class is scaled by population / table size."),
        ("Marketer risk", "The expected share of records re-identified by matching all of them "
         "(classes / records when the population is the table)."),
        ("Sample uniques", "Records alone in their class: re-identified with certainty by a "
         "prosecutor."),
    ]
    body = "".join(f"<dt>{term}</dt><dd>{e(text)}</dd>" for term, text in items)
    return _section("glossary", "Definitions",
                    f'<div class="card"><dl class="glossary">{body}</dl></div>')


# --------------------------------------------------------------------------- check report


def render_check_report(report: CheckReport, path: str | Path, *,
                        title: str | None = None,
                        provenance: Sequence[tuple[str, str]] | None = None) -> Path:
    """Write the HTML report of a :func:`anonkit.checker.check` run to ``path`` (atomically):
    verdicts, class sizes and the risk they imply. ``provenance``: what was checked and
    how, as (what, text) rows (see :func:`anonkit.report.page.provenance`), shown under the
    title. Returns the path."""
    t0 = time.perf_counter()
    path = Path(path)
    sizes = np.asarray(report.class_sizes, dtype=np.int64)
    k = _required_k(report.verdicts)
    title = title or "Privacy check report"
    summary_rows = [
        ("Quasi-identifiers", _value(report.quasi_identifiers)),
        ("Sensitive", _value(report.sensitive)),
    ]
    cards = "".join([
        _stat("Rows", _int(report.n_rows)),
        _stat("Classes", _int(report.n_classes)),
        _stat("Smallest class", _int(sizes.min()) if len(sizes) else "—"),
        _stat("Models checked", _int(len(report.verdicts)),
              f"{len(report.failures)} failed" if report.failures else "all hold"),
    ])
    sections = [
        _section("summary", "Summary", f'<div class="cards">{cards}</div>'
                 f'<div class="card">{_kv_table(summary_rows)}</div>'),
        _section("verdicts", "Privacy models",
                 _verdict_table(report.verdicts, report.attributes,
                                report.worst_class_values)),
    ]
    nav = [("summary", "Summary"), ("verdicts", "Privacy models")]
    if len(sizes):
        sections += [_class_size_section(sizes, k),
                     _risk_section(sizes, DEFAULT_RISK_THRESHOLD)]
        nav += [("classes", "Classes"), ("risk", "Risk")]
    sections.append(_glossary())
    nav.append(("glossary", "Definitions"))
    elapsed = time.perf_counter() - t0
    subtitle = (" · ".join(f'{e(k)} <span class="mono">{e(v)}</span>'
                           for k, v in provenance) + "<br>" if provenance else "")
    subtitle += (f"{_int(report.n_rows)} rows in {_int(report.n_classes)} equivalence "
                 f"classes · report drawn in {elapsed:.2f} s")
    return _write_page(path, title, subtitle, report.verdicts, nav, sections)
