"""App: agents, routes, auth, threads and ``on_event`` subscribers.

``App`` is an ASGI app (``await app(scope, receive, send)``, mountable in
Starlette/FastAPI) and an RSGI app (``app.__rsgi__``, what granian and
``agui-bridge serve`` run), over one request handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from .capabilities import check as check_capabilities
from .coalesce import coalesce_of
from .gate import Gate
from .ingress.asgi import serve_asgi
from .ingress.handler import Handler, HttpError
from .ingress.routes import Routes
from .ingress.rsgi import RsgiConn
from .ops import Ops
from .ops.serve import watch_drain
from .parts import DEFAULT_MAX_PART_BYTES, PartPolicy
from .playground import Playground
from .runs import Limits
from .runs.backend import open_runs
from .runs.run import RunSettings
from .store import DEFAULT_STORE, open_store, sweep
from .webhooks import SHUTDOWN_WAIT, webhooks_of
from .worker import watch_server

DEFAULT_PATH = "/ag-ui/run"
log = logging.getLogger("agui_bridge.app")


class Unauthorized(HttpError):
    """Raise from ``authenticate`` to answer 401 with your own message."""

    def __init__(self, message: str = "authentication required"):
        super().__init__(401, "unauthorized", message)


class Forbidden(HttpError):
    """Raise from ``authenticate`` or ``authorize_thread`` to answer 403."""

    def __init__(self, message: str = "forbidden"):
        super().__init__(403, "forbidden", message)


@dataclass(frozen=True)
class Agent:
    agent_id: str
    fn: Callable
    paths: tuple[str, ...]
    dialect: str
    authorize_thread: Callable | None
    authorize_stream: Callable | None = None
    # agui_bridge.coalesce: None takes the app's, False is off.
    coalesce: Any = None
    capabilities: dict | None = None  # merged over the served ones (agui_bridge.capabilities)


class App:
    """An AG-UI server for one or more agents.

    ``store``: ``"sqlite:///PATH"`` (default ``sqlite:///.agui/threads.sqlite``),
    ``"memory://"`` or a store object (see ``agui_bridge.store``).
    ``authenticate(request) -> identity``: sync or async, run before the body
    is judged (``request.body`` is the JSON body, parsed on first use);
    ``None`` (or raising) answers 401; an identity with ``actions`` (a dict key
    or an attribute) must grant ``"run"`` (or ``"*"``) to run and ``"read"`` or
    ``"run"`` to read a thread's state, else 403. A thread belongs to the agent
    that created it: that agent's ``authorize_thread`` guards the thread on
    every route (runs of any agent, its state; see
    ``ingress.handler.thread_guards``), and a run also answers to its own
    agent's. A thread whose owner has no ``authorize_thread`` is open to any
    caller who knows its threadId.
    ``body_limit``: bytes (413 past it; by default what one part of
    ``max_part_bytes`` needs, base64 and all, plus 1 MiB). Attachments
    (``agui_bridge.parts``): ``max_part_bytes`` (8 MiB: a content part's
    inline data, decoded; 413 past it), ``url_schemes`` (``("https",)``: a
    URL source's allowed schemes; the server never fetches one), ``mime_types``
    (``None``: any; else ``"image/*"``-style patterns a media part's MIME type
    must match). ``body_timeout``: seconds the whole
    body may take to arrive (408 past it; the time to send headers is the
    server's: ``agui-bridge serve --header-timeout``). ``keepalive``: seconds of silence before
    a ``: ping`` comment. ``on_disconnect``: ``"continue"`` (the run goes on and
    its history lands) or ``"cancel"`` (the agent is cancelled, nothing it
    produced is stored). Either way the user's turn is stored when the run
    starts.
    ``clients_resend``: every AG-UI client of this App resends the whole
    conversation it shows with each run (assistant-ui, CopilotKit's chat, a
    page built on ``@ag-ui/client`` that keeps its messages). A request then
    holding none of the thread's messages is that conversation started over
    (assistant-ui's edit of the first message sends it alone, under a new id)
    and branches at the thread's start, the old branch kept. Off (the
    default), such a request appends: a fresh tab that knows only the thread
    id sends its new message and the history stays on the server
    (``docs/branches.md``).

    Run streams: every run's frames go once into its log, and every response
    is a reader of that log (the POST, ``GET /threads/{id}/runs/{run}/events``
    with ``Last-Event-ID``, ``GET /threads/{id}/events``). ``event_ids``: each
    frame carries ``id: n`` (``False``: the bytes of a plain AG-UI stream;
    resuming still works with ``?last_event_id=``). The limits, with their
    defaults in ``agui_bridge.runs.Limits``: ``run_retention`` (600 s: how long
    a finished run stays readable), ``max_log_bytes`` (16 MiB per run; past it
    the oldest frames go and older cursors get the join prelude),
    ``max_total_bytes`` (256 MiB of logs per worker; the oldest finished runs
    go first), ``max_write`` (16 KiB: the most one write hands the transport;
    under ASGI this, times the few sends granian queues, is what a client that
    stops reading pins), ``send_timeout`` (30 s without progress ends a stream;
    the client can resume by id). Under RSGI nothing bounds what a client that
    stops reading pins but the run's own output (granian's RSGI
    ``send_bytes`` queues without limit and says nothing of the socket; see
    ``runs/cursor.py``): serve with ASGI (what ``agui-bridge serve`` runs)
    where that matters.
    ``drain_timeout``: on SIGTERM (or SIGINT) the worker takes no new run and
    lets the running ones go on for this many seconds; those still going then
    are ended by the server: their readers get the closers and ``RUN_ERROR``
    (code ``server_shutdown``), their partial turn is stored and their leases
    released, before the worker exits. Then (``_settle``, at most
    ``webhooks.SHUTDOWN_WAIT``, 3 s) the runs still queued fail, the shared run
    records are written and the webhook calls under way are made; with shared
    run logs one not made by then is owed again, for another node. Keep
    ``drain_timeout`` below the server's kill timeout
    (``agui-bridge serve``: 30 s, ``--kill-timeout``; it refuses to start an
    App whose drain_timeout does not end 10 s before it: ``agui_bridge.worker``).
    It needs the server's own SIGTERM handling (granian, RSGI or ASGI;
    uvicorn), which the App chains onto.
    ``lease_ttl``: seconds a run's lease on its thread lasts unless renewed (it
    is renewed every third of that while the run lives): after a worker dies,
    its threads take new runs again within that time.
    ``runs``: where run logs live, ``"memory://"`` (default: each worker its
    own) or ``"redis://host:port/db"`` (shared by every worker and node: a run
    is read, joined and cancelled from any of them; a node that dies mid-run
    has its runs ended with ``run_lost`` within ``lease_ttl`` + 1 s). The
    forms are documented in ``agui_bridge.runs.backend``. Across nodes the
    thread store must be shared too (PostgreSQL): the run leases live there.
    ``playground``: ``True`` serves the playground page at ``/`` (a path: there,
    with or without a trailing slash; off by default; ``agui-bridge demo`` turns
    it on), a browser UI for every agent of the app, behind the same
    ``authenticate`` (``agui_bridge.playground``).
    ``GET /agents`` lists the agents (id, paths, dialect) either way.
    Owners: a thread is stored with the owner of the identity that created it
    (``authenticate``'s identity: its ``owner``, else its ``id``, a key or an
    attribute); a caller with an owner lists (``POST /threads/search``, the
    playground's list) only its own threads, one without lists them all;
    ``authorize_thread`` still guards every thread (``agui_bridge.store.owner``).
    ``thread_ttl``: seconds after its last update an idle thread (no run) is
    deleted, swept in batches by each worker (off by default;
    ``agui_bridge.store.sweep``).
    """

    def __init__(
        self,
        store: Any = DEFAULT_STORE,
        authenticate: Callable | None = None,
        body_limit: int | None = None,
        body_timeout: float = 15.0,
        keepalive: float = 15.0,
        on_disconnect: str = "continue",
        event_ids: bool = True,
        run_retention: float | None = None,
        max_log_bytes: int | None = None,
        max_total_bytes: int | None = None,
        max_write: int | None = None,
        send_timeout: float | None = None,
        lease_ttl: float = 10.0,
        drain_timeout: float = 20.0,
        runs: Any = "memory://",
        playground: bool | str = False,
        thread_ttl: float | None = None,
        health: Any = True,
        cors: Any = None,
        metrics: bool | str = False,
        limits: Any = None,
        tracing: bool | None = None,
        coalesce: Any = None,
        max_part_bytes: int = DEFAULT_MAX_PART_BYTES,
        url_schemes: tuple[str, ...] = ("https",),
        mime_types: tuple[str, ...] | None = None,
        webhooks: Any = None,
        clients_resend: bool = False,
    ):
        mimes = tuple(mime_types) if mime_types is not None else None
        self.parts = PartPolicy(max_part_bytes, tuple(url_schemes), mimes)
        if body_limit is None:
            # One max-size part and 1 MiB for the rest of the body.
            body_limit = self.parts.encoded_bytes() + (1 << 20)
        elif max_part_bytes != DEFAULT_MAX_PART_BYTES and body_limit < self.parts.encoded_bytes():
            raise ValueError(
                f"body_limit {body_limit} cannot carry a part of max_part_bytes"
                f" ({self.parts.encoded_bytes()} bytes as base64)"
            )
        if on_disconnect not in ("continue", "cancel"):
            raise ValueError("on_disconnect must be 'continue' or 'cancel'")
        self._store_spec = store
        # Health, metrics, traces, logs, CORS and per-identity limits (agui_bridge.ops).
        self.ops = Ops(self, health, cors, metrics, limits, tracing)
        # Where an Agent Protocol run's webhook may go (agui_bridge.webhooks); None: nowhere.
        self.webhooks = webhooks_of(webhooks)
        if thread_ttl is not None and not thread_ttl > 0:
            raise ValueError("thread_ttl must be a positive number of seconds (or None: off)")
        self.thread_ttl = thread_ttl
        self._sweeper = None  # the thread TTL's task (agui_bridge.store.sweep)
        self.threads_swept = 0
        self._store = None if isinstance(store, str) else self.ops.watch_store(store)
        self.authenticate = self.ops.authenticate(authenticate)
        self.body_limit = body_limit
        self.body_timeout = body_timeout
        self.keepalive = keepalive
        self.on_disconnect = on_disconnect
        given = {
            "run_retention": run_retention,
            "max_log_bytes": max_log_bytes,
            "max_total_bytes": max_total_bytes,
            "max_write": max_write,
            "send_timeout": send_timeout,
        }
        self.limits = Limits(**{k: v for k, v in given.items() if v is not None})
        self.event_ids = event_ids
        # Deltas merged in every run (agui_bridge.coalesce); an agent may say otherwise.
        self.coalesce = coalesce_of(coalesce) or None
        self.lease_ttl = lease_ttl
        self.runs = self.ops.watch_runs(open_runs(runs, self.limits, event_ids, lease_ttl))
        self.drain_timeout = drain_timeout
        self._drain_task: asyncio.Task | None = None
        self._agents: dict[str, Agent] = {}
        self._listeners: list[Callable] = []
        settings = RunSettings(
            event_ids, self._listeners, on_disconnect == "cancel", self.coalesce, clients_resend
        )
        # Every run and state update of this worker is admitted here (both protocols).
        self.gate = Gate(
            lambda: self.store,
            self.runs,
            lease_ttl,
            settings,
            admit=self.ops.admit_run,
            launch=self.ops.launch,
        )
        if playground is True:
            playground = "/"
        self.playground = Playground(playground) if playground else None
        # Every route of the app, both protocols' included (``Routes.add``).
        self.routes = Routes()
        self._handler = Handler(self)
        self.ops.register(self.routes)  # /healthz, /readyz, /metrics
        self._front = self.ops.front(self._handler)

    # -- configuration -------------------------------------------------------

    @property
    def closing(self) -> bool:
        """The worker is shutting down: no new runs (the run gate's flag)."""
        return self.gate.closing

    @closing.setter
    def closing(self, value: bool) -> None:
        self.gate.closing = value

    @property
    def agents(self) -> dict[str, Agent]:
        """The registered agents by id."""
        return self._agents

    @property
    def store(self):
        """The thread store, opened on first use (so each granian worker opens its own)."""
        if self._store is None:
            self.open_store()
        if self.thread_ttl is not None and self._sweeper is None:
            self._sweeper = sweep.start(self)  # on first use inside the event loop
        return self._store

    def open_store(self) -> None:
        """Opens the thread store now. The App's start calls it off the event loop:
        opening a SQLite file sets it up and may wait for another worker doing the same."""
        if self._store is None:
            self._store = self.ops.watch_store(open_store(self._store_spec))

    async def startup(self, loop) -> None:
        """The App's start in a worker (ASGI lifespan): signals watched, the webhooks dead
        nodes owe looked at, the store opened."""
        self.watch_signals(loop)
        self._handler.agent_protocol.start(loop)
        await asyncio.to_thread(self.open_store)

    def agent(
        self,
        agent_id: str,
        path: str | None = None,
        dialect: str | None = None,
        authorize_thread: Callable | None = None,
        authorize_stream: Callable | None = None,
        coalesce: Any = None,
        capabilities: dict | None = None,
    ):
        """Registers an async generator function ``fn(ctx: RunContext)`` as an agent.

        It is served at ``path`` (the first agent defaults to ``/ag-ui/run``) and
        always at ``/agui/{urlencoded agent_id}``. ``dialect``: ``"crumbs"``,
        ``"chunks"``, or ``"events"`` (an agent that yields AG-UI events: dicts or
        ``ag_ui.core`` models, repaired to the contract; docs/events-dialect.md).
        Left out, it is the function's ``agui_dialect`` attribute (an adapter's
        agent says what it yields), else ``"crumbs"``.
        ``authorize_thread(identity, thread_id) -> bool`` (sync or async) answers
        403 when false, for runs of this agent and for every route on the threads
        it created. ``authorize_stream(identity, thread_id,
        run_id) -> bool`` (sync or async) guards reading a run's stream (both
        event routes) and cancelling it: 403 when false.
        ``coalesce``: this agent's (``agui_bridge.coalesce``; ``False`` turns the
        app's off for it). ``capabilities``: AG-UI ``AgentCapabilities`` fields
        merged over what ``GET {path}/capabilities`` answers
        (``agui_bridge.capabilities``).
        """
        coalesce = coalesce_of(coalesce)
        if dialect not in (None, "crumbs", "chunks", "events"):
            raise ValueError("dialect must be 'crumbs', 'chunks' or 'events'")
        if agent_id in self._agents:
            raise ValueError(f"agent {agent_id!r} is already registered")
        own_capabilities = check_capabilities(capabilities)

        def register(fn):
            _check_agent(agent_id, fn)
            declared = getattr(fn, "agui_dialect", None)
            if dialect is not None and declared is not None and dialect != declared:
                raise ValueError(f"this agent yields the {declared!r} dialect, not {dialect!r}")
            chosen_dialect = dialect or declared or "crumbs"
            if chosen_dialect not in ("crumbs", "chunks", "events"):
                raise ValueError("dialect must be 'crumbs', 'chunks' or 'events'")
            paths = []
            chosen = path if path is not None else (DEFAULT_PATH if not self._agents else None)
            if chosen is not None:
                paths.append(chosen)
            paths.append("/agui/" + agent_id)
            agent = Agent(
                agent_id,
                fn,
                tuple(paths),
                chosen_dialect,
                authorize_thread,
                authorize_stream,
                coalesce,
                own_capabilities,
            )
            self._handler.add_agent(agent)
            self._agents[agent_id] = agent
            return fn

        return register

    def forget_thread(self, thread_id: str) -> None:
        """A thread deleted from the store: this worker's run records of it go too."""
        self._handler.agent_protocol.registry.forget(thread_id)

    def url_path(self, agent_id: str) -> str:
        """The ``/agui/{urlencoded agent id}`` path of an agent (what clients POST to)."""
        return "/agui/" + quote(agent_id, safe="")

    def on_event(self, callback: Callable) -> Callable:
        """``callback(event, info)`` sees every AG-UI event of every run on this app.

        ``info`` is a ``RunInfo`` (agent_id, thread_id, run_id); a callback that
        takes one argument gets the event alone (seed ``000``'s ``onEvent``). They get the
        run's own events (``t.events_and_frames``: one mapping gives the frames
        and them), each item's once its frames are queued for the readers. An
        async callback is awaited in order; an exception is logged and ignored.
        """
        self._listeners.append(callback if _takes_two(callback) else _event_only(callback))
        return callback

    async def shutdown(self) -> None:
        """What a server's stop runs (ASGI lifespan shutdown, RSGI's
        ``__rsgi_del__``): the drain, begun at SIGTERM or now, then ``aclose``.
        A server stops as soon as no connection is open, which says nothing of
        the runs no one reads (a client that left, a background run): they get
        their ``drain_timeout`` and are stored, never cut off."""
        self._begin_drain()
        await asyncio.shield(self._drain_task)
        await self._settle()
        await self.aclose()
        await self.ops.flush()

    async def _settle(self) -> None:
        """After the drain, before anything is closed, at most ``SHUTDOWN_WAIT``
        seconds for what the ended runs still owe: the queued runs fail (they
        cannot start any more), the worker's tasks and the shared run records'
        writes end, the webhook calls under way are made; with shared run logs
        a webhook not delivered by then is owed again, for another node."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SHUTDOWN_WAIT

        def left() -> float:
            return max(0.0, deadline - loop.time())

        protocol = self._handler.agent_protocol
        if protocol.owed is not None:
            await protocol.owed.close(left())  # what its look took is sent, then no more
        await self.gate.end_queued()
        await self.gate.settle(left())  # a queued run's webhook called once it failed
        await protocol.registry.settle(left())
        if protocol.webhooks is not None:
            undelivered = await protocol.webhooks.settle(left())
            if undelivered and protocol.owed is not None:
                await protocol.owed.give_back(undelivered)

    async def aclose(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        self._handler.agent_protocol.stop()
        drain = self._drain_task
        if drain is not None and not drain.done():
            drain.cancel()
        await self.runs.aclose()
        await self.ops.aclose()  # the limits' Redis connections
        if self._store is not None:
            await self._store.close()
            self._store = None if isinstance(self._store_spec, str) else self._store

    # -- shutdown ------------------------------------------------------------

    def watch_signals(self, loop) -> None:
        """Starts ``drain`` when the process gets SIGTERM or SIGINT.

        The server (granian, uvicorn) handles these signals itself: it stops
        accepting and waits for the open streams, without telling the app. So
        the App chains a handler of its own onto the server's, and only onto
        one (a signal left to its default action still ends the process).
        In a server's worker process it also stops when the server's main
        process dies (``worker.watch_server``).
        """
        watch_server(self)
        if threading.current_thread() is not threading.main_thread():
            return
        watch_drain(self, loop)  # agui-bridge serve --drain-delay: /readyz 503 first
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(sig)
            if not callable(previous) or getattr(previous, "_agui_app", None) is self:
                continue

            def on_signal(signum, frame, previous=previous):
                loop.call_soon_threadsafe(self._begin_drain)
                previous(signum, frame)

            on_signal._agui_app = self
            signal.signal(sig, on_signal)

    def _begin_drain(self) -> None:
        if self._drain_task is None:
            self._drain_task = asyncio.get_running_loop().create_task(self.drain())

    async def drain(self, timeout: float | None = None) -> None:
        """Takes no new run; ends the runs still going after ``timeout`` seconds
        (default ``drain_timeout``) and waits until they are saved and released."""
        await self.gate.drain(self.drain_timeout if timeout is None else timeout)

    # -- servers -------------------------------------------------------------

    async def __call__(self, scope, receive, send) -> None:
        await serve_asgi(self, self._front, scope, receive, send)

    async def __rsgi__(self, scope, protocol) -> None:
        if scope.proto != "http":
            if scope.proto == "ws":
                protocol.close(405)  # no WebSocket route (under granian with ws on)
            return
        await self._front.handle(RsgiConn(scope, protocol))

    def __rsgi_init__(self, loop) -> None:
        # granian calls this before the worker serves: nothing waits on the loop yet.
        self.watch_signals(loop)
        self._handler.agent_protocol.start(loop)
        self.open_store()

    def __rsgi_del__(self, loop) -> None:
        # granian calls this once the worker's streams have ended.
        with contextlib.suppress(RuntimeError):
            loop.run_until_complete(self.shutdown())


def _check_agent(agent_id: str, fn) -> None:
    """An agent is an async generator function (or an object whose ``__call__`` is one)
    callable with one RunContext."""
    method = None if inspect.isroutine(fn) else inspect.getattr_static(type(fn), "__call__", None)
    if not (inspect.isasyncgenfunction(fn) or inspect.isasyncgenfunction(method)):
        raise TypeError(
            f"agent {agent_id!r}: an agent is an async generator function taking a RunContext"
            f" (async def with yield), not {fn!r}"
        )
    try:
        inspect.signature(fn).bind(None)
    except TypeError:
        raise TypeError(
            f"agent {agent_id!r}: an agent takes one argument (the RunContext)"
        ) from None
    except ValueError:
        pass  # no signature to check (a builtin or extension callable)


def _takes_two(callback) -> bool:
    try:
        parameters = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters)


def _event_only(callback):
    def listener(event, info):
        return callback(event)

    return listener


__all__ = ["App", "Forbidden", "Unauthorized"]
