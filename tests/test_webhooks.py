"""Webhooks on Agent Protocol runs (``agui_bridge.webhooks``): a real local HTTP
receiver gets the run record when the run ends, signed; a failing receiver
is retried with backoff; one that never answers neither holds up nor fails
the run, and its failure is counted in the metrics; a webhook to a host the
App does not list is refused (422)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import re
import signal
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import orjson
import pytest
from agui_bridge.errors import HttpError
from agui_bridge.webhooks import Delivery, Webhooks
from langgraph_sdk import get_client

from tests.conftest import agent_protocol_nodes
from tests.servers import free_port, serve, server_log, server_process

SECRET = "s3cret"


class Receiver:
    """An HTTP server on 127.0.0.1 that records each POST; ``/fail/N/...`` answers
    500 to the first N calls of that path, ``/hang`` never answers."""

    def __init__(self):
        self.calls: list[tuple[str, dict, bytes]] = []
        self.lock = threading.Lock()
        self.failures: dict[str, int] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                with receiver.lock:
                    receiver.calls.append(
                        (self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    failed = receiver.failures.get(self.path, 0)
                    found = re.match(r"/fail/(\d+)/", self.path)
                    if found and failed < int(found.group(1)):
                        receiver.failures[self.path] = failed + 1
                        status = 500
                    else:
                        status = 204
                if self.path.startswith("/hang"):
                    time.sleep(5)
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of(self, path: str) -> list[tuple[str, dict, bytes]]:
        with self.lock:
            return [call for call in self.calls if call[0] == path]

    def wait(self, path: str, count: int, timeout: float = 20.0) -> list:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            calls = self.of(path)
            if len(calls) >= count:
                return calls
            time.sleep(0.05)
        raise AssertionError(f"{path}: {len(self.of(path))} calls, wanted {count}")


@pytest.fixture(scope="module")
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.server.shutdown()


async def test_a_receiver_that_is_gone_is_a_failed_delivery():
    gone = free_port()  # nothing listens there
    delivery = Delivery(Webhooks(hosts=(f"127.0.0.1:{gone}",), http=True, retries=2, backoff=0))
    assert not await delivery.deliver(f"http://127.0.0.1:{gone}/x", {"run_id": "r"})


@pytest.fixture(scope="module")
def base_url(receiver):
    env = {
        "AGUI_DEMO_DELAY": "0",
        "AGUI_TEST_WEBHOOKS": f"127.0.0.1:{receiver.port}",
        "AGUI_TEST_WEBHOOK_SECRET": SECRET,
    }
    with serve("tests.agent_protocol_apps:app", env=env) as url:
        yield url


@pytest.fixture
async def client(base_url):
    client = get_client(url=base_url, api_key=None)
    yield client
    await client.aclose()


def _verified(headers: dict, body: bytes) -> bool:
    signature = headers["x-agui-signature"]
    fields = dict(part.split("=", 1) for part in signature.split(","))
    expected = hmac.new(SECRET.encode(), fields["t"].encode() + b"." + body, hashlib.sha256)
    return hmac.compare_digest(expected.hexdigest(), fields["v1"])


def _metric(text: str, name: str) -> float:
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


async def test_the_run_record_is_posted_signed_when_the_run_ends(client, receiver):
    thread_id = (await client.threads.create())["thread_id"]
    hook = f"http://127.0.0.1:{receiver.port}/done?token=abc"
    run = await client.runs.create(
        thread_id, "demo", input={"messages": ["what is 6 * 7?"]}, webhook=hook
    )
    assert run["kwargs"]["webhook"] == hook
    await client.runs.join(thread_id, run["run_id"])
    ((_, headers, body),) = receiver.wait("/done?token=abc", 1)
    record = orjson.loads(body)
    assert record["run_id"] == run["run_id"] and record["thread_id"] == thread_id
    assert record["status"] == "success" and record["assistant_id"] == "demo"
    assert headers["content-type"] == "application/json"
    assert _verified(headers, body)
    assert not _verified(headers, body + b" ")


async def test_a_failing_receiver_is_retried_then_delivered(client, receiver):
    thread_id = (await client.threads.create())["thread_id"]
    path = f"/fail/2/{uuid.uuid4()}"
    run = await client.runs.create(
        thread_id,
        "demo",
        input={"messages": ["what is 6 * 7?"]},
        webhook=f"http://127.0.0.1:{receiver.port}{path}",
    )
    calls = receiver.wait(path, 3)
    # Each attempt carries the same record, signed.
    assert len({body for _, _, body in calls}) == 1
    assert orjson.loads(calls[0][2])["run_id"] == run["run_id"]
    assert all(_verified(headers, body) for _, headers, body in calls)


async def test_a_hanging_receiver_neither_holds_up_nor_fails_the_run(client, receiver, base_url):
    async with httpx.AsyncClient(base_url=base_url) as http:
        before = (await http.get("/metrics")).text
    hook = f"http://127.0.0.1:{receiver.port}/hang"
    thread_id = (await client.threads.create())["thread_id"]
    run = await client.runs.create(thread_id, "slow", input={"messages": ["count 3"]}, webhook=hook)
    values = await client.runs.join(thread_id, run["run_id"])
    assert values["messages"][-1]["content"].strip() == "tick 0 tick 1 tick 2"
    assert (await client.runs.get(thread_id, run["run_id"]))["status"] == "success"
    # The hanging receiver: 3 attempts (2 retries), each cut at the 2 s timeout.
    receiver.wait("/hang", 3, timeout=30)
    async with httpx.AsyncClient(base_url=base_url) as http:
        deadline = time.monotonic() + 30
        while True:
            after = (await http.get("/metrics")).text
            failed = _metric(after, 'agui_webhook_deliveries_total{outcome="failed"}')
            if failed > _metric(before, 'agui_webhook_deliveries_total{outcome="failed"}'):
                break
            assert time.monotonic() < deadline, after
            time.sleep(0.1)
    attempts = "agui_webhook_attempts_failed_total"
    assert _metric(after, attempts) - _metric(before, attempts) >= 3
    # Logged with the host only: a webhook's path and query may hold a token.
    logged = server_log(base_url)
    assert f"webhook to 127.0.0.1 for run {run['run_id']} failed after 3 attempt(s)" in logged
    assert "/hang" not in logged


async def test_webhooks_elsewhere_are_refused(client, receiver, base_url):
    thread_id = (await client.threads.create())["thread_id"]
    async with httpx.AsyncClient(base_url=base_url) as http:
        for hook in (
            f"http://127.0.0.1:{receiver.port + 1}/x",  # another port
            "http://example.com/hook",  # another host
            f"ftp://127.0.0.1:{receiver.port}/x",  # not http(s)
            f"http://user:pw@127.0.0.1:{receiver.port}/x",  # credentials
            "not a url",
            7,
        ):
            response = await http.post(
                f"/threads/{thread_id}/runs",
                json={"assistant_id": "demo", "input": {"messages": ["hi"]}, "webhook": hook},
            )
            assert response.status_code == 422, hook
            assert response.json()["error"]["code"] == "invalid_webhook"
    assert await client.runs.list(thread_id) == []


def test_https_only_unless_allowed_and_none_by_default():
    strict = Webhooks(hosts=("hooks.example.com", "127.0.0.1:9000"))
    assert strict.check("https://hooks.example.com/x") == "https://hooks.example.com/x"
    assert strict.check("https://127.0.0.1:9000/x")
    for url in ("http://hooks.example.com/x", "https://127.0.0.1:9001/x", "https://evil.com/"):
        with pytest.raises(HttpError) as refused:
            strict.check(url)
        assert refused.value.status == 422
    assert Webhooks(hosts=("hooks.example.com",), http=True).check("http://hooks.example.com/")
    assert Webhooks(secret="k").signature(b"{}", 7) == (
        "t=7,v1=" + hmac.new(b"k", b"7.{}", hashlib.sha256).hexdigest()
    )
    assert Webhooks().signature(b"{}", 7) is None


async def test_an_app_without_webhooks_refuses_them():
    with serve("tests.agent_protocol_apps:app", env={"AGUI_DEMO_DELAY": "0"}) as url:
        async with httpx.AsyncClient(base_url=url) as http:
            response = await http.post(
                "/threads/x-1/runs",
                json={
                    "assistant_id": "demo",
                    "input": {"messages": ["hi"]},
                    "if_not_exists": "create",
                    "webhook": "https://hooks.example.com/x",
                },
            )
    assert response.status_code == 422
    assert "webhooks are off" in response.json()["error"]["message"]


@pytest.fixture(scope="module")
def hook_nodes(receiver, redis_server, pg_server):
    """Two nodes sharing run logs (Redis) and threads (PostgreSQL), with webhooks to
    the receiver and a 2 s lease (a killed node's runs end ``run_lost`` that soon)."""
    env = {
        "AGUI_TEST_WEBHOOKS": f"127.0.0.1:{receiver.port}",
        "AGUI_TEST_WEBHOOK_SECRET": SECRET,
        "AGUI_TEST_LEASE_TTL": "2",
    }
    with agent_protocol_nodes(redis_server, pg_server, env) as both:
        yield both


async def _running(client, thread_id: str, run_id: str) -> None:
    async with asyncio.timeout(20):
        while (await client.runs.get(thread_id, run_id))["status"] != "running":
            await asyncio.sleep(0.05)


def _once(receiver, path: str, timeout: float = 30.0) -> dict:
    """The one delivery to ``path``: a second one is looked for over the next 3 s."""
    ((_, headers, body),) = receiver.wait(path, 1, timeout)
    assert _verified(headers, body)
    time.sleep(3)
    assert len(receiver.of(path)) == 1, "delivered once"
    return orjson.loads(body)


async def test_a_run_cancelled_from_another_node_is_delivered_once_as_interrupted(
    hook_nodes, receiver
):
    a_url, b_url, _ = hook_nodes
    a, b = get_client(url=a_url, api_key=None), get_client(url=b_url, api_key=None)
    try:
        thread_id = (await a.threads.create())["thread_id"]
        path = f"/cancelled/{uuid.uuid4()}"
        hook = f"http://127.0.0.1:{receiver.port}{path}"
        run = await a.runs.create(
            thread_id, "slow", input={"messages": ["count 200"]}, webhook=hook
        )
        await _running(b, thread_id, run["run_id"])
        await b.runs.cancel(thread_id, run["run_id"])
        record = _once(receiver, path)
        assert record["run_id"] == run["run_id"] and record["status"] == "interrupted"
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_run_whose_node_died_is_delivered_once_by_another_node(hook_nodes, receiver):
    """The node running the run is killed: the run ends ``run_lost`` through another
    node, which delivers its webhook (one delivery over both survivors)."""
    a_url, _, env = hook_nodes
    a = get_client(url=a_url, api_key=None)
    path = f"/lost/{uuid.uuid4()}"
    hook = f"http://127.0.0.1:{receiver.port}{path}"
    try:
        with serve("tests.agent_protocol_apps:app", env=env) as c_url:
            c = get_client(url=c_url, api_key=None)
            thread_id = (await c.threads.create())["thread_id"]
            run = await c.runs.create(
                thread_id, "slow", input={"messages": ["count 600"]}, webhook=hook
            )
            await _running(a, thread_id, run["run_id"])
            await c.aclose()
            os.killpg(server_process(c_url).pid, signal.SIGKILL)
            record = _once(receiver, path)
        assert record["run_id"] == run["run_id"] and record["status"] == "error"
        assert (await a.runs.get(thread_id, run["run_id"]))["status"] == "error"
    finally:
        await a.aclose()


async def test_a_node_never_asked_anything_delivers_what_a_dead_node_owed(
    receiver, redis_server, pg_server
):
    """Each node looks at the owed webhooks from its start, not from its first Agent
    Protocol request: the only survivor of the run's node has answered nothing but
    its readiness probe, and delivers the lost run's webhook."""
    database = pg_server.create_database()
    env = {
        "AGUI_TEST_RUNS": redis_server.url(redis_server.fresh_db()),
        "AGUI_TEST_STORE": pg_server.url(database),
        "AGUI_DEMO_DELAY": "0",
        "AGUI_TEST_WEBHOOKS": f"127.0.0.1:{receiver.port}",
        "AGUI_TEST_WEBHOOK_SECRET": SECRET,
        "AGUI_TEST_LEASE_TTL": "2",
    }
    path = f"/idle/{uuid.uuid4()}"
    hook = f"http://127.0.0.1:{receiver.port}{path}"
    try:
        with (
            serve("tests.agent_protocol_apps:app", env=env),  # the survivor: never asked
            serve("tests.agent_protocol_apps:app", env=env) as c_url,
        ):
            c = get_client(url=c_url, api_key=None)
            thread_id = (await c.threads.create())["thread_id"]
            run = await c.runs.create(
                thread_id, "slow", input={"messages": ["count 600"]}, webhook=hook
            )
            await _running(c, thread_id, run["run_id"])
            await c.aclose()
            os.killpg(server_process(c_url).pid, signal.SIGKILL)
            record = _once(receiver, path)
        assert record["run_id"] == run["run_id"] and record["status"] == "error"
    finally:
        pg_server.drop_database(database)


async def test_a_run_whose_node_died_after_it_ended_is_delivered_by_another_node(
    hook_nodes, receiver
):
    """The node ran the run to its end and died before it took the webhook off the
    owed runs: the run's webhook is left owed in Redis as that node left it (a run
    ended without one, its entry written as the create writes it); another node
    delivers it, once, after a lease's time."""
    import redis.asyncio

    a_url, _, env = hook_nodes
    a = get_client(url=a_url, api_key=None)
    path = f"/orphan/{uuid.uuid4()}"
    try:
        thread_id = (await a.threads.create())["thread_id"]
        run = await a.runs.create(thread_id, "demo", input={"messages": ["hi"]})
        await a.runs.join(thread_id, run["run_id"])
        owed = redis.asyncio.from_url(env["AGUI_TEST_RUNS"])
        try:
            key = orjson.dumps([thread_id, run["run_id"]])
            hook = f"http://127.0.0.1:{receiver.port}{path}"
            await owed.hset("agui:webhooks:owed", key, hook)
            record = _once(receiver, path)
            assert not await owed.hexists("agui:webhooks:owed", key)
        finally:
            await owed.aclose()
        assert record["run_id"] == run["run_id"] and record["status"] == "success"
    finally:
        await a.aclose()


async def test_a_run_queued_past_the_retention_keeps_its_webhook(redis_url):
    """A run queued behind a long one has no log yet, only its shared record, which
    expired ``run_retention`` after its last write: another node's look then took
    the webhook as a dead node's (logged "not delivered") and the run, ending
    later on its own node, had none. Its node now writes the record again while
    it waits, so every node sees it queued and its own node delivers it."""
    from agui_bridge.agent_protocol.hooks import KEY, Owed
    from agui_bridge.agent_protocol.runs import Registry, RunRecord
    from agui_bridge.runs import Limits
    from agui_bridge.runs.backend import open_runs

    a, b = (open_runs(redis_url, Limits(run_retention=1)) for _ in range(2))
    sent = []
    try:
        registries = Registry(a), Registry(b)
        owed_a, owed_b = (
            Owed(runs, registry, lambda url, record: sent.append(url), every=0.2, grace=1.0)
            for runs, registry in zip((a, b), registries, strict=True)
        )
        thread_id, run_id = f"t-{uuid.uuid4().hex[:8]}", "r-queued"
        queued = RunRecord(thread_id, run_id, "slow", {}, {}, "enqueue")
        registries[0].add(queued)
        await registries[0].share(queued)
        await owed_a.owe(thread_id, run_id, "https://hooks.example.com/x")
        field = orjson.dumps([thread_id, run_id])
        for _ in range(12):  # 2.4 s: more than twice the retention
            await owed_a.look()
            await owed_b.look()
            assert await a.client.call("hexists", KEY, field) == 1
            await asyncio.sleep(0.2)
        assert sent == []
        assert await owed_a.take(thread_id, run_id)  # its own node, when the run ends
    finally:
        await a.aclose()
        await b.aclose()
