"""langgraph-sdk 0.4.14's thread-centric streaming (``client.threads.stream()``),
async and sync, against ``POST /threads/{id}/commands`` and
``POST /threads/{id}/stream/events``: a run, an interrupt answered through
``input.respond``, a reconnect with ``since`` (nothing lost, nothing twice),
what a malformed request gets (422 JSON) and a WebSocket (a clear 4xx)."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx
import orjson
import pytest
from langgraph_sdk import get_client, get_sync_client
from websockets.exceptions import InvalidStatus

from tests.servers import serve
from tests.thread_runs import check_no_run_lost

ASK = {"messages": [{"role": "user", "content": "what is 6 * 7?"}]}
APPROVE = {"messages": [{"role": "user", "content": "approve deleting the draft"}]}
ALL = ["values", "updates", "messages", "tools", "lifecycle", "input", "custom"]


@pytest.fixture(scope="module")
def base_url():
    with serve("tests.agent_protocol_apps:app", env={"AGUI_DEMO_DELAY": "0"}) as url:
        yield url


async def _interrupted(thread) -> None:
    async with asyncio.timeout(20):
        while not thread.interrupted:
            await asyncio.sleep(0.05)


async def test_a_run_its_messages_tool_call_and_output(base_url):
    client = get_client(url=base_url, api_key=None)
    try:
        async with client.threads.stream(assistant_id="demo") as thread:
            await thread.run.start(input=ASK)
            async with asyncio.timeout(20):
                streams = [m async for m in thread.messages]
                texts = [await m.text for m in streams]
                out = await thread.output
            assert texts[0] == "Let me calculate 6 * 7." and texts[-1] == "6 * 7 = 42."
            calls = await streams[1].tool_calls
            assert calls[0]["name"] == "calculate"
            assert out["task"]["status"] == "completed"
            thread_id = thread.thread_id
        state = await client.threads.get_state(thread_id)
        assert state["messages"][-1]["content"] == "6 * 7 = 42."
    finally:
        await client.aclose()


async def test_an_interrupt_answered_through_commands(base_url):
    client = get_client(url=base_url, api_key=None)
    try:
        async with client.threads.stream(assistant_id="demo") as thread:
            await thread.run.start(input=APPROVE)
            await _interrupted(thread)
            (pending,) = thread.interrupts
            assert pending["value"]["message"] == "approve deleting the draft"
            await thread.run.respond("yes")
            async with asyncio.timeout(20):
                out = await thread.output
            assert out["task"]["status"] == "approved"
            assert not thread.interrupted
    finally:
        await client.aclose()


async def test_a_second_session_on_the_thread_waits_for_its_own_run(base_url):
    """A session opened on a thread whose last run ended reads the next run, not the old one."""
    client = get_client(url=base_url, api_key=None)
    try:
        async with client.threads.stream(assistant_id="slow") as thread:
            await thread.run.start(input={"messages": ["count 2"]})
            async with asyncio.timeout(20):
                await thread.output
            thread_id = thread.thread_id
        async with client.threads.stream(thread_id, assistant_id="slow") as thread:
            await thread.run.start(input={"messages": ["count 20"]})
            async with asyncio.timeout(20):
                await thread.output
        state = await client.threads.get_state(thread_id)
        assert state["messages"][-1]["content"].strip().endswith("tick 19")
    finally:
        await client.aclose()


def test_the_sync_client(base_url):
    client = get_sync_client(url=base_url, api_key=None)
    with client.threads.stream(assistant_id="demo") as thread:
        thread.run.start(input=APPROVE)
        for _ in range(400):
            if thread.interrupted:
                break
            time.sleep(0.05)
        assert thread.interrupted
        thread.run.respond("no")
        assert thread.output["task"]["status"] == "declined"


async def _read(http, thread_id: str, count: int | None, since: int | None = None) -> list[dict]:
    """The thread's events from ``since``: ``count`` of them, or up to the run's end."""
    body = {"channels": ALL}
    if since is not None:
        body["since"] = since
    out = []
    async with http.stream("POST", f"/threads/{thread_id}/stream/events", json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = orjson.loads(line[6:])
            out.append(event)
            if len(out) == count:
                break
            data = event["params"]["data"]
            if event["method"] == "lifecycle" and data["event"] in ("completed", "failed"):
                break
    return out


async def test_a_reconnect_with_since_loses_nothing_and_repeats_nothing(base_url):
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        thread_id = str(uuid.uuid4())
        start = {"assistant_id": "slow", "input": {"messages": ["count 30"]}}
        answer = await http.post(
            f"/threads/{thread_id}/commands", json={"id": 1, "method": "run.start", "params": start}
        )
        assert answer.status_code == 200 and answer.json()["type"] == "success"
        since = answer.json()["meta"]["applied_through_seq"]
        pieces = []
        while True:
            got = await _read(http, thread_id, 7, since)
            pieces.append(got)
            since = got[-1]["seq"]
            data = got[-1]["params"]["data"]
            if got[-1]["method"] == "lifecycle" and data["event"] == "completed":
                break
        whole = await _read(http, thread_id, None, answer.json()["meta"]["applied_through_seq"])
        resumed = [event for piece in pieces for event in piece]
        assert len(pieces) > 3
        assert [e["seq"] for e in resumed] == [e["seq"] for e in whole]
        assert [e["params"]["data"] for e in resumed] == [e["params"]["data"] for e in whole]
        assert len({e["event_id"] for e in resumed}) == len(resumed)
        deltas = [
            e["params"]["data"]["delta"]["text"]
            for e in resumed
            if e["method"] == "messages" and e["params"]["data"]["event"] == "content-block-delta"
        ]
        assert deltas == [f"tick {n} " for n in range(30)]


async def test_malformed_requests_are_422_json(base_url):
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        thread_id = str(uuid.uuid4())
        path = f"/threads/{thread_id}/stream/events"
        for body in (
            {},
            {"channels": []},
            {"channels": ["nonsense"]},
            {"channels": ["values"], "since": -1},
            {"channels": ["values"], "since": "7"},
            {"channels": ["values"], "namespaces": "x"},
        ):
            response = await http.post(path, json=body)
            assert response.status_code == 422, body
            assert response.json()["error"]["code"] == "invalid_request"
        commands = f"/threads/{thread_id}/commands"
        for body in ({}, {"id": -1, "method": "run.start"}, {"id": 1, "method": 3}):
            response = await http.post(commands, json=body)
            assert response.status_code == 422, body
        headers = {"content-type": "application/json"}
        response = await http.post(commands, content=b"{not json", headers=headers)
        assert response.status_code == 422
        response = await http.post(commands, json={"id": 4, "method": "run.start", "params": {}})
        assert response.status_code == 422
        assert response.json() == {
            "type": "error",
            "id": 4,
            "error": "invalid_argument",
            "message": "'assistant_id' must be the id of an agent",
        }
        response = await http.post(commands, json={"id": 5, "method": "run.fly", "params": {}})
        assert response.status_code == 422 and response.json()["error"] == "unknown_command"
        respond = {"interrupt_id": "nope", "namespace": [], "response": 1}
        response = await http.post(
            commands, json={"id": 6, "method": "input.respond", "params": respond}
        )
        assert response.status_code == 404


async def _websocket_refused(url: str) -> int:
    client = get_client(url=url, api_key=None)
    try:
        async with client.threads.stream(assistant_id="demo", transport="websocket") as thread:
            await thread.run.start(input=ASK)
            with pytest.raises(InvalidStatus) as refused:
                async with asyncio.timeout(20):
                    await thread.output
            return refused.value.response.status_code
    finally:
        await client.aclose()


async def test_a_websocket_is_refused_with_a_clear_4xx(base_url):
    """No WebSocket transport: the SDK's ``transport="websocket"`` gets a 4xx it does not
    retry, under ``agui-bridge serve`` (granian's WebSockets off) with what is served."""
    assert await _websocket_refused(base_url) == 405
    async with httpx.AsyncClient(base_url=base_url) as http:
        response = await http.get(f"/threads/{uuid.uuid4()}/stream/events")
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert response.json()["error"]["code"] == "websocket_not_served"
    assert "POST /threads/{id}/stream/events" in response.json()["error"]["message"]


@pytest.mark.parametrize("interface", ["rsgi", "asgi"])
async def test_a_websocket_is_refused_where_granian_takes_them(interface):
    env = {"AGUI_DEMO_DELAY": "0"}
    with serve(
        "tests.agent_protocol_apps:app", env=env, interface=interface, options=["--ws"]
    ) as url:
        assert await _websocket_refused(url) in (403, 405)


async def test_quick_runs_of_both_protocols_are_all_streamed(base_url):
    """Runs that start and end between two looks of an idle stream are each streamed,
    in order, and again from ``since`` (issue 22: nothing lost, nothing twice)."""
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        await check_no_run_lost(http, [http])
