"""Webhooks owed by the runs of every node (shared run logs): one delivery per
run, by whichever node ends it.

Without shared run logs a run lives and ends on the node that took its
request, which delivers its webhook (``agui_bridge.webhooks``). With them
(``runs="redis://…"``) a run may be cancelled from another node, or end
``run_lost`` when its node dies (ended by another node reading its log, or
when another node takes the thread's lease). So a run asked with a
``webhook`` is owed in one hash in the run logs' Redis (field: the run,
value: the URL) from the moment it is launched, and a delivery is made only
by the node that takes it off the hash (``HDEL`` answers 1 to one caller):

- the node that ran it, once the run's log ended, with the record as every
  node sees it (a cancel from another node shows as ``interrupted``);
- where that node died: every node looks at the owed runs every ``every``
  seconds (``watch``). A run whose ``alive`` key expired (its node stopped
  renewing it) and whose log has not ended is read here, which ends it
  ``run_lost`` for every node (``runs.redis``); one ended ``run_lost`` is
  delivered by the node that takes it off first. One that ended otherwise
  is its own node's to take, at once; still owed ``grace`` seconds after
  this node saw it ended, that node died in between: this one takes it.

What is owed is at most once after it is taken: a node that dies while it
delivers (its retries included) loses that delivery. A run queued on a
node keeps its shared record written by that node's looks while it waits;
one whose node died before it started is not delivered (logged at ERROR
when its record expires). A node watches from the App's start.
"""

from __future__ import annotations

import asyncio
import logging
import time

import orjson

from ..runs.redis.layout import Keys
from .runs import terminal_event

log = logging.getLogger("agui_bridge.webhooks")

KEY = b"agui:webhooks:owed"


class Owed:
    """The runs whose webhook is still owed, on the shared run logs' Redis."""

    def __init__(self, runs, registry, send, every: float, grace: float):
        """``send(url, record)``: the delivery; ``every``: seconds between two looks;
        ``grace``: how long an ended run is left to its own node."""
        self.runs = runs
        self.client = runs.client
        self.registry = registry
        self.send = send
        self.every = every
        self.grace = grace
        self.watcher: asyncio.Task | None = None

    async def owe(self, thread_id: str, run_id: str, url: str) -> None:
        await self.client.call("hset", KEY, orjson.dumps([thread_id, run_id]), url)

    async def take(self, thread_id: str, run_id: str) -> bool:
        """True for the one caller that takes the run's webhook off (it delivers it)."""
        return await self.client.call("hdel", KEY, orjson.dumps([thread_id, run_id])) == 1

    def watch(self, loop=None) -> None:
        """Starts this node's look at the owed runs (once), on ``loop`` (default: the
        running one)."""
        if self.watcher is None:
            self.watcher = (loop or asyncio.get_running_loop()).create_task(self._watch())

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.cancel()
            self.watcher = None

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                await self.look()
            except Exception as error:  # Redis away: the next look tries again
                log.warning("webhooks: looking at the owed runs failed: %s", error)

    async def look(self) -> None:
        """Delivers what runs that ended ``run_lost`` elsewhere owe; reads a run whose
        node stopped renewing it (so it ends ``run_lost`` for every node)."""
        owed = await self.client.call("hgetall", KEY) or {}
        local = getattr(self.runs, "local", {})
        for field, url in owed.items():
            thread_id, run_id = orjson.loads(field)
            if (thread_id, run_id) in local:
                continue  # this node runs it: it delivers when it ends
            queued = self._queued_here(thread_id, run_id)
            if queued is not None:
                # It delivers when the run ends; its shared record is written
                # again so that it outlives a long wait (every node reads it).
                await self.registry.share(queued)
                continue
            if await self.client.call("exists", Keys(thread_id, run_id).alive):
                continue  # its node renews it: that node delivers
            run_log = await self.runs.get(thread_id, run_id)
            if run_log is None:
                await self._unknown(thread_id, run_id)
                continue
            if not run_log.ended:
                continue  # read here from now: it ends run_lost if its node is gone
            end = terminal_event(run_log)
            lost = end is not None and end.get("code") == "run_lost"
            if not lost and time.monotonic() - run_log.ended_at < self.grace:
                continue  # ended by its node, which takes it at once
            if not await self.take(thread_id, run_id):
                continue
            record = await self.registry.get(thread_id, run_id)
            if record is not None:
                self.send(url.decode(), record)

    def _queued_here(self, thread_id: str, run_id: str):
        """This node's record of the run while it waits in this node's queue."""
        record = self.registry.records.get(thread_id, {}).get(run_id)
        if record is None or record.log is not None or record.failed or record.cancelled:
            return None
        return record

    async def _unknown(self, thread_id: str, run_id: str) -> None:
        """A run with no log: queued (its record says pending), or gone (expired)."""
        shared = self.registry.shared
        if await shared.get(thread_id, run_id) is not None:
            return
        if await self.take(thread_id, run_id):
            log.error(
                "webhook for run %s of thread %s not delivered: its node queued it and"
                " went away before it started, and its record expired",
                run_id,
                thread_id,
            )
