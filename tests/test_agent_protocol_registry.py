"""One worker's Agent Protocol run records (``agent_protocol.runs.Registry``):
what it keeps and for how long, with no server."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from agui_bridge.agent_protocol.runs import Registry, RunRecord
from agui_bridge.runs import Limits
from agui_bridge.runs.backend import open_runs


def record(thread_id: str, run_id: str) -> RunRecord:
    return RunRecord(thread_id, run_id, "agent", {}, {"input": "x" * 1000}, "enqueue")


def test_records_that_never_started_go_a_retention_after_they_settled():
    """A queued run cancelled or failed before it started has no log: its
    record must still go after the run retention (it held its whole input),
    while a run still waiting its turn keeps its record."""

    async def go():
        registry = Registry(open_runs("memory://", Limits(run_retention=0.05)))
        for n in range(300):
            settled = record(f"t{n}", "r")
            if n % 2:
                settled.cancelled = True
            else:
                settled.failed = "the thread is busy"
            settled.started.set()
            registry.add(settled)
        waiting = record("w", "r")
        registry.add(waiting)
        assert len(registry.records) == 301
        await asyncio.sleep(0.1)
        registry.add(record("late", "r"))
        assert set(registry.records) == {"w", "late"}
        await asyncio.sleep(0.1)
        registry.add(record("later", "r"))
        assert "w" in registry.records  # still pending: looked at again later
        waiting.cancelled = True
        waiting.started.set()
        await asyncio.sleep(0.1)
        registry.add(record("last", "r"))
        assert "w" in registry.records  # found settled now: kept a retention from now
        await asyncio.sleep(0.1)
        registry.add(record("after", "r"))
        assert "w" not in registry.records

    asyncio.run(go())


@pytest.mark.timeout(10)
def test_no_retention_keeps_a_waiting_record_and_never_spins():
    """``run_retention=0`` (nothing kept for resumes) is a setting: a record
    still waiting its turn is looked at again later, not again and again now."""

    async def go():
        registry = Registry(open_runs("memory://", Limits(run_retention=0)))
        waiting = record("w", "r")
        registry.add(waiting)
        registry.add(record("u", "r"))
        assert {"w", "u"} <= set(registry.records)

    asyncio.run(go())


def test_a_run_cancelled_after_waiting_long_is_kept_a_retention_from_then():
    """A queued run cancelled after waiting longer than the retention still
    answers (interrupted) for a retention after the cancel."""

    async def go():
        registry = Registry(open_runs("memory://", Limits(run_retention=0.2)))
        waiting = record("w", "r")
        registry.add(waiting)
        await asyncio.sleep(0.25)
        registry.add(record("a", "r"))  # the sweep looks: still waiting
        waiting.cancelled = True
        waiting.started.set()
        await asyncio.sleep(0.25)
        registry.add(record("b", "r"))  # it looks again: settled, first seen so now
        assert registry.records["w"]["r"].status == "interrupted"
        await asyncio.sleep(0.25)
        registry.add(record("c", "r"))
        assert "w" not in registry.records

    asyncio.run(go())


def test_an_ended_runs_record_goes_with_its_log():
    async def go():
        runs = open_runs("memory://", Limits(run_retention=0.05))
        registry = Registry(runs)
        log = runs.logs.create("t", "r", "agent")
        log.append(b"id: 1\ndata: {}\n\n", 1)
        registry.add(RunRecord("t", "r", "agent", {}, {}, "enqueue", log))
        await asyncio.sleep(0.1)
        registry.add(record("u", "r"))
        assert "t" in registry.records  # its log has not ended
        log.end()
        runs.logs.ended(log)
        await asyncio.sleep(0.2)
        registry.add(record("v", "r"))
        assert "t" not in registry.records

    asyncio.run(go())


async def test_listing_a_threads_old_runs_costs_no_round_trip_per_run(redis_url):
    """Where run records are shared (Redis), a thread's runs that settled a
    retention ago are listed from their shared fields: their logs are gone on
    every node, so looking for each one was a round trip per run, every list."""
    import time

    runs = open_runs(redis_url, Limits(run_retention=60))
    registry = Registry(runs)
    try:
        long_ago = time.time() - 3600
        for n in range(40):
            old = record("t", f"r{n:02d}")
            old.created_at = old.updated_at = long_ago + n
            fields = old.fields()
            fields["status"] = "success" if n % 4 else "error"
            await registry.shared.put(fields)
        fresh = record("t", "fresh")
        await registry.shared.put(fresh.fields())  # pending, on some node
        calls = []
        call = runs.client.call

        async def counted(*args, **options):
            calls.append(args[0])
            return await call(*args, **options)

        runs.client.call = counted
        listed = await registry.of_thread_everywhere("t")
        assert [r.run_id for r in listed] == ["fresh", *(f"r{n:02d}" for n in reversed(range(40)))]
        assert [r.status for r in listed[1:5]] == ["success", "success", "success", "error"]
        assert len(calls) < 10, calls  # the thread's records, the fresh run's log
        assert set(registry.records.get("t", {})) == {"fresh"}  # the old ones not kept
    finally:
        await runs.aclose()


def past_fields(thread_id: str, run_id: str, at: float, status: str = "success") -> dict:
    """A record's fields as shared, for a run that settled at ``at`` (wall clock)."""
    old = record(thread_id, run_id)
    old.created_at = old.updated_at = at
    return {**old.fields(), "status": status}


async def test_a_thread_keeps_its_newest_past_runs_and_drops_older_ones(redis_url):
    """An active thread's shared records hash never expires as a whole: of the
    runs that settled a retention ago only the newest are kept (the oldest go
    from Redis when the thread's records are read); runs still in the
    retention, or not settled, are kept whatever their number."""
    import time

    runs = open_runs(redis_url, Limits(run_retention=60))
    registry = Registry(runs)
    shared = registry.shared
    shared.past_kept, shared.drop_batch = 5, 3  # seven to drop: three script calls
    try:
        long_ago = time.time() - 3600
        for n in range(12):
            await shared.put(past_fields("t", f"old{n:02d}", long_ago + n))
        cancelled = {**past_fields("t", "old00", long_ago), "cancelled": True}
        await shared.put(cancelled)
        for n in range(8):
            await shared.put(past_fields("t", f"recent{n}", time.time() - 10))
        await shared.put(record("t", "waiting").fields())  # pending, on some node
        # Long ago but not settled (a node that died mid-run): never a past run.
        await shared.put(past_fields("t", "stuck", long_ago - 1, status="running"))
        await shared.put(past_fields("t", "queued", long_ago - 1, status="pending"))

        listed = await registry.of_thread_everywhere("t")
        names = {r.run_id for r in listed}
        assert {f"old{n:02d}" for n in range(7, 12)} <= names
        assert not names & {f"old{n:02d}" for n in range(7)}
        assert {f"recent{n}" for n in range(8)} | {"waiting", "stuck", "queued"} <= names
        key = b"agui:thread:" + b'["t"]'
        assert await runs.client.call("hlen", key + b":records") == 5 + 8 + 3
        assert not await runs.client.call("sismember", key + b":cancelled", "old00")
        assert runs.client.calls["drop_records"] == 3
    finally:
        await runs.aclose()


async def test_a_node_prunes_a_threads_past_runs_as_it_adds_runs(redis_url):
    """A thread nobody lists is pruned too: every ``prune_every`` runs a node
    adds, the thread it adds to drops its past runs beyond those kept."""
    import time

    runs = open_runs(redis_url, Limits(run_retention=60))
    shared = Registry(runs).shared
    shared.past_kept, shared.prune_every = 2, 4
    key = b"agui:thread:" + b'["t"]' + b":records"
    try:
        long_ago = time.time() - 3600
        for n in range(10):
            await shared.put(past_fields("t", f"r{n:02d}", long_ago + n))
            # Writing a run's record again (its end) adds no run.
            await shared.put(past_fields("t", f"r{n:02d}", long_ago + n))
            await asyncio.gather(*shared.pruning)  # in the background: done before the next
        # Pruned at the 4th and 8th run: r06, r07 kept then, r08 and r09 added.
        kept = await runs.client.call("hkeys", key)
        assert sorted(k.decode() for k in kept) == ["r06", "r07", "r08", "r09"]
    finally:
        await runs.aclose()


def test_a_runs_updated_at_is_when_it_ended_once_it_has():
    """A Run's ``updated_at`` moves when its status last changed, on every
    backend: its start while it runs, its end once it ended."""

    async def go():
        runs = open_runs("memory://", Limits())
        log = runs.logs.create("t", "r", "agent")
        log.append(b"id: 1\ndata: {}\n\n", 1)
        run = RunRecord("t", "r", "agent", {}, {}, "enqueue", log)
        started = run.as_json()["updated_at"]
        assert started >= run.as_json()["created_at"]
        await asyncio.sleep(0.01)
        log.end()
        ended = run.as_json()["updated_at"]
        assert ended > started and ended == run.as_json()["updated_at"]  # steady
        assert run.fields()["updated_at"] == log.ended_wall

    asyncio.run(go())


def test_a_run_settled_before_it_started_changed_when_it_settled():
    """A queued run cancelled (or that could not start) after waiting long
    changed then, not when it was made: were its shared record dated by its
    creation, it would count as settled a retention ago at once, and a prune
    could drop it (its cancel with it) before its worker saw the cancel."""
    import time

    queued = record("t", "r")
    queued.created_at = queued.updated_at = time.time() - 3600
    queued.cancelled = True
    queued.settled_unstarted()
    fields = queued.fields()
    assert fields["status"] == "interrupted"
    assert time.time() - fields["updated_at"] < 60
    assert queued.started.is_set()


async def test_a_record_another_node_writes_while_a_thread_is_pruned_stays(redis_url):
    """Pruning reads a thread's records, then drops the old ones: one that
    another node writes in between (a past run re-shared, cancelled after
    its end) is not what was read, and stays."""
    import time

    runs = open_runs(redis_url, Limits(run_retention=60))
    shared = Registry(runs).shared
    shared.past_kept = 1
    key = b"agui:thread:" + b'["t"]'
    try:
        long_ago = time.time() - 3600
        for n in range(3):
            await shared.put(past_fields("t", f"r{n}", long_ago + n))
        call = runs.client.call
        rewritten = {**past_fields("t", "r0", time.time()), "cancelled": True}

        async def written_again_after_the_read(*args, **options):
            found = await call(*args, **options)
            if args[0] == "hgetall":
                runs.client.call = call
                await shared.put(rewritten)
            return found

        runs.client.call = written_again_after_the_read
        await shared.of_thread("t")
        kept = sorted(k.decode() for k in await call("hkeys", key + b":records"))
        assert kept == ["r0", "r2"]  # r1 dropped; r0 as rewritten
        assert orjson.loads(await call("hget", key + b":records", "r0")) == rewritten
        assert await call("sismember", key + b":cancelled", "r0")
    finally:
        await runs.aclose()
