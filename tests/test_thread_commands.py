"""``input.respond`` on ``POST /threads/{id}/commands`` while the thread has a run
going, in process: who may ask is settled before anything waits, an interrupt
nobody was asked is answered at once, and one the run is saving is waited for."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

import httpx
from agui_bridge import crumbs as c
from agui_bridge.app import App
from agui_bridge.store.memory import MemoryStore

from tests.ingress_apps import parse_sse

# A hang guard only: a prompt answer takes milliseconds (a run that has told its
# readers nothing is given a second's grace); the wait it replaces took 30 s.
PROMPT = 5.0


def _authenticate(request):
    user = request.headers.get("x-user")
    return {"user": user} if user else None


def _owns(identity, thread_id: str) -> bool:
    return thread_id.startswith(identity["user"] + "-")


class HeldStore(MemoryStore):
    """Holds, until ``let_go``, every save that brings a message of ``role``: a
    run's answer (assistant), or the user's turn saved before the agent starts."""

    def __init__(self, role: str = "assistant"):
        super().__init__()
        self.role = role
        self.let_go = asyncio.Event()
        self.held = asyncio.Event()

    async def save(self, thread_id, agent_id, new_messages, *args, **kwargs):
        if any(m.get("role") == self.role for m in new_messages):
            self.held.set()
            await self.let_go.wait()
        return await super().save(thread_id, agent_id, new_messages, *args, **kwargs)


def make(store, going: asyncio.Event) -> App:
    app = App(store=store, authenticate=_authenticate)

    @app.agent("held", authorize_thread=_owns)
    async def held(ctx):
        # Runs until the test lets it go.
        yield c.text_delta("working")
        await going.wait()
        yield c.text_delta("done")

    @app.agent("asks", authorize_thread=_owns)
    async def asks(ctx):
        if ctx.resume is not None:
            yield c.text_delta(f"you chose {ctx.resume.decision}")
            return
        yield c.text_delta("may I?")
        yield c.human_required("ask-1", message="may I?")

    return app


def command(n: int, method: str, params: dict) -> dict:
    return {"id": n, "method": method, "params": params}


def respond(n: int, interrupt_id: str) -> dict:
    return command(n, "input.respond", {"interrupt_id": interrupt_id, "response": "y"})


async def timed(request) -> tuple[httpx.Response, float]:
    began = time.monotonic()
    async with asyncio.timeout(PROMPT):
        response = await request
    return response, time.monotonic() - began


async def test_a_respond_during_a_long_run_is_answered_at_once():
    going = asyncio.Event()
    app = make(MemoryStore(), going)
    ann, bob = {"x-user": "ann"}, {"x-user": "bob"}
    thread_id = f"ann-{uuid.uuid4()}"
    path = f"/threads/{thread_id}/commands"
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as http:
        start = {"assistant_id": "held", "input": {"messages": ["go"]}}
        started = await http.post(path, json=command(1, "run.start", start), headers=ann)
        assert started.status_code == 200, started.text
        assert app.gate.run_of(thread_id) is not None  # the run goes on

        bogus, took = await timed(http.post(path, json=respond(2, "bogus"), headers=ann))
        assert bogus.status_code == 404, bogus.text
        assert bogus.json()["error"] == "no_such_interrupt"
        assert "bogus" in bogus.json()["message"]
        assert took < PROMPT

        # Someone else's thread: refused before anything waits for the run.
        refused, _ = await timed(http.post(path, json=respond(3, "bogus"), headers=bob))
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"] == "permission_denied"
        nobody, _ = await timed(http.post(path, json=respond(4, "bogus")))
        assert nobody.status_code == 401, nobody.text

        assert app.gate.run_of(thread_id) is not None  # nothing touched the run
        going.set()
        async with asyncio.timeout(30):
            await app.gate.freed(thread_id)
        state = await http.post(path, json=command(5, "state.get", {}), headers=ann)
        messages = state.json()["result"]["values"]["messages"]
        assert messages[-1]["content"] == "workingdone"
    await app.aclose()


ANN = {"x-user": "ann"}


@contextlib.asynccontextmanager
async def asked(store: HeldStore):
    """An app whose "asks" run, started by ann, has told its readers of its
    interrupt and has its save (which makes the interrupt pending) held:
    yields ``(app, http, thread_id, commands path)``."""
    app = make(store, asyncio.Event())
    thread_id = f"ann-{uuid.uuid4()}"
    path = f"/threads/{thread_id}/commands"
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as http:
        start = {"assistant_id": "asks", "input": {"messages": ["go"]}}
        started = await http.post(path, json=command(1, "run.start", start), headers=ANN)
        assert started.status_code == 200, started.text
        async with asyncio.timeout(30):
            await store.held.wait()
        yield app, http, thread_id, path
    await app.aclose()


async def test_a_respond_to_the_interrupt_a_run_is_saving_waits_for_the_save():
    """The run told its readers of the interrupt (RUN_FINISHED comes before the
    save) and its save is not done: the answer is taken once it is."""
    store = HeldStore()
    async with asked(store) as (app, http, thread_id, path):
        log = await app.runs.active_of(thread_id)
        assert log is not None and not log.ended
        assert b"ask-1" in log.chunks[-1]  # its readers were told

        answer = asyncio.ensure_future(http.post(path, json=respond(2, "ask-1"), headers=ANN))
        await asyncio.sleep(0.3)
        assert not answer.done()  # waits for the save that makes it pending
        store.let_go.set()
        async with asyncio.timeout(30):
            answered = await answer
        assert answered.status_code == 200, answered.text
        assert answered.json()["type"] == "success"
        async with asyncio.timeout(30):
            while app.gate.run_of(thread_id) is not None or not (
                await store.load(thread_id)
            ).messages[-1]["content"].startswith("you chose"):
                await asyncio.sleep(0.02)
        assert (await store.load(thread_id)).messages[-1]["content"] == "you chose y"


class StaleReadStore(HeldStore):
    """``HeldStore``, whose next load (once ``stale`` is set) reads the thread as
    it is, then hands that copy back only after the held save is done."""

    def __init__(self):
        super().__init__()
        self.stale = False
        self.read = asyncio.Event()
        self.saved = asyncio.Event()

    async def save(self, *args, **kwargs):
        saved = await super().save(*args, **kwargs)
        if self.let_go.is_set():
            self.saved.set()
        return saved

    async def load(self, thread_id, *args, **kwargs):
        thread = await super().load(thread_id, *args, **kwargs)
        if self.stale:
            self.stale = False
            self.read.set()
            await self.saved.wait()
            await asyncio.sleep(0.2)  # the run is let go once saved
        return thread


async def test_a_respond_whose_first_read_predates_the_save_reads_the_thread_again():
    """The answer's first read of the thread came before the run's save (which
    made the interrupt pending); by the time it returns, the run is saved and
    let go: the interrupt is answered, not refused from that stale read."""
    store = StaleReadStore()
    async with asked(store) as (_, http, _, path):
        store.stale = True
        answer = asyncio.ensure_future(http.post(path, json=respond(2, "ask-1"), headers=ANN))
        async with asyncio.timeout(30):
            await store.read.wait()
        store.let_go.set()
        async with asyncio.timeout(30):
            answered = await answer
        assert answered.status_code == 200, answered.text
        assert answered.json()["type"] == "success"


async def test_a_cancel_while_the_turn_is_saved_stops_the_run():
    """Readers see a run from its RUN_STARTED, before the user's turn is saved
    and its task starts: a cancel then is taken (202), and the run ends
    stopped, its agent never called (it was answered 202 and ran on)."""
    store = HeldStore("user")
    app = App(store=store)
    called = []

    @app.agent("ticks")
    async def ticks(ctx):
        called.append(True)
        for n in range(3):
            yield c.text_delta(f"tick {n} ")

    thread_id = f"t-{uuid.uuid4()}"
    body = {
        "threadId": thread_id,
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": "go"}],
    }
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as http:
        streamed = asyncio.ensure_future(http.post("/ag-ui/run", json=body))
        async with asyncio.timeout(30):
            await store.held.wait()
        cancel = asyncio.ensure_future(http.post(f"/threads/{thread_id}/runs/r1/cancel"))
        await asyncio.sleep(0.2)
        store.let_go.set()
        async with asyncio.timeout(30):
            cancelled, response = await cancel, await streamed
        assert cancelled.status_code == 202, cancelled.text
        events, _ = parse_sse(response.text)
        assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_FINISHED"]
        assert called == []
        async with asyncio.timeout(30):
            await app.gate.freed(thread_id)
        thread = await store.load(thread_id)
        assert [m["id"] for m in thread.messages] == ["u1"]  # the turn is kept
    await app.aclose()
