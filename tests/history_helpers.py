"""Helpers for the history tests: tables that change over time, a small test method, and a
child process that publishes (for the kill and concurrency tests).

The tables describe *people*: a person's quasi-identifiers and sensitive values are a
function of their id, so a person who stays in the table keeps their values from one
version to the next (what the cross-release attacks exploit), while churn replaces some
people by new ones.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa

from anonkit.data.encoding import encode_column
from anonkit.data.schema import ColumnSpec, Kind, Role
from anonkit.history.attacks import Requirement
from anonkit.history.crypto import (
    _KNOWLEDGE_DOMAIN,
    _keystream_bytes,
    _knowledge_context,
    _knowledge_tag,
    decrypt_classes,
)
from anonkit.history.engines import register_engine
from anonkit.history.engines.context import PublishContext, PublishRequest
from anonkit.history.publish import PUBLISH_HOOKS, publish
from anonkit.history.records import PreparedRelease, ReleaseView
from anonkit.history.schema import (
    classes_table,
    knowledge_table,
    record_maps_table,
    records_table,
    releases_table,
    schema_table,
)
from anonkit.history.store import HistoryStore
from anonkit.history.summary import multisets, record_entries
from anonkit.models import KEAnonymity
from anonkit.models.base import Classes, KAnonymity, PrivacyModel, SensitiveAttribute
from anonkit.release import Release

DISEASES = np.array(["flu", "asthma", "diabetes", "cancer", "hiv", "migraine", "covid",
                     "gastritis"], dtype=object)


def people(ids: np.ndarray) -> pd.DataFrame:
    """One row per id; every attribute is a fixed pseudo-random function of the id."""
    ids = np.asarray(ids, dtype=np.int64)
    h = (ids * 2654435761 + 12345) % (2**32)
    return pd.DataFrame({
        "pid": np.char.add("P", ids.astype(str)).astype(object),
        "age": (18 + h % 73).astype(np.int64),
        "zip": (10000 + (h // 73) % 400).astype(np.int64),
        "sex": np.where((h // 29200) % 2 == 0, "F", "M").astype(object),
        "disease": DISEASES[(h // 58400) % len(DISEASES)],
        "income": (20000 + ((h // 467200) % 100) * 1000).astype(np.int64),
    })


def churned_versions(n_rows: int, n_versions: int, churn: float,
                     seed: int = 0) -> list[pd.DataFrame]:
    """``n_versions`` versions of a table; each replaces ``churn`` of the rows by new people
    (and shuffles the row order, as a new extract would)."""
    rng = np.random.default_rng(seed)
    ids = np.arange(n_rows)
    next_id = n_rows
    out = []
    for _ in range(n_versions):
        out.append(people(rng.permutation(ids)).reset_index(drop=True))
        leaving = rng.choice(n_rows, round(churn * n_rows), replace=False)
        ids = ids.copy()
        ids[leaving] = np.arange(next_id, next_id + len(leaving))
        next_id += len(leaving)
    return out


def sorted_chunks(df: pd.DataFrame, request: PublishRequest,
                  context: PublishContext) -> Release:
    """A naive one-shot anonymizer for tests that do not need Mondrian: sort the rows by
    their quasi-identifiers, cut runs of k, release each QI as the run's range (or set)."""
    schema = context.schema
    qis = schema.quasi_identifiers
    k = int(request.options.get("k", 5))  # type: ignore[call-overload]
    n = len(df)
    order = np.lexsort([df[q].astype(str).to_numpy() if df[q].dtype == object
                        else df[q].to_numpy() for q in reversed(qis)])
    n_classes = max(n // k, 1)
    class_ids = np.empty(n, dtype=np.int64)
    class_ids[order] = np.minimum(np.arange(n) // k, n_classes - 1)
    data = df[schema.released_columns].copy()
    labels: dict[str, np.ndarray] = {}
    for q in qis:
        grouped = df[q].groupby(class_ids)
        if df[q].dtype == object:
            label = grouped.agg(lambda s: "{" + ",".join(sorted(set(map(str, s)))) + "}")
        else:
            lo, hi = grouped.min(), grouped.max()
            label = ("[" + lo.astype(str) + "-" + hi.astype(str) + "]").where(lo != hi,
                                                                           lo.astype(str))
        labels[q] = label.to_numpy(dtype=object)
        data[q] = labels[q][class_ids]
    classes = pd.DataFrame({"size": np.bincount(class_ids), **labels})
    verdicts = [KAnonymity(k).verdict(Classes(class_ids))]
    return Release(data.reset_index(drop=True), class_ids, classes, verdicts, {},
                               schema, "sorted-chunks", {"k": k}, models=[KAnonymity(k)])


register_engine("sorted-chunks", sorted_chunks, replace=True)


def given_classes(df: pd.DataFrame, request: PublishRequest,
                  context: PublishContext) -> Release:
    """Classes chosen by the test: ``options["classes"]`` maps each key to its class."""
    schema = context.schema
    chosen = request.options["classes"]
    assert isinstance(chosen, dict)
    class_ids = np.array([chosen[key] for key in df[request.key]], dtype=np.int64)
    data = df[schema.released_columns].copy().reset_index(drop=True)
    n_classes = int(class_ids.max()) + 1
    labels = {q: np.array([f"c{c}" for c in range(n_classes)], dtype=object)
              for q in schema.quasi_identifiers}
    for q in schema.quasi_identifiers:
        data[q] = labels[q][class_ids]
    k = int(request.options.get("k", 1))  # type: ignore[call-overload]
    models: list[PrivacyModel] = [KAnonymity(k)]
    verdicts = [KAnonymity(k).verdict(Classes(class_ids))]
    if "ke" in request.options:  # (k, e, attribute): also promise (k,e)-anonymity
        ke_k, ke_e, attr = request.options["ke"]  # type: ignore[misc]
        income = SensitiveAttribute.from_encoded(encode_column(
            df[attr].reset_index(drop=True), ColumnSpec(attr, Role.SENSITIVE, Kind.NUMERIC),
            allow_missing=True))
        models.append(KEAnonymity(ke_k, ke_e, attribute=attr))
        verdicts.append(models[-1].verdict(Classes(class_ids, sensitive=[income])))
    return Release(data, class_ids, pd.DataFrame({"size": np.bincount(class_ids),
                                                               **labels}),
                               verdicts, {}, schema, "given-classes", {"k": k}, models=models)


register_engine("given-classes", given_classes, replace=True)


def make_request(dataset: str = "census", method: str = "sorted-chunks", k: int = 5,
            sensitive: tuple[str, ...] = ("disease",), **options: object) -> PublishRequest:
    return PublishRequest(dataset=dataset, key="pid", quasi_identifiers=["age", "zip", "sex"],
                          sensitive=list(sensitive), method=method,
                          options={"k": k, **options})


def history_state(store: HistoryStore) -> list[tuple[object, ...]]:
    """Everything a publish could change, to compare before and after (the records are
    counted in the record maps: a release since version 3 writes no ``anonkit_records``
    rows; those rows are counted too, which no publish may change)."""
    with store.engine.connect() as conn:
        n_classes = conn.execute(sa.select(sa.func.count()).select_from(classes_table)).scalar()
        n_rows = conn.execute(sa.select(sa.func.count()).select_from(records_table)).scalar()
        n_maps, n_records = conn.execute(sa.select(
            sa.func.count(), sa.func.coalesce(sa.func.sum(record_maps_table.c.n_records), 0)
        ).select_from(record_maps_table)).one()
    return [*((r.dataset, r.seq, r.content_hash, r.pending_path) for r in store.releases()),
            ("record rows", n_rows), ("record maps", n_maps), ("classes", n_classes),
            ("records", int(n_records))]


def write_record_rows(store: HistoryStore) -> None:
    """Give every release with a record map the ``anonkit_records`` rows a release recorded
    before version 3 had (key, class, history-wide pseudonym or NULL), from its map."""
    maps = record_maps_table.c
    with store.engine.begin() as conn:
        for release_id, keys, classes, persons in conn.execute(sa.select(
                maps.release_id, maps["keys"], maps.classes, maps.persons)).all():
            n = len(keys) // 16
            classes = _classes_in_clear(store, conn, release_id, n, bytes(classes))
            rows = [{"release_id": release_id, "key_hash": bytes(keys[16 * i:16 * i + 16]),
                     "class_id": int.from_bytes(classes[4 * i:4 * i + 4], "little",
                                                signed=True),
                     "person_hash": None if persons is None
                     else bytes(persons[16 * i:16 * i + 16])} for i in range(n)]
            if rows:
                conn.execute(records_table.insert(), rows)


def _classes_in_clear(store: HistoryStore, conn: sa.Connection, release_id: int, n: int,
                      classes: bytes) -> bytes:
    """A record map's classes as version 3 kept them (version 4 encrypts them)."""
    if len(classes) == 4 * n:
        return classes
    dataset, seq = conn.execute(sa.select(releases_table.c.dataset, releases_table.c.seq)
                                .where(releases_table.c.id == release_id)).one()
    return decrypt_classes(store.secret, dataset, seq, classes)


def as_version_3(store: HistoryStore) -> None:
    """Make a history what version 3 was: no gate, no authentication, the record maps'
    classes in clear and the kept knowledge's public part in clear."""
    maps, known = record_maps_table.c, knowledge_table.c
    with store.engine.begin() as conn:
        for release_id, n, classes in conn.execute(
                sa.select(maps.release_id, maps.n_records, maps.classes)).all():
            conn.execute(record_maps_table.update().where(maps.release_id == release_id)
                         .values(classes=_classes_in_clear(store, conn, release_id, int(n),
                                                           bytes(classes))))
        for dataset, through in conn.execute(sa.select(known.dataset, known.through_seq)).all():
            public, private = store.knowledge_state(dataset)[1]  # type: ignore[index]
            nonce = b"\x07" * 16
            context = _knowledge_context(dataset, through)
            mask = np.frombuffer(_keystream_bytes(store.secret, _KNOWLEDGE_DOMAIN, context,
                                                  nonce, len(private)), dtype=np.uint8)
            stored = (len(public).to_bytes(8, "little") + public
                      + (np.frombuffer(private, dtype=np.uint8) ^ mask).tobytes())
            conn.execute(knowledge_table.update().where(known.dataset == dataset).values(
                nonce=nonce, tag=_knowledge_tag(store.secret, context, nonce, stored),
                state=stored))
        for column in ("gate", "auth", "content_digest"):
            conn.exec_driver_sql(f"ALTER TABLE anonkit_releases DROP COLUMN {column}")
        conn.exec_driver_sql("ALTER TABLE anonkit_schema DROP COLUMN chain")
        conn.exec_driver_sql("ALTER TABLE anonkit_record_maps DROP COLUMN fingerprints")
        conn.execute(schema_table.update().values(version=3))


def as_version_2(store: HistoryStore) -> None:
    """Make a history what version 2 was: its records as ``anonkit_records`` rows, without
    the version-3 tables."""
    write_record_rows(store)
    with store.engine.begin() as conn:
        for table in (record_maps_table, knowledge_table):
            conn.exec_driver_sql(f"DROP TABLE {table.name}")
        for column in ("gate", "auth", "content_digest"):
            conn.exec_driver_sql(f"ALTER TABLE anonkit_releases DROP COLUMN {column}")
        conn.exec_driver_sql("ALTER TABLE anonkit_schema DROP COLUMN chain")
        conn.execute(schema_table.update().values(version=2))


# -- a publishing child process -------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``python history_helpers.py SPEC.json``: publish as the spec says; when it names a
    ``stage``, touch ``marker`` there, then wait for ``go`` (if given) and sleep ``sleep``
    seconds. Prints ``ok SEQ`` or ``error ClassName: message``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("spec")
    spec = json.loads(Path(parser.parse_args(argv).spec).read_text())

    def hook() -> None:
        Path(spec["marker"]).touch()
        go = spec.get("go")
        deadline = time.monotonic() + 120
        while go and not Path(go).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(spec.get("sleep", 0))

    if spec.get("stage"):
        PUBLISH_HOOKS[spec["stage"]] = hook
    df = pd.read_pickle(spec["input"])
    try:
        with HistoryStore.open(spec["history"], secret_file=spec["secret_file"],
                               create=True) as store:
            # these children test atomicity, not the breach gate: record whatever they publish
            info = publish(store, df, make_request(**spec.get("request", {})), spec["output"],
                           allow_breach=True)
    except Exception as exc:
        print(f"error {type(exc).__name__}: {exc}", flush=True)
        return 1
    print(f"ok {info.seq}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())


# -- releases built by hand ----------------------------------------------------------------


def release(seq: int, members: dict[str, int], values: dict[str, object], *,
            labels: dict[int, list[object]] | None = None, kind: str = "generalized",
            fakes: dict[int, list[object]] | None = None, numeric: bool = False,
            requirements: tuple[Requirement, ...] = (),
            record_values: bool = False) -> PreparedRelease:
    """A release built by hand (``labels``: per class, its released QI labels;
    ``record_values``: the history keeps each record's value, as a publish does)."""
    fakes = fakes or {}
    keys = sorted(members)
    fake_classes = [c for c, vals in fakes.items() for _ in vals]
    class_ids = np.array([members[key] for key in keys] + fake_classes, dtype=np.int64)
    released = pd.Series([values[key] for key in keys]
                         + [v for vals in fakes.values() for v in vals],
                         dtype=np.float64 if numeric else object)
    sizes = np.bincount(class_ids)
    labels = labels or {c: [f"g{c}"] for c in range(len(sizes))}
    n_qis = len(next(iter(labels.values())))
    return PreparedRelease(
        dataset="hand", seq=seq, method="hand", parameters={}, key_column="pid", columns={},
        quasi_identifiers=["age", "sex", "zone"][:n_qis], sensitive=["v"], models=[],
        verdicts=[], n_input_rows=len(keys), n_released_rows=len(class_ids),
        class_rows=[(c, int(sizes[c]), json.dumps(labels[c])) for c in range(len(sizes))],
        class_values=[multisets("v", released, class_ids)],
        record_hashes=[key.encode().ljust(16, b".") for key in keys],
        record_classes=[members[key] for key in keys], release_kind=kind,
        group_column="group" if kind == "permuted" else None,
        requirements=list(requirements),
        counterfeits=np.bincount(np.array(fake_classes, dtype=np.int64),
                                 minlength=len(sizes)).tolist(),
        record_values={"v": record_entries("v", released, class_ids)[:len(keys)]}
        if record_values else None)


def pid(key: str) -> bytes:
    return key.encode().ljust(16, b".")


def classes_and_bags(views: list[ReleaseView]
                     ) -> tuple[list[dict[bytes, int]], list[dict[int, Counter[object]]]]:
    """Per release: each record's class, and each class's multiset of the values of "v"."""
    classes = [dict(zip(v.record_keys.tolist(), v.record_classes.tolist(), strict=True))
               for v in views]
    bags: list[dict[int, Counter[object]]] = []
    for v in views:
        cv = v.values["v"]
        per_class: dict[int, Counter[object]] = {}
        for c, x, count in zip(cv.class_index.tolist(), cv.value.tolist(), cv.count.tolist(),
                               strict=True):
            per_class.setdefault(c, Counter())[x] = count
        bags.append(per_class)
    return classes, bags
