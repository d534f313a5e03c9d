"""Contract section 8 behind App: what the client declared (RunAgentInput's
protocolVersion) is kept on the run. A 1.0 client gets the server's version on
RUN_STARTED, the run's token usage on the terminal event and the cancelled
outcome for a stop (the cancel route, on_disconnect="cancel"); a 0.0.x client
(no protocolVersion) gets none of them."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui

from tests.ingress_apps import parse_sse, run_body
from tests.servers import serve
from tests.test_ingress_http import MARKS, text_of, thread
from tests.test_ingress_transport import eventually, read_first_frame_and_leave
from tests.test_run_streams import wait_mark

V1 = {"protocolVersion": "1.0"}
V1_READER = {"agui-protocol-version": "1.0"}
USAGE = [{"model": "m-u", "inputTokens": 5, "outputTokens": 2, "totalTokens": 7}]


def env(on_disconnect: str = "continue") -> dict:
    return {"AGUI_TEST_MARKS": str(MARKS), "AGUI_TEST_ON_DISCONNECT": on_disconnect}


@pytest.fixture(scope="module")
def base_url():
    with serve("tests.ingress_apps:app", env=env()) as url:
        yield url


@pytest.fixture(scope="module")
def cancel_url():
    with serve("tests.ingress_apps:app", env=env("cancel")) as url:
        yield url


def test_a_1_0_client_gets_the_version_and_the_usage(base_url):
    tid = thread("v1")
    response = httpx.post(base_url + "/ag-ui/run", json=run_body(tid, "usage", **V1), timeout=20)
    events, _ = parse_sse(response.text)
    assert_valid_agui(events)
    assert events[0] == {
        "type": "RUN_STARTED",
        "threadId": tid,
        "runId": events[0]["runId"],
        "protocolVersion": "1.0",
    }
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["usage"] == USAGE


def test_a_0_0_x_client_gets_neither(base_url):
    response = httpx.post(base_url + "/ag-ui/run", json=run_body(thread("v0"), "usage"), timeout=20)
    assert '"protocolVersion"' not in response.text
    assert '"usage":[' not in response.text
    events, _ = parse_sse(response.text)
    assert list(events[-1]) == ["type", "threadId", "runId"]


def test_a_bad_protocol_version_is_a_400(base_url):
    body = run_body(thread("bad"), "hi", protocolVersion=1)
    response = httpx.post(base_url + "/ag-ui/run", json=body, timeout=20)
    assert response.status_code == 400
    assert "protocolVersion" in response.json()["error"]["message"]


async def test_the_cancel_route_gives_a_1_0_client_the_cancelled_outcome(base_url):
    tid, rid = thread("stop1"), f"stop1-{time.monotonic_ns()}"
    async with httpx.AsyncClient(base_url=base_url, timeout=20) as http:
        body = run_body(tid, "slow 40", run_id=rid, **V1)
        started = asyncio.ensure_future(http.post("/ag-ui/run", json=body))
        assert await wait_mark(f"started-{rid}")
        await asyncio.sleep(0.3)
        cancel = await http.post(f"/threads/{tid}/runs/{rid}/cancel")
        assert cancel.status_code == 202, cancel.text
        events, _ = parse_sse((await started).text)
        assert_valid_agui(events)
        assert [e["type"] for e in events[-2:]] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
        assert events[-1]["outcome"] == {"type": "cancelled"}
        # The partial answer is stored, as for any stop.
        stored = (await http.get(f"/threads/{tid}/state")).json()["messages"]
        assert stored[-1]["content"] == text_of(events)


async def test_a_client_that_left_ends_a_1_0_run_as_cancelled(cancel_url):
    tid, rid = thread("left1"), f"left1-{time.monotonic_ns()}"
    await read_first_frame_and_leave(cancel_url, run_body(tid, "slow 30", run_id=rid, **V1))
    assert await wait_mark(f"started-{rid}")

    def ended():
        response = httpx.get(f"{cancel_url}/threads/{tid}/runs/{rid}/events", timeout=20)
        return response.status_code == 200 and "RUN_FINISHED" in response.text

    assert await eventually(ended)
    # A 1.0 reader (one that declares none reads 0.0.x shapes: test_reader_version).
    replay = httpx.get(
        f"{cancel_url}/threads/{tid}/runs/{rid}/events", headers=V1_READER, timeout=20
    ).text
    events, _ = parse_sse(replay)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["outcome"] == {"type": "cancelled"}
