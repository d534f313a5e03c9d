"""Every id a run makes is unique in its thread, and no turn is swallowed (issue 8).

Clients reuse runIds: CopilotKit's ``useInterrupt`` resumes under the
interrupted run's id, a retried body repeats its runId, a hand-written client
may send a constant one. Ids derived from the runId (``{runId}:m1``, ``:r1``,
``:i1``, the demo's tool call and interrupt ids) must then skip the ids the
thread already holds, or the client glues the new reply onto an old message and
the store, which keeps one message per id, drops it.
"""

from __future__ import annotations

import time

import httpx
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui
from agui_bridge.context import RunContext

from tests.ingress_apps import make_app, messages_from_events, parse_sse, run_body
from tests.servers import serve


@pytest.fixture
async def client():
    transport = httpx.ASGITransport(app=make_app(store="memory://"))
    async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=20) as h:
        yield h


@pytest.fixture(scope="module")
def demo():
    env = {"AGUI_DEMO_STORE": "memory://", "AGUI_DEMO_DELAY": "0"}
    with serve("agui_bridge.demo:app", env=env) as base_url:
        yield base_url


def thread(name: str) -> str:
    return f"{name}-{time.monotonic_ns()}"


def events_of(response) -> list[dict]:
    assert response.status_code == 200, response.text
    events, _ = parse_sse(response.text)
    assert_valid_agui(events)
    return events


def text_of(events) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def all_ids(messages) -> list[str]:
    """Message ids and tool call ids, each as often as the thread holds it."""
    ids = []
    for message in messages:
        ids.append(message["id"])
        ids.extend(call["id"] for call in message.get("toolCalls") or ())
    return ids


def assert_unique(messages) -> None:
    ids = all_ids(messages)
    assert len(ids) == len(set(ids)), f"an id is held twice: {ids}"


async def stored(http, thread_id) -> list[dict]:
    response = await http.get(f"/threads/{thread_id}/state")
    assert response.status_code == 200, response.text
    return response.json()["messages"]


# -- the repeated body (curl the same runId twice) ------------------------------


@pytest.mark.parametrize("carry", [False, True], ids=["bare", "with-replies"])
async def test_a_repeated_run_id_keeps_every_reply(client, carry):
    """The same body twice (one runId), a new user message the second time."""
    tid = thread("repeat")
    first = [{"id": "u1", "role": "user", "content": "hello"}]
    events = events_of(await client.post("/ag-ui/run", json=run_body(tid, first, "R")))
    assert text_of(events) == "turn 1: you said hello"
    second = first + (messages_from_events(events) if carry else [])
    second.append({"id": "u2", "role": "user", "content": "again"})
    events = events_of(await client.post("/ag-ui/run", json=run_body(tid, second, "R")))
    assert text_of(events) == "turn 2: you said again"
    [start] = [e for e in events if e["type"] == "TEXT_MESSAGE_START"]
    assert start["messageId"] == "R:m2"  # the readable form, with the next free n

    messages = await stored(client, tid)
    if not carry:
        # The client left out the reply it was sent: a new branch after u1 (issue
        # 20); the old one stays readable, and the new reply's id skips its ids.
        assert [m["id"] for m in messages] == ["u1", "u2", "R:m2"]
        left = (await client.get(f"/threads/{tid}/branches/1")).json()["messages"]
        assert [m["id"] for m in left] == ["u1", "R:m1"]
        return
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "hello"),
        ("assistant", "turn 1: you said hello"),
        ("user", "again"),
        ("assistant", "turn 2: you said again"),
    ]
    assert [m["id"] for m in messages] == ["u1", "R:m1", "u2", "R:m2"]


async def test_a_constant_run_id_over_many_turns(client):
    tid = thread("constant")
    conversation = []
    for turn in range(1, 4):
        conversation.append({"id": f"u{turn}", "role": "user", "content": f"word{turn}"})
        events = events_of(await client.post("/ag-ui/run", json=run_body(tid, conversation, "k")))
        assert text_of(events) == f"turn {turn}: you said word{turn}"
        conversation += messages_from_events(events)
    messages = await stored(client, tid)
    assert messages == conversation
    assert_unique(messages)


async def test_an_id_less_user_message_under_a_reused_run_id(client):
    tid = thread("idless")
    for words in ("one", "two"):
        body = run_body(tid, [{"role": "user", "content": words}], "R")
        events = events_of(await client.post("/ag-ui/run", json=body))
        assert text_of(events).endswith(f"you said {words}")
    messages = await stored(client, tid)
    assert [m["content"] for m in messages if m["role"] == "user"] == ["one", "two"]
    assert_unique(messages)


# -- a resent message id with different content ---------------------------------


async def test_a_held_id_with_new_content_for_the_turn_is_refused(client):
    """Unless the client cut what followed it (an edit: issue 20, a new branch),
    the newest user message under a held id must be the held one."""
    tid = thread("conflict")
    body = run_body(tid, [{"id": "u1", "role": "user", "content": "hello"}])
    events = events_of(await client.post("/ag-ui/run", json=body))
    before = await stored(client, tid)

    sent = [{"id": "u1", "role": "user", "content": "something else"}]
    body = run_body(tid, sent + messages_from_events(events))
    response = await client.post("/ag-ui/run", json=body)
    assert response.status_code == 409, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == "message_id_conflict"
    assert "u1" in error["message"]
    assert await stored(client, tid) == before
    # The thread is not left claimed: the same turn under a new id runs.
    body = run_body(tid, [*before, {"id": "u2", "role": "user", "content": "something else"}])
    events = events_of(await client.post("/ag-ui/run", json=body))
    assert text_of(events) == "turn 2: you said something else"
    # Sent without what followed it, the edit starts a new branch from the start.
    events = events_of(await client.post("/ag-ui/run", json=run_body(tid, sent)))
    assert text_of(events) == "turn 1: you said something else"
    assert [m["content"] for m in await stored(client, tid)] == [
        "something else",
        "turn 1: you said something else",
    ]


async def test_an_earlier_resent_message_keeps_the_stored_one(client):
    """Earlier messages of a resent array are taken as already in the history."""
    tid = thread("earlier")
    body = run_body(tid, [{"id": "u1", "role": "user", "content": "hello"}])
    events = events_of(await client.post("/ag-ui/run", json=body))
    [reply] = messages_from_events(events)
    edited = [
        {"id": "u1", "role": "user", "content": "edited"},
        {**reply, "content": "edited too"},
        {"id": "u2", "role": "user", "content": "next"},
    ]
    events = events_of(await client.post("/ag-ui/run", json=run_body(tid, edited)))
    assert text_of(events) == "turn 2: you said next"
    messages = await stored(client, tid)
    assert [m["content"] for m in messages][:2] == ["hello", "turn 1: you said hello"]


async def test_an_identical_resend_is_not_a_conflict(client):
    tid = thread("same")
    body = run_body(tid, [{"id": "u1", "role": "user", "content": "hello"}])
    first = events_of(await client.post("/ag-ui/run", json=body))
    # Under a new runId it is a regenerate (issue 20): the agent answers the
    # resent message again, on a new branch after it; the first answer is
    # kept on the branch the thread left.
    events = events_of(await client.post("/ag-ui/run", json=body))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert text_of(events) == "turn 1: you said hello"
    messages = await stored(client, tid)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1:] == messages_from_events(events)
    left = (await client.get(f"/threads/{tid}/branches/1")).json()["messages"]
    assert left[1:] == messages_from_events(first)
    assert_unique(messages + left[1:])


async def test_a_retried_body_under_its_run_id_is_a_replay(client):
    tid = thread("retry")
    body = run_body(tid, [{"id": "u1", "role": "user", "content": "hello"}], "R")
    first = await client.post("/ag-ui/run", json=body)
    again = await client.post("/ag-ui/run", json=body)
    assert again.status_code == 200
    assert again.content == first.content
    assert [m["role"] for m in await stored(client, tid)] == ["user", "assistant"]


async def test_an_edit_under_the_run_id_of_its_run_is_not_a_replay(client):
    """The newest user message resent with other content under the runId that
    carried it is new input, as under any runId: an edit (a new branch), not the
    old run's stream again with the edit dropped."""
    tid = thread("edit-retry")
    one = run_body(tid, [{"id": "u1", "role": "user", "content": "one"}], "r1")
    first = events_of(await client.post("/ag-ui/run", json=one))
    assert text_of(first) == "turn 1: you said one"

    edited = run_body(tid, [{"id": "u1", "role": "user", "content": "EDITED"}], "r1")
    response = await client.post("/ag-ui/run", json=edited)
    assert text_of(events_of(response)) == "turn 1: you said EDITED"
    messages = await stored(client, tid)
    assert [m["content"] for m in messages] == ["EDITED", "turn 1: you said EDITED"]
    left = (await client.get(f"/threads/{tid}/branches/1")).json()["messages"]
    assert [m["content"] for m in left] == ["one", "turn 1: you said one"]
    assert_unique(messages + left[1:])

    # The edit retried is a replay of the edit's run.
    again = await client.post("/ag-ui/run", json=edited)
    assert again.status_code == 200 and again.content == response.content
    assert await stored(client, tid) == messages
    # Edited again with what followed it: not an edit, refused as under any runId.
    conflict = [{"id": "u1", "role": "user", "content": "other"}, *messages[1:]]
    refused = await client.post("/ag-ui/run", json=run_body(tid, conflict, "r1"))
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "message_id_conflict"
    assert await stored(client, tid) == messages


# -- ids an agent supplies ------------------------------------------------------


async def test_an_agent_reusing_a_tool_call_id_fails_its_run_visibly(client):
    """The echo agent's "tool" turn always uses the tool call id "call-1"."""
    tid = thread("agent-id")
    conversation = [{"id": "u1", "role": "user", "content": "tool"}]
    events = events_of(await client.post("/ag-ui/run", json=run_body(tid, conversation)))
    assert events[-1]["type"] == "RUN_FINISHED"
    conversation += messages_from_events(events)
    conversation.append({"id": "u2", "role": "user", "content": "tool"})
    events = events_of(await client.post("/ag-ui/run", json=run_body(tid, conversation)))
    error = events[-1]
    assert error["type"] == "RUN_ERROR"
    assert "call-1" in error["message"]
    assert "already held by the thread" in error["message"]
    assert text_of(events) == "let me add"
    messages = await stored(client, tid)
    assert_unique(messages)
    # The turn is kept, and so is the reply the client saw before the error
    # (closed where the run failed), as its reducer holds it.
    assert messages == conversation + messages_from_events(events)
    assert messages[-1]["content"] == "let me add"


# -- RunContext.new_id ----------------------------------------------------------


def make_ctx(held=()) -> RunContext:
    return RunContext(thread_id="t", run_id="R", agent_id="a", input="", held=set(held))


def test_new_id_is_readable_and_unique_in_the_thread():
    ctx = make_ctx(held={"R:calc", "R:calc-2"})
    assert ctx.new_id("approve") == "R:approve"
    assert ctx.new_id("approve") == "R:approve-2"
    assert ctx.new_id("calc") == "R:calc-3"
    assert {"R:approve", "R:approve-2", "R:calc-3"} <= ctx.held


@pytest.mark.parametrize("name", ["", "m1", "r2", "t10", "i3", "u1", 5, None])
def test_new_id_refuses_names_the_transformer_generates(name):
    with pytest.raises((ValueError, TypeError)):
        make_ctx().new_id(name)


# -- the demo under CopilotKit's resume (one runId for the ask and the answer) ---


@pytest.mark.parametrize("decision", ["resolved", "cancelled"])
def test_the_demo_answers_a_resume_under_the_same_run_id(demo, decision):
    tid = thread("demo-resume")
    conversation = [{"id": "u1", "role": "user", "content": "approve sending the mail"}]
    with httpx.Client(base_url=demo, timeout=20) as http:
        events = events_of(http.post("/ag-ui/run", json=run_body(tid, conversation, "R")))
        [interrupt] = events[-1]["outcome"]["interrupts"]
        conversation += messages_from_events(events)
        entry = {"interruptId": interrupt["id"], "status": decision}
        if decision == "resolved":
            entry["payload"] = "yes"
        body = run_body(tid, conversation, "R", resume=[entry])
        events = events_of(http.post("/ag-ui/run", json=body))
        verdict = "Approved" if decision == "resolved" else "Declined"
        assert text_of(events) == f"{verdict}: approve sending the mail. Done."
        answer = messages_from_events(events)
        assert all(m["id"] not in all_ids(conversation) for m in answer)
        messages = http.get(f"/threads/{tid}/state").json()["messages"]
    assert messages == conversation + answer
    assert_unique(messages)


def test_the_demo_tool_call_ids_stay_unique_under_a_constant_run_id(demo):
    tid = thread("demo-calc")
    conversation = []
    with httpx.Client(base_url=demo, timeout=20) as http:
        for turn, words in enumerate(["what is 1 + 2?", "what is 3 * 4?"], start=1):
            conversation.append({"id": f"u{turn}", "role": "user", "content": words})
            events = events_of(http.post("/ag-ui/run", json=run_body(tid, conversation, "R")))
            assert events[-1]["type"] == "RUN_FINISHED"
            conversation += messages_from_events(events)
        messages = http.get(f"/threads/{tid}/state").json()["messages"]
    assert messages == conversation
    assert_unique(messages)
    calls = [call["id"] for m in messages for call in m.get("toolCalls") or ()]
    assert calls == ["R:calc", "R:calc-2"]


def test_an_id_less_chunks_interrupt_skips_held_ids(impl):
    # The translator names an id-less interrupt on the wire (issue 9, item 19),
    # skipping the thread's ids and its own; its snapshot (what the store keeps) has that id.
    t = impl.create_agui_translator(thread_id="T", run_id="R", held_ids={"R:i1", "R:i3"})
    for chunk in ({"type": "interrupt", "reason": "a"}, {"type": "interrupt", "value": "plain"}):
        t(chunk)
    assert [i["id"] for i in t.snapshot()["interrupts"]] == ["R:i2", "R:i4"]


@pytest.mark.parametrize("run_id", ["x/y", "..", "."])
async def test_a_run_id_no_route_can_name_is_refused_at_the_door(client, run_id):
    """A run is named by one path segment (``…/runs/{runId}/cancel``, ``/events``):
    one whose id holds "/", or is a dot segment (clients' URLs drop those), could
    be neither stopped nor read by id once started."""
    tid = thread("slash")
    body = run_body(tid, "hi", run_id=run_id)
    refused = await client.post("/ag-ui/run", json=body)
    assert refused.status_code == 400, refused.text
    assert "runId" in refused.json()["error"]["message"]
    # Nothing of it was taken: the thread is free and holds no turn.
    assert (await client.post("/ag-ui/run", json=run_body(tid, "hi"))).status_code == 200
    state = (await client.get(f"/threads/{tid}/state")).json()
    assert [m["content"] for m in state["messages"] if m["role"] == "user"] == ["hi"]
