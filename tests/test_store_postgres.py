"""The PostgreSQL thread store beyond the shared suite: its schema version and
migrations, several nodes on one database, and an App served from it.

The server is the session's (``pg_server`` in conftest.py); each test has a
fresh database (``pg_url``).
"""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import httpx
import orjson
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
        assert await schema_version(conn) == SCHEMA_VERSION == 6
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


async def test_an_older_schema_with_data_is_migrated(pg_url):
    """A database left at version 1 (before the metadata columns) holding a
    thread: a failing later step rolls the whole migration back; then the next
    node's first call migrates it to SCHEMA_VERSION, once, and the thread keeps
    its messages and state and gains the new columns' defaults."""

    async def broken(conn):
        await conn.execute("ALTER TABLE agui_threads ADD COLUMN half_done int")
        raise RuntimeError("step failed")

    def columns(conn):
        return conn.fetchval(
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 'agui_threads'"
            " AND column_name IN ('metadata', 'created_at', 'half_done')"
        )

    message = {"id": "u1", "role": "user", "content": "x"}
    conn = await asyncpg.connect(pg_url)
    try:
        assert await migrate(conn, MIGRATIONS[:1]) == 1
        await conn.execute(
            "INSERT INTO agui_threads (thread_id, agent_id, state, interrupts)"
            " VALUES ('t', 'a', '{\"k\": 1}', '[]')"
        )
        await conn.execute(
            "INSERT INTO agui_messages VALUES ('t', 1, 'u1', $1)", orjson.dumps(message).decode()
        )
        with pytest.raises(RuntimeError, match="step failed"):
            await migrate(conn, [*MIGRATIONS, broken])
        assert await schema_version(conn) == 1 and await columns(conn) == 0
        store = PostgresStore(pg_url)
        thread = await store.load("t")  # the first call migrates
        await store.close()
        assert thread.messages == [message] and thread.state == {"k": 1}
        assert thread.metadata == {} and thread.created_at is not None
        assert await schema_version(conn) == SCHEMA_VERSION == 6 and await columns(conn) == 2
        assert await conn.fetchval("SELECT count(*) FROM agui_schema") == 1
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
    with pytest.raises(RuntimeError, match=f"schema is at version {SCHEMA_VERSION + 1}"):
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
            shared = {"id": "shared", "role": "user", "content": "s"}
            saves.append(store.save("t", "echo", [message, shared], {"n": i}, []))
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


async def test_a_load_reads_only_what_is_new(pg_url, monkeypatch):
    """As in SQLite: a load fetches and decodes only the messages stored since
    this process last loaded the thread (issue 9 item 18)."""
    from agui_bridge.store import postgres as module

    store = PostgresStore(pg_url)
    try:
        old = [{"id": f"m{i}", "role": "user", "content": f"m{i}"} for i in range(300)]
        await store.save("t", "a", old, {}, [])
        assert len((await store.load("t")).messages) == 300
        decoded = []
        real = module.orjson.loads
        monkeypatch.setattr(
            module.orjson, "loads", lambda raw: decoded.append(real(raw)) or decoded[-1]
        )
        await store.save("t", "a", [old[3], {"id": "n1", "role": "user", "content": "x"}], {}, [])
        thread = await store.load("t")
        assert decoded[0] == [{"id": "n1", "role": "user", "content": "x"}]
        assert len(thread.messages) == 301 and thread.messages[-1]["id"] == "n1"
        assert "m0" in thread.ids
    finally:
        await store.close()


async def test_a_long_thread_is_decoded_off_the_event_loop(pg_url, monkeypatch):
    """A thread of a few megabytes takes a long moment to decode and check: its
    rows are decoded, and taken into the kept tail, in a thread; a short one's
    on the loop (a thread's hop would cost more than the work)."""
    import threading

    from agui_bridge.store import tail as tails

    store = PostgresStore(pg_url)
    loop_thread = threading.get_ident()
    where = []
    real = tails.TailCache.advance

    def advance(self, *args, **kwargs):
        where.append(threading.get_ident() != loop_thread)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(tails.TailCache, "advance", advance)
    try:
        big = [{"id": f"m{i}", "role": "user", "content": "x" * 100} for i in range(2000)]
        await store.save("long", "a", big, {}, [])
        await store.save("short", "a", big[:3], {}, [])
        assert len((await store.load("long")).messages) == 2000
        assert len((await store.load("short")).messages) == 3
        assert where == [True, False]
    finally:
        await store.close()


async def test_a_run_while_postgres_is_down_gets_503_and_the_next_one_works(pg_server, pg_url):
    """PostgreSQL stopped between runs: a run (and a state read) gets a 503
    JSON, never a 500; once it is back the same App (no node restart)
    reconnects and the next run works."""
    app = make_app(store=pg_url)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
            first = await http.post("/ag-ui/run", json=run_body("th", "one"))
            assert parse_sse(first.text)[0][-1]["type"] == "RUN_FINISHED"
            await asyncio.to_thread(pg_server.halt)
            try:
                down = await http.post("/ag-ui/run", json=run_body("th", "two"))
                state = await http.get("/threads/th/state")
            finally:
                await asyncio.to_thread(pg_server.resume)
            for response in (down, state):
                assert response.status_code == 503, response.text
                assert response.headers["content-type"] == "application/json"
                assert response.json()["error"]["code"] == "store_unavailable"
                assert response.headers["retry-after"]
            third = await http.post("/ag-ui/run", json=run_body("th", "three"))
            assert third.status_code == 200
            assert parse_sse(third.text)[0][-1]["type"] == "RUN_FINISHED"
            messages = (await http.get("/threads/th/state")).json()["messages"]
            assert [m["content"] for m in messages if m["role"] == "user"] == ["one", "three"]
    finally:
        await app.aclose()


async def test_a_run_whose_save_finds_postgres_down_is_saved_once_it_is_back(pg_server, pg_url):
    """No silent loss: a run whose final save finds PostgreSQL down keeps its
    answer and retries the save; once the server is back the thread holds it
    and the stream ends in RUN_FINISHED (its readers may be told before the
    save, never of an answer the thread will not hold: ``runs.end``)."""
    from agui_bridge import crumbs as c
    from agui_bridge.app import App

    app = App(store=pg_url, lease_ttl=1)
    go = asyncio.Event()

    @app.agent("echo")
    async def echo(ctx):
        yield c.text_delta("half ")
        await go.wait()
        yield c.text_delta("done")

    async def stop_then_go():
        # the run's task started: the user's turn is stored
        while (run := app.gate.run_of("t")) is None or run.task is None:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(pg_server.halt)
        go.set()
        while run.save_failures < 2:  # the store refused its save, and a retry
            await asyncio.sleep(0.01)
        await asyncio.to_thread(pg_server.resume)

    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
            stopper = asyncio.ensure_future(stop_then_go())
            try:
                async with asyncio.timeout(120):
                    response = await http.post("/ag-ui/run", json=run_body("t", "hello"))
                    await stopper
            finally:
                if not stopper.done() or stopper.exception() is not None:
                    stopper.cancel()
                    await asyncio.to_thread(pg_server.resume)
        events, _ = parse_sse(response.text)
        assert [e["type"] for e in events[-2:]] == ["TEXT_MESSAGE_END", "RUN_FINISHED"], events
        thread = await app.store.load("t")
        assert [m["role"] for m in thread.messages] == ["user", "assistant"]
        assert thread.messages[-1]["content"] == "half done"
    finally:
        await app.aclose()


async def test_every_thread_route_answers_503_while_postgres_is_down(pg_server, pg_url):
    """Search, create, update-metadata and delete answered 500 (the other routes
    503): one mapping of "store down" for every call of the store."""
    app = make_app(store=pg_url)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
            assert (await http.post("/threads", json={"thread_id": "anon-t"})).status_code == 200
            await asyncio.to_thread(pg_server.halt)
            try:
                answers = [
                    await http.post("/threads/search", json={}),
                    await http.post("/threads/search", json={"metadata": {"k": 1}}),
                    await http.post("/threads", json={"thread_id": "anon-u"}),
                    await http.patch("/threads/anon-t", json={"metadata": {"k": 2}}),
                    await http.delete("/threads/anon-t"),
                    await http.get("/threads/anon-t"),
                    await http.post("/threads/anon-t/state", json={"values": {"k": 1}}),
                ]
            finally:
                await asyncio.to_thread(pg_server.resume)
            for response in answers:
                assert response.status_code == 503, (response.request.url, response.text)
                assert response.json()["error"]["code"] == "store_unavailable"
                assert response.headers["retry-after"]
            assert (await http.get("/threads/anon-t")).status_code == 200
    finally:
        await app.aclose()


async def test_nul_at_the_door_is_a_4xx_on_postgres(pg_url):
    app = make_app(store=pg_url)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
            body = {"thread_id": "anon-t", "metadata": {"k": "a\x00"}}
            assert (await http.post("/threads", json=body)).status_code == 422
            assert (await http.post("/threads", json={"thread_id": "anon-t"})).status_code == 200
            patch = await http.patch("/threads/anon-t", json={"metadata": {"\x00": 1}})
            assert patch.status_code == 422, patch.text
            search = await http.post("/threads/search", json={"metadata": {"k": "\x00"}})
            assert search.status_code == 422, search.text
            search = await http.post("/threads/search", json={"ids": ["anon-t\x00"]})
            assert search.status_code == 200 and search.json() == []
            assert (await http.get("/threads/anon-t%00")).status_code in (403, 404)
            assert (await http.get("/threads/anon-t%00/state")).status_code in (403, 404)
            run = await http.post("/ag-ui/run", json=run_body("anon-x\x00", "hi"))
            assert run.status_code == 400, run.text
    finally:
        await app.aclose()


async def test_version_3_indexes_search_and_cleans_nul_metadata(pg_url):
    """A database at version 2 holding a thread whose metadata has NUL (json
    took it; every metadata-filtered search then 500'd casting to jsonb) and
    one with pending interrupts: version 3 keeps both, without the NUL, with
    the status the interrupts say, and searches answer."""
    conn = await asyncpg.connect(pg_url)
    try:
        assert await migrate(conn, MIGRATIONS[:2]) == 2
        await conn.execute(
            "INSERT INTO agui_threads (thread_id, agent_id, state, interrupts, metadata)"
            " VALUES ('nul', 'a', '{}', '[]', '{\"k\": \"a\\u0000b\", \"n\": 1}'),"
            " ('paused', 'a', '{}', '[{\"id\": \"i1\"}]', '{\"n\": 1}')"
        )
        store = PostgresStore(pg_url)
        try:
            assert await store.load("nul") is not None  # migrates
            assert (await store.load("nul")).metadata == {"k": "ab", "n": 1}
            found = {t.thread_id: t.status for t in await store.search({"n": 1}, None, 10)}
            assert found == {"nul": "idle", "paused": "interrupted"}
            assert [t.thread_id for t in await store.search({"k": "ab"}, None, 10)] == ["nul"]
        finally:
            await store.close()
        indexes = {
            row["indexname"]
            for row in await conn.fetch(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'agui_threads'"
            )
        }
        assert {"agui_threads_by_owner_status", "agui_threads_by_metadata"} <= indexes
    finally:
        await conn.close()


async def test_a_blob_another_threads_save_refers_to_survives_a_delete(pg_url):
    """Thread T2 saves the image thread T1 holds while T1 is deleted: the delete
    checked for other references in a snapshot taken before T2's save committed,
    and deleted the blob T2 refers to (T2's image was gone on its next load).
    T2's save is held between its blob row and its reference (another
    connection holds the same reference uncommitted) while T1 is deleted."""
    import base64

    from agui_bridge.store.blobs import split_all

    raw = b"a scan" * 1000
    image = {"type": "image", "source": {"type": "data", "value": base64.b64encode(raw).decode(),
                                         "mimeType": "image/png"}}  # fmt: skip
    t1, t2 = f"t1-{uuid.uuid4().hex[:6]}", f"t2-{uuid.uuid4().hex[:6]}"
    store = PostgresStore(pg_url)
    blocker = await asyncpg.connect(pg_url)
    try:
        await store.save(t1, "a", [{"id": "m1", "role": "user", "content": [image]}], {}, [])
        _, blobs = split_all([{"id": "x", "role": "user", "content": [image]}])
        (digest,) = blobs
        tx = blocker.transaction()
        await tx.start()
        await blocker.execute("INSERT INTO agui_blob_refs (hash, thread_id) VALUES ($1, $2)",
                              digest, t2)  # fmt: skip
        message = {"id": "m2", "role": "user", "content": [image]}
        saving = asyncio.ensure_future(store.save(t2, "a", [message], {}, []))
        await asyncio.sleep(0.5)  # T2's save waits on the uncommitted reference
        deleting = asyncio.ensure_future(store.delete(t1))
        await asyncio.sleep(0.5)
        await tx.rollback()
        await saving
        assert await deleting
        reopened = PostgresStore(pg_url)  # another process: nothing cached
        try:
            assert (await reopened.load(t2)).messages == [message]
        finally:
            await reopened.close()
        assert await blocker.fetchval("SELECT count(*) FROM agui_blobs WHERE hash = $1", digest)
    finally:
        await blocker.close()
        await store.close()
