"""Attachments in the three stores (memory, SQLite, PostgreSQL: the
``make_store`` fixture): inline data is kept once, content-addressed, out of
the message rows, and every load gives the messages back whole, also after a
reopen (another process) and after the thread that first stored a blob is
deleted; a blob no thread refers to goes with its last thread."""

from __future__ import annotations

import base64
import hashlib
import sqlite3

import pytest
from agui_bridge.store.blobs import BlobCache, join, refs, split_all

RAW = bytes(range(256)) * 64  # 16 KiB
DATA = base64.b64encode(RAW).decode()
DIGEST = hashlib.sha256(RAW).hexdigest()
OTHER = base64.b64encode(b"other bytes").decode()


def with_image(message_id: str, value: str = DATA, text: str = "see") -> dict:
    return {
        "id": message_id,
        "role": "user",
        "content": [
            {"type": "text", "text": text},
            {
                "type": "image",
                "id": "p1",
                "source": {"type": "data", "value": value, "mimeType": "image/png"},
                "metadata": {"filename": "a.png"},
            },
            {"type": "document", "source": {"type": "url", "value": "https://x.test/a.pdf"}},
        ],
    }


def test_split_keeps_the_hash_in_the_row_and_join_gives_the_message_back():
    message = with_image("u1")
    (row,), blobs = split_all([message])
    assert blobs == {DIGEST: RAW}
    assert refs(row) == [DIGEST]
    assert "value" not in row["content"][1]["source"]
    assert DATA not in str(row)
    assert message["content"][1]["source"]["value"] == DATA  # the message is not changed
    assert join(row, {DIGEST: DATA}.get) == message
    text = {"id": "a", "role": "assistant", "content": "x"}
    assert split_all([text]) == ([text], {})


def test_the_blob_cache_is_bounded_and_keeps_what_a_load_holds():
    cache = BlobCache(max_chars=3 * len(DATA))
    rows = []
    for n in range(5):
        raw = bytes([n]) * len(RAW)
        (row,), blobs = split_all([with_image(f"u{n}", base64.b64encode(raw).decode())])
        rows.append(row)
        present, missing = cache.held([row])
        assert present == {} and missing == list(blobs)
        assert cache.join_all([row], present, blobs)[0]["content"][1]["source"]["value"]
    present, missing = cache.held(rows)
    assert len(present) == 3 and len(missing) == 2  # the oldest two went


async def test_a_thread_with_attachments_is_stored_once_and_loaded_whole(make_store):
    store = make_store()
    first, second = with_image("u1"), with_image("u2", text="again")  # the same image twice
    answer = {"id": "a1", "role": "assistant", "content": "a cat"}
    await store.save("t", "agent", [first, answer], {}, [])
    await store.save("t", "agent", [second], {}, [])
    await store.save("t2", "agent", [with_image("u3", OTHER)], {}, [])
    thread = await store.load("t")
    assert thread.messages == [first, answer, second]
    if make_store.kind != "memory":
        await store.close()
        store = make_store()  # another process: nothing cached
        assert (await store.load("t")).messages == [first, answer, second]
        assert (await store.load("t2")).messages == [with_image("u3", OTHER)]
    else:  # one string for the one image, shared by both messages
        loaded = (await store.load("t")).messages
        assert (
            loaded[0]["content"][1]["source"]["value"] is loaded[2]["content"][1]["source"]["value"]
        )
    await store.close()
    if make_store.kind == "sqlite":
        db = sqlite3.connect(store.path)
        bodies = [row[0] for row in db.execute("SELECT body FROM messages")]
        assert all(DATA.encode() not in body for body in bodies)
        assert db.execute("SELECT count(*) FROM blobs").fetchone()[0] == 2
        assert db.execute("SELECT data FROM blobs WHERE hash = ?", (DIGEST,)).fetchone()[0] == RAW
        db.close()
    if make_store.kind == "postgres":
        import asyncpg

        conn = await asyncpg.connect(make_store.url)
        try:
            bodies = [r["body"] for r in await conn.fetch("SELECT body::text FROM agui_messages")]
            assert all(DATA not in body for body in bodies)
            assert await conn.fetchval("SELECT count(*) FROM agui_blobs") == 2
            stored = await conn.fetchval("SELECT data FROM agui_blobs WHERE hash = $1", DIGEST)
            assert stored == RAW
        finally:
            await conn.close()


async def test_a_blob_stays_while_a_thread_refers_to_it_and_goes_with_the_last(make_store):
    store = make_store()
    await store.save("a", "agent", [with_image("u1")], {}, [])
    await store.save("b", "agent", [with_image("u2")], {}, [])
    assert await store.delete("a")
    if make_store.kind != "memory":
        await store.close()
        store = make_store()
    assert (await store.load("b")).messages == [with_image("u2")]
    assert await store.delete("b")
    await store.save("c", "agent", [with_image("u3", OTHER)], {}, [])
    await store.close()
    if make_store.kind == "memory":
        assert set(store._blobs) == {hashlib.sha256(b"other bytes").hexdigest()}
    elif make_store.kind == "sqlite":
        db = sqlite3.connect(store.path)
        assert [r[0] for r in db.execute("SELECT hash FROM blobs")] == [
            hashlib.sha256(b"other bytes").hexdigest()
        ]
        db.close()
    else:
        import asyncpg

        conn = await asyncpg.connect(make_store.url)
        try:
            hashes = [r["hash"] for r in await conn.fetch("SELECT hash FROM agui_blobs")]
            assert hashes == [hashlib.sha256(b"other bytes").hexdigest()]
        finally:
            await conn.close()


async def test_a_sweep_drops_the_blobs_of_the_threads_it_deletes(make_store):
    import time

    store = make_store()
    await store.save("old", "agent", [with_image("u1")], {}, [])
    await store.save("kept", "agent", [with_image("u2", OTHER)], {}, [])
    gone = await store.sweep(time.time() + 60, 1)
    assert len(gone) == 1
    left = "kept" if gone == ["old"] else "old"
    thread = await store.load(left)
    assert thread is not None and refs(thread.messages[0]) == []
    assert thread.messages[0]["content"][1]["source"]["value"] in (DATA, OTHER)
    await store.close()


@pytest.mark.parametrize("size", [1 << 20])
async def test_a_large_part_round_trips(make_store, size):
    store = make_store()
    big = base64.b64encode(bytes(range(256)) * (size // 256)).decode()
    await store.save("t", "agent", [with_image("u1", big)], {}, [])
    if make_store.kind != "memory":
        await store.close()
        store = make_store()
    assert (await store.load("t")).messages == [with_image("u1", big)]
    await store.close()


async def test_a_branch_keeps_its_images_whole(make_store, tmp_path):
    """A regenerate branches the thread (docs/branches.md): the old branch, read
    back, and the new current branch both give their images whole, also from
    another process (the cut branch's rows keep their blob references)."""
    import httpx
    from agui_bridge import crumbs as c
    from agui_bridge.app import App

    def app_on(store):
        app = App(store=store)

        @app.agent("echo")
        async def echo(ctx):
            yield c.text_delta(f"{len(ctx.parts)} parts")

        return app

    async def post(app, messages, run_id):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            body = {"threadId": "br", "runId": run_id, "messages": messages}
            assert (await http.post("/agui/echo", json=body)).status_code == 200
            return (
                (await http.get("/threads/br/state")).json(),
                (await http.get("/threads/br/branches")).json(),
                http,
            )

    first = with_image("u1")
    app = app_on(make_store())
    state, _, _ = await post(app, [first], "r1")
    second = with_image("u2", OTHER, text="more")
    state, _, _ = await post(app, [*state["messages"], second], "r2")
    assert [m["id"] for m in state["messages"]][::2] == ["u1", "u2"]
    # regenerate the first answer: [u1] alone, the thread holding [u1, a1, u2, a2]
    state, listed, _ = await post(app, [first], "r3")
    assert state["messages"][0] == first and len(state["messages"]) == 2
    (branch,) = listed["branches"]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        old = (await http.get(f"/threads/br/branches/{branch['branchId']}")).json()
    assert old["messages"][0] == first and old["messages"][2] == second
    await app.aclose()
    if make_store.kind != "memory":
        app = app_on(make_store())  # another process: nothing cached
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            state = (await http.get("/threads/br/state")).json()
            old = (await http.get(f"/threads/br/branches/{branch['branchId']}")).json()
        assert state["messages"][0] == first
        assert old["messages"][0] == first and old["messages"][2] == second
        await app.aclose()


async def test_only_a_media_parts_source_is_kept_in_or_filled_from_the_blob_table(make_store):
    """A text part may carry a field named ``source`` (the door refuses ``aguiBlob``
    in it; a message stored some other way may hold anything): the stores keep
    it as sent. Before, a text part naming another thread's blob was given that
    blob's bytes on load, and a malformed one was a 500 or lost the turn."""
    store = make_store()
    await store.save("victim", "agent", [with_image("v1")], {}, [])
    named = {"type": "text", "text": "hi", "source": {"type": "data", "aguiBlob": DIGEST}}
    odd = {"type": "text", "text": "x", "source": {"type": "data", "value": "!!not base64!"}}
    sent = {"id": "u1", "role": "user", "content": [named, odd]}
    await store.save("other", "agent", [sent], {}, [])
    assert (await store.load("other")).messages == [sent]
    await store.close()
    if make_store.kind != "memory":
        reopened = make_store()  # another process: nothing cached
        assert (await reopened.load("other")).messages == [sent]
        await reopened.close()
