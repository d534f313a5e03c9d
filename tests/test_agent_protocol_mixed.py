"""One thread, two protocols: the real ``@ag-ui/client`` (tests/interop/run-agent.mjs)
and the real LangGraph SDK take turns on the same threads."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError
from langgraph_sdk.schema import Command

from tests.servers import serve

INTEROP = Path(__file__).resolve().parent / "interop"


@pytest.fixture(scope="module")
def base_url():
    with serve("tests.agent_protocol_apps:app", env={"AGUI_DEMO_DELAY": "0"}) as url:
        yield url


@pytest.fixture(scope="module")
def node():
    node = shutil.which("node")
    assert node, "node is not installed: the mixed-protocol suite needs Node 20+"
    manifest = INTEROP / "node_modules" / "@ag-ui" / "client" / "package.json"
    assert manifest.is_file(), f"{manifest} missing: run `npm ci` in tests/interop"
    return node


@pytest.fixture
async def client(base_url):
    client = get_client(url=base_url, api_key=None)
    yield client
    await client.aclose()


def agui(node, url: str, scenario: dict, tmp_path) -> dict:
    """Runs the scenario with @ag-ui/client 1.0.0; every run must pass its checks."""
    path = tmp_path / f"scenario-{uuid.uuid4().hex}.json"
    path.write_text(json.dumps(scenario))
    proc = subprocess.run(
        [node, "run-agent.mjs", "1.0.0", url, str(path)],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["ok"], [(r["error"], r["warnings"]) for r in out["runs"]]
    return out


def _user(text: str) -> dict:
    return {"id": f"u-{uuid.uuid4().hex[:8]}", "role": "user", "content": text}


async def test_an_agui_run_then_an_agent_protocol_run(node, base_url, client, tmp_path):
    thread_id = f"mixed-{uuid.uuid4().hex[:8]}"
    scenario = {"threadId": thread_id, "initialMessages": [_user("what is 6 * 7?")], "runs": [{}]}
    out = agui(node, f"{base_url}/agui/demo", scenario, tmp_path)
    agui_run = out["runs"][0]["events"][0]["runId"]

    thread = await client.threads.get(thread_id)
    assert thread["status"] == "idle"
    assert thread["values"]["messages"][-1]["content"] == "6 * 7 = 42."
    runs = await client.runs.list(thread_id)
    assert [(r["run_id"], r["status"]) for r in runs] == [(agui_run, "success")]

    values = await client.runs.wait(thread_id, "demo", input={"messages": ["and now?"]})
    assert values["messages"][0]["content"] == "what is 6 * 7?"
    assert "turn 2 of this thread (4 earlier messages)" in values["messages"][-1]["content"]
    assert len(await client.runs.list(thread_id)) == 2


async def test_an_agent_protocol_run_then_an_agui_run(node, base_url, client, tmp_path):
    thread_id = (await client.threads.create())["thread_id"]
    hi = {"messages": [{"role": "user", "content": "hi"}]}
    await client.runs.wait(thread_id, "demo", input=hi)
    scenario = {"threadId": thread_id, "initialMessages": [_user("what is 1 + 1?")], "runs": [{}]}
    out = agui(node, f"{base_url}/agui/demo", scenario, tmp_path)
    assert out["messages"][-1]["content"] == "1 + 1 = 2."
    # The AG-UI turn is in the history the Agent Protocol shows, after the first one.
    state = await client.threads.get_state(thread_id)
    contents = [m["content"] for m in state["messages"] if m["role"] == "user"]
    assert contents == ["hi", "what is 1 + 1?"]
    thread = await client.threads.get(thread_id)
    assert thread["values"]["messages"][-1]["content"] == "1 + 1 = 2."


async def test_an_interrupt_suspended_over_agui_resumed_over_agent_protocol(
    node, base_url, client, tmp_path
):
    thread_id = f"mixed-{uuid.uuid4().hex[:8]}"
    scenario = {"threadId": thread_id, "initialMessages": [_user("approve the deploy")]}
    out = agui(node, f"{base_url}/agui/demo", {**scenario, "runs": [{}]}, tmp_path)
    (pending,) = out["pendingInterrupts"]
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "interrupted"
    assert thread["interrupts"]["demo"][0]["id"] == pending["id"]
    values = await client.runs.wait(thread_id, "demo", command=Command(resume="yes"))
    assert values["messages"][-1]["content"] == "Approved: approve the deploy. Done."
    assert (await client.threads.get(thread_id))["status"] == "idle"


async def test_a_run_of_either_protocol_makes_the_thread_busy_for_the_other(base_url, client):
    thread_id = f"mixed-{uuid.uuid4().hex[:8]}"
    body = {"threadId": thread_id, "runId": "agui-run", "messages": [_user("count 40")]}
    async with (
        httpx.AsyncClient(base_url=base_url, timeout=10) as http,
        http.stream("POST", "/agui/slow", json=body) as response,
    ):
        lines = response.aiter_lines()
        async for line in lines:
            if "TEXT_MESSAGE_CONTENT" in line:
                break  # the AG-UI run is under way
        assert (await client.threads.get(thread_id))["status"] == "busy"
        (run,) = await client.runs.list(thread_id)
        assert run["run_id"] == "agui-run" and run["status"] == "running"
        with pytest.raises(ConflictError):
            await client.runs.create(thread_id, "demo", input={"messages": ["hi"]})
        values = await client.runs.join(thread_id, "agui-run")  # joins the AG-UI run
        assert values["messages"][-1]["content"].strip().endswith("tick 39")
        async for _ in lines:
            pass

    run = await client.runs.create(thread_id, "slow", input={"messages": ["count 60"]})
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
        again = {"threadId": thread_id, "messages": [_user("hello")]}
        refused = await http.post("/agui/demo", json=again)
        assert refused.status_code == 409 and refused.json()["error"]["code"] == "run_active"
        # AG-UI's cancel stops the Agent Protocol run; an AG-UI reader replays its end.
        stopped = await http.post(f"/threads/{thread_id}/runs/{run['run_id']}/cancel")
        assert stopped.status_code == 202
        joined = await http.get(f"/threads/{thread_id}/runs/{run['run_id']}/events")
        assert '"RUN_FINISHED"' in joined.text
    assert (await client.runs.get(thread_id, run["run_id"]))["status"] == "interrupted"
