"""Who reads a shared run, seen from every node (``runs.supersede``'s counts).

``agui:run:R:readers`` is a sorted set with one member per node that has
readers of the run, scored with the time (Redis's clock, in ms) its presence
lapses. A node adds itself when its first reader of the run comes, renews
that every ``ttl / 3`` while any reads, and removes itself when its last one
leaves; a node that dies stops renewing, so its readers vanish within
``ttl``. ``read`` in the run's meta says someone read the run once.

One writer task per node sends every change and renewal queued since its
previous round trip in one script call, so a leave never overtakes the
enter before it; a reader is counted (its enter acknowledged) before its
stream begins.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from ...errors import RunsUnavailable
from ..supersede import stop
from . import control
from .client import DOWN, Client, RedisError
from .layout import Keys

log = logging.getLogger("agui_bridge.runs")

# At most this long a reader's stream waits for its enter to reach Redis
# (a stalled Redis stalls the stream's frames as well).
ENTER_WAIT = 5.0


@dataclass(frozen=True)
class Seen:
    """A thread's active run as its readers are counted."""

    thread_id: str
    run_id: str
    node: str
    readers: int  # nodes with readers now
    ever_read: bool


class Presence:
    """This node's readers of shared runs, kept in Redis for every node to see."""

    def __init__(self, client: Client, node: str, local: dict, ttl: float, retention: int):
        self.client = client
        self.node = node
        self.local = local  # the runs this node runs (their sinks), by (thread, run)
        self.ttl_ms = max(1, int(ttl * 1000))
        self.renew_every = ttl / 3
        self.retention = retention
        self.counts: dict = {}  # mirror -> this node's readers of it
        self.changed: dict = {}  # mirrors whose presence is to be sent (an ordered set)
        self.waiting: list[asyncio.Future] = []  # enters waiting for their round trip
        self.task: asyncio.Task | None = None
        self.wake = asyncio.Event()

    async def enter(self, mirror) -> None:
        n = self.counts.get(mirror, 0)
        self.counts[mirror] = n + 1
        if n == 0:
            self.changed[mirror] = None
        if mirror.ended:
            return
        sent = asyncio.get_running_loop().create_future()
        self.waiting.append(sent)
        self._kick()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(ENTER_WAIT):
                await asyncio.shield(sent)

    def leave(self, mirror) -> None:
        n = self.counts.get(mirror, 0) - 1
        if n > 0:
            self.counts[mirror] = n
            return
        self.counts.pop(mirror, None)
        self.changed[mirror] = None
        self._kick()

    async def active(self, thread_id: str) -> Seen | None:
        """The thread's active run and how many nodes read it now (None: no active
        run, or Redis cannot say: the new run keeps its 409)."""
        try:
            run_id = await self.client.call("get", Keys(thread_id, "").active)
            if run_id is None:
                return None
            run_id = run_id.decode()
            keys = Keys(thread_id, run_id)
            found = await self.client.script("readers", [keys.meta, keys.readers], [])
        except (*DOWN, RedisError, RunsUnavailable) as error:
            log.warning("thread %s: counting its run's readers failed: %s", thread_id, error)
            return None
        if not found:
            return None
        node, read, readers = found
        return Seen(thread_id, run_id, node.decode(), int(readers), read == b"1")

    async def stop(self, seen: Seen) -> bool:
        """Stops an abandoned run where it runs (``runs.supersede.stop``)."""
        if seen.node == self.node:
            sink = self.local.get((seen.thread_id, seen.run_id))
            return sink is not None and stop(sink.run)
        # False: no node listens there (it is gone; its run ends as run_lost), or
        # Redis refused the message (a failover): the new run keeps its 409.
        try:
            return await control.send_cancel(
                self.client, seen.node, seen.thread_id, seen.run_id, "supersede"
            )
        except (*DOWN, RedisError, RunsUnavailable) as error:
            log.warning("thread %s: stopping its run on node %s failed: %s", seen.thread_id,
                        seen.node, error)  # fmt: skip
            return False

    def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
        self.task = None

    # -- the writer ------------------------------------------------------------

    def _kick(self) -> None:
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._write())
        else:
            self.wake.set()

    async def _write(self) -> None:
        loop = asyncio.get_running_loop()
        # Its own deadline: readers coming and going elsewhere on this node must
        # not put off renewing the ones that stay (they would lapse, read).
        renew_at = loop.time() + self.renew_every
        try:
            while True:
                if not self.changed and not self.waiting:
                    if not any(not mirror.ended for mirror in self.counts):
                        return
                    self.wake.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout_at(renew_at):
                            await self.wake.wait()
                            continue
                if loop.time() >= renew_at:
                    # Renewed while they read: a node that dies stops renewing.
                    for mirror in self.counts:
                        if not mirror.ended:
                            self.changed.setdefault(mirror, None)
                    renew_at = loop.time() + self.renew_every
                changed, self.changed = self.changed, {}
                waiting, self.waiting = self.waiting, []
                if changed:
                    await self._send(changed)
                for sent in waiting:
                    if not sent.done():
                        sent.set_result(None)
        finally:
            for sent in self.waiting:
                if not sent.done():
                    sent.set_result(None)

    async def _send(self, changed: dict) -> None:
        keys, args = [], [self.node, self.ttl_ms, self.retention]
        for mirror in changed:
            keys += [mirror.keys.meta, mirror.keys.readers]
            args.append(1 if self.counts.get(mirror) and not mirror.ended else 0)
        try:
            await self.client.script("presence", keys, args, patient=True)
        except (*DOWN, RedisError) as error:
            # The next renewal (or the next change) sends them again.
            log.warning("counting readers in Redis failed: %s", error)
