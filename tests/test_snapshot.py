"""``snapshot()`` and ``events_and_frames`` (both builds; docs/contract-notes.md).

The join test feeds the real ``@ag-ui/client`` (1.0.0 and 0.0.58: its
``verifyEvents`` and ``defaultApplyEvents``) a reader that joins after every
item: RUN_STARTED, MESSAGES_SNAPSHOT (history + the snapshot's messages),
STATE_SNAPSHOT, the snapshot's ``open`` events, then the rest of the run. It
must be accepted with zero warnings and end with the same messages and state
as a client that saw the whole run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from ag_ui.core import Message
from pydantic import TypeAdapter

INTEROP = Path(__file__).resolve().parent / "interop"
MESSAGE = TypeAdapter(Message)
HISTORY = [{"id": "u1", "role": "user", "content": "hi"}]


def td(delta):
    return {"type": "text:delta", "delta": delta}


CRUMB_RUN = [
    {"type": "pipeline:step:start", "stepName": "plan"},
    td("Hel"),
    td("lo"),
    {"type": "tool:input:start", "toolCallId": "c1", "toolName": "search"},
    {"type": "tool:input:delta", "toolCallId": "c1", "delta": '{"q":'},
    td("while the call streams"),
    {"type": "tool:input:delta", "toolCallId": "c1", "delta": '"x"}'},
    {"type": "tool:input:end", "toolCallId": "c1"},
    {"type": "tool:result", "toolCallId": "c1", "result": {"hits": 2}},
    {"type": "tool:call", "toolCallId": "c2", "toolName": "fetch", "input": {"u": 1}},
    {"type": "loop:iteration:start", "loopId": "L", "iteration": 1},
    td("bye"),
    {"type": "tool:result", "toolCallId": "c2", "result": "page"},
    {"type": "human:required", "message": "ok?"},
    {"type": "loop:iteration:end", "loopId": "L", "iteration": 1},
    {"type": "pipeline:step:end", "stepName": "plan"},
    {"type": "agent:run:end"},
]

# Tool calls before any text: each its own assistant message, named after the call.
CRUMB_RUN_TOOLS_FIRST = [
    {"type": "tool:call", "toolCallId": "c1", "toolName": "f", "input": {}},
    {"type": "tool:input:start", "toolCallId": "c2", "toolName": "g"},
    {"type": "tool:input:delta", "toolCallId": "c2", "delta": "{}"},
    {"type": "tool:result", "toolCallId": "c1", "result": 1},
    td("after"),
    {"type": "tool:result", "toolCallId": "c2", "result": 2},
    {"type": "agent:error", "message": "boom"},
]

CHUNK_RUN = [
    "a",
    {"type": "token", "content": "b"},
    {"type": "tool_call", "name": "f", "input": {"x": 1}},
    {"type": "tool_result", "id": "r1:t1", "output": "ok"},
    {"type": "plan_update", "plan": [1, 2]},
    "c",
    {"type": "interrupt", "message": "approve?", "reason": "approval"},
    {"type": "done", "output": "fin"},
]


# AG-UI events repaired: text resumed after a tool call goes on under a fresh id.
EVENT_RUN = [
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "STEP_STARTED", "stepName": "s"},
    {"type": "TEXT_MESSAGE_START", "messageId": "a", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a", "delta": "one "},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": "a"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"k":'},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a", "delta": "two"},
    {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "delta": "1}"},
    {"type": "TOOL_CALL_RESULT", "messageId": "x", "toolCallId": "c1", "content": "r"},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "b", "delta": "three"},
    {"type": "STATE_SNAPSHOT", "snapshot": {"k": 1}},
    {"type": "TEXT_MESSAGE_END", "messageId": "b"},
    {"type": "STEP_FINISHED", "stepName": "s"},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
]

# Contract section 8: reasoning open and closed around text, a tool call and an
# encrypted value; a joiner gets it re-opened by the prelude.
CRUMB_RUN_REASONING = [
    {"type": "reasoning:delta", "delta": "Let me "},
    {"type": "reasoning:delta", "delta": "think."},
    {"type": "reasoning:encrypted", "encryptedValue": "sig"},
    td("Answer"),
    {"type": "reasoning:delta", "delta": "More."},
    {"type": "tool:input:start", "toolCallId": "c1", "toolName": "f"},
    {"type": "reasoning:delta", "delta": "While the call streams."},
    {"type": "tool:input:delta", "toolCallId": "c1", "delta": "{}"},
    {
        "type": "reasoning:encrypted",
        "encryptedValue": "k",
        "entityId": "c1",
        "subtype": "tool-call",
    },
    {"type": "reasoning:end"},
    {"type": "tool:result", "toolCallId": "c1", "result": "ok"},
    {"type": "reasoning:delta", "delta": "Last."},
    {"type": "agent:run:end"},
]

EVENT_RUN_REASONING = [
    {"type": "REASONING_START", "messageId": "s"},
    {"type": "REASONING_MESSAGE_START", "messageId": "m", "role": "reasoning"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "m", "delta": "a"},
    {"type": "TEXT_MESSAGE_CHUNK", "delta": "text"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "m", "delta": "b"},
    {"type": "REASONING_MESSAGE_END", "messageId": "m"},
    {"type": "REASONING_END", "messageId": "s"},
    {"type": "REASONING_MESSAGE_CHUNK", "delta": "c"},
    {"type": "RUN_FINISHED"},
]

# AG-UI 1.0 activity messages (issue 20): made before, beside and after text,
# a tool call and its result; changed in place by deltas and snapshots (a
# delta's activityType is the message's), kept by ``replace: false``.
EVENT_RUN_ACTIVITY = [
    {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "a0",
        "activityType": "plan",
        "content": {"s": ["plan"]},
    },
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "one"},
    {
        "type": "ACTIVITY_DELTA",
        "messageId": "a0",
        "activityType": "plan",
        "patch": [{"op": "add", "path": "/s/-", "value": "search"}],
    },
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": "m1"},
    {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "a1",
        "activityType": "progress",
        "content": {"pct": 0},
    },
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {
        "type": "ACTIVITY_DELTA",
        "messageId": "a1",
        "activityType": "progress",
        "patch": [{"op": "replace", "path": "/pct", "value": 50}],
    },
    {"type": "TOOL_CALL_RESULT", "messageId": "x", "toolCallId": "c1", "content": "r"},
    {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "a0",
        "activityType": "other",
        "content": {"s": []},
        "replace": False,
    },
    {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "a1",
        "activityType": "done",
        "content": {"pct": 100},
    },
    {
        "type": "ACTIVITY_DELTA",
        "messageId": "a0",
        "activityType": "plan2",
        "patch": [{"op": "remove", "path": "/s/0"}],
    },
    {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "a2",
        "activityType": "note",
        "content": {"n": {"deep": [1, {"x": None}]}},
        "replace": False,
    },
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "b", "delta": "two"},
    {"type": "RUN_FINISHED"},
]

RUNS = {"crumbs": CRUMB_RUN, "chunks": CHUNK_RUN, "events": EVENT_RUN}


def make(impl, dialect, **kw):
    if dialect == "crumbs":
        return impl.create_agui_transformer("t1", "r1", {"seed": 0}, **kw)
    if dialect == "events":
        return impl.create_agui_repairer("t1", "r1", {"seed": 0}, **kw)
    return impl.create_agui_translator("t1", "r1", {"seed": 0}, **kw)


def test_snapshot_mid_run(impl):
    t = make(impl, "crumbs", event_ids=True)
    for item in CRUMB_RUN[:7]:
        t(item)
    snap = t.snapshot()
    assert snap["messages"] == [
        {
            "id": "r1:m1",
            "role": "assistant",
            "content": "Hello",
            "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "search", "arguments": ""}}
            ],
        },
        {"id": "r1:m2", "role": "assistant", "content": ""},
    ]
    assert snap["open"] == [
        {"type": "STEP_STARTED", "stepName": "plan"},
        {"type": "TEXT_MESSAGE_START", "messageId": "r1:m2", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "r1:m2", "delta": "while the call streams"},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c1",
            "toolCallName": "search",
            "parentMessageId": "r1:m1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q":"x"}'},
    ]
    assert snap["state"] == {"seed": 0}
    assert snap["interrupts"] == []
    assert snap["last_id"] == t.last_id == 11
    # A fresh copy each time: changing it changes nothing.
    snap["messages"][0]["content"] = "changed"
    assert t.snapshot()["messages"][0]["content"] == "Hello"


def test_snapshot_after_the_end(impl):
    t = make(impl, "crumbs")
    for item in CRUMB_RUN:
        t(item)
    snap = t.snapshot()
    assert snap["open"] == []
    assert [m["id"] for m in snap["messages"]] == ["r1:m1", "r1:r1", "r1:m2", "r1:r2", "r1:m3"]
    assert snap["messages"][2]["toolCalls"][0]["function"]["arguments"] == '{"u":1}'
    assert snap["interrupts"] == [{"id": "r1:i1", "reason": "human_required", "message": "ok?"}]
    assert snap["state"]["loop"]["phase"] == "iteration:end"
    for message in snap["messages"]:
        MESSAGE.validate_python(message)


def test_a_failed_run_offers_no_interrupt(impl):
    t = make(impl, "crumbs")
    t({"type": "human:required", "message": "ok?"})
    assert [i["id"] for i in t.snapshot()["interrupts"]] == ["r1:i1"]
    t.fail(RuntimeError("boom"))
    # RUN_ERROR carries no interrupt outcome: nothing was offered to resume.
    assert t.snapshot()["interrupts"] == []
    assert t.interrupts != []


@pytest.mark.parametrize(
    "dialect, interrupt",
    [
        ("crumbs", {"type": "human:required", "message": "ok?"}),
        ("chunks", {"type": "interrupt", "id": "k", "message": "ok?"}),
    ],
)
def test_a_stopped_run_leaves_pending_only_what_its_client_was_offered(impl, dialect, interrupt):
    """A 1.0 client told ``outcome: cancelled`` holds none of the run's
    interrupts; a 0.0.x client is told what ``finish()`` tells, so they stay."""
    told_cancelled = make(impl, dialect, protocol_version="1.0")
    told_cancelled(interrupt)
    assert len(told_cancelled.snapshot()["interrupts"]) == 1
    assert told_cancelled.cancel()[-1]["outcome"] == {"type": "cancelled"}
    assert told_cancelled.snapshot()["interrupts"] == []
    told_finished = make(impl, dialect)
    told_finished(interrupt)
    told_finished.cancel()
    assert len(told_finished.snapshot()["interrupts"]) == 1


def test_chunk_interrupts_are_pending(impl):
    t = make(impl, "chunks", held_ids=["r1:i1"])
    t({"type": "interrupt", "interruptId": "", "x": None})
    t({"type": "interrupt", "id": "k", "reason": 3, "message": "m"})
    assert t.snapshot()["interrupts"] == [
        {"id": "r1:i2", "reason": "interrupt", "payload": {"x": None, "interruptId": "r1:i2"}},
        {
            "id": "k",
            "reason": "interrupt",
            "message": "m",
            "payload": {"id": "k", "reason": 3, "message": "m"},
        },
    ]


def test_an_agents_interrupt_outcome_is_pending(impl):
    t = make(impl, "events")
    asked = [{"id": "i1", "reason": "approval", "payload": {"n": 1}}]
    outcome = {"type": "interrupt", "interrupts": asked}
    t({"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1", "outcome": outcome})
    assert t.snapshot()["interrupts"] == asked
    # A success outcome, or none, leaves nothing pending.
    for outcome in ({"type": "success"}, None):
        other = make(impl, "events")
        finished = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}
        other(finished if outcome is None else {**finished, "outcome": outcome})
        assert other.snapshot()["interrupts"] == []


@pytest.mark.parametrize("dialect", ["crumbs", "chunks", "events"])
def test_events_and_frames_is_one_mapping(impl, dialect):
    run = RUNS[dialect]
    both = make(impl, dialect, event_ids=True, first_id=3)
    apart = make(impl, dialect, event_ids=True, first_id=3)
    for item in run[:-1]:
        events, frames = both.events_and_frames(item)
        assert frames == apart.encode(item)
        assert events == [json.loads(f.split(b"data: ", 1)[1]) for f in frames.split(b"\n\n")[:-1]]
    assert both.fail_events_and_frames(RuntimeError("x"))[1] == apart.fail_encoded(
        RuntimeError("x")
    )
    assert both.last_id == apart.last_id
    assert both.finish_events_and_frames() == ([], b"")
    fresh = make(impl, dialect)
    events, frames = fresh.finish_events_and_frames()
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_FINISHED"]
    assert frames.count(b"data: ") == 2 and b"id:" not in frames


def test_a_held_id_raises_from_events_and_frames(impl):
    from agui_bridge.errors import CrumbError

    t = make(impl, "crumbs", held_ids=["c1"])
    with pytest.raises(CrumbError):
        t.events_and_frames({"type": "tool:call", "toolCallId": "c1", "toolName": "f", "input": {}})
    assert t.last_id == 0


# ---- joining with the real client ----


def joins(impl, dialect, run):
    """The whole run as one client sees it, and a join after every item."""
    t = make(impl, dialect)
    events, points = [], []
    for item in run:
        events += t(item)
        points.append((len(events), t.snapshot()))
    started = events[0]
    # The whole client starts from what it sent: the history and the state.
    whole = [
        started,
        {"type": "MESSAGES_SNAPSHOT", "messages": HISTORY},
        {"type": "STATE_SNAPSHOT", "snapshot": {"seed": 0}},
        *events[1:],
    ]
    joined = []
    for seen, snap in points:
        joined.append(
            [
                started,
                {"type": "MESSAGES_SNAPSHOT", "messages": HISTORY + snap["messages"]},
                {"type": "STATE_SNAPSHOT", "snapshot": snap["state"]},
                *snap["open"],
                *events[seen:],
            ]
        )
    return whole, joined


@pytest.mark.parametrize("version", ["1.0.0", "0.0.58"])
@pytest.mark.parametrize(
    ("dialect", "run"),
    [
        ("crumbs", CRUMB_RUN),
        ("crumbs", CRUMB_RUN_TOOLS_FIRST),
        ("chunks", CHUNK_RUN),
        ("events", EVENT_RUN),
        ("crumbs", CRUMB_RUN_REASONING),
        ("events", EVENT_RUN_REASONING),
        ("events", EVENT_RUN_ACTIVITY),
    ],
    ids=[
        "crumbs",
        "crumbs-tools-first",
        "chunks",
        "events",
        "reasoning",
        "events-reasoning",
        "events-activity",
    ],
)
def test_a_joining_reader_ends_like_a_whole_one(impl, version, dialect, run):
    node = shutil.which("node")
    assert node, "node is needed for the interop tests"
    whole, joined = joins(impl, dialect, run)
    request = json.dumps({"version": version, "cases": [whole, *joined]})
    done = subprocess.run(
        [node, str(INTEROP / "apply-events.mjs")],
        input=request,
        capture_output=True,
        text=True,
        cwd=INTEROP,
        timeout=120,
        check=True,
    )
    first, *rest = json.loads(done.stdout)
    assert first["ok"], first
    assert first["messages"][0] == HISTORY[0] and len(first["messages"]) > 2
    # What the run's snapshot holds at its end (what the thread stores) is what
    # the client that saw the whole run shows.
    t = make(impl, dialect)
    for item in run:
        t(item)
    assert HISTORY + t.snapshot()["messages"] == first["messages"]
    for at, result in enumerate(rest):
        assert result["ok"], (at, result)
        assert result["messages"] == first["messages"], at
        assert result["state"] == first["state"], at


def test_a_run_read_back_from_its_log_holds_the_same_activity_messages(impl):
    """Another node rebuilds a run's messages by putting its logged events through
    the events dialect (runs/replay.py): the activities come out the same, also
    those the run renamed for an id the thread held."""
    t = make(impl, "events", held_ids=["a0"])
    events = [e for item in EVENT_RUN_ACTIVITY for e in t(item)]
    assert next(e["messageId"] for e in events if e["type"] == "ACTIVITY_SNAPSHOT") == "r1:a1"
    again = make(impl, "events")
    for event in events:
        again(event)
    assert again.snapshot()["messages"] == t.snapshot()["messages"]
    assert again.dropped == 0
