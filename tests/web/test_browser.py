"""The web app in a real browser (Debian's chromium, driven by Playwright): the steward's
whole workflow on the bundled Adult sample, the release equal to the command line's, a
hostile cell shown as text, 403 without the token, and every page at 1280 px wide without
horizontal overflow (a screenshot of each)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from click.testing import CliRunner

from anonkit import jobs, web
from anonkit.cli import main

from .conftest import HOSTILE, TOKEN, roles_for

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(),
                                 reason="Debian's chromium is not installed (make chromium)")]
playwright_api = pytest.importorskip("playwright.sync_api")
#: without these, chromium waits on the network the machine does not have
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WIDTH = 1280


@pytest.fixture
def server(folder: Path, tmp_path: Path) -> Iterator[str]:
    """The app served over HTTP on a free port of 127.0.0.1; its base URL."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    workbench = jobs.Workbench(str(folder / "anonkit.db"))
    workbench.warm_up()
    app = web.create_app(workbench, web.Config(folder, private, TOKEN, port,
                                               frozenset({"127.0.0.1", "localhost"}),
                                               10_000_000))
    served = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=served.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    while not served.started:
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    served.should_exit = True
    thread.join(10)


@pytest.fixture
def browser() -> Iterator[object]:
    with playwright_api.sync_playwright() as driver:
        opened = driver.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                        args=FLAGS)
        yield opened
        opened.close()


class Steward:
    """A page in the browser, and the screenshots taken of each page it visits."""

    def __init__(self, page: playwright_api.Page, shots: Path, base: str) -> None:
        self.page = page
        self.base = base
        self.shots = shots
        self.dialogs: list[str] = []
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def shot(self, name: str) -> None:
        """A full-page screenshot; the page must fit 1280 px (no horizontal overflow)."""
        self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)
        width = self.page.evaluate("document.documentElement.scrollWidth")
        assert width <= WIDTH, f"the {name} page is {width} px wide"

    def click(self, selector: str) -> None:
        """Click a button, scrolled into view first: under a report's frame, Chromium's own
        scrolling for the click can leave the button elsewhere and the click lost."""
        self.page.locator(selector).scroll_into_view_if_needed()
        self.page.click(selector)

    def open(self, path: str) -> None:
        self.page.goto(self.base + "/")
        self.page.fill("#path", path)
        self.page.click("#open")
        self.page.wait_for_selector("#roles, #error")
        assert self.page.is_visible("#roles"), self.page.inner_text("main")

    def classify(self, roles: dict[str, str]) -> None:
        for column, role in roles.items():
            self.page.select_option(f"select[data-column='{column}']", role)
        self.page.click("#save-roles")
        self.page.wait_for_selector("#to-job")

    def publish(self, dataset: str, key: str, output: str) -> str:
        self.page.fill("#dataset", dataset)
        self.page.select_option("#key", key)
        self.page.fill("#output", output)
        self.click("#publish")
        self.page.wait_for_selector("#published, #refused, #error")
        return self.page.inner_text("main")


def columns_of(folder: Path, name: str) -> list[str]:
    return (folder / name).read_text().split("\n", 1)[0].split(",")


def test_the_whole_workflow_in_a_browser(server: str, browser: playwright_api.Browser,
                                         folder: Path, tmp_path: Path) -> None:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    context = browser.new_context(viewport={"width": WIDTH, "height": 900},
                                  accept_downloads=True)
    steward = Steward(context.new_page(), shots, server)
    page = steward.page

    # without the token: 403, also for the pages' script
    assert page.goto(server + "/").status == 403
    assert page.goto(server + "/static/app.js").status == 403
    page.goto(f"{server}/?token={TOKEN}")
    assert "token" not in page.url
    steward.shot("open")

    # open and classify the Adult sample; attach the education hierarchy
    steward.open("adult.csv")
    steward.shot("classify")
    steward.classify(roles_for(columns_of(folder, "adult.csv"), "id", "salary-class"))
    page.select_option("#hierarchy-column", "education")
    page.fill("#hierarchy-path", "adult_hierarchy_education.csv")
    page.click("#attach")
    page.wait_for_selector("#hierarchy-1")
    steward.shot("hierarchy")

    # Mondrian k=10, l=2: the preview, timed from the click
    page.click("#to-job")
    page.check("input[data-method=mondrian]")
    page.wait_for_selector("#options-m-invariance", state="hidden")  # the chosen one only
    page.fill("input[name='mondrian.k']", "10")
    page.fill("input[name='mondrian.l']", "2")
    page.fill("input[name='mondrian.seed']", "11")
    steward.shot("method")
    clicked = time.perf_counter()
    page.click("#preview")
    page.wait_for_selector("#outcome")
    verdicts_seconds = time.perf_counter() - clicked
    assert "Every model holds" in page.inner_text("#outcome")
    page.wait_for_selector("#report")
    print(f"Adult preview: verdicts {verdicts_seconds:.2f} s, report "
          f"{time.perf_counter() - clicked:.2f} s after the click")
    assert page.frame_locator("#report").locator("body").inner_text()  # the report shows
    steward.shot("preview")
    first_run = page.url
    link = page.get_attribute("#download-release", "href")
    released = context.request.get(server + str(link)).body()  # the browser's session

    # the job file, and the command line's release of it
    page.fill("#job-path", "adult-job.toml")
    steward.click("#save-job")
    page.wait_for_selector("#saved, #error")
    assert page.is_visible("#saved"), page.inner_text("main")
    steward.shot("saved")
    cli = tmp_path / "cli.csv"
    result = CliRunner().invoke(main, ["anonymize", "--config", str(folder / "adult-job.toml"),
                                       "-o", str(cli)])
    assert result.exit_code == 0, result.output
    assert cli.read_bytes() == released

    # change a setting, compare the two runs side by side
    page.goto(server + "/job")
    page.fill("input[name='mondrian.k']", "50")
    page.click("#preview")
    page.wait_for_selector("#outcome")
    page.select_option("#compare-with", index=0)
    steward.click("#compare")
    page.wait_for_selector(".side-by-side")
    steward.shot("compare")

    # publish the first run
    page.goto(first_run)
    text = steward.publish("adult", "id", "adult-r1.csv")
    assert "published release 1 of 'adult'" in text, text
    steward.shot("published")

    # a ward table, twice, with m-invariance: the second on the changed table
    steward.open("ward-1.csv")
    steward.classify(roles_for(columns_of(folder, "ward-1.csv"), "pid", "occupation"))
    page.click("#to-job")
    page.check("input[data-method=m-invariance]")
    page.fill("input[name='m-invariance.m']", "2")
    page.fill("input[name='m-invariance.seed']", "5")
    page.click("#preview")
    page.wait_for_selector("#publish-form")
    text = steward.publish("ward", "pid", "ward-r1.csv")
    assert "published release 1 of 'ward'" in text, text
    steward.open("ward-2.csv")  # the same columns: roles and method stay
    page.goto(server + "/job")
    assert page.is_checked("input[data-method=m-invariance]")
    page.click("#preview")
    page.wait_for_selector("#publish-form")
    text = steward.publish("ward", "pid", "ward-r2.csv")
    assert "published release 2 of 'ward'" in text, text

    # the history, and the audit of the ward's releases
    page.goto(server + "/history")
    assert page.locator("table.releases tbody tr").count() == 3
    steward.shot("history")
    steward.click("text=Audit ward")
    page.wait_for_selector("#audit-verdict")
    assert page.inner_text("#audit-verdict") == "No breach within the claimed threat models"
    steward.shot("audit")

    # a hostile cell is text, and runs nothing
    steward.open("hostile.csv")
    assert page.locator("#rows tbody td").first.inner_text() == HOSTILE
    assert page.evaluate("document.querySelectorAll('script, main img').length") == 1
    assert steward.dialogs == []
    steward.shot("hostile")

    # another browser without the token: refused
    stranger = browser.new_context().new_page()
    assert stranger.goto(server + "/history").status == 403
    assert sorted(p.stem for p in shots.iterdir()) == sorted(
        ["open", "classify", "hierarchy", "method", "preview", "saved", "compare",
         "published", "history", "audit", "hostile"])
    context.close()
