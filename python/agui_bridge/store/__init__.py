"""Thread stores, named by URL (``App(store=...)``; this is the one place the
forms are documented):

``sqlite:///PATH``
    the default (``sqlite:///.agui/threads.sqlite``): a relative PATH, or an
    absolute one after a fourth slash (``sqlite:////var/lib/agui.sqlite``);
``memory://``
    in-process, for tests and demos;
``postgresql://user:pass@host:port/db`` (or ``postgres://``)
    PostgreSQL, shared by gateways on several machines; needs the
    ``postgres`` extra (asyncpg). libpq's query parameters apply
    (``?sslmode=require``); any other parameter is a server setting.

A store keeps, per threadId: the history as AG-UI messages (in order, each id
once), the shared state (an object), the interrupts and the id of the
agent that owns the thread. Both stores implement the same small async API:

``await store.load(thread_id) -> Thread | None``
``await store.save(thread_id, agent_id, new_messages, state, interrupts, lease=None)``
    appends the messages whose id the thread does not hold yet, and replaces
    the state and the interrupts, in one transaction; given the run's
    ``lease``, it first checks that the lease's fence is still the thread's and
    otherwise raises ``LeaseLost`` and writes nothing (``lease.py``).

A run costs the same on a long thread as on a new one: a save appends what is
new (it never reads or rewrites what the thread holds), and a load reads only
the messages stored since the same process last loaded the thread (messages
are never changed once stored, so both stores keep the decoded ones, shared,
in a bounded cache; see ``Tail``).
``await store.close()``

and, for the Agent Protocol's thread routes (``/threads``, search, delete):
``await store.create(thread_id, metadata) -> bool`` (False: it exists, nothing
changed), ``await store.update_metadata(thread_id, metadata) -> bool`` (merged;
False: no such thread), ``await store.delete(thread_id) -> bool`` and
``await store.search(metadata, ids, limit, offset=0, owner=None, status=None)
-> list[Listed]`` (the threads whose metadata holds each key of ``metadata``
with an equal value, of ``owner`` when given, in ``status`` when given, newest
update first, ``offset`` of them skipped, at most ``limit``; answered from
indexed columns, never by loading threads) and ``await store.sweep(idle_before,
batch) -> list[str]`` (deletes up to ``batch`` threads last updated before
``idle_before`` with no live run lease; their ids).

``save`` also takes ``owner`` (stored when the save creates the thread) and
``errored`` (the run ended in RUN_ERROR: the thread's status is "error"; else
"interrupted" with interrupts pending, "idle" without), and ``create`` takes
``owner``: see ``owner.py``.

The ``interrupts`` a save receives are the pending ones and, after them, those
a stopped run kept aside, each wrapped as ``{"keptAside": interrupt}``
(``interrupts.py``): not pending. A store (``App(store=obj)`` included) keeps
the list as it is and returns it as it was saved; it computes the status with
``keep.status_of(interrupts, errored)`` (or counts only the entries that are
not ``{"keptAside": …}``), so a thread with only those is "idle". ``load``
returns a ``Thread``, which splits them off into ``kept_aside``; a thread
object of another type has them split off where a run loads it
(``split_thread``), but the thread routes read its ``interrupts`` as given.

Every store keeps the same ids and metadata (``keep.py``: no NUL, ids capped):
a write of anything else raises ``RunInputError`` and writes nothing.

and, to share run leases between processes (one active run per thread
across granian workers and machines), ``claim``, ``renew`` and ``release``
(see ``lease.py``). A store without them is guarded per process only. No
call may block the event loop: a store on a blocking driver runs it in a
thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ..interrupts import split
from .ids import HeldIds
from .lease import Lease
from .memory import MemoryStore
from .sqlite import SqliteStore


@dataclass
class Thread:
    """A stored thread. ``messages`` is a new list, but its messages are shared
    with the store's cache (a run must not change them); ``ids`` holds every
    message id and ``call_ids`` every tool call id of the thread, as ``HeldIds``
    (``ids.py``) of this load's own: shared frozen parts, so a load copies no
    long set (``None`` from a store that does not keep them: the handler then
    reads the messages)."""

    thread_id: str
    agent_id: str | None = None
    messages: list[dict] = field(default_factory=list)
    state: dict = field(default_factory=dict)
    interrupts: list[dict] = field(default_factory=list)
    ids: HeldIds | None = None
    call_ids: HeldIds | None = None
    # Agent Protocol's view of the thread: its metadata and times (epoch seconds).
    metadata: dict = field(default_factory=dict)
    created_at: float | None = None
    updated_at: float | None = None
    # Who created it (``owner.py``) and how its last run left it: "idle",
    # "interrupted" (interrupts pending) or "error" (busy is a live lease).
    owner: str | None = None
    status: str = "idle"
    # Interrupts a stopped run left aside (``interrupts.py``): not pending, but
    # a resume naming them re-opens them. Stored in ``interrupts``, each as
    # ``{"keptAside": interrupt}``, and split off here.
    kept_aside: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        pending, kept = split(self.interrupts)
        if kept:
            self.interrupts = pending
            self.kept_aside = [*self.kept_aside, *kept]


def split_thread(thread):
    """A loaded thread as a run reads it: a custom store's own thread object (not
    ``Thread``) gets its ``{"keptAside": …}`` entries split off as ``Thread``
    does (a copy; without them, the object itself)."""
    if thread is None or isinstance(thread, Thread):
        return thread
    pending, kept = split(getattr(thread, "interrupts", None) or [])
    if not kept:
        return thread
    return _Split(thread, pending, [*(getattr(thread, "kept_aside", None) or []), *kept])


class _Split:
    """A custom store's thread object with its interrupts split, the object
    left as it is (it may be frozen, or a tuple): every other attribute is its own."""

    def __init__(self, thread, interrupts: list, kept_aside: list):
        self._thread = thread
        self.interrupts = interrupts
        self.kept_aside = kept_aside

    def __getattr__(self, name):
        return getattr(self._thread, name)


class Listed(NamedTuple):
    """A thread as a search finds it: enough to guard it and show its status."""

    thread_id: str
    agent_id: str | None
    status: str  # "idle", "busy" (a live run lease), "interrupted" or "error"


DEFAULT_STORE = "sqlite:///.agui/threads.sqlite"


def open_store(spec):
    """A store object from a URL (the forms above) or a store object as is."""
    if not isinstance(spec, str):
        return spec
    if spec == "memory://" or spec == "memory:":
        return MemoryStore()
    if spec.startswith("sqlite:///"):
        return SqliteStore(spec[len("sqlite:///") :])
    if spec.startswith(("postgresql://", "postgres://")):
        # Imported here: the default and the demo need neither asyncpg nor a server.
        from .postgres import PostgresStore

        return PostgresStore(spec)
    raise ValueError(
        f"unknown store URL {spec!r} (use sqlite:///PATH, memory:// or postgresql://...)"
    )


__all__ = [
    "DEFAULT_STORE",
    "HeldIds",
    "Lease",
    "Listed",
    "MemoryStore",
    "SqliteStore",
    "Thread",
    "open_store",
]
