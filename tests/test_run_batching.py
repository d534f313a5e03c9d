"""The run loop queues text deltas and encodes them together at the tick's
flush (``encode_many``), or has ``t.drive`` step the agent's generator and
map them itself (a run without listeners or coalescing): what readers get is
what per-item encoding gave, in both loops.

A bad delta among queued ones ends the run as it did when each delta was
encoded as it came: the deltas before it reach the readers, then RUN_ERROR,
nothing of what the agent yielded after it, whether the batch was encoded
in the agent loop, at a flush while the agent awaited, or after the agent
returned.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from agui_bridge import crumbs as c
from agui_bridge.app import App
from agui_bridge.runs.run import BATCH, YIELD_AT

from tests.ingress_apps import parse_sse, run_body

BAD = {"type": "text:delta", "delta": 7}  # not a string: a CrumbError


@pytest.fixture(params=["drive", "listened"])
def loop(request) -> str:
    return request.param


def _app(agent, loop: str) -> App:
    app = App(store="memory://")
    if loop == "listened":
        # An on_event listener needs every item's events: the run takes its
        # ``async for`` loop (``Run._iterate``) instead of ``t.drive``.
        app.on_event(lambda event, info: None)
    app.agent("a", path="/ag-ui/run")(agent)
    return app


async def _run(app: App, thread: str) -> list[dict]:
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
            response = await http.post("/ag-ui/run", json=run_body(thread, "go"))
            assert response.status_code == 200, response.text
            events, _ = parse_sse(response.text)
        return events
    finally:
        await app.aclose()


def _deltas(events: list[dict]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def _types(events: list[dict]) -> list[str]:
    return [e["type"] for e in events]


@pytest.mark.parametrize("before", [0, 1, 5, BATCH - 1, BATCH, BATCH + 3])
async def test_a_bad_delta_in_a_burst_ends_the_run_after_the_deltas_before_it(before, loop):
    closed = []

    async def agent(ctx):
        try:
            for at in range(before):
                yield c.text_delta(f"{at},")
            yield BAD
            for _ in range(BATCH + 5):
                yield c.text_delta("after,")
        finally:
            closed.append(True)

    events = await _run(_app(agent, loop), f"burst-{before}")
    assert events[-1]["type"] == "RUN_ERROR"
    assert _deltas(events) == "".join(f"{at}," for at in range(before))
    assert "after" not in str(events)
    assert closed == [True]


async def test_a_bad_delta_found_at_a_flush_while_the_agent_awaits_ends_the_run(loop):
    async def agent(ctx):
        yield c.text_delta("a")
        yield c.text_delta("b")
        yield BAD
        await asyncio.sleep(0.05)  # the tick's flush encodes the queued deltas
        yield c.text_delta("after")
        yield c.text_delta("after")

    events = await _run(_app(agent, loop), "awaits")
    assert events[-1]["type"] == "RUN_ERROR"
    assert _deltas(events) == "ab"
    assert "after" not in str(events)


async def test_a_bad_delta_as_the_agents_last_item_ends_the_run(loop):
    async def agent(ctx):
        yield c.text_delta("a")
        yield BAD

    events = await _run(_app(agent, loop), "last")
    assert _types(events)[-1] == "RUN_ERROR"
    assert _deltas(events) == "a"


async def test_a_bad_delta_before_another_kind_of_item_ends_the_run(loop):
    async def agent(ctx):
        yield c.text_delta("a")
        yield BAD
        yield c.step_start("after")

    events = await _run(_app(agent, loop), "other")
    assert _types(events)[-1] == "RUN_ERROR"
    assert _deltas(events) == "a"
    assert "STEP_STARTED" not in _types(events)


async def test_a_long_burst_keeps_every_delta_in_order_with_consecutive_ids(loop):
    count = 3 * YIELD_AT // 40 + BATCH  # several batches and several forced flushes

    async def agent(ctx):
        for at in range(count):
            yield c.text_delta(f"{at};")
            if at % 1000 == 999:
                yield c.step_start(f"s{at}")  # another kind of item between batches
                yield c.step_end(f"s{at}")

    app = _app(agent, loop)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
            response = await http.post("/ag-ui/run", json=run_body("long", "go"))
        text = response.text
    finally:
        await app.aclose()
    events, _ = parse_sse(text)
    assert _deltas(events) == "".join(f"{at};" for at in range(count))
    ids = [int(line[4:]) for line in text.split("\n") if line.startswith("id: ")]
    assert ids == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "RUN_FINISHED"
    steps = [e["stepName"] for e in events if e["type"] == "STEP_STARTED"]
    assert steps == [f"s{at}" for at in range(999, count, 1000)]


@pytest.mark.parametrize("size", [1, 1000, 20_000])
async def test_an_agent_that_never_awaits_reaches_the_log_in_pieces_of_about_yield_at(size, loop):
    # A long burst in one write would keep the readers waiting and make the
    # log's trimming (whole entries, the newest kept) drop the whole run.
    count = 8 * YIELD_AT // (size + 60) + 10

    async def agent(ctx):
        for at in range(count):
            yield c.text_delta(f"{at:05d}" + "x" * size)

    app = _app(agent, loop)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
            body = run_body(f"pieces-{size}", "go", run_id=f"r-{size}")
            response = await http.post("/ag-ui/run", json=body)
        events, _ = parse_sse(response.text)
        assert _deltas(events) == "".join(f"{at:05d}" + "x" * size for at in range(count))
        run_log = await app.runs.get(f"pieces-{size}", f"r-{size}")
        assert len(run_log.chunks) >= 4
        assert max(len(chunk) for chunk in run_log.chunks) <= 2 * YIELD_AT + size + 200
    finally:
        await app.aclose()
