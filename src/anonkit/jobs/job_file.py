"""A job file's values checked against their types before anything runs: a wrong type is
refused, never coerced (``allow_missing = "false"`` is not true). Loaded only when a job
file is given."""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec

from anonkit.errors import InputError
from anonkit.jobs.common import TEXTS

_TYPE_WORDS = {"str": "text", "bool": "true or false", "int": "a whole number",
               "float": "a number", "array": "a list", "object": "a table", "null": "nothing"}


def _type_words(kind: object) -> str:
    """What a job file value of type ``kind`` must be, in words."""
    if kind == TEXTS:
        return "a list of texts (or one text)"
    if kind == dict[str, str]:
        return "a table of column = text"
    if kind == dict[str, TEXTS]:
        return "a table of column = list of texts (or a file name)"
    return _TYPE_WORDS.get(getattr(kind, "__name__", ""), str(kind))


def check_job_types(config: Mapping[str, object], fields: Mapping[str, object],
                    where: str) -> None:
    """Refuse a job file value of the wrong type (msgspec, strict: no coercion), naming
    the key, what it must be and what it is."""
    job_type = msgspec.defstruct("Job", [(name, kind | None, None)  # type: ignore[operator]
                                         for name, kind in fields.items()])
    try:
        msgspec.convert({k: v for k, v in config.items() if k in fields}, job_type,
                        strict=True)
    except msgspec.ValidationError as exc:
        found = re.match(r"Expected `(.+?)`, got `(.+?)` - at `\$\.?(.*)`", str(exc))
        if found is None:
            raise InputError(f"{where}: {exc}") from None
        _, got, at = found.groups()
        key = re.sub(r"\[.*", "", at)
        inside = f" (an entry is {_TYPE_WORDS.get(got, got)})" if key != at else ""
        raise InputError(f"{where}: {key} must be {_type_words(fields.get(key))}, got "
                         f"{config.get(key)!r}{inside}") from None
