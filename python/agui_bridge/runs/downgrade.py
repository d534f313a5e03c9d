"""A 1.0 run read by a reader that did not declare 1.0: what a 0.0.x run gives.

A run's log is written once, in the version its starter declared (contract
section 8), and shared by every reader. A reader that joins or resumes a run
a 1.0 client started, and did not itself declare 1.0 (``agui-protocol-version``
on a GET stream, ``clients/js/reconnect.mjs`` sends it for a 1.0 ``HttpAgent``),
gets the log's frames through ``Downgrade``, the one place they are changed:

- ``RUN_STARTED`` without ``protocolVersion``; ``RUN_FINISHED`` and
  ``RUN_ERROR`` without ``usage``; a ``cancelled`` outcome left out (0.0.58's
  schema takes only ``success`` and ``interrupt``): a stop reads as the plain
  ``RUN_FINISHED`` a 0.0.x run ends a cancel with (a 0.0.x run whose client
  left ends with ``RUN_ERROR``; the log does not say which stop it was);
- ``SUBAGENT_STARTED`` as ``STEP_STARTED`` {stepName: ``subagent_{id}``},
  ``SUBAGENT_FINISHED`` and ``SUBAGENT_ERROR`` as its ``STEP_FINISHED``, the
  events dialect's mapping for a 0.0.x run (0.0.58 has no SUBAGENT_* type);
- a ``MESSAGES_SNAPSHOT`` (a join's prelude) with ``parts.legacy_readable``
  messages, as a 0.0.x run's join gets them.

One event gives one event, so the ids are the log's: a reader resumes by
``Last-Event-ID`` across versions. Only that case pays, and little: a batch
without one of the few type markers (a bytes search, no parsing) is written
as it is; a frame carrying one is parsed, changed and encoded again. A reader
of the run's own version, and a 1.0 reader of a 0.0.x run (1.0 takes 0.0.x
shapes), get the log's bytes with no per-frame work (``for_reader`` is None).
"""

from __future__ import annotations

import orjson

from ..parts import legacy_readable
from ..pure.subagents import step_name
from ..pure.usage import speaks_v1
from .frames import frame

# The types whose frames change; encoders write compact JSON, and a string
# holding these bytes is escaped (\"), so only an event's own "type" matches.
_MARKERS = (b'"type":"RUN_', b'"type":"SUBAGENT_', b'"type":"MESSAGES_SNAPSHOT"')


def run_speaks_v1(started: bytes) -> bool:
    """Whether a run's RUN_STARTED frame is a 1.0 one (it names the version)."""
    return b'"protocolVersion"' in started


def for_reader(run_log, declared: str | None) -> Downgrade | None:
    """The transform a reader that declared ``declared`` needs for ``run_log``; None: none."""
    if speaks_v1(declared) or not run_speaks_v1(run_log.started):
        return None
    return Downgrade()


def downgraded(event: dict) -> dict:
    """One event of a 1.0 run as a 0.0.x run gives it."""
    kind = event.get("type")
    if kind == "RUN_STARTED":
        event.pop("protocolVersion", None)
    elif kind in ("RUN_FINISHED", "RUN_ERROR"):
        event.pop("usage", None)
        outcome = event.get("outcome")
        if isinstance(outcome, dict) and outcome.get("type") == "cancelled":
            del event["outcome"]
    elif kind == "SUBAGENT_STARTED":
        return {"type": "STEP_STARTED", "stepName": step_name(event["subagentRunId"])}
    elif kind in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR"):
        return {"type": "STEP_FINISHED", "stepName": step_name(event["subagentRunId"])}
    elif kind == "MESSAGES_SNAPSHOT":
        event["messages"] = legacy_readable(event["messages"])
    return event


def downgrade_frames(data: bytes) -> bytes:
    """Whole frames of a 1.0 run (the log's, or a prelude) as a 0.0.x run's.

    The frames between those carrying a marker are copied as slices: a batch
    costs its searches, and each changed frame its parse."""
    found = {m: data.find(m) for m in _MARKERS}
    out = []
    done = 0
    while True:
        hits = [at for at in found.values() if at >= 0]
        if not hits:
            break
        at = min(hits)
        # A frame's JSON is one line: the blank lines around ``at`` bound its frame.
        before = data.rfind(b"\n\n", done, at)
        start = before + 2 if before >= 0 else done
        end = data.index(b"\n\n", at) + 2
        out.append(data[done:start])
        out.append(_downgraded_frame(data[start:end]))
        done = end
        for m, where in found.items():
            if 0 <= where < done:
                found[m] = data.find(m, done)
    if not out:
        return data
    out.append(data[done:])
    return b"".join(out)


def _downgraded_frame(raw: bytes) -> bytes:
    """One frame (its ``id:`` line kept, blank line included) through ``downgraded``."""
    head = b""
    if raw.startswith(b"id: "):
        line, _, raw = raw.partition(b"\n")
        head = line + b"\n"
    return head + frame(downgraded(orjson.loads(raw[6:].rstrip(b"\n"))))


class Downgrade:
    """``Stream.follow``'s transform for a 0.0.x reader of a 1.0 run."""

    __slots__ = ()

    def __call__(self, data: bytes, first: int) -> bytes:
        return downgrade_frames(data)

    def trimmed(self, position: int, held: int) -> tuple[None, bytes]:
        # As without a transform: the reader is cut off and resumes by id.
        return None, b""
