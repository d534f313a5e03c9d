"""Two gateway nodes sharing run logs (real redis-server) and threads (PostgreSQL):
the run records (list, get, cancel, the multitask strategies) and the
thread-centric stream (``threads.stream()``, a reconnect with ``since``) are
the same from either node."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter

import httpx
import orjson
import pytest
from langgraph_sdk import get_client, get_sync_client

from tests.thread_runs import check_no_run_lost


@pytest.fixture
async def clients(nodes):
    a = get_client(url=nodes[0], api_key=None)
    b = get_client(url=nodes[1], api_key=None)
    yield a, b
    await a.aclose()
    await b.aclose()


async def _thread(client) -> str:
    return (await client.threads.create(thread_id=str(uuid.uuid4())))["thread_id"]


async def _status(client, thread_id, run_id, wanted: str) -> None:
    async with asyncio.timeout(20):
        while (await client.runs.get(thread_id, run_id))["status"] != wanted:
            await asyncio.sleep(0.05)


async def test_a_run_is_listed_and_read_with_its_record_on_the_other_node(clients):
    a, b = clients
    thread_id = await _thread(a)
    run = await a.runs.create(
        thread_id,
        "slow",
        input={"messages": ["count 20"]},
        metadata={"from": "a"},
        stream_mode="messages-tuple",
    )
    seen = await b.runs.get(thread_id, run["run_id"])
    assert seen["metadata"] == {"from": "a"} and seen["status"] == "running"
    assert seen["kwargs"]["stream_mode"] == ["messages-tuple"]
    listed = await b.runs.list(thread_id)
    assert [r["run_id"] for r in listed] == [run["run_id"]]
    assert listed[0]["metadata"] == {"from": "a"}
    await b.runs.join(thread_id, run["run_id"])
    await _status(b, thread_id, run["run_id"], "success")
    assert (await a.runs.get(thread_id, run["run_id"]))["status"] == "success"


async def test_a_run_cancelled_on_one_node_is_interrupted_on_both(clients):
    a, b = clients
    thread_id = await _thread(a)
    run = await a.runs.create(thread_id, "slow", input={"messages": ["count 60"]})
    await b.runs.cancel(thread_id, run["run_id"])
    assert (await b.runs.get(thread_id, run["run_id"]))["status"] == "interrupted"
    assert (await a.runs.get(thread_id, run["run_id"]))["status"] == "interrupted"
    listed = await a.runs.list(thread_id)
    assert [r["status"] for r in listed] == ["interrupted"]


async def test_multitask_strategies_from_the_other_node(clients):
    a, b = clients
    thread_id = await _thread(a)
    first = await a.runs.create(thread_id, "slow", input={"messages": ["count 60"]})
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await b.runs.create(thread_id, "slow", input={"messages": ["count 2"]})
    assert refused.value.response.status_code == 409
    second = await b.runs.create(
        thread_id, "slow", input={"messages": ["count 3"]}, multitask_strategy="interrupt"
    )
    await _status(a, thread_id, first["run_id"], "interrupted")
    assert (await b.runs.get(thread_id, first["run_id"]))["status"] == "interrupted"
    await b.runs.join(thread_id, second["run_id"])
    await _status(a, thread_id, second["run_id"], "success")

    third = await a.runs.create(thread_id, "slow", input={"messages": ["count 20"]})
    queued = await b.runs.create(
        thread_id, "slow", input={"messages": ["count 2"]}, multitask_strategy="enqueue"
    )
    assert (await a.runs.get(thread_id, queued["run_id"]))["status"] == "pending"
    values = await b.runs.join(thread_id, queued["run_id"])
    assert values["messages"][-1]["content"].strip() == "tick 0 tick 1"
    assert (await a.runs.get(thread_id, third["run_id"]))["status"] == "success"
    assert (await a.runs.get(thread_id, queued["run_id"]))["status"] == "success"


async def test_an_interrupt_from_the_other_node_cancels_the_queued_runs_too(clients):
    a, b = clients
    thread_id = await _thread(a)
    first = await a.runs.create(thread_id, "slow", input={"messages": ["count 60"]})
    queued = await a.runs.create(
        thread_id, "slow", input={"messages": ["count 2"]}, multitask_strategy="enqueue"
    )
    last = await b.runs.create(
        thread_id, "slow", input={"messages": ["count 3"]}, multitask_strategy="interrupt"
    )
    await b.runs.join(thread_id, last["run_id"])
    await _status(a, thread_id, last["run_id"], "success")
    for client in (a, b):
        assert (await client.runs.get(thread_id, first["run_id"]))["status"] == "interrupted"
        assert (await client.runs.get(thread_id, queued["run_id"]))["status"] == "interrupted"
    await asyncio.sleep(0.5)  # time for a run still queued to start once the thread is free
    messages = (await a.threads.get(thread_id))["values"]["messages"]
    assert [m["content"] for m in messages if m["type"] == "human"] == ["count 60", "count 3"]


async def _events(http, thread_id: str, since: int, count: int | None) -> list[dict]:
    body = {"channels": ["lifecycle", "messages", "values", "input"], "since": since}
    out = []
    async with http.stream("POST", f"/threads/{thread_id}/stream/events", json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                out.append(orjson.loads(line[6:]))
                data = out[-1]["params"]["data"]
                if len(out) == count or data.get("event") == "completed":
                    break
    return out


async def test_a_thread_stream_started_on_one_node_resumed_on_the_other(nodes, clients):
    a, b = clients
    async with client_stream(a) as thread:
        await thread.run.start(input={"messages": ["approve the plan"]})
        async with asyncio.timeout(20):
            while not thread.interrupted:
                await asyncio.sleep(0.05)
        thread_id = thread.thread_id
    # The interrupt is answered through the other node, in a session of its own.
    async with b.threads.stream(thread_id, assistant_id="demo") as thread:
        async with asyncio.timeout(20):
            while not thread.interrupted:
                await asyncio.sleep(0.05)
        assert thread.interrupts[0]["interrupt_id"] == await _pending(b, thread_id)
        await thread.run.respond("yes")
        async with asyncio.timeout(20):
            out = await thread.output
        assert out["task"]["status"] == "approved"

    async with httpx.AsyncClient(base_url=nodes[0], timeout=30) as on_a:
        start = {"assistant_id": "slow", "input": {"messages": ["count 20"]}}
        answer = await on_a.post(
            f"/threads/{thread_id}/commands", json={"id": 1, "method": "run.start", "params": start}
        )
        since = answer.json()["meta"]["applied_through_seq"]
        head = await _events(on_a, thread_id, since, 6)
    async with httpx.AsyncClient(base_url=nodes[1], timeout=30) as on_b:
        tail = await _events(on_b, thread_id, head[-1]["seq"], None)
        whole = await _events(on_b, thread_id, since, None)
    resumed = head + tail
    assert [e["seq"] for e in resumed] == [e["seq"] for e in whole]
    assert [e["params"]["data"] for e in resumed] == [e["params"]["data"] for e in whole]
    deltas = [
        e["params"]["data"]["delta"]["text"]
        for e in resumed
        if e["params"]["data"].get("event") == "content-block-delta"
    ]
    assert deltas == [f"tick {n} " for n in range(20)]


def client_stream(client):
    return client.threads.stream(assistant_id="demo")


async def _pending(client, thread_id: str) -> str:
    state = await client.threads.get_state(thread_id)
    return state["interrupts"][0]["id"]


class Proxy:
    """A TCP proxy in front of one node; ``cut`` drops every connection and sends
    the next ones to another node (a client's node went away mid-stream)."""

    def __init__(self, target: str):
        self.target = target
        self.open: set = set()
        self.connections: Counter = Counter()  # by the node they went to
        self.server = None
        self.port = 0

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader, writer) -> None:
        self.connections[self.target] += 1
        try:
            port = int(self.target.rsplit(":", 1)[1])
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            writer.transport.abort()
            return
        pair = (writer, up_writer)
        self.open.add(pair)

        async def pipe(source, sink):
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (OSError, ConnectionError):
                pass
            finally:
                sink.transport.abort()

        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            self.open.discard(pair)

    def cut(self, target: str) -> None:
        self.target = target
        for writer, up_writer in list(self.open):
            writer.transport.abort()
            up_writer.transport.abort()

    async def aclose(self) -> None:
        self.server.close()
        self.cut(self.target)
        async with asyncio.timeout(5):
            while self.open:
                await asyncio.sleep(0.01)


async def test_the_sdk_resumes_a_thread_stream_on_the_other_node_with_since(nodes):
    """The node a ``threads.stream()`` session reads from goes away mid-run: the SDK
    reconnects (``since`` = its cursor) and reaches the other node; the message it
    was reading ends whole, each token once."""
    proxy = Proxy(nodes[0])
    client = get_client(url=await proxy.start(), api_key=None)
    try:
        async with client.threads.stream(assistant_id="slow") as thread:
            await thread.run.start(input={"messages": ["count 40"]})
            ticks: list[str] = []

            found: asyncio.Queue = asyncio.Queue()

            async def drive() -> None:  # the projection dispatches the stream's events
                async for message in thread.messages:
                    found.put_nowait(message)

            driver = asyncio.ensure_future(drive())
            async with asyncio.timeout(30):
                message = await found.get()
                async for delta in message.text:
                    ticks.append(delta)
                    if len(ticks) == 5:
                        proxy.cut(nodes[1])
                text = await message.text
                await thread.output
            await driver
            thread_id = thread.thread_id
        # The rest was read from the other node.
        assert proxy.connections[nodes[1]] >= 1
        other = get_client(url=nodes[1], api_key=None)
        assert (await other.threads.get(thread_id))["status"] == "idle"
        await other.aclose()
        assert ticks == [f"tick {n} " for n in range(40)]
        assert text == "".join(ticks)
    finally:
        await client.aclose()
        await proxy.aclose()


def test_the_sync_client_answers_on_one_node_what_the_other_asked(nodes):
    a = get_sync_client(url=nodes[0], api_key=None)
    b = get_sync_client(url=nodes[1], api_key=None)
    with a.threads.stream(assistant_id="demo") as thread:
        thread.run.start(input={"messages": ["approve the plan"]})
        _wait(lambda: thread.interrupted)
        thread_id = thread.thread_id
    with b.threads.stream(thread_id, assistant_id="demo") as thread:
        _wait(lambda: thread.interrupted)
        thread.run.respond("no")
        assert thread.output["task"]["status"] == "declined"
    assert a.threads.get(thread_id)["status"] == "idle"


def _wait(done, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline
        time.sleep(0.05)


async def test_a_run_queued_on_one_node_cancelled_through_the_other(clients):
    a, b = clients
    thread_id = await _thread(a)
    first = await a.runs.create(thread_id, "slow", input={"messages": ["count 40"]})
    queued = await b.runs.create(
        thread_id, "slow", input={"messages": ["count 2"]}, multitask_strategy="enqueue"
    )
    await a.runs.cancel(thread_id, queued["run_id"])
    # Only node a is asked from here on: node b learns of the cancel by itself.
    assert (await a.runs.get(thread_id, queued["run_id"]))["status"] == "interrupted"
    await a.runs.join(thread_id, first["run_id"])
    # The thread stays free: the queued run never starts.
    await asyncio.sleep(2)
    values = (await a.threads.get(thread_id))["values"]
    assert values["messages"][-1]["content"].strip().endswith("tick 39")
    assert (await a.threads.get(thread_id))["status"] == "idle"
    assert (await b.runs.get(thread_id, queued["run_id"]))["status"] == "interrupted"


async def test_a_run_queued_on_one_node_is_joined_through_the_other(clients):
    """A join and a joined stream through node a of a run queued on node b wait
    for its start there and answer its end. Nothing told a's record that the
    run had started on b: both waited forever, the run long over."""
    a, b = clients
    thread_id = await _thread(a)
    await b.runs.create(thread_id, "slow", input={"messages": ["count 10"]})
    queued = await b.runs.create(
        thread_id, "slow", input={"messages": ["count 2"]}, multitask_strategy="enqueue"
    )
    run_id = queued["run_id"]
    assert (await a.runs.get(thread_id, run_id))["status"] == "pending"

    async def streamed() -> list:
        return [p async for p in a.runs.join_stream(thread_id, run_id, stream_mode="values")]

    async with asyncio.timeout(20):
        parts, values = await asyncio.gather(streamed(), a.runs.join(thread_id, run_id))
    assert values["messages"][-1]["content"].strip() == "tick 0 tick 1"
    assert parts[-1].event == "values"
    assert parts[-1].data["messages"][-1]["content"].strip() == "tick 0 tick 1"
    assert (await a.runs.get(thread_id, run_id))["status"] == "success"

    # One queued on b that can never start (a resume with no interrupt pending):
    # a's join answers its error, a's joined stream ends on it.
    await b.runs.create(thread_id, "slow", input={"messages": ["count 10"]})
    queued = await b.runs.create(
        thread_id, "slow", command={"resume": "yes"}, multitask_strategy="enqueue"
    )
    run_id = queued["run_id"]
    assert (await a.runs.get(thread_id, run_id))["status"] == "pending"
    async with asyncio.timeout(20):
        parts, values = await asyncio.gather(streamed(), a.runs.join(thread_id, run_id))
    assert values["__error__"]["error"] == "RunNotStarted"
    assert parts[-1].event == "error" and parts[-1].data["error"] == "RunNotStarted"
    assert (await a.runs.get(thread_id, run_id))["status"] == "error"


async def test_a_cancel_through_the_other_node_leaves_a_run_that_never_started(clients):
    """A run queued on node b that could not start (``error``) is left so by a
    cancel through node a, on both nodes (it was made ``interrupted`` everywhere)."""
    a, b = clients
    thread_id = await _thread(a)
    await b.runs.create(thread_id, "slow", input={"messages": ["count 4"]})
    queued = await b.runs.create(
        thread_id, "slow", command={"resume": "yes"}, multitask_strategy="enqueue"
    )
    run_id = queued["run_id"]
    await _status(a, thread_id, run_id, "error")
    answer = await a.runs.cancel(thread_id, run_id)
    assert answer == {"threadId": thread_id, "runId": run_id, "status": "error"}
    for client in (a, b):
        assert (await client.runs.get(thread_id, run_id))["status"] == "error"


async def test_a_reader_that_leaves_cancels_the_run_on_either_node_when_asked(clients):
    """``on_disconnect="cancel"`` (a stream, a wait) and a joined stream's
    ``cancel_on_disconnect`` cancel the run when the client leaves, through the
    node that runs it or the other one: on Redis they did nothing (the live run
    sits on the run's node, not on the log a reader holds) and the run ran on."""
    a, b = clients

    async def left(thread_id: str, run_id: str) -> None:
        await _status(a, thread_id, run_id, "interrupted")
        assert (await b.runs.get(thread_id, run_id))["status"] == "interrupted"
        values = await a.runs.join(thread_id, run_id)
        partial = values["messages"][-1]["content"]
        assert partial.startswith("tick 0") and "tick 59" not in partial

    async with asyncio.timeout(60):
        thread_id = await _thread(a)
        created = []
        stream = a.runs.stream(
            thread_id,
            "slow",
            input={"messages": ["count 60"]},
            stream_mode="messages-tuple",
            on_disconnect="cancel",
            on_run_created=created.append,
        )
        async for part in stream:
            if part.event == "messages":
                break
        await stream.aclose()  # the connection drops
        await left(thread_id, created[0]["run_id"])

        thread_id = await _thread(a)
        waited = b.runs.wait(
            thread_id, "slow", input={"messages": ["count 60"]}, on_disconnect="cancel"
        )
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(waited, 0.5)  # the request is dropped
        await left(thread_id, (await a.runs.list(thread_id))[0]["run_id"])

        for reader in (a, b):  # the other node, then the run's own
            thread_id = await _thread(a)
            run = await b.runs.create(thread_id, "slow", input={"messages": ["count 60"]})
            joined = reader.runs.join_stream(
                thread_id, run["run_id"], stream_mode="messages-tuple", cancel_on_disconnect=True
            )
            async for part in joined:
                if part.event == "messages":
                    break
            await joined.aclose()
            await left(thread_id, run["run_id"])


async def test_quick_runs_on_one_node_are_all_streamed_on_the_other(nodes):
    """Runs of both protocols on node b, each starting and ending between two looks of
    an idle stream on node a: a reads every one, in order, and b resumes a's cursor."""
    async with (
        httpx.AsyncClient(base_url=nodes[0], timeout=30) as on_a,
        httpx.AsyncClient(base_url=nodes[1], timeout=30) as on_b,
    ):
        await check_no_run_lost(on_b, [on_a, on_b])
