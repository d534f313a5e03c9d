"""The front door: what every request passes before the handler routes it.

Health and metrics routes are answered here (no authentication), a CORS
preflight too; every other request goes to the handler, through an
``Observed`` connection when something watches requests (metrics, traces,
request logs, CORS headers to add, per-identity limits to release), else
as it came, so a gateway with none of them pays nothing per write.
"""

from __future__ import annotations

import contextvars
import time

CURRENT: contextvars.ContextVar[Request | None] = contextvars.ContextVar(
    "agui_bridge_request", default=None
)


class Request:
    """What the ops layer notes of one request while the handler serves it."""

    __slots__ = (
        "agent_id",
        "client",
        "identified",
        "identity",
        "method",
        "path",
        "resume",
        "route",
        "run_id",
        "sent",
        "slots",
        "span",
        "started",
        "status",
        "stopped",
        "streamed",
        "thread_id",
    )

    def __init__(self, method: str, path: str, route: str, client: str | None = None):
        self.client = client
        self.method = method
        self.path = path
        self.route = route
        self.started = time.monotonic()
        self.status = 0
        self.sent = 0  # body bytes handed to the server
        self.streamed = False
        self.resume: str | None = None
        self.identity = None
        self.identified = False
        self.thread_id: str | None = None
        self.run_id: str | None = None
        self.agent_id: str | None = None
        self.slots: list = []  # per-identity limit slots held until the response ends
        self.span = None
        self.stopped = False  # a cancel this request made (not one of a run already ended)


def current() -> Request | None:
    return CURRENT.get()


class Observed:
    """A front end's connection, seen by the ops layer (status, bytes, CORS headers)."""

    __slots__ = ("client", "extra", "headers", "inner", "lag", "method", "metrics", "path",
                 "query_string", "req", "sends_wait")  # fmt: skip

    def __init__(self, inner, req: Request, extra, metrics=None):
        self.inner = inner
        self.req = req
        self.extra = extra
        self.metrics = metrics
        # Called by the stream writer (runs.cursor.Stream) per write of a run log.
        self.lag = metrics.reader_lag if metrics is not None else None
        self.method = inner.method
        self.path = inner.path
        self.headers = inner.headers
        self.query_string = inner.query_string
        self.client = inner.client
        self.sends_wait = inner.sends_wait

    @property
    def streaming(self) -> bool:
        return self.inner.streaming

    def read_body(self, limit: int):
        return self.inner.read_body(limit)

    def discard_body(self, limit: int):
        return self.inner.discard_body(limit)

    def wait_disconnect(self):
        return self.inner.wait_disconnect()

    def abort(self) -> None:
        self.inner.abort()

    def end_stream(self):
        return self.inner.end_stream()

    async def respond(self, status: int, body: bytes, headers) -> None:
        req = self.req
        req.status = status
        req.sent += len(body)
        if self.extra:
            headers = [*headers, *self.extra]
        await self.inner.respond(status, body, headers)

    async def start_stream(self, status: int, headers) -> None:
        req = self.req
        req.status = status
        req.streamed = True
        for name, value in headers:
            if name == "agui-resume":
                req.resume = value
        if self.metrics is not None:
            self.metrics.stream_started(req)
        if self.extra:
            headers = [*headers, *self.extra]
        await self.inner.start_stream(status, headers)

    async def send(self, data: bytes) -> None:
        self.req.sent += len(data)
        await self.inner.send(data)
