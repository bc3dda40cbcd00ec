"""What a sequential engine is handed by ``publish``: the request, and the history's past as
data (the previous release's state and views), never the store itself.

The engine reads the past through :class:`PublishContext` and returns the next
:class:`~anonkit.release.Release`, whose ``method_state`` is its new state; ``publish``
records both. Like diffprivlib's accountant, the history is handed to the mechanism, never
reached for: an engine cannot write to the store, and a test can hand it a past of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import pandas as pd

from anonkit.data.schema import Kind, Schema
from anonkit.hierarchy.base import Hierarchy
from anonkit.history.records import ReleaseInfo, ReleaseView
from anonkit.release import Release


@dataclass(frozen=True)
class PublishRequest:
    """The roles and the method of a release (everything but the data and the output)."""

    dataset: str
    key: str
    quasi_identifiers: Sequence[str]
    sensitive: Sequence[str] = ()
    identifiers: Sequence[str] = ()
    method: str = "mondrian"
    options: Mapping[str, object] = field(default_factory=dict)
    hierarchies: Mapping[str, Hierarchy] = field(default_factory=dict)
    kinds: Mapping[str, Kind | str] = field(default_factory=dict)
    #: ordinal columns' values, low to high
    orders: Mapping[str, Sequence[object]] = field(default_factory=dict)


def _nothing() -> None:
    return None


def _no_releases() -> list[tuple[ReleaseInfo, ReleaseView]]:
    return []


@dataclass
class PublishContext:
    """The past of the dataset as of the start of this publish.

    ``previous_state``: the method state the previous release recorded (None for the first
    release, or when it recorded none). The views are loaded on first use only: most
    releases need the previous one's at most."""

    dataset: str
    seq: int  # the number this release will get
    schema: Schema  # the input's roles (the key column is an identifier)
    pseudonyms: list[bytes]  # per input row, HMAC of its key (the history's record key)
    previous: ReleaseInfo | None = None
    previous_state: bytes | None = None
    load_previous: Callable[[], ReleaseView | None] = _nothing
    #: every earlier release of the dataset with its view (values, no labels), oldest first
    load_earlier: Callable[[], list[tuple[ReleaseInfo, ReleaseView]]] = _no_releases
    _previous_view: ReleaseView | None = None

    def previous_view(self) -> ReleaseView | None:
        """The previous release's classes and pseudonym -> class map (loaded once)."""
        if self.previous is not None and self._previous_view is None:
            self._previous_view = self.load_previous()
        return self._previous_view

    def earlier_views(self) -> list[tuple[ReleaseInfo, ReleaseView]]:
        return self.load_earlier()


class Engine(Protocol):
    """A method's publishing step: the next release of ``request.dataset`` from ``df``."""

    def __call__(self, df: pd.DataFrame, request: PublishRequest,
                 context: PublishContext) -> Release: ...
