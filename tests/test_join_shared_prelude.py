"""A join's prelude rebuilt from a shared (Redis) run log equals the one the run's
own node gives from its transformer (memory logs): the current branch while a
regenerate's cut is still being stored, and a resumed run's tool results under
the ids the thread holds. Requests go through the ASGI interface with a client
that reads a response as it streams (httpx's ASGITransport buffers whole bodies)."""

from __future__ import annotations

import asyncio
import json

import pytest
from agui_bridge import App
from agui_bridge import crumbs as c
from agui_bridge.runs import prelude as prelude_module


class Call:
    """One ASGI request whose response is read as it streams."""

    def __init__(self, app, method: str, path: str, body=None, headers=()):
        self.app = app
        path, _, query = path.partition("?")
        raw = json.dumps(body).encode() if body is not None else b""
        hdrs = [(k.lower().encode(), str(v).encode()) for k, v in headers]
        if body is not None:
            hdrs += [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(raw))]
        self.scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": method, "path": path, "raw_path": path.encode(),
            "query_string": query.encode(), "headers": hdrs, "root_path": "",
            "client": ("127.0.0.1", 5555), "server": ("t", 80), "scheme": "http",
        }  # fmt: skip
        self.raw = raw
        self.sent_body = False
        self.left = asyncio.Event()
        self.status = None
        self.headers: dict[str, str] = {}
        self.body = b""
        self.more = asyncio.Event()
        self.task = None

    async def _receive(self):
        if not self.sent_body:
            self.sent_body = True
            return {"type": "http.request", "body": self.raw, "more_body": False}
        await self.left.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message):
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = {k.decode(): v.decode() for k, v in message["headers"]}
        else:
            self.body += message.get("body", b"")
        self.more.set()

    def start(self) -> Call:
        self.task = asyncio.get_running_loop().create_task(
            self.app(self.scope, self._receive, self._send)
        )
        return self

    async def until(self, predicate, timeout: float = 15.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate(self):
                if self.task.done():
                    self.task.result()
                    assert predicate(self), (self.status, self.body[-500:])
                    return
                self.more.clear()
                await self.more.wait()

    async def done(self, timeout: float = 30.0) -> Call:
        async with asyncio.timeout(timeout):
            await self.task
        return self

    async def leave(self) -> None:
        self.left.set()
        await self.done()

    @property
    def events(self) -> list[dict]:
        return events_of(self.body)


def events_of(body: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in body.decode().split("\n") if line.startswith("data: ")]


async def call(app, method, path, body=None, headers=()) -> Call:
    return await Call(app, method, path, body, headers).start().done()


async def logged(app: App, thread: str, last: int, timeout: float) -> None:
    """Waits until ``app``'s copy of run ``r1`` of ``thread`` holds event ``last``."""
    async with asyncio.timeout(timeout):
        while (copy := app.runs.logs.get(thread, "r1")) is None or copy.last < last:
            await asyncio.sleep(0.01)


def body_of(thread: str, run: str, messages, **extra) -> dict:
    if isinstance(messages, str):
        messages = [{"id": f"u-{run}", "role": "user", "content": messages}]
    return {"threadId": thread, "runId": run, "messages": messages, "tools": [], "context": [],
            "forwardedProps": {}, "state": {}, "protocolVersion": "1.0", **extra}  # fmt: skip


def echo(app: App) -> App:
    @app.agent("a")
    async def agent(ctx):
        yield c.text_delta(f"you said {ctx.input}")

    return app


class HeldSaves:
    """A store whose ``hold``-th save of a thread waits for ``go``: before it is
    stored, or (``landed``) once it is (the thread holds the run's output while
    the run's log has not ended yet). ``holding`` is set as it starts to wait."""

    def __init__(self, store, hold: int, landed: bool = False):
        self.store, self.hold, self.landed, self.count = store, hold, landed, 0
        self.holding, self.go = asyncio.Event(), asyncio.Event()

    def __getattr__(self, name):
        return getattr(self.store, name)

    async def save(self, thread_id, agent_id, new_messages, state, interrupts, lease=None,
                   owner=None, errored=False, cut=None, run_id=None):  # fmt: skip
        self.count += 1
        held = self.count == self.hold
        if held and not self.landed:
            self.holding.set()
            await self.go.wait()
        result = await self.store.save(thread_id, agent_id, new_messages, state, interrupts,
                                       lease=lease, owner=owner, errored=errored, cut=cut,
                                       run_id=run_id)  # fmt: skip
        if held and self.landed:
            self.holding.set()
            await self.go.wait()
        return result


@pytest.mark.parametrize("runs", ["memory", "redis"])
async def test_a_join_while_a_regenerate_saves_its_cut_shows_the_new_branch(
    runs, redis_url, pg_url
):
    """A regenerate's join, before the cut is stored: the page must not show the
    old answer beside the new one (memory logs: the run's own snapshot; Redis: the
    prelude is rebuilt from the thread as stored and the turn in the run's meta)."""
    from agui_bridge.store.postgres import PostgresStore

    store = HeldSaves(PostgresStore(pg_url), hold=3)  # 1, 2: the first run's; 3: the cut
    app = echo(App(store=store, runs=redis_url if runs == "redis" else "memory://"))
    try:
        u1 = {"id": "u1", "role": "user", "content": "hello"}
        first = await call(app, "POST", "/agui/a", body_of("t-rg", "r1", [u1]))
        assert first.status == 200
        regen = Call(app, "POST", "/agui/a", body_of("t-rg", "r2", [u1])).start()
        async with asyncio.timeout(10):
            await store.holding.wait()
        join = Call(app, "GET", "/threads/t-rg/events").start()
        await join.until(lambda r: b"STATE_SNAPSHOT" in r.body)
        store.go.set()
        await regen.done()
        await join.done()
        snapshot = next(e for e in join.events if e["type"] == "MESSAGES_SNAPSHOT")
        stored = json.loads((await call(app, "GET", "/threads/t-rg/state")).body)["messages"]
        assert [m["id"] for m in stored] == ["u1", "r2:m1"]
        # the snapshot: the current branch as the run began (u1), not the old answer
        assert [m["id"] for m in snapshot["messages"]] == ["u1"], snapshot["messages"]
    finally:
        store.go.set()
        await app.aclose()


@pytest.mark.parametrize("runs", ["memory", "redis"])
async def test_a_join_of_a_resume_under_the_same_run_id_shows_each_tool_result_once(
    runs, redis_url
):
    """CopilotKit's useInterrupt resumes under the interrupted run's id, so the
    resuming run's tool result takes the next free id (``r1:r2``: ``r1:r1`` is the
    first turn's). A join rebuilt from the frames (Redis) names it ``r1:r1`` again."""
    go = asyncio.Event()
    app = App(store="memory://", runs=redis_url if runs == "redis" else "memory://")

    @app.agent("t")
    async def tools(ctx):
        if ctx.resume is None:
            yield c.tool_call("c1", "lookup", {"q": 1})
            yield c.tool_result("c1", "one")
            yield c.human_required(interrupt_id="ask-1", reason="approval", message="ok?")
            return
        yield c.tool_call("c2", "lookup", {"q": 2})
        yield c.tool_result("c2", "two")
        yield c.text_delta("after")
        await go.wait()

    try:
        u1 = {"id": "u1", "role": "user", "content": "go"}
        first = await call(app, "POST", "/agui/t", body_of("t-ri", "r1", [u1]))
        assert first.status == 200, first.body
        resume = [{"interruptId": "ask-1", "status": "resolved", "payload": {"approved": True}}]
        second = Call(app, "POST", "/agui/t", body_of("t-ri", "r1", [u1], resume=resume)).start()
        await second.until(lambda r: b'"after"' in r.body)
        join = Call(app, "GET", "/threads/t-ri/events").start()
        await join.until(lambda r: b"STATE_SNAPSHOT" in r.body)
        go.set()
        await second.done()
        await join.done()
        sent = [e["messageId"] for e in second.events if e["type"] == "TOOL_CALL_RESULT"]
        snapshot = next(e for e in join.events if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
        stored = json.loads((await call(app, "GET", "/threads/t-ri/state")).body)["messages"]
        tool_ids = [m["id"] for m in stored if m["role"] == "tool"]
        assert tool_ids == ["r1:r1", *sent]
        # the snapshot: both results, under the ids the thread holds
        assert [m["id"] for m in snapshot if m["role"] == "tool"] == tool_ids, snapshot
    finally:
        go.set()
        await app.aclose()


async def test_a_join_on_another_node_of_a_long_run_gets_all_of_it_then_the_rest(redis_url):
    """A log past ``off_loop``'s size is read in a thread for the prelude: the
    joiner on the other node still gets every delta once, then the run's end."""
    go = asyncio.Event()

    def node() -> App:
        app = App(store="memory://", runs=redis_url)

        @app.agent("long")
        async def long(ctx):
            for n in range(400):
                yield c.text_delta(f"{n:05d}" + "x" * 1019)
            await go.wait()
            yield c.text_delta("END")

        return app

    a, b = node(), node()
    try:
        run = Call(a, "POST", "/agui/long", body_of("t-long", "r1", "go")).start()
        await logged(a, "t-long", 402, 15)  # all 400 deltas are in the log
        join = Call(b, "GET", "/threads/t-long/events").start()
        await join.until(lambda r: b"STATE_SNAPSHOT" in r.body and r.body.endswith(b"\n\n"))
        await asyncio.sleep(0.3)  # the prelude's re-opened message and its content
        go.set()
        await run.done()
        await join.done()
        sent = "".join(e["delta"] for e in run.events if e["type"] == "TEXT_MESSAGE_CONTENT")
        shown = "".join(e["delta"] for e in join.events if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert len(sent) == 400 * 1024 + 3
        assert shown == sent
        assert join.events[-1]["type"] == "RUN_FINISHED"
    finally:
        go.set()
        await a.aclose()
        await b.aclose()


def trimming_node(redis_url: str, go: asyncio.Event, deltas: int, opening=(), **options) -> App:
    """A node whose copies keep 64 KiB of a run (``max_log_bytes``), with an
    agent that yields ``opening``, then ``deltas`` 1 KiB text deltas, then
    waits for ``go``."""
    app = App(store="memory://", runs=redis_url, max_log_bytes=64 * 1024, **options)

    @app.agent("long")
    async def long(ctx):
        for item in opening:
            yield item
        for n in range(deltas):
            yield c.text_delta(f"{n:05d}" + "x" * 1019)
            await asyncio.sleep(0)
        await go.wait()

    return app


async def test_a_join_on_a_node_whose_copy_was_trimmed_gets_the_run_from_its_start(redis_url):
    """A run past ``max_log_bytes``: the joining node's copy holds only its
    newest events, Redis all of them; the prelude is built from Redis's."""
    go = asyncio.Event()
    a, b = (trimming_node(redis_url, go, 300) for _ in range(2))
    try:
        run = Call(a, "POST", "/agui/long", body_of("t-trim", "r1", "go")).start()
        await logged(a, "t-trim", 302, 15)
        join = Call(b, "GET", "/threads/t-trim/events").start()
        await join.until(lambda r: b"STATE_SNAPSHOT" in r.body and r.body.endswith(b"\n\n"))
        await asyncio.sleep(0.3)
        assert b.runs.logs.get("t-trim", "r1").first > 1  # B's copy was trimmed
        go.set()
        await run.done()
        await join.done()
        shown = "".join(e["delta"] for e in join.events if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert shown.startswith("00000x"), shown[:40]
        assert len(shown) == 300 * 1024
        assert join.events[-1]["type"] == "RUN_FINISHED"
    finally:
        go.set()
        await a.aclose()
        await b.aclose()


async def test_a_join_after_the_save_landed_of_a_run_that_opened_a_tool_call(redis_url):
    """The run's final save is stored before its log's end reaches the joiner's
    node. Its first tool call had no text before it, so the stored assistant
    message is named by the call id (``c1``), which the thread now holds: the
    replay must not take it for an id the run skipped (it was a 500)."""
    from agui_bridge.store.memory import MemoryStore

    store = HeldSaves(MemoryStore(), hold=2, landed=True)  # 1: the turn; 2: the run's output
    app = App(store=store, runs=redis_url)

    @app.agent("t")
    async def tools(ctx):
        yield c.tool_call("c1", "lookup", {"q": 1})
        yield c.tool_result("c1", "one")
        yield c.text_delta("done")

    try:
        run = Call(app, "POST", "/agui/t", body_of("t-sv", "r1", "go")).start()
        async with asyncio.timeout(10):
            await store.holding.wait()
        stored = json.loads((await call(app, "GET", "/threads/t-sv/state")).body)["messages"]
        assert [m["id"] for m in stored] == ["u-r1", "c1", "r1:r1", "r1:m1"], stored
        # This node's copy of the log has caught up with the run's terminal event
        # (appended before the save: runs.end); the log ends once the save returns.
        async with asyncio.timeout(10):
            while b"RUN_FINISHED" not in b"".join(app.runs.logs.get("t-sv", "r1").chunks):
                await asyncio.sleep(0.01)
        assert not app.runs.logs.get("t-sv", "r1").ended
        join = Call(app, "GET", "/threads/t-sv/events").start()
        await join.until(lambda r: r.task.done() or b"STATE_SNAPSHOT" in r.body)
        store.go.set()
        await run.done()
        await join.done()
        assert join.status == 200, (join.status, join.body[-300:])
        snapshot = next(e for e in join.events if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
        assert [m["id"] for m in snapshot] == ["u-r1", "c1", "r1:r1", "r1:m1"], snapshot
    finally:
        store.go.set()
        await app.aclose()


async def test_a_join_whose_run_ends_while_its_frames_are_replayed(redis_url, monkeypatch):
    """The run's log ends while the joiner's prelude awaits ``replayed`` (an
    XRANGE, a thread): the prelude of the ended run is the thread as its end
    stored it, not as loaded before (without the answer)."""
    go = asyncio.Event()
    app = App(store="memory://", runs=redis_url)

    @app.agent("a")
    async def agent(ctx):
        yield c.text_delta("the answer")
        await go.wait()

    real = prelude_module.replayed

    async def slow_replayed(run_log, thread):
        played = await real(run_log, thread)
        go.set()  # the run ends meanwhile (a long XRANGE or thread replay)
        async with asyncio.timeout(10):
            while not run_log.ended:
                await asyncio.sleep(0.01)
        return played

    monkeypatch.setattr(prelude_module, "replayed", slow_replayed)
    try:
        run = Call(app, "POST", "/agui/a", body_of("t-end", "r1", "go")).start()
        await run.until(lambda r: b"the answer" in r.body)
        join = await Call(app, "GET", "/threads/t-end/events").start().done()
        await run.done()
        snapshot = next(e for e in join.events if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
        streamed = "".join(e.get("delta", "") for e in join.events)
        shown = [m.get("content") for m in snapshot] + [streamed]
        assert any("the answer" in (s or "") for s in shown), join.events
    finally:
        go.set()
        await app.aclose()


async def test_a_join_whose_copy_is_trimmed_while_its_frames_are_replayed(redis_url, monkeypatch):
    """``max_log_bytes``: the run goes on streaming while the prelude awaits
    ``replayed`` (XRANGE, a thread), and this node's copy drops the frames right
    after what was read: read again, not a reader placed where the copy no
    longer holds the next event (it was disconnected right after its prelude)."""
    more, sent, go = asyncio.Event(), asyncio.Event(), asyncio.Event()
    app = App(store="memory://", runs=redis_url, max_log_bytes=64 * 1024)

    @app.agent("long")
    async def long(ctx):
        for n in range(100):
            yield c.text_delta(f"{n:05d}" + "x" * 1019)
            await asyncio.sleep(0)
        await more.wait()
        for n in range(100, 300):
            yield c.text_delta(f"{n:05d}" + "x" * 1019)
            await asyncio.sleep(0)
        sent.set()
        await go.wait()

    real = prelude_module.replayed

    async def slow_replayed(run_log, thread):
        played = await real(run_log, thread)
        if not more.is_set():
            # The first read: the run streams on meanwhile, all of it (a reader
            # placed while it streams could fall behind a 64 KiB copy for good).
            more.set()
            async with asyncio.timeout(10):
                await sent.wait()
                while run_log.last < 302 or run_log.first <= played.last + 1:
                    await asyncio.sleep(0.01)
        return played

    monkeypatch.setattr(prelude_module, "replayed", slow_replayed)
    try:
        run = Call(app, "POST", "/agui/long", body_of("t-tr", "r1", "go")).start()
        await logged(app, "t-tr", 102, 10)
        join = Call(app, "GET", "/threads/t-tr/events").start()
        await join.until(lambda r: b"STATE_SNAPSHOT" in r.body)
        await asyncio.sleep(0.5)
        go.set()
        await run.done()
        await join.done()
        assert join.events[-1]["type"] == "RUN_FINISHED", [e["type"] for e in join.events][-5:]
    finally:
        more.set()
        go.set()
        await app.aclose()


async def test_a_lost_run_seen_on_a_trimmed_copy_closes_what_opened_before_the_copy(redis_url):
    """The run's node stops renewing (it died) while another node's copy holds
    only the run's newest events (``max_log_bytes``): the closers that node
    appends for every reader come from all Redis holds, so a tool call opened
    before the copy's first event is closed too."""
    go = asyncio.Event()
    opening = [c.tool_input_start("c1", "search")]
    a, b = (trimming_node(redis_url, go, 200, opening, lease_ttl=1.0) for _ in range(2))
    try:
        Call(a, "POST", "/agui/long", body_of("t-lost", "r1", "go")).start()
        await logged(a, "t-lost", 203, 15)
        join = Call(b, "GET", "/threads/t-lost/events").start()
        await join.until(lambda r: b"STATE_SNAPSHOT" in r.body and r.body.endswith(b"\n\n"))
        assert b.runs.logs.get("t-lost", "r1").first > 2  # B's copy lacks the call's start
        a.gate.leases["t-lost"][1].cancel()  # A's renewals stop, as if it died
        async with asyncio.timeout(15):
            await join.done()
        ended = join.events[-1]
        assert ended["type"] == "RUN_ERROR" and ended["code"] == "run_lost", ended
        ends = [e["toolCallId"] for e in join.events if e["type"] == "TOOL_CALL_END"]
        assert ends == ["c1"], join.events[-4:]
    finally:
        go.set()
        await a.aclose()
        await b.aclose()
