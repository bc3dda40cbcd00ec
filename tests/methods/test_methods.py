"""The method registry: typed options on the command line, in job files and from Python,
one parser for all three; models passed as objects, never re-parsed text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from anonkit import methods
from anonkit.cli import main
from anonkit.errors import InputError
from anonkit.history.store import HistoryStore
from anonkit.methods.models import models_from_options
from anonkit.models import KAnonymity, TCloseness
from history_helpers import people


def run(*args: object, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], env=env)
    return result.exit_code, result.output


@pytest.fixture()
def table(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    people(np.arange(200)).to_csv(path, index=False)
    return path


def publish_args(table: Path, out: Path, history: Path, *extra: str) -> list[object]:
    return ["release", "publish", "--insensitive", "*",
            table, "--dataset", "ward", "--key", "pid", "--qi",
            "age,zip,sex", "--sensitive", "disease", "-o", out, "--history", history, *extra]


@pytest.mark.parametrize("value", ["true", "4.9", "abc", "0", "5.0", "1e1"])
def test_publish_refuses_a_k_that_is_not_a_whole_number(table: Path, tmp_path: Path,
                                                        value: str) -> None:
    """``--option k=true`` published with k = 1 and ``k=4.9`` with k = 4; ``k=abc`` was an
    internal error. Each is exit 2 now, with nothing written."""
    out, history = tmp_path / "r.csv", tmp_path / "h.db"
    for how in (["--option", f"k={value}"], ["-k", value]):
        code, output = run(*publish_args(table, out, history, *how))
        assert code == 2, output
        assert "k must be a whole number >= 1" in output
        assert not out.exists()
        assert not history.exists() or not HistoryStore.open(history).releases()


def test_every_numeric_option_is_checked_the_same_way(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    for args, message in ((["-k", "5", "-l", "2.5"], "l must be a whole number"),
                          (["-k", "5", "-t", "abc"], "t must be a number > 0"),
                          (["-k", "5", "-t", "nan"], "t must be a number > 0"),
                          (["-k", "5", "--seed", "true"], "seed must be a whole number"),
                          (["-k", "5", "--strategy", "best"], "strategy must be one of")):
        code, output = run("anonymize", table, "-o", out, "--qi", "age,zip,sex", "--id",
                           "pid", "--sensitive", "disease", *args)
        assert code == 2 and message in output, output
        assert not out.exists()


def test_thresholds_are_enforced_and_shown_exactly_as_given(table: Path,
                                                            tmp_path: Path) -> None:
    """``-t 0.12345678`` was formatted with %g and enforced as t = 0.123457."""
    out = tmp_path / "r.csv"
    code, output = run("anonymize", table, "-o", out, "--qi", "age,zip,sex", "--id", "pid",
                       "--sensitive", "disease", "--drop", "income", "-k", "5", "-t",
                       "0.92345678", "--json")
    assert code == 0, output
    verdicts = json.loads(output)["verdicts"]
    closeness = next(v for v in verdicts if v["model"] == "t-closeness")
    assert closeness["parameters"]["t"] == 0.92345678
    assert closeness["required"] == 0.92345678
    options = methods.get("mondrian").parse_options({"t": "0.12345678"}, "cli")
    model = models_from_options(options)[0]
    assert isinstance(model, TCloseness) and model.threshold == 0.12345678
    assert "0.12345678" in model.title()


def test_publish_takes_id_like_anonymize(table: Path, tmp_path: Path) -> None:
    df = people(np.arange(200)).assign(name=lambda d: "name-" + d["pid"])
    path = tmp_path / "named.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "r.csv"
    code, output = run(*publish_args(path, out, tmp_path / "h.db", "--id", "name", "-k", "5"))
    assert code == 0, output
    assert "name" not in pd.read_csv(out).columns


def test_the_methods_command_lists_methods_and_options() -> None:
    code, output = run("methods")
    assert code == 0, output
    assert "mondrian  (one-shot; generalized release" in output
    for flag in ("-k INT", "--model MODEL", "--strategy NAME", "--allow-missing"):
        assert flag in output


def test_an_option_of_another_method_is_refused(table: Path, tmp_path: Path) -> None:
    toy = methods.Method("toy", "a test method", "generalized", sequential=False,
                         threat_model="one-shot", options=(methods.K,),
                         function=lambda df, schema, options, progress=None: None)  # type: ignore[arg-type,return-value]
    methods.register(toy, replace=True)
    try:
        code, output = run("anonymize", table, "-o", tmp_path / "r.csv", "--qi", "age",
                           "--method", "toy", "-k", "5", "--strategy", "widest")
        assert code == 2 and "method 'toy' has no option --strategy (method 'mondrian' takes " \
            "it); its options are: -k" in output, output
        code, output = run("anonymize", table, "-o", tmp_path / "r.csv", "--qi", "age",
                           "--method", "nope")
        assert code == 2 and "unknown method 'nope'" in output
    finally:
        methods.unregister("toy")


@pytest.mark.parametrize(("line", "message"), [
    ("k = 4.9", "k must be a whole number"),
    ("k = true", "k must be a whole number"),
    ('k = "5"', "k must be a whole number"),
    ('allow_missing = "false"', "allow_missing must be true or false"),
    ('models = "t=0.3"', "models must be a list of models"),
    ("strategy = 3", "strategy must be one of"),
    ("quasi_identifiers = 3", "quasi_identifiers must be a list of texts (or one text), "
                              "got 3"),
    ("quasi_identifiers = [\"age\", 3]", "quasi_identifiers must be a list of texts (or one "
                                        "text), got ['age', 3] (an entry is a whole number)"),
    ('shuffle = "false"', "shuffle must be true or false, got 'false'"),
    ("report = 3", "report must be text, got 3"),
    ("hierarchies = { sex = 3 }", "hierarchies must be a table of column = text"),
    ('orders = { grade = 3 }', "orders must be a table of column = list of texts"),
    ("na_values = [1]", "na_values must be a list of texts"),
    ('workers = "2"', "workers must be a whole number, got '2'"),
    ('engine = "mars"', "engine must be local or dask, got 'mars'"),
    ("workers = 2", "--workers and --scheduler choose a Dask cluster: add --engine dask"),
])
def test_job_files_are_typed(table: Path, tmp_path: Path, line: str, message: str) -> None:
    job = tmp_path / "job.toml"
    defaults = {"k": "k = 5", "quasi_identifiers": 'quasi_identifiers = ["age", "zip"]'}
    key = line.split("=")[0].strip()
    lines = [text for name, text in defaults.items() if name != key] + [line]
    job.write_text(f'input = "{table}"\noutput = "r.csv"\nidentifiers = ["pid"]\n'
                   + "\n".join(lines) + "\n")
    code, output = run("anonymize", "--config", job)
    assert code == 2 and message in output, output
    assert not (tmp_path / "r.csv").exists()


def test_a_job_file_with_typed_values_runs(table: Path, tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text(f'input = "{table}"\noutput = "r.csv"\nidentifiers = ["pid"]\n'
                   'quasi_identifiers = ["age", "zip", "sex"]\nsensitive = "disease"\n'
                   'k = 5\nmodels = ["entropy-l=1.5"]\nallow_missing = false\n'
                   'strategy = "entropy"\ninsensitive = ["income"]\n'
                   '[generalization]\nzip = "range"\n')
    code, output = run("anonymize", "--config", job, "-k", "6")  # the command line wins
    assert code == 0, output
    assert "PASS k-anonymity (k=6)" in output and "entropy l-diversity" in output


def test_python_callers_get_the_same_checks() -> None:
    mondrian = methods.get("mondrian")
    with pytest.raises(InputError, match="k must be a whole number"):
        mondrian.parse_options({"k": True}, "python")
    with pytest.raises(InputError, match="k must be a whole number"):
        mondrian.parse_options({"k": "5"}, "python")  # text is only read from a command line
    options = mondrian.parse_options({"k": 5, "models": [KAnonymity(7), "l=2"]}, "python")
    assert [m.title() for m in models_from_options(options)] == [
        "k-anonymity (k=5)", "k-anonymity (k=7)", "distinct l-diversity (l=2)"]
