"""HTML reports: one self-contained file per release (:func:`render_report`) or per check
of a released table (:func:`render_check_report`).

Importing this package is cheap, and so is drawing a report: its charts are inline SVG
(:mod:`anonkit.report.svg`). matplotlib (about half a second to import) is loaded only to
draw the code tree of a huffman or alphabetic release.
"""

from anonkit.report.html import render_check_report, render_report

__all__ = ["render_check_report", "render_report"]
