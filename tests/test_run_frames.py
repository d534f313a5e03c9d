"""The one reading of a run log's SSE frames (runs.frames)."""

from __future__ import annotations

from agui_bridge.runs.frames import event_of, events_of, first_frame, frame, split


def test_frames_read_back_what_was_written():
    a, b = {"type": "RUN_STARTED", "n": 1}, {"type": "RUN_FINISHED", "text": "a\nb"}
    data = b"id: 1\n" + frame(a) + b": ping\n\n" + b"id: 2\n" + frame(b)
    assert split(data) == [b"id: 1\n" + frame(a)[:-2], b": ping", b"id: 2\n" + frame(b)[:-2]]
    assert events_of(data) == [a, b]
    assert event_of(data) == a and event_of(data, last=True) == b
    assert first_frame(data) == frame(a)
    assert event_of(b": ping") is None and event_of(b"data: {not json") is None
