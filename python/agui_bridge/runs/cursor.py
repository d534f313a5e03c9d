"""A reader of a run log: the prelude it needs, then the frames, with flow control.

Every response that streams a run (the POST that started it, a reconnect, a
viewer, an Agent Protocol stream) is a cursor: a position in the run's log.
One writer (``Stream``, made by ``open_stream``) serves them all, and flow
control lives here only:

- A cursor takes at most ``max_write`` bytes from the log per write. Under
  ASGI ``send`` waits while the server's buffers are full, so a client that
  stops reading pins one write plus the few sends the server queues; the run
  and the other readers never wait for it, and nothing is copied for it:
  falling behind costs a position, not a buffer.
- Under RSGI nothing bounds what a client that stops reading pins but the
  run's own output, and nothing here can: granian (2.8) hands each RSGI
  ``send_bytes`` to an unbounded channel and resolves it at once
  (``src/rsgi/io.rs``; its 2.8.0 backpressure change bounded only ASGI and
  WSGI), and RSGI tells the app nothing of what the socket still holds, so a
  reader that stopped cannot be told from one that reads, and a cap on what
  is handed over would cut off readers that keep up. Each non-reading RSGI
  reader holds a copy of every frame sent after its socket filled.
  ``agui-bridge serve`` runs the ASGI interface, which measured as fast
  (``benches/RESULTS.md``).
- A cursor is disconnected, without a terminal event (it can resume by id),
  when the frames after its position were trimmed from the log, or (ASGI)
  when a write makes no progress for ``send_timeout`` seconds. A stream
  that transforms the frames (the Agent Protocol's parts) says so first in
  its own terms (an ``error`` part): its client cannot resume past a gap.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from functools import partial

from ..errors import Closed
from ..parts import legacy_readable
from ..run_input import off_loop
from ..turns import held_ids
from .downgrade import run_speaks_v1
from .frames import frame
from .log import RunLog, Trimmed
from .replay import Replay, held_frames, replay, replay_frames

log = logging.getLogger("agui_bridge.runs")

PING = b": ping\n\n"
STREAM_HEADERS = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
]


def _covering(frames: list[bytes], n: int, ids: bool) -> bytes:
    """The prelude frames; the last carries the id of the last event they cover."""
    if ids and frames and n > 0:
        frames[-1] = b"id: %d\n" % n + frames[-1]
    return b"".join(frames)


def exact_prelude(run_log: RunLog, after: int, ids: bool) -> bytes:
    """RUN_STARTED and the STARTs re-opening what was open after event ``after``."""
    if after == 0:
        return b""
    return _covering([run_log.started, *run_log.open_at(after)], after, ids)


def snapshot_prelude(
    run_log: RunLog, ids: bool, thread=None, played: Replay | None = None
) -> tuple[bytes, int]:
    """The join prelude and the position the cursor goes on from, on any node.

    RUN_STARTED, MESSAGES_SNAPSHOT (the thread with this run's progress so far),
    STATE_SNAPSHOT and the events re-opening what is open with what it
    streamed (``t.snapshot()``: each streamed piece reaches the reader once);
    for a finished run (``thread``: the stored thread, which holds all of it)
    the cursor then reads only the terminal event. ``played``: a shared log's
    frames read already (``replayed``), the cursor going on after the last.
    """
    run = run_log.run
    if run is not None and not run_log.ended:
        run.flush()  # what the snapshot holds must be in the log, and no more
        snap = run.snapshot()
        messages = snap["messages"]
        after = run_log.last
        if run.ended_in_log:
            after -= 1  # the terminal event is in: the cursor reads it next
    elif not run_log.ended:
        # A run read from a shared log (another node's, or this node's through
        # the log): the prelude is rebuilt from the frames held, the thread as
        # stored and the user's turn (stored once the run began: maybe not yet),
        # the same on every node.
        if played is None:
            played = replay(run_log, thread_ids(thread))
        snap = played.snapshot
        own = snap["messages"]
        turn = run_log.turn
        mine = {m["id"] for m in own} | {m["id"] for m in turn}
        stored = on_branch(thread.messages if thread is not None else [], run_log.branch)
        messages = [m for m in stored if m.get("id") not in mine] + turn + own
        after = played.last
        if played.terminal:
            after -= 1
    else:
        messages = thread.messages if thread is not None else []
        snap = {"state": thread.state if thread is not None else {}, "open": []}
        after = run_log.last - 1
    return join_prelude(run_log.started, messages, snap["state"], snap["open"], after, ids), after


def thread_ids(thread) -> list[str]:
    """The message ids of the stored thread: those a run's own ids skipped (a
    reused runId), for its replay."""
    return list(held_ids(thread)[0]) if thread is not None else []


async def replayed(run_log: RunLog, thread) -> Replay:
    """A shared log's frames put through the events dialect for a join: taken
    here, read in a thread when long (``off_loop``: a run's log may be many MiB)."""
    whole = await run_log.whole()  # what this node's copy no longer holds
    data, last = whole if whole is not None else held_frames(run_log)
    return await off_loop(len(data), replay_frames, run_log, data, last, thread_ids(thread))


def on_branch(stored: list[dict], branch: dict | None) -> list[dict]:
    """The stored messages a run's branch keeps (``RunLog.branch``): those up to
    and including its branch point, whether or not its cut is stored yet (the
    turn and the run's own output come after them)."""
    if branch is None:
        return stored
    after = branch.get("after")
    if after is None:
        return []
    for at, message in enumerate(stored):
        if message.get("id") == after:
            return stored[: at + 1]
    return stored


def join_prelude(
    started: bytes, messages: list, state: dict, opens: list[dict], after: int, ids: bool
) -> bytes:
    """The frames a joining reader gets before the log's frames after ``after``:
    ``started`` (the RUN_STARTED frame, no id), the snapshots, then ``opens``;
    the last frame carries ``after`` as its id. A run of a 0.0.x client
    (``started`` without ``protocolVersion``) gets messages its schema takes
    (``parts.legacy_readable``)."""
    if not run_speaks_v1(started):
        messages = legacy_readable(messages)
    frames = [
        started,
        frame({"type": "MESSAGES_SNAPSHOT", "messages": messages}),
        frame({"type": "STATE_SNAPSHOT", "snapshot": state}),
        *[frame(event) for event in opens],
    ]
    return _covering(frames, after, ids)


class Stream:
    """One streamed response: the one writer of every stream of both protocols.

    It owns what a streamed body needs whatever it carries: the disconnect
    watcher (``conn.wait_disconnect()``; granian never cancels a handler whose
    client left), ``: ping`` after ``keepalive`` seconds of silence, the write
    size and the send timeout (flow control: see the module's docstring), and
    what a reader behind a trimmed log gets. ``follow`` writes a run log from
    a position; a ``transform`` (the Agent Protocol's stream parts) maps each
    batch of the log's frames to what is written, and says what a reader
    that lost events to trimming is told. Without one (AG-UI), the log's
    bytes are written as they are: no per-frame work.

    Made by ``open_stream``, which ends the body one way whatever happened.
    """

    __slots__ = (
        "_gone",
        "_lag",
        "_on_left",
        "_ping",
        "_ping_due",
        "_wake",
        "_written_at",
        "conn",
        "keepalive",
        "left",
        "max_write",
        "timeout",
    )

    def __init__(self, conn, limits, keepalive: float, on_left=None):
        self.conn = conn
        self.keepalive = keepalive
        self.timeout = limits.send_timeout
        # Under RSGI a write never waits: a larger one costs nothing more to pin.
        self.max_write = limits.max_write if conn.sends_wait else 4 * limits.max_write
        self.left = False
        self._on_left = on_left
        self._wake: asyncio.Future | None = None
        self._gone: asyncio.Future | None = None
        # One keepalive timer per stream, not one per wait: it fires ``keepalive``
        # after the last write and re-arms itself while writes go on.
        self._ping: asyncio.TimerHandle | None = None
        self._ping_due = False
        self._written_at = 0.0
        # The ops layer's hook (metrics on): how many events behind the run's
        # newest each write of a run log leaves this reader.
        self._lag = getattr(conn, "lag", None)

    def gone(self) -> None:
        """The client left: the writer stops at its next step; ``on_left`` runs once."""
        if self.left:
            return
        self.left = True
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)
        if self._on_left is not None:
            self._on_left()

    async def write(self, data: bytes) -> None:
        if not self.conn.sends_wait or len(data) <= self.max_write:
            await _send(self.conn, data, self.timeout)
            return
        # A large write (a snapshot prelude is as big as the thread) goes out
        # like the log: a reader that stops reading pins one piece, not a copy.
        for start in range(0, len(data), self.max_write):
            await _send(self.conn, data[start : start + self.max_write], self.timeout)

    async def until(self, awaitable) -> bool:
        """Waits for ``awaitable`` while watching the client; False when it left first."""
        task = asyncio.ensure_future(awaitable)
        if not self.left:
            await asyncio.wait([task, self._gone], return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return True
        task.cancel()
        return False

    def _keepalive(self) -> None:
        """The stream's keepalive timer: a ping once the cursor has waited
        ``keepalive`` seconds; re-armed while it writes or waits less."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        wake = self._wake
        if wake is None:  # writing: the silence has not begun
            self._ping = loop.call_at(now + self.keepalive, self._keepalive)
            return
        due = self._written_at + self.keepalive
        if now < due:
            self._ping = loop.call_at(due, self._keepalive)
            return
        self._ping = None
        self._ping_due = True
        if not wake.done():
            wake.set_result(None)

    async def follow(self, run_log: RunLog, position: int, transform=None) -> None:
        """Writes the log's frames after event ``position`` until the run ends.

        Returns when the stream is over (the log ended, the reader was cut off
        or the client left); raises what ``conn.send`` raises when the client is
        gone. ``transform(data, first) -> bytes`` maps frames ``first, …`` (a
        batch of the log) to what is written; ``transform.trimmed(position,
        held) -> (position, bytes)`` answers a reader whose next event is no
        longer held (``held``: the oldest held id): where it goes on, or None
        to end after writing the bytes.
        """
        try:
            await self._follow(run_log, position, transform)
        finally:
            if self._ping is not None:
                self._ping.cancel()
                self._ping = None

    async def _follow(self, run_log: RunLog, position: int, transform) -> None:
        conn = self.conn
        max_write = self.max_write
        loop = asyncio.get_running_loop()
        # RSGI's send never waits: no timeout to arm, one await less per write.
        send = partial(_send, conn, timeout=self.timeout) if conn.sends_wait else conn.send
        while not self.left:
            try:
                data, last = run_log.read(position, max_write)
            except Trimmed:
                resumed, told = (
                    (None, b"") if transform is None else transform.trimmed(position, run_log.first)
                )
                if told:
                    await send(told)
                if resumed is not None:
                    position = resumed
                    continue
                log.warning(
                    "run %s: a reader fell behind what the log holds; disconnected it at event %d",
                    run_log.run_id,
                    position,
                )
                return
            if data:
                if self._lag is not None:
                    self._lag(run_log.last - last)
                if transform is not None:
                    data = transform(data, position + 1)
                    position = last
                    if not data:
                        continue
                    await send(data)
                    continue
                await send(data)
                position = last
                continue
            if run_log.ended:
                return
            self._written_at = loop.time()  # the silence begins
            if self._ping is None:
                self._ping = loop.call_at(self._written_at + self.keepalive, self._keepalive)
            future = self._wake = run_log.waiter()
            try:
                await future
            finally:
                self._wake = None
                run_log.waiters.discard(future)
            if self._ping_due:
                self._ping_due = False
                await send(PING)


@asynccontextmanager
async def open_stream(conn, limits, keepalive: float, run_id: str, headers=(), on_left=None):
    """Starts a 200 event stream on ``conn`` and yields its ``Stream``.

    The body ends one way whatever happened inside: the client leaving
    (``Closed``: ``on_left`` runs), a stalled write (``Stalled``: the
    connection is dropped; the reader resumes by id) or the end of the run.
    """
    stream = Stream(conn, limits, keepalive, on_left)
    await conn.start_stream(200, [*STREAM_HEADERS, *headers])
    gone = stream._gone = asyncio.ensure_future(conn.wait_disconnect())
    gone.add_done_callback(lambda future: future.cancelled() or stream.gone())
    try:
        yield stream
    except Closed:
        stream.gone()
    except Stalled:
        log.warning(
            "run %s: a write made no progress for %.0f s; dropped the connection",
            run_id,
            limits.send_timeout,
        )
    finally:
        gone.cancel()
    await conn.end_stream()


async def _send(conn, data: bytes, timeout: float) -> None:
    if not conn.sends_wait:
        await conn.send(data)  # RSGI: never waits
        return
    try:
        async with asyncio.timeout(timeout):
            await conn.send(data)
    except TimeoutError:
        conn.abort()
        raise Stalled from None


class Stalled(Exception):
    """A write made no progress for ``send_timeout`` seconds (the client stopped reading)."""
