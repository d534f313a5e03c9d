"""Start real servers on free 127.0.0.1 ports, for tests: one helper, ``spawn``.

    with spawn([sys.executable, "-m", "granian", "--port", "{port}", ...], env={"X": "1"}) as s:
        httpx.get(s.base_url + "/__ping__")
        s.process.send_signal(signal.SIGTERM)   # or s.stop(signal.SIGKILL)
        print(s.log())

``spawn`` runs any command line in its own session (``{port}`` in an argument
becomes the port it picked, or the one passed), with the repo's ``python``
folder and root on PYTHONPATH plus ``env``; waits until it is ready (any HTTP
answer on ``ready``, a predicate, or nothing), bounded; captures its output in
a temporary file (``log()``; AGUI_KEEP_SERVER_LOGS=1 keeps the files); and on
exit stops it: ``stop_signal`` to the main process, then SIGKILL to its whole
process group (workers it left behind included) after ``stop_timeout``.

The shapes tests use are thin wrappers: ``serve`` (granian, yields the base
URL), ``serve_cli`` (``agui-bridge serve``, yields the ``Server``) and
``serve_uvicorn`` (yields the port).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
_LOGS: dict[str, Path] = {}
_INTERFACES: dict[str, str] = {}
_PROCESSES: dict[str, subprocess.Popen] = {}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    """A process ``spawn`` started; ``process`` is the main process of its session."""

    process: subprocess.Popen
    port: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        """What it wrote to stdout and stderr so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def workers(self) -> list[int]:
        """The pids of its live children (granian's workers)."""
        return children_of(self.process.pid)

    def answers(self, path: str = "/__ping__") -> bool:
        try:
            httpx.get(self.base_url + path, timeout=1.0)
        except httpx.TransportError:
            return False
        return True

    def stop(self, stop_signal: int = signal.SIGTERM, timeout: float = 5.0) -> int:
        """``stop_signal`` to the main process, SIGKILL to the group past ``timeout``
        (and to whatever of the group outlives the main process); its exit code."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(stop_signal)
            deadline = time.monotonic() + timeout
            while not _exited(self.process.pid) and time.monotonic() < deadline:
                time.sleep(0.02)
        leftovers = children_of(self.process.pid)
        # The main process is not reaped yet (a zombie at worst), so the group id is still ours.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        code = self.process.wait(timeout=10)
        # SIGKILL is delivered, not done, when killpg returns: a worker can still
        # hold its port (or answer) for a moment, so wait until it is gone.
        deadline = time.monotonic() + 10
        while any(map(_running, leftovers)) and time.monotonic() < deadline:
            time.sleep(0.02)
        return code


def _exited(pid: int) -> bool:
    """Whether ``pid`` (our child) has exited, without reaping it."""
    try:
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        return os.waitid(os.P_PID, pid, flags) is not None
    except ChildProcessError:
        return True


def server_env(env: dict | None = None) -> dict:
    """The environment a spawned server gets: ours, the repo on PYTHONPATH, then ``env``."""
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "python"), str(ROOT), full.get("PYTHONPATH", "")]
    )
    full.update(env or {})
    return full


@contextlib.contextmanager
def spawn(
    command: Sequence[str],
    env: dict | None = None,
    *,
    port: int | None = None,
    cwd: str | os.PathLike | None = None,
    ready: str | Callable[[Server], bool] | None = "/__ping__",
    timeout: float = 20.0,
    stop_signal: int = signal.SIGTERM,
    stop_timeout: float = 5.0,
):
    port = port or free_port()
    argv = [str(arg).replace("{port}", str(port)) for arg in command]
    log = tempfile.NamedTemporaryFile(prefix="server-", suffix=".log", delete=False)  # noqa: SIM115
    process = subprocess.Popen(
        argv,
        env=server_env(env),
        cwd=str(cwd or ROOT),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Server(process, port, Path(log.name))
    _LOGS[server.base_url] = server.log_path
    _PROCESSES[server.base_url] = process
    try:
        if isinstance(ready, str):
            path = ready
            ready = lambda s: s.answers(path)  # noqa: E731
        deadline = time.monotonic() + timeout
        while ready is not None and not ready(server):
            if process.poll() is not None:
                raise RuntimeError(f"{argv[:4]} exited early:\n{server.log()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{argv[:4]} was not ready in {timeout}s:\n{server.log()}")
            time.sleep(0.05)
        yield server
    finally:
        server.stop(stop_signal, stop_timeout)
        log.close()
        if os.environ.get("AGUI_KEEP_SERVER_LOGS") != "1":
            server.log_path.unlink(missing_ok=True)
        _LOGS.pop(server.base_url, None)
        _PROCESSES.pop(server.base_url, None)
        _INTERFACES.pop(server.base_url, None)


def interface_of(base_url: str) -> str:
    """``"rsgi"`` or ``"asgi"``: what ``serve`` started at that URL."""
    return _INTERFACES[base_url]


def server_process(base_url: str) -> subprocess.Popen:
    """The main process serving ``base_url`` (its session has the workers)."""
    return _PROCESSES[base_url]


def worker_pids(base_url: str) -> list[int]:
    """The pids of the granian workers serving ``base_url`` (children of the main process)."""
    return children_of(_PROCESSES[base_url].pid)


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def children_of(parent: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # the fields after the command (which may hold spaces): state, ppid, ...
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == parent and fields[0] != "Z":
                pids.append(int(entry.name))
    return sorted(pids)


def server_log(base_url: str) -> str:
    path = _LOGS.get(base_url)
    return path.read_text(errors="replace") if path and path.exists() else ""


@contextlib.contextmanager
def serve(
    target: str,
    env: dict | None = None,
    interface: str = "rsgi",
    timeout: float = 20.0,
    cwd: str | os.PathLike | None = None,
    workers: int = 1,
    options: Sequence[str] = (),
    port: int | None = None,
):
    """``target`` under granian (RSGI unless ``interface="asgi"``); yields the base URL."""
    command = [
        *(sys.executable, "-m", "granian", "--interface", interface),
        *("--host", "127.0.0.1", "--port", "{port}", "--workers", str(workers)),
        *("--no-ws", "--log-level", "info", "--workers-kill-timeout", "3"),
        *options,
        target,
    ]
    with spawn(command, env, port=port, cwd=cwd, timeout=timeout) as server:
        _INTERFACES[server.base_url] = interface
        yield server.base_url


@contextlib.contextmanager
def serve_cli(
    env: dict | None = None,
    *options: str,
    target: str = "tests.ingress_apps:app",
    workers: int = 1,
    timeout: float = 30.0,
    stop_signal: int = signal.SIGTERM,
):
    """``agui-bridge serve target`` (what users run); yields the ``Server`` once its
    ``workers`` are all up."""
    command = [sys.executable, "-m", "agui_bridge.cli", "serve", target, "--port", "{port}"]
    command += ["--workers", str(workers), "--log-level", "info", *options]

    def ready(server: Server) -> bool:
        return server.answers() and len(server.workers()) == workers

    with spawn(
        command, env, ready=ready, timeout=timeout, stop_signal=stop_signal, stop_timeout=10
    ) as server:
        yield server


@contextlib.contextmanager
def serve_uvicorn(target: str, env: dict | None = None, timeout: float = 20.0):
    """``target`` under uvicorn (ASGI) on a free 127.0.0.1 port; yields the port."""
    command = [sys.executable, "-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}"]
    with spawn([*command, "--log-level", "warning", target], env, timeout=timeout) as server:
        yield server.port
