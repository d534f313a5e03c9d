"""The thread-centric routes of langgraph-sdk's ``client.threads.stream()`` (0.4.14):
``POST /threads/{id}/commands`` and ``POST /threads/{id}/stream/events``.

A command is ``{id, method, params}`` and is answered ``{type: "success", id,
result, meta?}`` or, with the HTTP status of the refusal, ``{type: "error",
id, error, message}``. ``run.start`` and ``input.respond`` start a run the
way ``POST /threads/{id}/runs`` does (``AgentProtocol.begin``); their
``meta.applied_through_seq`` is the seq just before the run's first event,
so a subscription opened after the command reads the run from its start.

``stream/events`` is one thread's event stream (``agent_protocol.
thread_events``): it reads the thread's runs one after the other, from
``since`` (the seq of the last event the client has; nothing before or at
it is sent again) or, without one, from the start of the thread's active
run, or of the run a command just started here when it already ended (a
quick run ends before its client subscribes: ``Fresh``), or of the run that
asked for the thread's pending interrupts, else from the next run. It ends
when the client leaves, or between runs once the worker drains (cleanly:
langgraph-sdk then ends its subscriptions; the client subscribes again).
The thread's runs are the run backend's sequence of the runs that claimed
it (``runs.started``: this worker's logs, or every node's with shared run
logs), so an idle stream that looks every ``POLL`` reads a run that began
and ended between two looks, on any node.

Under per-identity limits (``agui_bridge.ops.limits``) the stream is one of
its identity's ``readers`` while open (429 before it opens) and one of each
run's ``run_readers`` while it follows that run; a run that has as many
already ends the stream with an error event that says so.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict

import orjson

from ..agent_protocol.objects import checkpoint
from ..agent_protocol.reader import origin
from ..agent_protocol.runs import iso
from ..agent_protocol.stream import Projector, values_of
from ..agent_protocol.thread_events import (
    CHANNELS,
    RUN_SHIFT,
    Filter,
    RunEvents,
    frame,
    seq_of,
)
from ..interrupts import answerable
from ..runs import open_stream
from ..runs.frames import event_of, split
from ..runs.supersede import reading as counted
from .access import require
from .handler import HttpError

JSON = [("content-type", "application/json"), ("cache-control", "no-cache")]
# How often an idle thread stream looks for the thread's next run (a delay, never a
# loss: it reads every run begun since).
POLL = 0.2
# How long a run a command started is read from its start by a stream opened without ``since``.
FRESH = 60.0
WEBSOCKET = (
    "the thread's events are served over SSE, not WebSocket:"
    ' POST /threads/{id}/stream/events (langgraph-sdk: transport="sse")'
)
# How long ``input.respond`` waits for the run that asked to have ended (saved).
SETTLE = 30.0
# How long ``input.respond`` gives the active run's end to show up in its log here.
TOLD = 1.0


def claim_of(log) -> int:
    return log.claim


class ThreadRoutes:
    """``commands`` and ``stream/events`` on the Agent Protocol's threads and runs."""

    def __init__(self, agent_protocol):
        self.ap = agent_protocol
        self.app = agent_protocol.app
        # By thread, oldest first: the ones past FRESH go from the front (a
        # command on a busy node must not pass over every thread begun lately).
        self.fresh: OrderedDict[str, Fresh] = OrderedDict()

    def register(self, add) -> None:
        add("POST", "/threads/{thread_id}/commands", self.command)
        add("POST", "/threads/{thread_id}/stream/events", self.events)
        add("GET", "/threads/{thread_id}/stream/events", self.websocket)

    # -- commands ------------------------------------------------------------

    async def command(self, conn, thread_id: str) -> None:
        identity, body, size = await self.ap.sized_body(conn, "read")
        command_id = body.get("id")
        method = body.get("method")
        params = body.get("params", {})
        if (
            not isinstance(command_id, int)
            or isinstance(command_id, bool)
            or command_id < 0
            or not isinstance(method, str)
            or not isinstance(params, dict)
        ):
            raise HttpError(
                422,
                "invalid_request",
                "a command is {id: a non-negative integer, method: a string, params: an object}",
            )
        try:
            result, meta = await self._dispatch(identity, thread_id, method, params, size)
        except _Refused as refused:
            answer = {"type": "error", "id": command_id, "error": refused.code}
            answer["message"] = refused.message
            await conn.respond(refused.status, orjson.dumps(answer), JSON)
            return
        except HttpError as error:
            if error.status in (401, 429, 503):
                raise
            code = "permission_denied" if error.status == 403 else "invalid_argument"
            status = 422 if error.status == 400 else error.status
            answer = {"type": "error", "id": command_id, "error": code, "message": error.message}
            await conn.respond(status, orjson.dumps(answer), [*JSON, *error.headers])
            return
        answer = {"type": "success", "id": command_id, "result": result}
        if meta:
            answer["meta"] = meta
        await conn.respond(200, orjson.dumps(answer), JSON)

    async def _dispatch(self, identity, thread_id: str, method: str, params: dict, size: int):
        """``size``: the body's, for ``off_loop`` (a run's messages are checked there)."""
        if method == "run.start":
            require(identity, "run")
            return await self._run_start(identity, thread_id, params, size)
        if method == "input.respond":
            require(identity, "run")
            return await self._respond(identity, thread_id, params, size)
        if method == "state.get":
            thread = await self.ap.thread_of(identity, thread_id)
            values = values_of(thread.state, thread.messages, thread.interrupts)
            keys = params.get("keys")
            if keys is not None:
                if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                    raise _Refused(422, "invalid_argument", "'keys' must be a list of strings")
                values = {k: v for k, v in values.items() if k in keys}
            return {"values": values, "checkpoint": {"id": self._checkpoint_id(thread)}}, None
        if method == "state.listCheckpoints":
            thread = await self.ap.thread_of(identity, thread_id)
            # No checkpoints are kept: the thread's one current state.
            summary = {"id": self._checkpoint_id(thread), "timestamp": iso(thread.updated_at)}
            summary["step"] = len(thread.messages)
            return {"checkpoints": [summary]}, None
        if method == "agent.getTree":
            thread = await self.ap.thread_of(identity, thread_id)
            status = await self.ap.status(thread)
            node = {"busy": "running", "error": "failed", "interrupted": "interrupted"}
            tree = {"namespace": [], "status": node.get(status, "completed")}
            tree["graph_name"] = thread.agent_id or ""
            return {"tree": tree}, None
        if method in (
            "subscription.subscribe",
            "subscription.unsubscribe",
            "subscription.reconnect",
        ):
            raise _Refused(
                422,
                "not_supported",
                f"{method} is the WebSocket transport's; POST /threads/{{id}}/stream/events"
                " takes a subscription's channels and since",
            )
        if method in ("state.fork", "input.inject"):
            raise _Refused(
                422, "not_supported", f"{method} is not served (no checkpoints are kept)"
            )
        raise _Refused(422, "unknown_command", f"unknown command {method!r}")

    @staticmethod
    def _checkpoint_id(thread) -> str:
        return checkpoint(thread)["checkpoint_id"]

    async def _run_start(self, identity, thread_id: str, params: dict, size: int):
        assistant_id = params.get("assistant_id")
        if not isinstance(assistant_id, str) or not assistant_id:
            raise _Refused(422, "invalid_argument", "'assistant_id' must be the id of an agent")
        body = {
            "assistant_id": assistant_id,
            "input": params.get("input"),
            "if_not_exists": "create",
            "multitask_strategy": params.get("multitask_strategy", "enqueue"),
        }
        for key in ("config", "metadata"):
            if params.get(key) is not None:
                body[key] = params[key]
        return await self._begin(identity, thread_id, body, size)

    async def _respond(self, identity, thread_id: str, params: dict, size: int):
        """``input.respond``: one answer (``interrupt_id``, ``response``) or several
        (``responses``), resuming the thread's pending interrupts in a new run."""
        if "responses" in params:
            answers = params["responses"]
            if not isinstance(answers, list) or not answers:
                raise _Refused(422, "invalid_argument", "'responses' must be a non-empty list")
        else:
            answers = [params]
        resume = {}
        for answer in answers:
            interrupt_id = answer.get("interrupt_id") if isinstance(answer, dict) else None
            if not isinstance(interrupt_id, str) or "response" not in answer:
                raise _Refused(
                    422, "invalid_argument", "each answer is {interrupt_id, namespace, response}"
                )
            if answer.get("namespace") not in (None, []):
                raise _Refused(404, "no_such_namespace", "an agent here is one node: namespace []")
            resume[interrupt_id] = answer["response"]
        if params.get("goto") is not None:
            raise _Refused(422, "not_supported", "'goto' is not served (an agent is one node)")
        thread = await self._answerable(identity, thread_id, set(resume))
        # Kept aside by a stopped run while none is pending: answering them re-opens them.
        pending = {i.get("id") for i in answerable(thread)}
        missing = sorted(set(resume) - pending)
        if missing:
            raise _Refused(
                404, "no_such_interrupt", f"interrupt {missing[0]!r} is not pending on this thread"
            )
        command = {"resume": resume}
        if params.get("update") is not None:
            command["update"] = params["update"]
        body = {
            "assistant_id": thread.agent_id,
            "command": command,
            "multitask_strategy": "reject",
        }
        for key in ("config", "metadata"):
            if params.get(key) is not None:
                body[key] = params[key]
        return await self._begin(identity, thread_id, body, size)

    async def _answerable(self, identity, thread_id: str, wanted: set):
        """The thread, once the interrupts ``wanted`` are pending on it if they can be.

        The caller is authorized before anything waits. The interrupts a run asks
        for are stored once its log has ended, and its readers learn of them
        from its RUN_FINISHED, which may come before that save: so the thread's
        active run is waited for (``SETTLE``) once it has told its readers how it
        ended, or when ``wanted`` are pending now (the run may be answering
        them). A run that has told nothing asked for nothing a client can
        answer: ``wanted`` not pending now are not waited for.
        """
        # Authorized first; the thread may not be stored yet (a run that made it
        # saves it at its end).
        first = await self.ap.thread_of(identity, thread_id, must_exist=False)
        pending = {i.get("id") for i in first.interrupts} if first is not None else set()
        log = await self._active(thread_id)
        if log is not None and (wanted <= pending or await _told_end(log)):
            await self._settled(thread_id)
        # Read again in any case: the run that asked may have been saved and let
        # go since the first read.
        return await self.ap.thread_of(identity, thread_id)

    async def _active(self, thread_id: str):
        run = self.app.gate.run_of(thread_id)
        return run.log if run is not None else await self.app.runs.active_of(thread_id)

    async def _settled(self, thread_id: str) -> None:
        """Waits (bounded) for the thread's active run to have ended: the interrupts
        it asked for are stored once its log has ended."""
        deadline = time.monotonic() + SETTLE
        while time.monotonic() < deadline:
            log = await self._active(thread_id)
            if log is None:
                return
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    while not log.ended:
                        await log.waiter()
            except TimeoutError:
                return  # still going: the pending interrupts are checked as stored

    async def _begin(self, identity, thread_id: str, body: dict, size: int):
        begun = await self.ap.begin(identity, body, thread_id, size)
        record = begun.record
        now = time.monotonic()
        fresh = self.fresh
        while fresh and now - next(iter(fresh.values())).at >= FRESH:
            fresh.popitem(last=False)
        fresh.pop(thread_id, None)
        fresh[thread_id] = Fresh(record.run_id)
        meta = None
        if record.log is not None:
            meta = {"applied_through_seq": claim_of(record.log) << RUN_SHIFT}
        return {"run_id": record.run_id}, meta

    # -- the thread's event stream ---------------------------------------------

    async def websocket(self, conn, thread_id: str) -> None:
        """A WebSocket upgrade (langgraph-sdk's ``transport="websocket"``) where the
        server does not take WebSockets (``agui-bridge serve``): told what is served."""
        raise HttpError(405, "websocket_not_served", WEBSOCKET, [("allow", "POST")])

    async def events(self, conn, thread_id: str) -> None:
        identity, body = await self.ap.request_body(conn, "read")
        wanted, since = _subscription(body)
        thread = await self.ap.thread_of(identity, thread_id, must_exist=False)
        if thread is None and await self.app.runs.active_of(thread_id) is None:
            raise HttpError(404, "not_found", f"no thread {thread_id!r}")
        app = self.app
        await app.ops.admit_reader(thread_id, None)
        async with open_stream(conn, app.limits, app.keepalive, thread_id) as stream:
            await self._follow(stream, thread, thread_id, wanted, since)

    async def _follow(self, stream, thread, thread_id, wanted: Filter, since: int | None) -> None:
        after = since if since is not None else await self._start_of(thread_id, thread)
        opened = time.monotonic()
        try:
            await self._runs(stream, thread_id, wanted, after, since is None, opened)
        finally:
            # Only the thread's own entry is ever delivered to its stream.
            fresh = self.fresh.get(thread_id) if since is None else None
            if fresh is not None and fresh.delivered_to is stream:
                fresh.read = True  # its session is over

    async def _runs(self, stream, thread_id, wanted, after, sinceless, opened) -> None:
        idle = 0.0
        while not stream.left:
            log = await self._next(thread_id, after)
            if log is None:
                if self.app.gate.closing:
                    # A draining worker ends the stream between runs, or it would
                    # hold the worker until it is killed (and its close, with the
                    # webhooks and records it settles, would never run).
                    return
                if not await stream.until(asyncio.sleep(POLL)):
                    return
                idle += POLL
                if idle >= self.app.keepalive:
                    idle = 0.0
                    await stream.write(b": ping\n\n")
                continue
            idle = 0.0
            reading = await self._reading(thread_id, log, wanted, after)
            try:
                slots = await self.app.ops.run_reader(thread_id, log.run_id)
            except HttpError as error:
                if error.status != 429:
                    raise
                await stream.write(_error(f"{error.code}: {error.message}"))
                return
            try:
                async with counted(self.app.runs, log):  # a reader of the run (runs.supersede)
                    await stream.follow(log, 0, reading)
            finally:
                for slot in slots:
                    await slot.release()
            if reading.cut or not log.ended:
                return
            fresh = self.fresh.get(thread_id)
            if sinceless and fresh is not None and fresh.run_id == log.run_id:
                # Read whole by a stream without since: once that stream's session is
                # over (or at once when it was open before the run began), a later
                # session's stream begins after it.
                fresh.delivered_to = stream
                if opened < fresh.at:
                    fresh.read = True
            after = max(after, ((claim_of(log) + 1) << RUN_SHIFT) - 1)

    async def _start_of(self, thread_id: str, thread) -> int:
        """Where a stream opened without ``since`` begins (see the module)."""
        runs = self.app.runs
        active = await runs.active_of(thread_id)
        if active is not None and active.visible:
            return claim_of(active) << RUN_SHIFT
        started = await runs.started(thread_id, -1)
        fresh = self.fresh.get(thread_id)
        if fresh is not None and not fresh.read and time.monotonic() - fresh.at < FRESH:
            for claim, run_id in started:
                if run_id == fresh.run_id:
                    return claim << RUN_SHIFT
        newest = -1
        for claim, run_id in reversed(started):
            if await runs.get(thread_id, run_id) is not None:
                newest = claim  # the newest run that began (one still starting is read)
                break
        if thread is not None and thread.interrupts and newest >= 0:
            # The run that asked for the pending input: a session opened to answer it
            # is told what it asks (input.requested), as its own session was.
            return newest << RUN_SHIFT
        return ((newest + 1) << RUN_SHIFT) - 1

    async def _next(self, thread_id: str, after: int):
        """The run to read next: the one ``after`` is inside of, else the earliest later
        one. Every run that claimed the thread is in the backend's sequence of the
        thread's runs (``runs.started``), so one that began and ended on any node
        since the last look is read too; one not begun yet is waited for, and one
        that never began (its node died first) is passed once a later run exists."""
        runs = self.app.runs
        started = await runs.started(thread_id, (after >> RUN_SHIFT) - 1)
        for index, (claim, run_id) in enumerate(started):
            if ((claim + 1) << RUN_SHIFT) - 1 <= after:
                continue
            log = await runs.get(thread_id, run_id)
            if log is not None:
                return log
            if index == len(started) - 1:
                return None
        return None

    async def _reading(self, thread_id: str, log, wanted: Filter, after: int) -> _Reading:
        record = await self.ap.registry.get(thread_id, log.run_id)
        base, state = await origin(self.app, record)
        node = record.assistant_id or log.agent_id
        projector = Projector(
            ("values", "updates", "custom"), node, thread_id, log.run_id, base, state
        )
        return _Reading(RunEvents(projector, node, log.run_id), wanted, claim_of(log), after)


async def _told_end(log) -> bool:
    """Whether the run has told its readers how it ended (its terminal event is in
    its log, its save may not be done). Given ``TOLD`` to show up: with shared run
    logs, a client may read it on another node a moment before this node does."""
    deadline = time.monotonic() + TOLD
    while not log.ended:
        if log.chunks:
            event = event_of(log.chunks[-1], last=True)
            if event is not None and event.get("type") in ("RUN_FINISHED", "RUN_ERROR"):
                return True
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                await log.waiter()
        except TimeoutError:
            return False
    return True


class Fresh:
    """The newest run a command started on a thread here, and whether a stream
    opened without ``since`` has read it (see ``ThreadRoutes._follow``)."""

    __slots__ = ("at", "delivered_to", "read", "run_id")

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.at = time.monotonic()
        self.read = False
        self.delivered_to = None


class _Reading:
    """``Stream.follow``'s transform: one run's frames as the events the stream wants."""

    __slots__ = ("after", "claim", "cut", "events", "wanted")

    def __init__(self, events: RunEvents, wanted: Filter, claim: int, after: int):
        self.events = events
        self.wanted = wanted
        self.claim = claim
        self.after = after
        self.cut = False

    def __call__(self, data: bytes, first: int) -> bytes:
        out = []
        n = first - 1
        for raw in split(data):
            n += 1
            event = event_of(raw)
            if event is None:
                continue
            for index, (method, payload) in enumerate(self.events.feed(event)):
                seq = seq_of(self.claim, n, index)
                if seq > self.after and self.wanted.wants(method, payload):
                    out.append(frame(seq, method, payload))
        return b"".join(out)

    def trimmed(self, position: int, held: int):
        # The values and messages are made from every event of the run.
        self.cut = True
        message = (
            f"events {position + 1} to {held - 1} of run {self.events.run_id} are no longer held"
            " (the run's log keeps its newest max_log_bytes); read the thread's state instead"
        )
        return None, _error(message)


def _error(message: str) -> bytes:
    error = {"type": "error", "id": None, "error": "unknown_error", "message": message}
    return b"event: error\ndata: " + orjson.dumps(error) + b"\n\n"


class _Refused(Exception):
    """A command refused in the protocol's terms (``ErrorCode``), with its HTTP status."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _subscription(body: dict) -> tuple[Filter, int | None]:
    """An ``EventStreamRequest`` (``channels``, ``namespaces``, ``depth``, ``since``), or 422."""
    channels = body.get("channels")
    if (
        not isinstance(channels, list)
        or not channels
        or not all(
            isinstance(c, str) and (c in CHANNELS or (c.startswith("custom:") and len(c) > 7))
            for c in channels
        )
    ):
        raise HttpError(
            422,
            "invalid_request",
            "'channels' must be a non-empty list of channels: "
            f"{', '.join(sorted(CHANNELS))} or custom:<name>",
        )
    namespaces = body.get("namespaces")
    if namespaces is not None and (
        not isinstance(namespaces, list)
        or not all(
            isinstance(ns, list) and all(isinstance(s, str) for s in ns) for ns in namespaces
        )
    ):
        raise HttpError(422, "invalid_request", "'namespaces' must be a list of lists of strings")
    depth = body.get("depth")
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 0):
        raise HttpError(422, "invalid_request", "'depth' must be a non-negative integer")
    since = body.get("since")
    if since is not None and (
        not isinstance(since, int) or isinstance(since, bool) or not 0 <= since < 1 << 63
    ):
        raise HttpError(422, "invalid_request", "'since' must be a non-negative integer (a seq)")
    return Filter(channels, namespaces, depth), since
