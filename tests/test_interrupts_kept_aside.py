"""Interrupts kept aside by a stopped run (``agui_bridge/interrupts.py``): stored
with the pending ones (``{"keptAside": interrupt}``), not pending (no 409, the
thread is ``idle``, the state shows none), and re-opened by a resume naming
them, over AG-UI and the Agent Protocol."""

from __future__ import annotations

import uuid
from dataclasses import fields, make_dataclass
from types import SimpleNamespace

import httpx
import pytest
from agui_bridge import App, crumbs
from agui_bridge.interrupts import stored
from agui_bridge.store import MemoryStore

ASKED = {"id": "i1", "reason": "approve", "message": "ok?"}
OTHER = {"id": "i2", "reason": "approve"}
USER = {"id": "u1", "role": "user", "content": "q1"}
ANSWER = {"id": "a1", "role": "assistant", "content": "Need approval."}


async def test_a_store_keeps_them_beside_the_pending_ones(make_store):
    store = make_store()
    try:
        await store.save("t1", "ask", [USER, ANSWER], {}, stored([], [ASKED]))
        thread = await store.load("t1")
        assert thread.interrupts == [] and thread.kept_aside == [ASKED]
        assert thread.status == "idle"
        await store.save("t1", "ask", [], {}, stored([OTHER], [ASKED, OTHER]))
        thread = await store.load("t1")
        assert thread.interrupts == [OTHER] and thread.kept_aside == [ASKED]  # each id once
        assert thread.status == "interrupted"
        await store.save("t1", "ask", [], {}, [])
        thread = await store.load("t1")
        assert thread.interrupts == [] and thread.kept_aside == []
    finally:
        await store.close()


def make_app(store) -> App:
    app = App(store=store)

    @app.agent("ask")
    async def ask(ctx):
        if ctx.resume is not None:
            ids = [i["id"] for i in ctx.resume.interrupts]
            yield crumbs.text_delta(f"resumed {ids} with {ctx.resume.decision!r}")
            return
        yield crumbs.text_delta(f"You said: {ctx.input}")

    return app


@pytest.fixture
async def http():
    store = MemoryStore()
    transport = httpx.ASGITransport(app=make_app(store))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        client.store = store
        yield client


async def kept_thread(store, kept=(ASKED,)) -> str:
    thread = f"t-{uuid.uuid4().hex[:6]}"
    await store.save(thread, "ask", [USER, ANSWER], {}, stored([], list(kept)))
    return thread


def body(thread: str, run: str, text: str | None = None, **extra) -> dict:
    messages = [USER, ANSWER]
    if text is not None:
        messages.append({"id": f"u-{run}", "role": "user", "content": text})
    return {"threadId": thread, "runId": run, "messages": messages, **extra}


async def test_they_are_not_pending(http):
    thread = await kept_thread(http.store)
    state = (await http.get(f"/threads/{thread}/state")).json()
    assert state["pendingInterrupts"] == [] and state["interrupts"] == []
    assert "metadata" not in state["messages"][-1]
    # a new turn is not refused, and settles them
    assert (await http.post("/agui/ask", json=body(thread, "r2", "q2"))).status_code == 200
    again = await http.post(
        "/agui/ask", json=body(thread, "r3", resume=[{"interruptId": "i1", "payload": "yes"}])
    )
    assert again.status_code == 400 and again.json()["error"]["code"] == "no_pending_interrupt"


@pytest.mark.parametrize("version", ["1.0", None])
async def test_a_resume_naming_them_re_opens_them(http, version):
    thread = await kept_thread(http.store, (ASKED, OTHER))
    extra = {"protocolVersion": version} if version else {}
    resume = [{"interruptId": "i1", "status": "resolved", "payload": "yes"}]
    done = await http.post("/agui/ask", json=body(thread, "r2", resume=resume, **extra))
    assert done.status_code == 200, done.text
    assert "resumed ['i1'] with 'yes'" in done.text
    thread_now = await http.store.load(thread)
    assert thread_now.interrupts == [] and thread_now.kept_aside == []
    assert (await http.post("/agui/ask", json=body(thread, "r3", "q3"))).status_code == 200


async def test_a_resume_naming_others_is_refused(http):
    thread = await kept_thread(http.store)
    resume = [{"interruptId": "nope", "payload": "yes"}]
    refused = await http.post("/agui/ask", json=body(thread, "r2", resume=resume))
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "no_pending_interrupt"


async def test_the_agent_protocol_resume_re_opens_them(http):
    thread = await kept_thread(http.store)
    done = await http.post(
        f"/threads/{thread}/runs/wait",
        json={"assistant_id": "ask", "command": {"resume": {"i1": "yes"}}},
    )
    assert done.status_code == 200, done.text
    messages = (await http.get(f"/threads/{thread}/state")).json()["messages"]
    assert messages[-1]["content"] == "resumed ['i1'] with 'yes'"


class PlainStore:
    """A custom store whose ``load`` returns its own thread object, not
    ``store.Thread``: the ``{"keptAside": …}`` entries stay in ``interrupts``."""

    def __init__(self, frozen: bool):
        self.inner = MemoryStore()
        self.frozen = frozen

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def load(self, thread_id):
        thread = await self.inner.load(thread_id)
        if thread is None:
            return None
        held = {f.name: getattr(thread, f.name) for f in fields(thread) if f.name != "kept_aside"}
        held["interrupts"] = stored(thread.interrupts, thread.kept_aside)
        if self.frozen:  # an object no attribute can be set on
            return make_dataclass("Frozen", list(held), frozen=True)(**held)
        return SimpleNamespace(**held)


@pytest.mark.parametrize("frozen", [False, True])
async def test_a_custom_stores_thread_is_split_for_a_run(frozen):
    store = PlainStore(frozen)
    transport = httpx.ASGITransport(app=make_app(store))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        thread = await kept_thread(store)
        # not pending: a new turn is no 409 naming an interrupt without an id
        done = await http.post("/agui/ask", json=body(thread, "r2", "q2"))
        assert done.status_code == 200, done.text
        thread = await kept_thread(store)
        resume = [{"interruptId": "i1", "status": "resolved", "payload": "yes"}]
        done = await http.post("/agui/ask", json=body(thread, "r3", resume=resume))
        assert done.status_code == 200, done.text
        assert "resumed ['i1'] with 'yes'" in done.text
