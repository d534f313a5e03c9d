"""Malformed chunked framing (issue 24 item 8) on real granian servers.

hyper (in granian) fails the request body when a chunk size is not hex. Under
RSGI the app reads what came before the error and answers; under ASGI granian turns the body
error into ``http.disconnect``, which the app took for a client that left:
it answered nothing, and granian sent its own plain-text 500. It answers
400 JSON now (422 on Agent Protocol routes), once the caller is
authenticated, as every refused body is.
"""

from __future__ import annotations

import socket

import orjson
import pytest

from tests.servers import serve


def read_response(sock, limit: float = 10.0) -> tuple[bytes, bytes]:
    """One HTTP/1.1 response (head, body), read until its Content-Length or EOF."""
    sock.settimeout(limit)
    data = b""
    while b"\r\n\r\n" not in data:
        more = sock.recv(65536)
        if not more:
            break
        data += more
    head, _, rest = data.partition(b"\r\n\r\n")
    length = None
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while length is not None and len(rest) < length:
        more = sock.recv(65536)
        if not more:
            break
        rest += more
    return head, rest


def post_raw(port: int, path: str, chunked: bytes, headers: bytes = b"") -> tuple[bytes, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            b"POST " + path.encode() + b" HTTP/1.1\r\nhost: x\r\n"
            b"content-type: application/json\r\ntransfer-encoding: chunked\r\n"
            + headers
            + b"\r\n"
            + chunked
        )
        return read_response(sock)


BAD_FRAMINGS = [
    b"zz\r\n{}\r\n0\r\n\r\n",  # a size that is not hex
    b"2\r\n{}\r\nzz\r\n0\r\n\r\n",  # a good chunk, then a bad size
    b"2\r\n{}XX0\r\n\r\n",  # no CRLF after the chunk's data
]


@pytest.mark.parametrize("interface", ["asgi", "rsgi"])
def test_malformed_chunked_framing_is_a_4xx_json(interface):
    """Never granian's plain-text 500: a 4xx JSON error on a run route and on an
    Agent Protocol route (422 there). Under ASGI the app is told the body broke
    (invalid_body); RSGI hands the app the bytes that came before the error as
    the whole body (granian 2.8.9 gives no sign of it), judged as any body."""
    with serve("tests.ingress_apps:app", interface=interface) as url:
        port = int(url.rsplit(":", 1)[1])
        for path in ("/ag-ui/run", "/threads"):
            for framing in BAD_FRAMINGS:
                head, body = post_raw(port, path, framing)
                status = int(head.split(b" ", 2)[1])
                assert 400 <= status < 500, (path, framing, head, body)
                assert b"content-type: application/json" in head.lower(), head
                error = orjson.loads(body)["error"]
                assert error["message"]
                if interface == "asgi":
                    assert status == (400 if path == "/ag-ui/run" else 422), head
                    assert error["code"] == "invalid_body", error
