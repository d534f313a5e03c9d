"""A reader of a run log: the prelude it needs, then the frames, with flow control.

Every response that streams a run (the POST that started it, a reconnect, a
viewer) is a cursor: a position in the run's log. One pump (``pump``) serves
them all, and flow control lives here only:

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
  when a write makes no progress for ``send_timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import logging

import orjson

from .log import RunLog, Trimmed
from .replay import replay

log = logging.getLogger("agui_bridge.runs")

PING = b": ping\n\n"
STREAM_HEADERS = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
]


def frame(event: dict) -> bytes:
    return b"data: " + orjson.dumps(event) + b"\n\n"


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


def snapshot_prelude(run_log: RunLog, ids: bool, thread=None) -> tuple[bytes, int]:
    """The join prelude and the position the cursor goes on from, on any node.

    RUN_STARTED, MESSAGES_SNAPSHOT (the thread with this run's progress so far),
    STATE_SNAPSHOT and the events re-opening what is open with what it
    streamed (``t.snapshot()``: each streamed piece reaches the reader once);
    for a finished run (``thread``: the stored thread, which holds all of it)
    the cursor then reads only the terminal event.
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
        # the log): the prelude is rebuilt from the frames held and the thread
        # as stored (which holds the user's turn), the same on every node.
        played = replay(run_log)
        snap = played.snapshot
        own = snap["messages"]
        mine = {m["id"] for m in own}
        stored = thread.messages if thread is not None else []
        messages = [m for m in stored if m.get("id") not in mine] + own
        after = run_log.last
        if played.terminal:
            after -= 1
    else:
        messages = thread.messages if thread is not None else []
        snap = {"state": thread.state if thread is not None else {}, "open": []}
        after = run_log.last - 1
    return join_prelude(run_log.started, messages, snap["state"], snap["open"], after, ids), after


def join_prelude(
    started: bytes, messages: list, state: dict, opens: list[dict], after: int, ids: bool
) -> bytes:
    """The frames a joining reader gets before the log's frames after ``after``:
    ``started`` (the RUN_STARTED frame, no id), the snapshots, then ``opens``;
    the last frame carries ``after`` as its id."""
    frames = [
        started,
        frame({"type": "MESSAGES_SNAPSHOT", "messages": messages}),
        frame({"type": "STATE_SNAPSHOT", "snapshot": state}),
        *[frame(event) for event in opens],
    ]
    return _covering(frames, after, ids)


class Cursor:
    """One reader's position; ``gone()`` wakes its pump when the client leaves."""

    __slots__ = ("future", "left", "position")

    def __init__(self, position: int):
        self.position = position
        self.left = False
        self.future: asyncio.Future | None = None

    def gone(self) -> None:
        self.left = True
        future = self.future
        if future is not None and not future.done():
            future.set_result(None)


async def pump(conn, run_log: RunLog, cursor: Cursor, prelude: bytes, limits, keepalive: float):
    """Writes ``prelude``, then the log after ``cursor.position`` until it ends.

    Returns normally when the stream is over (ended, cut off or the client
    left); raises what the front end's ``send`` raises when the client is gone.
    """
    max_write = limits.max_write if conn.max_write is not None else 4 * limits.max_write
    timeout = limits.send_timeout
    if prelude:
        await _send(conn, prelude, timeout)
    while not cursor.left:
        try:
            data, last = run_log.read(cursor.position, max_write)
        except Trimmed:
            log.warning(
                "run %s: a reader fell behind what the log holds; disconnected it at event %d",
                run_log.run_id,
                cursor.position,
            )
            return
        if data:
            await _send(conn, data, timeout)
            cursor.position = last
            continue
        if run_log.ended:
            return
        future = cursor.future = run_log.waiter()
        try:
            async with asyncio.timeout(keepalive):
                await future
        except TimeoutError:
            await _send(conn, PING, timeout)
        finally:
            cursor.future = None
            run_log.waiters.discard(future)


async def _send(conn, data: bytes, timeout: float) -> None:
    if conn.max_write is None:
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
