"""``anonkit release``: publish, list, show, audit, and every bad input's exit code 2."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import click
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner, Result

from anonkit.cli.release import release
from anonkit.history.store import HistoryStore
from history_helpers import churned_versions, history_state, people

if TYPE_CHECKING:
    from pg_fixtures import HistoryTarget

pytest_plugins = ["pg_fixtures"]


def run(target: HistoryTarget | None, *args: str, env: dict[str, str] | None = None) -> Result:
    history = target.cli_args() if target is not None else []
    return CliRunner().invoke(release, [*args, *history], env=env, catch_exceptions=False)


def publish_args(path: Path, out: Path, *extra: str) -> list[str]:
    return ["publish", "--insensitive", "*",
            str(path), "--dataset", "census", "--key", "pid", "--method",
            "sorted-chunks", "--qi", "age,zip,sex", "--sensitive", "disease", "-k", "5",
            "-o", str(out), *extra]


def naive_publish_args(path: Path, out: Path, *extra: str) -> list[str]:
    """A one-shot method re-run on a new version: recorded only with --allow-breach."""
    return publish_args(path, out, "--allow-breach", *extra)


def write(df: pd.DataFrame, path: Path) -> Path:
    df.to_csv(path, index=False)
    return path


def state(target: HistoryTarget) -> list[tuple[object, ...]]:
    with HistoryStore.open(target.url, secret_file=target.secret_file) as store:
        out = history_state(store)
    if target.backend == "sqlite":
        out.append(("file", hashlib.sha256(Path(target.url).read_bytes()).hexdigest()))
    return out


def test_publish_list_show_audit(history: HistoryTarget, tmp_path: Path) -> None:
    versions = churned_versions(300, 2, churn=0.1, seed=2)
    first = run(history, *publish_args(write(versions[0], tmp_path / "v1.csv"),
                                       tmp_path / "r1.csv"))
    assert first.exit_code == 0, first.output
    assert "published release 1 of 'census': 300 rows in 60 classes" in first.output
    assert "PASS k-anonymity" in first.output
    assert "pid" not in pd.read_csv(tmp_path / "r1.csv").columns

    alone = run(history, "audit", "--dataset", "census")
    assert alone.exit_code == 0, alone.output
    assert "no breach found" in alone.output

    second = run(history, *naive_publish_args(write(versions[1], tmp_path / "v2.csv"),
                                        tmp_path / "r2.csv"))
    assert second.exit_code == 0, second.output

    listing = run(history, "list", "--verify")
    assert listing.exit_code == 0
    lines = listing.output.splitlines()
    assert lines[0].split()[:2] == ["dataset", "seq"]
    assert [line.split()[:2] for line in lines[1:]] == [["census", "1"], ["census", "2"]]
    assert all(line.rstrip().endswith("ok") for line in lines[1:])
    as_json = json.loads(run(history, "list", "--json", "--dataset", "census").output)
    assert [r["seq"] for r in as_json] == [1, 2] and as_json[0]["key_column"] == "pid"

    shown = run(history, "show", "census", "2", "--classes", "3")
    assert shown.exit_code == 0, shown.output
    assert "release 2 of 'census'" in shown.output
    assert f"{tmp_path / 'r2.csv'} (ok)" in shown.output
    assert "first 3 classes" in shown.output
    detail = json.loads(run(history, "show", "census", "1", "--json").output)
    assert detail["file_status"] == "ok" and detail["n_classes"] == 60
    assert len(detail["classes"]) == 10 and detail["class_sizes"]["min"] == 5

    report = tmp_path / "audit.html"
    audited = run(history, "audit", "--dataset", "census", "--report", str(report))
    assert audited.exit_code == 3, audited.output
    assert "records breached" in audited.output
    assert report.read_text().count("data:image/png;base64,") == 1  # breaches per release
    findings = json.loads(run(history, "audit", "--dataset", "census", "--json").output)
    assert findings["breached"] is True and findings["pairs"] == []
    assert set(findings["all_releases"]["by_release"]) == {"1", "2"}
    paired = json.loads(run(history, "audit", "--dataset", "census", "--json",
                            "--pairs").output)
    assert paired["pairs"][0]["releases"] == [1, 2]
    assert paired["records_breached"] == findings["records_breached"]
    focused = run(history, "audit", "--dataset", "census", "--release", "9")
    assert focused.exit_code == 2 and "no release 9" in focused.output

    before = state(history)
    # a third version: its changes expose more records (the breaches recorded with
    # release 2 were accepted by its override; new ones are refused again)
    third = churned_versions(300, 3, churn=0.1, seed=2)[2]
    refused = run(history, *publish_args(write(third, tmp_path / "v3.csv"),
                                         tmp_path / "r3.csv"))
    assert refused.exit_code == 3, refused.output
    assert "release 3 of 'census' refused" in refused.output
    assert not (tmp_path / "r3.csv").exists() and state(history) == before


def test_audit_exits_zero_without_breach(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    df = write(people(np.arange(500)), tmp_path / "v.csv")
    for n in (1, 2):
        result = CliRunner().invoke(release, [*publish_args(df, tmp_path / f"r{n}.csv"),
                                              "--history", str(db)])
        assert result.exit_code == 0, result.output
    result = CliRunner().invoke(release, ["audit", "--dataset", "census", "--history", str(db),
                                          "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["breached"] is False


def test_the_history_defaults_to_the_environment(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "from-env.db"
    monkeypatch.setenv("ANONKIT_HISTORY", str(db))
    df = write(people(np.arange(40)), tmp_path / "v.csv")
    assert run(None, *publish_args(df, tmp_path / "r.csv")).exit_code == 0
    assert db.exists() and (tmp_path / "from-env.db.secret").exists()
    assert "census" in run(None, "list").output


def test_the_group_works_inside_a_parent_command(tmp_path: Path) -> None:
    @click.group()
    def main() -> None:
        pass

    main.add_command(release)
    df = write(people(np.arange(40)), tmp_path / "v.csv")
    db = str(tmp_path / "h.db")
    result = CliRunner().invoke(main, ["release", *publish_args(df, tmp_path / "r.csv"),
                                       "--history", db])
    assert result.exit_code == 0, result.output
    assert "census" in CliRunner().invoke(main, ["release", "list", "--history", db]).output


# -- bad input: exit 2, the history unchanged ----------------------------------------------


@pytest.fixture
def published(history: HistoryTarget, tmp_path: Path) -> HistoryTarget:
    df = write(people(np.arange(60)), tmp_path / "v1.csv")
    result = run(history, *publish_args(df, tmp_path / "r1.csv"))
    assert result.exit_code == 0, result.output
    return history


def test_unknown_dataset_or_release(published: HistoryTarget) -> None:
    before = state(published)
    for args in (["show", "nope", "1"], ["audit", "--dataset", "nope"],
                 ["list", "--dataset", "nope"]):
        result = run(published, *args)
        assert result.exit_code == 2, args
        assert "unknown dataset 'nope'" in result.output and "'census'" in result.output
    result = run(published, "show", "census", "5")
    assert result.exit_code == 2 and "no release 5" in result.output
    assert state(published) == before


def test_bad_key_columns_name_the_rows(published: HistoryTarget, tmp_path: Path) -> None:
    before = state(published)
    df = people(np.arange(60))
    dup = df.copy()
    dup.loc[[4, 9], "pid"] = dup.loc[2, "pid"]
    result = run(published, *publish_args(write(dup, tmp_path / "dup.csv"), tmp_path / "o.csv"))
    assert result.exit_code == 2
    assert "key column 'pid' has duplicate values, 1 repeated (rows 2, 4, 9: each group of " \
        "rows holds one value)" in result.output
    assert "P2" not in result.output  # a key names a person: never in a message
    missing = df.copy()
    missing.loc[7, "pid"] = None
    result = run(published, *publish_args(write(missing, tmp_path / "miss.csv"),
                                           tmp_path / "o.csv"))
    assert result.exit_code == 2
    assert "key column 'pid' has 1 missing values, in rows 7" in result.output
    args = publish_args(write(df, tmp_path / "v.csv"), tmp_path / "o.csv")
    args[args.index("pid")] = "nope"
    result = run(published, *args)
    assert result.exit_code == 2 and "key column 'nope' is not in the table" in result.output
    assert not (tmp_path / "o.csv").exists()
    assert state(published) == before


def test_changed_columns_or_roles(published: HistoryTarget, tmp_path: Path) -> None:
    before = state(published)
    df = people(np.arange(60))
    extra = write(df.assign(height=170), tmp_path / "extra.csv")
    result = run(published, *publish_args(extra, tmp_path / "o.csv"))
    assert result.exit_code == 2 and "new columns 'height'" in result.output
    same = write(df, tmp_path / "same.csv")
    result = run(published, *publish_args(same, tmp_path / "o.csv", "--sensitive", "income"))
    assert result.exit_code == 2
    assert "column 'disease' is insensitive/- (was sensitive/categorical)" in result.output
    assert not (tmp_path / "o.csv").exists()
    assert state(published) == before


def test_not_a_history_and_wrong_secret(published: HistoryTarget, tmp_path: Path) -> None:
    before = state(published)
    csv = write(people(np.arange(10)), tmp_path / "table.csv")
    digest = hashlib.sha256(csv.read_bytes()).hexdigest()
    for args in (["list"], publish_args(csv, tmp_path / "o.csv")):
        result = CliRunner().invoke(release, [*args, "--history", str(csv)])
        assert result.exit_code == 2 and "not an anonkit history" in result.output
    assert hashlib.sha256(csv.read_bytes()).hexdigest() == digest
    wrong = tmp_path / "wrong.secret"
    wrong.write_text(hashlib.sha256(b"another secret").hexdigest())  # strong, but not its
    wrong.chmod(0o600)
    for args in (["list"], ["audit", "--dataset", "census"],
                 publish_args(csv, tmp_path / "o.csv")):
        result = CliRunner().invoke(release, [*args, "--history", published.url,
                                              "--secret-file", str(wrong)])
        assert result.exit_code == 2 and "wrong secret" in result.output, args
    result = CliRunner().invoke(release, ["list", "--history", str(tmp_path / "none.db")])
    assert result.exit_code == 2 and "no release history" in result.output
    assert not (tmp_path / "o.csv").exists()
    assert state(published) == before


def test_the_anonkit_command_runs_the_release_group(tmp_path: Path) -> None:
    from anonkit.cli import main

    db = str(tmp_path / "h.db")
    versions = churned_versions(200, 2, churn=0.2, seed=8)
    for n, df in enumerate(versions):
        result = CliRunner().invoke(main, ["release", *naive_publish_args(
            write(df, tmp_path / f"v{n}.csv"), tmp_path / f"r{n}.csv"), "--history", db])
        assert result.exit_code == 0, result.output
    assert CliRunner().invoke(main, ["release", "audit", "--dataset", "census",
                                     "--history", db]).exit_code == 3
    unknown = CliRunner().invoke(main, ["release", "show", "nope", "1", "--history", db])
    assert unknown.exit_code == 2 and "unknown dataset 'nope'" in unknown.output


def test_publish_takes_a_job_file_and_ordinal_orders(tmp_path: Path) -> None:
    """``release publish --config`` reads the anonymize job's keys plus dataset and key
    (here in a [publish] table), the command line overrides it, and an ordinal column's
    order comes from the file or from --order, as for anonymize."""
    df = people(np.arange(120))
    df["grade"] = np.array(["low", "mid", "high"], dtype=object)[np.arange(120) % 3]
    src = write(df, tmp_path / "v1.csv")
    job = tmp_path / "job.toml"
    job.write_text(
        '[publish]\ninput = "v1.csv"\noutput = "r1.csv"\ndataset = "census"\nkey = "pid"\n'
        'quasi_identifiers = ["age", "grade"]\nsensitive = ["disease"]\n'
        'insensitive = "*"\nk = 5\n[publish.orders]\ngrade = ["low", "mid", "high"]\n')
    history = ["--history", str(tmp_path / "h.db")]
    done = run(None, "publish", "--config", str(job), *history)
    assert done.exit_code == 0, done.output
    released = pd.read_csv(tmp_path / "r1.csv")
    # ranges follow the declared order: "[low-mid]", never the alphabetical "[high-low]"
    assert not released["grade"].str.contains(r"\[high", regex=True).any()
    assert "pid" not in released.columns
    # the command line overrides the file: another output, -k 10, the order given as --order
    again = run(None, "publish", "--config", str(job), "-o", str(tmp_path / "r2.csv"), "-k",
                "10", "--order", "grade=low,mid,high", "--allow-breach", *history)
    assert again.exit_code == 0, again.output
    assert "PASS k-anonymity (k=10)" in again.output
    # a job file's wrong type is refused, naming the key
    job.write_text('[publish]\ndataset = 3\n')
    bad = run(None, "publish", "--config", str(job), str(src), "--key", "pid", "--qi", "age",
              "-o", str(tmp_path / "r3.csv"), *history)
    assert bad.exit_code == 2 and "dataset must be text" in bad.output
    assert not (tmp_path / "r3.csv").exists()


def test_the_audit_report_never_overwrites_what_the_history_holds(tmp_path: Path) -> None:
    """``audit --report`` naming the history, its secret or a recorded release is refused
    (exit 2, one line), and nothing changes."""
    versions = churned_versions(100, 1, churn=0.1, seed=2)
    args = ["--history", str(tmp_path / "h.db"), "--secret-file", str(tmp_path / "h.secret")]
    published = CliRunner().invoke(release, [*publish_args(write(versions[0], tmp_path / "v1.csv"),
                                                           tmp_path / "r1.csv"), *args])
    assert published.exit_code == 0, published.output
    for target, what in (("h.db", "the history"), ("h.secret", "the history's secret"),
                         ("r1.csv", "the file of")):
        before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
        refused = CliRunner().invoke(release, ["audit", "--dataset", "census", "--report",
                                               str(tmp_path / target), *args])
        assert refused.exit_code == 2, refused.output
        assert "the report " in refused.output and "so nothing was written" in refused.output
        assert what in refused.output
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


def test_a_heuristic_release_is_published_when_accepted(tmp_path: Path) -> None:
    """``--accept-heuristic``, an option of the ``randomized`` method, reaches the publishing
    boundary: without it the release is refused and nothing is written; with it, it is."""
    df = people(np.arange(300))
    path = write(df, tmp_path / "r.csv")
    out = tmp_path / "out.csv"
    args = ["publish", str(path), "--dataset", "d", "--key", "pid", "--method", "randomized",
            "--qi", "age", "--sensitive", "disease", "--insensitive", "*",
            "--threshold", "0", "-o", str(out), "--history", str(tmp_path / "h.db")]
    refused = run(None, *args)
    assert refused.exit_code != 0 and "--accept-heuristic" in refused.output, refused.output
    assert not out.exists()
    accepted = run(None, *args, "--accept-heuristic")
    assert accepted.exit_code == 0, accepted.output
    assert out.exists()
