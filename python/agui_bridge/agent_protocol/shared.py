"""Agent Protocol run records on the shared run-log backend (``runs="redis://…"``).

A node keeps the records of the runs it was asked for (``runs.Registry``);
where the run logs are shared, every node must also see the runs other
nodes were asked for: their metadata, kwargs and strategy, whether they were
cancelled (a cancelled run's log ends like a finished one), and their status
once their log is gone. Each record is one field of a hash per thread, next
to the run logs, expiring with them (the run retention); a thread's records
are read with one ``HGETALL``. That a run was cancelled is a set of its own
beside them: any node may cancel a run while the node that runs it writes
its record again (at its end), and a cancel is never undone.

The hash expires a retention after its last write, so an active thread's
would keep every run it ever had: of the runs settled a retention ago (their
logs gone everywhere, listed from their fields), a thread keeps the newest
``PAST_KEPT``. Reading all of a thread's records (``of_thread``, the run
list) drops the older ones, and so does each worker every ``PRUNE_EVERY``
runs it adds, in the background (whichever thread adds the one that counts:
a thread is pruned about every ``PRUNE_EVERY`` of its runs, however many
threads share the worker), with no round trip on the other puts. A record is
dropped only if it is still what was read (``layout`` script
``drop_records``): one another node wrote since stays.
"""

from __future__ import annotations

import asyncio
import logging
import time

import orjson

log = logging.getLogger("agui_bridge.agent_protocol")

SETTLED = frozenset(("success", "error", "interrupted"))
# Runs settled a retention ago a thread's records keep (newest first), as the
# thread's run starts keep ``runs.redis.layout.MAX_STARTS``.
PAST_KEPT = 1000
PRUNE_EVERY = 256
# Records one script call drops at most: a thread left unpruned for long must
# not hold Redis in one long script.
DROP_BATCH = 500


def settled_before(fields: dict, when: float) -> bool:
    """Whether a run's record says it settled before ``when`` (wall clock)."""
    return fields.get("status") in SETTLED and (fields.get("updated_at") or 0) < when


def _key(thread_id: str) -> bytes:
    return b"agui:thread:" + orjson.dumps([thread_id]) + b":records"


def _cancelled(thread_id: str) -> bytes:
    return b"agui:thread:" + orjson.dumps([thread_id]) + b":cancelled"


class SharedRecords:
    """The records of every node, in the run logs' Redis (``RedisRuns.client``)."""

    def __init__(self, client, retention: int):
        self.client = client
        self.retention = retention
        self.past_kept = PAST_KEPT
        self.prune_every = PRUNE_EVERY
        self.drop_batch = DROP_BATCH
        self.added = 0  # runs this worker added to any thread's records
        self.pruning: set[asyncio.Task] = set()

    async def put(self, fields: dict) -> None:
        thread_id, run_id = fields["thread_id"], fields["run_id"]
        call = self.client.call
        added = await call("hset", _key(thread_id), run_id, orjson.dumps(fields))
        await call("expire", _key(thread_id), self.retention)
        if fields.get("cancelled"):
            await call("sadd", _cancelled(thread_id), run_id)
            await call("expire", _cancelled(thread_id), self.retention)
        if added:
            self.added += 1
            if self.added % self.prune_every == 0:
                # Not in the way of the run that counted: a large hash is a long read.
                task = asyncio.ensure_future(self._prune(thread_id))
                self.pruning.add(task)
                task.add_done_callback(self.pruning.discard)

    async def _prune(self, thread_id: str) -> None:
        try:
            await self.of_thread(thread_id)
        except Exception as error:  # the next prune, or a list, tries again
            log.warning("pruning the run records of thread %r failed: %s", thread_id, error)

    async def of_thread(self, thread_id: str) -> dict[str, dict]:
        """The thread's records by run id (the past ones beyond those kept dropped)."""
        found = await self.client.call("hgetall", _key(thread_id)) or {}
        records = {k.decode(): orjson.loads(v) for k, v in found.items()}
        if records:
            for run_id in await self.client.call("smembers", _cancelled(thread_id)) or ():
                record = records.get(run_id.decode())
                if record is not None:
                    record["cancelled"] = True
            beyond = self._beyond_kept(records)
            for at in range(0, len(beyond), self.drop_batch):
                batch = beyond[at : at + self.drop_batch]
                as_read = [(run_id, found[run_id.encode()]) for run_id in batch]
                for run_id in await self._drop_unchanged(thread_id, as_read):
                    del records[run_id.decode()]
        return records

    async def _drop_unchanged(self, thread_id: str, as_read: list[tuple[str, bytes]]) -> list:
        """Drops these records where each is still as read: another node may
        have written one since (a run cancelled after its end)."""
        keys = [_key(thread_id), _cancelled(thread_id)]
        args = [part for pair in as_read for part in pair]
        return await self.client.script("drop_records", keys, args, mapped=True)

    def _beyond_kept(self, records: dict[str, dict]) -> list[str]:
        """The runs settled a retention ago past the newest ``past_kept``, oldest first."""
        old = time.time() - self.retention
        past = sorted(
            (fields.get("updated_at") or 0, run_id)
            for run_id, fields in records.items()
            if settled_before(fields, old)
        )
        return [run_id for _, run_id in past[: max(0, len(past) - self.past_kept)]]

    async def get(self, thread_id: str, run_id: str) -> dict | None:
        found = await self.client.call("hget", _key(thread_id), run_id)
        if not found:
            return None
        record = orjson.loads(found)
        if await self.client.call("sismember", _cancelled(thread_id), run_id):
            record["cancelled"] = True
        return record

    async def delete(self, thread_id: str, run_id: str) -> None:
        await self.client.call("hdel", _key(thread_id), run_id)
        await self.client.call("srem", _cancelled(thread_id), run_id)

    async def forget(self, thread_id: str) -> None:
        await self.client.call("delete", _key(thread_id), _cancelled(thread_id))


def shared_records(runs) -> SharedRecords | None:
    """The shared records of a run-log backend that shares its logs, else None."""
    client = getattr(runs, "client", None)
    retention = getattr(runs, "retention", None)
    if client is None or retention is None:
        return None
    return SharedRecords(client, retention)
