"""What each granian worker of an App does besides serving.

granian imports the target in every worker (never in the main process), so
what needs the App is checked here, where it is loaded:

- its ``drain_timeout`` must end before the server kills a worker that is
  still stopping (``--kill-timeout``): past it the worker is killed mid-drain
  and the runs it was ending are cut with nothing stored. Such an App is
  refused at start, with an error that says what to change.
- the worker exits when granian's main process dies (SIGKILL, the OOM
  killer): granian's workers would go on serving on the shared socket for
  good, and a new server on the same port would split the traffic with
  them. A thread notices the parent is gone (its parent pid changes) within
  ``POLL`` seconds, ends the runs going on at once (their readers get the
  closers and ``RUN_ERROR`` ``server_shutdown``, their partial turns are
  stored, as a SIGTERM past ``drain_timeout`` does) and stops the worker;
  one still there ``HARD_EXIT`` seconds later is ended. ``agui-bridge serve``
  arms it in its loader; wherever else the App runs in a worker process
  (``granian`` run by hand or embedded, ``uvicorn --workers``: servers that
  start their workers with multiprocessing) the App arms it when it starts
  (``watch_server``). A process that is no server's worker (one process,
  uvicorn without workers) has no parent to watch and arms nothing.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time

log = logging.getLogger("agui_bridge.serve")

# Seconds between two looks at the parent pid (a read of the process's own state).
POLL = 0.2
# Seconds a worker whose parent died has to end its runs and stop, then it is ended.
HARD_EXIT = 1.5
# What a drain leaves the runs it ended to store their turns and release
# their leases (5 s), then what they still owe (``webhooks.SHUTDOWN_WAIT``,
# 3 s: queued runs failed, records shared, webhook calls) and the spans held
# for export (``ops.tracing.FLUSH_MS``, 2 s), before the server's kill timeout.
SAVE_MARGIN = 10.0


def load(target: str, *, wd, factory: bool, parent: int, kill_timeout: float):
    """granian's target loader, run in each worker: the App, checked, watched."""
    from granian._internal import load_target

    app = load_target(target, wd=wd, factory=factory)
    check_drain(app, kill_timeout)
    watch_parent(parent, app)
    return app


def check_drain(app, kill_timeout: float) -> None:
    drain = getattr(app, "drain_timeout", None)
    if drain is None or not kill_timeout:
        return
    if drain + SAVE_MARGIN > kill_timeout:
        message = (
            f"drain_timeout={drain:g} s does not fit in the server's kill timeout"
            f" ({kill_timeout:g} s): a worker still draining then is killed and the runs"
            f" it is ending lose their turns; use drain_timeout <= {kill_timeout - SAVE_MARGIN:g}"
            f" or agui-bridge serve --kill-timeout {drain + SAVE_MARGIN:g} (or more)"
        )
        log.error(message)
        raise ValueError(message)


_watcher: threading.Thread | None = None  # one per process


def watch_parent(parent: int, app=None) -> threading.Thread:
    """Starts the thread that stops this worker once ``parent`` is no longer its
    parent (once per process: a second call returns the first's thread)."""
    global _watcher
    if _watcher is None:
        _watcher = threading.Thread(
            target=_watch, args=(parent, app), name="agui-parent-watch", daemon=True
        )
        _watcher.start()
    return _watcher


def watch_server(app) -> threading.Thread | None:
    """Called when the App starts: in a server's worker process (its parent
    started it with multiprocessing), the worker stops when that parent dies."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.pid is None:
        return None
    return watch_parent(parent.pid, app)


def _watch(parent: int, app) -> None:
    while os.getppid() == parent:
        time.sleep(POLL)
    log.error("the server's main process (pid %d) is gone: this worker stops", parent)
    if hasattr(app, "drain_timeout"):
        # Nobody will wait for a longer drain: the runs are ended now and stored.
        app.drain_timeout = 0.0
    # granian's own stop (it stops accepting, the App drains and closes).
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(HARD_EXIT)
    log.error("the worker did not stop within %.1f s of its parent's death: ended", HARD_EXIT)
    os._exit(1)
