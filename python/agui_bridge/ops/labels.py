"""The route a request is counted and traced under: its pattern, never its ids.

A metric label with a thread or run id in it would grow without bound, so a
path becomes the shape of the route it matched: the app's agent paths as
they are, the thread, run and assistant routes with ``{thread_id}``,
``{run_id}`` and ``{assistant_id}`` in place of the ids, anything else
``other``.
"""

from __future__ import annotations

_WORDS = frozenset(
    ("search", "state", "history", "events", "cancel", "join", "stream", "wait", "runs",
     "schemas", "graph", "subgraphs", "capabilities")
)  # fmt: skip
_NAMES = {"threads": "{thread_id}", "runs": "{run_id}", "assistants": "{assistant_id}"}


def route_label(app, path: str) -> str:
    if app.routes.has(path):
        return path
    if path.startswith("/agui/"):
        rest = path[len("/agui/") :]
        return "/agui/{agent_id}" + ("/capabilities" if rest.endswith("/capabilities") else "")
    if path.endswith("/capabilities") and app.routes.has(path[: -len("/capabilities")]):
        return path
    parts = path.split("/")[1:]
    if not parts or parts[0] not in _NAMES:
        if path == "/agents":
            return path
        playground = getattr(app, "playground", None)
        if playground is not None and playground.get(path) is not None:
            return path
        return "other"
    if len(parts) > 6:
        return "other"
    out = []
    expect = None  # the id a collection's segment is followed by
    for part in parts:
        if expect is not None:
            out.append(part if part in _WORDS else expect)
            expect = None
        elif part in _NAMES:
            out.append(part)
            expect = _NAMES[part]
        else:
            out.append(part if part in _WORDS else "{id}")
    return "/" + "/".join(out)
