"""What a run log's frames add up to, for a node that did not run the run.

A node that reads a run from a shared log (``runs.redis``) has its frames,
not its transformer: a join's prelude (the messages so far, the state) and
the closers of a run that was lost are rebuilt from the frames, through the
same reading of the events the running node's history uses (``History``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from .history import History

_TERMINAL = (b'"type":"RUN_FINISHED"', b'"type":"RUN_ERROR"')


def events_of(data: bytes) -> list[dict]:
    """The events of SSE frames (``id:`` lines and comments skipped)."""
    events = []
    for frame in data.split(b"\n\n"):
        for line in frame.split(b"\n"):
            if line.startswith(b"data: "):
                events.append(orjson.loads(line[6:]))
    return events


@dataclass
class Replay:
    history: History
    state: dict | None = None  # the newest STATE_SNAPSHOT, if any
    terminal: bool = False  # the run's last event is RUN_FINISHED or RUN_ERROR
    events: list[dict] = field(default_factory=list)


def replay(run_log) -> Replay:
    """The run's events held by ``run_log`` (from its first), read once."""
    data, _ = run_log.read(run_log.first - 1) if run_log.last >= run_log.first else (b"", 0)
    events = events_of(data)
    history = History(run_log.run_id)
    history.record(events)
    state = None
    for event in reversed(events):
        if event["type"] == "STATE_SNAPSHOT":
            state = event.get("snapshot")
            break
    terminal = bool(events) and events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")
    return Replay(history, state, terminal, events)


def frames_of(events: list[dict], first: int, ids: bool) -> bytes:
    """``events`` as frames numbered from ``first`` (as the run's transformer numbers them)."""
    out = []
    for n, event in enumerate(events, first):
        data = b"data: " + orjson.dumps(event) + b"\n\n"
        out.append(b"id: %d\n" % n + data if ids else data)
    return b"".join(out)
