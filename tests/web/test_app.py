"""The web app without a browser (Starlette's test client): its guards (token, CSRF, host,
the served folder, uploads, escaping), the workflow's refusals, the gate's refusal and its
typed override, and the job file that runs on the command line to the same release."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from anonkit import jobs
from anonkit.cli import main

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


def finished(client: TestClient, page: httpx.Response, seconds: float = 60) -> httpx.Response:
    """The run's page once its job is done."""
    task = page.url.path.rsplit("/", 1)[-1]
    deadline = time.monotonic() + seconds
    while not client.get(f"/runs/{task}/status").json()["done"]:
        assert time.monotonic() < deadline, "the job did not finish"
        time.sleep(0.05)
    return client.get(f"/runs/{task}")


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
        deadline = time.monotonic() + 10
        while True:
            try:
                assert httpx.get(base).status_code == 403
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert httpx.get(url.group(0), follow_redirects=True).status_code == 200
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(10)
    assert list(temp.iterdir()) == []


def test_an_option_naming_a_file_reads_only_under_the_served_folder(client: TestClient,
                                                                   folder: Path) -> None:
    file_options = [(m.name, o.name) for m in jobs.Workbench("x.db").methods()
                    for o in m.options if o.file]
    if not file_options:
        pytest.skip("no method takes a file option")
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
