"""Privacy models given as method options: parsed from their short forms once, and the
models a method's typed options ask for. Loaded when a job first needs a model (it imports
the models, and with them numpy)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from anonkit._util.numbers import describe as _describe
from anonkit.data.read import read_table
from anonkit.errors import InputError
from anonkit.models.base import KAnonymity, PrivacyModel
from anonkit.models.closeness import TCloseness
from anonkit.models.diversity import DistinctLDiversity
from anonkit.models.population_table import PopulationTable
from anonkit.models.risk import bind_population
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
    ``l`` and ``t``; the risk models with what they judge against (``population``,
    ``sampling_fraction`` or ``population_size``, ``weight``)."""
    out: list[PrivacyModel] = []
    if options.get("k") is not None:
        out.append(KAnonymity(options["k"]))
    out += list(options.get("models") or [])
    if options.get("l") is not None:
        out.append(DistinctLDiversity(options["l"]))
    if options.get("t") is not None:
        out.append(TCloseness(options["t"]))
    return bind_population(out, population=options.get("population"),
                           sampling_fraction=options.get("sampling_fraction"),
                           population_size=options.get("population_size"),
                           weight=options.get("weight"))


def population_table(name: str, value: object, source: str) -> PopulationTable:
    """The population table of ``--population``: a CSV or Parquet file (a path), or, from
    Python, a DataFrame or a :class:`PopulationTable`."""
    if isinstance(value, PopulationTable):
        return value
    if isinstance(value, pd.DataFrame):
        if len(value) == 0:
            raise InputError(f"{name}: the population table has no rows; give the "
                             f"population the table was drawn from")
        return PopulationTable(value)
    if isinstance(value, str | Path) and str(value).strip():
        frame = read_table(Path(value))
        if len(frame) == 0:
            raise InputError(f"the population table {value} has no rows; give the "
                             f"population the table was drawn from")
        return PopulationTable(frame, f"the population table {value}")
    raise InputError(f"{name} must be the path of a CSV or Parquet file (or a DataFrame), "
                     f"got {_describe(value)}")


population_table.kind = "FILE"  # type: ignore[attr-defined]
