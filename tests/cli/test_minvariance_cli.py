"""``anonkit release publish --method m-invariance`` on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner

from anonkit.cli import main
from history_helpers import people


def publish_args(table: Path, output: Path, history: Path, *extra: str) -> list[str]:
    return ["release", "publish", str(table), "--dataset", "ward", "--key", "pid",
            "--method", "m-invariance", "-m", "4", "--qi", "age,zip,sex",
            "--sensitive", "disease", "--insensitive", "income", "--seed", "3",
            "-o", str(output), "--history", str(history), *extra]


def test_cli_publishes_an_m_invariant_sequence(tmp_path: Path) -> None:
    runner = CliRunner()
    history = tmp_path / "h.db"
    hierarchy = tmp_path / "sex.csv"
    hierarchy.write_text("F;*\nM;*\n")
    for n, ids in enumerate((np.arange(150), np.arange(40, 170))):
        table = tmp_path / f"in{n}.csv"
        people(ids).to_csv(table, index=False)
        result = runner.invoke(main, publish_args(table, tmp_path / f"r{n}.csv", history,
                                                  "--hierarchy", f"sex={hierarchy}"))
        assert result.exit_code == 0, result.output
        assert "PASS m-uniqueness" in result.output
        assert "COUNT query error" in result.output
        assert (tmp_path / f"r{n}.counterfeits.csv").exists()
    released = pd.read_csv(tmp_path / "r1.csv")
    aux = pd.read_csv(tmp_path / "r1.counterfeits.csv")
    assert len(released) == 130 + int(aux["counterfeits"].sum())
    assert "counterfeit rows:" in result.output
    assert "pid" not in released.columns
    audited = runner.invoke(main, ["release", "audit", "--dataset", "ward", "--history",
                                        str(history)])
    assert audited.exit_code == 0, audited.output
    assert "outside the claimed threat model" in audited.output


def test_cli_json_reports_the_utility(tmp_path: Path) -> None:
    table = tmp_path / "in.csv"
    people(np.arange(120)).to_csv(table, index=False)
    result = CliRunner().invoke(main, publish_args(table, tmp_path / "r.csv",
                                                   tmp_path / "h.db", "--json"))
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["method"] == "m-invariance" and out["threat_model"] == "m-invariance"
    assert 0 <= out["metrics"]["count_query.relative_error"] < 10
    assert out["metrics"]["m_invariance.counterfeits"] == 0


def test_cli_infeasible_m_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    df = people(np.arange(40))
    others = np.array(["asthma", "cancer", "hiv", "covid"], dtype=object)[np.arange(40) % 4]
    df["disease"] = np.where(np.arange(40) < 20, "flu", others)  # half are flu
    table = tmp_path / "in.csv"
    df.to_csv(table, index=False)
    result = CliRunner().invoke(main, publish_args(table, tmp_path / "r.csv",
                                                   tmp_path / "h.db"))
    assert result.exit_code == 2, result.output
    assert "most frequent sensitive value is 20 of 40 rows (50.0%)" in result.output
    assert "flu" not in result.output
    assert "largest feasible m is 2" in result.output
    assert not (tmp_path / "r.csv").exists()
    assert not (tmp_path / "r.counterfeits.csv").exists()


def test_cli_refuses_a_wrong_m(tmp_path: Path) -> None:
    table = tmp_path / "in.csv"
    people(np.arange(40)).to_csv(table, index=False)
    args = publish_args(table, tmp_path / "r.csv", tmp_path / "h.db")
    args[args.index("-m") + 1] = "4.5"
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "m must be a whole number >= 2" in result.output


def test_published_releases_pass_pycanon(tmp_path: Path) -> None:
    """An independent checker on the published files, grouped by released labels as an
    adversary groups them: m-uniqueness implies at least m rows and m distinct sensitive
    values per class (pycanon's k-anonymity and l-diversity), and no value above 1/m of a
    class (its largest share, counted here from the file alone)."""
    from pycanon import anonymity

    runner = CliRunner()
    history = tmp_path / "h.db"
    for n, ids in enumerate((np.arange(200), np.arange(30, 230), np.arange(60, 250))):
        table = tmp_path / f"in{n}.csv"
        people(ids).to_csv(table, index=False)
        result = runner.invoke(main, publish_args(table, tmp_path / f"r{n}.csv", history))
        assert result.exit_code == 0, result.output
        released = pd.read_csv(tmp_path / f"r{n}.csv", dtype=str)
        qis = ["age", "zip", "sex"]
        assert anonymity.k_anonymity(released, qis) >= 4
        assert anonymity.l_diversity(released, qis, ["disease"]) >= 4
        shares = released.groupby(qis)["disease"].agg(
            lambda s: s.value_counts().max() / len(s))
        assert (shares <= 1 / 4).all()


def test_check_m_is_the_papers_m_uniqueness(tmp_path: Path) -> None:
    """Issue 27, item 3: a class of six rows holding three values twice each bounds every
    share by 1/3, but it is not 3-unique (Xiao & Tao, Definition 3: m rows, all different
    values). ``check --model m=3`` fails it, and passes a class of three distinct values."""
    twice = tmp_path / "twice.csv"
    twice.write_text("q,s\n" + "".join(f"a,{v}\n" for v in "xyzxyz"), encoding="utf-8")
    result = CliRunner().invoke(main, ["check", str(twice), "--qi", "q", "--sensitive", "s",
                                       "--model", "m=3"])
    assert result.exit_code == 2 and "FAIL m-uniqueness (m=3)" in result.output, \
        result.output
    once = tmp_path / "once.csv"
    once.write_text("q,s\na,x\na,y\na,z\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["check", str(once), "--qi", "q", "--sensitive", "s",
                                       "--model", "m=3"])
    assert result.exit_code == 0 and "PASS m-uniqueness (m=3)" in result.output, \
        result.output
