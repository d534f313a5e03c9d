"""The Agent Protocol routes (the LangGraph API subset the LangGraph SDKs call),
on the same threads, runs and run logs as the AG-UI routes.

``/threads`` (create, get, patch, delete, search, state, history),
``/threads/{id}/runs`` (create, wait, stream, list, get, delete, join, join a
stream with ``Last-Event-ID``, cancel), the stateless ``/runs/wait`` and
``/runs/stream``, and ``/assistants/{id}`` and ``/assistants/search`` (an
assistant is an agent, by its agent id). A run is started by the one
``Handler.start`` the AG-UI routes use, so one thread has one active run
whatever the protocol; its stream is another reader of its log.

Auth is the AG-UI routes': ``authenticate``, the action (``read`` or ``run``
to read, ``run`` to change anything), then the thread's guards
(``thread_guards``) before anything of the thread is read or changed.
Validation errors are 422 (the LangGraph convention), unknown threads, runs
and assistants 404, a busy thread under ``multitask_strategy="reject"`` 409.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, replace
from functools import partial
from urllib.parse import parse_qs

import orjson

from ..agent_protocol.assistants import graph_of, schemas_of, subgraphs_of
from ..agent_protocol.branches import history as branch_history
from ..agent_protocol.messages import MessageError, to_agui
from ..agent_protocol.objects import assistant, checkpoint
from ..agent_protocol.reader import Parts, sse
from ..agent_protocol.runs import Registry, RunRecord, iso, terminal_event
from ..agent_protocol.steps import current_state, step_checkpoint, step_of
from ..agent_protocol.steps import history as step_history
from ..agent_protocol.stream import MODES, interrupts_of, values_of
from ..agent_protocol.threads import search as search_threads
from ..errors import RunInputError
from ..gate import Queued
from ..interrupts import answerable
from ..ops.front import current as current_request
from ..parts import input_error
from ..run_input import Resume, RunInput, _check_depth, _text_of, decision_of, off_loop
from ..runs import open_stream
from ..runs.supersede import reading
from ..shapes import check_id
from ..store.keep import metadata_holds
from ..store.lease import create
from ..store.owner import owner_of
from ..turns import state_update
from ..webhooks import Delivery, refuse_all
from .access import refuse_cross_site, require
from .agent_threads import ThreadRoutes
from .handler import HttpError, thread_guards
from .params import bounded, integer, last_event_id

log = logging.getLogger("agui_bridge.ingress")

JSON = [("content-type", "application/json"), ("cache-control", "no-cache")]
STRATEGIES = ("reject", "enqueue", "interrupt")
# RunCreate fields this bridge cannot honour: refused rather than ignored.
_NOT_SERVED = (
    "interrupt_before",
    "interrupt_after",
    "after_seconds",
)
RUN_STATUSES = ("pending", "running", "error", "success", "timeout", "interrupted")
ACTIVE = ("pending", "running")  # a run's statuses until it settled
DURABILITIES = ("sync", "async", "exit")
MAX_PAGE = 1000
QUEUED_LOOK = 0.5  # seconds between two looks at a queued run's shared record
# Where the Agent Protocol is served as LangGraph's server serves it (see register).
LANGGRAPH = "/langgraph"


def _unprocessable(message: str, code: str = "invalid_request") -> HttpError:
    return HttpError(422, code, message)


def _checkpoint_id(value, key: str = "checkpoint") -> str | None:
    """``{"checkpoint_id": ...}`` (a history filter, a state read): the id, else None."""
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("checkpoint_id"), str):
        raise _unprocessable(f"'{key}' must be an object with a string 'checkpoint_id'")
    return value["checkpoint_id"]


def _before(value) -> str | None:
    """A history's ``before``: LangGraph takes a checkpoint id, a checkpoint or a
    config naming one (``configurable``)."""
    if value is None or isinstance(value, str):
        return value or None
    if isinstance(value, dict) and isinstance(value.get("configurable"), dict):
        value = value["configurable"]
    return _checkpoint_id(value, "before")


def _query(conn) -> dict[str, str]:
    parsed = parse_qs(conn.query_string or "", keep_blank_values=True)
    return {k: v[-1] for k, v in parsed.items()}


def _page(given: dict) -> tuple[int, int, str | None]:
    """A thread listing's ``limit``, ``offset`` and ``status`` (a JSON body or a query)."""
    limit = bounded(given.get("limit"), "limit", 10, 1, MAX_PAGE)
    offset = bounded(given.get("offset"), "offset", 0, 0, 1 << 31)
    status = given.get("status")
    if status is not None and status not in ("idle", "busy", "interrupted", "error"):
        raise _unprocessable("'status' must be idle, busy, interrupted or error")
    return limit, offset, status


def _object(body: dict, key: str) -> dict:
    value = body.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _unprocessable(f"'{key}' must be an object")
    return value


def _modes(value) -> tuple[str, ...]:
    if value is None or value == "" or value == []:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
        raise _unprocessable("'stream_mode' must be a mode or a list of modes")
    unknown = [m for m in value if m not in MODES]
    if unknown:
        raise _unprocessable(
            f"stream_mode {unknown[0]!r} is not served; use {', '.join(sorted(MODES))}"
        )
    return tuple(dict.fromkeys(value))


class AgentProtocol:
    def __init__(self, handler):
        self.handler = handler
        self.app = handler.app
        self.registry = Registry(handler.app.runs)
        self.gate = handler.app.gate
        self._queued: dict[RunRecord, Queued] = {}  # the records of queued runs
        config = handler.app.webhooks
        self.webhooks = None if config is None else Delivery(config, handler.app.ops.metrics)
        self.owed = None  # the webhooks owed on shared run logs (agent_protocol.hooks)
        if self.webhooks is not None and self.registry.shared is not None:
            from ..agent_protocol.hooks import Owed  # shared run logs: redis-py is there

            ttl = handler.app.lease_ttl
            self.owed = Owed(handler.app.runs, self.registry, self._deliver, max(0.5, ttl / 4), ttl)

    # -- routes --------------------------------------------------------------

    def start(self, loop) -> None:
        """The App's start in a worker: a node looks at the webhooks dead nodes owe
        whether or not it is ever asked anything on these routes."""
        if self.owed is not None:
            self.owed.watch(loop)

    def stop(self) -> None:
        if self.owed is not None:
            self.owed.stop()

    def register(self, routes) -> None:
        """The Agent Protocol's rows in the app's route table.

        ``POST …/runs/{run}/cancel`` is the one cancel of both protocols (a
        queued run is the Agent Protocol's; a live one stops the AG-UI way).
        """

        # One ThreadRoutes for both surfaces: it keeps what a thread's stream needs.
        self._threads = ThreadRoutes(self)
        self._rows(routes, "", self._history)
        # The same surface as LangGraph's ThreadState has it (``values`` with
        # the messages), for the clients that read them there: ``/state`` at
        # the root is the AG-UI routes' (``values`` = the AG-UI state).
        routes.add("GET", LANGGRAPH + "/threads/{thread_id}/state", self._langgraph_state)
        self._rows(routes, LANGGRAPH, partial(self._history, langgraph=True))

    def _rows(self, routes, prefix: str, history) -> None:
        def add(methods, pattern, endpoint):
            routes.add(methods, prefix + pattern, _unprocessable_errors(endpoint))

        run = "/threads/{thread_id}/runs/{run_id}"
        add("POST", "/threads", self._create_thread)
        add("POST", "/threads/search", self._search)
        add("GET", "/threads", self._list_threads)
        add("GET", "/threads/{thread_id}", self._get_thread)
        add("PATCH", "/threads/{thread_id}", self._patch_thread)
        add("DELETE", "/threads/{thread_id}", self._delete_thread)
        add("POST", "/threads/{thread_id}/state", self._update_state)
        add(("GET", "POST"), "/threads/{thread_id}/history", history)
        state_at = partial(self._state_at, langgraph=prefix == LANGGRAPH)
        add("POST", "/threads/{thread_id}/state/checkpoint", state_at)
        add("GET", "/threads/{thread_id}/state/{checkpoint_id}", state_at)
        add("GET", "/threads/{thread_id}/runs", self._list_runs)
        for kind, suffix in (("background", ""), ("wait", "/wait"), ("stream", "/stream")):
            add("POST", "/threads/{thread_id}/runs" + suffix, partial(self._create_run, kind=kind))
            add("POST", "/runs" + suffix, partial(self._create_run, thread_id=None, kind=kind))
        add("GET", run, self._get_run)
        add("DELETE", run, self._delete_run)
        add("GET", run + "/join", self._join)
        add("GET", run + "/stream", self._join_stream)
        # The one cancel of both protocols: an AG-UI thread id may hold '/'.
        cancel = "/threads/{thread_id:path}/runs/{run_id}/cancel"
        add("POST", cancel, partial(self._cancel, langgraph=prefix == LANGGRAPH))
        self._threads.register(add)  # commands, stream/events (threads.stream())
        add("POST", "/assistants/search", self._search_assistants)
        add("GET", "/assistants/{assistant_id}", self._get_assistant)
        add("GET", "/assistants/{assistant_id}/graph", self._assistant_graph)
        add("GET", "/assistants/{assistant_id}/schemas", self._assistant_schemas)
        add("GET", "/assistants/{assistant_id}/subgraphs", self._assistant_subgraphs)
        add("GET", "/assistants/{assistant_id}/subgraphs/{namespace}", self._assistant_subgraphs)

    async def _search_assistants(self, conn) -> None:
        _, body = await self._body(conn, "read")
        limit = bounded(body.get("limit"), "limit", 10, 1, MAX_PAGE)
        offset = bounded(body.get("offset"), "offset", 0, 0, 1 << 31)
        graph = body.get("graph_id")
        metadata = _object(body, "metadata")
        name = body.get("name")
        if name is not None and not isinstance(name, str):
            raise _unprocessable("'name' must be a string")
        every = [assistant(a) for a in self.app.agents.values()]
        found = [
            a
            for a in every
            if graph in (None, a["graph_id"])
            and metadata_holds(a["metadata"], metadata)
            # As LangGraph's: a case-insensitive part of the name.
            and (not name or name.casefold() in a["name"].casefold())
        ]
        found = found[offset : offset + limit]
        await conn.respond(200, orjson.dumps(found), JSON)

    async def _assistant(self, conn, assistant_id: str):
        await self._identity(conn, "read")
        agent = self.app.agents.get(assistant_id)
        if agent is None:
            raise HttpError(404, "not_found", f"no assistant {assistant_id!r}")
        return agent

    async def _get_assistant(self, conn, assistant_id: str) -> None:
        agent = await self._assistant(conn, assistant_id)
        await conn.respond(200, orjson.dumps(assistant(agent)), JSON)

    async def _assistant_graph(self, conn, assistant_id: str) -> None:
        agent = await self._assistant(conn, assistant_id)
        xray = _flag(_query(conn).get("xray"), "xray")
        await conn.respond(200, orjson.dumps(graph_of(agent, xray)), JSON)

    async def _assistant_schemas(self, conn, assistant_id: str) -> None:
        agent = await self._assistant(conn, assistant_id)
        await conn.respond(200, orjson.dumps(schemas_of(agent)), JSON)

    async def _assistant_subgraphs(self, conn, assistant_id: str, namespace=None) -> None:
        agent = await self._assistant(conn, assistant_id)
        recurse = _flag(_query(conn).get("recurse"), "recurse")
        found = subgraphs_of(agent, namespace, bool(recurse))
        await conn.respond(200, orjson.dumps(found), JSON)

    # -- requests ------------------------------------------------------------

    async def _identity(self, conn, action: str, raw: bytes | None = None):
        if self.owed is not None:
            self.owed.watch()  # an App served without a start (no ASGI lifespan)
        request = self.handler.request_of(conn, raw)
        identity = await self.handler.identify(request)
        require(identity, action)
        return identity, request

    async def _body(self, conn, action: str) -> tuple[object, dict]:
        """The caller, then the JSON object body (an empty POST is ``{}``)."""
        identity, body, _ = await self._sized_body(conn, action)
        return identity, body

    async def _sized_body(self, conn, action: str) -> tuple[object, dict, int]:
        """``_body`` and the body's size: a large one is parsed and checked off the
        event loop (``run_input.off_loop``), as are the messages it carries."""
        # An untyped empty POST is {} (what the SDKs' cancel sends); untyped with
        # a body (sent chunked, or over HTTP/2: no length) it is refused.
        raw, refused = await self.handler.read_body(conn, empty_untyped=True)
        identity, request = await self._identity(conn, action, raw)
        if refused is not None:
            raise refused
        if not raw:
            return identity, {}, 0

        def parsed():
            body = request.body
            if isinstance(body, dict):
                _check_depth(body)
            return body

        try:
            body = await off_loop(len(raw), parsed)
        except RunInputError as error:
            raise _unprocessable(str(error)) from None
        if request.json_error is not None:
            raise _unprocessable(f"the body is not JSON: {request.json_error}", "invalid_json")
        if not isinstance(body, dict):
            raise _unprocessable("the body must be a JSON object")
        return identity, body, len(raw)

    async def _thread(self, identity, thread_id: str, agent=None, must_exist: bool = True):
        """The thread, once the caller may touch it (403 before 404)."""
        app = self.app
        thread = await app.store.load(thread_id)
        await self.handler.authorize_thread(identity, thread_id, thread_guards(app, thread, agent))
        if thread is None and must_exist:
            raise HttpError(404, "not_found", f"no thread {thread_id!r}")
        return thread

    # The request steps the thread-centric routes share (ingress.agent_threads).
    request_body = _body
    sized_body = _sized_body
    thread_of = _thread

    # -- threads -------------------------------------------------------------

    async def status(self, thread) -> str:
        thread_id = thread.thread_id
        if self.gate.busy(thread_id):
            return "busy"
        # A run of another worker or node, where the run logs are shared.
        if await self.app.runs.active_of(thread_id) is not None:
            return "busy"
        return thread.status  # as its last save left it (store/keep.py)

    async def thread_json(self, thread) -> dict:
        return self.thread_json_of(thread, await self.status(thread))

    def thread_json_of(self, thread, status: str) -> dict:
        interrupts = interrupts_of(thread.interrupts)
        return {
            "thread_id": thread.thread_id,
            "created_at": iso(thread.created_at or thread.updated_at),
            "updated_at": iso(thread.updated_at),
            "metadata": thread.metadata,
            "status": status,
            "values": values_of(thread.state, thread.messages),
            "interrupts": {thread.agent_id or "agent": interrupts} if interrupts else {},
            "config": {},
        }

    async def _create_thread(self, conn) -> None:
        identity, body = await self._body(conn, "run")
        thread_id = body.get("thread_id")
        if thread_id is None:
            thread_id = str(uuid.uuid4())
        elif not isinstance(thread_id, str) or not thread_id or "/" in thread_id:
            raise _unprocessable("'thread_id' must be a non-empty string without '/'")
        check_id(thread_id, "'thread_id'")
        if_exists = body.get("if_exists", "raise")
        if if_exists not in ("raise", "do_nothing"):
            raise _unprocessable("'if_exists' must be 'raise' or 'do_nothing'")
        metadata = _object(body, "metadata")
        await self._thread(identity, thread_id, must_exist=False)
        created = await create(self.app.store, thread_id, metadata, owner_of(identity))
        if not created and if_exists == "raise":
            raise HttpError(409, "thread_exists", f"thread {thread_id!r} already exists")
        thread = await self.app.store.load(thread_id)
        await conn.respond(200, orjson.dumps(await self.thread_json(thread)), JSON)

    async def _get_thread(self, conn, thread_id: str) -> None:
        identity, _ = await self._identity(conn, "read")
        thread = await self._thread(identity, thread_id)
        await conn.respond(200, orjson.dumps(await self.thread_json(thread)), JSON)

    async def _patch_thread(self, conn, thread_id: str) -> None:
        identity, body = await self._body(conn, "run")
        metadata = _object(body, "metadata")
        await self._thread(identity, thread_id)
        if not await self.app.store.update_metadata(thread_id, metadata):
            raise HttpError(404, "not_found", f"no thread {thread_id!r}")
        thread = await self.app.store.load(thread_id)
        await conn.respond(200, orjson.dumps(await self.thread_json(thread)), JSON)

    async def _delete_thread(self, conn, thread_id: str) -> None:
        identity, _ = await self._identity(conn, "run")
        thread = await self._thread(identity, thread_id)
        if await self.status(thread) == "busy":
            raise HttpError(409, "run_active", f"thread {thread_id!r} has an active run")
        # Then held as a run holds it: another worker's run (the store's lease)
        # is 409 too, where its last save would make the thread again.
        lease = await self.gate.claim(thread_id)
        try:
            await self.app.store.delete(thread_id)
            self.registry.forget(thread_id)
        finally:
            await self.gate.unclaim(thread_id, lease)
        await conn.respond(204, b"", [("cache-control", "no-cache")])

    async def _search(self, conn) -> None:
        identity, body = await self._body(conn, "read")
        metadata = _object(body, "metadata")
        values = _object(body, "values")
        limit, offset, status = _page(body)
        ids = body.get("ids")
        if ids is not None:
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise _unprocessable("'ids' must be a list of strings")
            ids = set(ids)
        found = await search_threads(self, identity, metadata, values, ids, status, limit, offset)
        await conn.respond(200, orjson.dumps(found), JSON)

    async def _list_threads(self, conn) -> None:
        """``GET /threads?limit=&offset=&status=``: the caller's threads, newest
        first: the search without filters, paged in the store (no cap)."""
        identity, _ = await self._body(conn, "read")
        limit, offset, status = _page({k: v for k, v in _query(conn).items() if v})
        found = await search_threads(self, identity, {}, {}, None, status, limit, offset)
        await conn.respond(200, orjson.dumps(found), JSON)

    async def _update_state(self, conn, thread_id: str) -> None:
        """``POST /threads/{id}/state``: ``values`` update the state, ``messages`` in
        it as LangGraph's add_messages adds them (``turns.state_update``); refused
        (409) while a run is active. ``as_node`` is taken (the agent is the graph's
        one node). A ``checkpoint`` / ``checkpoint_id`` of a step of the current
        branch is a fork: the update is written there (the old branch kept), or,
        with nothing to write, answered with that step (a run naming it forks:
        agent_protocol/steps.py); any other than the current one is a 422, never
        an update of the current state."""
        app = self.app
        identity, body, size = await self._sized_body(conn, "run")
        wanted = _named_checkpoint(body)
        values = body.get("values")
        if isinstance(values, list) and len(values) == 1 and isinstance(values[0], dict):
            values = values[0]
        if values is not None and not isinstance(values, dict):
            raise _unprocessable("'values' must be an object")
        values = dict(values or {})
        sent = values.pop("messages", None)
        added = await off_loop(size, _messages, sent, app.parts, "values.messages")
        thread = await self._thread(identity, thread_id)
        if not added and not values and wanted is not None:
            step = step_of(thread, wanted)
            if step is not None:
                # Nothing to write: the fork is the step, which a run naming it
                # takes (agent_protocol/steps.py).
                fork = {"checkpoint": step_checkpoint(thread, step)}
                await conn.respond(200, orjson.dumps(fork), JSON)
                return
        if self.gate.busy(thread_id):
            raise HttpError(409, "run_active", f"thread {thread_id!r} has an active run")

        def update(thread):
            step = None
            if wanted is not None and wanted != checkpoint(thread)["checkpoint_id"]:
                step = step_of(thread, wanted)
                if step is None:
                    raise _unprocessable(
                        f"checkpoint {wanted!r} is neither the thread's current one nor a"
                        " step of its current branch"
                    )
            return state_update(thread, added, values, step)

        # Under the thread's lease, fenced, like a run's save.
        await self.gate.update(thread_id, update)
        thread = await app.store.load(thread_id)
        await conn.respond(200, orjson.dumps({"checkpoint": checkpoint(thread)}), JSON)

    async def _langgraph_state(self, conn, thread_id: str) -> None:
        """``GET {LANGGRAPH}/threads/{id}/state``: the ThreadState with the messages in
        ``values`` (LangGraph's shape), as LangGraph's clients read it."""
        identity, _ = await self._identity(conn, "read")
        thread = await self._thread(identity, thread_id)
        await conn.respond(200, orjson.dumps(current_state(thread)), JSON)

    async def _history(self, conn, thread_id: str, langgraph: bool = False) -> None:
        # The current state, then the branches the thread left (agent_protocol/branches.py).
        wanted, metadata = None, None
        if conn.method == "POST":
            identity, body = await self._body(conn, "read")
            given = body
            wanted = _checkpoint_id(body.get("checkpoint"))
            metadata = _object(body, "metadata")
        else:
            identity, _ = await self._identity(conn, "read")
            given = _query(conn)
        limit = bounded(given.get("limit"), "limit", 10, 1, MAX_PAGE)
        before = _before(given.get("before"))
        thread = await self._thread(identity, thread_id)
        store = self.app.store
        if langgraph:  # with the steps of the current branch (agent_protocol/steps.py)
            states = await step_history(store, thread, limit, wanted, before, metadata)
        else:
            states = await branch_history(store, thread, limit, wanted, False, before, metadata)
        await conn.respond(200, orjson.dumps(states), JSON)

    async def _state_at(
        self, conn, thread_id: str, checkpoint_id: str | None = None, langgraph: bool = False
    ) -> None:
        """A state by its checkpoint id: the current one or a branch the thread left."""
        if checkpoint_id is None:  # POST …/state/checkpoint {checkpoint: {checkpoint_id}}
            identity, body = await self._body(conn, "read")
            checkpoint_id = _checkpoint_id(body.get("checkpoint"))
            if checkpoint_id is None:
                raise _unprocessable("'checkpoint.checkpoint_id' must be a string")
        else:
            identity, _ = await self._identity(conn, "read")
        thread = await self._thread(identity, thread_id)
        if langgraph:
            states = await step_history(self.app.store, thread, 1, checkpoint_id)
        else:
            states = await branch_history(self.app.store, thread, 1, checkpoint_id, langgraph)
        if not states:
            raise HttpError(404, "not_found", f"no checkpoint {checkpoint_id!r}")
        await conn.respond(200, orjson.dumps(states[0]), JSON)

    # -- runs ----------------------------------------------------------------

    def _run_input(self, body: dict, thread_id: str, run_id: str, thread) -> RunInput:
        """A RunCreate body as the turn the agent runs on."""
        run_input = body.get("input")
        command = body.get("command")
        if command is not None and not isinstance(command, dict):
            raise _unprocessable("'command' must be an object")
        if command:
            run_input = None  # LangGraph runs the command and leaves the input aside
        messages: list[dict] = []
        state = None
        if isinstance(run_input, dict):
            messages = _messages(run_input.get("messages"), self.app.parts, "input.messages")
            state = {k: v for k, v in run_input.items() if k != "messages"} or None
        elif isinstance(run_input, str):
            messages = _messages(run_input, self.app.parts, "input")
        elif run_input is not None:
            raise _unprocessable("'input' must be an object (or a message's text)")
        resume = None
        if command:
            # interruptEvent: what CopilotKit sends beside a resume (the interrupt's
            # value, for its own use); LangGraph's server leaves it aside too.
            unknown = set(command) - {"resume", "update", "interruptEvent"}
            if unknown:
                raise _unprocessable(f"command.{sorted(unknown)[0]} is not supported")
            update = command.get("update")
            if update is not None:
                if isinstance(update, list) and all(
                    isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in update
                ):
                    update = dict(update)
                if not isinstance(update, dict):
                    raise _unprocessable("'command.update' must be an object or [key, value] pairs")
                update = dict(update)
                # LangGraph adds them (its add_messages reducer): the run's input
                # messages, never a state key over the thread's messages.
                sent = update.pop("messages", None)
                messages += _messages(sent, self.app.parts, "command.update.messages")
                state = {**(state or {}), **update} or None
            if "resume" in command:
                resume = _resume(command["resume"], thread)
        users = [m for m in messages if m["role"] == "user"]
        try:
            text = _text_of(users[-1].get("content")) if users else ""
        except RunInputError as error:
            raise _unprocessable(str(error)) from None
        extra = {k: body[k] for k in ("config", "context", "metadata") if body.get(k) is not None}
        return RunInput(
            thread_id=thread_id,
            run_id=run_id,
            input=text,
            history=[],
            messages=messages,
            state=state,
            forwarded_props={"agent_protocol": extra} if extra else None,
            resume=resume,
        )

    async def _create_run(self, conn, thread_id: str | None, kind: str) -> None:
        identity, body, size = await self._sized_body(conn, "run")
        begun = await self.begin(identity, body, thread_id, size)
        record, stateless = begun.record, begun.stateless
        thread_id, run_id = record.thread_id, record.run_id
        location = f"/runs/{run_id}" if stateless else f"/threads/{thread_id}/runs/{run_id}"
        headers = [("content-location", location)]
        keep = not stateless or begun.on_completion == "keep"
        on_disconnect = begun.on_disconnect
        if kind == "background":
            if not keep:
                self._discard(record)  # nobody waits on it: it goes once the run ended
            await conn.respond(200, orjson.dumps(record.as_json()), [*JSON, *headers])
        elif kind == "wait":
            result = await self._watched(conn, record, on_disconnect, keep)
            if result is not None:
                await conn.respond(200, orjson.dumps(result), [*JSON, *headers])
        else:
            if not stateless:
                headers.append(("location", location + "/stream"))
            await self._stream(conn, record, begun.modes, 0, headers, on_disconnect, keep)

    async def begin(self, identity, body: dict, thread_id: str | None, size: int = 0) -> Begun:
        """Starts (or queues) the run a RunCreate ``body`` asks for on ``thread_id``
        (None: a stateless run); HttpError 422/404/409 as the routes answer them.
        ``size``: the request body's, for ``off_loop``."""
        assistant_id = body.get("assistant_id")
        if not isinstance(assistant_id, str) or not assistant_id:
            raise _unprocessable("'assistant_id' must be the id of an agent")
        strategy = body.get("multitask_strategy", "reject")
        if strategy not in STRATEGIES:
            raise _unprocessable(
                "'multitask_strategy' must be 'reject', 'enqueue' or 'interrupt'"
                " (rollback is not served: no checkpoints are kept)"
            )
        if_not_exists = body.get("if_not_exists", "reject")
        if if_not_exists not in ("reject", "create"):
            raise _unprocessable("'if_not_exists' must be 'reject' or 'create'")
        on_disconnect = body.get("on_disconnect", "continue")
        if on_disconnect not in ("cancel", "continue"):
            raise _unprocessable("'on_disconnect' must be 'cancel' or 'continue'")
        on_completion = body.get("on_completion", "delete")
        if on_completion not in ("delete", "keep"):
            raise _unprocessable("'on_completion' must be 'delete' or 'keep'")
        modes = _modes(body.get("stream_mode", "values")) or ("values",)
        metadata = _object(body, "metadata")
        subgraphs = body.get("stream_subgraphs", False)
        if not isinstance(subgraphs, bool):
            raise _unprocessable("'stream_subgraphs' must be true or false")
        # Taken as LangGraph's schema has them, though the bridge has no use for them.
        _object(body, "config")
        _object(body, "context")
        if body.get("durability") not in (None, *DURABILITIES):
            raise _unprocessable(f"'durability' must be {', '.join(DURABILITIES)}")
        resumable = body.get("stream_resumable")
        if resumable is not None and not isinstance(resumable, bool):
            raise _unprocessable("'stream_resumable' must be true or false")
        for key in _NOT_SERVED:
            if not _unasked(key, body.get(key)):
                raise _unprocessable(f"'{key}' is not served (no checkpoints are kept)")
        webhook = body.get("webhook")
        if webhook is not None:
            (refuse_all if self.webhooks is None else self.webhooks.config.check)(webhook)
        agent = self.app.agents.get(assistant_id)
        if agent is None:
            raise HttpError(404, "not_found", f"no assistant {assistant_id!r}")
        stateless = thread_id is None
        if stateless:
            thread_id = str(uuid.uuid4())
        thread = await self._thread(identity, thread_id, agent, must_exist=False)
        if thread is None and not stateless and if_not_exists == "reject":
            raise HttpError(404, "not_found", f"no thread {thread_id!r}")
        run_id = str(uuid.uuid4())
        run_input = await off_loop(size, self._run_input, body, thread_id, run_id, thread)
        wanted = _named_checkpoint(body)
        if wanted is not None:
            run_input = _from_step(run_input, thread, wanted)
        kwargs = {"input": body.get("input"), "command": body.get("command")}
        kwargs["stream_mode"] = list(modes)
        if webhook is not None:
            kwargs["webhook"] = webhook
        kwargs["stream_subgraphs"] = subgraphs
        record = RunRecord(thread_id, run_id, assistant_id, metadata, kwargs, strategy)
        await self._launch(record, agent, run_input, identity)
        # Once the run is taken (started or queued): a run refused (409, 429)
        # leaves the thread as it was, and makes none.
        await self._mark(identity, thread, thread_id, assistant_id)
        if webhook is not None:
            if self.owed is not None:
                await self.owed.owe(thread_id, run_id, webhook)
            self.gate.spawn(self._call_webhook(record, webhook))
        return Begun(record, stateless, modes, on_disconnect, on_completion)

    async def _mark(self, identity, thread, thread_id: str, assistant_id: str) -> None:
        """The thread's metadata names the assistant of its latest run, as LangGraph's
        does: its clients list a graph's threads by it (agent-chat-ui)."""
        marks = {"graph_id": assistant_id, "assistant_id": assistant_id}
        store = self.app.store
        if thread is None and await create(store, thread_id, marks, owner_of(identity)):
            return
        # Written only when changed: a write moves the thread's current checkpoint.
        if thread is None or any((thread.metadata or {}).get(k) != v for k, v in marks.items()):
            await store.update_metadata(thread_id, marks)

    async def _launch(self, record: RunRecord, agent, run_input, identity) -> None:
        """Starts the run now, or queues it (``enqueue``) behind the thread's active run."""
        thread_id = record.thread_id
        if record.strategy == "interrupt":
            await self._unqueue_all(thread_id)
        busy = self.gate.busy(thread_id)
        if record.strategy == "interrupt" and (busy or await self._interrupt_elsewhere(thread_id)):
            self._interrupt(thread_id)
            self._enqueue(record, agent, run_input, identity, first=True)
            await self.registry.share(record)
            return
        if record.strategy == "enqueue" and busy:
            self._enqueue(record, agent, run_input, identity)
            await self.registry.share(record)
            return
        try:
            # Only a run that would be refused supersedes an abandoned one (runs.supersede).
            supersede = record.strategy == "reject"
            run = await self.handler.start(agent, run_input, identity, supersede)
        except HttpError as error:
            if error.status == 409 and error.code == "run_active" and record.strategy != "reject":
                self._enqueue(record, agent, run_input, identity)
                await self.registry.share(record)
                return
            raise
        record.took(run.log)
        self.registry.add(record)
        await self.registry.share(record)

    async def _unqueue_all(self, thread_id: str) -> None:
        """``multitask_strategy="interrupt"``: the runs queued on the thread are
        cancelled too (``interrupted``, never run), on every node: LangGraph
        cancels every pending run of the thread, not only the active one."""
        for queued in [r for r in self._queued if r.thread_id == thread_id]:
            self._unqueue(queued)
        if self.registry.shared is None:
            return
        for other in await self.registry.of_thread_everywhere(thread_id):
            if other.log is None and other.status == "pending":
                # Another node's: its watch of the shared records unqueues it there.
                other.cancelled = True
                other.settled_unstarted()
                await self.registry.share(other)

    async def _interrupt_elsewhere(self, thread_id: str) -> bool:
        """``multitask_strategy="interrupt"`` where the active run is another node's
        (shared run logs): it is stopped there and shows as ``interrupted`` everywhere."""
        if self.registry.shared is None:
            return False
        active = await self.app.runs.active_of(thread_id)
        if active is None:
            return False
        record = await self.registry.get(thread_id, active.run_id)
        if record is not None:
            record.cancelled = True
            await self.registry.share(record)
        await self.app.runs.cancel(active)
        return True

    async def _call_webhook(self, record: RunRecord, url: str) -> None:
        """Once the run ended: its record to the webhook (``agui_bridge.webhooks``), by
        this node unless another one ended it and delivered (``agent_protocol.hooks``)."""
        await self._ended(record)
        if self.owed is not None:
            # As every node sees it (a cancel from another node), if no other node took it.
            record = await self.registry.get(record.thread_id, record.run_id) or record
            if not await self.owed.take(record.thread_id, record.run_id):
                return
        self._deliver(url, record)

    def _deliver(self, url: str, record: RunRecord) -> None:
        self.webhooks.send(url, record.as_json())

    def _interrupt(self, thread_id: str) -> None:
        """``multitask_strategy="interrupt"``: the active run stops (``interrupted``); what
        it made so far is kept, and the new run goes on from there."""
        active = self.gate.run_of(thread_id)
        if active is None:
            return  # being claimed: the new run waits for it instead
        record = self.registry.records.get(thread_id, {}).get(active.ctx.run_id)
        if active.stop() and record is not None:
            record.cancelled = True
            self.registry.changed(record)

    def _enqueue(self, record, agent, run_input, identity, first: bool = False) -> None:
        """The run starts once the thread is free (the run gate wakes it)."""
        self.registry.add(record)

        def started(run) -> None:
            self._queued.pop(record, None)
            record.took(run.log)
            self.registry.changed(record)

        def failed(message: str) -> None:
            self._queued.pop(record, None)
            record.failed = message
            record.settled_unstarted()
            self.registry.changed(record)

        queued = Queued(
            start=lambda: self.handler.start(agent, run_input, identity, supersede=False),
            started=started,
            failed=failed,
            cancelled=lambda: record.cancelled,
            wanted=None if self.registry.shared is None else partial(self._wanted, record),
        )
        self._queued[record] = queued
        self.gate.enqueue(record.thread_id, queued, first)
        if self.registry.shared is not None:
            self.gate.spawn(self._watch_queued(record))

    async def _wanted(self, record: RunRecord) -> bool:
        """A queued run about to start: not if another node cancelled it since the
        last look (an interrupt there ends the active run before that look)."""
        try:
            fields = await self.registry.shared.get(record.thread_id, record.run_id)
        except Exception as error:  # the watch looks again; the run is not held up
            log.warning("run %s: reading its shared record failed: %s", record.run_id, error)
            return not record.cancelled
        if fields is not None and fields.get("cancelled") and record in self._queued:
            self._unqueue(record)
        return not record.cancelled

    async def _watch_queued(self, record: RunRecord) -> None:
        """A queued run cancelled through another node (shared run logs) leaves the queue."""
        while record in self._queued and not record.cancelled:
            await asyncio.sleep(QUEUED_LOOK)
            fields = await self.registry.shared.get(record.thread_id, record.run_id)
            if fields is not None and fields.get("cancelled") and record in self._queued:
                self._unqueue(record)

    async def _started(self, record: RunRecord) -> None:
        """Waits for the run's start (or its settling unstarted). Another node's
        queued run (shared run logs) starts there, where nothing tells this
        record: its shared record is read again every ``QUEUED_LOOK`` (as a GET
        of the run reads it) until its log is here or it settled."""
        while not record.started.is_set():
            if record.stored is None or self.registry.shared is None:
                await record.started.wait()  # this node's: it starts or settles here
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(QUEUED_LOOK):
                    await record.started.wait()
            if not record.started.is_set():
                await self._look(record)

    async def _look(self, record: RunRecord) -> None:
        """Another node's unstarted run, as the shared records have it now."""
        thread_id, run_id = record.thread_id, record.run_id
        try:
            current = await self.registry.get(thread_id, run_id)
        except Exception as error:  # looked at again after the next QUEUED_LOOK
            log.warning("run %s: reading its shared record failed: %s", run_id, error)
            return
        if current is not None and current is not record:
            # This worker had forgotten it (the run retention): the record read again.
            record.adopt(current.fields())
            record.stored = current.stored
            if current.log is not None:
                record.took(current.log)
        if current is None or (record.log is None and record.status not in ACTIVE):
            record.settled_unstarted()  # deleted, cancelled or failed: never to start

    async def _ended(self, record: RunRecord) -> None:
        await self._started(record)
        run_log = record.log
        while run_log is not None and not run_log.ended:
            await run_log.waiter()

    async def _result(self, record: RunRecord, keep: bool = True) -> dict:
        """What ``/wait`` and ``/join`` answer: the thread's values once the run ended,
        with ``__interrupt__`` when it paused and ``__error__`` when it failed."""
        await self._ended(record)
        thread = await self.app.store.load(record.thread_id)
        if thread is None:
            values = {}
        else:
            values = values_of(thread.state, thread.messages, thread.interrupts)
        if not keep:
            self._discard(record)
        if record.failed is not None:
            values["__error__"] = {"error": "RunNotStarted", "message": record.failed}
        end = terminal_event(record.log) if record.log is not None else None
        if end is not None and end.get("type") == "RUN_ERROR" and not record.cancelled:
            code = end.get("code")
            values["__error__"] = {
                "error": code if isinstance(code, str) and code else "RunError",
                "message": end.get("message", ""),
            }
        return values

    def _left(self, record: RunRecord, on_disconnect: str) -> None:
        """The client of a stream or a wait left: ``on_disconnect="cancel"`` cancels
        its run as the cancel route does (a queued one leaves the queue, a live one
        stops on whichever node runs it; one that ended stays as it ended)."""
        if on_disconnect == "cancel":
            self.gate.spawn(self._abandon(record))

    async def _abandon(self, record: RunRecord) -> None:
        try:
            if record.log is None and record.stored is not None:
                # Another node's, unstarted when last read: it may have started since.
                record = await self.registry.get(record.thread_id, record.run_id) or record
            if record.log is not None:
                await self._stop(record, record.log)
            elif record.status == "pending":
                self._unqueue(record)
        except Exception as error:  # nobody waits for this cancel: told in the log
            log.warning("run %s: its cancel on disconnect failed: %s", record.run_id, error)

    def _unqueue(self, record: RunRecord) -> None:
        record.cancelled = True
        record.settled_unstarted()
        self.registry.changed(record)
        queued = self._queued.pop(record, None)
        if queued is not None:
            self.gate.unqueue(record.thread_id, queued)

    def _discard(self, record: RunRecord) -> None:
        """A stateless run's thread goes once the run ended (``on_completion="delete"``)."""

        async def discard():
            await self._ended(record)
            await self.app.store.delete(record.thread_id)
            self.registry.forget(record.thread_id)

        self.gate.spawn(discard())

    async def _run_of(self, conn, thread_id: str, run_id: str, action: str):
        identity, _ = await self._identity(conn, action)
        await self._thread(identity, thread_id)
        record = await self.registry.get(thread_id, run_id)
        if record is None:
            raise HttpError(404, "not_found", f"no run {run_id!r} on thread {thread_id!r}")
        if record.log is not None:
            await self.handler.may_read(identity, record.log)
        else:
            await self._may_watch_queued(identity, record)
        return record

    async def _may_watch_queued(self, identity, record: RunRecord) -> None:
        """A run not started yet answers to its agent's ``authorize_stream`` as a
        live one does (``may_read``): its reader reads it once it starts, and a
        join that cancels on disconnect stops it when its reader leaves."""
        agent = self.app.agents.get(record.assistant_id)
        if not await self.handler.may_stream(identity, record.thread_id, record.run_id, agent):
            raise HttpError(403, "forbidden", "this run stream is not yours")

    async def _joined(self, conn, thread_id: str, run_id: str, on_disconnect: str):
        """The run a join reads; one that cancels the run when its reader leaves
        (``cancel_on_disconnect``) is a cancel too, allowed as the cancel route's."""
        if on_disconnect != "cancel":
            return await self._run_of(conn, thread_id, run_id, "read")
        refuse_cross_site(self.app, conn, changes_state=True)  # a GET that may stop the run
        record = await self._run_of(conn, thread_id, run_id, "run")
        if record.log is not None:
            await self.handler.cancellable(conn, thread_id, run_id)
        return record

    async def _list_runs(self, conn, thread_id: str) -> None:
        identity, _ = await self._identity(conn, "read")
        query = _query(conn)
        limit = bounded(query.get("limit"), "limit", 10, 1, MAX_PAGE)
        offset = bounded(query.get("offset"), "offset", 0, 0, 1 << 31)
        status = query.get("status") or None
        if status is not None and status not in RUN_STATUSES:
            raise _unprocessable(f"'status' must be {', '.join(RUN_STATUSES)}")
        await self._thread(identity, thread_id)
        # A run shows its input: only the runs whose stream the caller may read.
        agents = self.app.agents
        runs = [
            r.as_json()
            for r in await self.registry.of_thread_everywhere(thread_id)
            if await self.handler.may_stream(
                identity, thread_id, r.run_id, agents.get(r.assistant_id)
            )
        ]
        if status is not None:
            runs = [r for r in runs if r["status"] == status]
        await conn.respond(200, orjson.dumps(runs[offset : offset + limit]), JSON)

    async def _get_run(self, conn, thread_id: str, run_id: str) -> None:
        record = await self._run_of(conn, thread_id, run_id, "read")
        await conn.respond(200, orjson.dumps(record.as_json()), JSON)

    async def _delete_run(self, conn, thread_id: str, run_id: str) -> None:
        record = await self._run_of(conn, thread_id, run_id, "run")
        if record.status in ("pending", "running"):
            raise HttpError(409, "run_active", f"run {run_id!r} has not ended; cancel it first")
        self.registry.delete(record)
        await conn.respond(204, b"", [("cache-control", "no-cache")])

    async def _join(self, conn, thread_id: str, run_id: str) -> None:
        on_disconnect = "cancel" if _cancels_on_disconnect(_query(conn)) else ""
        record = await self._joined(conn, thread_id, run_id, on_disconnect)
        # A join holds a connection on the run as a stream does (queued, it waits for
        # the run's start and then reads it): a reader.
        await self.app.ops.admit_reader(thread_id, run_id, record.assistant_id)
        result = await self._watched(conn, record, on_disconnect, True)
        if result is not None:
            await conn.respond(200, orjson.dumps(result), JSON)

    async def _watched(self, conn, record, on_disconnect: str, keep: bool) -> dict | None:
        """The run's result; None when the client left first (``on_disconnect="cancel"``
        then stops the run). Its client is a reader of the run while it waits."""
        result = asyncio.ensure_future(self._read_result(record, keep))
        gone = asyncio.ensure_future(conn.wait_disconnect())
        try:
            await asyncio.wait([result, gone], return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if result.done():
            return result.result()
        result.cancel()
        self._left(record, on_disconnect)
        if not keep:
            self._discard(record)
        return None

    async def _read_result(self, record: RunRecord, keep: bool) -> dict:
        await self._started(record)
        if record.log is None:
            return await self._result(record, keep)
        async with reading(self.app.runs, record.log):  # runs.supersede counts it
            return await self._result(record, keep)

    async def _join_stream(self, conn, thread_id: str, run_id: str) -> None:
        query = _query(conn)
        after = last_event_id(conn) or 0
        on_disconnect = "cancel" if _cancels_on_disconnect(query) else "continue"
        record = await self._joined(conn, thread_id, run_id, on_disconnect)
        # 429 past a per-identity limit
        await self.app.ops.admit_reader(thread_id, run_id, record.assistant_id)
        # Every stream_mode the query names (the SDKs repeat the parameter).
        asked = parse_qs(conn.query_string or "").get("stream_mode")
        modes = _modes(asked)
        if not modes:
            modes = tuple(record.kwargs.get("stream_mode") or ("values",))
        await self._stream(conn, record, modes, after, [], on_disconnect, True, first=False)

    async def _cancel(self, conn, thread_id: str, run_id: str, langgraph: bool = False) -> None:
        """``langgraph``: the ``/langgraph`` surface, whose callers all speak the
        Agent Protocol (elsewhere its SDKs say so with ``action=``, ``wait=``)."""
        record = await self.registry.get(thread_id, run_id)
        # LangGraph's `wait=true`: 204 once the run has ended (the stop below
        # waits for that either way; the SDKs send `wait=0` otherwise).
        waited = _query(conn).get("wait") in ("1", "true", "True")
        if record is None or record.log is not None:
            # A live run: the AG-UI route stops it (the same for both protocols).
            run_log = await self.handler.cancellable(conn, thread_id, run_id)
            if not await self._stop(record, run_log):
                status = record.status if record is not None else "success"
                await _already_ended(conn, thread_id, run_id, status, waited, langgraph)
                return
            await _cancelled(conn, thread_id, run_id, waited=waited)
            return
        identity, _ = await self._body(conn, "run")
        await self._thread(identity, thread_id)
        await self._may_watch_queued(identity, record)
        if record.status not in ACTIVE:
            # Settled before it started (cancelled, or it could not start): it stays so.
            await _already_ended(conn, thread_id, run_id, record.status, waited, langgraph)
            return
        self._unqueue(record)
        await _cancelled(conn, thread_id, run_id, waited=waited)

    async def _stop(self, record: RunRecord | None, run_log) -> bool:
        """Stops a live run (either protocol's, on whichever node runs it) as a
        cancel does: False when it had already ended."""
        running = record is not None and record.status == "running"
        was = running and record.cancelled
        if running:
            # Before the stop: whoever sees the run end here knows it was cancelled.
            record.cancelled = True
        try:
            stopped = await self.app.runs.cancel(run_log)
        except BaseException:
            if running and not run_log.ended:
                record.cancelled = was
            raise
        if not stopped:
            if running:
                record.cancelled = was
            return False
        if running:
            # Only once the stop was allowed and taken: the shared records keep
            # a cancel for good (every node shows the run interrupted).
            await self.registry.share(record)
        return True

    # -- streams -------------------------------------------------------------

    async def _stream(
        self, conn, record, modes, after, headers, on_disconnect, keep, first=True
    ) -> None:
        app = self.app

        def left():
            self._left(record, on_disconnect)

        try:
            async with open_stream(
                conn, app.limits, app.keepalive, record.run_id, headers, left
            ) as stream:
                if first:
                    meta = {"run_id": record.run_id, "thread_id": record.thread_id, "attempt": 1}
                    await stream.write(sse("metadata", meta))
                if not await stream.until(self._started(record)):
                    return
                if record.failed is not None or record.log is None:
                    message = record.failed or "the run was cancelled before it started"
                    await stream.write(sse("error", {"error": "RunNotStarted", "message": message}))
                    return
                parts = await Parts.of(app, record, modes, after)
                async with reading(app.runs, record.log):  # runs.supersede counts it
                    await stream.follow(record.log, 0, parts)
        finally:
            if not keep:
                self._discard(record)


def _unasked(key: str, value) -> bool:
    """A field of ``_NOT_SERVED`` that asks for nothing: absent, false, an empty
    list, or no delay (``in`` would take 0 for False: ``interrupt_before: 0``)."""
    if value is None or value is False or (type(value) is list and not value):
        return True
    return key == "after_seconds" and type(value) in (int, float) and value == 0


async def _already_ended(
    conn, thread_id: str, run_id: str, status: str, waited: bool, langgraph: bool
) -> None:
    """A cancel of a run that had already ended: 409 ``run_ended``, except to an
    Agent Protocol caller (``langgraph``, ``action=``/``wait=`` in the query)."""
    query = _query(conn)
    if not (langgraph or "action" in query or "wait" in query):
        raise HttpError(409, "run_ended", f"run {run_id!r} has already ended")
    # As LangGraph's server answers a cancel that raced the run's end:
    # no error, the run stays as it ended (a Stop click is no exception).
    await _cancelled(conn, thread_id, run_id, status, waited)


async def _cancelled(
    conn, thread_id: str, run_id: str, status: str = "cancelled", waited: bool = False
) -> None:
    """A cancel's 202 (204, no body, to a caller that asked to wait): ``status``
    is the run's own when it had already ended (then no cancel is counted: the
    run ended as it would have)."""
    req = current_request()
    if req is not None and status == "cancelled":
        req.stopped = True
    if waited:
        await conn.respond(204, b"", [])
        return
    body = orjson.dumps({"threadId": thread_id, "runId": run_id, "status": status})
    await conn.respond(202, body, [("content-type", "application/json")])


@dataclass(frozen=True)
class Begun:
    """A run ``AgentProtocol.begin`` started or queued, and how its request wants it served."""

    record: RunRecord
    stateless: bool
    modes: tuple[str, ...]
    on_disconnect: str
    on_completion: str


_ABSENT = object()


def _from_step(run_input: RunInput, thread, wanted: str) -> RunInput:
    """A run from a checkpoint: the current one runs as any run; a step of the
    current branch runs on the step's messages then the input's (the thread
    branches there: agent_protocol/steps.py)."""
    if thread is not None and wanted == checkpoint(thread)["checkpoint_id"]:
        return run_input
    step = step_of(thread, wanted) if thread is not None else None
    if step is None:
        raise _unprocessable(
            f"checkpoint {wanted!r} is neither the thread's current one nor a step of its"
            " current branch (a branch the thread left cannot be run from)"
        )
    return replace(run_input, messages=thread.messages[:step] + run_input.messages)


def _named_checkpoint(body: dict) -> str | None:
    """The checkpoint a state update or a run names (``checkpoint_id``, or
    ``checkpoint``'s), else None."""
    wanted = body.get("checkpoint_id")
    if wanted is not None and not isinstance(wanted, str):
        raise _unprocessable("'checkpoint_id' must be a string")
    return _checkpoint_id(body.get("checkpoint")) or wanted


def _cancels_on_disconnect(query) -> bool:
    """``cancel_on_disconnect``: the Python SDK sends ``true``/``false``, the JS
    SDK ``1``/``0``."""
    return query.get("cancel_on_disconnect") in ("true", "1")


def _flag(value, name: str):
    """A query flag: ``true``/``false``, or (``xray``) a depth."""
    if value in (None, "", "false"):
        return False
    if value == "true":
        return True
    depth = integer(value) if name == "xray" else None  # ASCII digits ('²' was a 500)
    if depth is not None:
        return depth
    raise _unprocessable(f"'{name}' must be true or false")


def _messages(sent, parts, name: str) -> list[dict]:
    """LangGraph messages (a list, or one) as the AG-UI messages the thread takes:
    the one conversion of ``input.messages``, ``command.update`` and a state update."""
    if sent is None:
        return []
    if isinstance(sent, (str, dict)):
        sent = [sent]
    if not isinstance(sent, list):
        raise _unprocessable(f"'{name}' must be a list of messages")
    try:
        return [to_agui(m, i, parts) for i, m in enumerate(sent)]
    except MessageError as error:
        raise input_error(error, 422, "invalid_request") from None


def _unprocessable_errors(endpoint):
    """An Agent Protocol endpoint: a malformed request is 422 (the LangGraph convention)."""

    async def serve(conn, **params) -> None:
        try:
            await endpoint(conn, **params)
        except HttpError as error:
            if error.status == 400 and error.code != "invalid_content_length":
                raise HttpError(422, error.code, error.message, error.headers) from None
            raise
        except RunInputError as error:  # an id or a message the thread cannot take
            raise _unprocessable(str(error)) from None

    return serve


def _resume(value, thread) -> Resume:
    """``command.resume`` as the resumption of the thread's pending interrupts: a map
    of interrupt id to value answers each one, anything else answers them all."""
    if value is None:
        raise _unprocessable("'command.resume' must not be null")
    # Kept aside by a stopped run while none is pending: a resume naming them re-opens them.
    pending = {i.get("id") for i in answerable(thread)}
    if isinstance(value, dict) and value and set(value) <= pending:
        entries = tuple(
            {"interruptId": k, "status": "resolved", "payload": v} for k, v in value.items()
        )
        return Resume(entries=entries)
    try:
        decided = decision_of(value, "command.resume")
    except RunInputError as error:
        raise _unprocessable(str(error)) from None
    return decided if decided is not None else Resume(decision=value)
