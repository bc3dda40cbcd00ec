"""The history's secret, and the keyed hash that turns record keys into pseudonyms.

The release history must recognise a record in the next release (so a sequential engine can
honour the previous release and the audit can follow a record across releases) without
keeping the record's key. It stores ``HMAC-SHA256(secret, key)`` instead: without the secret,
a stolen history cannot be joined back to a list of identifiers by hashing them.

The secret therefore never enters the database. It lives

- in a file beside an SQLite history (``anonkit.db`` -> ``anonkit.db.secret``), created with
  mode 0600 together with the history; or
- in the environment variable ``ANONKIT_HISTORY_SECRET`` (its text is the secret; it must be
  the hex or base64 encoding of at least 32 random bytes, see :func:`env_secret`), or in a
  file named explicitly (``secret_file=`` / ``--secret-file`` /
  ``$ANONKIT_HISTORY_SECRET_FILE``): required for PostgreSQL histories, which have no
  "beside".

The default is convenient, but a backup or copy of the history's folder then carries the
secret with the pseudonyms it protects; opening such a history warns once per process
(:class:`SecretBesideHistoryWarning`) to keep the secret elsewhere in production.

A secret file is refused unless it is a regular file owned by the current user with no
permission for anyone else (see :func:`read_secret_file`).

The database holds only ``HMAC(secret, CHECK_MESSAGE)`` (compared in constant time), so
opening a history with the wrong secret is refused at once instead of silently producing
pseudonyms that match nothing.

Record pseudonyms are domain-separated per dataset: the key of dataset ``d`` is
``K_d = HMAC(secret, "anonkit record key" || 0x00 || d)`` and a record's pseudonym is
``HMAC(K_d, canonical text of its key)``, truncated to its first 128 bits (the usual truncated
HMAC of RFC 2104 section 5: pseudonyms only need to be unique and unforgeable, and a chance
collision needs ~2^64 records, while the shorter key makes the records table a third smaller
and a million-row release a second faster to record). The same person in two datasets of
one history thus gets unrelated pseudonyms.

Beside it, every record gets one *history-wide* pseudonym, the same in every dataset:
``HMAC(K_h, canonical text of its key)`` with ``K_h = HMAC(secret, "anonkit history record
key" || 0x00)`` (truncated likewise; the domains differ in their text, so no dataset name
derives ``K_h``). It only serves to notice that a release of one dataset shares records with
another dataset of the history (see :func:`anonkit.history.publish.check_lineage`); the
audit and the methods follow records by the per-dataset pseudonym.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
import secrets
import stat
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from anonkit._util.files import system_error, write_atomic
from anonkit.errors import HistoryError

SECRET_ENV = "ANONKIT_HISTORY_SECRET"
SECRET_FILE_ENV = "ANONKIT_HISTORY_SECRET_FILE"
SECRET_SUFFIX = ".secret"
CHECK_MESSAGE = b"anonkit history secret check v1"
_RECORD_DOMAIN = b"anonkit record key\x00"
_HISTORY_RECORD_DOMAIN = b"anonkit history record key\x00"
_MIN_SECRET_CHARS = 16
#: an environment secret must decode to at least this many bytes (see :func:`env_secret`)
MIN_ENV_SECRET_BYTES = 32
#: ... with at least this many distinct byte values (32 random bytes have about 30)
_MIN_DISTINCT_BYTES = 16
PSEUDONYM_BYTES = 16


@dataclass(frozen=True)
class Secret:
    """The history's secret (the bytes of its text) and where it came from (for messages)."""

    value: bytes
    source: str
    path: Path | None = None  # the file it was read from, if any

    def __post_init__(self) -> None:
        if len(self.value) < _MIN_SECRET_CHARS:
            raise HistoryError(
                f"the history secret from {self.source} is too short ({len(self.value)} "
                f"bytes); use at least {_MIN_SECRET_CHARS} random characters, e.g. the output "
                f"of `python -c 'import secrets; print(secrets.token_hex(32))'`")

    def check_value(self) -> str:
        """What the database stores to recognise this secret (it reveals nothing of it)."""
        return hmac.new(self.value, CHECK_MESSAGE, hashlib.sha256).hexdigest()

    def matches(self, stored: str) -> bool:
        """Whether ``stored`` is this secret's check value (compared in constant time)."""
        return hmac.compare_digest(self.check_value().encode("ascii"),
                                   str(stored).encode("ascii", "replace"))

    def record_hasher(self, dataset: str) -> RecordHasher:
        return RecordHasher(self.value, dataset)

    def history_hasher(self) -> RecordHasher:
        """The hasher of history-wide pseudonyms: the same record key gets the same one in
        every dataset of the history."""
        return RecordHasher(self.value, None)


class RecordHasher:
    """HMAC-SHA256 of record keys under one dataset's derived key (``dataset=None``: the
    history-wide key).

    HMAC is computed from the two precomputed pad states (RFC 2104), which is what
    :func:`hmac.digest` does too, but without re-deriving the pads for every key: about
    1 µs per key instead of 2.5 µs, which is most of the hashing time of a million-row
    release.
    """

    def __init__(self, secret: bytes, dataset: str | None) -> None:
        context = (_HISTORY_RECORD_DOMAIN if dataset is None
                   else _RECORD_DOMAIN + dataset.encode("utf-8"))
        key = hmac.digest(secret, context, "sha256")
        block = key.ljust(64, b"\x00")  # SHA-256 block size; the key is 32 bytes
        self._inner = hashlib.sha256(bytes(b ^ 0x36 for b in block))
        self._outer = hashlib.sha256(bytes(b ^ 0x5C for b in block))

    def hash_texts(self, keys: Sequence[str]) -> list[bytes]:
        """Pseudonyms of already canonical key texts (see :func:`canonical_keys`)."""
        inner0, outer0 = self._inner, self._outer
        out: list[bytes] = []
        append = out.append
        for text in keys:
            inner = inner0.copy()
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError:
                raise HistoryError(f"the record key {text!r} is not valid Unicode text (it "
                                   f"holds a lone surrogate); fix the key column's "
                                   f"encoding") from None
            inner.update(data)
            outer = outer0.copy()
            outer.update(inner.digest())
            append(outer.digest()[:PSEUDONYM_BYTES])
        return out

    def hash_keys(self, keys: pd.Series) -> list[bytes]:
        """One 16-byte pseudonym per value of ``keys``, in order."""
        return self.hash_texts(canonical_keys(keys))


def canonical_keys(keys: pd.Series) -> list[str]:
    """Keys as text, the same whatever dtype a reader inferred for the column.

    A key column read as integers in one release and as text in the next (``12`` and
    ``"12"``), or as floats (``12.0``), must give the same pseudonym, otherwise the history
    loses the record. Integral numbers are written without a fraction, exactly (a float
    key of 2^63 or more is its exact integer, not a wrapped-around 64-bit one); text is
    stripped, and text that is a whole number (``00000042``, ``+42``) is that number.
    """
    if pd.api.types.is_bool_dtype(keys):
        return keys.astype(str).tolist()
    if pd.api.types.is_integer_dtype(keys):
        if pd.api.types.is_unsigned_integer_dtype(keys):
            return [str(int(v)) for v in keys.tolist()]
        return keys.astype(np.int64).astype(str).tolist()
    if pd.api.types.is_float_dtype(keys):
        values = keys.to_numpy(dtype=np.float64)
        whole = np.isfinite(values) & (values == np.round(values))
        if whole.all() and (not len(values) or np.abs(values).max() < 2.0**62):
            return values.astype(np.int64).astype(str).tolist()
        return [str(int(v)) if w else repr(float(v)) for v, w in zip(values, whole, strict=True)]
    return [_text(v) for v in keys.tolist()]


#: a key written as a whole number (leading zeros or a sign allowed): compared as the number
_NUMERAL = re.compile(r"[+-]?[0-9]+")


def _text(value: object) -> str:
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    text = str(value).strip()
    # "00000042" from one export and 42 from another are one record (keys are compared as
    # numbers when they are numerals: a re-formatted export must not escape the history);
    # only a numeral with a sign or a leading zero changes, so only those meet the regex
    if len(text) > 1 and text[0] in "0+-" and _NUMERAL.fullmatch(text):
        return str(int(text))
    return text


def has_lone_surrogate(text: str) -> bool:
    """True when ``text`` cannot be encoded as UTF-8 (it holds a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def secret_path_beside(database: Path) -> Path:
    """Where the secret of an SQLite history lives: ``anonkit.db`` -> ``anonkit.db.secret``."""
    return database.with_name(database.name + SECRET_SUFFIX)


def from_text(text: str, source: str, path: Path | None = None) -> Secret:
    return Secret(text.strip().encode("utf-8"), source, path)


def read_secret_file(path: Path) -> Secret:
    """Read a secret file. Refused (nothing is read from it) unless it is a regular file
    owned by the current user that no other user may read or write (mode 0600 or
    stricter): a secret others can read protects nothing, and one planted by another user
    (in a shared folder) would make the history use a key that user knows."""
    try:
        fd = os.open(path, os.O_RDONLY)  # a link is followed: the file read is checked
    except FileNotFoundError:
        raise HistoryError(f"secret file not found: {path}") from None
    except OSError as exc:
        raise HistoryError(f"cannot read the secret file {path}: {exc.strerror or exc}; it "
                           f"must be a regular file owned by you, mode 0600") from None
    try:
        info = os.fstat(fd)  # the file read, not whatever the name points to later
        _check_secret_file(path, info)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read()
    finally:
        os.close(fd)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HistoryError(f"cannot read the secret file {path}: {exc}") from None
    _check_strength(text, f"file {path}")
    return from_text(text, f"file {path}", path)


def _check_secret_file(path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise HistoryError(f"the history secret {path} is not a regular file; refused")
    if os.name != "posix":
        return
    if info.st_uid != os.getuid():
        raise HistoryError(
            f"the history secret {path} belongs to another user (uid {info.st_uid}); it is "
            f"refused, since whoever planted it knows it. Use a secret file you created "
            f"(the history's own, or --secret-file FILE)")
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise HistoryError(
            f"the history secret {path} is accessible to other users (mode "
            f"{stat.S_IMODE(info.st_mode):04o}); it is refused. Restrict it with "
            f"`chmod 600 {path}` (and consider it exposed if others may have read it)")


def env_secret(text: str) -> Secret:
    """The secret of ``$ANONKIT_HISTORY_SECRET``. Its text is the secret (as for a file),
    but it must carry at least 32 bytes of entropy, measured as the length of the decoded
    value: the text must be the hexadecimal or base64 encoding of at least
    :data:`MIN_ENV_SECRET_BYTES` bytes (with at least 16 distinct byte values, which
    random bytes have and repeated patterns do not), e.g. ``secrets.token_hex(32)``.
    Environment values are often typed by hand; a file secret is always created random."""
    source = f"environment variable {SECRET_ENV}"
    _check_strength(text, source)
    return from_text(text, source)


def _check_strength(text: str, source: str) -> None:
    """Refuse a secret of less than :data:`MIN_ENV_SECRET_BYTES` random bytes, wherever it
    comes from: the history stores ``HMAC(secret, constant)``, so a guessable secret can be
    confirmed offline, and with it every pseudonym reversed."""
    decoded = _decoded(text.strip())
    if decoded is None or len(decoded) < MIN_ENV_SECRET_BYTES \
            or len(set(decoded)) < _MIN_DISTINCT_BYTES:
        measured = ("it is neither hexadecimal nor base64" if decoded is None else
                    f"it decodes to {len(decoded)} bytes with {len(set(decoded))} distinct "
                    f"values")
        raise HistoryError(
            f"the history secret from {source} is too weak ({measured}); it must be the hex "
            f"or base64 encoding of at least {MIN_ENV_SECRET_BYTES} random bytes, e.g. the "
            f"output of `python -c 'import secrets; print(secrets.token_hex(32))'`")


def _decoded(text: str) -> bytes | None:
    """The bytes ``text`` encodes: hexadecimal first, else base64 (standard or URL-safe,
    padding optional); None if it is neither."""
    if len(text) % 2 == 0 and all(c in "0123456789abcdefABCDEF" for c in text):
        return bytes.fromhex(text)
    compact = text.rstrip("=")
    if not compact or not all(c.isascii() and (c.isalnum() or c in "+/-_") for c in compact):
        return None
    try:
        return base64.urlsafe_b64decode(compact.replace("+", "-").replace("/", "_")
                                        + "=" * (-len(compact) % 4))
    except (binascii.Error, ValueError):
        return None


def create_secret_file(path: Path) -> Secret:
    """Create a new random secret at ``path`` (mode 0600); if another process created one
    first, use that one. The file appears complete or not at all (written, then linked)."""
    text = secrets.token_hex(32) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # linked, never renamed: a secret another process created meanwhile is kept
        write_atomic(path, text, mode=0o600, exclusive=True, refuse=system_error)
    except FileExistsError:
        return read_secret_file(path)
    return from_text(text, f"file {path}", path)


class SecretBesideHistoryWarning(UserWarning):
    """The history's secret lies in the folder of the SQLite history it protects."""


_warned_beside = False


def warn_if_beside(secret: Secret, database: Path) -> None:
    """Warn, once per process, when ``secret`` was read from a file in the folder of the
    SQLite history ``database``: whoever copies that folder gets both. Called when the
    history is created (once per history)."""
    global _warned_beside
    if _warned_beside or secret.path is None:
        return
    if secret.path.absolute().parent.resolve() != database.absolute().parent.resolve():
        return
    _warned_beside = True
    warnings.warn(
        f"the history secret {secret.path} lies in the folder of the history {database}: a "
        f"backup of that folder carries both. In production keep the secret elsewhere "
        f"(--secret-file FILE, ${SECRET_FILE_ENV} or ${SECRET_ENV})",
        SecretBesideHistoryWarning, stacklevel=3)


def resolve_secret(*, explicit: bytes | str | None, secret_file: Path | None,
                   beside: Path | None) -> tuple[Secret | None, Path | None]:
    """The secret to use, by precedence: ``explicit`` > ``secret_file`` > the
    ``ANONKIT_HISTORY_SECRET`` environment variable > the file ``beside`` the history.

    Returns the secret (None when none exists yet) and the file a new secret should be
    created in (None when there is nowhere to create one).
    """
    if explicit is not None:
        value = explicit if isinstance(explicit, bytes) else explicit.strip().encode("utf-8")
        return Secret(value, "the secret given"), None
    if secret_file is not None:
        return (read_secret_file(secret_file) if secret_file.exists() else None), secret_file
    env = os.environ.get(SECRET_ENV)
    if env:
        return env_secret(env), None
    if beside is not None:
        return (read_secret_file(beside) if beside.exists() else None), beside
    return None, None
