"""What a store can keep, checked the same way by every store.

A thread id is a string of at most ``shapes.MAX_ID_CHARS`` characters
without NUL, a message id a string without NUL, and metadata holds no NUL (PostgreSQL's text and
jsonb refuse it; the other stores follow, so a thread means the same on
each). A write of anything else raises ``RunInputError`` (a 400 on AG-UI
routes, a 422 on the Agent Protocol's) and writes nothing; a read of an id
no store could hold finds nothing.
"""

from __future__ import annotations

from ..errors import RunInputError
from ..interrupts import kept_aside
from ..shapes import check_id, check_no_nul, storable_id

__all__ = [
    "check_messages",
    "check_metadata",
    "check_thread",
    "metadata_holds",
    "status_of",
    "storable_id",
]


def check_thread(thread_id) -> None:
    check_id(thread_id, "the thread id")


def check_messages(messages) -> None:
    # No length cap here: the ids a run makes extend its runId (``{runId}:m1``),
    # which the door capped; what no store can hold is NUL.
    for message in messages:
        message_id = message.get("id")
        if not isinstance(message_id, str) or not message_id or "\x00" in message_id:
            raise RunInputError("a message id must be a non-empty string without NUL")


def check_metadata(metadata) -> None:
    check_no_nul(metadata, "the metadata")


def status_of(interrupts, errored: bool) -> str:
    """The status a save leaves a thread in (busy is a live lease, not stored)."""
    if errored:
        return "error"
    # Interrupts a stopped run kept aside (``{"keptAside": …}``) are not pending.
    pending = any(not kept_aside(i) for i in interrupts)
    return "interrupted" if pending else "idle"


def metadata_holds(metadata: dict, wanted: dict) -> bool:
    """A search's metadata filter: each key of ``wanted`` is in ``metadata``
    with an equal value, equal as PostgreSQL's jsonb compares (where the
    PostgreSQL store runs it): a boolean is no number, numbers by value."""
    return all(k in metadata and _same_json(metadata[k], v) for k, v in wanted.items())


def _same_json(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same_json, a, b))
    return a == b
