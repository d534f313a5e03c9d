"""The one reading and writing of the SSE frames a run log holds.

A frame is ``id: n\\n`` (when event ids are on) and ``data: {json}\\n``, ended
by a blank line; the JSON is on one line, so ``\\n\\n`` ends each frame and no
frame holds a blank line inside. Everything that makes a frame of an event
or reads events back (the Agent Protocol's parts, a replay, a log's terminal
event, a mirrored log's first frame) does it here.
"""

from __future__ import annotations

import orjson


def frame(event: dict) -> bytes:
    """An event as a frame without id."""
    return b"data: " + orjson.dumps(event) + b"\n\n"


def split(data: bytes) -> list[bytes]:
    """The frames of ``data`` (each without its blank line)."""
    return [f for f in data.split(b"\n\n") if f]


def first_frame(data: bytes) -> bytes:
    """The first frame of ``data`` without its ``id:`` line, blank line included."""
    found = data[: data.index(b"\n\n") + 2]
    if found.startswith(b"id: "):
        found = found[found.index(b"\n") + 1 :]
    return found


def event_of(frames: bytes, last: bool = False) -> dict | None:
    """The event of the first (or ``last``) frame of ``frames``; None without one."""
    # A data line starts the data or follows a newline: the JSON itself may hold
    # "data: " (a delta, a message), never a newline.
    if last:
        at = frames.rfind(b"\ndata: ")
        at = at + 1 if at >= 0 else (0 if frames.startswith(b"data: ") else -1)
    elif frames.startswith(b"data: "):
        at = 0
    else:
        at = frames.find(b"\ndata: ")
        at = at + 1 if at >= 0 else -1
    if at < 0:
        return None
    try:
        return orjson.loads(frames[at + 6 :].split(b"\n", 1)[0])
    except orjson.JSONDecodeError:
        return None


def events_of(data: bytes) -> list[dict]:
    """The events of every frame of ``data`` (``id:`` lines and comments skipped)."""
    return [e for e in map(event_of, split(data)) if e is not None]
