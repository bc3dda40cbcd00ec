"""Privacy models: predicates over all equivalence classes at once."""

from anonkit.models.base import (
    Classes,
    KAnonymity,
    PrivacyModel,
    SensitiveAttribute,
    ValueCounts,
    Verdict,
)

__all__ = ["Classes", "KAnonymity", "PrivacyModel", "SensitiveAttribute", "ValueCounts",
           "Verdict"]
