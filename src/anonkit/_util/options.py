"""Values a user gives as options (on the command line or in a job file): column lists and
NAME=VALUE pairs. Imports nothing heavy, so the command line can parse its job before
pandas is loaded."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from anonkit.errors import InputError


def as_list(value: str | Iterable[str] | None) -> list[str]:
    """``"a,b"`` or ``["a", "b"]`` -> ``["a", "b"]``."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value)


def job_qis(job: Mapping[str, object], output: str) -> list[str]:
    """A job's quasi-identifiers, after checking it names its input, its output (``output``:
    how to give it on the command line, e.g. ``-o FILE``) and at least one QI."""
    for key in ("input", "output"):
        if not job.get(key):
            raise InputError(f"no {key} given: pass {'INPUT' if key == 'input' else output} "
                             f"or set {key} in the config")
    qis = as_list(job.get("quasi_identifiers"))  # type: ignore[arg-type]
    if not qis:
        raise InputError("no quasi-identifiers given: pass --qi a,b,c or set "
                         "quasi_identifiers in the config")
    return qis


def parse_pairs(pairs: Sequence[str], option: str) -> dict[str, str]:
    """Repeated ``--option NAME=VALUE`` values as a dict."""
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise InputError(f"--{option} takes NAME=VALUE, got {pair!r}")
        out[name.strip()] = value.strip()
    return out
