"""The RSGI front end (granian): ``App.__rsgi__`` drives the handler with this."""

from __future__ import annotations

from granian.rsgi import ProtocolClosed

from ..errors import Closed, TooLarge
from .params import integer


class RsgiConn:
    sends_wait = False  # send_bytes never waits: every queued frame goes in one write
    __slots__ = (
        "client",
        "drained",
        "headers",
        "method",
        "path",
        "protocol",
        "query_string",
        "scope",
        "streaming",
        "trx",
    )

    def __init__(self, scope, protocol):
        self.scope = scope
        self.protocol = protocol
        self.method = scope.method
        self.path = scope.path
        self.headers = scope.headers
        self.query_string = scope.query_string
        self.client = scope.client
        self.trx = None
        self.streaming = False
        self.drained = False

    async def read_body(self, limit: int) -> bytes:
        length = self.headers.get("content-length")
        size = integer(length) if length is not None else None
        if size is not None and size <= limit:
            return await self.protocol()
        chunks = []
        total = 0
        # One iterator, advanced by hand: granian's body can be read once, and
        # iterating its iterator again (``async for``) starts a second read.
        body = self.protocol.__aiter__()
        drain = 4 * limit + (64 << 10)
        while True:
            try:
                chunk = await body.__anext__()
            except StopAsyncIteration:
                break
            total += len(chunk)
            if total > limit:
                # Go on reading (and dropping) a while, so the client gets to
                # read the 413 instead of a reset connection.
                self.drained = True
                while total <= drain:
                    try:
                        total += len(await body.__anext__())
                    except StopAsyncIteration:
                        break
                raise TooLarge
            chunks.append(chunk)
        return b"".join(chunks)

    async def discard_body(self, limit: int) -> None:
        if self.drained:
            return
        self.drained = True
        total = 0
        try:
            async for chunk in self.protocol:
                total += len(chunk)
                if total > limit:
                    return
        except Exception:
            return

    async def respond(self, status: int, body: bytes, headers) -> None:
        self.protocol.response_bytes(status, headers, body)

    async def start_stream(self, status: int, headers) -> None:
        self.streaming = True
        self.trx = self.protocol.response_stream(status, headers)

    async def send(self, data: bytes) -> None:
        try:
            await self.trx.send_bytes(data)
        except ProtocolClosed:
            raise Closed from None

    async def wait_disconnect(self) -> None:
        await self.protocol.client_disconnect()

    def abort(self) -> None:
        pass

    async def end_stream(self) -> None:
        self.trx = None  # the stream ends when granian's transport is freed
