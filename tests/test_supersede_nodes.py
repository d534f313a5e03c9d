"""Stop, then type across nodes (issue 20): with run logs on Redis, who reads a
run is counted for every node (``runs.redis.presence``), so a new run on node
B supersedes a run of node A whose readers all left, and a reader on B (or an
Agent Protocol join) keeps the 409. Two granian nodes on one redis-server and
one PostgreSQL; the tests wait on the readers Redis holds, never on a clock."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import uuid
from urllib.parse import urlsplit

import httpx
import orjson
import pytest
import redis
from agui_bridge.runs import Limits
from agui_bridge.runs.backend import open_runs
from agui_bridge.runs.supersede import reading

from tests.servers import free_port, serve


@pytest.fixture(scope="module")
def pair(redis_server, pg_server):
    """Nodes A (RSGI) and B (ASGI) of ``tests.agent_protocol_apps`` and their Redis."""
    database = pg_server.create_database()
    runs = redis_server.url(redis_server.fresh_db())
    env = {"AGUI_TEST_RUNS": runs, "AGUI_TEST_STORE": pg_server.url(database)}
    try:
        with (
            serve("tests.agent_protocol_apps:app", env=env) as a,
            serve("tests.agent_protocol_apps:app", env=env, interface="asgi") as b,
        ):
            yield a, b, redis.Redis.from_url(runs)
    finally:
        pg_server.drop_database(database)


def body(thread: str, run: str, text: str) -> dict:
    message = {"id": f"u-{run}", "role": "user", "content": text}
    return {"threadId": thread, "runId": run, "messages": [message], "protocolVersion": "1.0"}


def events_of(text: str) -> list[dict]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def read_until_text(response):
    """Reads up to the first text; the lines' iterator is returned (dropping it closes)."""
    lines = response.iter_lines()
    for line in lines:
        if line.startswith("data:") and json.loads(line[5:])["type"] == "TEXT_MESSAGE_CONTENT":
            return lines
    raise AssertionError("the run sent no text")


def reading_nodes(r: redis.Redis, thread: str, run: str) -> int:
    """The nodes whose readers of the run have not lapsed, as Redis holds them."""
    key = b"agui:run:" + orjson.dumps([thread, run]) + b":readers"
    seconds, micros = r.time()
    return r.zcount(key, f"({seconds * 1000 + micros // 1000}", "+inf")


def until(condition, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def state_of(url: str, thread: str) -> list[tuple[str, str]]:
    state = httpx.get(f"{url}/threads/{thread}/state", timeout=30).json()
    return [(m["role"], m["content"]) for m in state["messages"]]


def test_stop_on_a_then_type_on_b_supersedes(pair):
    a, b, r = pair
    thread = f"sx-{uuid.uuid4().hex[:8]}"
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", a + "/agui/slow", json=body(thread, "r1", "count 6000")) as first,
    ):
        assert first.status_code == 200
        lines = read_until_text(first)
        assert reading_nodes(r, thread, "r1") == 1
        del lines  # the client stopped: the run would go on for minutes
    until(lambda: reading_nodes(r, thread, "r1") == 0, "node A did not see its reader leave")
    second = httpx.post(b + "/agui/slow", json=body(thread, "r2", "count 2"), timeout=60)
    assert second.status_code == 200, second.text
    assert events_of(second.text)[-1]["type"] == "RUN_FINISHED"

    # a 1.0 client joining the old run on either node reads that it was stopped
    declared = {"agui-protocol-version": "1.0"}
    for url in (a, b):
        old = httpx.get(f"{url}/threads/{thread}/runs/r1/events", headers=declared, timeout=30)
        end = events_of(old.text)[-1]
        assert end["type"] == "RUN_FINISHED" and end["outcome"]["type"] == "cancelled", end
    stored = state_of(a, thread)
    assert [role for role, _ in stored] == ["user", "assistant", "user", "assistant"]
    partial = stored[1][1]
    assert partial.startswith("tick 0 ") and "tick 5999" not in partial  # the partial answer
    assert stored[2:] == [("user", "count 2"), ("assistant", "tick 0 tick 1 ")]
    assert state_of(b, thread) == stored


def read_until_data(response):
    """Reads up to the first data line; the lines' iterator is returned (dropping it closes)."""
    lines = response.iter_lines()
    if not any(line.startswith("data:") for line in lines):
        raise AssertionError("the stream sent nothing")
    return lines


# Readers on node B of a run on node A: an AG-UI join of the run's events, and
# the Agent Protocol's thread event stream (threads.stream) following it.
READERS = {
    "run-events": lambda client, b, thread: client.stream(
        "GET", f"{b}/threads/{thread}/runs/r1/events"
    ),
    "thread-stream": lambda client, b, thread: client.stream(
        "POST", f"{b}/threads/{thread}/stream/events", json={"channels": ["messages"]}
    ),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_reader_on_the_other_node_keeps_the_409(pair, reader):
    a, b, r = pair
    thread = f"sr-{uuid.uuid4().hex[:8]}"
    with httpx.Client(timeout=30) as client:
        with client.stream(
            "POST", a + "/agui/slow", json=body(thread, "r1", "count 6000")
        ) as first:
            lines = read_until_text(first)
            joined = READERS[reader](client, b, thread)
            join = joined.__enter__()
            assert join.status_code == 200
            joining = read_until_data(join)
            assert reading_nodes(r, thread, "r1") == 2  # A's POST and B's reader
            del lines  # the client stopped
        try:
            until(lambda: reading_nodes(r, thread, "r1") == 1, "A's reader did not leave")
            for url in (a, b):
                refused = httpx.post(url + "/agui/slow", json=body(thread, "r2", "count 2"))
                assert refused.status_code == 409, refused.text
                assert refused.json()["error"]["code"] == "run_active"
        finally:
            del joining
            joined.__exit__(None, None, None)
    # once B's reader left too, the run is abandoned: the next run supersedes it
    until(lambda: reading_nodes(r, thread, "r1") == 0, "B's reader did not leave")
    admitted = httpx.post(a + "/agui/slow", json=body(thread, "r3", "count 2"), timeout=60)
    assert admitted.status_code == 200, admitted.text


def open_join(url: str, path: str) -> socket.socket:
    """An Agent Protocol ``GET …/join`` held open on a socket of its own (closing it
    is the client leaving)."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
    sock.sendall(f"GET {path} HTTP/1.1\r\nhost: {parts.netloc}\r\n\r\n".encode())
    return sock


def test_an_agent_protocol_join_is_a_reader(pair):
    """A background run is read by nobody (a new run gets 409); a join reads it
    (409 too); once the join left, it was read and is abandoned: superseded."""
    a, b, r = pair
    thread = f"sj-{uuid.uuid4().hex[:8]}"
    created = httpx.post(f"{a}/threads", json={"thread_id": thread}).json()
    assert created["thread_id"] == thread
    run = httpx.post(
        f"{a}/threads/{thread}/runs",
        json={"assistant_id": "slow", "input": {"messages": ["count 6000"]}},
    ).json()["run_id"]
    refused = httpx.post(a + "/agui/slow", json=body(thread, "r2", "count 2"))
    assert refused.status_code == 409  # never read: a background run is not abandoned
    join = open_join(a, f"/threads/{thread}/runs/{run}/join")
    until(lambda: reading_nodes(r, thread, run) == 1, "the join is not counted")
    refused = httpx.post(a + "/agui/slow", json=body(thread, "r3", "count 2"))
    assert refused.status_code == 409
    join.close()  # the joining client leaves
    until(lambda: reading_nodes(r, thread, run) == 0, "the join did not leave")
    admitted = httpx.post(a + "/agui/slow", json=body(thread, "r4", "count 2"), timeout=60)
    assert admitted.status_code == 200, admitted.text
    # Superseded: its record says so on both nodes (it said "success" with run
    # logs on Redis, where the run's own log is a mirror no run is bound to).
    for url in (a, b):
        assert httpx.get(f"{url}/threads/{thread}/runs/{run}").json()["status"] == "interrupted"


# -- in one process: two RedisRuns play two nodes ------------------------------


class Running:
    """What a sink and a renewer need of a run."""

    def __init__(self, sink):
        self.out = sink

    def log_failed(self, lost, error=None):
        raise AssertionError(f"the run's log failed: {error}")


async def test_a_dead_nodes_readers_lapse(redis_url):
    a, b = (open_runs(redis_url, Limits(), lease_ttl=1.0) for _ in range(2))
    tasks = []
    try:
        tasks.append(await started_run(a, "t", "r"))  # node A lives on
        mirror = await mirror_of(b, "t", "r")
        seen = await a.presence.active("t")
        assert (seen.run_id, seen.node, seen.readers, seen.ever_read) == ("r", a.node, 0, False)
        await b.presence.enter(mirror)
        seen = await a.presence.active("t")
        assert (seen.readers, seen.ever_read) == (1, True)
        b.presence.leave(mirror)
        await b.presence.enter(mirror)
        assert (await a.presence.active("t")).readers == 1
        b.presence.close()  # B dies with its reader: nobody renews its presence
        async with asyncio.timeout(20):
            while (await a.presence.active("t")).readers:
                await asyncio.sleep(0.05)
        seen = await a.presence.active("t")
        assert (seen.run_id, seen.ever_read) == ("r", True)  # the run went on, read once
    finally:
        await stopped(tasks)
        await a.aclose()
        await b.aclose()


async def stopped(tasks) -> None:
    """Cancels ``tasks`` and waits for them: a task cancelled inside a Redis call
    gives its connection back before the client closes (else it is reported
    unclosed, in whatever test runs when it is collected)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def started_run(runs, thread: str, run: str):
    """A run of ``runs``'s node, its liveness renewed until the task is cancelled."""
    _, sink = await runs.start(thread, run, "slow", "slow", frozenset(), 1, {})
    running = Running(sink)
    sink.bind(running)
    sink.append(b'id: 1\ndata: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n', 1)
    renew = runs.renewer(running)

    async def alive():
        while True:
            await renew()
            await asyncio.sleep(0.1)

    return asyncio.get_running_loop().create_task(alive())


async def mirror_of(runs, thread: str, run: str):
    async with asyncio.timeout(20):
        while (mirror := await runs.get(thread, run)) is None:
            await asyncio.sleep(0.02)
    return mirror


async def test_a_steady_reader_stays_counted_while_others_come_and_go(redis_url):
    """A node renews every reader it has, however often its other readers enter
    and leave: each change used to restart the renewal timer and send only the
    changed runs, so a reader that stayed put lapsed after ``lease_ttl`` and a
    run someone was watching could be superseded."""
    a, b = (open_runs(redis_url, Limits(), lease_ttl=1.0) for _ in range(2))
    tasks = []
    try:
        tasks += [await started_run(a, "t1", "r1"), await started_run(a, "t2", "r2")]
        watched, busy = await mirror_of(b, "t1", "r1"), await mirror_of(b, "t2", "r2")
        await b.presence.enter(watched)  # one tab stays on r1
        deadline = time.monotonic() + 3.0  # three times the ttl
        while time.monotonic() < deadline:  # readers of r2 come and go on the same node
            await b.presence.enter(busy)
            await asyncio.sleep(0.1)
            b.presence.leave(busy)
            await asyncio.sleep(0.1)
            assert (await a.presence.active("t1")).readers == 1
    finally:
        await stopped(tasks)
        await a.aclose()
        await b.aclose()


async def test_a_reader_cancelled_while_it_is_counted_is_not_counted_for_good(redis_url):
    """A reader whose task is cancelled while its enter waits for Redis (an
    Agent Protocol wait whose client left) leaves again: before, the count
    stayed and the run was renewed as read until it ended (never superseded)."""
    a, b = (open_runs(redis_url, Limits(), lease_ttl=1.0) for _ in range(2))
    tasks = []
    try:
        tasks.append(await started_run(a, "t", "r"))
        mirror = await mirror_of(b, "t", "r")

        async def read():
            async with reading(b, mirror):
                await asyncio.sleep(60)

        reader = asyncio.get_running_loop().create_task(read())
        await asyncio.sleep(0)  # the reader now waits on its enter's round trip
        assert b.presence.counts.get(mirror) == 1
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        assert mirror not in b.presence.counts
        async with asyncio.timeout(20):
            while (await a.presence.active("t")).readers:
                await asyncio.sleep(0.05)
    finally:
        await stopped(tasks)
        await a.aclose()
        await b.aclose()


async def test_redis_unreachable_counts_no_run_so_the_409_stays():
    """A new run refused 409 asks whom the thread's run has; Redis down cannot
    say, so nothing is superseded and the 409 stands (not a 503 from the count)."""
    runs = open_runs(f"redis://127.0.0.1:{free_port()}/0", Limits())
    try:
        assert await runs.presence.active("t") is None
    finally:
        await runs.aclose()
