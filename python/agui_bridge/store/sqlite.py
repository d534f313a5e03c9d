"""The SQLite thread store (``sqlite:///PATH``), the default.

WAL mode. No call runs on the event loop: writes (saves and leases) go to
one thread per store, in order, so a write that waits on SQLite's lock
(another granian worker's commit, ``busy_timeout``) stalls nothing but
other writes, which would wait on the same lock anyway; loads go to a
small pool of reader threads, each with its own connection (WAL readers
never wait for the writer). A save commits with ``synchronous=FULL``, so a
saved turn survives a crash or a restart. Several granian workers may share
one file. A save appends (it reads nothing but the thread's last ``seq``); a
load reads the messages stored since this process last loaded the thread
(``tail.py``).
"""

from __future__ import annotations

import asyncio
import functools
import os
import sqlite3
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import orjson

from . import blobs as blob_rows
from .branches import Branch, Cut
from .keep import (
    check_messages,
    check_metadata,
    check_thread,
    metadata_holds,
    status_of,
    storable_id,
)
from .lease import TAKEN, Lease, claimed, lease_lost
from .tail import TailCache

_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY,
    agent_id TEXT,
    state BLOB NOT NULL,
    interrupts BLOB NOT NULL,
    updated_at REAL NOT NULL,
    metadata BLOB NOT NULL DEFAULT '{}',
    created_at REAL
);
CREATE TABLE IF NOT EXISTS messages (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (thread_id, message_id)
);
CREATE INDEX IF NOT EXISTS messages_by_seq ON messages (thread_id, seq);
CREATE TABLE IF NOT EXISTS blobs (
    hash TEXT PRIMARY KEY,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS blob_refs (
    hash TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    PRIMARY KEY (hash, thread_id)
);
CREATE INDEX IF NOT EXISTS blob_refs_by_thread ON blob_refs (thread_id);
CREATE TABLE IF NOT EXISTS branches (
    thread_id TEXT NOT NULL,
    number INTEGER NOT NULL,
    after_id TEXT,
    run_id TEXT,
    created_at REAL NOT NULL,
    count INTEGER NOT NULL,
    state BLOB NOT NULL,
    messages BLOB NOT NULL,
    PRIMARY KEY (thread_id, number)
);
CREATE TABLE IF NOT EXISTS run_heads (
    thread_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    PRIMARY KEY (thread_id, run_id)
);
CREATE TABLE IF NOT EXISTS leases (
    thread_id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    fence INTEGER NOT NULL,
    expires_at REAL NOT NULL
);
"""

READERS = 4

# Columns added after the first release: a file made before them gains them.
_ADDED = (
    ("metadata", "BLOB NOT NULL DEFAULT '{}'"),
    ("created_at", "REAL"),
    ("owner", "TEXT"),
    ("status", "TEXT NOT NULL DEFAULT 'idle'"),
    ("cuts", "INTEGER NOT NULL DEFAULT 0"),  # branches.py: part of a cached tail's epoch
)
# What a search filters and orders by, newest update first (made once the
# columns above exist).
_INDEXES = """
CREATE INDEX IF NOT EXISTS threads_by_update ON threads (updated_at);
CREATE INDEX IF NOT EXISTS threads_by_owner ON threads (owner, updated_at);
CREATE INDEX IF NOT EXISTS threads_by_status ON threads (status, updated_at);
CREATE INDEX IF NOT EXISTS threads_by_owner_status ON threads (owner, status, updated_at);
"""


@functools.lru_cache(maxsize=256)
def _wanted(wanted: str) -> dict:
    return orjson.loads(wanted)


def _holds(raw, wanted: str) -> bool:
    """SQL ``agui_holds(metadata, filter)``: each key of the filter has an equal value
    (the metadata filter of a search, run by SQLite on the rows its indexes chose)."""
    try:
        held = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return isinstance(held, dict) and metadata_holds(held, _wanted(wanted))


def _decoded(message_id: str, body):
    """A stored message; for a row that is not JSON, its id alone (``Tail`` holds
    the id and leaves the row out of the thread)."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return {"id": message_id}


def _drop_refs(conn: sqlite3.Connection, threads: list[str]) -> None:
    """The threads' blob references, and the blobs no other thread refers to."""
    if not threads:
        return
    ids = orjson.dumps(threads).decode()
    hashes = [
        row[0]
        for row in conn.execute(
            "DELETE FROM blob_refs WHERE thread_id IN (SELECT value FROM json_each(?))"
            " RETURNING hash",
            (ids,),
        ).fetchall()
    ]
    if hashes:
        conn.execute(
            "DELETE FROM blobs WHERE hash IN (SELECT value FROM json_each(?)) AND NOT EXISTS"
            " (SELECT 1 FROM blob_refs r WHERE r.hash = blobs.hash)",
            (orjson.dumps(hashes).decode(),),
        )


# Seconds a statement waits for another connection's (another worker's) lock.
BUSY_TIMEOUT = 30.0


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT
    )
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")
    return conn


# Each granian worker opens the store on its first request, so on a new file
# several set it up at once: the set-up must wait for the others, never fail.


def _use_wal(conn: sqlite3.Connection) -> None:
    """WAL mode. Switching to it fails at once with ``database is locked`` while
    another connection writes (SQLite calls no busy handler for it), so it is
    retried for as long as any other statement would wait (busy_timeout)."""
    deadline = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(0.01)


def _set_up(conn: sqlite3.Connection) -> None:
    """The tables, the added columns and the indexes, in one transaction under
    the write lock: a worker adds only the columns that no other has added."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        _run_script(conn, _SCHEMA)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(threads)")}
        for name, kind in _ADDED:
            if name not in columns:
                conn.execute(f"ALTER TABLE threads ADD COLUMN {name} {kind}")
        if "status" not in columns:
            # Threads saved before the column: their interrupts say it.
            conn.execute(
                "UPDATE threads SET status = 'interrupted' WHERE CAST(interrupts AS TEXT) <> '[]'"
            )
        _run_script(conn, _INDEXES)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    """``script``'s statements inside the open transaction (``executescript``
    would commit it first). The scripts above hold no ``;`` but their ends."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


class SqliteStore:
    def __init__(self, path: str):
        if path != ":memory:":
            directory = os.path.dirname(os.path.abspath(path))
            os.makedirs(directory, exist_ok=True)
        self.path = path
        self._write = _connect(path)
        _use_wal(self._write)
        self._write.execute("PRAGMA synchronous = FULL")
        _set_up(self._write)
        # Leases need no fsync (a lease lost to a power cut only frees its
        # thread early); checkpoints, which fsync, stay on the write connection.
        self._lease = _connect(path)
        self._lease.execute("PRAGMA synchronous = NORMAL")
        self._lease.execute("PRAGMA wal_autocheckpoint = 0")
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="agui-sqlite-write")
        self._readers = ThreadPoolExecutor(READERS, thread_name_prefix="agui-sqlite-read")
        # Searches and the loads of their pages take their own thread: however
        # many there are, a run's load never queues behind them.
        self._listing = ThreadPoolExecutor(1, thread_name_prefix="agui-sqlite-search")
        self._local = threading.local()
        self._read_conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._tails = TailCache()
        self._blobs = blob_rows.BlobCache()

    def _on_writer(self, fn, *args):
        return asyncio.get_running_loop().run_in_executor(self._writer, fn, *args)

    # -- threads ---------------------------------------------------------------

    def _reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = _connect(self.path)
            conn.create_function("agui_holds", 2, _holds, deterministic=True)
            with self._conns_lock:
                self._read_conns.append(conn)
        return conn

    def _load(self, thread_id: str):
        from . import Thread

        read = self._reader()
        base = self._tails.get(thread_id)
        read.execute("BEGIN")  # one snapshot for both queries
        try:
            row = read.execute(
                "SELECT agent_id, state, interrupts, metadata, created_at, updated_at, owner,"
                " status, cuts FROM threads WHERE thread_id = ?",
                (thread_id,),
            ).fetchone()
            if row is None:
                return None
            epoch = (row[4], row[8])
            if base is not None and base.epoch != epoch:
                base = None  # the thread was made again, or cut (branches.py), since
            after = base.seq if base is not None else 0
            rows = read.execute(
                "SELECT seq, message_id, body FROM messages WHERE thread_id = ? AND seq > ?"
                " ORDER BY seq",
                (thread_id, after),
            ).fetchall()
        finally:
            read.execute("COMMIT")
        messages = self._whole(read, [_decoded(message_id, body) for _, message_id, body in rows])
        tail = self._tails.advance(thread_id, base, messages, rows[-1][0] if rows else after, epoch)
        return Thread(
            thread_id=thread_id,
            agent_id=row[0],
            messages=list(tail.messages),
            state=orjson.loads(row[1]),
            interrupts=orjson.loads(row[2]),
            ids=tail.ids.fork(),
            call_ids=tail.call_ids.fork(),
            # Most threads (all of AG-UI's) have none: no decode on a run's load.
            metadata=orjson.loads(row[3]) if row[3] not in ("{}", b"{}") else {},
            created_at=row[4],
            updated_at=row[5],
            owner=row[6],
            status=row[7],
        )

    def _whole(self, read: sqlite3.Connection, messages: list) -> list:
        """Rows as the messages sent: their inline data back from the blob table
        (``blobs.py``), what this process has not cached read once."""
        present, missing = self._blobs.held(messages)
        if not present and not missing:
            return messages
        fetched = {}
        for start in range(0, len(missing), 500):
            chunk = missing[start : start + 500]
            fetched.update(
                read.execute(
                    f"SELECT hash, data FROM blobs WHERE hash IN ({','.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
            )
        return self._blobs.join_all(messages, present, fetched)

    async def load(self, thread_id: str):
        if not storable_id(thread_id):
            return None
        return await asyncio.get_running_loop().run_in_executor(
            self._readers, self._load, thread_id
        )

    async def load_listed(self, thread_id: str):
        """``load`` for a search's page, on the searches' own thread."""
        if not storable_id(thread_id):
            return None
        return await asyncio.get_running_loop().run_in_executor(
            self._listing, self._load, thread_id
        )

    def _save(
        self, thread_id, agent_id, new_messages, state, interrupts, lease, owner, status, cut,
        run_id,
    ) -> None:  # fmt: skip
        conn = self._write
        conn.execute("BEGIN IMMEDIATE")
        try:
            if lease is not None:
                # Under the write lock: no claim can move the fence until COMMIT.
                row = conn.execute(
                    "SELECT fence FROM leases WHERE thread_id = ?", (thread_id,)
                ).fetchone()
                if lease.thread_id != thread_id or row is None or row[0] != lease.fence:
                    raise lease_lost(thread_id, lease)
            now = time.time()
            if cut is not None:
                self._cut(conn, thread_id, cut, now)
            conn.execute(
                "INSERT INTO threads (thread_id, agent_id, state, interrupts, updated_at,"
                " created_at, owner, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (thread_id) DO UPDATE SET"
                " agent_id = coalesce(threads.agent_id, excluded.agent_id),"
                " state = excluded.state, interrupts = excluded.interrupts,"
                " updated_at = excluded.updated_at, status = excluded.status",
                (
                    thread_id,
                    agent_id,
                    orjson.dumps(state),
                    orjson.dumps(interrupts),
                    now,
                    now,
                    owner,
                    status,
                ),
            )
            (seq,) = conn.execute(
                "SELECT coalesce(max(seq), 0) FROM messages WHERE thread_id = ?",
                (thread_id,),
            ).fetchone()
            rows, blobs = blob_rows.split_all(new_messages)
            for digest, raw in blobs.items():
                conn.execute("INSERT OR IGNORE INTO blobs VALUES (?, ?)", (digest, raw))
                conn.execute(
                    "INSERT OR IGNORE INTO blob_refs (hash, thread_id) VALUES (?, ?)",
                    (digest, thread_id),
                )
            for message in rows:
                seq += 1
                conn.execute(
                    "INSERT OR IGNORE INTO messages (thread_id, seq, message_id, body)"
                    " VALUES (?, ?, ?, ?)",
                    (thread_id, seq, message["id"], orjson.dumps(message)),
                )
            if run_id is not None:
                # The run's head: where a later parentRunId naming it branches (branches.py).
                conn.execute(
                    "INSERT INTO run_heads (thread_id, run_id, message_id) SELECT ?, ?,"
                    " message_id FROM messages WHERE thread_id = ? ORDER BY seq DESC LIMIT 1"
                    " ON CONFLICT (thread_id, run_id)"
                    " DO UPDATE SET message_id = excluded.message_id",
                    (thread_id, run_id, thread_id),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _cut(conn, thread_id: str, cut: Cut, now: float) -> None:
        """Keeps the current branch as a branch, then cuts it after ``cut.after``
        (in the save's transaction: ``branches.py``)."""
        rows = conn.execute(
            "SELECT seq, message_id, body FROM messages WHERE thread_id = ? ORDER BY seq",
            (thread_id,),
        ).fetchall()
        if cut.after is None:
            keep = 0
        else:
            keep = next((seq for seq, mid, _ in reversed(rows) if mid == cut.after), None)
            if keep is None:
                return  # no such message: nothing to keep aside
        if not rows or rows[-1][0] <= keep:
            return  # nothing follows
        (state,) = conn.execute(
            "SELECT state FROM threads WHERE thread_id = ?", (thread_id,)
        ).fetchone()
        bodies = [bytes(body) if not isinstance(body, str) else body.encode() for *_, body in rows]
        conn.execute(
            "INSERT INTO branches (thread_id, number, after_id, run_id, created_at, count,"
            " state, messages) SELECT ?, coalesce(max(number), 0) + 1, ?, ?, ?, ?, ?, ?"
            " FROM branches WHERE thread_id = ?",
            (thread_id, cut.after, cut.run_id, now, len(rows), state,
             b"[" + b",".join(bodies) + b"]", thread_id),
        )  # fmt: skip
        conn.execute("DELETE FROM messages WHERE thread_id = ? AND seq > ?", (thread_id, keep))
        conn.execute("UPDATE threads SET cuts = cuts + 1 WHERE thread_id = ?", (thread_id,))

    async def save(
        self,
        thread_id,
        agent_id,
        new_messages,
        state,
        interrupts,
        lease=None,
        owner=None,
        errored=False,
        cut: Cut | None = None,
        run_id: str | None = None,
    ) -> None:
        check_thread(thread_id)
        check_messages(new_messages)
        status = status_of(interrupts, errored)
        await self._on_writer(
            self._save, thread_id, agent_id, list(new_messages), state, interrupts, lease, owner,
            status, cut, run_id,
        )  # fmt: skip

    def _head(self, thread_id: str, run_id: str) -> str | None:
        row = (
            self._reader()
            .execute(
                "SELECT message_id FROM run_heads WHERE thread_id = ? AND run_id = ?",
                (thread_id, run_id),
            )
            .fetchone()
        )
        return None if row is None else row[0]

    async def head(self, thread_id: str, run_id: str) -> str | None:
        if not storable_id(thread_id):
            return None
        return await asyncio.get_running_loop().run_in_executor(
            self._readers, self._head, thread_id, run_id
        )

    # -- branches (branches.py) ------------------------------------------------

    def _branches(self, thread_id: str):
        read = self._reader()
        read.execute("BEGIN")
        try:
            if read.execute("SELECT 1 FROM threads WHERE thread_id = ?", (thread_id,)).fetchone():
                rows = read.execute(
                    "SELECT number, after_id, run_id, created_at, count FROM branches"
                    " WHERE thread_id = ? ORDER BY number",
                    (thread_id,),
                ).fetchall()
                return [Branch(*row) for row in rows]
            return None
        finally:
            read.execute("COMMIT")

    async def branches(self, thread_id: str) -> list[Branch] | None:
        if not storable_id(thread_id):
            return None
        return await asyncio.get_running_loop().run_in_executor(
            self._listing, self._branches, thread_id
        )

    def _branch(self, thread_id: str, number: int) -> Branch | None:
        read = self._reader()
        row = read.execute(
            "SELECT number, after_id, run_id, created_at, count, messages, state"
            " FROM branches WHERE thread_id = ? AND number = ?",
            (thread_id, number),
        ).fetchone()
        if row is None:
            return None
        # Its rows as stored: inline data back from the blob table (the thread's own).
        messages = self._whole(read, orjson.loads(row[5]))
        return Branch(*row[:5], messages=messages, state=orjson.loads(row[6]))

    async def branch(self, thread_id: str, number: int) -> Branch | None:
        if not storable_id(thread_id):
            return None
        return await asyncio.get_running_loop().run_in_executor(
            self._listing, self._branch, thread_id, number
        )

    # -- the Agent Protocol's thread routes ------------------------------------

    def _create(self, thread_id: str, metadata: dict, owner) -> bool:
        now = time.time()
        cursor = self._write.execute(
            "INSERT INTO threads (thread_id, agent_id, state, interrupts, updated_at, metadata,"
            " created_at, owner) VALUES (?, NULL, '{}', '[]', ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (thread_id, now, orjson.dumps(metadata), now, owner),
        )
        return cursor.rowcount == 1

    async def create(self, thread_id: str, metadata: dict, owner=None) -> bool:
        check_thread(thread_id)
        check_metadata(metadata)
        return await self._on_writer(self._create, thread_id, metadata, owner)

    def _update_metadata(self, thread_id: str, metadata: dict) -> bool:
        conn = self._write
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(
                "SELECT metadata FROM threads WHERE thread_id = ?", (thread_id,)
            ).fetchone()
            if row is not None:
                merged = {**orjson.loads(row[0]), **metadata}
                conn.execute(
                    "UPDATE threads SET metadata = ?, updated_at = ? WHERE thread_id = ?",
                    (orjson.dumps(merged), time.time(), thread_id),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return row is not None

    async def update_metadata(self, thread_id: str, metadata: dict) -> bool:
        check_metadata(metadata)
        if not storable_id(thread_id):
            return False
        return await self._on_writer(self._update_metadata, thread_id, metadata)

    def _delete(self, thread_id: str) -> bool:
        conn = self._write
        conn.execute("BEGIN IMMEDIATE")
        try:
            gone = conn.execute("DELETE FROM threads WHERE thread_id = ?", (thread_id,)).rowcount
            conn.execute("DELETE FROM messages WHERE thread_id = ?", (thread_id,))
            _drop_refs(conn, [thread_id])
            conn.execute("DELETE FROM branches WHERE thread_id = ?", (thread_id,))
            conn.execute("DELETE FROM run_heads WHERE thread_id = ?", (thread_id,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return gone == 1

    async def delete(self, thread_id: str) -> bool:
        if not storable_id(thread_id):
            return False
        return await self._on_writer(self._delete, thread_id)

    def _search(self, metadata, ids, limit, offset, owner, status) -> list:
        from . import Listed

        now = time.time()
        where, args = [], [now]
        if owner is not None:
            where.append("t.owner = ?")
            args.append(owner)
        if ids is not None:
            where.append("t.thread_id IN (SELECT value FROM json_each(?))")
            args.append(orjson.dumps(list(ids)).decode())
        if metadata:
            where.append("agui_holds(t.metadata, ?)")
            args.append(orjson.dumps(metadata).decode())
        if status == "busy":
            where.append("l.expires_at > ?")
            args.append(now)
        elif status is not None:
            where.append("t.status = ? AND (l.expires_at IS NULL OR l.expires_at <= ?)")
            args += [status, now]
        rows = (
            self._reader()
            .execute(
                "SELECT t.thread_id, t.agent_id,"
                " CASE WHEN l.expires_at > ? THEN 'busy' ELSE t.status END"
                " FROM threads t LEFT JOIN leases l ON l.thread_id = t.thread_id"
                f" {'WHERE ' + ' AND '.join(where) if where else ''}"
                " ORDER BY t.updated_at DESC LIMIT ? OFFSET ?",
                (*args, limit, offset),
            )
            .fetchall()
        )
        return [Listed(*row) for row in rows]

    async def search(
        self, metadata: dict, ids, limit: int, offset: int = 0, owner=None, status=None
    ) -> list:
        check_metadata(metadata)
        return await asyncio.get_running_loop().run_in_executor(
            self._listing, self._search, metadata, ids, limit, offset, owner, status
        )

    def _sweep(self, idle_before: float, batch: int) -> list[str]:
        conn = self._write
        conn.execute("BEGIN IMMEDIATE")
        try:
            gone = [
                row[0]
                for row in conn.execute(
                    "DELETE FROM threads WHERE thread_id IN (SELECT t.thread_id FROM threads t"
                    " WHERE t.updated_at < ? AND NOT EXISTS (SELECT 1 FROM leases l"
                    " WHERE l.thread_id = t.thread_id AND l.expires_at > ?) LIMIT ?)"
                    " RETURNING thread_id",
                    (idle_before, time.time(), batch),
                ).fetchall()
            ]
            for table in ("messages", "branches", "run_heads"):
                conn.execute(
                    f"DELETE FROM {table} WHERE thread_id IN (SELECT value FROM json_each(?))",
                    (orjson.dumps(gone).decode(),),
                )
            _drop_refs(conn, gone)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return gone

    async def sweep(self, idle_before: float, batch: int) -> list[str]:
        return await self._on_writer(self._sweep, idle_before, batch)

    # -- leases (see lease.py) -------------------------------------------------

    def _claim(self, thread_id: str, ttl: float) -> Lease | None:
        token = uuid.uuid4().hex
        now = time.time()
        row = self._lease.execute(
            "INSERT INTO leases (thread_id, token, fence, expires_at) VALUES (?, ?, 1, ?)"
            " ON CONFLICT (thread_id) DO UPDATE SET"
            " token = CASE WHEN leases.token = '' THEN excluded.token ELSE ? || excluded.token END,"
            " fence = leases.fence + 1, expires_at = excluded.expires_at"
            " WHERE leases.expires_at <= ? RETURNING token, fence",
            (thread_id, token, now + ttl, TAKEN, now),
        ).fetchone()
        return None if row is None else claimed(thread_id, row[0], row[1])

    async def claim(self, thread_id: str, ttl: float) -> Lease | None:
        check_thread(thread_id)
        return await self._on_writer(self._claim, thread_id, ttl)

    def _renew(self, lease: Lease, ttl: float) -> bool:
        cursor = self._lease.execute(
            "UPDATE leases SET expires_at = ? WHERE thread_id = ? AND token = ?",
            (time.time() + ttl, lease.thread_id, lease.token),
        )
        return cursor.rowcount == 1

    async def renew(self, lease: Lease, ttl: float) -> bool:
        return await self._on_writer(self._renew, lease, ttl)

    def _release(self, lease: Lease) -> None:
        # The row stays (expired) so the thread's next fence is larger.
        self._lease.execute(
            "UPDATE leases SET token = '', expires_at = 0 WHERE thread_id = ? AND token = ?",
            (lease.thread_id, lease.token),
        )

    async def release(self, lease: Lease) -> None:
        await self._on_writer(self._release, lease)

    # -- lifecycle -------------------------------------------------------------

    def _close(self) -> None:
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        self._listing.shutdown(wait=True)
        self._write.close()
        self._lease.close()
        with self._conns_lock:
            for conn in self._read_conns:
                conn.close()
            self._read_conns.clear()

    async def close(self) -> None:
        await asyncio.to_thread(self._close)
