"""Hostile and careless input at the ingress (issue 9): auth order, thread
ownership, bad bodies, deep nesting, bad Content-Length, a chunked body past
the limit under uvicorn. In process on the ASGI app unless a server is named."""

from __future__ import annotations

import asyncio
import socket

import httpx
import orjson
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui
from agui_bridge import crumbs as c
from agui_bridge.app import App

from tests.ingress_apps import make_app, parse_sse, run_body
from tests.servers import serve_uvicorn


def client_for(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def error_of(response, status, code=None) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert isinstance(error["message"], str) and error["message"]
    if code is not None:
        assert error["code"] == code, error
    return error


async def stream(http, path, body, **kwargs):
    response = await http.post(path, json=body, **kwargs)
    assert response.status_code == 200, response.text
    events, _ = parse_sse(response.text)
    assert_valid_agui(events)
    return events


def text_of(events):
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def nested(levels: int, leaf=1):
    """``levels`` objects, one inside the other."""
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


def raw_body(body: dict, key: str, levels: int) -> bytes:
    """``body`` as JSON with ``key`` set to ``levels`` nested objects (past any encoder's limit)."""
    raw = orjson.dumps({**body, key: None})
    deep = b'{"a":' * levels + b"1" + b"}" * levels
    return raw.replace(orjson.dumps(key) + b":null", orjson.dumps(key) + b":" + deep)


JSON = {"content-type": "application/json"}


# -- 4. wrong shapes deep in a body: 400, never 500 ------------------------------


@pytest.mark.parametrize("levels", [129, 200, 1000])
async def test_deep_state_is_a_400(levels):
    async with client_for(make_app(store="memory://")) as http:
        response = await http.post("/ag-ui/run", json=run_body(f"deep-{levels}", "hi"))
        assert response.status_code == 200
        body = raw_body(run_body(f"deep-{levels}", "hi"), "state", levels)
        error_of(await http.post("/ag-ui/run", content=body, headers=JSON), 400, "invalid_input")
        state = await http.get(f"/threads/deep-{levels}/state")
        assert state.status_code == 200 and len(state.json()["messages"]) == 2


@pytest.mark.parametrize("tool_calls", [1.5, -1, True, "x", {"id": "a"}, [1], [{"id": [1]}]])
async def test_tool_calls_of_another_shape_are_a_400(tool_calls):
    messages = [
        {"id": "a1", "role": "assistant", "content": "x", "toolCalls": tool_calls},
        {"id": "u1", "role": "user", "content": "hi"},
    ]
    async with client_for(make_app(store="memory://")) as http:
        error_of(await http.post("/ag-ui/run", json=run_body("tc", messages)), 400)


@pytest.mark.parametrize("call_id", [[1], {"a": 1}, 5, None])
async def test_a_tool_call_id_of_another_type_is_a_400(call_id):
    messages = [
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "t1", "role": "tool", "content": "x", "toolCallId": call_id},
    ]
    async with client_for(make_app(store="memory://")) as http:
        error_of(await http.post("/ag-ui/run", json=run_body("tci", messages)), 400)


# -- 5. one nesting limit covers everything stored and read back -------------------


@pytest.mark.parametrize("store", ["memory://", "sqlite"])
@pytest.mark.parametrize("levels", [60, 200, 252, 253, 254, 400])
async def test_deep_message_fields_are_refused_or_stored_readably(store, levels, tmp_path):
    spec = f"sqlite:///{tmp_path}/t.sqlite" if store == "sqlite" else store
    app = make_app(store=spec)
    async with client_for(app) as http:
        tid = f"nest-{levels}"
        await stream(http, "/ag-ui/run", run_body(tid, "first"))
        messages = [
            {"id": f"u-{tid}-first", "role": "user", "content": "first"},
            {"id": "u2", "role": "user", "content": "again", "extra": nested(levels)},
        ]
        response = await http.post("/ag-ui/run", json=run_body(tid, messages))
        users = [f"u-{tid}-first"]
        if response.status_code == 200:
            # accepted: the turn is stored and the thread stays readable
            events, _ = parse_sse(response.text)
            assert events[-1]["type"] == "RUN_FINISHED"
            users.append("u2")
        else:
            error_of(response, 400, "invalid_input")
        state = await http.get(f"/threads/{tid}/state")
        assert state.status_code == 200, state.text
        assert [m["id"] for m in state.json()["messages"] if m["role"] == "user"] == users
    await app.aclose()
    if levels >= 200:
        assert response.status_code == 400


# -- 7. a chunked body one byte past the limit, under uvicorn ----------------------


async def test_asgi_chunked_body_past_the_limit_is_answered():
    """uvicorn's receive() waits for a disconnect once the body has ended."""
    app = make_app(store="memory://", body_limit=1000)
    sent: list[dict] = []
    parts = [b"{" + b" " * 500, b" " * 500 + b"}"]  # 1002 bytes in two chunks
    forever = asyncio.Event()

    async def receive():
        if parts:
            chunk = parts.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(parts)}
        await forever.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/ag-ui/run",
        "headers": [(b"content-type", b"application/json"), (b"transfer-encoding", b"chunked")],
        "query_string": b"",
    }
    await asyncio.wait_for(app(scope, receive, send), 5)
    assert sent[0]["status"] == 413
    assert orjson.loads(sent[1]["body"])["error"]["code"] == "payload_too_large"


# -- 21. what is not an agent is refused when registered ------------------------------


def test_what_is_not_an_agent_is_refused():
    app = App(store="memory://")

    async def coroutine(ctx):
        return "x"

    def generator(ctx):
        yield c.text_delta("x")

    async def no_context():
        yield c.text_delta("x")

    async def two_required(ctx, other):
        yield c.text_delta("x")

    for i, bad in enumerate([None, 42, "agent", coroutine, generator, no_context, two_required]):
        with pytest.raises(TypeError, match="agent"):
            app.agent(f"bad{i}")(bad)
    assert not app._agents and not app._routes

    async def fine(ctx, extra=None):
        yield c.text_delta("x")

    class Callable:
        async def __call__(self, ctx):
            yield c.text_delta("y")

    app.agent("fine")(fine)
    app.agent("object")(Callable())


def test_uvicorn_chunked_body_past_the_limit_is_answered():
    with serve_uvicorn("tests.ingress_apps:app", {"AGUI_TEST_BODY_LIMIT": "1000"}) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            body = b"{" + b" " * 999 + b"}"  # 1001 bytes
            sock.sendall(
                b"POST /ag-ui/run HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
                + b"%x\r\n" % len(body)
                + body
                + b"\r\n0\r\n\r\n"
            )
            head, _, rest = read_response(sock)
        assert head.startswith(b"HTTP/1.1 413"), head
        assert orjson.loads(rest)["error"]["code"] == "payload_too_large"


def read_response(sock) -> tuple[bytes, bytes, bytes]:
    """One HTTP/1.1 response with a Content-Length: (head, b"", body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = sock.recv(65536)
        if not more:
            break
        data += more
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        more = sock.recv(65536)
        if not more:
            break
        rest += more
    return head, b"", rest
