"""``agui-bridge demo`` on a "real" model, end to end and offline.

The demo CLI runs as a subprocess with OPENAI_BASE_URL / OPENAI_API_KEY /
OPENAI_MODEL pointing at the scripted chat-completions server of
tests/fake_openai.py (the real ``openai`` client streams from it), and the
real ``@ag-ui/client`` (1.0.0 and 0.0.58) holds a three-turn conversation
with a Python tool call; the thread the server stores is the client's.
"""

from __future__ import annotations

import sys

import httpx
import pytest

from tests.servers import serve, spawn
from tests.test_adapter_interop import same_history, turns
from tests.test_interop import (
    assistant_messages,
    check_lifecycle,
    node,  # noqa: F401  (a fixture)
    run_client,
    tool_messages,
)


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("demo-real-model")
    with serve("tests.fake_openai:app", interface="asgi") as fake:
        env = {
            "OPENAI_BASE_URL": fake + "/v1",
            "OPENAI_API_KEY": "test-key",
            "OPENAI_MODEL": "fake-model",
        }
        command = [sys.executable, "-m", "agui_bridge.cli", "demo", "--port", "{port}"]
        with spawn(command, env, cwd=cwd, ready="/", timeout=30, stop_timeout=10) as demo:
            # The CLI chose the real-model demo, and says so.
            assert "model fake-model" in demo.log()
            yield demo.base_url, fake


@pytest.mark.parametrize("version", ["1.0.0", "0.0.58"])
def test_demo_on_a_model_server_three_turns_with_its_tool(node, version, demo_url, tmp_path):  # noqa: F811
    base_url, fake = demo_url
    httpx.delete(fake + "/requests", timeout=5)
    scenario = turns("hello there", "please calculate", "thanks")
    out = run_client(node, version, base_url + "/ag-ui/run", scenario, tmp_path)
    for run in out["runs"]:
        check_lifecycle(run)
    replies = [m.get("content") for m in assistant_messages(out) if m.get("content")]
    assert replies[0] == "Hello! I see 1 messages; you said hello there"
    assert replies[1] == "Calculating."
    # The demo's calculate tool ran on the model's call; its result went back to the model.
    [result] = tool_messages(out).values()
    assert result["content"] == "42"
    assert replies[2] == "Results: 42"
    assert replies[3] == "Hello! I see 7 messages; you said thanks"
    same_history(base_url, out)
    # The model got the conversation, the system prompt and the demo's tool.
    sent = httpx.get(fake + "/requests", timeout=5).json()
    assert sent[0]["model"] == "fake-model" and sent[0]["stream"] is True
    assert sent[0]["messages"][0]["role"] == "system"
    assert [t["function"]["name"] for t in sent[0]["tools"]] == ["calculate"]
