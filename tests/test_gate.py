"""The run gate (``agui_bridge.gate``): admission for both protocols, the
Agent Protocol's state update under the same fenced lease as a run."""

from __future__ import annotations

import asyncio

import httpx
from agui_bridge import crumbs as c
from agui_bridge.app import App


class TakenOverOnLoad:
    """A store whose ``load`` of thread ``t`` under a claim waits past the
    lease's ttl and lets another node claim the thread meanwhile (a writer
    that paused)."""

    def __init__(self, store, ttl: float):
        self.store = store
        self.ttl = ttl
        self.armed = False
        self.claimed = False
        self.taken = None

    def __getattr__(self, name):
        return getattr(self.store, name)

    async def claim(self, thread_id, ttl):
        lease = await self.store.claim(thread_id, ttl)
        self.claimed = self.armed and lease is not None
        return lease

    async def load(self, thread_id):
        if self.claimed and thread_id == "t" and self.taken is None:
            await asyncio.sleep(self.ttl + 0.2)
            self.taken = await self.store.claim(thread_id, 30)  # another node
        return await self.store.load(thread_id)


async def test_a_state_update_whose_lease_was_taken_over_writes_nothing(make_store):
    inner = make_store()
    store = TakenOverOnLoad(inner, 0.3)
    app = App(store=store, lease_ttl=0.3)

    @app.agent("echo")
    async def echo(ctx):
        yield c.text_delta("hi")

    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
            created = await http.post("/threads", json={"thread_id": "t"})
            assert created.status_code == 200, created.text
            before = await inner.load("t")
            store.armed = True
            update = {"values": {"k": 1, "messages": [{"type": "human", "content": "x"}]}}
            response = await http.post("/threads/t/state", json=update)
        assert store.taken is not None  # the other node holds the thread now
        assert response.status_code == 409, response.text
        assert response.json()["error"]["code"] == "lease_lost"
        after = await inner.load("t")
        assert after.state == before.state == {}
        assert after.messages == before.messages == []
    finally:
        await app.aclose()


async def test_a_thread_is_freed_when_giving_back_its_limit_slots_fails(monkeypatch):
    """A run's limit slots are given back as the gate frees its thread: a failure
    there must not leave the thread held (every later run 409 run_active)."""
    from agui_bridge.ops.limits import IdentityLimits, Slot

    give_back = Slot.release
    failed = []

    async def failing_once(slot, unused=False):
        if not failed:
            failed.append(slot)
            raise RuntimeError("the counter is gone")
        await give_back(slot, unused)

    monkeypatch.setattr(Slot, "release", failing_once)
    app = App(store="memory://", limits=IdentityLimits(runs=5))

    @app.agent("echo")
    async def echo(ctx):
        yield c.text_delta("hi")

    def body(n: int) -> dict:
        return {"threadId": "t", "runId": f"r{n}",
                "messages": [{"id": f"m{n}", "role": "user", "content": "hello"}]}  # fmt: skip

    transport = httpx.ASGITransport(app=app)
    # Bounded: before the fix the run's end never came (its thread held).
    async with (
        asyncio.timeout(20),
        httpx.AsyncClient(transport=transport, base_url="http://a") as http,
    ):
        first = await http.post("/agui/echo", json=body(1))
        assert "RUN_FINISHED" in first.text and failed
        await app.gate.freed("t", timeout=5)
        second = await http.post("/agui/echo", json=body(2))
        assert second.status_code == 200 and "RUN_FINISHED" in second.text, second.text
    await app.aclose()
