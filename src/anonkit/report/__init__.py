"""HTML reports: one self-contained file per release (:func:`render_report`) or per check
of a released table (:func:`render_check_report`).

Importing this package is cheap: matplotlib (about half a second to import) is loaded only
when a report is actually drawn.
"""

from anonkit.report.html import render_check_report, render_report

__all__ = ["render_check_report", "render_report"]
