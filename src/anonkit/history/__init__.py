"""Release history and cross-release attack audit.

A changing table published again and again leaks through the intersection of its releases
even when each release is safe alone. This package keeps the history of releases
(:class:`HistoryStore`: what was published, how, and what an adversary saw in each class,
with record keys only as keyed hashes), publishes atomically with it (:func:`publish`),
audits the releases against each other (:func:`audit`), tells what an adversary has
accumulated about each record (:func:`knowledge`), and lets sequential engines plug in
(:func:`register_engine`).
"""

from anonkit.history.attacks import (
    ADVERSARIES,
    AuditReport,
    Finding,
    Requirement,
    ScopeResult,
    audit,
    audit_views,
)
from anonkit.history.engines import register_engine
from anonkit.history.engines.context import PublishContext, PublishRequest
from anonkit.history.knowledge.view import Knowledge, knowledge, knowledge_views
from anonkit.history.publish import publish
from anonkit.history.records import PreparedRelease, ReleaseInfo, ReleaseView
from anonkit.history.secret import SecretBesideHistoryWarning
from anonkit.history.store import HistoryStore, HistoryUpgradedWarning

__all__ = [
    "ADVERSARIES",
    "AuditReport",
    "Finding",
    "HistoryStore",
    "HistoryUpgradedWarning",
    "Knowledge",
    "PreparedRelease",
    "PublishContext",
    "PublishRequest",
    "ReleaseInfo",
    "ReleaseView",
    "Requirement",
    "ScopeResult",
    "SecretBesideHistoryWarning",
    "audit",
    "audit_views",
    "knowledge",
    "knowledge_views",
    "publish",
    "register_engine",
]
