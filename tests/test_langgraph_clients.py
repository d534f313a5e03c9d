"""The LangGraph UI clients against agui-bridge as their LangGraph deployment.

- ``@ag-ui/langgraph`` 0.0.43's ``LangGraphAgent`` (the class CopilotKit's
  runtime runs for a LangGraph deployment) driven by ``@ag-ui/client``
  (``tests/interop/langgraph-agent.mjs``): the AbstractAgent it extends
  verifies every event it makes from the server's parts;
- CopilotKit's runtime 1.75 with its ``LangGraphAgent`` pointed at agui-bridge,
  in front of the headless ``CopilotKitCore`` 1.75 making the React hooks'
  calls (``tests/interop/copilotkit-client.mjs``).

Both read the assistant (search, graph, schemas), the thread's state, and
stream with the ``events``, ``values``, ``updates`` and ``messages-tuple``
modes (CopilotKit's with ``stream_subgraphs``). The deployment URL is the
Agent Protocol under ``/langgraph``, whose ThreadState has the messages in its
values, as these clients read them. Each scenario: text, a tool call, state,
an interrupt and its resume, with no warning and no rejected event; what the
client shows at the end equals what the thread stores.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid

import httpx
import orjson
import pytest

from tests.servers import serve
from tests.test_copilotkit import CLIENT, INTEROP, QUIET, copilotkit_runtime

HARNESS = INTEROP / "langgraph-agent.mjs"
PACKAGES = {
    "@ag-ui/langgraph": "0.0.43",
    "@copilotkit/runtime": "1.75.0",
    "copilotkit-core-175": "1.75.0",
}


@pytest.fixture(scope="module")
def node():
    node = shutil.which("node")
    assert node, "node is not installed: the interop suite needs Node 20+"
    for package, version in PACKAGES.items():
        manifest = INTEROP / "node_modules" / package / "package.json"
        assert manifest.is_file(), f"{manifest} missing: run `npm ci` in tests/interop"
        assert json.loads(manifest.read_text())["version"] == version
    return node


@pytest.fixture(scope="module")
def bridge():
    with serve("tests.langgraph_clients_apps:app", env={"AGUI_DEMO_DELAY": "0"}) as url:
        yield url


def _run(
    node, bridge, tmp_path, runs, *, emit_outcome=True, timeout_ms=30000, graph="demo"
) -> dict:
    scenario = {
        "threadId": str(uuid.uuid4()),
        "graphId": graph,
        "emitInterruptOutcome": emit_outcome,
        "timeoutMs": timeout_ms,
        "runs": runs,
    }
    path = tmp_path / f"scenario-{uuid.uuid4().hex}.json"
    path.write_text(json.dumps(scenario))
    proc = subprocess.run(
        [node, str(HARNESS), bridge + "/langgraph", str(path)],
        cwd=INTEROP,
        env={**os.environ, **QUIET},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, f"the harness crashed: {proc.stderr}"
    return json.loads(proc.stdout)


def _shown(messages: list[dict]) -> list[tuple]:
    """AG-UI messages as a client shows them (tool arguments as the JSON they hold:
    the client writes them back from LangGraph's parsed ``args``)."""
    out = []
    for m in messages:
        calls = [
            (c["id"], c["function"]["name"], orjson.loads(c["function"]["arguments"] or "{}"))
            for c in m.get("toolCalls") or ()
        ]
        out.append((m["id"], m["role"], m.get("content") or "", calls, m.get("toolCallId")))
    return out


def _stored(bridge, thread_id) -> tuple[dict, dict]:
    """The thread as the AG-UI routes store it, and as the LangGraph surface shows it."""
    root = httpx.get(f"{bridge}/threads/{thread_id}/state", timeout=10).json()
    langgraph = httpx.get(f"{bridge}/langgraph/threads/{thread_id}/state", timeout=10).json()
    return root, langgraph


def _types(run) -> list[str]:
    return [e["type"] for e in run["events"]]


def test_langgraph_agent_text_tool_state_interrupt_resume(node, bridge, tmp_path):
    out = _run(
        node,
        bridge,
        tmp_path,
        [
            {"addMessages": [{"id": "u1", "role": "user", "content": "hello there"}]},
            {"addMessages": [{"id": "u2", "role": "user", "content": "what is 6 * 7?"}]},
            {"addMessages": [{"id": "u3", "role": "user", "content": "approve the plan"}]},
            {"resumePending": {"payload": "yes"}},
        ],
    )
    assert out["ok"], out["warnings"] or [(r["error"], r["warnings"]) for r in out["runs"]]
    text, tool, paused, resumed = out["runs"]

    # Text, streamed: the client made it from on_chat_model_stream parts.
    assert _types(text)[:2] == ["RUN_STARTED", "STEP_STARTED"]
    assert _types(text)[-1] == "RUN_FINISHED"
    deltas = [e["delta"] for e in text["events"] if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert "".join(deltas) == text["messages"][-1]["content"]
    assert text["messages"][-1]["content"].startswith("You said: 'hello there'")
    assert any(e["type"] == "STEP_STARTED" and e["stepName"] == "demo" for e in text["events"])

    # A tool call with its streamed arguments and its result.
    starts = [e for e in tool["events"] if e["type"] == "TOOL_CALL_START"]
    assert [e["toolCallName"] for e in starts] == ["calculate"]
    args = "".join(e["delta"] for e in tool["events"] if e["type"] == "TOOL_CALL_ARGS")
    assert orjson.loads(args) == {"expression": "6 * 7"}
    results = [e for e in tool["events"] if e["type"] == "TOOL_CALL_RESULT"]
    assert [orjson.loads(e["content"])["value"] for e in results] == [42]
    assert tool["messages"][-1]["content"] == "6 * 7 = 42."
    # State: the agent's, beside the messages LangGraph keeps in it.
    assert (
        tool["state"]["loop"]["iteration"] == 2 and tool["state"]["task"]["taskId"] == "calculate"
    )

    # The interrupt, as the structured outcome, and its resume.
    assert _types(paused)[-1] == "RUN_FINISHED"
    finished = paused["events"][-1]
    assert finished["outcome"]["type"] == "interrupt"
    (pending,) = paused["pendingInterrupts"]
    assert pending["reason"] == "approval" and pending["message"] == "approve the plan"
    assert resumed["pendingInterrupts"] == []
    assert resumed["messages"][-1]["content"].startswith("Approved: approve the plan")

    root, langgraph = _stored(bridge, out["threadId"])
    assert _shown(resumed["messages"]) == _shown(root["messages"])
    assert resumed["state"] == langgraph["values"]
    assert root["interrupts"] == [] and langgraph["next"] == []


def test_langgraph_agent_legacy_interrupt_event_and_command_resume(node, bridge, tmp_path):
    """The default configuration: the interrupt as the ``on_interrupt`` CUSTOM event,
    the resume as ``forwardedProps.command.resume`` (what CopilotKit sends)."""
    out = _run(
        node,
        bridge,
        tmp_path,
        [
            {"addMessages": [{"id": "a1", "role": "user", "content": "approve the plan"}]},
            {"forwardedProps": {"command": {"resume": "no"}}},
        ],
        emit_outcome=False,
    )
    # The client itself warns that the command channel is deprecated: nothing else.
    warned = [w["text"] for w in out["warnings"]]
    assert all("forwardedProps.command.resume is deprecated" in w for w in warned), warned
    paused, resumed = out["runs"]
    assert paused["ok"] and resumed["error"] is None
    custom = [e for e in paused["events"] if e["type"] == "CUSTOM"]
    assert [e["name"] for e in custom] == ["on_interrupt"]
    assert json.loads(custom[0]["value"])["message"] == "approve the plan"
    assert resumed["messages"][-1]["content"].startswith("Declined: approve the plan")
    root, _ = _stored(bridge, out["threadId"])
    assert _shown(resumed["messages"]) == _shown(root["messages"])


def test_langgraph_agent_over_a_langgraph_graph(node, bridge, tmp_path):
    """``langgraph_agent`` over a compiled graph: the client reads the graph's own
    schemas (it keeps the input and output keys they list) and its tool node's result."""
    out = _run(
        node,
        bridge,
        tmp_path,
        [
            {"addMessages": [{"id": "g1", "role": "user", "content": "hello there"}]},
            {"addMessages": [{"id": "g2", "role": "user", "content": "what is the weather?"}]},
            {"addMessages": [{"id": "g3", "role": "user", "content": "approve the plan"}]},
            {"resumePending": {"payload": "yes"}},
            {"addMessages": [{"id": "g4", "role": "user", "content": "think about it"}]},
        ],
        graph="graph",
    )
    assert out["ok"], out["warnings"] or [(r["error"], r["warnings"]) for r in out["runs"]]
    hello, weather, paused, resumed, thought = out["runs"]
    assert hello["messages"][-1]["content"].startswith("Hello from langgraph")
    assert [e["toolCallName"] for e in weather["events"] if e["type"] == "TOOL_CALL_START"] == [
        "get_weather"
    ]
    results = [e["content"] for e in weather["events"] if e["type"] == "TOOL_CALL_RESULT"]
    assert results == ["sunny in Oslo"]
    assert weather["messages"][-1]["content"] == "It is sunny in Oslo."
    # The output schema's keys (and the client's own), not the whole state.
    assert set(weather["state"]) == {"messages", "tools", "turns"}
    assert weather["state"]["turns"] == 3
    (pending,) = paused["pendingInterrupts"]
    assert pending["message"] == "approve the plan?"
    assert resumed["messages"][-1]["content"] == "Decision: yes"
    # Reasoning: the events mode's reasoning blocks, shown as reasoning.
    reasoned = [e["delta"] for e in thought["events"] if e["type"] == "REASONING_MESSAGE_CONTENT"]
    assert "".join(reasoned) == "Pondering deeply."
    assert [m["role"] for m in thought["messages"][-2:]] == ["reasoning", "assistant"]
    root, _ = _stored(bridge, out["threadId"])
    assert _shown(thought["messages"]) == _shown(root["messages"])


def test_langgraph_agent_regenerate(node, bridge, tmp_path):
    """@ag-ui/langgraph regenerates by forking from the checkpoint before the user
    message (the steps of ``/langgraph``'s history, ``updateState`` at one, a run
    with its ``checkpoint_id``): the thread branches there, the old branch kept."""
    out = _run(
        node,
        bridge,
        tmp_path,
        [
            {"addMessages": [{"id": "r1", "role": "user", "content": "hello there"}]},
            {"addMessages": [{"id": "r2", "role": "user", "content": "and again"}]},
            # The client resends the history up to r2 with an answer under an id the
            # thread does not hold (what sends @ag-ui/langgraph down its regenerate
            # path rather than continuing).
            {"regenerateFrom": "r2"},
        ],
        timeout_ms=20000,
    )
    assert out["ok"], out["warnings"] or [(r["error"], r["warnings"]) for r in out["runs"]]
    before, regenerated = out["runs"][1], out["runs"][2]
    root, _ = _stored(bridge, out["threadId"])
    stored = root["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant", "user", "assistant"]
    assert [m["id"] for m in stored[:3]] == [m["id"] for m in before["messages"][:3]]
    assert stored[3]["id"] != before["messages"][3]["id"]  # a new answer to r2
    assert stored[3]["content"].startswith("You said: 'and again'")
    branches = httpx.get(f"{bridge}/threads/{out['threadId']}/branches", timeout=10).json()
    assert len(branches["branches"]) == 1  # the old answer, kept
    # The client shows what the thread stores; its MESSAGES_SNAPSHOT keeps the
    # client's own order and appends what it lacked (the answer whose id it never
    # learned), so the order is the client's.
    assert sorted(_shown(regenerated["messages"])) == sorted(_shown(stored))


def _copilotkit_shown_equals_stored(out, bridge) -> None:
    root, langgraph = _stored(bridge, out["threadId"])
    steps = [s for p in out["pages"] for s in p["steps"]]
    shown = []
    for step in steps:  # nothing shown changes afterwards
        now = _shown(step["messages"])
        assert now[: len(shown)] == shown, f"a shown message changed after {step['step']}"
        shown = now
    assert shown == _shown(root["messages"])
    assert out["pages"][-1]["state"] == langgraph["values"]


def test_copilotkit_runtime_langgraph_agent(node, bridge, tmp_path):
    with copilotkit_runtime(node, bridge + "/langgraph", graph_id="demo") as runtime:
        pages = [
            [
                {"say": "hello there"},
                {"say": "what is 6 * 7?"},
                {"say": "approve deleting the draft"},
                {"resolve": "yes"},
            ],
            [{"say": "and now?"}],
        ]
        scenario = {"threadId": str(uuid.uuid4()), "pages": pages}
        path = tmp_path / "scenario.json"
        path.write_text(json.dumps(scenario))
        proc = subprocess.run(
            [node, str(CLIENT), "1.75.0", runtime.url, str(path)],
            cwd=INTEROP,
            env={**os.environ, **QUIET},
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert proc.returncode == 0, f"the client harness crashed: {proc.stderr}"
        out = json.loads(proc.stdout)
        logged = runtime.new_output()
    assert out["ok"], out["warnings"]
    # The runtime's @ag-ui/langgraph warns that CopilotKit's resume channel (the
    # interrupt's command) is deprecated: its own word on its client, nothing else.
    lines = [line for line in logged.splitlines() if line.strip()]
    assert all("command.resume is deprecated" in line for line in lines), logged
    hello, tool, paused, resumed = out["pages"][0]["steps"]
    assert hello["messages"][-1]["content"].startswith("You said: 'hello there'")
    assert [m["role"] for m in tool["messages"][2:]] == ["user", "assistant", "tool", "assistant"]
    assert tool["messages"][-1]["content"] == "6 * 7 = 42."
    assert tool["state"]["task"]["taskId"] == "calculate"
    assert paused["pending"]["kind"] == "legacy"
    assert json.loads(paused["pending"]["event"]["value"])["reason"] == "approval"
    assert resumed["pending"] is None
    assert resumed["messages"][-1]["content"].startswith("Approved: approve deleting the draft")
    again = out["pages"][1]["steps"][0]
    assert again["messages"][-1]["content"].startswith("You said: 'and now?'")
    _copilotkit_shown_equals_stored(out, bridge)
