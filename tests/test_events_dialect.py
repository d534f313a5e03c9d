"""The events dialect behind ``App``, with a real AG-UI producer: ag-ui-langgraph.

ag-ui-langgraph's own stream carries what the events dialect exists for: a
MESSAGES_SNAPSHOT and graph-state snapshots, ids chosen by the model, tool
results under their own message ids. Behind ``App`` the response must pass
ag-ui-validate and the real ``@ag-ui/client`` (1.0.0 and 0.0.58), and the
thread's stored history must be the conversation the client shows.
"""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from tests.test_interop import CLIENT_VERSIONS, node, run_client, serve_rsgi  # noqa: F401

TARGET = "tests.events_apps:make_app"


@pytest.fixture(scope="module")
def events_url():
    with serve_rsgi(TARGET, extra=["--factory"], timeout=60.0) as url:
        yield url


def sse_events(body: str) -> list[dict]:
    return [json.loads(line[6:]) for line in body.split("\n") if line.startswith("data: ")]


def post(url: str, thread: str, text: str) -> list[dict]:
    body = {
        "threadId": thread,
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "messages": [{"id": f"u-{uuid.uuid4().hex[:8]}", "role": "user", "content": text}],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    response = httpx.post(f"{url}/agui/langgraph", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return sse_events(response.text)


def test_langgraph_stream_is_valid_and_stored(events_url):
    thread = f"lg-{uuid.uuid4().hex[:8]}"
    events = post(events_url, thread, "add 2 and 1")
    report = validate_agui(events)
    bad = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    assert not bad, [(d.rule, d.message) for d in bad]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert events[0]["threadId"] == thread
    # The bridge owns the thread's history: the agent's snapshot of it is not sent.
    assert "MESSAGES_SNAPSHOT" not in kinds and "RAW" not in kinds
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert (start["toolCallId"], start["toolCallName"]) == ("call-1", "add")
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"a": 2, "b": 1}
    [result] = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == "3"
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "2 plus 1 is 3."

    stored = httpx.get(f"{events_url}/threads/{thread}/state", timeout=10).json()["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    call = stored[1]["toolCalls"][0]
    assert call["id"] == "call-1" and json.loads(call["function"]["arguments"]) == {"a": 2, "b": 1}
    assert stored[2]["toolCallId"] == "call-1" and stored[2]["content"] == "3"
    assert stored[3]["content"] == "2 plus 1 is 3."


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_langgraph_behind_app_passes_the_real_client(node, events_url, tmp_path, version):  # noqa: F811
    thread = f"lg-{uuid.uuid4().hex[:8]}"
    scenario = {
        "threadId": thread,
        "initialMessages": [{"id": f"u-{uuid.uuid4().hex[:8]}", "role": "user", "content": "add"}],
        "runs": [{}],
    }
    out = run_client(node, version, f"{events_url}/agui/langgraph", scenario, tmp_path)
    shown = out["messages"]
    assert [m["role"] for m in shown] == ["user", "assistant", "tool", "assistant"]
    stored = httpx.get(f"{events_url}/threads/{thread}/state", timeout=10).json()["messages"]
    assert [(m["id"], m["role"]) for m in stored] == [(m["id"], m["role"]) for m in shown]
    assert [m.get("content") for m in stored] == [m.get("content") for m in shown]
    calls = [[c["id"] for c in m.get("toolCalls", [])] for m in stored]
    assert calls == [[c["id"] for c in m.get("toolCalls", [])] for m in shown]
