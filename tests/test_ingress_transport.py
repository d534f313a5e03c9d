"""Auth, client disconnects and the slow-reader bound, on real granian servers
(RSGI and ASGI) and, for auth, on the ASGI app under a Starlette mount."""

from __future__ import annotations

import asyncio
import socket
import time

import httpx
import orjson
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui
from starlette.applications import Starlette
from starlette.routing import Mount

from tests.ingress_apps import _authenticate, make_app, parse_sse, run_body
from tests.servers import serve, server_log
from tests.test_ingress_http import MARKS, error_of, stream, text_of, thread

MIB = 1 << 20


# -- auth ---------------------------------------------------------------------


@pytest.fixture(params=["rsgi", "asgi"])
async def auth_client(request):
    if request.param == "rsgi":
        with serve("tests.ingress_apps:auth_app") as base_url:
            async with httpx.AsyncClient(base_url=base_url, timeout=20) as http:
                yield http
        return
    inner = make_app(store="memory://", authenticate=_authenticate)
    transport = httpx.ASGITransport(app=Starlette(routes=[Mount("/mnt", app=inner)]))
    async with httpx.AsyncClient(transport=transport, base_url="http://test/mnt", timeout=20) as h:
        yield h


def bearer(who: str) -> dict:
    return {"authorization": f"Bearer {who}"}


async def test_authenticate_actions_and_authorize_thread(auth_client):
    http = auth_client
    body = run_body(thread("auth"), "hi")
    error_of(await http.post("/ag-ui/run", json=body), 401, "unauthorized")
    error_of(await http.post("/ag-ui/run", json=body, headers=bearer("nobody")), 401)
    error_of(await http.post("/ag-ui/run", json=body, headers=bearer("evil")), 403, "forbidden")
    # "reader" may read threads but not run
    error_of(await http.post("/ag-ui/run", json=body, headers=bearer("reader")), 403, "forbidden")
    events = await stream(http, "/ag-ui/run", body, headers=bearer("alice"))
    assert text_of(events) == "turn 1: you said hi"
    state = await http.get(f"/threads/{body['threadId']}/state", headers=bearer("reader"))
    assert state.status_code == 200 and len(state.json()["messages"]) == 2
    error_of(await http.get(f"/threads/{body['threadId']}/state"), 401)
    # authorize_thread: threads "<user>-..." belong to that user
    mine = run_body(thread("alice"), "x")
    events = await stream(http, "/guarded/run", mine, headers=bearer("alice"))
    assert text_of(events) == "hello alice"
    error_of(await http.post("/guarded/run", json=mine, headers=bearer("bob")), 403, "forbidden")
    error_of(await http.get(f"/threads/{mine['threadId']}/state", headers=bearer("bob")), 403)
    ok = await http.get(f"/threads/{mine['threadId']}/state", headers=bearer("alice"))
    assert ok.status_code == 200
    # bob's identity has no "actions": every action is granted
    events = await stream(http, "/guarded/run", run_body(thread("bob"), "x"), headers=bearer("bob"))
    assert text_of(events) == "hello bob"


# -- disconnects ------------------------------------------------------------------


def env_for(policy: str) -> dict:
    return {
        "AGUI_TEST_MARKS": str(MARKS),
        "AGUI_TEST_ON_DISCONNECT": policy,
    }


@pytest.fixture(scope="module", params=["rsgi", "asgi"])
def continue_url(request):
    with serve(
        "tests.ingress_apps:app", env=env_for("continue"), interface=request.param
    ) as base_url:
        yield base_url


@pytest.fixture(scope="module", params=["rsgi", "asgi"])
def cancel_url(request):
    with serve(
        "tests.ingress_apps:app", env=env_for("cancel"), interface=request.param
    ) as base_url:
        yield base_url


async def read_first_frame_and_leave(base_url: str, body: dict) -> dict:
    async with (
        httpx.AsyncClient(base_url=base_url, timeout=20) as http,
        http.stream("POST", "/ag-ui/run", json=body) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                return orjson.loads(line[6:])
    raise AssertionError("no frame")


async def eventually(predicate, timeout=10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return False


async def test_disconnect_continue_lets_the_run_land(continue_url):
    tid, run_id = thread("leave"), f"leave-{time.monotonic_ns()}"
    first = await read_first_frame_and_leave(continue_url, run_body(tid, "slow 10", run_id=run_id))
    assert first["type"] == "RUN_STARTED"
    assert await eventually(lambda: (MARKS / f"ended-{run_id}").exists())

    def landed():
        response = httpx.get(f"{continue_url}/threads/{tid}/state")
        return response.status_code == 200 and response.json()["messages"]

    assert await eventually(landed)
    messages = httpx.get(f"{continue_url}/threads/{tid}/state").json()["messages"]
    assert messages[1]["content"] == "".join(f"w{i} " for i in range(10))


async def test_disconnect_cancel_stops_the_agent_and_keeps_only_the_turn(cancel_url):
    tid, run_id = thread("anon-cancel"), f"cancel-{time.monotonic_ns()}"
    body = run_body(tid, "slow 30", run_id=run_id)
    await read_first_frame_and_leave(cancel_url, body)
    assert await eventually(lambda: (MARKS / f"started-{run_id}").exists())
    await asyncio.sleep(2.0)  # the run would have taken 1.5 s
    assert not (MARKS / f"ended-{run_id}").exists()
    # The user's turn was stored when the run started; nothing the agent said is.
    state = httpx.get(f"{cancel_url}/threads/{tid}/state").json()
    assert state["messages"] == body["messages"]
    async with httpx.AsyncClient(base_url=cancel_url, timeout=20) as http:
        events = await stream(http, "/ag-ui/run", run_body(tid, "hi"))  # not 409: released
    assert text_of(events) == "turn 2: you said hi"


# -- the slow-reader bound ---------------------------------------------------------------


def read_chunked(sock: socket.socket, head: bytes, timeout: float) -> bytes:
    """The de-chunked body after the headers ``head`` (which may hold its start)."""
    sock.settimeout(timeout)
    data = bytearray(head)
    deadline = time.monotonic() + timeout
    while not data.endswith(b"\r\n0\r\n\r\n") and not data.endswith(b"\n0\r\n\r\n"):
        assert time.monotonic() < deadline, "the body did not end in time"
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    body, rest = bytearray(), memoryview(bytes(data))
    while True:
        end = bytes(rest[:20]).index(b"\r\n")
        size = int(bytes(rest[:end]), 16)
        if size == 0:
            return bytes(body)
        body += rest[end + 2 : end + 2 + size]
        rest = rest[end + 2 + size + 2 :]


def raw_post(base_url: str, body: dict, rcvbuf: int | None) -> tuple[socket.socket, bytes]:
    host, port = base_url.removeprefix("http://").split(":")
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect((host, int(port)))
    payload = orjson.dumps(body)
    sock.sendall(
        b"POST /ag-ui/run HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"accept: text/event-stream\r\ncontent-length: "
        + str(len(payload)).encode()
        + b"\r\n\r\n"
        + payload
    )
    sock.settimeout(10)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, "the server closed the connection before its headers"
        head += chunk
    headers, _, start = head.partition(b"\r\n\r\n")
    assert headers.startswith(b"HTTP/1.1 200"), headers
    assert b"transfer-encoding: chunked" in headers.lower()
    return sock, start


def read_to_end(sock: socket.socket, head: bytes, timeout: float) -> bytes:
    """The de-chunked body after ``head``, up to the last chunk or a dropped connection."""
    sock.settimeout(timeout)
    data = bytearray(head)
    deadline = time.monotonic() + timeout
    while not data.endswith(b"\r\n0\r\n\r\n") and not data.startswith(b"0\r\n"):
        assert time.monotonic() < deadline, "the body did not end in time"
        try:
            chunk = sock.recv(1 << 20)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    body, rest = bytearray(), bytes(data)
    while rest:
        end = rest.find(b"\r\n")
        if end < 0:
            break
        size = int(rest[:end], 16)
        if size == 0 or len(rest) < end + 2 + size:
            body += rest[end + 2 : end + 2 + size]
            break
        body += rest[end + 2 : end + 2 + size]
        rest = rest[end + 2 + size + 2 :]
    return bytes(body)


async def test_a_client_that_pauses_does_not_slow_the_run_and_gets_everything(continue_url):
    tid, run_id = thread("pause"), f"pause-{time.monotonic_ns()}"
    frames = 10_000  # 10 MiB of text, far more than the socket buffers hold
    sock, start = raw_post(continue_url, run_body(tid, f"big {frames}", run_id=run_id), 16384)
    try:
        # the run ends while its client reads nothing: a reader never paces the run
        assert await eventually(lambda: (MARKS / f"ended-{run_id}").exists(), 30)
        body = read_chunked(sock, start, 30).decode()
    finally:
        sock.close()
    events, _ = parse_sse(body)
    assert_valid_agui(events)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert len(text_of(events)) == frames * 1024


def test_a_stream_that_is_never_read_is_dropped_and_the_run_goes_on():
    # ASGI, what `agui-bridge serve` runs: a send waits while the client does
    # not read, so what it pins is one write and granian's few queued sends.
    interface = "asgi"
    env = {**env_for("continue"), "AGUI_TEST_SEND_TIMEOUT": "1"}
    tid, run_id = thread("never"), f"never-{time.monotonic_ns()}"
    with serve("tests.ingress_apps:app", env=env, interface=interface) as base_url:
        sock, start = raw_post(base_url, run_body(tid, "big 8000", run_id=run_id), 16384)
        try:
            deadline = time.monotonic() + 30
            while not (MARKS / f"ended-{run_id}").exists():
                assert time.monotonic() < deadline
                time.sleep(0.05)
            time.sleep(2.5)  # past the send timeout: the server has given up on it
            body = read_to_end(sock, start, 30)
        finally:
            sock.close()
        # what the server held for the stalled client: 16 KiB writes, granian's
        # queue and the kernel's socket buffers
        assert len(body) < 6 * MIB  # of the 8 MiB the run produced
        # The run's terminal frame was in the log before the reader was cut off
        # (issue 9, item 13): no closers or RUN_ERROR are made up for it, so it
        # never gets two terminal events; it ends without one and can resume.
        assert b"RUN_FINISHED" not in body and b"RUN_ERROR" not in body
        assert "made no progress" in server_log(base_url)
        state = httpx.get(f"{base_url}/threads/{tid}/state").json()
        assert len(state["messages"][1]["content"]) == 8000 * 1024  # the run went on


def test_a_reader_behind_the_trimmed_log_is_disconnected_and_resumes_from_a_snapshot():
    # ASGI: a reader that does not read falls behind (under RSGI granian takes
    # every write at once, so a reader is never behind the log)
    interface = "asgi"
    env = {**env_for("continue"), "AGUI_TEST_MAX_LOG_BYTES": str(MIB)}
    tid, run_id = thread("trim"), f"trim-{time.monotonic_ns()}"
    with serve("tests.ingress_apps:app", env=env, interface=interface) as base_url:
        sock, start = raw_post(base_url, run_body(tid, "big 6000", run_id=run_id), 16384)
        try:
            deadline = time.monotonic() + 30
            while not (MARKS / f"ended-{run_id}").exists():
                assert time.monotonic() < deadline
                time.sleep(0.05)
            body = read_to_end(sock, start, 30).decode()
        finally:
            sock.close()
        frames = body[:-2].split("\n\n")
        assert "RUN_FINISHED" not in body
        last = max(int(f[4 : f.index("\n")]) for f in frames if f.startswith("id: "))
        assert "fell behind" in server_log(base_url)
        response = httpx.get(
            f"{base_url}/threads/{tid}/runs/{run_id}/events",
            headers={"last-event-id": str(last)},
            timeout=20,
        )
        assert response.headers["agui-resume"] == "snapshot"
        events, _ = parse_sse(response.text)
        assert_valid_agui(events)
        assert [e["type"] for e in events] == [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
            "RUN_FINISHED",
        ]
        assert len(events[1]["messages"][-1]["content"]) == 6000 * 1024


async def test_a_client_that_keeps_reading_gets_more_than_the_bound(continue_url):
    frames = 3000  # 3 MiB, three times the bound, read as fast as it comes
    async with httpx.AsyncClient(base_url=continue_url, timeout=20) as http:
        events = await stream(http, "/ag-ui/run", run_body(thread("fast"), f"big {frames}"))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert len(text_of(events)) == frames * 1024
