"""The page every anonkit report is built on: the release and check reports
(:mod:`anonkit.report.html`), the audit of a release history
(:mod:`anonkit.history.report`) and the kb-anonymity report
(:mod:`anonkit.testdata.report`).

A report must open offline, in a mail attachment or a ticket, years later: so the page's
stylesheet is inlined and it links nothing. Each report keeps its own look: the release
and check reports use ``report.css`` (:func:`report_stylesheet`), the audit and the
kb-anonymity report the plain tables of :data:`PLAIN_STYLE` with a few rules of their own.
"""

from __future__ import annotations

import datetime as _dt
import html
from importlib import resources

__all__ = ["PLAIN_STYLE", "now", "page", "report_stylesheet", "section"]

#: the rules the plain reports (the audit, the kb-anonymity report) share; each adds its
#: own margins, spacing and colours after them
PLAIN_STYLE = """
body { font-family: system-ui, sans-serif; color: #222; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; vertical-align: top; }
th { background: #f3f3f3; }
"""


def report_stylesheet() -> str:
    """The stylesheet of the release and check reports (``report.css``)."""
    return resources.files("anonkit.report").joinpath("report.css").read_text(encoding="utf-8")


def page(title: str, body: str, *, stylesheet: str) -> str:
    """The whole HTML document: ``title`` (text; escaped here), ``body`` (markup: escape
    data first) and ``stylesheet`` inlined in its head."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta name=\"generator\" content=\"anonkit\">"
        f"<title>{html.escape(title)}</title><style>{stylesheet}</style></head><body>"
        f"{body}</body></html>\n"
    )


def section(anchor: str, heading: str, body: str) -> str:
    """A report section: ``anchor`` and ``heading`` are text (escaped here), ``body`` markup."""
    return (f'<section id="{html.escape(anchor)}"><h2>{html.escape(heading)}</h2>{body}'
            f"</section>")


def now() -> str:
    """The time a report is made, local, to the minute, with its zone."""
    return _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z").strip()
