"""An Agent Protocol stream whose reader is behind a trimmed log ends visibly.

The log of a long run keeps its newest ``max_log_bytes``; a reader that needs
events that were dropped cannot be given them. The AG-UI stream disconnects
such a reader (it resumes by id and gets the join prelude); the Agent
Protocol stream ends with an ``error`` part. It never skips the lost events
and goes on as if nothing was missing.
"""

from __future__ import annotations

import asyncio

import httpx
from agui_bridge import App
from agui_bridge import crumbs as c


def _app() -> App:
    app = App(store="memory://", max_log_bytes=64 * 1024)

    @app.agent("long")
    async def long(ctx):
        for i in range(300):
            yield c.text_delta(f"{i:04d} " + "x" * 1000)
            # As a model's stream does: an agent that never awaits is written
            # in batches of 1,024 deltas, and the log trims whole batches.
            await asyncio.sleep(0)

    return app


def _parts(body: str) -> list[tuple[str, str, str | None]]:
    parts = []
    for block in body.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.split("\n") if ": " in line and line[0] != ":"
        )
        if "event" in fields:
            parts.append((fields["event"], fields.get("data", ""), fields.get("id")))
    return parts


async def _trimmed_run(http, app):
    thread = (await http.post("/threads", json={})).json()["thread_id"]
    body = {"assistant_id": "long", "input": {"messages": ["go"]}}
    waited = await http.post(f"/threads/{thread}/runs/wait", json=body)
    assert waited.status_code == 200, waited.text
    run_id = (await http.get(f"/threads/{thread}/runs")).json()[0]["run_id"]
    run_log = await app.runs.get(thread, run_id)
    assert run_log.ended and run_log.first > 10, "the log must have been trimmed"
    return thread, run_id, run_log


async def test_a_reader_behind_a_trimmed_log_gets_an_error_part_not_a_gap():
    app = _app()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=30) as http:
        thread, run_id, run_log = await _trimmed_run(http, app)
        stream = f"/threads/{thread}/runs/{run_id}/stream?stream_mode=messages-tuple"
        for headers in ({}, {"last-event-id": "3"}):
            response = await http.get(stream, headers=headers)
            assert response.status_code == 200
            parts = _parts(response.text)
            # Nothing after the gap: the reader is told, and gets no chunk it could
            # take for the run's whole output.
            assert [name for name, _, _ in parts] == ["error"], (headers, parts[:3])
            assert "EventsTrimmed" in parts[0][1]

        # A reader whose next event is still held goes on from it.
        after = run_log.last - 3
        assert after >= run_log.first
        response = await http.get(stream, headers={"last-event-id": str(after)})
        parts = _parts(response.text)
        assert "error" not in [name for name, _, _ in parts]
        ids = [int(n) for _, _, n in parts if n is not None]
        assert ids and ids[0] == after + 1 and ids[-1] <= run_log.last
