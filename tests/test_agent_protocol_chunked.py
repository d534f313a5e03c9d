"""An Agent Protocol body sent chunked, or over HTTP/2 (no Content-Length either
way), without a Content-Type is refused as the same body with a length is
(415), never taken as the empty body ``{}`` (it was: a 200 that dropped the
state update, the thread's id and metadata). The SDK's empty cancel POST (no
type, no length) stays accepted."""

from __future__ import annotations

import httpx
import orjson
from agui_bridge import App
from agui_bridge import crumbs as c


def _app() -> App:
    app = App(store="memory://")

    @app.agent("demo")
    async def demo(ctx):
        yield c.text_delta("hi")

    return app


async def _chunked(data: bytes):
    yield data


async def test_a_chunked_state_update_without_a_content_type_is_not_dropped():
    transport = httpx.ASGITransport(app=_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=10) as http:
        thread_id = (await http.post("/threads", json={})).json()["thread_id"]
        body = orjson.dumps(
            {"values": {"x": 1, "messages": [{"role": "user", "content": "hello"}]}}
        )
        # With a Content-Length: 415, as the standard says.
        sized = await http.post(f"/threads/{thread_id}/state", content=body)
        assert sized.status_code == 415, sized.text
        # Chunked (no Content-Length): was 200 {"checkpoint": ...}, nothing written.
        response = await http.post(f"/threads/{thread_id}/state", content=_chunked(body))
        assert response.status_code == 415, response.text
        assert response.json()["error"]["code"]


async def test_a_chunked_thread_create_without_a_content_type_keeps_its_id():
    transport = httpx.ASGITransport(app=_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=10) as http:
        body = orjson.dumps({"thread_id": "mine-1", "metadata": {"k": 1}})
        response = await http.post("/threads", content=_chunked(body))
        # Was 200 with a random thread_id and metadata {} (the body never read).
        assert response.status_code == 415, response.text


async def _asgi(app, method: str, path: str, body: bytes, headers=()) -> tuple[int, bytes]:
    """One request as granian's ASGI gives an HTTP/2 one: the body in DATA frames."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "2",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"t"), *headers],
        "client": ("127.0.0.1", 1),
        "server": ("t", 80),
    }
    pieces = [body[:5], body[5:]]
    sent = []

    async def receive():
        if pieces:
            chunk = pieces.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(pieces)}
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    data = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, data


async def test_an_h2_state_update_without_length_or_type_is_not_dropped():
    app = _app()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=10) as http:
        thread_id = (await http.post("/threads", json={})).json()["thread_id"]
    note = {"role": "user", "content": "hello"}
    body = orjson.dumps({"values": {"x": 1, "messages": [note]}})
    status, data = await _asgi(app, "POST", f"/threads/{thread_id}/state", body)
    # As with a length, or chunked: 415 (it was 200 {"checkpoint"...}, nothing written).
    assert status == 415, (status, data)
    # An empty untyped POST (the SDKs' cancel) is still {}, over HTTP/2 too.
    status, data = await _asgi(app, "POST", "/threads", b"")
    assert status == 200, (status, data)
