"""Run logs on Redis Streams: every node reads and writes the same runs.

Keys (one Redis; ``T`` = JSON ``[threadId]``, ``R`` = JSON ``[threadId, runId]``):

- ``agui:run:R:log`` — the run's stream. An entry is one flush of the run
  loop (a batch of frames), its id ``N-0`` where N is the number of the
  batch's last event (the SSE ``id:``); fields ``a`` (the batch's first event
  number: a gap is seen when it is not the reader's position + 1), ``d`` (the
  frames), ``s`` (what the batch opens and closes, so a join re-opens them
  without reading every event), ``e`` (the end: no more entries). ``N-0``
  rather than ``0-N``: the sequence part stays free for an entry that carries
  no event after event N (the end marker ``N-1``), and a plain integer read
  position N is the stream id ``N-0``.
- ``agui:run:R:meta`` — agent, owner, the request's message ids, the state
  the run started from, the node running it, its fence, ``ended``.
- ``agui:run:R:alive`` — set for ``lease_ttl`` and renewed with the run's
  lease: when it expires the node is gone.
- ``agui:thread:T:fence`` — the token of the thread's newest run: its
  lease's fence (from the thread store), node and run id. Each run's start
  sets it; an append or a renewal whose token is not this one is refused, so
  a node that lost its lease writes nothing more. A start whose fence is
  older than the one held while that run is still active is refused.
- ``agui:thread:T:active`` — the thread's running run (``GET …/events``).
- ``agui:node:ID:cancel`` — a node's control channel (pub/sub): a cancel
  from any node reaches the node that runs the run.

Writes are Lua scripts (one round trip each: check the fence, ``XADD`` the
batches with ``MAXLEN ~``, renew ``EXPIRE`` = retention). The run loop never
waits for Redis: a writer task sends everything queued since its previous
round trip in one call. Each node reads a run with one blocking ``XREAD`` (on
a connection pool of its own, no socket timeout) into a local ``RunLog``
that all its readers are cursors on, so frames reach this node's readers
only once Redis has them, the same bytes on every node (its own included).

A join's prelude is rebuilt from the frames (``runs.replay``) plus the thread
as stored (the user's turn is stored before the run starts), on every node
alike. A node whose reader sees no entry for a while checks ``alive``; once it
expired it appends, in one script that succeeds once for all nodes, the
closers of what is open and ``RUN_ERROR`` (code ``run_lost``) with the end.
Redis unreachable: a run cannot start (``RunsUnavailable``: 503); a reader
whose ``XREAD`` fails gets the closers and ``RUN_ERROR`` (code
``runs_unavailable``) from its node; a run whose writes fail stops and stores
its partial turn. redis-py reconnects on the next command: nothing to restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import Counter

import orjson

from ..errors import RunsUnavailable
from .backend import _settled
from .limits import Limits
from .log import Logs, RunLog
from .replay import frames_of, replay

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as error:  # pragma: no cover - the extra is installed in tests
    raise ImportError("Redis run logs need redis-py: pip install 'agui-bridge[redis]'") from error

log = logging.getLogger("agui_bridge.runs")

# Entries a stream keeps at least (MAXLEN ~): far past a run's batches, so it
# bounds a runaway run, not a normal one.
MAX_ENTRIES = 100_000
# How long a reader's XREAD blocks before it checks that the run's node is alive.
BLOCK_MS = 500
READ_COUNT = 1000
_DOWN = (RedisConnectionError, RedisTimeoutError, OSError)

# KEYS: meta, log, fence, active, alive
# ARGV: fence, retention, ttl ms, run id, token, then the meta's fields
_START = """
local cur = redis.call('GET', KEYS[3])
if cur then
  local held = tonumber(string.match(cur, '^(%d+)'))
  if held and held > tonumber(ARGV[1]) and redis.call('EXISTS', KEYS[4]) == 1 then
    return 0
  end
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SET', KEYS[3], ARGV[5], 'EX', ARGV[2])
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('SET', KEYS[4], ARGV[4], 'EX', ARGV[2])
redis.call('SET', KEYS[5], '1', 'PX', ARGV[3])
return 1
"""

# KEYS: log, meta, fence, active, alive
# ARGV: fence, retention, maxlen, end id ('' none), run id, then (id, a, d, s) per batch
_APPEND = """
if redis.call('EXISTS', KEYS[2]) == 0 then return -3 end
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return -1 end
if redis.call('HEXISTS', KEYS[2], 'ended') == 1 then return -2 end
for i = 6, #ARGV, 4 do
  if ARGV[i + 3] == '' then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], ARGV[i], 'a', ARGV[i + 1], 'd', ARGV[i + 2])
  else
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], ARGV[i], 'a', ARGV[i + 1],
      'd', ARGV[i + 2], 's', ARGV[i + 3])
  end
end
if ARGV[4] ~= '' then
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], ARGV[4], 'a', '0', 'd', '', 'e', '1')
  redis.call('HSET', KEYS[2], 'ended', '1')
  if redis.call('GET', KEYS[4]) == ARGV[5] then redis.call('DEL', KEYS[4]) end
  redis.call('DEL', KEYS[5])
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('EXPIRE', KEYS[3], ARGV[2])
return 1
"""

# KEYS: log, meta, fence, alive, active; ARGV: fence, retention, ttl ms
_HEARTBEAT = """
if redis.call('EXISTS', KEYS[2]) == 0 then return -3 end
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return -1 end
if redis.call('HEXISTS', KEYS[2], 'ended') == 1 then return -2 end
redis.call('SET', KEYS[4], '1', 'PX', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('EXPIRE', KEYS[3], ARGV[2])
redis.call('EXPIRE', KEYS[5], ARGV[2])
return 1
"""

# KEYS: log, meta, alive, active
# ARGV: the stream's last id as the caller read it, the entry's id, a, d, run id, retention
_LOSE = """
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[2]) == 0 then return -3 end
if redis.call('HEXISTS', KEYS[2], 'ended') == 1 then return -2 end
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local last = '0-0'
if top[1] then last = top[1][1] end
if last ~= ARGV[1] then return -4 end
redis.call('XADD', KEYS[1], ARGV[2], 'a', ARGV[3], 'd', ARGV[4], 'e', '1')
redis.call('HSET', KEYS[2], 'ended', '1')
if redis.call('GET', KEYS[4]) == ARGV[5] then redis.call('DEL', KEYS[4]) end
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[6])
return 1
"""


class Keys:
    __slots__ = ("active", "alive", "fence", "log", "meta")

    def __init__(self, thread_id: str, run_id: str):
        run = b"agui:run:" + orjson.dumps([thread_id, run_id])
        thread = b"agui:thread:" + orjson.dumps([thread_id])
        self.log = run + b":log"
        self.meta = run + b":meta"
        self.alive = run + b":alive"
        self.fence = thread + b":fence"
        self.active = thread + b":active"


class Mirror(RunLog):
    """This node's copy of a run's log, fed by one blocking reader."""

    __slots__ = ("fence", "keys", "node", "position", "primed", "reader", "state0")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.keys = Keys(self.thread_id, self.run_id)
        self.fence = b""  # the run's token (a reused runId is another run)
        self.node = ""
        self.state0: dict = {}
        self.position = b"0-0"  # the id of the last entry read
        self.primed = asyncio.Event()  # caught up with the stream once
        self.reader: asyncio.Task | None = None

    def apply(self, entry_id: bytes, fields: dict) -> None:
        data = fields.get(b"d") or b""
        spans = fields.get(b"s")
        ops = ()
        if spans:
            ops = [
                (o[0], o[1], o[2], o[3], o[4].encode()) if o[0] == "o" else tuple(o)
                for o in orjson.loads(spans)
            ]
        if data:
            first = int(fields.get(b"a") or 0)
            if self.last == 0 and first > 1:
                self.first = first  # the stream was trimmed before this node read it
            if not self.started and first == 1:
                frame = data[: data.index(b"\n\n") + 2]
                if frame.startswith(b"id: "):
                    frame = frame[frame.index(b"\n") + 1 :]
                self.started = frame
            self.append(data, int(entry_id.split(b"-", 1)[0]), ops)
        elif ops:
            self.append(b"", self.last, ops)
        self.position = entry_id
        if fields.get(b"e"):
            self.end()


class RedisSink:
    """Where a run on this node appends: batches go to Redis, one round trip
    per run-loop flush at most (all that queued while one was in flight)."""

    __slots__ = (
        "end_id",
        "ended",
        "fence",
        "keys",
        "last",
        "queue",
        "run",
        "run_id",
        "runs",
        "started",
        "task",
        "thread_id",
    )

    def __init__(self, runs: RedisRuns, thread_id: str, run_id: str, fence: bytes):
        self.runs = runs
        self.thread_id = thread_id
        self.run_id = run_id
        self.keys = Keys(thread_id, run_id)
        self.fence = fence
        self.last = 0
        self.queue: list = []
        self.ended = False
        self.end_id = b""
        self.started = b""
        self.run = None
        self.task: asyncio.Task | None = None

    def bind(self, run) -> None:
        self.run = run
        self.runs.local[(self.thread_id, self.run_id)] = self

    def append(self, data: bytes, last_id: int, spans=()) -> None:
        if self.ended or not data:
            return
        ops = b""
        if spans:
            ops = orjson.dumps([op if op[0] == "c" else (*op[:4], op[4].decode()) for op in spans])
        self.queue.append((b"%d-0" % last_id, b"%d" % (self.last + 1), data, ops))
        self.last = last_id
        self._kick()

    def end(self) -> None:
        if self.ended:
            return
        self.ended = True
        self.end_id = b"%d-1" % self.last
        self._kick()

    def _kick(self) -> None:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        runs = self.runs
        try:
            while self.queue or self.end_id:
                batch, self.queue = self.queue, []
                end_id = self.end_id if not self.queue else b""
                if end_id:
                    self.end_id = b""
                args = [self.fence, runs.retention, MAX_ENTRIES, end_id, self.run_id]
                for entry in batch:
                    args.extend(entry)
                keys = self.keys
                try:
                    result = await runs._script(
                        "append",
                        [keys.log, keys.meta, keys.fence, keys.active, keys.alive],
                        args,
                    )
                except _DOWN as error:
                    self._failed(False, error)
                    return
                if result != 1:
                    # -1/-2: fenced off or ended by another node; -3: the log is
                    # gone (Redis lost it).
                    self._failed(result in (-1, -2), None)
                    return
        finally:
            self.task = None
            if self.ended and not self.queue and not self.end_id:
                runs.local.pop((self.thread_id, self.run_id), None)

    def _failed(self, lost: bool, error) -> None:
        self.queue = []
        self.end_id = b""
        self.ended = True
        if lost:
            log.error("run %s: the log refused its frames (lease lost)", self.run_id)
        else:
            log.error("run %s: appending to Redis failed: %s", self.run_id, error)
        self.runs.local.pop((self.thread_id, self.run_id), None)
        if self.run is not None:
            self.run.log_failed(lost, RunsUnavailable(f"the run log is unreachable: {error}"))


class RedisRuns:
    """Run logs on one Redis, shared by every node (see the module's docstring)."""

    def __init__(
        self,
        url: str,
        limits: Limits,
        ids: bool = True,
        lease_ttl: float = 10.0,
        block_ms: int = BLOCK_MS,
    ):
        self.url = url
        self.limits = limits
        self.ids = ids
        self.lease_ttl = lease_ttl
        self.block_ms = block_ms
        self.retention = max(1, int(limits.run_retention + 0.999))
        self.logs = Logs(limits)  # this node's mirrors
        self.node = uuid.uuid4().hex
        self.local: dict[tuple[str, str], RedisSink] = {}  # the runs this node runs
        # Commands sent, by name (a script call is one round trip): the batching's measure.
        self.calls: Counter = Counter()
        self._client = None
        self._blocking = None
        self._scripts: dict = {}
        self._control: asyncio.Task | None = None
        self._listening: asyncio.Event | None = None  # the control channel is subscribed
        self._opening: dict[tuple[str, str], asyncio.Future] = {}

    # -- connections ---------------------------------------------------------

    def _clients(self):
        if self._client is None:
            # Commands: a short connect timeout (Redis down answers 503 at
            # once), one retry (a connection Redis dropped is reopened).
            self._client = aioredis.Redis.from_url(
                self.url, socket_connect_timeout=2, retry=Retry(NoBackoff(), 1)
            )
            # Blocking reads on their own pool, without a socket timeout
            # shorter than the block: they never starve ordinary commands.
            self._blocking = aioredis.Redis.from_url(
                self.url, socket_connect_timeout=2, socket_timeout=None, retry=Retry(NoBackoff(), 0)
            )
            for name, source in (
                ("start", _START),
                ("append", _APPEND),
                ("heartbeat", _HEARTBEAT),
                ("lose", _LOSE),
            ):
                self._scripts[name] = self._client.register_script(source)
        if self._control is None or self._control.done():
            self._listening = asyncio.Event()
            self._control = asyncio.get_running_loop().create_task(self._listen())
        return self._client

    async def _script(self, name: str, keys, args):
        self._clients()
        self.calls[name] += 1
        return await self._scripts[name](keys=keys, args=args)

    async def _call(self, method: str, *args):
        client = self._clients()
        self.calls[method] += 1
        try:
            return await getattr(client, method)(*args)
        except _DOWN as error:
            raise RunsUnavailable(f"the run log is unreachable: {error}") from None

    # -- the backend interface (runs.backend) ----------------------------------

    async def start(self, thread_id, run_id, agent_id, owner_id, input_ids, fence, state):
        keys = Keys(thread_id, run_id)
        token = b"%d:%s:%s" % (fence, self.node.encode(), run_id.encode())
        meta = [
            b"agent", agent_id,
            b"owner", owner_id or "",
            b"inputs", _inputs_to(input_ids),
            b"state", orjson.dumps(state),
            b"node", self.node,
            b"fence", token,
        ]  # fmt: skip
        args = [fence, self.retention, int(self.lease_ttl * 1000), run_id, token, *meta]
        try:
            started = await self._script(
                "start", [keys.meta, keys.log, keys.fence, keys.active, keys.alive], args
            )
        except _DOWN as error:
            raise RunsUnavailable(f"the run log is unreachable: {error}") from None
        if not started:
            return None
        if not self._listening.is_set():
            # A cancel sent from another node must find this node listening.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2):
                    await self._listening.wait()
        mirror = self._mirror(thread_id, run_id)
        mirror.agent_id = agent_id
        mirror.owner_id = owner_id
        mirror.input_ids = input_ids
        mirror.state0 = state
        mirror.node = self.node
        mirror.fence = token
        self._read(mirror)
        return mirror, RedisSink(self, thread_id, run_id, token)

    async def get(self, thread_id: str, run_id: str) -> RunLog | None:
        key = (thread_id, run_id)
        mirror = self.logs.get(thread_id, run_id)
        if mirror is not None and not mirror.ended:
            return mirror
        opening = self._opening.get(key)
        if opening is not None:
            return await asyncio.shield(opening)
        future = asyncio.get_running_loop().create_future()
        self._opening[key] = future
        try:
            found = await self._open(thread_id, run_id, mirror)
            future.set_result(found)
            return found
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: only the waiters see it
            raise
        finally:
            del self._opening[key]

    async def _open(self, thread_id: str, run_id: str, held: Mirror | None):
        keys = Keys(thread_id, run_id)
        meta = await self._call("hgetall", keys.meta)
        if not meta:
            return held  # an ended run this node still holds is served from here
        fence = meta.get(b"fence") or b""
        if held is not None and held.fence == fence:
            return held
        mirror = self._mirror(thread_id, run_id)
        mirror.agent_id = meta.get(b"agent", b"").decode()
        mirror.owner_id = meta.get(b"owner", b"").decode()
        mirror.input_ids = _inputs_from(meta.get(b"inputs") or b"[]")
        mirror.state0 = orjson.loads(meta.get(b"state") or b"{}")
        mirror.node = meta.get(b"node", b"").decode()
        mirror.fence = fence
        self._read(mirror)
        await self._primed(mirror)
        return mirror

    async def active_of(self, thread_id: str) -> RunLog | None:
        run_id = await self._call("get", Keys(thread_id, "").active)
        if run_id is None:
            return None
        mirror = await self.get(thread_id, run_id.decode())
        return mirror if mirror is not None and not mirror.ended else None

    def ended(self, log: RunLog) -> None:
        pass  # a mirror counts against retention when its reader sees the end

    async def cancel(self, mirror: Mirror) -> bool:
        if mirror.ended:
            return False
        sink = self.local.get((mirror.thread_id, mirror.run_id))
        if sink is not None:
            run = sink.run
            if not run.stop():
                return False
            await _settled(run.task, self.limits.send_timeout)
        else:
            channel = b"agui:node:" + mirror.node.encode() + b":cancel"
            payload = orjson.dumps([mirror.thread_id, mirror.run_id])
            if not await self._call("publish", channel, payload):
                return False  # that node is gone; its run ends as run_lost
        # The run's end reaches this node's copy through the log.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.limits.send_timeout):
                while not mirror.ended:
                    await mirror.waiter()
        return True

    def renewer(self, run):
        sink = run.out

        async def renewed() -> None:
            keys = sink.keys
            try:
                result = await self._script(
                    "heartbeat",
                    [keys.log, keys.meta, keys.fence, keys.alive, keys.active],
                    [sink.fence, self.retention, int(self.lease_ttl * 1000)],
                )
            except _DOWN as error:
                log.warning("run %s: renewing in Redis failed: %s", sink.run_id, error)
                return
            if result in (-1, -2) and not sink.ended:
                sink._failed(True, None)

        return renewed

    async def aclose(self) -> None:
        for sink in list(self.local.values()):
            if sink.task is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(sink.task), 5)
        for mirror in list(self.logs.by_run.values()):
            if mirror.reader is not None:
                mirror.reader.cancel()
        if self._control is not None:
            self._control.cancel()
        for client in (self._client, self._blocking):
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.aclose()
        self._client = self._blocking = self._control = None

    # -- this node's reader of a run -------------------------------------------

    def _mirror(self, thread_id: str, run_id: str) -> Mirror:
        old = self.logs.get(thread_id, run_id)
        if old is not None and old.reader is not None:
            old.reader.cancel()
        mirror = self.logs.create(thread_id, run_id, cls=Mirror)
        self.logs.active.pop(thread_id, None)  # Redis knows the active run
        return mirror

    def _read(self, mirror: Mirror) -> None:
        mirror.reader = asyncio.get_running_loop().create_task(self._reader(mirror))

    async def _primed(self, mirror: Mirror) -> None:
        waiter = asyncio.ensure_future(mirror.primed.wait())
        await asyncio.wait([waiter, mirror.reader], return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if not mirror.primed.is_set():
            raise RunsUnavailable("the run log is unreachable")

    async def _reader(self, mirror: Mirror) -> None:
        """The one XREAD of this run on this node: entries → the mirror's frames."""
        self._clients()
        blocking = self._blocking
        key = mirror.keys.log
        try:
            while not mirror.ended:
                block = self.block_ms if mirror.primed.is_set() else None
                self.calls["xread"] += 1
                reply = await blocking.xread({key: mirror.position}, count=READ_COUNT, block=block)
                entries = reply[0][1] if reply else []
                for entry_id, fields in entries:
                    mirror.apply(entry_id, fields)
                if len(entries) < READ_COUNT:
                    mirror.primed.set()
                if not entries and block is not None and not mirror.ended:
                    await self._check_alive(mirror)
            mirror.primed.set()
            self.logs.ended(mirror)
        except asyncio.CancelledError:
            raise
        except (*_DOWN, RunsUnavailable) as error:
            self._unreachable(mirror, error)
        except Exception:
            log.exception("run %s: reading its log failed", mirror.run_id)
            self._unreachable(mirror, None)

    async def _check_alive(self, mirror: Mirror) -> None:
        keys = mirror.keys
        if await self._call("exists", keys.alive):
            return
        # The run's node stopped renewing: end the run for every reader, once.
        played = replay(mirror)
        if played.terminal:
            entry_id, first, data = b"%d-1" % mirror.last, b"0", b""
        else:
            events = played.closing_events("the node running this run was lost", "run_lost")
            first = mirror.last + 1
            data = frames_of(events, first, self.ids)
            entry_id, first = b"%d-0" % (first + len(events) - 1), b"%d" % first
        result = await self._script(
            "lose",
            [keys.log, keys.meta, keys.alive, keys.active],
            [mirror.position, entry_id, first, data, mirror.run_id, self.retention],
        )
        if result == 1:
            log.warning("run %s of thread %s: its node was lost", mirror.run_id, mirror.thread_id)

    def _unreachable(self, mirror: Mirror, error) -> None:
        """Redis cannot be read: this node's readers get the closers and
        RUN_ERROR runs_unavailable; the copy is dropped, so a later request
        reads Redis again."""
        log.error("run %s: its log is unreachable: %s", mirror.run_id, error)
        if not mirror.ended:
            played = replay(mirror)
            if not played.terminal:
                events = played.closing_events("the run log is unreachable", "runs_unavailable")
                data = frames_of(events, mirror.last + 1, self.ids)
                mirror.append(data, mirror.last + len(events))
            mirror.end()
        self.logs.discard(mirror)
        sink = self.local.get((mirror.thread_id, mirror.run_id))
        if sink is not None:
            sink.run.log_failed(False, RunsUnavailable("the run log is unreachable"))

    # -- control ---------------------------------------------------------------

    async def _listen(self) -> None:
        """This node's control channel: cancels sent from other nodes."""
        channel = b"agui:node:" + self.node.encode() + b":cancel"
        while True:
            pubsub = self._blocking.pubsub()
            try:
                await pubsub.subscribe(channel)
                self._listening.set()
                async for message in pubsub.listen():
                    if message.get("type") != "message":
                        continue
                    thread_id, run_id = orjson.loads(message["data"])
                    sink = self.local.get((thread_id, run_id))
                    if sink is not None:
                        sink.run.stop()
            except asyncio.CancelledError:
                raise
            except RedisError as error:
                log.debug("the control channel dropped: %s", error)
            except Exception:
                log.exception("the control channel failed")
            finally:
                self._listening.clear()
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
            await asyncio.sleep(0.5)


def _inputs_to(input_ids) -> bytes:
    """The request's message keys (ids, or bytes for id-less messages) as JSON."""
    return orjson.dumps([[k.decode(), 1] if isinstance(k, bytes) else [k, 0] for k in input_ids])


def _inputs_from(raw: bytes) -> frozenset:
    return frozenset(k.encode() if kind else k for k, kind in orjson.loads(raw))
