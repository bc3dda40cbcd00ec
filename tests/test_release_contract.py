"""Contract tests for the three release kinds, with small test methods of each kind.

- a counterfeit-adding method (generalized): counterfeits are published, counted in their
  classes and not in the record map, and the audit does not count them as people;
- a permuting method with an explicit group column: verified by group, audited by group;
- a synthetic method: no record map, verified by its own verdicts, and the boundary still
  refuses identifiers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonkit._util.randomness import privacy_rng
from anonkit.errors import InputError, ModelNotMetError
from anonkit.history import HistoryStore, PublishRequest, audit, publish
from anonkit.history.engines import register_engine
from anonkit.history.engines.context import PublishContext
from anonkit.models import KAnonymity, KEAnonymity, Verdict
from anonkit.models.invariance import MUniqueness
from anonkit.release import Provenance, Release, ReleaseKind, ThreatModel
from anonkit.verify import verify_release, write_release
from history_helpers import people

DISEASES = ["flu", "asthma", "cancer", "hiv", "covid", "gastritis"]


def ward(n: int = 12) -> pd.DataFrame:
    df = people(np.arange(n))
    # the test method pairs records by age: give each pair two distinct diseases
    rank = np.empty(n, dtype=np.int64)
    rank[np.argsort(df["age"].to_numpy(), kind="stable")] = np.arange(n)
    df["disease"] = np.array(DISEASES[:2], dtype=object)[rank % 2]
    return df


# -- a counterfeit-adding method -------------------------------------------------------------


def with_counterfeits(df: pd.DataFrame, request: PublishRequest,
                      context: PublishContext) -> Release:
    """Pairs of records by age, each pair joined by one counterfeit row whose disease is
    neither of theirs; every class is labelled with its age range."""
    schema = context.schema
    rng, seeded = privacy_rng(int(request.options.get("seed", 0)))  # type: ignore[arg-type]
    order = np.argsort(df["age"].to_numpy(), kind="stable")
    n_classes = len(df) // 2
    real_class = np.empty(len(df), dtype=np.int64)
    real_class[order] = np.minimum(np.arange(len(df)) // 2, n_classes - 1)
    rows = [df[schema.released_columns].iloc[order].assign(_class=real_class[order],
                                                            _source=order)]
    fakes = df[schema.released_columns].iloc[order[::2][:n_classes]].copy()
    fakes["disease"] = "counterfeit-" + pd.Series(DISEASES[2:], dtype=object).sample(
        n_classes, replace=True, random_state=rng.integers(2**31)).to_numpy()
    fakes["_class"] = np.arange(n_classes)
    fakes["_source"] = -1
    data = pd.concat([rows[0], fakes], ignore_index=True)
    lo = data.groupby("_class")["age"].transform("min")
    hi = data.groupby("_class")["age"].transform("max")
    for q in schema.quasi_identifiers:
        data[q] = data["_class"].map(lambda c, q=q: f"{q}-class-{c}")
    data["age"] = "[" + lo.astype(str) + "-" + hi.astype(str) + "]"
    shuffled = rng.permutation(len(data))
    data = data.iloc[shuffled].reset_index(drop=True)
    source = data.pop("_source").to_numpy()
    class_ids = data.pop("_class").to_numpy()
    provenance = np.where(source < 0, Provenance.COUNTERFEIT, Provenance.INPUT)
    counts = pd.DataFrame({"class": np.arange(n_classes), "counterfeits": 1})
    return Release(data, class_ids, pd.DataFrame(), [], {}, schema, "with-counterfeits", {},
                   models=[KAnonymity(3), MUniqueness(3)], provenance=provenance,
                   source_rows=source, auxiliary={"counterfeits": counts}, seeded=seeded,
                   threat_model=ThreatModel.M_INVARIANCE)


register_engine("with-counterfeits", with_counterfeits, replace=True)


def test_counterfeits_are_published_counted_and_not_people(tmp_path: Path) -> None:
    df = ward()
    request = PublishRequest(dataset="ward", key="pid", quasi_identifiers=["age", "zip", "sex"],
                             sensitive=["disease"], method="with-counterfeits")
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        info = publish(store, df, request, tmp_path / "r1.csv")
        published = pd.read_csv(tmp_path / "r1.csv")
        assert len(published) == 18  # 12 records and 6 counterfeits, all released
        assert published["disease"].str.startswith("counterfeit-").sum() == 6
        assert "pid" not in published.columns
        aux = pd.read_csv(tmp_path / "r1.counterfeits.csv")
        assert aux["counterfeits"].sum() == 6
        assert info.n_released_rows == 18 and info.n_input_rows == 12
        view = store.load(info)
        assert list(view.sizes) == [3] * 6  # counted in their classes
        assert int(view.counterfeits.sum()) == 6
        assert len(view.record_keys) == 12  # not in the record map
        assert info.release_kind == "generalized" and info.threat_model == "m-invariance"
        # the same classes again: each record's intersection is its class of 3 rows, of
        # which only 2 are people
        publish(store, df, request, tmp_path / "r2.csv", allow_breach=True)
        report = audit(store, "ward", pairs=True)
    pair = report.pairs[0]
    assert pair.count("qi", "k-anonymity") == 12  # 2 candidates < k = 3 for every record
    worst = next(f for f in pair.findings if f.model == "k-anonymity" and f.adversary == "qi")
    assert worst.worst[0]["candidates_qi"] == 2
    # m-uniqueness promises values, not people: for the adversary who knows the QIs, 3
    # distinct values stay in every class
    assert pair.count("qi", "m-uniqueness") == 0
    # an adversary who could link rows across releases would see which rows persist (the
    # counterfeits are new each time) and keep only the real records' 2 values: m-invariance
    # does not claim to resist row linkage, and the audit says so rather than hide it
    assert pair.count("linkage", "m-uniqueness") == 12
    # ... labelled as outside the release's claimed threat model: shown, not counted as a
    # breach (the gate judges a release by the adversaries its threat model claims)
    for f in pair.findings:
        assert f.outside_claim == (f.adversary == "linkage"), f.describe()
    assert "[outside the claimed threat model]" in report.summary()
    # the breaches that count are the qi adversary's: k-anonymity's 2 people of 3 rows
    assert pair.records_breached == 12 and report.records_breached == 12


# -- a permuting method with an explicit group column ----------------------------------------


def permuted_groups(df: pd.DataFrame, request: PublishRequest,
                    context: PublishContext) -> Release:
    """(k,e)-style: groups of 3 consecutive incomes, QIs exact, incomes permuted within
    each group, the group published in a column ``group``."""
    schema = context.schema
    rng, seeded = privacy_rng(int(request.options.get("seed", 0)))  # type: ignore[arg-type]
    order = np.argsort(df["income"].to_numpy(), kind="stable")
    group = np.empty(len(df), dtype=np.int64)
    group[order] = np.arange(len(df)) // 3
    data = df[schema.released_columns].copy().reset_index(drop=True)
    income = data["income"].to_numpy().copy()
    for g in np.unique(group):
        members = np.flatnonzero(group == g)
        income[members] = income[rng.permutation(members)]
    data["income"] = income
    data["group"] = group
    return Release(data, group, pd.DataFrame(), [], {}, schema, "permuted-groups", {},
                   kind=ReleaseKind.PERMUTED, group_column="group",
                   models=[KEAnonymity(3, 1000)], seeded=seeded,
                   threat_model=ThreatModel.INCREMENTAL_KE)


register_engine("permuted-groups", permuted_groups, replace=True)


def salaries(n: int = 12) -> pd.DataFrame:
    df = people(np.arange(n)).drop(columns="disease")
    df["income"] = 20_000 + 1000 * np.arange(n)  # distinct, 1000 apart
    return df


def test_a_permuted_release_is_verified_and_audited_by_group(tmp_path: Path) -> None:
    df = salaries()
    request = PublishRequest(dataset="pay", key="pid", quasi_identifiers=["age", "zip"],
                             sensitive=["income"], method="permuted-groups")
    release = permuted_groups(df, request, _context(df, request))
    verify_release(release)
    # grouped by the exact QIs every row would be a class of one; grouped by group, 4 groups
    assert release.n_classes == 4 and release.passed
    assert list(release.classes.columns[:2]) == ["size", "group"]
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, df, request, tmp_path / "r1.csv")
        published = pd.read_csv(tmp_path / "r1.csv")
        assert sorted(published["income"]) == sorted(df["income"])
        # QIs published exactly (rows shuffled: compare as multisets of rows)
        assert sorted(map(tuple, published[["age", "zip"]].to_numpy().tolist())) == \
            sorted(map(tuple, df[["age", "zip"]].to_numpy().tolist()))
        info = store.latest("pay")
        assert info is not None and info.group_column == "group"
        assert info.release_kind == "permuted" and info.n_classes == 4
        # the same groups again: the linkage adversary links a person to their group, not
        # to a row's value, so nothing narrows below the group's 3 values
        publish(store, df, request, tmp_path / "r2.csv")
        report = audit(store, "pay", pairs=True)
    assert not report.breached
    # the command-line checker groups such a release by its group column when told to
    from click.testing import CliRunner

    from anonkit.cli import main

    check = ["check", str(tmp_path / "r1.csv"), "--qi", "age,zip", "--sensitive", "income",
             "--kind", "income=numeric", "--model", "ke=3,1000"]
    by_group = CliRunner().invoke(main, [*check, "--group", "group"])
    assert by_group.exit_code == 0, by_group.output
    assert "4 equivalence classes" in by_group.output
    by_qis = CliRunner().invoke(main, check)
    assert by_qis.exit_code == 2, by_qis.output  # exact QIs: every row a class of one


def test_a_permuted_release_that_breaks_its_model_by_group_is_refused() -> None:
    df = salaries(7)  # 7 rows: groups of 3, 3 and 1 -> the last group fails (k,e)
    request = PublishRequest(dataset="pay", key="pid", quasi_identifiers=["age", "zip"],
                             sensitive=["income"], method="permuted-groups")
    release = permuted_groups(df, request, _context(df, request))
    verify_release(release)
    assert not release.passed
    with pytest.raises(ModelNotMetError, match=r"\(k,e\)-anonymity"):
        release.require_passed()


# -- a synthetic method ----------------------------------------------------------------------


def synthetic_tuples(df: pd.DataFrame, request: PublishRequest,
                     context: PublishContext) -> Release:
    """Two made-up tuples standing for the table; verified by its own verdict."""
    schema = context.schema
    columns = list(schema.released_columns)
    if request.options.get("leak_key"):
        columns.append(request.key)
    data = df[columns].head(2).copy().reset_index(drop=True)
    data["age"] = [30, 40]
    verdict = Verdict("kb-anonymity (test)", {"k": 2}, True, 6.0, 2.0, 0, 6, 0, 2)
    return Release(data, np.array([0, 1]), pd.DataFrame({"size": [1, 1]}), [verdict], {},
                   schema, "synthetic-tuples", {}, kind=ReleaseKind.SYNTHETIC,
                   provenance=np.full(2, Provenance.SYNTHETIC, dtype=np.int8),
                   source_rows=np.full(2, -1))


register_engine("synthetic-tuples", synthetic_tuples, replace=True)


def test_a_synthetic_release_has_no_record_map(tmp_path: Path) -> None:
    df = ward()
    request = PublishRequest(dataset="qa", key="pid", quasi_identifiers=["age", "zip", "sex"],
                             sensitive=["disease"], method="synthetic-tuples")
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        info = publish(store, df, request, tmp_path / "r1.csv")
        view = store.load(info)
    assert info.release_kind == "synthetic" and info.n_released_rows == 2
    assert len(view.record_keys) == 0
    assert [v["model"] for v in info.verdicts] == ["kb-anonymity (test)"]


def test_the_boundary_refuses_identifiers_from_any_method(tmp_path: Path) -> None:
    df = ward()
    request = PublishRequest(dataset="qa", key="pid", quasi_identifiers=["age", "zip", "sex"],
                             sensitive=["disease"], method="synthetic-tuples",
                             options={"leak_key": True})
    with HistoryStore.open(tmp_path / "h.db", create=True) as store, \
            pytest.raises(InputError, match=r"identifier or key column.*'pid'"):
        publish(store, df, request, tmp_path / "r1.csv")
    assert not (tmp_path / "r1.csv").exists()
    release = synthetic_tuples(df, request, _context(df, request))
    with pytest.raises(InputError, match="'pid'"):
        write_release(release, tmp_path / "direct.csv", forbidden=["pid"])
    assert not (tmp_path / "direct.csv").exists()


def test_the_boundary_does_not_trust_the_methods_classes() -> None:
    df = ward()
    request = PublishRequest(dataset="ward", key="pid", quasi_identifiers=["age", "zip", "sex"],
                             sensitive=["disease"], method="with-counterfeits")
    release = with_counterfeits(df, request, _context(df, request))
    release.class_ids = np.zeros(len(release.data), dtype=np.int64)  # one big class: a lie
    verify_release(release)
    assert release.n_classes == 6 and set(np.bincount(release.class_ids)) == {3}


def _context(df: pd.DataFrame, request: PublishRequest) -> PublishContext:
    from anonkit.history.publish import _schema

    return PublishContext(request.dataset, 1, _schema(df, request), [], None)


def test_verdicts_and_the_history_number_classes_alike(tmp_path: Path) -> None:
    """``Verdict.worst_class`` and the history's class ids are one numbering: the
    verifier's (classes in order of first appearance in the release)."""
    df = people(np.arange(300))
    request = PublishRequest(dataset="census", key="pid",
                             quasi_identifiers=["age", "zip", "sex"], sensitive=["disease"],
                             options={"k": 4, "models": ["l=2"]})
    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        info = publish(store, df, request, tmp_path / "r.csv")
        view = store.load(info)
    released = pd.read_csv(tmp_path / "r.csv", dtype=str)
    for verdict in info.verdicts:
        worst = int(verdict["worst_class"])  # type: ignore[call-overload]
        assert view.sizes[worst] == verdict["worst_class_size"]
        labels = view.labels.iloc[worst].astype(str).tolist()
        rows = (released[["age", "zip", "sex"]] == labels).all(axis=1)
        assert rows.sum() == view.sizes[worst]
        # first appearance: the class's first row comes after the first rows of classes
        # with smaller numbers
        firsts = [int(np.argmax((released[["age", "zip", "sex"]] ==
                                 view.labels.iloc[c].astype(str).tolist()).all(axis=1)))
                  for c in range(worst + 1)]
        assert firsts == sorted(firsts)


def test_reports_and_metrics_work_from_any_release(tmp_path: Path) -> None:
    from anonkit.metrics import measure_classes
    from anonkit.report import render_report

    df = ward()
    request = PublishRequest(dataset="ward", key="pid", quasi_identifiers=["age", "zip", "sex"],
                             sensitive=["disease"], method="with-counterfeits")
    fake = with_counterfeits(df, request, _context(df, request))
    verify_release(fake)
    measure_classes(fake)  # a method that measured nothing gets the figures of its classes
    assert fake.metrics["n_rows"] == 18 and fake.metrics["prosecutor.max"] == 1 / 3
    page = render_report(fake, df, tmp_path / "fake.html").read_text()
    assert "generalized release" in page and "Counterfeit rows" in page
    assert "counterfeit rows included" in page and "<b>seeded</b>" in page

    pay = salaries()
    request = PublishRequest(dataset="pay", key="pid", quasi_identifiers=["age", "zip"],
                             sensitive=["income"], method="permuted-groups")
    permuted = permuted_groups(pay, request, _context(pay, request))
    verify_release(permuted)
    measure_classes(permuted)
    page = render_report(permuted, pay, tmp_path / "permuted.html").read_text()
    assert "permuted release" in page and "published group column group" in page
    assert "Group column" in page
