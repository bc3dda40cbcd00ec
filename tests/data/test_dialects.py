"""Input dialects a real file needs (issue 9): no header line, markers of missing values,
separators of several characters, spaces after separators, encodings, compressed files,
ordinal orders, hints for a wrong separator or a mislaid hierarchy file, file line numbers.
"""

from __future__ import annotations

import bz2
import gzip
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner

from anonkit.cli import main
from anonkit.data.read import Dialect, read_arrow, read_table, table_columns
from anonkit.errors import InputError
from anonkit.hierarchy import read_arx_hierarchy
from locations import SHARED_DATA

ADULT = SHARED_DATA / "adult_mondrian"
ADULT_NAMES = ("age,workclass,fnlwgt,education,education-num,marital-status,occupation,"
               "relationship,race,sex,capital-gain,capital-loss,hours-per-week,"
               "native-country,class")

RAW = b"39, State-gov, 0213, ?\n50, ?, 0011, x\n7, Private, 12, y\n"


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def run(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


# --------------------------------------------------------------------------- no header


def test_no_header_with_names(tmp_path: Path) -> None:
    path = write(tmp_path / "raw.data", b"1,a\n2,b\n")
    df = read_table(path, header=False, names=["n", "t"])
    assert list(df.columns) == ["n", "t"] and len(df) == 2  # the first line is data
    assert df["n"].tolist() == [1, 2] and df["t"].tolist() == ["a", "b"]
    assert table_columns(path, dialect=Dialect.of(header=False, names=["n", "t"])) == ["n", "t"]


def test_names_replace_a_header(tmp_path: Path) -> None:
    path = write(tmp_path / "h.csv", b"x,y\n1,a\n")
    df = read_table(path, names=["n", "t"])
    assert list(df.columns) == ["n", "t"] and df["n"].tolist() == [1]


def test_no_header_needs_names_and_one_per_column(tmp_path: Path) -> None:
    path = write(tmp_path / "raw.data", b"1,a\n2,b\n")
    with pytest.raises(InputError, match="needs its column names: pass --names"):
        read_table(path, header=False)
    with pytest.raises(InputError, match=r"3 column names given .* first line .* has 2 field"):
        read_table(path, header=False, names=["a", "b", "c"])
    with pytest.raises(InputError, match="duplicate column names: 'a'"):
        read_table(path, header=False, names=["a", "a"])


def test_cli_names_from_a_list_or_a_file(tmp_path: Path) -> None:
    path = write(tmp_path / "raw.data", b"".join(b"%d,%s\n" % (i % 7, b"ab"[i % 2:][:1])
                                                 for i in range(40)))
    (tmp_path / "names.txt").write_text("# the columns\nnum\ntag\n")
    for names in ("num,tag", str(tmp_path / "names.txt")):
        out = tmp_path / "out.csv"
        code, output = run("anonymize", path, "-o", out, "--no-header", "--names", names,
                           "--qi", "num", "--insensitive", "tag", "-k", "2")
        assert code == 0, output
        back = pd.read_csv(out)
        assert list(back.columns) == ["num", "tag"] and len(back) == 40


# --------------------------------------------------------------------------- missing markers


def test_na_values_are_missing_in_every_column(tmp_path: Path) -> None:
    path = write(tmp_path / "m.csv", b"n,t,u\n1,a,-\n?,?,b\n3,c,-\n")
    df = read_table(path, na_values=["?", "-"])
    assert df["n"].dtype == "float64" and pd.isna(df["n"][1])  # a number column still
    assert df["t"].tolist()[0::2] == ["a", "c"] and pd.isna(df["t"][1])
    assert pd.isna(df["u"][0]) and df["u"][1] == "b"
    # categorical text too, and without the option '?' is a value as before
    cat = read_table(path, na_values="?", categorical_text=True)
    assert pd.isna(cat["t"][1]) and "?" not in cat["t"].cat.categories
    assert read_table(path)["t"].tolist()[1] == "?"


def test_na_values_on_the_command_line_and_in_toml(tmp_path: Path) -> None:
    rows = b"".join(b"%d,%s,%s\n" % (20 + i % 9, b"?" if i % 10 == 0 else b"ab"[i % 2:][:1],
                                     b"-" if i % 5 == 0 else b"y") for i in range(60))
    path = write(tmp_path / "m.csv", b"age,tag,z\n" + rows)
    out = tmp_path / "out.csv"
    code, output = run("anonymize", path, "-o", out, "--na-values", "?", "--na-values", "-",
                       "--qi", "age,tag", "--insensitive", "z", "--allow-missing", "-k", "3")
    assert code == 0, output
    text = out.read_text()
    assert "?" not in text and "-\n" not in text
    config = tmp_path / "job.toml"
    config.write_text('input = "m.csv"\noutput = "out2.csv"\nna_values = ["?"]\n'
                      'quasi_identifiers = "age,tag"\ninsensitive = ["z"]\n'
                      'allow_missing = true\nk = 3\n')
    code, output = run("anonymize", "--config", config)
    assert code == 0, output
    assert "?" not in (tmp_path / "out2.csv").read_text()
    config.write_text('input = "m.csv"\noutput = "o.csv"\nna_values = 3\n'
                      'quasi_identifiers = "age"\n')
    code, output = run("anonymize", "--config", config)
    assert code == 2 and "na_values must be a list of texts (or one text), got 3" in output


# --------------------------------------------------------------------------- separators


def test_comma_space_separator_trims_every_column(tmp_path: Path) -> None:
    path = write(tmp_path / "a.data", RAW)
    df = read_table(path, sep=", ", header=False, names=["n", "w", "code", "s"],
                    na_values="?")
    assert df["n"].tolist() == [39, 50, 7]
    assert df["w"][0] == "State-gov" and pd.isna(df["w"][1]) and df["w"][2] == "Private"
    assert df["code"].tolist() == ["0213", "0011", "12"]  # a code, without the space
    assert pd.isna(df["s"][0]) and df["s"][1:].tolist() == ["x", "y"]
    # text kept as text (what a release copies unchanged) is trimmed too
    text = read_arrow(path, ", ", text_columns=["w"], dialect=Dialect.of(
        header=False, names=["n", "w", "code", "s"]))
    assert text["w"].to_pylist() == ["State-gov", "?", "Private"]


def test_skipinitialspace_with_a_one_character_separator(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", b"a, b\nx,  y\n z, w\n")
    plain = read_table(path)
    assert plain["b"].tolist() == ["  y", " w"]  # as before: the cell's text
    df = read_table(path, skipinitialspace=True, categorical_text=True)
    assert df["a"].tolist() == ["x", "z"] and df["b"].tolist() == ["y", "w"]


def test_separator_of_several_characters(tmp_path: Path) -> None:
    path = write(tmp_path / "m.csv", b"a::b::c\n1::x::2.5\n3::y,z::4\n")
    df = read_table(path, sep="::")
    assert list(df.columns) == ["a", "b", "c"]
    assert df["b"].tolist() == ["x", "y,z"] and df["c"].tolist() == [2.5, 4.0]
    with pytest.raises(InputError, match=r"line 3 has 2 field\(s\) but the header has 3"):
        read_table(write(tmp_path / "r.csv", b"a::b::c\n1::x::2\n3::y\n"), sep="::")


# --------------------------------------------------------------------------- encodings


def test_latin1_encoding(tmp_path: Path) -> None:
    path = write(tmp_path / "l.csv", "name,city\nJosé,Zürich\nAnn,Köln\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"not UTF-8 .*--encoding latin-1"):
        read_table(path)
    df = read_table(path, encoding="latin-1")
    assert df["name"].tolist() == ["José", "Ann"] and df["city"].tolist() == ["Zürich", "Köln"]
    with pytest.raises(InputError, match="unknown encoding 'klingon'"):
        read_table(path, encoding="klingon")
    out = tmp_path / "out.csv"
    code, output = run("anonymize", path, "-o", out, "--encoding", "latin-1", "--qi", "city",
                       "--insensitive", "name", "-k", "1")
    assert code == 0, output
    assert "Zürich" in out.read_text(encoding="utf-8")  # releases are UTF-8


# --------------------------------------------------------------------------- compression


@pytest.mark.parametrize("suffix", [".csv.gz", ".csv.bz2", ".csv.zst"])
def test_compressed_input(tmp_path: Path, suffix: str) -> None:
    data = b"zip,n\n02139,1\n10001,2\n"
    if suffix.endswith(".gz"):
        packed = gzip.compress(data)
    elif suffix.endswith(".bz2"):
        packed = bz2.compress(data)
    else:
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as stream:
            stream.write(data)
        packed = sink.getvalue().to_pybytes()
    path = write(tmp_path / f"t{suffix}", packed)
    assert table_columns(path) == ["zip", "n"]
    df = read_table(path)
    assert df["zip"].tolist() == ["02139", "10001"] and df["n"].tolist() == [1, 2]
    # with the other dialects: a separator of several characters reads the whole file
    raw = write(tmp_path / f"raw{suffix}", gzip.compress(RAW)) if suffix.endswith(".gz") \
        else None
    if raw is not None:
        got = read_table(raw, sep=", ", header=False, names=["n", "w", "c", "s"],
                         na_values="?")
        assert got["w"].tolist()[0] == "State-gov"


def test_compressed_input_on_the_command_line(tmp_path: Path) -> None:
    rows = b"".join(b"%d,%s\n" % (20 + i % 9, b"ab"[i % 2:][:1]) for i in range(40))
    path = write(tmp_path / "t.csv.gz", gzip.compress(b"age,tag\n" + rows))
    out = tmp_path / "out.csv"
    code, output = run("anonymize", path, "-o", out, "--qi", "age", "--insensitive", "tag",
                       "-k", "2")
    assert code == 0, output
    assert len(pd.read_csv(out)) == 40


# --------------------------------------------------------------------------- hints


def test_a_wrong_separator_gets_a_hint(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", b"age;sex;zip\n30;F;02139\n")
    with pytest.raises(InputError, match=r"one column named 'age;sex;zip'.*pass --sep ';'"):
        read_table(path, sep=",", columns=["age"])
    code, output = run("anonymize", path, "-o", tmp_path / "o.csv", "--sep", ",",
                       "--qi", "age", "--insensitive", "*")
    assert code == 2 and "its separator looks like ';'; pass --sep ';'" in output
    spaced = write(tmp_path / "a.data", b"age, sex\n30, F\n")
    code, output = run("anonymize", spaced, "-o", tmp_path / "o.csv", "--sep", ";",
                       "--qi", "age", "--insensitive", "*")
    assert code == 2 and "pass --sep ', '" in output


def test_a_hierarchy_with_commas_or_a_header_gets_a_hint(tmp_path: Path) -> None:
    commas = write(tmp_path / "c.txt", b"a,g,*\nb,g,*\nc,h,*\n")
    with pytest.raises(InputError, match="separated by ',', but hierarchy files are "
                                         "separated by ';'") as info:
        read_arx_hierarchy(commas)
    assert "inconsistent depth" not in str(info.value)
    header = write(tmp_path / "h.txt", b"value;level1;level2\na;g;*\nb;g;*\n")
    with pytest.raises(InputError, match=r"first line \(value;level1;level2\) looks like a "
                                         r"header.*remove it"):
        read_arx_hierarchy(header)
    both = write(tmp_path / "b.txt", b"value,level1\na,*\nb,*\n")
    with pytest.raises(InputError, match=r"separated by ','.* looks like a header"):
        read_arx_hierarchy(both)
    broken = write(tmp_path / "x.txt", b"a;g;*\nb;x\nc;h;y\n")
    with pytest.raises(InputError, match="inconsistent depth"):  # really is
        read_arx_hierarchy(broken)


# --------------------------------------------------------------------------- orders


def _ordinal_table(tmp_path: Path) -> Path:
    levels = ["low", "mid", "high", "top"]
    rows = "".join(f"{i},{levels[(i * 7) % 4]},{i % 5}\n" for i in range(200))
    return write(tmp_path / "o.csv", ("id,level,grade\n" + rows).encode())


def _ranges_follow(path: Path, order: list[str]) -> set[str]:
    labels = set(pd.read_csv(path)["level"])
    for label in labels:
        found = re.fullmatch(r"\[(.+)-(.+)\]", label)
        if found:
            assert order.index(found[1]) < order.index(found[2]), label
        else:
            assert label in order
    return labels


def test_order_on_the_command_line_from_a_list_or_a_file(tmp_path: Path) -> None:
    path = _ordinal_table(tmp_path)
    order = ["low", "mid", "high", "top"]
    (tmp_path / "levels.txt").write_text("\n".join(order) + "\n")
    for given in (",".join(order), str(tmp_path / "levels.txt")):
        out = tmp_path / "out.csv"
        code, output = run("anonymize", path, "-o", out, "--qi", "level,grade", "--drop", "id",
                           "--order", f"level={given}", "-k", "30")
        assert code == 0, output
        assert any(label.startswith("[") for label in _ranges_follow(out, order))
    code, output = run("anonymize", path, "-o", tmp_path / "x.csv", "--qi", "level",
                       "--drop", "id", "--insensitive", "grade", "--order", "grade=1,2")
    assert code == 2 and "--order grade=...: 'grade' is insensitive" in output
    code, output = run("anonymize", path, "-o", tmp_path / "x.csv", "--qi", "level",
                       "--drop", "id,grade", "--order", "level=low,low")
    assert code == 2 and "lists 'low' twice" in output


def test_order_in_toml(tmp_path: Path) -> None:
    _ordinal_table(tmp_path)
    order = ["top", "high", "mid", "low"]
    (tmp_path / "levels.txt").write_text("\n".join(order))
    for value in ('["top", "high", "mid", "low"]', '"levels.txt"'):
        config = tmp_path / "job.toml"
        config.write_text(f'input = "o.csv"\noutput = "out.csv"\nquasi_identifiers = '
                          f'"level,grade"\ndrop = ["id"]\nk = 30\n[orders]\nlevel = {value}\n')
        code, output = run("anonymize", "--config", config)
        assert code == 0, output
        _ranges_follow(tmp_path / "out.csv", order)


# --------------------------------------------------------------------------- line numbers


def test_errors_name_file_lines(tmp_path: Path) -> None:
    # without a header line, line 2 of the file is its second row
    path = write(tmp_path / "r.data", b"1,a\n2,b,c\n")
    with pytest.raises(InputError, match=r"line 2 has 3 field\(s\) but the first line has 2 "
                                         r"\(a line number of the file"):
        read_table(path, header=False, names=["n", "t"])
    path = write(tmp_path / "r.csv", b"n,t\n\n1,a\n2,b,c\n")  # blank lines count
    with pytest.raises(InputError, match=r"line 4 has 3 field\(s\) but the header has 2"):
        read_table(path)


# --------------------------------------------------------------------------- the raw UCI file


@pytest.mark.skipif(not (ADULT / "adult.data").is_file(), reason="raw UCI adult.data absent")
def test_raw_uci_adult_in_one_command(tmp_path: Path) -> None:
    """The README's example: adult.data as UCI ships it, with Basic_Mondrian's hierarchies."""
    out = tmp_path / "adult-release.csv"
    hierarchies = []
    for column in ("workclass", "marital-status", "occupation", "relationship", "race", "sex",
                   "native-country"):
        hierarchies += ["--hierarchy", f"{column}={ADULT}/basic_mondrian_adult_"
                                       f"{column.replace('-', '_')}.txt"]
    code, output = run(
        "anonymize", ADULT / "adult.data", "-o", out, "--no-header", "--names", ADULT_NAMES,
        "--sep", ", ", "--na-values", "?", "--allow-missing",
        "--qi", "age,workclass,marital-status,occupation,relationship,race,sex,native-country",
        "--sensitive", "class",
        "--drop", "fnlwgt,education,education-num,capital-gain,capital-loss,hours-per-week",
        *hierarchies, "-k", "10")
    assert code == 0, output
    release = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert len(release) == 32561
    assert not release.apply(lambda c: c.str.startswith(" ")).any().any()
    assert not (release == "?").any().any()
    assert set(release["class"]) == {"<=50K", ">50K"}


# --------------------------------------------------------------------------- release publish


def test_release_publish_reads_the_same_dialects(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from anonkit.cli.release import release

    for name in ("ANONKIT_HISTORY", "ANONKIT_HISTORY_SECRET_FILE", "ANONKIT_HISTORY_SECRET"):
        monkeypatch.delenv(name, raising=False)
    rows = b"".join(b"P%d, %d, %s, ?\n" % (i, 20 + i % 30, b"FM"[i % 2:][:1])
                    for i in range(120))
    path = write(tmp_path / "people.data.gz", gzip.compress(rows))
    out = tmp_path / "release.csv"
    result = CliRunner().invoke(release, [
        "publish", "--insensitive", "*",
str(path), "--dataset", "people", "--key", "pid", "--qi", "age,sex",
        "--no-header", "--names", "pid,age,sex,note", "--sep", ", ", "--na-values", "?",
        "-k", "5", "-o", str(out), "--history", str(tmp_path / "h.db"),
        "--secret-file", str(tmp_path / "h.secret")])
    assert result.exit_code == 0, result.output
    release_table = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert len(release_table) == 120 and "pid" not in release_table.columns
    assert not release_table.apply(lambda c: c.str.startswith(" ")).any().any()
    assert not (release_table == "?").any().any()


def test_value_errors_name_the_file_line(tmp_path: Path) -> None:
    header = b"age,tag\n" + b"".join(b"%d,a\n" % (20 + i) for i in range(10))
    path = write(tmp_path / "m.csv", header + b",b\n" + b"30,c\n")
    code, output = run("anonymize", path, "-o", tmp_path / "o.csv", "--qi", "age,tag",
                       "-k", "2")
    assert code == 2 and "first lines of the file: [12]" in output  # header is line 1
    raw = write(tmp_path / "m.data", b"\n" + b"".join(b"%d,a\n" % (20 + i) for i in range(10))
                + b"x,b\n")
    code, output = run("anonymize", raw, "-o", tmp_path / "o.csv", "--no-header", "--names",
                       "age,tag", "--qi", "age,tag", "--kind", "age=numeric", "-k", "2")
    # (a blank line 1)
    assert code == 2 and "line 12 of the file has a value that is not a number" in output, output
    assert "'x'" not in output  # (a cell's value is never shown: it may be sensitive)
    # the Python API keeps the DataFrame's row labels
    with pytest.raises(InputError, match=r"first rows: \[10\]"):
        from anonkit.data.encoding import encode
        from anonkit.data.schema import Schema

        df = read_table(path)
        encode(df, Schema.from_roles(df, ["age", "tag"]))


def test_the_dialect_in_a_job_file(tmp_path: Path) -> None:
    rows = "".join(f"{20 + i % 9}, {'ab'[i % 2]}, {'?' if i % 4 == 0 else 'Zürich'}\n"
                   for i in range(60))
    write(tmp_path / "raw.data.gz", gzip.compress(rows.encode("latin-1")))
    (tmp_path / "cols.txt").write_text("age\ntag\ncity\n")
    (tmp_path / "job.toml").write_text(
        'input = "raw.data.gz"\noutput = "out.csv"\nheader = false\nnames = "cols.txt"\n'
        'separator = ","\nskipinitialspace = true\nna_values = "?"\nencoding = "latin-1"\n'
        'quasi_identifiers = ["age", "tag"]\ninsensitive = ["city"]\nk = 3\n')
    code, output = run("anonymize", "--config", tmp_path / "job.toml")
    assert code == 0, output
    release = pd.read_csv(tmp_path / "out.csv", dtype=str, keep_default_na=False)
    assert len(release) == 60 and set(release["city"]) == {"", "Zürich"}
    assert set(release["tag"]) <= {"a", "b", "*", "{a,b}"} and \
        not release["tag"].str.startswith(" ").any()


def test_check_reads_the_same_dialects(tmp_path: Path) -> None:
    rows = b"".join(b"%s, %s, %s\n" % (b"[20-29]", b"ab"[i % 2:][:1], b"xy"[i % 2:][:1])
                    for i in range(12))
    path = write(tmp_path / "released.data", rows)
    code, output = run("check", path, "--no-header", "--names", "age,tag,s", "--sep", ", ",
                       "--qi", "age,tag", "--sensitive", "s", "-k", "6")
    assert code == 0, output
    code, output = run("check", path, "--no-header", "--names", "age,tag,s", "--sep", ", ",
                       "--qi", "age,tag", "--sensitive", "s", "-k", "7")
    assert code == 2, output
    code, output = run("check", write(tmp_path / "s.csv", b"a;b\n1;2\n"), "--sep", ",",
                       "--qi", "a", "-k", "1")
    assert code == 2 and "pass --sep ';'" in output
