"""Corners where a run's output must not depend on what the caller does with it."""

from __future__ import annotations

import pytest
from agui_bridge.errors import CrumbError


class _Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text")


def _types(events):
    return [e["type"] for e in events]


@pytest.mark.parametrize("factory", ["create_agui_transformer", "create_agui_translator"])
def test_fail_whose_str_raises_changes_nothing(impl, factory):
    t = getattr(impl, factory)("t1", "r1")
    with pytest.raises(RuntimeError, match="no text"):
        t.fail(_Unprintable())
    assert not t.finished
    # RUN_STARTED was not spent by the failed call: the stream still starts with it.
    assert _types(t.finish()) == ["RUN_STARTED", "RUN_FINISHED"]


def test_changing_a_returned_snapshot_does_not_change_the_run(impl):
    t = impl.create_agui_transformer("t1", "r1", {"keep": {"a": [1]}})
    snapshot = t({"type": "loop:start", "loopId": "L"})[-1]["snapshot"]
    snapshot["loop"]["iteration"] = 99
    snapshot["keep"]["a"].append(2)
    t.state["keep"]["a"].append(3)
    t.interrupts.append({"id": "x"})
    events = t({"type": "loop:iteration:start", "loopId": "L"})
    assert events[0] == {"type": "STEP_STARTED", "stepName": "loop_L_0"}
    assert events[1]["snapshot"]["keep"] == {"a": [1]}
    assert t.interrupts == []


def test_a_crumb_type_with_a_lone_surrogate_is_no_type(impl):
    t = impl.create_agui_transformer("t1", "r1")
    with pytest.raises(CrumbError, match=r"^crumb has no string 'type'$"):
        t({"type": "text:delta\ud800", "delta": "x"})
    with pytest.raises(CrumbError, match=r"^text:delta: field names must be strings$"):
        t({"type": "text:delta", "delta": "x", "\udc00": 1})
    assert _types(t({"type": "text:delta", "delta": "x"}))[0] == "RUN_STARTED"


def test_a_chunk_type_with_a_lone_surrogate_is_any_other_object(impl):
    t = impl.create_agui_translator("t1", "r1")
    events = t({"type": "token\ud800", "plan": 1})
    assert events[-1] == {"type": "STATE_SNAPSHOT", "snapshot": {"plan": 1}}


@pytest.mark.parametrize("name", ["thread_id", "run_id"])
def test_created_ids_must_be_valid_unicode(impl, name):
    with pytest.raises(ValueError, match=rf"^{name} must be valid unicode$"):
        impl.create_agui_transformer(**{name: "a\ud800"})
    with pytest.raises(TypeError, match=rf"^{name} must be a string, not int$"):
        impl.create_agui_translator(**{name: 5})


def test_encode_sse_type_with_a_lone_surrogate_is_no_type(impl):
    with pytest.raises(CrumbError, match=r"^event has no string 'type'$"):
        impl.encode_sse({"type": "CUSTOM\ud800", "name": "x", "value": 1})
