"""What the history keeps encrypted, and how. Every key is HMAC(secret, domain, context,
nonce): only the secret's holder can read a blob, and each blob is bound to its release (a
blob moved to another release or dataset decrypts to noise).

- a record map's classes and a dataset's kept knowledge: AES-256-CTR (:func:`aes_ctr`),
  because they are the large blobs every publish reads and writes;
- the records' values and fingerprints: XOR with a SHAKE-256 keystream;
- the kept knowledge is authenticated as well: a damaged or transplanted state is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os

import numpy as np

from anonkit.errors import HistoryError
from anonkit.history.secret import Secret

_VALUES_DOMAIN = b"anonkit record values\x00"
_FINGERPRINTS_DOMAIN = b"anonkit record fingerprints\x00"
_KNOWLEDGE_DOMAIN = b"anonkit knowledge state\x00"
# a domain of its own: a tag's message never equals a keystream's (same secret, same HMAC)
_KNOWLEDGE_TAG_DOMAIN = b"anonkit knowledge state tag\x00"


def encrypt_fingerprints(secret: Secret, dataset: str, seq: int,
                         prints: np.ndarray) -> bytes:
    """A release's record fingerprints (uint64, in its record map's order), as stored."""
    nonce = os.urandom(16)
    data = np.ascontiguousarray(prints, dtype="<u8").tobytes()
    context = json.dumps([dataset, int(seq)]).encode("utf-8")
    stream = np.frombuffer(_keystream_bytes(secret, _FINGERPRINTS_DOMAIN, context, nonce,
                                            len(data)), dtype=np.uint8)
    return nonce + (np.frombuffer(data, dtype=np.uint8) ^ stream).tobytes()


def decrypt_fingerprints(secret: Secret, dataset: str, seq: int, blob: bytes) -> np.ndarray:
    nonce, data = blob[:16], np.frombuffer(blob[16:], dtype=np.uint8)
    context = json.dumps([dataset, int(seq)]).encode("utf-8")
    stream = np.frombuffer(_keystream_bytes(secret, _FINGERPRINTS_DOMAIN, context, nonce,
                                            len(data)), dtype=np.uint8)
    return np.frombuffer((data ^ stream).tobytes(), dtype="<u8").astype(np.uint64)


def _keystream_bytes(secret: Secret, domain: bytes, context: bytes, nonce: bytes,
                     n_bytes: int) -> bytes:
    """``n_bytes`` of SHAKE-256 of HMAC(secret, domain, context, nonce): a keystream that
    only the secret's holder can compute, a new one for every nonce."""
    key = hmac.digest(secret.value, domain + context + b"\x00" + nonce, "sha256")
    return hashlib.shake_256(key).digest(n_bytes)


def aes_ctr(secret: Secret, domain: bytes, context: bytes, nonce: bytes, data: bytes) -> bytes:
    """``data`` XORed with AES-256-CTR under a key only the secret's holder can compute
    (HMAC(secret, domain, context, nonce)): encrypts and decrypts. For the large blobs a
    publish reads and writes (record maps, the kept knowledge): gigabytes a second, where
    the SHAKE keystream of the records' values runs at about 230 MB/s."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    key = hmac.digest(secret.value, domain + context + b"\x00" + nonce, "sha256")
    cipher = Cipher(algorithms.AES(key), modes.CTR(nonce)).encryptor()
    return cipher.update(data) + cipher.finalize()


_CLASSES_DOMAIN = b"anonkit record classes\x00"


def encrypt_classes(secret: Secret, dataset: str, seq: int, classes: bytes) -> bytes:
    """A record map's classes as stored: nonce + AES-CTR (which record is in which class is
    what a stolen history must not tell)."""
    nonce = os.urandom(16)
    context = json.dumps([dataset, int(seq)]).encode("utf-8")
    return nonce + aes_ctr(secret, _CLASSES_DOMAIN, context, nonce, classes)


def decrypt_classes(secret: Secret, dataset: str, seq: int, stored: bytes) -> bytes:
    context = json.dumps([dataset, int(seq)]).encode("utf-8")
    return aes_ctr(secret, _CLASSES_DOMAIN, context, stored[:16], stored[16:])


def _value_keystream(secret: Secret, dataset: str, seq: int, attribute: str, nonce: bytes,
                     n: int) -> np.ndarray:
    context = json.dumps([dataset, int(seq), attribute]).encode("utf-8")
    stream = _keystream_bytes(secret, _VALUES_DOMAIN, context, nonce, 4 * n)
    return np.frombuffer(stream, dtype="<u4").astype(np.int64)


def encrypt_record_values(secret: Secret, dataset: str, seq: int, attribute: str,
                          codes: np.ndarray) -> tuple[bytes, bytes]:
    """``(nonce, blob)`` of per-record entry indices (see ``record_values_table``)."""
    codes = np.asarray(codes, dtype=np.int64)
    nonce = os.urandom(16)
    mask = _value_keystream(secret, dataset, seq, attribute, nonce, len(codes))
    return nonce, (codes ^ mask).astype("<u4").tobytes()


def decrypt_record_values(secret: Secret, dataset: str, seq: int, attribute: str,
                          nonce: bytes, blob: bytes) -> np.ndarray:
    cipher = np.frombuffer(blob, dtype="<u4").astype(np.int64)
    return cipher ^ _value_keystream(secret, dataset, seq, attribute, nonce, len(cipher))


def _knowledge_context(dataset: str, through_seq: int) -> bytes:
    return json.dumps([dataset, int(through_seq)]).encode("utf-8")


def _knowledge_tag(secret: Secret, context: bytes, nonce: bytes, cipher: bytes) -> bytes:
    return hmac.digest(secret.value, _KNOWLEDGE_TAG_DOMAIN + context + nonce + cipher,
                       "sha256")


def encrypt_knowledge(secret: Secret, dataset: str, through_seq: int,
                      state: tuple[bytes, bytes]) -> tuple[bytes, bytes, bytes]:
    """``(nonce, tag, stored)`` of a dataset's knowledge state ``(public, private)`` (see
    ``knowledge_table``): ``stored`` is the public part's length (8 bytes, little-endian),
    then both parts encrypted (AES-CTR: who was in which class is what a stolen history
    must not tell, as much as the records' values); the tag covers all of it."""
    public, private = bytes(state[0]), bytes(state[1])
    context = _knowledge_context(dataset, through_seq)
    nonce = os.urandom(16)
    stored = len(public).to_bytes(8, "little") + aes_ctr(
        secret, _KNOWLEDGE_DOMAIN, context, nonce, public + private)
    return nonce, _knowledge_tag(secret, context, nonce, stored), stored


def decrypt_knowledge(secret: Secret, dataset: str, through_seq: int, nonce: bytes,
                      tag: bytes, stored: bytes) -> tuple[bytes, bytes]:
    """The knowledge state ``(public, private)``; :class:`HistoryError` when its tag does
    not match."""
    context = _knowledge_context(dataset, through_seq)
    n_public = int.from_bytes(stored[:8], "little")
    if not hmac.compare_digest(_knowledge_tag(secret, context, nonce, stored), tag) or \
            len(stored) < 8 + n_public:
        raise HistoryError(f"the knowledge state of dataset {dataset!r} is damaged (its "
                           f"integrity tag does not match); it is not used. Publishing the "
                           f"next release rebuilds it")
    plain = aes_ctr(secret, _KNOWLEDGE_DOMAIN, context, nonce, bytes(stored[8:]))
    return plain[:n_public], plain[n_public:]


def decrypt_knowledge_v3(secret: Secret, dataset: str, through_seq: int, nonce: bytes,
                         tag: bytes, stored: bytes) -> tuple[bytes, bytes]:
    """A version-3 knowledge state (the public part in clear, the private part under the
    SHAKE keystream): what the upgrade to version 4 encrypts again."""
    context = _knowledge_context(dataset, through_seq)
    n_public = int.from_bytes(stored[:8], "little")
    if not hmac.compare_digest(_knowledge_tag(secret, context, nonce, stored), tag) or \
            len(stored) < 8 + n_public:
        raise HistoryError(f"the knowledge state of dataset {dataset!r} is damaged")
    data = np.frombuffer(stored, dtype=np.uint8, offset=8 + n_public)
    mask = np.frombuffer(_keystream_bytes(secret, _KNOWLEDGE_DOMAIN, context, nonce,
                                          len(data)), dtype=np.uint8)
    return stored[8:8 + n_public], (data ^ mask).tobytes()
