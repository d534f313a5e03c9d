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
    assert first is not None
    assert await store.claim("t", 0.3) is None  # held
    for _ in range(2):  # renewed past its ttl, it stays held
        await asyncio.sleep(0.2)
        assert await store.renew(first, 0.3)
    await asyncio.sleep(0.1)
    assert await store.claim("t", 0.3) is None
    await asyncio.sleep(0.35)  # no renewal: it expired
    second = await store.claim("t", 5)
    assert second is not None and second.fence > first.fence
    assert not await store.renew(first, 5)  # taken over
    await store.release(first)  # a stale lease releases nothing
    assert await store.claim("t", 5) is None
    await store.release(second)
    third = await store.claim("t", 5)
    assert third is not None and third.fence > second.fence
    assert await store.claim("other", 5) is not None  # per thread
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
        {"id": "n2", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function"}]},
    ]
    await store.save("t", "a", [old[5], *new], {"k": 2}, [])
    assert store._write.total_changes - before == 3  # the thread's row and two messages
    thread = await store.load("t")
    assert len(decoded) == 2 + 2  # the two new messages, the state and the interrupts
    assert [m["id"] for m in thread.messages[-3:]] == ["m1999", "n1", "n2"]
    assert len(thread.messages) == 2002 and thread.state == {"k": 2}
    assert {"m0", "n2"} <= thread.ids and thread.call_ids == {"c1"}
    thread.messages.clear()
    thread.ids.clear()  # a loaded thread's list and sets are its own
    again = await store.load("t")
    assert len(again.messages) == 2002 and "m0" in again.ids
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
