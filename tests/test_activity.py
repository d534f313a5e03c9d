"""Activity messages over HTTP (issue 20), with the real @ag-ui/client 1.0.0 and
0.0.58: the thread stores the activity messages the page shows (their place,
their content after every delta), a reload and a page joining mid-run show
them too, and a follow-up, a regenerate and an edit keep stored == shown."""

from __future__ import annotations

import json
import subprocess
import uuid

import httpx
import pytest

from tests.servers import serve
from tests.test_interop import CLIENT_VERSIONS, INTEROP, node  # noqa: F401


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    marks = tmp_path_factory.mktemp("marks")
    with serve("tests.activity_apps:app", env={"AGUI_TEST_MARKS": str(marks)}) as url:
        yield url, marks


def kinds(messages: list[dict]) -> list[tuple]:
    return [(m["role"], m["id"]) for m in messages]


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_the_thread_stores_the_activity_messages_the_page_shows(node, served, version):  # noqa: F811
    base_url, marks = served
    thread = f"activity-{uuid.uuid4().hex[:8]}"
    proc = subprocess.run(
        [
            node,
            str(INTEROP / "activity.mjs"),
            version,
            base_url + "/agui/planner",
            base_url,
            thread,
            marks,
        ],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["warnings"] == [], out  # the client's verifier and reducer: nothing to say
    steps = {s["name"]: s for s in out["steps"]}
    for step in out["steps"]:
        assert step["errors"] == [None] * len(step["errors"]), step
        assert step["stored"] == step["shown"], step["name"]  # the stored thread is the page's
        assert step["reloaded"] == step["shown"], step["name"]  # and so is a reload's

    run = steps["run"]
    assert run["joined"] == run["shown"]  # the page that joined mid-run ends like the one that ran
    # It joined with the plan as it stood then: one delta applied, its answer open.
    plan = {"id": "plan", "role": "activity", "activityType": "plan"}
    assert [m for m in run["atJoin"] if m["role"] == "activity"] == [
        {**plan, "content": {"steps": ["read", "answer"], "done": 0}}
    ]
    assert run["shown"] == [
        {"id": "u1", "role": "user", "content": "wait: plan it"},
        {**plan, "content": {"steps": ["read", "answer"], "done": 1}},
        {"id": "r1:reply", "role": "assistant", "content": "You said: wait: plan it (done)"},
        {
            "id": "progress-r1",
            "role": "activity",
            "activityType": "progress",
            "content": {"pct": 100},
        },
    ]
    # The follow-up's plan reuses the id the thread holds: it streams under a
    # fresh one, after the follow-up, and the first run's plan stays as it was.
    assert kinds(steps["follow up"]["shown"]) == [
        *kinds(run["shown"]),
        ("user", "u2"),
        ("activity", "r2:a1"),
        ("assistant", "r2:reply"),
        ("activity", "progress-r2"),
    ]
    assert steps["follow up"]["shown"][1] == run["shown"][1]
    assert kinds(steps["regenerate"]["shown"]) == [
        *kinds(run["shown"]),
        ("user", "u2"),
        ("activity", "r3:a1"),
        ("assistant", "r3:reply"),
        ("activity", "progress-r3"),
    ]
    assert kinds(steps["edit"]["shown"]) == [
        *kinds(run["shown"]),
        ("user", "u3"),
        ("activity", "r4:a1"),
        ("assistant", "r4:reply"),
        ("activity", "progress-r4"),
    ]

    # The branches the regenerate and the edit left hold the activity messages they had.
    listed = httpx.get(f"{base_url}/threads/{thread}/branches").json()
    assert [(b["forkedAfter"], b["runId"]) for b in listed["branches"]] == [
        ("u2", "r3"),
        ("progress-r1", "r4"),
    ]
    kept = httpx.get(f"{base_url}/threads/{thread}/branches/1").json()["messages"]
    assert kept == steps["follow up"]["stored"]

    # The Agent Protocol's LangGraph messages have no activity kind: they are
    # left out there (as reasoning is); its ThreadState's AG-UI messages keep them.
    state = httpx.get(f"{base_url}/threads/{thread}/state").json()
    assert state["messages"] == steps["edit"]["stored"]
    graph = httpx.get(f"{base_url}/langgraph/threads/{thread}/state").json()
    assert [m["id"] for m in graph["values"]["messages"]] == [
        m["id"] for m in state["messages"] if m["role"] != "activity"
    ]
    history = httpx.post(f"{base_url}/threads/{thread}/history", json={"limit": 1}).json()
    assert history[0]["messages"] == state["messages"]
