"""The stored history keeps each tool result where @ag-ui/client puts it: right
after the assistant message that owns the call (and the results already there)."""

from __future__ import annotations

import httpx
from agui_bridge import crumbs as c
from agui_bridge.app import App

from tests.ingress_apps import parse_sse, run_body


async def test_results_of_parallel_calls_without_text_follow_their_calls():
    app = App(store="memory://")

    @app.agent("parallel")
    async def parallel(ctx):
        # No text first: each call is an assistant message of its own.
        for call in ("c1", "c2"):
            yield c.tool_input_start(call, "lookup")
            yield c.tool_input_delta(call, "{}")
        yield c.tool_input_end("c1")
        yield c.tool_input_end("c2")
        yield c.tool_result("c1", "one")
        yield c.tool_result("c2", "two")
        yield c.text_delta("Done.")

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        response = await http.post("/agui/parallel", json=run_body("t-order", "go"))
        parse_sse(response.text)
        stored = (await http.get("/threads/t-order/state")).json()["messages"]
    shape = [
        (m["role"], m.get("toolCallId") or [t["id"] for t in m.get("toolCalls", [])])
        for m in stored
    ]
    assert shape == [
        ("user", []),
        ("assistant", ["c1"]),
        ("tool", "c1"),
        ("assistant", ["c2"]),
        ("tool", "c2"),
        ("assistant", []),
    ]
