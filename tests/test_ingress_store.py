"""The thread stores: memory:// and sqlite:/// keep each message id once."""

from __future__ import annotations

import sqlite3

import pytest
from agui_bridge.store import MemoryStore, SqliteStore, open_store


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request, tmp_path):
    path = tmp_path / "sub" / "threads.sqlite"

    def make():
        return MemoryStore() if request.param == "memory" else SqliteStore(str(path))

    make.kind = request.param
    return make


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


def test_sqlite_run_lease(tmp_path):
    import os
    import subprocess
    import sys

    store = SqliteStore(str(tmp_path / "threads.sqlite"))
    assert store.claim("t", "a")
    store.release("t", "b")  # another run's token releases nothing
    # a lease of a live process blocks; one of this process is stale and taken over
    store._lease.execute("UPDATE active_runs SET pid = ? WHERE thread_id = 't'", (os.getppid(),))
    assert not store.claim("t", "c")
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    store._lease.execute(
        "UPDATE active_runs SET pid = ? WHERE thread_id = 't'", (int(done.stdout),)
    )
    assert store.claim("t", "d")  # its process is gone
    store.release("t", "d")
    assert store.claim("t", "e")
