"""Stop, then type: a new run supersedes an active run nobody reads any more.

assistant-ui's Stop (and CopilotKit's) aborts the request; under
``on_disconnect="continue"`` the run goes on, and the message the user types
right away would get 409 ``run_active`` until it ends. So a run of this
process whose readers have all left (it had at least one: a run started in
the background, never read, is not abandoned) is stopped when a new run asks
for its thread, the way ``POST …/cancel`` stops it: what is open is closed,
the partial answer is stored, its log ends (``cancelled`` for a 1.0 client),
and the new run is admitted once it has saved and released the thread. A run
that still has a reader (another tab, a join) keeps the 409.

Readers are the responses of ``Handler._stream`` (the POST, a resume, a
join), counted per run while they follow its log.
"""

from __future__ import annotations

import contextlib
import logging
from weakref import WeakKeyDictionary

log = logging.getLogger("agui_bridge.runs")

# run -> [readers now, whether any ever read it]
_READERS: WeakKeyDictionary = WeakKeyDictionary()


@contextlib.contextmanager
def reading(run_log):
    """Counts one reader of ``run_log``'s run (a run of this process) while it is open."""
    run = getattr(run_log, "run", None)
    if run is None:
        yield
        return
    count = _READERS.setdefault(run, [0, False])
    count[0] += 1
    count[1] = True
    try:
        yield
    finally:
        count[0] -= 1


def abandoned(run) -> bool:
    """Whether the run was read and every reader has left."""
    count = _READERS.get(run)
    return count is not None and count[1] and count[0] == 0


async def supersede(app, thread_id: str) -> None:
    """Stops the thread's active run of this process when nobody reads it, and
    waits (bounded by ``send_timeout``) until it has saved and released the thread."""
    run = app.gate.run_of(thread_id)
    if run is None or run.task is None or not abandoned(run):
        return
    # A run already cancelled because its client left (on_disconnect="cancel")
    # is not stopped again: a stop would store what the cancel drops.
    if not run.cancelled and run.stop():
        log.info(
            "run %s of thread %s superseded: its readers left and a new run came",
            run.ctx.run_id,
            thread_id,
        )
    await app.gate.freed(thread_id, app.limits.send_timeout)
