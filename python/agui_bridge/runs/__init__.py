"""Runs and their streams: run (the agent task → transformer → log), log
(frames with ids, retention), cursor (a reader: prelude, flow control, the pump)."""

from __future__ import annotations

from .cursor import PING, STREAM_HEADERS, Cursor, Stalled, exact_prelude, pump, snapshot_prelude
from .limits import Limits
from .log import Logs, RunLog, Trimmed
from .run import Run

__all__ = [
    "PING",
    "STREAM_HEADERS",
    "Cursor",
    "Limits",
    "Logs",
    "Run",
    "RunLog",
    "Stalled",
    "Trimmed",
    "exact_prelude",
    "pump",
    "snapshot_prelude",
]
