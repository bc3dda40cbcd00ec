"""Fuzzing the two readers a user's file goes through first (issue 21): the CSV reader and the
job-file (TOML) reader. Whatever the bytes, they give a table (a dict) or raise anonkit's
InputError with a one-line message, which the command line turns into exit code 2; any
other exception is a crash, which would be an internal error.

The budget is small so ``make test`` stays quick; ``ANONKIT_FUZZ_EXAMPLES`` raises it for a
longer campaign (see benchmarks/README.md, "Fuzzing the readers").
"""

from __future__ import annotations

import bz2
import datetime as dt
import gzip
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from anonkit.cli.common import load_config
from anonkit.data.read import read_table, table_columns
from anonkit.errors import InputError
from anonkit.jobs import JOB_FIELDS, PUBLISH_FIELDS, check_job_types

#: examples per target: small in the test suite, raised for a campaign
EXAMPLES = int(os.environ.get("ANONKIT_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# -- the CSV reader ---------------------------------------------------------------------------

#: pieces a CSV is made of, and what breaks one: separators, quotes, every line end, a BOM,
#: bytes that are not UTF-8, a NUL, numbers past int64 and float64, dates that are not
CSV_PIECES = [b",", b";", b"\t", b"|", b'"', b'""', b"\n", b"\r\n", b"\r", b" ", b"a", b"b",
              b"c", b"x y", b"0", b"1", b"02139", b"-3.5", b"1e400", b"-1e400",
              b"99999999999999999999", b"9" * 400, b"NA", b"?", b"null", b"2021-01-01",
              b"2021-13-45", b"2021-03-04 10:00:00", b"true", b"\xff", b"\xc3\xa9",
              b"\xef\xbb\xbf", b"\x00", b"::", b", ", b"\x1f", b"\xe9"]
HEADERS = [b"", b"a,b\n", b"a;b;c\n", b"a\tb\n", b"x\n", b"a,a\n", b'"a","b"\n', b"a::b\n",
           b"\xef\xbb\xbfa,b\n", b" a , b \n"]
#: the cells of a table-like file: a separator or a quote in some of them
CELLS = [b"", b"1", b"02139", b"-3.5", b"1e400", b"99999999999999999999", b"9" * 400, b"NA",
         b"?", b" x", b"x y", b"2021-01-01", b"2021-13-45", b"true", b'"q"', b'"a,b"', b'"',
         b'"l\nf"', b"\xe9", b"\xc3\xa9", b"\x00", b"a,", b";", b"\t", b"::"]



#: ... the cells that break no row: values of every type and none
CLEAN_CELLS = [c for c in CELLS if not any(b in c for b in (b",", b'"', b";", b"\t", b"\x00"))]


def table_like(cells: int | None, kinds: list[bytes] = CELLS) -> st.SearchStrategy[bytes]:
    """A header and rows of ``cells`` cells (None: one to three, the way a CSV is mostly
    broken: a cell too many or too few), with a stray quote or line end here and there."""
    return st.builds(
        lambda header, rows, end: header + end.join(rows) + end,
        st.sampled_from([b"a,b\n", b"a,b\n", b"a,b\r\n", b"a;b\n", b"a\tb\n", b"a, b\n",
                         b"a::b\n", b"a\n"]),
        st.lists(st.lists(st.sampled_from(kinds), min_size=cells or 1, max_size=cells or 3)
                 .map(b",".join), min_size=1, max_size=12),
        st.sampled_from([b"\n", b"\n", b"\r\n", b"\r", b""]))


csv_bytes = st.one_of(
    table_like(2, CLEAN_CELLS), table_like(2), table_like(None),
    st.binary(max_size=300),
    st.lists(st.sampled_from(CSV_PIECES), max_size=80).map(b"".join),
    st.tuples(st.sampled_from(HEADERS),
              st.lists(st.sampled_from(CSV_PIECES), max_size=80).map(b"".join))
    .map(b"".join),
)

#: how a file is read, as a user would give it: the bytes do the damage
sane_reading = st.fixed_dictionaries({
    "sep": st.sampled_from([None, None, None, ",", ";", ", "]),
    "encoding": st.sampled_from([None, None, None, "latin-1", "cp1252"]),
    "header_names": st.sampled_from([(True, None)] * 4 + [(False, ("a", "b")),
                                                          (True, ("a", "b"))]),
    "na_values": st.sampled_from([(), (), ("?",), ("NA", "")]),
    "skipinitialspace": st.booleans(),
    "as_text": st.booleans(),
    "categorical_text": st.booleans(),
    "max_input_bytes": st.just(None),
    "columns": st.sampled_from([None, None, ["a"]]),
    "text_columns": st.sampled_from([(), (), ("a",)]),
})
#: ... and every option going wrong too, alone or together
hostile_reading = st.fixed_dictionaries({
    "sep": st.sampled_from([None, ",", ";", "\t", "|", ", ", "::", "tab", "ab", '"', "\n",
                            " ", ""]),
    "encoding": st.sampled_from([None, "utf-8", "latin-1", "cp1252", "shift_jis", "utf-16",
                                 "rot13", "nope"]),
    "header_names": st.sampled_from([(True, None), (False, ("a", "b")), (True, ("a", "b")),
                                     (False, ("a",)), (False, None), (True, ("x", "y", "z")),
                                     (True, ("a", "a")), (True, ())]),
    "na_values": st.sampled_from([(), ("?",), ("NA", ""), "?"]),
    "skipinitialspace": st.booleans(),
    "as_text": st.booleans(),
    "categorical_text": st.booleans(),
    "max_input_bytes": st.sampled_from([None, 1, 64, "1K", "1G"]),
    "columns": st.sampled_from([None, ["a"], ["b", "a"], ["zz"]]),
    "text_columns": st.sampled_from([(), ("a",), ("zz",)]),
})
suffixes = st.sampled_from([".csv", ".tsv", ".txt", ".csv.gz", ".csv.bz2"])


def assert_one_line(exc: InputError) -> None:
    message = str(exc)
    assert message.strip() and "\n" not in message and "\r" not in message, repr(message)


def read_or_refuse(data: bytes, suffix: str, options: dict[str, Any]) -> None:
    """``read_table`` and ``table_columns`` of ``data`` in a file named ``in<suffix>``
    (compressed as the suffix says): a table, or an InputError of one line."""
    if suffix.endswith(".gz"):
        data = gzip.compress(data)
    elif suffix.endswith(".bz2"):
        data = bz2.compress(data)
    options = dict(options)
    options["header"], options["names"] = options.pop("header_names")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"in{suffix}"
        path.write_bytes(data)
        try:
            table = read_table(path, **options)
        except InputError as exc:
            assert_one_line(exc)
            event("refused")
        else:
            assert len(table) > 0
            event("read")
        try:
            table_columns(path, options["sep"])
        except InputError as exc:
            assert_one_line(exc)


@FUZZ
@given(data=csv_bytes, suffix=suffixes, options=sane_reading)
def test_the_csv_reader_gives_a_table_or_one_line_of_input_error(
        data: bytes, suffix: str, options: dict[str, Any]) -> None:
    read_or_refuse(data, suffix, options)


@FUZZ
@given(data=csv_bytes, suffix=suffixes, options=hostile_reading)
def test_the_csv_reader_refuses_bad_options_in_one_line(
        data: bytes, suffix: str, options: dict[str, Any]) -> None:
    read_or_refuse(data, suffix, options)


# -- the job-file reader ----------------------------------------------------------------------

#: TOML values of every type the format has, nested a little
toml_scalars = st.one_of(
    st.text(max_size=12), st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True), st.booleans(),
    st.dates(), st.datetimes(), st.times(),
    st.datetimes(timezones=st.just(dt.UTC)))
toml_values = st.recursive(toml_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12)
#: the job's keys and the methods' options, and names that are neither
KEYS = sorted(JOB_FIELDS) + sorted(PUBLISH_FIELDS) + ["k", "l", "t", "models", "nope",
                                                      "anonymize", "publish"]
job_tables = st.dictionaries(st.sampled_from(KEYS), toml_values, max_size=8)


def toml_text(value: object) -> str:
    """``value`` written as TOML (inline tables and arrays; strings as JSON-escaped basic
    strings, which TOML reads the same)."""
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if value != value else ("inf" if value > 0 else "-inf") \
            if value in (float("inf"), float("-inf")) else repr(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_text(v)}" for k, v in value.items()) \
            + "}"
    raise TypeError(type(value))


TOML_PIECES = ["=", " ", "\n", "[", "]", "[[", "]]", "{", "}", ",", '"', "'", "'''", '"""',
               "#", ".", "k", "input", "anonymize", "publish", "1", "-", "true", "1979-05-27",
               "inf", "nan", "\\", "\\u0000", "é", "\x00", "\t"]
job_files = st.one_of(
    st.binary(max_size=200),
    st.lists(st.sampled_from(TOML_PIECES), max_size=60).map(lambda p: "".join(p).encode()),
    job_tables.map(lambda table: "".join(f"{k} = {toml_text(v)}\n"
                                          for k, v in table.items()).encode()),
    st.tuples(st.sampled_from(["[anonymize]\n", "[publish]\n", "[hierarchies]\n", ""]),
              job_tables).map(lambda p: (p[0] + "".join(f"{k} = {toml_text(v)}\n"
                                                        for k, v in p[1].items())).encode()),
)


@FUZZ
@given(data=job_files, table=st.sampled_from(["anonymize", "publish"]))
def test_the_job_file_reader_gives_settings_or_one_line_of_input_error(
        data: bytes, table: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "job.toml"
        path.write_bytes(data)
        try:
            config = load_config(path, table, PUBLISH_FIELDS if table == "publish" else None)
        except InputError as exc:
            assert_one_line(exc)
        else:
            assert isinstance(config, dict)


@pytest.mark.parametrize("data", [b"anonymize = 0\n", b'anonymize = [""]\n',
                                  b'anonymize = "x"\n'])
def test_a_job_file_whose_table_is_no_table_is_refused(tmp_path: Path, data: bytes) -> None:
    """Found by the fuzzer: `anonymize = 0` was a TypeError."""
    path = tmp_path / "job.toml"
    path.write_bytes(data)
    with pytest.raises(InputError, match="anonymize must be a table of settings") as exc:
        load_config(path)
    assert_one_line(exc.value)


@FUZZ
@given(config=job_tables)
def test_the_job_types_check_refuses_in_one_line(config: dict[str, object]) -> None:
    fields = {**JOB_FIELDS, **PUBLISH_FIELDS}
    try:
        check_job_types(config, fields, "config file job.toml")
    except InputError as exc:
        assert_one_line(exc)
