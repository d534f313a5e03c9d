"""encode_sse: SSE frames for event dicts the caller built."""

from __future__ import annotations

from ..errors import CrumbError
from .json_values import field_name, frames, is_unicode, json_field


def _event(event) -> dict:
    if not isinstance(event, dict):
        raise CrumbError(f"event must be a dict, not {type(event).__name__}")
    event_type = event.get("type")
    if not isinstance(event_type, str) or not is_unicode(event_type):
        raise CrumbError("event has no string 'type'")
    out = {}
    for key, value in event.items():
        key = field_name(event_type, key)
        value = json_field(event_type, key, value)
        # After normalizing: a NaN field is None by rule 11, then omitted by rule 8.
        if value is not None:
            out[key] = value
    return out


def encode_sse(event_or_events) -> bytes:
    """One ``data:`` frame per event; ``None`` fields are omitted (rule 8)."""
    if isinstance(event_or_events, dict):
        return frames([_event(event_or_events)])
    if not isinstance(event_or_events, (list, tuple)):
        raise CrumbError(
            f"encode_sse takes a dict or a list of dicts, not {type(event_or_events).__name__}"
        )
    return frames([_event(event) for event in event_or_events])
