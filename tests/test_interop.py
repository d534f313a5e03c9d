"""The real @ag-ui/client (1.0.0 and 0.0.58) against a live granian server.

Each test runs ``tests/interop/run-agent.mjs``, which drives ``HttpAgent.runAgent``
through the client's whole pipeline (SSE parse, schema, enforce, chunk
expansion, verifyEvents, apply). Any rejection or console warning makes the
harness report ``ok: false`` and the test fails. The node_modules come from
``npm ci`` in tests/interop (``make dev``); missing ones are a failure, not a skip.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
INTEROP = ROOT / "tests" / "interop"
HARNESS = INTEROP / "run-agent.mjs"
CLIENT_VERSIONS = ["1.0.0", "0.0.58"]
PACKAGE_DIRS = {"1.0.0": "@ag-ui/client", "0.0.58": "client-0058"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serve_rsgi(
    target: str, env: dict | None = None, extra=(), timeout: float = 20.0, interface="rsgi"
):
    """granian (RSGI unless told, one worker) on a free 127.0.0.1 port; yields the base URL."""
    port = _free_port()
    environ = {**os.environ, **(env or {})}
    environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "python"), str(ROOT), environ.get("PYTHONPATH")) if p
    )
    cmd = [sys.executable, "-m", "granian", "--interface", interface, "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--workers", "1", "--log-level", "warning", *extra, target]
    # Output goes to a file: a pipe nobody reads could fill up and stall the server.
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=environ, stdout=log, stderr=log, text=True)
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"granian exited {proc.returncode}: {log.read()}")
                with (
                    contextlib.suppress(OSError),
                    socket.create_connection(("127.0.0.1", port), 0.2),
                ):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"granian did not listen on {port} within {timeout}s")
                time.sleep(0.05)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


@pytest.fixture(scope="session")
def node():
    """Node and the pinned client packages; their absence fails the suite."""
    node = shutil.which("node")
    assert node, "node is not installed: the interop suite needs Node 20+"
    for version, package in PACKAGE_DIRS.items():
        manifest = INTEROP / "node_modules" / package / "package.json"
        assert manifest.is_file(), f"{manifest} missing: run `npm ci` in tests/interop"
        assert json.loads(manifest.read_text())["version"] == version
    return node


@pytest.fixture(scope="module")
def minimal_url():
    # The pure build here; App below gets the native one when it is built, so the
    # real client judges both builds' output in one run.
    with serve_rsgi("tests.interop_apps:minimal_app", env={"AGUI_BRIDGE_PURE": "1"}) as url:
        yield url


@pytest.fixture(params=CLIENT_VERSIONS)
def client_version(request):
    return request.param


def run_client(node, version, url, scenario, tmp_path, *, expect_ok=True) -> dict:
    path = tmp_path / f"scenario-{uuid.uuid4().hex}.json"
    path.write_text(json.dumps(scenario))
    proc = subprocess.run(
        [node, str(HARNESS), version, url, str(path)],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, f"harness crashed: {proc.stderr}"
    out = json.loads(proc.stdout)
    assert out["clientVersion"] == version
    if expect_ok:
        problems = [(r["error"], r["warnings"]) for r in out["runs"] if not r["ok"]]
        assert out["ok"], f"client {version} rejected or warned: {problems} {out['warnings']}"
        assert len(out["runs"]) == len(scenario.get("runs", [{}]))
    return out


def one_turn(text="hi", **extra) -> dict:
    thread = f"thread-{uuid.uuid4().hex[:8]}"
    return {
        "threadId": thread,
        "initialMessages": [{"id": f"u-{uuid.uuid4().hex[:8]}", "role": "user", "content": text}],
        "runs": [{}],
        **extra,
    }


def types(run) -> list[str]:
    return [e["type"] for e in run["events"]]


def assistant_messages(out) -> list[dict]:
    return [m for m in out["messages"] if m["role"] == "assistant"]


def tool_messages(out) -> dict[str, dict]:
    return {m["toolCallId"]: m for m in out["messages"] if m["role"] == "tool"}


def check_lifecycle(run, terminal="RUN_FINISHED"):
    seen = types(run)
    assert seen[0] == "RUN_STARTED"
    assert seen[-1] == terminal
    assert seen.count("RUN_STARTED") == 1
    assert seen.count("RUN_FINISHED") + seen.count("RUN_ERROR") == 1


# The scenarios, written once against the ``url`` of an agent. ``url_for`` maps a
# scenario name to the URL of the server under test.


def scenario_text(node, version, url_for, tmp_path):
    out = run_client(node, version, url_for("text"), one_turn("ping"), tmp_path)
    run = out["runs"][0]
    check_lifecycle(run)
    [reply] = assistant_messages(out)
    assert reply["content"] == "Hello, world! You said: ping"
    assert types(run).count("TEXT_MESSAGE_CONTENT") == 6


def scenario_tools(node, version, url_for, tmp_path):
    out = run_client(node, version, url_for("tools"), one_turn("add 2 and 3"), tmp_path)
    check_lifecycle(out["runs"][0])
    first, second = assistant_messages(out)
    assert first["content"] == "Let me add and look that up."
    calls = {c["id"]: c for c in first["toolCalls"]}
    assert list(calls) == ["call-add", "call-lookup"]
    assert calls["call-add"]["function"]["name"] == "add"
    assert json.loads(calls["call-add"]["function"]["arguments"]) == {"a": 2, "b": 3}
    assert calls["call-lookup"]["function"]["name"] == "lookup"
    assert json.loads(calls["call-lookup"]["function"]["arguments"]) == {
        "query": "granian",
        "limit": 2,
    }
    results = tool_messages(out)
    assert results["call-add"]["content"] == "5"
    assert json.loads(results["call-lookup"]["content"]) == {"hits": ["rsgi", "asgi"]}
    assert second["content"] == "2 + 3 = 5."
    # Tool results sit right after the assistant message that owns the calls.
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"]


def scenario_tool_error(node, version, url_for, tmp_path):
    out = run_client(node, version, url_for("tool_error"), one_turn(), tmp_path)
    check_lifecycle(out["runs"][0])
    [call] = assistant_messages(out)[0]["toolCalls"]
    assert json.loads(call["function"]["arguments"]) == {"a": 1, "b": 0}
    error = json.loads(tool_messages(out)["call-fail"]["content"])
    assert error == {"error": {"code": "ZeroDivision", "message": "division by zero"}}
    assert assistant_messages(out)[-1]["content"] == "The tool failed."


def scenario_structure(node, version, url_for, tmp_path):
    out = run_client(node, version, url_for("structure"), one_turn(), tmp_path)
    run = out["runs"][0]
    check_lifecycle(run)
    started = [e["stepName"] for e in run["events"] if e["type"] == "STEP_STARTED"]
    finished = [e["stepName"] for e in run["events"] if e["type"] == "STEP_FINISHED"]
    assert started == ["plan", "loop_L_1", "loop_L_2", "subagent_researcher", "task_tr1", "wrap-up"]
    assert sorted(started) == sorted(finished)
    assert out["state"]["loop"]["loopId"] == "L"
    assert out["state"]["loop"]["phase"] == "end"
    assert out["state"]["subagent"]["status"] == "completed"
    assert out["state"]["subagent"]["output"] == {"found": 3}
    assert out["state"]["task"]["usage"] == {"inputTokens": 5, "outputTokens": 7}
    assert run["result"] == {"summary": "ok"}
    text = "".join(m["content"] for m in assistant_messages(out))
    assert text == "Planning.Iteration 1.Iteration 2.Researching.Done."


def scenario_file(node, version, url_for, tmp_path):
    from tests.interop_apps import FILE

    out = run_client(node, version, url_for("file"), one_turn(), tmp_path)
    run = out["runs"][0]
    check_lifecycle(run)
    customs = [e for e in run["events"] if e["type"] == "CUSTOM"]
    assert [(e["name"], e["value"]) for e in customs] == [("FILE_GENERATED", FILE)]
    assert run["result"] == FILE
    assert assistant_messages(out)[0]["content"] == "Here is your file."


def scenario_agent_error(node, version, url_for, tmp_path):
    out = run_client(node, version, url_for("agent_error"), one_turn(), tmp_path)
    run = out["runs"][0]
    check_lifecycle(run, terminal="RUN_ERROR")
    error = run["events"][-1]
    assert error["message"] == "the model provider went away"
    assert error["code"] == "UPSTREAM"
    message = assistant_messages(out)[0]
    assert message["content"] == "Starting to answer and then"
    assert json.loads(message["toolCalls"][0]["function"]["arguments"]) == {"q": "x"}
    # Closed before the terminal event, so the client holds nothing open.
    assert types(run)[-2:] == ["TOOL_CALL_END", "RUN_ERROR"]
    assert "RUN_FINISHED" not in types(run)


def scenario_state(node, version, url_for, tmp_path):
    scenario = one_turn(initialState={"client": {"theme": "dark"}, "count": 1})
    out = run_client(node, version, url_for("state"), scenario, tmp_path)
    check_lifecycle(out["runs"][0])
    state = out["state"]
    assert state["client"] == {"theme": "dark"}
    assert state["count"] == 1
    assert state["task"]["taskId"] == "index"
    assert state["task"]["status"] == "completed"
    snapshots = [e for e in out["runs"][0]["events"] if e["type"] == "STATE_SNAPSHOT"]
    assert len(snapshots) == 2
    assert all(s["snapshot"]["client"] == {"theme": "dark"} for s in snapshots)


def scenario_approval(node, version, url_for, tmp_path):
    scenario = one_turn("email bob")
    scenario["runs"] = [
        {},
        {"resumePending": {"status": "resolved", "payload": {"approved": True}}},
    ]
    out = run_client(node, version, url_for("approval"), scenario, tmp_path)
    first, second = out["runs"]
    check_lifecycle(first)
    outcome = first["events"][-1]["outcome"]
    assert outcome["type"] == "interrupt"
    [pending] = first["pendingInterrupts"]
    assert pending["id"] == outcome["interrupts"][0]["id"]
    assert pending["reason"] == "approval"
    assert pending["message"] == "Send the email?"
    # The second run answered it and the client cleared it.
    assert second["request"]["resume"] == [
        {"interruptId": pending["id"], "status": "resolved", "payload": {"approved": True}}
    ]
    check_lifecycle(second)
    assert "outcome" not in second["events"][-1] or second["events"][-1]["outcome"] == {
        "type": "success"
    }
    assert second["pendingInterrupts"] == []
    assert assistant_messages(out)[-1]["content"] == f"Resumed {pending['id']}: approved."
    assert second["result"] == {"decision": "approved"}


def scenario_conversation(node, version, url_for, tmp_path):
    words = ["apples", "bananas", "cherries"]
    scenario = {
        "threadId": f"thread-{uuid.uuid4().hex[:8]}",
        "runs": [
            {"addMessages": [{"id": f"u{i}-{uuid.uuid4().hex[:6]}", "role": "user", "content": w}]}
            for i, w in enumerate(words)
        ],
    }
    out = run_client(node, version, url_for("conversation"), scenario, tmp_path)
    replies = [m["content"] for m in assistant_messages(out)]
    assert replies == [
        "turn 1; I have seen: apples",
        "turn 2; I have seen: apples | bananas",
        "turn 3; I have seen: apples | bananas | cherries",
    ]
    assert [m["role"] for m in out["messages"]] == ["user", "assistant"] * 3
    for run in out["runs"]:
        check_lifecycle(run)


def scenario_chunks(node, version, url_for, tmp_path):
    out = run_client(node, version, url_for("chunks"), one_turn("the weather"), tmp_path)
    run = out["runs"][0]
    check_lifecycle(run)
    first, second = assistant_messages(out)
    assert first["content"] == "Chunked answer to: the weather"
    [call] = first["toolCalls"]
    assert call["function"]["name"] == "weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Oslo"}
    assert json.loads(tool_messages(out)["chunk-call"]["content"]) == {"tempC": 4}
    assert second["content"] == "Bare string token."
    assert out["state"]["plan"] == ["look", "answer"]
    assert run["result"] == {"answer": 42}


def scenario_chunk_approval(node, version, url_for, tmp_path):
    scenario = one_turn("book the flight")
    scenario["runs"] = [{}, {"forwardedProps": {"command": {"resume": "yes"}}}]
    out = run_client(node, version, url_for("chunk_approval"), scenario, tmp_path)
    first, second = out["runs"]
    check_lifecycle(first)
    customs = [e for e in first["events"] if e["type"] == "CUSTOM"]
    assert [(e["name"], e["value"]) for e in customs] == [
        (
            "on_interrupt",
            {"interruptId": f"perm-{out['threadId']}", "reason": "booking", "message": "Book it?"},
        )
    ]
    check_lifecycle(second)
    assert assistant_messages(out)[-1]["content"] == "Resumed with yes."
    assert second["result"] == {"decision": "yes"}


SCENARIOS = {
    "text": scenario_text,
    "tools": scenario_tools,
    "tool_error": scenario_tool_error,
    "structure": scenario_structure,
    "file": scenario_file,
    "agent_error": scenario_agent_error,
    "state": scenario_state,
    "approval": scenario_approval,
    "conversation": scenario_conversation,
    "chunks": scenario_chunks,
    "chunk_approval": scenario_chunk_approval,
}
CHUNK_SCENARIOS = {"chunks", "chunk_approval"}


def minimal_path(name: str) -> str:
    return f"/agui/{name}" if name in CHUNK_SCENARIOS else f"/scenario/{name}"


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_minimal_server(node, client_version, minimal_url, tmp_path, name):
    """The transformer alone, behind a tiny RSGI app, passes the real client."""
    SCENARIOS[name](node, client_version, lambda n: minimal_url + minimal_path(n), tmp_path)


def reasoning_events(run) -> list[dict]:
    return [e for e in run["events"] if e["type"].startswith("REASONING_")]


def test_minimal_reasoning(node, client_version, minimal_url, tmp_path):
    """Contract section 8: the real client verifies reasoning around text and a
    tool call and its reducer shows the reasoning messages; a 1.0 client is told
    the server's version and the run's usage, 0.0.58 (no protocolVersion) neither."""
    url = minimal_url + "/scenario/reasoning"
    out = run_client(node, client_version, url, one_turn("add 2 and 3"), tmp_path)
    run = out["runs"][0]
    check_lifecycle(run)
    assert [m["role"] for m in out["messages"]] == [
        "user",
        "reasoning",
        "assistant",
        "tool",
        "reasoning",
        "reasoning",
        "assistant",
    ]
    thoughts = [m for m in out["messages"] if m["role"] == "reasoning"]
    assert [m["content"] for m in thoughts] == [
        "The user wants a sum.",
        "Call the tool.",
        "Now answer.",
    ]
    assert [m["content"] for m in assistant_messages(out)] == ["Adding.", "It is 5."]
    # Three messages (four events each), four deltas, two encrypted values.
    assert len(reasoning_events(run)) == 3 * 4 + 4 + 2
    started, finished = run["events"][0], run["events"][-1]
    if client_version == "1.0.0":
        assert thoughts[0]["encryptedValue"] == "sig-1"
        assert assistant_messages(out)[0]["toolCalls"][0]["encryptedValue"] == "tc-sig"
        assert started["protocolVersion"] == "1.0"
        assert finished["usage"] == [
            {"model": "m-1", "inputTokens": 12, "outputTokens": 7, "totalTokens": 19}
        ]
    else:
        assert "protocolVersion" not in started
        assert "usage" not in finished


def test_minimal_chunk_reasoning(node, client_version, minimal_url, tmp_path):
    out = run_client(
        node, client_version, minimal_url + "/agui/chunk_reasoning", one_turn(), tmp_path
    )
    check_lifecycle(out["runs"][0])
    assert [(m["role"], m["content"]) for m in out["messages"][1:]] == [
        ("reasoning", "Thinking in chunks."),
        ("assistant", "Chunked "),
        ("reasoning", "More."),
    ]


def test_minimal_cancelled_run(node, client_version, minimal_url, tmp_path):
    """A stopped run: a 1.0 client reads the cancelled outcome, 0.0.58 today's RUN_FINISHED;
    the open reasoning is closed first and kept."""
    url = minimal_url + "/cancelled/reasoning"
    out = run_client(node, client_version, url, one_turn(), tmp_path)
    run = out["runs"][0]
    check_lifecycle(run)
    assert [(m["role"], m["content"]) for m in out["messages"][1:]] == [
        ("reasoning", "The user wants a sum.")
    ]
    finished = run["events"][-1]
    if client_version == "1.0.0":
        assert finished["outcome"] == {"type": "cancelled"}
    else:
        assert "outcome" not in finished


def test_a_client_without_protocol_version_gets_no_1_0_field(minimal_url):
    """What 0.0.x clients send (no protocolVersion) gets no 1.0-only field on the
    wire, whatever the run reports; with "1.0" the same run carries them."""
    body = one_turn("x")
    request = {
        "threadId": body["threadId"],
        "runId": "r1",
        "messages": body["initialMessages"],
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "state": {},
    }
    for path in ("/scenario/reasoning", "/cancelled/reasoning"):
        old = httpx.post(minimal_url + path, json=request, timeout=30).text
        new = httpx.post(minimal_url + path, json={**request, "protocolVersion": "1.0"}).text
        for needle in ('"protocolVersion"', '"usage":[', '"cancelled"'):
            assert needle not in old
        assert '"protocolVersion":"1.0"' in new
        assert "REASONING_MESSAGE_CONTENT" in old
    assert '"usage":[' in new or '"cancelled"' in new


@pytest.mark.parametrize(
    ("broken", "needle"),
    [
        ("content_without_start", "No active text message found with ID 'nope'"),
        ("bad_patch", "Failed to apply state patch"),
    ],
)
def test_harness_fails_on_a_broken_stream(
    node, client_version, minimal_url, tmp_path, broken, needle
):
    """The judge can fail: a rejected stream and an apply warning both give ok=false."""
    out = run_client(
        node, client_version, f"{minimal_url}/raw/{broken}", one_turn(), tmp_path, expect_ok=False
    )
    assert out["ok"] is False
    [run] = out["runs"]
    assert run["ok"] is False
    reported = (run["error"] or "") + " ".join(w["text"] for w in run["warnings"])
    assert needle in reported


def test_harness_fails_on_an_enforce_warning(node, minimal_url, tmp_path):
    """1.0.0 strips unknown fields with an [ag-ui] warning (a failure); 0.0.58 passes them."""
    url = f"{minimal_url}/raw/unknown_field"
    strict = run_client(node, "1.0.0", url, one_turn(), tmp_path, expect_ok=False)
    assert strict["ok"] is False
    assert any("[ag-ui]" in w["text"] for w in strict["warnings"])
    lenient = run_client(node, "0.0.58", url, one_turn(), tmp_path)
    assert lenient["runs"][0]["events"][1]["vendorExtra"] is True


def test_harness_fails_on_http_error(node, client_version, minimal_url, tmp_path):
    out = run_client(
        node, client_version, f"{minimal_url}/scenario/nope", one_turn(), tmp_path, expect_ok=False
    )
    assert out["ok"] is False
    assert "404" in out["runs"][0]["error"]


# ---------------------------------------------------------------- through agui_bridge.App


def app_path(name: str) -> str:
    from tests.interop_apps import APP_IDS

    if name == "text":
        return "/ag-ui/run"  # the first agent's default path
    return "/agui/" + urllib.parse.quote(APP_IDS.get(name, name), safe="")


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """``agui_bridge.App`` on granian, on a SQLite store (the default kind)."""
    store = tmp_path_factory.mktemp("interop-store") / "threads.sqlite"
    env = {"INTEROP_STORE": f"sqlite:///{store}"}
    with serve_rsgi("tests.interop_apps:make_app", env=env, extra=["--factory"]) as url:
        yield url


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_app(node, client_version, app_url, tmp_path, name):
    """Every scenario through agui_bridge.App: ingress, store, run, transformer."""
    SCENARIOS[name](node, client_version, lambda n: app_url + app_path(n), tmp_path)


def test_app_default_route_also_serves_first_agent(node, client_version, app_url, tmp_path):
    out = run_client(node, client_version, f"{app_url}/agui/text", one_turn("again"), tmp_path)
    assert assistant_messages(out)[0]["content"] == "Hello, world! You said: again"


def test_app_history_lives_on_the_server(node, client_version, app_url, tmp_path):
    """The third turn comes from a fresh tab that sends only its new message."""
    words = ["apples", "bananas", "cherries"]
    ids = [f"u{i}-{uuid.uuid4().hex[:6]}" for i in range(3)]
    runs = [{"addMessages": [{"id": ids[i], "role": "user", "content": words[i]}]} for i in (0, 1)]
    runs.append({"setMessages": [{"id": ids[2], "role": "user", "content": words[2]}]})
    scenario = {"threadId": f"thread-{uuid.uuid4().hex[:8]}", "runs": runs}
    out = run_client(node, client_version, app_url + app_path("conversation"), scenario, tmp_path)
    assert [m["role"] for m in out["messages"]] == ["user", "assistant"]
    assert out["messages"][1]["content"] == "turn 3; I have seen: apples | bananas | cherries"


def test_app_frontend_tool_round_trip(node, client_version, app_url, tmp_path):
    """RunAgentInput.tools reach the agent; the client's tool message answers the call."""
    tool = {
        "name": "pick_city",
        "description": "Ask the user to pick a city",
        "parameters": {"type": "object", "properties": {"options": {"type": "array"}}},
    }
    scenario = one_turn("plan a trip")
    scenario["runs"] = [{"tools": [tool]}, {"tools": [tool], "answerToolCalls": "Lima"}]
    out = run_client(node, client_version, f"{app_url}/agui/frontend_tool", scenario, tmp_path)
    first, second = out["runs"]
    check_lifecycle(first)
    check_lifecycle(second)
    asked, answered = assistant_messages(out)
    assert asked["content"] == "Which city?"
    [call] = asked["toolCalls"]
    assert call["function"]["name"] == "pick_city"
    assert json.loads(call["function"]["arguments"]) == {"options": ["Oslo", "Lima"]}
    assert tool_messages(out)[call["id"]]["content"] == "Lima"
    assert answered["content"] == "You picked Lima."
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "tool", "assistant"]


def test_app_interrupt_resumed_after_a_server_restart(node, client_version, tmp_path):
    """Suspend on one server, restart it on the same SQLite file, resume from the page."""
    env = {"INTEROP_STORE": f"sqlite:///{tmp_path / 'threads.sqlite'}"}
    target, path = "tests.interop_apps:make_app", app_path("approval")
    with serve_rsgi(target, env=env, extra=["--factory"]) as url:
        first = run_client(node, client_version, url + path, one_turn("email bob"), tmp_path)
    [pending] = first["pendingInterrupts"]
    scenario = {
        "threadId": first["threadId"],
        "initialMessages": first["messages"],
        "pendingInterrupts": first["pendingInterrupts"],
        "runs": [{"resumePending": {"status": "resolved", "payload": {"approved": False}}}],
    }
    with serve_rsgi(target, env=env, extra=["--factory"]) as url:
        second = run_client(node, client_version, url + path, scenario, tmp_path)
    assert second["pendingInterrupts"] == []
    assert assistant_messages(second)[-1]["content"] == f"Resumed {pending['id']}: rejected."
    assert second["runs"][0]["result"] == {"decision": "rejected"}
    # The interrupt came from the file: on an empty store the same resume is refused.
    env = {"INTEROP_STORE": f"sqlite:///{tmp_path / 'empty.sqlite'}"}
    with serve_rsgi(target, env=env, extra=["--factory"]) as url:
        refused = run_client(node, client_version, url + path, scenario, tmp_path, expect_ok=False)
    assert "HTTP 400" in refused["runs"][0]["error"]


def test_app_keepalive_pings_mid_stream(node, client_version, app_url, tmp_path):
    """The client's SSE parser skips ``: ping`` comments sent while the agent is silent."""
    body = {
        "threadId": f"thread-{uuid.uuid4().hex[:8]}",
        "runId": uuid.uuid4().hex,
        "messages": [{"id": "u1", "role": "user", "content": "slowly"}],
    }
    raw = httpx.post(f"{app_url}/agui/slow", json=body, timeout=10).text
    assert ": ping\n\n" in raw  # the pings are really on the wire
    out = run_client(node, client_version, f"{app_url}/agui/slow", one_turn(), tmp_path)
    check_lifecycle(out["runs"][0])
    assert assistant_messages(out)[0]["content"] == "Thinking done."


@pytest.fixture(scope="module")
def asgi_url():
    """The App under a Starlette mount, served by granian's ASGI interface."""
    target = "tests.interop_apps:make_asgi_app"
    with serve_rsgi(target, extra=["--factory"], interface="asgi") as url:
        yield url + "/mounted"


@pytest.mark.parametrize("name", ["text", "tools", "agent_error", "approval", "chunks"])
def test_app_mounted_asgi(node, client_version, asgi_url, tmp_path, name):
    """The ASGI front end's streams pass the real client too."""
    SCENARIOS[name](node, client_version, lambda n: asgi_url + app_path(n), tmp_path)
