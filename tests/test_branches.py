"""Branches over HTTP (issue 20): regenerate and edit as chat pages do them, with
the real @ag-ui/client; the stored thread equals what the page shows after each
step, and the branches the thread left stay readable."""

from __future__ import annotations

import json
import subprocess
import uuid

import httpx
import pytest

from tests.servers import serve
from tests.test_interop import CLIENT_VERSIONS, INTEROP, node  # noqa: F401
from tests.test_stop_then_type import post_until_admitted

RUNNER = {"authorization": "Bearer runner"}


@pytest.fixture(scope="module", params=["rsgi", "asgi"])
def base_url(request):
    with serve("tests.convo_apps:app", interface=request.param) as url:
        yield url


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_regenerate_and_edit_store_what_the_page_shows(node, base_url, version):  # noqa: F811
    thread = f"branches-{uuid.uuid4().hex[:8]}"
    proc = subprocess.run(
        [
            node,
            str(INTEROP / "branches.mjs"),
            version,
            base_url + "/agui/plain",
            base_url,
            thread,
            json.dumps(RUNNER),
        ],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["warnings"] == [], out
    steps = {s["name"]: s for s in out["steps"]}
    for s in out["steps"]:
        assert s["error"] is None, s
        assert s["stored"] == s["shown"], s  # the stored thread is the page's
    said = [[m["content"] for m in steps[name]["shown"]] for name in steps]
    assert said == [
        ["hello", "You said: hello"],
        ["hello", "You said: hello"],  # the agent ran on the resent message again
        ["hi again", "You said: hi again"],
        ["hi again", "You said: hi again", "more", "You said: more"],
        ["hi again", "You said: hi again", "instead", "You said: instead"],
    ]
    regenerated = steps["regenerate"]["shown"][1]["id"]
    assert regenerated != steps["send"]["shown"][1]["id"]  # a new answer, not the old one

    # Every branch the thread left stays readable, in the order they were left.
    listed = httpx.get(f"{base_url}/threads/{thread}/branches", headers=RUNNER).json()
    assert [(b["branchId"], b["forkedAfter"], b["runId"]) for b in listed["branches"]] == [
        ("1", "u1", "r2"),
        ("2", None, "r3"),
        ("3", steps["follow up"]["shown"][1]["id"], "r5"),
    ]
    assert listed["current"]["messageCount"] == 4
    for number, name in (("1", "send"), ("2", "regenerate"), ("3", "follow up")):
        branch = httpx.get(f"{base_url}/threads/{thread}/branches/{number}", headers=RUNNER)
        assert branch.status_code == 200, branch.text
        assert [
            {k: m[k] for k in ("id", "role", "content")} for m in branch.json()["messages"]
        ] == steps[name]["stored"]
    missing = httpx.get(f"{base_url}/threads/{thread}/branches/9", headers=RUNNER)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"

    # The Agent Protocol: the history is the current state, then the branches
    # newest first, each under a checkpoint id that reads it back.
    history = httpx.post(
        f"{base_url}/threads/{thread}/history", json={"limit": 10}, headers=RUNNER
    ).json()
    assert [s["metadata"].get("branch_id") for s in history] == [None, "3", "2", "1"]
    assert history[0]["messages"] == listed_current(base_url, thread)
    first = history[-1]
    assert [m["content"] for m in first["messages"]] == ["hello", "You said: hello"]
    checkpoint_id = first["checkpoint"]["checkpoint_id"]
    again = httpx.get(f"{base_url}/threads/{thread}/state/{checkpoint_id}", headers=RUNNER)
    assert again.status_code == 200 and again.json() == first
    by_body = httpx.post(
        f"{base_url}/threads/{thread}/state/checkpoint",
        json={"checkpoint": {"checkpoint_id": checkpoint_id}},
        headers=RUNNER,
    )
    assert by_body.json() == first
    only = httpx.post(
        f"{base_url}/threads/{thread}/history",
        json={"checkpoint": {"checkpoint_id": checkpoint_id}},
        headers=RUNNER,
    ).json()
    assert only == [first]
    assert httpx.get(f"{base_url}/threads/{thread}/state/nope", headers=RUNNER).status_code == 404
    assert len(httpx.post(
        f"{base_url}/threads/{thread}/history", json={"limit": 2}, headers=RUNNER
    ).json()) == 2  # fmt: skip


def listed_current(base_url: str, thread: str) -> list[dict]:
    return httpx.get(f"{base_url}/threads/{thread}/state", headers=RUNNER).json()["messages"]


def test_a_resent_answer_cut_short_cuts_the_stored_one_to_it(base_url):
    """The page shows less of an answer than the thread holds (it stopped
    reading): resent so, the stored answer is cut to it on a new branch."""
    thread = f"prefix-{uuid.uuid4().hex[:8]}"
    u1 = {"id": "u1", "role": "user", "content": "one"}
    body = {"threadId": thread, "runId": "r1", "messages": [u1]}
    assert httpx.post(base_url + "/agui/plain", json=body, headers=RUNNER).status_code == 200
    stored = listed_current(base_url, thread)
    assert [m["content"] for m in stored] == ["one", "You said: one"]
    shown = {**stored[1], "content": "You said"}
    u2 = {"id": "u2", "role": "user", "content": "two"}
    body = {"threadId": thread, "runId": "r2", "messages": [u1, shown, u2]}
    assert httpx.post(base_url + "/agui/plain", json=body, headers=RUNNER).status_code == 200
    after = listed_current(base_url, thread)
    assert [m["content"] for m in after] == ["one", "You said", "two", "You said: two"]
    left = httpx.get(f"{base_url}/threads/{thread}/branches/1", headers=RUNNER).json()
    assert [m["content"] for m in left["messages"]] == ["one", "You said: one"]


def test_stop_then_type_stores_what_the_page_showed(base_url):
    """A Stop without the cancel helper: the run goes on past what the page
    showed; the next message (it supersedes the run) resends the answer as
    shown, and the thread holds that, the longer one kept on a branch."""
    thread = f"stopped-{uuid.uuid4().hex[:8]}"
    u1 = {"id": "u1", "role": "user", "content": "one"}
    body = {"threadId": thread, "runId": "r1", "messages": [u1]}
    shown = None
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", base_url + "/agui/halting", json=body, headers=RUNNER) as first,
    ):
        for line in first.iter_lines():
            event = json.loads(line[5:]) if line.startswith("data:") else {}
            if event.get("type") == "TEXT_MESSAGE_CONTENT":
                shown = {"id": event["messageId"], "role": "assistant", "content": event["delta"]}
                break  # the page stops here
    assert shown is not None and shown["content"] == "partial "
    u2 = {"id": "u2", "role": "user", "content": "two"}
    second = post_until_admitted(
        base_url, {"threadId": thread, "runId": "r2", "messages": [u1, shown, u2]}
    )
    assert second.status_code == 200, second.text
    after = listed_current(base_url, thread)
    assert [m["content"] for m in after] == ["one", "partial ", "two", "You said: two"]
    left = httpx.get(f"{base_url}/threads/{thread}/branches/1", headers=RUNNER).json()
    assert [m["content"] for m in left["messages"]] == ["one", "partial answer"]


def test_a_join_of_a_regenerate_shows_the_new_branch(base_url):
    """MESSAGES_SNAPSHOT in a join, and the state while the run goes on, show
    the current branch: the old answer is not in it."""
    thread = f"join-{uuid.uuid4().hex[:8]}"
    u1 = {"id": "u1", "role": "user", "content": "one"}
    body = {"threadId": thread, "runId": "r1", "messages": [u1]}
    assert httpx.post(base_url + "/agui/plain", json=body, headers=RUNNER).status_code == 200
    old = listed_current(base_url, thread)[1]["id"]
    body = {"threadId": thread, "runId": "r2", "messages": [u1]}
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", base_url + "/agui/halting", json=body, headers=RUNNER) as run,
    ):
        lines = run.iter_lines()
        for line in lines:
            if line.startswith("data:") and '"TEXT_MESSAGE_CONTENT"' in line:
                break
        assert [m["id"] for m in listed_current(base_url, thread)] == ["u1"]
        with client.stream("GET", f"{base_url}/threads/{thread}/events", headers=RUNNER) as join:
            snapshot = None
            for line in join.iter_lines():
                event = json.loads(line[5:]) if line.startswith("data:") else {}
                if event.get("type") == "MESSAGES_SNAPSHOT":
                    snapshot = event["messages"]
                    break
        assert snapshot is not None and snapshot[0]["id"] == "u1"
        assert old not in [m["id"] for m in snapshot] and len(snapshot) == 2
        cancel = client.post(f"{base_url}/threads/{thread}/runs/r2/cancel", headers=RUNNER)
        assert cancel.status_code == 202
    assert [m["content"] for m in listed_current(base_url, thread)] == ["one", "partial answer"]


def test_parent_run_id_names_the_branch_point(base_url):
    """AG-UI 1.0 parentRunId: a client that sends only its new message names
    the run the new branch follows (without it, the message would append)."""
    thread = f"parent-{uuid.uuid4().hex[:8]}"

    def post(run_id: str, messages, **extra) -> httpx.Response:
        body = {"threadId": thread, "runId": run_id, "messages": messages, **extra}
        return httpx.post(base_url + "/agui/plain", json=body, headers=RUNNER, timeout=30)

    assert post("r1", [{"id": "u1", "role": "user", "content": "one"}]).status_code == 200
    assert post("r2", [{"id": "u2", "role": "user", "content": "two"}]).status_code == 200
    assert len(listed_current(base_url, thread)) == 4
    u3 = {"id": "u3", "role": "user", "content": "three"}
    assert post("r3", [u3], parentRunId="r1").status_code == 200
    after = listed_current(base_url, thread)
    assert [m["content"] for m in after] == ["one", "You said: one", "three", "You said: three"]
    listed = httpx.get(f"{base_url}/threads/{thread}/branches", headers=RUNNER).json()
    [left] = listed["branches"]
    assert (left["forkedAfter"], left["runId"], left["messageCount"]) == (after[1]["id"], "r3", 4)
    refused = post("r4", [u3], parentRunId=7)
    assert refused.status_code == 400 and "parentRunId" in refused.json()["error"]["message"]
