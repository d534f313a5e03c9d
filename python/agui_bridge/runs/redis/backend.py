"""``RedisRuns``: the run-log backend interface (``runs.backend``) on Redis."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid

import orjson

from ..backend import _settled
from ..frames import event_of
from ..limits import Limits
from ..log import Logs, RunLog
from .client import DOWN, Client, RedisError
from .control import Control, send_cancel
from .layout import GONE, MAX_STARTS, Keys
from .mirror import BLOCK_MS, Mirror, Reading
from .presence import Presence
from .sink import RedisSink

log = logging.getLogger("agui_bridge.runs")

# Seconds the readiness probe's key lives (one per node, rewritten by each probe).
READY_TTL = 5


class RedisRuns:
    """Run logs on one Redis, shared by every node (see ``runs.redis``)."""

    def __init__(
        self,
        url: str,
        limits: Limits,
        ids: bool = True,
        lease_ttl: float = 10.0,
        block_ms: int = BLOCK_MS,
    ):
        self.url = url
        self.limits = limits
        self.ids = ids
        self.lease_ttl = lease_ttl
        self.block_ms = block_ms
        self.retention = max(1, int(limits.run_retention + 0.999))
        self.logs = Logs(limits)  # this node's mirrors
        self.node = uuid.uuid4().hex
        self.local: dict[tuple[str, str], RedisSink] = {}  # the runs this node runs
        self.client = Client(url, on_use=self._on_use)
        self.control = Control(self.client, self.node, self.local)
        self.reading = Reading(self.client, self.logs, self.local, block_ms, self.retention, ids)
        # Who reads each run, from every node (runs.supersede).
        self.presence = Presence(self.client, self.node, self.local, lease_ttl, self.retention)
        self._opening: dict[tuple[str, str], asyncio.Future] = {}

    @property
    def calls(self):
        """Commands sent, by name (a script call is one round trip): the batching's measure."""
        return self.client.calls

    def _on_use(self) -> None:
        self.control.ensure()

    # -- the backend interface (runs.backend) ----------------------------------

    async def start(
        self, thread_id, run_id, agent_id, owner_id, input_ids, fence, state, turn=(), branch=None
    ):
        keys = Keys(thread_id, run_id)
        begun = time.time()
        token = b"%d:%s:%s" % (fence, self.node.encode(), run_id.encode())
        meta = [
            b"agent", agent_id,
            b"owner", owner_id or "",
            b"inputs", _inputs_to(input_ids),
            b"state", orjson.dumps(state),
            b"turn", orjson.dumps(list(turn)),
            b"branch", orjson.dumps(branch),
            b"node", self.node,
            b"fence", token,
            b"begun", repr(begun),
        ]  # fmt: skip
        ttl = int(self.lease_ttl * 1000)
        args = [fence, self.retention, ttl, run_id, token, MAX_STARTS, *meta]
        started = await self.client.script(
            "start",
            [keys.meta, keys.log, keys.fence, keys.active, keys.alive, keys.runs, keys.readers],
            args,
            mapped=True,
        )
        if not started:
            return None
        # A cancel sent from another node must find this node listening.
        await self.control.subscribed(2)
        mirror = self.reading.mirror(thread_id, run_id)
        mirror.agent_id = agent_id
        mirror.owner_id = owner_id
        mirror.input_ids = input_ids
        mirror.state0 = state
        mirror.turn = list(turn)
        mirror.branch = branch
        mirror.node = self.node
        mirror.fence = token
        mirror.begun = begun
        mirror.claim = fence
        self.reading.read(mirror)
        sink = RedisSink(self.client, self.local, self.retention, thread_id, run_id, token)
        return mirror, sink

    def publish(self, log: RunLog) -> None:
        pass  # a mirror is visible on every node once RUN_STARTED is read into it

    async def ping(self) -> None:
        """Readiness (``/readyz``): a write, as every run makes; a Redis that
        answers reads but refuses writes (out of memory, a replica after a
        failover, a failed save) can start no run, so it is not ready."""
        await self.client.call("set", b"agui:readyz:" + self.node.encode(), b"1", READY_TTL)

    async def get(self, thread_id: str, run_id: str) -> RunLog | None:
        found = await self._get(thread_id, run_id)
        return found if found is not None and found.visible else None

    async def _get(self, thread_id: str, run_id: str) -> Mirror | None:
        key = (thread_id, run_id)
        # Waited for first: the copy being opened is held before it is read in.
        opening = self._opening.get(key)
        if opening is not None:
            return await asyncio.shield(opening)
        mirror = self.logs.get(thread_id, run_id)
        if mirror is not None and not mirror.ended:
            return mirror
        future = asyncio.get_running_loop().create_future()
        self._opening[key] = future
        try:
            found = await self._open(thread_id, run_id, mirror)
            future.set_result(found)
            return found
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: only the waiters see it
            raise
        finally:
            del self._opening[key]

    async def _open(self, thread_id: str, run_id: str, held: Mirror | None):
        keys = Keys(thread_id, run_id)
        meta = await self.client.call("hgetall", keys.meta)
        if not meta:
            return held  # an ended run this node still holds is served from here
        fence = meta.get(b"fence") or b""
        if held is not None and held.fence == fence:
            return held
        mirror = self.reading.mirror(thread_id, run_id)
        mirror.agent_id = meta.get(b"agent", b"").decode()
        mirror.owner_id = meta.get(b"owner", b"").decode()
        mirror.input_ids = _inputs_from(meta.get(b"inputs") or b"[]")
        mirror.state0 = orjson.loads(meta.get(b"state") or b"{}")
        mirror.turn = orjson.loads(meta.get(b"turn") or b"[]")
        mirror.branch = orjson.loads(meta.get(b"branch") or b"null")
        mirror.node = meta.get(b"node", b"").decode()
        mirror.begun = float(meta.get(b"begun") or mirror.begun)  # where the run started
        mirror.fence = fence
        mirror.claim = int(fence.split(b":", 1)[0] or 0)
        self.reading.read(mirror)
        await self.reading.primed(mirror)
        return mirror

    async def active_of(self, thread_id: str) -> RunLog | None:
        run_id = await self.client.call("get", Keys(thread_id, "").active)
        if run_id is None:
            return None
        mirror = await self.get(thread_id, run_id.decode())
        return mirror if mirror is not None and not mirror.ended else None

    async def started(self, thread_id: str, after: int) -> list[tuple[int, str]]:
        key = Keys(thread_id, "").runs
        # (start, num, withscores): redis-py's positional arguments.
        found = await self.client.call("zrangebyscore", key, f"({after}", "+inf", None, None, True)
        return [(int(claim), run_id.decode()) for run_id, claim in found or ()]

    def ended(self, log: RunLog) -> None:
        pass  # a mirror counts against retention when its reader sees the end

    async def cancel(self, mirror: Mirror) -> bool:
        if mirror.ended:
            return False
        sink = self.local.get((mirror.thread_id, mirror.run_id))
        if sink is not None:
            run = sink.run
            if not run.stop():
                return False
            await _settled(run, self.limits.send_timeout)
        elif not await send_cancel(self.client, mirror.node, mirror.thread_id, mirror.run_id):
            return await self._lost(mirror)
        # The run's end reaches this node's copy through the log.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.limits.send_timeout):
                while not mirror.ended:
                    await mirror.waiter()
        return True

    async def _lost(self, mirror: Mirror) -> bool:
        """A stop for a run whose node is gone (no node took the message): the run
        has not ended, it ends ``run_lost`` once its lease lapses (this node's
        copy finds that out). The stop is that end: True once it came, False
        when the run ended on its own first (or nothing ended it in time)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.lease_ttl + self.block_ms / 1000 + 1):
                while not mirror.ended:
                    await mirror.waiter()
        if not mirror.ended or not mirror.chunks:
            return False
        return event_of(mirror.chunks[-1], last=True).get("code") == "run_lost"

    def renewer(self, run):
        sink = run.out
        beating: list[asyncio.Task] = []

        async def heartbeat() -> None:
            keys = sink.keys
            try:
                result = await self.client.script(
                    "heartbeat",
                    [keys.log, keys.meta, keys.fence, keys.alive, keys.active, keys.runs],
                    [sink.fence, self.retention, int(self.lease_ttl * 1000)],
                    patient=True,
                )
            except (*DOWN, RedisError) as error:  # a task of its own: nobody else sees it
                log.warning("run %s: renewing in Redis failed: %s", sink.run_id, error)
                return
            if result in (-1, -2, -3) and not sink.ended:
                sink.failed(result != -3, GONE if result == -3 else None)

        async def renewed() -> None:
            # Sent, not awaited: a stalled Redis must not hold up the renewal
            # of the store's lease, or the run would lose its thread meanwhile.
            # One at a time: the one in flight renews once Redis answers.
            if beating and not beating[0].done():
                return
            beating[:] = [asyncio.get_running_loop().create_task(heartbeat())]

        return renewed

    async def aclose(self) -> None:
        for sink in list(self.local.values()):
            # A drain may hand off to another (RedisSink._kick): wait for the last.
            deadline = asyncio.get_running_loop().time() + 5
            while sink.task is not None:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(sink.task), left)
        tasks = [m.reader for m in self.logs.by_run.values() if m.reader is not None]
        tasks += [t for t in (self.control.task, self.presence.task) if t is not None]
        for task in tasks:
            task.cancel()
        self.control.close()
        self.presence.close()
        # A task cancelled inside a Redis call gives its connection back once it
        # has ended: closed before that, the connection was left open.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
        await self.client.aclose()


def _inputs_to(input_ids) -> bytes:
    """The request's message keys (ids, or bytes for id-less messages and the turn) as JSON."""
    return orjson.dumps([[k.decode(), 1] if isinstance(k, bytes) else [k, 0] for k in input_ids])


def _inputs_from(raw: bytes) -> frozenset:
    return frozenset(k.encode() if kind else k for k, kind in orjson.loads(raw))
