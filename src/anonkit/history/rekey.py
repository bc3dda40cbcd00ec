"""Re-keyed exports: the same people under other key text must not escape the history.

The history matches a release's records with earlier ones by a keyed hash of the key
column's text. A new export that writes the keys differently (zero-padded ``00000042`` for
``42``, ids shifted by an offset, another key column under another dataset name) would make
every person look new: the gate would compare nothing and the audit would find nothing,
while the releases together disclose as much as ever.

Two defences:

- keys are compared as *numbers* when they are numerals (:func:`anonkit.history.secret.
  canonical_keys`): ``00000042``, ``+42`` and ``42`` are one key;
- every release keeps, per record, a keyed 64-bit fingerprint of its exact quasi-identifier
  and sensitive values (encrypted like the records' values: equal fingerprints would link
  records across releases for whoever holds the database). A release is refused, unless
  published with ``--new-lineage``, when compared with its dataset's previous release

  * it shares fewer than :data:`MIN_KEY_OVERLAP` of its keys (as a share of the smaller
    release), or
  * more than :data:`MAX_MOVED_SHARE` of its rows have the exact content of a previous row
    under *another* key (content that moved from one key to another: a re-keyed export);

  and, compared with the latest release of every other dataset with the same columns, when
  more than :data:`MAX_MOVED_SHARE` of its rows have the exact content of that release's rows
  under other people (history-wide pseudonyms). Releases of fewer than :data:`MIN_RECORDS`
  records are not judged by these shares (too few to tell churn from re-keying).
"""

from __future__ import annotations

import base64
import hmac
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: a release sharing fewer of its keys than this with its dataset's previous release (a
#: share of the smaller of the two) is taken for a re-keyed export
MIN_KEY_OVERLAP = 0.2
#: a release more of whose rows than this reappear with their exact content under other keys
#: is taken for a re-keyed export
MAX_MOVED_SHARE = 0.5
#: releases smaller than this are not judged by the shares
MIN_RECORDS = 20
_DOMAIN = b"anonkit content fingerprint\x00"


def fingerprints(df: pd.DataFrame, columns: Sequence[str], secret: bytes) -> np.ndarray:
    """Per row, a keyed 64-bit hash (SipHash, pandas) of its values in ``columns`` (taken in
    name order, so two releases of one table hash alike)."""
    key = base64.b64encode(hmac.digest(secret, _DOMAIN, "sha256")[:12]).decode("ascii")
    frame = df[sorted(columns)].astype(object)
    return pd.util.hash_pandas_object(frame, index=False, hash_key=key,
                                      categorize=True).to_numpy(dtype=np.uint64)


@dataclass(frozen=True)
class Comparison:
    """How a release's records compare with another release's."""

    other: str  # "release 3 of 'ward'"
    records: int  # of the new release
    other_records: int
    shared_keys: int  # records of both (by key, or by person across datasets)
    moved: int  # rows whose exact content is another's row under another key

    @property
    def key_overlap(self) -> float:
        return self.shared_keys / max(min(self.records, self.other_records), 1)

    @property
    def moved_share(self) -> float:
        return self.moved / max(self.records, 1)

    def to_dict(self) -> dict[str, object]:
        return {"other": self.other, "records": self.records,
                "other_records": self.other_records, "shared_keys": self.shared_keys,
                "moved": self.moved}


def compare(keys: np.ndarray, prints: np.ndarray, other_keys: np.ndarray,
            other_prints: np.ndarray, other: str) -> Comparison:
    """Shared keys, and rows whose content reappears under another key (multisets: a
    content held by two people in both releases under their own keys has not moved)."""
    heads, other_heads = _head(keys), _head(other_keys)
    shared = (len(np.intersect1d(heads, other_heads, assume_unique=True))
              if len(heads) and len(other_heads) else 0)
    prints = np.asarray(prints, dtype=np.uint64)
    other_prints = np.asarray(other_prints, dtype=np.uint64)
    same = _intersection(_multiset(heads ^ prints), _multiset(other_heads ^ other_prints))
    content = _intersection(_multiset(prints), _multiset(other_prints))
    return Comparison(other, len(keys), len(other_keys), shared, content - same)


def refusal(c: Comparison, same_dataset: bool) -> str | None:
    """Why ``c`` looks like a re-keyed export (None: it does not)."""
    if min(c.records, c.other_records) < MIN_RECORDS:
        return None
    if same_dataset and c.key_overlap < MIN_KEY_OVERLAP:
        return (f"it shares only {c.shared_keys} of its {c.records} record keys with "
                f"{c.other} ({c.key_overlap:.0%}; at least {MIN_KEY_OVERLAP:.0%} expected)")
    if c.moved_share > MAX_MOVED_SHARE:
        return (f"{c.moved} of its {c.records} rows ({c.moved_share:.0%}) have the exact "
                f"values of rows of {c.other} under other keys")
    return None


def _head(keys: np.ndarray) -> np.ndarray:
    """The first 8 bytes of each 16-byte pseudonym, as an integer: pseudonyms are HMAC
    outputs, so two of a history share them with a chance of about n^2 / 2^64 (1e-9 for
    100,000 records), and integers are compared an order of magnitude faster than bytes."""
    if not len(keys):
        return np.zeros(0, dtype=np.uint64)
    return np.frombuffer(np.ascontiguousarray(keys, dtype="S16").tobytes(),
                         dtype="<u8")[::2].astype(np.uint64)


def _multiset(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.unique(np.asarray(values, dtype=np.uint64), return_counts=True)


def _intersection(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> int:
    common, ia, ib = np.intersect1d(a[0], b[0], assume_unique=True, return_indices=True)
    return int(np.minimum(a[1][ia], b[1][ib]).sum()) if len(common) else 0
