"""Start a real granian server on a free 127.0.0.1 port, for tests.

    with serve("tests.ingress_apps:app", env={"X": "1"}) as base_url:
        httpx.post(base_url + "/ag-ui/run", json=...)

The server runs in a subprocess (RSGI, one worker, bound to 127.0.0.1); the
context manager waits until it answers HTTP (bounded), and stops it (SIGTERM,
then SIGKILL) on exit. ``serve(..., interface="asgi")`` runs the ASGI side.
The subprocess's output is kept in a temporary file while it runs;
``server_log(base_url)`` returns what it wrote so far (set
AGUI_KEEP_SERVER_LOGS=1 to keep the files).
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


def interface_of(base_url: str) -> str:
    """``"rsgi"`` or ``"asgi"``: what ``serve`` started at that URL."""
    return _INTERFACES[base_url]


def server_process(base_url: str) -> subprocess.Popen:
    """The granian main process serving ``base_url`` (its session has the workers)."""
    return _PROCESSES[base_url]


def worker_pids(base_url: str) -> list[int]:
    """The pids of the granian workers serving ``base_url`` (children of the main process)."""
    return children_of(_PROCESSES[base_url].pid)


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
):
    port = free_port()
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "python"), str(ROOT), full_env.get("PYTHONPATH", "")]
    )
    full_env.update(env or {})
    log = tempfile.NamedTemporaryFile(prefix="granian-", suffix=".log", delete=False)  # noqa: SIM115
    command = [
        sys.executable,
        "-m",
        "granian",
        "--interface",
        interface,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--no-ws",
        "--log-level",
        "info",
        "--workers-kill-timeout",
        "3",
        target,
    ]
    process = subprocess.Popen(
        command,
        env=full_env,
        cwd=str(cwd or ROOT),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    _LOGS[base_url] = Path(log.name)
    _INTERFACES[base_url] = interface
    _PROCESSES[base_url] = process
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"granian exited early:\n{server_log(base_url)}")
            try:
                httpx.get(base_url + "/__ping__", timeout=1.0)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"granian did not answer in {timeout}s:\n{server_log(base_url)}"
                    ) from None
                time.sleep(0.05)
        yield base_url
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
        log.close()
        if os.environ.get("AGUI_KEEP_SERVER_LOGS") != "1":
            Path(log.name).unlink(missing_ok=True)
        _LOGS.pop(base_url, None)
        _PROCESSES.pop(base_url, None)


@contextlib.contextmanager
def serve_uvicorn(target: str, env: dict | None = None, timeout: float = 20.0):
    """``target`` under uvicorn (ASGI) on a free 127.0.0.1 port; yields the port."""
    port = free_port()
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "python"), str(ROOT), full_env.get("PYTHONPATH", "")]
    )
    full_env.update(env or {})
    command = [sys.executable, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--log-level", "warning", target],
        env=full_env,
        cwd=str(ROOT),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError("uvicorn exited early")
            try:
                httpx.get(f"http://127.0.0.1:{port}/__ping__", timeout=1.0)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"uvicorn did not answer in {timeout}s") from None
                time.sleep(0.05)
        yield port
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
