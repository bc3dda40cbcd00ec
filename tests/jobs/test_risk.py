"""``anonkit risk`` and ``anonkit.risk``: the figures on the shipped Adult sample equal ARX's
own test figures (TestRiskMetrics.java, all nine columns as quasi-identifiers), records at
risk are row numbers, never values, and bad input is one line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import anonkit
from anonkit.cli import main
from hostile.snapshots import snapshot

ADULT = Path(anonkit.__file__).parent / "datasets" / "data" / "adult.csv"
ALL = "sex,age,race,marital-status,education,native-country,workclass,occupation,salary-class"


def run(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def test_adult_at_one_percent_gives_arxs_population_uniqueness() -> None:
    code, output = run("risk", ADULT, "--qi", ALL, "--sampling-fraction", "0.01", "--json")
    assert code == 0, output
    found = json.loads(output)
    assert found["rows"] == 30162 and found["sample_uniques"] == 15512
    pitman = found["population_uniqueness"]["pitman"]
    assert pitman["share"] == pytest.approx(0.1446083531167384, abs=1e-9)  # ARX's figure
    assert found["population_uniqueness"]["dankar"]["model"] == "pitman"  # pi <= 0.1
    # SUDA2 on the same columns: every sample unique has an MSU once any size may be one
    code, output = run("risk", ADULT, "--qi", ALL, "--max-msu", "9", "--json")
    suda = json.loads(output)["suda2"]
    assert code == 0 and suda["special_uniques"] == found["sample_uniques"] == 15512
    assert all(isinstance(r, int) for r in suda["riskiest_rows"])
    code, output = run("risk", ADULT, "--qi", ALL, "--max-msu", "0", "--json")
    assert code == 0 and "suda2" not in json.loads(output)


def test_weights_give_individual_global_and_household_risk(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 200
    table = pd.DataFrame({"age": rng.integers(20, 30, n), "sex": rng.choice(["F", "M"], n),
                          "w": rng.uniform(1, 50, n).round(2),
                          "home": rng.integers(0, 80, n)})
    table.to_csv(tmp_path / "s.csv", index=False)
    before = snapshot(tmp_path)
    code, output = run("risk", tmp_path / "s.csv", "--qi", "age,sex", "--weight", "w",
                       "--household", "home", "--json")
    assert code == 0, output
    found = json.loads(output)
    direct = anonkit.risk(table.astype({"age": str}), "age,sex", weight="w",
                          household="home")
    assert direct.individual is not None and direct.household is not None
    assert found["individual_risk"]["expected_reidentifications"] == pytest.approx(
        direct.individual.expected_reidentifications)
    assert found["household_risk"]["global_risk"] >= found["individual_risk"]["global_risk"]
    assert all(isinstance(r, int) and 0 <= r < n
               for r in found["individual_risk"]["riskiest_rows"])
    assert snapshot(tmp_path) == before  # a measurement writes nothing


@pytest.mark.parametrize(("args", "fragment"), [
    (["--qi", "age,nope"], "unknown column 'nope' given as quasi-identifier"),
    (["--qi", "age", "--sampling-fraction", "1.5"], "sampling"),
    (["--qi", "age", "--household", "sex"], "--household needs --weight"),
    (["--qi", "age", "--weight", "sex"], "the weight column 'sex' must hold numbers"),
])
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], fragment: str) -> None:
    pd.DataFrame({"age": [1, 2, 2], "sex": ["F", "M", "F"]}).to_csv(tmp_path / "s.csv",
                                                                    index=False)
    code, output = run("risk", tmp_path / "s.csv", *args)
    lines = output.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), output
    assert fragment in output, output


def test_the_report_has_a_summary_first_every_measure_and_its_provenance(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    n = 120
    pd.DataFrame({"age": rng.integers(20, 40, n), "zip": rng.choice(["A1", "B2"], n),
                  "w": rng.uniform(1, 20, n).round(1)}).to_csv(tmp_path / "s.csv",
                                                             index=False)
    code, output = run("risk", tmp_path / "s.csv", "--qi", "age,zip", "--weight", "w",
                       "--sampling-fraction", "0.1", "--report", tmp_path / "r.html")
    assert code == 0, output
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    order = [page.index(f'id="{a}"') for a in ("summary", "population", "suda",
                                                "individual", "provenance")]
    assert order == sorted(order)
    assert hashlib.sha256((tmp_path / "s.csv").read_bytes()).hexdigest() in page
    assert "<td>command</td>" in page and "A1" not in page  # rows by number, never values
    assert (tmp_path / "r.html").stat().st_mode & 0o777 == 0o600
    before = snapshot(tmp_path)
    code, output = run("risk", tmp_path / "s.csv", "--qi", "age", "--report",
                       tmp_path / "s.csv")
    assert code == 2 and "the report" in output and "is the input" in output, output
    assert snapshot(tmp_path) == before
