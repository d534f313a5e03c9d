"""The Agent Protocol routes, driven by the real LangGraph SDK (``langgraph-sdk``, async).

One granian server (RSGI) serves ``tests.agent_protocol_apps:app`` for the
module; ``test_agent_protocol_sync.py`` drives the same calls with the sync
client over ASGI, and ``test_agent_protocol_mixed.py`` mixes both protocols
on one thread with the real ``@ag-ui/client``.
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError
from langgraph_sdk.schema import Command

from tests.servers import serve

ASK = {"messages": [{"role": "user", "content": "what is 6 * 7?"}]}


@pytest.fixture(scope="module")
def base_url():
    with serve("tests.agent_protocol_apps:app", env={"AGUI_DEMO_DELAY": "0"}) as url:
        yield url


@pytest.fixture
async def client(base_url):
    client = get_client(url=base_url, api_key=None)
    yield client
    await client.aclose()


def _human(text: str) -> dict:
    return {"messages": [{"role": "human", "content": text}]}


async def _thread(client, **metadata) -> str:
    return (await client.threads.create(metadata=metadata or None))["thread_id"]


async def test_threads_create_get_update_search_delete(client):
    own = f"t-{uuid.uuid4()}"
    tag = uuid.uuid4().hex
    thread = await client.threads.create(thread_id=own, metadata={"tag": tag, "n": 1})
    assert thread["thread_id"] == own and thread["status"] == "idle"
    assert thread["metadata"] == {"tag": tag, "n": 1} and thread["values"] == {"messages": []}
    assert thread["created_at"].endswith("Z") and thread["interrupts"] == {}
    with pytest.raises(ConflictError):
        await client.threads.create(thread_id=own)
    same = await client.threads.create(thread_id=own, if_exists="do_nothing")
    assert same["metadata"] == {"tag": tag, "n": 1}
    assert (await client.threads.get(own))["thread_id"] == own

    updated = await client.threads.update(own, metadata={"n": 2, "extra": True})
    assert updated["metadata"] == {"tag": tag, "n": 2, "extra": True}

    other = await client.threads.create(metadata={"tag": tag})
    found = await client.threads.search(metadata={"tag": tag})
    assert [t["thread_id"] for t in found] == [other["thread_id"], own]  # newest update first
    assert [t["thread_id"] for t in await client.threads.search(metadata={"tag": tag, "n": 2})] == [
        own
    ]
    assert len(await client.threads.search(metadata={"tag": tag}, limit=1)) == 1
    assert len(await client.threads.search(metadata={"tag": tag}, offset=1)) == 1
    idle = await client.threads.search(metadata={"tag": tag}, status="idle")
    assert len(idle) == 2
    assert await client.threads.search(metadata={"tag": tag}, status="busy") == []
    assert [t["thread_id"] for t in await client.threads.search(ids=[own])] == [own]

    await client.runs.wait(own, "fail", input=_human("x"), raise_error=False)
    assert (await client.threads.get(own))["status"] == "error"
    await client.threads.delete(own)
    with pytest.raises(NotFoundError):
        await client.threads.get(own)
    # Made again, the id is a new thread: no runs, no error, no messages.
    again = await client.threads.create(thread_id=own)
    assert again["status"] == "idle" and again["values"] == {"messages": []}
    assert await client.runs.list(own) == []
    await client.threads.delete(own)
    with pytest.raises(NotFoundError):
        await client.threads.delete(own)
    assert [t["thread_id"] for t in await client.threads.search(metadata={"tag": tag})] == [
        other["thread_id"]
    ]


async def test_a_run_marks_its_thread_with_its_graph_and_assistant(client):
    """What agent-chat-ui lists a graph's threads by (threads.search on graph_id)."""
    tag = uuid.uuid4().hex
    thread_id = await _thread(client, tag=tag)
    await client.runs.wait(thread_id, "slow", input=_human("go 1"))
    marked = {"tag": tag, "graph_id": "slow", "assistant_id": "slow"}
    assert (await client.threads.get(thread_id))["metadata"] == marked
    found = await client.threads.search(metadata={"graph_id": "slow", "tag": tag})
    assert [t["thread_id"] for t in found] == [thread_id]
    # The latest run's assistant, as LangGraph keeps it.
    await client.runs.wait(thread_id, "demo", input=_human("hi"))
    assert (await client.threads.get(thread_id))["metadata"]["graph_id"] == "demo"
    # A thread a run makes (if_not_exists="create") is marked from the start.
    made = str(uuid.uuid4())
    await client.runs.wait(made, "slow", input=_human("go 1"), if_not_exists="create")
    metadata = (await client.threads.get(made))["metadata"]
    assert metadata == {"graph_id": "slow", "assistant_id": "slow"}
    # A run refused (409: the thread is busy) marks nothing, and makes no thread.
    running = await client.runs.create(thread_id, "slow", input=_human("go 40"))
    with pytest.raises(httpx.HTTPStatusError, match="409"):
        await client.runs.wait(thread_id, "demo", input=_human("hi"))
    assert (await client.threads.get(thread_id))["metadata"]["graph_id"] == "slow"
    await client.runs.cancel(thread_id, running["run_id"], wait=True)


async def test_runs_wait_gives_the_values_and_the_state_follows(client):
    thread_id = await _thread(client)
    created = []
    values = await client.runs.wait(thread_id, "demo", input=ASK, on_run_created=created.append)
    assert created and created[0]["thread_id"] == thread_id
    messages = values["messages"]
    assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"]
    assert messages[0]["content"] == "what is 6 * 7?"
    assert messages[1]["tool_calls"][0]["name"] == "calculate"
    assert messages[1]["tool_calls"][0]["args"] == {"expression": "6 * 7"}
    assert messages[2]["tool_call_id"] == messages[1]["tool_calls"][0]["id"]
    assert messages[-1]["content"] == "6 * 7 = 42."
    assert values["loop"]["iteration"] == 1  # the agent's own state beside the messages

    state = await client.threads.get_state(thread_id)
    assert state["values"] == {k: v for k, v in values.items() if k != "messages"}
    assert [m["role"] for m in state["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert state["next"] == [] and state["tasks"] == [] and state["interrupts"] == []
    assert state["checkpoint"]["thread_id"] == thread_id and state["checkpoint"]["checkpoint_id"]
    assert state["created_at"] and isinstance(state["metadata"], dict)
    history = await client.threads.get_history(thread_id)
    assert history[0]["checkpoint"] == state["checkpoint"]

    run = await client.runs.get(thread_id, created[0]["run_id"])
    assert run["status"] == "success" and run["assistant_id"] == "demo"
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "idle" and thread["values"]["messages"] == messages

    # A second turn sees the first one.
    again = await client.runs.wait(thread_id, "demo", input=_human("hello"))
    assert "turn 2" in again["messages"][-1]["content"]
    assert len(again["messages"]) == 6


async def _parts(client, thread_id, agent, modes, **kw):
    return [
        (p.event, p.data)
        async for p in client.runs.stream(thread_id, agent, stream_mode=modes, **kw)
    ]


async def test_runs_stream_in_each_mode(client):
    thread_id = await _thread(client)
    parts = await _parts(client, thread_id, "demo", "values", input=ASK)
    assert parts[0][0] == "metadata" and parts[0][1]["run_id"]
    values = [d for e, d in parts if e == "values"]
    assert {e for e, _ in parts} == {"metadata", "values"}
    assert values[-1]["messages"][-1]["content"] == "6 * 7 = 42."
    # The values grow step by step: the tool call, its result, the answer.
    counts = [len(v["messages"]) for v in values]
    assert counts == sorted(counts) and counts[0] <= 2 and counts[-1] == 4

    parts = await _parts(client, thread_id, "demo", ["updates"], input=_human("hello"))
    updates = [d for e, d in parts if e == "updates"]
    assert all(list(u) == ["demo"] for u in updates)
    said = [u["demo"]["messages"][0] for u in updates if "messages" in u["demo"]]
    assert said[-1]["type"] == "ai" and said[-1]["content"].startswith("You said: 'hello'")
    assert any("loop" in u["demo"] for u in updates)

    parts = await _parts(client, thread_id, "demo", "messages-tuple", input=ASK)
    chunks = [d for e, d in parts if e == "messages"]
    assert all(meta["langgraph_node"] == "demo" for _, meta in chunks)
    text = "".join(c["content"] for c, _ in chunks if c["type"] == "AIMessageChunk")
    assert text == "Let me calculate 6 * 7.6 * 7 = 42."
    calls = [c["tool_call_chunks"][0] for c, _ in chunks if c.get("tool_call_chunks")]
    assert calls[0]["name"] == "calculate"
    assert "".join(c["args"] for c in calls) == '{"expression": "6 * 7"}'
    assert [c["type"] for c, _ in chunks if c["type"] == "tool"] == ["tool"]

    parts = await _parts(client, thread_id, "signals", ["custom", "values"], input=_human("go"))
    assert ("custom", {"name": "progress", "value": {"done": 1, "of": 2}}) in parts
    assert [d for e, d in parts if e == "values"][-1]["phase"] == "half"

    parts = await _parts(client, thread_id, "demo", "agui", input=_human("hi"))
    events = [d["type"] for e, d in parts if e == "agui"]
    assert events[0] == "RUN_STARTED" and events[-1] == "RUN_FINISHED"
    assert "TEXT_MESSAGE_CONTENT" in events


async def test_runs_list_dates_agui_runs_by_their_start(base_url, client):
    """A run started over AG-UI is listed (and dated) by when it started, not by
    when a list first saw it."""
    thread_id = await _thread(client)

    async def agui(run_id: str) -> None:
        message = {"id": f"{run_id}-m", "role": "user", "content": "go 1"}
        body = {"threadId": thread_id, "runId": run_id, "messages": [message]}
        async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
            response = await http.post("/agui/slow", json=body)
        assert response.status_code == 200 and b"RUN_FINISHED" in response.content

    await agui("first")
    await asyncio.sleep(0.05)
    created = []
    await client.runs.wait(thread_id, "slow", input=_human("go 1"), on_run_created=created.append)
    await asyncio.sleep(0.05)
    await agui("last")
    runs = await client.runs.list(thread_id)
    assert [r["run_id"] for r in runs] == ["last", created[0]["run_id"], "first"]
    stamps = [r["created_at"] for r in runs]
    assert stamps == sorted(stamps, reverse=True) and len(set(stamps)) == 3
    # Listed again: the same dates.
    assert [r["created_at"] for r in await client.runs.list(thread_id)] == stamps


async def test_runs_create_join_get_and_list(client):
    thread_id = await _thread(client)
    run = await client.runs.create(thread_id, "slow", input=_human("count 6"))
    assert run["status"] in ("pending", "running") and run["thread_id"] == thread_id
    assert (await client.threads.get(thread_id))["status"] == "busy"
    assert (await client.runs.get(thread_id, run["run_id"]))["status"] == "running"
    values = await client.runs.join(thread_id, run["run_id"])
    assert values["messages"][-1]["content"].strip().endswith("tick 5")
    listed = await client.runs.list(thread_id)
    assert [(r["run_id"], r["status"]) for r in listed] == [(run["run_id"], "success")]
    assert await client.runs.list(thread_id, status="error") == []
    assert (await client.threads.get(thread_id))["status"] == "idle"
    await client.runs.delete(thread_id, run["run_id"])
    with pytest.raises(NotFoundError):
        await client.runs.get(thread_id, run["run_id"])


async def test_join_stream_resumes_after_a_dropped_connection(client):
    thread_id = await _thread(client)
    run = await client.runs.create(
        thread_id, "slow", input=_human("count 20"), stream_mode="messages-tuple"
    )
    seen, last_id = [], None
    async for part in client.runs.join_stream(thread_id, run["run_id"]):
        # stream_mode empty: the run's own modes
        assert part.event == "messages"
        seen.append(part.data[0]["content"])
        last_id = part.id
        if len(seen) == 5:
            break  # the connection drops here
    rest = [
        p.data[0]["content"]
        async for p in client.runs.join_stream(thread_id, run["run_id"], last_event_id=last_id)
    ]
    assert seen + rest == [f"tick {n} " for n in range(20)]
    # From the start, with a mode of the caller's choosing.
    again = [
        p.event
        async for p in client.runs.join_stream(
            thread_id, run["run_id"], stream_mode="values", last_event_id="-1"
        )
    ]
    assert again and set(again) == {"values"}


async def test_runs_cancel_stops_a_running_run(client):
    thread_id = await _thread(client)
    run = await client.runs.create(thread_id, "slow", input=_human("count 60"))
    await asyncio.sleep(0.2)
    await client.runs.cancel(thread_id, run["run_id"])
    got = await client.runs.get(thread_id, run["run_id"])
    assert got["status"] == "interrupted"
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "idle"
    partial = thread["values"]["messages"][-1]["content"]
    assert partial.startswith("tick 0") and "tick 59" not in partial  # stopped, partial kept
    with pytest.raises(NotFoundError):
        await client.runs.cancel(thread_id, str(uuid.uuid4()))


async def test_a_cancel_with_wait_answers_204_once_the_run_has_stopped(base_url, client):
    """LangGraph's cancel answers 202 at once, or 204 (no body) with ``wait=true``
    once the run has ended: the thread is then free for the next turn."""
    thread_id = await _thread(client)
    run = await client.runs.create(thread_id, "slow", input=_human("count 60"))
    await asyncio.sleep(0.2)
    path = f"/threads/{thread_id}/runs/{run['run_id']}/cancel"
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
        waited = await http.post(path, params={"wait": "1", "action": "interrupt"})
        assert (waited.status_code, waited.content) == (204, b"")
        assert (await client.runs.get(thread_id, run["run_id"]))["status"] == "interrupted"
        assert (await client.threads.get(thread_id))["status"] == "idle"
        # A run that already ended, and a queued one, the same.
        again = await http.post(path, params={"wait": "true"})
        assert (again.status_code, again.content) == (204, b"")
        await client.runs.create(thread_id, "slow", input=_human("count 4"))
        queued = await client.runs.create(
            thread_id, "demo", input=_human("never"), multitask_strategy="enqueue"
        )
        queued_path = f"/threads/{thread_id}/runs/{queued['run_id']}/cancel"
        waited = await http.post(queued_path, params={"wait": "1"})
        assert (waited.status_code, waited.content) == (204, b"")
        assert (await client.runs.get(thread_id, queued["run_id"]))["status"] == "interrupted"
        # What the SDK sends without wait: 202 and the run.
        unwaited = await http.post(path, params={"wait": "0", "action": "interrupt"})
        assert unwaited.status_code == 202 and unwaited.json()["runId"] == run["run_id"]


async def test_an_interrupt_resumed_with_command(client):
    thread_id = await _thread(client)
    paused = await client.runs.wait(thread_id, "demo", input=_human("approve deleting the draft"))
    (interrupt,) = paused["__interrupt__"]
    assert interrupt["value"]["reason"] == "approval"
    assert interrupt["value"]["message"] == "approve deleting the draft"
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "interrupted"
    assert thread["interrupts"] == {"demo": [interrupt]}
    state = await client.threads.get_state(thread_id)
    assert state["next"] == ["demo"] and state["interrupts"] == [interrupt]
    assert state["tasks"][0]["interrupts"] == [interrupt]

    both = ["values", "updates"]
    parts = await _parts(client, thread_id, "demo", both, command=Command(resume="yes"))
    assert parts[-1][0] == "values" and "__interrupt__" not in parts[-1][1]
    assert parts[-1][1]["messages"][-1]["content"] == "Approved: approve deleting the draft. Done."
    assert (await client.threads.get(thread_id))["status"] == "idle"

    # A stream shows the pause too; a resume by interrupt id answers it.
    parts = await _parts(client, thread_id, "demo", both, input=_human("approve x"))
    (pause,) = [d for e, d in parts if e == "updates" and "__interrupt__" in d]
    assert parts[-1][1]["__interrupt__"] == pause["__interrupt__"]
    answer = {pause["__interrupt__"][0]["id"]: "no"}
    done = await client.runs.wait(thread_id, "demo", command={"resume": answer})
    assert done["messages"][-1]["content"] == "Declined: approve x. Done."
    with pytest.raises(httpx.HTTPStatusError) as refused:  # nothing pending any more
        await client.runs.wait(thread_id, "demo", command={"resume": "yes"})
    assert refused.value.response.status_code == 422


async def test_a_failed_run_is_an_error(client):
    thread_id = await _thread(client)
    with pytest.raises(Exception, match="the agent broke"):
        await client.runs.wait(thread_id, "fail", input=_human("x"))
    values = await client.runs.wait(thread_id, "fail", input=_human("x"), raise_error=False)
    assert values["__error__"]["message"] == "the agent broke"
    assert (await client.threads.get(thread_id))["status"] == "error"
    parts = await _parts(client, thread_id, "fail", "values", input=_human("x"))
    assert parts[-1] == ("error", {"error": "RuntimeError", "message": "the agent broke"})
    assert [r["status"] for r in await client.runs.list(thread_id)] == ["error"] * 3


async def test_multitask_reject_and_enqueue(client):
    thread_id = await _thread(client)
    first = await client.runs.create(thread_id, "slow", input=_human("count 8"))
    with pytest.raises(ConflictError):
        await client.runs.create(thread_id, "slow", input=_human("count 2"))
    with pytest.raises(httpx.HTTPStatusError) as refused:  # wait raises httpx's own errors
        await client.runs.wait(thread_id, "demo", input=_human("hi"), multitask_strategy="reject")
    assert refused.value.response.status_code == 409
    queued = await client.runs.create(
        thread_id, "slow", input=_human("count 2"), multitask_strategy="enqueue"
    )
    assert queued["status"] == "pending"
    values = await client.runs.wait(
        thread_id, "demo", input=_human("after"), multitask_strategy="enqueue"
    )
    # Each ran once, in order: the slow one, the queued one, then this one.
    texts = [m["content"] for m in values["messages"] if m["type"] == "ai"]
    assert texts[0].strip().endswith("tick 7") and texts[1] == "tick 0 tick 1 "
    assert texts[2].startswith("You said: 'after'") and len(texts) == 3
    statuses = {r["run_id"]: r["status"] for r in await client.runs.list(thread_id)}
    assert statuses[first["run_id"]] == statuses[queued["run_id"]] == "success"


async def test_a_queued_run_can_be_cancelled_before_it_starts(client):
    thread_id = await _thread(client)
    await client.runs.create(thread_id, "slow", input=_human("count 4"))
    queued = await client.runs.create(
        thread_id, "demo", input=_human("never"), multitask_strategy="enqueue"
    )
    await client.runs.cancel(thread_id, queued["run_id"])
    assert (await client.runs.get(thread_id, queued["run_id"]))["status"] == "interrupted"
    values = await client.runs.join(thread_id, queued["run_id"])
    assert all(m["content"] != "never" for m in values["messages"])


async def test_a_cancel_leaves_a_run_that_settled_before_it_started_as_it_ended(client):
    """A queued resume that found no interrupt pending ends ``error`` without
    starting: a cancel of it answers that status and leaves it so (it was turned
    ``interrupted``); one cancelled while queued stays ``interrupted``."""
    thread_id = await _thread(client)
    first = await client.runs.create(thread_id, "slow", input=_human("count 4"))
    failed = await client.runs.create(
        thread_id, "slow", command={"resume": "yes"}, multitask_strategy="enqueue"
    )
    cancelled = await client.runs.create(
        thread_id, "demo", input=_human("never"), multitask_strategy="enqueue"
    )
    await client.runs.cancel(thread_id, cancelled["run_id"])
    async with asyncio.timeout(10):
        await client.runs.join(thread_id, first["run_id"])
        values = await client.runs.join(thread_id, failed["run_id"])
    assert values["__error__"]["error"] == "RunNotStarted"
    for run, status in ((failed, "error"), (cancelled, "interrupted")):
        run_id = run["run_id"]
        assert (await client.runs.get(thread_id, run_id))["status"] == status
        answer = await client.runs.cancel(thread_id, run_id)
        assert answer == {"threadId": thread_id, "runId": run_id, "status": status}
        assert (await client.runs.get(thread_id, run_id))["status"] == status
    statuses = {r["run_id"]: r["status"] for r in await client.runs.list(thread_id)}
    assert statuses[failed["run_id"]] == "error"


async def test_stateless_runs(client):
    created = []
    values = await client.runs.wait(None, "demo", input=ASK, on_run_created=created.append)
    assert values["messages"][-1]["content"] == "6 * 7 = 42."
    assert created[0]["thread_id"] is None and created[0]["run_id"]
    parts = [p async for p in client.runs.stream(None, "demo", input=_human("hi"))]
    assert parts[0].event == "metadata" and parts[-1].event == "values"
    thread_id = parts[0].data["thread_id"]
    for _ in range(50):  # the temporary thread goes once the run ended
        try:
            await client.threads.get(thread_id)
        except NotFoundError:
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("the stateless run's thread is still there")


async def test_a_stateless_background_run_deletes_its_thread_unless_kept(client):
    gone = await client.runs.create(None, "demo", input=ASK)
    kept = await client.runs.create(None, "demo", input=ASK, on_completion="keep")
    async with asyncio.timeout(10):
        while True:  # the temporary thread goes once the run ended
            try:
                await client.threads.get(gone["thread_id"])
            except NotFoundError:
                break
            await asyncio.sleep(0.02)
        while (await client.threads.get(kept["thread_id"]))["status"] != "idle":
            await asyncio.sleep(0.02)
    kept_thread = await client.threads.get(kept["thread_id"])
    assert kept_thread["values"]["messages"][-1]["content"] == "6 * 7 = 42."
    listed = [t["thread_id"] for t in await client.threads.search(limit=1000)]
    assert gone["thread_id"] not in listed and kept["thread_id"] in listed


async def test_assistants(client):
    assistant = await client.assistants.get("demo")
    assert assistant["assistant_id"] == assistant["graph_id"] == "demo"
    found = await client.assistants.search()
    assert {a["assistant_id"] for a in found} == {"demo", "slow", "fail", "signals"}
    with pytest.raises(NotFoundError):
        await client.assistants.get("nope")
    # name: a case-insensitive part of the name; metadata: held by the assistant's.
    assert [a["assistant_id"] for a in await client.assistants.search(name="SLO")] == ["slow"]
    assert await client.assistants.search(name="nope") == []
    assert await client.assistants.search(metadata={"x": 1}) == []
    assert len(await client.assistants.search(metadata={})) == 4
    with pytest.raises(UnprocessableEntityError):
        await client.assistants.search(metadata=[1])


async def test_bad_input_is_422_unknown_is_404_never_500(base_url, client):
    thread_id = await _thread(client)
    with pytest.raises(NotFoundError):
        await client.threads.get(str(uuid.uuid4()))
    with pytest.raises(NotFoundError):
        await client.runs.create(str(uuid.uuid4()), "demo", input=ASK)
    with pytest.raises(NotFoundError):
        await client.runs.create(thread_id, "nobody", input=ASK)
    with pytest.raises(NotFoundError):
        await client.runs.get(thread_id, str(uuid.uuid4()))
    with pytest.raises(UnprocessableEntityError):
        await client.runs.create(thread_id, "demo", input=ASK, multitask_strategy="rollback")
    with pytest.raises(UnprocessableEntityError):
        await client.runs.create(thread_id, "demo", input=ASK, stream_mode="debug")
    with pytest.raises(UnprocessableEntityError):
        await client.runs.create(thread_id, "demo", input={"messages": [{"content": "no role"}]})
    with pytest.raises(UnprocessableEntityError):
        await client.threads.create(if_exists="sometimes")
    with pytest.raises(UnprocessableEntityError):  # refused, not silently ignored
        await client.runs.create(thread_id, "demo", input=ASK, interrupt_before=["demo"])
    with pytest.raises(UnprocessableEntityError):
        await client.runs.create(thread_id, "demo", input=ASK, checkpoint_id="c1")
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
        bad = [
            ("POST", f"/threads/{thread_id}/runs/wait", b"{", "application/json", 422),
            ("POST", f"/threads/{thread_id}/runs/wait", b"[]", "application/json", 422),
            ("POST", f"/threads/{thread_id}/runs/wait", b'{"input": 1}', "text/plain", 415),
            ("POST", f"/threads/{thread_id}/runs", b'{"input": {}}', "application/json", 422),
            ("POST", "/threads/search", b'{"limit": -1}', "application/json", 422),
            ("POST", "/threads/search", b'{"limit": "x"}', "application/json", 422),
            ("PUT", f"/threads/{thread_id}", b"{}", "application/json", 405),
            ("GET", "/threads/x/runs/y/stream/more", b"", None, 404),
            ("GET", "/assistants/demo/nothing", b"", None, 404),
        ]
        for method, path, body, kind, status in bad:
            headers = {"content-type": kind} if kind else {}
            response = await http.request(method, path, content=body, headers=headers)
            assert response.status_code == status, (method, path, response.text)
            assert "error" in response.json()
        stream = await http.get(
            f"/threads/{thread_id}/runs/{uuid.uuid4()}/stream", headers={"last-event-id": "x"}
        )
        assert stream.status_code in (404, 422)
        # Each named in its 422, whatever it is given in place of its type or values.
        wrong = {
            "config": [1, "x", [1], True],
            "context": [1, "x", [1], True],
            "durability": [1, "x", [1], True],
            "stream_resumable": [1, "x", [1], "true"],
            # Not served: refused whatever asks for them (0 is no False here).
            "interrupt_before": [0, "*", ["demo"]],
            "interrupt_after": [0, "*", ["demo"]],
            "after_seconds": [5, "x", True],
        }
        for field, values in wrong.items():
            for value in values:
                body = {"assistant_id": "demo", "input": ASK, field: value}
                response = await http.post(f"/threads/{thread_id}/runs", json=body)
                assert response.status_code == 422, (field, value, response.text)
                assert field in response.json()["error"]["message"]
        listed = await http.get(f"/threads/{thread_id}/runs", params={"status": "bogus"})
        assert listed.status_code == 422 and "status" in listed.json()["error"]["message"]
    run = await client.runs.create(
        thread_id, "demo", input=ASK, config={}, context={}, durability="exit"
    )
    await client.runs.join(thread_id, run["run_id"])
    assert [r["run_id"] for r in await client.runs.list(thread_id, status="success")] == [
        run["run_id"]
    ]


async def test_on_disconnect_cancel_stops_the_run_of_a_dropped_stream(client):
    thread_id = await _thread(client)
    created = []
    stream = client.runs.stream(
        thread_id,
        "slow",
        input=_human("count 60"),
        stream_mode="messages-tuple",
        on_disconnect="cancel",
        on_run_created=created.append,
    )
    async for part in stream:
        if part.event == "messages":
            break
    await stream.aclose()  # the connection drops
    for _ in range(100):
        run = await client.runs.get(thread_id, created[0]["run_id"])
        if run["status"] != "running":
            break
        await asyncio.sleep(0.05)
    assert run["status"] == "interrupted"
    partial = (await client.threads.get(thread_id))["values"]["messages"][-1]["content"]
    assert partial.startswith("tick 0") and "tick 59" not in partial


async def test_multitask_interrupt_stops_the_active_run_and_goes_on_from_it(client):
    thread_id = await _thread(client)
    first = await client.runs.create(thread_id, "slow", input=_human("count 60"))
    await asyncio.sleep(0.2)
    values = await client.runs.wait(
        thread_id, "demo", input=_human("instead"), multitask_strategy="interrupt"
    )
    texts = [m["content"] for m in values["messages"] if m["type"] == "ai"]
    assert len(texts) == 2 and texts[0].startswith("tick 0") and "tick 59" not in texts[0]
    assert texts[1].startswith("You said: 'instead'")
    assert (await client.runs.get(thread_id, first["run_id"]))["status"] == "interrupted"


async def test_multitask_interrupt_cancels_the_queued_runs_too(client):
    thread_id = await _thread(client)
    first = await client.runs.create(thread_id, "slow", input=_human("count 60"))
    queued = await client.runs.create(
        thread_id, "demo", input=_human("queued"), multitask_strategy="enqueue"
    )
    values = await client.runs.wait(
        thread_id, "demo", input=_human("instead"), multitask_strategy="interrupt"
    )
    assert values["messages"][-1]["content"].startswith("You said: 'instead'")
    assert (await client.runs.get(thread_id, first["run_id"]))["status"] == "interrupted"
    assert (await client.runs.get(thread_id, queued["run_id"]))["status"] == "interrupted"
    await asyncio.sleep(0.3)  # time for a run still queued to start once the thread is free
    messages = (await client.threads.get(thread_id))["values"]["messages"]
    assert [m["content"] for m in messages if m["type"] == "human"] == ["count 60", "instead"]
    assert (await client.runs.get(thread_id, queued["run_id"]))["status"] == "interrupted"


async def test_cancelling_a_run_that_already_ended_is_no_error(base_url, client):
    thread_id = await _thread(client)
    run = await client.runs.create(thread_id, "demo", input=ASK)
    await client.runs.join(thread_id, run["run_id"])
    # A Stop click that raced the run's end: LangGraph's server leaves the run as it ended.
    await client.runs.cancel(thread_id, run["run_id"])
    assert (await client.runs.get(thread_id, run["run_id"]))["status"] == "success"
    messages = (await client.threads.get(thread_id))["values"]["messages"]
    assert messages[-1]["content"] == "6 * 7 = 42."
    with pytest.raises(NotFoundError):
        await client.runs.cancel(thread_id, str(uuid.uuid4()))
    path = f"/threads/{thread_id}/runs/{run['run_id']}/cancel"
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
        ended = await http.post("/langgraph" + path)
        assert ended.status_code == 202 and ended.json()["status"] == "success"
        # The AG-UI caller (no Agent Protocol query) is told the run had ended.
        ended = await http.post(path)
        assert ended.status_code == 409 and ended.json()["error"]["code"] == "run_ended"


async def test_update_state_writes_values_and_messages_but_not_during_a_run(client):
    thread_id = await _thread(client)
    await client.runs.wait(thread_id, "demo", input=ASK)
    note = {"role": "user", "content": "noted", "id": "note-1"}
    result = await client.threads.update_state(thread_id, {"topic": "math", "messages": [note]})
    state = await client.threads.get_state(thread_id)
    assert state["values"]["topic"] == "math" and state["values"]["loop"]["iteration"] == 1
    assert state["messages"][-1] == {"id": "note-1", "role": "user", "content": "noted"}
    assert state["checkpoint"] == result["checkpoint"]
    run = await client.runs.create(thread_id, "slow", input=_human("count 40"))
    with pytest.raises(ConflictError):
        await client.threads.update_state(thread_id, {"x": 1})
    await client.runs.cancel(thread_id, run["run_id"])
    assert "x" not in (await client.threads.get_state(thread_id))["values"]


async def test_command_update_messages_join_the_thread_never_replace_it(client):
    """LangGraph applies ``command.update``'s messages through its add_messages
    reducer: they join the thread as the run's input, on a resume too; the
    thread's messages are never replaced by them."""
    thread_id = await _thread(client)
    await client.runs.wait(thread_id, "slow", input=_human("hello 1"))
    await client.runs.wait(thread_id, "slow", command={"update": {"messages": [["human", "hi 1"]]}})
    done = await client.runs.wait(thread_id, "slow", input=_human("next 1"))
    said = ["hello 1", "tick 0 ", "hi 1", "tick 0 ", "next 1", "tick 0 "]
    assert [m["content"] for m in done["messages"]] == said
    assert [m["type"] for m in done["messages"]] == ["human", "ai"] * 3
    assert (await client.threads.get(thread_id))["values"]["messages"] == done["messages"]
    state = await client.threads.get_state(thread_id)  # the AG-UI state route
    assert "messages" not in state["values"]
    assert [m["content"] for m in state["messages"]] == said

    paused = await client.runs.wait(thread_id, "demo", input=_human("approve deleting the draft"))
    assert paused["__interrupt__"]
    note = {"role": "human", "content": "note: go ahead"}
    resumed = await client.runs.wait(
        thread_id, "demo", command=Command(resume="yes", update={"messages": [note]})
    )
    shown = [m["content"] for m in resumed["messages"]]
    assert shown[: len(said)] == said and "note: go ahead" in shown[len(said) :]
    assert shown[-1] == "Approved: approve deleting the draft. Done."
    assert (await client.threads.get(thread_id))["values"]["messages"] == resumed["messages"]
    state = await client.threads.get_state(thread_id)
    assert "messages" not in state["values"]
    assert [m["content"] for m in state["messages"]] == shown


async def test_odd_bodies_never_get_a_500(base_url, client):
    thread_id = await _thread(client)
    keys = ["assistant_id", "input", "command", "stream_mode", "metadata", "multitask_strategy"]
    keys += ["if_not_exists", "on_disconnect", "on_completion", "limit", "offset", "status"]
    keys += ["ids", "values", "thread_id", "if_exists"]
    odd = [None, -1.5, True, "", {"a": [None]}]
    paths = ["/threads", "/threads/search", f"/threads/{thread_id}/runs/wait", "/runs/wait"]
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
        for path in paths:
            for key in keys:
                for value in odd:
                    body = {"assistant_id": "demo", key: value}
                    response = await http.post(path, json=body)
                    assert response.status_code < 500, (path, body, response.text)
                    assert response.content, (path, body)


class _CuttingProxy:
    """A TCP proxy to the server that cuts the first ``POST …/runs/stream`` response
    after a few ``messages`` frames: a stream dropped mid-run, as a proxy or a
    restart drops it."""

    def __init__(self, target: str, frames: int = 3):
        host, port = target.removeprefix("http://").split(":")
        self.target = (host, int(port))
        self.frames = frames
        self.cut = 0

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc):
        self.server.close()

    async def _serve(self, reader, writer):
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        state = {"cut": False, "seen": 0}

        async def up():
            while data := await reader.read(65536):
                if b"/runs/stream" in data and data.startswith(b"POST ") and not self.cut:
                    self.cut = 1
                    state["cut"] = True
                upstream_writer.write(data)
                await upstream_writer.drain()

        async def down():
            while data := await upstream_reader.read(65536):
                writer.write(data)
                await writer.drain()
                if state["cut"]:
                    state["seen"] += data.count(b"event: messages")
                    if state["seen"] >= self.frames:
                        break

        tasks = [asyncio.ensure_future(up()), asyncio.ensure_future(down())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        writer.close()
        upstream_writer.close()


async def test_the_sdk_reconnects_a_dropped_stream_through_location(base_url):
    async with _CuttingProxy(base_url) as url:
        client = get_client(url=url, api_key=None)
        try:
            thread_id = await _thread(client)
            ticks = [
                p.data[0]["content"]
                async for p in client.runs.stream(
                    thread_id, "slow", input=_human("count 30"), stream_mode="messages-tuple"
                )
                if p.event == "messages"
            ]
        finally:
            await client.aclose()
    assert ticks == [f"tick {n} " for n in range(30)]  # nothing lost, nothing twice
