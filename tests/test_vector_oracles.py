"""Oracles for the golden vectors that are neither build.

The vectors' ``sse`` bytes were drafted by the pure build, so checking a build
against them alone could be a tautology. Here they meet judges of their own:

- the AG-UI SDK's ``EventEncoder`` (``ag_ui.encoder``): every event of every
  vector, parsed by the SDK's 1.0 models and encoded by the SDK, must be the
  same frame byte for byte where the SDK's JSON writer and the contract's
  (rule 11, orjson) agree: events whose values hold no float (float text and
  non-ASCII escaping are where pydantic writes differently). With floats the
  frame must still parse to the same JSON;
- the validator (``test_vectors.py``): each vector's stream passes
  ``ag-ui-validate``;
- hand-written expectations: a few frames written out here by hand from the
  contract, not drafted by any build.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ag_ui.core import Event
from ag_ui.encoder import EventEncoder
from pydantic import TypeAdapter

VECTORS = sorted((Path(__file__).parent / "vectors").glob("*.json"))
EVENT = TypeAdapter(Event)
ENCODER = EventEncoder()


def frames(vector: dict) -> list[str]:
    """The data part of each frame (an event-id line, contract section 7, comes before it)."""
    return [f"{frame.split(chr(10))[-1]}\n\n" for frame in vector["sse"].split("\n\n") if frame]


def has_float(value) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(has_float(v) for v in value)
    return False


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_sse_bytes_are_the_sdk_encoders(path):
    vector = json.loads(path.read_text(encoding="utf-8"))
    ours = frames(vector)
    assert len(ours) == len(vector["events"])
    for event, frame in zip(vector["events"], ours, strict=True):
        sdk = ENCODER.encode(EVENT.validate_python(event))
        assert json.loads(sdk[6:]) == json.loads(frame[6:]) == event
        if not has_float(event):
            assert sdk == frame, f"{vector['name']}: {event['type']}"


def test_the_sdk_comparison_covers_most_frames():
    checked = 0
    for path in VECTORS:
        vector = json.loads(path.read_text(encoding="utf-8"))
        checked += sum(not has_float(event) for event in vector["events"])
    assert checked >= 500


# Written by hand from CONTRACT.md sections 1-3 and docs/events-dialect.md.
HAND_WRITTEN = {
    "c_run_start_from_agent_run_start": [
        'data: {"type":"RUN_STARTED","threadId":"s9","runId":"r9"}\n\n',
        'data: {"type":"TEXT_MESSAGE_START","messageId":"r9:m1","role":"assistant"}\n\n',
        'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"r9:m1","delta":"Hel"}\n\n',
        'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"r9:m1","delta":"lo"}\n\n',
        'data: {"type":"TEXT_MESSAGE_END","messageId":"r9:m1"}\n\n',
        'data: {"type":"RUN_FINISHED","threadId":"s9","runId":"r9"}\n\n',
    ],
    "e_events_closers_before_the_terminal_event": [
        'data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1"}\n\n',
        'data: {"type":"STEP_STARTED","stepName":"outer"}\n\n',
        'data: {"type":"STEP_STARTED","stepName":"inner"}\n\n',
        'data: {"type":"TEXT_MESSAGE_START","messageId":"m-a","role":"assistant"}\n\n',
        'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m-a","delta":"open"}\n\n',
        'data: {"type":"TEXT_MESSAGE_END","messageId":"m-a"}\n\n',
        'data: {"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f",'
        '"parentMessageId":"m-a"}\n\n',
        'data: {"type":"TOOL_CALL_START","toolCallId":"c2","toolCallName":"g",'
        '"parentMessageId":"m-a"}\n\n',
        'data: {"type":"TOOL_CALL_END","toolCallId":"c1"}\n\n',
        'data: {"type":"TOOL_CALL_END","toolCallId":"c2"}\n\n',
        'data: {"type":"STEP_FINISHED","stepName":"inner"}\n\n',
        'data: {"type":"STEP_FINISHED","stepName":"outer"}\n\n',
        'data: {"type":"RUN_ERROR","message":"boom","code":"E1"}\n\n',
    ],
}


@pytest.mark.parametrize("stem", sorted(HAND_WRITTEN))
def test_hand_written_frames(stem):
    vector = json.loads((Path(__file__).parent / "vectors" / f"{stem}.json").read_text())
    assert vector["sse"] == "".join(HAND_WRITTEN[stem])
