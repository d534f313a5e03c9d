"""Pending interrupts as AG-UI clients restore and answer them (issue 20,
"Stop and reload"): GET /threads/{id}/state gives them in AG-UI's own
Interrupt shape (``pendingInterrupts``, judged by @ag-ui/core 1.0.0's schema)
and on the last assistant message's ``metadata.custom.agui.interrupts``
(where assistant-ui's AG-UI runtime looks); a run that neither resumes nor
cancels them gets 409 ``interrupt_pending`` naming them."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid

import httpx
import pytest
from agui_bridge import App, crumbs

from tests.test_interop import INTEROP, node  # noqa: F401


def make_app() -> App:
    app = App(store="memory://")

    @app.agent("ask")
    async def ask(ctx):
        if ctx.resume is not None:
            answers = {e["interruptId"]: e.get("status", "resolved") for e in ctx.resume.entries}
            yield crumbs.text_delta(f"answers: {answers}")
            yield crumbs.run_end()
            return
        yield crumbs.text_delta("May I send it?")
        yield crumbs.human_required(
            f"send-{ctx.run_id}",
            reason="approval",
            message="Send the email?",
            response_schema={"type": "object"},
        )
        yield crumbs.human_required(f"cc-{ctx.run_id}", reason="input_required")
        yield crumbs.run_end()

    @app.agent("ask_slowly")
    async def ask_slowly(ctx):
        yield crumbs.text_delta("May I?")
        yield crumbs.human_required(f"send-{ctx.run_id}", reason="approval")
        await asyncio.sleep(30)  # stopped before it ends
        yield crumbs.run_end()

    @app.agent("approve_slowly")
    async def approve_slowly(ctx):
        if ctx.resume is not None:
            yield crumbs.text_delta(f"Sending ({ctx.resume.decision!r})")
            await asyncio.sleep(30)  # stopped before it ends
            return
        yield crumbs.text_delta("May I?")
        yield crumbs.human_required(f"send-{ctx.run_id}", reason="approval")

    return app


def body(thread: str, text: str, run: str, **extra) -> dict:
    message = {"id": f"u-{run}", "role": "user", "content": text}
    return {"threadId": thread, "runId": run, "messages": [message], **extra}


@pytest.fixture
async def http():
    transport = httpx.ASGITransport(app=make_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        yield client


async def test_the_state_gives_pending_interrupts_where_ag_ui_clients_restore_them(http):
    thread = f"t-{uuid.uuid4().hex[:6]}"
    assert (await http.post("/agui/ask", json=body(thread, "mail bob", "r1"))).status_code == 200
    state = (await http.get(f"/threads/{thread}/state")).json()
    expected = [
        {
            "id": "send-r1",
            "reason": "approval",
            "message": "Send the email?",
            "responseSchema": {"type": "object"},
        },
        {"id": "cc-r1", "reason": "input_required"},
    ]
    assert state["pendingInterrupts"] == expected
    last = state["messages"][-1]
    assert last["role"] == "assistant" and last["content"] == "May I send it?"
    assert last["metadata"] == {"custom": {"agui": {"interrupts": expected}}}
    # the user's message carries nothing; the Agent Protocol's shape stays as it was
    assert "metadata" not in state["messages"][0]
    assert [i["id"] for i in state["interrupts"]] == ["send-r1", "cc-r1"]


async def test_a_turn_that_does_not_answer_them_is_refused_naming_them(http):
    thread = f"t-{uuid.uuid4().hex[:6]}"
    await http.post("/agui/ask", json=body(thread, "mail bob", "r1"))
    refused = await http.post("/agui/ask", json=body(thread, "never mind", "r2"))
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "interrupt_pending"
    assert "'send-r1'" in error["message"] and "'cc-r1'" in error["message"]
    state = (await http.get(f"/threads/{thread}/state")).json()
    assert len(state["messages"]) == 2  # nothing of the refused turn is stored
    assert [i["id"] for i in state["pendingInterrupts"]] == ["send-r1", "cc-r1"]
    # answered (one approved, one cancelled), the same turn goes through
    resume = [
        {"interruptId": "send-r1", "status": "resolved", "payload": {"ok": True}},
        {"interruptId": "cc-r1", "status": "cancelled"},
    ]
    done = await http.post("/agui/ask", json=body(thread, "never mind", "r2", resume=resume))
    assert done.status_code == 200
    assert "answers: {'send-r1': 'resolved', 'cc-r1': 'cancelled'}" in done.text
    state = (await http.get(f"/threads/{thread}/state")).json()
    assert state["pendingInterrupts"] == []
    assert all("metadata" not in m for m in state["messages"])
    # nothing pending: a plain new turn is accepted again
    assert (await http.post("/agui/ask", json=body(thread, "again", "r3"))).status_code == 200


async def test_cancelling_only_all_of_them_answers_them(http):
    thread = f"t-{uuid.uuid4().hex[:6]}"
    await http.post("/agui/ask", json=body(thread, "mail bob", "r1"))
    cancel = [
        {"interruptId": "send-r1", "status": "cancelled"},
        {"interruptId": "cc-r1", "status": "cancelled"},
    ]
    done = await http.post("/agui/ask", json=body(thread, "stop that", "r2", resume=cancel))
    assert done.status_code == 200
    assert (await http.get(f"/threads/{thread}/state")).json()["pendingInterrupts"] == []


async def test_pending_interrupts_pass_ag_ui_core_interrupt_schema(node, http, tmp_path):  # noqa: F811
    thread = f"t-{uuid.uuid4().hex[:6]}"
    await http.post("/agui/ask", json=body(thread, "mail bob", "r1"))
    state = (await http.get(f"/threads/{thread}/state")).json()
    checks = [("InterruptSchema", i) for i in state["pendingInterrupts"]]
    checks += [("MessageSchema", m) for m in state["messages"]]
    for name, value in checks:
        path = tmp_path / f"{uuid.uuid4().hex}.json"
        path.write_text(json.dumps(value))
        proc = subprocess.run(
            [node, str(INTEROP / "schema.mjs"), name, str(path)],
            cwd=INTEROP,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert out["valid"], (name, value, out["issues"])


async def test_a_stopped_run_leaves_no_interrupt_its_1_0_client_never_held(http):
    """A 1.0 client is told a stopped run was cancelled (contract section 8), so
    it holds none of the run's interrupts: the thread must not keep them
    pending, or every next turn is 409 interrupt_pending for an interrupt the
    page cannot answer."""
    asked = asyncio.ensure_future(
        http.post("/agui/ask_slowly", json=body("stopped", "hi", "r1", protocolVersion="1.0.0"))
    )
    await asyncio.sleep(0.3)
    assert (await http.post("/threads/stopped/runs/r1/cancel")).status_code == 202
    stream = (await asyncio.wait_for(asked, 10)).text
    assert '"outcome":{"type":"cancelled"}' in stream
    state = (await http.get("/threads/stopped/state")).json()
    assert state["interrupts"] == [] and state.get("pendingInterrupts", []) == []
    next_turn = await http.post("/agui/ask", json=body("stopped", "something else", "r2"))
    assert next_turn.status_code == 200, next_turn.text


async def stopped_after(http, agent: str, payload: dict, thread: str, run: str) -> str:
    """The run's stream, stopped through the cancel route while it is read."""
    asked = asyncio.ensure_future(http.post(f"/agui/{agent}", json=payload))
    await asyncio.sleep(0.3)
    assert (await http.post(f"/threads/{thread}/runs/{run}/cancel")).status_code == 202
    return (await asyncio.wait_for(asked, 10)).text


@pytest.mark.parametrize("next_step", ["turn", "resume"])
@pytest.mark.parametrize("version", ["1.0", None])
async def test_a_stopped_resume_leaves_nothing_pending_and_can_be_resumed_again(
    http, version, next_step
):
    """Stopping a run that resumed an interrupt: a reader of its end holds no
    interrupt (1.0: outcome cancelled, which empties pendingInterrupts; 0.0.x: a
    RUN_FINISHED without one) and sends a new turn, which must not be 409
    interrupt_pending; a page that stopped reading got no end, still holds it
    and resumes it again, which must not be 400 no_pending_interrupt."""
    thread = f"t-{uuid.uuid4().hex[:6]}"
    extra = {"protocolVersion": version} if version else {}
    await http.post("/agui/approve_slowly", json=body(thread, "send it", "r1", **extra))
    resume = [{"interruptId": "send-r1", "status": "resolved", "payload": "yes"}]
    sent = body(thread, "send it", "r1", **extra)  # the client resends what it shows
    payload = {**sent, "runId": "r2", "resume": resume}
    stream = await stopped_after(http, "approve_slowly", payload, thread, "r2")
    assert "Sending ('yes')" in stream
    assert ('"outcome":{"type":"cancelled"}' in stream) == (version == "1.0")
    assert '"outcome":{"type":"interrupt"' not in stream
    state = (await http.get(f"/threads/{thread}/state")).json()
    assert state["pendingInterrupts"] == [] and state["interrupts"] == []
    if next_step == "turn":
        going_on = await http.post("/agui/ask", json=body(thread, "something else", "r3", **extra))
    else:
        again = [{"interruptId": "send-r1", "status": "resolved", "payload": "again"}]
        going_on = await http.post("/agui/ask", json={**sent, "runId": "r3", "resume": again})
    assert going_on.status_code == 200, going_on.text
    state = (await http.get(f"/threads/{thread}/state")).json()
    expected = ["send-r3", "cc-r3"] if next_step == "turn" else []
    assert [i["id"] for i in state["pendingInterrupts"]] == expected


@pytest.mark.parametrize("next_step", ["turn", "resume"])
@pytest.mark.parametrize("version", ["1.0", None])
async def test_a_stopped_run_leaves_pending_no_interrupt_it_asked(http, version, next_step):
    """The agent asks, goes on, and is stopped. A page that stopped reading
    (cancelOnStop, or Stop then type) never got the RUN_FINISHED that offers
    the question, so it sends a new turn: for a 0.0.x client too, that must not
    be 409 interrupt_pending. A 0.0.x client that read on was offered it in its
    RUN_FINISHED (a 1.0 one is told cancelled) and may answer it."""
    thread = f"t-{uuid.uuid4().hex[:6]}"
    extra = {"protocolVersion": version} if version else {}
    sent = body(thread, "hi", "r1", **extra)
    stream = await stopped_after(http, "ask_slowly", sent, thread, "r1")
    offered = '"outcome":{"type":"interrupt","interrupts":[{"id":"send-r1"'
    assert (offered in stream) == (version is None)
    state = (await http.get(f"/threads/{thread}/state")).json()
    assert state["pendingInterrupts"] == [] and state["interrupts"] == []
    if next_step == "turn":
        going_on = await http.post("/agui/ask", json=body(thread, "something else", "r2", **extra))
        assert going_on.status_code == 200, going_on.text
        return
    answer = [{"interruptId": "send-r1", "status": "resolved", "payload": "yes"}]
    going_on = await http.post("/agui/ask", json={**sent, "runId": "r2", "resume": answer})
    if version is None:
        assert going_on.status_code == 200, going_on.text
        assert "answers: {'send-r1': 'resolved'}" in going_on.text
    else:  # no 1.0 client holds it
        assert going_on.status_code == 400
        assert going_on.json()["error"]["code"] == "no_pending_interrupt"
