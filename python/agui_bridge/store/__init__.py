"""Thread stores: ``memory://`` and ``sqlite:///PATH`` (the default).

A store keeps, per threadId: the history as AG-UI messages (in order, each id
once), the shared state (an object), the pending interrupts and the id of the
agent that owns the thread. Both stores implement the same small async API:

``await store.load(thread_id) -> Thread | None``
``await store.save(thread_id, agent_id, new_messages, state, interrupts)``
    appends the messages whose id the thread does not hold yet, and replaces
    the state and the pending interrupts, in one transaction.
``await store.close()``

Optionally (the SQLite store has them), ``store.claim(thread_id, token) -> bool``
and ``store.release(thread_id, token)``: a run lease shared by every process on
the store, so a thread has one active run across granian workers (the App also
keeps one per process). A store without them is guarded per process only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .memory import MemoryStore
from .sqlite import SqliteStore


@dataclass
class Thread:
    thread_id: str
    agent_id: str | None = None
    messages: list[dict] = field(default_factory=list)
    state: dict = field(default_factory=dict)
    interrupts: list[dict] = field(default_factory=list)


DEFAULT_STORE = "sqlite:///.agui/threads.sqlite"


def open_store(spec):
    """A store object from a URL (``memory://``, ``sqlite:///rel/or//abs``) or as is."""
    if not isinstance(spec, str):
        return spec
    if spec == "memory://" or spec == "memory:":
        return MemoryStore()
    if spec.startswith("sqlite:///"):
        return SqliteStore(spec[len("sqlite:///") :])
    raise ValueError(f"unknown store URL {spec!r} (use memory:// or sqlite:///PATH)")


__all__ = ["DEFAULT_STORE", "MemoryStore", "SqliteStore", "Thread", "open_store"]
