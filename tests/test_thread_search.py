"""Thread search from the store's indexed columns (issue 24 item 3, issue 21
owner-scoped threads): status, owner, metadata and paging answered by every
store (the ``make_store`` fixture: memory, SQLite, PostgreSQL), the owner
stored with a thread, no cap on how far a search pages, and the thread TTL."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from agui_bridge import crumbs as c
from agui_bridge.app import App
from agui_bridge.store import sweep as sweeping
from agui_bridge.store.owner import owner_of


def _msg(i: str) -> dict:
    return {"id": i, "role": "user", "content": i}


async def _ids(store, *args, **kwargs) -> list[str]:
    return [listed.thread_id for listed in await store.search(*args, **kwargs)]


async def test_status_owner_metadata_and_paging_from_the_store(make_store):
    store = make_store()
    try:
        await store.create("idle", {"team": "a", "tags": [1, 2]}, owner="ann")
        await store.save("paused", "agent", [_msg("m1")], {}, [{"id": "i1"}], owner="ann")
        await store.save("failed", "agent", [_msg("m2")], {}, [], owner="bob", errored=True)
        await store.save("running", "agent", [_msg("m3")], {}, [])
        lease = await store.claim("running", 30.0)
        found = {t.thread_id: t for t in await store.search({}, None, 10)}
        assert {k: v.status for k, v in found.items()} == {
            "idle": "idle",
            "paused": "interrupted",
            "failed": "error",
            "running": "busy",
        }
        assert found["paused"].agent_id == "agent" and found["idle"].agent_id is None
        assert await _ids(store, {}, None, 10) == ["running", "failed", "paused", "idle"]
        for status, expected in [
            ("idle", ["idle"]),
            ("interrupted", ["paused"]),
            ("error", ["failed"]),
            ("busy", ["running"]),
        ]:
            assert await _ids(store, {}, None, 10, status=status) == expected, status
        assert await _ids(store, {}, None, 10, owner="ann") == ["paused", "idle"]
        assert await _ids(store, {}, None, 10, owner="bob", status="error") == ["failed"]
        assert await _ids(store, {}, None, 10, owner="nobody") == []
        assert await _ids(store, {}, None, 2) == ["running", "failed"]
        assert await _ids(store, {}, None, 2, 2) == ["paused", "idle"]
        assert await _ids(store, {}, None, 2, 4) == []
        assert await _ids(store, {"team": "a"}, None, 10) == ["idle"]
        assert await _ids(store, {"tags": [1, 2]}, None, 10) == ["idle"]
        assert await _ids(store, {"tags": [1]}, None, 10) == []  # equal, not contained
        assert await _ids(store, {"team": "a", "x": None}, None, 10) == []
        assert await _ids(store, {}, {"idle", "failed", "nope"}, 10) == ["failed", "idle"]
        # The owner is the creator's: a later save by someone else keeps it.
        await store.save("paused", "agent", [], {}, [], owner="eve")
        thread = await store.load("paused")
        assert thread.owner == "ann" and thread.status == "idle"
        await store.release(lease)
        assert (await store.search({}, {"running"}, 10))[0].status == "idle"
    finally:
        await store.close()


async def test_the_sweep_deletes_idle_threads_in_batches(make_store):
    store = make_store()
    try:
        for n in range(7):
            await store.save(f"old{n}", "a", [_msg(f"m{n}")], {}, [])
        await store.save("busy", "a", [_msg("b")], {}, [])
        lease = await store.claim("busy", 30.0)
        await asyncio.sleep(0.05)
        cutoff = time.time()
        await store.save("fresh", "a", [_msg("f")], {}, [])
        first = await store.sweep(cutoff, 5)
        second = await store.sweep(cutoff, 5)
        assert len(first) == 5 and len(second) == 2
        assert set(first) | set(second) == {f"old{n}" for n in range(7)}
        assert await store.sweep(cutoff, 5) == []
        assert await _ids(store, {}, None, 10) == ["fresh", "busy"]
        assert await store.load("old0") is None
        await store.save("old0", "a", [_msg("new")], {}, [])  # made again: nothing comes back
        assert [m["id"] for m in (await store.load("old0")).messages] == ["new"]
        await store.release(lease)
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("identity", "owner"),
    [
        (None, None),
        ({"user": "x"}, None),
        ({"id": "u1"}, "u1"),
        ({"id": 42}, "42"),
        ({"owner": "org", "id": "u1"}, "org"),
        ({"id": "a\x00"}, None),
        ({"id": True}, None),
        (type("I", (), {"id": "obj"})(), "obj"),
        (type("I", (), {"owner": "o", "id": "i"})(), "o"),
    ],
)
def test_the_owner_rule(identity, owner):
    assert owner_of(identity) == owner


def _app(store, **options) -> App:
    def authenticate(request):
        user = request.headers.get("x-user")
        return {"id": user} if user else {"anonymous": True}

    app = App(store=store, authenticate=authenticate, **options)

    @app.agent("echo")
    async def echo(ctx):
        yield c.text_delta(f"you said {ctx.input}")

    return app


def _client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


def _run(thread_id: str) -> dict:
    return {
        "threadId": thread_id,
        "runId": f"r-{thread_id}",
        "messages": [{"id": f"u-{thread_id}", "role": "user", "content": "hi"}],
    }


async def test_search_lists_the_callers_own_threads(make_store):
    store = make_store()
    app = _app(store)
    try:
        async with _client(app) as http:
            ann, bob = {"x-user": "ann"}, {"x-user": "bob"}
            for n in range(3):
                assert (await http.post("/ag-ui/run", json=_run(f"a{n}"), headers=ann)).is_success
            await http.post("/threads", json={"thread_id": "b0"}, headers=bob)
            await http.post("/ag-ui/run", json=_run("x0"))  # no owner
            mine = await http.post("/threads/search", json={}, headers=ann)
            assert [t["thread_id"] for t in mine.json()] == ["a2", "a1", "a0"]
            page = await http.post("/threads/search", json={"limit": 2, "offset": 1}, headers=ann)
            assert [t["thread_id"] for t in page.json()] == ["a1", "a0"]
            assert [t["status"] for t in page.json()] == ["idle", "idle"]
            theirs = await http.post("/threads/search", json={}, headers=bob)
            assert [t["thread_id"] for t in theirs.json()] == ["b0"]
            everyone = await http.post("/threads/search", json={"limit": 10})
            assert {t["thread_id"] for t in everyone.json()} == {"a0", "a1", "a2", "b0", "x0"}
            assert (await store.load("a0")).owner == "ann"
            assert (await store.load("b0")).owner == "bob"
            assert (await store.load("x0")).owner is None
            # GET /threads (the operations issue's listing; it answered 405):
            # the same owner scoping and paging, in the query.
            mine = await http.get("/threads", headers=ann)
            assert mine.status_code == 200, mine.text
            assert [t["thread_id"] for t in mine.json()] == ["a2", "a1", "a0"]
            page = await http.get("/threads?limit=2&offset=1&status=idle", headers=ann)
            assert [t["thread_id"] for t in page.json()] == ["a1", "a0"]
            theirs = await http.get("/threads", headers=bob)
            assert [t["thread_id"] for t in theirs.json()] == ["b0"]
            for bad in ("limit=%C2%B2", "offset=--5", "limit=0", "status=gone"):
                refused = await http.get(f"/threads?{bad}", headers=ann)
                assert refused.status_code == 422, (bad, refused.text)
                assert refused.json()["error"]
    finally:
        await app.aclose()
        await store.close()


async def test_search_pages_past_ten_thousand_threads():
    """The route read at most 10,000 thread ids (and refused an offset past it)."""
    app = _app("memory://")
    store = app.store
    for n in range(10_050):
        await store.create(f"t{n:05}", {"n": n % 7}, owner="ann")
    try:
        async with _client(app) as http:
            body = {"limit": 20, "offset": 10_040}
            page = await http.post("/threads/search", json=body, headers={"x-user": "ann"})
            assert page.status_code == 200, page.text
            assert [t["thread_id"] for t in page.json()] == [f"t{n:05}" for n in range(9, -1, -1)]
    finally:
        await app.aclose()


async def test_search_still_applies_authorize_thread_with_paging():
    app = App(store="memory://")

    @app.agent("guarded", authorize_thread=lambda identity, thread_id: thread_id[-1] in "02468")
    async def guarded(ctx):
        yield c.text_delta("x")

    for n in range(30):
        await app.store.save(f"t{n:02}", "guarded", [_msg(f"m{n}")], {}, [])
    try:
        async with _client(app) as http:
            page = await http.post("/threads/search", json={"limit": 3, "offset": 2})
            assert [t["thread_id"] for t in page.json()] == ["t24", "t22", "t20"]
    finally:
        await app.aclose()


async def test_a_guarded_search_pages_across_the_chunks_it_reads_the_store_in(make_store):
    """Few threads pass the guard: the search reads the store chunk after chunk
    (each larger than the last) and the page and offset still count only
    what passes, in the store's order, on every store."""
    store = make_store()
    app = App(store=store)

    @app.agent("guarded", authorize_thread=lambda identity, thread_id: thread_id.endswith("0"))
    async def guarded(ctx):
        yield c.text_delta("x")

    for n in range(1_250):
        await store.save(f"t{n:04}", "guarded", [_msg(f"m{n}")], {}, [])
    try:
        async with _client(app) as http:
            page = await http.post("/threads/search", json={"limit": 30, "offset": 40})
            assert page.status_code == 200, page.text
            expected = [f"t{n:04}" for n in range(1_249, -1, -1) if n % 10 == 0][40:70]
            assert [t["thread_id"] for t in page.json()] == expected
            everything = await http.post("/threads/search", json={"limit": 1_000})
            assert len(everything.json()) == 125
    finally:
        await app.aclose()
        await store.close()


async def test_the_thread_ttl_sweeps_idle_threads(make_store):
    store = make_store()
    app = _app(store, thread_ttl=3600)
    try:
        async with _client(app) as http:
            for n in range(5):
                assert (await http.post("/ag-ui/run", json=_run(f"t{n}"))).is_success
            assert app._sweeper is not None  # started on the store's first use
            assert await sweeping.sweep(app) == 0  # none idle for an hour
            app.thread_ttl = 0.05
            await asyncio.sleep(0.1)
            await http.post("/ag-ui/run", json=_run("fresh"))
            expired = []
            app.ops.threads_expired = expired.append  # what the metrics count
            assert await sweeping.sweep(app, batch=2) == 5
            assert app.threads_swept == 5 and expired == [2, 2, 1]
            assert await _ids(store, {}, None, 10) == ["fresh"]
    finally:
        await app.aclose()
        await store.close()


def test_the_thread_ttl_is_off_by_default_and_checked():
    assert App(store="memory://").thread_ttl is None
    with pytest.raises(ValueError, match="thread_ttl"):
        App(store="memory://", thread_ttl=0)
