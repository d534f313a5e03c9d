"""The adapters' streams through the real @ag-ui/client (1.0.0 and 0.0.58).

The App (tests/adapter_apps.py) runs on granian with a SQLite store; the
OpenAI agent talks to the scripted server of tests/fake_openai.py. A
conversation's history as the client holds it must be the history the
server stored (``GET /threads/{id}/state``).
"""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.adapter_testing import PICK_CITY
from tests.servers import serve
from tests.test_interop import (
    assistant_messages,
    check_lifecycle,
    node,  # noqa: F401  (a fixture)
    run_client,
    serve_rsgi,
    tool_messages,
)


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    store = tmp_path_factory.mktemp("adapter-store") / "threads.sqlite"
    with serve("tests.fake_openai:app", interface="asgi") as fake:
        env = {"ADAPTER_STORE": f"sqlite:///{store}", "FAKE_OPENAI_URL": fake}
        # Three frameworks to import: slow on a loaded machine.
        app = "tests.adapter_apps:make_app"
        with serve_rsgi(app, env=env, extra=["--factory"], timeout=90) as url:
            yield url


@pytest.fixture(params=["1.0.0", "0.0.58"])
def version(request):
    return request.param


def turns(*words, **run) -> dict:
    return {
        "threadId": f"thread-{uuid.uuid4().hex[:8]}",
        "runs": [
            {"addMessages": [{"id": f"u{i}-{uuid.uuid4().hex[:6]}", "role": "user", "content": w}]}
            | run
            for i, w in enumerate(words)
        ],
    }


def same_history(app_url, out) -> None:
    """The stored messages are the client's messages (fields the client keeps)."""
    stored = httpx.get(f"{app_url}/threads/{out['threadId']}/state", timeout=10).json()
    keys = ("id", "role", "content", "toolCalls", "toolCallId")

    def shape(messages):
        return [{k: m[k] for k in keys if m.get(k) not in (None, "")} for m in messages]

    assert shape(stored["messages"]) == shape(out["messages"])


def test_openai_three_turns_with_tools(node, version, app_url, tmp_path):  # noqa: F811
    scenario = turns("please add", "parallel please", "hello again")
    out = run_client(node, version, app_url + "/agui/openai", scenario, tmp_path)
    for run in out["runs"]:
        check_lifecycle(run)
    replies = [m.get("content") for m in assistant_messages(out) if m.get("content")]
    assert replies[0] == "Adding."
    assert replies[1] == "Results: 5.0"
    assert replies[-1] == "Hello! I see 11 messages; you said hello again"
    results = list(tool_messages(out).values())
    assert [r["content"] for r in results][:2] == ["5.0", "3.0"]
    assert json.loads(results[2]["content"])["error"]["code"] == "ZeroDivisionError"
    same_history(app_url, out)


def test_openai_frontend_tool_round_trip(node, version, app_url, tmp_path):  # noqa: F811
    scenario = turns("which city", tools=[PICK_CITY])
    scenario["runs"].append({"tools": [PICK_CITY], "answerToolCalls": "Lima"})
    out = run_client(node, version, app_url + "/agui/openai", scenario, tmp_path)
    first, second = out["runs"]
    check_lifecycle(first)
    check_lifecycle(second)
    asked, answered = assistant_messages(out)
    assert asked["content"] == "Which city?"
    [call] = asked["toolCalls"]
    assert json.loads(call["function"]["arguments"]) == {"options": ["Oslo", "Lima"]}
    assert answered["content"] == "Results: Lima"
    same_history(app_url, out)


@pytest.mark.parametrize(("words", "code"), [("midway", "model_error"), ("long", "length")])
def test_openai_errors_reach_the_client_cleanly(node, version, app_url, tmp_path, words, code):  # noqa: F811
    out = run_client(node, version, app_url + "/agui/openai", turns(words), tmp_path)
    [run] = out["runs"]
    check_lifecycle(run, terminal="RUN_ERROR")
    assert run["events"][-1]["code"] == code


def test_pydantic_ai_three_turns_with_tools(node, version, app_url, tmp_path):  # noqa: F811
    scenario = turns("please add", "which city", "hello", tools=[PICK_CITY])
    # The frontend tool's answer is a run of its own, between turns 2 and 3.
    scenario["runs"].insert(2, {"tools": [PICK_CITY], "answerToolCalls": "Lima"})
    out = run_client(node, version, app_url + "/agui/pydantic", scenario, tmp_path)
    for run in out["runs"]:
        check_lifecycle(run)
    texts = [m["content"] for m in assistant_messages(out) if m.get("content")]
    assert texts[:2] == ["Adding.", "Results: 5.0"]
    assert texts[2] == "Results: Lima"
    assert texts[3].startswith("Hello from pydantic-ai;")
    assert [r["content"] for r in tool_messages(out).values()] == ["5.0", "Lima"]
    same_history(app_url, out)


def test_langgraph_three_turns_tool_and_interrupt(node, version, app_url, tmp_path):  # noqa: F811
    scenario = turns("hi", "what weather", "approve the plan")
    scenario["runs"].append({"resumePending": {"status": "resolved", "payload": "yes"}})
    out = run_client(node, version, app_url + "/agui/langgraph", scenario, tmp_path)
    for run in out["runs"]:
        check_lifecycle(run)
    suspended, resumed = out["runs"][2:]
    [pending] = suspended["pendingInterrupts"]
    assert pending["reason"] == "approval"
    assert resumed["pendingInterrupts"] == []
    texts = [m["content"] for m in assistant_messages(out) if m.get("content")]
    assert texts == [
        "Hello from langgraph; 1 messages",
        "Checking.",
        "It is sunny in Oslo.",
        "Decision: yes",
    ]
    assert [r["content"] for r in tool_messages(out).values()] == ["sunny in Oslo"]
    # The graph's state is the client's state at the top level.
    assert out["state"] == {"turns": 3}
    same_history(app_url, out)


def test_pydantic_ai_approval_suspends_and_resumes(node, version, app_url, tmp_path):  # noqa: F811
    scenario = turns("delete the draft")
    scenario["runs"].append(
        {"resumePending": {"status": "resolved", "payload": {"approved": True}}}
    )
    out = run_client(node, version, app_url + "/agui/pydantic", scenario, tmp_path)
    for run in out["runs"]:
        check_lifecycle(run)
    suspended, resumed = out["runs"]
    [pending] = suspended["pendingInterrupts"]
    assert (pending["reason"], pending["metadata"]["toolName"]) == ("tool_approval", "delete_file")
    assert resumed["pendingInterrupts"] == []
    texts = [m["content"] for m in assistant_messages(out) if m.get("content")]
    assert texts == ["Deleting.", "Results: deleted draft.txt"]
    [result] = tool_messages(out).values()
    assert (result["toolCallId"], result["content"]) == (pending["toolCallId"], "deleted draft.txt")
    same_history(app_url, out)


@pytest.mark.parametrize(
    ("agent", "words"),
    [("openai", "think about it"), ("pydantic", "think first"), ("langgraph", "think about it")],
)
def test_reasoning_of_each_adapter_in_the_real_client(
    node,  # noqa: F811
    version,
    app_url,
    tmp_path,
    agent,
    words,
):
    """Contract section 8: each framework's reasoning reaches the client as a
    reasoning message; the next turn resends it (held, not stored twice) and
    the stored thread stays the client's."""
    scenario = turns(words, "hello again")
    out = run_client(node, version, f"{app_url}/agui/{agent}", scenario, tmp_path)
    for run in out["runs"]:
        check_lifecycle(run)
    roles = [m["role"] for m in out["messages"]]
    assert roles[:3] == ["user", "reasoning", "assistant"]
    assert roles.count("reasoning") == 1
    assert out["messages"][1]["content"]
    same_history(app_url, out)
