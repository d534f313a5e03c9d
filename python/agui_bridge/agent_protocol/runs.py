"""Agent Protocol runs: the records of one worker's runs, over both protocols.

A run started over the Agent Protocol has a record from the moment it is
asked for (``pending`` while it waits its turn); once started it is a run
like any other, with its log in ``app.runs``. A run started over AG-UI has
no record of ours: its log is enough to show it as a Run (``running`` while
its log is live), so both protocols see one set of runs per thread. Records
live as long as their run's log (the run retention), or while pending.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from datetime import UTC, datetime

from ..runs.frames import event_of
from ..tasks import wait_then_cancel
from .shared import settled_before, shared_records

logger = logging.getLogger("agui_bridge.agent_protocol")  # (`log` names run logs here)


def iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def terminal_event(run_log) -> dict | None:
    """The last event of an ended log (RUN_FINISHED or RUN_ERROR), else None."""
    if not run_log.ended or not run_log.chunks:
        return None
    return event_of(run_log.chunks[-1], last=True)


class RunRecord:
    __slots__ = (
        "assistant_id",
        "base",
        "cancelled",
        "created_at",
        "failed",
        "kwargs",
        "log",
        "metadata",
        "run_id",
        "settled_at",
        "started",
        "state",
        "stopped",
        "stored",
        "strategy",
        "thread_id",
        "updated_at",
    )

    def __init__(self, thread_id, run_id, assistant_id, metadata, kwargs, strategy, log=None):
        self.thread_id = thread_id
        self.run_id = run_id
        self.assistant_id = assistant_id
        self.metadata = metadata
        self.kwargs = kwargs
        self.strategy = strategy
        self.created_at = self.updated_at = time.time()
        self.log = log
        self.failed: str | None = None  # why it could not start
        self.cancelled = False
        # Stopped on its own node (a supersede): its log here ends like a finish.
        self.stopped = False
        # The thread's messages and state when the run started (what its stream
        # builds on), taken from the live run.
        self.base: list | None = None
        self.state: dict | None = None
        self.started = asyncio.Event()  # set once it started, failed or was cancelled
        self.stored: str | None = None  # its status as shared, for a run whose log is gone
        self.settled_at: float | None = None  # when first found settled with no log here
        if log is not None:
            self.started.set()
            self.took(log)

    def took(self, log) -> None:
        """The run started with this log."""
        self.log = log
        self.updated_at = time.time()
        run = log.run
        if run is not None:
            # A copy: the run's state object takes its snapshots as it goes.
            self.base, self.state = run.base, dict(run.ctx.state)
        self.started.set()

    def settled_unstarted(self) -> None:
        """It settled before its run started (cancelled, or it could not start):
        it changed now, and whoever waits for its start is told."""
        self.updated_at = time.time()
        self.started.set()

    @property
    def updated(self) -> float:
        """When it last changed: its log's end once it ended (a list of shared
        records reads a run's age from it), else when it started or was made."""
        log = self.log
        if log is not None and log.ended_wall is not None:
            return max(self.updated_at, log.ended_wall)
        return self.updated_at

    @property
    def status(self) -> str:
        log = self.log
        if log is None and self.stored is not None and not self.cancelled:
            return self.stored
        if log is None:
            if self.cancelled:
                return "interrupted"
            return "error" if self.failed is not None else "pending"
        if not log.ended:
            return "running"
        if self.cancelled or self.stopped or log.stopped:  # a cancel (either protocol), a supersede
            return "interrupted"
        end = terminal_event(log)
        return "error" if end is None or end.get("type") == "RUN_ERROR" else "success"

    def fields(self) -> dict:
        """What the shared records keep of it (``agent_protocol.shared``)."""
        return {
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "assistant_id": self.assistant_id,
            "created_at": self.created_at,
            "updated_at": self.updated,
            "status": self.status,
            "metadata": self.metadata,
            "kwargs": self.kwargs,
            "multitask_strategy": self.strategy,
            "cancelled": self.cancelled,
            "failed": self.failed,
            # Its claim of the thread once started: what orders it (RunLog.claim).
            "claim": self.log.claim if self.log is not None else None,
        }

    @classmethod
    def of_fields(cls, fields: dict, log) -> RunRecord:
        """Another node's record, with the run's log where it is still held."""
        record = cls(
            fields["thread_id"],
            fields["run_id"],
            fields["assistant_id"],
            fields.get("metadata") or {},
            fields.get("kwargs") or {},
            fields.get("multitask_strategy") or "reject",
            log,
        )
        record.created_at = fields.get("created_at") or record.created_at
        record.updated_at = fields.get("updated_at") or record.updated_at
        record.adopt(fields)
        record.stored = fields.get("status")
        return record

    def adopt(self, fields: dict) -> None:
        """What another node changed: a cancel, a failure to start, a stop that
        only the run's own node knows of (its log on this node cannot tell)."""
        self.cancelled = self.cancelled or bool(fields.get("cancelled"))
        self.stopped = self.stopped or fields.get("status") == "interrupted"
        if self.failed is None and fields.get("failed"):
            self.failed = fields["failed"]

    def as_json(self) -> dict:
        return {
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "assistant_id": self.assistant_id,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated),
            "status": self.status,
            "metadata": self.metadata,
            "kwargs": self.kwargs,
            "multitask_strategy": self.strategy,
        }


class Registry:
    """One worker's Agent Protocol run records, and the runs of its logs."""

    # Records kept per thread once their logs are gone (the newest ones).
    KEEP = 50

    def __init__(self, runs):
        """``runs``: the App's run-log backend (``runs.backend``)."""
        self.runs = runs
        self.logs = getattr(runs, "logs", None)  # this worker's logs
        self.records: dict[str, dict[str, RunRecord]] = {}
        # (when to look at a record again, thread, run), in that order: the sweep
        # looks only at records a retention old, so its cost is O(1) a record
        # however many the worker holds.
        self._ages: deque[tuple[float, str, str]] = deque()
        # The records of every node, where the run logs are shared (else None).
        self.shared = shared_records(runs)
        self._tasks: set[asyncio.Task] = set()
        # A run's end, shared once it comes (``share``), by the task waiting for it.
        self._ends: dict[asyncio.Task, object] = {}
        self._settling = False  # the worker is stopping (``settle``)

    def add(self, record: RunRecord) -> None:
        self._keep(record)
        self._prune(record.thread_id)

    def _keep(self, record: RunRecord) -> None:
        self.records.setdefault(record.thread_id, {})[record.run_id] = record
        if self.logs is not None:
            now = time.monotonic()
            if record.log is None and record.started.is_set() and record.settled_at is None:
                record.settled_at = now
            retention = self.logs.limits.run_retention
            self._ages.append((now + retention, record.thread_id, record.run_id))
            self._sweep()

    def _sweep(self) -> None:
        """Drops the records of runs whose logs are gone (past the run retention),
        and those that never had a log here (cancelled or failed before they
        started, another node's) once settled a retention ago."""
        ages = self._ages
        now = time.monotonic()
        if not ages or ages[0][0] > now:
            return
        logs = self.logs
        logs.expire()
        retention = logs.limits.run_retention
        later = []  # put back after the pass: with no retention they are due at once
        while ages and ages[0][0] <= now:
            _, thread_id, run_id = ages.popleft()
            own = self.records.get(thread_id)
            record = own.get(run_id) if own is not None else None
            if record is None:
                continue
            log = record.log
            if log is not None:
                gone = log.ended and logs.by_run.get((thread_id, run_id)) is not log
            elif record.stored is not None:
                gone = True  # another node's: the shared records tell of it again
            elif record.started.is_set():
                # Cancelled or failed before it started: kept a retention from
                # when it was first found so (its log would have been kept as long).
                if record.settled_at is None:
                    record.settled_at = now
                gone = now - record.settled_at >= retention
            else:
                gone = False  # waiting its turn
            if gone:
                del own[run_id]
                if not own:
                    del self.records[thread_id]
            else:
                later.append((now + retention, thread_id, run_id))
        ages.extend(later)

    async def share(self, record: RunRecord) -> None:
        """Publishes the record to every node (shared run logs), and again when its run ends."""
        shared = self.shared
        if shared is None:
            return
        await shared.put(record.fields())
        log = record.log
        if log is not None and not log.ended and not self._settling:
            ending = self._spawn(self._share_end(record, log))
            self._ends[ending] = log
            ending.add_done_callback(self._ends.pop)

    def changed(self, record: RunRecord) -> None:
        """The record changed where nothing waits for it to be shared (sent, not awaited)."""
        if self.shared is not None:
            self._spawn(self.share(record))

    async def _share_end(self, record: RunRecord, log) -> None:
        while not log.ended:
            await log.waiter()
        await self.shared.put(record.fields())

    async def settle(self, timeout: float) -> None:
        """At shutdown, before the shared records' Redis is closed: the writes
        under way (``changed``, a run's end, a delete) are waited for, at most
        ``timeout`` seconds; those left then (another node's run that has not
        ended, Redis away) are cancelled and logged."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout)
        # Past the drain this node's runs have ended: a run still going is
        # another node's, which shares its own end; nothing here waits for it
        # (nor starts waiting: a share under way spawns no waiter any more).
        self._settling = True
        for ending, log in list(self._ends.items()):
            if not log.ended:
                ending.cancel()
        pruning = self.shared.pruning if self.shared is not None else set()
        # A write that ends may spawn another (a run's end shared): looked at again.
        while pending := [t for t in (*self._tasks, *pruning) if not t.done()]:
            left = await wait_then_cancel(pending, deadline - loop.time())
            if left:  # the time is up
                logger.warning("shutdown: %d shared run record write(s) not made", len(left))
                return

    def _spawn(self, coroutine) -> asyncio.Task:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def get(self, thread_id: str, run_id: str) -> RunRecord | None:
        record = self.records.get(thread_id, {}).get(run_id)
        shared = self.shared
        fields = await shared.get(thread_id, run_id) if shared is not None else None
        if record is not None:
            if fields is not None:
                await self._refresh(record, fields)
            return record
        # A run of another worker or node, where the run logs are shared.
        log = await self.runs.get(thread_id, run_id)
        if fields is not None:
            record = RunRecord.of_fields(fields, log)
            self._keep(record)
            return record
        return self._of_log(log) if log is not None else None

    async def _refresh(self, record: RunRecord, fields: dict) -> None:
        record.adopt(fields)
        if record.stored is not None and record.log is None:
            # Another node's run that had not started when it was first seen here.
            record.stored = fields.get("status")
            log = await self.runs.get(record.thread_id, record.run_id)
            if log is not None:
                record.took(log)

    async def of_thread_everywhere(self, thread_id: str) -> list[RunRecord]:
        """The thread's runs on every node (shared run logs), newest first."""
        shared = self.shared
        if shared is None:
            return self.of_thread(thread_id)
        everywhere = await shared.of_thread(thread_id)
        own = self.records.get(thread_id, {})
        old = time.time() - (self.logs.limits.run_retention if self.logs is not None else 0)
        held = self._held(thread_id)
        past: list[RunRecord] = []
        for run_id, fields in everywhere.items():
            record = own.get(run_id)
            if record is not None:
                await self._refresh(record, fields)
                continue
            if settled_before(fields, old) and run_id not in held:
                # Settled a retention ago: its log is gone on every node; listed
                # from its fields alone (no round trip for a log, nothing kept).
                past.append(RunRecord.of_fields(fields, None))
                continue
            log = await self.runs.get(thread_id, run_id)
            self._keep(RunRecord.of_fields(fields, log))
        runs = self.of_thread(thread_id)
        if past:
            runs = sorted([*runs, *past], key=lambda r: r.created_at, reverse=True)
        return runs

    def of_thread(self, thread_id: str) -> list[RunRecord]:
        """The thread's runs, newest first."""
        own = self.records.get(thread_id, {})
        runs = list(own.values())
        held = self._held(thread_id)
        for run_id, log in list(held.items()):  # _of_log's sweep may drop logs
            if run_id not in own:
                runs.append(self._of_log(log))
        runs.sort(key=lambda r: r.created_at, reverse=True)
        return runs

    def delete(self, record: RunRecord) -> None:
        """Forgets an ended run: its record and its log (no reader can join it after)."""
        self.records.get(record.thread_id, {}).pop(record.run_id, None)
        if self.logs is not None and record.log is not None:
            self.logs.drop(record.log)
        if self.shared is not None:
            self._spawn(self.shared.delete(record.thread_id, record.run_id))

    def _held(self, thread_id: str) -> dict:
        """This worker's logs of the thread's runs, by run id."""
        return self.logs.of_thread(thread_id) if self.logs is not None else {}

    def _local(self) -> dict:
        """This worker's logs (of its runs, and its copies of shared ones) by (thread, run)."""
        return self.logs.by_run if self.logs is not None else {}

    def forget(self, thread_id: str) -> None:
        """A deleted thread: its records and its ended runs' logs go (a thread made
        again under that id starts with no runs)."""
        self.records.pop(thread_id, None)
        if self.logs is not None:
            self.logs.drop_thread(thread_id)
        if self.shared is not None:
            self._spawn(self.shared.forget(thread_id))

    def _of_log(self, log) -> RunRecord:
        """A Run for a run started over AG-UI (its log is all there is), kept from
        the first time it is seen."""
        record = RunRecord(log.thread_id, log.run_id, log.agent_id, {}, {}, "reject", log)
        record.created_at = record.updated_at = log.begun
        self.add(record)
        return record

    def _prune(self, thread_id: str) -> None:
        own = self.records.get(thread_id)
        if own is None or len(own) <= self.KEEP:
            return
        held = self._local()
        for run_id, record in list(own.items()):
            if len(own) <= self.KEEP:
                break
            gone = record.log is not None and held.get((thread_id, run_id)) is not record.log
            if gone or (record.log is None and record.started.is_set()):
                del own[run_id]
