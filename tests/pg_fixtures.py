"""A throwaway PostgreSQL server for the history tests, and the history fixtures.

The tests run against a real server (the issue: "do not mock the database"). The session
fixture ``postgres_server`` runs ``initdb`` in a temporary folder and starts ``postgres`` on
a Unix socket in that folder and on a free port of 127.0.0.1, then stops it and deletes the
folder. ``initdb`` refuses to run as root, so as root the cluster runs as the ``postgres``
user (``runuser``), which the Debian package creates. ``make postgres`` installs the
server when a machine has none; without one, the postgres tests fail (never skip: CI must
not go green without them) -- deselect them locally with ``-m "not postgres"``.

Test modules import what they use: ``from pg_fixtures import history, postgres_server``.
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_USER = "postgres"


def _bindir() -> Path:
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True, check=False)
        path = Path(out.stdout.strip())
        if (path / "initdb").exists():
            return path
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(Path(p).parent.parent.name)
                        if Path(p).parent.parent.name.isdigit() else 0)
    if candidates:
        return Path(candidates[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise RuntimeError("PostgreSQL is not installed (no initdb found): run `make postgres`, "
                       "or deselect these tests with -m 'not postgres'")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TemporaryPostgres:
    """A PostgreSQL cluster in a temporary folder, trusting local connections."""

    def __init__(self) -> None:
        self.bindir = _bindir()
        self.as_root = os.geteuid() == 0
        self.root = Path(tempfile.mkdtemp(prefix="anonkit-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self.socket_dir.mkdir()
        self.port = _free_port()
        self.started = False
        if self.as_root:
            pw = pwd.getpwnam(PG_USER)
            for path in (self.root, self.socket_dir):
                os.chown(path, pw.pw_uid, pw.pw_gid)

    def _run(self, *args: str) -> None:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self.as_root:
            cmd = ["runuser", "-u", PG_USER, "--", *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n"
                               f"{out.stderr}")

    def start(self) -> TemporaryPostgres:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", PG_USER, "-E", "UTF8",
                  "--no-sync")
        options = (f"-k {self.socket_dir} -p {self.port} -h 127.0.0.1 -c fsync=off "
                   f"-c synchronous_commit=off -c full_page_writes=off")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w",
                  "-t", "60", "-o", options, "start")
        self.started = True
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        if self.started:
            self.started = False
            try:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            finally:
                shutil.rmtree(self.root, ignore_errors=True)
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return (f"postgresql+psycopg://{PG_USER}@/{database}?host={self.socket_dir}"
                f"&port={self.port}")

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(host=str(self.socket_dir), port=self.port, user=PG_USER,
                             dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[TemporaryPostgres]:
    server = TemporaryPostgres().start()
    try:
        yield server
    finally:
        server.stop()


@dataclass(frozen=True)
class HistoryTarget:
    """Where a test's history lives: ``url`` (a path or URL) and its secret file."""

    url: str
    secret_file: Path
    backend: str

    def env(self) -> dict[str, str]:
        """CLI options for this history."""
        return {"history": self.url, "secret_file": str(self.secret_file)}

    def cli_args(self) -> list[str]:
        return ["--history", self.url, "--secret-file", str(self.secret_file)]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def history(request: pytest.FixtureRequest, tmp_path: Path) -> HistoryTarget:
    """An empty history, once on SQLite and once on PostgreSQL (a fresh database)."""
    if request.param == "sqlite":
        path = tmp_path / "anonkit.db"
        return HistoryTarget(str(path), tmp_path / "anonkit.db.secret", "sqlite")
    server: TemporaryPostgres = request.getfixturevalue("postgres_server")
    url = server.create_database(f"anonkit_{uuid.uuid4().hex[:12]}")
    return HistoryTarget(url, tmp_path / "history.secret", "postgresql")
