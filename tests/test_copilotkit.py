"""The real CopilotKit stack in front of the demo agent.

Browser side: ``CopilotKitCore`` from ``@copilotkit/core`` (the class the React
v2 hooks drive), headless in Node, making the hooks' calls
(``tests/interop/copilotkit-client.mjs``). Server side: the real v2
``CopilotRuntime`` (``InMemoryAgentRunner``, ``createCopilotNodeListener``) in a
child process, its ``default`` agent an ``HttpAgent`` pointed at
``agui_bridge.demo:app`` on granian (``tests/interop/copilotkit-runtime.mjs``).

Two client versions: the ``@copilotkit/core`` that the latest
``@copilotkit/react-core`` pins, and the latest ``@copilotkit/core``.

Every scenario passes only if the client warned and reported nothing, no
message the client already showed changed afterwards (nothing glued onto an
earlier message), and the client's messages equal the thread's stored
messages (``GET /threads/{id}/state``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.servers import serve

ROOT = Path(__file__).resolve().parent.parent
INTEROP = ROOT / "tests" / "interop"
CLIENT = INTEROP / "copilotkit-client.mjs"
RUNTIME = INTEROP / "copilotkit-runtime.mjs"
# version -> the package directory it is installed under (npm aliases, see package.json)
CORE_VERSIONS = {"1.74.0": "@copilotkit/core", "1.75.0": "copilotkit-core-175"}
RUNTIME_VERSION = "1.75.0"
# Nothing leaves the machine: the runtime's telemetry is off.
QUIET = {"COPILOTKIT_TELEMETRY_DISABLED": "true", "DO_NOT_TRACK": "1", "SCARF_ANALYTICS": "false"}


@pytest.fixture(scope="module")
def node():
    node = shutil.which("node")
    assert node, "node is not installed: the interop suite needs Node 20+"
    packages = {**CORE_VERSIONS, RUNTIME_VERSION: "@copilotkit/runtime"}
    for version, package in packages.items():
        manifest = INTEROP / "node_modules" / package / "package.json"
        assert manifest.is_file(), f"{manifest} missing: run `npm ci` in tests/interop"
        assert json.loads(manifest.read_text())["version"] == version
    return node


@pytest.fixture(scope="module")
def demo():
    env = {"AGUI_DEMO_STORE": "memory://", "AGUI_DEMO_DELAY": "0"}
    with serve("agui_bridge.demo:app", env=env) as base_url:
        yield base_url


class Runtime:
    """A running CopilotKit runtime: its endpoint and what it wrote on stderr."""

    def __init__(self, url: str, log, proc, printed: list[str]):
        self.url = url
        self._log = log
        self._read = 0
        self.proc = proc
        self.printed = printed  # its stdout after the port line, drained so it never blocks

    def state(self) -> str:
        """Whether it still runs, and what it printed (for a failure's message)."""
        code = self.proc.poll()
        alive = "running" if code is None else f"exited with {code}"
        return f"the runtime is {alive}; it printed: {''.join(self.printed)[-2000:]!r}"

    def new_output(self) -> str:
        self._log.seek(self._read)
        text = self._log.read()
        self._read = self._log.tell()
        return text


@contextlib.contextmanager
def copilotkit_runtime(node, agent_url: str, timeout: float = 30.0, graph_id: str | None = None):
    """The runtime child process; yields a ``Runtime``. With ``graph_id`` its agent is
    the runtime's ``LangGraphAgent`` for that graph, ``agent_url`` its deployment URL."""
    graph = ["/api/copilotkit", graph_id] if graph_id else []
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(
            [node, str(RUNTIME), agent_url, *graph],
            cwd=INTEROP,
            env={**os.environ, **QUIET},
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            start_new_session=True,
        )
        drain = None
        try:
            deadline = time.monotonic() + timeout
            line = ""
            while not line:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"the CopilotKit runtime did not start: {log.read()}")
                line = proc.stdout.readline()
            port = json.loads(line)["port"]
            printed: list[str] = []
            drain = threading.Thread(target=printed.extend, args=(proc.stdout,), daemon=True)
            drain.start()
            yield Runtime(f"http://127.0.0.1:{port}/api/copilotkit", log, proc, printed)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(5)
            if drain is not None:
                drain.join(5)  # it ends at the pipe's end, once the runtime is gone
            proc.stdout.close()


@pytest.fixture(scope="module")
def runtime(node, demo):
    with copilotkit_runtime(node, demo + "/ag-ui/run") as url:
        yield url


@pytest.fixture(params=list(CORE_VERSIONS))
def core_version(request):
    return request.param


def run_pages(node, version, runtime: Runtime, pages, tmp_path, *, expect_ok=True) -> dict:
    scenario = {"threadId": f"ck-{uuid.uuid4().hex[:10]}", "pages": pages}
    path = tmp_path / f"scenario-{uuid.uuid4().hex}.json"
    path.write_text(json.dumps(scenario))
    proc = subprocess.run(
        [node, str(CLIENT), version, runtime.url, str(path)],
        cwd=INTEROP,
        env={**os.environ, **QUIET},
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, f"the client harness crashed: {proc.stderr}"
    out = json.loads(proc.stdout)
    assert out["coreVersion"] == version
    # The runtime logs what goes wrong between it and the agent on stderr.
    logged = runtime.new_output()
    if not expect_ok:
        return out
    assert out["ok"], (
        f"@copilotkit/core {version} warned or failed: {out['warnings']};"
        f" {runtime.state()}; its stderr: {logged[-4000:]!r}"
    )
    assert not logged, f"the CopilotKit runtime logged a problem: {logged}"
    assert [len(p["steps"]) for p in out["pages"]] == [len(p) for p in pages]
    return out


def stored(demo, thread_id) -> dict:
    response = httpx.get(f"{demo}/threads/{thread_id}/state", timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def check_consistent(out, demo) -> dict:
    """No shown message changes later; the client shows what the thread stores."""
    thread = stored(demo, out["threadId"])
    pages = out["pages"]
    for page in pages:
        shown = page["connected"]
        for step in page["steps"]:
            now = step["messages"]
            assert now[: len(shown)] == shown, f"a shown message changed after {step['step']}"
            shown = now
    # A reloaded page shows what the page before it ended with.
    for before, after in itertools.pairwise(pages):
        assert after["connected"] == before["messages"]
    assert pages[-1]["messages"] == thread["messages"]
    assert pages[-1]["state"] == thread["values"]
    ids = [m["id"] for m in thread["messages"]]
    assert len(ids) == len(set(ids)), f"the thread holds one id twice: {ids}"
    return thread


def new_messages(step, before) -> list[dict]:
    return step["messages"][len(before["messages"]) if before else 0 :]


def texts(messages, role="assistant") -> list[str]:
    return [m.get("content") for m in messages if m["role"] == role]


def test_text(node, core_version, runtime, demo, tmp_path):
    out = run_pages(node, core_version, runtime, [[{"say": "hello there"}]], tmp_path)
    check_consistent(out, demo)
    [step] = out["pages"][0]["steps"]
    user, reply = step["messages"]
    assert (user["role"], user["content"]) == ("user", "hello there")
    assert reply["role"] == "assistant"
    assert reply["content"].startswith("You said: 'hello there'. This is turn 1 of this thread")


def test_tool_call(node, core_version, runtime, demo, tmp_path):
    out = run_pages(node, core_version, runtime, [[{"say": "what is 6 * (3 + 4)?"}]], tmp_path)
    check_consistent(out, demo)
    [step] = out["pages"][0]["steps"]
    assert [m["role"] for m in step["messages"]] == ["user", "assistant", "tool", "assistant"]
    _, asked, result, answer = step["messages"]
    assert asked["content"] == "Let me calculate 6 * (3 + 4)."
    [call] = asked["toolCalls"]
    assert call["function"]["name"] == "calculate"
    assert json.loads(call["function"]["arguments"]) == {"expression": "6 * (3 + 4)"}
    assert result["toolCallId"] == call["id"]
    assert json.loads(result["content"]) == {"expression": "6 * (3 + 4)", "value": 42}
    assert answer["content"] == "6 * (3 + 4) = 42."
    assert step["state"]["task"]["status"] == "completed"


def test_three_turns_on_one_thread(node, core_version, runtime, demo, tmp_path):
    turns = [{"say": "first"}, {"say": "what is 2 + 3?"}, {"say": "third"}]
    out = run_pages(node, core_version, runtime, [turns], tmp_path)
    thread = check_consistent(out, demo)
    assert texts(thread["messages"], "user") == ["first", "what is 2 + 3?", "third"]
    replies = texts(thread["messages"])
    assert "This is turn 1 of this thread" in replies[0]
    assert replies[-1].startswith("You said: 'third'. This is turn 3 of this thread (6 earlier")
    assert out["pages"][0]["state"]["loop"]["iteration"] == 3


def test_page_reload(node, core_version, runtime, demo, tmp_path):
    pages = [[{"say": "remember me"}, {"say": "what is 6 * 7?"}], [], [{"say": "still here"}]]
    out = run_pages(node, core_version, runtime, pages, tmp_path)
    check_consistent(out, demo)
    first, reloaded, again = out["pages"]
    assert reloaded["connected"] == first["messages"]
    assert reloaded["state"] == first["state"]
    assert again["connected"] == first["messages"]
    reply = again["steps"][0]["messages"][-1]
    assert reply["content"].startswith("You said: 'still here'. This is turn 3 of this thread")


def test_state_round_trip(node, core_version, runtime, demo, tmp_path):
    pages = [[{"setState": {"user": {"name": "Ada"}}, "say": "hello"}, {"say": "what is 1 + 1?"}]]
    out = run_pages(node, core_version, runtime, pages, tmp_path)
    thread = check_consistent(out, demo)
    first, second = out["pages"][0]["steps"]
    # The client's state reached the thread and came back with the agent's.
    assert first["state"]["user"] == {"name": "Ada"}
    assert first["state"]["loop"] == {
        "loopId": "chat",
        "phase": "iteration:end",
        "iteration": 1,
        "topic": "hello",
    }
    assert second["state"]["user"] == {"name": "Ada"}
    assert second["state"]["task"]["status"] == "completed"
    assert thread["values"] == second["state"]


def resume_scenario(node, version, runtime, demo, tmp_path, decision) -> tuple[dict, dict, dict]:
    pages = [[{"say": "approve deleting the draft"}, decision], []]
    out = run_pages(node, version, runtime, pages, tmp_path)
    asked, answered = out["pages"][0]["steps"]
    [interrupt] = asked["pending"]["interrupts"]
    assert interrupt["message"] == "approve deleting the draft"
    # useInterrupt resumes under the run that suspended.
    assert answered["runIds"] == asked["runIds"]
    assert len(asked["runIds"]) == 1
    assert answered["pending"] is None
    thread = check_consistent(out, demo)
    assert out["pages"][1]["connected"] == out["pages"][0]["messages"]
    return asked, answered, thread


def test_approve_through_use_interrupt(node, core_version, runtime, demo, tmp_path):
    asked, answered, thread = resume_scenario(
        node, core_version, runtime, demo, tmp_path, {"resolve": "yes"}
    )
    assert texts(asked["messages"]) == ["I need your approval to deleting the draft."]
    assert texts(new_messages(answered, asked)) == ["Approved: approve deleting the draft. Done."]
    assert texts(thread["messages"]) == [
        "I need your approval to deleting the draft.",
        "Approved: approve deleting the draft. Done.",
    ]
    assert answered["state"]["task"]["status"] == "approved"


def test_cancel_through_use_interrupt(node, core_version, runtime, demo, tmp_path):
    asked, answered, thread = resume_scenario(
        node, core_version, runtime, demo, tmp_path, {"cancel": True}
    )
    assert texts(new_messages(answered, asked)) == ["Declined: approve deleting the draft. Done."]
    assert texts(thread["messages"])[-1] == "Declined: approve deleting the draft. Done."
    assert answered["state"]["task"]["status"] == "declined"


def test_harness_fails_when_the_agent_fails(node, core_version, demo, tmp_path):
    """A green scenario means something: an agent URL that answers 404 is reported."""
    with copilotkit_runtime(node, demo + "/no-such-agent") as broken:
        out = run_pages(node, core_version, broken, [[{"say": "hello"}]], tmp_path, expect_ok=False)
    assert not out["ok"]
    assert any("Error" in w["text"] for w in out["warnings"]), out["warnings"]


def test_approve_after_a_page_reload(node, core_version, runtime, demo, tmp_path):
    """The reloaded page's useInterrupt finds the pending interrupt in connectAgent's replay."""
    pages = [[{"say": "approve deleting the draft"}], [{"resolve": "yes"}]]
    out = run_pages(node, core_version, runtime, pages, tmp_path)
    thread = check_consistent(out, demo)
    [answered] = out["pages"][1]["steps"]
    assert answered["pendingBefore"]["interrupts"][0]["message"] == "approve deleting the draft"
    assert texts(thread["messages"]) == [
        "I need your approval to deleting the draft.",
        "Approved: approve deleting the draft. Done.",
    ]
