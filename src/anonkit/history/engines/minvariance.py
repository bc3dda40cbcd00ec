"""m-invariance as a sequential method of the release history (the ``m-invariance`` method).

Each release of a dataset is m-unique, and a record keeps its *signature* -- the set of
sensitive values of its class -- in every release it appears in, also after it left and
came back (Xiao and Tao, SIGMOD 2007; the split of spec 001). The partition steps are in
:mod:`anonkit.algorithms.minvariance`; this module brings them the history and makes the
release:

- the signatures come from the method state of the previous release, which carries every
  record the dataset's m-invariant releases ever held (so a returning record's signature
  comes from the whole history); when the previous release kept none (another method
  published it), they are rebuilt from every m-invariant release in the history
  (:func:`signatures_from_history`; the tests check both agree);
- every final class is generalized so its rows share one value per quasi-identifier: the
  lowest common ancestor in the column's hierarchy, else a range or a set;
- counterfeit rows carry :attr:`Provenance.COUNTERFEIT`, the class's labels and a value of
  its signature; their count per class is published beside the release
  (``<stem>.counterfeits.csv``, classes named by their labels) and kept in the history;
- the released rows are shuffled by the publisher; nothing in a row tells a counterfeit
  from a real one, and no row carries a key or pseudonym.

Two classes with the same labels are one class to an adversary, and every class it reads
must be m-unique: one QI's label of the later class is widened until free
(:func:`separate_labels`). When no label is free, the classes may stay merged only if the
union holds every value once and all its records are new (they take its values as their
signature); otherwise the release is refused (finer hierarchies, or more QIs, keep them
apart).

The threat model is m-invariance's: an adversary who knows quasi-identifiers and when
records were inserted and deleted, who cannot link rows across releases (no pseudonym on
rows, rows shuffled). The history's gate judges the release by that adversary; the audit
still shows what a row-linking adversary would find, labelled as outside the claim (see
:mod:`anonkit.history.attacks`).
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from anonkit._util.randomness import privacy_rng
from anonkit.algorithms import minvariance as algo
from anonkit.assemble import release_table
from anonkit.data.encoding import encode
from anonkit.data.schema import Schema
from anonkit.errors import InputError, ModelNotMetError
from anonkit.generalization import default_form, generalize_column, generalize_columns
from anonkit.history.engines.context import PublishContext, PublishRequest
from anonkit.history.records import ReleaseInfo, ReleaseView
from anonkit.metrics import release_metrics, released_sizes
from anonkit.metrics.count_queries import count_query_error
from anonkit.models.invariance import MUniqueness
from anonkit.partition import Partition
from anonkit.release import Provenance, Release, ReleaseKind, ThreatModel
from anonkit.verify import verify_release

METHOD = "m-invariance"
KEY_DTYPE = "S16"
_SHOWN = 10


# -- signatures kept between releases -------------------------------------------------------


@dataclass
class SignatureState:
    """Every record an m-invariant release of the dataset held (by history pseudonym, sorted)
    and its signature; signatures are sets of codes into ``vocabulary`` (value texts)."""

    keys: np.ndarray
    signature: np.ndarray
    signatures: algo.Signatures
    vocabulary: np.ndarray  # object array of str

    @classmethod
    def empty(cls) -> SignatureState:
        return cls(np.zeros(0, dtype=KEY_DTYPE), np.zeros(0, dtype=np.int64),
                   algo.Signatures(), np.zeros(0, dtype=object))

    def to_bytes(self) -> bytes:
        sink = io.BytesIO()
        # keys are pseudorandom bytes: compressing them saves nothing
        np.savez(sink, version=np.array([1]), keys=self.keys,
                 signature=self.signature.astype(np.int32), ptr=self.signatures.ptr,
                 codes=self.signatures.codes.astype(np.int32),
                 vocabulary=np.asarray(self.vocabulary.tolist(), dtype=np.str_))
        return sink.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes) -> SignatureState:
        with np.load(io.BytesIO(blob), allow_pickle=False) as f:
            vocabulary = np.asarray(f["vocabulary"].tolist(), dtype=object)
            return cls(f["keys"].astype(KEY_DTYPE), f["signature"].astype(np.int64),
                       algo.Signatures(f["ptr"].astype(np.int64), f["codes"].astype(np.int64)),
                       vocabulary)

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """Per key, its signature id (-1: never in an m-invariant release)."""
        out = np.full(len(keys), algo.NO_SIGNATURE, dtype=np.int64)
        pos = _positions_in(self.keys, keys)
        hit = pos >= 0
        out[hit] = self.signature[pos[hit]]
        return out

    def signature_texts(self, sig: int) -> list[str]:
        return [str(v) for v in self.vocabulary[self.signatures.members(sig)]]


def value_texts(values: pd.Series | np.ndarray, numeric: bool) -> np.ndarray:
    """Sensitive values as the texts signatures are kept in: numbers as float texts (5 and
    5.0 are one value, as in the history's multisets), anything else as text."""
    array = np.asarray(values, dtype=object)
    if numeric:
        return np.array([repr(float(v)) for v in array], dtype=object)
    return np.array([str(v) for v in array], dtype=object)


def signatures_from_history(releases: Iterable[tuple[ReleaseInfo, ReleaseView]],
                            attribute: str) -> SignatureState:
    """Every record's signature rebuilt from a dataset's releases (oldest first, each with
    its view): the distinct values of its class in the latest m-invariant release that
    held it."""
    state = SignatureState.empty()
    vocabulary: dict[str, int] = {}
    keys_seen: list[np.ndarray] = []
    sigs_seen: list[np.ndarray] = []
    for info, view in releases:
        if info.method != METHOD:
            continue
        class_sig = class_signatures(view, attribute, vocabulary, state.signatures)
        keys_seen.append(np.asarray(view.record_keys.tolist(), dtype=KEY_DTYPE))
        sigs_seen.append(class_sig[view.record_classes])
    state.vocabulary = np.array(list(vocabulary), dtype=object)
    if not keys_seen:
        return state
    keys = np.concatenate(keys_seen)
    sigs = np.concatenate(sigs_seen)
    # the latest release wins: keep each key's last occurrence
    reverse = np.arange(len(keys))[::-1]
    unique, first = np.unique(keys[::-1], return_index=True)
    state.keys, state.signature = unique, sigs[reverse[first]]
    return state


def class_signatures(view: ReleaseView, attribute: str, vocabulary: dict[str, int],
                      signatures: algo.Signatures) -> np.ndarray:
    cv = view.values[attribute]
    texts = value_texts(cv.value, cv.numeric)
    codes = np.array([vocabulary.setdefault(t, len(vocabulary)) for t in texts],
                     dtype=np.int64)
    present = cv.count > 0
    out = np.full(view.n_classes, algo.NO_SIGNATURE, dtype=np.int64)
    found = signatures.ids_of_groups(cv.class_index[present], codes[present])
    out[:len(found)] = found
    return out


# -- the method ------------------------------------------------------------------------------


class MInvariance:
    """The next m-invariant release of a dataset.

    Args:
        m: every class holds at least ``m`` distinct sensitive values, one row each.
        unweighted_split: score a split by the plain sum of the halves' normalised
            half-perimeters (spec 001 weights each by its class size; the default).
        seed: for tests only: the privacy randomness (which real row a counterfeit's
            quasi-identifiers copy, the row order) otherwise comes from the OS.
    """

    method = METHOD

    def __init__(self, m: int, unweighted_split: bool = False,
                 seed: int | None = None) -> None:
        self.m = m
        self.unweighted_split = unweighted_split
        self.seed = seed

    def parameters(self) -> dict[str, object]:
        # never the seed: it would let a reader replay the counterfeits' placement
        return {"m": self.m, "split": "unweighted" if self.unweighted_split else "weighted"}

    def publish(self, df: pd.DataFrame, context: PublishContext) -> Release:
        """The next release of ``context.dataset``; its method state carries the
        signatures forward."""
        schema = context.schema
        state = self._earlier_signatures(context, _sensitive_attribute(schema))
        return self.next_release(df, schema, np.asarray(context.pseudonyms, dtype=KEY_DTYPE),
                                 state)

    def next_release(self, df: pd.DataFrame, schema: Schema, keys: np.ndarray,
                     state: SignatureState) -> Release:
        """The release after the ones ``state`` describes (empty: the first), for records
        ``keys`` (16-byte pseudonyms, one per row of ``df``)."""
        if not isinstance(self.m, int) or isinstance(self.m, bool) or self.m < 2:
            raise InputError(f"m-invariance needs -m, a whole number >= 2; got {self.m!r}")
        attribute = _sensitive_attribute(schema)
        column = df[attribute]
        if column.isna().any():
            rows = np.flatnonzero(column.isna().to_numpy())
            raise InputError(f"m-invariance: the sensitive column {attribute!r} has "
                             f"{len(rows)} missing values (rows {_rows(rows)}); fill or "
                             f"drop those rows first")
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        numeric = pd.api.types.is_numeric_dtype(column) and \
            not pd.api.types.is_bool_dtype(column)
        vocabulary = {t: i for i, t in enumerate(state.vocabulary.tolist())}
        values = _value_codes(column, numeric, vocabulary)
        names = np.array(list(vocabulary), dtype=object)
        known = state.lookup(keys)
        self._refuse_changed_values(df, schema, values, known, state, names)
        timings["division"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        table = encode(df, schema)
        coords = np.stack([c.magnitudes[c.codes] for c in table.quasi_identifiers], axis=1) \
            if table.quasi_identifiers else np.zeros((len(df), 0))
        ranges = np.array([c.domain_span for c in table.quasi_identifiers])
        timings["encode"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        if not (known != algo.NO_SIGNATURE).any():
            algo.require_eligible(values, self.m, names)
        rng, seeded = privacy_rng(self.seed)
        signatures = algo.Signatures(state.signatures.ptr.copy(), state.signatures.codes.copy())
        balanced = algo.balance(values, known, coords, self.m, signatures, rng)
        timings["balancing"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        rest = balanced.remaining
        try:
            extra = algo.eligible_with_counterfeits(values[rest], self.m, len(names))
        except algo.InfeasibleError:
            algo.require_eligible(values[rest], self.m, names, what="new rows")
            raise
        extra_like = rest[(rng.random(len(extra)) * len(rest)).astype(np.int64)] \
            if len(extra) else np.zeros(0, dtype=np.int64)
        assign_values = np.concatenate([values[rest], extra])
        assign_coords = np.concatenate([coords[rest], coords[extra_like]])
        assign_sig, _ = algo.assign(assign_values, assign_coords, self.m, signatures)
        n = len(df)
        n_fake_bal = len(balanced.counterfeit_values)
        fake_values = np.concatenate([balanced.counterfeit_values, extra]).astype(np.int64)
        fake_like = np.concatenate([balanced.counterfeit_like, extra_like]).astype(np.int64)
        extra_slots = n + n_fake_bal + np.arange(len(extra))
        slot = np.concatenate([balanced.member_slot, rest, extra_slots])
        slot_sig = np.concatenate([balanced.bucket_sig[balanced.member_bucket], assign_sig])
        slot_value = np.concatenate([balanced.member_value, assign_values])
        timings["assignment"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        bucket_ids, bucket = np.unique(slot_sig, return_inverse=True)
        rank = _rank_in_signature(slot_value, bucket_ids[bucket], signatures)
        all_coords = np.concatenate([coords, coords[fake_like]])
        class_of_slot = np.empty(n + len(fake_values), dtype=np.int64)
        class_of_slot[slot] = algo.perimeter_split(
            bucket.reshape(-1), rank, all_coords[slot], ranges,
            weighted=not self.unweighted_split)
        timings["split"] = time.perf_counter() - t0

        release = self._release(df, schema, table, class_of_slot, fake_values, fake_like,
                                names, attribute, numeric, timings, seeded,
                                n_counterfeits_balancing=n_fake_bal,
                                slot_values=np.concatenate([values, fake_values]),
                                signatures=signatures,
                                known_rows=known != algo.NO_SIGNATURE)
        t0 = time.perf_counter()
        published = self._published_signatures(release, values, known, state, names,
                                               signatures)
        release.method_state = _next_state(state, keys, published, signatures,
                                           names).to_bytes()
        timings["state"] = time.perf_counter() - t0
        return release

    # -- steps ---------------------------------------------------------------------------
    def _earlier_signatures(self, context: PublishContext, attribute: str) -> SignatureState:
        previous = context.previous
        if previous is None:
            return SignatureState.empty()
        if previous.method == METHOD:
            blob = context.previous_state
            if blob is not None:
                return SignatureState.from_bytes(blob)
        return signatures_from_history(context.earlier_views(), attribute)

    def _refuse_changed_values(self, df: pd.DataFrame, schema: Schema,
                               values: np.ndarray, known: np.ndarray, state: SignatureState,
                               names: np.ndarray) -> None:
        has = np.flatnonzero(known != algo.NO_SIGNATURE)
        if not len(has):
            return
        signatures = state.signatures
        ok = signatures.contains(known[has], values[has])
        bad = has[~ok]
        if not len(bad):
            return
        key = schema.identifiers[-1] if schema.identifiers else None
        shown = []
        for row in bad[:_SHOWN]:
            who = f"{key}={df[key].iloc[row]!r}" if key in df.columns else f"row {row}"
            shown.append(f"{who} now has {names[values[row]]!r}, its signature is "
                         f"{{{', '.join(state.signature_texts(int(known[row])))}}}")
        more = f" and {len(bad) - _SHOWN} more" if len(bad) > _SHOWN else ""
        raise InputError(
            f"m-invariance: {len(bad)} records changed their sensitive value since an "
            f"earlier release: {'; '.join(shown)}{more}. m-invariance keeps a record's "
            f"value in its signature for ever; a record whose value changed must be "
            f"published as a new record (a new key), or the dataset started afresh")

    def _release(self, df: pd.DataFrame, schema: Schema, table: Any,
                 class_of_slot: np.ndarray, fake_values: np.ndarray, fake_like: np.ndarray,
                 names: np.ndarray, attribute: str, numeric: bool,
                 timings: dict[str, float], seeded: bool, *,
                 n_counterfeits_balancing: int, slot_values: np.ndarray,
                 signatures: algo.Signatures, known_rows: np.ndarray) -> Release:
        t0 = time.perf_counter()
        n = len(df)
        released_cols = schema.released_columns
        real = df[released_cols].reset_index(drop=True)
        if len(fake_values):
            fakes = df[released_cols].iloc[fake_like].reset_index(drop=True)
            fake_text = names[fake_values]
            fakes[attribute] = (np.array([float(t) for t in fake_text]) if numeric
                                else _like_column(fake_text, df[attribute]))
            extended = pd.concat([real, fakes], ignore_index=True)
            ext_table = encode(extended, schema)
        else:
            extended, ext_table = real, table
        partition = Partition.from_class_ids(class_of_slot)
        forms = {c.name: default_form(c) for c in ext_table.quasi_identifiers}
        generalized, released = generalize_columns(ext_table.quasi_identifiers, forms,
                                                   partition)
        has_known = np.zeros(partition.n_classes, dtype=bool)
        has_known[class_of_slot[:n][known_rows]] = True
        for name, labels in separate_labels(generalized, ext_table, forms, partition,
                                            slot_values, has_known).items():
            released[name] = pd.Categorical(labels[class_of_slot])
        data = release_table(extended, schema, released)
        timings["generalization"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        n_fake = len(fake_values)
        provenance = np.concatenate([np.full(n, Provenance.INPUT, dtype=np.int8),
                                     np.full(n_fake, Provenance.COUNTERFEIT, dtype=np.int8)])
        source = np.concatenate([np.arange(n), np.full(n_fake, -1)]).astype(np.int64)
        model = MUniqueness(self.m, attribute=attribute)
        release = Release(data, partition.class_ids(), pd.DataFrame(), [], {}, schema,
                          METHOD, self.parameters(), timings, kind=ReleaseKind.GENERALIZED,
                          models=[model], provenance=provenance, source_rows=source,
                          threat_model=ThreatModel.M_INVARIANCE, seeded=seeded)
        verify_release(release)
        timings["verify"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        classes = release.classes
        if "counterfeits" not in classes.columns:
            classes.insert(1, "counterfeits", np.zeros(len(classes), dtype=np.int64))
        release.auxiliary["counterfeits"] = classes[
            [*schema.quasi_identifiers, "size", "counterfeits"]].copy()
        release.metrics = release_metrics(generalized, partition.sizes, released_sizes(release),
                                          k=self.m)
        release.metrics |= {
            "m_invariance.counterfeits": float(n_fake),
            "m_invariance.counterfeits_balancing": float(n_counterfeits_balancing),
            "m_invariance.counterfeits_assignment": float(n_fake - n_counterfeits_balancing),
            "m_invariance.classes_with_counterfeits":
                float(np.count_nonzero(classes["counterfeits"].to_numpy())),
        }
        codes = np.stack([c.codes for c in ext_table.quasi_identifiers], axis=1).astype(
            np.int64) if ext_table.quasi_identifiers else np.zeros((n + n_fake, 0), np.int64)
        # each class's extent in codes (a widened label reads a little wider; the
        # estimate uses the extent the class's rows span)
        lo = np.stack([g.lo for g in generalized], axis=1).astype(np.int64) \
            if generalized else np.zeros((partition.n_classes, 0), np.int64)
        hi = np.stack([g.hi for g in generalized], axis=1).astype(np.int64) \
            if generalized else np.zeros((partition.n_classes, 0), np.int64)
        release.metrics |= count_query_error(
            codes[:n], slot_values[:n], lo, hi, class_of_slot, slot_values,
            np.array([c.cardinality for c in ext_table.quasi_identifiers], dtype=np.int64))
        timings["metrics"] = time.perf_counter() - t0
        return release

    def _published_signatures(self, release: Release, values: np.ndarray,
                              known: np.ndarray, state: SignatureState, names: np.ndarray,
                              signatures: algo.Signatures) -> np.ndarray:
        """Per input row, the signature an adversary reads off its class (its distinct
        values); refuse a merge of classes by equal labels that changes a record's
        signature."""
        n = len(values)
        cls = np.asarray(release.class_ids, dtype=np.int64)
        slot_values = np.concatenate([values, _fake_codes(release, names, values)])
        class_sig = signatures.ids_of_groups(cls, slot_values)
        published = class_sig[cls[:n]]
        moved = np.flatnonzero((known != algo.NO_SIGNATURE) & (published != known))
        if len(moved):
            labels = release.classes.iloc[np.unique(cls[moved])[:3]]
            qis = release.schema.quasi_identifiers
            shown = "; ".join(", ".join(f"{q}={row[q]}" for q in qis)
                              for _, row in labels.iterrows())
            raise ModelNotMetError(
                f"m-invariance: classes of different signatures got the same labels "
                f"({shown}), so an adversary reads them as one class and {len(moved)} "
                f"records would change signature; nothing was written. Give a finer "
                f"hierarchy for those quasi-identifiers, or release them as ranges")
        return published


def separate_labels(generalized: list[Any], table: Any, forms: dict[str, Any],
                    partition: Any, slot_values: np.ndarray, has_known: np.ndarray
                    ) -> dict[str, np.ndarray]:
    """Make every class look different from every other: an adversary groups rows by their
    labels, so two classes with equal labels are one class to it, and that class must be
    m-unique too (Xiao & Tao, Definition 3: its values all different). Two classes of one
    signature are not: their union holds every value twice. So every class whose labels
    are taken gets one QI's label widened, by generalizing the class together with the
    nearest code outside it (the next range, set or hierarchy node up), until its labels
    are free. When no label is free, classes may stay merged only if the union still holds
    every value once and all its records are new (they take the union's values as their
    signature); otherwise the release is refused, naming the classes. ``slot_values``: per
    row of ``table``, its sensitive value's code. Returns the new per-class labels of the
    QIs that changed (none, usually)."""
    if not generalized:
        return {}
    keys = np.stack([g.label_codes[0] for g in generalized], axis=1)
    group, counts = _row_groups(keys)
    if not (counts > 1).any():
        return {}
    labels = [np.asarray(g.labels, dtype=object).copy() for g in generalized]
    taken = {tuple(row) for row in zip(*labels, strict=True)}
    changed: set[int] = set()
    order, starts, sizes = partition.order, partition.starts, partition.sizes

    def rows_of(classes: Sequence[int]) -> np.ndarray:
        return np.concatenate([order[starts[c]:starts[c] + sizes[c]] for c in classes])

    for g in np.flatnonzero(counts > 1):
        members = np.flatnonzero(group == g)
        stay = [int(members[0])]  # the first class keeps the labels
        for c in members[1:]:
            new = _widened(rows_of([c]), [labels[q][c] for q in range(len(labels))],
                           table.quasi_identifiers, forms, taken)
            if new is None:
                stay.append(int(c))
                continue
            for q, label in enumerate(new):
                if label != labels[q][c]:
                    labels[q][c] = label
                    changed.add(q)
            taken.add(tuple(new))
        if len(stay) > 1:
            values = slot_values[rows_of(stay)]
            if has_known[stay].any() or len(np.unique(values)) < len(values):
                shown = "; ".join(", ".join(f"{g.column}={labels[q][c]}"
                                            for q, g in enumerate(generalized))
                                  for c in stay[:3])
                raise ModelNotMetError(
                    f"m-invariance: {len(stay)} classes get the same labels ({shown}) and "
                    f"no quasi-identifier can be widened to a free label, so an adversary "
                    f"reads them as one class, which "
                    + ("would change the signature of records released before"
                       if has_known[stay].any() else "repeats a sensitive value (not "
                       "m-unique)")
                    + "; nothing was written. Give finer hierarchies, or more "
                    "quasi-identifiers")
    return {generalized[q].column: labels[q] for q in sorted(changed)}


def _widened(rows: np.ndarray, current: list[object], columns: Any, forms: dict[str, Any],
             taken: set[tuple[object, ...]]
             ) -> list[object] | None:
    """The labels of the class of ``rows`` with one QI widened to the nearest free label
    tuple: QIs in order, codes ever farther outside the class's extent."""
    for q, column in enumerate(columns):
        codes = column.codes[rows]
        lo, hi = int(codes.min()), int(codes.max())
        for step in range(1, column.cardinality):
            for extra in (lo - step, hi + step):
                if not 0 <= extra < column.cardinality or extra == column.missing_code:
                    continue
                wider = replace(column, codes=np.append(codes, extra))
                g = generalize_column(wider, np.arange(len(codes) + 1), np.array([0]),
                                      forms[column.name])
                candidate = [*current[:q], g.labels[0], *current[q + 1:]]
                if tuple(candidate) not in taken:
                    return candidate
    return None


def _fake_codes(release: Release, names: np.ndarray, values: np.ndarray) -> np.ndarray:
    attribute = release.models[0].attribute  # type: ignore[attr-defined]
    fake = release.data[attribute].to_numpy()[len(values):]
    numeric = pd.api.types.is_numeric_dtype(release.data[attribute])
    texts = value_texts(fake, numeric)
    lookup = {t: i for i, t in enumerate(names.tolist())}
    return np.array([lookup[t] for t in texts.tolist()], dtype=np.int64)


def _value_codes(column: pd.Series, numeric: bool, vocabulary: dict[str, int]) -> np.ndarray:
    """Per row, the code of its value's text in ``vocabulary`` (new texts are added): the
    texts are made once per distinct value, not per row."""
    codes, uniques = pd.factorize(column.astype(np.float64) if numeric else column,
                                  sort=False)
    texts = value_texts(np.asarray(uniques, dtype=object), numeric)
    table = np.array([vocabulary.setdefault(t, len(vocabulary)) for t in texts.tolist()],
                     dtype=np.int64)
    return table[codes]


def _like_column(texts: np.ndarray, column: pd.Series) -> np.ndarray:
    """Counterfeit values in the column's own type (text columns keep text)."""
    if isinstance(column.dtype, pd.CategoricalDtype):  # a value gone from the table stays
        categories = column.cat.categories.union(pd.Index(np.unique(texts.astype(str))))
        return pd.Categorical(texts, categories=categories)
    return np.asarray(texts, dtype=object)


def _row_groups(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True, return_counts=True)[1:]`` for rows of
    label codes (>= -1): each row read as one mixed-radix number when it fits 62 bits, a
    1-d unique (rows in the same order), not a sort of row bytes."""
    shifted = rows.astype(np.int64) + 1
    radix = shifted.max(axis=0, initial=0) + 1
    if len(rows) and shifted.min() >= 0 and np.log2(radix).sum() < 62:
        weights = np.cumprod(np.r_[radix[1:], 1][::-1])[::-1].astype(np.int64)
        _, group, counts = np.unique(shifted @ weights, return_inverse=True,
                                     return_counts=True)
    else:
        _, group, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    return np.asarray(group).reshape(-1), counts


def _rank_in_signature(values: np.ndarray, sig: np.ndarray,
                       signatures: algo.Signatures) -> np.ndarray:
    """Per slot, the position of its value in its signature (signatures are sorted)."""
    return signatures.rank_of(sig, values)


def _next_state(state: SignatureState, keys: np.ndarray, published: np.ndarray,
                signatures: algo.Signatures, names: np.ndarray) -> SignatureState:
    """The records of this release with their signatures, and every earlier record absent
    from it with its own (so a record that comes back finds its signature)."""
    keys = np.asarray(keys, dtype=KEY_DTYPE)
    by_key = _key_order(keys)
    absent = _positions_in(keys[by_key], state.keys) < 0
    all_keys = np.concatenate([state.keys[absent], keys])
    all_sigs = np.concatenate([state.signature[absent], published])
    order = _key_order(all_keys)
    return SignatureState(all_keys[order], all_sigs[order], signatures, names)


# 16-byte keys compare as bytes, slowly; their first 8 bytes read as a big-endian integer
# order them alike, and where those integers are distinct (pseudorandom keys: always, in
# practice) they decide every comparison. Where they are not, the bytes decide.


def _leading_words(keys: np.ndarray) -> np.ndarray:
    """The first 8 bytes of every key as a big-endian unsigned integer."""
    return np.ascontiguousarray(keys, dtype=KEY_DTYPE).view(">u8")[::2].astype(np.uint64)


def _key_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` of 16-byte keys."""
    lead = _leading_words(keys)
    order = np.argsort(lead, kind="stable")
    if np.all(lead[order[1:]] > lead[order[:-1]]):  # no two keys share their first 8 bytes
        return order
    return np.argsort(keys, kind="stable")


def _positions_in(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Per key, the position of an equal key in ``sorted_keys`` (sorted), -1 if none."""
    out = np.full(len(keys), -1, dtype=np.int64)
    if not len(sorted_keys) or not len(keys):
        return out
    keys = np.asarray(keys, dtype=KEY_DTYPE)
    lead = _leading_words(sorted_keys)
    if np.all(lead[1:] > lead[:-1]):  # distinct: only the key with equal lead can match
        pos = np.searchsorted(lead, _leading_words(keys))
    else:
        pos = np.searchsorted(sorted_keys, keys)
    pos = np.minimum(pos, len(sorted_keys) - 1)
    hit = sorted_keys[pos] == keys
    out[hit] = pos[hit]
    return out


def _sensitive_attribute(schema: Schema) -> str:
    if len(schema.sensitive) != 1:
        raise InputError(f"m-invariance protects one sensitive attribute; "
                         f"{len(schema.sensitive)} were given "
                         f"({', '.join(schema.sensitive) or 'none'}): name one with "
                         f"--sensitive")
    return schema.sensitive[0]


def _rows(rows: np.ndarray) -> str:
    shown = ", ".join(str(int(r)) for r in rows[:_SHOWN])
    return shown + (f" and {len(rows) - _SHOWN} more" if len(rows) > _SHOWN else "")


def publish(df: pd.DataFrame, request: PublishRequest, context: PublishContext) -> Release:
    """The ``m-invariance`` method's publishing function (see :class:`MInvariance`)."""
    options = dict(request.options)
    if options.get("m") is None:
        raise InputError("method 'm-invariance' needs -m (distinct sensitive values per "
                         "class), e.g. -m 4")
    return MInvariance(options["m"], bool(options.get("unweighted_split", False)),
                       options.get("seed")).publish(df, context)
