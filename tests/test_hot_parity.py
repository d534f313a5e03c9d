"""The native fast paths against the pure build, on the fast paths' own shapes.

``rust/py/src/fast.rs`` and ``hot.rs`` read the frequent items straight from
their dicts and must accept exactly what the parser accepts, no more. Random
shapes rarely hit their edges, so here every field of every hot item is
replaced by a value of each wrong kind, removed, doubled under a str-subclass
key, and joined by an extra field; each variant follows a prelude that puts
the run where the fast path applies (a text or a tool call open). Both builds
must give the same events, bytes, errors and counters for every variant.
"""

from __future__ import annotations

import pytest

from tests.test_differential import make, replay


class Text(str):
    pass


WRONG = [
    None,
    0,
    -1,
    2**70,
    1.5,
    float("nan"),
    True,
    [],
    ["a"],
    {},
    {"a": 1},
    "",
    "ok",
    "\ud800",
    Text("sub"),
    b"bytes",
    (1, 2),
    object(),
]

PRELUDE = {
    "crumbs": [
        {"type": "text:delta", "delta": "open"},
        {"type": "tool:input:start", "toolCallId": "c1", "toolName": "f"},
        {"type": "text:delta", "delta": "again"},
        {"type": "pipeline:step:start", "stepName": "s1"},
    ],
    "chunks": ["open", {"type": "tool_call", "id": "c0", "name": "f"}, "again"],
    # m1 streams; c1 is open; m2 was closed by the call, so its content re-opens it.
    "events": [
        {"type": "TEXT_MESSAGE_START", "messageId": "m2"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m2", "delta": "first"},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "open"},
    ],
}

# The hot items, as the fast paths read them (fast.rs: text and tool-argument
# deltas, the events dialect's content and arguments; hot.rs: tool calls,
# results, steps).
HOT = {
    "crumbs": [
        {"type": "text:delta", "delta": "d"},
        {"type": "tool:input:delta", "toolCallId": "c1", "delta": "{}"},
        {"type": "tool:input:start", "toolCallId": "c2", "toolName": "g"},
        {"type": "tool:input:end", "toolCallId": "c1"},
        {"type": "tool:call", "toolCallId": "c3", "toolName": "h", "input": {"a": 1}},
        {"type": "tool:result", "toolCallId": "c1", "result": "r"},
        {"type": "tool:result", "toolCallId": "c1", "result": {"r": [1]}},
        {"type": "pipeline:step:start", "stepName": "s2"},
        {"type": "pipeline:step:end", "stepName": "s1"},
    ],
    "chunks": [
        {"type": "token", "content": "d"},
        {"type": "chunk", "content": "d"},
        {"type": "tool_call", "name": "g"},
        {"type": "tool_call", "id": "c2", "name": "g"},
        {"type": "tool_call", "id": "c3", "name": "g", "input": {"a": 1}},
        {"type": "tool_result", "id": "c0", "output": "r"},
        {"type": "tool_result", "id": "c0", "output": [1, None]},
    ],
    "events": [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "d"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m2", "delta": "d"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m3", "delta": "d"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c9", "delta": "{}"},
        # hot.rs: the rows whose fields are all strings.
        {"type": "TEXT_MESSAGE_START", "messageId": "m3", "role": "assistant"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "d"},
        {"type": "TOOL_CALL_START", "toolCallId": "c2", "toolCallName": "g"},
        {"type": "TOOL_CALL_START", "toolCallId": "held", "toolCallName": "g"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c3", "toolCallName": "g", "delta": "{"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "content": "r", "messageId": "x"},
        {"type": "STEP_STARTED", "stepName": "s1"},
        {"type": "STEP_FINISHED", "stepName": "s1"},
        {"type": "RUN_ERROR", "message": "m", "code": "c"},
        {"type": "RUN_STARTED", "threadId": "t9", "runId": "r9"},
    ],
}


def _shown(value) -> str:
    # Test ids must be the same in every process (pytest-xdist compares its workers'):
    # an object()'s repr holds its address.
    return "object()" if type(value) is object else repr(value)


def variants(item: dict):
    yield "as is", item
    for field in item:
        for value in WRONG:
            yield f"{field}={_shown(value)}", {**item, field: value}
        yield f"without {field}", {k: v for k, v in item.items() if k != field}
        if field != "type":
            # Same text twice: one plain key, one str-subclass key.
            yield f"{field} twice", {**item, Text(field): item[field]}
    yield "extra field", {**item, "extra": 1}
    yield "extra null", {**item, "extra": None}
    yield "type as a str subclass", {**item, "type": Text(item["type"])}


def cases():
    for dialect, items in HOT.items():
        for item in items:
            for name, variant in variants(item):
                yield pytest.param(dialect, variant, id=f"{dialect}-{item['type']}-{name}")


# ``both`` (the two builds, failing under CI=true without the extension): conftest.py.


@pytest.mark.native_only
@pytest.mark.parametrize(("dialect", "variant"), list(cases()))
def test_hot_shapes_agree(both, dialect, variant):
    native, pure = both
    items = [*PRELUDE[dialect], variant, variant]
    # An id the thread holds may not be opened (the readers check it too).
    options = (("held",), None, None)
    assert replay(native, dialect, items, "finish", options) == replay(
        pure, dialect, items, "finish", options
    )


@pytest.mark.native_only
def test_input_after_the_end_is_dropped_not_refused(both):
    """A hot item after the run ended is dropped, even one the parser would refuse."""
    native, pure = both
    items = {
        "crumbs": {"type": "tool:input:start", "toolCallId": "held", "toolName": "f"},
        "events": {"type": "TOOL_CALL_START", "toolCallId": "held", "toolCallName": "f"},
    }
    for dialect, item in items.items():
        for impl in (native, pure):
            t = make(impl, dialect, (("held",), None, None))
            t.finish()
            assert t(item) == [] and t.encode(item) == b"" and t.encode_many([item]) == b""
            assert t.dropped == 3


@pytest.mark.native_only
@pytest.mark.parametrize("dialect", list(HOT))
def test_parsed_items_agree_in_one_batch(both, dialect):
    """Items as a JSON parser gives them share key objects that are not the
    interned names (``encode_many`` remembers a key it matched by text); one
    batch mixes them with str-subclass keys, doubled keys and wrong values, so
    a remembered key never stands for another field."""
    import orjson

    native, pure = both
    parsed = orjson.loads(orjson.dumps([*PRELUDE[dialect], *HOT[dialect]] * 2))
    items = list(parsed)
    for item in HOT[dialect]:
        for _name, variant in variants(item):
            items.append(variant)
            items.append(orjson.loads(orjson.dumps(item)))
    options = (("held",), None, None)
    assert replay(native, dialect, items, "finish", options) == replay(
        pure, dialect, items, "finish", options
    )
