"""The route and method a request is counted and traced under: its pattern,
never its ids, and a method HTTP defines or ``_OTHER``.

A metric label with a thread or run id in it would grow without bound, so a
request is labelled with the pattern of the route-table row that serves its
path (``/threads/{thread_id}/state``), the app's literal paths (agents,
health, the playground) as they are, and anything no row serves ``other``.
"""

from __future__ import annotations


def route_label(app, path: str) -> str:
    return app.routes.pattern_of(path) or "other"


# HTTP's methods (RFC 9110, PATCH): any other a client sends is counted and
# traced as ``_OTHER`` (OpenTelemetry's name for it), or every made-up method
# would be a label value of its own, one more series per request.
KNOWN_METHODS = frozenset(
    ("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH")
)


def method_label(method: str) -> str:
    return method if method in KNOWN_METHODS else "_OTHER"
