"""The report section of a global recoding: the levels chosen, the lattice search, the
suppressed rows per class and every utility metric against the original.

Drawn from what the release carries (:attr:`Release.recoding`), never by searching again.
The suppressed classes are counts below the models' thresholds: the section is for the
data steward's report, never for publication.
"""

from __future__ import annotations

import html

from anonkit._util.numbers import display_number
from anonkit.release import Release
from anonkit.report.page import section

#: how many suppressed classes the section lists (the largest first)
SHOWN_CLASSES = 50


def lattice_section(result: Release) -> str:
    """The section, or empty for a release that is not a global recoding."""
    recoding = result.recoding
    if recoding is None:
        return ""
    levels = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{level}</td><td>{recoding.heights[name] - 1}"
        f"</td></tr>" for name, level in recoding.levels.items())
    lattice = "".join(f"<tr><td>{html.escape(what)}</td><td>{count:,}</td></tr>"
                      for what, count in recoding.lattice.items())
    utility = "".join(
        f"<tr><td>{html.escape(name)}{' (minimised)' if name == recoding.metric else ''}"
        f"</td><td>{html.escape(display_number(value))}</td></tr>"
        for name, value in recoding.utility.items())
    classes = recoding.suppressed_classes
    if len(classes):
        header = "".join(f"<th>{html.escape(str(c))}</th>" for c in classes.columns)
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
            for row in classes.head(SHOWN_CLASSES).itertuples(index=False))
        more = (f"<p>{len(classes) - SHOWN_CLASSES:,} smaller classes are not listed.</p>"
                if len(classes) > SHOWN_CLASSES else "")
        suppressed = (f"<p>{recoding.suppressed_rows:,} rows in {len(classes):,} classes "
                      f"broke a model at the chosen levels and were released with every "
                      f"quasi-identifier as <code>*</code> (the largest first; these counts "
                      f"are for the steward only):</p><table><tr>{header}</tr>{rows}"
                      f"</table>{more}")
    else:
        suppressed = "<p>No row was suppressed.</p>"
    body = (f'<div class="card"><p>Every quasi-identifier is released at one level of its '
            f'hierarchy for the whole table (0: the value itself); the level vector is the '
            f'qualifying node of the lattice with the least '
            f'<b>{html.escape(recoding.metric)}</b> '
            f'({html.escape(display_number(recoding.value))}).</p>'
            f'<table><tr><th>quasi-identifier</th><th>level</th><th>top level</th></tr>'
            f'{levels}</table></div>'
            f'<div class="card"><h3>Lattice search</h3><table><tr><th>nodes</th>'
            f'<th>count</th></tr>{lattice}</table><p>checked: models evaluated on the '
            f'node\'s frequency set; tagged: known to qualify from another node\'s check '
            f'(predictive tagging); pruned: never checked (tagged as failing, or excluded '
            f'by the utility bound).</p></div>'
            f'<div class="card"><h3>Utility against the original</h3><table><tr>'
            f'<th>metric</th><th>value</th></tr>{utility}</table></div>'
            f'<div class="card"><h3>Suppressed rows</h3>{suppressed}</div>')
    return section("lattice", "Global recoding", body)
