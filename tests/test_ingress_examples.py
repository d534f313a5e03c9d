"""The examples run: each serves one valid stream under httpx's ASGI transport."""

from __future__ import annotations

import httpx
from ag_ui_validate.pytest_plugin import assert_valid_agui

from tests.ingress_apps import parse_sse, run_body


async def _stream(transport, path, body):
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        response = await http.post(path, json=body)
    assert response.status_code == 200, response.text
    events, _ = parse_sse(response.text)
    assert_valid_agui(events)
    return events


async def test_hello_agent(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # its SQLite file goes under ./.agui/
    from examples import hello_agent

    events = await _stream(
        httpx.ASGITransport(app=hello_agent.app), "/agui/hello", run_body("t1", "hi")
    )
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "Hello! You said 'hi'; I have seen 0 earlier turns here."
    assert (tmp_path / ".agui" / "threads.sqlite").exists()
    await hello_agent.app.aclose()


async def test_starlette_mount_with_on_event(caplog):
    from examples import starlette_mount

    caplog.set_level("INFO", logger="agui.events")
    transport = httpx.ASGITransport(app=starlette_mount.web)
    events = await _stream(transport, "/agents/ag-ui/run", run_body("t2", "hi"))
    assert events[-1]["type"] == "RUN_FINISHED"
    planned = await _stream(transport, "/agents/agui/planner", run_body("t3", "go"))
    assert planned[-1]["result"] == {"answer": 42}
    [call] = [e for e in planned if e["type"] == "TOOL_CALL_START"]
    assert call["toolCallId"] == f"{planned[0]['runId']}:search"  # ctx.new_id
    logged = [r.getMessage().split()[-1] for r in caplog.records if r.name == "agui.events"]
    assert logged.count("RUN_STARTED") == 2 and logged.count("RUN_FINISHED") == 2


async def test_on_event_takes_one_or_two_arguments():
    from agui_bridge import crumbs
    from agui_bridge.app import App

    app = App(store="memory://")
    seen_one, seen_two = [], []
    app.on_event(lambda event: seen_one.append(event["type"]))

    @app.on_event
    async def two(event, info):
        seen_two.append((info.agent_id, info.thread_id, event["type"]))

    @app.agent("a")
    async def agent(ctx):
        yield crumbs.text_delta("x")

    await _stream(httpx.ASGITransport(app=app), "/ag-ui/run", run_body("t9", "hi"))
    types = [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert seen_one == types
    assert seen_two == [("a", "t9", t) for t in types]
