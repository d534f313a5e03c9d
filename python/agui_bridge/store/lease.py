"""Run leases: one active run per thread, across processes and machines.

A lease is taken for ``ttl`` seconds and renewed while its run lives, so a
worker that dies (SIGKILL, a crash, a lost machine) blocks its threads for at
most ``ttl`` seconds: nothing depends on a process id. A store that shares
leases between processes implements three calls:

``await store.claim(thread_id, ttl) -> Lease | None``
    takes the thread's lease unless a live (unexpired) one is held
    (``taken_over`` when the expired one was never released);
``await store.renew(lease, ttl) -> bool``
    pushes its expiry ``ttl`` seconds on; False once another claim took it;
``await store.release(lease)``
    frees it (a lease that is no longer the holder's releases nothing).

Every claim of a thread gets a larger ``fence`` than the one before it, and
``save(..., lease=lease)`` refuses (``LeaseLost``, nothing written) unless
``lease.fence`` is still the thread's: a run whose lease expired and was taken
over by another run cannot write to the thread. Every store here checks it
in the save's own transaction. Expiry compares wall
clocks, so the machines sharing a store keep their clocks in sync (NTP);
``ttl`` covers the skew.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from dataclasses import dataclass

from ..errors import LeaseLost

log = logging.getLogger("agui_bridge.store")


@dataclass(frozen=True)
class Lease:
    thread_id: str
    token: str
    fence: int
    # The claim took the lease from a holder that neither released nor renewed
    # it (its worker died or stalled): what the winning node counts, since the
    # losing one may be gone.
    taken_over: bool = False


# A claim over an unreleased lease marks its token (a released lease's token is
# ''), so each store reports a takeover from the claim's own statement.
TAKEN = "~"


def claimed(thread_id: str, token: str, fence: int) -> Lease:
    return Lease(thread_id, token, fence, token.startswith(TAKEN))


def lease_lost(thread_id: str, lease: Lease) -> LeaseLost:
    return LeaseLost(
        f"the run lease of thread {thread_id!r} was taken over (fence {lease.fence} is stale):"
        " the thread was not saved"
    )


def save(
    store,
    thread_id,
    agent_id,
    new_messages,
    state,
    interrupts,
    lease,
    owner=None,
    errored=False,
    cut=None,
    run_id=None,
):
    """``store.save``, fenced by ``lease`` when the run holds one (a store
    without leases takes no ``lease`` argument), with the thread's creator
    (``owner``), how the run ended (``errored``) where the store keeps them,
    and the new branch the run starts (``cut``: ``branches.py``)."""
    extra = {}
    if cut is not None:
        extra["cut"] = cut  # only where keeps_branches(store)
    if run_id is not None and _takes(store.save, "run_id"):
        extra["run_id"] = run_id  # the run's head (branches.py): a later parentRunId's
    if lease is not None:
        extra["lease"] = lease
    if owner is not None and _takes(store.save, "owner"):
        extra["owner"] = owner
    if errored and _takes(store.save, "errored"):
        extra["errored"] = True
    return store.save(thread_id, agent_id, new_messages, state, interrupts, **extra)


def keeps_branches(store) -> bool:
    """Whether the store keeps branches (``branches.py``): a store of one's own
    without them appends every run, as before branches."""
    return _takes(store.save, "cut")


async def head_of(store, thread_id: str, run_id: str) -> str | None:
    """The id of the last message of the thread's branch when run ``run_id``'s
    last save was done (None: unknown, or a store that keeps no heads)."""
    if not hasattr(store, "head"):
        return None
    return await store.head(thread_id, run_id)


def create(store, thread_id, metadata, owner=None):
    """``store.create`` with the creator where the store keeps it."""
    if owner is not None and _takes(store.create, "owner"):
        return store.create(thread_id, metadata, owner=owner)
    return store.create(thread_id, metadata)


def _takes(method, name: str) -> bool:
    # A store of one's own (App(store=obj)) may predate owners and statuses.
    return name in _parameters(getattr(method, "__func__", method))


@functools.lru_cache(maxsize=256)
def _parameters(function) -> frozenset[str]:
    # Asked three times per save: inspect.signature each time was about 3 % of
    # a worker's Python thread (benches/server_profile.py). Keyed by the
    # function, not the bound method, which is a new object per access.
    try:
        return frozenset(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return frozenset()


async def keep(store, lease: Lease | None, ttl: float, renewed=None, held_from=None) -> None:
    """Renews ``lease`` every third of ``ttl`` until cancelled (the run ended);
    ``renewed()`` (the run log's heartbeat) is awaited after each renewal, so
    what it marks alive expires after the lease does. ``held_from(t)`` is told
    each renewal that succeeded, ``t`` the monotonic time it was sent (the
    store's expiry is at least ``t + ttl``: no other claim can take it before)."""
    while True:
        await asyncio.sleep(ttl / 3)
        if lease is None:
            await renewed()
            continue
        sent = time.monotonic()
        try:
            held = await store.renew(lease, ttl)
        except Exception:
            log.exception("renewing the run lease of thread %s failed", lease.thread_id)
            continue
        if held and held_from is not None:
            held_from(sent)
        if held and renewed is not None:
            await renewed()
        if not held:
            log.error(
                "thread %s: the run lease expired and was taken over (fence %d)",
                lease.thread_id,
                lease.fence,
            )
            return
