"""Draining a worker (shutdown) waits for every run still going to be saved,
a run whose stop was already under way too (``Run.shutdown`` is False for it:
it ends by itself, and was not waited for)."""

from __future__ import annotations

import asyncio

import httpx
from agui_bridge import App
from agui_bridge import crumbs as c
from agui_bridge.store.memory import MemoryStore


class HeldSave(MemoryStore):
    """Its save number ``which`` of a thread (1: the user's turn, before the
    agent starts; 2: the run's answer) sets ``reached``, then takes ``delay``
    seconds, or without one waits until the test sets ``let_through``."""

    def __init__(self, which: int, delay: float | None = None):
        super().__init__()
        self.which, self.delay = which, delay
        self.saves = 0
        self.reached = asyncio.Event()
        self.let_through = asyncio.Event()

    async def save(self, thread_id, agent_id, new_messages, state, interrupts, lease=None,
                   owner=None, errored=False, cut=None, run_id=None):  # fmt: skip
        self.saves += 1
        if self.saves == self.which:
            self.reached.set()
            if self.delay is None:
                await self.let_through.wait()
            else:
                await asyncio.sleep(self.delay)
        await super().save(thread_id, agent_id, new_messages, state, interrupts, lease=lease,
                           owner=owner, errored=errored, cut=cut, run_id=run_id)  # fmt: skip


async def test_a_drain_waits_for_a_stopped_runs_save():
    store = HeldSave(2, delay=0.5)  # the run's answer
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
            await store.reached.wait()  # the stopped run is saving its answer
        await app.drain(timeout=0.05)
        # Drained: the answer the client was sent is stored.
        thread = await store.load("dr")
        assert [m["role"] for m in thread.messages] == ["user", "assistant"], thread.messages
        assert thread.messages[-1]["content"] == "partial "
        assert (await stop).status_code == 202
        await post
    await app.aclose()


async def test_a_drain_waits_for_a_run_whose_turn_is_being_stored():
    store = HeldSave(1)  # the user's turn
    app = App(store=store)
    started = asyncio.Event()

    @app.agent("slow")
    async def slow(ctx):
        started.set()
        yield c.text_delta("never")
        await asyncio.sleep(30)

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=10) as http:
        body = {"threadId": "dt", "runId": "r1",
                "messages": [{"id": "u1", "role": "user", "content": "go"}]}  # fmt: skip
        post = asyncio.ensure_future(http.post("/agui/slow", json=body))
        async with asyncio.timeout(5):
            await store.reached.wait()  # the run has no task yet: its turn is being stored
        drained = asyncio.ensure_future(app.drain(timeout=0.05))
        await asyncio.sleep(0.3)
        assert not drained.done(), "the drain ended while a run's turn was still being stored"
        store.let_through.set()
        async with asyncio.timeout(5):
            await drained
        # Drained: the run has ended (the agent never ran), its turn stored, the thread free.
        assert not app.gate.busy("dt")
        assert not started.is_set()
        thread = await store.load("dt")
        assert [m["id"] for m in thread.messages] == ["u1"]
        response = await post
        assert response.status_code == 200
        assert '"RUN_ERROR"' in response.text, response.text
    await app.aclose()


class NeverLoads(MemoryStore):
    """A store whose load never answers (a database that hangs)."""

    def __init__(self):
        super().__init__()
        self.loading = asyncio.Event()

    async def load(self, thread_id):
        self.loading.set()
        await asyncio.Event().wait()


async def test_a_drain_does_not_wait_for_good_on_a_start_stuck_on_its_store():
    store = NeverLoads()
    app = App(store=store)

    @app.agent("a")
    async def agent(ctx):
        yield c.text_delta("never")

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=10) as http:
        body = {"threadId": "dh", "runId": "r1",
                "messages": [{"id": "u1", "role": "user", "content": "go"}]}  # fmt: skip
        post = asyncio.ensure_future(http.post("/agui/a", json=body))
        async with asyncio.timeout(5):
            await store.loading.wait()
        async with asyncio.timeout(5):  # the drain's 0.1 s, then its grace for starts
            await app.drain(timeout=0.1)
        post.cancel()
    await app.aclose()
