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
from tests.servers import serve, serve_uvicorn


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
    assert not app._agents and not app.routes.has("/ag-ui/run")

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


# -- 1, 2. authenticate first; a thread is guarded by the agent that owns it --------


def _user_of(request):
    token = request.headers.get("authorization", "")
    return {"user": token[len("Bearer ") :]} if token.startswith("Bearer ") else None


def owned_app(authenticate=_user_of) -> App:
    """Agent "private" keeps each user's threads ("user:...") to that user; "public" has no rule."""
    app = App(store="memory://", authenticate=authenticate)

    @app.agent("private", authorize_thread=lambda who, tid: tid.startswith(who["user"] + ":"))
    async def private(ctx):
        if ctx.resume is not None:
            yield c.text_delta(f"resumed {ctx.resume.decision}")
            return
        yield c.text_delta(f"secret of {ctx.identity['user']}")
        yield c.human_required(interrupt_id=f"ask-{ctx.run_id}", reason="approval")

    @app.agent("public")
    async def public(ctx):
        yield c.text_delta(f"history {[m.get('content') for m in ctx.history]}")

    return app


def bearer(who: str) -> dict:
    return {"authorization": f"Bearer {who}"}


async def test_a_thread_is_guarded_by_its_owner_on_every_route():
    async with client_for(owned_app()) as http:
        body = run_body("alice:t", "hello", run_id="r1")
        await stream(http, "/agui/private", body, headers=bearer("alice"))
        # bob, through the agent without a rule, on alice's thread
        intrusion = run_body("alice:t", "what did she say?")
        error_of(
            await http.post("/agui/public", json=intrusion, headers=bearer("bob")), 403, "forbidden"
        )
        error_of(await http.get("/threads/alice:t/state", headers=bearer("bob")), 403)
        # nor by retrying her run (same runId, nothing new) to get its stream replayed
        error_of(await http.post("/agui/public", json=body, headers=bearer("bob")), 403)
        error_of(await http.get("/threads/alice:t/runs/r1/events", headers=bearer("bob")), 403)
        replay = await http.get("/threads/alice:t/runs/r1/events", headers=bearer("alice"))
        assert replay.status_code == 200 and "secret of alice" in replay.text
        state = (await http.get("/threads/alice:t/state", headers=bearer("alice"))).json()
        assert [m["role"] for m in state["messages"]] == ["user", "assistant"]
        # her pending interrupt is still there for her resume
        resume = run_body("alice:t", "hello", resume=[{"interruptId": "ask-r1", "payload": "y"}])
        events = await stream(http, "/agui/private", resume, headers=bearer("alice"))
        assert text_of(events) == "resumed y"
        # the owner's rule lets alice use another agent on her thread
        events = await stream(
            http, "/agui/public", run_body("alice:t", "more", run_id="r3"), headers=bearer("alice")
        )
        assert "hello" in text_of(events)
        # and that run's stream is still hers alone
        error_of(await http.get("/threads/alice:t/runs/r3/events", headers=bearer("bob")), 403)
        # a thread the public agent created stays open to anyone
        await stream(http, "/agui/public", run_body("open", "x"), headers=bearer("bob"))
        await stream(http, "/agui/public", run_body("open", "y"), headers=bearer("carol"))


async def test_a_thread_whose_owner_is_unknown_is_checked_by_every_rule():
    app = owned_app()
    await app.store.save("alice:old", "gone-agent", [], {}, [])
    async with client_for(app) as http:
        error_of(
            await http.post("/agui/public", json=run_body("alice:old", "x"), headers=bearer("bob")),
            403,
        )
        await stream(http, "/agui/public", run_body("alice:old", "x"), headers=bearer("alice"))


BAD_BODIES = [
    (b"{nope", {"content-type": "application/json"}),
    (b"{}", {"content-type": "text/plain"}),
    (b'{"threadId": 5, "messages": []}', {"content-type": "application/json"}),
    (b'{"threadId": "x", "pad": "' + b"x" * 2000 + b'"}', {"content-type": "application/json"}),
]


@pytest.mark.parametrize("content, headers", BAD_BODIES)
async def test_authenticate_runs_before_the_body_is_judged(content, headers):
    app = owned_app()
    app.body_limit = 1000
    async with client_for(app) as http:
        error_of(await http.post("/agui/public", content=content, headers=headers), 401)
        response = await http.post("/agui/public", content=content, headers=headers | bearer("a"))
        assert response.status_code in (400, 413, 415), response.text


async def test_authenticate_can_read_the_body_it_is_given():
    seen = []

    def by_body(request):
        seen.append(request.body)
        body = request.body
        return {"user": "alice"} if isinstance(body, dict) and body.get("key") == "k" else None

    async with client_for(owned_app(by_body)) as http:
        body = run_body("alice:b", "hi", key="k")
        await stream(http, "/agui/private", body)
        assert seen[-1]["threadId"] == "alice:b"
        error_of(await http.post("/agui/private", json=run_body("alice:b", "hi")), 401)
        error_of(await http.post("/agui/private", content=b"{x", headers=JSON), 401)
        assert seen[-1] is None


# -- 19, 20. chunk runs: the interrupt id on the wire, nothing counted as ignored -----


def chunk_app() -> App:
    app = App(store="memory://")

    @app.agent("chunky", dialect="chunks")
    async def chunky(ctx):
        if ctx.resume is not None:
            yield f"resumed {ctx.resume.interrupt_id} with {ctx.resume.decision}"
            return
        yield "asking"
        yield {"type": "interrupt", "reason": "perm"}  # no id: the translator names it

    return app


async def test_an_id_less_chunk_interrupt_is_resumed_by_the_id_on_the_wire():
    async with client_for(chunk_app()) as http:
        events = await stream(http, "/agui/chunky", run_body("ck", "go", run_id="ck1"))
        (custom,) = [e for e in events if e["type"] == "CUSTOM"]
        wire_id = custom["value"]["interruptId"]
        entries = [{"interruptId": wire_id, "status": "resolved", "payload": "yes"}]
        events = await stream(http, "/agui/chunky", run_body("ck", "go", resume=entries))
        assert text_of(events) == f"resumed {wire_id} with yes"

        assert wire_id == "ck1:i1"


def test_a_chunk_interrupt_always_carries_its_id(impl):
    t = impl.create_agui_translator(thread_id="t", run_id="r", held_ids={"r:i1"})

    def value_of(chunk):
        (custom,) = [e for e in t(chunk) if e["type"] == "CUSTOM"]
        return custom["value"]

    assert value_of({"type": "interrupt", "reason": "perm"}) == {
        "reason": "perm",
        "interruptId": "r:i2",
    }
    assert value_of({"type": "interrupt", "interruptId": "mine"}) == {"interruptId": "mine"}
    assert value_of({"type": "interrupt", "id": "x"}) == {"id": "x"}
    assert value_of({"type": "interrupt", "interruptId": 5, "id": ""}) == {
        "id": "",
        "interruptId": "r:i3",
    }
    assert (t.ignored, t.dropped) == (0, 0)


async def test_a_clean_chunks_run_ignores_nothing(monkeypatch):
    from agui_bridge.runs import run as run_module

    made = []
    factory = run_module._FACTORIES["chunks"]

    def recording(**kwargs):
        made.append(factory(**kwargs))
        return made[-1]

    monkeypatch.setitem(run_module._FACTORIES, "chunks", recording)
    app = chunk_app()
    app.on_event(lambda event: None)  # listeners get the run's own events: no second translator
    async with client_for(app) as http:
        events = await stream(http, "/agui/chunky", run_body("ci", "go"))
        assert events[1]["type"] == "TEXT_MESSAGE_START"
    assert len(made) == 1
    assert [t.ignored for t in made] == [0]


# -- 6. a Content-Length that is not a number of bytes -----------------------------


async def _asgi_post(app, headers: list[tuple[bytes, bytes]], body: bytes) -> list[dict]:
    sent: list[dict] = []
    parts = [body]

    async def receive():
        if parts:
            return {"type": "http.request", "body": parts.pop(), "more_body": False}
        await asyncio.sleep(30)
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/ag-ui/run",
        "headers": [(b"content-type", b"application/json"), *headers],
        "query_string": b"",
    }
    await asyncio.wait_for(app(scope, receive, send), 5)
    return sent


@pytest.mark.parametrize(
    "lengths", [[b"-1"], [b"abc"], [b"+5"], [b" 5"], [b"\xd9\xa3"], [b"5", b"6"]]
)
async def test_a_content_length_that_is_not_a_number_is_a_400_json(lengths):
    body = orjson.dumps(run_body("cl", "hi"))
    headers = [(b"content-length", length) for length in lengths]
    sent = await _asgi_post(make_app(store="memory://"), headers, body)
    assert sent[0]["status"] == 400
    assert (b"content-type", b"application/json") in sent[0]["headers"]
    assert orjson.loads(sent[1]["body"])["error"]["code"] == "invalid_content_length"


async def test_a_repeated_equal_content_length_is_fine():
    body = orjson.dumps(run_body("cl2", "hi"))
    length = str(len(body)).encode()
    sent = await _asgi_post(make_app(store="memory://"), [(b"content-length", length)] * 2, body)
    assert sent[0]["status"] == 200


@pytest.mark.parametrize("interface", ["rsgi", "asgi"])
def test_granian_answers_a_malformed_content_length_itself(interface):
    """hyper (in granian) refuses these before the app runs, with an empty 400 and
    no option to change it (docs/ingress-limits.md); the app never sees them."""
    with serve("tests.ingress_apps:app", interface=interface) as url:
        port = int(url.rsplit(":", 1)[1])
        for lengths in ([b"-1"], [b"abc"], [b"+5"], [b"5", b"6"]):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(
                    b"POST /ag-ui/run HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                    + b"".join(b"content-length: " + v + b"\r\n" for v in lengths)
                    + b"\r\n{}"
                )
                head, _, body = read_response(sock)
            assert head.startswith(b"HTTP/1.1 400"), head
            assert body == b""


def test_an_empty_token_only_starts_a_chunks_run(impl):
    """What a chunks run feeds first so RUN_STARTED goes out before the agent yields."""
    t = impl.create_agui_translator(thread_id="t", run_id="r")
    assert t("") == [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    assert (t.ignored, t.dropped) == (0, 0)
    assert t("") == [] and (t.ignored, t.dropped) == (0, 0)
