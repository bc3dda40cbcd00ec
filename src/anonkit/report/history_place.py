"""A published release's place in its history, as its sign-off report shows it: the
release's number, the release before it, and what the publish-time gate found per
adversary, overridden or not. Plain data: the history fills it in
(:mod:`anonkit.history.sign_off`), the report draws it (:func:`history_section`)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from anonkit.report.page import section

__all__ = ["AdversaryGate", "HistoryPlace", "PreviousRelease", "history_section"]

e = html.escape


@dataclass(frozen=True)
class PreviousRelease:
    """The release before this one in its dataset's history."""

    seq: int
    published: str
    output_path: str
    content_hash: str


@dataclass(frozen=True)
class AdversaryGate:
    """What the publish-time gate found for one adversary."""

    adversary: str
    description: str
    claimed: bool  # the release's threat model claims to resist this adversary
    result: str  # e.g. "no breach", "3 records newly breached (1 proved)"
    breached: bool


@dataclass(frozen=True)
class HistoryPlace:
    """A published release's place in its history: its number, the release before it, and
    what the publish-time gate found, per adversary, and whether it was overridden."""

    dataset: str
    seq: int
    published: str | None  # None: being published (the report is drawn before the commit)
    previous: PreviousRelease | None
    gate: str  # the gate's result in a line
    adversaries: Sequence[AdversaryGate] = ()
    overridden: bool = False
    threat_model: str = ""
    history: str | None = None  # where the history is (an SQLite file), when shown


def history_section(place: HistoryPlace) -> str:
    """The report section "Place in the history"."""
    previous = place.previous
    rows = [
        ("Dataset", f'<span class="mono">{e(place.dataset)}</span>'),
        ("Release number", f"{place.seq:,}"),
        ("Published", e(place.published) if place.published else
         "this report was drawn while publishing it, before the history recorded it"),
        ("Previous release", "none: the first release of its dataset" if previous is None
         else (f"release {previous.seq:,}, published {e(previous.published)}, to "
               f'<span class="mono">{e(previous.output_path)}</span> (SHA-256 '
               f'<span class="mono">{e(previous.content_hash)}</span>)')),
        ("Threat model across releases", e(place.threat_model) or "—"),
        ("Gate", ('<span class="pill fail">OVERRIDDEN</span> ' if place.overridden else "")
         + e(place.gate)),
    ]
    if place.history:
        rows.append(("History", f'<span class="mono">{e(place.history)}</span>'))
    table = "".join(f"<tr><th>{e(k)}</th><td>{v}</td></tr>" for k, v in rows)
    body = f'<div class="card"><table class="kv"><tbody>{table}</tbody></table></div>'
    if place.adversaries:
        lines = "".join(
            f'<tr class="{"fail" if a.breached else "pass"}"><td class="strong">'
            f"{e(a.adversary)}</td><td>{e(a.description)}</td>"
            f"<td>{'claimed' if a.claimed else 'outside the claimed threat model'}</td>"
            f"<td>{e(a.result)}</td></tr>" for a in place.adversaries)
        body += ('<div class="card"><h3>The gate, per adversary</h3><table><thead><tr>'
                 "<th>Adversary</th><th>Knows</th><th>This release's claim</th>"
                 f"<th>Gate</th></tr></thead><tbody>{lines}</tbody></table>"
                 '<p class="note">Before a release is written, every record of the dataset '
                 "is judged over all the releases that contain it, this one included; a "
                 "release that would breach a record is refused unless the steward "
                 "overrides the gate (--allow-breach), which is recorded with it.</p></div>")
    return section("history", "Place in the history", body)
