"""Hostile and careless input files (issue 21, items 4, 5, 6 and 14, the reading side): each
is refused with exit code 2 and one line naming the problem (the limit, the line, the
column, what the path is), never a traceback, an hour of work or all the memory; and the
refused command creates, removes and changes nothing in its folder.

Big compressed inputs are built from concatenated gzip members of one repeated block (a
gzip stream may hold several; readers join them), so a gibibyte of text costs a kilobyte
to write and nothing is ever held whole.
"""

from __future__ import annotations

import bz2
import gzip
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from anonkit.cli import main
from anonkit.data import read as reader
from anonkit.data.read import (
    MAX_COLUMNS,
    MAX_FIELD_BYTES,
    MAX_LINE_BYTES,
    MAX_NUMBER_DIGITS,
    default_max_input_bytes,
    first_data_line,
    read_arrow,
    read_table,
)
from anonkit.data.write import write_table
from anonkit.errors import InputError
from complexity import GROWTH_BOUND, growth
from hostile.snapshots import snapshot

README = Path(__file__).resolve().parents[2] / "README.md"
ROWS = b"a,b\n1,x\n1,x\n2,y\n2,y\n"
MIB = 1 << 20


def anonymize(source: str, *extra: str) -> list[str]:
    return ["anonymize", source, "-o", "out.csv", "--qi", "a", "-k", "2", "--insensitive", "*",
            *extra]


def check(source: str, *extra: str) -> list[str]:
    return ["check", source, "--qi", "a", "-k", "2", *extra]


COMMANDS = pytest.mark.parametrize("command", [anonymize, check], ids=["anonymize", "check"])
Command = Callable[..., list[str]]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder, the current one: whatever a command writes lands in it."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(argv: Iterable[object]) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in argv])
    return result.exit_code, result.output


def refused(folder: Path, argv: list[str], *fragments: str, absent: Iterable[str] = ()
            ) -> str:
    """Run ``argv`` in ``folder``: exit code 2, one line naming every fragment (and none of
    ``absent``: values of the table), nothing in the folder created or changed."""
    before = snapshot(folder)
    code, output = run(argv)
    assert code == 2, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    for value in absent:
        assert value not in lines[0], (value, lines[0])
    assert snapshot(folder) == before
    return lines[0]


def write_gz(path: Path, *parts: tuple[bytes, int]) -> Path:
    """A gzip file of ``block`` repeated ``times`` for each part, one member per repeat:
    written a member at a time, never holding the text."""
    with open(path, "wb") as fh:
        for block, times in parts:
            member = gzip.compress(block)
            for _ in range(times):
                fh.write(member)
    return path


# -- item 4: compressed input that used to hang or fill the memory --------------------------


@COMMANDS
def test_a_gigabyte_first_line_in_a_small_gz_is_refused_at_the_line_limit(
        folder: Path, command: Command) -> None:
    # 1 MB on disk, one line of 1 GiB: the old scan split everything read so far again at
    # every 64 KiB, for hours; now it stops at the line limit
    write_gz(folder / "long.csv.gz", (b"a" * MIB, 1024))
    assert (folder / "long.csv.gz").stat().st_size < 2 * MIB
    refused(folder, command("long.csv.gz"), "long.csv.gz line 1 is longer than 128 MiB",
            "the most a line (a row) may hold")


def test_the_first_line_scan_is_linear(tmp_path: Path) -> None:
    def first_line_of(mib: int) -> Callable[[], object]:
        path = write_gz(tmp_path / f"line{mib}.csv.gz", (b"a" * MIB, mib), (b"\n1\n", 1))
        return lambda: first_data_line(path)

    assert first_line_of(4)() == 2
    assert growth(first_line_of(4), first_line_of(40)) < GROWTH_BOUND


@pytest.mark.parametrize("command", ["anonymize", "check"])
def test_a_field_of_gigabytes_is_refused_in_bounded_memory(folder: Path, command: str) -> None:
    """4 MB of gzip holding a 4 GiB field (line 3) reached 4.3 GB of memory; it is refused
    at the line limit, the process staying far below a gigabyte and a half."""
    write_gz(folder / "field.csv.gz", (b"a,b\n1,x\n2,", 1), (b"y" * (4 * MIB), 1024),
             (b"\n3,z\n", 1))
    before = snapshot(folder)
    argv = anonymize("field.csv.gz") if command == "anonymize" else check("field.csv.gz")
    process = subprocess.Popen([sys.executable, "-m", "anonkit", *argv], cwd=folder,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    out, err = process.stdout.read(), process.stderr.read().decode()  # (one line at most)
    # reaped here, not by Popen: wait4 tells this child's own peak memory
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "field.csv.gz line 3 is longer than 128 MiB" in lines[0], err
    assert not out.strip()
    assert usage.ru_maxrss * 1024 < 1.5 * (1 << 30), usage.ru_maxrss  # (KiB on Linux)
    assert snapshot(folder) == before


def _bomb(path: Path) -> Path:
    """A small gzip file of 16 MiB of rows."""
    return write_gz(path, (b"a,b\n", 1), (b"1,x\n2,y\n" * (1 << 15), 64))


def test_a_decompression_bomb_stops_at_max_input_bytes(folder: Path) -> None:
    _bomb(folder / "bomb.csv.gz")
    refused(folder, anonymize("bomb.csv.gz", "--max-input-bytes", "1M"),
            "bomb.csv.gz decompresses to more than 1,048,576 bytes (1 MiB)",
            "--max-input-bytes")


def test_check_stops_a_decompression_bomb_at_max_input_bytes(folder: Path) -> None:
    _bomb(folder / "bomb.csv.gz")
    refused(folder, check("bomb.csv.gz", "--max-input-bytes", "1M"),
            "decompresses to more than 1,048,576 bytes")


def test_python_takes_max_input_bytes_as_a_keyword(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / "bomb.csv.gz")
    with pytest.raises(InputError, match=r"decompresses to more than 1,048,576 bytes"):
        read_table(bomb, max_input_bytes="1M")
    plain = tmp_path / "plain.csv"
    plain.write_bytes(ROWS)
    with pytest.raises(InputError, match=rf"plain\.csv is {len(ROWS)} bytes, more than 10 "):
        read_table(plain, max_input_bytes=10)
    assert len(read_table(plain, max_input_bytes=len(ROWS))) == 4
    parquet = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": ["x" * 1000] * 100}), parquet, compression="zstd",
                   use_dictionary=False)
    size = parquet.stat().st_size
    with pytest.raises(InputError, match=r"holds \d[\d,]* bytes once decompressed"):
        read_table(parquet, max_input_bytes=size + 1)  # small on disk, not decompressed


@pytest.mark.parametrize("given", ["10X", "0", "-5", "ten"])
def test_a_malformed_max_input_bytes_is_refused(folder: Path, given: str) -> None:
    (folder / "in.csv").write_bytes(ROWS)
    refused(folder, anonymize("in.csv", "--max-input-bytes", given), "--max-input-bytes must",
            repr(given))


@COMMANDS
def test_a_plain_file_past_max_input_bytes_is_refused(folder: Path, command: Command) -> None:
    (folder / "in.csv").write_bytes(ROWS)
    refused(folder, command("in.csv", "--max-input-bytes", "10"),
            f"in.csv is {len(ROWS)} bytes, more than 10", "--max-input-bytes")


def test_publish_takes_max_input_bytes(folder: Path) -> None:
    (folder / "in.csv").write_bytes(b"id,a,b\n1,1,x\n2,1,x\n3,2,y\n4,2,y\n")
    refused(folder, ["release", "publish", "in.csv", "--dataset", "d", "--key", "id",
                     "--qi", "a", "--insensitive", "b", "-k", "2", "-o", "r1.csv",
                     "--history", "h.db", "--max-input-bytes", "10"],
            "in.csv is 31 bytes, more than 10")


def test_max_input_bytes_in_a_job_file(folder: Path) -> None:
    _bomb(folder / "bomb.csv.gz")
    (folder / "job.toml").write_text('input = "bomb.csv.gz"\noutput = "out.csv"\n'
                                     'quasi_identifiers = "a"\ninsensitive = "*"\nk = 2\n'
                                     'max_input_bytes = "1M"\n')
    refused(folder, ["anonymize", "--config", "job.toml"],
            "decompresses to more than 1,048,576 bytes")


def test_the_default_limit_is_documented_and_derived_as_documented(folder: Path) -> None:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert default_max_input_bytes() == 2 * memory
    readme = " ".join(README.read_text().split())
    assert "`--max-input-bytes SIZE` [`max_input_bytes`]" in readme
    assert "default twice the machine's physical memory, `os.sysconf` page size × physical " \
           "pages" in readme
    for limit, text in ((MAX_LINE_BYTES, "a line (a row, the header too) holds at most 128 MiB"),
                        (MAX_FIELD_BYTES, "a cell 32 MiB"),
                        (MAX_NUMBER_DIGITS, "4,300 digits"),
                        (MAX_COLUMNS, "at most 100,000 columns")):
        assert text in readme, (limit, text)
    assert (MAX_LINE_BYTES, MAX_FIELD_BYTES, MAX_NUMBER_DIGITS, MAX_COLUMNS) == \
        (128 * MIB, 32 * MIB, 4300, 100_000)
    help_text = " ".join(run(["anonymize", "--help"])[1].split())
    assert "--max-input-bytes SIZE" in help_text and "twice this machine's memory" in help_text
    (folder / "in.csv").write_bytes(ROWS)
    message = refused(folder, anonymize("in.csv", "--max-input-bytes", "10"))
    assert f"default: twice this machine's memory, {reader._size_text(2 * memory)}" in message


@COMMANDS
def test_a_cell_past_the_cell_limit_is_refused(folder: Path, command: Command) -> None:
    cell = b"y" * (MAX_FIELD_BYTES + 1)  # (in the column both commands read)
    (folder / "cell.csv").write_bytes(b"a,b\n1,x\n" + cell + b",y\n3,z\n")
    refused(folder, command("cell.csv"), "cell.csv line 3 (data row 2)", "column 'a'",
            "longer than the 32 MiB a cell may hold", absent=["yyyy"])


def test_a_twenty_megabyte_number_is_refused_as_a_number(folder: Path) -> None:
    number = b"9" * 20_000_000
    (folder / "big.csv").write_bytes(b"a,b\n1,x\n1,x\n" + number + b",y\n" + number + b",y\n")
    refused(folder, anonymize("big.csv"), "big.csv line 4", "column 'a'",
            "a number of 20,000,000 digits, more than the 4,300", "--kind a=categorical",
            absent=["99999"])
    # check reads cells as text, where it is a label like any other (no crash, a verdict)
    code, output = run(check("big.csv"))
    assert code == 0 and "internal error" not in output, output[:300]


@pytest.mark.parametrize("digits", [400, 1000, 4300])
def test_a_long_integer_within_the_limit_stays_exact_text(tmp_path: Path, digits: int) -> None:
    # 310 to 4,300 digits crashed too: int(float(literal)) of an infinite float
    number = "7" * digits
    path = tmp_path / "n.csv"
    path.write_text(f"a\n1\n{number}\n")
    assert read_table(path)["a"].tolist() == ["1", number]


# -- item 5: wide tables ----------------------------------------------------------------------


@COMMANDS
@pytest.mark.parametrize("width", [MAX_COLUMNS + 1, 1_000_000])
def test_a_table_wider_than_the_column_limit_is_refused(folder: Path, command: Command,
                                                         width: int) -> None:
    header = ",".join(["a", *(f"c{i}" for i in range(1, width))])
    (folder / "wide.csv").write_text(header + "\n" + ",".join(["1"] * width) + "\n")
    refused(folder, command("wide.csv"), f"wide.csv has {width:,} columns, more than the "
            f"{MAX_COLUMNS:,} anonkit reads")


def test_a_wide_parquet_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MAX_COLUMNS", 10)
    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table({f"c{i}": [1] for i in range(11)}), path)
    with pytest.raises(InputError, match=r"has 11 columns, more than the 10 anonkit reads"):
        read_table(path)
    with pytest.raises(InputError, match=r"has 11 columns"):
        reader.table_columns(path)


def test_wide_tables_read_and_write_in_linear_time(tmp_path: Path) -> None:
    """20,000 columns took two minutes to write (set_column in a loop); reading and writing
    are linear in the columns now."""

    def round_trip(width: int) -> Callable[[], object]:
        source = tmp_path / f"in{width}.csv"
        source.write_text(",".join(f"c{i}" for i in range(width)) + "\n"
                          + "\n".join(",".join([str(r), "x", "2021-01-01"] * (width // 3))
                                      for r in range(3)) + "\n")

        def run_once() -> None:
            table = read_arrow(source, dictionary_text=True)
            write_table(table, tmp_path / f"out{width}.csv")
            write_table(read_table(source, categorical_text=True), tmp_path / f"o{width}.csv")
        return run_once

    assert growth(round_trip(600), round_trip(6000), runs=1) < GROWTH_BOUND


# -- item 6: internal errors where exit 2 was due -----------------------------------------------


@COMMANDS
@pytest.mark.parametrize("name", ["cr.csv", "cr.csv.gz"])
def test_carriage_return_only_line_ends_are_refused(folder: Path, command: Command,
                                                    name: str) -> None:
    data = ROWS.replace(b"\n", b"\r")
    (folder / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    refused(folder, command(name), f"{name} ends its lines with a carriage return (CR) alone",
            "convert the line ends to LF")


def _zoned(path: Path, zone: str) -> Path:
    times = pa.array([1_600_000_000_000 + day * 86_400_000 * 100 for day in range(6)],
                     pa.timestamp("ms", zone))  # about 100 days apart: across DST changes
    pq.write_table(pa.table({"a": times, "b": list("xxyyxy")}), path)
    return path


def test_a_time_zone_aware_parquet_timestamp_as_a_qi_is_refused(folder: Path) -> None:
    _zoned(folder / "tz.parquet", "America/New_York")
    refused(folder, anonymize("tz.parquet"), "column 'a' of tz.parquet",
            "time zone America/New_York at different offsets from UTC",
            "convert the column to UTC")
    code, output = run(check("tz.parquet"))  # as text: labels like any other
    assert code in (0, 2) and "internal error" not in output and "FAIL" in output, output


def test_a_time_zone_the_system_does_not_know_is_refused(folder: Path) -> None:
    _zoned(folder / "tz.parquet", "Mars/Olympus")
    refused(folder, anonymize("tz.parquet"), "column 'a' of tz.parquet",
            "time zone Mars/Olympus that this system's time zone database does not know")


@pytest.mark.parametrize("zone", ["UTC", "+05:30"])
def test_a_timestamp_at_one_offset_is_still_anonymized(folder: Path, zone: str) -> None:
    _zoned(folder / "tz.parquet", zone)
    code, output = run(anonymize("tz.parquet"))
    assert code == 0 and (folder / "out.csv").exists(), output


@COMMANDS
@pytest.mark.parametrize(("encoding", "said"), [
    ("rot13", "is not a text encoding"), ("base64", "is not a text encoding"),
    ("utf-16", "does not write ASCII characters as one byte each"),
    ("klingon", "unknown encoding 'klingon'")])
def test_an_encoding_that_cannot_read_a_csv_is_refused(folder: Path, command: Command,
                                                       encoding: str, said: str) -> None:
    (folder / "in.csv").write_bytes(ROWS)
    refused(folder, command("in.csv", "--encoding", encoding), said)


@COMMANDS
@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_input_is_refused(folder: Path, command: Command) -> None:
    path = folder / "secret.csv"
    path.write_bytes(ROWS)
    path.chmod(0)
    try:
        refused(folder, command("secret.csv"), "cannot read input file secret.csv: permission "
                "denied")
    finally:
        path.chmod(0o600)


@COMMANDS
def test_an_input_the_system_refuses_to_open_is_refused(folder: Path, command: Command,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same as root (which chmod does not stop): the reader's open is refused."""
    (folder / "secret.csv").write_bytes(ROWS)

    def refusing_open(path: object, *args: object, **kwargs: object) -> object:
        if Path(str(path)).name == "secret.csv":
            raise PermissionError(13, "Permission denied", str(path))
        return open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(reader, "open", refusing_open, raising=False)
    refused(folder, command("secret.csv"), "cannot read input file secret.csv: permission "
            "denied", "chmod u+r")


@pytest.mark.parametrize(("hierarchy", "said"), [
    ("/dev/zero", "hierarchy file /dev/zero is a device, not a file"),
    ("folder", "hierarchy file folder is a folder"),
    ("nope.csv", "hierarchy file not found: nope.csv")])
def test_a_hierarchy_that_is_no_file_is_refused(folder: Path, hierarchy: str, said: str) -> None:
    (folder / "in.csv").write_bytes(ROWS)
    (folder / "folder").mkdir()
    refused(folder, anonymize("in.csv", "--hierarchy", f"b={hierarchy}", "--qi", "a,b"), said)


@COMMANDS
@pytest.mark.parametrize("name", ["one.csv.gz", "one.csv.bz2"])
def test_a_single_line_compressed_file_is_refused(folder: Path, command: Command,
                                                  name: str) -> None:
    compress = gzip.compress if name.endswith(".gz") else bz2.compress
    (folder / name).write_bytes(compress(b"a,b"))  # a header, and no line end
    refused(folder, command(name), f"{name} has a header but no data rows")


# -- item 14: messages that named the wrong problem -------------------------------------------


@COMMANDS
@pytest.mark.parametrize(("kind", "said"), [
    ("directory", "is a folder"),
    ("fifo", "is a named pipe (FIFO), which can be read only once"),
    ("device", "is a device, not a file")])
def test_an_input_that_is_no_file_is_named_for_what_it_is(folder: Path, command: Command,
                                                          kind: str, said: str) -> None:
    if kind == "directory":
        (folder / "in.csv").mkdir()
        source = "in.csv"
    elif kind == "fifo":
        os.mkfifo(folder / "in.csv")
        source = "in.csv"
    else:
        source = "/dev/zero"
    message = refused(folder, command(source), f"input file {source} {said}")
    assert "not found" not in message


def _quoted_rows(opened: int, closed: int | None, total: int) -> bytes:
    """``total`` lines of ``a,b`` rows (``b`` a secret); a quote opens at the start of line
    ``opened`` and closes at the end of line ``closed`` (never, if None): the lines between
    read as one field, so the row has one field where the header has two."""
    lines = ["a,b"]
    for number in range(2, total + 1):
        line = f"{number % 2},secret-{number}"
        if number == opened:
            line = '"' + line
        elif number == closed:
            line = line + '"'
        lines.append(line)
    return ("\n".join(lines) + "\n").encode()


@COMMANDS
def test_an_unterminated_quote_is_reported_on_the_line_it_opens(folder: Path,
                                                                command: Command) -> None:
    (folder / "q.csv").write_bytes(_quoted_rows(13, None, 700))
    refused(folder, command("q.csv"), "q.csv line 13 opens a quote that is never closed",
            "to line 700", absent=["secret-"])


@COMMANDS
def test_a_quote_closed_lines_later_is_reported_where_it_opens(folder: Path,
                                                               command: Command) -> None:
    (folder / "q.csv").write_bytes(_quoted_rows(13, 601, 700))
    refused(folder, command("q.csv"), "q.csv line 13 has 1 field(s) but the header has 2",
            "a quote opened on line 13 closes only on line 601", absent=["secret-"])


@COMMANDS
def test_duplicate_parquet_column_names_are_named(folder: Path, command: Command) -> None:
    pq.write_table(pa.table([pa.array([1, 1, 2, 2]), pa.array([3, 3, 4, 4]),
                             pa.array(list("xxyy"))], names=["a", "b", "b"]),
                   folder / "dup.parquet")
    message = refused(folder, command("dup.parquet"), "dup.parquet has duplicate column "
                      "names: 'b'")
    assert "complete Parquet file" not in message


def test_a_column_name_with_a_line_break_keeps_the_message_on_one_line(tmp_path: Path
                                                                       ) -> None:
    path = tmp_path / "in.csv"
    path.write_bytes(b'"a\rb",c\n1,2\n')  # (a quoted carriage return: a name may hold one)
    with pytest.raises(InputError) as refusal:
        read_table(path, columns=["zz"])
    assert "\r" not in str(refusal.value) and "columns are: 'a\\rb', c" in str(refusal.value)


def test_arrow_messages_lose_the_cells_they_quote() -> None:
    quoted = pa.ArrowInvalid("CSV parse error: Expected 2 columns, got 3: 12,secret,more")
    assert reader._arrow_reason(quoted) == "CSV parse error: Expected 2 columns, got 3"
    conversion = pa.ArrowInvalid("In CSV column #1: Row #7: CSV conversion error to int64: "
                                 "invalid value 'secret'")
    assert "secret" not in reader._arrow_reason(conversion)
    assert re.search(r"Row #7: .*invalid value$", reader._arrow_reason(conversion))
