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
delivers (its retries included) loses that delivery. A node that shuts down
(its drain) is not dying: it lets a look under way finish, waits for its
deliveries a while (``webhooks.SHUTDOWN_WAIT``) and owes again those not made
(``give_back``: a call cut off mid-request may so arrive twice). A run queued
on a node keeps its shared record written by that node's looks while it
waits; one whose node died before it started is not delivered (logged at
ERROR when its record expires). One settled before it started (cancelled, or
failed: its node shut down) and still owed ``grace`` seconds after is
delivered from its record. A node watches from the App's start.
"""

from __future__ import annotations

import asyncio
import logging
import time

import orjson

from ..runs.redis.layout import Keys
from ..tasks import wait_then_cancel
from .runs import RunRecord, terminal_event
from .shared import SETTLED

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
        self.looking = False  # a look is under way (``close`` lets it finish)
        self.closing = False

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

    async def close(self, timeout: float) -> None:
        """At shutdown, before the deliveries are waited for: no more looks, and
        one under way is let finish (at most ``timeout`` seconds), so a webhook
        it took off the owed runs is sent, not dropped."""
        self.closing = True
        watcher = self.watcher
        if watcher is None:
            return
        if not self.looking:
            watcher.cancel()  # between two looks: asleep
        await wait_then_cancel([watcher], timeout)
        self.watcher = None

    async def give_back(self, undelivered: list[tuple[str, dict]]) -> None:
        """The deliveries this node took but did not make before it shut down
        (``webhooks.Delivery.settle``): owed again, so another node delivers them
        (its looks take an ended run's after ``grace``)."""
        for url, payload in undelivered:
            thread_id, run_id = payload.get("thread_id"), payload.get("run_id")
            try:
                await self.owe(thread_id, run_id, url)
            except Exception as error:
                log.error(
                    "webhook for run %s of thread %s not delivered: this node shut down"
                    " before it was, and putting it back on the owed runs failed: %s",
                    run_id,
                    thread_id,
                    error,
                )
            else:
                log.warning(
                    "webhook for run %s of thread %s not delivered before this node shut"
                    " down: owed again, another node delivers it",
                    run_id,
                    thread_id,
                )

    async def _watch(self) -> None:
        while not self.closing:
            await asyncio.sleep(self.every)
            self.looking = True
            try:
                await self.look()
            except Exception as error:  # Redis away: the next look tries again
                log.warning("webhooks: looking at the owed runs failed: %s", error)
            finally:
                self.looking = False

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
                await self._unknown(thread_id, run_id, url.decode())
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

    async def _unknown(self, thread_id: str, run_id: str, url: str) -> None:
        """A run with no log: queued (its record says pending), settled before it
        started (cancelled, or failed: its node shut down), or gone (expired)."""
        shared = self.registry.shared
        fields = await shared.get(thread_id, run_id)
        if fields is not None:
            if fields.get("status") not in SETTLED:
                return  # queued on its node, which delivers when it starts and ends
            if time.time() - (fields.get("updated_at") or 0) < self.grace:
                return  # its own node's to take, at once
            if await self.take(thread_id, run_id):
                self.send(url, RunRecord.of_fields(fields, None))
            return
        if await self.take(thread_id, run_id):
            log.error(
                "webhook for run %s of thread %s not delivered: its node queued it and"
                " went away before it started, and its record expired",
                run_id,
                thread_id,
            )
