"""The SQLite thread store (``sqlite:///PATH``), the default.

WAL mode; a save commits with ``synchronous=FULL`` in a worker thread, so a
saved turn survives a crash or a restart and the event loop never waits on
fsync. Loads run inline on a separate read connection (WAL readers never
wait for the writer). Several granian workers may share one file: writes
serialize on SQLite's lock (``busy_timeout``).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time

import orjson

_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY,
    agent_id TEXT,
    state BLOB NOT NULL,
    interrupts BLOB NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (thread_id, message_id)
);
CREATE INDEX IF NOT EXISTS messages_by_seq ON messages (thread_id, seq);
CREATE TABLE IF NOT EXISTS active_runs (
    thread_id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at REAL NOT NULL
);
"""


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0)
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


class SqliteStore:
    def __init__(self, path: str):
        if path != ":memory:":
            directory = os.path.dirname(os.path.abspath(path))
            os.makedirs(directory, exist_ok=True)
        self.path = path
        self._write = _connect(path)
        self._write.execute("PRAGMA journal_mode = WAL")
        self._write.execute("PRAGMA synchronous = FULL")
        self._write.executescript(_SCHEMA)
        self._read = _connect(path)
        # Leases of active runs, so one thread has one run across granian
        # workers: small autocommit writes from the event loop, no fsync (WAL +
        # NORMAL); a lease whose process is gone is taken over.
        self._lease = _connect(path)
        self._lease.execute("PRAGMA synchronous = NORMAL")
        # Checkpoints (which fsync) run on the write connection, in its thread.
        self._lease.execute("PRAGMA wal_autocheckpoint = 0")
        self._lock = threading.Lock()

    async def load(self, thread_id: str):
        from . import Thread

        read = self._read
        row = read.execute(
            "SELECT agent_id, state, interrupts FROM threads WHERE thread_id = ?", (thread_id,)
        ).fetchone()
        if row is None:
            return None
        messages = [
            orjson.loads(body)
            for (body,) in read.execute(
                "SELECT body FROM messages WHERE thread_id = ? ORDER BY seq", (thread_id,)
            )
        ]
        return Thread(
            thread_id=thread_id,
            agent_id=row[0],
            messages=messages,
            state=orjson.loads(row[1]),
            interrupts=orjson.loads(row[2]),
        )

    def _save(self, thread_id, agent_id, new_messages, state, interrupts) -> None:
        with self._lock:
            conn = self._write
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "INSERT INTO threads (thread_id, agent_id, state, interrupts, updated_at)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET"
                    " agent_id = coalesce(threads.agent_id, excluded.agent_id),"
                    " state = excluded.state, interrupts = excluded.interrupts,"
                    " updated_at = excluded.updated_at",
                    (
                        thread_id,
                        agent_id,
                        orjson.dumps(state),
                        orjson.dumps(interrupts),
                        time.time(),
                    ),
                )
                (seq,) = conn.execute(
                    "SELECT coalesce(max(seq), 0) FROM messages WHERE thread_id = ?",
                    (thread_id,),
                ).fetchone()
                for message in new_messages:
                    seq += 1
                    conn.execute(
                        "INSERT OR IGNORE INTO messages (thread_id, seq, message_id, body)"
                        " VALUES (?, ?, ?, ?)",
                        (thread_id, seq, message["id"], orjson.dumps(message)),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    async def save(self, thread_id, agent_id, new_messages, state, interrupts) -> None:
        await asyncio.to_thread(
            self._save, thread_id, agent_id, list(new_messages), state, interrupts
        )

    def claim(self, thread_id: str, token: str) -> bool:
        """Takes the thread's run lease; False while a live process holds it."""
        conn = self._lease
        me = os.getpid()
        for _ in range(3):
            cursor = conn.execute(
                "INSERT INTO active_runs (thread_id, token, pid, started_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (thread_id) DO NOTHING",
                (thread_id, token, me, time.time()),
            )
            if cursor.rowcount == 1:
                return True
            row = conn.execute(
                "SELECT token, pid FROM active_runs WHERE thread_id = ?", (thread_id,)
            ).fetchone()
            if row is None:
                continue  # released meanwhile
            held_by, pid = row
            # This process's own leases are tracked in memory by the App, so a
            # row of ours here is stale (its release failed).
            if pid != me and _alive(pid):
                return False
            cursor = conn.execute(
                "UPDATE active_runs SET token = ?, pid = ?, started_at = ?"
                " WHERE thread_id = ? AND token = ?",
                (token, me, time.time(), thread_id, held_by),
            )
            if cursor.rowcount == 1:
                return True
        return False

    def release(self, thread_id: str, token: str) -> None:
        self._lease.execute(
            "DELETE FROM active_runs WHERE thread_id = ? AND token = ?", (thread_id, token)
        )

    async def close(self) -> None:
        with self._lock:
            self._write.close()
        self._read.close()
        self._lease.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
