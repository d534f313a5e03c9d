"""Message shapes between LangGraph and AG-UI, and the stream parts of a run's events."""

from __future__ import annotations

import pytest
from agui_bridge.agent_protocol.messages import MessageError, to_agui, to_langgraph
from agui_bridge.agent_protocol.stream import Projector, interrupts_of, values_of


def test_input_messages_in_every_shape():
    assert to_agui("hi", 0)["role"] == "user"
    human = to_agui({"type": "human", "content": "a", "id": "h1"}, 0)
    assert human == {"id": "h1", "role": "user", "content": "a"}
    ai = to_agui(
        {"role": "ai", "content": "", "tool_calls": [{"id": "c1", "name": "f", "args": {"x": 1}}]},
        1,
    )
    assert ai["toolCalls"] == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}}
    ]
    openai = to_agui(
        {
            "role": "assistant",
            "tool_calls": [{"id": "c2", "function": {"name": "g", "arguments": "{}"}}],
        },
        2,
    )
    assert openai["toolCalls"][0]["function"] == {"name": "g", "arguments": "{}"}
    tool = to_agui({"role": "tool", "content": "42", "tool_call_id": "c1"}, 3)
    assert tool["toolCallId"] == "c1" and tool["id"]  # an id-less input message gets one
    for bad in (
        {"content": "no role"},
        {"role": "robot"},
        {"role": "user", "id": 5},
        {"role": "user", "content": 5},
        {"role": "tool", "content": "x"},
        {"role": "ai", "tool_calls": [{"name": "f"}]},
        {"role": "ai", "tool_calls": [{"id": "c"}]},
        7,
    ):
        with pytest.raises(MessageError):
            to_agui(bad, 0)


def test_stored_messages_as_langgraph_serialises_them():
    ai = {
        "id": "m1",
        "role": "assistant",
        "content": "",
        "toolCalls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "[1"}},
        ],
    }
    out = to_langgraph(ai)
    assert out["type"] == "ai" and out["content"] == ""
    assert out["tool_calls"] == [{"name": "f", "id": "c1", "args": {"a": 1}, "type": "tool_call"}]
    assert out["invalid_tool_calls"] == [
        {"name": "g", "id": "c2", "args": "[1", "error": None, "type": "invalid_tool_call"}
    ]
    tool = to_langgraph({"id": "r1", "role": "tool", "toolCallId": "c1", "content": "x"})
    assert tool == {"type": "tool", "content": "x", "id": "r1", "tool_call_id": "c1"}
    assert to_langgraph({"id": "a1", "role": "activity", "content": {}}) is None


def test_values_keep_the_agents_state_and_its_own_messages_key():
    messages = [{"id": "u", "role": "user", "content": "hi"}]
    assert values_of({"k": 1}, messages) == {
        "k": 1,
        "messages": [{"type": "human", "content": "hi", "id": "u"}],
    }
    assert values_of({"messages": "mine"}, messages) == {"messages": "mine"}
    pending = [{"id": "i1", "reason": "approval", "responseSchema": {"type": "string"}}]
    assert interrupts_of(pending) == [
        {
            "id": "i1",
            "value": {"reason": "approval", "responseSchema": {"type": "string"}},
            "response_schema": {"type": "string"},
        }
    ]


def test_a_runs_events_as_stream_parts():
    modes = {"values", "updates", "messages-tuple", "custom"}
    p = Projector(modes, "bot", "t", "r", [{"id": "u", "role": "user", "content": "q"}], {})
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "he"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "y"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f", "parentMessageId": "m"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {"type": "TOOL_CALL_RESULT", "messageId": "res", "toolCallId": "c", "content": "1"},
        {"type": "CUSTOM", "name": "n", "value": [1]},
        {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}},
        {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1, "b": 2}},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    parts = [part for event in events for part in p.feed(event)]
    names = [name for name, _ in parts]
    assert names.count("values") == 6  # a text, a tool call, its result, two snapshots, the end
    updates = [data["bot"] for name, data in parts if name == "updates"]
    assert updates[0]["messages"][0]["content"] == "hey"
    assert updates[1]["messages"][0]["tool_calls"][0]["name"] == "f"
    assert updates[2]["messages"][0] == {
        "type": "tool",
        "content": "1",
        "id": "res",
        "tool_call_id": "c",
    }
    assert updates[3:] == [{"a": 1}, {"b": 2}]
    assert ("custom", {"name": "n", "value": [1]}) in parts
    final = parts[-1][1]
    assert [m["type"] for m in final["messages"]] == ["human", "ai", "tool"]
    assert final["a"] == 1 and final["b"] == 2
    chunks = [data[0] for name, data in parts if name == "messages"]
    assert [c.get("content") for c in chunks[:2]] == ["he", "y"]
    assert chunks[2]["tool_call_chunks"][0]["name"] == "f" and chunks[2]["id"] == "m"

    failed = Projector({"values"}, "bot", "t", "r2", [], {})
    assert failed.feed({"type": "RUN_ERROR", "message": "boom", "code": "E"}) == [
        ("error", {"error": "E", "message": "boom"})
    ]
