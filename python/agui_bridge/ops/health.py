"""Liveness and readiness, for a load balancer or an orchestrator.

``GET /healthz``: 200 as long as the worker's event loop answers (the
request is served by that loop, so reaching this code is the check).
``GET /readyz``: 200 when the thread store and the run backend each answer
within ``timeout`` seconds (a store or run backend with a ``ping``, PostgreSQL
and Redis, is asked whether it takes writes, since one refusing writes starts
no run); 503 otherwise, and 503 from the moment a drain
starts (``App.drain``: SIGTERM), so a load balancer stops sending runs while
the running ones finish. Neither needs authentication (``authenticate`` is
not called) and neither body names a thread, a run or an agent.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import orjson

log = logging.getLogger("agui_bridge.ops")

JSON = [("content-type", "application/json"), ("cache-control", "no-store")]
# The thread and run the probe looks up: one round trip each, whatever it finds
# (the answer is never shown).
_PROBE = "__agui_readyz__"


@dataclass(frozen=True)
class Health:
    """``App(health=Health(live="/healthz", ready="/readyz", timeout=2.0))``;
    ``health=False`` serves neither."""

    live: str | None = "/healthz"
    ready: str | None = "/readyz"
    timeout: float = 2.0

    def paths(self) -> dict[str, str]:
        return {p: kind for p, kind in ((self.live, "live"), (self.ready, "ready")) if p}


def health_of(value) -> Health | None:
    if value is False or value is None:
        return None
    if value is True:
        return Health()
    if isinstance(value, Health):
        return value
    if isinstance(value, dict):
        return Health(**value)
    raise TypeError("health must be True, False, a dict or an agui_bridge.ops.Health")


async def _check(name: str, call, timeout: float) -> str | None:
    """None when ``call()`` answered in time, else why not (no detail of the data)."""
    try:
        async with asyncio.timeout(timeout):
            await call()
    except TimeoutError:
        return f"{name}: no answer within {timeout:g} s"
    except Exception as error:
        log.warning("readiness: the %s failed: %r", name, error)
        return f"{name}: {type(error).__name__}"
    return None


async def answer(app, kind: str, health: Health) -> tuple[int, bytes, list]:
    """The status, body and headers of a health route."""
    if kind == "live":
        return 200, b'{"status":"ok"}', JSON
    if app.closing:
        body = {"status": "draining"}
        return 503, orjson.dumps(body), [*JSON, ("retry-after", "5")]
    store, runs = app.store, app.runs
    store_ping, runs_ping = getattr(store, "ping", None), getattr(runs, "ping", None)
    checks = await asyncio.gather(
        _check("store", store_ping or (lambda: store.load(_PROBE)), health.timeout),
        _check("runs", runs_ping or (lambda: runs.get(_PROBE, _PROBE)), health.timeout),
    )
    failed = [c for c in checks if c is not None]
    if app.closing:  # a drain began while the checks ran
        failed.insert(0, "draining")
    if failed:
        body = {"status": "unavailable", "failed": failed}
        return 503, orjson.dumps(body), [*JSON, ("retry-after", "2")]
    return 200, b'{"status":"ready"}', JSON
