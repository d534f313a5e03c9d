"""The thread TTL (``App(thread_ttl=...)``): idle threads are deleted in batches.

Off by default. Each worker sweeps every ``ttl / 4`` seconds (at most a
minute apart): the threads last updated more than ``ttl`` seconds ago and
without a live run lease go, ``BATCH`` at a time (one short transaction each,
the event loop yielding between batches, so runs are never held up). Workers
sweeping together delete each thread once. Counted in ``app.threads_swept``
and the metrics' ``agui_threads_expired``.
"""

from __future__ import annotations

import asyncio
import logging
import time

log = logging.getLogger("agui_bridge.store")

BATCH = 500


def start(app) -> asyncio.Task | None:
    """The sweeping task of ``app`` (None outside an event loop: started on first use)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop.create_task(forever(app))


async def forever(app) -> None:
    every = min(app.thread_ttl / 4, 60.0)
    while True:
        try:
            await sweep(app)
        except Exception:
            log.exception("sweeping idle threads failed; trying again later")
        await asyncio.sleep(every)


async def sweep(app, batch: int = BATCH) -> int:
    """Deletes every thread idle for longer than ``app.thread_ttl``; how many."""
    store = app.store
    if not hasattr(store, "sweep"):
        return 0
    idle_before = time.time() - app.thread_ttl
    total = 0
    while True:
        gone = await store.sweep(idle_before, batch)
        for thread_id in gone:
            app.forget_thread(thread_id)
        total += len(gone)
        app.threads_swept += len(gone)
        app.ops.threads_expired(len(gone))  # agui_threads_expired
        if len(gone) < batch:
            break
        await asyncio.sleep(0)
    if total:
        log.info("swept %d idle thread(s) (thread_ttl %g s)", total, app.thread_ttl)
    return total
