"""The ingress over HTTP: a real granian server (RSGI) and the ASGI app under a
Starlette mount, driven with httpx. Every streamed body passes ag-ui-validate."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

import httpx
import orjson
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui
from starlette.applications import Starlette
from starlette.routing import Mount

from tests.ingress_apps import make_app, messages_from_events, parse_sse, run_body
from tests.servers import serve

WORK = Path(tempfile.mkdtemp(prefix="agui-ingress-"))
# One marks folder per process: pytest imports this module as test_ingress_http and
# the suites that borrow its helpers import it again as tests.test_ingress_http; a
# second folder would leave the in-process apps (which read the environment)
# marking where this copy's tests do not look.
os.environ.setdefault("AGUI_TEST_MARKS", str(WORK / "marks"))
MARKS = Path(os.environ["AGUI_TEST_MARKS"])
MARKS.mkdir(exist_ok=True)
EVENTS = WORK / "events.jsonl"

ENV = {
    "AGUI_TEST_KEEPALIVE": "0.3",
    "AGUI_TEST_EVENTS": str(EVENTS),
    "AGUI_TEST_MARKS": str(MARKS),
}


@pytest.fixture(scope="module")
def rsgi_url():
    with serve("tests.ingress_apps:app", env=ENV) as base_url:
        yield base_url


@pytest.fixture(params=[pytest.param("rsgi", marks=pytest.mark.server), "asgi"])
async def client(request):
    if request.param == "rsgi":
        base_url = request.getfixturevalue("rsgi_url")
        async with httpx.AsyncClient(base_url=base_url, timeout=20) as http:
            yield http
        return
    inner = make_app(store="memory://", keepalive=0.3)
    outer = Starlette(routes=[Mount("/mnt", app=inner)])
    transport = httpx.ASGITransport(app=outer)
    async with httpx.AsyncClient(transport=transport, base_url="http://test/mnt", timeout=20) as h:
        yield h


def thread(name: str) -> str:
    return f"{name}-{time.monotonic_ns()}"


async def stream(http, path, body, **kwargs) -> list[dict]:
    response = await http.post(path, json=body, **kwargs)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-accel-buffering"] == "no"
    events, _ = parse_sse(response.text)
    assert_valid_agui(events)
    return events


def text_of(events) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def error_of(response, status, code=None) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert isinstance(error["message"], str) and error["message"]
    if code is not None:
        assert error["code"] == code
    return error


async def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await predicate():
            return True
        await asyncio.sleep(0.05)
    return False


# -- threads and agents ------------------------------------------------------


async def test_multi_turn_history_is_kept_once(client):
    tid = thread("multi")
    conversation = []
    for turn, words in enumerate(["hello", "again", "third"], start=1):
        conversation.append({"id": f"u{turn}", "role": "user", "content": words})
        events = await stream(client, "/ag-ui/run", run_body(tid, list(conversation)))
        assert events[0]["threadId"] == tid
        assert text_of(events) == f"turn {turn}: you said {words}"
        conversation += messages_from_events(events)  # the client resends everything
    state = (await client.get(f"/threads/{tid}/state")).json()
    ids = [m["id"] for m in state["messages"]]
    assert len(ids) == len(set(ids)) == 6
    assert [m["role"] for m in state["messages"]] == ["user", "assistant"] * 3
    assert state["messages"] == conversation
    assert state["values"] == {}


async def test_two_agents_and_their_paths(client):
    tid = thread("agents")
    echo = await stream(client, "/agui/echo", run_body(tid, "hi"))
    assert text_of(echo) == "turn 1: you said hi"
    planner = await stream(client, "/agui/planner", run_body(thread("plan"), "go"))
    types = [e["type"] for e in planner]
    assert "TOOL_CALL_RESULT" in types and "STATE_SNAPSHOT" in types
    assert planner[-1]["result"] == "planned"
    team = await stream(client, "/agui/ops%2Fteam%20agent", run_body(thread("team"), "x"))
    assert text_of(team) == "team here: ops/team agent"


async def test_tool_call_lands_in_history(client):
    tid = thread("tool")
    events = await stream(client, "/ag-ui/run", run_body(tid, "tool"))
    run_id = events[0]["runId"]
    messages = (await client.get(f"/threads/{tid}/state")).json()["messages"]
    assert messages[1] == {
        "id": f"{run_id}:m1",
        "role": "assistant",
        "content": "let me add",
        "toolCalls": [
            {
                "id": "call-1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
            }
        ],
    }
    assert messages[2] == {
        "id": f"{run_id}:r1",
        "role": "tool",
        "toolCallId": "call-1",
        "content": '{"sum":3}',
    }
    assert messages[3]["content"] == "the sum is 3"


async def test_state_updates_and_client_state(client):
    tid = thread("state")
    events = await stream(client, "/ag-ui/run", run_body(tid, "state", state={"color": "red"}))
    assert text_of(events) == "state keys ['color']"
    snapshots = [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"]
    assert snapshots[-1]["task"]["status"] == "completed" and snapshots[-1]["color"] == "red"
    values = (await client.get(f"/threads/{tid}/state")).json()["values"]
    assert values["color"] == "red" and values["task"]["durationMs"] == 3


async def test_unknown_thread_state_is_404(client):
    # "anon-..." passes the guarded agent's authorize_thread, which applies to unknown threads
    error_of(await client.get(f"/threads/{thread('anon')}/state"), 404, "not_found")
    error_of(await client.get(f"/threads/{thread('other')}/state"), 403, "forbidden")


async def test_frontend_tools_round_trip(client):
    tid = thread("fe")
    tools = [{"name": "confirm", "description": "ask the user", "parameters": {}}]
    first = [{"id": "u1", "role": "user", "content": "frontend"}]
    events = await stream(client, "/ag-ui/run", run_body(tid, first, tools=tools))
    assert text_of(events) == "tools: confirm"
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert start["toolCallName"] == "confirm"
    assert not any(e["type"] == "TOOL_CALL_RESULT" for e in events)
    call_id = start["toolCallId"]
    answer = {"id": "tool-answer", "role": "tool", "toolCallId": call_id, "content": "yes"}
    forged = {"id": "forged", "role": "tool", "toolCallId": "not-a-call", "content": "no"}
    conversation = first + messages_from_events(events) + [answer, forged]
    # A result answering a call the thread never made is refused, and nothing is kept.
    refused = await client.post("/ag-ui/run", json=run_body(tid, conversation, tools=tools))
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "unknown_tool_call"
    assert "'not-a-call'" in refused.json()["error"]["message"]
    kept = (await client.get(f"/threads/{tid}/state")).json()["messages"]
    assert [m["role"] for m in kept] == ["user", "assistant"]
    conversation.remove(forged)
    events = await stream(client, "/ag-ui/run", run_body(tid, conversation, tools=tools))
    assert text_of(events) == f"result yes for {call_id}"
    messages = (await client.get(f"/threads/{tid}/state")).json()["messages"]
    tool_messages = [m for m in messages if m["role"] == "tool"]
    assert tool_messages == [answer]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]


async def test_agent_errors_become_run_error_and_keep_what_the_client_saw(client):
    tid = thread("fail")
    body = run_body(tid, "fail")
    events = await stream(client, "/ag-ui/run", body)
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "RuntimeError"
    messages = (await client.get(f"/threads/{tid}/state")).json()["messages"]
    assert [m.get("content") for m in messages] == ["fail", "complete part", "half written"]
    assert messages[1]["toolCalls"][0]["id"] == "t-done"
    assert messages == body["messages"] + messages_from_events(events)
    bad = await stream(client, "/ag-ui/run", run_body(thread("bad"), "badcrumb"))
    assert bad[-1]["type"] == "RUN_ERROR" and bad[-1]["code"] == "CrumbError"


async def test_keepalive_pings_when_idle(client):
    response = await client.post("/ag-ui/run", json=run_body(thread("quiet"), "quiet 1.0"))
    assert response.status_code == 200
    events, pings = parse_sse(response.text)
    assert pings >= 2
    assert_valid_agui(events)
    assert text_of(events) == "after the quiet"


# -- bad input -----------------------------------------------------------------


async def test_bad_input_statuses(client):
    body = run_body(thread("bad"), "hi")
    error_of(await client.get("/ag-ui/run"), 405, "method_not_allowed")
    error_of(await client.put("/agui/planner", json=body), 405)
    error_of(await client.post("/nope", json=body), 404, "not_found")
    error_of(
        await client.post("/ag-ui/run", content=b"{}", headers={"content-type": "text/plain"}), 415
    )
    error_of(await client.post("/ag-ui/run", content=b"{}"), 415)
    error_of(
        await client.post(
            "/ag-ui/run", content=b"{nope", headers={"content-type": "application/json"}
        ),
        400,
        "invalid_json",
    )
    error = error_of(await client.post("/ag-ui/run", json={"messages": []}), 400, "invalid_input")
    assert error["message"] == "'threadId' must be a non-empty string"
    error_of(await client.post("/ag-ui/run", json={"threadId": "x", "messages": []}), 400)
    big = b'{"threadId": "x", "pad": "' + b"x" * (1 << 20) + b'"}'
    error_of(
        await client.post("/ag-ui/run", content=big, headers={"content-type": "application/json"}),
        413,
        "payload_too_large",
    )

    async def chunked():
        for _ in range(20):
            yield b" " * (64 * 1024)

    error_of(
        await client.post(
            "/ag-ui/run", content=chunked(), headers={"content-type": "application/json"}
        ),
        413,
    )
    resume = run_body(thread("noint"), "hi", forwardedProps={"command": {"resume": "yes"}})
    error_of(await client.post("/ag-ui/run", json=resume), 400, "no_pending_interrupt")


async def test_concurrent_run_on_a_thread_is_409(client):
    tid = thread("busy")
    first = asyncio.ensure_future(
        client.post("/ag-ui/run", json=run_body(tid, "slow 10", run_id="busy-1"))
    )
    assert await wait_for(lambda: asyncio.sleep(0, (MARKS / "started-busy-1").exists()))
    second = await client.post("/ag-ui/run", json=run_body(tid, "hi"))
    error_of(second, 409, "run_active")
    response = await first
    events, _ = parse_sse(response.text)
    assert_valid_agui(events)
    await stream(client, "/ag-ui/run", run_body(tid, "hi"))  # free again


# -- human in the loop -----------------------------------------------------------


async def test_crumbs_interrupt_and_resume(client):
    tid = thread("hitl")
    events = await stream(client, "/ag-ui/run", run_body(tid, "approve it", run_id="hitl-1"))
    outcome = events[-1]["outcome"]
    assert outcome == {
        "type": "interrupt",
        "interrupts": [{"id": "ask-hitl-1", "reason": "approval", "message": "ok?"}],
    }
    # a wrong interrupt id is refused before any run starts
    wrong = run_body(
        tid,
        "approve it",
        forwardedProps={"command": {"resume": {"decision": "yes", "interruptId": "other"}}},
    )
    error_of(await client.post("/ag-ui/run", json=wrong), 400, "unknown_interrupt")
    resume = run_body(
        tid,
        "approve it",
        forwardedProps={"command": {"resume": {"decision": "yes", "interruptId": "ask-hitl-1"}}},
    )
    events = await stream(client, "/ag-ui/run", resume)
    assert text_of(events) == "decision 'yes' for ask-hitl-1"
    assert "outcome" not in events[-1]
    error_of(await client.post("/ag-ui/run", json=resume), 400, "no_pending_interrupt")
    # AG-UI 1.0 resume entries
    events = await stream(client, "/ag-ui/run", run_body(tid, "approve again", run_id="hitl-2"))
    entries = [{"interruptId": "ask-hitl-2", "status": "resolved", "payload": {"ok": True}}]
    events = await stream(client, "/ag-ui/run", run_body(tid, "approve again", resume=entries))
    assert text_of(events) == "decision {'ok': True} for ask-hitl-2"


async def test_chunks_interrupt_and_resume(client):
    tid = thread("perm")
    events = await stream(client, "/agui/planner", run_body(tid, "approve", run_id="perm-run"))
    custom = [e for e in events if e["type"] == "CUSTOM"]
    assert custom == [
        {
            "type": "CUSTOM",
            "name": "on_interrupt",
            "value": {"interruptId": "perm-perm-run", "reason": "perm"},
        }
    ]
    assert events[-1]["type"] == "RUN_FINISHED"
    resume = run_body(tid, "approve", forwardedProps={"command": {"resume": "once"}})
    events = await stream(client, "/agui/planner", resume)
    assert text_of(events) == "resumed with once"


# -- on_event --------------------------------------------------------------------


async def test_on_event_sees_two_concurrent_runs(rsgi_url):
    async with httpx.AsyncClient(base_url=rsgi_url, timeout=20) as http:
        runs = {f"ev-{i}-{time.monotonic_ns()}": thread(f"ev{i}") for i in range(2)}
        responses = await asyncio.gather(
            *[
                http.post("/ag-ui/run", json=run_body(tid, "slow 6", run_id=run_id))
                for run_id, tid in runs.items()
            ]
        )
    seen: dict[str, list] = {run_id: [] for run_id in runs}
    for line in EVENTS.read_bytes().splitlines():
        record = orjson.loads(line)
        if record["run"] in seen:
            assert record["thread"] == runs[record["run"]]
            seen[record["run"]].append(record["event"])
    for response, run_id in zip(responses, runs, strict=True):
        events, _ = parse_sse(response.text)
        assert_valid_agui(events)
        assert seen[run_id] == events
        assert_valid_agui(seen[run_id])


# -- SQLite across a restart ---------------------------------------------------------


def test_resume_after_restart_on_the_same_sqlite_file(tmp_path):
    env = {"AGUI_TEST_STORE": f"sqlite:///{tmp_path}/threads.sqlite"}
    tid = thread("restart")
    with serve("tests.ingress_apps:app", env=env) as base_url:
        response = httpx.post(
            base_url + "/ag-ui/run", json=run_body(tid, "approve x", run_id="rs-1")
        )
        events, _ = parse_sse(response.text)
        assert_valid_agui(events)
        assert events[-1]["outcome"]["interrupts"][0]["id"] == "ask-rs-1"
    with serve("tests.ingress_apps:app", env=env) as base_url:
        state = httpx.get(f"{base_url}/threads/{tid}/state").json()
        assert [m["role"] for m in state["messages"]] == ["user", "assistant"]
        resume = run_body(
            tid,
            "approve x",
            resume=[{"interruptId": "ask-rs-1", "status": "resolved", "payload": "go"}],
        )
        response = httpx.post(base_url + "/ag-ui/run", json=resume)
        events, _ = parse_sse(response.text)
        assert_valid_agui(events)
        assert text_of(events) == "decision 'go' for ask-rs-1"
        state = httpx.get(f"{base_url}/threads/{tid}/state").json()
        assert len(state["messages"]) == 3


def test_one_active_run_per_thread_across_workers(tmp_path):
    env = {"AGUI_TEST_STORE": f"sqlite:///{tmp_path}/threads.sqlite", **ENV}
    tid, run_id = thread("workers"), f"workers-{time.monotonic_ns()}"
    with serve("tests.ingress_apps:app", env=env, workers=2) as base_url:

        async def scenario():
            async with httpx.AsyncClient(base_url=base_url, timeout=20) as http:
                # 60 s, cancelled once the six 409s are in: a 3 s run ended
                # before the sixth on a loaded machine (a 200, in CI)
                first = asyncio.ensure_future(
                    http.post("/ag-ui/run", json=run_body(tid, "slow 1200", run_id=run_id))
                )
                assert await wait_for(
                    lambda: asyncio.sleep(0, (MARKS / f"started-{run_id}").exists())
                )
                statuses = []
                for _ in range(6):  # new connections: the workers share the socket
                    async with httpx.AsyncClient(base_url=base_url, timeout=20) as other:
                        response = await other.post("/ag-ui/run", json=run_body(tid, "hi"))
                        statuses.append(response.status_code)
                assert statuses == [409] * 6
                # The run lives on one of the two workers (memory run logs): a
                # cancel that reaches the other one is a 404 there; new
                # connections until one reaches the run's worker.
                for _ in range(40):
                    async with httpx.AsyncClient(base_url=base_url, timeout=20) as other:
                        cancel = await other.post(f"/threads/{tid}/runs/{run_id}/cancel")
                    if cancel.status_code != 404:
                        break
                assert cancel.status_code == 202, cancel.text
                events, _ = parse_sse((await first).text)
                assert_valid_agui(events)
                again = await http.post("/ag-ui/run", json=run_body(tid, "hi"))
                assert again.status_code == 200

        asyncio.run(scenario())
