"""The branches of a thread over HTTP (``store/branches.py``, docs/branches.md).

``GET /threads/{id}/branches``: the current branch (its message count and last
message) and every branch the thread left, oldest first, without messages.
``GET /threads/{id}/branches/{n}``: one of them whole: its messages and state.

Reads, guarded as ``GET /threads/{id}/state`` is (authenticate, the ``read``
action, the thread's guards); an unknown thread or branch is 404.
"""

from __future__ import annotations

import orjson

from ..agent_protocol.runs import iso
from ..errors import HttpError
from .params import integer

JSON = [("content-type", "application/json"), ("cache-control", "no-cache")]


def listed(branch) -> dict:
    """A branch as the routes show it (the Agent Protocol's history too)."""
    return {
        "branchId": str(branch.number),
        "forkedAfter": branch.after,
        "runId": branch.run_id,
        "createdAt": iso(branch.created_at),
        "messageCount": branch.count,
    }


def register(handler, routes) -> None:
    async def branches(conn, thread_id: str) -> None:
        thread = await handler.readable_thread(conn, thread_id)
        left = await _store_branches(handler.app.store, thread_id)
        last = thread.messages[-1]["id"] if thread.messages else None
        body = {
            "threadId": thread_id,
            "current": {"messageCount": len(thread.messages), "lastMessageId": last},
            "branches": [listed(b) for b in left],
        }
        await conn.respond(200, orjson.dumps(body), JSON)

    async def branch(conn, thread_id: str, number: str) -> None:
        await handler.readable_thread(conn, thread_id)
        store = handler.app.store
        found = None
        n = integer(number)  # ASCII digits: str.isdigit took '²', which int refused (a 500)
        if n is not None and hasattr(store, "branch"):
            found = await store.branch(thread_id, n)
        if found is None:
            raise HttpError(404, "not_found", f"thread {thread_id!r} has no branch {number!r}")
        body = {
            "threadId": thread_id,
            **listed(found),
            "messages": found.messages,
            "state": found.state,
        }
        await conn.respond(200, orjson.dumps(body), JSON)

    routes.add("GET", "/threads/{thread_id:path}/branches", branches)
    routes.add("GET", "/threads/{thread_id:path}/branches/{number}", branch)


async def _store_branches(store, thread_id: str) -> list:
    """The branches the thread left (none from a store that keeps none)."""
    if not hasattr(store, "branches"):
        return []
    return await store.branches(thread_id) or []
