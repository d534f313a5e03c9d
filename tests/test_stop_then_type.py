"""Stop, then type (issue 20): a client that stops (aborts its request) and
sends a new message right away supersedes its run, which nobody reads any
more: the old run is stopped like POST …/cancel (its partial answer kept)
instead of a 409 run_active for as long as it goes on. A run that still has
a reader keeps the 409."""

from __future__ import annotations

import json
import subprocess
import time
import uuid

import httpx
import pytest

from tests.servers import serve
from tests.test_interop import CLIENT_VERSIONS, INTEROP, node  # noqa: F401

RUNNER = {"authorization": "Bearer runner"}
AUTH = json.dumps(RUNNER)


@pytest.fixture(scope="module", params=["rsgi", "asgi"])
def base_url(request):
    with serve("tests.convo_apps:app", interface=request.param) as url:
        yield url


def body(thread: str, run: str, text: str) -> dict:
    message = {"id": f"u-{run}", "role": "user", "content": text}
    return {"threadId": thread, "runId": run, "messages": [message], "protocolVersion": "1.0"}


def events_of(text: str) -> list[dict]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def read_until_text(response):
    """Reads up to the first text; the lines' iterator is returned: dropping it
    would close the response (the client would leave)."""
    lines = response.iter_lines()
    for line in lines:
        if line.startswith("data:") and json.loads(line[5:])["type"] == "TEXT_MESSAGE_CONTENT":
            return lines
    raise AssertionError("the run sent no text")


def post_until_admitted(base_url: str, payload: dict, seconds: float = 15.0) -> httpx.Response:
    """The new run, retried while the server has not yet seen the old reader leave."""
    deadline = time.monotonic() + seconds
    while True:
        response = httpx.post(base_url + "/agui/plain", json=payload, headers=RUNNER, timeout=30)
        if response.status_code != 409 or time.monotonic() > deadline:
            return response
        time.sleep(0.5)


def test_a_new_run_supersedes_a_run_whose_reader_left(base_url):
    thread = f"stop-{uuid.uuid4().hex[:8]}"
    with (
        httpx.Client(timeout=30) as client,
        client.stream(
            "POST", base_url + "/agui/slow", json=body(thread, "r1", "one"), headers=RUNNER
        ) as first,
    ):
        assert first.status_code == 200
        read_until_text(first)
        # the client stopped: its request is gone, the run would go on for a minute
    second = post_until_admitted(base_url, body(thread, "r2", "two"))
    assert second.status_code == 200, second.text
    assert events_of(second.text)[-1]["type"] == "RUN_FINISHED"

    old = httpx.get(f"{base_url}/threads/{thread}/runs/r1/events", headers=RUNNER, timeout=30)
    ended = events_of(old.text)
    assert ended[-1]["type"] == "RUN_FINISHED"
    state = httpx.get(f"{base_url}/threads/{thread}/state", headers=RUNNER).json()
    contents = [(m["role"], m["content"]) for m in state["messages"]]
    assert contents == [
        ("user", "one"),
        ("assistant", "partial answer to one"),  # the partial answer is kept, not the rest
        ("user", "two"),
        ("assistant", "You said: two"),
    ]


def test_a_run_that_still_has_a_reader_keeps_the_409(base_url):
    thread = f"busy-{uuid.uuid4().hex[:8]}"
    with (
        httpx.Client(timeout=30) as client,
        client.stream(
            "POST", base_url + "/agui/slow", json=body(thread, "r1", "one"), headers=RUNNER
        ) as first,
    ):
        lines = read_until_text(first)
        time.sleep(1.0)
        refused = httpx.post(
            base_url + "/agui/plain", json=body(thread, "r2", "two"), headers=RUNNER
        )
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "run_active"
        cancel = httpx.post(f"{base_url}/threads/{thread}/runs/r1/cancel", headers=RUNNER)
        assert cancel.status_code == 202
        assert [json.loads(x[5:])["type"] for x in lines if x.startswith("data:")][-1] == (
            "RUN_FINISHED"
        )


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_cancel_on_stop_turns_a_client_stop_into_the_cancel_route(node, base_url, version):  # noqa: F811
    thread, run = f"js-{uuid.uuid4().hex[:8]}", "r1"
    proc = subprocess.run(
        [
            node,
            str(INTEROP / "stop.mjs"),
            version,
            base_url + "/agui/slow",
            thread,
            run,
            json.dumps(RUNNER),
        ],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["error"] is None and out["warnings"] == [], out
    assert out["cancelStatus"] == 202, out
    assert out["cancelBody"] == {"threadId": thread, "runId": run, "status": "cancelled"}
    assert out["shown"] == "partial answer to one"
    # the run ended where the page stopped: the thread holds what the page showed
    old = httpx.get(f"{base_url}/threads/{thread}/runs/{run}/events", headers=RUNNER, timeout=30)
    assert events_of(old.text)[-1]["type"] == "RUN_FINISHED"
    state = httpx.get(f"{base_url}/threads/{thread}/state", headers=RUNNER).json()
    assert [m["content"] for m in state["messages"]] == ["one", "partial answer to one"]


def test_an_agent_protocol_join_stream_is_a_reader(base_url):
    """A background run (never read) keeps the 409; a join-stream reads it (409
    too); once that reader left, the run was read and is abandoned: superseded."""
    thread = f"apj-{uuid.uuid4().hex[:8]}"
    assert httpx.post(f"{base_url}/threads", json={"thread_id": thread}, headers=RUNNER).is_success
    created = httpx.post(
        f"{base_url}/threads/{thread}/runs",
        json={"assistant_id": "slow", "input": {"messages": ["one"]}},
        headers=RUNNER,
    )
    run = created.json()["run_id"]
    refused = httpx.post(base_url + "/agui/plain", json=body(thread, "r2", "two"), headers=RUNNER)
    assert refused.status_code == 409
    with (
        httpx.Client(timeout=30) as client,
        client.stream(
            "GET",
            f"{base_url}/threads/{thread}/runs/{run}/stream?stream_mode=messages-tuple",
            headers=RUNNER,
        ) as joined,
    ):
        lines = joined.iter_lines()
        assert any(line.startswith("event: messages") for line in lines)
        refused = httpx.post(
            base_url + "/agui/plain", json=body(thread, "r3", "three"), headers=RUNNER
        )
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "run_active"
        del lines  # the joining client leaves
    admitted = post_until_admitted(base_url, body(thread, "r4", "four"))
    assert admitted.status_code == 200, admitted.text
    contents = [m["content"] for m in state_messages(base_url, thread)]
    assert contents == ["one", "partial answer to one", "four", "You said: four"]
    # The superseded run was stopped: its record says so, as a cancelled one's does.
    record = httpx.get(f"{base_url}/threads/{thread}/runs/{run}", headers=RUNNER).json()
    assert record["status"] == "interrupted", record


def state_messages(base_url: str, thread: str) -> list[dict]:
    return httpx.get(f"{base_url}/threads/{thread}/state", headers=RUNNER).json()["messages"]
