"""The demo app and the CLI: `agui-bridge demo` answers the README's first request."""

from __future__ import annotations

import sys

import httpx
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui
from agui_bridge.demo import CalcError, calculate, find_expression

from tests.ingress_apps import messages_from_events, parse_sse, run_body
from tests.servers import serve, spawn


def test_the_calculator_is_safe():
    assert calculate("2 * (3 + 4)") == 14
    assert calculate("-7 // 2") == -4
    assert calculate("2 ** 10") == 1024
    for bad in [
        '__import__("os").system("true")',
        "a + 1",
        "1 / 0",
        "9 ** 9 ** 9",
        "(10 ** 6) ** 60",
        "[1] * 3",
        "1e308 * 10",
    ]:
        with pytest.raises(CalcError):
            calculate(bad)
    assert find_expression("what is 6 * 7?") == "6 * 7"
    assert find_expression("hello there") is None


def post(base_url, body) -> list[dict]:
    response = httpx.post(base_url + "/ag-ui/run", json=body, timeout=20)
    assert response.status_code == 200, response.text
    events, _ = parse_sse(response.text)
    assert_valid_agui(events)
    return events


def text(events) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def test_demo_turns_tool_state_step_and_approval():
    env = {"AGUI_DEMO_STORE": "memory://", "AGUI_DEMO_DELAY": "0"}
    with serve("agui_bridge.demo:app", env=env) as base_url:
        conversation = [{"id": "u1", "role": "user", "content": "hello there"}]
        events = post(base_url, run_body("demo-1", conversation))
        assert "You said: 'hello there'" in text(events)
        types = {e["type"] for e in events}
        assert {"STEP_STARTED", "STEP_FINISHED", "STATE_SNAPSHOT"} <= types
        conversation += messages_from_events(events)

        conversation.append({"id": "u2", "role": "user", "content": "what is 6 * (3 + 4)?"})
        events = post(base_url, run_body("demo-1", conversation))
        args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
        assert args == '{"expression": "6 * (3 + 4)"}'
        assert len([e for e in events if e["type"] == "TOOL_CALL_ARGS"]) > 1  # streamed
        result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
        assert result["content"] == '{"expression":"6 * (3 + 4)","value":42}'
        assert "6 * (3 + 4) = 42." in text(events)
        conversation += messages_from_events(events)

        conversation.append({"id": "u3", "role": "user", "content": "approve deleting the draft"})
        events = post(base_url, run_body("demo-1", conversation))
        interrupt = events[-1]["outcome"]["interrupts"][0]
        assert interrupt["reason"] == "approval"
        assert interrupt["message"] == "approve deleting the draft"
        conversation += messages_from_events(events)

        resume = {"command": {"resume": {"decision": "yes", "interruptId": interrupt["id"]}}}
        events = post(base_url, run_body("demo-1", conversation, forwardedProps=resume))
        assert text(events) == "Approved: approve deleting the draft. Done."
        state = httpx.get(base_url + "/threads/demo-1/state").json()
        assert state["values"]["task"]["status"] == "approved"
        assert state["values"]["loop"]["iteration"] == 4
        assert [m["role"] for m in state["messages"]].count("user") == 3


def test_demo_reasoning_a_long_answer_and_attachments():
    """`think about ...` streams reasoning before the answer (stored as a reasoning
    message); `count to N` streams a long answer (time to press Stop); the answer
    names what the user attached."""
    env = {"AGUI_DEMO_STORE": "memory://", "AGUI_DEMO_DELAY": "0"}
    with serve("agui_bridge.demo:app", env=env) as base_url:
        conversation = [{"id": "u1", "role": "user", "content": "think about tea"}]
        events = post(base_url, run_body("demo-2", conversation))
        reasoning = "".join(e["delta"] for e in events if e["type"] == "REASONING_MESSAGE_CONTENT")
        assert reasoning == "The user wants me to think about tea."
        assert text(events) == "I thought about tea."
        types = [e["type"] for e in events]
        assert types.index("REASONING_END") < types.index("TEXT_MESSAGE_START")
        state = httpx.get(base_url + "/threads/demo-2/state").json()
        assert [(m["role"], m["content"]) for m in state["messages"]] == [
            ("user", "think about tea"),
            ("reasoning", "The user wants me to think about tea."),
            ("assistant", "I thought about tea."),
        ]

        events = post(
            base_url, run_body("demo-3", [{"id": "u1", "role": "user", "content": "count to 12"}])
        )
        assert text(events) == " ".join(str(n) for n in range(1, 13)) + "."
        assert len([e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]) == 12

        dot = {"type": "data", "value": "iVBORw0KGgo=", "mimeType": "image/png"}
        content = [
            {"type": "text", "text": "look"},
            {"type": "image", "source": dot, "metadata": {"filename": "dot.png"}},
        ]
        events = post(
            base_url, run_body("demo-4", [{"id": "u1", "role": "user", "content": content}])
        )
        assert text(events).startswith("You said: 'look'. I got image dot.png. This is turn 1")


@pytest.mark.parametrize("command", ["demo", "serve"])
def test_cli_serves_on_sqlite_under_dot_agui(tmp_path, command):
    args = ["demo"] if command == "demo" else ["serve", "agui_bridge.demo:app", "--workers", "1"]
    with spawn(
        [sys.executable, "-m", "agui_bridge.cli", *args, "--port", "{port}"],
        {"AGUI_DEMO_DELAY": "0"},
        cwd=tmp_path,
        ready="/",
    ) as server:
        events = post(server.base_url, run_body("cli-1", "hi"))
        assert "You said: 'hi'" in text(events)
        assert (tmp_path / ".agui" / "threads.sqlite").exists()
