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
"""

from __future__ import annotations

import orjson


def _key(thread_id: str) -> bytes:
    return b"agui:thread:" + orjson.dumps([thread_id]) + b":records"


def _cancelled(thread_id: str) -> bytes:
    return b"agui:thread:" + orjson.dumps([thread_id]) + b":cancelled"


class SharedRecords:
    """The records of every node, in the run logs' Redis (``RedisRuns.client``)."""

    def __init__(self, client, retention: int):
        self.client = client
        self.retention = retention

    async def put(self, fields: dict) -> None:
        thread_id, run_id = fields["thread_id"], fields["run_id"]
        call = self.client.call
        await call("hset", _key(thread_id), run_id, orjson.dumps(fields))
        await call("expire", _key(thread_id), self.retention)
        if fields.get("cancelled"):
            await call("sadd", _cancelled(thread_id), run_id)
            await call("expire", _cancelled(thread_id), self.retention)

    async def of_thread(self, thread_id: str) -> dict[str, dict]:
        """The thread's records by run id."""
        found = await self.client.call("hgetall", _key(thread_id))
        records = {k.decode(): orjson.loads(v) for k, v in (found or {}).items()}
        if records:
            for run_id in await self.client.call("smembers", _cancelled(thread_id)) or ():
                record = records.get(run_id.decode())
                if record is not None:
                    record["cancelled"] = True
        return records

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
