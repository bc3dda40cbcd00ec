"""Database URLs as they may be shown: in an error, a report, the history or a log."""

from __future__ import annotations

import re

#: a URL in a text: its scheme, then everything up to the next white space
_URL = re.compile(r"([A-Za-z][\w+.-]*://)(\S+)")
#: libpq also takes a password as a parameter (``?password=...``, ``&password=...``)
_PASSWORD_PARAMETER = re.compile(r"([?&]password=)[^&\s]*", re.IGNORECASE)


def _without_userinfo_password(match: re.Match[str]) -> str:
    # the password runs from the user's first ":" to the LAST "@" before any "?": a
    # password holding a raw "@" or "/" (a malformed URL) is masked whole, never in part
    scheme, rest = match.group(1), match.group(2)
    head, mark, query = rest.partition("?")
    at = head.rfind("@")
    if at >= 0:
        user, colon, _ = head[:at].partition(":")
        if colon:
            head = f"{user}:***{head[at:]}"
    return scheme + head + mark + query


def masked(text: str) -> str:
    """A database URL (or a text holding one) as it may be shown: its password replaced by
    ``***``, after the user name or as a ``password=`` parameter (also in a URL too
    malformed to parse)."""
    return _PASSWORD_PARAMETER.sub(r"\1***", _URL.sub(_without_userinfo_password, text))


def without_password(url: str) -> str:
    """A database URL as it may be saved (in a job file): its password left out, after the
    user name and as a ``password=`` parameter, so that libpq takes it from ``PGPASSWORD``
    or ``~/.pgpass`` when the job runs. (The user ends at the first ``:``, the password at
    the last ``@`` before the host, as a URL parser reads them.)"""
    scheme, found, rest = url.partition("://")
    if not found:
        return url
    authority, slash, path = rest.partition("/")
    user, at, host = authority.rpartition("@")
    if at:
        authority = f"{user.split(':', 1)[0]}@{host}"
    path, mark, query = path.partition("?")
    if mark:
        kept = [p for p in query.split("&") if not p.lower().startswith("password=")]
        path += "?" + "&".join(kept) if kept else ""
    return f"{scheme}://{authority}{slash}{path}"
