"""Contract section 7: ``event_ids`` and ``first_id`` (both builds).

The vectors (``*event_ids*``) pin the frames; these pin the options and the
numbering across methods a vector replays one at a time.
"""

from __future__ import annotations

import re

import pytest


def factories(impl):
    return (
        lambda **kw: impl.create_agui_transformer("t1", "r1", **kw),
        lambda **kw: impl.create_agui_translator("t1", "r1", **kw),
    )


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"event_ids": 1}, TypeError, "event_ids must be a bool, not int"),
        ({"event_ids": "yes"}, TypeError, "event_ids must be a bool, not str"),
        ({"first_id": "1"}, TypeError, "first_id must be an integer, not str"),
        ({"first_id": 1.0}, TypeError, "first_id must be an integer, not float"),
        ({"first_id": True}, TypeError, "first_id must be an integer, not bool"),
        ({"first_id": 0}, ValueError, "first_id must be from 1 to 2**63 - 1"),
        ({"first_id": -5}, ValueError, "first_id must be from 1 to 2**63 - 1"),
        ({"first_id": 2**63}, ValueError, "first_id must be from 1 to 2**63 - 1"),
    ],
)
def test_bad_options_raise(impl, options, error, message):
    for create in factories(impl):
        with pytest.raises(error) as caught:
            create(**options)
        assert str(caught.value) == message


def test_defaults_and_none(impl):
    for create in factories(impl):
        for t in (create(), create(event_ids=None, first_id=None)):
            assert (t.next_id, t.last_id) == (1, 0)
            assert t.finish_encoded().startswith(b"data: ")
            assert (t.next_id, t.last_id) == (3, 2)
        big = create(event_ids=True, first_id=2**63 - 1)
        assert big.last_id == 2**63 - 2
        assert big.finish_encoded().startswith(b"id: 9223372036854775807\ndata: ")


def ids_of(frames: bytes) -> list[int]:
    return [int(n) for n in re.findall(rb"^id: ([0-9]+)\n", frames, flags=re.MULTILINE)]


def test_every_method_takes_the_next_id(impl):
    """n counts events, whatever method emitted them; dicts carry no id."""
    t = impl.create_agui_transformer("t1", "r1", event_ids=True, first_id=5)
    text = {"type": "text:delta", "delta": "a"}
    out = t.encode(text)  # RUN_STARTED, START, CONTENT
    assert ids_of(out) == [5, 6, 7]
    events = t(text)  # the native fast path: one content dict
    assert events == [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "r1:m1", "delta": "a"}]
    assert t.last_id == 8
    out = t.encode(text)  # the native exact-length path
    assert (
        out == b'id: 9\ndata: {"type":"TEXT_MESSAGE_CONTENT","messageId":"r1:m1","delta":"a"}\n\n'
    )
    out = t.encode({"type": "text:delta", "delta": 'q"'})  # a delta that needs escaping
    assert ids_of(out) == [10]
    batch = [
        text,
        {"type": "tool:input:start", "toolCallId": "c", "toolName": "f"},
        {"type": "tool:input:delta", "toolCallId": "c", "delta": "{}"},
        {"type": "tool:input:end", "toolCallId": "c"},
        {"type": "tool:result", "toolCallId": "c", "result": 1},
        {"type": "pipeline:step:start", "stepName": "s"},
    ]
    out = t.encode_many(batch)
    assert ids_of(out) == list(range(11, 18))
    assert len(t({"type": "tool:input:delta", "toolCallId": "c", "delta": "x"})) == 0
    assert t.next_id == 18
    assert ids_of(t.finish_encoded()) == [18, 19]
    assert (t.next_id, t.last_id) == (20, 19)
    # Nothing after the end, and nothing numbered.
    assert t.finish_encoded() == b"" and t.encode(text) == b"" and t.last_id == 19


def test_failed_item_takes_no_id_and_partial_is_numbered(impl):
    t = impl.create_agui_translator("t1", "r1", event_ids=True)
    with pytest.raises(Exception) as caught:
        t.encode_many(["a", {"type": "token", "content": 3}, "b"])
    assert ids_of(caught.value.partial) == [1, 2, 3]
    assert t.next_id == 4
    assert ids_of(t.fail_encoded(RuntimeError("x"))) == [4, 5]


def test_off_counts_but_writes_no_ids(impl):
    t = impl.create_agui_translator("t1", "r1", first_id=10)
    out = t.encode_many(["a", "b"]) + t.finish_encoded()
    assert b"id:" not in out
    assert t.last_id == 10 + out.count(b"data: ") - 1


def test_ids_taken_by_code_that_runs_inside_a_call_are_not_given_twice(impl):
    """A generator handed to ``encode_many``, or an error's ``__str__`` handed to
    ``fail``, may itself map items on the same transformer: the ids those take
    are skipped by the frames around them, never written twice."""
    t = impl.create_agui_transformer("t", "r", event_ids=True)
    inside = []

    def items():
        yield {"type": "text:delta", "delta": "a"}
        inside.append(t.encode({"type": "pipeline:step:start", "stepName": "s"}))
        yield {"type": "text:delta", "delta": "b"}

    class Failure(Exception):
        def __str__(self):
            inside.append(t.encode({"type": "pipeline:step:start", "stepName": "checking"}))
            return "failed"

    outside = [t.encode_many(items()), t.fail_encoded(Failure())]
    ids = ids_of(b"".join(outside)) + ids_of(b"".join(inside))
    assert sorted(ids) == list(range(1, len(ids) + 1))
    t = impl.create_agui_transformer("t", "r", event_ids=True)
    inside.clear()
    t.encode({"type": "text:delta", "delta": "a"})
    events, frames = t.fail_events_and_frames(Failure())
    after = ids_of(inside[0])[-1] + 1
    assert ids_of(frames) == list(range(after, after + len(events)))


def test_ids_taken_while_an_event_model_is_dumped_are_not_given_twice(impl):
    """Reading an event model runs its ``model_dump``, which may map items on the
    same transformer: the model's frames are numbered after those."""
    t = impl.create_agui_repairer("t", "r", event_ids=True)
    inside = []

    class Step:
        """An event model (duck-typed as the SDK's: ``model_dump`` on its type)."""

        def __init__(self, name):
            self.name = name

        def model_dump(self, **options):
            inside.append(t.encode({"type": "STEP_STARTED", "stepName": f"inner-{self.name}"}))
            return {"type": "STEP_STARTED", "stepName": self.name}

    outside = [t.encode(Step("a")), t.encode_many([Step("b")])]
    outside.append(t.events_and_frames(Step("c"))[1])
    ids = ids_of(b"".join(outside)) + ids_of(b"".join(inside))
    assert sorted(ids) == list(range(1, len(ids) + 1))
