"""Running the gateway in production: health, metrics, traces, logs, CORS, limits.

One ``Ops`` per App holds what is switched on (``App(health=, cors=,
metrics=, limits=)``, traces by the ``OTEL_*`` environment) and the small
hooks the rest of the package calls: ``serve`` (the front door every request
passes), ``admit_run``/``run_started`` (the run gate), ``admit_reader`` (a
reader of a run's stream) and the store and run-backend wrappers. The logic
of each concern is in its own module here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from functools import partial

import orjson

from .cors import Cors, cors_of, cross_site_allowed
from .front import CURRENT, Observed, Request
from .health import Health, answer, health_of
from .labels import route_label
from .limits import IdentityLimits, Limiter, limits_of
from .logs import RunEnd, access_log, log_request, log_run_end
from .metrics import Metrics, metrics_of
from .outcome import outcome_of
from .tracing import tracer_of

log = logging.getLogger("agui_bridge.ops")

__all__ = ["Cors", "Health", "IdentityLimits", "Ops", "cross_site_allowed"]


class Ops:
    def __init__(self, app, health=True, cors=None, metrics=False, limits=None, tracing=None):
        self.app = app
        self.health = health_of(health)
        self.cors = cors_of(cors)
        self.metrics: Metrics | None = metrics_of(metrics)
        config = limits_of(limits)
        self.limits = Limiter(config, app) if config is not None else None
        self.tracer = tracer_of(tracing)
        self.endpoints: dict[str, str] = dict(self.health.paths()) if self.health else {}
        if self.metrics is not None:
            self.endpoints[self.metrics.path] = "metrics"
        self._watch = bool(self.metrics or self.limits or self.tracer)

    async def flush(self) -> None:
        """What a stopping worker must still send (the spans held for export)."""
        if self.tracer is not None:
            await asyncio.to_thread(self.tracer.flush)

    # -- the front door --------------------------------------------------------

    def front(self, handler):
        """What the front ends drive (``.handle(conn)``): this layer, then ``handler``."""
        return _Front(self, handler)

    def register(self, routes) -> None:
        """Health and metrics rows of the app's route table (no ``authenticate``)."""
        for path, kind in self.endpoints.items():
            routes.add(("GET", "HEAD"), path, partial(self._endpoint, kind=kind), literal=True)

    async def serve(self, handler, conn) -> None:
        cors = self.cors
        extra = None
        if cors is not None:
            origin = conn.headers.get("origin")
            if origin:
                wanted = conn.headers.get("access-control-request-method")
                if conn.method == "OPTIONS" and wanted:
                    requested = conn.headers.get("access-control-request-headers")
                    # Answered here, and counted, logged and traced as any request.
                    handler = _Answered(cors.preflight(origin, wanted, requested))
                else:
                    # Another origin gets no CORS header, only Vary (what a cache keys on).
                    extra = cors.response_headers(origin) if cors.allows(origin) else _VARY
            else:
                # A response without CORS headers that a cache could hand to a
                # page of an allowed origin: it varies by Origin too (Fetch,
                # "CORS protocol and HTTP caches").
                extra = _VARY
        if not (extra or self._watch or access_log.isEnabledFor(logging.INFO)):
            await handler.handle(conn)
            return
        req = Request(conn.method, conn.path, route_label(self.app, conn.path), conn.client)
        token = CURRENT.set(req)
        tracer = self.tracer
        try:
            if tracer is not None:
                with tracer.request(req, conn.headers):
                    await handler.handle(Observed(conn, req, extra, self.metrics))
            else:
                await handler.handle(Observed(conn, req, extra, self.metrics))
        finally:
            CURRENT.reset(token)
            for slot in req.slots:
                await slot.release()
            duration = time.monotonic() - req.started
            if self.metrics is not None:
                self.metrics.request(req, duration)
            if req.path not in self.endpoints:  # a probe every few seconds is no news
                log_request(req, duration)

    async def _endpoint(self, conn, kind: str) -> None:
        if kind == "metrics":
            status, body, headers = self.metrics.scrape(conn.headers.get("accept"))
        else:
            status, body, headers = await answer(self.app, kind, self.health)
        await conn.respond(status, b"" if conn.method == "HEAD" else body, headers)

    # -- identities and limits ---------------------------------------------------

    def authenticate(self, authenticate):
        """Wraps the App's ``authenticate`` so the request's identity is known here."""
        if authenticate is None:
            return None

        async def identified(request):
            identity = authenticate(request)
            if hasattr(identity, "__await__"):
                identity = await identity
            req = CURRENT.get()
            if req is not None:
                req.identity = identity
                req.identified = True
            return identity

        identified.__wrapped__ = authenticate
        return identified

    def _who(self, identity=None) -> str:
        req = CURRENT.get()
        if identity is None and req is not None:
            identity = req.identity
        return self.limits.key(identity, req)

    async def admit_run(self, agent_id: str, identity) -> list:
        """The limit slots a new run takes (429 past a limit: before anything starts)."""
        limits = self.limits
        if limits is None:
            return []
        try:
            return await limits.admit_run(self._who(identity), agent_id)
        except Exception as error:
            if self.metrics is not None and getattr(error, "status", 0) == 429:
                self.metrics.limited(error.code)
            raise

    async def admit_reader(
        self, thread_id: str, run_id: str | None, agent_id: str | None = None
    ) -> None:
        """A reader of another response's run, or (``run_id`` None) a thread's event
        stream, whose runs are ``run_reader``'s (429 past a limit); held until the
        response ends."""
        req = CURRENT.get()
        if req is None:
            return
        # Every read of a run passes here: its access line names what it read
        # (as ``launch`` does for a start), limits or not.
        req.thread_id, req.run_id, req.agent_id = thread_id, run_id, agent_id
        if self.limits is None:
            return
        req.slots.extend(await self._reader(self._who(), thread_id, run_id))

    async def run_reader(self, thread_id: str, run_id: str) -> list:
        """One run a thread's event stream follows (429 past its ``run_readers``):
        the slots, for the stream to release as it moves on."""
        if self.limits is None or CURRENT.get() is None:
            return []
        return await self._reader(None, thread_id, run_id)

    async def _reader(self, who, thread_id: str, run_id: str | None) -> list:
        try:
            return await self.limits.admit_reader(who, thread_id, run_id)
        except Exception as error:
            if self.metrics is not None and getattr(error, "status", 0) == 429:
                self.metrics.limited(error.code)
            raise

    # -- runs ------------------------------------------------------------------

    def launch(self, run):
        """Creates the run's task (the run gate's last step; the gate has appended
        RUN_STARTED already): counted now, measured, traced and logged when it
        ends (its limit slots are the gate's: released with its thread)."""
        loop = asyncio.get_running_loop()
        run.ops_started = time.monotonic()
        req = CURRENT.get()
        if req is not None:
            req.thread_id, req.run_id = run.ctx.thread_id, run.ctx.run_id
            req.agent_id = run.agent.agent_id
        if self.metrics is not None:
            self.metrics.run_started(run.agent.agent_id)
        tracer = self.tracer
        span = None
        if tracer is not None:
            span = tracer.run_span(run)
            run.agent = tracer.traced_agent(run)
            with tracer.current(span):  # the task starts in the run's span
                task = loop.create_task(run.run())
        else:
            task = loop.create_task(run.run())
        task.add_done_callback(lambda _: self._run_done(run, span))
        return task

    def _run_done(self, run, span) -> None:
        end = RunEnd(run, *outcome_of(run), time.monotonic())
        if self.metrics is not None:
            self.metrics.run_ended(end)
        if span is not None:
            self.tracer.run_ended(span, end)
        log_run_end(end)

    def threads_expired(self, count: int) -> None:
        """The thread TTL's sweep removed ``count`` idle threads (the store calls this)."""
        if self.metrics is not None and count:
            self.metrics.threads_expired(count)

    # -- the parts it watches ------------------------------------------------------

    def watch_store(self, store):
        if self.metrics is None and self.tracer is None:
            return store
        from .watch import watch_store

        return watch_store(store, self.metrics, self.tracer)

    def watch_runs(self, runs):
        if self.metrics is None and self.tracer is None:
            return runs
        from .watch import watch_runs

        return watch_runs(runs, self.metrics, self.tracer)

    async def aclose(self) -> None:
        if self.limits is not None:
            await self.limits.aclose()

    def error_body(self, code: str, message: str) -> bytes:
        return orjson.dumps({"error": {"code": code, "message": message}})


_VARY = [("vary", "origin")]


class _Answered:
    """A handler whose answer is known (a CORS preflight's)."""

    __slots__ = ("answer",)

    def __init__(self, answer: tuple):
        self.answer = answer

    async def handle(self, conn) -> None:
        await conn.respond(*self.answer)


class _Front:
    __slots__ = ("handler", "ops")

    def __init__(self, ops: Ops, handler):
        self.ops = ops
        self.handler = handler

    def handle(self, conn):
        return self.ops.serve(self.handler, conn)
