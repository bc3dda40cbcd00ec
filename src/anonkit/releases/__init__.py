"""Release history and cross-release attack audit.

A changing table published again and again leaks through the intersection of its releases
even when each release is safe alone. This package keeps the history of releases
(:class:`HistoryStore`: what was published, how, and what an adversary saw in each class,
with record keys only as keyed hashes), publishes atomically with it (:func:`publish`),
audits the releases against each other (:func:`audit`), and lets sequential engines plug in
(:func:`register_method`).
"""

from anonkit.releases.attacks import ADVERSARIES, AuditReport, Finding, ScopeResult, audit
from anonkit.releases.publish import (
    PublishContext,
    PublishRequest,
    publish,
    register_method,
    registered_methods,
)
from anonkit.releases.store import HistoryStore, ReleaseInfo, ReleaseView

__all__ = [
    "ADVERSARIES",
    "AuditReport",
    "Finding",
    "HistoryStore",
    "PublishContext",
    "PublishRequest",
    "ReleaseInfo",
    "ReleaseView",
    "ScopeResult",
    "audit",
    "publish",
    "register_method",
    "registered_methods",
]
