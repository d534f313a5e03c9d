"""Draining a worker (shutdown) waits for every run still going to be saved,
a run whose stop was already under way too (``Run.shutdown`` is False for it:
it ends by itself, and was not waited for)."""

from __future__ import annotations

import asyncio

import httpx
from agui_bridge import App
from agui_bridge import crumbs as c
from agui_bridge.store.memory import MemoryStore


class SlowEndSave(MemoryStore):
    """Its second save of a thread (a run's answer) takes ``delay`` seconds."""

    def __init__(self, delay: float):
        super().__init__()
        self.delay = delay
        self.saves = 0
        self.ending = asyncio.Event()

    async def save(self, thread_id, agent_id, new_messages, state, interrupts, lease=None,
                   owner=None, errored=False, cut=None, run_id=None):  # fmt: skip
        self.saves += 1
        if self.saves == 2:
            self.ending.set()
            await asyncio.sleep(self.delay)
        await super().save(thread_id, agent_id, new_messages, state, interrupts, lease=lease,
                           owner=owner, errored=errored, cut=cut, run_id=run_id)  # fmt: skip


async def test_a_drain_waits_for_a_stopped_runs_save():
    store = SlowEndSave(delay=0.5)
    app = App(store=store)

    @app.agent("slow")
    async def slow(ctx):
        yield c.text_delta("partial ")
        await asyncio.sleep(30)
        yield c.text_delta("never")

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=10) as http:
        body = {"threadId": "dr", "runId": "r1",
                "messages": [{"id": "u1", "role": "user", "content": "go"}]}  # fmt: skip
        post = asyncio.ensure_future(http.post("/agui/slow", json=body))
        async with asyncio.timeout(5):
            while (run := app.gate.run_of("dr")) is None or run.first_at is None:
                await asyncio.sleep(0.01)
        stop = asyncio.ensure_future(http.post("/threads/dr/runs/r1/cancel"))
        async with asyncio.timeout(5):
            await store.ending.wait()  # the stopped run is saving its answer
        await app.drain(timeout=0.05)
        # Drained: the answer the client was sent is stored.
        thread = await store.load("dr")
        assert [m["role"] for m in thread.messages] == ["user", "assistant"], thread.messages
        assert thread.messages[-1]["content"] == "partial "
        assert (await stop).status_code == 202
        await post
    await app.aclose()
