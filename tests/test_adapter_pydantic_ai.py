"""agui_bridge.adapters.pydantic_ai: a pydantic-ai Agent on its own FunctionModel,
behind the App in process. Every stream passes ag-ui-validate."""

from __future__ import annotations

import json

import pytest

from tests.adapter_apps import register_pydantic
from tests.adapter_testing import PICK_CITY, app_client, of, run_on, said, state_of, thread
from tests.ingress_apps import run_body


@pytest.fixture
async def client():
    async with app_client(register_pydantic) as http:
        yield http


async def run(http, body) -> list[dict]:
    return await run_on(http, "/agui/pydantic", body)


async def test_text_streams(client):
    events = await run(client, run_body(thread("text"), "hi"))
    assert said(events) == "Hello from pydantic-ai; 1 parts; you said hi "
    assert len(of(events, "TEXT_MESSAGE_CONTENT")) == 8
    assert events[-1]["type"] == "RUN_FINISHED" and "result" not in events[-1]


async def test_thinking_streams_as_reasoning_with_its_signature(client):
    """Contract section 8: a ThinkingPart is a reasoning message, its signature
    the message's encrypted value, stored with the thread."""
    tid = thread("think")
    events = await run(client, run_body(tid, "think first"))
    assert said(events) == "Answer."
    thoughts = of(events, "REASONING_MESSAGE_CONTENT")
    assert "".join(e["delta"] for e in thoughts) == "Weighing it."
    [signature] = of(events, "REASONING_ENCRYPTED_VALUE")
    assert signature["encryptedValue"] == "sig-abc"
    assert signature["entityId"] == thoughts[0]["messageId"]
    assert signature["entityId"].endswith(":think")
    state = (await client.get(f"/threads/{tid}/state")).json()
    reasoning = [m for m in state["messages"] if m["role"] == "reasoning"]
    assert reasoning == [
        {
            "id": signature["entityId"],
            "role": "reasoning",
            "content": "Weighing it.",
            "encryptedValue": "sig-abc",
        }
    ]


async def test_a_1_0_client_gets_the_model_usage(client):
    """Contract section 8: each model response's usage, summed per model."""
    events = await run(client, run_body(thread("usage"), "please add", protocolVersion="1.0"))
    [usage] = events[-1]["usage"]
    assert usage["model"].startswith("function:")
    assert usage["inputTokens"] > 0 and usage["outputTokens"] > 0
    plain = await run(client, run_body(thread("usage0"), "please add"))
    assert "usage" not in plain[-1]


async def test_tool_call_streams_runs_and_history_reloads(client):
    tid = thread("tool")
    events = await run(client, run_body(tid, "please add"))
    [start] = of(events, "TOOL_CALL_START")
    assert start["toolCallName"] == "add"
    args = [a["delta"] for a in of(events, "TOOL_CALL_ARGS")]
    assert args == ['{"a": 2,', ' "b": 3}']
    [result] = of(events, "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == (start["toolCallId"], "5.0")
    assert said(events) == "Adding.Results: 5.0"
    state = (await client.get(f"/threads/{tid}/state")).json()
    roles = [m["role"] for m in state["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    # The next turn reloads all of it into pydantic-ai's history.
    message = {"id": "u2", "role": "user", "content": "and now?"}
    events = await run(client, run_body(tid, [*state["messages"], message]))
    # user, text + call, tool return, text, user
    assert said(events) == "Hello from pydantic-ai; 6 parts; you said and now? "


async def test_frontend_tool_ends_the_run_and_the_next_run_continues(client):
    tid = thread("frontend")
    events = await run(client, run_body(tid, "which city", tools=[PICK_CITY]))
    [start] = of(events, "TOOL_CALL_START")
    assert start["toolCallName"] == "pick_city"
    assert not of(events, "TOOL_CALL_RESULT")
    assert events[-1]["type"] == "RUN_FINISHED"
    args = "".join(a["delta"] for a in of(events, "TOOL_CALL_ARGS"))
    assert json.loads(args) == {"options": ["Oslo", "Lima"]}
    state = (await client.get(f"/threads/{tid}/state")).json()
    answer = {"id": "t1", "role": "tool", "toolCallId": start["toolCallId"], "content": "Lima"}
    events = await run(client, run_body(tid, [*state["messages"], answer], tools=[PICK_CITY]))
    assert said(events) == "Results: Lima"
    assert events[-1]["type"] == "RUN_FINISHED"


async def test_a_deferred_tool_of_the_agent_is_a_frontend_tool(client):
    tid = thread("deferred")
    events = await run(client, run_body(tid, "ask them"))
    [start] = of(events, "TOOL_CALL_START")
    assert start["toolCallName"] == "ask_user"
    assert not of(events, "TOOL_CALL_RESULT")
    assert events[-1]["type"] == "RUN_FINISHED" and "result" not in events[-1]
    state = (await client.get(f"/threads/{tid}/state")).json()
    answer = {"id": "t1", "role": "tool", "toolCallId": start["toolCallId"], "content": "because"}
    events = await run(client, run_body(tid, [*state["messages"], answer]))
    assert said(events) == "Results: because"


async def test_a_retried_tool_shows_what_the_model_was_told(client):
    events = await run(client, run_body(thread("retry"), "retry"))
    [result] = of(events, "TOOL_CALL_RESULT")
    assert result["content"] == '{"error":"not like that"}'
    assert said(events) == 'Results: {"error":"not like that"}'
    assert events[-1]["type"] == "RUN_FINISHED"


async def test_model_error_is_a_coded_run_error(client):
    events = await run(client, run_body(thread("crash"), "crash"))
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "RuntimeError"
    assert said(events) == "Starting"


def approval_of(events) -> dict:
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    [interrupt] = events[-1]["outcome"]["interrupts"]
    return interrupt


async def test_an_approval_tool_suspends_the_run_with_an_interrupt(client):
    tid = thread("approve")
    events = await run(client, run_body(tid, "delete the draft"))
    assert said(events) == "Deleting."
    interrupt = approval_of(events)
    assert interrupt["reason"] == "tool_approval"
    assert interrupt["message"] == 'approve delete_file({"path":"draft.txt"})'
    assert interrupt["metadata"] == {"toolName": "delete_file", "args": {"path": "draft.txt"}}
    assert interrupt["responseSchema"]["required"] == ["approved"]
    # The call is announced when it runs, after the approval, not before.
    assert not of(events, "TOOL_CALL_START") and not of(events, "RUN_ERROR")


async def test_an_approved_call_runs_on_resume_and_the_thread_keeps_it(client):
    tid = thread("approved")
    interrupt = approval_of(await run(client, run_body(tid, "delete the draft")))
    state = (await client.get(f"/threads/{tid}/state")).json()
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    events = await run(client, run_body(tid, state["messages"], resume=resume))
    [start] = of(events, "TOOL_CALL_START")
    assert (start["toolCallId"], start["toolCallName"]) == (interrupt["toolCallId"], "delete_file")
    assert json.loads("".join(a["delta"] for a in of(events, "TOOL_CALL_ARGS"))) == {
        "path": "draft.txt"
    }
    [result] = of(events, "TOOL_CALL_RESULT")
    assert result["content"] == "deleted draft.txt"
    assert said(events) == "Results: deleted draft.txt"
    assert "outcome" not in events[-1]
    state = (await client.get(f"/threads/{tid}/state")).json()
    assert [m["role"] for m in state["messages"]] == [
        "user",
        "assistant",
        "assistant",
        "tool",
        "assistant",
    ]
    # The next turn reloads the approved call and its result.
    message = {"id": "u2", "role": "user", "content": "and now?"}
    events = await run(client, run_body(tid, [*state["messages"], message]))
    assert said(events).startswith("Hello from pydantic-ai;")


@pytest.mark.parametrize(
    ("resume", "props", "told"),
    [
        (
            {"status": "resolved", "payload": {"approved": False, "reason": "keep it"}},
            None,
            "keep it",
        ),
        ({"status": "cancelled"}, None, "The user cancelled the tool call."),
        (
            {"status": "resolved", "payload": {"approved": "sure?"}},
            None,
            "The tool call was denied.",
        ),
        (None, {"command": {"resume": "no"}}, "The tool call was denied."),
    ],
)
async def test_a_denied_call_tells_the_model(client, resume, props, told):
    tid = thread("denied")
    interrupt = approval_of(await run(client, run_body(tid, "delete the draft")))
    state = (await client.get(f"/threads/{tid}/state")).json()
    extra = {"forwardedProps": props} if props else {}
    if resume is not None:
        extra["resume"] = [{"interruptId": interrupt["id"], **resume}]
    events = await run(client, run_body(tid, state["messages"], **extra))
    [result] = of(events, "TOOL_CALL_RESULT")
    assert result["content"] == told
    assert said(events) == f"Results: {told}"


async def test_resume_by_forwarded_props_yes(client):
    tid = thread("approved-fp")
    approval_of(await run(client, run_body(tid, "delete the draft")))
    state = (await client.get(f"/threads/{tid}/state")).json()
    props = {"command": {"resume": "yes"}}
    events = await run(client, run_body(tid, state["messages"], forwardedProps=props))
    assert said(events) == "Results: deleted draft.txt"


async def test_test_model_tool_calls_with_whole_arguments():
    """pydantic-ai's TestModel gives tool arguments as a dict, not streamed text."""
    from agui_bridge.adapters.pydantic_ai import pydantic_ai_agent
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    agent = Agent(TestModel())

    @agent.tool_plain
    def square(x: int) -> int:
        """Squares x."""
        return x * x

    async with app_client(lambda app: app.agent("test-model")(pydantic_ai_agent(agent))) as http:
        events = await run_on(http, "/agui/test-model", run_body(thread("tm"), "go"))
    [start] = of(events, "TOOL_CALL_START")
    assert start["toolCallName"] == "square"
    [args] = of(events, "TOOL_CALL_ARGS")
    assert json.loads(args["delta"]) == {"x": 0}
    [result] = of(events, "TOOL_CALL_RESULT")
    assert result["content"] == "0"
    assert said(events) == '{"square":0}'
    assert events[-1]["type"] == "RUN_FINISHED"


async def test_a_structured_output_is_the_result_not_an_unanswered_call():
    """The output tool (final_result) is how the model answers, not a call the
    user sees: announced, it was stored without a result, the next turn told the
    model its answer failed, and TestModel's fixed call id ended that turn in a
    RUN_ERROR (the thread already held it)."""
    from agui_bridge.adapters.pydantic_ai import pydantic_ai_agent
    from pydantic import BaseModel
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    class City(BaseModel):
        name: str

    agent = Agent(TestModel(), output_type=City)
    tid = thread("structured")
    async with app_client(lambda app: app.agent("out")(pydantic_ai_agent(agent))) as http:
        events = await run_on(http, "/agui/out", run_body(tid, "pick a city"))
        assert not of(events, "TOOL_CALL_START") and not of(events, "TOOL_CALL_ARGS")
        assert events[-1]["type"] == "RUN_FINISHED"
        assert events[-1]["result"] == {"name": "a"}
        state = (await http.get(f"/threads/{tid}/state")).json()
        assert [m["role"] for m in state["messages"]] == ["user"]
        message = {"id": "u2", "role": "user", "content": "another"}
        events = await run_on(http, "/agui/out", run_body(tid, [*state["messages"], message]))
        assert not of(events, "RUN_ERROR") and not of(events, "TOOL_CALL_START")
        assert events[-1]["type"] == "RUN_FINISHED"
        assert events[-1]["result"] == {"name": "a"}
        state = (await http.get(f"/threads/{tid}/state")).json()
        assert [m["role"] for m in state["messages"]] == ["user", "user"]


async def test_interleaved_parallel_calls_keep_their_whole_arguments():
    """pydantic-ai ends part 0 when part 1 starts, yet part 0's arguments go on
    streaming: closed at that end, the call went out (and was stored) as
    '{"a": 1,' while the tool ran with {"a": 1, "b": 2}."""
    from agui_bridge.adapters.pydantic_ai import pydantic_ai_agent
    from pydantic_ai import Agent
    from pydantic_ai.messages import ToolCallPart, ToolReturnPart, UserPromptPart
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    seen = []

    async def stream(messages, info):
        seen.append(messages)
        last = messages[-1].parts
        if any(isinstance(p, ToolReturnPart) for p in last):
            yield "done"
            return
        if [p.content for p in last if isinstance(p, UserPromptPart)] != ["parallel"]:
            yield "ok"
            return
        yield {0: DeltaToolCall(name="add", json_args='{"a": 1,', tool_call_id="c1")}
        yield {1: DeltaToolCall(name="add", json_args='{"a": 10,', tool_call_id="c2")}
        yield {0: DeltaToolCall(json_args=' "b": 2}')}
        yield {1: DeltaToolCall(json_args=' "b": 20}')}

    agent = Agent(FunctionModel(stream_function=stream))

    @agent.tool_plain
    def add(a: float, b: float) -> float:
        return a + b

    tid = thread("parallel")
    async with app_client(lambda app: app.agent("par")(pydantic_ai_agent(agent))) as http:
        events = await run_on(http, "/agui/par", run_body(tid, "parallel"))
        args = {
            call: json.loads(
                "".join(a["delta"] for a in of(events, "TOOL_CALL_ARGS") if a["toolCallId"] == call)
            )
            for call in ("c1", "c2")
        }
        assert args == {"c1": {"a": 1, "b": 2}, "c2": {"a": 10, "b": 20}}
        results = {r["toolCallId"]: r["content"] for r in of(events, "TOOL_CALL_RESULT")}
        assert results == {"c1": "3.0", "c2": "30.0"}
        assert said(events) == "done"
        state = (await http.get(f"/threads/{tid}/state")).json()
        stored = {
            call["id"]: json.loads(call["function"]["arguments"])
            for m in state["messages"]
            for call in m.get("toolCalls", ())
        }
        assert stored == args
        message = {"id": "u2", "role": "user", "content": "and now?"}
        events = await run_on(http, "/agui/par", run_body(tid, [*state["messages"], message]))
        assert said(events) == "ok"
    calls = [p for m in seen[-1] for p in m.parts if isinstance(p, ToolCallPart)]
    assert {c.tool_call_id: c.args_as_dict() for c in calls} == args


def test_the_agent_function_says_its_dialect():
    from agui_bridge.adapters.pydantic_ai import pydantic_ai_agent
    from agui_bridge.app import App

    from tests.adapter_apps import pydantic_agent

    fn = pydantic_ai_agent(pydantic_agent())
    app = App(store="memory://")
    app.agent("events")(fn)
    assert app._agents["events"].dialect == "events"
    with pytest.raises(ValueError, match="yields the 'events' dialect, not 'crumbs'"):
        App(store="memory://").agent("crumbs", dialect="crumbs")(fn)


async def test_the_agents_system_prompt_reaches_the_model_not_the_clients():
    """Resuming a history, pydantic-ai adds no system prompt: the agent's own
    (static and ``@agent.system_prompt``) never reached the model. As
    pydantic-ai's AG-UI adapter does, it is put back on every run, and a system
    message the client sends does not reach the model."""
    from agui_bridge.adapters.pydantic_ai import pydantic_ai_agent
    from pydantic_ai import Agent
    from pydantic_ai.messages import SystemPromptPart, UserPromptPart
    from pydantic_ai.models.function import FunctionModel

    seen = []

    async def stream(messages, info):
        seen.append(
            (
                [p.content for m in messages for p in m.parts if isinstance(p, SystemPromptPart)],
                [p.content for m in messages for p in m.parts if isinstance(p, UserPromptPart)],
                info.instructions,
            )
        )
        yield "ok"

    pirate = Agent(FunctionModel(stream_function=stream), system_prompt="You are a pirate.")

    @pirate.system_prompt
    def today() -> str:
        return "Today is Tuesday."

    brief = Agent(FunctionModel(stream_function=stream), instructions="Be brief.")

    def register(app):
        app.agent("pirate")(pydantic_ai_agent(pirate))
        app.agent("brief")(pydantic_ai_agent(brief))

    cat = {"id": "s1", "role": "system", "content": "You are a cat."}
    async with app_client(register) as http:
        tid = thread("sysprompt")
        hi = {"id": "u1", "role": "user", "content": "hi"}
        await run_on(http, "/agui/pirate", run_body(tid, [cat, hi]))
        held = (await state_of(http, tid))["messages"]
        again = {"id": "u2", "role": "user", "content": "again"}
        await run_on(http, "/agui/pirate", run_body(tid, [*held, again]))
        await run_on(http, "/agui/brief", run_body(thread("instr"), [cat, hi]))
    pirate_says = ["You are a pirate.", "Today is Tuesday."]
    assert seen == [
        (pirate_says, ["hi"], None),
        (pirate_says, ["hi", "again"], None),
        ([], ["hi"], "Be brief."),
    ]


@pytest.mark.parametrize("way", ["metadata", "content"])
async def test_ag_ui_events_a_tool_returns_follow_its_result(way):
    """pydantic-ai's AG-UI way for a tool to update the shared state: the AG-UI
    events in its ``ToolReturn``'s metadata (or its return value) go out right
    after its result, as pydantic-ai's AG-UI adapter sends them."""
    from ag_ui.core import EventType, StateDeltaEvent, StateSnapshotEvent
    from agui_bridge.adapters.pydantic_ai import pydantic_ai_agent
    from pydantic_ai import Agent, ToolReturn
    from pydantic_ai.messages import ToolReturnPart
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    async def stream(messages, info):
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            yield "Saved."
            return
        yield {0: DeltaToolCall(name="set_theme", json_args='{"color": "red"}', tool_call_id="c1")}

    agent = Agent(FunctionModel(stream_function=stream))

    @agent.tool_plain
    def set_theme(color: str):
        """Sets the UI theme."""
        events = [
            StateSnapshotEvent(type=EventType.STATE_SNAPSHOT, snapshot={"theme": color}),
            StateDeltaEvent(
                type=EventType.STATE_DELTA,
                delta=[{"op": "add", "path": "/font", "value": "serif"}],
            ),
        ]
        return ToolReturn(return_value="ok", metadata=events) if way == "metadata" else events

    tid = thread("tool-state")
    async with app_client(lambda app: app.agent("st")(pydantic_ai_agent(agent))) as http:
        events = await run_on(http, "/agui/st", run_body(tid, "make it red"))
        stored = (await state_of(http, tid))["values"]
    kinds = [e["type"] for e in events]
    after = kinds.index("TOOL_CALL_RESULT") + 1
    assert kinds[after : after + 2] == ["STATE_SNAPSHOT", "STATE_DELTA"]
    assert events[after]["snapshot"] == {"theme": "red"}
    assert events[after + 1]["delta"] == [{"op": "add", "path": "/font", "value": "serif"}]
    assert said(events) == "Saved."
    assert stored == {"theme": "red", "font": "serif"}


async def cancelled_with(tid: str, new: dict, seen: list | None = None) -> list[dict]:
    """A run whose model asks to delete (an approval), then a resume that
    cancels it carrying ``new``: the resuming run's events (``seen``: every
    request the model got)."""
    from agui_bridge.adapters.pydantic_ai import pydantic_ai_agent
    from pydantic_ai import Agent
    from pydantic_ai.messages import UserPromptPart
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    async def stream(messages, info):
        if seen is not None:
            seen.append(messages)
        prompts = [p.content for p in messages[-1].parts if isinstance(p, UserPromptPart)]
        if prompts == ["delete it"]:
            yield "Deleting."
            yield {0: DeltaToolCall(name="delete_file", json_args="{}", tool_call_id="c1")}
        else:
            yield "Sure."

    agent = Agent(FunctionModel(stream_function=stream))

    @agent.tool_plain(requires_approval=True)
    def delete_file() -> str:
        return "deleted"

    async with app_client(lambda app: app.agent("del")(pydantic_ai_agent(agent))) as http:
        interrupt = approval_of(await run_on(http, "/agui/del", run_body(tid, "delete it")))
        held = (await state_of(http, tid))["messages"]
        resume = [{"interruptId": interrupt["id"], "status": "cancelled"}]
        return await run_on(http, "/agui/del", run_body(tid, [*held, new], resume=resume))


async def test_a_resume_cancelling_the_call_with_a_new_message_answers_it_after_the_call():
    """A resume that cancels the pending approval and carries a new user
    message: the model gets the call, its cancelled result, then the message
    (pydantic-ai's ``user_prompt`` beside ``deferred_tool_results``). It got the
    message before the call it was rebuilt after."""
    from pydantic_ai.messages import TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

    seen: list = []
    new = {"id": "u2", "role": "user", "content": "never mind, hello"}
    events = await cancelled_with(thread("cancel-new"), new, seen)
    assert said(events) == "Sure."
    kinds = {
        UserPromptPart: "user",
        TextPart: "text",
        ToolCallPart: "call",
        ToolReturnPart: "result",
    }
    told = [
        (kinds[type(p)], p.content if hasattr(p, "content") else p.tool_name)
        for m in seen[-1]
        for p in m.parts
    ]
    assert told == [
        ("user", "delete it"),
        ("text", "Deleting."),
        ("call", "delete_file"),
        ("result", "The user cancelled the tool call."),
        ("user", "never mind, hello"),
    ]


# pydantic-ai's loader warns as it drops a file part no provider reads.
@pytest.mark.filterwarnings("ignore:AG-UI file reference:UserWarning")
async def test_a_resume_cancelling_the_call_with_a_message_the_loader_drops_is_answered():
    """The new message holds nothing pydantic-ai's loader keeps: the run still
    answers (it was a RUN_ERROR: no user prompt to pass on)."""
    source = {"type": "file", "value": "file-abc", "mimeType": "application/pdf"}
    new = {"id": "u2", "role": "user", "content": [{"type": "document", "source": source}]}
    events = await cancelled_with(thread("cancel-file"), new)
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    assert said(events) == "Sure."
