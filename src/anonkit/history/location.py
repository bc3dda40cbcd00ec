"""Where a history is: a path (an SQLite file) or a URL (SQLite, or PostgreSQL with an
optional dedicated schema), given by the user or by ``$ANONKIT_HISTORY``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url

from anonkit._util.urls import masked
from anonkit.errors import HistoryError

HISTORY_ENV = "ANONKIT_HISTORY"
DEFAULT_HISTORY = "anonkit.db"
#: how long a publisher waits for another one's SQLite write lock before giving up
SQLITE_BUSY_TIMEOUT = 60.0


@dataclass(frozen=True)
class HistoryLocation:
    """A history given as a path (SQLite) or a URL (``sqlite:///...``,
    ``postgresql+psycopg://...``)."""

    url: URL  # without the ``schema`` parameter
    sqlite_path: Path | None
    #: PostgreSQL: the dedicated schema the history lives in (``?schema=anonkit``)
    schema: str | None = None

    @classmethod
    def parse(cls, history: str | os.PathLike[str] | URL | None) -> HistoryLocation:
        if history is None:
            history = os.environ.get(HISTORY_ENV) or DEFAULT_HISTORY
        if isinstance(history, URL):
            url = history
        elif "://" in str(history):
            try:
                url = make_url(str(history))
                url.port  # noqa: B018 (a malformed port raises only when read)
            except (sa.exc.ArgumentError, ValueError):
                raise HistoryError(f"cannot read the history URL {masked(str(history))!r}: "
                                   f"write postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB "
                                   f"(a whole-number port), or give an SQLite file"
                                   ) from None
        else:
            url = URL.create("sqlite", database=str(Path(history).expanduser().absolute()))
        backend = url.get_backend_name()
        if backend == "sqlite":
            if url.database in (None, "", ":memory:"):
                raise HistoryError("an in-memory SQLite history would vanish with the "
                                   "process; give a file (--history anonkit.db)")
            return cls(url, Path(url.database).expanduser().absolute())
        if backend == "postgresql":
            try:
                url.get_dialect()
            except sa.exc.NoSuchModuleError:
                raise HistoryError(f"unknown database driver {url.get_driver_name()!r} in the "
                                   f"history URL {masked(str(history))!r}; use "
                                   f"postgresql+psycopg://") from None
            schema = url.query.get("schema")
            if isinstance(schema, tuple):
                raise HistoryError(f"the history URL {masked(str(history))!r} names several "
                                   f"schemas; give one: ?schema=anonkit")
            if schema is not None and not _SCHEMA_NAME.fullmatch(schema):
                raise HistoryError(f"invalid schema name {schema!r} in the history URL: give "
                                   f"1 to 63 lower-case letters, digits or _ (e.g. "
                                   f"?schema=anonkit)")
            return cls(url.difference_update_query(["schema"]), None, schema)
        raise HistoryError(f"unsupported history database {backend!r}: use an SQLite file or "
                           f"a postgresql+psycopg:// URL")

    def __str__(self) -> str:
        if self.sqlite_path is not None:
            return str(self.sqlite_path)
        shown = self.url.render_as_string(hide_password=True)
        if self.schema is not None:
            shown += ("&" if "?" in shown else "?") + f"schema={self.schema}"
        return shown


_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
