"""Per-identity limits (``App(limits=IdentityLimits(...))``): what one caller may hold.

- ``runs``: concurrent runs per identity; ``agent_runs``: concurrent runs
  per identity on one agent; ``runs_per_agent``: concurrent runs of one
  agent, every identity's together (an int for every agent, or a dict
  ``{agent_id: n}`` for the agents it names): an agent's capacity, such as a
  model's quota;
- ``readers``: open run streams per identity (a reader is a response that
  reads a run another response started: a resume, a join, an Agent Protocol
  join, a thread's event stream while it is open; a run's own response
  counts under ``runs``); ``run_readers``: open readers per run (of any
  identity; a thread's event stream is one of the run it follows);
- ``starts_per_minute``: run starts per identity, a token bucket that holds
  ``burst`` starts (default: the rate, at least 1) and refills at that rate.
  A start refused after its token was taken (its thread held by another
  worker or node: 409; a guard; the store down) gives the token back: a
  queued run retrying while another node's run holds its thread spends none.

Each count is a whole number of at least 1 and the rate a number above 0
(``ValueError`` when the limits are made, so when the App is).

Past a limit the request gets 429 with a JSON error body and ``Retry-After``,
before any run starts (nothing is stored, no lease is taken). The identity
is ``key(identity)``: by default the identity's ``id``, ``sub`` or ``owner``
(a dict key or an attribute), a string identity itself, and without
``authenticate`` the client's address.

With ``App(runs="redis://…")`` the counters live on that Redis, shared by
every worker and node (a limit of 2 is 2 across the cluster); each slot held
is renewed while its run or reader lives and expires ``slot_ttl`` seconds
after its node stops renewing it (a node that dies frees its slots). Else
each worker counts its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from ..ingress.handler import HttpError

log = logging.getLogger("agui_bridge.ops")


@dataclass(frozen=True)
class IdentityLimits:
    runs: int | None = None
    agent_runs: int | None = None
    runs_per_agent: int | dict[str, int] | None = None
    readers: int | None = None
    run_readers: int | None = None
    starts_per_minute: float | None = None
    burst: int | None = None
    key: Callable | None = None
    slot_ttl: float = 30.0

    def __post_init__(self):
        for name in ("runs", "agent_runs", "readers", "run_readers", "burst"):
            _count(name, getattr(self, name))
        cap = self.runs_per_agent
        if isinstance(cap, dict):
            for agent_id, n in cap.items():
                if not isinstance(agent_id, str):
                    raise ValueError(f"runs_per_agent's keys are agent ids, not {agent_id!r}")
                _count(f"runs_per_agent[{agent_id!r}]", n)
        else:
            _count("runs_per_agent", cap)
        for name in ("starts_per_minute", "slot_ttl"):
            value = getattr(self, name)
            if value is not None and not _positive(value):
                raise ValueError(f"{name} must be a number above 0, not {value!r}")
        if self.key is not None and not callable(self.key):
            raise ValueError(f"key must be a function of the identity, not {self.key!r}")

    def key_of(self, identity, req=None) -> str:
        if self.key is not None:
            return str(self.key(identity))
        if identity is None:
            client = getattr(req, "client", None) or ""
            return "addr:" + client.rsplit(":", 1)[0]
        if isinstance(identity, str):
            return identity
        for name in ("id", "sub", "owner"):
            value = (
                identity.get(name) if isinstance(identity, dict) else getattr(identity, name, None)
            )
            if value is not None:
                return str(value)
        return repr(identity)


def _count(name: str, value) -> None:
    if value is not None and (type(value) is not int or value < 1):
        raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")


def _positive(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and value > 0


class Slot:
    """One unit of a limit, held until ``release``."""

    __slots__ = ("counter", "keys", "member", "released")

    def __init__(self, counter, keys: list[str], member: str):
        self.counter = counter
        self.keys = keys
        self.member = member
        self.released = False

    async def release(self, unused: bool = False) -> None:
        if not self.released:
            self.released = True
            await self.counter.release(self)


class StartToken:
    """The start a run took of its identity's rate: spent, unless it is given back
    ``unused`` (the run gate: the start was refused before the run began)."""

    __slots__ = ("burst", "counter", "key", "per_second", "released")

    def __init__(self, counter, key: str, per_second: float, burst: int):
        self.counter = counter
        self.key = key
        self.per_second = per_second
        self.burst = burst
        self.released = False

    async def release(self, unused: bool = False) -> None:
        if not self.released:
            self.released = True
            if unused:
                await self.counter.give_back(self.key, self.per_second, self.burst)


def _refused(code: str, message: str, retry_after: float) -> HttpError:
    seconds = str(max(1, math.ceil(retry_after)))
    return HttpError(429, code, message, [("retry-after", seconds)])


class Limiter:
    """The checks, over a counter (this worker's, or Redis)."""

    def __init__(self, config: IdentityLimits, app):
        self.config = config
        self.app = app
        self._counter = None

    def key(self, identity, req=None) -> str:
        return self.config.key_of(identity, req)

    @property
    def counter(self):
        if self._counter is None:
            url = getattr(self.app.runs, "url", None)
            if isinstance(url, str) and url.startswith(("redis://", "rediss://", "unix://")):
                self._counter = RedisCounter(url, self.config.slot_ttl)
            else:
                self._counter = MemoryCounter()
        return self._counter

    async def aclose(self) -> None:
        close = getattr(self._counter, "aclose", None)
        if close is not None:
            await close()

    async def admit_run(self, who: str, agent_id: str) -> list:
        c = self.config
        wanted = []
        if c.runs is not None:
            wanted.append((f"runs:{who}", c.runs, "too_many_runs",
                           f"this identity already has {c.runs} run(s) going"))  # fmt: skip
        if c.agent_runs is not None:
            wanted.append((f"agent-runs:{who}:{agent_id}", c.agent_runs, "too_many_agent_runs",
                           f"this identity already has {c.agent_runs} run(s) of this agent"
                           " going"))  # fmt: skip
        cap = c.runs_per_agent
        if isinstance(cap, dict):
            cap = cap.get(agent_id)
        if cap is not None:
            wanted.append((f"agent:{agent_id}", cap, "agent_busy",
                           f"agent {agent_id!r} already has {cap} run(s) going"))  # fmt: skip
        slots = [await self._acquire(wanted)] if wanted else []
        if c.starts_per_minute is not None:
            rate = c.starts_per_minute
            burst = c.burst if c.burst is not None else max(1, int(rate))
            key, per_second = f"starts:{who}", rate / 60.0
            try:
                wait = await self.counter.take(key, per_second, burst)
                if wait > 0:
                    raise _refused("rate_limited", f"more than {rate:g} run starts per minute",
                                   wait)  # fmt: skip
                slots.append(StartToken(self.counter, key, per_second, burst))
            except BaseException:
                # No run starts: the slots are nobody's (its counter down, a refusal).
                for slot in slots:
                    await slot.release()
                raise
        return slots

    async def admit_reader(self, who: str | None, thread_id: str, run_id: str | None) -> list:
        """``who`` None: the run's readers only; ``run_id`` None: the identity's only."""
        c = self.config
        wanted = []
        if c.readers is not None and who is not None:
            wanted.append((f"readers:{who}", c.readers, "too_many_readers",
                           f"this identity already reads {c.readers} stream(s)"))  # fmt: skip
        if c.run_readers is not None and run_id is not None:
            wanted.append((f"run-readers:{thread_id}:{run_id}", c.run_readers,
                           "too_many_run_readers",
                           f"this run already has {c.run_readers} reader(s)"))  # fmt: skip
        return [await self._acquire(wanted)] if wanted else []

    async def _acquire(self, wanted) -> Slot:
        keys = [w[0] for w in wanted]
        caps = [w[1] for w in wanted]
        counter = self.counter
        got = await counter.acquire(keys, caps)
        if isinstance(got, tuple):  # (which limit is full, seconds to wait)
            _, _, code, message = wanted[got[0]]
            raise _refused(code, message, got[1])
        slot = Slot(counter, keys, got)
        counter.held(slot)
        return slot


class MemoryCounter:
    """This worker's counts."""

    def __init__(self):
        self.counts: dict[str, int] = {}
        # key: (tokens, when, when it is full again), the last touched last. A full
        # bucket is what an absent one means: those go from the front, or every
        # identity (a client address without authentication) would stay for good.
        self.buckets: OrderedDict[str, tuple[float, float, float]] = OrderedDict()
        self._pending: dict[str, list[str]] = {}

    async def acquire(self, keys, caps):
        for i, (key, cap) in enumerate(zip(keys, caps, strict=True)):
            if self.counts.get(key, 0) >= cap:
                return i, 1.0
        for key in keys:
            self.counts[key] = self.counts.get(key, 0) + 1
        return uuid.uuid4().hex

    def held(self, slot) -> None:
        pass

    async def release(self, slot) -> None:
        for key in slot.keys:
            left = self.counts.get(key, 0) - 1
            if left > 0:
                self.counts[key] = left
            else:
                self.counts.pop(key, None)

    async def take(self, key: str, per_second: float, burst: int) -> float:
        now = time.monotonic()
        buckets = self.buckets
        while buckets and next(iter(buckets.values()))[2] <= now:
            buckets.popitem(last=False)
        tokens, then, _ = buckets.pop(key, (float(burst), now, now))
        tokens = min(float(burst), tokens + (now - then) * per_second)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / per_second
        buckets[key] = (tokens, now, now + (burst - tokens) / per_second)
        return wait

    async def give_back(self, key: str, per_second: float, burst: int) -> None:
        held = self.buckets.get(key)
        if held is not None:  # else full already
            tokens, then, _ = held
            tokens = min(float(burst), tokens + 1.0)
            self.buckets[key] = (tokens, then, then + (burst - tokens) / per_second)


# Slots: a sorted set per limit key, each member scored by when it expires
# (Redis's clock), so a dead node's slots lapse. All keys or none.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local member = ARGV[2]
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('ZCARD', key) >= tonumber(ARGV[2 + i]) then return i end
end
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, now + ttl, member)
  redis.call('PEXPIRE', key, ttl)
end
return 0
"""
_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, 'XX', now + ttl, ARGV[1 + i])
  redis.call('PEXPIRE', key, ttl)
end
return 0
"""
# A token bucket: tokens and when they were counted; returns the ms to wait (0: taken).
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local held = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(held[1]) or burst
local at = tonumber(held[2]) or now
tokens = math.min(burst, tokens + (now - at) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.ceil((1 - tokens) / rate) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate) + 1000)
return wait
"""
# A token given back (a start that did not happen); a bucket gone is full already.
_GIVE = """
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens'))
if tokens then
  redis.call('HSET', KEYS[1], 'tokens', tostring(math.min(tonumber(ARGV[1]), tokens + 1)))
end
return 0
"""
PREFIX = "agui:limits:"


class RedisCounter:
    """Counts shared by every node on one Redis (``App(runs="redis://…")``'s)."""

    def __init__(self, url: str, ttl: float):
        self.url = url
        self.ttl_ms = int(ttl * 1000)
        self.slots: set[Slot] = set()
        self._client = None
        self._scripts: dict = {}
        self._renewer: asyncio.Task | None = None

    def _redis(self):
        if self._client is None:
            import redis.asyncio as aioredis

            self._client = aioredis.Redis.from_url(self.url, socket_connect_timeout=2)
            scripts = (("acquire", _ACQUIRE), ("renew", _RENEW), ("take", _TAKE), ("give", _GIVE))
            for name, source in scripts:
                self._scripts[name] = self._client.register_script(source)
        return self._client

    async def _run(self, name: str, keys, args):
        from ..errors import RunsUnavailable

        self._redis()
        try:
            return await self._scripts[name](keys=keys, args=args)
        except (OSError, ConnectionError) as error:
            raise RunsUnavailable(f"the limits' counters are unreachable: {error}") from None
        except Exception as error:
            if type(error).__module__.startswith("redis"):
                raise RunsUnavailable(f"the limits' counters are unreachable: {error}") from None
            raise

    async def acquire(self, keys, caps):
        member = uuid.uuid4().hex
        result = await self._run("acquire", [PREFIX + k for k in keys],
                                 [self.ttl_ms, member, *caps])  # fmt: skip
        if result:
            return int(result) - 1, 1.0
        return member

    def held(self, slot: Slot) -> None:
        self.slots.add(slot)
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.get_running_loop().create_task(self._renew())

    async def release(self, slot: Slot) -> None:
        self.slots.discard(slot)
        client = self._redis()
        with contextlib.suppress(Exception):
            pipe = client.pipeline(transaction=False)
            for key in slot.keys:
                pipe.zrem(PREFIX + key, slot.member)
            await pipe.execute()

    async def _renew(self) -> None:
        while self.slots:
            await asyncio.sleep(self.ttl_ms / 3000)
            for slot in list(self.slots):
                try:
                    await self._run("renew", [PREFIX + k for k in slot.keys],
                                    [self.ttl_ms, *([slot.member] * len(slot.keys))])  # fmt: skip
                except Exception as error:
                    log.warning("renewing a limit slot failed: %s", error)

    async def aclose(self) -> None:
        """Its connections (the App's ``aclose``); the slots it holds lapse."""
        if self._renewer is not None:
            self._renewer.cancel()
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def take(self, key: str, per_second: float, burst: int) -> float:
        wait_ms = await self._run("take", [PREFIX + key], [per_second / 1000.0, burst])
        return int(wait_ms) / 1000.0

    async def give_back(self, key: str, per_second: float, burst: int) -> None:
        # On the way out of a refused start: its own error is the one to answer.
        try:
            await self._run("give", [PREFIX + key], [burst])
        except Exception as error:
            log.warning("giving back a run start's token failed: %s", error)


def limits_of(value):
    if value is None or value is False:
        return None
    if isinstance(value, IdentityLimits):
        return value
    if isinstance(value, dict):
        return IdentityLimits(**value)
    raise TypeError("limits must be an agui_bridge.ops.IdentityLimits or a dict of its fields")
