"""Attachments through the real clients (issue 20): @ag-ui/client 1.0.0 and
0.0.58 send content parts (0.0.58 its legacy ``binary`` part too) to a served
App and take its streams; a join's MESSAGES_SNAPSHOT passes each client's own
event schemas (0.0.58 parses every event and knows no ``file`` source: a run
of a 0.0.x client replays one as the legacy ``binary`` part it knows)."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid

import httpx
import pytest

from tests.ingress_apps import parse_sse
from tests.test_interop import INTEROP, node, run_client, serve_rsgi  # noqa: F401

PNG = base64.b64encode(b"\x89PNG tiny").decode()
IMAGE = {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}}
LINKED = {"type": "image", "source": {"type": "url", "value": "https://x.test/cat.jpg"}}
FILED = {
    "type": "document",
    "source": {"type": "file", "value": "file-abc", "mimeType": "application/pdf"},
    "metadata": {"filename": "report.pdf"},
}


@pytest.fixture(scope="module")
def url():
    with serve_rsgi("tests.attachment_apps:app") as base:
        yield base


@pytest.mark.parametrize("version", ["1.0.0", "0.0.58"])
def test_a_real_client_sends_parts_and_the_thread_keeps_them(node, url, version, tmp_path):  # noqa: F811
    content = [{"type": "text", "text": "what is it?"}, IMAGE, LINKED]
    thread = f"att-{uuid.uuid4().hex[:8]}"
    scenario = {
        "threadId": thread,
        "initialMessages": [{"id": f"{thread}-u1", "role": "user", "content": content}],
        "runs": [{}, {"addMessages": [{"id": f"{thread}-u2", "role": "user", "content": "and?"}]}],
    }
    out = run_client(node, version, url + "/parts", scenario, tmp_path)
    answers = [m["content"] for m in out["messages"] if m["role"] == "assistant"]
    assert answers == ["text='what is it?' parts=image/data,image/url", "text='and?' parts="]
    stored = httpx.get(f"{url}/threads/{thread}/state").json()["messages"]
    assert stored[0] == {"id": f"{thread}-u1", "role": "user", "content": content}
    assert [m["id"] for m in stored] == [m["id"] for m in out["messages"]]


def test_the_0_0_58_client_sends_its_legacy_binary_part(node, url, tmp_path):  # noqa: F811
    legacy = {"type": "binary", "mimeType": "image/png", "data": PNG, "filename": "a.png"}
    thread = f"bin-{uuid.uuid4().hex[:8]}"
    scenario = {
        "threadId": thread,
        "initialMessages": [{"id": f"{thread}-u1", "role": "user", "content": [legacy]}],
        "runs": [{}],
    }
    out = run_client(node, "0.0.58", url + "/parts", scenario, tmp_path)
    assert out["messages"][-1]["content"] == "text='' parts=image/data"
    stored = httpx.get(f"{url}/threads/{thread}/state").json()["messages"][0]
    assert stored["content"] == [{**IMAGE, "metadata": {"filename": "a.png"}}]


def parse(node, version: str, events: list) -> list:  # noqa: F811
    proc = subprocess.run(
        [node, str(INTEROP / "parse-events.mjs")],
        input=json.dumps({"version": version, "events": events}),
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(proc.stdout)


def prelude(url: str, protocol_version: str | None) -> tuple[list, list]:
    thread = f"join-{uuid.uuid4().hex[:8]}"
    content = [{"type": "text", "text": "look", "id": "p0"}, IMAGE, LINKED, FILED]
    body = {
        "threadId": thread,
        "runId": f"{thread}-r",
        "messages": [{"id": f"{thread}-u1", "role": "user", "content": content}],
    }
    if protocol_version:
        body["protocolVersion"] = protocol_version
    assert httpx.post(url + "/parts", json=body).status_code == 200
    # The reader declares what the run's client declared (a 1.0 reader's join).
    declared = {"agui-protocol-version": protocol_version} if protocol_version else {}
    response = httpx.get(f"{url}/threads/{thread}/runs/{thread}-r/events", headers=declared)
    assert response.status_code == 200, response.text
    events, _ = parse_sse(response.text)
    return events, content


def test_a_join_of_a_0_0_x_run_passes_the_0_0_58_schemas(node, url):  # noqa: F811
    events, content = prelude(url, None)
    results = parse(node, "0.0.58", events)
    assert all(r["valid"] for r in results), [r["issues"] for r in results if not r["valid"]]
    (snapshot,) = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    binary = {"type": "binary", "mimeType": "application/pdf", "id": "file-abc"}
    assert snapshot["messages"][0]["content"] == [
        *content[:3],
        {**binary, "filename": "report.pdf"},
    ]
    # unchanged 1.0 parts: what 0.0.58 cannot take is only the file source
    assert not parse(
        node,
        "0.0.58",
        [{**snapshot, "messages": [{**snapshot["messages"][0], "content": content}]}],
    )[0]["valid"]


def test_a_join_of_a_1_0_run_replays_the_parts_whole(node, url):  # noqa: F811
    events, content = prelude(url, "1.0.0")
    results = parse(node, "1.0.0", events)
    assert all(r["valid"] for r in results), [r["issues"] for r in results if not r["valid"]]
    (snapshot,) = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    assert snapshot["messages"][0]["content"] == content
