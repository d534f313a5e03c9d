"""The ``events`` stream mode's parts (``agent_protocol/lc_events.py``) as
``@ag-ui/langgraph`` reads them: its chat model stream holds one thing at a
time (a tool call chunk while a text is open ends the text, text while a call
is open ends the call), so the parts never give it a chunk it would misread,
however the run interleaves its messages and calls.
"""

from __future__ import annotations

from agui_bridge.agent_protocol.stream import Projector


def _parts(events):
    projector = Projector(("events",), "agent", "t1", "r1", [], {})
    out = []
    for event in events:
        out += [data for name, data in projector.feed(event) if name == "events"]
    return out


def _client_reads(parts) -> list[tuple]:
    """What @ag-ui/langgraph makes of the chat model parts (its messagesInProcess):
    fails on a chunk it would take for the end of what is open."""
    open_ = None
    made = []
    for part in parts:
        kind = part["event"]
        if kind == "on_chat_model_end":
            open_ = None
        elif kind == "on_chat_model_stream":
            chunk = part["data"]["chunk"]
            assert chunk["response_metadata"] == {}
            calls = chunk["tool_call_chunks"]
            if calls and calls[0]["name"]:
                assert open_ is None, f"a call starts while {open_} is open"
                open_ = ("call", calls[0]["id"])
                made.append(("call", calls[0]["id"], calls[0]["name"]))
            elif calls:
                assert open_ == ("call", calls[0]["id"]), "arguments outside their call"
                made.append(("args", calls[0]["id"], calls[0]["args"]))
            elif isinstance(chunk["content"], str) and chunk["content"]:
                assert open_ in (None, ("text", chunk["id"])), f"text while {open_} is open"
                open_ = ("text", chunk["id"])
                made.append(("text", chunk["id"], chunk["content"]))
        elif kind == "on_tool_end":
            made.append(("result", part["data"]["output"]["tool_call_id"]))
    return made


def test_interleaved_text_and_calls_reach_the_client_one_at_a_time():
    text = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1"}
    args = {"type": "TOOL_CALL_ARGS"}
    events = [
        {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {**text, "delta": "Let me "},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c1",
            "toolCallName": "a",
            "parentMessageId": "m1",
        },
        {**args, "toolCallId": "c1", "delta": '{"x":'},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c2",
            "toolCallName": "b",
            "parentMessageId": "m1",
        },
        {**args, "toolCallId": "c2", "delta": "{}"},
        {**text, "delta": "check."},
        {**args, "toolCallId": "c1", "delta": " 1}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TOOL_CALL_END", "toolCallId": "c2"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "TOOL_CALL_RESULT", "messageId": "t-1", "toolCallId": "c1", "content": "one"},
        {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
    ]
    parts = _parts(events)
    made = _client_reads(parts)
    assert made == [
        ("text", "m1", "Let me "),
        ("call", "c1", "a"),
        ("args", "c1", '{"x":'),
        ("call", "c2", "b"),  # c1 ended first: its later arguments come with the thread
        ("args", "c2", "{}"),
        ("text", "m1", "check."),
        ("result", "c1"),
    ]
    kinds = [p["event"] for p in parts]
    assert kinds[:2] == ["on_chain_start", "on_chain_start"]
    assert kinds[-2:] == ["on_chain_end", "on_chain_end"]
    tool_end = next(p for p in parts if p["event"] == "on_tool_end")
    assert tool_end["data"]["input"] == {"x": 1}  # the whole arguments, as streamed
    assert tool_end["name"] == "a"
    # The ids derive from the run's: the same run read again gives the same parts.
    assert _parts(events) == parts


def test_a_custom_event_and_reasoning():
    events = [
        {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
        {"type": "CUSTOM", "name": "progress", "value": {"done": 1}},
        {"type": "REASONING_START", "messageId": "r-1"},
        {"type": "REASONING_MESSAGE_START", "messageId": "r-1", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r-1", "delta": "hm"},
        {"type": "REASONING_MESSAGE_END", "messageId": "r-1"},
        {"type": "REASONING_END", "messageId": "r-1"},
        {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
    ]
    parts = _parts(events)
    custom = [p for p in parts if p["event"] == "on_custom_event"]
    assert [(p["name"], p["data"]) for p in custom] == [("progress", {"done": 1})]
    streams = [p["data"]["chunk"] for p in parts if p["event"] == "on_chat_model_stream"]
    (block,) = streams[0]["content"]
    assert block == {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "hm", "index": 0}],
        "id": "r-1",
        "index": 0,
    }
    assert streams[1]["content"] == "" and not streams[1]["tool_call_chunks"]  # its end
