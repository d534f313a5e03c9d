"""Stop, then type: a new run supersedes an active run nobody reads any more.

assistant-ui's Stop (and CopilotKit's) aborts the request; under
``on_disconnect="continue"`` the run goes on, and the message the user types
right away would get 409 ``run_active`` until it ends. So when a new run is
refused with 409 ``run_active`` and the thread's active run has had readers
and none is left (``abandoned``: a run started in the background, never
read, is not abandoned), that run is stopped the way ``POST …/cancel`` stops
it, on whichever node runs it: what is open is closed, the partial answer is
stored, its log ends (``cancelled`` for a 1.0 client). The new run waits
(bounded by ``send_timeout``) for that log's end, which comes after the save
and the release of the thread, and is admitted. A run that still has a
reader anywhere (another tab, a join, on any node) keeps the 409.

A reader is any response that follows a run (``reading``): the AG-UI POST,
a resume, a join or a run's events; the Agent Protocol's run stream, join,
join-stream and wait; a thread's event stream while it follows the run.

Who reads is counted by the run-log backend: in this process for memory logs
(``runs.backend``), in Redis for shared ones (``runs.redis.presence``: a
node's readers renewed while they read, so a dead node's vanish), so a reader
on one node keeps a run of another node from being superseded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from weakref import WeakKeyDictionary

from ..errors import HttpError

log = logging.getLogger("agui_bridge.runs")

# run -> [readers now, whether any ever read it] (memory logs: this process's runs)
_READERS: WeakKeyDictionary = WeakKeyDictionary()


def abandoned(readers: int, ever_read: bool) -> bool:
    """The rule: the run was read and every reader has left."""
    return ever_read and readers == 0


def stop(run) -> bool:
    """Stops an abandoned run for a new one, on the node that runs it. A run already
    cancelled because its client left (``on_disconnect="cancel"``) is not stopped
    again: a stop would store what that cancel drops."""
    if run is None or run.cancelled or not run.stop():
        return False
    log.info(
        "run %s of thread %s superseded: its readers left and a new run came",
        run.ctx.run_id,
        run.ctx.thread_id,
    )
    return True


@contextlib.asynccontextmanager
async def reading(runs, run_log):
    """Counts one reader of ``run_log``'s run while it is open (``runs``: the
    App's run-log backend; a shared one counts it for every node)."""
    presence = getattr(runs, "presence", None)
    if presence is not None:
        try:
            # Counted before its round trip: cancelled while it waits, it leaves too.
            await presence.enter(run_log)
            yield
        finally:
            presence.leave(run_log)
        return
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


async def admitted(app, thread_id: str, start):
    """``start()`` (the run gate's); when it answers 409 ``run_active`` and the
    thread's active run is abandoned, that run is superseded and ``start()``
    tried once more (a 409 again, when another run took the thread meanwhile)."""
    try:
        return await start()
    except HttpError as error:
        if error.status != 409 or error.code != "run_active":
            raise
        if not await supersede(app, thread_id):
            raise
    return await start()


async def supersede(app, thread_id: str) -> bool:
    """Stops the thread's active run when it is abandoned, wherever it runs, and
    waits (bounded by ``send_timeout``) until its log has ended. False when
    there is no such run."""
    runs = app.runs
    presence = getattr(runs, "presence", None)
    if presence is None:
        run = app.gate.run_of(thread_id)
        if run is None or run.task is None:
            return False
        count = _READERS.get(run)
        if count is None or not abandoned(count[0], count[1]):
            return False
        stop(run)
        run_log = run.log
    else:
        seen = await presence.active(thread_id)
        if seen is None or not abandoned(seen.readers, seen.ever_read):
            return False
        await presence.stop(seen)
        run_log = await runs.get(thread_id, seen.run_id)
    if run_log is not None:
        await _ended(run_log, app.limits.send_timeout)
    return True


async def _ended(run_log, timeout: float) -> None:
    """Waits (bounded) for the stopped run's log to end: it ends after the
    answer is stored and the thread released."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            while not run_log.ended:
                await run_log.waiter()
