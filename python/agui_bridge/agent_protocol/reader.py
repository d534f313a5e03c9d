"""An Agent Protocol stream: a transform of a run's log (``Parts``) into stream parts,
written by the one stream writer (``runs.cursor.Stream``) like every stream.

The projector reads every event from the run's first (its values need the
whole run); the parts of events up to the reader's position are not written.
The last part made from event n carries ``id: n`` (the AG-UI event id), so a
client that resumes after n lost nothing of it and gets nothing twice.
"""

from __future__ import annotations

import contextlib

import orjson

from .._select import create_agui_repairer
from ..runs import Trimmed
from ..runs.frames import event_of, split
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
        record.base, record.state = run.base, dict(run.ctx.state)
    if record.base is not None:
        return record.base, record.state or {}
    # A run first seen after it ended, or another node's: the stored thread without
    # what it made.
    thread = await app.store.load(record.thread_id)
    made = create_agui_repairer(record.thread_id, record.run_id)
    position = 0
    with contextlib.suppress(Trimmed):
        data, _ = run_log.read(position)
        for frame in split(data):
            event = event_of(frame)
            if event is not None:
                made(event)
    # The state the run started from, where its log keeps it (shared run logs):
    # the stored thread's is the run's own once it saved, or a later run's.
    state0 = getattr(run_log, "state0", None)
    if thread is None:
        return _before([], run_log.turn, []), dict(state0 or {})
    messages = made_so_far(made.snapshot())
    ids = {m["id"] for m in messages}
    # A tool result is the run's by its call: its message id is generated again.
    calls = {m.get("toolCallId") for m in messages if m["role"] == "tool"}
    own = [
        m
        for m in thread.messages
        if m.get("id") in ids or (m.get("role") == "tool" and m.get("toolCallId") in calls)
    ]
    return _before(thread.messages, run_log.turn, own), (
        dict(state0) if state0 is not None else thread.state
    )


def _before(messages: list, turn: list, own: list) -> list:
    """The stored thread's messages before the run: up to its user's turn, else up
    to the first message it made (later runs' messages are not its base, when it is
    read after others ran on the thread). A turn not stored yet (a run read as it
    starts: its turn is saved after RUN_STARTED) is the log's copy of it."""
    mine = {id(m) for m in own}
    asked = {m.get("id") for m in turn if isinstance(m, dict)} - {None}
    last = max((i for i, m in enumerate(messages) if m.get("id") in asked), default=None)
    if last is not None:
        return [m for m in messages[: last + 1] if id(m) not in mine]
    first = next((i for i, m in enumerate(messages) if id(m) in mine), len(messages))
    return [m for m in messages[:first] if id(m) not in mine] + [
        m for m in turn if isinstance(m, dict)
    ]


class Parts:
    """The Agent Protocol's transform of a run's frames (``Stream.follow``): stream parts.

    The projector reads every event from the run's first (its values need the
    whole run); the parts of events up to ``after`` (the reader's resume
    point) are not written. The last part made from event n carries ``id: n``.
    """

    __slots__ = ("after", "projector", "whole")

    def __init__(self, projector: Projector, after: int):
        self.projector = projector
        self.after = after
        # values and updates are made from every event of the run, not only
        # from those this reader is sent.
        self.whole = bool({"values", "updates"} & set(projector.modes))

    @classmethod
    async def of(cls, app, record, modes, after: int) -> Parts:
        base, state = await origin(app, record)
        return cls(
            Projector(
                modes,
                record.assistant_id,
                record.thread_id,
                record.run_id,
                base,
                state,
                subgraphs=bool(record.kwargs.get("stream_subgraphs")),
            ),
            after,
        )

    def __call__(self, data: bytes, first: int) -> bytes:
        out = []
        n = first - 1
        after = self.after
        feed = self.projector.feed
        for frame in split(data):
            n += 1
            event = event_of(frame)
            parts = feed(event) if event is not None else []
            if n <= after:
                continue
            for index, (name, payload) in enumerate(parts):
                out.append(sse(name, payload, n if index == len(parts) - 1 else None))
        return b"".join(out)

    def trimmed(self, position: int, held: int) -> tuple[int | None, bytes]:
        """Events ``position + 1 … held - 1`` were dropped from the log.

        Where the reader was sent none of them and needs none to make its
        parts (no values, no updates), it goes on from what is held. Else it
        is told, with an ``error`` part, and the stream ends: a client cannot
        resume past a gap, so it never gets a stream with events missing.
        """
        if not self.whole and held - 1 <= self.after:
            return held - 1, b""
        message = (
            f"events {position + 1} to {held - 1} of this run are no longer held (the run's log"
            " keeps its newest max_log_bytes); read the thread's state instead"
        )
        return None, sse("error", {"error": "EventsTrimmed", "message": message})
