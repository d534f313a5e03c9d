"""The Agent Protocol calls with the real LangGraph SDK's sync client, served over ASGI
(``test_agent_protocol.py`` serves RSGI with the async client): the same routes
through both front ends."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError, NotFoundError
from langgraph_sdk.schema import Command

from tests.servers import serve


@pytest.fixture(scope="module")
def client():
    env = {"AGUI_DEMO_DELAY": "0"}
    with serve("tests.agent_protocol_apps:app", env=env, interface="asgi") as url:
        client = get_sync_client(url=url, api_key=None)
        yield client
        client.close()


def _human(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


def test_threads(client):
    tag = uuid.uuid4().hex
    thread = client.threads.create(metadata={"tag": tag})
    assert client.threads.get(thread["thread_id"])["metadata"] == {"tag": tag}
    with pytest.raises(ConflictError):
        client.threads.create(thread_id=thread["thread_id"])
    assert [t["thread_id"] for t in client.threads.search(metadata={"tag": tag})] == [
        thread["thread_id"]
    ]
    client.threads.delete(thread["thread_id"])
    with pytest.raises(NotFoundError):
        client.threads.get(thread["thread_id"])


def test_wait_stream_state_and_resume(client):
    thread_id = client.threads.create()["thread_id"]
    values = client.runs.wait(thread_id, "demo", input=_human("what is 2 + 3?"))
    assert values["messages"][-1]["content"] == "2 + 3 = 5."
    state = client.threads.get_state(thread_id)
    assert state["messages"][-1]["content"] == "2 + 3 = 5." and state["next"] == []

    parts = list(
        client.runs.stream(
            thread_id, "demo", input=_human("hi"), stream_mode=["messages-tuple", "values"]
        )
    )
    assert parts[0].event == "metadata"
    text = "".join(p.data[0]["content"] for p in parts if p.event == "messages")
    assert text.startswith("You said: 'hi'.") and parts[-1].event == "values"

    paused = client.runs.wait(thread_id, "demo", input=_human("approve the plan"))
    assert paused["__interrupt__"][0]["value"]["reason"] == "approval"
    assert client.threads.get_state(thread_id)["next"] == ["demo"]
    done = client.runs.wait(thread_id, "demo", command=Command(resume="yes"))
    assert done["messages"][-1]["content"] == "Approved: approve the plan. Done."


def test_stream_in_every_mode_at_once(client):
    thread_id = client.threads.create()["thread_id"]
    modes = ["values", "updates", "messages-tuple", "custom", "agui"]
    parts = list(client.runs.stream(thread_id, "signals", input=_human("go"), stream_mode=modes))
    names = [p.event for p in parts]
    assert names[0] == "metadata" and set(names) == {"metadata", *modes[:2], "messages", *modes[3:]}
    assert ("custom", {"name": "progress", "value": {"done": 1, "of": 2}}) in [
        (p.event, p.data) for p in parts
    ]
    assert parts[-1].event == "values" and parts[-1].data["messages"][-1]["content"] == "ok"


def test_create_join_join_stream_and_cancel(client):
    thread_id = client.threads.create()["thread_id"]
    modes = ["messages-tuple", "values"]
    run = client.runs.create(thread_id, "slow", input=_human("count 12"), stream_mode=modes)
    ids = []
    for part in client.runs.join_stream(thread_id, run["run_id"]):
        ids.append(part.id)
        if len(ids) == 3:
            break  # the connection drops
    rest = list(client.runs.join_stream(thread_id, run["run_id"], last_event_id=ids[-1]))
    assert all(int(p.id) > int(ids[-1]) for p in rest if p.id)
    ticks = [p.data[0]["content"] for p in rest if p.event == "messages"]
    assert ticks == [f"tick {n} " for n in range(3, 12)]  # nothing lost, nothing twice
    final = rest[-1].data["messages"][-1]["content"]
    assert final.strip().endswith("tick 11")
    assert client.runs.join(thread_id, run["run_id"])["messages"][-1]["content"] == final

    run = client.runs.create(thread_id, "slow", input=_human("count 60"))
    time.sleep(0.2)
    client.runs.cancel(thread_id, run["run_id"], wait=True)
    assert client.runs.get(thread_id, run["run_id"])["status"] == "interrupted"
    assert client.threads.get(thread_id)["status"] == "idle"


def test_the_readme_session_against_the_demo():
    """The README's langgraph-sdk session, as written, against the demo app."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("### Agent Protocol", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0].splitlines()
    lines = [line[4:] for line in block if line.startswith(">>> ")]
    expected = [line for line in block if not line.startswith(">>> ")]
    assert len(lines) == 3
    env = {"AGUI_DEMO_DELAY": "0", "AGUI_DEMO_STORE": "memory://"}
    with serve("agui_bridge.demo:app", env=env) as url:
        scope: dict = {}
        exec(lines[0], scope)
        exec(lines[1].replace("http://127.0.0.1:8000", url), scope)
        assert [repr(eval(lines[2], scope))] == expected
        scope["client"].close()
