"""The PostgreSQL thread store beyond the shared suite: its schema version and
migrations, several nodes on one database, and an App served from it.

The server is the session's (``pg_server`` in conftest.py); each test has a
fresh database (``pg_url``).
"""

from __future__ import annotations

import asyncio

import asyncpg
import httpx
import pytest
from agui_bridge.store import open_store
from agui_bridge.store.postgres import (
    MIGRATIONS,
    SCHEMA_VERSION,
    PostgresStore,
    migrate,
    schema_version,
    upgrade,
)

from tests.ingress_apps import make_app, parse_sse, run_body


def test_urls_open_the_postgres_store():
    for url in ("postgresql://u:p@127.0.0.1:5/db", "postgres://u@127.0.0.1/db?sslmode=disable"):
        store = open_store(url)  # nothing connects before the first call
        assert isinstance(store, PostgresStore) and store.dsn == url


async def test_schema_created_on_first_use_and_versioned(pg_url):
    conn = await asyncpg.connect(pg_url)
    try:
        assert await schema_version(conn) == 0
        store = PostgresStore(pg_url)
        assert await store.load("t") is None  # the first call creates the schema
        assert await schema_version(conn) == SCHEMA_VERSION == 2
        assert await conn.fetchval("SELECT count(*) FROM agui_schema") == 1
        await store.close()
        assert await migrate(conn) == SCHEMA_VERSION  # again: nothing to do
        assert await conn.fetchval("SELECT count(*) FROM agui_schema") == 1
    finally:
        await conn.close()


async def test_upgrade_steps_one_version_at_a_time(pg_url):
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute("CREATE TABLE agui_schema (version integer NOT NULL)")
        async with conn.transaction():
            assert await upgrade(conn, 0) == 1
        assert await schema_version(conn) == 1
        tables = {
            r["tablename"]
            for r in await conn.fetch(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE 'agui_%'"
            )
        }
        assert tables == {"agui_schema", "agui_threads", "agui_messages", "agui_leases"}
        assert len(MIGRATIONS) == SCHEMA_VERSION
    finally:
        await conn.close()


async def test_a_newer_schema_is_refused(pg_url):
    conn = await asyncpg.connect(pg_url)
    try:
        await migrate(conn)
        await conn.execute("UPDATE agui_schema SET version = $1", SCHEMA_VERSION + 1)
    finally:
        await conn.close()
    store = PostgresStore(pg_url)
    with pytest.raises(RuntimeError, match="schema is at version 3"):
        await store.load("t")
    await store.close()


async def test_nodes_starting_together_migrate_once(pg_url):
    stores = [PostgresStore(pg_url) for _ in range(4)]
    try:
        assert await asyncio.gather(*(s.load("t") for s in stores)) == [None] * 4
    finally:
        await asyncio.gather(*(s.close() for s in stores))


async def test_one_claim_wins_across_nodes(pg_url):
    a, b = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        for thread_id in ("fresh", "fresh"):  # a new thread, then one whose lease was released
            leases = await asyncio.gather(
                *(store.claim(thread_id, 5) for store in (a, b) for _ in range(5))
            )
            won = [lease for lease in leases if lease is not None]
            assert len(won) == 1, leases
            await a.release(won[0])
        assert won[0].fence == 2
    finally:
        await a.close()
        await b.close()


async def test_concurrent_saves_of_one_thread_keep_every_message(pg_url):
    a, b = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        saves = []
        for i in range(20):
            store = a if i % 2 else b
            message = {"id": f"m{i}", "role": "user", "content": str(i)}
            saves.append(store.save("t", "echo", [message, {"id": "shared"}], {"n": i}, []))
        await asyncio.gather(*saves)
        thread = await a.load("t")
        ids = [m["id"] for m in thread.messages]
        assert sorted(ids) == sorted([f"m{i}" for i in range(20)] + ["shared"])
        assert len(ids) == len(set(ids))
    finally:
        await a.close()
        await b.close()


async def test_json_is_kept_as_written(pg_url):
    """Key order and odd characters survive (json, not jsonb)."""
    store = PostgresStore(pg_url)
    message = {"z": 1, "id": "m", "role": "user", "content": "nul \x00 é \U0001f600", "a": [1.5]}
    state = {"z": {"y": 1, "b": 2}, "a": None}
    await store.save("t", "echo", [message], state, [{"id": "i", "value": {"q": 1, "p": 2}}])
    thread = await store.load("t")
    assert list(thread.messages[0]) == list(message) and thread.messages == [message]
    assert list(thread.state["z"]) == ["y", "b"] and thread.state == state
    await store.close()


async def test_an_app_on_postgres_serves_threads_to_another_node(pg_url):
    """A turn run on one App (node) is in the thread another App reads."""
    node_a, node_b = make_app(store=pg_url), make_app(store=pg_url)
    try:
        transport = httpx.ASGITransport(app=node_a)
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
            response = await http.post("/ag-ui/run", json=run_body("th", "hello there"))
            assert response.status_code == 200, response.text
            events, _ = parse_sse(response.text)
            assert events[-1]["type"] == "RUN_FINISHED"
        transport = httpx.ASGITransport(app=node_b)
        async with httpx.AsyncClient(transport=transport, base_url="http://b") as http:
            state = (await http.get("/threads/th/state")).json()
            assert [m["role"] for m in state["messages"]] == ["user", "assistant"]
            assert state["messages"][0]["content"] == "hello there"
    finally:
        await node_a.aclose()
        await node_b.aclose()


async def test_the_store_outlives_a_server_restart(pg_server, pg_url):
    """PostgreSQL restarted between runs: the pool replaces the connections the
    server closed, and no call fails."""
    store = PostgresStore(pg_url)
    try:
        await store.save("t", "echo", [{"id": "u1", "role": "user", "content": "a"}], {}, [])
        lease = await store.claim("t", 5)
        await store.release(lease)
        await asyncio.to_thread(pg_server.restart)
        await store.save("t", "echo", [{"id": "u2", "role": "user", "content": "b"}], {}, [])
        assert [m["id"] for m in (await store.load("t")).messages] == ["u1", "u2"]
        lease = await store.claim("t", 5)
        assert lease is not None and await store.renew(lease, 5)
        await store.release(lease)
    finally:
        await store.close()
