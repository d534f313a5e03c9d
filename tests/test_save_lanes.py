"""Saves of large runs do not queue ahead of small ones (issue 24 item 14).

SQLite takes writes in order on one thread: 20 runs of 4 MB ending at once
put 20 saves ahead of a quick run started just after them (its user's turn,
then its save), so its RUN_FINISHED came after all of theirs. The saves go
through lanes by size (``runs.saves``): the quick run waits for the few saves
already at the store, not for the queue.
"""

from __future__ import annotations

import asyncio

import httpx
from agui_bridge import crumbs as c
from agui_bridge.app import App
from agui_bridge.runs import saves

from tests.ingress_apps import parse_sse, run_body

LARGE_RUNS = 20
CHUNK = "x" * (64 * 1024)


def lanes_app(path) -> tuple[App, asyncio.Event]:
    app = App(store=f"sqlite:///{path}/threads.sqlite")
    gate = asyncio.Event()

    @app.agent("bulk")
    async def bulk(ctx):
        for _ in range(64):  # 4 MiB
            yield c.text_delta(CHUNK)
        await gate.wait()

    @app.agent("quick")
    async def quick(ctx):
        yield c.text_delta("hi")

    return app, gate


async def test_a_quick_run_finishes_before_the_large_saves_queued_ahead_of_it(tmp_path):
    app, gate = lanes_app(tmp_path)
    finished: list[str] = []  # RUN_FINISHED as the run tells it: once its save is done

    @app.on_event
    def ended(event, info):
        if event["type"] == "RUN_FINISHED":
            finished.append(info.thread_id)

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=60) as http:

        async def post(agent: str, name: str) -> None:
            response = await http.post(f"/agui/{agent}", json=run_body(name, "go"))
            events, _ = parse_sse(response.text)
            assert events[-1]["type"] == "RUN_FINISHED", events[-1]

        async with asyncio.timeout(120):
            large = [asyncio.create_task(post("bulk", f"large-{i}")) for i in range(LARGE_RUNS)]
            while sum(run is not None for run in app.gate.active.values()) < LARGE_RUNS:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)  # each has streamed its 4 MiB
            gate.set()  # they end together: their saves queue now
            while not finished:  # the first is saved: the others are queued
                await asyncio.sleep(0.001)
            quick = asyncio.create_task(post("quick", "quick"))
            await asyncio.gather(*large, quick)
    await app.aclose()
    position = finished.index("quick")
    assert position < LARGE_RUNS // 2, finished
    stored = await app.store.load("quick")
    assert [m["role"] for m in stored.messages] == ["user", "assistant"]


async def test_a_lane_takes_the_smallest_waiting_save_first():
    lane = saves.Lane(1)
    order: list[int] = []
    release = asyncio.Event()

    async def save(size: int) -> None:
        if size == 0:
            await release.wait()
        order.append(size)

    first = asyncio.create_task(lane.run(0, lambda: save(0)))
    await asyncio.sleep(0)
    waiting = [asyncio.create_task(lane.run(n, lambda n=n: save(n))) for n in (30, 10, 20)]
    cancelled = asyncio.create_task(lane.run(5, lambda: save(5)))
    await asyncio.sleep(0)
    cancelled.cancel()  # a waiting save that is cancelled gives its place on
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(first, *waiting)
    assert order == [0, 10, 20, 30]
    assert lane.running == 0 and not lane.waiting


def test_the_size_of_a_save_counts_its_content():
    messages = [
        {"role": "user", "content": "abc"},
        {"role": "user", "content": [{"type": "text", "text": "de"}, {"type": "image"}]},
        {"role": "assistant", "toolCalls": [{"function": {"name": "f", "arguments": "{}"}}]},
    ]
    assert saves.size_of(messages) == 3 + (4 + 2) + 5 + 2  # every string of the parts, the args
