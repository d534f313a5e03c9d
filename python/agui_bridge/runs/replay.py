"""What a run log's frames add up to, for a node that did not run the run.

A node that reads a run from a shared log (``runs.redis``) has its frames,
not its transformer: the run's events are put through a transformer of the
events dialect (the events a run sends are already clean, so it passes them
on as they are), whose ``snapshot()`` gives a join's prelude and whose
closers end a run that was lost: one reading of the events, the
transformer's, on every node. A tool result's message id is generated again
(``{runId}:r{n}``): given the thread's ids (a reused runId skipped those), it
is the one sent.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._select import create_agui_repairer
from .frames import events_of, frame


class _Ended(Exception):
    pass


@dataclass
class Replay:
    t: object  # the events-dialect transformer the run's events went through
    snapshot: dict  # its snapshot(): messages, open (with content), state, ...
    terminal: bool  # the run's last event is RUN_FINISHED or RUN_ERROR
    last: int  # the id of the last event it read

    def closing_events(self, message: str, code: str) -> list[dict]:
        """What closes what is open, then RUN_ERROR {message, code}, for readers
        of a run that ended without its terminal event."""
        events = self.t.fail(_Ended(message))
        if events:
            events[-1]["code"] = code
        return events


def replay(run_log, held=()) -> Replay:
    """The run's events held by ``run_log`` (from its first), read once.

    ``held``: the message ids of the run's thread. Those the run skipped are
    skipped again, so its generated ids come out as sent; ids its events carry
    (message and tool call ids) are its own (the thread holds them once the
    run is stored), never skipped.
    """
    return replay_frames(run_log, *held_frames(run_log), held)


def held_frames(run_log) -> tuple[bytes, int]:
    """What ``replay_frames`` reads of ``run_log``: taken on the loop, where the
    log is appended to; the reading may then go to a thread (it is as long as the run)."""
    if run_log.last < run_log.first:
        return b"", run_log.last
    return run_log.read(run_log.first - 1)


def replay_frames(run_log, data: bytes, last: int, held=()) -> Replay:
    """``replay`` of the frames ``data`` (the run's events from its first held, to ``last``)."""
    events = events_of(data)
    # A tool call's message may be named by the call's id (no text before it).
    carried = {event.get(key) for event in events for key in ("messageId", "toolCallId")}
    t = create_agui_repairer(
        run_log.thread_id,
        run_log.run_id,
        dict(getattr(run_log, "state0", None) or {}),
        held_ids=[held_id for held_id in held if held_id not in carried],
    )
    for event in events:
        t(event)
    terminal = bool(events) and events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")
    return Replay(t, t.snapshot(), terminal, last)


def frames_of(events: list[dict], first: int, ids: bool) -> bytes:
    """``events`` as frames numbered from ``first`` (as the run's transformer numbers them)."""
    out = []
    for n, event in enumerate(events, first):
        data = frame(event)
        out.append(b"id: %d\n" % n + data if ids else data)
    return b"".join(out)
