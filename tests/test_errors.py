"""Bad input (contract rules 10-12, section 4 for chunks): both builds, same type and message."""

from __future__ import annotations

import datetime
import math

import pytest
from agui_bridge.errors import AguiBridgeError, CrumbError

IDS = {"thread_id": "t1", "run_id": "r1"}


def crumbs(impl):
    return impl.create_agui_transformer(**IDS)


def chunks(impl):
    return impl.create_agui_translator(**IDS)


def nested(depth: int):
    value: object = "leaf"
    for _ in range(depth):
        value = [value]
    return value


# (crumb, exact message) for every class of rule 10.
CRUMB_ERRORS = [
    # not a dict
    pytest.param(["text:delta"], "crumb must be a dict, not list", id="list"),
    pytest.param("text:delta", "crumb must be a dict, not str", id="str"),
    pytest.param(None, "crumb must be a dict, not NoneType", id="None"),
    pytest.param(7, "crumb must be a dict, not int", id="int"),
    pytest.param(("type", "x"), "crumb must be a dict, not tuple", id="tuple"),
    # no string type
    pytest.param({}, "crumb has no string 'type'", id="no-type"),
    pytest.param({"type": None, "delta": "x"}, "crumb has no string 'type'", id="type-None"),
    pytest.param({"type": 5}, "crumb has no string 'type'", id="type-int"),
    pytest.param({"type": b"text:delta"}, "crumb has no string 'type'", id="type-bytes"),
    # a required field missing or None
    pytest.param({"type": "text:delta"}, "text:delta: 'delta' must be a string", id="missing"),
    pytest.param(
        {"type": "text:delta", "delta": None}, "text:delta: 'delta' must be a string", id="None"
    ),
    pytest.param(
        {"type": "tool:input:start", "toolName": "f"},
        "tool:input:start: 'toolCallId' must be a string",
        id="missing-id",
    ),
    pytest.param(
        {"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": None},
        "tool:call: 'input' must be a JSON value",
        id="input-None",
    ),
    pytest.param(
        {"type": "tool:result", "toolCallId": "c"},
        "tool:result: 'result' must be a JSON value",
        id="result-missing",
    ),
    pytest.param(
        {"type": "tool:error", "toolCallId": "c"},
        "tool:error: 'error' must be an object",
        id="error-missing",
    ),
    pytest.param(
        {"type": "agent:error"}, "agent:error: 'message' must be a string", id="message-missing"
    ),
    pytest.param(
        {"type": "file:generated", "uri": "u"},
        "file:generated: 'mimeType' must be a string",
        id="mimeType-missing",
    ),
    pytest.param(
        {"type": "pipeline:step:start"},
        "pipeline:step:start: 'stepName' must be a string",
        id="stepName-missing",
    ),
    pytest.param(
        {"type": "subagent:run:start", "subagentId": "s"},
        "subagent:run:start: 'parentAgentId' must be a string",
        id="parentAgentId-missing",
    ),
    pytest.param(
        {"type": "task:end", "taskRunId": "r"},
        "task:end: 'taskId' must be a string",
        id="taskId-missing",
    ),
    pytest.param({"type": "loop:end"}, "loop:end: 'loopId' must be a string", id="loopId-missing"),
    # wrong types: string
    pytest.param(
        {"type": "text:delta", "delta": 5}, "text:delta: 'delta' must be a string", id="str-int"
    ),
    pytest.param(
        {"type": "text:delta", "delta": b"hi"},
        "text:delta: 'delta' must be a string",
        id="str-bytes",
    ),
    pytest.param(
        {"type": "agent:run:start", "runId": 5},
        "agent:run:start: 'runId' must be a string",
        id="optional-runId",
    ),
    pytest.param(
        {"type": "agent:error", "message": "m", "code": 500},
        "agent:error: 'code' must be a string",
        id="optional-code",
    ),
    pytest.param(
        {"type": "human:required", "reason": ["x"]},
        "human:required: 'reason' must be a string",
        id="optional-reason",
    ),
    pytest.param(
        {"type": "file:generated", "uri": "u", "mimeType": "m", "name": 1},
        "file:generated: 'name' must be a string",
        id="optional-name",
    ),
    pytest.param(
        {"type": "task:start", "taskRunId": "r", "taskId": "t", "status": True},
        "task:start: 'status' must be a string",
        id="optional-status",
    ),
    # wrong types: integer
    pytest.param(
        {"type": "loop:start", "loopId": "L", "iteration": "1"},
        "loop:start: 'iteration' must be an integer",
        id="int-str",
    ),
    pytest.param(
        {"type": "loop:start", "loopId": "L", "iteration": 1.0},
        "loop:start: 'iteration' must be an integer",
        id="int-float",
    ),
    pytest.param(
        {"type": "loop:start", "loopId": "L", "iteration": True},
        "loop:start: 'iteration' must be an integer",
        id="int-bool",
    ),
    pytest.param(
        {"type": "task:end", "taskRunId": "r", "taskId": "t", "durationMs": "12"},
        "task:end: 'durationMs' must be an integer",
        id="durationMs",
    ),
    # wrong types: object
    pytest.param(
        {"type": "tool:error", "toolCallId": "c", "error": "boom"},
        "tool:error: 'error' must be an object",
        id="obj-str",
    ),
    pytest.param(
        {"type": "human:required", "responseSchema": [1]},
        "human:required: 'responseSchema' must be an object",
        id="obj-list",
    ),
    pytest.param(
        {"type": "task:end", "taskRunId": "r", "taskId": "t", "usage": 3},
        "task:end: 'usage' must be an object",
        id="obj-int",
    ),
    # wrong types / non-JSON values: JSON value
    pytest.param(
        {"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": object()},
        "tool:call: 'input' must be a JSON value",
        id="json-object",
    ),
    pytest.param(
        {"type": "tool:result", "toolCallId": "c", "result": datetime.datetime(2026, 1, 1)},
        "tool:result: 'result' must be a JSON value",
        id="datetime",
    ),
    pytest.param(
        {"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": {"a": {1, 2}}},
        "tool:call: 'input' must be a JSON value",
        id="set",
    ),
    pytest.param(
        {"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": b"raw"},
        "tool:call: 'input' must be a JSON value",
        id="bytes",
    ),
    pytest.param(
        {"type": "text:delta", "delta": "a\ud800b"},
        "text:delta: 'delta' must be a JSON value",
        id="surrogate-str-field",
    ),
    pytest.param(
        {"type": "tool:result", "toolCallId": "c", "result": ["ok", "\udfff"]},
        "tool:result: 'result' must be a JSON value",
        id="surrogate-nested",
    ),
    pytest.param(
        {"type": "tool:result", "toolCallId": "c", "result": {"\ud800": 1}},
        "tool:result: 'result' must be a JSON value",
        id="surrogate-key",
    ),
    pytest.param(
        {"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": {"n": 2**64}},
        "tool:call: 'input' must be a JSON value",
        id="2**64",
    ),
    pytest.param(
        {"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": -(2**63) - 1},
        "tool:call: 'input' must be a JSON value",
        id="below-i64",
    ),
    pytest.param(
        {"type": "loop:start", "loopId": "L", "iteration": 2**64},
        "loop:start: 'iteration' must be a JSON value",
        id="int-field-2**64",
    ),
    pytest.param(
        {"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": {1: "a"}},
        "tool:call: 'input' must be a JSON value",
        id="int-key",
    ),
    pytest.param(
        {"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": {("a",): 1}},
        "tool:call: 'input' must be a JSON value",
        id="tuple-key",
    ),
    pytest.param(
        {"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": nested(1000)},
        "tool:call: 'input' must be a JSON value",
        id="too-deep",
    ),
    pytest.param(
        {"type": "loop:start", "loopId": "L", "extra": datetime.date(2026, 1, 1)},
        "loop:start: 'extra' must be a JSON value",
        id="loop-extra",
    ),
]


@pytest.mark.parametrize(("crumb", "message"), CRUMB_ERRORS)
def test_bad_crumb_raises_with_exact_message(impl, crumb, message):
    t = crumbs(impl)
    with pytest.raises(CrumbError) as caught:
        t(crumb)
    assert str(caught.value) == message
    assert type(caught.value) is CrumbError
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, AguiBridgeError)
    # Nothing happened: the next good crumb starts the run.
    assert (t.dropped, t.ignored, t.finished) == (0, 0, False)
    assert [e["type"] for e in t({"type": "text:delta", "delta": "x"})] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
    ]


@pytest.mark.parametrize(("crumb", "message"), CRUMB_ERRORS)
def test_bad_crumb_raises_from_encode(impl, crumb, message):
    t = crumbs(impl)
    with pytest.raises(CrumbError) as caught:
        t.encode(crumb)
    assert str(caught.value) == message


def test_error_mid_run_leaves_everything_open(impl):
    t = crumbs(impl)
    t({"type": "pipeline:step:start", "stepName": "s"})
    t({"type": "tool:input:start", "toolCallId": "c1", "toolName": "f"})
    t({"type": "text:delta", "delta": "a"})
    bad = [
        {"type": "tool:error", "toolCallId": "c1", "error": {"code": "E"}},
        {"type": "tool:result", "toolCallId": "c1", "result": {1, 2}},
        {"type": "pipeline:step:end", "stepName": 3},
        {"type": "agent:run:end", "result": datetime.time()},
        {"type": "agent:error", "message": None},
        {"type": "task:end", "taskRunId": "s", "taskId": "t", "usage": "u"},
        {"type": "loop:iteration:end", "loopId": "L", "iteration": "2"},
    ]
    for crumb in bad:
        with pytest.raises(CrumbError):
            t(crumb)
    assert (t.dropped, t.ignored, t.finished) == (0, 0, False)
    # The text message is still open (same id), the call and the step too.
    assert t({"type": "text:delta", "delta": "b"}) == [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "r1:m1", "delta": "b"}
    ]
    assert [e["type"] for e in t.finish()] == [
        "TEXT_MESSAGE_END",
        "TOOL_CALL_END",
        "STEP_FINISHED",
        "RUN_FINISHED",
    ]


def test_error_object_parts_are_typed(impl):
    t = crumbs(impl)
    t({"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": {}})
    for error in ({"code": "E"}, {"message": "m"}, {"code": 1, "message": "m"}):
        with pytest.raises(CrumbError, match=r"^tool:error: 'error\.(code|message)' must be a "):
            t({"type": "tool:error", "toolCallId": "c", "error": error})
    assert t({"type": "tool:error", "toolCallId": "c", "error": {"code": "E", "message": "m"}})


def test_bad_loop_crumb_does_not_touch_the_loop_state(impl):
    t = crumbs(impl)
    t({"type": "loop:start", "loopId": "L", "note": "a"})
    with pytest.raises(CrumbError):
        t({"type": "loop:check", "loopId": "L", "note": "b", "iteration": "x"})
    (snapshot,) = t({"type": "loop:check", "loopId": "L"})
    assert snapshot["snapshot"]["loop"] == {
        "loopId": "L",
        "phase": "check",
        "iteration": 0,
        "note": "a",
    }


def test_bad_human_required_records_no_interrupt(impl):
    t = crumbs(impl)
    with pytest.raises(CrumbError):
        t({"type": "human:required", "interruptId": "i1", "responseSchema": "no"})
    t({"type": "human:required", "interruptId": "i1"})
    (*_, finished) = t.finish()
    assert finished["outcome"] == {
        "type": "interrupt",
        "interrupts": [{"id": "i1", "reason": "human_required"}],
    }
    assert t.dropped == 0


def test_unknown_types_are_ignored_not_checked(impl):
    t = crumbs(impl)
    assert t({"type": "made:up", "delta": 5, "x": object()}) == [
        {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
    ]
    assert t({"type": ""}) == []
    assert t.ignored == 2


def test_bad_input_after_the_terminal_event_never_raises(impl):
    for make in (crumbs, chunks):
        t = make(impl)
        t.finish()
        assert t(object()) == []
        assert t({"type": "text:delta"}) == []
        assert t({"type": "token", "content": 5}) == []
        assert t.encode({"type": "tool:call"}) == b""
        assert t.encode_many([None, {"type": "text:delta", "delta": 1}]) == b""
        assert t.dropped == 6


def test_an_event_model_after_the_terminal_event_is_dropped_unread(impl):
    """Input after the end is dropped, never refused (rule 2): an event model
    is not even dumped, so one whose dump would fail costs nothing either."""
    from ag_ui.core import CustomEvent

    late = CustomEvent(name="late", value=object())  # model_dump raises for it
    t = impl.create_agui_repairer("t1", "r1")
    t.finish()
    assert t(late) == []
    assert t.encode(late) == b""
    assert t.encode_many([late, late]) == b""
    assert t.events_and_frames(late) == ([], b"")
    assert t.dropped == 5


def test_non_finite_floats_become_null(impl):
    t = crumbs(impl)
    nan, inf = math.nan, math.inf
    events = t.encode_many(
        [
            {"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": [nan, inf, -inf]},
            {"type": "loop:start", "loopId": "L", "score": nan},
            {"type": "agent:run:end", "result": nan},
        ]
    )
    frames = events.decode().split("\n\n")
    assert 'data: {"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"[null,null,null]"}' in frames
    assert (
        'data: {"type":"STATE_SNAPSHOT","snapshot":{"loop":{"loopId":"L","phase":"start",'
        '"iteration":0,"score":null}}}' in frames
    )
    # A NaN result is None, and None optionals are omitted (rule 8).
    assert 'data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}' in frames


def test_tuples_are_lists_and_64_bit_bounds_are_json(impl):
    t = crumbs(impl)
    (_, _, args, _) = t(
        {
            "type": "tool:call",
            "toolCallId": "c",
            "toolName": "f",
            "input": {"t": (1, (2,)), "max": 2**64 - 1, "min": -(2**63), "b": [True, None]},
        }
    )
    assert args["delta"] == (
        '{"t":[1,[2]],"max":18446744073709551615,"min":-9223372036854775808,"b":[true,null]}'
    )


def test_moderate_nesting_is_fine(impl):
    t = crumbs(impl)
    events = t({"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": nested(50)})
    assert events[2]["delta"] == "[" * 50 + '"leaf"' + "]" * 50


# ---- encode_many ----


def test_encode_many_index_and_partial(impl):
    t = crumbs(impl)
    good = [{"type": "text:delta", "delta": "a"}, {"type": "text:delta", "delta": "b"}]
    reference = crumbs(impl)
    expected_partial = b"".join(reference.encode(c) for c in good)
    with pytest.raises(CrumbError) as caught:
        t.encode_many(
            [*good, {"type": "text:delta", "delta": 3}, {"type": "text:delta", "delta": "z"}]
        )
    error = caught.value
    assert error.index == 2
    assert error.partial == expected_partial
    assert str(error) == "text:delta: 'delta' must be a string"
    # The items before the bad one were applied, the ones after it were not.
    assert t.encode({"type": "text:delta", "delta": "c"}) == (
        b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"r1:m1","delta":"c"}\n\n'
    )


def test_encode_many_first_item_bad(impl):
    t = crumbs(impl)
    with pytest.raises(CrumbError) as caught:
        t.encode_many(({"type": "x:y"}, 5)[::-1])
    assert caught.value.index == 0
    assert caught.value.partial == b""
    assert str(caught.value) == "crumb must be a dict, not int"
    # RUN_STARTED was not emitted yet.
    assert t({"type": "x:y"})[0]["type"] == "RUN_STARTED"


def test_encode_many_bad_chunk(impl):
    t = chunks(impl)
    with pytest.raises(CrumbError) as caught:
        t.encode_many(["hi", 42, {"type": "tool_call", "name": None}])
    assert caught.value.index == 2
    assert caught.value.partial.startswith(b'data: {"type":"RUN_STARTED"')
    assert caught.value.partial.count(b"data: ") == 3
    assert t.ignored == 1
    assert str(caught.value) == "tool_call: 'name' must be a string"


def test_encode_many_terminal_in_the_batch_drops_the_rest(impl):
    t = crumbs(impl)
    out = t.encode_many(
        [{"type": "agent:run:end"}, {"type": "text:delta"}, {"type": "text:delta", "delta": "x"}]
    )
    assert out.count(b"data: ") == 2
    assert t.dropped == 2


# ---- chunks ----

CHUNK_ERRORS = [
    pytest.param({"type": "token", "content": 1}, "token: 'content' must be a string", id="token"),
    pytest.param(
        {"type": "token", "content": None}, "token: 'content' must be a string", id="None"
    ),
    pytest.param({"type": "chunk"}, "chunk: 'content' must be a string", id="chunk-missing"),
    pytest.param(
        {"type": "token", "content": "\ud800"}, "token: 'content' must be a JSON value", id="surr"
    ),
    pytest.param(
        {"type": "tool_call", "name": ["f"]}, "tool_call: 'name' must be a string", id="n"
    ),
    pytest.param(
        {"type": "tool_call", "name": "f", "id": 1}, "tool_call: 'id' must be a string", id="id"
    ),
    pytest.param(
        {"type": "tool_call", "name": "f", "input": {1, 2}},
        "tool_call: 'input' must be a JSON value",
        id="input-set",
    ),
    pytest.param(
        {"type": "tool_result", "id": None, "output": "x"},
        "tool_result: 'id' must be a string",
        id="result-id",
    ),
    pytest.param(
        {"type": "tool_result", "id": "c", "output": datetime.datetime(2026, 1, 1)},
        "tool_result: 'output' must be a JSON value",
        id="output-datetime",
    ),
    pytest.param(
        {"type": "plan_update", "plan": [2**64]},
        "plan_update: 'plan' must be a JSON value",
        id="plan-2**64",
    ),
    pytest.param(
        {"type": "done", "output": {"x": object()}},
        "done: 'output' must be a JSON value",
        id="done-output",
    ),
    pytest.param(
        {"type": "interrupt", "payload": nested(1000)},
        "interrupt: 'payload' must be a JSON value",
        id="interrupt-deep",
    ),
    pytest.param(
        {"type": "subagent.started", "when": datetime.date(2026, 1, 1)},
        "subagent.started: 'when' must be a JSON value",
        id="subagent",
    ),
    pytest.param(
        {"type": "progress", "pct": {1: 2}},
        "progress: 'pct' must be a JSON value",
        id="other-object",
    ),
    pytest.param("bad \udc80 text", "token: 'content' must be a JSON value", id="bare-str"),
]


@pytest.mark.parametrize(("chunk", "message"), CHUNK_ERRORS)
def test_bad_chunk_raises_with_exact_message(impl, chunk, message):
    t = chunks(impl)
    with pytest.raises(CrumbError) as caught:
        t(chunk)
    assert str(caught.value) == message
    assert (t.dropped, t.ignored, t.finished) == (0, 0, False)
    assert [e["type"] for e in t("ok")] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
    ]


def test_bad_chunk_keeps_the_text_open(impl):
    t = chunks(impl)
    t("a")
    with pytest.raises(CrumbError):
        t({"type": "plan_update", "plan": {1, 2}})
    assert t("b") == [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "r1:m1", "delta": "b"}]


def test_non_object_chunks_are_ignored_not_errors(impl):
    t = chunks(impl)
    for chunk in (5, None, 1.5, [1], (1,), b"bytes", object(), True):
        t(chunk)
    assert t.ignored == 8
    assert t.dropped == 0


# ---- encode_sse ----


def test_encode_sse_accepts_one_event_or_a_list(impl):
    event = {"type": "CUSTOM", "name": "a.b", "value": {"x": [1, None]}, "rawEvent": None}
    assert (
        impl.encode_sse(event) == b'data: {"type":"CUSTOM","name":"a.b","value":{"x":[1,null]}}\n\n'
    )
    assert impl.encode_sse([event, event]) == impl.encode_sse(event) * 2
    assert impl.encode_sse([]) == b""


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(5, id="int"),
        pytest.param("data", id="str"),
        pytest.param([{"type": "CUSTOM", "name": "a.b", "value": 1}, 3], id="item-int"),
        pytest.param({"name": "x"}, id="no-type"),
        pytest.param({"type": 5}, id="type-int"),
        pytest.param({"type": "CUSTOM", "name": "a.b", "value": {1, 2}}, id="set"),
        pytest.param({"type": "CUSTOM", "name": "a.b", "value": "\ud800"}, id="surrogate"),
        pytest.param({"type": "CUSTOM", "name": "a.b", "value": 2**64}, id="2**64"),
        pytest.param({"type": "CUSTOM", "name": "a.b", "value": nested(1000)}, id="deep"),
    ],
)
def test_encode_sse_rejects_what_is_not_an_event(impl, bad):
    with pytest.raises(CrumbError):
        impl.encode_sse(bad)


def test_encode_sse_json_value_message(impl):
    with pytest.raises(CrumbError) as caught:
        impl.encode_sse({"type": "CUSTOM", "name": "a.b", "value": datetime.datetime.now()})
    assert str(caught.value) == "CUSTOM: 'value' must be a JSON value"


# ---- both builds agree on every message, including those the contract leaves open ----

UNSPECIFIED = [
    ("crumb", {"type": "text:delta", "delta": "x", 1: 2}),
    ("crumb", {"type": "tool:error", "toolCallId": "c", "error": {"code": 1, "message": "m"}}),
    ("crumb", {"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": nested(127)}),
    ("crumb", {"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": nested(128)}),
    ("crumb", {"type": "tool:call", "toolCallId": "c", "toolName": "f", "input": nested(129)}),
    ("chunk", {"x": object()}),
    ("chunk", {"type": "progress", 5: "x"}),
    ("chunk", {"type": "tool_result", "id": "c"}),
    ("sse", 5),
    ("sse", [5]),
    ("sse", {"name": "x"}),
    ("sse", {"type": "CUSTOM", 1: 2}),
]


# ``both`` (the two builds, failing under CI=true without the extension): conftest.py.


def _outcome(impl, kind, value):
    try:
        if kind == "crumb":
            return "ok", crumbs(impl).encode(value)
        if kind == "chunk":
            return "ok", chunks(impl).encode(value)
        return "ok", impl.encode_sse(value)
    except Exception as error:
        return type(error).__name__, str(error)


@pytest.mark.native_only
@pytest.mark.parametrize(
    ("kind", "value"), UNSPECIFIED, ids=[f"{k}{i}" for i, (k, _) in enumerate(UNSPECIFIED)]
)
def test_builds_agree_where_the_contract_is_silent(both, kind, value):
    native, pure = both
    assert _outcome(native, kind, value) == _outcome(pure, kind, value)


@pytest.mark.native_only
@pytest.mark.parametrize(
    "kwargs",
    [
        {"thread_id": 5},
        {"run_id": b"r"},
        {"state": [1]},
        {"state": {"a": {1, 2}}},
        {"state": {"a": 1}},
    ],
)
def test_builds_agree_on_bad_constructor_arguments(both, kwargs):
    native, pure = both

    def attempt(impl, factory):
        try:
            getattr(impl, factory)(**{"thread_id": "t", "run_id": "r", **kwargs})
        except Exception as error:
            return type(error).__name__, str(error)
        return "ok", None

    for factory in ("create_agui_transformer", "create_agui_translator"):
        assert attempt(native, factory) == attempt(pure, factory)


# ---- rule 11 corners where orjson alone would disagree with the contract ----


class _Float(float):
    pass


class _Str(str):
    pass


def test_float_subclasses_and_str_subclass_keys_are_json(impl):
    """Rule 11: a float subclass is a float and a str subclass key is a str key."""
    t = impl.create_agui_transformer("t1", "r1", {"s": _Float(0.5)})
    events = t(
        {
            "type": "tool:call",
            "toolCallId": "c",
            "toolName": "f",
            "input": {_Str("k"): _Float(2.5)},
        }
    )
    assert events[2]["delta"] == '{"k":2.5}'
    (snapshot,) = t({"type": "loop:start", "loopId": "L", "x": _Float(1.0)})
    assert impl.encode_sse(snapshot) == (
        b'data: {"type":"STATE_SNAPSHOT","snapshot":{"s":0.5,'
        b'"loop":{"loopId":"L","phase":"start","iteration":0,"x":1.0}}}\n\n'
    )


def test_encode_sse_omits_a_non_finite_top_level_field(impl):
    """Rule 11 makes NaN None before rule 8 applies, which omits a None optional."""
    event = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": math.nan}
    assert impl.encode_sse(event) == b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'


def test_a_str_subclass_field_name_is_read_as_its_text(impl):
    """A field named by a ``StrEnum`` member (a str subclass) is that name: the
    item maps as with a plain key, and so does every later item of the run."""
    from enum import StrEnum

    class Key(StrEnum):
        NOTE = "note"
        STEP = "iteration"

    def both(make, items):
        plain = [{str(k): v for k, v in item.items()} for item in items]
        return make().encode_many(items), make().encode_many(plain)

    chunks = [{"type": "progress", Key.NOTE: 1}, {"type": "plan_update", "plan": [1]}]
    got, expected = both(lambda: impl.create_agui_translator("t", "r"), chunks)
    assert got == expected and b'"snapshot":{"note":1}' in got
    loop = [{"type": "loop:start", "loopId": "L", Key.STEP: 2, Key.NOTE: "x"}]
    got, expected = both(lambda: impl.create_agui_transformer("t", "r"), loop)
    assert got == expected and b'"note":"x"' in got
    assert impl.encode_sse({"type": "CUSTOM", Key.NOTE: 1}) == impl.encode_sse(
        {"type": "CUSTOM", "note": 1}
    )
