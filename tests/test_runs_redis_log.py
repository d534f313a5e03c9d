"""The Redis run-log backend in one process: two ``RedisRuns`` play two nodes
on one redis-server (the fence, batching, the entry layout, unreachable)."""

from __future__ import annotations

import asyncio

import pytest
from agui_bridge.errors import RunsUnavailable
from agui_bridge.runs import Limits
from agui_bridge.runs.backend import open_runs
from agui_bridge.runs.redis import Keys

from tests.servers import free_port


class FakeRun:
    """What a sink reports to: the run whose frames it writes."""

    def __init__(self):
        self.failed = None
        self.out = None

    def log_failed(self, lost, error=None):
        self.failed = "lost" if lost else "unavailable"


def frame(n: int, text: str) -> bytes:
    return b'id: %d\ndata: {"type":"CUSTOM","name":"n","value":"%s"}\n\n' % (n, text.encode())


async def until(condition, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


@pytest.fixture
async def two_nodes(redis_url):
    nodes = [open_runs(redis_url, Limits(), lease_ttl=2.0) for _ in range(2)]
    try:
        yield nodes
    finally:
        for node in nodes:
            await node.aclose()


async def test_batches_are_entries_with_n0_ids_and_read_the_same_on_another_node(
    two_nodes, redis_url
):
    a, b = two_nodes
    log_a, sink = await a.start("t", "r", "echo", "echo", frozenset({"m1"}), 1, {"k": 1})
    run = FakeRun()
    sink.bind(run)
    sink.append(frame(1, "a") + frame(2, "b"), 2)
    sink.append(frame(3, "c"), 3, [("o", 3, "t", "x", b"data: {}\n\n")])
    sink.end()
    await until(lambda: log_a.ended)
    client = a.client.open()
    entries = await client.xrange(Keys("t", "r").log)
    assert [e[0] for e in entries] == [b"2-0", b"3-0", b"3-1"]
    assert [e[1].get(b"a") for e in entries] == [b"1", b"3", b"0"]
    assert entries[-1][1][b"e"] == b"1"
    log_b = await b.get("t", "r")
    assert log_b.ended and log_b.read(0) == log_a.read(0)
    assert log_b.open_at(3) == [b"data: {}\n\n"]
    assert log_b.input_ids == frozenset({"m1"}) and log_b.state0 == {"k": 1}
    assert log_b.started == b'data: {"type":"CUSTOM","name":"n","value":"a"}\n\n'
    assert run.failed is None


async def test_a_node_that_lost_its_lease_cannot_append(two_nodes):
    a, b = two_nodes
    log_a, old = await a.start("t", "r1", "echo", "echo", frozenset(), 1, {})
    stale = FakeRun()
    old.bind(stale)
    old.append(frame(1, "a"), 1)
    await until(lambda: log_a.last == 1)
    # the lease expired and another node claimed the thread (fence 2)
    _, new = await b.start("t", "r2", "echo", "echo", frozenset(), 2, {})
    new.bind(FakeRun())
    old.append(frame(2, "late"), 2)
    await until(lambda: stale.failed is not None)
    assert stale.failed == "lost"
    await asyncio.sleep(0.1)
    assert log_a.last == 1  # nothing of the stale run reached the log
    # a start with an older fence while the newer run is active is refused
    assert await a.start("t", "r3", "echo", "echo", frozenset(), 1, {}) is None


async def test_redis_unreachable_is_runs_unavailable():
    runs = open_runs(f"redis://127.0.0.1:{free_port()}/0", Limits())
    try:
        with pytest.raises(RunsUnavailable):
            await runs.start("t", "r", "echo", "echo", frozenset(), 1, {})
        with pytest.raises(RunsUnavailable):
            await runs.get("t", "r")
    finally:
        await runs.aclose()


async def test_a_redis_that_refuses_a_batch_fails_the_run_and_a_request(two_nodes):
    """Redis out of memory (or read-only after a failover, or refusing writes
    after a failed save) refuses a batch: the run fails, it does not go on with
    its readers missing the events the next batch skips past; and a request
    then gets RunsUnavailable (a 503), not a 500."""
    a, b = two_nodes
    log_a, sink = await a.start("t", "r", "echo", "echo", frozenset(), 1, {})
    run = FakeRun()
    sink.bind(run)
    sink.append(frame(1, "started"), 1)
    await until(lambda: log_a.last == 1)
    admin = a.client.open()
    await admin.config_set("maxmemory", "1")
    try:
        sink.append(frame(2, "refused") + frame(3, "refused"), 3)
        await until(lambda: sink.task is None)
        assert run.failed == "unavailable"
        with pytest.raises(RunsUnavailable):
            await b.client.call("hset", "agui:probe", "field", "value")
    finally:
        await admin.config_set("maxmemory", "0")


async def test_readiness_asks_for_a_write(two_nodes):
    """A Redis that still answers reads but refuses writes starts no run: the
    readiness probe (``/readyz``) fails with it, not only when Redis is down."""
    a, _ = two_nodes
    await a.ping()
    admin = a.client.open()
    await admin.config_set("maxmemory", "1")
    try:
        await a.get("t", "r")  # reads still answer
        with pytest.raises(RunsUnavailable):
            await a.ping()
    finally:
        await admin.config_set("maxmemory", "0")
    await a.ping()


async def test_a_batch_is_sent_in_the_context_of_the_task_that_appended_it(two_nodes):
    """The run gate appends RUN_STARTED in the request; the run's task appends the
    rest. A batch the run queued while the request's was in flight goes out in the
    run's context (its trace span), not the request's."""
    import contextvars

    owner = contextvars.ContextVar("owner", default="nobody")
    a, _ = two_nodes
    _, sink = await a.start("tc", "rc", "echo", "echo", frozenset(), 1, {})
    sink.bind(FakeRun())
    seen = []
    script = a.client.script

    async def recording(name, keys, args, **options):
        seen.append((owner.get(), (len(args) - 5) // 4))
        return await script(name, keys, args, **options)

    a.client.script = recording
    owner.set("request")
    sink.append(frame(1, "started"), 1)  # the request's batch, now in flight

    async def run_task():
        owner.set("run")
        sink.append(frame(2, "a"), 2)
        sink.append(frame(3, "b"), 3)
        sink.end()

    await asyncio.get_running_loop().create_task(run_task())
    await until(lambda: sink.task is None)
    assert seen == [("request", 1), ("run", 2)]

    # The run's flushes are mostly callbacks it schedules (no task, its context).
    _, sink = await a.start("tc", "rc2", "echo", "echo", frozenset(), 2, {})
    sink.bind(FakeRun())
    seen.clear()
    sink.append(frame(1, "started"), 1)

    async def run_flushing_by_callback():
        owner.set("run")
        loop = asyncio.get_running_loop()
        loop.call_soon(sink.append, frame(2, "a"), 2)
        await asyncio.sleep(0)
        loop.call_soon(sink.append, frame(3, "b"), 3)
        loop.call_soon(sink.end)

    await asyncio.get_running_loop().create_task(run_flushing_by_callback())
    await until(lambda: sink.task is None)
    assert seen[0] == ("request", 1)  # then the run's two, in one batch or two
    assert {who for who, _ in seen[1:]} == {"run"} and sum(n for _, n in seen[1:]) == 2


async def test_closing_waits_for_a_drain_handed_off_to_the_runs_task(redis_url):
    """A worker shutting down waits for each run's last batch and its end, also
    when the drain in flight handed the rest to another (the run's task)."""
    a = open_runs(redis_url, Limits(), lease_ttl=2.0)
    b = open_runs(redis_url, Limits(), lease_ttl=2.0)
    try:
        _, sink = await a.start("th", "rh", "echo", "echo", frozenset(), 1, {})
        run = FakeRun()
        sink.bind(run)
        script = a.client.script

        async def slow(*args, **options):
            await asyncio.sleep(1.0)  # longer than closing the rest takes
            return await script(*args, **options)

        a.client.script = slow
        sink.append(frame(1, "started"), 1)  # the request's batch, in flight

        async def run_task():
            sink.append(frame(2, "a"), 2)
            sink.end()

        await asyncio.get_running_loop().create_task(run_task())
        await a.aclose()
        assert sink.task is None  # no drain left running past the close
        entries = await b.client.open().xrange(Keys("th", "rh").log)
        assert [e[0] for e in entries] == [b"1-0", b"2-0", b"2-1"]
        assert run.failed is None
    finally:
        await b.aclose()


async def test_a_run_longer_than_the_retention_stays_in_its_threads_run_list(redis_url):
    """The thread's run list (where its readers find its runs) is kept as long
    as a live run renews itself, not only a retention after the run started."""
    a = open_runs(redis_url, Limits(run_retention=1), lease_ttl=1.0)
    b = open_runs(redis_url, Limits(run_retention=1), lease_ttl=1.0)
    try:
        _, sink = await a.start("t", "r", "echo", "echo", frozenset(), 1, {})
        sink.bind(FakeRun())
        sink.append(frame(1, "started"), 1)
        beat = a.renewer(type("Run", (), {"out": sink})())
        for n in range(6):  # renewed for 2.4 s, past the 1 s retention
            await beat()
            sink.append(frame(2 + n, "x"), 2 + n)
            await asyncio.sleep(0.4)
        assert (await b.active_of("t")).run_id == "r"
        assert [run_id for _, run_id in await b.started("t", -1)] == ["r"]
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_reader_arriving_while_a_node_reads_a_run_in_gets_all_of_it(two_nodes):
    """Node B holds its copy of a run from the moment it starts reading it in
    (a long log takes a while): a second reader then waits for the copy to be
    read, rather than getting a copy not yet started (404) or half read."""
    a, b = two_nodes
    log_a, sink = await a.start("t", "r", "echo", "echo", frozenset(), 1, {})
    sink.bind(FakeRun())
    pad = "y" * 4000
    for n in range(1, 1501):
        sink.append(frame(n, pad), n)
        if n % 50 == 0:
            await until(lambda: sink.task is None)
    await until(lambda: log_a.last == 1500, 20)
    first = asyncio.ensure_future(b.get("t", "r"))
    async with asyncio.timeout(10):
        while b.logs.get("t", "r") is None:  # the first reader's copy is held
            await asyncio.sleep(0)
    second = await b.get("t", "r")
    assert second is not None and second.last == 1500
    assert (await first) is second
