"""A search never holds runs up (issue 24 item 3, "never slows runs"): the
memory store searched on the event loop in one go, so a run beside four
searchers waited for whole searches at each of its steps (14x slower,
``benches/search.py``). It now walks a slice of threads per turn of the
loop and each load takes a turn of its own: a run goes on while a search is
in progress, and the search still finds what it finds alone."""

from __future__ import annotations

import asyncio

import httpx
from agui_bridge import crumbs as c
from agui_bridge.app import App
from agui_bridge.store import memory

from tests.ingress_apps import parse_sse, run_body

THREADS = 3000


async def test_a_run_ends_while_a_search_is_walking_the_threads(monkeypatch):
    # The walk: THREADS / 8 turns of the loop (raising=False: fails on a store without slices).
    monkeypatch.setattr(memory, "SLICE", 8, raising=False)
    app = App(store="memory://")

    @app.agent("echo")
    async def echo(ctx):
        yield c.text_delta("hi")

    store = app.store
    for n in range(THREADS):
        await store.create(f"t{n:05}", {"kind": n % 3})
    await store.create("wanted", {"kind": 7})  # the oldest but one: the walk's end
    for n in range(THREADS, THREADS + 2):
        await store.create(f"t{n:05}", {"kind": n % 3})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a", timeout=60) as http:
        search = asyncio.create_task(
            http.post("/threads/search", json={"metadata": {"kind": 7}, "limit": 10})
        )
        await asyncio.sleep(0)  # the search has begun
        response = await http.post("/agui/echo", json=run_body("r", "go"))
        in_progress = not search.done()
        found = (await search).json()
    await app.aclose()
    assert parse_sse(response.text)[0][-1]["type"] == "RUN_FINISHED"
    assert in_progress, "the run waited for the whole search"
    assert [t["thread_id"] for t in found] == ["wanted"]
