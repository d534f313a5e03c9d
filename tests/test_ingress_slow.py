"""Slow senders (issue 9, item 3): the time to send headers and a body is bounded.

``agui-bridge serve`` (what users run) is started as a subprocess on
127.0.0.1; thousands of connections each send their headers and 5 of 80 body
bytes, then nothing. A fresh client must be served while they are all open,
and each of them must get a 408 JSON error once the body deadline passes.
Bounded: SLOW connections, every wait with a timeout.
"""

from __future__ import annotations

import asyncio
import resource
import time

import httpx
import orjson
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui

from tests.ingress_apps import parse_sse, run_body
from tests.servers import serve, serve_cli

SLOW = 2000
BODY_TIMEOUT = 10.0
HEADER_TIMEOUT = 3.0
SLOW_REQUEST = (
    b"POST /ag-ui/run HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    b"content-length: 80\r\n\r\n" + b'{"thr'
)


def _enough_files(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"needs {needed} open files; the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


async def _open_slow(port: int, head: bytes):
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
    writer.write(head)
    await asyncio.wait_for(writer.drain(), 10)
    return reader, writer


async def _response(reader, timeout: float) -> tuple[bytes, bytes]:
    """(status line and headers, body) of one response with a Content-Length."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return head, await asyncio.wait_for(reader.readexactly(length), timeout)


def _is_408(head: bytes, body: bytes) -> bool:
    return head.startswith(b"HTTP/1.1 408") and (
        orjson.loads(body)["error"]["code"] == "request_timeout"
    )


async def test_a_fresh_client_is_served_while_2000_slow_bodies_are_open():
    _enough_files(SLOW + 512)
    env = {"AGUI_TEST_BODY_TIMEOUT": str(BODY_TIMEOUT)}
    options = ("--header-timeout", str(HEADER_TIMEOUT))
    with serve_cli(env, *options) as server:
        port = server.port
        started = time.monotonic()
        slow = []
        for _ in range(SLOW // 100):
            slow += await asyncio.gather(*[_open_slow(port, SLOW_REQUEST) for _ in range(100)])
        # One that sends half its headers, then nothing.
        half = await _open_slow(port, SLOW_REQUEST[:40])
        async with httpx.AsyncClient(timeout=BODY_TIMEOUT) as http:
            response = await http.post(
                f"http://127.0.0.1:{port}/ag-ui/run", json=run_body("fresh", "hi")
            )
        served = time.monotonic()
        assert response.status_code == 200, response.text
        events, _ = parse_sse(response.text)
        assert_valid_agui(events)
        # Every slow connection was still waiting on its body when the fresh one was served.
        assert served - started < BODY_TIMEOUT, f"opening {SLOW} connections took too long"
        assert not any(reader.at_eof() for reader, _ in slow)

        # Headers: granian closes the connection past its header timeout.
        assert await asyncio.wait_for(half[0].read(), HEADER_TIMEOUT + 10) == b""
        # Bodies: each slow connection gets a 408 JSON error past the body deadline.
        answers = await asyncio.gather(
            *[_response(reader, BODY_TIMEOUT + 30) for reader, _ in slow], return_exceptions=True
        )
        failed = [a for a in answers if isinstance(a, BaseException) or not _is_408(*a)]
        assert not failed, f"{len(failed)} of {SLOW} slow connections: {failed[:3]}"
        for _, writer in [*slow, half]:
            writer.close()


@pytest.mark.parametrize("interface", ["rsgi", "asgi"])
async def test_a_body_that_stops_arriving_is_a_408(interface):
    with serve(
        "tests.ingress_apps:app", env={"AGUI_TEST_BODY_TIMEOUT": "1"}, interface=interface
    ) as url:
        port = int(url.rsplit(":", 1)[1])
        began = time.monotonic()
        chunked = (
            b"POST /ag-ui/run HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"transfer-encoding: chunked\r\n\r\n5\r\n" + b'{"thr' + b"\r\n"
        )
        slow = [await _open_slow(port, SLOW_REQUEST), await _open_slow(port, chunked)]
        for reader, writer in slow:
            head, body = await _response(reader, 15)
            assert _is_408(head, body), (head, body)
            writer.close()
        assert time.monotonic() - began < 10
