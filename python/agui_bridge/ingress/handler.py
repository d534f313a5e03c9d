"""The one request handler both front ends (ASGI, RSGI) drive.

A front end wraps its request in a ``Conn`` (method, path, headers, the body,
a JSON response, a stream, a disconnect watcher); the route table
(``routes.Routes``) names the endpoint, and the AG-UI endpoints are here: the
request rules (answered before any run starts, with a JSON error body), auth,
the thread, the run and its streams.

Every response that streams a run is a cursor on the run's log; the one
stream writer, its flow control and what a slow reader costs are in
``runs.cursor``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from functools import partial
from typing import Any

import orjson

from .. import RunInputError, map_run_input
from ..capabilities import of as capabilities_of
from ..errors import (
    BrokenBody,
    Closed,
    HttpError,
    RunsUnavailable,
    StoreUnavailable,
    TooLarge,
)
from ..parts import input_error
from ..playground import response as playground_response
from ..run_input import off_loop
from ..runs import Run, downgrade, exact_prelude, open_stream
from ..runs import prelude as shared_prelude
from ..runs.supersede import admitted, reading
from ..store import Thread
from ..turns import carried
from . import branches
from .access import refuse_cross_site, require
from .params import integer, last_event_id, protocol_version

log = logging.getLogger("agui_bridge.ingress")


_UNREAD = object()


class Request:
    """What ``authenticate`` receives.

    ``method``, ``path`` (within the app's mount), ``headers`` (lower-case
    names; ``.get(name)``), ``query_string``, ``client`` (``"ip:port"``) and
    ``body``: on a run route, the JSON body, parsed on first use (``None`` when
    it is not JSON, not sent as JSON or over the body limit, and on other
    routes). ``authenticate`` runs before the body is judged, so a caller it
    refuses learns nothing of the body rules.
    """

    __slots__ = (
        "_body",
        "_raw",
        "client",
        "headers",
        "json_error",
        "method",
        "path",
        "query_string",
    )

    def __init__(self, method, path, headers, query_string, client, raw: bytes | None = None):
        self.method = method
        self.path = path
        self.headers = headers
        self.query_string = query_string
        self.client = client
        self._raw = raw
        self._body: Any = _UNREAD
        self.json_error: str | None = None

    @property
    def body(self) -> Any:
        if self._body is _UNREAD:
            self._body = None
            if self._raw is not None:
                try:
                    self._body = orjson.loads(self._raw)
                except orjson.JSONDecodeError as error:
                    self.json_error = str(error)
        return self._body


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


class Handler:
    def __init__(self, app):
        from .agent_protocol import AgentProtocol

        self.app = app
        self.routes = app.routes
        self.agent_protocol = AgentProtocol(self)
        # The Agent Protocol's rows first: a path both match is its (e.g. a run
        # named "state"), as before the table.
        self.agent_protocol.register(self.routes)
        self.register(self.routes)

    def register(self, routes) -> None:
        """The AG-UI rows of the route table (an agent's run paths: ``add_agent``)."""
        routes.add("GET", "/agents", self._agents)
        # A thread id here may hold '/' (AG-UI threads are any string): a run
        # the ingress took must be joinable, readable and stoppable.
        # The run's events first: the thread's pattern matches its path too.
        routes.add("GET", "/threads/{thread_id:path}/runs/{run_id}/events", self._events)
        routes.add("GET", "/threads/{thread_id:path}/events", self._join)
        routes.add("GET", "/threads/{thread_id:path}/state", self._state)
        branches.register(self, routes)  # GET /threads/{id}/branches[/{n}]
        playground = self.app.playground
        for path, page in playground.files.items() if playground is not None else ():
            routes.add("GET", path, partial(self._page, page=page), literal=True)

    def add_agent(self, agent) -> None:
        """An agent's run paths (``POST``); ValueError when one is taken."""
        for path in agent.paths:
            for taken in (path, path.rstrip("/") + "/capabilities"):
                if self.routes.has(taken):
                    raise ValueError(f"path {taken!r} is already taken")
        for path in agent.paths:
            self.routes.add("POST", path, partial(self._run, agent=agent), literal=True)
            capabilities = path.rstrip("/") + "/capabilities"
            endpoint = partial(self._capabilities, agent=agent)
            self.routes.add("GET", capabilities, endpoint, literal=True)

    # -- entry -------------------------------------------------------------

    async def handle(self, conn) -> None:
        try:
            endpoint, params = self.routes.match(conn.method, conn.path)
            refuse_cross_site(self.app, conn)
            await endpoint(conn, **params)
        except HttpError as error:
            await conn.respond(
                error.status,
                error_body(error.code, error.message),
                [("content-type", "application/json"), *error.headers],
            )
        except (Closed, asyncio.CancelledError):
            raise
        except RunInputError as error:  # an id or a message a thread cannot take
            if conn.streaming:
                raise
            await conn.respond(
                400, error_body("invalid_input", str(error)), [("content-type", "application/json")]
            )
        except RunsUnavailable as error:
            if conn.streaming:
                raise
            await conn.respond(
                503,
                error_body("runs_unavailable", str(error)),
                [("content-type", "application/json"), ("retry-after", "1")],
            )
        except StoreUnavailable as error:
            if conn.streaming:
                raise
            log.error("the request to %s failed: %s", conn.path, error)
            await conn.respond(
                503,
                error_body("store_unavailable", "the thread store is unavailable; retry shortly"),
                [("content-type", "application/json"), ("retry-after", "2")],
            )
        except Exception:
            if conn.streaming:
                raise
            log.exception("the request to %s failed before its run started", conn.path)
            await conn.respond(
                500,
                error_body("internal_error", "the server failed before the run started"),
                [("content-type", "application/json")],
            )

    async def _page(self, conn, page) -> None:
        await self._reader(conn)
        await conn.respond(*playground_response(page, conn.headers))

    async def _reader(self, conn):
        """authenticate, then the 'read' (or 'run') action: who may look at the app."""
        identity = await self.identify(self.request_of(conn))
        require(identity, "read")
        return identity

    # -- GET /agents --------------------------------------------------------

    async def _agents(self, conn) -> None:
        await self._reader(conn)
        agents = [
            {"id": a.agent_id, "paths": list(a.paths), "dialect": a.dialect}
            for a in self.app.agents.values()
        ]
        await conn.respond(
            200,
            orjson.dumps({"agents": agents}),
            [("content-type", "application/json"), ("cache-control", "no-cache")],
        )

    # -- GET {agent path}/capabilities ---------------------------------------

    async def _capabilities(self, conn, agent) -> None:
        await self._reader(conn)
        await conn.respond(
            200,
            orjson.dumps(capabilities_of(self.app, agent)),
            [("content-type", "application/json"), ("cache-control", "no-cache")],
        )

    async def identify(self, request: Request):
        app = self.app
        if app.authenticate is None:
            return None
        try:
            identity = await _maybe_await(app.authenticate(request))
        except HttpError:
            raise
        except Exception as error:
            # The type only: an exception's text may quote the credential it refused.
            log.info("authenticate rejected a request: %s", type(error).__name__)
            raise HttpError(401, "unauthorized", "authentication failed") from None
        if identity is None or identity is False:
            raise HttpError(401, "unauthorized", "authentication required")
        return identity

    def request_of(self, conn, raw: bytes | None = None) -> Request:
        return Request(conn.method, conn.path, conn.headers, conn.query_string, conn.client, raw)

    # -- who may touch a thread ---------------------------------------------

    async def authorize_thread(self, identity, thread_id: str, guards) -> None:
        """403 unless every agent in ``guards`` (see ``thread_guards``) lets ``identity`` in."""
        for guard in guards:
            rule = guard.authorize_thread
            if rule is not None and not await _maybe_await(rule(identity, thread_id)):
                raise HttpError(403, "forbidden", "this thread is not yours")

    # -- GET /threads/{id}/state ------------------------------------------

    async def readable_thread(self, conn, thread_id: str):
        """The stored thread, for a reader its guards let in (403 before 404)."""
        app = self.app
        identity = await self.identify(self.request_of(conn))
        require(identity, "read")
        thread = await app.store.load(thread_id)
        await self.authorize_thread(identity, thread_id, thread_guards(app, thread))
        if thread is None:
            raise HttpError(404, "not_found", f"no thread {thread_id!r}")
        return thread

    async def _state(self, conn, thread_id: str) -> None:
        from ..agent_protocol.objects import thread_state

        body = orjson.dumps(thread_state(await self.readable_thread(conn, thread_id)))
        await conn.respond(
            200, body, [("content-type", "application/json"), ("cache-control", "no-cache")]
        )

    # -- POST a run ---------------------------------------------------------

    async def read_body(
        self, conn, empty_untyped: bool = False
    ) -> tuple[bytes | None, HttpError | None]:
        """The raw body, or why it is refused (answered once the caller is authenticated).

        ``empty_untyped``: a request with no Content-Type and no length, or a
        length of 0, is read to know whether it has a body (an SDK's empty
        POST has none; a body sent chunked, or over HTTP/2, has no length).

        A Content-Length that is not a number of bytes is answered at once: no
        body can be read after it. The whole body must arrive within
        ``body_timeout`` seconds (408 past it), so a client that sends its
        headers and then trickles, or stops, holds nothing for long.
        """
        app = self.app
        length = conn.headers.get("content-length")
        if length is not None and integer(length) is None:
            raise HttpError(
                400,
                "invalid_content_length",
                "Content-Length must be one decimal number of bytes",
                [("connection", "close")],
            )
        untyped = HttpError(415, "unsupported_media_type", "the body must be application/json")
        kind = conn.headers.get("content-type")
        maybe_empty = empty_untyped and kind is None and length in (None, "0")
        if not _json_content_type(kind) and not maybe_empty:
            return None, untyped
        try:
            async with asyncio.timeout(app.body_timeout):
                raw, refused = await self._receive(conn, length)
                if kind is None and raw:
                    return None, untyped
                return raw, refused
        except TimeoutError:
            message = f"the body did not arrive within {app.body_timeout:g} s"
            return None, HttpError(408, "request_timeout", message, [("connection", "close")])

    async def _receive(self, conn, length: str | None) -> tuple[bytes | None, HttpError | None]:
        app = self.app
        too_large = HttpError(413, "payload_too_large", f"the body is over {app.body_limit} bytes")
        # A body over the limit is still read (and dropped) up to a few times the
        # limit, so the client gets to read the 413 instead of a reset connection.
        drain = 4 * app.body_limit + (64 << 10)
        if length is not None and int(length) > app.body_limit:
            if int(length) <= drain:
                await conn.discard_body(drain)
            return None, too_large
        try:
            return await conn.read_body(app.body_limit), None
        except BrokenBody:
            message = "the request body could not be read (bad chunked framing or a cut connection)"
            return None, HttpError(400, "invalid_body", message, [("connection", "close")])
        except TooLarge:
            await conn.discard_body(drain)
            return None, too_large

    async def _run(self, conn, agent) -> None:
        app = self.app
        raw, refused = await self.read_body(conn)
        request = self.request_of(conn, raw)
        identity = await self.identify(request)
        require(identity, "run")
        if refused is not None:
            raise refused
        # A large body (attachments: base64 takes milliseconds per MiB to parse
        # and check) is parsed and checked in a thread, never on the event loop.
        size = len(raw) if raw is not None else 0
        body = await off_loop(size, lambda: request.body)
        if request.json_error is not None:
            raise HttpError(400, "invalid_json", f"the body is not JSON: {request.json_error}")
        try:
            run_input = await off_loop(size, map_run_input, body, app.parts)
        except RunInputError as error:
            raise input_error(error) from None
        thread_id = run_input.thread_id
        # The run's own agent first; the thread's owner once the thread is loaded.
        await self.authorize_thread(identity, thread_id, (agent,))
        done = await app.runs.get(thread_id, run_input.run_id)
        # A retry: the same runId with nothing new gets that run's stream from
        # its first event; the agent never runs twice (and a retry is a read of
        # that stream: the thread's guards and authorize_stream apply). With
        # something new (a message, the turn edited, a resume: CopilotKit's
        # useInterrupt resumes under the interrupted run's id) it is a new run,
        # its ids unique in the thread.
        if (
            done is not None
            and done.agent_id == agent.agent_id
            and run_input.resume is None
            and carried(run_input.messages) <= done.input_ids
        ):
            await self.may_read(identity, done)
            await self._read_log(conn, done, 0, run_input.protocol_version)
            return
        run = await self.start(agent, run_input, identity)
        await self._stream(conn, run.log, 0, b"", on_left=run.client_left)

    async def start(self, agent, run_input, identity, supersede: bool = True) -> Run:
        """Starts a run of ``agent`` (over either protocol) through the run gate.

        503 while the worker shuts down; 409 while the thread has an active run
        (here, or in another process through the store's lease), unless that run
        is abandoned and ``supersede`` (``runs.supersede``).
        """
        app = self.app
        thread_id = run_input.thread_id

        async def authorize(thread) -> None:
            # The run's own agent was checked before; the thread's owner now.
            if thread is not None:
                guards = [g for g in thread_guards(app, thread) if g is not agent]
                await self.authorize_thread(identity, thread_id, guards)

        if not supersede:
            return await app.gate.start(agent, run_input, identity, authorize)
        # An active run whose readers all left is superseded rather than a 409.
        return await admitted(
            app, thread_id, lambda: app.gate.start(agent, run_input, identity, authorize)
        )

    # -- streams of a run ---------------------------------------------------

    async def _stream(
        self, conn, run_log, after: int, prelude, headers=(), on_left=None, transform=None
    ) -> None:
        """One reader of a run log: this response is a cursor on it, from event ``after``
        (``transform``: a reader of another version, ``runs.downgrade``)."""
        app = self.app
        limits, keepalive = app.limits, app.keepalive
        # A reader: a run nobody reads any more is superseded (runs.supersede).
        async with (
            reading(app.runs, run_log),
            open_stream(conn, limits, keepalive, run_log.run_id, headers, on_left) as stream,
        ):
            if prelude and transform is not None:
                # A long thread's snapshot is parsed and written again: off the loop.
                prelude = await off_loop(len(prelude), transform, prelude, 0)
            if prelude:
                await stream.write(prelude)
            await stream.follow(run_log, after, transform)

    async def _stream_access(self, conn, thread_id: str, run_id: str | None, action: str):
        """authenticate, the action, the thread's owner, then ``authorize_stream``."""
        app = self.app
        identity = await self.identify(self.request_of(conn))
        require(identity, action)
        run_log = await app.runs.get(thread_id, run_id) if run_id is not None else None
        if run_log is None and run_id is None:
            run_log = await app.runs.active_of(thread_id)
        if run_log is None:
            # 404 (or 204) only to a caller the thread's guards let in: anyone
            # else gets the 403 an existing run would give, whatever exists.
            thread = await app.store.load(thread_id)
            await self.authorize_thread(identity, thread_id, thread_guards(app, thread))
            return None
        await self.may_read(identity, run_log)
        return run_log

    async def may_read(self, identity, run_log) -> None:
        """The thread's guards, then the run's agent's ``authorize_stream`` (403)."""
        app = self.app
        thread_id = run_log.thread_id
        agent = app.agents.get(run_log.agent_id)
        # The run knew who owns its thread: no store call on a reader's path.
        owner = Thread(thread_id, agent_id=run_log.owner_id)
        await self.authorize_thread(identity, thread_id, thread_guards(app, owner, agent))
        if not await self.may_stream(identity, thread_id, run_log.run_id, agent):
            raise HttpError(403, "forbidden", "this run stream is not yours")

    async def may_stream(self, identity, thread_id: str, run_id: str, agent) -> bool:
        """The run's agent's ``authorize_stream`` (a run of an agent not served here: yes)."""
        rule = agent.authorize_stream if agent is not None else None
        return rule is None or bool(await _maybe_await(rule(identity, thread_id, run_id)))

    async def _events(self, conn, thread_id: str, run_id: str) -> None:
        """GET /threads/{id}/runs/{run}/events: exact replay after a cursor, else the prelude."""
        after = last_event_id(conn)
        run_log = await self._stream_access(conn, thread_id, run_id, "read")
        if run_log is None:
            raise HttpError(404, "not_found", f"no run {run_id!r} on thread {thread_id!r}")
        await self._read_log(conn, run_log, after, protocol_version(conn))

    async def _read_log(self, conn, run_log, after: int | None, declared: str | None) -> None:
        """A reader of ``run_log`` that declared ``declared`` (a 0.0.x one reads a
        1.0 run as a 0.0.x run gives it: ``runs.downgrade``)."""
        # 429 past a limit
        await self.app.ops.admit_reader(run_log.thread_id, run_log.run_id, run_log.agent_id)
        ids = self.app.event_ids
        transform = downgrade.for_reader(run_log, declared)
        if after is not None and run_log.ended and after == run_log.last:
            # At the terminal event: it is sent again, so that the response is a
            # valid stream alone (RUN_STARTED … the run's end), not RUN_STARTED only.
            after -= 1
        if after is not None and run_log.first <= after + 1 and after <= run_log.last:
            prelude = exact_prelude(run_log, after, ids)
            mode = "exact"
        else:
            # Built once per run position and shared by its joiners (runs.prelude).
            shared = await shared_prelude.acquire(
                run_log, ids, lambda: self.app.store.load(run_log.thread_id)
            )
            try:
                headers = [("agui-resume", "snapshot")]
                await self._stream(
                    conn, run_log, shared.after, shared.data, headers, transform=transform
                )
            finally:
                shared_prelude.release(shared)
            return
        await self._stream(
            conn, run_log, after, prelude, [("agui-resume", mode)], transform=transform
        )

    async def _join(self, conn, thread_id: str) -> None:
        """GET /threads/{id}/events: the thread's active run (prelude + tail), 204 if none."""
        run_log = await self._stream_access(conn, thread_id, None, "read")
        if run_log is None:
            await conn.respond(204, b"", [("cache-control", "no-cache")])
            return
        # A run that ended while the access was checked (the store is read in a
        # thread) was active when the request came: its reader gets its end.
        await self._read_log(conn, run_log, None, protocol_version(conn))

    async def cancellable(self, conn, thread_id: str, run_id: str):
        """POST /threads/{id}/runs/{run}/cancel: the run's log once the caller may
        stop it (401, 403, then 404 for a run unknown here or anywhere)."""
        run_log = await self._stream_access(conn, thread_id, run_id, "run")
        if run_log is None:
            raise HttpError(404, "not_found", f"no run {run_id!r} on thread {thread_id!r}")
        return run_log


def thread_guards(app, thread, agent=None) -> list:
    """The agents whose ``authorize_thread`` guard a thread, on every route that touches it.

    A thread belongs to the agent that created it (``Thread.agent_id``): that
    agent's rule applies whatever the route, a run of another agent included;
    a run also answers to its own agent's rule (on a new thread, the only one:
    that agent becomes the owner), and so does a read of that run's stream. A
    thread whose owner this app does not know (none recorded, or an agent not
    registered here) answers to every agent's rule, and so does a thread that
    does not exist on a route other than a run (a 403 before a 404 tells
    nothing of what exists). Every route that names a thread calls
    ``Handler.authorize_thread`` with these guards before it reads or changes
    anything of it.
    """
    if thread is None:
        return [agent] if agent is not None else list(app.agents.values())
    owner = app.agents.get(thread.agent_id)
    guards = [owner] if owner is not None else list(app.agents.values())
    if agent is not None and agent not in guards:
        guards.append(agent)
    return guards
