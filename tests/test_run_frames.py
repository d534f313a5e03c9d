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


def test_a_frame_whose_json_holds_data_colon_is_read_whole():
    """The text "data: " inside an event (a delta, an interrupt's message) is
    no frame's start: the first and the last event are still the frames'."""
    a = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x data: y"}
    b = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": "confirm data: x"}
    data = b"id: 1\n" + frame(a) + b"id: 2\n" + frame(b)
    assert event_of(data) == a and event_of(data, last=True) == b
    assert event_of(frame(b), last=True) == b and event_of(b": data: \n\n" + frame(a)) == a
