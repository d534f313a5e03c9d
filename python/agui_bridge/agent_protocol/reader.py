"""An Agent Protocol stream: a reader of a run's log, writing its events as stream parts.

The projector reads every event from the run's first (its values need the
whole run); the parts of events up to the reader's position are not written.
The last part made from event n carries ``id: n`` (the AG-UI event id), so a
client that resumes after n lost nothing of it and gets nothing twice.
"""

from __future__ import annotations

import asyncio
import contextlib

import orjson

from .. import create_agui_repairer
from ..runs import PING, Trimmed
from ..runs.cursor import _send
from .runs import event_of
from .stream import Projector, made_so_far


def sse(name: str, data, n: int | None = None) -> bytes:
    frame = b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n"
    if n is not None:
        frame += b"id: %d\n" % n
    return frame + b"\n"


async def origin(app, record):
    """The thread's messages and state before the run, for its values."""
    run_log = record.log
    run = run_log.run
    if record.base is None and run is not None:
        record.base, record.state = run.base, run.ctx.state
    if record.base is not None:
        return record.base, record.state or {}
    # A run first seen after it ended: the stored thread without what it made.
    thread = await app.store.load(record.thread_id)
    made = create_agui_repairer(record.thread_id, record.run_id)
    position = 0
    with contextlib.suppress(Trimmed):
        data, _ = run_log.read(position)
        for frame in data.split(b"\n\n"):
            event = event_of(frame) if frame else None
            if event is not None:
                made(event)
    if thread is None:
        return [], {}
    messages = made_so_far(made.snapshot())
    ids = {m["id"] for m in messages}
    # A tool result is the run's by its call: its message id is generated again.
    calls = {m.get("toolCallId") for m in messages if m["role"] == "tool"}
    own = [
        m
        for m in thread.messages
        if m.get("id") in ids or (m.get("role") == "tool" and m.get("toolCallId") in calls)
    ]
    return [m for m in thread.messages if m not in own], thread.state


async def pump(app, conn, record, modes, after: int, gone) -> None:
    """Writes the run's events after ``after`` as stream parts until the run ends.

    The projector reads every event from the first (the values need the
    whole run); the parts of events up to ``after`` are not written. The
    last part made from event n carries ``id: n``, so a client that
    resumes after n lost nothing of it.
    """
    run_log = record.log
    base, state = await origin(app, record)
    projector = Projector(modes, record.assistant_id, record.thread_id, record.run_id, base, state)
    timeout = app.limits.send_timeout
    position = 0
    while not gone.done():
        try:
            data, last = run_log.read(position, app.limits.max_write)
        except Trimmed:
            position = run_log.first - 1  # the oldest events are gone: go on from what is held
            continue
        if data:
            out = []
            n = position
            for frame in data.split(b"\n\n"):
                if not frame:
                    continue
                n += 1
                event = event_of(frame)
                parts = projector.feed(event) if event is not None else []
                if n <= after:
                    continue
                for index, (name, payload) in enumerate(parts):
                    out.append(sse(name, payload, n if index == len(parts) - 1 else None))
            position = last
            if out:
                await _send(conn, b"".join(out), timeout)
            continue
        if run_log.ended:
            return
        waiter = run_log.waiter()
        try:
            done, _ = await asyncio.wait(
                [waiter, gone], timeout=app.keepalive, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            run_log.waiters.discard(waiter)
        if not done:
            await _send(conn, PING, timeout)
