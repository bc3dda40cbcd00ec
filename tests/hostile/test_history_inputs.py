"""Issue 21, items 6-8, 10-12 and 14 (the history and the command line): a refused publish
leaves no history behind, a history URL never shows its password, a weak secret file is
refused, outputs are the owner's only, another user's files in a shared folder are left
alone, and each hostile input is exit 2 and one line naming the problem, with nothing
created or changed."""

from __future__ import annotations

import hashlib
import importlib
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from anonkit.cli import main
from hostile.snapshots import snapshot


def run(*args: object, env: dict[str, str] | None = None) -> tuple[int, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the secret beside a test history
        result = CliRunner().invoke(main, [str(a) for a in args], env=env)
    return result.exit_code, result.output


def one_line(code: int, output: str, *fragments: str) -> None:
    """Exit 2 and one error line naming the problem (a ``warning:`` line may precede it)."""
    lines = [line for line in output.strip().splitlines() if not line.startswith("warning: ")]
    assert code == 2, output
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    for fragment in fragments:
        assert fragment in output, (fragment, output)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    n = 40
    pd.DataFrame({"pid": [f"p{i}" for i in range(n)], "age": rng.integers(20, 70, n),
                  "zip": rng.integers(100, 110, n),
                  "disease": rng.choice(["flu", "hiv", "cold"], n)}).to_csv(
        tmp_path / "in.csv", index=False)
    return tmp_path / "in.csv"


def publish(source: Path, output: Path, history: Path | str, *extra: object,
            dataset: str = "ward", key: str = "pid") -> tuple[int, str]:
    return run("release", "publish", source, "--history", history, "--dataset", dataset,
               "--key", key, "--qi", "age,zip", "--sensitive", "disease", "-k", "3", "-o",
               output, *extra)


# -- item 7: a refused first publish creates no history -------------------------------------

@pytest.mark.parametrize("case", ["dataset", "duplicate keys", "unknown key", "no folder",
                                  "model"])
def test_a_refused_first_publish_leaves_no_history(table: Path, case: str) -> None:
    folder = table.parent
    source, key, dataset, output, extra = table, "pid", "ward", folder / "r.csv", []
    if case == "dataset":
        dataset = "a\x01b"
    elif case == "duplicate keys":
        df = pd.read_csv(table)
        df.loc[5, "pid"] = df.loc[3, "pid"]
        source = folder / "dup.csv"
        df.to_csv(source, index=False)
    elif case == "unknown key":
        key = "nokey"
    elif case == "no folder":
        output = folder / "missing" / "r.csv"
    else:
        extra = ["-k", "1000"]
    before = snapshot(folder)
    code, output_text = publish(source, output, folder / "h.db", *extra, dataset=dataset,
                                key=key)
    one_line(code, output_text)
    assert snapshot(folder) == before  # no h.db, no h.db.secret, no release
    assert "p3" not in output_text  # a key names a person: never in a message


# -- item 8: a history URL never shows its password -----------------------------------------

@pytest.mark.parametrize("url", ["postgresql://user:s3cret@host:notaport/db",
                                 "postgresql://user:s3cret@[::1/db",
                                 "postgresql+nodriver://user:s3cret@host/db",
                                 "postgresql://user:s3c:ret@host/db?schema=a&schema=b"])
@pytest.mark.parametrize("through", ["option", "environment"])
def test_a_history_url_that_fails_never_shows_its_password(tmp_path: Path, url: str,
                                                           through: str) -> None:
    if through == "option":
        code, output = run("release", "list", "--history", url)
    else:
        code, output = run("release", "list", env={"ANONKIT_HISTORY": url})
    one_line(code, output, "user:***@")
    assert "s3c" not in output


# -- item 10: a weak secret file is refused as a weak environment secret is ----------------

@pytest.mark.parametrize("text", ["aaaaaaaaaaaaaaaa", "f" * 64, "password123",
                                  "00112233445566778899"])
def test_a_weak_secret_file_is_refused(table: Path, text: str) -> None:
    folder = table.parent
    secret = folder / "weak.secret"
    secret.write_text(text)
    secret.chmod(0o600)
    before = snapshot(folder)
    one_line(*publish(table, folder / "r.csv", folder / "h.db", "--secret-file", secret),
             "too weak", "32 random bytes")
    assert snapshot(folder) == before


def test_a_strong_secret_file_is_taken(table: Path) -> None:
    folder = table.parent
    secret = folder / "strong.secret"
    secret.write_text(hashlib.sha256(b"a strong enough secret").hexdigest())
    secret.chmod(0o600)
    code, output = publish(table, folder / "r.csv", folder / "h.db", "--secret-file", secret)
    assert code == 0, output


# -- item 11: every output is the owner's only, unless --mode says otherwise ---------------

def test_outputs_are_0600_whatever_the_umask(table: Path) -> None:
    folder = table.parent
    old = os.umask(0o022)
    try:
        code, output = run("anonymize", table, "-o", folder / "o.csv", "--qi", "age,zip",
                           "--sensitive", "disease", "--id", "pid", "-k", "3", "--report",
                           folder / "o.html")
        assert code == 0, output
        code, output = run("check", table, "--qi", "age", "-k", "1", "--report",
                           folder / "c.html")
        assert code == 0, output
        assert publish(table, folder / "r.csv", folder / "h.db")[0] == 0
        code, output = run("release", "audit", "--history", folder / "h.db", "--dataset",
                           "ward", "--report", folder / "a.html")
        assert code == 0, output
        for name in ("o.csv", "o.html", "c.html", "r.csv", "a.html", "h.db", "h.db.secret"):
            assert (folder / name).stat().st_mode & 0o777 == 0o600, name
        code, output = run("--mode", "640", "anonymize", table, "-o", folder / "wide.csv",
                           "--qi", "age,zip", "--sensitive", "disease", "--id", "pid", "-k",
                           "3")
        assert code == 0, output
        assert (folder / "wide.csv").stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)
        from anonkit._util.files import set_output_mode
        set_output_mode(0o600)  # the option sets the mode for the process
    before = snapshot(folder)
    one_line(*run("--mode", "400", "anonymize", table, "-o", folder / "x.csv", "--qi", "age",
                  "-k", "3"), "--mode '400'", "owner read and write")
    assert snapshot(folder) == before


# -- item 12: another user's files in a shared folder ---------------------------------------

@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="planting another user's files needs root")
def test_another_users_lock_and_temporary_files_are_left_alone(table: Path) -> None:
    folder = table.parent
    folder.chmod(0o1777)  # a shared, sticky folder
    token = "123-0123456789abcdef"
    planted = [folder / f".anonkit-lock-{token}", folder / f".anonkit-tmp-{token}-r.csv"]
    for path in planted:
        path.write_text("")
        path.chmod(0o666)
        os.chown(path, 65534, 65534)  # nobody
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CliRunner().invoke(main, ["release", "publish", str(table), "--history",
                                           str(folder / "h.db"), "--dataset", "ward",
                                           "--key", "pid", "--qi", "age,zip", "--sensitive",
                                           "disease", "-k", "3", "-o", str(folder / "r.csv")])
    assert result.exit_code == 0, result.output
    assert all(path.exists() for path in planted)
    assert any("belong to another user" in str(w.message) for w in caught) or \
        "belong to another user" in result.output


# -- items 6 and 14: one line, exit 2, nothing written ----------------------------------------

def test_hostile_command_lines_are_one_line_each(table: Path) -> None:
    folder = table.parent
    assert publish(table, folder / "r1.csv", folder / "h.db")[0] == 0
    (folder / "deep.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000)
    (folder / "sub").mkdir()
    before = snapshot(folder)
    cases = [
        (("anonymize", "--config", folder / "deep.toml"), "nests tables or lists too deeply"),
        (("anonymize", "--config", folder / "sub"), "is a folder"),
        (("release", "publish", table, "--history", folder / "sub", "--dataset", "w",
          "--key", "pid", "--qi", "age", "--insensitive", "*", "-k", "2", "-o",
          folder / "x.csv"),
         "the history " + str(folder / "sub") + " is a folder"),
        (("release", "list", "--history", "postgresql+nodriver://u@h/db"),
         "unknown database driver 'nodriver'"),
        (("check", table, "--qi", "age", "-k", "99999999999999999999999999"), None),
    ]
    for args, fragment in cases:
        code, output = run(*args)
        if fragment is None:  # a model that fails: its k shown exactly as given
            assert code == 2 and "k >= 99999999999999999999999999" in output, output
            continue
        one_line(code, output, fragment)
    code, output = run("release", "show", "ward", "99999999999999999999", "--history",
                       folder / "h.db")
    assert code == 2 and "99999999999999999999 is not in the range" in output, output
    assert snapshot(folder) == before


def test_a_publish_overtaken_by_another_says_so(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 14: the loser of two concurrent publishes was told "release 2 comes after
    release 2". Another publish is made to commit between this one's start and its gate."""
    from anonkit.errors import ConcurrentPublishError
    from anonkit.history import HistoryStore
    from history_helpers import make_request, people

    # (the package's ``publish`` is the function: take the module itself)
    publishing = importlib.import_module("anonkit.history.publish")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = HistoryStore.open(tmp_path / "h.db", create=True)
    try:
        df = people(np.arange(60))
        publishing.publish(store, df, make_request(), tmp_path / "r1.csv")
        check_rekey = publishing.check_rekey

        def overtaken(*args: object, **kwargs: object) -> object:
            monkeypatch.setattr(publishing, "check_rekey", check_rekey)
            publishing.publish(store, df, make_request(), tmp_path / "other.csv",
                               allow_breach=True)
            return check_rekey(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(publishing, "check_rekey", overtaken)
        with pytest.raises(ConcurrentPublishError,
                           match=r"another publish committed release 2 of 'census' while this "
                                 r"one ran; nothing was written"):
            publishing.publish(store, df, make_request(), tmp_path / "r2.csv",
                               allow_breach=True)
        assert [r.seq for r in store.releases("census")] == [1, 2]
        assert not (tmp_path / "r2.csv").exists()
    finally:
        store.close()
