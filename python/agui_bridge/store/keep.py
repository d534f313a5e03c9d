"""What a store can keep, checked the same way by every store.

A thread or message id is a string of at most ``shapes.MAX_ID_CHARS``
characters without NUL, and metadata holds no NUL (PostgreSQL's text and
jsonb refuse it; the other stores follow, so a thread means the same on
each). A write of anything else raises ``RunInputError`` (a 400 on AG-UI
routes, a 422 on the Agent Protocol's) and writes nothing; a read of an id
no store could hold finds nothing.
"""

from __future__ import annotations

from ..shapes import check_id, check_no_nul, storable_id

__all__ = ["check_messages", "check_metadata", "check_thread", "status_of", "storable_id"]


def check_thread(thread_id) -> None:
    check_id(thread_id, "the thread id")


def check_messages(messages) -> None:
    for message in messages:
        check_id(message.get("id"), "a message id")


def check_metadata(metadata) -> None:
    check_no_nul(metadata, "the metadata")


def status_of(interrupts, errored: bool) -> str:
    """The status a save leaves a thread in (busy is a live lease, not stored)."""
    if errored:
        return "error"
    return "interrupted" if interrupts else "idle"
