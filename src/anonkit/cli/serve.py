"""``anonkit serve``: the local web app (:mod:`anonkit.web`) on the job API."""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

import click

from anonkit.cli.common import run_body
from anonkit.errors import InputError

LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("0.0.0.0", "::", "[::]")


@click.command()
@click.option("--history", envvar="ANONKIT_HISTORY", default=None,
              help="The release history (an SQLite file or a postgresql+psycopg:// URL; "
                   "default: $ANONKIT_HISTORY, else anonkit.db in the served folder).")
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=Path("."), show_default=True,
              help="The folder the app may read tables and hierarchies from and write "
                   "releases and job files to; nothing outside it.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="The port (0: any free one).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on. Anything but this machine's loopback lets "
                   "other machines reach the app (with the token): a warning is printed.")
@click.option("--open", "open_browser", is_flag=True, help="Open the app in a browser.")
@click.option("--upload-limit", type=click.IntRange(min=1), default=512, show_default=True,
              metavar="MB", help="The largest upload, in megabytes.")
def serve(history: str | None, root: Path, port: int, host: str, open_browser: bool,
          upload_limit: int) -> None:
    """Start the web app and print its URL, with its access token."""

    def body() -> int:
        import secrets
        import socket

        import uvicorn

        from anonkit import jobs, web

        served = root.resolve()
        if host not in LOOPBACK:
            click.echo(f"warning: listening on {host}: other machines can reach the app "
                       f"(anyone with the token can read and publish the tables under "
                       f"{served}); use it only on a network you trust", err=True)
        listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((host, port))
        except OSError as exc:
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror}; give another "
                             f"--port (0: any free one)") from None
        # listening before the URL is printed: a request sent at once waits in the queue
        # until the app answers it, instead of being refused
        listener.listen(128)
        bound = listener.getsockname()[1]
        private = Path(tempfile.mkdtemp(prefix="anonkit-serve-"))
        token = secrets.token_urlsafe(32)
        # the host names the app answers to; on every address (0.0.0.0, ::) any name
        hosts = frozenset() if host in WILDCARDS else frozenset(
            {host.strip("[]"), *LOOPBACK, *([] if host in LOOPBACK else [socket.gethostname()])})
        workbench = jobs.Workbench(history or str(served / jobs.DEFAULT_HISTORY))
        app = web.create_app(workbench, web.Config(served, private, token, bound, hosts,
                                                   upload_limit * 1024 * 1024))
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{bound}/?token={token}"
        click.echo(f"anonkit serve: {url}\n  serving {served}; history {workbench.history}; "
                   f"Ctrl-C stops it", nl=True)
        threading.Thread(target=workbench.warm_up, name="anonkit-warm-up", daemon=True).start()
        if open_browser:
            import webbrowser

            threading.Timer(0.3, webbrowser.open, (url,)).start()
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                               lifespan="off"))
        try:
            server.run(sockets=[listener])
        finally:
            shutil.rmtree(private, ignore_errors=True)
        return 0

    run_body(body)

