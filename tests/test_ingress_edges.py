"""Edges of the request rules and of runs, on the ASGI app (fast, in process)."""

from __future__ import annotations

import httpx
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui
from agui_bridge import crumbs as c
from agui_bridge.app import App, Unauthorized

from tests.ingress_apps import make_app, parse_sse, run_body


def client_for(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def stream(http, path, body, **kwargs):
    response = await http.post(path, json=body, **kwargs)
    assert response.status_code == 200, response.text
    events, _ = parse_sse(response.text)
    assert_valid_agui(events)
    return events


def text_of(events):
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


async def test_lenient_input_and_json_media_types():
    async with client_for(make_app(store="memory://")) as http:
        body = run_body("lenient", "hi", protocolVersion="1.0", state=None, extra={"x": 1})
        del body["tools"], body["context"], body["forwardedProps"]
        for content_type in ("application/json; charset=utf-8", "application/vnd.x+json"):
            response = await http.post(
                "/ag-ui/run",
                content=httpx.Request("POST", "/", json=body).content,
                headers={"content-type": content_type},
            )
            assert response.status_code == 200, response.text
            body["threadId"] += "-2"
        multipart = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
        events = await stream(
            http,
            "/ag-ui/run",
            run_body("parts", [{"id": "p", "role": "user", "content": multipart}]),
        )
        assert text_of(events) == "turn 1: you said a\nb"
        image = [{"type": "image", "source": {"type": "url", "value": "http://x/y.png"}}]
        response = await http.post(
            "/ag-ui/run", json=run_body("img", [{"id": "i", "role": "user", "content": image}])
        )
        assert response.status_code == 400


async def test_resume_cancelled_entry_and_incomplete_resume():
    async with client_for(make_app(store="memory://")) as http:
        await stream(http, "/ag-ui/run", run_body("cx", "approve", run_id="cx1"))
        entries = [{"interruptId": "ask-cx1", "status": "cancelled"}]
        events = await stream(http, "/ag-ui/run", run_body("cx", "approve", resume=entries))
        assert text_of(events) == "decision None for ask-cx1"
        response = await http.post("/ag-ui/run", json=run_body("cx", "approve", resume=entries))
        assert response.json()["error"]["code"] == "no_pending_interrupt"


async def test_a_failed_resume_keeps_the_interrupt_pending():
    app = App(store="memory://")
    calls = []

    @app.agent("a")
    async def agent(ctx):
        calls.append(ctx.resume)
        if ctx.resume is None:
            yield c.human_required(interrupt_id="q1")
            return
        if len(calls) == 2:
            raise RuntimeError("the tool behind the approval failed")
        yield c.text_delta(f"ok {ctx.resume.decision}")

    async with client_for(app) as http:
        events = await stream(http, "/ag-ui/run", run_body("f", "go"))
        assert events[-1]["outcome"]["interrupts"][0]["id"] == "q1"
        resume = run_body("f", "go", forwardedProps={"command": {"resume": "yes"}})
        events = await stream(http, "/ag-ui/run", resume)
        assert events[-1]["type"] == "RUN_ERROR"
        events = await stream(http, "/ag-ui/run", resume)  # still pending: retry works
        assert text_of(events) == "ok yes"
        thread = (await http.get("/threads/f/state")).json()
        assert [m["role"] for m in thread["messages"]] == ["user", "assistant"]


async def test_a_new_turn_does_not_settle_a_pending_interrupt():
    # Until issue 20 the new turn was accepted and the interrupt silently
    # settled (this test asserted that); now it must be resumed or cancelled.
    async with client_for(make_app(store="memory://")) as http:
        await stream(http, "/ag-ui/run", run_body("ab", "approve", run_id="ab1"))
        response = await http.post("/ag-ui/run", json=run_body("ab", "something else"))
        assert response.status_code == 409
        error = response.json()["error"]
        assert error["code"] == "interrupt_pending" and "'ask-ab1'" in error["message"]
        state = (await http.get("/threads/ab/state")).json()
        assert [i["id"] for i in state["pendingInterrupts"]] == ["ask-ab1"]
        assert len(state["messages"]) == 2  # the refused turn was not stored
        # A cancel is an answer: the turn that carries it runs, nothing stays pending.
        cancel = [{"interruptId": "ask-ab1", "status": "cancelled"}]
        events = await stream(http, "/ag-ui/run", run_body("ab", "something else", resume=cancel))
        assert events[-1]["type"] == "RUN_FINISHED"
        assert (await http.get("/threads/ab/state")).json()["pendingInterrupts"] == []
        resume = run_body("ab", "x", forwardedProps={"command": {"resume": "yes"}})
        response = await http.post("/ag-ui/run", json=resume)
        assert response.status_code == 400


async def test_on_event_errors_do_not_break_runs_and_async_authenticate():
    async def authenticate(request):
        if request.headers.get("x-key") != "k":
            raise Unauthorized("bad key")
        return {"user": "u", "actions": {"run"}}

    app = App(store="memory://", authenticate=authenticate)

    @app.on_event
    def broken(event, info):
        raise ValueError("listener bug")

    @app.agent("a")
    async def agent(ctx):
        yield c.text_delta(f"hi {ctx.identity['user']}")

    async with client_for(app) as http:
        response = await http.post("/ag-ui/run", json=run_body("oe", "x"))
        assert response.status_code == 401
        assert response.json()["error"]["message"] == "bad key"
        events = await stream(http, "/ag-ui/run", run_body("oe", "x"), headers={"x-key": "k"})
        assert text_of(events) == "hi u"
        # "read" is not granted, and neither is reading without "run"... run is granted
        assert (await http.get("/threads/oe/state", headers={"x-key": "k"})).status_code == 200


async def test_one_thread_across_two_agents_and_chunks_history():
    async with client_for(make_app(store="memory://")) as http:
        await stream(http, "/agui/echo", run_body("both", "one"))
        # The conversation as the page shows it (the reply too: a list that left
        # it out would start a new branch after "one", issue 20).
        shown = (await http.get("/threads/both/state")).json()["messages"]
        events = await stream(
            http,
            "/agui/planner",
            run_body("both", [*shown, {"id": "u2", "role": "user", "content": "two"}]),
        )
        assert events[-1]["result"] == "planned"
        messages = (await http.get("/threads/both/state")).json()["messages"]
        roles = [m["role"] for m in messages]
        assert roles == ["user", "assistant", "user", "assistant", "tool"]
        assert messages[3]["content"] == "planning now"
        assert messages[3]["toolCalls"][0]["function"] == {
            "name": "search",
            "arguments": '{"q":"two"}',
        }


def test_app_configuration_errors():
    app = App(store="memory://")
    with pytest.raises(ValueError):
        App(on_disconnect="later")
    with pytest.raises(ValueError):
        app.agent("x", dialect="tokens")

    @app.agent("x")
    async def x(ctx):
        yield c.text_delta("x")

    with pytest.raises(ValueError):
        app.agent("x")
    with pytest.raises(ValueError):
        app.agent("y", path="/ag-ui/run")(x)
    assert app.url_path("ops/team agent") == "/agui/ops%2Fteam%20agent"
