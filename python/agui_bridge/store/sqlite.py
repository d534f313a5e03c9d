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

    async def close(self) -> None:
        with self._lock:
            self._write.close()
        self._read.close()
