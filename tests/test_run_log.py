"""The run log on its own: ids, reads from any position, trimming, retention
and the per-worker total (no server)."""

from __future__ import annotations

import asyncio
import time

import pytest
from agui_bridge.runs import Limits, Logs, RunLog, Trimmed


def frame(n: int, text: str = "x") -> bytes:
    return b'id: %d\ndata: {"n":%d,"t":"%s"}\n\n' % (n, n, text.encode())


def fill(log: RunLog, batches: list[int], text: str = "x") -> bytes:
    """Appends batches of that many frames; returns every frame's bytes."""
    everything = b""
    n = log.last
    for size in batches:
        data = b"".join(frame(n + i + 1, text) for i in range(size))
        n += size
        log.append(data, n)
        everything += data
    return everything


def test_read_from_any_position_splits_a_batch_only_when_it_must():
    log = RunLog("t", "r")
    everything = fill(log, [1, 3, 1, 4])
    frames = [f + b"\n\n" for f in everything[:-2].split(b"\n\n")]
    for after in range(len(frames) + 1):
        data, last = log.read(after)
        assert data == b"".join(frames[after:])
        assert last == (len(frames) if after < len(frames) else after)
    # a caught-up reader gets the batch object itself, not a copy
    assert log.read(5)[0] is log.chunks[-1]


def test_max_bytes_trims_whole_batches_and_older_cursors_are_told():
    log = RunLog("t", "r", max_bytes=1000)
    fill(log, [5] * 20)
    assert log.size <= 1000 and log.first > 1 and log.last == 100
    with pytest.raises(Trimmed):
        log.read(log.first - 2)
    data, last = log.read(log.first - 1)
    assert last == 100 and data.startswith(b"id: %d\n" % log.first)


def test_open_at_gives_what_was_open_after_each_event():
    log = RunLog("t", "r")
    log.spans += [[2, 5, b"A"], [3, None, b"B"], [6, 8, b"C"]]
    assert log.open_at(1) == []
    assert log.open_at(2) == [b"A"]
    assert log.open_at(4) == [b"A", b"B"]
    assert log.open_at(5) == [b"B"]
    assert log.open_at(7) == [b"B", b"C"]
    assert log.open_at(9) == [b"B"]


async def test_waiters_wake_on_append_and_end():
    log = RunLog("t", "r")
    first = log.waiter()
    fill(log, [1])
    await asyncio.wait_for(first, 1)
    second = log.waiter()
    log.end()
    await asyncio.wait_for(second, 1)
    assert log.waiter().done()  # an ended log never makes a reader wait


def test_retention_and_the_total_bound():
    logs = Logs(Limits(run_retention=0.2, max_total_bytes=10_000))
    old = logs.create("t1", "r1")
    fill(old, [10])
    old.end()
    logs.ended(old)
    assert logs.get("t1", "r1") is old and logs.active_of("t1") is None
    time.sleep(0.3)
    assert logs.get("t1", "r1") is None  # past retention
    assert logs.total == 0
    # past the total: the oldest finished run goes first
    a, b = logs.create("a", "1"), logs.create("b", "1")
    fill(a, [40])
    a.end()
    logs.ended(a)
    fill(b, [40])
    logs.limits = Limits(run_retention=60, max_total_bytes=logs.total + 1)
    assert logs.get("a", "1") is not None
    fill(b, [20])  # the worker is over its total: a (finished) goes
    assert logs.get("a", "1") is None
    assert logs.total == b.size
    # then a live log is trimmed rather than the worker growing
    bound = logs.limits.max_total_bytes
    for _ in range(50):
        fill(b, [10])
        assert logs.total <= bound + 400
    assert b.first > 1 and logs.total == b.size


def test_a_threads_logs_are_the_ones_held_whatever_dropped_the_others():
    """``of_thread`` (a thread's runs, for its run list and its stream) is every
    log held for the thread and no other, after each way a log goes."""
    logs = Logs(Limits(run_retention=60))

    def held(thread_id):
        return {run_id: log for (tid, run_id), log in logs.by_run.items() if tid == thread_id}

    def ended(thread_id, run_id):
        log = logs.create(thread_id, run_id)
        fill(log, [2])
        log.end()
        logs.ended(log)
        return log

    first, second = ended("t", "r1"), ended("t", "r2")
    ended("u", "r1")
    assert logs.of_thread("t") == {"r1": first, "r2": second} == held("t")
    again = logs.create("t", "r1")  # the same run made again replaces its log
    assert list(logs.of_thread("t")) == ["r2", "r1"] and logs.of_thread("t")["r1"] is again
    logs.discard(again)
    assert logs.of_thread("t") == {"r2": second} == held("t")
    logs.drop(second)
    assert logs.of_thread("t") == {} == held("t") and "t" not in logs.threads
    ended("t", "r3")
    logs.drop_thread("t")
    assert logs.of_thread("t") == {} and logs.of_thread("u") == held("u") != {}
    logs.limits = Limits(run_retention=0)
    time.sleep(0.01)
    logs.expire()
    assert logs.threads == {} and logs.by_run == {} and logs.total == 0
