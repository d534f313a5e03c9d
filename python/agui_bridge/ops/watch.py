"""Timing (and tracing) the thread store's calls and the run backend's Redis commands."""

from __future__ import annotations

import functools
import time

# The store calls worth a latency series and a span (the rest pass through).
STORE_CALLS = ("load", "save", "claim", "renew", "release", "create", "update_metadata",
               "delete", "search", "sweep")  # fmt: skip


class WatchedStore:
    """A store whose calls are timed; everything else is the store's."""

    def __init__(self, store, metrics, tracer):
        self.__dict__["_store"] = store
        for name in STORE_CALLS:
            call = getattr(store, name, None)
            if call is not None:
                self.__dict__[name] = _timed(call, name, metrics, tracer)

    def __getattr__(self, name):
        return getattr(self.__dict__["_store"], name)

    def __setattr__(self, name, value):
        setattr(self.__dict__["_store"], name, value)


def _timed(call, name: str, metrics, tracer):
    span_name = "agui.store." + name

    @functools.wraps(call)  # its signature: store/lease.py asks what a store's save takes
    async def timed(*args, **kwargs):
        started = time.perf_counter()
        failed = True
        try:
            if tracer is not None:
                with tracer.span(span_name, {"agui.thread_id": _thread(name, args)}):
                    result = await call(*args, **kwargs)
            else:
                result = await call(*args, **kwargs)
            failed = False
            if metrics is not None and getattr(result, "taken_over", False):
                metrics.lease_taken_over()  # a claim's: counted where the lease went
            return result
        finally:
            if metrics is not None:
                metrics.store_call(name, time.perf_counter() - started, failed)

    return timed


def _thread(name: str, args) -> str:
    if args and isinstance(args[0], str):
        return args[0]
    thread_id = getattr(args[0], "thread_id", None) if args else None
    return thread_id if isinstance(thread_id, str) else ""


def watch_store(store, metrics, tracer):
    if isinstance(store, WatchedStore):
        return store
    return WatchedStore(store, metrics, tracer)


def watch_runs(runs, metrics, tracer):
    """Times the Redis commands of the Redis run backend: every command it sends
    goes through its ``Client``'s ``call`` or ``script`` (``runs.redis.client``),
    wrapped here on that object; a span per batch a run appends."""
    client = getattr(runs, "client", None)
    script = getattr(client, "script", None)
    call = getattr(client, "call", None)
    if script is None or call is None or getattr(client, "_agui_watched", False):
        return runs

    async def timed_script(name, keys, args, **options):
        started = time.perf_counter()
        failed = True
        try:
            if tracer is not None and name == "append":
                with tracer.span("agui.redis.append", {"agui.entries": (len(args) - 5) // 4}):
                    result = await script(name, keys, args, **options)
            else:
                result = await script(name, keys, args, **options)
            failed = False
            return result
        finally:
            if metrics is not None:
                metrics.redis_call(name, time.perf_counter() - started, failed)

    async def timed_call(method, *args, **options):
        started = time.perf_counter()
        failed = True
        try:
            result = await call(method, *args, **options)
            failed = False
            return result
        finally:
            if metrics is not None:
                metrics.redis_call(method, time.perf_counter() - started, failed)

    client.script = timed_script
    client.call = timed_call
    client._agui_watched = True
    return runs
