"""The connections to Redis of one node: commands, blocking reads, the scripts.

Imported only when a ``redis://`` backend is opened: the default and the demo
need neither redis-py nor a server.
"""

from __future__ import annotations

import contextlib
from collections import Counter

from ...errors import RunsUnavailable
from .layout import SCRIPTS

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import (
        BusyLoadingError,
        OutOfMemoryError,
        ReadOnlyError,
        RedisError,
        ResponseError,
    )
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as error:  # pragma: no cover - the extra is installed in tests
    raise ImportError("Redis run logs need redis-py: pip install 'agui-bridge[redis]'") from error

# What "Redis is unreachable" looks like from redis-py.
DOWN = (RedisConnectionError, RedisTimeoutError, OSError)
# Seconds a running run's writes and its readers wait for a Redis that has
# stopped answering (frozen, paused by a failover, a network stall) before it
# counts as unreachable. A pause shorter than this is waited out: the run goes
# on (its frames queue on its node), its readers get pings, and all resume
# once Redis answers; so a reader is never told the run failed while it went
# on. Requests (a new run, a join) do not wait: 503 after REQUEST_TIMEOUT
# (twice: the pool retries once).
STALL = 60.0

__all__ = ["DOWN", "REFUSING", "Client", "RedisError", "unavailable"]


# What "Redis cannot take this now" looks like besides unreachable: out of
# memory (maxmemory, noeviction), a replica after a failover, still loading its
# data, or refusing writes since a save failed (MISCONF). A request gets 503 for
# these as for a Redis that is down; any other error is a bug, and passes.
REFUSING = (BusyLoadingError, OutOfMemoryError, ReadOnlyError)

# Seconds a request's command waits for an answer (redis-py before 8 had no
# default: a frozen Redis held the request); the pool retries once.
REQUEST_TIMEOUT = 5.0


def unavailable(error: BaseException) -> bool:
    """Whether ``error`` says Redis cannot serve now (a 503), not that a call was wrong."""
    if isinstance(error, (*DOWN, *REFUSING)):
        return True
    return isinstance(error, ResponseError) and str(error).startswith("MISCONF")


def _unreachable(error) -> RunsUnavailable:
    return RunsUnavailable(f"the run log is unreachable: {error}")


class Client:
    """Two pools on one Redis, opened on first use (so each worker opens its own)."""

    def __init__(self, url: str, on_use=None):
        self.url = url
        self.on_use = on_use  # called on every use (the node keeps its control channel up)
        # Commands sent, by name (a script call is one round trip): the batching's measure.
        self.calls: Counter = Counter()
        self.commands = None
        self.patient = None
        self.blocking = None
        self.scripts: dict = {}

    def open(self):
        """The command connection (both pools are opened on the first call)."""
        if self.commands is None:
            # Commands: a short connect timeout (Redis down answers 503 at
            # once), one retry (a connection Redis dropped is reopened).
            self.commands = aioredis.Redis.from_url(
                self.url,
                socket_connect_timeout=2,
                socket_timeout=REQUEST_TIMEOUT,
                retry=Retry(NoBackoff(), 1),
            )
            # A running run's writes and checks: they wait out a stalled Redis (STALL).
            self.patient = aioredis.Redis.from_url(
                self.url,
                socket_connect_timeout=2,
                socket_timeout=STALL,
                retry=Retry(NoBackoff(), 1),
            )
            # Blocking reads on their own pool, with a socket timeout far past
            # the block: they never starve ordinary commands, and wait out a stall.
            self.blocking = aioredis.Redis.from_url(
                self.url,
                socket_connect_timeout=2,
                socket_timeout=STALL,
                retry=Retry(NoBackoff(), 0),
            )
            for name, source in SCRIPTS.items():
                self.scripts[name] = self.commands.register_script(source)
        if self.on_use is not None:
            self.on_use()
        return self.commands

    async def script(self, name: str, keys, args, patient: bool = False, mapped: bool = False):
        """Runs one of ``layout.SCRIPTS`` (redis-py's errors pass through, unless
        ``mapped``: Redis unavailable is then ``RunsUnavailable``, as for a
        ``call``); ``patient``: on the pool that waits out a stall (a running run's)."""
        self.open()
        self.calls[name] += 1
        client = self.patient if patient else self.commands
        try:
            return await self.scripts[name](keys=keys, args=args, client=client)
        except (*DOWN, RedisError) as error:
            if mapped and unavailable(error):
                raise _unreachable(error) from None
            raise

    async def call(self, method: str, *args, patient: bool = False):
        """One command; Redis unavailable (``unavailable``) is ``RunsUnavailable``."""
        commands = self.open()
        client = self.patient if patient else commands
        self.calls[method] += 1
        try:
            return await getattr(client, method)(*args)
        except (*DOWN, RedisError) as error:
            if unavailable(error):
                raise _unreachable(error) from None
            raise

    async def aclose(self) -> None:
        for client in (self.commands, self.patient, self.blocking):
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.aclose()
        self.commands = self.patient = self.blocking = None
