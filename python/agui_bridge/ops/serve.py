"""What ``agui-bridge serve`` sets up for the ops layer before granian starts its workers."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import tempfile
import threading


def metrics_folder() -> str:
    """``PROMETHEUS_MULTIPROC_DIR`` for the workers: yours when set (wipe it between
    runs, as prometheus-client asks), else a fresh one removed at exit."""
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if folder:
        os.makedirs(folder, exist_ok=True)
        return folder
    folder = tempfile.mkdtemp(prefix="agui-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


# What the main process sends its workers when a drain starts: they answer
# /readyz with 503 and take no new run, while the server still serves.
DRAIN_SIGNAL = signal.SIGUSR1


def drain_first(server, delay: float) -> None:
    """On SIGTERM (or SIGINT), tells the workers to drain at once and lets
    granian stop them ``delay`` seconds later: a load balancer polling
    ``/readyz`` sees 503 and stops sending runs while the server still
    answers, before it stops accepting connections.

    granian sets its own handlers when it starts (``startup``), so this runs
    as a startup hook and chains onto them.
    """
    if delay <= 0:
        return

    def install():
        signal.signal(DRAIN_SIGNAL, signal.SIG_IGN)  # the main process has no App
        for sig in (signal.SIGTERM, signal.SIGINT):
            stop = signal.getsignal(sig)
            if not callable(stop):
                continue

            def on_signal(signum, frame, stop=stop):
                if getattr(on_signal, "fired", False):
                    stop(signum, frame)  # a second signal: stop now
                    return
                on_signal.fired = True
                for pid in _children(os.getpid()):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, DRAIN_SIGNAL)
                timer = threading.Timer(delay, stop, (signum, frame))
                timer.daemon = True
                timer.start()

            signal.signal(sig, on_signal)

    server.on_startup(install)


def _children(pid: int) -> list[int]:
    found = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found += [int(c) for c in fh.read().split()]
    return found


def watch_drain(app, loop) -> None:
    """In a worker: ``DRAIN_SIGNAL`` starts the App's drain announcement
    (``App.closing``: /readyz 503, no new run); the running runs go on."""
    if threading.current_thread() is not threading.main_thread():
        return

    def on_signal(signum, frame):
        loop.call_soon_threadsafe(setattr, app, "closing", True)

    signal.signal(DRAIN_SIGNAL, on_signal)
