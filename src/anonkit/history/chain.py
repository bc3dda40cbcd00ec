"""Tamper evidence: every release of the history is authenticated with its secret, in a chain.

Whoever can write the database but does not hold the secret (a shared PostgreSQL role, a
copied SQLite file) could otherwise delete a release, reorder releases, lower a recorded
requirement or edit a record map, and the gate and the audit would judge the doctored
history without notice. So every release row carries ``auth``, an HMAC-SHA256 under the
history's secret of

- the ``auth`` of the release recorded just before it (in the whole history, by commit
  order: a deleted or reordered release breaks the chain after it);
- its row, every field but its database id and its pending file (which a publish clears
  after the commit), in one canonical JSON text;
- the SHA-256 of each part of its content as the store keeps it (``content_digest``): its
  record map, its records' history-wide pseudonyms, its class labels, its multisets and its
  records' encrypted values. A part is checked whenever it is read.

The history's *head* (``anonkit_schema.chain``: the number of releases and an HMAC of the
last ``auth``) is rewritten by every commit, so deleting the latest release is seen too.
What no chain inside the database can see is the whole database rolled back to a copy taken
earlier: keep the printed head (``anonkit release list --verify``) outside the history for
that.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from datetime import UTC

from anonkit.errors import HistoryError

_RELEASE_DOMAIN = b"anonkit-release-chain-v1\x00"
_HEAD_DOMAIN = b"anonkit-release-chain-head-v1\x00"
#: ReleaseInfo fields that are not authenticated: the database's id (a copy may renumber),
#: the pending file (cleared after the commit) and the authentication itself
UNAUTHENTICATED = ("id", "pending_path", "auth", "content_digest")


class TamperedHistoryError(HistoryError):
    """The history's releases do not match their authentication: one was deleted,
    reordered or edited by someone without the secret."""

    exit_code = 1


def part_digest(chunks: Iterable[bytes]) -> str:
    """SHA-256 of byte strings, each length-prefixed (so two splits never collide)."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(len(chunk).to_bytes(8, "little"))
        h.update(chunk)
    return h.hexdigest()


def canonical(info: object, content: Mapping[str, str]) -> bytes:
    """The authenticated text of a release row (a ``ReleaseInfo``) and its content
    digests."""
    row = {f.name: getattr(info, f.name) for f in fields(info)  # type: ignore[arg-type]
           if f.name not in UNAUTHENTICATED}
    # in UTC: PostgreSQL returns the time in the session's zone, which a client may set
    row["created_at"] = row["created_at"].astimezone(UTC).isoformat()
    row["content"] = dict(content)
    return json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      default=str).encode("ascii")


def release_tag(key: bytes, previous: str, info: object, content: Mapping[str, str]) -> str:
    """A release's ``auth``: chained to the previous release's."""
    return hmac.new(key, _RELEASE_DOMAIN + previous.encode("ascii") + b"\x00"
                    + canonical(info, content), hashlib.sha256).hexdigest()


def head_tag(key: bytes, count: int, last: str) -> str:
    """The history's head: how many releases, and the last one's ``auth``."""
    mac = hmac.new(key, _HEAD_DOMAIN + str(count).encode("ascii") + b"\x00"
                   + last.encode("ascii"), hashlib.sha256).hexdigest()
    return f"{count}:{mac}"


def check_chain(key: bytes, releases: Sequence[object], head: str | None) -> list[str]:
    """What does not match in ``releases`` (``ReleaseInfo``, in commit order) and the head:
    one line per problem, empty when the history is as its publishers left it."""
    problems: list[str] = []
    previous = ""
    for info in releases:
        name = f"release {info.seq} of {info.dataset!r}"  # type: ignore[attr-defined]
        auth = info.auth  # type: ignore[attr-defined]
        content = info.content_digest  # type: ignore[attr-defined]
        if not auth or not isinstance(content, dict):
            problems.append(f"{name} carries no authentication (its row was edited or "
                            f"inserted by hand)")
        elif not hmac.compare_digest(auth, release_tag(key, previous, info, content)):
            problems.append(f"{name} does not match its authentication: its row was edited, "
                            f"or a release before it was deleted or reordered")
        previous = auth or ""
    if head != head_tag(key, len(releases), previous):
        problems.append(f"the history's head does not match its {len(releases)} releases: a "
                        f"release was deleted, or the head was edited")
    return problems


def check_part(info: object, part: str, digest: str, accept: bool) -> None:
    """Refuse a release part read from the history whose digest is not the recorded one."""
    recorded = (info.content_digest or {}).get(part)  # type: ignore[attr-defined]
    if recorded is not None and recorded != digest and not accept:
        raise TamperedHistoryError(
            f"release {info.seq} of {info.dataset!r}: its {part.replace('_', ' ')} "  # type: ignore[attr-defined]
            f"does not match the digest recorded with it; the history was edited without "
            f"its secret. Nothing was changed; see `anonkit release recover --accept-tampered`")
