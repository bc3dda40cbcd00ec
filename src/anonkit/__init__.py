"""anonkit: privacy-preserving data publishing with a release history.

The main entry points::

    import anonkit
    adult = anonkit.load_adult()
    result = anonkit.Mondrian(k=10, models=["l=2"]).anonymize(
        adult.data, adult.quasi_identifiers, sensitive=adult.sensitive)
    result.write("release.csv")                       # refused unless every model holds
    anonkit.check(result.data, adult.quasi_identifiers, adult.sensitive, ["k=10", "l=2"])

Everything but the errors is imported on first use, so ``import anonkit`` (and the command
line's start) stays quick.
"""

from __future__ import annotations

import importlib
from typing import Any

from anonkit.errors import AnonkitError, InputError, ModelNotMetError

__version__ = "0.1.0"

_LAZY = {
    "Hierarchy": ("anonkit.hierarchy", "Hierarchy"),
    "read_arx_hierarchy": ("anonkit.hierarchy", "read_arx_hierarchy"),
    "ColumnSpec": ("anonkit.data.table", "ColumnSpec"),
    "Kind": ("anonkit.data.table", "Kind"),
    "Role": ("anonkit.data.table", "Role"),
    "Schema": ("anonkit.data.table", "Schema"),
    "check": ("anonkit.checker", "check"),
    "parse_model": ("anonkit.checker", "parse_model"),
    "CheckReport": ("anonkit.checker", "CheckReport"),
    "Mondrian": ("anonkit.algorithms.mondrian", "Mondrian"),
    "Release": ("anonkit.release", "Release"),
    "ReleaseKind": ("anonkit.release", "ReleaseKind"),
    "Provenance": ("anonkit.release", "Provenance"),
    "ThreatModel": ("anonkit.release", "ThreatModel"),
    "Partition": ("anonkit.partition", "Partition"),
    "verify_release": ("anonkit.verify", "verify_release"),
    "load_adult": ("anonkit.datasets", "load_adult"),
    "make_census": ("anonkit.datasets", "make_census"),
    "read_table": ("anonkit.data.io", "read_table"),
    "write_table": ("anonkit.data.io", "write_table"),
    "render_report": ("anonkit.report", "render_report"),
}

__all__ = ["AnonkitError", "InputError", "ModelNotMetError", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'anonkit' has no attribute {name!r}")
