"""m-invariance checked from the history alone: every release of a dataset m-unique, and
every record keeping its signature from one release it appears in to the next. An
independent check of what the ``m-invariance`` engine
(:mod:`anonkit.history.engines.minvariance`) promises."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from anonkit.algorithms import minvariance as algo
from anonkit.errors import InputError
from anonkit.history.engines.minvariance import KEY_DTYPE, class_signatures
from anonkit.history.store import HistoryStore

_SHOWN = 10


@dataclass
class InvarianceReport:
    """m-invariance of a dataset's sequence of releases, from the history alone.

    ``violations``: records whose class signature (the distinct sensitive values of their
    class as released) differs between two releases they appear in one after the other
    (a record that left and came back is compared with its last release before).
    ``not_m_unique``: per release, its classes that are not m-unique (as the adversary
    groups them, counterfeit rows counted)."""

    dataset: str
    releases: list[int]
    records_compared: int
    violations: list[dict[str, object]]
    n_violations: int
    not_m_unique: dict[int, int]

    @property
    def holds(self) -> bool:
        return self.n_violations == 0 and not any(self.not_m_unique.values())

    def to_dict(self) -> dict[str, object]:
        return {"dataset": self.dataset, "releases": self.releases,
                "records_compared": self.records_compared, "holds": self.holds,
                "violations": self.n_violations, "worst": self.violations,
                "not_m_unique": self.not_m_unique}


def check_m_invariance(store: HistoryStore, dataset: str, *, attribute: str | None = None,
                       m: int | None = None, shown: int = _SHOWN) -> InvarianceReport:
    """Check that every release of ``dataset`` is m-unique and that every record keeps its
    signature from one release it appears in to the next. ``m``: default, each release's
    own (its m-uniqueness model; a release without one is checked for signatures only)."""
    infos = store.releases(dataset)
    vocabulary: dict[str, int] = {}
    signatures = algo.Signatures()
    keys_all, seq_all, sig_all = [], [], []
    not_unique: dict[int, int] = {}
    for info in infos:
        name = attribute or (info.sensitive[0] if info.sensitive else None)
        if name is None:
            raise InputError(f"release {info.seq} of {dataset!r} has no sensitive attribute: "
                             f"m-invariance cannot be checked")
        view = store.load(info, labels=False)
        class_sig = class_signatures(view, name, vocabulary, signatures)
        keys_all.append(np.asarray(view.record_keys.tolist(), dtype=KEY_DTYPE))
        seq_all.append(np.full(len(view.record_keys), info.seq, dtype=np.int64))
        sig_all.append(class_sig[view.record_classes])
        wanted = m if m is not None else _declared_m(info.models)
        if wanted is not None:
            cv = view.values[name]
            top = np.zeros(view.n_classes, dtype=np.int64)
            np.maximum.at(top, cv.class_index, cv.count)
            ok = (view.sizes >= wanted) & (top * wanted <= view.sizes)
            not_unique[info.seq] = int(np.count_nonzero(~ok))
    names = np.array(list(vocabulary), dtype=object)
    if not keys_all:
        return InvarianceReport(dataset, [], 0, [], 0, not_unique)
    keys = np.concatenate(keys_all)
    seqs = np.concatenate(seq_all)
    sigs = np.concatenate(sig_all)
    order = np.lexsort((seqs, keys))
    keys, seqs, sigs = keys[order], seqs[order], sigs[order]
    same = keys[1:] == keys[:-1]
    changed = np.flatnonzero(same & (sigs[1:] != sigs[:-1]))
    compared = np.unique(keys[1:][same]) if len(keys) > 1 else keys[:0]
    worst = []
    for i in changed[:shown]:
        worst.append({"record": bytes(keys[i]).hex(),
                      "releases": [int(seqs[i]), int(seqs[i + 1])],
                      "signatures": [[str(v) for v in names[signatures.members(int(s))]]
                                     for s in (sigs[i], sigs[i + 1])]})
    return InvarianceReport(dataset, [i.seq for i in infos], len(compared), worst,
                            len(np.unique(keys[changed])), not_unique)


def _declared_m(models: list[dict[str, object]]) -> int | None:
    for model in models:
        params = model.get("parameters")
        if model.get("model") == "m-uniqueness" and isinstance(params, dict):
            value = params.get("m")
            if isinstance(value, int):
                return value
    return None
