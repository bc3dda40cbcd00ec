"""The public job API (:mod:`anonkit.jobs`): ``anonkit.anonymize`` and ``anonkit.History`` do
what the command line does, with the same checks and the same results."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import anonkit
from anonkit import jobs
from anonkit.cli import main
from anonkit.datasets import census_versions, make_census
from anonkit.errors import InputError
from anonkit.verify import write_release

COLUMNS = ["id", "age", "sex", "zip", "hours-per-week", "disease", "salary"]
ROLES = {"quasi_identifiers": ["age", "sex", "zip"], "sensitive": ["disease"],
         "identifiers": ["id"], "insensitive": "*"}
ORDERED = {"quasi_identifiers": ["age", "hours-per-week"], "sensitive": ["disease"],
           "identifiers": ["id"], "insensitive": "*"}

#: (method, roles, Python options, the same options on the command line): every one-shot
#: method, seeded where it draws at random
ONE_SHOT = [
    ("mondrian", ROLES, {"k": 5, "t": 0.4, "strategy": "random", "seed": 3},
     ["-k", "5", "-t", "0.4", "--strategy", "random", "--seed", "3"]),
    ("mondrian", ROLES, {"k": 4, "l": 2, "models": ["entropy-l=1.5"]},
     ["-k", "4", "-l", "2", "--model", "entropy-l=1.5"]),
    ("huffman", ROLES, {"k": 5}, ["-k", "5"]),
    ("alphabetic", ORDERED, {"k": 5, "summary": "histogram"},
     ["-k", "5", "--summary", "histogram"]),
    ("alphabetic", ORDERED, {"k": 4, "tree": "halving", "l": 2},
     ["-k", "4", "--tree", "halving", "-l", "2"]),
    ("randomized", ORDERED, {"threshold": 0, "accept_heuristic": True, "seed": 3},
     ["--threshold", "0", "--accept-heuristic", "--seed", "3"]),
    ("stream-tree", {"quasi_identifiers": ["age"], "sensitive": ["disease"],
                     "identifiers": ["id"], "insensitive": "*"}, {"k": 5}, ["-k", "5"]),
    ("ke", {"quasi_identifiers": ["age", "zip"], "sensitive": ["salary"],
            "identifiers": ["id"], "drop": ["disease"], "insensitive": "*"},
     {"k": 4, "e": 2000, "seed": 3}, ["-k", "4", "-e", "2000", "--seed", "3"]),
]


def _cli_roles(roles: dict[str, object]) -> list[str]:
    flags = {"quasi_identifiers": "--qi", "sensitive": "--sensitive", "identifiers": "--id",
             "insensitive": "--insensitive", "drop": "--drop"}
    out: list[str] = []
    for name, columns in roles.items():
        out += [flags[name], columns if isinstance(columns, str) else ",".join(columns)]
    return out


@pytest.fixture(scope="module")
def census(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("census") / "census.csv"
    make_census(400, seed=7).data[COLUMNS].to_csv(path, index=False)
    return path


@pytest.mark.parametrize(("method", "roles", "options", "flags"), ONE_SHOT,
                         ids=[f"{m}-{i}" for i, (m, *_) in enumerate(ONE_SHOT)])
@pytest.mark.filterwarnings("ignore::anonkit.errors.NoInformationWarning")  # (a wide k)
def test_anonymize_equals_the_command_line(census: Path, tmp_path: Path, method: str,
                                           roles: dict[str, object],
                                           options: dict[str, object],
                                           flags: list[str]) -> None:
    by_cli = tmp_path / "cli.csv"
    done = CliRunner().invoke(main, ["anonymize", str(census), "-o", str(by_cli), "--json",
                                     "--method", method, *_cli_roles(roles), *flags])
    assert done.exit_code == 0, done.output
    answer = json.loads(done.stdout)  # (a warning, e.g. no information left, goes to stderr)

    df = anonkit.read_table(census)
    release = anonkit.anonymize(df, method, **roles, **options)  # type: ignore[arg-type]
    by_python = tmp_path / "python.csv"
    write_release(release, by_python, accept_heuristic=True)

    assert by_python.read_bytes() == by_cli.read_bytes()
    verdicts = json.loads(json.dumps([v.to_dict() for v in release.verdicts], default=str))
    assert verdicts == answer["verdicts"]
    assert release.passed and answer["passed"]


@pytest.mark.parametrize(("method", "options", "flags"), [
    ("mondrian", {"k": 0}, ["-k", "0"]),
    ("mondrian", {"k": 5, "l": 0}, ["-k", "5", "-l", "0"]),
    ("mondrian", {"k": 5, "strategy": "tallest"}, ["-k", "5", "--strategy", "tallest"]),
    ("mondrian", {"k": 5, "models": ["l=two"]}, ["-k", "5", "--model", "l=two"]),
    ("huffman", {"k": 5, "summary": "mean"}, ["-k", "5", "--summary", "mean"]),
    ("alphabetic", {"k": 5, "tree": "binary"}, ["-k", "5", "--tree", "binary"]),
    ("ke", {"k": 0, "e": 10}, ["-k", "0", "-e", "10"]),
    ("stream-tree", {"k": 5, "domain": "9,1"}, ["-k", "5", "--domain", "9,1"]),
])
def test_bad_options_are_refused_with_the_command_lines_message(
        census: Path, tmp_path: Path, method: str, options: dict[str, object],
        flags: list[str]) -> None:
    done = CliRunner().invoke(main, ["anonymize", str(census), "-o", str(tmp_path / "o.csv"),
                                     "--method", method, *_cli_roles(ROLES), *flags])
    assert done.exit_code == 2, done.output
    message = done.output.strip().removeprefix("error: ")
    with pytest.raises(InputError) as refused:
        anonkit.anonymize(anonkit.read_table(census), method, **ROLES,  # type: ignore[arg-type]
                          **options)
    assert str(refused.value) == message


def test_an_option_the_method_does_not_take_is_named_as_python_names_it(census: Path) -> None:
    with pytest.raises(InputError, match=r"method 'huffman' has no option 'seed' \(methods "
                                         r"'mondrian', .* and .* take it\); its options are: "
                                         r"k, l, summary"):
        anonkit.anonymize(anonkit.read_table(census), "huffman", **ROLES,  # type: ignore[arg-type]
                          k=5, seed=3)


def test_every_column_needs_a_role(census: Path) -> None:
    df = anonkit.read_table(census)
    with pytest.raises(InputError, match="with no role: hours-per-week, salary"):
        anonkit.anonymize(df, quasi_identifiers=["age"], sensitive="disease",
                          identifiers=["id"], insensitive=["sex", "zip"], k=5)
    with pytest.raises(InputError, match="two roles"):
        anonkit.anonymize(df, quasi_identifiers=["age"], drop=["age"], insensitive="*", k=5)
    release = anonkit.anonymize(df, quasi_identifiers=["age"], sensitive="disease",
                                identifiers=["id"], drop=["sex", "zip"], insensitive="*", k=5)
    assert list(release.data.columns) == ["age", "hours-per-week", "disease", "salary"]


def test_a_sequential_only_method_is_published_through_a_history(census: Path) -> None:
    with pytest.raises(InputError, match=r"History\(\.\.\.\)\.publish"):
        anonkit.anonymize(anonkit.read_table(census), "m-invariance", **ROLES, m=3)


def _secret(path: Path) -> Path:
    """A fixed history secret, kept outside the history's folder as in production."""
    path.parent.mkdir(exist_ok=True)
    path.write_text(hashlib.sha256(b"jobs").hexdigest() + "\n")
    path.chmod(0o600)
    return path


def test_history_publishes_lists_shows_and_audits(tmp_path: Path) -> None:
    versions = census_versions(300, 2, 0.1, seed=7)
    secret = _secret(tmp_path / "keys" / "h.secret")
    with anonkit.History(tmp_path / "h.db", secret_file=secret) as history:
        first = history.publish(versions[0][COLUMNS], dataset="census", key="id",
                                output=tmp_path / "r1.csv", quasi_identifiers=["age", "sex"],
                                sensitive=["disease"], insensitive="*", k=5, seed=1)
        assert first.seq == 1 and first.method == "mondrian"
        assert [i.seq for i in history.releases()] == [1]
        assert history.release("census", 1).content_hash == first.content_hash
        shown = history.details("census", 1)
        assert shown.view.sizes.sum() == 300 and shown.auxiliary == []
        report = history.audit("census")
        assert report.releases == [1] and not report.breached
        assert history.lineage_notes("census") == []
    assert "id" not in pd.read_csv(tmp_path / "r1.csv").columns
    # read-only, as list, show and audit open it
    with anonkit.History(tmp_path / "h.db", secret_file=secret, read_only=True) as history:
        assert [i.dataset for i in history.releases("census")] == ["census"]
    with anonkit.History(tmp_path / "h.db", secret_file=secret, create=False) as history:
        assert history.recover() == jobs.Recovery(sealed=None, recovered=[], pending=[])


def test_history_refuses_a_column_without_a_role(tmp_path: Path) -> None:
    df = census_versions(100, 1, 0.0, seed=7)[0][COLUMNS]
    secret = _secret(tmp_path / "keys" / "h.secret")
    with anonkit.History(tmp_path / "h.db", secret_file=secret) as history, \
            pytest.raises(InputError, match="with no role: hours-per-week, salary"):
        history.publish(df, dataset="census", key="id", output=tmp_path / "r.csv",
                        quasi_identifiers=["age", "sex", "zip"], sensitive="disease", k=5)
    with anonkit.History(tmp_path / "h.db", secret_file=secret) as history, \
            pytest.raises(InputError, match="whole number >= 1"):
        history.publish(df, dataset="census", key="id", output=tmp_path / "r.csv",
                        quasi_identifiers=["age"], insensitive="*", k=0)


def test_m_invariance_through_history_equals_the_command_line(tmp_path: Path) -> None:
    versions = census_versions(300, 2, 0.1, seed=7)
    secret = _secret(tmp_path / "keys" / "h.secret")
    infos = []
    with anonkit.History(tmp_path / "py.db", secret_file=secret) as history:
        for n, frame in enumerate(versions, 1):
            infos.append(history.publish(
                frame, dataset="census", key="id", output=tmp_path / f"py{n}.csv",
                method="m-invariance", quasi_identifiers=["age", "zip"],
                sensitive=["disease"], insensitive="*", m=3, seed=5))
        assert [i.seq for i in history.releases("census")] == [1, 2]
        assert not history.audit("census").breached
    for n, frame in enumerate(versions, 1):
        source = tmp_path / f"v{n}.csv"
        frame.to_csv(source, index=False)
        done = CliRunner().invoke(main, [
            "release", "publish", str(source), "--dataset", "census", "--key", "id",
            "--history", str(tmp_path / "cli.db"), "--secret-file", str(secret),
            "-o", str(tmp_path / f"cli{n}.csv"), "--method", "m-invariance", "-m", "3",
            "--qi", "age,zip", "--sensitive", "disease", "--insensitive", "*",
            "--seed", "5", "--json"])
        assert done.exit_code == 0, done.output
        assert json.loads(done.output)["content_hash"] == infos[n - 1].content_hash
        assert (tmp_path / f"cli{n}.csv").read_bytes() == \
            (tmp_path / f"py{n}.csv").read_bytes()


def test_history_warns_through_the_callers_function(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from anonkit.history import secret as secret_module

    monkeypatch.setattr(secret_module, "_warned_beside", False)  # (once per process)
    told: list[str] = []
    df = census_versions(100, 1, 0.0, seed=7)[0][COLUMNS]
    with anonkit.History(tmp_path / "h.db", warn=told.append) as history:
        history.publish(df, dataset="census", key="id", output=tmp_path / "r.csv",
                        quasi_identifiers=["age"], insensitive="*", k=5)
    assert any("lies in the folder of the history" in line for line in told)
    monkeypatch.setattr(secret_module, "_warned_beside", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jobs.History(tmp_path / "h.db", read_only=True).close()
    assert caught == []  # once per history: when it was created


def test_the_package_exports_the_api() -> None:
    assert anonkit.anonymize is jobs.anonymize
    assert anonkit.History is jobs.History
    from anonkit.checker import check

    assert anonkit.check is check
    from anonkit.methods.mondrian import Mondrian

    assert anonkit.Mondrian is Mondrian


def test_a_non_numeric_sensitive_column_is_refused_without_showing_its_values() -> None:
    df = pd.DataFrame({"age": range(20), "diagnosis": ["secret-hiv"] * 10 + ["flu"] * 10})
    with pytest.raises(InputError) as refused:
        jobs.anonymize(df, "ke", quasi_identifiers=["age"], sensitive="diagnosis", k=2, e=1)
    message = str(refused.value)
    assert "'diagnosis' is text" in message and "secret-hiv" not in message and "flu" not in message
