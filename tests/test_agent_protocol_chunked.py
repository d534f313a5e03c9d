"""An Agent Protocol body sent chunked (no Content-Length) without a Content-Type
is refused as the same body with a length is (415), never taken as the empty
body ``{}`` (it was: a 200 that dropped the state update, the thread's id and
metadata). The SDK's empty cancel POST (no type, no length) stays accepted."""

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
