"""GET {agent path}/capabilities: the agent's AG-UI 1.0 AgentCapabilities,
judged by @ag-ui/core 1.0.0's own schema and read through
clients/js/reconnect.mjs's getCapabilities() in Node."""

from __future__ import annotations

import json
import subprocess

import httpx
import pytest

from tests.servers import serve
from tests.test_interop import INTEROP, node  # noqa: F401

RUNNER = {"authorization": "Bearer runner"}


@pytest.fixture(scope="module", params=["rsgi", "asgi"])
def base_url(request):
    with serve("tests.convo_apps:app", interface=request.param) as url:
        yield url


def from_node(node, url: str, headers: dict) -> dict:  # noqa: F811
    proc = subprocess.run(
        [node, str(INTEROP / "capabilities.mjs"), url, json.dumps(headers)],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, f"harness crashed: {proc.stderr}"
    return json.loads(proc.stdout)


def test_every_path_of_an_agent_answers_its_capabilities(base_url):
    default = httpx.get(base_url + "/ag-ui/run/capabilities", headers=RUNNER)
    by_id = httpx.get(base_url + "/agui/plain/capabilities", headers=RUNNER)
    assert default.status_code == by_id.status_code == 200
    assert default.headers["content-type"] == "application/json"
    body = default.json()
    assert body == by_id.json()
    assert body["identity"]["name"] == "plain"
    assert body["transport"] == {"streaming": True, "resumable": True}
    assert body["state"]["snapshots"] is body["state"]["deltas"] is True
    assert body["humanInTheLoop"]["interrupts"] is True
    assert body["reasoning"]["supported"] is True
    # the default part policy admits every MIME type (agui_bridge.parts)
    assert body["multimodal"]["input"] == dict.fromkeys(
        ("image", "audio", "video", "pdf", "file"), True
    )
    assert "custom" not in body


def test_an_agent_adds_its_own_capabilities_merged(base_url):
    body = httpx.get(base_url + "/agui/custom/capabilities", headers=RUNNER).json()
    assert body["identity"] == {
        "name": "custom",
        "type": "agui-bridge",
        "description": "answers in verse",
    }
    assert body["multimodal"]["input"]["image"] is True
    assert body["multimodal"]["input"]["audio"] is True  # the served value, kept
    assert body["custom"] == {"poetry": True}
    assert body["transport"]["streaming"] is True


def test_capabilities_go_through_authenticate_like_the_run_route(base_url):
    anonymous = httpx.get(base_url + "/agui/plain/capabilities")
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "unauthorized"
    refused = httpx.get(
        base_url + "/agui/plain/capabilities", headers={"authorization": "Bearer nobody"}
    )
    assert refused.status_code == 403
    reader = httpx.get(
        base_url + "/agui/plain/capabilities", headers={"authorization": "Bearer reader"}
    )
    assert reader.status_code == 200
    # a GET only: the run path keeps POST
    posted = httpx.post(base_url + "/agui/plain/capabilities", headers=RUNNER, json={})
    assert posted.status_code == 405


def test_capabilities_pass_ag_ui_core_1_0_schema_and_get_capabilities(node, base_url):  # noqa: F811
    for path in ("/ag-ui/run", "/agui/plain", "/agui/custom"):
        out = from_node(node, base_url + path, RUNNER)
        assert out["error"] is None
        assert out["valid"], out["issues"]
        served = httpx.get(base_url + path + "/capabilities", headers=RUNNER).json()
        assert out["capabilities"] == served
        # every section is one the schema knows, kept as sent
        assert out["strict"] == served


def test_get_capabilities_reports_a_refusal(node, base_url):  # noqa: F811
    out = from_node(node, base_url + "/agui/plain", {})
    assert out["capabilities"] is None
    assert out["error"].startswith("HTTP 401")


def test_a_path_whose_capabilities_row_is_taken_is_refused():
    from tests.convo_apps import make_app

    app = make_app()

    async def other(ctx):
        yield {"type": "run:end"}

    with pytest.raises(ValueError, match="already taken"):
        app.agent("other", path="/agui/plain/capabilities")(other)
    with pytest.raises(ValueError, match="capabilities"):
        app.agent("bad", capabilities=["streaming"])(other)
