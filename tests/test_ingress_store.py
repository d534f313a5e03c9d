"""The thread stores (memory, SQLite, PostgreSQL: the ``make_store`` fixture of
conftest.py) keep each message id once and share run leases."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from agui_bridge.errors import LeaseLost
from agui_bridge.store import MemoryStore, SqliteStore, open_store


async def test_save_load_dedupes_by_id(make_store):
    store = make_store()
    assert await store.load("t") is None
    m1 = {"id": "u1", "role": "user", "content": "hi"}
    m2 = {"id": "a1", "role": "assistant", "content": "héllo", "toolCalls": []}
    await store.save("t", "echo", [m1, m2], {"k": [1, 2.5, None]}, [{"id": "i1", "reason": "r"}])
    await store.save("t", "other", [m1, {**m2, "content": "changed"}], {"k": 2}, [])
    thread = await store.load("t")
    assert thread.agent_id == "echo"
    assert thread.messages == [m1, m2]
    assert thread.state == {"k": 2}
    assert thread.interrupts == []
    thread.messages.append({"id": "x"})  # a loaded thread is a copy
    assert len((await store.load("t")).messages) == 2
    await store.close()


async def test_a_loaded_thread_holds_its_ids(make_store):
    """Every store hands the handler the thread's message and tool call ids (so
    no run walks the history), also after a load that read only what was new;
    a loaded thread's sets are its own."""
    store = make_store()
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    await store.save(
        "t",
        "a",
        [
            {"id": "u1", "role": "user", "content": "x"},
            {"id": "a1", "role": "assistant", "toolCalls": [call]},
        ],
        {},
        [],
    )
    first = await store.load("t")
    assert set(first.ids) == {"u1", "a1"} and set(first.call_ids) == {"c1"}
    await store.save(
        "t",
        "a",
        [
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "ok"},
            {"id": "a2", "role": "assistant", "toolCalls": [{**call, "id": "c2"}]},
        ],
        {},
        [],
    )
    first.ids.add("mine")
    first.call_ids.add("mine")
    second = await store.load("t")
    assert set(second.ids) == {"u1", "a1", "t1", "a2"}
    assert set(second.call_ids) == {"c1", "c2"}
    assert set(first.ids) == {"u1", "a1", "mine"}  # a later save leaves a loaded thread be
    await store.close()
    if make_store.kind != "memory":
        reopened = make_store()  # another process: reads it all
        assert set((await reopened.load("t")).ids) == {"u1", "a1", "t1", "a2"}
        await reopened.close()


async def test_loads_share_a_long_threads_ids_and_no_run_changes_them(make_store):
    """A run's cost does not grow with its thread: two loads of a long thread
    share its ids (frozen, never copied per load); what one run adds is its
    own, and a later save changes no loaded thread."""
    from agui_bridge.store.ids import COMPACT_AT

    store = make_store()
    messages = [{"id": f"m{i}", "role": "user", "content": "x"} for i in range(2000)]
    await store.save("t", "a", messages, {}, [])
    first, second = await store.load("t"), await store.load("t")
    assert any(len(part) >= 2000 for part in first.ids.frozen)
    assert all(any(p is q for q in second.ids.frozen) for p in first.ids.frozen)
    assert len(first.ids.own) <= COMPACT_AT
    first.ids.add("run-1")
    await store.save("t", "a", [{"id": "n1", "role": "user", "content": "y"}], {}, [])
    third = await store.load("t")
    assert "run-1" not in second.ids and "run-1" not in third.ids
    assert "n1" in third.ids and "n1" not in first.ids and "n1" not in second.ids
    assert set(third.ids) == {f"m{i}" for i in range(2000)} | {"n1"}
    await store.close()


async def test_sqlite_is_durable_and_wal(tmp_path):
    path = tmp_path / "threads.sqlite"
    store = SqliteStore(str(path))
    await store.save("t", "a", [{"id": "u1", "role": "user", "content": "x"}], {}, [{"id": "i"}])
    await store.close()
    reopened = open_store(f"sqlite:///{path}")
    thread = await reopened.load("t")
    assert thread.interrupts == [{"id": "i"}] and thread.messages[0]["id"] == "u1"
    await reopened.close()
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_open_store_urls(tmp_path):
    assert isinstance(open_store("memory://"), MemoryStore)
    store = open_store(f"sqlite:///{tmp_path}/a/b.sqlite")
    assert isinstance(store, SqliteStore) and (tmp_path / "a" / "b.sqlite").exists()
    custom = object()
    assert open_store(custom) is custom
    with pytest.raises(ValueError):
        open_store("redis://x")


async def test_leases_expire_by_time_and_fence(make_store):
    store = make_store()
    first = await store.claim("t", 0.3)
    assert first is not None and not first.taken_over
    assert await store.claim("t", 0.3) is None  # held
    for _ in range(2):  # renewed past its ttl, it stays held
        await asyncio.sleep(0.2)
        assert await store.renew(first, 0.3)
    await asyncio.sleep(0.1)
    assert await store.claim("t", 0.3) is None
    await asyncio.sleep(0.35)  # no renewal: it expired
    second = await store.claim("t", 5)
    assert second is not None and second.fence > first.fence
    assert second.taken_over  # what the node that took it counts (the other may be dead)
    assert await store.renew(second, 5)
    assert not await store.renew(first, 5)  # taken over
    await store.release(first)  # a stale lease releases nothing
    assert await store.claim("t", 5) is None
    await store.release(second)
    third = await store.claim("t", 5)
    assert third is not None and third.fence > second.fence
    assert not third.taken_over  # the lease before it was released
    assert await store.claim("other", 5) is not None  # per thread
    await store.close()


async def test_a_save_under_a_lease_taken_over_is_refused(make_store):
    """Fencing: a run whose lease expired and was claimed by another run saves
    nothing (LeaseLost, the whole save refused); the new holder saves."""
    store = make_store()
    m = [{"id": f"m{i}", "role": "user", "content": str(i)} for i in range(4)]
    first = await store.claim("t", 0.2)
    await store.save("t", "a", [m[0]], {"k": 0}, [], lease=first)
    await store.save("t", "a", [m[1]], {"k": 1}, [{"id": "i1"}], lease=first)
    await asyncio.sleep(0.3)  # not renewed: expired
    second = await store.claim("t", 5)
    assert second is not None
    with pytest.raises(LeaseLost, match="lease"):
        await store.save("t", "a", [m[2]], {"k": 2}, [], lease=first)
    thread = await store.load("t")
    assert [x["id"] for x in thread.messages] == ["m0", "m1"]
    assert thread.state == {"k": 1} and thread.interrupts == [{"id": "i1"}]
    await store.save("t", "a", [m[3]], {"k": 3}, [], lease=second)
    assert [x["id"] for x in (await store.load("t")).messages] == ["m0", "m1", "m3"]
    # A lease of another thread, or none held at all, fences nothing through.
    with pytest.raises(LeaseLost):
        await store.save("other", "a", [m[0]], {}, [], lease=second)
    assert await store.load("other") is None
    await store.close()


_HOLDER = """
import asyncio, sys
from agui_bridge.store import SqliteStore

async def main():
    store = SqliteStore(sys.argv[1])
    lease = await store.claim("t", float(sys.argv[2]))
    print("claimed" if lease else "refused", flush=True)
    await asyncio.sleep(60)  # alive, never renewing: hung, or on another machine

asyncio.run(main())
"""


async def test_sqlite_lease_of_a_live_process_expires(tmp_path):
    """A lease does not name a process: a holder that is alive but stopped
    renewing (hung, partitioned, or a PID that now belongs to something
    else) blocks its thread for one ttl, not for its lifetime."""
    path = str(tmp_path / "threads.sqlite")
    store = SqliteStore(path)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, path, "1.0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert holder.stdout.readline().strip() == "claimed"
        assert await store.claim("t", 5) is None
        deadline = time.monotonic() + 5
        lease = None
        while lease is None and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            lease = await store.claim("t", 5)
        assert lease is not None
        assert holder.poll() is None  # taken over while its holder lives
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()  # its pipe, or a ResourceWarning (an error here)
        await store.close()


async def test_sqlite_calls_leave_the_loop_free(tmp_path):
    """A claim or a save waiting on another process's write lock (busy_timeout)
    waits in a thread: the event loop keeps serving meanwhile."""
    path = str(tmp_path / "threads.sqlite")
    store = SqliteStore(path)
    await store.save("t", "a", [{"id": "u1", "role": "user", "content": "x"}], {}, [])
    loop = asyncio.get_running_loop()
    gaps: list[float] = []

    async def ticker():
        last = loop.time()
        while True:
            await asyncio.sleep(0.01)
            now = loop.time()
            gaps.append(now - last)
            last = now

    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    ticking = asyncio.ensure_future(ticker())
    try:
        for name, call in (
            ("claim", lambda: store.claim("t", 5)),
            ("save", lambda: store.save("t", "a", [], {"k": 1}, [])),
            ("load", lambda: store.load("t")),  # WAL: a load does not wait for the writer
        ):
            other.execute("BEGIN IMMEDIATE")  # another worker's write in progress
            timer = threading.Timer(0.6, other.execute, ("COMMIT",))
            timer.start()
            started = loop.time()
            await asyncio.wait_for(call(), 10)
            waited = loop.time() - started
            timer.join()
            assert name == "load" or waited >= 0.5, (name, waited)  # it did wait on the lock
        assert gaps and max(gaps) < 0.25, max(gaps)
    finally:
        ticking.cancel()
        other.close()
        await store.close()
    reopened = SqliteStore(path)
    assert (await reopened.load("t")).state == {"k": 1}
    await reopened.close()


F = {"function": {"name": "f", "arguments": "{}"}}


async def test_sqlite_saves_append_and_loads_read_only_what_is_new(tmp_path, monkeypatch):
    """A run's cost does not grow with its thread: a save writes only its new
    rows, and a load decodes only the messages stored since this process last
    loaded the thread."""
    from agui_bridge.store import sqlite as module

    store = SqliteStore(str(tmp_path / "threads.sqlite"))
    old = [{"id": f"m{i}", "role": "user", "content": f"m{i}"} for i in range(2000)]
    await store.save("t", "a", old, {"k": 1}, [])
    assert len((await store.load("t")).messages) == 2000

    decoded = []
    real = module.orjson.loads
    monkeypatch.setattr(module.orjson, "loads", lambda raw: decoded.append(raw) or real(raw))
    before = store._write.total_changes
    new = [
        {"id": "n1", "role": "user", "content": "x"},
        {"id": "n2", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function", **F}]},
    ]
    await store.save("t", "a", [old[5], *new], {"k": 2}, [])
    assert store._write.total_changes - before == 3  # the thread's row and two messages
    thread = await store.load("t")
    assert len(decoded) == 2 + 2  # the two new messages, the state and the interrupts
    assert [m["id"] for m in thread.messages[-3:]] == ["m1999", "n1", "n2"]
    assert len(thread.messages) == 2002 and thread.state == {"k": 2}
    assert {"m0", "n2"} <= set(thread.ids) and set(thread.call_ids) == {"c1"}
    thread.messages.clear()
    thread.ids.add("mine")  # a loaded thread's list and sets are its own
    again = await store.load("t")
    assert len(again.messages) == 2002 and "m0" in again.ids and "mine" not in again.ids
    await store.close()
    reopened = SqliteStore(str(tmp_path / "threads.sqlite"))  # another process: reads it all
    assert len((await reopened.load("t")).messages) == 2002
    await reopened.close()


async def test_memory_store_loads_copy_no_message(monkeypatch):
    """memory:// keeps the same contract: a load copies the thread's list, not
    each of its messages (which a run must not change)."""
    from agui_bridge.store import memory as module

    store = MemoryStore()
    await store.save(
        "t", "a", [{"id": f"m{i}", "role": "user", "content": "x"} for i in range(500)], {}, []
    )
    copied = []
    real = module.copy.deepcopy
    monkeypatch.setattr(module.copy, "deepcopy", lambda value: copied.append(value) or real(value))
    first = await store.load("t")
    second = await store.load("t")
    assert len(first.messages) == 500 and first.messages is not second.messages
    assert first.messages[0] is second.messages[0]
    assert len(copied) <= 4  # the states and interrupts of the two loads
    await store.save("t", "a", [{"id": "n", "role": "user", "content": "y"}], {}, [])
    assert len(copied) <= 4 + 3 and len((await store.load("t")).messages) == 501


async def test_a_run_whose_lease_was_taken_over_ends_in_run_error(make_store):
    """The run's node stalls past its lease; another node claims the thread.
    When the run ends its save is refused: readers get RUN_ERROR code
    ``lease_lost`` (the open text closed), never RUN_FINISHED, and the thread
    keeps the user's turn, stored when the run started, and nothing else."""
    import httpx
    from agui_bridge import crumbs as c
    from agui_bridge.app import App

    from tests.ingress_apps import parse_sse, run_body

    store = make_store()
    app = App(store=store, lease_ttl=0.3)
    go = asyncio.Event()

    @app.agent("echo")
    async def echo(ctx):
        yield c.text_delta("half ")
        await go.wait()
        yield c.text_delta("done")

    async def take_over():
        while "t" not in app.gate.leases:
            await asyncio.sleep(0.01)
        app.gate.leases["t"][1].cancel()  # the node stops renewing (paused, partitioned)
        await asyncio.sleep(0.35)
        taken = await store.claim("t", 30)  # another node
        go.set()
        return taken

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
        taker = asyncio.ensure_future(take_over())
        response = await http.post("/ag-ui/run", json=run_body("t", "hello"))
        taken = await taker
    assert taken is not None
    events, _ = parse_sse(response.text)
    assert [e["type"] for e in events[-2:]] == ["TEXT_MESSAGE_END", "RUN_ERROR"], events
    assert events[-1]["code"] == "lease_lost" and "taken over" in events[-1]["message"]
    thread = await store.load("t")
    assert [m["role"] for m in thread.messages] == ["user"]
    await store.release(taken)
    await app.aclose()
