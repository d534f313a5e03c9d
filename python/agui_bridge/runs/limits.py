"""The run-stream limits of one App, with their defaults written once."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1 << 20


@dataclass(frozen=True)
class Limits:
    # How long a finished run's log stays readable (resume, join, retry).
    run_retention: float = 600.0
    # A run's log keeps at most this many bytes; past it the oldest frames
    # go and cursors older than what is left get the join prelude instead.
    max_log_bytes: int = 16 * MIB
    # Every log of the worker together; past it the oldest finished runs go.
    max_total_bytes: int = 256 * MIB
    # The most a response hands its transport at once. Under ASGI a send
    # waits while the server's buffers are full, so this (times the few
    # sends a server queues) is what a client that stops reading can pin.
    max_write: int = 16 * 1024
    # A write that makes no progress this long ends the stream (ASGI): the
    # client stopped reading; it can resume by id.
    send_timeout: float = 30.0
