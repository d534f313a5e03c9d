"""A server process's CPU time, for the benches that divide it by what it served."""

from __future__ import annotations

import contextlib
import os


def worker_cpu(pid: int) -> float:
    """The CPU seconds of every thread of ``pid`` (granian's Rust I/O threads
    too), in nanoseconds from schedstat: ``/proc/PID/stat`` counts clock ticks
    (10 ms), coarser than a run of thousands of events, or the difference a
    change makes to it."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with (
            contextlib.suppress(OSError, ValueError, IndexError),
            open(f"/proc/{pid}/task/{task}/schedstat") as fh,
        ):
            total += int(fh.read().split()[0])
    return total / 1e9
