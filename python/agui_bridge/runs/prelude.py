"""A joining reader's snapshot prelude, built once per run position and shared.

A snapshot prelude (``cursor.snapshot_prelude``) holds the whole thread and
the run's progress: as big as the run. Built for each reader, 10 joiners of
a 50 MB run that stopped reading held 10 copies (842 MiB) until
``send_timeout``, outside ``max_log_bytes`` and ``max_write``. Here the
prelude a run's log last got is kept while a reader of it still streams, and
a reader joining later gets the same bytes when the log still holds the
frames after its position (the cursor reads them next: the same stream as a
prelude built now), else a new one. The pump writes it ``max_write`` bytes at
a time like the log, so a reader that stops reading pins one write of it.
"""

from __future__ import annotations

from .cursor import replayed, snapshot_prelude
from .log import RunLog


class Shared:
    """One prelude and the position its readers go on from."""

    __slots__ = ("after", "data", "log", "users")

    def __init__(self, run_log: RunLog, data: bytes, after: int):
        self.log = run_log
        self.data = data
        self.after = after
        self.users = 0


# How often a prelude is read again from a shared log that this node's copy
# trimmed past it while it was read (a long run streaming fast): after that,
# its reader falls behind the copy and is disconnected, as any reader is.
REPLAYS = 3

# The prelude each log last got, by the log's id, while a reader holds it
# (so the log is alive and its id is its own).
_held: dict[int, Shared] = {}


def _usable(run_log: RunLog) -> Shared | None:
    shared = _held.get(id(run_log))
    if shared is not None and shared.log is run_log and run_log.first <= shared.after + 1:
        return shared
    return None


async def acquire(run_log: RunLog, ids: bool, load_thread) -> Shared:
    """The prelude for a reader joining ``run_log`` now; ``release`` it once
    the reader is done. ``load_thread()``: the stored thread, read only when
    a prelude has to be built for a run this node does not run."""
    shared = _usable(run_log)
    if shared is None:
        ended = run_log.ended
        thread = played = None
        if ended or run_log.run is None:
            thread = await load_thread()
        for _ in range(REPLAYS):
            if run_log.run is not None or run_log.ended:
                break
            played = await replayed(run_log, thread)
            if run_log.first <= played.last + 1:
                break  # the cursor reads on from its last event
        if run_log.ended and not ended:
            # It ended meanwhile: its end is stored (a log ends once its save is
            # done), and a prelude of an ended run is the thread as stored.
            thread = await load_thread()
        shared = _usable(run_log)  # another reader built one meanwhile
        if shared is None:
            data, after = snapshot_prelude(run_log, ids, thread, played)
            shared = Shared(run_log, data, after)
            _held[id(run_log)] = shared  # an older one stays with its readers
    shared.users += 1
    return shared


def release(shared: Shared) -> None:
    shared.users -= 1
    key = id(shared.log)
    if shared.users == 0 and _held.get(key) is shared:
        del _held[key]
