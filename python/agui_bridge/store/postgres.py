"""The PostgreSQL thread store (``postgresql://user:pass@host:port/db``).

For gateways that run on several machines: every node reads and writes the
same threads and shares the run leases. The driver is asyncpg (the
``postgres`` extra): natively asyncio, so no call blocks the event loop and
none needs a thread, with its own connection pool.

Lease expiry is computed on the database's clock (``clock_timestamp()``), not
the nodes', so the nodes' clocks need not agree. The schema is created on
first use and its version recorded in ``agui_schema``; ``migrate`` brings a
database of any older version up to ``SCHEMA_VERSION``, one ``upgrade`` step
(N to N+1) at a time, under an advisory lock so nodes starting together
migrate once. Messages, state and interrupts are kept as ``json`` (the text
as written: key order survives, unlike ``jsonb``).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from ..errors import StoreUnavailable
from . import blobs as blob_rows
from .branches import Branch, Cut
from .keep import check_messages, check_metadata, check_thread, status_of, storable_id
from .lease import TAKEN, Lease, claimed, lease_lost
from .tail import TailCache

try:
    import asyncpg
except ImportError as error:  # pragma: no cover - the extra is installed in tests
    raise ImportError(
        "the postgresql store needs asyncpg: pip install 'agui-bridge[postgres]'"
    ) from error


async def _v1(conn) -> None:
    """The first schema: threads, their messages in order, run leases."""
    await conn.execute("""
    CREATE TABLE agui_threads (
        thread_id text PRIMARY KEY,
        agent_id text,
        state json NOT NULL,
        interrupts json NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
    );
    CREATE TABLE agui_messages (
        thread_id text NOT NULL,
        seq bigint NOT NULL,
        message_id text NOT NULL,
        body json NOT NULL,
        PRIMARY KEY (thread_id, message_id)
    );
    CREATE INDEX agui_messages_by_seq ON agui_messages (thread_id, seq);
    CREATE TABLE agui_leases (
        thread_id text PRIMARY KEY,
        token text NOT NULL,
        fence bigint NOT NULL,
        expires_at double precision NOT NULL
    );
    """)


async def _v2(conn) -> None:
    """The Agent Protocol's thread metadata and creation time."""
    await conn.execute("""
    ALTER TABLE agui_threads ADD COLUMN metadata json NOT NULL DEFAULT '{}';
    ALTER TABLE agui_threads ADD COLUMN created_at timestamptz NOT NULL
        DEFAULT clock_timestamp();
    """)


async def _v3(conn) -> None:
    """Searches answered from indexed columns: the owner, the status a thread's
    last save left (busy is a live lease), metadata as jsonb (a GIN index; LangGraph
    keeps it so too). Metadata holding NUL, which jsonb refuses (it failed every
    metadata-filtered search), loses its NULs first."""
    rows = await conn.fetch(
        "SELECT thread_id, metadata::text AS raw FROM agui_threads"
        " WHERE position('\\u0000' in metadata::text) > 0"
    )
    for row in rows:
        cleaned = _without_nul(orjson.loads(row["raw"]))
        await conn.execute(
            "UPDATE agui_threads SET metadata = $2::json WHERE thread_id = $1",
            row["thread_id"],
            _json(cleaned),
        )
    await conn.execute("""
    ALTER TABLE agui_threads ALTER COLUMN metadata DROP DEFAULT;
    ALTER TABLE agui_threads ALTER COLUMN metadata TYPE jsonb USING metadata::jsonb;
    ALTER TABLE agui_threads ALTER COLUMN metadata SET DEFAULT '{}';
    ALTER TABLE agui_threads ADD COLUMN owner text;
    ALTER TABLE agui_threads ADD COLUMN status text NOT NULL DEFAULT 'idle';
    UPDATE agui_threads SET status = 'interrupted' WHERE interrupts::text <> '[]';
    CREATE INDEX agui_threads_by_update ON agui_threads (updated_at);
    CREATE INDEX agui_threads_by_owner ON agui_threads (owner, updated_at);
    CREATE INDEX agui_threads_by_status ON agui_threads (status, updated_at);
    CREATE INDEX agui_threads_by_owner_status ON agui_threads (owner, status, updated_at);
    CREATE INDEX agui_threads_by_metadata ON agui_threads USING gin (metadata jsonb_path_ops);
    """)


async def _drop_refs(conn, threads: list[str]) -> None:
    """The threads' blob references, and the blobs no other thread refers to.

    A save that refers to a blob holds its row locked until it commits (its
    insert updates the row on conflict): the blobs are locked here first, and
    the check for other references is a statement of its own, whose snapshot
    then holds that save's reference. One statement checked against a
    snapshot taken before that save committed, and deleted a blob it refers to."""
    if not threads:
        return
    rows = await conn.fetch(
        "DELETE FROM agui_blob_refs WHERE thread_id = ANY($1::text[]) RETURNING hash", threads
    )
    hashes = sorted({row["hash"] for row in rows})
    if not hashes:
        return
    await conn.execute(
        "SELECT 1 FROM agui_blobs WHERE hash = ANY($1::text[]) ORDER BY hash FOR UPDATE", hashes
    )
    await conn.execute(
        "DELETE FROM agui_blobs b WHERE b.hash = ANY($1::text[])"
        " AND NOT EXISTS (SELECT 1 FROM agui_blob_refs r WHERE r.hash = b.hash)",
        hashes,
    )


def _without_nul(value):
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


async def _v4(conn) -> None:
    """Inline attachment data out of the message rows (``blobs.py``): one row per
    distinct blob, by its SHA-256, and the threads referring to each."""
    await conn.execute("""
    CREATE TABLE agui_blobs (
        hash text PRIMARY KEY,
        data bytea NOT NULL
    );
    CREATE TABLE agui_blob_refs (
        hash text NOT NULL,
        thread_id text NOT NULL,
        PRIMARY KEY (hash, thread_id)
    );
    CREATE INDEX agui_blob_refs_by_thread ON agui_blob_refs (thread_id);
    """)


async def _v5(conn) -> None:
    """Branches (branches.py): the branches a thread left, and the count of cuts
    that makes a cached tail stale."""
    await conn.execute("""
    ALTER TABLE agui_threads ADD COLUMN cuts bigint NOT NULL DEFAULT 0;
    CREATE TABLE agui_branches (
        thread_id text NOT NULL,
        number bigint NOT NULL,
        after_id text,
        run_id text,
        created_at double precision NOT NULL,
        count bigint NOT NULL,
        state json NOT NULL,
        messages json NOT NULL,
        PRIMARY KEY (thread_id, number)
    );
    """)


async def _v6(conn) -> None:
    """Run heads (branches.py): the branch's last message after each run's save,
    where a later run's ``parentRunId`` naming it branches."""
    await conn.execute("""
    CREATE TABLE agui_run_heads (
        thread_id text NOT NULL,
        run_id text NOT NULL,
        message_id text NOT NULL,
        PRIMARY KEY (thread_id, run_id)
    );
    """)


# MIGRATIONS[n] upgrades a database from version n to n + 1: an async function
# of the connection, run in the migration's transaction (so a step may move
# data as well as change tables). Append; never edit a released step.
MIGRATIONS: list[Callable[[Any], Awaitable[None]]] = [_v1, _v2, _v3, _v4, _v5, _v6]
SCHEMA_VERSION = len(MIGRATIONS)

# pg_advisory_xact_lock key: "agui" in ASCII.
_MIGRATION_LOCK = 0x61677569
_NOW = "extract(epoch from clock_timestamp())::float8"


async def schema_version(conn) -> int:
    """The version recorded in the database, 0 for a database without the schema."""
    exists = await conn.fetchval("SELECT to_regclass('agui_schema') IS NOT NULL")
    if not exists:
        return 0
    return await conn.fetchval("SELECT coalesce(max(version), 0) FROM agui_schema")


async def upgrade(conn, version: int, steps=None) -> int:
    """Upgrades a database of schema ``version`` to ``version + 1`` (in the caller's
    transaction) and records it; returns the new version."""
    await (MIGRATIONS if steps is None else steps)[version](conn)
    await conn.execute("DELETE FROM agui_schema")
    await conn.execute("INSERT INTO agui_schema (version) VALUES ($1)", version + 1)
    return version + 1


async def migrate(conn, steps=None) -> int:
    """Brings the schema to ``SCHEMA_VERSION`` (``len(steps)``) in one
    transaction, one step at a time; returns it. A step that fails rolls the
    whole migration back.

    A database recorded at a newer version than this code knows is refused
    (an older node must not write to a schema it does not understand)."""
    steps = MIGRATIONS if steps is None else steps
    target = len(steps)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
        await conn.execute("CREATE TABLE IF NOT EXISTS agui_schema (version integer NOT NULL)")
        version = await schema_version(conn)
        if version > target:
            raise RuntimeError(
                f"the thread store's schema is at version {version}; "
                f"this agui-bridge knows up to {target}"
            )
        while version < target:
            version = await upgrade(conn, version, steps)
    return version


# What says the server cannot be reached (stopped, restarting, refusing
# connections, or a connection dropped mid-call) or cannot take a write (a
# read-only server: a primary demoted by a failover, a standby): StoreUnavailable,
# a 503, and a run's save waits for it as for a server that is down.
_DOWN = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.TooManyConnectionsError,
    asyncpg.exceptions.ReadOnlySQLTransactionError,
)
CONNECT_TIMEOUT = 5.0


def _reachable(method):
    @functools.wraps(method)
    async def call(*args, **kwargs):
        try:
            return await method(*args, **kwargs)
        except _DOWN as error:
            raise StoreUnavailable(f"the thread store is unavailable: {error}") from error

    return call


def _reachable_calls(cls):
    """Every public call of the store (those the App makes) says "store down" the
    one way, a ``StoreUnavailable`` (a 503 with Retry-After)."""
    for name, member in list(vars(cls).items()):
        if not name.startswith("_") and name != "close" and inspect.iscoroutinefunction(member):
            setattr(cls, name, _reachable(member))
    return cls


def _json(value) -> str:
    return orjson.dumps(value).decode()


# JSON decoded on the event loop up to this many bytes; a longer thread's rows
# in a thread (a 100,000-message thread is tens of megabytes: ~100 ms to decode).
_ON_LOOP_BYTES = 64 << 10


async def _decoded(raw):
    """``orjson.loads(raw)``, off the event loop when ``raw`` is large."""
    if len(raw) > _ON_LOOP_BYTES:
        return await asyncio.to_thread(orjson.loads, raw)
    return orjson.loads(raw)


@_reachable_calls
class PostgresStore:
    def __init__(self, dsn: str, min_size: int = 1, max_size: int = 10):
        self.dsn = dsn
        self._sizes = (min_size, max_size)
        self._pool = None
        self._opening: asyncio.Lock | None = None
        self._tails = TailCache()
        self._blobs = blob_rows.BlobCache()

    async def _conns(self):
        """The pool, opened (and the schema migrated) on first use."""
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                pool = await asyncpg.create_pool(
                    self.dsn,
                    min_size=self._sizes[0],
                    max_size=self._sizes[1],
                    timeout=CONNECT_TIMEOUT,
                )
                try:
                    async with pool.acquire() as conn:
                        await migrate(conn)
                except BaseException:
                    await pool.close()
                    raise
                self._pool = pool
        return self._pool

    # -- threads ---------------------------------------------------------------

    async def load(self, thread_id: str):
        from . import Thread

        if not storable_id(thread_id):
            return None
        base = self._tails.get(thread_id)
        pool = await self._conns()
        row = await self._read(pool, thread_id, base.seq if base is not None else 0)
        if row is not None and base is not None and base.epoch != (row["created"], row["cuts"]):
            base = None  # the thread was made again, or cut (branches.py), since: read it all
            row = await self._read(pool, thread_id, 0)
        if row is None:
            return None
        bodies = row["bodies"]
        large = bodies is not None and len(bodies) > _ON_LOOP_BYTES
        messages = await self._whole(pool, await _decoded(bodies) if bodies is not None else [])
        after = base.seq if base is not None else 0
        epoch = (row["created"], row["cuts"])
        advance = (self._tails.advance, thread_id, base, messages, row["seq"] or after, epoch)
        # A long thread's rows are checked one by one as the tail takes them:
        # off the loop too (a kept tail is replaced, never changed: threads may).
        tail = await asyncio.to_thread(*advance) if large else advance[0](*advance[1:])
        return Thread(
            thread_id=thread_id,
            agent_id=row["agent_id"],
            messages=list(tail.messages),
            state=orjson.loads(row["state"]),
            interrupts=orjson.loads(row["interrupts"]),
            ids=tail.ids.fork(),
            call_ids=tail.call_ids.fork(),
            metadata=orjson.loads(row["metadata"]),
            created_at=row["created"],
            updated_at=row["updated"],
            owner=row["owner"],
            status=row["status"],
        )

    async def _whole(self, pool, messages: list) -> list:
        """Rows as the messages sent: their inline data back from the blob table
        (``blobs.py``), what this process has not cached read once. A blob is
        written in the transaction of the first row referring to it, so a row
        read is never ahead of its blobs."""
        present, missing = self._blobs.held(messages)
        if not present and not missing:
            return messages
        fetched = {}
        if missing:
            rows = await pool.fetch(
                "SELECT hash, data FROM agui_blobs WHERE hash = ANY($1::text[])", missing
            )
            fetched = {row["hash"]: row["data"] for row in rows}
        if not fetched or sum(len(raw) for raw in fetched.values()) < (64 << 10):
            return self._blobs.join_all(messages, present, fetched)
        return await asyncio.to_thread(self._blobs.join_all, messages, present, fetched)

    @staticmethod
    async def _read(pool, thread_id: str, after: int):
        # One statement, so the thread row and its messages are one snapshot;
        # only the messages after ``after`` (what this process has not decoded).
        return await pool.fetchrow(
            "SELECT agent_id, state, interrupts, metadata, owner, status, cuts,"
            " extract(epoch from created_at)::float8 AS created,"
            " extract(epoch from updated_at)::float8 AS updated, m.seq, m.bodies"
            " FROM agui_threads t LEFT JOIN LATERAL (SELECT max(seq) AS seq,"
            " json_agg(body ORDER BY seq) AS bodies FROM agui_messages"
            " WHERE thread_id = t.thread_id AND seq > $2) m ON true"
            " WHERE t.thread_id = $1",
            thread_id,
            after,
        )

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
        ids = [message["id"] for message in new_messages]
        rows, blobs = await blob_rows.split_off_loop(list(new_messages))
        bodies = [_json(message) for message in rows]
        pool = await self._conns()
        async with pool.acquire() as conn, conn.transaction():
            if lease is not None:
                # FOR SHARE: a claim (which moves the fence) waits for this save.
                fence = await conn.fetchval(
                    "SELECT fence FROM agui_leases WHERE thread_id = $1 FOR SHARE", thread_id
                )
                if lease.thread_id != thread_id or fence != lease.fence:
                    raise lease_lost(thread_id, lease)
            if cut is not None:
                await self._cut(conn, thread_id, cut)
            # The upsert locks the thread's row: saves of one thread take
            # their turn, so their seq numbers never collide.
            await conn.execute(
                # One timestamp for both columns: their own defaults are two
                # clock readings, and updated_at came out before created_at.
                "INSERT INTO agui_threads (thread_id, agent_id, state, interrupts,"
                " created_at, updated_at, owner, status) VALUES ($1, $2, $3, $4,"
                " statement_timestamp(), statement_timestamp(), $5, $6)"
                " ON CONFLICT (thread_id) DO UPDATE SET"
                " agent_id = coalesce(agui_threads.agent_id, excluded.agent_id),"
                " state = excluded.state, interrupts = excluded.interrupts,"
                " updated_at = clock_timestamp(), status = excluded.status",
                thread_id,
                agent_id,
                _json(state),
                _json(interrupts),
                owner,
                status_of(interrupts, errored),
            )
            if blobs:
                await conn.execute(
                    # On conflict the row is locked (a no-op update) until the
                    # reference below commits: no delete takes the blob away meanwhile.
                    "INSERT INTO agui_blobs (hash, data) SELECT * FROM"
                    " unnest($1::text[], $2::bytea[]) ORDER BY 1"
                    " ON CONFLICT (hash) DO UPDATE SET hash = excluded.hash",
                    list(blobs),
                    list(blobs.values()),
                )
                await conn.execute(
                    "INSERT INTO agui_blob_refs (hash, thread_id) SELECT h, $2 FROM"
                    " unnest($1::text[]) AS h ON CONFLICT DO NOTHING",
                    list(blobs),
                    thread_id,
                )
            if ids:
                await conn.execute(
                    "INSERT INTO agui_messages (thread_id, seq, message_id, body)"
                    " SELECT $1, base.seq + m.ord, m.id, m.body"
                    " FROM (SELECT coalesce(max(seq), 0) AS seq FROM agui_messages"
                    " WHERE thread_id = $1) base,"
                    " unnest($2::text[], $3::json[]) WITH ORDINALITY AS m(id, body, ord)"
                    " ON CONFLICT (thread_id, message_id) DO NOTHING",
                    thread_id,
                    ids,
                    bodies,
                )
            if run_id is not None:
                # The run's head: where a later parentRunId naming it branches (branches.py).
                await conn.execute(
                    "INSERT INTO agui_run_heads (thread_id, run_id, message_id)"
                    " SELECT $1, $2, message_id FROM agui_messages WHERE thread_id = $1"
                    " ORDER BY seq DESC LIMIT 1 ON CONFLICT (thread_id, run_id)"
                    " DO UPDATE SET message_id = excluded.message_id",
                    thread_id,
                    run_id,
                )

    @staticmethod
    async def _cut(conn, thread_id: str, cut: Cut) -> None:
        """Keeps the current branch as a branch, then cuts it after ``cut.after``
        (in the save's transaction: ``branches.py``)."""
        # The thread's row first: saves of the thread wait for this one.
        state = await conn.fetchval(
            "SELECT state FROM agui_threads WHERE thread_id = $1 FOR UPDATE", thread_id
        )
        if state is None:
            return
        keep = 0
        if cut.after is not None:
            keep = await conn.fetchval(
                "SELECT seq FROM agui_messages WHERE thread_id = $1 AND message_id = $2",
                thread_id,
                cut.after,
            )
            if keep is None:
                return  # no such message: nothing to keep aside
        kept_aside = await conn.execute(
            "INSERT INTO agui_branches (thread_id, number, after_id, run_id, created_at, count,"
            " state, messages) SELECT $1, coalesce((SELECT max(number) FROM agui_branches"
            f" WHERE thread_id = $1), 0) + 1, $2, $3, {_NOW}, count(*), $4::json,"
            " json_agg(body ORDER BY seq) FROM agui_messages WHERE thread_id = $1"
            " HAVING max(seq) > $5",
            thread_id,
            cut.after,
            cut.run_id,
            state,
            keep,
        )
        if kept_aside == "INSERT 0 0":
            return  # nothing follows
        await conn.execute(
            "DELETE FROM agui_messages WHERE thread_id = $1 AND seq > $2", thread_id, keep
        )
        await conn.execute(
            "UPDATE agui_threads SET cuts = cuts + 1 WHERE thread_id = $1", thread_id
        )

    # -- branches (branches.py) ------------------------------------------------

    async def head(self, thread_id: str, run_id: str) -> str | None:
        if not storable_id(thread_id):
            return None
        pool = await self._conns()
        return await pool.fetchval(
            "SELECT message_id FROM agui_run_heads WHERE thread_id = $1 AND run_id = $2",
            thread_id,
            run_id,
        )

    async def branches(self, thread_id: str) -> list[Branch] | None:
        if not storable_id(thread_id):
            return None
        pool = await self._conns()
        async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read"):
            if not await conn.fetchval(
                "SELECT 1 FROM agui_threads WHERE thread_id = $1", thread_id
            ):
                return None
            rows = await conn.fetch(
                "SELECT number, after_id, run_id, created_at, count FROM agui_branches"
                " WHERE thread_id = $1 ORDER BY number",
                thread_id,
            )
        return [Branch(*row) for row in rows]

    async def branch(self, thread_id: str, number: int) -> Branch | None:
        if not storable_id(thread_id):
            return None
        pool = await self._conns()
        row = await pool.fetchrow(
            "SELECT number, after_id, run_id, created_at, count, messages, state"
            " FROM agui_branches WHERE thread_id = $1 AND number = $2",
            thread_id,
            number,
        )
        if row is None:
            return None
        # Its rows as stored: inline data back from the blob table (the thread's own).
        messages = await self._whole(pool, await _decoded(row["messages"]))
        return Branch(*row[:5], messages=messages, state=orjson.loads(row["state"]))

    # -- the Agent Protocol's thread routes ------------------------------------

    async def create(self, thread_id: str, metadata: dict, owner=None) -> bool:
        check_thread(thread_id)
        check_metadata(metadata)
        pool = await self._conns()
        status = await pool.execute(
            "INSERT INTO agui_threads (thread_id, agent_id, state, interrupts, metadata,"
            " created_at, updated_at, owner) VALUES ($1, NULL, '{}', '[]', $2,"
            " statement_timestamp(), statement_timestamp(), $3) ON CONFLICT (thread_id) DO NOTHING",
            thread_id,
            _json(metadata),
            owner,
        )
        return status == "INSERT 0 1"

    async def update_metadata(self, thread_id: str, metadata: dict) -> bool:
        check_metadata(metadata)
        if not storable_id(thread_id):
            return False
        pool = await self._conns()
        status = await pool.execute(
            "UPDATE agui_threads SET metadata = metadata || $2::jsonb,"
            " updated_at = clock_timestamp() WHERE thread_id = $1",
            thread_id,
            _json(metadata),
        )
        return status == "UPDATE 1"

    async def delete(self, thread_id: str) -> bool:
        if not storable_id(thread_id):
            return False
        pool = await self._conns()
        async with pool.acquire() as conn, conn.transaction():
            status = await conn.execute("DELETE FROM agui_threads WHERE thread_id = $1", thread_id)
            await conn.execute("DELETE FROM agui_messages WHERE thread_id = $1", thread_id)
            await _drop_refs(conn, [thread_id])
            await conn.execute("DELETE FROM agui_branches WHERE thread_id = $1", thread_id)
            await conn.execute("DELETE FROM agui_run_heads WHERE thread_id = $1", thread_id)
        return status == "DELETE 1"

    async def search(
        self, metadata: dict, ids, limit: int, offset: int = 0, owner=None, status=None
    ) -> list:
        from . import Listed

        check_metadata(metadata)
        where: list[str] = []
        args: list = []

        def arg(value) -> str:
            args.append(value)
            return f"${len(args)}"

        if owner is not None:
            where.append(f"t.owner = {arg(owner)}")
        if ids is not None:
            where.append(f"t.thread_id = ANY({arg([i for i in ids if storable_id(i)])}::text[])")
        if metadata:
            # @> finds the candidates through the GIN index; each key must then
            # hold an equal value (containment alone would match {"a": [1, 2]} for [1]).
            where.append(f"t.metadata @> {arg(_json(metadata))}::jsonb")
            for key, value in metadata.items():
                where.append(f"(t.metadata -> {arg(key)}) = {arg(_json(value))}::jsonb")
        live = f"l.expires_at > {_NOW}"
        if status == "busy":
            where.append(live)
        elif status is not None:
            where.append(f"t.status = {arg(status)} AND (l.expires_at IS NULL OR NOT {live})")
        pool = await self._conns()
        rows = await pool.fetch(
            f"SELECT t.thread_id, t.agent_id, CASE WHEN {live} THEN 'busy' ELSE t.status END"
            " AS shown FROM agui_threads t LEFT JOIN agui_leases l ON l.thread_id = t.thread_id"
            f" {'WHERE ' + ' AND '.join(where) if where else ''}"
            f" ORDER BY t.updated_at DESC LIMIT {arg(limit)} OFFSET {arg(offset)}",
            *args,
        )
        return [Listed(row["thread_id"], row["agent_id"], row["shown"]) for row in rows]

    async def sweep(self, idle_before: float, batch: int) -> list[str]:
        pool = await self._conns()
        async with pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                "DELETE FROM agui_threads WHERE thread_id IN (SELECT t.thread_id"
                " FROM agui_threads t WHERE t.updated_at < to_timestamp($1) AND NOT EXISTS"
                " (SELECT 1 FROM agui_leases l WHERE l.thread_id = t.thread_id"
                f" AND l.expires_at > {_NOW}) LIMIT $2 FOR UPDATE SKIP LOCKED)"
                " RETURNING thread_id",
                float(idle_before),
                batch,
            )
            gone = [row["thread_id"] for row in rows]
            for table in ("agui_messages", "agui_branches", "agui_run_heads"):
                await conn.execute(f"DELETE FROM {table} WHERE thread_id = ANY($1::text[])", gone)
            await _drop_refs(conn, gone)
        return gone

    # -- leases (see lease.py) -------------------------------------------------

    async def claim(self, thread_id: str, ttl: float) -> Lease | None:
        check_thread(thread_id)
        token = uuid.uuid4().hex
        pool = await self._conns()
        # A concurrent claim waits on the row lock, then sees the new holder's
        # expiry: exactly one of them gets the lease.
        row = await pool.fetchrow(
            "INSERT INTO agui_leases (thread_id, token, fence, expires_at)"
            f" VALUES ($1, $2, 1, {_NOW} + $3::float8) ON CONFLICT (thread_id) DO UPDATE SET"
            " token = CASE WHEN agui_leases.token = '' THEN excluded.token"
            " ELSE $4 || excluded.token END, fence = agui_leases.fence + 1,"
            f" expires_at = excluded.expires_at WHERE agui_leases.expires_at <= {_NOW}"
            " RETURNING token, fence",
            thread_id,
            token,
            float(ttl),
            TAKEN,
        )
        return None if row is None else claimed(thread_id, row[0], row[1])

    async def renew(self, lease: Lease, ttl: float) -> bool:
        pool = await self._conns()
        status = await pool.execute(
            f"UPDATE agui_leases SET expires_at = {_NOW} + $3::float8"
            " WHERE thread_id = $1 AND token = $2",
            lease.thread_id,
            lease.token,
            float(ttl),
        )
        return status == "UPDATE 1"

    async def release(self, lease: Lease) -> None:
        pool = await self._conns()
        # The row stays (expired) so the thread's next fence is larger.
        await pool.execute(
            "UPDATE agui_leases SET token = '', expires_at = 0 WHERE thread_id = $1 AND token = $2",
            lease.thread_id,
            lease.token,
        )

    # -- lifecycle -------------------------------------------------------------

    async def ping(self) -> None:
        """Readiness (``/readyz``): a server that answers reads but refuses writes
        (a primary demoted by a failover, a standby, ``default_transaction_read_only``)
        starts no run (its lease is a write), so it is not ready."""
        pool = await self._conns()
        if await pool.fetchval("SELECT current_setting('transaction_read_only')") == "on":
            raise StoreUnavailable("the thread store is read-only")

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
