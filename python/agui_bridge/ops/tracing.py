"""OpenTelemetry traces (the ``otel`` extra), exported over OTLP/HTTP.

On when the extra is installed and the standard environment names an OTLP
endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``; ``OTEL_SDK_DISABLED=true`` or
``OTEL_TRACES_EXPORTER=none`` turn it off), or with ``App(tracing=True)``.
Every other ``OTEL_*`` variable (service name, resource attributes, headers,
batch delays, sampler) is the SDK's. A tracer provider already set by the
process (your own setup) is used as it is.

Spans: one SERVER span per request (``METHOD route``), continuing the
caller's W3C ``traceparent``; under it ``agui.run`` per run (agent, thread
and run ids as attributes, the outcome at its end), and under that
``agui.agent`` (the agent's generator), ``agui.store.<operation>`` per store
call and ``agui.redis.append`` per batch a run appends to Redis.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os

from .labels import method_label

_provider_set = False


def _wanted(value) -> bool:
    if value is not None:
        return bool(value)
    env = os.environ
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "otlp").lower() == "none":
        return False
    return bool(
        env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


# The longest a stopping worker waits for its spans' export (worker.SAVE_MARGIN).
FLUSH_MS = 2000


def tracer_of(value):
    """``App(tracing=None)``: on by the environment (above); True/False force it."""
    if not _wanted(value):
        return None
    try:
        from opentelemetry import trace  # noqa: F401
    except ImportError:
        if value:
            raise ImportError(
                "App(tracing=True) needs OpenTelemetry: pip install 'agui-bridge[otel]'"
            ) from None
        return None
    return Tracing()


def _provider():
    """The process's tracer provider: the one set already, else an OTLP/HTTP one."""
    global _provider_set
    from opentelemetry import trace

    current = trace.get_tracer_provider()
    if _provider_set or not isinstance(current, trace.ProxyTracerProvider):
        return current
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=resource())
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _provider_set = True
    return provider


def resource():
    """The SDK's resource from the environment (``OTEL_SERVICE_NAME``,
    ``OTEL_RESOURCE_ATTRIBUTES``), named ``agui-bridge`` only where they name no
    service: passing the name in would override theirs."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    found = Resource.create()
    if str(found.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        return found.merge(Resource({SERVICE_NAME: "agui-bridge"}))
    return found


class Tracing:
    def __init__(self):
        from opentelemetry import context, propagate, trace
        from opentelemetry.trace import SpanKind, Status, StatusCode

        self.trace = trace
        self.context = context
        self.propagate = propagate
        self.SpanKind = SpanKind
        self.Status, self.StatusCode = Status, StatusCode
        self.provider = _provider()
        self.tracer = self.provider.get_tracer("agui_bridge")

    def flush(self, timeout_ms: int = FLUSH_MS) -> None:
        """Exports the spans the batch processor still holds (blocking: call it
        in a thread). A worker's end needs it: the SDK's exit hook does not run
        in a server's worker process, and the last seconds' spans (a drain's
        ``server_shutdown`` runs among them) would be lost."""
        force_flush = getattr(self.provider, "force_flush", None)
        if force_flush is not None:
            force_flush(timeout_ms)

    @contextlib.contextmanager
    def request(self, req, headers):
        """The SERVER span of one request, current while the handler serves it."""
        carrier = {}
        for name in ("traceparent", "tracestate", "baggage"):
            value = headers.get(name)
            if value is not None:
                carrier[name] = value
        parent = self.propagate.extract(carrier) if carrier else None
        method = method_label(req.method)
        attributes = {"http.request.method": method, "http.route": req.route,
                      "url.path": req.path}  # fmt: skip
        if method != req.method:
            attributes["http.request.method_original"] = req.method
        # OpenTelemetry's HTTP conventions: "HTTP {route}" for a method it does not know.
        name = f"{'HTTP' if method == '_OTHER' else method} {req.route}"
        with self.tracer.start_as_current_span(
            name, context=parent, kind=self.SpanKind.SERVER,
            attributes=attributes, record_exception=False, set_status_on_exception=False,
        ) as span:  # fmt: skip
            req.span = span
            try:
                yield span
            finally:
                span.set_attribute("http.response.status_code", req.status)
                if req.status >= 500:
                    span.set_status(self.Status(self.StatusCode.ERROR))

    def run_span(self, run):
        """The run's span (a child of the current request's), not yet current."""
        ctx = run.ctx
        return self.tracer.start_span(
            "agui.run",
            attributes={"agui.agent_id": run.agent.agent_id, "agui.thread_id": ctx.thread_id,
                        "agui.run_id": ctx.run_id},
        )  # fmt: skip

    @contextlib.contextmanager
    def current(self, span):
        token = self.context.attach(self.trace.set_span_in_context(span))
        try:
            yield
        finally:
            self.context.detach(token)

    def traced_agent(self, run):
        """The run's agent, its generator inside an ``agui.agent`` span."""
        fn = run.agent.fn
        tracer = self.tracer
        trace = self.trace
        attributes = {"agui.agent_id": run.agent.agent_id}

        async def agent(ctx):
            span = tracer.start_span("agui.agent", attributes=attributes)
            try:
                with trace.use_span(span, end_on_exit=False):
                    agen = fn(ctx)
                try:
                    while True:
                        with trace.use_span(span, end_on_exit=False):
                            try:
                                item = await agen.__anext__()
                            except StopAsyncIteration:
                                return
                        yield item
                finally:
                    aclose = getattr(agen, "aclose", None)
                    if aclose is not None:
                        await aclose()
            finally:
                span.end()

        return dataclasses.replace(run.agent, fn=agent)

    def run_ended(self, span, end) -> None:
        span.set_attribute("agui.outcome", end.outcome)
        if end.code:
            span.set_attribute("agui.error_code", end.code)
        if end.outcome == "error":
            span.set_status(self.Status(self.StatusCode.ERROR, end.code))
        span.end()

    @contextlib.contextmanager
    def span(self, name: str, attributes=None):
        with self.tracer.start_as_current_span(name, attributes=attributes) as span:
            yield span
