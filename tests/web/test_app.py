"""The web app without a browser (Starlette's test client): its guards (token, CSRF, host,
the served folder, uploads, escaping), the workflow's refusals, the gate's refusal and its
typed override, the job file that runs on the command line to the same release, and a
table in a database (SQLite files, and the PostgreSQL server the suite starts) opened in
place of a file, its password never shown nor saved."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import adbc_driver_postgresql.dbapi as postgresql_driver
import adbc_driver_sqlite.dbapi as sqlite_driver
import httpx
import pyarrow as pa
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from anonkit import jobs
from anonkit.cli import main
from anonkit.datasets import load_adult
from pg_fixtures import TemporaryPostgres, postgres_server  # noqa: F401 (a fixture)

from .conftest import HOSTILE, HOSTILE_NAME, TOKEN, roles_for

CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)">')


def login(client: TestClient) -> str:
    """Open the printed URL (token in it); the page's CSRF token."""
    page = client.get(f"/?token={TOKEN}")
    assert page.status_code == 200
    found = CSRF.search(page.text)
    assert found is not None
    return found.group(1)


def open_table(client: TestClient, csrf: str, path: str) -> httpx.Response:
    return client.post(f"/open?csrf={csrf}", data={"path": path})


def classify(client: TestClient, csrf: str, roles: dict[str, str],
             kinds: dict[str, str] | None = None) -> httpx.Response:
    columns = list(roles)
    data = {f"role-{i}": roles[c] for i, c in enumerate(columns)}
    data |= {f"kind-{columns.index(c)}": k for c, k in (kinds or {}).items()}
    return client.post(f"/roles?csrf={csrf}", data=data)


def finished(client: TestClient, page: httpx.Response) -> httpx.Response:
    """The run's page once its job is done (each status request waits for its end)."""
    task = page.url.path.rsplit("/", 1)[-1]
    # (a guard against a job that never ends, not a speed bound: 30 long polls of 20 s)
    for _ in range(30):
        if client.get(f"/runs/{task}/status?wait=end").json()["done"]:
            return client.get(f"/runs/{task}")
    raise AssertionError("the job never ended")


def run(client: TestClient, csrf: str, method: str, **options: str) -> httpx.Response:
    data = {"method": method} | {f"{method}.{k}": v for k, v in options.items()}
    return finished(client, client.post(f"/run?csrf={csrf}", data=data))


def columns_of(folder: Path, name: str) -> list[str]:
    return (folder / name).read_text().split("\n", 1)[0].split(",")


# -- the guards -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/table", "/history", "/static/app.js",
                                  "/runs/x/release.csv"])
def test_a_request_without_the_token_gets_403(client: TestClient, path: str) -> None:
    assert client.get(path).status_code == 403
    assert client.get(f"{path}?token=wrong").status_code == 403


def test_the_token_becomes_a_cookie_and_leaves_the_url(client: TestClient) -> None:
    page = client.get(f"/table?token={TOKEN}", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/table"
    cookie = page.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert client.get("/").status_code == 200
    assert "default-src 'self'" in client.get("/").headers["content-security-policy"]
    elsewhere = client.get(f"http://testserver//evil.example/?token={TOKEN}&a=%3Cb%3E",
                           follow_redirects=False)
    assert elsewhere.headers["location"] == "/evil.example/?a=%3Cb%3E"


def test_a_state_changing_request_needs_the_csrf_token(client: TestClient) -> None:
    csrf = login(client)
    assert client.post("/open", data={"path": "adult.csv"}).status_code == 403
    assert client.post("/open?csrf=forged", data={"path": "adult.csv"}).status_code == 403
    other = client.post(f"/open?csrf={csrf}", data={"path": "adult.csv"},
                        headers={"origin": "http://evil.example"})
    assert other.status_code == 403
    assert client.post("/audit", data={"dataset": "x"}).status_code == 403
    assert open_table(client, csrf, "adult.csv").url.path == "/table"


def test_another_host_name_is_refused(client: TestClient) -> None:
    login(client)
    assert client.get("/", headers={"host": "rebound.example"}).status_code == 403


@pytest.mark.parametrize("given", ["../outside.csv", "sub/../../outside.csv",
                                   "/etc/passwd", "escape.csv", "escape/x.csv"])
def test_files_outside_the_served_folder_are_refused(client: TestClient, folder: Path,
                                                     given: str) -> None:
    (folder.parent / "outside.csv").write_text("a,b\n1,2\n")
    (folder / "escape.csv").symlink_to(folder.parent / "outside.csv")
    (folder / "escape").symlink_to(folder.parent)
    csrf = login(client)
    page = open_table(client, csrf, given)
    assert page.status_code == 400
    assert "served folder" in page.text
    assert client.get("/table", follow_redirects=False).status_code == 303  # nothing opened


def test_a_hostile_cell_is_shown_as_text(client: TestClient) -> None:
    csrf = login(client)
    page = open_table(client, csrf, "hostile.csv")
    assert page.status_code == 200
    assert HOSTILE not in page.text and HOSTILE_NAME not in page.text
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in page.text  # a column's name, too


def test_an_upload_is_limited_and_kept_in_the_private_folder(client: TestClient,
                                                             tmp_path: Path) -> None:
    csrf = login(client)
    uploads = tmp_path / "private" / "uploads"
    big = client.post(f"/upload?csrf={csrf}",
                      files={"file": ("big.csv", b"a,b\n" + b"1,2\n" * 60_000, "text/csv")})
    assert big.status_code == 400 and "limit of 200,000 bytes" in big.text
    assert list(uploads.iterdir()) == []
    small = client.post(f"/upload?csrf={csrf}",
                        files={"file": ("../../sneaky name.csv", b"x,y\n1,2\n3,4\n", "text/csv")})
    assert small.url.path == "/table" and "2 rows, 2 columns" in small.text
    assert [p.name for p in uploads.iterdir()] == ["1-sneaky_name.csv"]


# -- the workflow's refusals ----------------------------------------------------------------


def test_nothing_proceeds_while_a_column_has_no_role(client: TestClient, folder: Path) -> None:
    csrf = login(client)
    open_table(client, csrf, "adult.csv")
    roles = roles_for(columns_of(folder, "adult.csv"), "id", "salary-class")
    roles["race"] = ""
    page = classify(client, csrf, roles)
    assert page.status_code == 400 and "column(s) with no role: race" in page.text
    assert client.get("/job").status_code == 400
    ran = client.post(f"/run?csrf={csrf}", data={"method": "mondrian", "mondrian.k": "5"})
    assert ran.status_code == 400 and "no role" in ran.text


def test_options_are_checked_as_on_the_command_line(client: TestClient, folder: Path) -> None:
    csrf = login(client)
    open_table(client, csrf, "adult.csv")
    classify(client, csrf, roles_for(columns_of(folder, "adult.csv"), "id", "salary-class"))
    form = client.get("/job").text
    for flag in ("-k", "--strategy", "--model", "-m", "--accept-heuristic", "--domain"):
        assert f"<code>{flag}</code>" in form  # every method's options, from the registry
    page = client.post(f"/run?csrf={csrf}", data={"method": "mondrian", "mondrian.k": "4.9"})
    assert page.status_code == 400 and "k must be a whole number" in page.text


def test_a_history_only_method_goes_straight_to_publishing(client: TestClient,
                                                           folder: Path) -> None:
    """m-invariance runs only when published: its "preview" has nothing to run, is done at
    once, and offers the publish form."""
    csrf = login(client)
    open_table(client, csrf, "adult.csv")
    classify(client, csrf, roles_for(columns_of(folder, "adult.csv"), "id", "salary-class"))
    page = run(client, csrf, "m-invariance", m="2")
    assert page.status_code == 200 and 'id="publish-form"' in page.text


def test_hierarchies_attach_and_build_with_a_preview_of_their_levels(client: TestClient,
                                                                      folder: Path) -> None:
    csrf = login(client)
    open_table(client, csrf, "adult.csv")
    classify(client, csrf, roles_for(columns_of(folder, "adult.csv"), "id", "salary-class"))
    page = client.post(f"/hierarchy?csrf={csrf}",
                       data={"column": "education", "path": "adult_hierarchy_education.csv"})
    assert "education <small>16 values, 4 levels" in page.text
    page = client.post(f"/hierarchy?csrf={csrf}",
                       data={"column": "age", "builder": "intervals", "parameter": "10,20"})
    assert "age <small>" in page.text and "[20-29]" in page.text
    refused = client.post(f"/hierarchy?csrf={csrf}",
                          data={"column": "occupation", "path": "adult_hierarchy_age.csv"})
    assert refused.status_code == 400
    uploaded = client.post(f"/hierarchy?csrf={csrf}", data={"column": "race"}, files={
        "file": ("race.csv", b"White;*\nBlack;*\nAsian-Pac-Islander;*\nAmer-Indian-Eskimo;*\n"
                             b"Other;*\n", "text/csv")})
    assert "race <small>5 values, 2 levels" in uploaded.text


# -- preview, publish, the gate, the job file -----------------------------------------------


def test_the_job_file_runs_on_the_command_line_to_the_same_release(
        client: TestClient, folder: Path, tmp_path: Path) -> None:
    csrf = login(client)
    open_table(client, csrf, "adult.csv")
    classify(client, csrf, roles_for(columns_of(folder, "adult.csv"), "id", "salary-class"))
    client.post(f"/hierarchy?csrf={csrf}",
                data={"column": "education", "builder": "masking", "parameter": "2"})
    page = run(client, csrf, "mondrian", k="10", l="2", strategy="entropy", seed="7")
    assert 'id="outcome">Every model holds' in page.text
    task = page.url.path.rsplit("/", 1)[-1]
    release = client.get(f"/runs/{task}/release.csv")
    report = client.get(f"/runs/{task}/report.html")
    assert "sandbox" in report.headers["content-security-policy"]
    saved = client.post(f"/save?csrf={csrf}", data={"task": task, "path": "jobs/adult.toml"})
    assert saved.status_code == 400 and "does not exist" in saved.text, saved.text
    saved = client.post(f"/save?csrf={csrf}", data={"task": task, "path": "adult.toml"})
    assert saved.status_code == 200 and "strategy = &#34;entropy&#34;" in saved.text
    out = tmp_path / "cli.csv"
    result = CliRunner().invoke(main, ["anonymize", "--config", str(folder / "adult.toml"),
                                       "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == release.content


def test_a_gate_refusal_in_plain_words_and_a_typed_override(client: TestClient,
                                                           folder: Path) -> None:
    csrf = login(client)
    roles = roles_for(columns_of(folder, "ward-1.csv"), "pid", "occupation")
    for version, expected in ((1, "published release 1"), (2, "refused")):
        open_table(client, csrf, f"ward-{version}.csv")
        classify(client, csrf, roles)
        preview = run(client, csrf, "mondrian", k="5")
        task = preview.url.path.rsplit("/", 1)[-1]
        page = finished(client, client.post(f"/publish?csrf={csrf}", data={
            "task": task, "dataset": "ward", "key": "pid", "output": f"ward-r{version}.csv"}))
        assert expected in page.text
    assert "What the adversary finds" in page.text and "adversary" in page.text
    assert "p0" not in page.text  # record keys never shown
    assert not (folder / "ward-r2.csv").exists()
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', page.text))
    wrong = client.post(f"/publish?csrf={csrf}", data=fields | {"confirm": "yes"})
    assert wrong.status_code == 400 and "typed exactly" in wrong.text
    forced = finished(client, client.post(f"/publish?csrf={csrf}", data=fields | {
        "confirm": "publish despite the breach"}))
    assert "published over the gate; the history records it" in forced.text
    assert "OVERRIDDEN" in client.get("/history").text


def test_serve_prints_its_url_refuses_without_the_token_and_cleans_up(folder: Path,
                                                                     tmp_path: Path) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    server = subprocess.Popen(
        [sys.executable, "-m", "anonkit", "serve", "--root", str(folder), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(temp)})
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line)
        assert url is not None, line
        base = url.group(0).split("?")[0]
        assert [p.name.startswith("anonkit-serve-") for p in temp.iterdir()] == [True]
        # the URL is printed once the socket listens: a request waits in its queue
        assert httpx.get(base, timeout=None).status_code == 403
        assert httpx.get(url.group(0), follow_redirects=True, timeout=None).status_code == 200
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(10)
    assert list(temp.iterdir()) == []


def test_an_option_naming_a_file_reads_only_under_the_served_folder(client: TestClient,
                                                                   folder: Path) -> None:
    file_options = [(m.name, o.name) for m in jobs.Workbench("x.db").methods()
                    for o in m.options if o.file]
    assert ("mondrian", "population") in file_options  # (so the case below is exercised)
    method, option = file_options[0]
    csrf = login(client)
    open_table(client, csrf, "adult.csv")
    classify(client, csrf, roles_for(columns_of(folder, "adult.csv"), "id", "salary-class"))
    page = client.post(f"/run?csrf={csrf}", data={"method": method,
                                                  f"{method}.{option}": "/etc/passwd"})
    assert page.status_code == 400 and "outside the served folder" in page.text


def test_another_address_needs_host_and_is_warned_about(folder: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "anonkit", "serve", "--root", str(folder), "--port", "0",
         "--host", "0.0.0.0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None and server.stdout is not None
        assert "warning: listening on 0.0.0.0: other machines can reach the app" in \
            server.stderr.readline()
        assert "?token=" in server.stdout.readline()
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(10)


# -- a table in a database (issue 26) -------------------------------------------------------


#: a password the pages, errors, logs and saved job files must never show
RIGHT = "Web-R1ght-Pass"
WRONG = "Web-Wr0ng-Pass"


def open_database(client: TestClient, csrf: str, url: str, table: str = "",
                  query: str = "") -> httpx.Response:
    return client.post(f"/database?csrf={csrf}", data={"url": url, "table": table,
                                                       "query": query})


def sqlite_people(path: Path, rows: int = 3000) -> None:
    """The bundled Adult sample's first ``rows`` with an id column, as table ``people``."""
    frame = load_adult().data.head(rows).reset_index(drop=True)
    frame.insert(0, "id", range(len(frame)))
    connection = sqlite_driver.connect(str(path))
    try:
        connection.cursor().adbc_ingest("people", pa.Table.from_pandas(frame,
                                                                       preserve_index=False))
        connection.commit()
    finally:
        connection.close()


def assert_one_line(page: httpx.Response, *fragments: str) -> None:
    assert page.status_code == 400, page.text
    error = re.search(r'<p class="error"[^>]*>(.*?)</p>', page.text, re.DOTALL)
    assert error is not None and "\n" not in error.group(1), page.text
    for fragment in fragments:
        assert fragment in error.group(1), (fragment, error.group(1))


def run_database_job(client: TestClient, csrf: str, folder: Path, tmp_path: Path,
                     env: dict[str, str] | None = None) -> tuple[str, str]:
    """Classify, build a hierarchy from the database's values, preview with a seed, save
    the job; the saved file's text, after checking that ``anonkit anonymize --config`` on
    it gives the same release."""
    columns = ["id", *load_adult().data.columns]
    classify(client, csrf, roles_for(columns, "id", "salary-class"))
    built = client.post(f"/hierarchy?csrf={csrf}",
                        data={"column": "age", "builder": "intervals", "parameter": "10,20"})
    assert "age <small>" in built.text and "[20-29]" in built.text
    page = run(client, csrf, "mondrian", k="10", l="2", seed="7")
    assert 'id="outcome">Every model holds' in page.text, page.text
    task = page.url.path.rsplit("/", 1)[-1]
    release = client.get(f"/runs/{task}/release.csv").content
    report = client.get(f"/runs/{task}/report.html").text
    saved = client.post(f"/save?csrf={csrf}", data={"task": task, "path": "people.toml"})
    assert saved.status_code == 200, saved.text
    text = (folder / "people.toml").read_text()
    out = tmp_path / "cli.csv"
    result = CliRunner().invoke(main, ["anonymize", "--config", str(folder / "people.toml"),
                                       "-o", str(out)], env=env)
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == release
    return text, page.text + report + saved.text


def test_a_sqlite_table_runs_and_its_job_file_gives_the_same_release(
        client: TestClient, folder: Path, tmp_path: Path) -> None:
    sqlite_people(folder / "people.db")
    csrf = login(client)
    page = open_database(client, csrf, "sqlite:///people.db", table="people")
    assert page.url.path == "/table", page.text
    assert "3,000 rows, 10 columns" in page.text
    assert f"sqlite:///{folder}/people.db (people)" in page.text
    assert "<td>numeric</td>" in page.text and "Bachelors" in page.text  # kinds, counts
    text, _ = run_database_job(client, csrf, folder, tmp_path)
    assert f'input = "sqlite:///{folder}/people.db"' in text
    assert 'table = "people"' in text and "query" not in text

    query = "SELECT * FROM people WHERE age >= 30"
    page = open_database(client, csrf, f"sqlite:///{folder}/people.db", query=query)
    assert page.url.path == "/table" and "query <small>" in page.text
    rows = int(re.search(r"([\d,]+) rows", page.text).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert 0 < rows < 3000
    assert "age <small>" in page.text  # the same columns: roles and hierarchies stay
    task = run(client, csrf, "mondrian", k="10", seed="7").url.path.rsplit("/", 1)[-1]
    saved = client.post(f"/save?csrf={csrf}", data={"task": task, "path": "older.toml"})
    assert saved.status_code == 200
    assert f"query = {json.dumps(query)}" in (folder / "older.toml").read_text()
    published = finished(client, client.post(f"/publish?csrf={csrf}", data={
        "task": task, "dataset": "people", "key": "id", "output": "people-r1.csv"}))
    assert "published release 1" in published.text, published.text
    assert len((folder / "people-r1.csv").read_text().splitlines()) == rows + 1


@pytest.mark.parametrize("url", ["sqlite:////etc/people.db", "sqlite:///../outside.db",
                                 "sqlite:///sub/../../outside.db", "sqlite:///escape.db",
                                 "sqlite:///%2E%2E/outside.db"])
def test_a_sqlite_file_outside_the_served_folder_is_refused(client: TestClient, folder: Path,
                                                            url: str) -> None:
    sqlite_people(folder.parent / "outside.db", rows=10)
    (folder / "escape.db").symlink_to(folder.parent / "outside.db")
    csrf = login(client)
    assert_one_line(open_database(client, csrf, url, table="people"), "served folder")
    assert client.get("/table", follow_redirects=False).status_code == 303  # nothing opened


@pytest.mark.parametrize(("url", "table", "query", "says"), [
    ("", "people", "", "give the database URL"),
    ("/work/people.csv", "people", "", "no database URL"),
    ("sqlite:///people.db", "", "", "a table name or with a query"),
    ("sqlite:///people.db", "people", "SELECT 1", "a table name or with a query"),
    ("sqlite:///missing.db", "people", "", "SQLite database not found"),
    ("sqlite:///people.db", "nobody", "", "nobody"),
    ("sqlite:///people.db", "", "SELECT nothing FROM people", "check the query"),
    ("postgresql://keeper:pa@ss@127.0.0.1:1/ward", "people", "", "%40"),  # would be shown
])
def test_a_wrong_database_source_is_one_line(client: TestClient, folder: Path, url: str,
                                             table: str, query: str, says: str) -> None:
    sqlite_people(folder / "people.db", rows=10)
    csrf = login(client)
    page = open_database(client, csrf, url, table, query)
    assert_one_line(page, says)
    assert "ss@" not in page.text


@pytest.fixture
def keeper_database(postgres_server: TemporaryPostgres) -> str:  # noqa: F811
    """A database with the Adult sample's first 3,000 rows as ``people``, readable by the
    user ``keeper``, who must give a password (scram-sha-256 over TCP); its URL without it."""
    name = f"web_{uuid.uuid4().hex[:12]}"
    postgres_server.create_database(name)
    trusted = f"postgresql://postgres@127.0.0.1:{postgres_server.port}/{name}"
    frame = load_adult().data.head(3000).reset_index(drop=True)
    frame.insert(0, "id", range(len(frame)))
    connection = postgresql_driver.connect(trusted)
    try:
        cursor = connection.cursor()
        cursor.adbc_ingest("people", pa.Table.from_pandas(frame, preserve_index=False))
        cursor.execute("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = "
                       f"'keeper') THEN CREATE ROLE keeper LOGIN PASSWORD '{RIGHT}'; END IF; "
                       "END $$")
        cursor.execute(f"ALTER ROLE keeper PASSWORD '{RIGHT}'")
        cursor.execute("GRANT SELECT ON people TO keeper")
        connection.commit()
    finally:
        connection.close()
    hba = postgres_server.data / "pg_hba.conf"
    rules = hba.read_text()
    if "keeper" not in rules:
        hba.write_text("host all keeper 127.0.0.1/32 scram-sha-256\n" + rules)
        postgres_server._run("pg_ctl", "-D", str(postgres_server.data), "reload")
    return f"postgresql://keeper@127.0.0.1:{postgres_server.port}/{name}"


@pytest.mark.postgres
def test_a_postgresql_password_is_never_shown_nor_saved(
        client: TestClient, folder: Path, tmp_path: Path, keeper_database: str,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    csrf = login(client)
    with_password = keeper_database.replace("keeper@", f"keeper:{WRONG}@")
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "no-pgpass"))
    refused = open_database(client, csrf, with_password, table="people")
    assert_one_line(refused, "password", "keeper:***@")
    assert WRONG not in refused.text
    monkeypatch.setenv("PGPASSWORD", WRONG)
    refused = open_database(client, csrf, keeper_database, table="people")
    assert_one_line(refused, "password authentication failed")
    assert WRONG not in refused.text

    # the right password in the URL: shown masked, saved without it
    right = keeper_database.replace("keeper@", f"keeper:{RIGHT}@")
    page = open_database(client, csrf, right, table="people")
    assert page.url.path == "/table" and "keeper:***@" in page.text, page.text
    assert RIGHT not in page.text
    text, shown = run_database_job(client, csrf, folder, tmp_path, env={"PGPASSWORD": RIGHT})
    assert f'input = "{keeper_database}"' in text and "PGPASSWORD" in text
    for seen in (text, shown, *(client.get(p).text for p in ("/", "/table", "/job")),
                 caplog.text):
        assert RIGHT not in seen and WRONG not in seen

    # the right password from PGPASSWORD, where the server runs
    monkeypatch.setenv("PGPASSWORD", RIGHT)
    page = open_database(client, csrf, keeper_database, query="SELECT * FROM people")
    assert page.url.path == "/table" and "3,000 rows" in page.text
