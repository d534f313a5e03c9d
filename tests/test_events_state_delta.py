"""STATE_DELTA in the events dialect behind ``App``, in process: the patch
reaches the client as sent, the thread's stored state is the patched one, a
reader joining mid-run starts from the patched state, and a patch that does
not apply ends the run with a RUN_ERROR naming the failed operation."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui
from agui_bridge.app import App

from tests.ingress_apps import parse_sse, run_body

PATCH = [
    {"op": "add", "path": "/todo/-", "value": "write tests"},
    {"op": "replace", "path": "/count", "value": 2},
]


@pytest.fixture
async def client():
    app = App(store="memory://")
    app.go = asyncio.Event()  # (app.gate is the run gate)
    app.reached = asyncio.Event()

    @app.agent("delta", dialect="events")
    async def delta(ctx):
        yield {"type": "STATE_SNAPSHOT", "snapshot": {"todo": ["plan"], "count": 1}}
        yield {"type": "STATE_DELTA", "delta": PATCH}
        if ctx.input == "wait":
            app.reached.set()
            await app.go.wait()
        if ctx.input == "bad":
            yield {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/nothing"}]}
        yield {"type": "TEXT_MESSAGE_CHUNK", "delta": "done"}

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=20) as http:
        http.app = app
        yield http
    await app.aclose()


def thread(name: str) -> str:
    return f"{name}-{time.monotonic_ns()}"


async def test_a_delta_patches_the_stored_state(client):
    tid = thread("delta")
    body = run_body(tid, "go")
    body["state"] = {"mine": True}
    response = await client.post("/agui/delta", json=body)
    events, _ = parse_sse(response.text)
    assert_valid_agui(events)
    [delta] = [e for e in events if e["type"] == "STATE_DELTA"]
    assert delta["delta"] == PATCH
    stored = (await client.get(f"/threads/{tid}/state")).json()["values"]
    assert stored == {"mine": True, "todo": ["plan", "write tests"], "count": 2}


async def test_a_reader_joining_mid_run_starts_from_the_patched_state(client):
    tid = thread("join")
    started = asyncio.ensure_future(client.post("/agui/delta", json=run_body(tid, "wait")))
    await asyncio.wait_for(client.app.reached.wait(), 10)
    joined = asyncio.ensure_future(client.get(f"/threads/{tid}/events"))
    await asyncio.sleep(0.2)  # the join's prelude is read before the run goes on
    client.app.go.set()
    joined, whole = await joined, await started
    events, _ = parse_sse(joined.text)
    assert [e["type"] for e in events[:3]] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT"]
    assert events[2]["snapshot"] == {"todo": ["plan", "write tests"], "count": 2}
    assert events[-1] == parse_sse(whole.text)[0][-1]


async def test_a_patch_that_does_not_apply_is_a_run_error(client):
    tid = thread("bad")
    response = await client.post("/agui/delta", json=run_body(tid, "bad"))
    events, _ = parse_sse(response.text)
    assert_valid_agui(events)
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["message"] == 'STATE_DELTA: delta[0] remove: nothing at "/nothing"'
    assert events[-1]["code"] == "CrumbError"
    # What was applied before the bad patch stays.
    stored = (await client.get(f"/threads/{tid}/state")).json()["values"]
    assert stored == {"todo": ["plan", "write tests"], "count": 2}
