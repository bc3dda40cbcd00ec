"""Every example of the README runs as written: each ``anonkit`` command of its shell blocks
and each Python block outside "Use it from Python" (that section has tests/test_readme.py),
in document order, in one folder holding the files the examples name.

The files are made here from the bundled Adult sample and the synthetic census (the raw
Adult file and Basic_Mondrian's hierarchies are in tests/fixtures/readme, see SOURCES.md);
the job file is the README's own TOML block. A command must exit 0: an example that needs a
file nobody has, or a flag that does not exist, fails here first.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sqlite3
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

README = Path(__file__).resolve().parents[1] / "README.md"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
#: the section whose Python blocks tests/test_readme.py runs, each in a folder of its own
PYTHON_SECTION = "## Use it from Python"


@dataclass(frozen=True)
class Block:
    line: int  # the README line of the opening fence
    language: str
    text: str


def readme_blocks() -> list[Block]:
    blocks: list[Block] = []
    lines = README.read_text().splitlines()
    section = ""
    at = 0
    while at < len(lines):
        line = lines[at]
        if line.startswith("## "):
            section = line
        fence = re.match(r"^```(\w*)\s*$", line)
        if fence is None:
            at += 1
            continue
        end = next(i for i in range(at + 1, len(lines)) if lines[i].startswith("```"))
        language = fence.group(1)
        if not (language == "python" and section == PYTHON_SECTION):
            blocks.append(Block(at + 1, language, "\n".join(lines[at + 1:end]) + "\n"))
        at = end + 1
    return blocks


def commands(block: Block) -> list[list[str]]:
    """The ``anonkit`` commands of a shell block, continuation lines joined, comments off."""
    joined = block.text.replace("\\\n", " ")
    found = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            found.append(words)
    return found


def test_every_shell_block_is_made_of_anonkit_commands() -> None:
    shell = [b for b in readme_blocks() if b.language in ("", "sh", "bash")]
    assert len(shell) >= 8
    for block in shell:
        for words in commands(block):
            if words[0] in ("make", "python", "pip"):  # the setup lines at the top
                continue
            assert words[0] == "anonkit", f"README line {block.line}: {' '.join(words)}"
            assert "..." not in words, f"README line {block.line}: a placeholder"


# -- the folder the examples run in -------------------------------------------------------


def _census_part(frame: pd.DataFrame, key: str, sensitive: str) -> pd.DataFrame:
    return frame[["id", "age", "zip", "sex", "disease"]].rename(
        columns={"id": key, "disease": sensitive})


def _zip_hierarchy(zips: pd.Series) -> str:
    values = sorted(set(zips.astype(str)))
    return "".join(f"{z};{z[:3]}**;{z[:1]}****;*\n" for z in values)


def make_workspace(folder: Path) -> None:
    from anonkit.datasets import census_versions, make_census

    data = Path(__import__("anonkit.datasets", fromlist=["x"]).__file__).parent / "data"
    shutil.copy(data / "adult.csv", folder / "adult.csv")
    shutil.copy(data / "adult_hierarchy_education.csv", folder / "edu.csv")
    (folder / "hierarchies").mkdir()
    shutil.copy(data / "adult_hierarchy_education.csv", folder / "hierarchies/education.csv")
    for path in (FIXTURES / "readme").iterdir():
        shutil.copy(path, folder / path.name)

    census = make_census(12_000).data
    (folder / "census").mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(census)), 2)):
        census.iloc[part].to_parquet(folder / "census" / f"part-{i}.parquet", index=False)

    january, february = census_versions(800, n_versions=2, churn=0.0)
    _census_part(january, "patient_id", "diagnosis").to_csv(folder / "patients-2026-01.csv",
                                                            index=False)
    _census_part(february, "patient_id", "diagnosis").to_csv(folder / "patients-2026-02.csv",
                                                             index=False)
    october, november = census_versions(800, n_versions=2, churn=0.1)
    for frame, name in ((october, "ward-2026-10.csv"), (november, "ward-2026-11.csv")):
        ward = frame.assign(id=frame.id + 100_000)  # other people than the patients above
        _census_part(ward, "patient_id", "diagnosis").to_csv(folder / name, index=False)
    (folder / "zip.csv").write_text(_zip_hierarchy(pd.concat([october.zip, november.zip])))

    first, second = census_versions(600, n_versions=2, churn=0.1, seed=3)
    for frame, name in ((first, "q1.csv"), (second, "q2.csv")):
        frame.assign(id=frame.id + 300_000)[["id", "age", "zip", "salary"]].to_csv(
            folder / name, index=False)

    ages = make_census(1_500, seed=7).data[["id", "age", "zip"]]
    ages = ages.assign(id=ages.id + 200_000)
    rng = np.random.default_rng(7)
    ages = ages.assign(vote=rng.choice(["red", "green", "blue", "none"], size=len(ages)))
    ages.to_csv(folder / "ages.csv", index=False)

    patients = _census_part(january, "patient_id", "diagnosis")
    with sqlite3.connect(folder / "clinic.db") as clinic:
        patients.to_sql("patients", clinic, index=False)

    (folder / "app").mkdir()
    shutil.copy(FIXTURES / "subjects" / "loan.py", folder / "app" / "rules.py")
    from fixtures.subjects.generators import loan

    loan(300).to_csv(folder / "raw.csv", index=False)


# -- running them ---------------------------------------------------------------------------


@pytest.mark.slow
def test_every_readme_example_runs_as_written(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from anonkit.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANONKIT_HISTORY", raising=False)
    make_workspace(tmp_path)
    blocks = readme_blocks()
    for block in blocks:  # the job file first: the command list above it runs it
        if block.language == "toml":
            (tmp_path / "job.toml").write_text(block.text)
    ran = 0
    runner = CliRunner()
    for block in blocks:
        if block.language == "python":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(compile(block.text, f"README.md line {block.line}", "exec"),
                     {"__name__": "__main__"})
            ran += 1
            continue
        if block.language not in ("", "sh", "bash"):
            continue
        for words in commands(block):
            if words[0] != "anonkit":
                continue
            result = runner.invoke(main, words[1:])
            assert result.exit_code == 0, (
                f"README line {block.line}: {' '.join(words)}\n{result.output}")
            ran += 1
    assert ran >= 20
    assert (tmp_path / "released-py.csv").exists() and (tmp_path / "ward-11.csv").exists()
