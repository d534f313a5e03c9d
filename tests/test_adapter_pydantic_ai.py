"""agui_bridge.adapters.pydantic_ai: a pydantic-ai Agent on its own FunctionModel,
behind the App in process. Every stream passes ag-ui-validate."""

from __future__ import annotations

import json

import pytest

from tests.adapter_apps import register_pydantic
from tests.adapter_testing import PICK_CITY, app_client, of, run_on, said, thread
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
