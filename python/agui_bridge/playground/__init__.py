"""The playground: a page for trying an app's agents in a browser (``App(playground=...)``).

The page (``static/``) is plain HTML and CSS and one script, the real
``@ag-ui/client`` bundled with the page's code at build time
(``clients/playground``; the built file is committed and shipped in the
package), so it works offline and from a wheel. It talks to the app's own
routes: ``GET /agents``, the agents' run paths, ``POST /threads/search`` (the
thread list; whether the thread in the URL exists, before reading it),
``GET /threads/{id}/state``, ``GET /threads/{id}/events`` and
``POST /threads/{id}/runs/{run}/cancel`` (``?action=interrupt``: a run that
already ended answers 202, not 409).

The page is served at the path given, with and without a trailing slash; its
files under ``/_playground/``.
Both go through the app's ``authenticate`` like every route.
"""

from __future__ import annotations

import gzip
import hashlib
from importlib.resources import files

ASSETS_PREFIX = "/_playground/"
# The app's own routes (AG-UI, run streams, Agent Protocol, the agent list).
_RESERVED = ("/agents", "/threads", "/runs")
_RESERVED_PREFIXES = (ASSETS_PREFIX, "/threads/", "/runs/", "/assistants/", "/agui/")
_TYPES = {
    "playground.js": "text/javascript; charset=utf-8",
    "playground.css": "text/css; charset=utf-8",
}
# The page loads only its own files and talks only to its own origin.
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
)


class _File:
    __slots__ = ("body", "etag", "gzipped", "type")

    def __init__(self, body: bytes, content_type: str):
        self.body = body
        self.type = content_type
        self.etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        # mtime=0: the same bytes on every start (the ETag covers the plain body).
        self.gzipped = gzip.compress(body, compresslevel=9, mtime=0)


class Playground:
    """The page at ``path`` and its files; read once, when the App is made."""

    def __init__(self, path: str = "/"):
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError("the playground path must start with '/'")
        # Served with and without a trailing slash (a browser or a proxy adds or
        # drops it): "/play" and "/play/", whichever was given ("/": only "/").
        paths = [path] if path == "/" else [path, path[:-1] if path.endswith("/") else path + "/"]
        for served in paths:
            if served in _RESERVED or served.startswith(_RESERVED_PREFIXES):
                raise ValueError(f"the playground path {path!r} is taken by the app's own routes")
        self.path = path
        static = files(__package__) / "static"
        page = (static / "index.html").read_text(encoding="utf-8")
        self.files = {}
        for served in paths:
            # The page's links are relative to where it is, so the app works under
            # any mount path: "./" from "/" or "/play", "./../" from "/tools/play"
            # or "/play/".
            base = "./" + "../" * (served.count("/") - 1)
            html = page.replace("{{BASE}}", base).encode()
            self.files[served] = _File(html, "text/html; charset=utf-8")
        for name, content_type in _TYPES.items():
            self.files[ASSETS_PREFIX + name] = _File((static / name).read_bytes(), content_type)

    def get(self, path: str) -> _File | None:
        return self.files.get(path)


def response(file: _File, headers) -> tuple[int, bytes, list[tuple[str, str]]]:
    """The status, body and headers answering a GET of ``file`` (``headers``: the request's)."""
    out = [
        ("content-type", file.type),
        ("cache-control", "no-cache"),
        ("etag", file.etag),
        ("vary", "accept-encoding"),
        ("x-content-type-options", "nosniff"),
    ]
    if file.type.startswith("text/html"):
        out += [("content-security-policy", _CSP), ("referrer-policy", "no-referrer")]
    if file.etag in (headers.get("if-none-match") or ""):
        return 304, b"", out
    if "gzip" in (headers.get("accept-encoding") or ""):
        return 200, file.gzipped, [*out, ("content-encoding", "gzip")]
    return 200, file.body, out


__all__ = ["ASSETS_PREFIX", "Playground", "response"]
