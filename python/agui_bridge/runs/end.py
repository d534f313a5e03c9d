"""The run's end as a table: one stop reason → what its readers get, whether the
thread is saved, and what is released.

Every run ends through ``Run.end(stop, error)``, which reads its row here;
there is no other exit. ``terminal``: ``"finish"`` (what is open is closed,
then RUN_FINISHED), ``"fail"`` (closers, then RUN_ERROR with ``error``'s
code), or None (nothing more reaches the log). Every row releases the thread
and its lease.

When the readers get the terminal events of a row that saves (issue 24 item
14: a quick run's RUN_FINISHED waited for its save, queued behind large ones):

- Before the save, when nothing can refuse it: the run holds its lease with
  at least half of ``lease_ttl`` left (``Run.lease_held``: the claim or last
  renewal was sent that recently, so no other node can have claimed the
  thread), or its store has no leases. The terminal frames are appended at
  once; the log ends (the responses close, the thread is released) only
  once the save is done, so a client that sends its next turn when the
  response ends finds the answer stored. A store that is down
  (``StoreUnavailable``) does not refuse a save: it is retried (0.1 s, doubling
  to 2 s) until the store takes it, for as long as the process lives.
- After the save otherwise (the lease went unrenewed for half its ttl: the
  node stalled or the store is unreachable): a save refused because the
  lease was taken over turns RUN_FINISHED into RUN_ERROR ``lease_lost``, and
  any other failure into RUN_ERROR ``save_failed``.

So the stream never says finished for an answer the thread will not hold,
but in two cases, each logged at ERROR with the run and thread ids: the
process stops (is killed, or its loop closes) while the save waits for a
store that is down, which loses the answer as a crash mid-run does; or the
store is down for longer than ``lease_ttl`` and, once it is back, another
node claims the thread before this run's next retry (``LeaseLost``). A save
that fails for another reason (a store's bug) is logged the same way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum

from ..errors import RunsUnavailable, ServerShutdown


class ClientLeft(Exception):
    """The run was cancelled because its client left (``on_disconnect="cancel"``)."""


class Stop(Enum):
    DONE = "done"  # the agent's generator ended
    FAILED = "failed"  # the agent raised
    CANCELLED = "cancelled"  # POST …/cancel (or multitask interrupt)
    SHUTDOWN = "shutdown"  # the server is stopping (drain_timeout passed)
    CLIENT_LEFT = "client left"  # on_disconnect="cancel" and the POST's client left
    LOG_UNREACHABLE = "log unreachable"  # the shared run log cannot be written
    LEASE_LOST = "lease lost"  # another node ended this run in the log (run_lost)
    KILLED = "killed"  # the task was cancelled from outside (the loop is closing)


@dataclass(frozen=True)
class Ending:
    terminal: str | None  # "finish", "fail" or None
    saves: bool  # the partial or whole turn is stored (fenced)
    errored: bool = False  # pending interrupts stay pending (the run did not settle them)
    error: type | None = None  # the RUN_ERROR's exception when the stop brings none
    listeners: str = ""  # when on_event gets the terminal events: "before" or "after" the save
    level: int = logging.INFO
    says: str = ""  # the log line (the run and thread ids are added)
    uncancel: bool = True  # the stop came as a cancel the run absorbs
    reraise: bool = False  # the task ends cancelled (nothing is saved)
    # A client that declared AG-UI 1.0 reads RUN_FINISHED {outcome: cancelled}
    # instead (contract section 8); a 0.0.x client gets the row's terminal.
    cancels: bool = False


ENDINGS: dict[Stop, Ending] = {
    Stop.DONE: Ending("finish", saves=True, listeners="after", uncancel=False),
    Stop.FAILED: Ending(
        "fail", saves=True, errored=True, listeners="before", level=logging.ERROR,
        says="failed", uncancel=False,
    ),
    # A stop is not an error: what is open is closed, RUN_FINISHED, the partial
    # answer stored. (A 1.0 client's "cancelled" outcome is this row's choice.)
    Stop.CANCELLED: Ending("finish", saves=True, says="stopped", cancels=True),
    # Readers get closers + RUN_ERROR server_shutdown; the partial answer is
    # stored and pending interrupts stay pending.
    Stop.SHUTDOWN: Ending(
        "fail", saves=True, errored=True, error=ServerShutdown, level=logging.WARNING,
        says="ended: server shutdown",
    ),
    # Readers got RUN_ERROR runs_unavailable from their nodes; the partial
    # answer is stored as they saw it.
    Stop.LOG_UNREACHABLE: Ending(
        "fail", saves=True, errored=True, error=RunsUnavailable, level=logging.ERROR,
        says="ended: the run log is unreachable",
    ),
    # on_disconnect="cancel": nothing the agent produced is stored.
    Stop.CLIENT_LEFT: Ending(
        "fail", saves=False, error=ClientLeft, says="cancelled: its client left", uncancel=False,
        cancels=True,
    ),
    # The thread may have a new run: nothing of this one is written.
    Stop.LEASE_LOST: Ending(None, saves=False, level=logging.ERROR, says="its lease was lost"),
    Stop.KILLED: Ending(None, saves=False, uncancel=False, reraise=True),
}  # fmt: skip

_MESSAGES = {
    ServerShutdown: "the server is shutting down",
    RunsUnavailable: "the run log is unreachable",
    ClientLeft: "the client left",
}


def error_of(ending: Ending, error: BaseException | None) -> BaseException:
    """The exception a "fail" row's RUN_ERROR carries."""
    if error is not None and (ending.error is None or isinstance(error, ending.error)):
        return error
    return ending.error(str(error) if error is not None else _MESSAGES[ending.error])
