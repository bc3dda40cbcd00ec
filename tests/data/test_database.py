"""Tables in databases (issue 26): a job reads a table or a query from PostgreSQL or SQLite
and writes its release back to a table that appears only once complete and verified.

Against the real PostgreSQL server the suite starts (``postgres_server``) and SQLite files:
the round trip (equal to the release of the same table exported to CSV, and passing
``anonkit check`` on the database table), a process killed at several points of the write
(no partial table), exact types, the password never shown, and each error one line with
exit 2 and nothing written.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import adbc_driver_postgresql.dbapi as postgresql_driver
import adbc_driver_sqlite.dbapi as sqlite_driver
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pytest
from click.testing import CliRunner

from anonkit._util.urls import masked
from anonkit.cli import main
from anonkit.data.database import WRITE_HOOKS, parse_database, read_source, source_of
from anonkit.data.read import to_pandas
from anonkit.datasets import load_adult
from pg_fixtures import TemporaryPostgres, postgres_server  # noqa: F401 (a fixture)

QIS = "age,sex,race,education"
ROLES = ["--qi", QIS, "--sensitive", "salary-class", "--insensitive", "*", "-k", "5",
         "-l", "2"]


@dataclass(frozen=True)
class Backend:
    """A fresh database: its URL for anonkit, and a way to run SQL in it."""

    name: str
    url: str
    connect: Callable[[], object]

    def sql(self, *statements: str) -> list[tuple[object, ...]]:
        """Run ``statements`` and commit; the rows of the last."""
        connection = self.connect()
        try:
            cursor = connection.cursor()  # type: ignore[attr-defined]
            rows: list[tuple[object, ...]] = []
            for statement in statements:
                cursor.execute(statement)
                rows = cursor.fetchall() if cursor.description else []
            connection.commit()  # type: ignore[attr-defined]
            return rows
        finally:
            connection.close()  # type: ignore[attr-defined]

    def load(self, name: str, table: pa.Table) -> None:
        connection = self.connect()
        try:
            connection.cursor().adbc_ingest(name, table, mode="create")  # type: ignore[attr-defined]
            connection.commit()  # type: ignore[attr-defined]
        finally:
            connection.close()  # type: ignore[attr-defined]

    def fetch(self, sql: str) -> pa.Table:
        connection = self.connect()
        try:
            cursor = connection.cursor()  # type: ignore[attr-defined]
            cursor.execute(sql)
            return cursor.fetch_arrow_table()
        finally:
            connection.close()  # type: ignore[attr-defined]

    def tables(self) -> set[str]:
        if self.name == "sqlite":
            rows = self.sql("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            rows = self.sql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {str(row[0]) for row in rows}


def postgres_url(server: TemporaryPostgres, database: str, user: str = "postgres") -> str:
    return (f"postgresql://{user}@127.0.0.1:{server.port}/{database}")


def new_postgres(server: TemporaryPostgres) -> Backend:
    name = f"tables_{uuid.uuid4().hex[:12]}"
    server.create_database(name)
    url = postgres_url(server, name)
    return Backend("postgresql", url, lambda: postgresql_driver.connect(url))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        path = tmp_path / "data.db"
        return Backend("sqlite", f"sqlite:///{path}",
                       lambda: sqlite_driver.connect(str(path)))
    return new_postgres(request.getfixturevalue("postgres_server"))


@pytest.fixture(scope="module")
def people() -> pa.Table:
    """3,000 rows of UCI Adult with an id column."""
    frame = load_adult().data.head(3000).reset_index(drop=True)
    frame.insert(0, "id", range(len(frame)))
    return pa.Table.from_pandas(frame, preserve_index=False)


def run(*args: object, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], env=env)
    return result.exit_code, result.output


def assert_refused(code: int, output: str, *fragments: str) -> None:
    assert code == 2, output
    lines = [line for line in output.strip().splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    for fragment in fragments:
        assert fragment in output, (fragment, output)


def as_text(table: pa.Table) -> pd.DataFrame:
    """Every cell as its text (missing: empty), rows sorted: a table compared as a set."""
    frame = table.to_pandas().astype(object).where(lambda f: f.notna(), "")
    frame = frame.map(str)
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


# -- the round trip --------------------------------------------------------------------------


def test_round_trip_equals_the_csv_release(backend: Backend, people: pa.Table,
                                           tmp_path: Path) -> None:
    backend.load("people", people)
    exported = tmp_path / "people.csv"  # the same table exported to CSV
    pa_csv.write_csv(backend.fetch('SELECT * FROM "people"'), exported)

    code, output = run("anonymize", backend.url, "--table", "people", "--id", "id",
                       "-o", backend.url, "--output-table", "release_2026q1", *ROLES)
    assert code == 0, output
    assert "release written to" in output
    code, output = run("anonymize", exported, "--id", "id", "-o", tmp_path / "release.csv",
                       *ROLES)
    assert code == 0, output

    assert backend.tables() == {"people", "release_2026q1", "release_2026q1_verification"}
    in_database = backend.fetch('SELECT * FROM "release_2026q1"')
    in_file = pa_csv.read_csv(tmp_path / "release.csv", convert_options=pa_csv.ConvertOptions(
        column_types=dict.fromkeys(in_database.column_names, pa.string()),
        strings_can_be_null=True))
    assert in_database.column_names == in_file.column_names
    pd.testing.assert_frame_equal(as_text(in_database), as_text(in_file))

    verification = backend.fetch('SELECT * FROM "release_2026q1_verification"').to_pylist()
    assert {row["model"] for row in verification} == {"k-anonymity", "distinct l-diversity"}
    assert all(row["passed"] for row in verification)
    assert {row["rows_checked"] for row in verification} == {3000}

    code, output = run("check", backend.url, "--table", "release_2026q1", "--qi", QIS,
                       "--sensitive", "salary-class", "-k", "5", "-l", "2")
    assert code == 0, output
    assert "PASS k-anonymity" in output
    code, output = run("check", backend.url, "--table", "release_2026q1", "--qi", QIS,
                       "-k", "500")
    assert code == 2 and "FAIL" in output, output


def test_a_release_with_suppressed_rows_is_checked_with_their_exemption(
        backend: Backend, people: pa.Table) -> None:
    """Global recoding suppresses rows whole (every QI ``*``): read back from the database
    they are one class exempt from k, counted against the limit, as in a file."""
    backend.load("people", people)
    code, output = run("anonymize", backend.url, "--table", "people", "--id", "id",
                       "--method", "global", "--qi", "age,sex,race", "--insensitive", "*",
                       "--build", "age=intervals:5,10,20", "-k", "10", "--suppression", "0.02",
                       "-o", backend.url, "--output-table", "recoded")
    assert code == 0, output
    suppressed = backend.fetch("SELECT count(*) AS n FROM \"recoded\" WHERE age = '*' "
                               "AND sex = '*' AND race = '*'").to_pylist()[0]["n"]
    assert 0 < suppressed <= 60
    verification = {row["model"]: row for row in
                    backend.fetch('SELECT * FROM "recoded_verification"').to_pylist()}
    assert verification["k-anonymity"]["passed"]
    assert verification["suppression limit"]["passed"]
    assert float(verification["suppression limit"]["measured"]) == suppressed / 3000


def test_query_input_and_risk(backend: Backend, people: pa.Table) -> None:
    backend.load("people", people)
    code, output = run("risk", backend.url, "--query",
                       'SELECT age, sex FROM "people" WHERE age > 30', "--qi", "age,sex")
    assert code == 0, output
    assert "rows in" in output
    code, output = run("anonymize", backend.url, "--query",
                       'SELECT age, sex, race FROM "people"', "-o", backend.url,
                       "--output-table", "adults", "--qi", "age,sex,race", "-k", "10")
    assert code == 0, output
    assert backend.sql('SELECT count(*) FROM "adults"')[0][0] == 3000


def test_job_file_reads_and_writes_tables(backend: Backend, people: pa.Table,
                                          tmp_path: Path) -> None:
    backend.load("people", people)
    job = tmp_path / "job.toml"
    job.write_text(textwrap.dedent(f"""\
        input = "{backend.url}"
        table = "people"
        output = "{backend.url}"
        output_table = "from_job"
        quasi_identifiers = ["age", "sex"]
        identifiers = ["id"]
        insensitive = "*"
        k = 5
        """))
    code, output = run("anonymize", "--config", job)
    assert code == 0, output
    assert "from_job" in backend.tables()


def test_release_publish_reads_a_table(people: pa.Table, tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    database = Backend("sqlite", f"sqlite:///{path}", lambda: sqlite_driver.connect(str(path)))
    database.load("people", people)
    out = tmp_path / "r1.csv"
    code, output = run("release", "publish", database.url, "--table", "people",
                       "--dataset", "adult", "--key", "id", "--qi", "age,sex", "--insensitive",
                       "*", "-k", "5", "-o", out, "--history", tmp_path / "h.db",
                       "--secret-file", tmp_path / "secret")
    assert code == 0, output
    assert len(pd.read_csv(out)) == 3000
    code, output = run("release", "publish", database.url, "--table", "people",
                       "--dataset", "adult", "--key", "id", "--qi", "age,sex", "--insensitive",
                       "*", "-k", "5", "-o", database.url, "--history", tmp_path / "h.db",
                       "--secret-file", tmp_path / "secret")
    assert_refused(code, output, "release publish writes its release to a file")


# -- the output rules ------------------------------------------------------------------------


def test_an_existing_table_is_refused_unless_replace(backend: Backend,
                                                     people: pa.Table) -> None:
    backend.load("people", people)
    args = ["anonymize", backend.url, "--table", "people", "--id", "id", "-o", backend.url,
            "--output-table", "release", "--qi", "age,sex", "--insensitive", "*"]
    assert run(*args, "-k", "5")[0] == 0
    code, output = run(*args, "-k", "20")
    assert_refused(code, output, "table release exists", "--replace")
    verification = backend.fetch('SELECT "parameters" FROM "release_verification"')
    assert "5" in verification.column(0)[0].as_py()  # the first release, untouched
    code, output = run(*args, "-k", "20", "--replace")
    assert code == 0, output
    verification = backend.fetch('SELECT "parameters" FROM "release_verification"')
    assert "20" in verification.column(0)[0].as_py()
    assert not [t for t in backend.tables() if t.startswith("anonkit_tmp_")]


def test_the_input_table_is_never_the_output(backend: Backend, people: pa.Table) -> None:
    backend.load("people", people)
    code, output = run("anonymize", backend.url, "--table", "people", "-o", backend.url,
                       "--output-table", "people", "--replace", "--qi", "age",
                       "--insensitive", "*", "-k", "5")
    assert_refused(code, output, "is the input table")
    assert backend.sql('SELECT count(*) FROM "people"')[0][0] == 3000


# -- killed mid-write ------------------------------------------------------------------------

KILLER = """\
import os, signal, sys
from anonkit.data import database
from anonkit.cli import main
database.INGEST_BATCH_ROWS = 50  # (several batches of 500 rows: a cut amid the stream)
database.WRITE_HOOKS[sys.argv[1]] = lambda: os.kill(os.getpid(), signal.SIGKILL)
main(sys.argv[2:])
"""


@pytest.mark.slow
@pytest.mark.parametrize("point", ["sending", "ingested", "read back", "verified", "renamed"])
def test_killed_mid_write_leaves_no_partial_table(backend: Backend, people: pa.Table,
                                                  point: str) -> None:
    backend.load("people", people.slice(0, 500))
    args = ["anonymize", backend.url, "--table", "people", "--id", "id", "-o", backend.url,
            "--output-table", "release", *ROLES]
    assert run(*args)[0] == 0
    before = as_text(backend.fetch('SELECT * FROM "release"'))
    for replace in ([], ["--replace"]):  # a new table, and over an earlier release
        target = ["--output-table", "fresh"] if not replace else []
        done = subprocess.run([sys.executable, "-c", KILLER, point, *args, *replace, *target],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == -signal.SIGKILL, done.stderr
        tables = backend.tables()
        assert tables == {"people", "release", "release_verification"}, (point, tables)
        pd.testing.assert_frame_equal(as_text(backend.fetch('SELECT * FROM "release"')),
                                      before)


# -- exact types -----------------------------------------------------------------------------


@pytest.mark.postgres
def test_exact_types_come_through_unchanged(postgres_server: TemporaryPostgres  # noqa: F811
                                            ) -> None:
    database = new_postgres(postgres_server)
    database.sql(
        "CREATE TABLE measures (id int, age int, big numeric(30,0), price numeric(12,4), "
        "odd numeric(6,2), seen timestamptz, born date, name text)",
        "INSERT INTO measures SELECT g, 20 + g % 40, "
        "123456789012345678901234567890 - g, 0.0001 * g, "
        "CASE WHEN g = 1 THEN 'NaN'::numeric ELSE g + 0.5 END, "
        "timestamptz '2024-03-31 01:59:59.123456+02' + g * interval '1 second', "
        "date '1990-01-01' + g, "
        "'Zoë ✓ 東京 ' || g FROM generate_series(1, 200) AS g")
    source = source_of(database.url, table="measures")
    assert source is not None
    table = read_source(source)
    assert table.schema.field("big").type == pa.decimal128(30, 0)
    assert table.schema.field("odd").type == pa.string()  # NaN: no decimal holds it
    assert table["odd"][0].as_py().lower() == "nan" and table["odd"][1].as_py() == "2.50"
    assert table.schema.field("price").type == pa.decimal128(12, 4)
    assert table.schema.field("seen").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("born").type == pa.date32()
    assert table["big"][0].as_py() == Decimal("123456789012345678901234567889")
    frame = to_pandas(table)
    assert frame["big"].iloc[0] == "123456789012345678901234567889"  # never rounded

    code, output = run("anonymize", database.url, "--table", "measures", "--id", "id",
                       "--qi", "age", "--insensitive", "*", "-k", "5", "-o", database.url,
                       "--output-table", "released")
    assert code == 0, output
    query = ("SELECT big::text, price::text, seen, born, name FROM {} ORDER BY name")
    original = database.fetch(query.format("measures"))
    released = database.fetch(query.format("released"))
    assert released.to_pylist() == original.to_pylist()
    assert released.column("big")[0].as_py() == "123456789012345678901234567889"
    assert database.sql("SELECT data_type FROM information_schema.columns WHERE "
                        "table_name = 'released' AND column_name = 'seen'")[0][0] \
        == "timestamp with time zone"


# -- secrets ---------------------------------------------------------------------------------

SECRET = "Wr0ng-S3cret"
RIGHT = "R1ght-Pass"


@pytest.fixture
def password_database(postgres_server: TemporaryPostgres  # noqa: F811
                      ) -> Iterator[tuple[TemporaryPostgres, Backend]]:
    """A database whose user ``keeper`` must give a password (scram-sha-256 over TCP);
    every other user of the server is trusted as before."""
    database = new_postgres(postgres_server)
    database.sql("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'keeper') "
                 f"THEN CREATE ROLE keeper LOGIN PASSWORD '{RIGHT}'; END IF; END $$",
                 "CREATE TABLE people (age int, sex text)",
                 "INSERT INTO people SELECT 20 + g % 30, 'x' FROM generate_series(1, 100) g",
                 "GRANT SELECT ON people TO keeper")
    hba = postgres_server.data / "pg_hba.conf"
    rules = hba.read_text()
    if "keeper" not in rules:
        hba.write_text("host all keeper 127.0.0.1/32 scram-sha-256\n" + rules)
        postgres_server._run("pg_ctl", "-D", str(postgres_server.data), "reload")
    yield postgres_server, database


@pytest.mark.postgres
def test_a_wrong_password_is_never_shown(password_database: tuple[TemporaryPostgres, Backend],
                                         tmp_path: Path) -> None:
    server, database = password_database
    name = database.url.rsplit("/", 1)[1]
    with_password = f"postgresql://keeper:{SECRET}@127.0.0.1:{server.port}/{name}"
    args = ["--table", "people", "--qi", "age", "--insensitive", "*", "-k", "5", "-o",
            tmp_path / "out.csv"]
    code, output = run("anonymize", with_password, *args)
    assert_refused(code, output, "password", "PGPASSWORD")
    assert SECRET not in output
    assert "keeper:***@" in output
    without = f"postgresql://keeper@127.0.0.1:{server.port}/{name}"
    code, output = run("anonymize", without, *args, env={"PGPASSWORD": SECRET})
    assert_refused(code, output, "password authentication failed")
    assert SECRET not in output
    assert not (tmp_path / "out.csv").exists()

    # the right password, as libpq takes it: from PGPASSWORD, ~/.pgpass, or the URL
    code, output = run("anonymize", without, *args, env={"PGPASSWORD": RIGHT})
    assert code == 0, output
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{server.port}:{name}:keeper:{RIGHT}\n")
    pgpass.chmod(0o600)
    (tmp_path / "out.csv").unlink()
    code, output = run("anonymize", without, *args,
                       env={"PGPASSFILE": str(pgpass), "PGPASSWORD": ""})
    assert code == 0, output
    (tmp_path / "out.csv").unlink()
    in_url = f"postgresql://keeper:{RIGHT}@127.0.0.1:{server.port}/{name}"
    code, output = run("anonymize", in_url, *args, "--report", tmp_path / "report.html")
    assert code == 0, output
    assert RIGHT not in output
    assert RIGHT not in (tmp_path / "report.html").read_text()
    assert "keeper:***@" in (tmp_path / "report.html").read_text()


def test_masked_hides_every_spelling_of_a_password() -> None:
    assert masked("postgresql://u:p%40ss@h/db") == "postgresql://u:***@h/db"
    assert masked("postgresql://u@h/db?sslmode=require&password=pw") == \
        "postgresql://u@h/db?sslmode=require&password=***"
    assert "pw" not in repr(parse_database("postgresql://u:pw@h/db"))
    assert str(parse_database("postgres://u:pw@h/db")) == "postgres://u:***@h/db"


# -- errors ----------------------------------------------------------------------------------


def test_bad_sources_are_one_line(backend: Backend, people: pa.Table, tmp_path: Path) -> None:
    backend.load("people", people)
    out = tmp_path / "out.csv"
    common = ["--qi", "age", "--insensitive", "*", "-k", "5", "-o", out]
    cases = [
        (["--table", "nobody"], "nobody"),
        (["--query", "SELEC age FROM people"], "check the query"),
        ([], "--table NAME or with --query"),
        (["--table", "people", "--query", "SELECT 1"], "one of them"),
    ]
    for extra, fragment in cases:
        code, output = run("anonymize", backend.url, *extra, *common)
        assert_refused(code, output, fragment)
    code, output = run("anonymize", backend.url, "--table", "people", "--qi", "age",
                       "--insensitive", "*", "-k", "5", "-o", tmp_path / "x.csv",
                       "--output-table", "t")
    assert_refused(code, output, "--output-table writes to a database")
    code, output = run("anonymize", backend.url, "--table", "people", "--qi", "age",
                       "--insensitive", "*", "-k", "5", "-o", backend.url)
    assert_refused(code, output, "--output-table NAME")
    assert not out.exists()
    assert backend.tables() == {"people"}
    new = tmp_path / "new.db"
    code, output = run("anonymize", backend.url, "--table", "people", "--qi", "nosuch",
                       "--insensitive", "*", "-k", "5", "-o", f"sqlite:///{new}",
                       "--output-table", "release")
    assert_refused(code, output, "nosuch")
    assert not new.exists()  # no SQLite file is created for a release never written


def test_bad_urls_are_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    common = ["--table", "t", "--qi", "age", "--insensitive", "*", "-k", "5", "-o", out]
    for url, fragment in [
        ("postgresql://u:pw@127.0.0.1:notaport/db", "cannot read the database URL"),
        ("postgresql://u:pw@127.0.0.1:1/db", "cannot connect"),
        (f"sqlite:///{tmp_path}/missing.db", "SQLite database not found"),
        ("sqlite:///:memory:", "names no SQLite file"),
        # a raw "@" or "/" in the password: libpq would quote a piece of it as the host
        ("postgresql://u:pw@xy@127.0.0.1:1/db", "holds a raw '@' or '/'"),
        ("postgresql://u:pw/xy@127.0.0.1:1/db", "holds a raw '@' or '/'"),
    ]:
        code, output = run("anonymize", url, *common)
        assert_refused(code, output, fragment)
        assert ":pw@" not in output and "xy" not in output
    assert not out.exists()
    assert not (tmp_path / "missing.db").exists()
    code, output = run("anonymize", tmp_path / "a.csv", "--table", "t", "--qi", "a", "-o", out)
    assert_refused(code, output, "--table reads from a database")


@pytest.mark.postgres
def test_no_permission_is_one_line(postgres_server: TemporaryPostgres,  # noqa: F811
                                   tmp_path: Path) -> None:
    database = new_postgres(postgres_server)
    database.sql("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'visitor') "
                 "THEN CREATE ROLE visitor LOGIN; END IF; END $$",
                 "CREATE TABLE people (age int)",
                 "INSERT INTO people SELECT 20 + g % 30 FROM generate_series(1, 100) g")
    name = database.url.rsplit("/", 1)[1]
    visitor = postgres_url(postgres_server, name, "visitor")
    args = ["--qi", "age", "--insensitive", "*", "-k", "5"]
    code, output = run("anonymize", visitor, "--table", "people", *args, "-o",
                       tmp_path / "out.csv")
    assert_refused(code, output, "permission denied", "GRANT")
    database.sql("GRANT SELECT ON people TO visitor")
    code, output = run("anonymize", visitor, "--table", "people", *args, "-o", visitor,
                       "--output-table", "release")
    assert_refused(code, output, "permission denied", "GRANT")
    assert "release" not in database.tables()


@pytest.mark.postgres
def test_a_lost_connection_is_one_line(postgres_server: TemporaryPostgres,  # noqa: F811
                                       people: pa.Table) -> None:
    database = new_postgres(postgres_server)
    database.load("people", people)
    name = database.url.rsplit("/", 1)[1]

    def cut() -> None:  # the server ends the writer's session mid-transaction
        database.sql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                     f"datname = '{name}' AND pid <> pg_backend_pid()")

    WRITE_HOOKS["verified"] = cut
    try:
        code, output = run("anonymize", database.url, "--table", "people", "--id", "id",
                           "-o", database.url, "--output-table", "release", *ROLES)
    finally:
        WRITE_HOOKS.clear()
    assert_refused(code, output, "connection", "nothing was written")
    assert database.tables() == {"people"}



def test_a_report_is_never_the_sqlite_file(people: pa.Table, tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    database = Backend("sqlite", f"sqlite:///{path}", lambda: sqlite_driver.connect(str(path)))
    database.load("people", people)
    before = path.read_bytes()
    for output in (["-o", tmp_path / "out.csv"], ["-o", database.url, "--output-table", "r"]):
        code, output_text = run("anonymize", database.url, "--table", "people", "--qi", "age",
                                "--insensitive", "*", "-k", "5", *output, "--report", path)
        assert_refused(code, output_text, "writing it would destroy that file")
    assert path.read_bytes() == before


def test_sqlite_dates_stay_dates(tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    database = Backend("sqlite", f"sqlite:///{path}", lambda: sqlite_driver.connect(str(path)))
    database.sql("CREATE TABLE visits (born DATE, seen TIMESTAMP, note DATE, name TEXT)",
                 "INSERT INTO visits VALUES ('1990-01-31', '2024-03-01 10:00:00', "
                 "'not a date', 'Zoë ✓ 東京')")
    source = source_of(database.url, table="visits")
    assert source is not None
    table = read_source(source)
    assert table.schema.types == [pa.date32(), pa.timestamp("us"), pa.string(), pa.string()]
    assert table.to_pylist()[0]["name"] == "Zoë ✓ 東京"
