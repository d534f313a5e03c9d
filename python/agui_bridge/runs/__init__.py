"""Runs and their streams: run (the agent task → transformer → log), log
(frames with ids, retention), cursor (a reader: prelude, flow control, the one stream writer)."""

from __future__ import annotations

from .cursor import (
    PING,
    STREAM_HEADERS,
    Stalled,
    Stream,
    exact_prelude,
    open_stream,
    snapshot_prelude,
)
from .limits import Limits
from .log import Logs, RunLog, Trimmed
from .run import Run

__all__ = [
    "PING",
    "STREAM_HEADERS",
    "Limits",
    "Logs",
    "Run",
    "RunLog",
    "Stalled",
    "Stream",
    "Trimmed",
    "exact_prelude",
    "open_stream",
    "snapshot_prelude",
]
