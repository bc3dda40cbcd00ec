"""Database URLs as they may be shown: in an error, a report, the history or a log."""

from __future__ import annotations

import re

_PASSWORD = re.compile(r"(://[^/@]*?:)[^@/]*@")
#: libpq also takes a password as a parameter (``?password=...``, ``&password=...``)
_PASSWORD_PARAMETER = re.compile(r"([?&]password=)[^&\s]*", re.IGNORECASE)


def masked(text: str) -> str:
    """A database URL (or a text holding one) as it may be shown: its password replaced by
    ``***``, after the user name or as a ``password=`` parameter (also in a URL too
    malformed to parse)."""
    return _PASSWORD_PARAMETER.sub(r"\1***", _PASSWORD.sub(r"\1***@", text))
