"""Re-keyed exports (anonkit.history.rekey): the same people under other key text are
refused unless --new-lineage, and numeric keys are compared as numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner, Result

from anonkit.cli.release import release
from anonkit.history.rekey import MAX_MOVED_SHARE, compare, refusal
from anonkit.history.secret import canonical_keys
from history_helpers import churned_versions


def run(tmp: Path, *args: str) -> Result:
    return CliRunner().invoke(release, [*args, "--history", str(tmp / "h.db"),
                                        "--secret-file", str(tmp / "h.secret")],
                              catch_exceptions=False)


def publish(tmp: Path, df: pd.DataFrame, name: str, dataset: str = "census",
            key: str = "pid", *extra: str) -> Result:
    source = tmp / f"{name}.csv"
    df.to_csv(source, index=False)
    return run(tmp, "publish", str(source), "--dataset", dataset, "--key", key,
               "--method", "sorted-chunks", "--qi", "age,zip,sex", "--sensitive", "disease",
               "--insensitive", "*", "-k", "5", "-o", str(tmp / f"r-{name}.csv"),
               "--allow-breach", *extra)


@pytest.fixture
def first(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    """Release 1 of a table keyed by numbers 1..300, and the same people's next version."""
    v1, v2 = churned_versions(300, 2, churn=0.1, seed=9)
    for df in (v1, v2):
        df["pid"] = df["pid"].str.slice(1).astype(np.int64) + 1
    assert publish(tmp_path, v1, "v1").exit_code == 0
    return tmp_path, v2


def test_a_plain_next_version_passes(first: tuple[Path, pd.DataFrame]) -> None:
    tmp, v2 = first
    done = publish(tmp, v2, "v2")
    assert done.exit_code == 0, done.output


def test_zero_padded_keys_are_the_same_records(first: tuple[Path, pd.DataFrame]) -> None:
    """Numbers are compared as numbers: 00000042 is 42, so the history still matches."""
    tmp, v2 = first
    padded = v2.assign(pid=v2["pid"].map(lambda n: f"{n:08d}"))
    done = publish(tmp, padded, "v2")
    assert done.exit_code == 0, done.output
    shown = run(tmp, "audit", "--dataset", "census", "--json")
    assert '"records_compared": 330' in shown.output  # 270 stayed, 30 left, 30 joined


def test_shifted_keys_are_refused(first: tuple[Path, pd.DataFrame]) -> None:
    tmp, v2 = first
    shifted = v2.assign(pid=v2["pid"] + 7)
    refused = publish(tmp, shifted, "v2")
    assert refused.exit_code == 3, refused.output
    assert "refused as a re-keyed export" in refused.output
    assert "have the exact values of rows of release 1 of 'census' under other keys" in \
        refused.output
    assert not (tmp / "r-v2.csv").exists()
    assert publish(tmp, shifted, "v2", "census", "pid", "--new-lineage").exit_code == 0


def test_keys_that_share_nothing_are_refused(first: tuple[Path, pd.DataFrame]) -> None:
    """Another export with its own key space (text keys for the same people)."""
    tmp, v2 = first
    other = v2.assign(pid="K-" + v2["pid"].astype(str))
    refused = publish(tmp, other, "v2")
    assert refused.exit_code == 3
    assert "shares only 0 of its 300 record keys with release 1 of 'census'" in refused.output


def test_another_key_column_under_another_name_is_refused(
        first: tuple[Path, pd.DataFrame]) -> None:
    """The same people keyed by another column, published as another dataset."""
    tmp, v2 = first
    other = v2.assign(pid=v2["pid"] * 1000 + 3)
    refused = publish(tmp, other, "copy", "census-copy")
    assert refused.exit_code == 3, refused.output
    assert "re-keyed export" in refused.output and "release 1 of 'census'" in refused.output
    assert publish(tmp, other, "copy", "census-copy", "pid", "--new-lineage").exit_code == 0


def test_the_shares_by_hand() -> None:
    keys = np.array([bytes([i]) * 16 for i in range(40)], dtype="S16")
    prints = np.arange(40, dtype=np.uint64)
    same = compare(keys, prints, keys, prints, "r")
    assert (same.shared_keys, same.moved) == (40, 0) and refusal(same, True) is None
    rolled = compare(keys, np.roll(prints, 1), keys, prints, "r")  # content moved by one key
    assert rolled.moved == 40 and rolled.moved_share > MAX_MOVED_SHARE
    assert refusal(rolled, True) is not None
    # two people with one content, both staying: nothing moved
    dup = prints.copy()
    dup[1] = dup[0]
    assert compare(keys, dup, keys, dup, "r").moved == 0
    assert refusal(compare(keys[:5], prints[:5], keys[:5], np.roll(prints[:5], 1), "r"),
                   True) is None  # too few records to judge


def test_numeric_text_keys_are_numbers() -> None:
    assert canonical_keys(pd.Series(["00000042", "+42", " 42 ", "42", "P0042"])) == [
        "42", "42", "42", "42", "P0042"]
    assert canonical_keys(pd.Series([42, 7])) == ["42", "7"]
