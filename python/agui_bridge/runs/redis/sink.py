"""Where a run on this node appends when its log is on Redis."""

from __future__ import annotations

import asyncio
import contextvars
import logging

import orjson

from ...errors import RunsUnavailable
from .client import DOWN, Client, RedisError
from .layout import GONE, MAX_ENTRIES, Keys

log = logging.getLogger("agui_bridge.runs")


class RedisSink:
    """Where a run on this node appends: batches go to Redis, one round trip
    per run-loop flush at most (all that queued while one was in flight)."""

    __slots__ = (
        "client",
        "end_id",
        "ended",
        "fence",
        "handoff",
        "keys",
        "last",
        "local",
        "owner",
        "queue",
        "retention",
        "run",
        "run_id",
        "started",
        "task",
        "thread_id",
    )

    def __init__(
        self, client: Client, local: dict, retention: int, thread_id: str, run_id: str, fence: bytes
    ):
        self.client = client
        self.local = local  # the runs this node runs, by (thread, run)
        self.retention = retention
        self.thread_id = thread_id
        self.run_id = run_id
        self.keys = Keys(thread_id, run_id)
        self.fence = fence
        self.last = 0
        self.queue: list = []
        self.ended = False
        self.end_id = b""
        self.started = b""
        self.run = None
        self.task: asyncio.Task | None = None
        # The task that started the drain while another may still take it over
        # (None: the drain runs where it should, or none runs).
        self.owner: asyncio.Task | None = None
        self.handoff: contextvars.Context | None = None

    def bind(self, run) -> None:
        self.run = run
        self.local[(self.thread_id, self.run_id)] = self

    def append(self, data: bytes, last_id: int, spans=()) -> None:
        if self.ended or not data:
            return
        ops = b""
        if spans:
            ops = orjson.dumps([op if op[0] == "c" else (*op[:4], op[4].decode()) for op in spans])
        self.queue.append((b"%d-0" % last_id, b"%d" % (self.last + 1), data, ops))
        self.last = last_id
        self._kick()

    def end(self) -> None:
        if self.ended:
            return
        self.ended = True
        self.end_id = b"%d-1" % self.last
        self._kick()

    def _kick(self) -> None:
        if self.task is None:
            # Started by a task (the request appends RUN_STARTED), or by a
            # callback (the run's scheduled flush: no task; its drain then runs
            # in a copy of the run's context, and nothing is handed over).
            self.owner = asyncio.current_task()
            self.task = asyncio.get_running_loop().create_task(self._drain())
            return
        if (
            self.handoff is None
            and self.owner is not None
            and asyncio.current_task() is not self.owner
        ):
            # What the run queued (from its task or its flush callbacks) while the
            # request's batch was in flight goes out in the run's context (its
            # trace span), by a drain started there once this one's round trip is
            # back (one drain at a time keeps the batches in order). Once per drain.
            self.owner = None
            self.handoff = contextvars.copy_context()

    async def _drain(self) -> None:
        try:
            while self.queue or self.end_id:
                if self.handoff is not None:
                    context, self.handoff = self.handoff, None
                    self.task = asyncio.get_running_loop().create_task(
                        self._drain(), context=context
                    )
                    return
                batch, self.queue = self.queue, []
                end_id = self.end_id if not self.queue else b""
                if end_id:
                    self.end_id = b""
                args = [self.fence, self.retention, MAX_ENTRIES, end_id, self.run_id]
                for entry in batch:
                    args.extend(entry)
                keys = self.keys
                try:
                    result = await self.client.script(
                        "append",
                        [keys.log, keys.meta, keys.fence, keys.active, keys.alive],
                        args,
                        patient=True,
                    )
                except (*DOWN, RedisError) as error:
                    # Unreachable, or refusing (out of memory, read-only…): the
                    # batch is not in the log, so the run fails, loudly, rather
                    # than its readers missing events the next batch skips past.
                    self.failed(False, error)
                    return
                if result != 1:
                    # -1/-2: fenced off or ended by another node; -3: the log is
                    # gone (Redis lost it: its readers are told run_lost).
                    self.failed(result in (-1, -2), GONE if result == -3 else None)
                    return
        finally:
            if self.task is asyncio.current_task():
                self.task = None
                self.owner = None  # not kept alive (a request's task and its frames)
            if self.task is None and self.ended and not self.queue and not self.end_id:
                self.local.pop((self.thread_id, self.run_id), None)

    def failed(self, lost: bool, error) -> None:
        self.queue = []
        self.handoff = None
        self.end_id = b""
        self.ended = True
        if lost:
            log.error("run %s: the log refused its frames (lease lost)", self.run_id)
        else:
            log.error("run %s: appending to Redis failed: %s", self.run_id, error)
        self.local.pop((self.thread_id, self.run_id), None)
        if self.run is not None:
            reason = f": {error}" if error is not None else ""
            self.run.log_failed(lost, RunsUnavailable(f"the run log is unreachable{reason}"))
