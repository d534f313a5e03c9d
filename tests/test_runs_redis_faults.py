"""Redis misbehaving under a running run (issue 24 items 4 and 5): its keys
lost mid-run (FLUSHDB, as an eviction or a failover to an empty replica
would), and the server frozen (SIGSTOP) for a few seconds. Two granian nodes
on a redis-server of their own and one PostgreSQL."""

from __future__ import annotations

import signal
import time

import httpx
import pytest
import redis

from tests.ingress_apps import parse_sse, run_body
from tests.test_ingress_http import thread
from tests.test_runs_redis import APP, LEASE_TTL, Reader, node_env, start_run, wait_for


def events_in(body: bytes) -> list[dict]:
    events, _ = parse_sse(body.decode())
    return events


def text_of(events: list[dict]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


@pytest.fixture
def own_redis(pg_server):
    from tests.redis_server import RedisServer

    database = pg_server.create_database()
    server = RedisServer().start()
    try:
        yield server, pg_server.url(database)
    finally:
        server.stop()
        pg_server.drop_database(database)


def commands_processed(client) -> int:
    return int(client.info("stats")["total_commands_processed"])


def test_keys_lost_mid_run_end_every_reader_with_run_lost(own_redis, tmp_path):
    """FLUSHDB mid-run: the run's own client (node A) and a viewer (node B) get
    the closers and RUN_ERROR run_lost within lease_ttl, the run stops and
    stores what it made, and the nodes stop reading the run from Redis."""
    from tests.servers import serve

    server, pg_url = own_redis
    env = node_env(server.url(), pg_url, tmp_path)
    client = redis.Redis.from_url(server.url())
    try:
        with serve(APP, env=env) as a, serve(APP, env=env) as b:
            tid, rid = thread("flush"), f"r-{time.monotonic_ns()}"
            source = start_run(a, tid, rid, "slow 200")
            wait_for(tmp_path / f"started-{rid}")
            viewer = Reader("GET", f"{b}/threads/{tid}/events")
            viewer.start()
            viewer.reading()
            time.sleep(0.3)
            client.flushdb()
            flushed = time.monotonic()
            bodies = [reader.result(timeout=LEASE_TTL + 10) for reader in (source, viewer)]
            took = time.monotonic() - flushed
            for body in bodies:
                events = events_in(body)
                assert events[-1]["type"] == "RUN_ERROR", events[-3:]
                assert events[-1]["code"] == "run_lost"
                opened = {e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"}
                closed = {e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_END"}
                assert opened and opened == closed
            assert took <= LEASE_TTL + 1.0, took
            assert not (tmp_path / f"ended-{rid}").exists()  # the agent was stopped
            # The mirrors stopped: with nothing running, Redis is left alone.
            time.sleep(1.0)
            before = commands_processed(client)
            time.sleep(2.0)
            assert commands_processed(client) - before <= 4  # the two INFOs and slack
            # The user's turn is stored, and the thread takes a new run.
            stored = httpx.get(f"{b}/threads/{tid}/state").json()["messages"]
            assert stored[0]["role"] == "user" and stored[0]["content"] == "slow 200"
            again = httpx.post(b + "/ag-ui/run", json=run_body(tid, "hello"), timeout=20)
            assert again.status_code == 200, again.text
    finally:
        client.close()


def test_a_frozen_redis_pauses_the_streams_and_they_resume(own_redis, tmp_path):
    """Redis frozen (SIGSTOP) for twice the lease ttl mid-run: the run goes on,
    its readers wait, and once Redis answers they get the rest of the run; the
    stream and the stored thread tell one story (the whole answer), never a
    run_lost beside a finished turn."""
    from tests.servers import serve

    server, pg_url = own_redis
    env = node_env(server.url(), pg_url, tmp_path)
    with serve(APP, env=env) as a, serve(APP, env=env) as b:
        tid, rid = thread("frozen"), f"r-{time.monotonic_ns()}"
        source = start_run(a, tid, rid, "slow 300")  # 15 s of text
        wait_for(tmp_path / f"started-{rid}")
        viewer = Reader("GET", f"{b}/threads/{tid}/events")
        viewer.start()
        viewer.reading()
        time.sleep(0.3)
        server.process.send_signal(signal.SIGSTOP)
        try:
            time.sleep(12)
        finally:
            server.process.send_signal(signal.SIGCONT)
        full = "".join(f"w{i} " for i in range(300))
        for reader in (source, viewer):
            events = events_in(reader.result(timeout=30))
            assert events[-1]["type"] == "RUN_FINISHED", events[-2:]
            assert text_of(events) == full
        stored = httpx.get(f"{a}/threads/{tid}/state").json()["messages"]
        assert [m["role"] for m in stored] == ["user", "assistant"]
        assert stored[1]["content"] == full
        # a late reader of the run gets the same story
        replay = httpx.get(f"{b}/threads/{tid}/runs/{rid}/events", headers={"last-event-id": "0"})
        events = events_in(replay.content)
        assert events[-1]["type"] == "RUN_FINISHED" and text_of(events) == full
