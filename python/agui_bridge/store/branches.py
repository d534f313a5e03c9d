"""Branches: a thread is a tree of messages with one current branch.

A run that starts a new branch (a regenerate, an edit, a client that diverges
from what the thread holds: ``turns.py`` decides) hands its save a ``Cut``.
In the save's own transaction, fenced like the rest of it, the store first
keeps the whole current branch as it was (its messages in order and its
state) as a numbered branch of the thread, then drops the current branch's
messages after ``Cut.after``; the run's messages are appended to what is
left. Nothing is deleted: every branch a thread ever had stays readable
(``store.branches(thread_id)``, ``store.branch(thread_id, number)``) until
the thread is deleted.

The current branch stays one ordered list, so a load, a save and the id
rules (each id once on the current branch) are what they were. A cut is the
one write that changes messages already stored, so it bumps the thread's
``cuts`` count, which is part of the epoch of every cached tail
(``tail.py``): a process that cached the thread reads it again.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cut:
    """What a run's save does first: the current branch keeps its messages up to
    and including the one with id ``after`` (None: none of them), the rest is
    kept as a branch of the thread left by run ``run_id``."""

    after: str | None
    run_id: str | None = None


@dataclass
class Branch:
    """A branch the thread left: ``number`` (1, 2, … in the order they were
    left), the message it forked after (``after``, None: from the start), the
    run that left it, when, and how many messages it held; ``messages`` and
    ``state`` when read one at a time."""

    number: int
    after: str | None
    run_id: str | None
    created_at: float
    count: int
    messages: list[dict] | None = None
    state: dict | None = None


def kept(messages: list[dict], after: str | None) -> int | None:
    """How many of ``messages`` a cut after ``after`` keeps (None: no such message)."""
    if after is None:
        return 0
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("id") == after:
            return index + 1
    return None
