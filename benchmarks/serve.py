"""The web app's two speed targets (issue 25): `anonkit serve` starts in under 2 s (from
the command to the first answered request), and a preview of UCI Adult (Mondrian, k=10,
distinct l=2, the education hierarchy) is ready in under 1 s after the click: from the
form's POST to the page with its verdicts, on a warm server; the report follows on the
same page, measured too (both should meet the target). A real server
and a plain HTTP client, as a browser would see it; the median of a few runs.

Run: python benchmarks/serve.py
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from timing import print_table

from anonkit.datasets import load_adult

ROLES = {"age": "quasi-identifier", "sex": "quasi-identifier", "race": "quasi-identifier",
         "education": "quasi-identifier", "salary-class": "sensitive"}


def start(root: Path) -> tuple[subprocess.Popen[str], str, float]:
    """The server, its URL (with the token) and the seconds until it first answered."""
    started = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "anonkit", "serve", "--root", str(root),
                               "--port", "0"], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    found = re.search(r"http://\S+\?token=\S+", server.stdout.readline())
    assert found is not None
    base = found.group(0).split("?")[0]
    while True:
        try:
            httpx.get(base, timeout=5)
            return server, found.group(0), time.perf_counter() - started
        except httpx.ConnectError:
            time.sleep(0.01)


def stop(server: subprocess.Popen[str]) -> None:
    server.send_signal(signal.SIGINT)
    server.wait(10)


def preview_seconds(url: str) -> tuple[list[float], list[float]]:
    """Five previews of Adult on one server: each from the POST to the page with its
    verdicts, and to the page with its report."""
    with httpx.Client(base_url=url.split("?")[0], follow_redirects=True) as client:
        page = client.get(url)
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
        table = client.post(f"/open?csrf={csrf}", data={"path": "adult.csv"})
        columns = re.findall(r'data-column="([^"]+)"', table.text)
        client.post(f"/roles?csrf={csrf}", data={
            f"role-{i}": ROLES.get(c, "insensitive") for i, c in enumerate(columns)})
        client.post(f"/hierarchy?csrf={csrf}", data={
            "column": "education", "path": "adult_hierarchy_education.csv"})
        verdicts, reports = [], []
        for _ in range(5):
            clicked = time.perf_counter()
            run = client.post(f"/run?csrf={csrf}", data={
                "method": "mondrian", "mondrian.k": "10", "mondrian.l": "2"})
            status = f"{run.url.path}/status"
            while not client.get(status).json()["verified"]:
                time.sleep(0.02)
            assert "Every model holds" in client.get(run.url.path).text
            verdicts.append(time.perf_counter() - clicked)
            while not client.get(status).json()["done"]:
                time.sleep(0.02)
            assert 'id="report"' in client.get(run.url.path).text
            reports.append(time.perf_counter() - clicked)
        return verdicts, reports


def main() -> None:
    adult = load_adult()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        shutil.copy(adult.path, root / "adult.csv")
        shutil.copy(adult.path.parent / "adult_hierarchy_education.csv", root)
        starts = []
        for _ in range(3):
            server, _, seconds = start(root)
            starts.append(seconds)
            stop(server)
        server, url, _ = start(root)
        try:
            time.sleep(1.5)  # the server loads the method in the background after starting
            verdicts, reports = preview_seconds(url)
        finally:
            stop(server)
    print_table(f"anonkit serve ({os.cpu_count()} cores here)", [
        ("start: command to first answer", f"{statistics.median(starts):.2f}", "< 2",
         f"median of 3 ({', '.join(f'{s:.2f}' for s in starts)})"),
        ("Adult preview: click to its verdicts", f"{statistics.median(verdicts):.2f}", "< 1",
         f"median of 5 ({', '.join(f'{s:.2f}' for s in verdicts)})"),
        ("Adult preview: click to its report", f"{statistics.median(reports):.2f}", "< 1",
         f"median of 5 ({', '.join(f'{s:.2f}' for s in reports)})"),
    ])


if __name__ == "__main__":
    main()
