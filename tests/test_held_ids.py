"""Contract section 6: ``held_ids``, the ids a thread already holds (both builds).

The vectors (``*held*``) pin the events; these pin the argument itself and
the paths a vector does not take (``encode_many``, the hot readers).
"""

from __future__ import annotations

import pytest
from agui_bridge.errors import CrumbError


def factories(impl):
    return (
        lambda **kw: impl.create_agui_transformer("t1", "r1", **kw),
        lambda **kw: impl.create_agui_translator("t1", "r1", **kw),
    )


@pytest.mark.parametrize(
    ("held_ids", "error", "message"),
    [
        ("r1:m1", TypeError, "held_ids must be an iterable of strings, not str"),
        (b"r1", TypeError, "held_ids must be an iterable of strings, not bytes"),
        (3, TypeError, "held_ids must be an iterable of strings, not int"),
        (["a", 1], TypeError, "each held id must be a string, not int"),
        (["\ud800"], ValueError, "held_ids must be valid unicode"),
    ],
)
def test_bad_held_ids_raise(impl, held_ids, error, message):
    for create in factories(impl):
        with pytest.raises(error) as caught:
            create(held_ids=held_ids)
        assert str(caught.value) == message


def test_held_ids_take_any_iterable_or_none(impl):
    class Id(str):
        pass

    for held in (None, (), {"r1:m1"}, (i for i in ["r1:m1"]), {"r1:m1": 1}, [Id("r1:m1")]):
        t = impl.create_agui_transformer("t1", "r1", held_ids=held)
        events = t({"type": "text:delta", "delta": "x"})
        expected = "r1:m1" if held in (None, ()) else "r1:m2"
        assert events[1]["messageId"] == expected, held


def test_held_ids_is_keyword_only(impl):
    with pytest.raises(TypeError):
        impl.create_agui_transformer("t1", "r1", None, ["r1:m1"])
    with pytest.raises(TypeError):
        impl.create_agui_translator("t1", "r1", None, "dawn", ["r1:m1"])


def test_every_generated_kind_skips_held_ids(impl):
    held = [f"r1:{kind}{n}" for kind in "mrti" for n in (1, 2)]
    t = impl.create_agui_translator("t1", "r1", held_ids=held)
    events = t({"type": "tool_call", "name": "f"}) + t("hi")
    events += t({"type": "tool_result", "id": "r1:t3", "output": 1})
    ids = [e.get("messageId") or e.get("toolCallId") for e in events[1:]]
    assert ids == ["r1:t3", "r1:t3", "r1:t3", "r1:m3", "r1:m3", "r1:m3", "r1:r3"]
    c = impl.create_agui_transformer("t1", "r1", held_ids=held)
    c({"type": "human:required"})
    assert c.interrupts[0]["id"] == "r1:i3"


@pytest.mark.parametrize(
    "crumb",
    [
        {"type": "tool:input:start", "toolCallId": "h", "toolName": "f"},
        {"type": "tool:call", "toolCallId": "h", "toolName": "f", "input": {}},
        # An extra field takes the native build off its hot reader.
        {"type": "tool:call", "toolCallId": "h", "toolName": "f", "input": {}, "x": 1},
    ],
)
def test_encode_many_stops_at_a_held_id(impl, crumb):
    t = impl.create_agui_transformer("t1", "r1", held_ids=["h"])
    good = {"type": "text:delta", "delta": "a"}
    with pytest.raises(CrumbError) as caught:
        t.encode_many([good, crumb, good])
    assert caught.value.index == 1
    assert caught.value.partial == impl.create_agui_transformer("t1", "r1").encode(good)
    assert str(caught.value).endswith(": 'toolCallId' \"h\" is already held by the thread")
    # Nothing changed: the run goes on, the text message still open.
    content = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"r1:m1","delta":"a"}\n\n'
    assert t.encode(good) == content


def test_a_held_chunk_tool_call_raises_on_every_path(impl):
    chunk = {"type": "tool_call", "id": "h", "name": "f", "input": {"a": 1}}
    for extra in ({}, {"meta": 1}):
        t = impl.create_agui_translator("t1", "r1", held_ids=["h"])
        item = {**chunk, **extra}
        for call in (t, t.encode, lambda i, t=t: t.encode_many([i])):
            with pytest.raises(CrumbError) as caught:
                call(item)
            assert str(caught.value) == "tool_call: 'id' \"h\" is already held by the thread"
        assert (t.dropped, t.finished) == (0, False)
        assert t.finish()[0]["type"] == "RUN_STARTED"
        # After the end, input is dropped, never refused (rule 2).
        assert t(item) == [] and t.encode(item) == b"" and t.dropped == 2
