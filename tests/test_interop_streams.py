"""Run streams with the real @ag-ui/client (1.0.0 and 0.0.58) and the
reconnecting agent of clients/js: joins at several points of a live run and
after its end, and a stream cut again and again that resumes by id. Zero
client warnings, and every client ends with the messages and state the
server stored (those of a client that saw the whole run)."""

from __future__ import annotations

import json
import subprocess
import uuid

import httpx
import pytest

from tests.servers import serve
from tests.test_ingress_http import MARKS
from tests.test_interop import CLIENT_VERSIONS, INTEROP, node  # noqa: F401

HARNESS = INTEROP / "streams.mjs"


@pytest.fixture(scope="module", params=["rsgi", "asgi"])
def base_url(request):
    env = {"AGUI_TEST_MARKS": str(MARKS)}
    with serve("tests.ingress_apps:app", env=env, interface=request.param) as url:
        yield url


def run_streams(node, version, scenario, tmp_path) -> dict:  # noqa: F811
    path = tmp_path / f"streams-{uuid.uuid4().hex}.json"
    path.write_text(json.dumps(scenario))
    proc = subprocess.run(
        [node, str(HARNESS), version, str(path)],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, f"harness crashed: {proc.stderr}"
    out = json.loads(proc.stdout)
    assert out["ok"], f"client {version}: {out.get('error')} {out['warnings']}"
    return out


def canonical(view: dict) -> str:
    return json.dumps(view, sort_keys=True)


def stored(base_url: str, thread_id: str) -> dict:
    body = httpx.get(f"{base_url}/threads/{thread_id}/state").json()
    return {"messages": body["messages"], "state": body["values"]}


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_joiners_at_every_point_end_like_the_whole_run(node, base_url, version, tmp_path):  # noqa: F811
    # "mixed 0.15": 13 items 150 ms apart; joins land in the step, mid-text,
    # mid-arguments, between the call and its result, and in the second text.
    thread_id, run_id = f"join-{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"
    scenario = {
        "url": base_url + "/ag-ui/run",
        "threadId": thread_id,
        "runId": run_id,
        # the run waits on the gate before it ends, until every joiner is in
        "text": f"mixed 0.15 gate-{run_id}",
        "gate": str(MARKS / f"gate-{run_id}"),
        "joins": [200, 420, 750, 1050, 1250, 1500, 1800],
        "afterEnd": True,
    }
    out = run_streams(node, version, scenario, tmp_path)
    truth = canonical(stored(base_url, thread_id))
    assert canonical(out["full"]) == truth
    for index, joined in enumerate(out["joins"]):
        assert canonical(joined) == truth, f"join {index} at {scenario['joins'][index]} ms"
    assert canonical(out["afterEnd"]) == truth


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
@pytest.mark.parametrize("cuts", [[2], [4, 3], [6, 1, 2, 3], [9, 2]])
def test_a_stream_cut_again_and_again_resumes_by_id(node, base_url, version, cuts, tmp_path):  # noqa: F811
    thread_id, run_id = f"cut-{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"
    scenario = {
        "url": base_url + "/ag-ui/run",
        "threadId": thread_id,
        "runId": run_id,
        "text": "mixed 0.05",
        "cuts": cuts,
    }
    out = run_streams(node, version, scenario, tmp_path)
    assert canonical({k: out["cut"][k] for k in ("messages", "state")}) == canonical(
        stored(base_url, thread_id)
    )
    events = out["cut"]["events"]
    assert events.count("RUN_STARTED") == 1 and events[-1] == "RUN_FINISHED"


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_reasoning_joined_and_resumed_ends_like_the_whole_run(node, base_url, version, tmp_path):  # noqa: F811
    """Contract section 8: joins inside and after reasoning (re-opened by the
    prelude) and a cut stream end with the stored thread, reasoning included."""
    thread_id, run_id = f"think-{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"
    scenario = {
        "url": base_url + "/ag-ui/run",
        "threadId": thread_id,
        "runId": run_id,
        "text": "reasoned 0.15",
        "joins": [100, 400, 1000],
        "afterEnd": True,
    }
    out = run_streams(node, version, scenario, tmp_path)
    stored_view = stored(base_url, thread_id)
    roles = [m["role"] for m in stored_view["messages"]]
    assert roles == ["user", "reasoning", "assistant", "tool", "reasoning", "assistant"]
    assert stored_view["messages"][1]["encryptedValue"] == "sig-r"
    truth = canonical(stored_view)
    assert canonical(out["full"]) == truth
    for index, joined in enumerate(out["joins"]):
        assert canonical(joined) == truth, f"join {index} at {scenario['joins'][index]} ms"
    assert canonical(out["afterEnd"]) == truth
    cut_thread = f"thinkcut-{uuid.uuid4().hex[:8]}"
    scenario = {
        "url": base_url + "/ag-ui/run",
        "threadId": cut_thread,
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "text": "reasoned 0.05",
        "cuts": [3, 4],
    }
    out = run_streams(node, version, scenario, tmp_path)
    assert canonical({k: out["cut"][k] for k in ("messages", "state")}) == canonical(
        stored(base_url, cut_thread)
    )
