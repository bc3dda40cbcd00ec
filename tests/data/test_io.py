"""Reading and writing tables: round trips, type inference, every input error, atomicity."""

from __future__ import annotations

import decimal
import errno
import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from anonkit._util.files import (
    atomic_write,
    refuse_collisions,
    set_output_mode,
    system_error,
    write_atomic,
)
from anonkit.data import read as anonkit_read
from anonkit.data import write as anonkit_write
from anonkit.data.read import read_table, sniff_separator, table_format
from anonkit.data.write import write_table
from anonkit.datasets import make_census
from anonkit.errors import InputError
from complexity import GROWTH_BOUND, growth


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def census() -> pd.DataFrame:
    data = make_census(3000, seed=5).data
    assert data["zip"].str.startswith("0").any()  # the round trip must meet leading zeros
    return data


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", ["t.csv", "t.parquet", "t.pq", "t.tsv", "t.txt"])
def test_round_trip_keeps_values_and_dtypes(tmp_path: Path, census: pd.DataFrame,
                                            name: str) -> None:
    write_table(census, tmp_path / name)
    back = read_table(tmp_path / name)
    pd.testing.assert_frame_equal(back, census)


def test_tsv_is_written_with_tabs(tmp_path: Path) -> None:
    write_table(pd.DataFrame({"a": [1], "b": ["x"]}), tmp_path / "t.tsv")
    assert (tmp_path / "t.tsv").read_text().splitlines() == ["a\tb", "1\tx"]


def test_fmt_overrides_the_suffix(tmp_path: Path) -> None:
    df = pd.DataFrame({"a": [1, 2]})
    write_table(df, tmp_path / "out.data", fmt="parquet")
    assert (tmp_path / "out.data").read_bytes()[:4] == b"PAR1"
    pd.testing.assert_frame_equal(read_table(tmp_path / "out.data", fmt="parquet"), df)
    with pytest.raises(InputError, match="unknown table format 'xlsx'"):
        write_table(df, tmp_path / "x", fmt="xlsx")
    assert table_format("a.PQ") == "parquet" and table_format("a.gz") == "csv"


def test_csv_text_of_dates_missing_values_and_categoricals(tmp_path: Path) -> None:
    df = pd.DataFrame({
        "day": pd.to_datetime(["2021-03-04", None]),
        "at": pd.to_datetime(["2021-03-04 10:30:00", "2021-03-05"], format="ISO8601"),
        "x": [1.5, np.nan],
        "cat": pd.Categorical(["b", None], categories=["a", "b"]),
        "n": [1, 2],
    }, index=[10, 20])
    write_table(df, tmp_path / "t.csv")
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert lines[0] == "day,at,x,cat,n"  # the index is not written
    assert lines[1] == "2021-03-04,2021-03-04 10:30:00.000000000,1.5,b,1"
    assert lines[2] == ',2021-03-05 00:00:00.000000000,,,2'
    back = read_table(tmp_path / "t.csv")
    assert back["day"].dtype == "datetime64[ms]" and back["day"].isna().tolist() == [False, True]
    assert back["cat"].tolist() == ["b", ""]  # a missing text cell reads back as ''


def test_categorical_columns_are_written_as_their_values(tmp_path: Path,
                                                         census: pd.DataFrame) -> None:
    cat = census.copy()
    for column in ["sex", "education", "zip", "disease"]:
        cat[column] = cat[column].astype("category")
    cat["age"] = pd.Categorical.from_codes(np.zeros(len(cat), dtype=np.int8), ["[20-29]"])
    expected = census.assign(age="[20-29]")
    for name in ["c.csv", "c.parquet"]:
        write_table(cat, tmp_path / name)
        back = read_table(tmp_path / name)
        assert back["zip"].dtype == object  # dictionaries come back as plain text
        pd.testing.assert_frame_equal(back, expected)


def test_mixed_object_column_is_written_as_text(tmp_path: Path) -> None:
    df = pd.DataFrame({"m": [1, "a", 2.5, None]})
    for name in ["m.csv", "m.parquet"]:
        write_table(df, tmp_path / name)
        assert read_table(tmp_path / name)["m"].tolist()[:3] == ["1", "a", "2.5"]


def test_every_kind_of_mixed_column_is_written_as_text(tmp_path: Path) -> None:
    """Arrow refuses such columns three ways (invalid, type error, not implemented)."""
    df = pd.DataFrame({"invalid": [1, "a"], "type_error": ["a", 1],
                       "not_implemented": [complex(1, 2), complex(0, 1)]})
    write_table(df, tmp_path / "m.csv")
    back = read_table(tmp_path / "m.csv")
    assert back.to_dict("list") == {"invalid": ["1", "a"], "type_error": ["a", "1"],
                                    "not_implemented": ["(1+2j)", "1j"]}


def test_text_needing_quotes_round_trips(tmp_path: Path) -> None:
    df = pd.DataFrame({"t": ['a,b', 'say "hi"', "two\nlines", "x;y"], "n": [1, 2, 3, 4]})
    write_table(df, tmp_path / "q.csv")
    pd.testing.assert_frame_equal(read_table(tmp_path / "q.csv"), df)


def test_write_refuses_duplicate_names(tmp_path: Path) -> None:
    df = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(InputError, match="duplicate column names: 'a'"):
        write_table(df, tmp_path / "d.csv")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- reading CSV


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_separator_is_sniffed(tmp_path: Path, sep: str) -> None:
    path = write_bytes(tmp_path / "s.csv", f"a{sep}b{sep}c\n1{sep}x{sep}2.5\n".encode())
    df = read_table(path)
    assert list(df.columns) == ["a", "b", "c"]
    assert df.iloc[0].tolist() == [1, "x", 2.5]


def test_sniffing_ignores_separators_inside_quotes() -> None:
    assert sniff_separator(b'"a,b,c";"d"\n') == ";"
    assert sniff_separator("single\n") == ","
    assert sniff_separator(b"a;b,c;d\n") == ";"


def test_explicit_separator(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "s.csv", b"a;b,c\n1;2,3\n")
    assert list(read_table(path, sep=",").columns) == ["a;b", "c"]
    assert list(read_table(path, sep=";").columns) == ["a", "b,c"]
    tabbed = write_bytes(tmp_path / "t.csv", b"a\tb\n1\t2\n")
    assert list(read_table(tabbed, sep="tab").columns) == ["a", "b"]
    for bad in ["§", '"']:  # (several ASCII characters are a separator: see test_dialects)
        with pytest.raises(InputError, match="one ASCII character"):
            read_table(path, sep=bad)


def test_columns_selects_and_orders(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "c.csv", b"a,b,c\n1,x,02\n")
    df = read_table(path, columns=["c", "a"])
    assert list(df.columns) == ["c", "a"] and df.iloc[0].tolist() == ["02", 1]
    with pytest.raises(InputError, match=r"column 'z' is not in .*its columns are: a, b, c"):
        read_table(path, columns=["a", "z"])


def test_leading_zeros_keep_a_column_as_text(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "z.csv",
                       b"zip,count,code\n02139,0,80123\n80123,10,10001\n,7,\n")
    df = read_table(path)
    assert df["zip"].tolist() == ["02139", "80123", ""]
    assert df["count"].dtype == np.int64  # a lone 0 is a number
    assert df["code"].dtype == np.float64  # plain integers with a gap, as pyarrow infers
    forced = read_table(path, text_columns=["code"])
    assert forced["code"].tolist() == ["80123", "10001", ""]
    with pytest.raises(InputError, match="text column 'nope'"):
        read_table(path, text_columns=["nope"])


def test_type_changes_after_the_sampled_block(tmp_path: Path) -> None:
    n = 150_000  # > 1 MiB, so the first block is all integers
    rows = [f"{i},{i},{i},{i}" for i in range(n)]
    rows[-1] = "7,0042,1.5,text"
    path = write_bytes(tmp_path / "late.csv", ("a,b,c,d\n" + "\n".join(rows) + "\n").encode())
    assert path.stat().st_size > anonkit_read._SAMPLE_BLOCK
    df = read_table(path)
    assert df["a"].dtype == np.int64
    assert df["b"].dtype == object and df["b"].iloc[-1] == "0042" and df["b"].iloc[1] == "1"
    assert df["c"].dtype == np.float64 and df["c"].iloc[-1] == 1.5
    assert df["d"].dtype == object and df["d"].iloc[-1] == "text"


def test_integers_float64_cannot_hold_stay_text(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[object] = []
    real_read = anonkit_read.pa_csv.read_csv

    def counted(*args: object, **kwargs: object) -> pa.Table:
        reads.append(args[0])
        return real_read(*args, **kwargs)

    monkeypatch.setattr(anonkit_read.pa_csv, "read_csv", counted)
    path = write_bytes(tmp_path / "big.csv", (
        b"big,mixed,exact,neg,int,plain\n"
        b"12345678901234567891,1.5,100000000000000000000,-12345678901234567891,"
        b"9007199254740993,0.25\n"
        b"12345678901234567892,12345678901234567891,1.5,5,1,1e300\n"))
    df = read_table(path)
    assert df["big"].tolist() == ["12345678901234567891", "12345678901234567892"]
    assert df["mixed"].tolist() == ["1.5", "12345678901234567891"]  # as written
    assert df["neg"].tolist() == ["-12345678901234567891", "5"]
    # 1e20 is a float64 exactly: the column stays numeric
    assert df["exact"].dtype == np.float64 and df["exact"].tolist() == [1e20, 1.5]
    assert df["int"].dtype == np.int64 and df["int"].tolist() == [2**53 + 1, 1]
    assert df["plain"].dtype == np.float64
    assert len(reads) == 2  # the columns with large numbers were read again as text
    reads.clear()
    small = write_bytes(tmp_path / "small.csv", b"a,b\n1.5,2\n2.5,1e15\n")
    assert read_table(small).dtypes.astype(str).tolist() == ["float64", "float64"]
    assert len(reads) == 1  # ordinary floats are read once


def test_a_long_integer_after_the_sampled_block_stays_text(tmp_path: Path) -> None:
    n = 150_000  # > 1 MiB, so the first block is all small integers
    rows = [f"{i},{i},x" for i in range(n)]
    rows[-2] = "1,2.5,x"
    rows[-1] = '7,12345678901234567891,"two\nlines"'  # (the retry that allows line breaks)
    path = write_bytes(tmp_path / "late.csv", ("a,b,c\n" + "\n".join(rows) + "\n").encode())
    df = read_table(path)
    assert df["a"].dtype == np.int64
    assert df["b"].dtype == object and df["b"].iloc[-1] == "12345678901234567891"
    assert df["b"].iloc[-2] == "2.5" and df["b"].iloc[3] == "3"
    late_float = write_bytes(tmp_path / "late_float.csv", (
        "a\n" + "\n".join(str(i) for i in range(n)) + "\n12345678901234567.5\n").encode())
    assert read_table(late_float)["a"].dtype == np.float64  # not an integer: a float


def test_as_text_reads_every_cell_as_written(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "t.csv",
                       b"zip,n,d,s\n02139,1,2024-01-02, x\n2139.0,,2024-01-03,NA\n")
    df = read_table(path, as_text=True)
    assert df.to_dict("list") == {"zip": ["02139", "2139.0"], "n": ["1", ""],
                                  "d": ["2024-01-02", "2024-01-03"], "s": [" x", "NA"]}
    categorical = read_table(path, as_text=True, categorical_text=True)
    assert all(isinstance(t, pd.CategoricalDtype) for t in categorical.dtypes)
    assert categorical["zip"].tolist() == ["02139", "2139.0"]
    table = pa.table({"i": pa.array([2**63, 5], pa.uint64()), "f": [2139.0, 0.1],
                      "nan": [float("nan"), 1.5], "t": ["02139", None],
                      "day": pa.array([19000, 19001], pa.date32())})
    pq.write_table(table, tmp_path / "t.parquet")
    back = read_table(tmp_path / "t.parquet", as_text=True)
    assert back["i"].tolist() == ["9223372036854775808", "5"]
    assert back["f"].tolist() == ["2139", "0.1"]
    assert back["day"].tolist() == ["2022-01-08", "2022-01-09"]
    assert back["t"].tolist() == ["02139", None]
    assert back["nan"].dtype == np.float64  # NaN has no text that reads back as NaN


def test_parquet_integers_and_decimals_stay_exact(tmp_path: Path) -> None:
    table = pa.table({
        "u": pa.array([2**64 - 1, 5], pa.uint64()),
        "big": pa.array([decimal.Decimal("12345678901234567891"), decimal.Decimal(1)],
                        pa.decimal128(38, 0)),
        "cents": pa.array([decimal.Decimal("-1.13"), None], pa.decimal128(10, 2)),
    })
    pq.write_table(table, tmp_path / "d.parquet")
    df = read_table(tmp_path / "d.parquet")
    assert df["u"].dtype == np.uint64 and df["u"].tolist() == [2**64 - 1, 5]
    assert df["big"].tolist() == ["12345678901234567891", "1"]  # float64 would round it
    assert df["cents"].dtype == np.float64
    assert df["cents"].iloc[0] == -1.13  # the float nearest -1.13, not -1.1300000000000001
    assert np.isnan(df["cents"].iloc[1])


def test_bom_spaces_in_names_blank_lines_and_quoted_newlines(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "b.csv",
                       b'\xef\xbb\xbf\n a , b\n1,"two\nlines"\n\n3, x\n')
    df = read_table(path)
    assert list(df.columns) == ["a", "b"]
    assert df["a"].tolist() == [1, 3] and df["b"].tolist() == ["two\nlines", " x"]


def test_text_and_numbers_mixed_column_reads_as_text(tmp_path: Path) -> None:
    df = read_table(write_bytes(tmp_path / "m.csv", b"a\n1\nfoo\n"))
    assert df["a"].tolist() == ["1", "foo"]


def test_returns_numpy_backed_dtypes(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv",
                       b"s,i,f,b,d\nx,1,1.5,true,2021-01-02\ny,2,,false,2021-01-03\n")
    df = read_table(path)
    assert df.dtypes.astype(str).tolist() == ["object", "int64", "float64", "bool",
                                              "datetime64[ms]"]
    assert not any(isinstance(t, pd.ArrowDtype) for t in df.dtypes)


# --------------------------------------------------------------------------- input errors


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"input file not found: .*nope\.csv"):
        read_table(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="is a folder"):
        read_table(tmp_path)


@pytest.mark.parametrize("content", [b"", b"\n\n  \r\n", b"\xef\xbb\xbf"])
def test_empty_file(tmp_path: Path, content: bytes) -> None:
    with pytest.raises(InputError, match=r"e\.csv is empty"):
        read_table(write_bytes(tmp_path / "e.csv", content))


def test_header_only(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="has a header but no data rows"):
        read_table(write_bytes(tmp_path / "h.csv", b"a,b\n"))
    pd.DataFrame({"a": pd.Series([], dtype="int64")}).to_parquet(tmp_path / "h.parquet")
    with pytest.raises(InputError, match="has no rows"):
        read_table(tmp_path / "h.parquet")


def test_not_utf8_names_line_and_byte(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "l.csv", b"a,b\n1,x\n2,caf\xe9\n")
    with pytest.raises(InputError) as info:
        read_table(path)
    message = str(info.value)
    assert "l.csv is not UTF-8" in message and "line 3" in message
    assert "byte 13" in message and "0xe9" in message and "re-save the file as UTF-8" in message
    header = write_bytes(tmp_path / "h.csv", b"a,caf\xe9\n1,2\n")
    with pytest.raises(InputError, match=r"line 1, byte 5"):
        read_table(header)


def test_not_utf8_far_into_the_file(tmp_path: Path) -> None:
    body = b"".join(b"%d,abc\n" % i for i in range(200_000))
    path = write_bytes(tmp_path / "far.csv", b"a,b\n" + body + b"1,\xff\n")
    with pytest.raises(InputError, match=r"line 200002, byte"):
        read_table(path)


def test_duplicate_column_names(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", b"a,b,a,c,b\n1,2,3,4,5\n")
    with pytest.raises(InputError, match=r"duplicate column names: 'a', 'b'; rename"):
        read_table(path)
    spaced = write_bytes(tmp_path / "s.csv", b"a, a\n1,2\n")
    with pytest.raises(InputError, match="duplicate column names: 'a'"):
        read_table(spaced)


@pytest.mark.parametrize(("content", "line", "got"), [
    (b"a,b\n1,x\n2,y,z\n3,w\n", 3, 3),
    (b"a;b\n1;x\n2\n3;w\n", 3, 1),
    (b'a,b\n1,"multi\nline"\n2,y,z\n', 4, 3),
])
def test_ragged_row_names_the_line(tmp_path: Path, content: bytes, line: int,
                                   got: int) -> None:
    with pytest.raises(InputError, match=rf"r\.csv line {line} has {got} field\(s\) but the "
                                         rf"header has 2"):
        read_table(write_bytes(tmp_path / "r.csv", content))


def test_ragged_row_after_the_first_block(tmp_path: Path) -> None:
    rows = [f"{i},x" for i in range(300_000)]
    rows[250_000] = "1,x,extra"
    path = write_bytes(tmp_path / "r.csv", ("a,b\n" + "\n".join(rows) + "\n").encode())
    with pytest.raises(InputError, match=r"line 250002 has 3 field\(s\)"):
        read_table(path)


def test_unreadable_parquet(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cannot read .*g\.parquet as Parquet"):
        read_table(write_bytes(tmp_path / "g.parquet", b"this is not parquet at all"))
    pd.DataFrame({"a": range(1000)}).to_parquet(tmp_path / "full.parquet")
    data = (tmp_path / "full.parquet").read_bytes()
    with pytest.raises(InputError, match="as Parquet"):
        read_table(write_bytes(tmp_path / "cut.parquet", data[: len(data) // 2]))
    with pytest.raises(InputError, match=r"column 'b' is not in .*full\.parquet"):
        read_table(tmp_path / "full.parquet", columns=["b"])


# --------------------------------------------------------------------------- atomic writes


def test_failed_write_leaves_no_output_and_no_temp(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def half_then_fail(table: pa.Table, path: object, *args: object) -> None:
        Path(str(path)).write_text("a,b\n1,")
        raise OSError("disk full")

    monkeypatch.setattr(anonkit_write, "write_csv", half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "out.csv")
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_the_previous_file(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.csv"
    write_table(pd.DataFrame({"a": [1]}), target)
    before = target.read_bytes()

    def fail(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(anonkit_write, "write_csv", fail)
    with pytest.raises(RuntimeError):
        write_table(pd.DataFrame({"a": [2]}), target)
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_atomic_write_renames_on_success(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    with atomic_write(target) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".report.json.")
        assert tmp.exists() and not target.exists()
        tmp.write_text("{}")
    assert target.read_text() == "{}"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_atomic_write_cleans_up_on_error(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")
    with pytest.raises(KeyError), atomic_write(target) as tmp:
        tmp.write_text("new, half")
        raise KeyError("x")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_atomic_write_is_the_owners_keeps_permissions_and_uses_umask(tmp_path: Path) -> None:
    """A new output is 0600 (issue 21, item 11), or the mode set_output_mode gives less the
    umask; a file replaced keeps its own mode."""
    target = tmp_path / "f.txt"
    with atomic_write(target) as tmp:
        tmp.write_text("1")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    target.chmod(0o644)
    with atomic_write(target) as tmp:
        tmp.write_text("2")
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    umask = os.umask(0o027)
    try:
        set_output_mode("666")
        with atomic_write(tmp_path / "g.txt") as tmp:
            tmp.write_text("3")
        assert stat.S_IMODE((tmp_path / "g.txt").stat().st_mode) == 0o640
    finally:
        set_output_mode(0o600)
        os.umask(umask)
    with pytest.raises(InputError, match="owner read and write"):
        set_output_mode("444")


def test_atomic_write_bad_destinations(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist; create it first"), \
            atomic_write(tmp_path / "missing" / "f.csv"):
        pass
    with pytest.raises(InputError, match="is a directory"), atomic_write(tmp_path):
        pass


def test_write_atomic_text_bytes_and_mode(tmp_path: Path) -> None:
    target = tmp_path / "secret"
    assert write_atomic(target, "é\n", mode=0o600) == target
    assert target.read_bytes() == "é\n".encode() and stat.S_IMODE(target.stat().st_mode) == 0o600
    write_atomic(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # an existing file keeps its mode
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]


def test_write_atomic_exclusive_never_replaces(tmp_path: Path) -> None:
    target = tmp_path / "h.secret"
    write_atomic(target, "first", exclusive=True)
    with pytest.raises(FileExistsError):
        write_atomic(target, "second", exclusive=True)
    assert target.read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["h.secret"]  # no temporary file left


def test_atomic_write_refusal_is_the_callers(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "f"
    with pytest.raises(FileNotFoundError), atomic_write(missing, refuse=system_error):
        pass
    with pytest.raises(RuntimeError, match="no history here"), \
            atomic_write(missing, refuse=lambda path, exc: RuntimeError("no history here")):
        pass


def test_refuse_collisions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one rule for outputs: never an input (by path, ``..``, a symbolic or a hard
    link), never another output; a new file or another file is fine."""
    data = write_bytes(tmp_path / "data.csv", b"a\n1\n")
    kept = [(data, "the input")]
    with pytest.raises(InputError, match=r"the release .*data.csv is the input \(.*data.csv\);"
                                         r" writing it would destroy that file"):
        refuse_collisions([(tmp_path / "data.csv", "release")], kept)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="is the input"):
        refuse_collisions([(tmp_path / "sub" / ".." / "data.csv", "release")],
                          [(Path("data.csv"), "the input")])
    (tmp_path / "link.csv").symlink_to(data)
    with pytest.raises(InputError, match="is the input"):
        refuse_collisions([(tmp_path / "link.csv", "report")], kept)
    os.link(data, tmp_path / "hard.csv")
    with pytest.raises(InputError, match="is the input"):
        refuse_collisions([(data, "report")], [(tmp_path / "hard.csv", "the input")])
    with pytest.raises(InputError, match=r"the report .*r.csv and the release .*r.csv are one "
                                         r"file"):
        refuse_collisions([(tmp_path / "r.csv", "release"), (Path("r.csv"), "report")], kept)
    refuse_collisions([(tmp_path / "release.csv", "release")], kept)  # a new file is fine
    refuse_collisions([(write_bytes(tmp_path / "other.csv", b"a\n1\n"), "release")], kept)


# --------------------------------------------------------------------------- speed


@pytest.mark.slow
def test_reading_and_writing_grow_linearly(tmp_path: Path) -> None:
    data = make_census(1_000_000, seed=2).data[
        ["age", "sex", "race", "marital-status", "education", "native-country",
         "occupation", "zip", "disease"]]
    small = data.head(100_000)
    for name in ["big.csv", "big.parquet"]:
        path, small_path = tmp_path / name, tmp_path / f"small-{name}"
        ratio = growth(lambda p=small_path: write_table(small, p),
                       lambda p=path: write_table(data, p))
        assert ratio < GROWTH_BOUND, (name, "write", ratio)
        ratio = growth(lambda p=small_path: read_table(p), lambda p=path: read_table(p))
        assert ratio < GROWTH_BOUND, (name, "read", ratio)
    back = read_table(tmp_path / "big.csv")
    assert back.shape == data.shape and back["zip"].dtype == object


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_csv_writer_quotes_what_it_must_and_reads_back(tmp_path: Path, sep: str) -> None:
    import csv

    awkward = ["plain", "", None, f"a{sep}b", 'say "hi"', "two\nlines", "cr\rhere",
               " spaced ", "ünïcode ✓", "x" * (3 << 20)]  # longer than the writer's block
    n = len(awkward)
    # a dictionary column in chunks with different dictionaries, the second sliced
    labels = ["b", None, f"c{sep}d", 'q"', "b", "b", "b", "b", "b", "b", "b"]
    dictionary = pa.chunked_array([pa.array(labels[:3]).dictionary_encode(),
                                   pa.array(labels[3:]).dictionary_encode().slice(0, n - 3)])
    table = pa.table({
        "text": pa.chunked_array([awkward[:4], awkward[4:]]),
        "large": pa.array(awkward, type=pa.large_string()),
        "dict": dictionary,
        f"odd{sep}name": pa.array(range(n)),
        "sliced": pa.array(["pad", *awkward]).slice(1),
    })
    path = tmp_path / "w.csv"
    anonkit_write.write_csv(table, path, sep)
    csv.field_size_limit(1 << 30)
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh, delimiter=sep))
    assert rows[0] == ["text", "large", "dict", f"odd{sep}name", "sliced"]
    assert len(rows) == n + 1
    for i, row in enumerate(rows[1:]):
        text = awkward[i] or ""
        assert row == [text, text, labels[i] or "", str(i), text]
    lines = path.read_bytes().split(b"\n")
    assert lines[1].decode() == sep.join(["plain", "plain", "b", "0", "plain"])  # no quotes
    assert lines[2].decode() == sep.join(['""', '""', "", "1", '""'])  # "" is not missing
    assert lines[3].decode() == sep.join(["", "", f'"c{sep}d"', "2", ""])  # missing: empty
    back = read_table(path, sep=sep, columns=["text", "dict"])
    assert back["text"].iloc[3] == f"a{sep}b" and back["text"].iloc[4] == 'say "hi"'
    assert back["dict"].iloc[3] == 'q"'
    assert back["text"].iloc[n - 1] == awkward[n - 1]  # 3 MiB: longer than a read block


def test_a_first_row_longer_than_the_sample_block_reads(tmp_path: Path) -> None:
    long = "y" * (20 << 20)  # longer than the sample block and than a read block
    path = write_bytes(tmp_path / "long.csv", f"a,b\n1,{long}\n2,z\n".encode())
    back = read_table(path)
    assert back["a"].tolist() == [1, 2] and back["b"].tolist() == [long, "z"]


def test_csv_writer_refuses_a_code_past_its_dictionary(tmp_path: Path) -> None:
    from anonkit.data._csv_writer import write_csv as write_rows

    labels = np.array([0, 1], dtype=np.int64)
    columns = [[(0, 1, 1, None, np.array([5], dtype=np.int32), labels, b"a")]]
    fd = os.open(tmp_path / "x.csv", os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(ValueError, match="past its dictionary"):
            write_rows(fd, b"h\n", columns, 1, b",")
    finally:
        os.close(fd)


def test_csv_writer_writes_a_header_for_a_table_without_rows(tmp_path: Path) -> None:
    empty = pa.table({"a": pa.array([], pa.string()), "b": pa.array([], pa.int64())})
    anonkit_write.write_csv(empty, tmp_path / "e.csv")
    assert (tmp_path / "e.csv").read_text() == "a,b\n"
    no_chunks = pa.table({"a": pa.chunked_array([], pa.string())})
    anonkit_write.write_csv(no_chunks, tmp_path / "n.csv")
    assert (tmp_path / "n.csv").read_text() == "a\n"


def test_csv_writer_keeps_row_order_across_blocks_and_chunks(tmp_path: Path) -> None:
    n = 50_000  # several of the writer's blocks, formatted by different threads
    numbers = np.arange(n)
    chunked = pa.chunked_array([pa.array(numbers[i:i + 7_000].astype(str))
                                for i in range(0, n, 7_000)])
    labels = pa.DictionaryArray.from_arrays(pa.array(numbers % 3, pa.int32()),
                                            pa.array(["x", "y,z", ""]))
    anonkit_write.write_csv(pa.table({"n": chunked, "label": labels}), tmp_path / "b.csv")
    lines = (tmp_path / "b.csv").read_text().splitlines()
    assert len(lines) == n + 1
    cells = ["x", '"y,z"', '""']  # quoted where they must be
    expected = [f"{i},{cells[i % 3]}" for i in range(n)]
    assert lines[1:] == expected


@pytest.mark.parametrize("direct_refused", [False, True])
def test_csv_writer_direct_output_is_the_buffered_output(tmp_path: Path, direct_refused: bool,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Large outputs are opened with O_DIRECT where the file system takes it, and as usual
    where it refuses the flag (forced here): the bytes are the same as a buffered write's
    either way, tail included (not a whole block)."""
    n = 123_457
    table = pa.table({"n": pa.array(np.arange(n)),
                      "label": pa.DictionaryArray.from_arrays(
                          pa.array(np.arange(n) % 5, pa.int32()),
                          pa.array(["a", "bb,b", "c" * 300, 'd"d', ""]))})
    monkeypatch.setattr(anonkit_write, "_DIRECT_ROWS", 10**12)
    anonkit_write.write_csv(table, tmp_path / "buffered.csv")
    real_open = os.open
    refused: list[str] = []

    def open_refusing_direct(path: object, flags: int, *args: object) -> int:
        if flags & getattr(os, "O_DIRECT", 0):
            refused.append(str(path))
            raise OSError(errno.EINVAL, "direct I/O refused")
        return real_open(path, flags, *args)

    if direct_refused:
        monkeypatch.setattr(anonkit_write.os, "open", open_refusing_direct)
    monkeypatch.setattr(anonkit_write, "_DIRECT_ROWS", 0)
    anonkit_write.write_csv(table, tmp_path / "direct.csv")
    buffered = (tmp_path / "buffered.csv").read_bytes()
    assert len(buffered) > (8 << 20) and len(buffered) % 4096  # > one stage, odd tail
    assert (tmp_path / "direct.csv").read_bytes() == buffered
    if direct_refused and hasattr(os, "O_DIRECT"):
        assert refused == [str(tmp_path / "direct.csv")]


def test_a_column_of_mixed_types_is_written_as_the_text_of_each_value(tmp_path: Path) -> None:
    """Arrow takes no column of numbers and text together: it is written as text, the rest
    of the table as it is."""
    write_table(pd.DataFrame({"a": [1, "x", 2.5, None], "b": [1, 2, 3, 4]}),
                tmp_path / "m.csv")
    assert (tmp_path / "m.csv").read_text().splitlines() == ["a,b", "1,1", "x,2", "2.5,3",
                                                             ",4"]
