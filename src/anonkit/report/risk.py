"""The report of ``anonkit risk``: a summary first, then the population uniqueness estimates,
the special uniques (SUDA2), the individual and household risk with their distributions, and
the provenance (the input's SHA-256, the command, the version, the time). Records are named
by row number, never by value."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from anonkit import __version__
from anonkit._util.files import sha256_file, write_atomic
from anonkit.metrics.reidentification import RISKIEST, RiskReport
from anonkit.models.individual_estimates import IndividualRisk
from anonkit.report.page import now, page, report_stylesheet, section

#: the bounds of the individual-risk buckets of the distribution table
RISK_BUCKETS = (0.0, 0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0)


def _e(text: object) -> str:
    return html.escape(str(text))


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _distribution(measured: IndividualRisk) -> str:
    """Records per risk bucket (lower bound excluded, upper included; the first from 0)."""
    risk = measured.risk
    edges = np.asarray(RISK_BUCKETS)
    bucket = np.clip(np.searchsorted(edges, risk, side="left") - 1, 0, len(edges) - 2)
    counts = np.bincount(bucket, minlength=len(edges) - 1)
    rows = [[f"{lo:g} to {hi:g}", f"{int(n):,}", f"{n / max(len(risk), 1):.2%}"]
            for lo, hi, n in zip(edges[:-1], edges[1:], counts, strict=True)]
    return _table(["risk", "records", "share"], rows)


def render_risk_report(report: RiskReport, *, source: str | Path | None = None,
                       command: str | None = None) -> str:
    """The report as HTML text (see the module)."""
    summary = [
        f"<p>{report.rows:,} records in {report.classes:,} classes over "
        f"{_e(', '.join(report.quasi_identifiers))}.</p>",
        _table(["measure", "records", "share"], [
            ["sample uniques (alone in their class)", f"{report.in_classes_of_one:,}",
             f"{report.in_classes_of_one / max(report.rows, 1):.2%}"],
            ["in classes of two", f"{report.in_classes_of_two:,}",
             f"{report.in_classes_of_two / max(report.rows, 1):.2%}"]])]
    sections = [section("summary", "Summary", "".join(summary))]
    if report.population:
        first = next(iter(report.population.values()))
        rows = [[name + (f" (picked {p.model})" if name == "dankar" else ""),
                 f"{p.uniques:,.1f}" if p.converged else "no estimate",
                 f"{p.share:.4%}" if p.converged else "-"]
                for name, p in report.population.items()]
        sections.append(section(
            "population", "Population uniques, estimated from the sample",
            f"<p>Sampling fraction {first.sampling_fraction:.4g}, population "
            f"{first.population_size:,.0f}. Pitman (Hoshino 2001), Zayatz (1991) and the "
            f"shifted negative binomial (Chen &amp; Keller-McNulty 1998); Dankar et al. (2012) "
            f"pick one from the sampling fraction and the data.</p>"
            + _table(["estimator", "population uniques", "share of the population"], rows)))
    if report.suda is not None:
        suda = report.suda
        sizes = [[str(k + 1), f"{int(n):,}"]
                 for k, n in enumerate(suda.msu_counts.sum(axis=0))]
        top = suda.top_records(RISKIEST).tolist()
        sections.append(section(
            "suda", "Special uniques (SUDA2)",
            f"<p>Minimal sample uniques of at most {suda.max_msu} quasi-identifiers (Manning, "
            f"Haglin &amp; Keane 2008): {suda.special_uniques:,} records have at least one. "
            f"DIS probability {suda.dis:.4g}.</p>"
            + _table(["MSU size", "MSUs"], sizes)
            + _table(["row", "SUDA score", "DIS-SUDA score"],
                     [[str(r), f"{suda.score[r]:g}", f"{suda.dis_score[r]:.4g}"]
                      for r in top])))
    for anchor, heading, measured in (
            ("individual", "Individual risk (Benedetti & Franconi)", report.individual),
            ("household", "Household risk", report.household)):
        if measured is not None:
            top = measured.riskiest(RISKIEST).tolist()
            sections.append(section(
                anchor, heading,
                f"<p>Expected re-identifications {measured.expected_reidentifications:.2f} "
                f"({measured.global_risk:.4%} of the records).</p>"
                + _distribution(measured)
                + _table(["row", "risk"], [[str(r), f"{measured.risk[r]:.4f}"]
                                           for r in top])))
    provenance = [["anonkit", __version__], ["made", now()]]
    if source is not None:
        provenance += [["input", str(source)]]
        if "://" not in str(source):  # (a database table, shown as its URL, is no file)
            provenance += [["input SHA-256", sha256_file(source)]]
    if command is not None:
        provenance.append(["command", command])
    sections.append(section("provenance", "Provenance", _table(["", ""], provenance)))
    body = ('<main class="page"><h1>Re-identification risk</h1>' + "".join(sections)
            + "<footer>Generated by anonkit. This file is self-contained: it loads nothing "
              "from the network.</footer></main>")
    return page("Re-identification risk", body, stylesheet=report_stylesheet())


def write_risk_report(report: RiskReport, path: str | Path, *,
                      source: str | Path | None = None, command: str | None = None) -> Path:
    """Write the report of ``report`` to ``path`` atomically."""
    return write_atomic(path, render_risk_report(report, source=source, command=command))
