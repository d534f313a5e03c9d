"""agui_bridge.adapters.openai: the real ``openai`` client against a local scripted
server (tests/fake_openai.py, granian on 127.0.0.1), the App in process.

Every stream passes ag-ui-validate; the real @ag-ui/client runs are in
tests/test_adapter_interop.py.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui

from tests.adapter_apps import register_openai
from tests.adapter_testing import PICK_CITY, app_client, of, run_on, said, thread
from tests.ingress_apps import parse_sse, run_body
from tests.servers import serve


@pytest.fixture(scope="module")
def fake_url():
    with serve("tests.fake_openai:app", interface="asgi") as url:
        yield url


@pytest.fixture
async def client(fake_url):
    async with app_client(register_openai, fake_url, agent_timeout=1.0) as http:
        yield http


async def run(http, body) -> list[dict]:
    return await run_on(http, "/agui/openai", body)


async def sent(fake_url) -> list[dict]:
    async with httpx.AsyncClient() as http:
        return (await http.get(fake_url + "/requests")).json()


async def test_text_streams_as_deltas_with_usage(client, fake_url):
    events = await run(client, run_body(thread("text"), "hi there"))
    assert said(events) == "Hello! I see 1 messages; you said hi there"
    assert len(of(events, "TEXT_MESSAGE_CONTENT")) == 9  # one delta per streamed piece
    assert events[-1]["type"] == "RUN_FINISHED"
    task = of(events, "STATE_SNAPSHOT")[-1]["snapshot"]["task"]
    assert task["status"] == "completed"
    assert task["usage"] == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    request = (await sent(fake_url))[-1]
    assert request["stream"] is True and request["model"] == "fake-model"
    assert request["messages"] == [{"role": "user", "content": "hi there"}]
    names = [t["function"]["name"] for t in request["tools"]]
    assert names == ["add", "divide"]
    add = request["tools"][0]["function"]
    assert add["description"] == "Adds two numbers."
    assert add["parameters"]["required"] == ["a", "b"]


async def test_a_server_that_sends_no_finish_reason_still_answers(client):
    """Some OpenAI-compatible servers never send ``finish_reason``; the usage
    asked for comes after the answer's last piece, so the answer is whole."""
    events = await run(client, run_body(thread("unsaid"), "unsaid"))
    assert said(events) == "All of it"
    assert events[-1]["type"] == "RUN_FINISHED"


@pytest.mark.parametrize(("words", "thought"), [("think", "Let me see."), ("ponder", "Hmm.")])
async def test_reasoning_deltas_stream_as_reasoning(client, words, thought):
    """Contract section 8: reasoning_content / reasoning deltas are the model's
    reasoning, closed before the answer's text, and stored as a reasoning message."""
    body = run_body(thread(words), f"{words} about it")
    events = await run(client, body)
    assert_valid_agui(events)
    kinds = [e["type"] for e in events if e["type"].startswith(("REASONING", "TEXT"))]
    assert kinds[:3] == ["REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT"]
    assert kinds.index("REASONING_END") < kinds.index("TEXT_MESSAGE_START")
    pieces = "".join(e["delta"] for e in of(events, "REASONING_MESSAGE_CONTENT"))
    assert pieces == thought
    state = (await client.get(f"/threads/{body['threadId']}/state")).json()
    assert [m["role"] for m in state["messages"]] == ["user", "reasoning", "assistant"]
    assert state["messages"][1]["content"] == thought


async def test_a_1_0_client_gets_the_model_usage(client):
    """Contract section 8: the API's usage, under the model, on RUN_FINISHED."""
    events = await run(client, run_body(thread("usage"), "hi", protocolVersion="1.0"))
    assert events[0]["protocolVersion"] == "1.0"
    assert events[-1]["usage"] == [
        {"model": "fake-model", "inputTokens": 11, "outputTokens": 7, "totalTokens": 18}
    ]


async def test_python_tool_runs_and_its_result_goes_back(client, fake_url):
    tid = thread("tool")
    events = await run(client, run_body(tid, "please add"))
    [start] = of(events, "TOOL_CALL_START")
    assert start["toolCallName"] == "add"
    args = of(events, "TOOL_CALL_ARGS")
    assert len(args) > 3  # streamed in pieces, as the model sent them
    assert json.loads("".join(a["delta"] for a in args)) == {"a": 2, "b": 3}
    [result] = of(events, "TOOL_CALL_RESULT")
    assert result["toolCallId"] == start["toolCallId"] and result["content"] == "5.0"
    assert said(events) == "Adding.Results: 5.0"
    second = (await sent(fake_url))[-1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    assert second[1]["content"] == "Adding."
    assert second[1]["tool_calls"][0]["id"] == start["toolCallId"]
    assert json.loads(second[1]["tool_calls"][0]["function"]["arguments"]) == {"a": 2, "b": 3}
    assert second[2] == {"role": "tool", "tool_call_id": start["toolCallId"], "content": "5.0"}
    # The stored history is the conversation the next turn sends back.
    state = (await client.get(f"/threads/{tid}/state")).json()
    assert [m["role"] for m in state["messages"]] == ["user", "assistant", "tool", "assistant"]
    hi = {"id": "u2", "role": "user", "content": "hi"}
    await run(client, run_body(tid, [*state["messages"], hi]))
    third = (await sent(fake_url))[-1]["messages"]
    assert [m["role"] for m in third] == ["user", "assistant", "tool", "assistant", "user"]
    assert third[:3] == second


async def test_parallel_calls_interleaved_by_index_and_a_tool_error(client, fake_url):
    events = await run(client, run_body(thread("parallel"), "parallel please"))
    starts = of(events, "TOOL_CALL_START")
    assert [s["toolCallName"] for s in starts] == ["add", "divide"]
    by_id = {s["toolCallId"]: "" for s in starts}
    for a in of(events, "TOOL_CALL_ARGS"):
        by_id[a["toolCallId"]] += a["delta"]
    assert [json.loads(v) for v in by_id.values()] == [{"a": 1, "b": 2}, {"a": 1, "b": 0}]
    results = {r["toolCallId"]: r["content"] for r in of(events, "TOOL_CALL_RESULT")}
    add_id, divide_id = by_id
    assert results[add_id] == "3.0"
    assert json.loads(results[divide_id]) == {
        "error": {"code": "ZeroDivisionError", "message": "float division by zero"}
    }
    back = (await sent(fake_url))[-1]["messages"]
    assert [m["role"] for m in back] == ["user", "assistant", "tool", "tool"]
    assert said(events) == f"Results: 3.0 | {results[divide_id]}"


@pytest.mark.parametrize("words", ["twins", "unindexed"])
async def test_parallel_calls_sharing_an_index_or_without_one_stay_apart(client, fake_url, words):
    """Gemini's OpenAI-compatible endpoint sends each parallel call whole, all
    at index 0; other servers send no index: a new id is a new call."""
    events = await run(client, run_body(thread(words), words))
    starts = of(events, "TOOL_CALL_START")
    assert [s["toolCallName"] for s in starts] == ["add", "add"]
    assert len({s["toolCallId"] for s in starts}) == 2
    assert [r["content"] for r in of(events, "TOOL_CALL_RESULT")] == ["3.0", "30.0"]
    assert said(events) == "Results: 3.0 | 30.0"
    back = (await sent(fake_url))[-1]["messages"]
    assert [m["role"] for m in back] == ["user", "assistant", "tool", "tool"]
    arguments = [json.loads(c["function"]["arguments"]) for c in back[1]["tool_calls"]]
    assert arguments == [{"a": 1, "b": 2}, {"a": 10, "b": 20}]


async def test_reasoning_of_a_tool_call_goes_back_with_it(client, fake_url):
    """DeepSeek's thinking mode answers 400 unless the assistant message of a
    tool call carries its reasoning_content (api-docs.deepseek.com/guides/
    thinking_mode#tool-calls), in this run's loop as in the next run's history."""
    tid = thread("deliberate")
    events = await run(client, run_body(tid, "deliberate"))
    assert said(events) == "Results: 3.0"
    back = (await sent(fake_url))[-1]["messages"]
    assert back[1]["reasoning_content"] == "Need to sum."
    assert back[1]["tool_calls"][0]["function"]["name"] == "add"
    state = (await client.get(f"/threads/{tid}/state")).json()
    hi = {"id": "u2", "role": "user", "content": "hi"}
    await run(client, run_body(tid, [*state["messages"], hi]))
    again = (await sent(fake_url))[-1]["messages"]
    assert [m["role"] for m in again] == ["user", "assistant", "tool", "assistant", "user"]
    assert again[1] == back[1]
    assert "reasoning_content" not in again[3]  # an answer without reasoning


async def test_frontend_tool_ends_the_run_and_the_next_run_continues(client, fake_url):
    tid = thread("frontend")
    events = await run(client, run_body(tid, "which city", tools=[PICK_CITY]))
    [start] = of(events, "TOOL_CALL_START")
    assert start["toolCallName"] == "pick_city"
    assert not of(events, "TOOL_CALL_RESULT")
    assert events[-1]["type"] == "RUN_FINISHED"
    request = (await sent(fake_url))[-1]
    assert [t["function"]["name"] for t in request["tools"]] == ["add", "divide", "pick_city"]
    call_id = start["toolCallId"]
    answer = {"id": "t1", "role": "tool", "toolCallId": call_id, "content": "Lima"}
    state = (await client.get(f"/threads/{tid}/state")).json()
    events = await run(client, run_body(tid, [*state["messages"], answer], tools=[PICK_CITY]))
    assert said(events) == "Results: Lima"
    back = (await sent(fake_url))[-1]["messages"]
    assert [m["role"] for m in back] == ["user", "assistant", "tool"]
    assert back[2] == {"role": "tool", "tool_call_id": call_id, "content": "Lima"}


async def test_python_and_frontend_calls_together(client, fake_url):
    tid = thread("mixed")
    events = await run(client, run_body(tid, "mixed", tools=[PICK_CITY]))
    results = of(events, "TOOL_CALL_RESULT")
    assert [r["content"] for r in results] == ["8.0"]  # only the Python one ran
    assert len(of(events, "TOOL_CALL_START")) == 2
    assert events[-1]["type"] == "RUN_FINISHED"
    # The user types on instead of answering the frontend tool: the model still
    # gets one tool message per call, right after it. (Calls with no text before
    # them are one assistant message each, for the client as for the store.)
    state = (await client.get(f"/threads/{tid}/state")).json()
    message = {"id": "u2", "role": "user", "content": "never mind, hi"}
    await run(client, run_body(tid, [*state["messages"], message], tools=[PICK_CITY]))
    back = (await sent(fake_url))[-1]["messages"]
    roles = ["user", "assistant", "tool", "assistant", "tool", "user"]
    assert [m["role"] for m in back] == roles
    assert back[2]["content"] == "8.0"
    assert json.loads(back[4]["content"])["error"]["code"] == "no_result"


async def test_unknown_tool_is_an_error_for_the_model(client):
    events = await run(client, run_body(thread("ghost"), "ghost"))
    [result] = of(events, "TOOL_CALL_RESULT")
    assert json.loads(result["content"])["error"]["code"] == "LookupError"
    assert events[-1]["type"] == "RUN_FINISHED"


@pytest.mark.parametrize(
    ("words", "code", "text"),
    [
        ("long", "length", "This answer is cut"),
        ("filter", "content_filter", "Something"),
        ("midway", "model_error", "Half an answer"),
        ("boom", "model_error", ""),
        ("cutoff", "model_unreachable", "Half an answer"),
        ("metered", "model_unreachable", "Half an answer"),
        ("stall", "model_timeout", ""),
        ("loop", "max_steps", ""),
    ],
)
async def test_model_failures_end_with_a_coded_run_error(client, words, code, text):
    started = time.monotonic()
    events = await run(client, run_body(thread(words), words))
    assert time.monotonic() - started < 10
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == code
    assert said(events) == text
    if words == "boom":
        assert "500" in events[-1]["message"]
    if words == "loop":
        assert len(of(events, "TOOL_CALL_RESULT")) == 3


async def test_unreachable_server_is_a_coded_run_error():
    from tests.servers import free_port

    async with app_client(register_openai, f"http://127.0.0.1:{free_port()}") as http:
        events = await run(http, run_body(thread("down"), "hi"))
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "model_unreachable"


def test_history_becomes_chat_messages():
    from agui_bridge.adapters._messages import conversation
    from agui_bridge.adapters.openai import to_chat_messages
    from agui_bridge.context import RunContext

    history = [
        {"id": "s", "role": "system", "content": "Be brief."},
        {
            "id": "u1",
            "role": "user",
            "content": [
                {"type": "text", "text": "a"},
                {"type": "binary", "mimeType": "image/png", "data": "x"},
            ],
        },
        {
            "id": "a1",
            "role": "assistant",
            "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": ""}},
            ],
        },
        {"id": "x", "role": "activity", "activityType": "a", "content": {}},
        {"id": "r2", "role": "tool", "toolCallId": "c2", "content": "two"},
        {"id": "r9", "role": "tool", "toolCallId": "nobody", "content": "stray"},
    ]
    late = [{"id": "r1", "role": "tool", "toolCallId": "c1", "content": "one"}]
    ctx = RunContext("t", "r", "a", "next", history=history, tool_results=late)
    assert to_chat_messages(conversation(ctx)) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "a"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
        {"role": "user", "content": "next"},
    ]


def test_demo_uses_a_real_model_only_when_configured():
    from agui_bridge.cli import DEMO, demo_target

    assert demo_target({}) == DEMO
    assert demo_target({"OPENAI_API_KEY": "k"}) == DEMO  # no model named
    assert demo_target({"OPENAI_MODEL": "m"}) == DEMO  # no server or key
    real = "agui_bridge.adapters.demo_openai:app"
    assert demo_target({"OPENAI_MODEL": "m", "OPENAI_BASE_URL": "http://x/v1"}) == real
    assert demo_target({"OPENAI_MODEL": "m", "OPENAI_API_KEY": "k"}) == real


def test_demo_on_a_model_server(fake_url):
    env = {
        "AGUI_DEMO_STORE": "memory://",
        "OPENAI_BASE_URL": fake_url + "/v1",
        "OPENAI_MODEL": "fake-model",
        "OPENAI_API_KEY": "",
    }
    with serve("agui_bridge.adapters.demo_openai:app", env=env) as base_url:
        response = httpx.post(base_url + "/ag-ui/run", json=run_body("demo-real", "hi"), timeout=20)
    events, _ = parse_sse(response.text)
    assert_valid_agui(events)
    assert said(events) == "Hello! I see 1 messages; you said hi"
    assert events[-1]["type"] == "RUN_FINISHED"
    request = httpx.get(fake_url + "/requests").json()[-1]
    assert request["messages"][0]["role"] == "system"
    assert [t["function"]["name"] for t in request["tools"]] == ["calculate"]


async def test_context_entries_reach_the_model_as_system_text(client, fake_url):
    context = [{"description": "the user's plan", "value": "pro"}]
    await run(client, run_body(thread("context"), "hi", context=context))
    [system, user] = (await sent(fake_url))[-1]["messages"]
    assert system == {
        "role": "system",
        "content": "Context from the application:\n- the user's plan: pro",
    }
    assert user == {"role": "user", "content": "hi"}


def test_an_assistant_message_without_calls_keeps_its_content():
    from agui_bridge.adapters.openai import to_chat_messages

    assert to_chat_messages([{"id": "a", "role": "assistant"}]) == [
        {"role": "assistant", "content": ""}
    ]
