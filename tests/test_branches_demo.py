"""On a branch, the rest works as on any thread (issue 20): an interrupt asked
on a new branch is resumed there, a retry replays its run, and a
result for a tool call of the branch reaches the agent. Against the demo."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.servers import serve


@pytest.fixture(scope="module")
def demo():
    env = {"AGUI_DEMO_STORE": "memory://", "AGUI_DEMO_DELAY": "0"}
    with serve("agui_bridge.demo:app", env=env) as base_url:
        yield base_url


def run(base_url: str, thread: str, run_id: str, messages, **extra) -> list[dict]:
    body = {"threadId": thread, "runId": run_id, "messages": messages, **extra}
    response = httpx.post(base_url + "/agui/demo", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return [json.loads(x[5:]) for x in response.text.splitlines() if x.startswith("data:")]


def shown(base_url: str, thread: str) -> list[dict]:
    """What a reloaded page shows (and resends)."""
    state = httpx.get(f"{base_url}/threads/{thread}/state", timeout=30).json()
    return [{k: v for k, v in m.items() if k != "metadata"} for m in state["messages"]]


def said(events) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def branches(base_url: str, thread: str) -> list[str]:
    listed = httpx.get(f"{base_url}/threads/{thread}/branches", timeout=30).json()
    return [b["branchId"] for b in listed["branches"]]


def test_interrupts_retries_and_tool_results_on_a_branch(demo):
    thread = f"demo-{uuid.uuid4().hex[:8]}"
    u1 = {"id": "u1", "role": "user", "content": "hello"}
    run(demo, thread, "r1", [u1])
    regenerated = run(demo, thread, "r2", [u1])  # a regenerate: a new branch after u1
    assert said(regenerated).startswith("You said: 'hello'. This is turn 1")
    assert branches(demo, thread) == ["1"] and len(shown(demo, thread)) == 2

    # An approval asked on the new branch ...
    ask = {"id": "u2", "role": "user", "content": "approve deleting the draft"}
    asked = run(demo, thread, "r3", [*shown(demo, thread), ask])
    [interrupt] = asked[-1]["outcome"]["interrupts"]
    # ... resumed there: no new branch, the answer follows the question.
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": "yes"}]
    page = shown(demo, thread)
    body = {"resume": resume, "protocolVersion": "1.0"}
    resumed = run(demo, thread, "r4", page, **body)
    assert said(resumed) == "Approved: approve deleting the draft. Done."
    after = shown(demo, thread)
    assert after[: len(page)] == page and len(after) == len(page) + 1
    assert branches(demo, thread) == ["1"]

    # A tool call of the branch; the same body again under its runId is a
    # retry (that run's stream, nothing stored, no branch) ...
    calc = {"id": "u3", "role": "user", "content": "what is 6 * 7?"}
    first = run(demo, thread, "r5", [*after, calc])
    page = shown(demo, thread)
    assert run(demo, thread, "r5", [*after, calc]) == first
    assert shown(demo, thread) == page and branches(demo, thread) == ["1"]
    # ... then a result for the call from the page.
    [call] = [c for m in page if m["role"] == "assistant" for c in m.get("toolCalls") or ()]
    result = {"id": "t-page", "role": "tool", "toolCallId": call["id"], "content": "42 (page)"}
    answered = run(demo, thread, "r6", [*page, result])
    assert said(answered) == "Thanks, the frontend tool answered: 42 (page)"
    assert shown(demo, thread)[: len(page) + 1] == [*page, result]
    assert branches(demo, thread) == ["1"]
