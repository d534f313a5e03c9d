"""Run leases: one active run per thread, across processes and machines.

A lease is taken for ``ttl`` seconds and renewed while its run lives, so a
worker that dies (SIGKILL, a crash, a lost machine) blocks its threads for at
most ``ttl`` seconds: nothing depends on a process id. A store that shares
leases between processes implements three calls:

``await store.claim(thread_id, ttl) -> Lease | None``
    takes the thread's lease unless a live (unexpired) one is held;
``await store.renew(lease, ttl) -> bool``
    pushes its expiry ``ttl`` seconds on; False once another claim took it;
``await store.release(lease)``
    frees it (a lease that is no longer the holder's releases nothing).

Every claim of a thread gets a larger ``fence`` than the one before it, so a
store that checks writes against it (Redis, PostgreSQL) can refuse the save
of a run whose lease was taken over after it expired. Expiry compares wall
clocks, so the machines sharing a store keep their clocks in sync (NTP);
``ttl`` covers the skew.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

log = logging.getLogger("agui_bridge.store")


@dataclass(frozen=True)
class Lease:
    thread_id: str
    token: str
    fence: int


async def keep(store, lease: Lease | None, ttl: float, renewed=None) -> None:
    """Renews ``lease`` every third of ``ttl`` until cancelled (the run ended);
    ``renewed()`` (the run log's heartbeat) is awaited after each renewal, so
    what it marks alive expires after the lease does."""
    while True:
        await asyncio.sleep(ttl / 3)
        if lease is None:
            await renewed()
            continue
        try:
            held = await store.renew(lease, ttl)
        except Exception:
            log.exception("renewing the run lease of thread %s failed", lease.thread_id)
            continue
        if held and renewed is not None:
            await renewed()
        if not held:
            log.error(
                "thread %s: the run lease expired and was taken over (fence %d)",
                lease.thread_id,
                lease.fence,
            )
            return
