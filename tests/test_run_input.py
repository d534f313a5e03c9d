"""map_run_input (contract section 4, issue 3): the bodies real clients send, and every reject."""

from __future__ import annotations

import dataclasses
import json

import pytest
from agui_bridge import Resume, RunInput, RunInputError, map_run_input

HISTORY = [
    {"id": "s1", "role": "system", "content": "Be brief."},
    {"id": "u1", "role": "user", "content": "What is 2+2?"},
    {
        "id": "a1",
        "role": "assistant",
        "content": "Let me compute.",
        "toolCalls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a":2,"b":2}'},
            }
        ],
    },
    {"id": "t1", "role": "tool", "content": "4", "toolCallId": "c1"},
    {"id": "a2", "role": "assistant", "content": "4."},
]
NEWEST = {"id": "u2", "role": "user", "content": "And 3+3?"}


def client_0058_body(**overrides):
    """What @ag-ui/client 0.0.58 HttpAgent posts (agui-protocol.md section 1)."""
    body = {
        "threadId": "thread-1",
        "runId": "0b6c8a8e-6f65-4b43-9d7c-2f3f3c1b5b11",
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "state": {},
        "messages": [*HISTORY, NEWEST],
    }
    body.update(overrides)
    return body


def client_100_body(**overrides):
    """@ag-ui/client 1.0.0 adds protocolVersion, and resume when given."""
    return client_0058_body(protocolVersion="1.0", **overrides)


def test_client_0058_body():
    body = client_0058_body()
    run = map_run_input(body)
    assert isinstance(run, RunInput)
    assert run.thread_id == "thread-1"
    assert run.run_id == "0b6c8a8e-6f65-4b43-9d7c-2f3f3c1b5b11"
    assert run.input == "And 3+3?"
    assert run.history == HISTORY
    assert run.messages == [*HISTORY, NEWEST]
    assert run.state == {}
    assert run.tools == []
    assert run.context == []
    assert run.forwarded_props == {}
    assert run.resume is None


def test_client_100_body():
    run = map_run_input(client_100_body())
    assert (run.thread_id, run.input, run.resume) == ("thread-1", "And 3+3?", None)
    assert run.history == HISTORY


def test_the_body_survives_json_round_trip():
    body = json.loads(json.dumps(client_100_body()))
    assert map_run_input(body).input == "And 3+3?"


def test_tools_context_state_forwarded_props_are_passed_through():
    tools = [{"name": "add", "description": "adds", "parameters": {"type": "object"}}]
    context = [{"description": "tz", "value": "UTC"}]
    state = {"count": 3, "nested": {"a": [1]}}
    props = {"model": "small", "command": {"other": 1}}
    run = map_run_input(
        client_0058_body(tools=tools, context=context, state=state, forwardedProps=props)
    )
    assert run.tools == tools
    assert run.context == context
    assert run.state == state
    assert run.forwarded_props == props
    assert run.resume is None


def test_ag_ui_validate_probe_body():
    """The body `ag-ui-validate <URL>` posts (agui-protocol.md section 8)."""
    body = {
        "threadId": "thread_1a2b3c4d",
        "runId": "run_5e6f7a8b",
        "state": {},
        "messages": [{"id": "m1", "role": "user", "content": "Hello! Please respond briefly."}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    run = map_run_input(body)
    assert run.input == "Hello! Please respond briefly."
    assert run.history == []


def test_python_sdk_run_agent_input_dump():
    """A body built with ag_ui.core.RunAgentInput and dumped to the wire form."""
    from ag_ui.core import RunAgentInput, UserMessage

    model = RunAgentInput(
        thread_id="th",
        run_id="ru",
        state=None,
        messages=[UserMessage(id="u", role="user", content="hi there")],
        tools=[],
        context=[],
        forwarded_props={},
    )
    body = json.loads(model.model_dump_json(by_alias=True))
    run = map_run_input(body)
    assert (run.thread_id, run.run_id, run.input) == ("th", "ru", "hi there")


# ---- lenient ----


def test_unknown_keys_are_fine():
    run = map_run_input(
        client_0058_body(parentRunId="p", somethingNew={"x": 1}, protocolVersion="9.9")
    )
    assert run.input == "And 3+3?"


def test_missing_tools_context_forwarded_props_and_state():
    body = {"threadId": "t", "runId": "r", "messages": [NEWEST]}
    run = map_run_input(body)
    assert run.tools == []
    assert run.context == []
    assert run.forwarded_props is None
    assert run.state is None
    assert run.resume is None


def test_null_state_tools_context():
    run = map_run_input(client_0058_body(state=None, tools=None, context=None, forwardedProps=None))
    assert run.state is None
    assert run.tools == []
    assert run.context == []


@pytest.mark.parametrize("body_update", [{}, {"runId": None}, {"runId": ""}])
def test_run_id_generated_when_missing(body_update):
    body = {"threadId": "t", "messages": [NEWEST], **body_update}
    first = map_run_input(body).run_id
    second = map_run_input(body).run_id
    assert isinstance(first, str) and first
    assert first != second


def test_text_parts_are_joined_with_newlines():
    content = [
        {"type": "text", "text": "first"},
        {"type": "text", "text": ""},
        {"type": "text", "text": "third"},
    ]
    run = map_run_input(
        client_0058_body(messages=[{"id": "u", "role": "user", "content": content}])
    )
    assert run.input == "first\n\nthird"


def test_single_text_part():
    content = [{"type": "text", "text": "only"}]
    run = map_run_input(
        client_0058_body(messages=[{"id": "u", "role": "user", "content": content}])
    )
    assert run.input == "only"


def test_empty_string_content_is_a_string():
    run = map_run_input(client_0058_body(messages=[{"id": "u", "role": "user", "content": ""}]))
    assert run.input == ""


def test_newest_user_message_wins_and_later_messages_are_not_history():
    messages = [
        {"id": "u1", "role": "user", "content": "old"},
        {"id": "a1", "role": "assistant", "content": "reply"},
        {"id": "u2", "role": "user", "content": "new"},
        {"id": "a2", "role": "assistant", "toolCalls": []},
    ]
    run = map_run_input(client_0058_body(messages=messages))
    assert run.input == "new"
    assert run.history == messages[:2]
    assert run.messages == messages


def test_earlier_user_messages_of_any_shape_are_history():
    image = [{"type": "image", "source": {"type": "url", "value": "https://x/y.png"}}]
    messages = [{"id": "u1", "role": "user", "content": image}, NEWEST]
    run = map_run_input(client_0058_body(messages=messages))
    assert run.input == "And 3+3?"
    assert run.history == messages[:1]


def test_run_input_and_resume_are_frozen():
    run = map_run_input(client_0058_body())
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.input = "x"  # type: ignore[misc]
    resume = Resume(decision="ok")
    with pytest.raises(dataclasses.FrozenInstanceError):
        resume.decision = "no"  # type: ignore[misc]


# ---- resume ----

ENTRIES = [
    {"interruptId": "i1", "status": "resolved", "payload": {"approved": True}},
    {"interruptId": "i2", "status": "cancelled"},
]


def test_resume_from_1_0_entries():
    run = map_run_input(client_100_body(resume=ENTRIES))
    assert isinstance(run.resume, Resume)
    assert list(run.resume.entries) == ENTRIES
    assert run.resume.decision is None
    assert run.resume.interrupt_id is None


def test_resume_from_command_bare_string():
    props = {"command": {"resume": "approve"}}
    run = map_run_input(client_0058_body(forwardedProps=props))
    assert run.resume == Resume(entries=(), decision="approve", interrupt_id=None)
    assert run.forwarded_props == props


def test_resume_from_command_object():
    props = {"command": {"resume": {"decision": "reject", "interruptId": "i9"}}}
    run = map_run_input(client_0058_body(forwardedProps=props))
    assert run.resume.decision == "reject"
    assert run.resume.interrupt_id == "i9"
    assert list(run.resume.entries) == []


def test_resume_from_command_object_without_interrupt_id():
    props = {"command": {"resume": {"decision": {"edited": "text"}}}}
    run = map_run_input(client_0058_body(forwardedProps=props))
    assert run.resume.decision == {"edited": "text"}
    assert run.resume.interrupt_id is None


def test_entries_win_when_both_forms_are_sent():
    props = {"command": {"resume": {"decision": "reject", "interruptId": "i1"}}}
    run = map_run_input(client_100_body(resume=ENTRIES, forwardedProps=props))
    assert list(run.resume.entries) == ENTRIES
    assert run.resume.decision is None
    assert run.resume.interrupt_id is None


def test_entries_win_over_a_malformed_command_resume():
    props = {"command": {"resume": 42}}
    run = map_run_input(client_100_body(resume=ENTRIES, forwardedProps=props))
    assert list(run.resume.entries) == ENTRIES
    with pytest.raises(RunInputError, match=r"forwardedProps\.command\.resume"):
        map_run_input(client_100_body(forwardedProps=props))


def test_no_resume_when_command_has_none():
    for props in ({"command": {}}, {"command": None}, {"command": {"resume": None}}, "x", []):
        assert map_run_input(client_0058_body(forwardedProps=props)).resume is None


# ---- rejects ----


def rejects(body, *words):
    with pytest.raises(RunInputError) as caught:
        map_run_input(body)
    error = caught.value
    assert isinstance(error, ValueError)
    message = str(error)
    assert message, "a 400 body needs a message"
    for word in words:
        assert word in message, (word, message)
    return message


@pytest.mark.parametrize("body", [None, [], "{}", 5, b"{}", ("threadId",)])
def test_rejects_a_body_that_is_not_an_object(body):
    rejects(body)


@pytest.mark.parametrize("thread_id", [pytest.param(None, id="missing"), "", 5, ["t"], {"id": "t"}])
def test_rejects_bad_thread_id(thread_id):
    body = client_0058_body()
    if thread_id is None:
        del body["threadId"]
    else:
        body["threadId"] = thread_id
    rejects(body, "threadId")


@pytest.mark.parametrize("messages", [pytest.param(None, id="missing"), [], "hi", {"0": NEWEST}])
def test_rejects_bad_messages(messages):
    body = client_0058_body()
    if messages is None:
        del body["messages"]
    else:
        body["messages"] = messages
    rejects(body, "messages")


@pytest.mark.parametrize(
    "message",
    [
        "hello",
        None,
        ["user", "hi"],
        {"id": "m", "content": "no role"},
        {"id": "m", "role": 5, "content": "x"},
        {"id": "m", "role": None, "content": "x"},
    ],
)
def test_rejects_a_message_without_a_string_role(message):
    rejects(client_0058_body(messages=[NEWEST, message]), "role")


def test_rejects_no_user_message():
    rejects(client_0058_body(messages=[HISTORY[0], HISTORY[2], HISTORY[4]]), "user")


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(None, id="None"),
        pytest.param(5, id="int"),
        pytest.param({"type": "text", "text": "x"}, id="object"),
        pytest.param([], id="empty-list"),
        pytest.param([{"type": "image", "source": {"type": "url", "value": "u"}}], id="image"),
        pytest.param(
            [{"type": "text", "text": "a"}, {"type": "binary", "mimeType": "x"}], id="mix"
        ),
        pytest.param([{"type": "text"}], id="text-missing"),
        pytest.param([{"type": "text", "text": 5}], id="text-int"),
        pytest.param(["plain"], id="bare-str-part"),
    ],
)
def test_rejects_newest_user_content_of_another_shape(content):
    messages = [*HISTORY, {"id": "u", "role": "user", "content": content}]
    rejects(client_0058_body(messages=messages), "user")


def test_rejects_a_user_message_without_content():
    rejects(client_0058_body(messages=[{"id": "u", "role": "user"}]), "user")


@pytest.mark.parametrize(
    "resume",
    [
        "yes",
        {"interruptId": "i1", "status": "resolved"},
        [5],
        [{"status": "resolved"}],
        [{"interruptId": 5, "status": "resolved"}],
        [{"interruptId": "i1", "status": "maybe"}],
    ],
)
def test_rejects_1_0_resume_of_another_shape(resume):
    rejects(client_100_body(resume=resume), "resume")


@pytest.mark.parametrize(
    "command_resume",
    [5, True, ["approve"], {"interruptId": "i1"}, {"decision": "ok", "interruptId": 5}],
)
def test_rejects_command_resume_of_another_shape(command_resume):
    props = {"command": {"resume": command_resume}}
    rejects(client_0058_body(forwardedProps=props), "resume")


@pytest.mark.parametrize("key", ["tools", "context"])
def test_rejects_tools_or_context_that_are_not_lists(key):
    rejects(client_0058_body(**{key: {"name": "x"}}), key)


def test_error_messages_are_json_safe_for_a_400_body():
    with pytest.raises(RunInputError) as caught:
        map_run_input({"messages": [NEWEST]})
    assert json.loads(json.dumps({"error": str(caught.value)}))["error"] == str(caught.value)


def test_nesting_up_to_max_depth_and_no_deeper():
    from agui_bridge.run_input import MAX_DEPTH

    def state(levels):  # the body, "state" and levels - 2 more objects
        value = {}
        for _ in range(levels - 2):
            value = {"k": value}
        return value

    assert map_run_input(client_0058_body(state=state(MAX_DEPTH))).state is not None
    rejects(client_0058_body(state=state(MAX_DEPTH + 1)), "nested deeper")
    lists = [[]]
    for _ in range(MAX_DEPTH - 1):
        lists = [lists]
    rejects(client_0058_body(context=lists), "nested deeper")


@pytest.mark.parametrize("tool_calls", [1.5, -1, True, {"id": "c"}, ["c"], [{"id": ["c"]}], [{}]])
def test_rejects_tool_calls_of_another_shape(tool_calls):
    message = {"id": "a", "role": "assistant", "content": "", "toolCalls": tool_calls}
    rejects(client_0058_body(messages=[message, NEWEST]), "toolCalls")


@pytest.mark.parametrize("call_id", [None, 3, ["c1"], {"id": "c1"}])
def test_rejects_a_tool_message_without_a_string_tool_call_id(call_id):
    message = {"id": "t", "role": "tool", "content": "4", "toolCallId": call_id}
    rejects(client_0058_body(messages=[NEWEST, message]), "toolCallId")


@pytest.mark.parametrize("message_id", [3, [], {"a": 1}, True])
def test_rejects_a_message_id_that_is_not_a_string(message_id):
    message = {"id": message_id, "role": "assistant", "content": "x"}
    rejects(client_0058_body(messages=[message, NEWEST]), "id")
