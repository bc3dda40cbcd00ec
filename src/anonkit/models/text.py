"""Model text: the short form of a privacy model, e.g. ``k=5``, ``recursive-cl=3,2``,
``delta=1.5,absent=fail``.

Syntax: ``key=number[,number...][,option=value...]`` — the key names the model, the numbers
are its parameters in the order the model declares (:attr:`PrivacyModel.text_numbers`), and
``name=value`` options it declares (:attr:`PrivacyModel.text_options`) may follow. Keys and
option names are case-insensitive, ``_`` may stand for ``-`` and spaces are ignored.
:func:`parse_model` reads it; :meth:`PrivacyModel.spec` writes the canonical form, which
reads back into a model with the same parameters.
"""

from __future__ import annotations

import math

from anonkit._util.numbers import number_from_text
from anonkit.errors import InputError
from anonkit.models.base import KAnonymity, PrivacyModel
from anonkit.models.closeness import TCloseness
from anonkit.models.diversity import DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity
from anonkit.models.invariance import MUniqueness
from anonkit.models.ke_anonymity import KEAnonymity
from anonkit.models.likeness import BetaLikeness, DeltaDisclosure, EnhancedBetaLikeness
from anonkit.models.risk import DeltaPresence, IndividualRiskModel, KMap, PopulationUniquenessModel

MODEL_SYNTAX = (
    "k=5 (k-anonymity), l=3 (distinct l-diversity), entropy-l=2.5, recursive-cl=3,2 "
    "(recursive (c,l)-diversity: c then l), t=0.2 (t-closeness; also t-equal=, t-ordered=, "
    "t-hierarchical=), delta=1.5 (δ-disclosure; delta=1.5,absent=fail: a class lacking a "
    "value of the table fails), beta=0.5 (basic β-likeness), enhanced-beta=0.5, ke=3,2000 "
    "((k,e)-anonymity: k then e), m=4 (m-uniqueness, for m-invariance), "
    "population-uniqueness=0.01,model=dankar (also pitman, zayatz, snb), k-map=5 "
    "(k-map=5,estimator=zero-truncated-poisson), delta-presence=0.1,0.6 (δ-presence: "
    "δmin then δmax), individual-risk=0.05"
)

#: every model that has a model text
TEXT_MODELS: tuple[type[PrivacyModel], ...] = (
    KAnonymity, DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity, TCloseness,
    DeltaDisclosure, BetaLikeness, EnhancedBetaLikeness, KEAnonymity, MUniqueness,
    PopulationUniquenessModel, KMap, DeltaPresence, IndividualRiskModel,
)

#: normalised key -> the model class it names
MODEL_KEYS: dict[str, type[PrivacyModel]] = {
    key: cls for cls in TEXT_MODELS for key in cls.text_keys
}

_COUNTS = {1: "one number", 2: "two numbers separated by a comma"}


def _normalise(name: str) -> str:
    return "".join(name.split()).lower().replace("_", "-")


def parse_model(text: str, sensitive: str | None = None) -> PrivacyModel:
    """A model from its short form, e.g. ``"k=5"``, ``"recursive-cl=3,2"``, ``"t=0.2"``,
    ``"delta=1.5,absent=fail"``.

    See the module docstring for the syntax and :data:`MODEL_SYNTAX` for every model. The
    model concerns ``sensitive`` (None: the only sensitive attribute, resolved when
    checked); a model that needs one is refused later by :func:`anonkit.checker.check` if
    the table has none.
    """
    if not isinstance(text, str) or "=" not in text:
        raise InputError(f"cannot read the model {text!r}: write key=value, one of: "
                         f"{MODEL_SYNTAX}")
    raw_key, _, raw = text.partition("=")
    key = _normalise(raw_key)
    if key not in MODEL_KEYS:
        raise InputError(f"unknown model {key!r} in {text!r}; models are: {MODEL_SYNTAX}")
    cls = MODEL_KEYS[key]
    parts = [p.strip() for p in raw.split(",")]
    # the numbers come first, then name=value options
    n_numbers = next((i for i, p in enumerate(parts) if "=" in p), len(parts))
    number_parts, option_parts = parts[:n_numbers], parts[n_numbers:]
    stray = next((p for p in option_parts if "=" not in p), None)
    if stray is not None:
        raise InputError(f"model {text!r}: {stray!r} follows an option; write the numbers "
                         f"first, then name=value options")
    arity = len(cls.text_numbers)
    if len(number_parts) != arity:
        what = _COUNTS.get(arity, f"{arity} numbers separated by commas")
        raise InputError(f"model {text!r}: {key} takes {what} "
                         f"({', '.join(cls.text_numbers)}); models are: {MODEL_SYNTAX}")
    numbers = [_number(part, text) for part in number_parts]
    options = _options(option_parts, cls, text)
    model = cls.from_text(key, numbers, options)
    if model.needs_sensitive:
        model.attribute = sensitive
    return model


def _number(part: str, text: str) -> int | float:
    try:
        number = number_from_text(part)
    except ValueError:
        raise InputError(f"model {text!r}: {part!r} is not a number; models are: "
                         f"{MODEL_SYNTAX}") from None
    if isinstance(number, float) and not math.isfinite(number):
        raise InputError(f"model {text!r}: {part!r} is not a finite number")
    return number


def _options(parts: list[str], cls: type[PrivacyModel], text: str) -> dict[str, str]:
    """The ``name=value`` options of a model text, checked against the model's options."""
    declared = cls.text_options
    takes = ("its options: " + ", ".join(f"{name}={'|'.join(values)}"
                                         for name, values in declared.items())
             if declared else "it takes no options")
    options: dict[str, str] = {}
    for part in parts:
        raw_name, _, raw_value = part.partition("=")
        name, value = _normalise(raw_name), raw_value.strip().lower()
        if name not in declared:
            raise InputError(f"model {text!r}: unknown option {name!r} for {cls.name}; "
                             f"{takes}")
        if name in options:
            raise InputError(f"model {text!r}: option {name!r} is given twice; give it once")
        if value not in declared[name]:
            raise InputError(f"model {text!r}: {name} must be one of "
                             f"{', '.join(declared[name])}; got {raw_value.strip()!r}")
        options[name] = value
    return options
