"""What a worker's graceful shutdown (``App.shutdown``: SIGTERM, a server's stop)
still owes once its runs are drained, made before it closes: a webhook call
under way is retried and delivered, and a run queued on the worker (it can
start no more) fails, its record settled for every node and its webhook
called. Requests go through the ASGI interface, the apps in this process."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import httpx
import orjson
from agui_bridge import App
from agui_bridge import crumbs as c
from agui_bridge.agent_protocol.hooks import KEY
from agui_bridge.webhooks import Webhooks

from tests.test_webhooks import Receiver


def _client(app: App) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="http://t", timeout=10)


async def _run(http: httpx.AsyncClient, thread_id: str, assistant: str, **body) -> dict:
    response = await http.post(
        f"/threads/{thread_id}/runs",
        json={"assistant_id": assistant, "input": {"messages": ["go"]}, **body},
    )
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_webhook_whose_first_call_failed_is_retried_before_shutdown_returns():
    """The run ends, its webhook's first call answers 500 and the retry is due
    0.1 s later: shutdown waits for it (it used to close with the retry unmade)."""
    receiver = Receiver()
    try:
        hooks = Webhooks(hosts=(f"127.0.0.1:{receiver.port}",), http=True, retries=2, backoff=0.1)
        app = App(store="memory://", webhooks=hooks)

        @app.agent("quick")
        async def quick(ctx):
            yield c.text_delta("done")

        path = f"/fail/1/{uuid.uuid4()}"
        async with _client(app) as http:
            thread_id = (await http.post("/threads", json={})).json()["thread_id"]
            run = await _run(
                http, thread_id, "quick", webhook=f"http://127.0.0.1:{receiver.port}{path}"
            )
            async with asyncio.timeout(10):
                await app.shutdown()
        calls = receiver.of(path)  # as shutdown returned: nothing is waited for here
        assert len(calls) == 2, calls  # the failed call, then the retry
        record = orjson.loads(calls[-1][2])
        assert record["run_id"] == run["run_id"] and record["status"] == "success"
    finally:
        receiver.server.shutdown()


async def test_a_run_queued_at_shutdown_is_settled_for_the_other_node(redis_url, pg_url):
    """Node B's run holds the thread; node A queues a run behind it (enqueue), which
    A looks at again every lease renewal. A shuts down: the queued run can start
    no more, so it fails there and then, and B sees it settled (it used to stay
    ``pending`` on every node), and its webhook is called before A closes."""
    receiver = Receiver()
    go = asyncio.Event()

    def node() -> App:
        hooks = Webhooks(hosts=(f"127.0.0.1:{receiver.port}",), http=True, retries=0)
        app = App(store=pg_url, runs=redis_url, webhooks=hooks)

        @app.agent("hold")
        async def hold(ctx):
            yield c.text_delta("holding ")
            await go.wait()

        return app

    a, b = node(), node()
    path = f"/queued/{uuid.uuid4()}"
    try:
        async with _client(a) as on_a, _client(b) as on_b:
            thread_id = (await on_b.post("/threads", json={})).json()["thread_id"]
            await _run(on_b, thread_id, "hold")
            queued = await _run(
                on_a,
                thread_id,
                "hold",
                multitask_strategy="enqueue",
                webhook=f"http://127.0.0.1:{receiver.port}{path}",
            )
            seen = f"/threads/{thread_id}/runs/{queued['run_id']}"
            assert (await on_b.get(seen)).json()["status"] == "pending"
            async with asyncio.timeout(10):
                await a.shutdown()
            # As A's shutdown returned: B reads the record A shared.
            assert (await on_b.get(seen)).json()["status"] == "error"
            ((_, _, body),) = receiver.of(path)
            assert orjson.loads(body)["status"] == "error"
            go.set()
    finally:
        go.set()
        await a.aclose()
        await b.shutdown()
        receiver.server.shutdown()


class Holder:
    """A webhook receiver that holds its first call unanswered (until ``release``)
    and answers 204 to the next ones, recording each call's body."""

    def __init__(self):
        self.bodies: list[bytes] = []
        self.held = asyncio.Event()
        self.released = asyncio.Event()

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._call, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _call(self, reader, writer) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        self.bodies.append(await reader.readexactly(length))
        if len(self.bodies) == 1:
            self.held.set()
            await self.released.wait()
        with contextlib.suppress(ConnectionError):
            writer.write(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
        writer.close()

    async def close(self) -> None:
        self.released.set()
        self.server.close()
        await self.server.wait_closed()


async def test_a_webhook_not_delivered_at_shutdown_is_owed_again_for_another_node(
    redis_url, pg_url
):
    """Node A's run ended and A is calling its webhook (taken off the shared owed
    list) when it shuts down; the receiver does not answer within the shutdown's
    wait: the call is owed again (it used to be lost with A), and node B delivers it."""
    holder = Holder()
    port = await holder.start()

    def node() -> App:
        hooks = Webhooks(hosts=(f"127.0.0.1:{port}",), http=True, retries=0)
        app = App(store=pg_url, runs=redis_url, webhooks=hooks, lease_ttl=1.0)

        @app.agent("quick")
        async def quick(ctx):
            yield c.text_delta("done")

        return app

    a, b = node(), node()
    try:
        async with _client(a) as on_a:
            thread_id = (await on_a.post("/threads", json={})).json()["thread_id"]
            run = await _run(on_a, thread_id, "quick", webhook=f"http://127.0.0.1:{port}/hook")
            async with asyncio.timeout(10):
                await holder.held.wait()  # A's call, under way
                await a.shutdown()
        owed = b._handler.agent_protocol.owed
        field = orjson.dumps([thread_id, run["run_id"]])
        assert await b.runs.client.call("hexists", KEY, field) == 1
        async with asyncio.timeout(10):  # B's looks: the run ended a grace (1 s) ago
            while len(holder.bodies) < 2:
                await owed.look()
                await asyncio.sleep(0.2)
        assert await b._handler.agent_protocol.webhooks.settle(5.0) == []  # B's call made
        first, again = (orjson.loads(body) for body in holder.bodies)
        assert again["run_id"] == first["run_id"] == run["run_id"]
        assert again["status"] == first["status"] == "success"
        assert await b.runs.client.call("hexists", KEY, field) == 0
    finally:
        await a.aclose()
        await b.aclose()
        await holder.close()


async def test_a_run_that_settled_before_it_started_is_delivered_by_another_node(redis_url):
    """A queued run failed at its node's shutdown has a record and no log; its
    webhook, owed again, is delivered by another node once the record settled a
    grace ago (it used to be left owed until the record expired, then logged as
    not delivered). A run still queued (``pending``) stays its own node's."""
    from agui_bridge.agent_protocol.hooks import Owed
    from agui_bridge.agent_protocol.runs import Registry, RunRecord
    from agui_bridge.runs import Limits
    from agui_bridge.runs.backend import open_runs

    a, b = (open_runs(redis_url, Limits()) for _ in range(2))
    sent = []
    try:
        ours, theirs = Registry(a), Registry(b)
        owed = Owed(b, theirs, lambda url, record: sent.append((url, record)), 0.2, grace=0.5)
        thread_id = f"t-{uuid.uuid4().hex[:8]}"
        failed = RunRecord(thread_id, "r-failed", "slow", {}, {}, "enqueue")
        failed.failed = "the server is shutting down"
        failed.settled_unstarted()
        waiting = RunRecord(thread_id, "r-waiting", "slow", {}, {}, "enqueue")
        for record in (failed, waiting):
            ours.add(record)
            await ours.share(record)
            await owed.owe(thread_id, record.run_id, f"https://hooks.example.com/{record.run_id}")
        await owed.look()
        assert sent == []  # settled just now: its own node's to take
        await asyncio.sleep(0.6)
        await owed.look()
        ((url, record),) = sent
        assert url == "https://hooks.example.com/r-failed"
        assert record.as_json()["status"] == "error" and record.run_id == "r-failed"
        field = orjson.dumps([thread_id, "r-waiting"])
        assert await b.client.call("hexists", KEY, field) == 1
    finally:
        await a.aclose()
        await b.aclose()
