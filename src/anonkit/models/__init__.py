"""Privacy models: predicates over all equivalence classes at once."""

from anonkit.models.base import (
    Classes,
    CrossReleaseRequirement,
    KAnonymity,
    PrivacyModel,
    SensitiveAttribute,
    ValueCounts,
    Verdict,
    exact_number,
    format_parameters,
)
from anonkit.models.closeness import TCloseness
from anonkit.models.diversity import DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity
from anonkit.models.invariance import MUniqueness
from anonkit.models.ke_anonymity import KEAnonymity
from anonkit.models.likeness import BetaLikeness, DeltaDisclosure, EnhancedBetaLikeness
from anonkit.models.text import MODEL_SYNTAX, parse_model

__all__ = [
    "MODEL_SYNTAX",
    "BetaLikeness",
    "Classes",
    "CrossReleaseRequirement",
    "DeltaDisclosure",
    "DistinctLDiversity",
    "EnhancedBetaLikeness",
    "EntropyLDiversity",
    "KAnonymity",
    "KEAnonymity",
    "MUniqueness",
    "PrivacyModel",
    "RecursiveCLDiversity",
    "SensitiveAttribute",
    "TCloseness",
    "ValueCounts",
    "Verdict",
    "exact_number",
    "format_parameters",
    "parse_model",
]
