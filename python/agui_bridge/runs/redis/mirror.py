"""This node's copy of a run whose log is on Redis, and the one reader that feeds it."""

from __future__ import annotations

import asyncio
import logging

import orjson

from ...errors import RunsUnavailable
from ...run_input import off_loop
from ..frames import first_frame
from ..log import Logs, RunLog
from ..replay import frames_of, held_frames, replay_frames
from .client import DOWN, Client
from .layout import GONE, Keys

log = logging.getLogger("agui_bridge.runs")

# How long a reader's XREAD blocks before it checks that the run's node is alive.
BLOCK_MS = 500
READ_COUNT = 1000


class Mirror(RunLog):
    """This node's copy of a run's log, fed by one blocking reader."""

    __slots__ = ("client", "fence", "keys", "node", "position", "primed", "reader", "state0")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.keys = Keys(self.thread_id, self.run_id)
        self.fence = b""  # the run's token (a reused runId is another run)
        self.node = ""
        self.state0: dict = {}
        self.position = b"0-0"  # the id of the last entry read
        self.primed = asyncio.Event()  # caught up with the stream once
        self.reader: asyncio.Task | None = None
        self.client: Client | None = None  # set by ``Reading.mirror``

    async def whole(self) -> tuple[bytes, int] | None:
        """What Redis holds of the run up to this copy's newest entry, when this
        copy was trimmed (``max_log_bytes``) past events Redis still has."""
        if self.first <= 1 or self.client is None:
            return None
        upto, last = self.position, self.last
        chunks: list[bytes] = []
        earliest = 0
        start = b"-"
        while True:
            entries = await self.client.call("xrange", self.keys.log, start, upto, READ_COUNT)
            for _, fields in entries:
                data = fields.get(b"d")
                if data:
                    earliest = earliest or int(fields.get(b"a") or 0)
                    chunks.append(data)
            if len(entries) < READ_COUNT:
                break
            start = b"(" + entries[-1][0]
        if not chunks or earliest >= self.first:
            return None  # Redis trimmed them too (MAXLEN): this copy is as good
        return b"".join(chunks), last

    def apply(self, entry_id: bytes, fields: dict) -> None:
        data = fields.get(b"d") or b""
        spans = fields.get(b"s")
        ops = ()
        if spans:
            ops = [
                (o[0], o[1], o[2], o[3], o[4].encode()) if o[0] == "o" else tuple(o)
                for o in orjson.loads(spans)
            ]
        if data:
            first = int(fields.get(b"a") or 0)
            if self.last == 0 and first > 1:
                self.first = first  # the stream was trimmed before this node read it
            if not self.started and first == 1:
                self.started = first_frame(data)
            self.append(data, int(entry_id.split(b"-", 1)[0]), ops)
        elif ops:
            self.append(b"", self.last, ops)
        self.position = entry_id
        if fields.get(b"e"):
            self.end()


class Reading:
    """This node's mirrors of shared run logs: one blocking XREAD per run, the
    check that the run's node is alive, and what readers get when Redis is not."""

    def __init__(
        self, client: Client, logs: Logs, local: dict, block_ms: int, retention: int, ids: bool
    ):
        self.client = client
        self.logs = logs
        self.local = local  # the runs this node runs (their sinks), by (thread, run)
        self.block_ms = block_ms
        self.retention = retention
        self.ids = ids

    def mirror(self, thread_id: str, run_id: str) -> Mirror:
        old = self.logs.get(thread_id, run_id)
        if old is not None and old.reader is not None:
            old.reader.cancel()
        mirror = self.logs.create(thread_id, run_id, cls=Mirror)
        mirror.client = self.client
        self.logs.active.pop(thread_id, None)  # Redis knows the active run
        return mirror

    def read(self, mirror: Mirror) -> None:
        mirror.reader = asyncio.get_running_loop().create_task(self._reader(mirror))

    async def primed(self, mirror: Mirror) -> None:
        waiter = asyncio.ensure_future(mirror.primed.wait())
        await asyncio.wait([waiter, mirror.reader], return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if not mirror.primed.is_set():
            raise RunsUnavailable("the run log is unreachable")

    async def _reader(self, mirror: Mirror) -> None:
        """The one XREAD of this run on this node: entries → the mirror's frames."""
        self.client.open()
        blocking = self.client.blocking
        key = mirror.keys.log
        try:
            while not mirror.ended:
                block = self.block_ms if mirror.primed.is_set() else None
                self.client.calls["xread"] += 1
                reply = await blocking.xread({key: mirror.position}, count=READ_COUNT, block=block)
                entries = reply[0][1] if reply else []
                for entry_id, fields in entries:
                    mirror.apply(entry_id, fields)
                if len(entries) < READ_COUNT:
                    mirror.primed.set()
                if not entries and block is not None and not mirror.ended:
                    await self._check_alive(mirror)
            mirror.primed.set()
            self.logs.ended(mirror)
        except asyncio.CancelledError:
            raise
        except (*DOWN, RunsUnavailable) as error:
            await self._unreachable(mirror, error)
        except Exception:
            log.exception("run %s: reading its log failed", mirror.run_id)
            await self._unreachable(mirror, None)

    async def _check_alive(self, mirror: Mirror) -> None:
        keys = mirror.keys
        if await self.client.call("exists", keys.alive, patient=True):
            return
        # The run's node stopped renewing: end the run for every reader, once,
        # closing all it opened, also before what this copy still holds.
        whole = await mirror.whole()
        played = await _replayed(mirror, whole if whole is not None else held_frames(mirror))
        events = []
        if played.terminal:
            entry_id, first, data = b"%d-1" % mirror.last, b"0", b""
        else:
            events = played.closing_events("the node running this run was lost", "run_lost")
            first = mirror.last + 1
            data = frames_of(events, first, self.ids)
            entry_id, first = b"%d-0" % (first + len(events) - 1), b"%d" % first
        result = await self.client.script(
            "lose",
            [keys.log, keys.meta, keys.alive, keys.active],
            [mirror.position, entry_id, first, data, mirror.run_id, self.retention],
            patient=True,
        )
        if result == 1:
            log.warning("run %s of thread %s: its node was lost", mirror.run_id, mirror.thread_id)
        elif result == -3:
            # The run's keys are gone (FLUSHALL, eviction, a failover to an
            # empty replica): nothing can be appended for every node at once,
            # so each node ends its own copy, the same way, and stops reading.
            log.error(
                "run %s of thread %s: its keys are gone from Redis", mirror.run_id, mirror.thread_id
            )
            if events:
                events[-1]["message"] = "the run's log was lost from Redis"
            self._end_copy(mirror, events)
            self._stop_local(mirror, GONE)

    async def _unreachable(self, mirror: Mirror, error) -> None:
        """Redis cannot be read: this node's readers get the closers and
        RUN_ERROR runs_unavailable; the copy is dropped, so a later request
        reads Redis again."""
        log.error("run %s: its log is unreachable: %s", mirror.run_id, error)
        if not mirror.ended:
            played = await _replayed(mirror, held_frames(mirror))
            events = []
            if not played.terminal:
                events = played.closing_events("the run log is unreachable", "runs_unavailable")
            self._end_copy(mirror, events)
        self.logs.discard(mirror)
        self._stop_local(mirror, None)

    def _end_copy(self, mirror: Mirror, events: list[dict]) -> None:
        """Ends this node's copy with ``events`` (the closers and a RUN_ERROR)."""
        if events:
            data = frames_of(events, mirror.last + 1, self.ids)
            mirror.append(data, mirror.last + len(events))
        mirror.end()

    def _stop_local(self, mirror: Mirror, error) -> None:
        """Stops the run of this copy if this node runs it (it stores its turn)."""
        sink = self.local.get((mirror.thread_id, mirror.run_id))
        if sink is not None and not sink.ended:
            sink.failed(False, error)
        elif sink is not None and sink.run is not None:
            sink.run.log_failed(False, RunsUnavailable("the run log is unreachable"))

    # -- control ---------------------------------------------------------------


async def _replayed(mirror: Mirror, frames: tuple[bytes, int]):
    """``frames`` (taken on the loop, where the copy is appended to) put through
    the events dialect, in a thread when long: a run's log may be many MiB."""
    data, last = frames
    return await off_loop(len(data), replay_frames, mirror, data, last)
