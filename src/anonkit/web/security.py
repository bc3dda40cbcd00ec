"""The app's guards: the access token (in the printed URL, then a cookie), CSRF on every
request that changes something, the hosts it answers to, the headers that keep its pages
(and the reports it shows) from running anything foreign, files only under the root
folder, and uploads streamed to the private folder under a size limit."""

from __future__ import annotations

import hmac
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlencode

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp

from anonkit.errors import InputError

#: the page's own: scripts and styles from the app only, frames of its own reports only
PAGE_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
               "frame-src 'self'; frame-ancestors 'self'; form-action 'self'; "
               "base-uri 'none'; object-src 'none'")
#: a report shown in a frame: its inline styles and images, nothing that runs
REPORT_POLICY = ("sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                 "frame-ancestors 'self'")
SAFE_METHODS = ("GET", "HEAD")
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"


def cookie_name(port: int) -> str:
    """The token's cookie: one per port, so two servers on one machine keep theirs."""
    return f"anonkit_token_{port}"


class Guard(BaseHTTPMiddleware):
    """Every request needs the token: given once in the URL (``?token=``), which sets a
    cookie and redirects to the same page without it, then by the cookie. A request that
    changes something (not GET or HEAD) also needs the CSRF token, in the ``csrf`` query
    parameter or the ``X-CSRF-Token`` header, and an Origin (when the browser sends one)
    of this server. Requests for another host name than ``hosts`` (empty: any, for a server
    on every address) are refused (DNS rebinding; the token's cookie, kept per host name,
    refuses them too)."""

    def __init__(self, app: ASGIApp, *, token: str, csrf: str, port: int,
                 hosts: frozenset[str]) -> None:
        super().__init__(app)
        self.token, self.csrf, self.port, self.hosts = token, csrf, port, hosts

    async def dispatch(self, request: Request,
                       call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        host = request.headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if self.hosts and name.strip("[]") not in self.hosts:
            return _refused(f"this server answers to {', '.join(sorted(self.hosts))} only")
        given = request.query_params.get("token")
        if given is not None:
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return _refused("wrong access token: open the URL that anonkit serve printed")
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            # this server's own page (never //elsewhere), without the token
            target = "/" + request.url.path.lstrip("/") + ("?" + urlencode(rest) if rest else "")
            response: Response = RedirectResponse(target, status_code=303)
            response.set_cookie(cookie_name(self.port), self.token, httponly=True,
                                samesite="strict", path="/")
            return _headed(response)
        cookie = request.cookies.get(cookie_name(self.port), "")
        if not hmac.compare_digest(cookie.encode(), self.token.encode()):
            return _refused("no access token: open the URL that anonkit serve printed "
                            "(it ends in ?token=...)")
        if request.method not in SAFE_METHODS:
            sent = request.headers.get(CSRF_HEADER) or request.query_params.get(CSRF_FIELD)
            if sent is None or not hmac.compare_digest(sent.encode(), self.csrf.encode()):
                return _refused("this request lacks the page's CSRF token: reload the page "
                                "and send the form again")
            origin = request.headers.get("origin")
            if origin is not None and origin != f"{request.url.scheme}://{host}":
                return _refused("this request came from another site's page")
        return _headed(await call_next(request))


def _refused(why: str) -> Response:
    return _headed(PlainTextResponse(f"403 Forbidden: {why}\n", status_code=403))


def _headed(response: Response) -> Response:
    if "content-security-policy" not in response.headers:
        response.headers["content-security-policy"] = PAGE_POLICY
    response.headers["x-content-type-options"] = "nosniff"
    response.headers["referrer-policy"] = "same-origin"
    response.headers["cache-control"] = "no-store"
    return response


def under_root(root: Path, text: str, what: str = "file") -> Path:
    """``text`` (relative to ``root``, or absolute inside it) as a resolved path inside
    ``root``; a path outside it, with ``..``, or through a symlink that leads out of it is an
    :class:`InputError` naming the path."""
    given = text.strip()
    if not given or "\0" in given:
        raise InputError(f"give the {what} as a path under the served folder {root}")
    path = Path(given)
    if ".." in path.parts:
        raise InputError(f"the {what} {given!r} contains '..'; give a path under the served "
                         f"folder {root}")
    if path.is_absolute():
        if not path.is_relative_to(root):
            raise InputError(f"the {what} {given!r} is outside the served folder {root}; "
                             f"start anonkit serve with --root to serve another folder")
        path = path.relative_to(root)
    resolved = (root / path).resolve()
    if not resolved.is_relative_to(root):
        raise InputError(f"the {what} {given!r} leads out of the served folder {root} "
                         f"(through a symbolic link); give a file inside it")
    return resolved


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_name(name: str) -> str:
    """An uploaded file's name as a plain name (no folders, no odd characters)."""
    base = _UNSAFE.sub("_", name.replace("\\", "/").rsplit("/", 1)[-1]).lstrip(".")
    return base[-100:] or "upload"


async def receive_upload(request: Request, folder: Path, limit: int
                         ) -> tuple[Path, dict[str, str]]:
    """Stream a multipart form's one file to ``folder`` (never held in memory, never in a
    shared temp folder) and return its path and the form's other fields. More than
    ``limit`` bytes is an :class:`InputError`, and the part written is removed."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise InputError(f"the upload is larger than the limit of {limit:,} bytes; start "
                         f"anonkit serve with a larger --upload-limit, or put the file under "
                         f"the served folder")
    kind, params = parse_options_header(request.headers.get("content-type", ""))
    boundary = params.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise InputError("an upload is sent as a multipart form")
    fields: dict[str, str] = {}
    part: dict[str, bytes] = {}
    header = [b"", b""]
    buffer = bytearray()
    opened: list[Path] = []
    writing: list[BinaryIO] = []  # the file of the part being read (a file part only)
    total = 0

    def on_part_begin() -> None:
        part.clear()
        buffer.clear()

    def on_header_field(data: bytes, start: int, end: int) -> None:
        header[0] += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        header[1] += data[start:end]

    def on_header_end() -> None:
        part[header[0].decode("latin-1").lower()] = header[1]
        header[0], header[1] = b"", b""

    def on_headers_finished() -> None:
        _, disposition = parse_options_header(part.get("content-disposition", b""))
        part["name"] = disposition.get(b"name", b"")
        if b"filename" in disposition:
            if opened:
                raise InputError("send one file per upload")
            name = safe_file_name(disposition[b"filename"].decode("utf-8", "replace"))
            path = folder / f"{len(list(folder.iterdir())) + 1}-{name}"
            opened.append(path)
            writing.append(path.open("xb"))

    def on_part_data(data: bytes, start: int, end: int) -> None:
        if writing:
            writing[0].write(data[start:end])
        else:
            buffer.extend(data[start:end])

    def on_part_end() -> None:
        if writing:
            writing.pop().close()
        else:
            fields[part.get("name", b"").decode("utf-8", "replace")] = \
                buffer.decode("utf-8", "replace")

    parser = MultipartParser(boundary, {
        "on_part_begin": on_part_begin, "on_header_field": on_header_field,
        "on_header_value": on_header_value, "on_header_end": on_header_end,
        "on_headers_finished": on_headers_finished, "on_part_data": on_part_data,
        "on_part_end": on_part_end})
    try:
        async for chunk in request.stream():
            total += len(chunk)
            if total > limit:
                raise InputError(f"the upload is larger than the limit of {limit:,} bytes; "
                                 f"start anonkit serve with a larger --upload-limit, or put "
                                 f"the file under the served folder")
            parser.write(chunk)
        parser.finalize()
        if not opened or opened[0].stat().st_size == 0:
            raise InputError("no file was sent: choose a file to upload")
    except BaseException:
        for handle in writing:
            handle.close()
        for path in opened:
            path.unlink(missing_ok=True)
        raise
    return opened[0], fields
