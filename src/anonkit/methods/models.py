"""Privacy models given as method options: parsed from their short forms once, and the
models a method's typed options ask for. Loaded when a job first needs a model (it imports
the models, and with them numpy)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anonkit._util.numbers import describe as _describe
from anonkit.errors import InputError
from anonkit.models.base import KAnonymity, PrivacyModel
from anonkit.models.closeness import TCloseness
from anonkit.models.diversity import DistinctLDiversity
from anonkit.models.text import parse_model


def model_list(name: str, value: object, source: str) -> list[PrivacyModel]:
    """Privacy models: objects, or their short forms (``entropy-l=2``, ``ke=3,2000``)."""
    # a job file must give a list (a lone text there is a mistake the next key would hide)
    single = isinstance(value, PrivacyModel) or (isinstance(value, str) and source != "toml")
    items = [value] if single else value
    if not isinstance(items, list | tuple):
        raise InputError(f"{name} must be a list of models such as [\"t=0.2\"], got "
                         f"{_describe(value)}")
    out = []
    for item in items:
        if isinstance(item, PrivacyModel):
            out.append(item)
        elif isinstance(item, str):
            out.append(parse_model(item))
        else:
            raise InputError(f"{name}: {_describe(item)} is not a model; write it as text, "
                             f"e.g. \"t=0.2\"")
    return out


def models_from_options(options: Mapping[str, Any]) -> list[PrivacyModel]:
    """The privacy models the typed options ask for, as objects: ``k``, ``models``, then
    ``l`` and ``t``."""
    out: list[PrivacyModel] = []
    if options.get("k") is not None:
        out.append(KAnonymity(options["k"]))
    out += list(options.get("models") or [])
    if options.get("l") is not None:
        out.append(DistinctLDiversity(options["l"]))
    if options.get("t") is not None:
        out.append(TCloseness(options["t"]))
    return out
