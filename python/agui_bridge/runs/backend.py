"""Run-log backends, named by URL (``App(runs=...)``; this is the one place the
forms are documented):

``memory://``
    the default: each worker keeps the logs of its own runs. A reader must
    reach the worker that runs the run (one worker, or sticky routing).
``redis://host:port/db`` (``rediss://`` for TLS, ``redis://:password@host…``)
    Redis Streams (``runs.redis``), shared by every worker and node on that
    Redis: a run started anywhere is read, joined, resumed and cancelled from
    anywhere, and a node that dies mid-run has its runs ended (``run_lost``)
    for every reader. Needs the ``redis`` extra (redis-py). One Redis server
    (or a primary with replicas), not Redis Cluster.

Either way a run's frames are encoded once, every response is a cursor on a
``RunLog`` of its own node (``runs.log``) and the SSE ``id:`` is the event's
number n. A backend implements:

``await runs.start(thread_id, run_id, agent_id, owner_id, input_ids, fence, state, turn, branch)``
    -> ``(log, sink)`` (``sink`` None: the run appends to ``log``), or None
    when a newer claim of the thread (``fence``) exists;
``runs.publish(log)``: the log (RUN_STARTED in it) is now the thread's active run;
``await runs.get(thread_id, run_id)`` / ``await runs.active_of(thread_id)`` -> log or None
(a log is found only once it is visible: RUN_STARTED is in);
``await runs.started(thread_id, after)`` -> ``[(claim, run_id), …]``: every run that
claimed the thread with a fence over ``after`` and is still retained, by claim (from
its start, visible or not: a reader learns of every run, however short);
``await runs.cancel(log)`` -> False when the run had already ended;
``runs.renewer(run)`` -> what to call each time the run's lease is renewed, or None;
``runs.ended(log)``, ``await runs.aclose()``; optionally ``runs.presence``,
the readers of its runs counted for every node (``runs.redis.presence``;
without it each process counts its own: ``runs.supersede``).
Calls that need the backend raise ``RunsUnavailable`` when it is unreachable.
"""

from __future__ import annotations

import asyncio
import contextlib

from .limits import Limits
from .log import Logs, RunLog


class MemoryRuns:
    """Each worker's own run logs (the zero-setup default)."""

    def __init__(self, limits: Limits):
        self.logs = Logs(limits)
        self.limits = limits

    async def start(
        self, thread_id, run_id, agent_id, owner_id, input_ids, fence, state, turn=(), branch=None
    ):
        log = self.logs.create(thread_id, run_id, agent_id)
        log.input_ids = input_ids
        log.owner_id = owner_id
        log.claim = fence
        log.branch = branch
        return log, None

    def publish(self, log: RunLog) -> None:
        self.logs.publish(log)

    async def get(self, thread_id: str, run_id: str) -> RunLog | None:
        log = self.logs.get(thread_id, run_id)
        return log if log is not None and log.visible else None

    async def active_of(self, thread_id: str) -> RunLog | None:
        return self.logs.active_of(thread_id)

    async def started(self, thread_id: str, after: int) -> list[tuple[int, str]]:
        # This worker's logs are the thread's runs (a reader must reach this worker).
        return sorted(
            (log.claim, run_id)
            for run_id, log in self.logs.of_thread(thread_id).items()
            if log.claim > after
        )

    def ended(self, log: RunLog) -> None:
        self.logs.ended(log)

    async def cancel(self, log: RunLog) -> bool:
        run = log.run
        if log.ended or run is None or not run.stop():
            return False
        await _settled(run, self.limits.send_timeout)
        return True

    def renewer(self, run):
        return None

    async def aclose(self) -> None:
        pass


async def _settled(run, timeout: float) -> None:
    """Waits (bounded) for a stopped run to close what is open, end its log and
    save. One stopped while its turn was being saved gets its task once that
    save is done (or ends without one, the save having failed)."""
    with contextlib.suppress(TimeoutError, asyncio.CancelledError):
        async with asyncio.timeout(timeout):
            while run.task is None and not run.t.finished:
                await asyncio.sleep(0.01)
            if run.task is not None:
                await asyncio.shield(run.task)


def open_runs(spec, limits: Limits, ids: bool = True, lease_ttl: float = 10.0):
    """A backend from a URL (the forms above) or a backend object as is."""
    if not isinstance(spec, str):
        return spec
    if spec in ("memory://", "memory:"):
        return MemoryRuns(limits)
    if spec.startswith(("redis://", "rediss://", "unix://")):
        # Imported here: the default and the demo need neither redis-py nor a server.
        from .redis import RedisRuns

        return RedisRuns(spec, limits, ids=ids, lease_ttl=lease_ttl)
    raise ValueError(f"unknown runs URL {spec!r} (use memory:// or redis://host:port/db)")
