"""Thread stores: ``memory://`` and ``sqlite:///PATH`` (the default).

A store keeps, per threadId: the history as AG-UI messages (in order, each id
once), the shared state (an object), the pending interrupts and the id of the
agent that owns the thread. Both stores implement the same small async API:

``await store.load(thread_id) -> Thread | None``
``await store.save(thread_id, agent_id, new_messages, state, interrupts)``
    appends the messages whose id the thread does not hold yet, and replaces
    the state and the pending interrupts, in one transaction.
``await store.close()``

and, to share run leases between processes (one active run per thread
across granian workers and machines), ``claim``, ``renew`` and ``release``
(see ``lease.py``). A store without them is guarded per process only. No
call may block the event loop: a store on a blocking driver runs it in a
thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .lease import Lease
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


__all__ = ["DEFAULT_STORE", "Lease", "MemoryStore", "SqliteStore", "Thread", "open_store"]
