"""``Run._pull``: what happens between ``t.drive`` stopping and the run acting.

A stop (``POST .../cancel``), a reader joining or resuming, and a failing
item can all land on the loop at the moment ``drive`` hands back. The run
must act as the ``async for`` loop before it did: a stop reaches the agent
(its ``finally`` runs) and ends the run as a stop, the spans an item opened
are in the log with its frames, and a bad item's error is the run's ending.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from agui_bridge import crumbs as c
from agui_bridge.app import App
from agui_bridge.runs import exact_prelude
from agui_bridge.runs.run import YIELD_AT

from tests.ingress_apps import parse_sse, run_body

# Two deltas whose frames pass YIELD_AT together: publishing them flushes.
FIRST, SECOND = c.text_delta("x" * (YIELD_AT * 5 // 8)), c.text_delta("y" * (YIELD_AT // 2))


def _app() -> App:
    return App(store="memory://")


async def _run(app: App, thread: str) -> list[dict]:
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
            response = await asyncio.wait_for(
                http.post("/ag-ui/run", json=run_body(thread, "go")), 10
            )
            assert response.status_code == 200, response.text
            events, _ = parse_sse(response.text)
        return events
    finally:
        await app.aclose()


def _types(events: list[dict]) -> list[str]:
    return [event["type"] for event in events]


async def test_a_stop_while_the_agent_awaits_reaches_the_agent_and_ends_the_run_as_a_stop():
    seen = []
    app = _app()

    @app.agent("a", path="/ag-ui/run")
    async def agent(ctx):
        run = app.gate.run_of(ctx.thread_id)
        try:
            yield FIRST
            yield SECOND
            # A POST .../cancel served as the agent starts to wait.
            asyncio.get_running_loop().call_soon(run.stop)
            await asyncio.sleep(5)
            yield c.text_delta("never")
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        finally:
            seen.append("finally")

    events = await _run(app, "stop-awaiting")
    assert _types(events)[-1] == "RUN_FINISHED", events[-1]
    assert "never" not in str(events)
    assert seen == ["cancelled", "finally"]


@pytest.mark.parametrize("stopped", [False, True])
async def test_the_spans_an_item_opens_are_in_the_log_with_its_frames(stopped):
    seen = {}
    app = _app()

    def look(run):
        # A reader resuming after the newest event, served now: what it is re-opened.
        log = run.log
        seen["reopened"] = exact_prelude(log, log.last, True).count(b"TEXT_MESSAGE_START")
        if stopped:
            run.stop()

    @app.agent("a", path="/ag-ui/run")
    async def agent(ctx):
        run = app.gate.run_of(ctx.thread_id)
        seen["run"] = run
        asyncio.get_running_loop().call_soon(look, run)
        yield c.text_delta("x" * (YIELD_AT + 100))  # opens a message; its frames flush at once
        yield c.text_delta("more")
        await asyncio.sleep(0.05)
        yield c.text_delta("end")

    events = await _run(app, f"spans-{stopped}")
    assert seen["reopened"] == 1
    log = seen["run"].log
    # Event n is the n-th frame (ids from 1): the message's span is START to END.
    at = {event["type"]: n for n, event in enumerate(events, 1)}
    assert [list(span[:2]) for span in log.spans] == [
        [at["TEXT_MESSAGE_START"], at["TEXT_MESSAGE_END"]]
    ]


async def test_a_bad_item_after_a_flush_ends_the_run_with_its_error_even_if_stopped_then():
    app = _app()

    @app.agent("a", path="/ag-ui/run")
    async def agent(ctx):
        run = app.gate.run_of(ctx.thread_id)
        yield FIRST
        yield SECOND
        asyncio.get_running_loop().call_soon(run.stop)  # a POST .../cancel served now
        yield {"type": "text:delta", "delta": 7}  # not a string: CrumbError

    events = await _run(app, "bad-after-flush")
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "CrumbError", events[-1]
