"""The one request handler both front ends (ASGI, RSGI) drive.

A front end wraps its request in a ``Conn`` (method, path, headers, the body,
a JSON response, a stream, a disconnect watcher); everything else is here:
routing, the request rules (answered before any run starts, with a JSON error
body), auth, the thread, the run and the response pump.

Bounding what a client that stops reading can make the server hold
-------------------------------------------------------------------
ASGI: ``send`` waits while the server's buffer is full, so what piles up is
in this process: the frames queued for the response plus the write in
flight. Past ``max_buffered`` the stream is cut off (closers + RUN_ERROR are
queued as its last frames); if even those are not taken within
``overflow_grace`` seconds the connection is aborted.

RSGI: ``send_bytes`` never waits; granian queues without limit. What the
server holds for a stream is what it wrote minus what the client's TCP stack
acknowledged. On Linux that is measurable: the RSGI front end finds the
connection's socket (``/proc/net/tcp*`` by the scope's addresses, then
``/proc/self/fd``) and reads ``tcpi_bytes_acked`` from ``TCP_INFO`` on a
duplicate of its fd, only once a stream has written a quarter of the bound
without a check (so short streams never pay for it). Where the socket cannot
be found (not Linux, a Unix socket), every byte written counts as held, so a
stream is cut off after ``max_buffered`` bytes at most. The estimate can be
low: by up to a quarter of the bound on a kept-alive connection (the baseline
cannot tell earlier responses from this one), by the chunk framing, and with
HTTP/2, where the acknowledged bytes are those of the whole connection.
Either way granian still holds what it had queued (at most about the bound)
until the client reads it or leaves.

Pacing: while a client reads, the run is paced by it. More than 64 KiB queued
for a subscriber makes the run wait for that subscriber's next write (ASGI),
and a client more than half the bound behind makes the pump wait for its
acknowledgements (RSGI), each at most ``runs.STALL`` (1 s); a client that
makes no progress in that time is no longer waited for, and is cut off once
it is ``max_buffered`` behind. The run itself never stops for a client.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any
from uuid import uuid4

import orjson

from .. import RunInputError, map_run_input
from ..context import Resumption, RunContext
from ..runs import PING, STALL, Run, Subscriber

log = logging.getLogger("agui_bridge.ingress")

STREAM_HEADERS = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
]


class Closed(Exception):
    """The client is gone (raised by a front end's ``send``)."""


class TooLarge(Exception):
    pass


class HttpError(Exception):
    def __init__(self, status: int, code: str, message: str, headers=()):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = list(headers)


class Request:
    """What ``authenticate`` receives.

    ``method``, ``path`` (within the app's mount), ``headers`` (lower-case
    names; ``.get(name)``), ``query_string``, ``client`` (``"ip:port"``) and,
    on a run route, ``body``: the parsed RunAgentInput (``None`` otherwise).
    """

    __slots__ = ("body", "client", "headers", "method", "path", "query_string")

    def __init__(self, method, path, headers, query_string, client):
        self.method = method
        self.path = path
        self.headers = headers
        self.query_string = query_string
        self.client = client
        self.body: Any = None


def error_body(code: str, message: str) -> bytes:
    return orjson.dumps({"error": {"code": code, "message": message}})


async def _maybe_await(value):
    if inspect.isawaitable(value):
        return await value
    return value


def _json_content_type(value: str | None) -> bool:
    if not value:
        return False
    media = value.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _granted(identity, action: str) -> bool:
    actions = None
    if isinstance(identity, dict):
        actions = identity.get("actions")
    elif identity is not None:
        actions = getattr(identity, "actions", None)
    if actions is None:
        return True
    return action in actions or "*" in actions


class Handler:
    def __init__(self, app):
        self.app = app

    # -- entry -------------------------------------------------------------

    async def handle(self, conn) -> None:
        try:
            await self._handle(conn)
        except HttpError as error:
            await conn.respond(
                error.status,
                error_body(error.code, error.message),
                [("content-type", "application/json"), *error.headers],
            )
        except (Closed, asyncio.CancelledError):
            raise
        except Exception:
            if conn.streaming:
                raise
            log.exception("the request to %s failed before its run started", conn.path)
            await conn.respond(
                500,
                error_body("internal_error", "the server failed before the run started"),
                [("content-type", "application/json")],
            )

    async def _handle(self, conn) -> None:
        app = self.app
        path = conn.path
        agent = app._routes.get(path)
        if agent is not None:
            if conn.method != "POST":
                raise HttpError(
                    405,
                    "method_not_allowed",
                    f"{conn.method} is not allowed on {path}; use POST",
                    [("allow", "POST")],
                )
            await self._run(conn, agent)
            return
        if path.startswith("/threads/") and path.endswith("/state") and len(path) > 15:
            if conn.method != "GET":
                raise HttpError(
                    405,
                    "method_not_allowed",
                    f"{conn.method} is not allowed on {path}; use GET",
                    [("allow", "GET")],
                )
            await self._state(conn, path[len("/threads/") : -len("/state")])
            return
        raise HttpError(404, "not_found", f"no route for {path}")

    async def _identity(self, conn, body=None):
        app = self.app
        if app.authenticate is None:
            return None
        request = Request(conn.method, conn.path, conn.headers, conn.query_string, conn.client)
        request.body = body
        try:
            identity = await _maybe_await(app.authenticate(request))
        except HttpError:
            raise
        except Exception as error:
            log.info("authenticate rejected a request: %r", error)
            raise HttpError(401, "unauthorized", "authentication failed") from None
        if identity is None or identity is False:
            raise HttpError(401, "unauthorized", "authentication required")
        return identity

    # -- GET /threads/{id}/state ------------------------------------------

    async def _state(self, conn, thread_id: str) -> None:
        app = self.app
        identity = await self._identity(conn)
        if not (_granted(identity, "read") or _granted(identity, "run")):
            raise HttpError(403, "forbidden", "the 'read' action is not granted")
        thread = await app.store.load(thread_id)
        owner = app._agents.get(thread.agent_id) if thread is not None else None
        checks = [owner] if owner is not None else list(app._agents.values())
        for agent in checks:
            if agent.authorize_thread is not None and not await _maybe_await(
                agent.authorize_thread(identity, thread_id)
            ):
                raise HttpError(403, "forbidden", "this thread is not yours")
        if thread is None:
            raise HttpError(404, "not_found", f"no thread {thread_id!r}")
        body = orjson.dumps({"values": thread.state, "messages": thread.messages})
        await conn.respond(
            200, body, [("content-type", "application/json"), ("cache-control", "no-cache")]
        )

    # -- POST a run ---------------------------------------------------------

    async def _read_json(self, conn):
        app = self.app
        if not _json_content_type(conn.headers.get("content-type")):
            raise HttpError(415, "unsupported_media_type", "the body must be application/json")
        too_large = HttpError(413, "payload_too_large", f"the body is over {app.body_limit} bytes")
        length = conn.headers.get("content-length")
        # A body over the limit is still read (and dropped) up to a few times the
        # limit, so the client gets to read the 413 instead of a reset connection.
        drain = 4 * app.body_limit + (64 << 10)
        if length is not None and length.isdigit() and int(length) > app.body_limit:
            if int(length) <= drain:
                await conn.discard_body(drain)
            raise too_large
        try:
            raw = await conn.read_body(app.body_limit)
        except TooLarge:
            await conn.discard_body(drain)
            raise too_large from None
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            raise HttpError(400, "invalid_json", f"the body is not JSON: {error}") from None

    async def _run(self, conn, agent) -> None:
        app = self.app
        body = await self._read_json(conn)
        try:
            run_input = map_run_input(body)
        except RunInputError as error:
            raise HttpError(400, "invalid_input", str(error)) from None
        identity = await self._identity(conn, body)
        if not _granted(identity, "run"):
            raise HttpError(403, "forbidden", "the 'run' action is not granted")
        thread_id = run_input.thread_id
        if agent.authorize_thread is not None and not await _maybe_await(
            agent.authorize_thread(identity, thread_id)
        ):
            raise HttpError(403, "forbidden", "this thread is not yours")
        if thread_id in app._active:
            raise HttpError(409, "run_active", f"thread {thread_id!r} already has an active run")
        app._active[thread_id] = None  # claimed now; a Run replaces it below
        store = app.store
        claim = getattr(store, "claim", None)
        token = uuid4().hex
        claimed = False
        try:
            if claim is not None:
                if not claim(thread_id, token):
                    raise HttpError(
                        409, "run_active", f"thread {thread_id!r} already has an active run"
                    )
                claimed = True
            run = await self._prepare(agent, run_input, identity)
        except BaseException:
            app._active.pop(thread_id, None)
            if claimed:
                store.release(thread_id, token)
            raise
        run.lease = token
        app._active[thread_id] = run
        sub = Subscriber(app.max_buffered, conn.probe(app.max_buffered))
        run.subscribe(sub)
        run.begin()
        run.task = asyncio.get_running_loop().create_task(run.run())
        app._tasks.add(run.task)
        run.task.add_done_callback(app._tasks.discard)
        await self._pump(conn, run, sub)

    async def _prepare(self, agent, run_input, identity) -> Run:
        app = self.app
        thread = await app.store.load(run_input.thread_id)
        stored = thread.messages if thread is not None else []
        pending = thread.interrupts if thread is not None else []
        resume = _resumption(run_input.resume, pending)

        held = {m.get("id") for m in stored}
        known_calls = {
            call.get("id")
            for m in stored
            if m.get("role") == "assistant"
            for call in (m.get("toolCalls") or ())
            if isinstance(call, dict)
        }
        messages = run_input.messages
        newest_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        last_other = max((i for i, m in enumerate(messages) if m["role"] != "tool"), default=-1)
        new: list[dict] = []
        new_user = None
        tool_results: list[dict] = []
        for index, message in enumerate(messages):
            message_id = message.get("id")
            if isinstance(message_id, str) and message_id:
                if message_id in held:
                    continue
            elif index == newest_user:
                message = {**message, "id": f"{run_input.run_id}:u1"}
            else:
                continue  # an id-less older message cannot be deduplicated
            role = message["role"]
            if role == "activity":
                continue
            if role == "tool":
                if message.get("toolCallId") not in known_calls:
                    log.info(
                        "thread %s: dropped a tool message for an unknown call", run_input.thread_id
                    )
                    continue
                if index > last_other:
                    tool_results.append(message)
            elif role == "assistant":
                for call in message.get("toolCalls") or ():
                    if isinstance(call, dict):
                        known_calls.add(call.get("id"))
            if index == newest_user:
                new_user = message
            held.add(message["id"])
            new.append(message)
        history = list(stored) + [m for m in new if m is not new_user and m not in tool_results]

        state = dict(thread.state) if thread is not None else {}
        if isinstance(run_input.state, dict):
            state.update(run_input.state)
        ctx = RunContext(
            thread_id=run_input.thread_id,
            run_id=run_input.run_id,
            agent_id=agent.agent_id,
            input=run_input.input if new_user is not None else "",
            history=history,
            state=state,
            resume=resume,
            tools=run_input.tools,
            tool_results=tool_results,
            context=run_input.context,
            forwarded_props=run_input.forwarded_props,
            identity=identity,
            messages=messages,
        )
        return Run(self.app, agent, ctx, new, pending)

    # -- the response --------------------------------------------------------

    async def _pump(self, conn, run: Run, sub: Subscriber) -> None:
        app = self.app
        keepalive = app.keepalive
        limit = sub.limit
        probe = sub.probe
        max_write = conn.max_write
        behind = False
        loop = asyncio.get_running_loop()
        sub.grace = app.overflow_grace
        await conn.start_stream(200, STREAM_HEADERS)
        gone = asyncio.ensure_future(conn.wait_disconnect())

        def on_gone(future):
            if not future.cancelled() and not sub.done:
                run.client_left(sub)

        gone.add_done_callback(on_gone)
        try:
            while True:
                if not sub.buf:
                    if sub.done:
                        break
                    sub.wake.clear()
                    try:
                        async with asyncio.timeout(keepalive):
                            await sub.wake.wait()
                    except TimeoutError:
                        await conn.send(PING)
                    continue
                data = sub.take(max_write)
                sub.inflight = len(data)
                if max_write is None:
                    await conn.send(data)  # RSGI: never waits
                else:
                    # A send may wait on the client; once the stream is cut off
                    # (Run._overflow reschedules this), it gets overflow_grace s.
                    async with asyncio.timeout(None) as deadline:
                        sub.deadline = deadline
                        if sub.overflowed:
                            deadline.reschedule(loop.time() + sub.grace)
                        await conn.send(data)
                    sub.deadline = None
                sub.inflight = 0
                sub.stalled = False
                sub.progress.set()
                if probe is not None and not sub.done:
                    held = probe.wrote(len(data))
                    if held <= limit // 2:
                        behind = False
                    elif probe.exact and not behind:
                        held = await _catch_up(probe, sub, limit // 2)
                        behind = held > limit // 2
                    if behind:
                        sub.stalled = True
                    if held > limit:
                        run._overflow(sub)
        except Closed:
            if not sub.done:
                run.client_left(sub)
        except TimeoutError:
            log.warning(
                "run %s: the cut-off stream was not taken in %.1f s; aborting it",
                run.ctx.run_id,
                app.overflow_grace,
            )
            conn.abort()
        finally:
            gone.cancel()
        await conn.end_stream()


async def _catch_up(probe, sub: Subscriber, target: int) -> int:
    """Waits (at most STALL s) for a client behind by more than ``target`` bytes.

    Meanwhile the run's frames queue up for this subscriber, which paces the
    run (see ``Run._relieve``); a client that does not catch up is then cut
    off once it is ``limit`` behind.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STALL
    held = probe.refresh()
    while held > target and not sub.done and loop.time() < deadline:
        await asyncio.sleep(0.005)
        held = probe.refresh()
    return held


def _resumption(resume, pending: list[dict]) -> Resumption | None:
    if resume is None:
        return None
    if not pending:
        raise HttpError(
            400, "no_pending_interrupt", "this thread has no pending interrupt to resume"
        )
    pending_ids = [i.get("id") for i in pending]
    if resume.entries:
        ids = [e["interruptId"] for e in resume.entries]
        unknown = [i for i in ids if i not in pending_ids]
        if unknown:
            raise HttpError(400, "unknown_interrupt", f"no pending interrupt {unknown[0]!r}")
        missing = [i for i in pending_ids if i not in ids]
        if missing:
            raise HttpError(
                400,
                "incomplete_resume",
                f"the resume must answer every pending interrupt (missing {missing[0]!r})",
            )
        first = resume.entries[0]
        return Resumption(
            interrupts=tuple(pending),
            decision=first.get("payload"),
            interrupt_id=first["interruptId"],
            status=first.get("status", "resolved"),
            entries=tuple(resume.entries),
        )
    if resume.interrupt_id is not None and resume.interrupt_id not in pending_ids:
        raise HttpError(400, "unknown_interrupt", f"no pending interrupt {resume.interrupt_id!r}")
    return Resumption(
        interrupts=tuple(pending),
        decision=resume.decision,
        interrupt_id=resume.interrupt_id,
    )
