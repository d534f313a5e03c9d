"""The thread store calls the Agent Protocol's thread routes need, on every store."""

from __future__ import annotations

import sqlite3

from agui_bridge.store import SqliteStore


async def ids_of(store, *args, **kwargs) -> list[str]:
    return [listed.thread_id for listed in await store.search(*args, **kwargs)]


def _msg(i: str) -> dict:
    return {"id": i, "role": "user", "content": i}


async def test_create_metadata_search_delete(make_store):
    store = make_store()
    try:
        assert await store.create("t1", {"owner": "ann", "n": 1})
        assert not await store.create("t1", {"owner": "bob"})  # exists: nothing changes
        thread = await store.load("t1")
        assert thread.metadata == {"owner": "ann", "n": 1}
        assert thread.agent_id is None and thread.messages == [] and thread.state == {}
        assert thread.created_at is not None and thread.updated_at >= thread.created_at

        # A run's save keeps what the thread was created with.
        await store.save("t1", "demo", [_msg("m1")], {"k": 1}, [])
        thread = await store.load("t1")
        assert thread.metadata == {"owner": "ann", "n": 1} and thread.agent_id == "demo"

        assert await store.update_metadata("t1", {"n": 2, "tag": [1, 2]})
        assert (await store.load("t1")).metadata == {"owner": "ann", "n": 2, "tag": [1, 2]}
        assert not await store.update_metadata("nope", {"n": 1})

        await store.create("t2", {"owner": "bob"})
        await store.save("t3", "demo", [], {}, [])  # made by a run: empty metadata
        assert (await store.load("t3")).metadata == {}
        assert await ids_of(store, {}, None, 10) == ["t3", "t2", "t1"]  # newest update first
        assert await ids_of(store, {"owner": "ann"}, None, 10) == ["t1"]
        assert await ids_of(store, {"tag": [1, 2]}, None, 10) == ["t1"]
        assert await ids_of(store, {"owner": "nobody"}, None, 10) == []
        assert await ids_of(store, {}, {"t1", "t2"}, 10) == ["t2", "t1"]
        assert await ids_of(store, {}, None, 2) == ["t3", "t2"]

        assert await store.delete("t1")
        assert not await store.delete("t1")
        assert await store.load("t1") is None
        assert await ids_of(store, {}, None, 10) == ["t3", "t2"]
        # The same id again is a new thread: none of the old messages come back.
        assert await store.create("t1", {})
        await store.save("t1", "demo", [_msg("m9")], {}, [])
        assert [m["id"] for m in (await store.load("t1")).messages] == ["m9"]
    finally:
        await store.close()


async def test_a_metadata_filter_compares_as_json_does_on_every_store(make_store):
    """A boolean is no number (as PostgreSQL's jsonb has it), numbers compare by
    value, and arrays and objects element by element."""
    store = make_store()
    try:
        kept = {"one": {"x": 1}, "true": {"x": True}, "float": {"x": 1.0}}
        kept |= {"zero": {"x": 0}, "false": {"x": False}, "list": {"x": [1, True]}}
        for thread_id, metadata in kept.items():
            assert await store.create(thread_id, metadata)
        assert sorted(await ids_of(store, {"x": True}, None, 10)) == ["true"]
        assert sorted(await ids_of(store, {"x": 1}, None, 10)) == ["float", "one"]
        assert sorted(await ids_of(store, {"x": False}, None, 10)) == ["false"]
        assert sorted(await ids_of(store, {"x": 0}, None, 10)) == ["zero"]
        assert await ids_of(store, {"x": [1, True]}, None, 10) == ["list"]
        assert await ids_of(store, {"x": [True, 1]}, None, 10) == []
        assert await ids_of(store, {"x": [1, 1]}, None, 10) == []
    finally:
        await store.close()


async def test_a_sqlite_file_from_before_gains_the_columns(tmp_path):
    path = str(tmp_path / "old.sqlite")
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE threads (thread_id TEXT PRIMARY KEY, agent_id TEXT, state BLOB NOT NULL,"
        " interrupts BLOB NOT NULL, updated_at REAL NOT NULL);"
        "INSERT INTO threads VALUES ('old', 'demo', '{}', '[]', 1.0);"
    )
    conn.commit()
    conn.close()
    store = SqliteStore(path)
    try:
        thread = await store.load("old")
        assert thread.metadata == {} and thread.created_at is None and thread.updated_at == 1.0
        assert await store.update_metadata("old", {"a": 1})
        assert (await store.load("old")).metadata == {"a": 1}
    finally:
        await store.close()


async def test_a_new_thread_is_updated_when_it_is_created(make_store):
    # Two clock readings (one per column default) once put updated_at before
    # created_at; a search sorted by updated_at then misplaced new threads.
    store = make_store()
    try:
        for n in range(30):
            assert await store.create(f"c{n}", {})
            await store.save(f"s{n}", "demo", [_msg(f"m{n}")], {}, [])
        for name in [f"c{n}" for n in range(30)] + [f"s{n}" for n in range(30)]:
            thread = await store.load(name)
            assert thread.updated_at == thread.created_at, name
    finally:
        await store.close()


async def test_nul_and_overlong_ids_are_refused_by_every_store(make_store):
    """PostgreSQL's text and jsonb refuse NUL (a 500 once); every store refuses
    it (and ids past the cap) alike, writing nothing, and finds nothing under
    such an id."""
    import pytest
    from agui_bridge import RunInputError
    from agui_bridge.shapes import MAX_ID_CHARS

    store = make_store()
    try:
        for bad in ("t\x00", "t" * (MAX_ID_CHARS + 1), ""):
            with pytest.raises(RunInputError):
                await store.create(bad, {})
            with pytest.raises(RunInputError):
                await store.save(bad, "a", [_msg("m1")], {}, [])
            with pytest.raises(RunInputError):
                await store.claim(bad, 5.0)
            assert await store.load(bad) is None
            assert not await store.delete(bad)
            assert not await store.update_metadata(bad, {"a": 1})
            assert await ids_of(store, {}, {bad}, 10) == []
        assert await store.create("t", {"k": "v"})
        for metadata in ({"k": "a\x00b"}, {"k\x00": 1}, {"k": ["x", {"y": "\x00"}]}):
            with pytest.raises(RunInputError):
                await store.create("t2", metadata)
            with pytest.raises(RunInputError):
                await store.update_metadata("t", metadata)
            with pytest.raises(RunInputError):
                await ids_of(store, metadata, None, 10)
        with pytest.raises(RunInputError):
            await store.save("t", "a", [_msg("m\x00")], {}, [])
        thread = await store.load("t")
        assert thread.metadata == {"k": "v"} and thread.messages == []
        assert await store.load("t2") is None
        assert await ids_of(store, {"k": "v"}, None, 10) == ["t"]
        # NUL in a message's content or the state is JSON text like any other.
        await store.save("t", "a", [{**_msg("m1"), "content": "a\x00b"}], {"s": "\x00"}, [])
        thread = await store.load("t")
        assert thread.messages[0]["content"] == "a\x00b" and thread.state == {"s": "\x00"}
    finally:
        await store.close()


async def test_a_sqlite_file_from_before_gains_owner_and_status(tmp_path):
    path = str(tmp_path / "old.sqlite")
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE threads (thread_id TEXT PRIMARY KEY, agent_id TEXT, state BLOB NOT NULL,"
        " interrupts BLOB NOT NULL, updated_at REAL NOT NULL, metadata BLOB NOT NULL"
        " DEFAULT '{}', created_at REAL);"
        "INSERT INTO threads VALUES ('paused', 'a', '{}', '[{\"id\": \"i\"}]', 2.0, '{}', 1.0);"
        "INSERT INTO threads VALUES ('done', 'a', '{}', '[]', 1.0, '{}', 1.0);"
    )
    conn.commit()
    conn.close()
    store = SqliteStore(path)
    try:
        found = [(t.thread_id, t.status) for t in await store.search({}, None, 10)]
        assert found == [("paused", "interrupted"), ("done", "idle")]
        assert (await store.load("done")).owner is None
    finally:
        await store.close()


async def test_a_thread_another_worker_runs_is_not_deleted(tmp_path):
    """Two workers share one SQLite file: a thread the other one runs (it holds
    the store's lease) is 409 ``run_active`` to ``DELETE /threads/{id}``, and
    stays (its run's last save would have made it again, without its owner)."""
    import httpx
    from agui_bridge.app import App

    path = str(tmp_path / "threads.sqlite")
    app = App(store=f"sqlite:///{path}")

    @app.agent("demo")
    async def demo(ctx):
        yield {"type": "text:delta", "delta": "hi"}

    other = SqliteStore(path)  # the other worker's
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            created = await http.post("/threads", json={"thread_id": "t"})
            assert created.status_code == 200, created.text
            lease = await other.claim("t", 30.0)
            assert lease is not None
            refused = await http.delete("/threads/t")
            assert refused.status_code == 409, refused.text
            assert refused.json()["error"]["code"] == "run_active"
            assert await other.load("t") is not None
            await other.release(lease)
            deleted = await http.delete("/threads/t")
            assert deleted.status_code == 204, deleted.text
            assert await other.load("t") is None
    finally:
        await other.close()
        await app.aclose()
