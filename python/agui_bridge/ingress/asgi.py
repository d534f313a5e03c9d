"""The ASGI front end: mount the App in Starlette/FastAPI or serve it with any ASGI server."""

from __future__ import annotations

import asyncio
import contextlib

from ..errors import BrokenBody, Closed, TooLarge


class Aborted(Exception):
    """Raised out of the ASGI app so the server drops a connection that stalled."""


def _route_path(scope) -> str:
    path = scope["path"]
    root = scope.get("root_path", "")
    if root and path.startswith(root) and path != root and path[len(root)] == "/":
        return path[len(root) :]
    return path


class AsgiConn:
    # A send waits for the client (granian's ASGI channel holds 4 writes,
    # uncounted), so a stream's writes are cut to the App's max_write.
    sends_wait = True
    __slots__ = (
        "aborted",
        "body_done",
        "client",
        "gone",
        "headers",
        "method",
        "path",
        "query_string",
        "receive",
        "send_",
        "streaming",
    )

    def __init__(self, scope, receive, send):
        self.receive = receive
        self.send_ = send
        self.method = scope["method"]
        self.path = _route_path(scope)
        headers: dict[str, str] = {}
        for k, v in scope.get("headers", ()):
            name, value = k.decode("latin-1").lower(), v.decode("latin-1")
            if name == "content-length" and headers.get(name, value) != value:
                value = f"{headers[name]}, {value}"  # two lengths: refused as not a number
            headers[name] = value
        self.headers = headers
        self.query_string = scope.get("query_string", b"").decode("latin-1")
        client = scope.get("client")
        self.client = f"{client[0]}:{client[1]}" if client else None
        self.gone = False
        self.aborted = False
        self.streaming = False
        self.body_done = False

    async def read_body(self, limit: int) -> bytes:
        chunks = []
        total = 0
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                # granian reports a body it cannot read (bad chunked framing) as
                # a disconnect: answered 400 (a client that really left reads nothing).
                self.gone = True
                raise BrokenBody
            chunk = message.get("body", b"")
            total += len(chunk)
            # Noted before any TooLarge: discard_body must not wait for more.
            self.body_done = not message.get("more_body", False)
            if total > limit:
                raise TooLarge
            chunks.append(chunk)
            if self.body_done:
                return b"".join(chunks)

    async def discard_body(self, limit: int) -> None:
        if self.body_done:
            return
        total = 0
        while total <= limit:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.gone = True
                return
            total += len(message.get("body", b""))
            if not message.get("more_body", False):
                self.body_done = True
                return

    async def respond(self, status: int, body: bytes, headers) -> None:
        await self.send_(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (k.encode("latin-1"), v.encode("latin-1"))
                    for k, v in [*headers, ("content-length", str(len(body)))]
                ],
            }
        )
        await self.send_({"type": "http.response.body", "body": body, "more_body": False})

    async def start_stream(self, status: int, headers) -> None:
        self.streaming = True
        await self.send_(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers],
            }
        )

    async def send(self, data: bytes) -> None:
        if self.gone:
            raise Closed
        try:
            await self.send_({"type": "http.response.body", "body": data, "more_body": True})
        except OSError:
            self.gone = True
            raise Closed from None
        if self.gone:
            raise Closed

    async def wait_disconnect(self) -> None:
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.gone = True
                return

    def abort(self) -> None:
        self.aborted = True

    async def end_stream(self) -> None:
        if self.aborted:
            raise Aborted("the client stopped reading; connection dropped")
        if self.gone:
            return
        with contextlib.suppress(OSError):
            await self.send_({"type": "http.response.body", "body": b"", "more_body": False})


async def serve_asgi(app, handler, scope, receive, send) -> None:
    kind = scope["type"]
    if kind == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await app.startup(asyncio.get_running_loop())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await app.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return
    if kind == "websocket":
        # No WebSocket route: the upgrade is refused (a 403 from the server).
        if (await receive())["type"] == "websocket.connect":
            await send({"type": "websocket.close", "code": 1008})
        return
    if kind != "http":
        return
    conn = AsgiConn(scope, receive, send)
    with contextlib.suppress(Closed):
        await handler.handle(conn)
