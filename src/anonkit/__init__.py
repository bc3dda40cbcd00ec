"""anonkit: privacy-preserving data publishing with a release history.

The main entry points (:mod:`anonkit.jobs`, what the command line runs)::

    import anonkit
    adult = anonkit.load_adult()
    release = anonkit.anonymize(adult.data, "mondrian",
                                quasi_identifiers=adult.quasi_identifiers,
                                sensitive=adult.sensitive, insensitive="*", k=10, l=2)
    anonkit.write_release(release, "release.csv")     # refused unless every model holds
    anonkit.check(release.data, adult.quasi_identifiers, adult.sensitive, ["k=10", "l=2"])

    with anonkit.History("history.db") as history:    # a changing table, release after release
        history.publish(df, dataset="census", key="id", output="r1.csv",
                        method="m-invariance", quasi_identifiers=["age", "zip"],
                        sensitive=["disease"], insensitive="*", m=3)
        history.audit("census")

Everything but the errors is imported on first use, so ``import anonkit`` (and the command
line's start) stays quick.
"""

from __future__ import annotations

import importlib

from anonkit.errors import AnonkitError, InputError, ModelNotMetError

__version__ = "0.1.0"

_LAZY = {
    "anonymize": ("anonkit.jobs", "anonymize"),
    "risk": ("anonkit.jobs", "risk"),
    "History": ("anonkit.jobs", "History"),
    "Hierarchy": ("anonkit.hierarchy", "Hierarchy"),
    "read_arx_hierarchy": ("anonkit.hierarchy", "read_arx_hierarchy"),
    "ColumnSpec": ("anonkit.data.schema", "ColumnSpec"),
    "Kind": ("anonkit.data.schema", "Kind"),
    "Role": ("anonkit.data.schema", "Role"),
    "Schema": ("anonkit.data.schema", "Schema"),
    "check": ("anonkit.checker", "check"),
    "parse_model": ("anonkit.models.text", "parse_model"),
    "CheckReport": ("anonkit.checker", "CheckReport"),
    "Mondrian": ("anonkit.methods.mondrian", "Mondrian"),
    "Release": ("anonkit.release", "Release"),
    "ReleaseKind": ("anonkit.release", "ReleaseKind"),
    "Provenance": ("anonkit.release", "Provenance"),
    "ThreatModel": ("anonkit.release", "ThreatModel"),
    "Partition": ("anonkit.partition", "Partition"),
    "verify_release": ("anonkit.verify", "verify_release"),
    "write_release": ("anonkit.verify", "write_release"),
    "load_adult": ("anonkit.datasets", "load_adult"),
    "make_census": ("anonkit.datasets", "make_census"),
    "read_table": ("anonkit.data.read", "read_table"),
    "write_table": ("anonkit.data.write", "write_table"),
    "render_report": ("anonkit.report", "render_report"),
}

__all__ = ["AnonkitError", "InputError", "ModelNotMetError", *_LAZY]


def __dir__() -> list[str]:
    """The public names too, though each is imported on first use."""
    return sorted({*(n for n in globals() if n.startswith("__")), *__all__})


def __getattr__(name: str) -> object:
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'anonkit' has no attribute {name!r}")
