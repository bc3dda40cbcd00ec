"""Tables in databases: a job's input read from a table or a query, and a release written
back whole or not at all. PostgreSQL and SQLite, through ADBC (Arrow-native drivers: the
rows arrive as Arrow columns, never fetched row by row in Python).

Where a table is (:func:`parse_database`):

* ``postgresql://USER@HOST:PORT/DB`` (also ``postgres://`` and ``postgresql+psycopg://``,
  as a history URL is written). The password is taken as libpq takes it: from the URL, from
  ``PGPASSWORD`` or from ``~/.pgpass`` (``PGPASSFILE``); every other libpq setting
  (``?host=/socket/folder``, ``?sslmode=require``, ``PGHOST``, ...) works too.
* ``sqlite:///relative/file.db`` or ``sqlite:////absolute/file.db`` (SQLAlchemy's spelling,
  the one ``--history`` takes).

A URL is shown only through :func:`anonkit._util.urls.masked`: its password never reaches an
error, a report or the history. Errors from the driver are reduced to one line naming what
to do; the server's own text is kept only where it names objects (a table, a database, a
user), never where it could quote a value of the data.

Types come from the database and stay exact (see :func:`read_source`): ``numeric(p,s)`` is
an Arrow decimal (then float64 where every value converts exactly, text otherwise, as a
Parquet decimal is), times with a time zone stay UTC instants, dates stay dates.

Writing (:func:`write_tables`): every table goes to a temporary table (``anonkit_tmp_...``)
in one transaction; the release is read back from its temporary table and checked by the
caller there; only then are the temporary tables renamed to their names and the transaction
committed. A process killed at any point before the commit leaves nothing: the server (or
SQLite's journal) rolls the transaction back.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import SplitResult, parse_qsl, quote, unquote, urlsplit

import pyarrow as pa
import pyarrow.compute as pc

from anonkit._util.urls import masked
from anonkit.data.read import _lossless_text, _with_columns, column_list
from anonkit.errors import InputError

__all__ = [
    "WRITE_HOOKS",
    "Database",
    "TableSource",
    "TableTarget",
    "database_columns",
    "is_database_url",
    "parse_database",
    "read_source",
    "refuse_existing",
    "source_of",
    "write_tables",
]

_SCHEMES = {"postgresql": "postgresql", "postgres": "postgresql", "sqlite": "sqlite"}
#: PostgreSQL cuts longer names silently (two long names could become one): refused
MAX_NAME_BYTES = 63
#: the prefix of the temporary tables a write creates (gone with its transaction)
TEMPORARY_PREFIX = "anonkit_tmp_"
#: called at named points of a write, inside its transaction (``sending``: amid the
#: release's rows, ``ingested``, ``read back``, ``verified``, ``renamed``): the tests kill
#: the process there
WRITE_HOOKS: dict[str, Callable[[], None]] = {}

_URL_HELP = ("write postgresql://USER@HOST:PORT/DATABASE (password from PGPASSWORD or "
             "~/.pgpass) or sqlite:///FILE.db")


def is_database_url(text: object) -> bool:
    """Whether ``text`` names a database (``postgresql://``, ``sqlite://``, ...) rather
    than a file."""
    if not isinstance(text, str) or "://" not in text:
        return False
    return text.split("://", 1)[0].split("+", 1)[0].lower() in _SCHEMES


@dataclass(frozen=True)
class Database:
    """A database given by URL: ``backend`` (``postgresql`` or ``sqlite``) and what its
    driver connects to (a libpq URI, or an SQLite file). Shown without its password."""

    given: str = field(repr=False)
    backend: str
    target: str = field(repr=False)
    #: the password in the URL, if any (only to scrub it from the driver's messages)
    password: str | None = field(default=None, repr=False)

    def __str__(self) -> str:
        return masked(self.given)

    def __repr__(self) -> str:
        return f"Database({str(self)!r})"

    @property
    def identity(self) -> tuple[str, ...]:
        """What two URLs of one database share (collisions are checked on it)."""
        if self.backend == "sqlite":
            return ("sqlite", str(Path(self.target).resolve()))
        parts = urlsplit(self.target)
        query = dict(parse_qsl(parts.query))
        return ("postgresql", query.get("host") or parts.hostname or "",
                str(query.get("port") or _port(parts) or 5432),
                query.get("dbname") or parts.path.lstrip("/"))


def _port(parts: SplitResult) -> int | None:
    with suppress(ValueError):
        return parts.port
    return None


def parse_database(url: str) -> Database:
    """The database at ``url``; a URL anonkit cannot use is an :class:`InputError`."""
    if not is_database_url(url):
        raise InputError(f"{masked(url)!r} is no database URL; {_URL_HELP}")
    scheme, rest = url.split("://", 1)
    backend = _SCHEMES[scheme.split("+", 1)[0].lower()]
    if backend == "sqlite":
        path = unquote(urlsplit(url).path)[1:]  # sqlite:///a.db is a.db, sqlite:////a.db /a.db
        if path in ("", ":memory:"):
            raise InputError(f"the URL {masked(url)!r} names no SQLite file; write "
                             f"sqlite:///FILE.db (relative) or sqlite:////PATH/FILE.db")
        return Database(url, "sqlite", str(Path(path).expanduser()))
    head = rest.partition("?")[0]
    userinfo = head[:head.rfind("@")] if "@" in head else ""
    if ":" in userinfo and ("@" in userinfo or "/" in userinfo):
        # libpq and a URL parser would split it elsewhere, and the driver's messages
        # would then quote a piece of the password as a host or database name
        raise InputError(f"the password in the database URL {masked(url)!r} holds a raw "
                         f"'@' or '/': write them as %40 and %2F, or give the password in "
                         f"PGPASSWORD or ~/.pgpass")
    target = "postgresql://" + rest
    try:
        parts = urlsplit(target)
        parts.port  # noqa: B018 (a malformed port raises only when read)
    except ValueError:
        raise InputError(f"cannot read the database URL {masked(url)!r}: {_URL_HELP}"
                         ) from None
    password = unquote(parts.password) if parts.password else \
        dict(parse_qsl(parts.query)).get("password")
    return Database(url, "postgresql", target, password)


@dataclass(frozen=True)
class TableSource:
    """A table, or the rows of a query, in a database: a job's input."""

    database: Database
    table: str | None = None
    query: str | None = None

    def __str__(self) -> str:
        what = f"table {self.table}" if self.table is not None else "query"
        return f"{self.database} ({what})"

    def select(self, columns: Sequence[str] | None = None, limit: int | None = None) -> str:
        """The SQL that reads ``columns`` (all: None) of the source."""
        wanted = "*" if columns is None else ", ".join(_quoted(c) for c in columns)
        source = _qualified(*_table_name(self.table)) if self.table is not None \
            else f"({self.query}) AS anonkit_source"
        return f"SELECT {wanted} FROM {source}" + (f" LIMIT {limit}" if limit is not None
                                                   else "")


def source_of(given: object, table: object = None, query: object = None
              ) -> TableSource | None:
    """The database source a job names (its input a URL, with ``table`` or ``query``), or
    None for a file (then neither may be given)."""
    if not is_database_url(given):
        if table is not None or query is not None:
            option = "--table" if table is not None else "--query"
            raise InputError(f"{option} reads from a database, but the input is a file; give "
                             f"a database URL as the input ({_URL_HELP})")
        return None
    if (table is None) == (query is None):
        raise InputError(f"the input {masked(str(given))} is a database: name the rows with "
                         f"--table NAME or with --query 'SELECT ...' (one of them)")
    for value, what in ((table, "--table"), (query, "--query")):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InputError(f"{what} must be a non-empty text")
    if table is not None:
        _table_name(str(table))  # (checked before anything connects)
    return TableSource(parse_database(str(given)), None if table is None else str(table),
                       None if query is None else str(query).strip().rstrip(";"))


@dataclass(frozen=True)
class TableTarget:
    """A table a release is written to, in a database; ``replace``: an existing table of
    that name (and its auxiliary tables) may be replaced."""

    database: Database
    table: str
    replace: bool = False

    def __str__(self) -> str:
        return f"{self.database} (table {self.table})"

    def beside(self, suffix: str) -> str:
        """The name of the table ``suffix`` beside this one (``release_counterfeits``), in
        its schema."""
        schema, name = _table_name(self.table)
        return f"{schema}.{name}_{suffix}" if schema else f"{name}_{suffix}"


def _table_name(name: str | None) -> tuple[str | None, str]:
    """``schema.table`` or ``table`` as its two parts (a name holding a dot is quoted as
    ``"a.b"``)."""
    if name is None or not name.strip():
        raise InputError("a table name is empty; give --table NAME (or SCHEMA.NAME)")
    found = re.fullmatch(r'\s*(?:("(?:[^"]|"")+"|[^."]+)\.)?("(?:[^"]|"")+"|[^."]+)\s*', name)
    if found is None:
        raise InputError(f"cannot read the table name {name!r}: give NAME or SCHEMA.NAME "
                         f"(quote a name holding a dot: '\"a.b\"')")
    schema, table = (None if part is None else
                     part[1:-1].replace('""', '"') if part.startswith('"') else part.strip()
                     for part in found.groups())
    assert table is not None
    return schema, table


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _qualified(schema: str | None, name: str) -> str:
    return f"{_quoted(schema)}.{_quoted(name)}" if schema else _quoted(name)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# -- connecting ------------------------------------------------------------------------------


class _Cursor(Protocol):
    def execute(self, operation: str) -> object: ...
    def fetchall(self) -> list[tuple[object, ...]]: ...
    def fetch_arrow_table(self) -> pa.Table: ...
    def adbc_ingest(self, table_name: str, data: pa.Table, mode: str = ...,
                    *, db_schema_name: str | None = ...) -> int: ...
    def close(self) -> None: ...


class _Connection(Protocol):
    def cursor(self) -> _Cursor: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def close(self) -> None: ...


@contextmanager
def _connected(database: Database, writing: bool = False) -> Iterator[_Connection]:
    """A connection in a transaction (ADBC's DB-API default), closed after the block; a
    transaction not committed by then is rolled back."""
    try:
        if database.backend == "sqlite":
            path = Path(database.target)
            if not writing and not path.is_file():
                raise InputError(f"SQLite database not found: {path} (from {database}); "
                                 f"check the path (sqlite:///relative.db, "
                                 f"sqlite:////absolute.db)")
            if writing and not path.absolute().parent.is_dir():
                raise InputError(f"output directory {path.absolute().parent} does not exist; "
                                 f"create it first")
            import adbc_driver_sqlite.dbapi as sqlite_driver

            uri = path if writing else f"file:{quote(str(path.absolute()))}?mode=ro"
            connection: _Connection = sqlite_driver.connect(str(uri))
        else:
            import adbc_driver_postgresql.dbapi as postgresql_driver

            connection = postgresql_driver.connect(database.target)
    except InputError:
        raise
    except Exception as exc:  # the drivers' errors (adbc_driver_manager.Error and kin)
        raise database_error(database, exc, "connect") from None
    try:
        yield connection
    finally:
        with suppress(Exception):
            connection.rollback()
        with suppress(Exception):
            connection.close()


def _server_line(text: str) -> str:
    """The server's (or libpq's) one-line reason from an ADBC message."""
    found = re.search(r"(?:ERROR|FATAL):\s+(.*)", text)
    if found is not None:
        return found.group(1).strip()
    first = text.strip().splitlines()[0] if text.strip() else ""
    first = re.sub(r"^[A-Z_]+: (?:\[\w+\] )?", "", first)
    return re.sub(r"^Failed to connect: ", "", first).strip()


def database_error(database: Database, exc: BaseException, doing: str) -> InputError:
    """One line for a driver's error while ``doing`` something with ``database``: what
    went wrong and what to do, without the password and without any data value."""
    text = str(exc)
    state = str(getattr(exc, "sqlstate", None) or
                (re.search(r"SQLSTATE: (\w{5})", text) or [None, ""])[1])
    line = _server_line(text)
    if database.password:
        line = line.replace(database.password, "***")
    line = masked(line)
    lower = text.lower()
    where = str(database)
    if state.startswith("28") or "password authentication failed" in lower \
            or "no password supplied" in lower or "authentication failed" in lower:
        return InputError(f"cannot log in to {where}: {line}; check the user and the "
                          f"password (in the URL, PGPASSWORD or ~/.pgpass)")
    if state == "3D000" or ("database" in lower and "does not exist" in lower):
        return InputError(f"cannot connect to {where}: {line}; check the database name in "
                          f"the URL")
    if state.startswith("08") or doing == "connect" or any(
            sign in lower for sign in ("server closed the connection", "connection refused",
                                       "no connection to the server", "terminating connection",
                                       "could not connect", "could not translate host",
                                       "lost synchronization", "ssl syscall")):
        lost = doing != "connect"
        what = "lost the connection to" if lost else "cannot connect to"
        after = "; nothing was written: check the server and run again" if lost else \
            f"; check the URL (host, port, database) and that the server runs ({_URL_HELP})"
        return InputError(f"{what} {where}: {line or type(exc).__name__}{after}")
    if state == "42P01" or "no such table" in lower:
        return InputError(f"cannot {doing} {where}: {line}; check the table's name "
                          f"(--table SCHEMA.NAME) or the query")
    if state == "42501" or "permission denied" in lower or "readonly" in lower \
            or "read-only" in lower:
        return InputError(f"cannot {doing} {where}: {line}; ask the database's owner "
                          f"for the privilege (GRANT), or use another user, schema or "
                          f"table")
    if state == "42P07" or "already exists" in lower:
        return InputError(f"cannot {doing} {where}: {line}; pass --replace to replace "
                          f"it, or choose another --output-table")
    if state == "2BP01":
        return InputError(f"cannot {doing} {where}: {line}; other objects (views) depend on "
                          f"the table it would replace: drop them first, or choose another "
                          f"--output-table")
    if state.startswith("42") or "syntax error" in lower:
        return InputError(f"cannot {doing} {where}: {line}; check the query")
    # data errors (classes 22, 23, ...) may quote a value: only the code is shown
    code = f"SQLSTATE {state}" if state else type(exc).__name__
    return InputError(f"cannot {doing} {where}: the database refused it ({code}); "
                      f"nothing was written")


# -- reading ---------------------------------------------------------------------------------


def database_columns(source: TableSource) -> list[str]:
    """The column names of ``source``, from the database's description of it alone."""
    with _connected(source.database) as connection:
        return _fetch(source, connection, source.select(limit=0), "read from").column_names


def read_source(source: TableSource, columns: Sequence[str] | None = None, *,
                text_columns: Sequence[str] = (), as_text: bool = False) -> pa.Table:
    """The rows of ``source`` (``columns`` only, in that order: None for all) as an Arrow
    table, with the database's types kept exact:

    * ``numeric(p,s)`` (p <= 38) as ``decimal128(p,s)``; a ``numeric`` without precision, or
      one holding ``NaN``, as its exact text;
    * ``timestamp with time zone`` as UTC instants, ``date`` as dates, ``text`` as it is;
    * SQLite's text in a column declared ``DATE``, ``DATETIME`` or ``TIMESTAMP`` as dates and
      times where every value is one (ISO 8601);
    * other types the driver hands over as text (``uuid``, ``json``, ...) as that text.

    ``text_columns``: read as text whatever their type (codes declared categorical).
    ``as_text``: every column as its text where that reads back unchanged (what a check of
    a released table compares, as :func:`anonkit.data.read.read_arrow` does for files).
    """
    with _connected(source.database) as connection:
        if columns is not None:
            known = _fetch(source, connection, source.select(limit=0), "read from").column_names
            missing = [c for c in columns if c not in set(known)]
            if missing:
                raise InputError(f"unknown column {missing[0]!r} in {source}; it has: "
                                 f"{column_list(known)}")
        table = _fetch(source, connection, source.select(columns), "read from")
        if source.database.backend == "sqlite" and source.table is not None:
            table = _sqlite_dates(table, _declared_types(source, connection))
    if table.num_rows == 0:
        raise InputError(f"{source} has no rows; give at least one row")
    names = table.column_names
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise InputError(f"{source} has the column {twice!r} twice; name each column once "
                         f"(SELECT ... AS another_name)")
    table = exact_types(table)
    texts = {i: pc.cast(table[i], pa.string()) for i, name in enumerate(names)
             if name in set(text_columns) and not pa.types.is_string(table.schema.types[i])}
    table = _with_columns(table, texts)
    return _lossless_text(table) if as_text else table


def _declared_types(source: TableSource, connection: _Connection) -> dict[str, str]:
    """An SQLite table's declared column types (``DATE``, ``TIMESTAMP``, ...), by column."""
    schema, name = _table_name(source.table)
    pragma = f"{_quoted(schema)}.pragma_table_info" if schema else "pragma_table_info"
    declared = _fetch(source, connection,
                      f"SELECT name, type FROM {pragma}({_literal(name)})", "read from")
    return dict(zip(declared["name"].to_pylist(), declared["type"].to_pylist(), strict=True))


#: SQLite keeps dates and times as text; the declared type says which they are
_SQLITE_TIMES = {"DATE": pa.date32(), "DATETIME": pa.timestamp("us"),
                 "TIMESTAMP": pa.timestamp("us")}


def _sqlite_dates(table: pa.Table, declared: Mapping[str, str]) -> pa.Table:
    """The text columns of an SQLite table declared ``DATE``, ``DATETIME`` or ``TIMESTAMP``
    as dates and times, where every value is one (ISO 8601); the others as they are."""
    replaced: dict[int, pa.ChunkedArray] = {}
    for i, item in enumerate(table.schema):
        kind = _SQLITE_TIMES.get(str(declared.get(item.name) or "").strip().upper())
        if kind is not None and pa.types.is_string(item.type):
            converted = _cast_if_every_value_fits(table[i], kind)
            if converted is not None:
                replaced[i] = converted
    return _with_columns(table, replaced)


def _cast_if_every_value_fits(text: pa.ChunkedArray, kind: pa.DataType
                              ) -> pa.ChunkedArray | None:
    """``text`` cast to ``kind`` when every value converts exactly; None when one does not
    (a DATE column holding 'not a date', a numeric holding NaN): the column is then kept
    as the text the database gave, never half converted."""
    try:
        return pc.cast(text, kind)
    except pa.ArrowInvalid:  # (Arrow's one error for a value that does not convert)
        return None


def _fetch(source: TableSource, connection: _Connection, sql: str, doing: str) -> pa.Table:
    cursor = connection.cursor()
    try:
        cursor.execute(sql)
        return cursor.fetch_arrow_table()
    except InputError:
        raise
    except Exception as exc:
        raise database_error(source.database, exc, doing) from None
    finally:
        with suppress(Exception):
            cursor.close()


def exact_types(table: pa.Table) -> pa.Table:
    """The driver's columns in the types anonkit works with, exactly (see
    :func:`read_source`): PostgreSQL's ``numeric`` comes as text with its precision and
    scale in the field's metadata; other types the driver does not map come as their text
    (an extension type stored as text)."""
    replaced: dict[int, pa.ChunkedArray] = {}
    for i, item in enumerate(table.schema):
        kind = item.type
        if not isinstance(kind, pa.BaseExtensionType):
            continue
        column = table[i]
        storage = pa.chunked_array([chunk.storage for chunk in column.chunks],
                                   type=kind.storage_type)
        replaced[i] = storage
        if not pa.types.is_string(kind.storage_type):
            raise InputError(f"column {item.name!r} has a type anonkit cannot read "
                             f"({getattr(kind, 'type_name', kind)}); cast it in a --query "
                             f"(e.g. CAST({item.name} AS text))")
        metadata = item.metadata or {}
        if metadata.get(b"POSTGRESQL:type") == b"numeric":
            decimal = _decimal_type(metadata.get(b"POSTGRESQL:typmod", b"-1")) or \
                _decimal_of(storage)
            converted = None if decimal is None else _cast_if_every_value_fits(storage, decimal)
            if converted is not None:
                replaced[i] = converted
    return _with_columns(table, replaced)


def _decimal_of(text: pa.ChunkedArray) -> pa.DataType | None:
    """The decimal that holds every value of a ``numeric`` column without a declared
    precision (written as digits, as PostgreSQL writes them), or None (``NaN``, or past
    Arrow's 38 digits): the column then stays text."""
    given = pc.drop_null(text)
    if len(given) == 0 or not pc.all(pc.match_substring_regex(
            given, r"^-?[0-9]+(\.[0-9]+)?$")).as_py():
        return None
    whole = pc.max(pc.utf8_length(pc.replace_substring_regex(given, r"^-?|\..*$", ""))).as_py()
    fraction = pc.max(pc.utf8_length(pc.replace_substring_regex(given, r"^[^.]*\.?", "")
                                     )).as_py()
    return pa.decimal128(whole + fraction, fraction) if whole + fraction <= 38 else None


def _decimal_type(typmod: bytes) -> pa.DataType | None:
    """The Arrow decimal of a ``numeric(p,s)`` column from its type modifier
    (``((p << 16) | s) + 4``), or None (no precision given, or past Arrow's 38 digits)."""
    with suppress(ValueError):
        value = int(typmod) - 4
        if value >= 0:
            precision, scale = value >> 16, value & 0xFFFF
            if 0 < precision <= 38 and scale <= precision:
                return pa.decimal128(precision, scale)
    return None


# -- writing ---------------------------------------------------------------------------------


def refuse_existing(target: TableTarget, suffixes: Sequence[str] = ()) -> None:
    """Refuse, before any work, a target whose table (or an auxiliary table ``suffixes``
    beside it) exists, unless ``replace``; and a name PostgreSQL would cut."""
    names = [target.table, *(target.beside(s) for s in suffixes)]
    _check_lengths(target, names)
    if target.replace or (target.database.backend == "sqlite"
                          and not Path(target.database.target).exists()):
        return  # (an SQLite file is not created before the release is written)
    with _connected(target.database, writing=True) as connection:
        taken = [name for name in names if _exists(target.database, connection, name)]
    if taken:
        raise InputError(f"table {taken[0]} exists in {target.database}; anonkit never "
                         f"replaces a table unless told to: pass --replace, or choose another "
                         f"--output-table")


def _check_lengths(target: TableTarget, names: Sequence[str]) -> None:
    if target.database.backend != "postgresql":
        return
    for name in names:
        if len(_table_name(name)[1].encode()) > MAX_NAME_BYTES:
            raise InputError(f"the table name {name} is longer than the {MAX_NAME_BYTES} "
                             f"bytes PostgreSQL keeps (it would cut it); choose a shorter "
                             f"--output-table")


def _exists(database: Database, connection: _Connection, name: str) -> bool:
    schema, table = _table_name(name)
    cursor = connection.cursor()
    try:
        if database.backend == "postgresql":
            cursor.execute(f"SELECT to_regclass({_literal(_qualified(schema, table))}) "
                           f"IS NOT NULL")
        else:
            master = f"{_quoted(schema)}.sqlite_master" if schema else "sqlite_master"
            cursor.execute(f"SELECT count(*) > 0 FROM {master} WHERE name = {_literal(table)}")
        return bool(cursor.fetchall()[0][0])
    except Exception as exc:
        raise database_error(database, exc, "look up the output table in") from None
    finally:
        with suppress(Exception):
            cursor.close()


#: reads columns of the release's temporary table, within the write's transaction
ReadBack = Callable[[Sequence[str]], pa.Table]
#: checks the release as read back; raises to refuse it, else returns further tables
#: (suffix -> table) to write beside it (its verification)
Verify = Callable[[ReadBack], Mapping[str, pa.Table]]


def write_tables(target: TableTarget, release: pa.Table, auxiliary: Mapping[str, pa.Table],
                 verify: Verify) -> None:
    """Write ``release`` to ``target`` and each ``auxiliary`` table beside it (suffix ->
    table) in one transaction: all to temporary tables first; the release read back from
    its own and passed to ``verify``, whose tables go beside it too; then (``replace``:
    the old tables dropped) the temporary tables renamed and the transaction committed.
    Nothing is visible to others before the commit, and nothing is left after a failure."""
    database = target.database
    new_file = Path(database.target) if database.backend == "sqlite" \
        and not Path(database.target).exists() else None
    try:
        _write_tables(target, release, auxiliary, verify)
    except BaseException:
        if new_file is not None:  # an SQLite file this write created goes with it
            for leftover in (new_file, new_file.with_name(new_file.name + "-journal")):
                with suppress(OSError):
                    leftover.unlink()
        raise


def _write_tables(target: TableTarget, release: pa.Table, auxiliary: Mapping[str, pa.Table],
                  verify: Verify) -> None:
    database = target.database
    with _connected(database, writing=True) as connection:
        schema, _ = _table_name(target.table)
        temporary: dict[str, str] = {}  # final name -> temporary name

        def ingest(name: str, table: pa.Table) -> str:
            tmp = f"{TEMPORARY_PREFIX}{secrets.token_hex(8)}"
            cursor = connection.cursor()
            try:
                cursor.adbc_ingest(tmp, _in_batches(storable(table, database.backend)),
                                   mode="create",
                                   **({"db_schema_name": schema} if schema else {}))
                declared = _declared_decimals(table) if database.backend == "postgresql" \
                    else ""
                if declared:  # (the driver creates them as numeric without precision)
                    cursor.execute(f"ALTER TABLE {_qualified(schema, tmp)} {declared}")
            except Exception as exc:
                raise database_error(database, exc, f"write the table {name} in") from None
            finally:
                with suppress(Exception):
                    cursor.close()
            temporary[name] = tmp
            return tmp

        release_tmp = ingest(target.table, release)
        _hook("ingested")

        def read_back(columns: Sequence[str]) -> pa.Table:
            source = TableSource(database, table=_qualified(schema, release_tmp)
                                 if schema else _quoted(release_tmp))
            read = exact_types(_fetch(source, connection, source.select(columns), "read from"))
            _hook("read back")
            return read

        for suffix, table in auxiliary.items():
            ingest(target.beside(suffix), table)
        beside = verify(read_back)
        for suffix, table in beside.items():
            ingest(target.beside(suffix), table)
        _hook("verified")
        finals = list(temporary)
        _check_lengths(target, finals)
        cursor = connection.cursor()
        try:
            for name in finals:
                if _exists(database, connection, name):
                    if not target.replace:
                        raise InputError(f"table {name} exists in {database}; pass --replace "
                                         f"to replace it, or choose another --output-table")
                    cursor.execute(f"DROP TABLE {_qualified(*_table_name(name))}")
                cursor.execute(f"ALTER TABLE {_qualified(schema, temporary[name])} RENAME TO "
                               f"{_quoted(_table_name(name)[1])}")
            _hook("renamed")
            connection.commit()
        except InputError:
            raise
        except Exception as exc:
            raise database_error(database, exc, f"put the table {target.table} in place in"
                                 ) from None
        finally:
            with suppress(Exception):
                cursor.close()


#: the rows of one batch the driver sends: it encodes a batch while the server stores the
#: one before (a table in one piece is encoded whole first: a million rows of a release
#: took 1.3 s to store instead of 0.85 s; from 2,048 to 32,768 rows a batch, alike)
INGEST_BATCH_ROWS = 16_384


def _in_batches(table: pa.Table) -> pa.RecordBatchReader:
    """``table`` (zero-copy) in batches of :data:`INGEST_BATCH_ROWS`, handed to the driver
    one at a time."""
    def batches() -> Iterator[pa.RecordBatch]:
        for i, batch in enumerate(table.to_batches(max_chunksize=INGEST_BATCH_ROWS)):
            if i == 2:  # (the driver has sent the first two: a write cut mid-stream)
                _hook("sending")
            yield batch
    return pa.RecordBatchReader.from_batches(table.schema, batches())


def _declared_decimals(table: pa.Table) -> str:
    """The clauses giving each decimal column of ``table`` its ``numeric(p,s)`` type."""
    return ", ".join(f"ALTER COLUMN {_quoted(item.name)} TYPE numeric({item.type.precision}, "
                     f"{item.type.scale})" for item in table.schema
                     if pa.types.is_decimal(item.type))


def _hook(name: str) -> None:
    hook = WRITE_HOOKS.get(name)
    if hook is not None:
        hook()


def storable(table: pa.Table, backend: str) -> pa.Table:
    """``table`` in types the driver stores: a column of nothing but missing values as text;
    for SQLite (no such types) decimals and times with a time zone as their exact text
    (``2024-03-01 10:00:00.000000Z``). Dictionaries of text are stored as their text by
    the drivers themselves (cast here they would cost as much as the write)."""
    replaced: dict[int, pa.ChunkedArray] = {}
    for i, kind in enumerate(table.schema.types):
        column = table[i]
        if pa.types.is_dictionary(kind) and not pa.types.is_string(kind.value_type):
            column = pc.cast(column, kind.value_type)
            kind = kind.value_type
        if pa.types.is_null(kind) or pa.types.is_large_string(kind) or (
                backend == "sqlite" and (pa.types.is_decimal(kind) or (
                    pa.types.is_timestamp(kind) and kind.tz is not None))):
            column = pc.cast(column, pa.string())
        if column is not table[i]:
            replaced[i] = column
    return _with_columns(table, replaced)
