"""Run logs: each run's encoded frames, appended once, read by every cursor.

A run log holds the frames of one run in order. Every event has an id ``n``
(1 for ``RUN_STARTED``, +1 per event, no gaps); a batch appended at once is
one entry, remembered with the id of its last event, so a cursor that is
caught up reads whole entries (the same ``bytes`` objects for every reader)
and only a resume in the middle of an entry splits one. Frames never contain
a blank line inside (the JSON is on one line), so ``\\n\\n`` ends each frame.

What a log offers its writer and readers (this class; ``runs.redis``
mirrors it on every node): ``append(data, last_id)``, ``read(after,
max_bytes)``, ``waiter()``, ``end()``, ``first`` / ``last`` / ``ended``, and the trimming that
``max_bytes`` implies. ``Logs`` keeps one worker's logs: lookup by
(thread, run), the active run of a thread, retention and a total bound.

A log is visible (``visible``: found by a reader's lookup) once its first
frame, RUN_STARTED, is in: a reader joining at any moment starts there.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_right
from collections import OrderedDict

from .limits import Limits


class Trimmed(Exception):
    """The frames after the cursor's position were dropped (retention or size)."""


class RunLog:
    __slots__ = (
        "agent_id",
        "begun",
        "branch",
        "chunks",
        "claim",
        "ended",
        "ended_at",
        "ended_wall",
        "ends",
        "first",
        "input_ids",
        "last",
        "max_bytes",
        "open_spans",
        "owner",
        "owner_id",
        "run",
        "run_id",
        "size",
        "spans",
        "started",
        "stopped",
        "thread_id",
        "turn",
        "waiters",
    )

    def __init__(
        self, thread_id: str, run_id: str, max_bytes: int | None = None, agent_id: str = ""
    ):
        self.thread_id = thread_id
        self.run_id = run_id
        self.agent_id = agent_id
        # When the run started, on the wall clock: a run started over AG-UI has no
        # other record of it (agent_protocol.runs dates it by this).
        self.begun = time.time()
        self.owner_id = agent_id  # the agent that owns the thread (see thread_guards)
        self.input_ids: frozenset = frozenset()  # what the run's request carried (turns.carried)
        # The fence of the thread's claim the run took: it orders a thread's runs
        # (each claim's is larger); 0 where the store has no leases.
        self.claim = 0
        # The user's turn (the messages the run stores before its agent starts),
        # for a join rebuilt from the frames before that save is done.
        self.turn: list[dict] = []
        # A run that starts a branch (regenerate, edit): ``{"after": id}``, the
        # last stored message its branch keeps (None: none), for a join built
        # from the stored thread before or after its cut is stored
        # (``cursor.on_branch``); None for a run that appends.
        self.branch: dict | None = None
        self.max_bytes = max_bytes
        self.chunks: list[bytes] = []
        self.ends: list[int] = []  # the id of the last event of each chunk
        self.first = 1  # the id of the oldest event still held
        self.last = 0  # the id of the newest event
        self.size = 0
        self.ended = False
        self.ended_at: float | None = None
        self.ended_wall: float | None = None  # the same moment, on the wall clock
        self.run = None  # the live Run, while it runs
        # The run was stopped (a cancel, a supersede; set by ``Run.stop``): a 0.0.x
        # run's log ends with a plain RUN_FINISHED all the same, so its records
        # learn it here.
        self.stopped = False
        # What the run opened: [start id, end id or None, START frame without id]
        self.spans: list[list] = []
        self.open_spans: dict[tuple, list] = {}  # what is open now, by (kind, id)
        self.started = b""  # the RUN_STARTED frame, without id
        self.waiters: set[asyncio.Future] = set()
        self.owner: Logs | None = None  # counts every log's bytes against a total

    # -- writing -----------------------------------------------------------

    def append(self, data: bytes, last_id: int, spans=()) -> None:
        """Adds a batch of frames whose last event has id ``last_id``.

        ``spans``: what the batch opens ``("o", n, kind, id, START frame)`` and
        closes ``("c", n, kind, id)``, in order (the run computes them once; a
        log on another node receives them with the frames).
        """
        for op in spans:
            self._span(op)
        if not data:
            return
        self.chunks.append(data)
        self.ends.append(last_id)
        self.last = last_id
        self.size += len(data)
        owner = self.owner
        if owner is not None:
            owner.total += len(data)
        if self.max_bytes is not None and self.size > self.max_bytes:
            self._trim(self.max_bytes - self.max_bytes // 4)
        if owner is not None and owner.total > owner.limits.max_total_bytes:
            owner.relieve(self)
        self._wake()

    def _span(self, op) -> None:
        key = (op[2], op[3])
        if op[0] == "o":
            span = [op[1], None, op[4]]
            self.spans.append(span)
            self.open_spans[key] = span
        else:
            span = self.open_spans.pop(key, None)
            if span is not None:
                span[1] = op[1]

    def _trim(self, target: int) -> None:
        # Whole chunks go, oldest first; the newest one always stays.
        count = 0
        size = self.size
        while size > target and count < len(self.chunks) - 1:
            size -= len(self.chunks[count])
            count += 1
        if count:
            self.first = self.ends[count - 1] + 1
            del self.chunks[:count]
            del self.ends[:count]
            if self.owner is not None:
                self.owner.total -= self.size - size
            self.size = size

    def end(self) -> None:
        """No more frames: the terminal event is in."""
        self.ended = True
        self.ended_at = time.monotonic()
        self.ended_wall = time.time()
        self.run = None
        self._wake()

    def _wake(self) -> None:
        waiters = self.waiters
        if waiters:
            self.waiters = set()
            for future in waiters:
                if not future.done():
                    future.set_result(None)

    def waiter(self) -> asyncio.Future:
        """A future that completes at the next append or at the end."""
        future = asyncio.get_running_loop().create_future()
        if self.ended:
            future.set_result(None)
        else:
            self.waiters.add(future)
        return future

    # -- reading -----------------------------------------------------------

    @property
    def visible(self) -> bool:
        """RUN_STARTED is in: a reader may join (before, the run is not told)."""
        return bool(self.started)

    async def whole(self) -> tuple[bytes, int] | None:
        """Every event of the run from its first, and the id of the last, when
        this log no longer holds its first ones but another place does (a
        shared log's copy: ``runs.redis``); None otherwise."""
        return None

    def read(self, after: int, max_bytes: int | None = None) -> tuple[bytes, int]:
        """The frames of events ``after + 1 …`` (at most about ``max_bytes``), and their last id.

        Raises ``Trimmed`` when event ``after + 1`` is no longer held.
        """
        if after >= self.last:
            return b"", after
        if after + 1 < self.first:
            raise Trimmed
        ends = self.ends
        index = bisect_right(ends, after)
        start = ends[index - 1] + 1 if index else self.first
        chunk = self.chunks[index]
        if start <= after:
            # A resume inside a chunk: skip the frames up to ``after``.
            offset = 0
            for _ in range(after - start + 1):
                offset = chunk.index(b"\n\n", offset) + 2
            chunk = chunk[offset:]
        out = [chunk]
        size = len(chunk)
        last = ends[index]
        index += 1
        count = len(ends)
        while index < count and (max_bytes is None or size < max_bytes):
            out.append(self.chunks[index])
            size += len(self.chunks[index])
            last = ends[index]
            index += 1
        return (out[0] if len(out) == 1 else b"".join(out)), last

    def open_at(self, n: int) -> list[bytes]:
        """The START frames (without ids) of what was open after event ``n``."""
        return [
            frame for start, end, frame in self.spans if start <= n and (end is None or end > n)
        ]


class Logs:
    """One worker's run logs, with retention and a total bound."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.by_run: dict[tuple[str, str], RunLog] = {}
        # The same logs by thread, then run (in the order they were created): a
        # thread's runs are listed without a pass over every log the worker holds.
        self.threads: dict[str, dict[str, RunLog]] = {}
        self.active: dict[str, RunLog] = {}
        # Finished logs in the order they ended (oldest first). Ordered: its oldest
        # is found in O(1) however many are kept (a dict's first key is found by
        # scanning past the ones deleted before it), and every request looks.
        self.finished: OrderedDict[tuple[str, str], RunLog] = OrderedDict()
        self.total = 0  # the bytes of every log held

    def create(self, thread_id: str, run_id: str, agent_id: str = "", cls=None) -> RunLog:
        self.expire()
        old = self.by_run.get((thread_id, run_id))
        if old is not None:
            self._unlist(old)
            self.finished.pop((thread_id, run_id), None)
            self.total -= old.size
            old.owner = None
        log = (cls or RunLog)(thread_id, run_id, self.limits.max_log_bytes, agent_id)
        log.owner = self
        self.by_run[(thread_id, run_id)] = log
        self.threads.setdefault(thread_id, {})[run_id] = log
        return log

    def of_thread(self, thread_id: str) -> dict[str, RunLog]:
        """The thread's logs this worker holds, by run id, oldest first (do not change it)."""
        return self.threads.get(thread_id) or {}

    def publish(self, log: RunLog) -> None:
        """The log is the thread's active run (once RUN_STARTED is in it)."""
        self.active[log.thread_id] = log

    def get(self, thread_id: str, run_id: str) -> RunLog | None:
        self.expire()
        return self.by_run.get((thread_id, run_id))

    def active_of(self, thread_id: str) -> RunLog | None:
        log = self.active.get(thread_id)
        return log if log is not None and not log.ended else None

    def ended(self, log: RunLog) -> None:
        """Called once a log has ended: it now counts against retention."""
        if self.active.get(log.thread_id) is log:
            del self.active[log.thread_id]
        key = (log.thread_id, log.run_id)
        if self.by_run.get(key) is log and key not in self.finished:
            self.finished[key] = log
        self.expire()

    def discard(self, log: RunLog) -> None:
        """Forgets a log at once (a copy that can no longer be trusted)."""
        if self._unlist(log):
            self.finished.pop((log.thread_id, log.run_id), None)
            self.total -= log.size
            log.owner = None
        if self.active.get(log.thread_id) is log:
            del self.active[log.thread_id]

    def expire(self) -> None:
        """Drops finished logs past retention, then the oldest ones past the total bound."""
        if not self.finished:
            return
        limits = self.limits
        now = time.monotonic()
        finished = self.finished
        while finished:
            key = next(iter(finished))
            log = finished[key]
            if now - log.ended_at <= limits.run_retention and self.total <= limits.max_total_bytes:
                break
            self._drop(key, log)

    def drop(self, log: RunLog) -> None:
        """Forgets a finished log at once (its run was deleted); a live one stays."""
        key = (log.thread_id, log.run_id)
        if self.finished.get(key) is log:
            self._drop(key, log)

    def drop_thread(self, thread_id: str) -> None:
        """Forgets the thread's finished logs (the thread was deleted)."""
        for log in list(self.of_thread(thread_id).values()):
            self.drop(log)

    def _drop(self, key, log: RunLog) -> None:
        del self.finished[key]
        self.total -= log.size
        log.owner = None
        self._unlist(log)

    def _unlist(self, log: RunLog) -> bool:
        """Takes the log out of both indexes (by run, by thread) if they hold
        it, never out of one alone; whether they did."""
        key = (log.thread_id, log.run_id)
        if self.by_run.get(key) is not log:
            return False
        del self.by_run[key]
        runs = self.threads.get(log.thread_id)
        if runs is not None and runs.get(log.run_id) is log:
            del runs[log.run_id]
            if not runs:
                del self.threads[log.thread_id]
        return True

    def relieve(self, log: RunLog) -> None:
        """Past the total: the oldest finished runs go, then the growing log is trimmed.

        Trimming a live log costs its slow readers their exact position (they
        get the join prelude), never memory for the worker.
        """
        self.expire()
        if self.total > self.limits.max_total_bytes:
            log._trim(log.size // 2)
