"""The route a request is counted and traced under: its pattern, never its ids.

A metric label with a thread or run id in it would grow without bound, so a
request is labelled with the pattern of the route-table row that serves its
path (``/threads/{thread_id}/state``), the app's literal paths (agents,
health, the playground) as they are, and anything no row serves ``other``.
"""

from __future__ import annotations


def route_label(app, path: str) -> str:
    return app.routes.pattern_of(path) or "other"
