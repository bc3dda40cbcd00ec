"""Privacy models: predicates over all equivalence classes at once."""

from anonkit.models.base import (
    Classes,
    KAnonymity,
    PrivacyModel,
    SensitiveAttribute,
    ValueCounts,
    Verdict,
    format_parameters,
)
from anonkit.models.closeness import TCloseness
from anonkit.models.diversity import DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity
from anonkit.models.ke import KEAnonymity
from anonkit.models.likeness import BetaLikeness, DeltaDisclosure, EnhancedBetaLikeness

__all__ = [
    "BetaLikeness",
    "Classes",
    "DeltaDisclosure",
    "DistinctLDiversity",
    "EnhancedBetaLikeness",
    "EntropyLDiversity",
    "KAnonymity",
    "KEAnonymity",
    "PrivacyModel",
    "RecursiveCLDiversity",
    "SensitiveAttribute",
    "TCloseness",
    "ValueCounts",
    "Verdict",
    "format_parameters",
]
