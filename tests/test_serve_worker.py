"""``agui-bridge serve``'s workers (issue 24 items 13 and 12): they stop when
the main process dies, and an App whose drain outlasts the kill timeout is
refused at start. Real granian processes (tests/servers.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui

from tests.ingress_apps import parse_sse, run_body
from tests.servers import _running, serve_cli, spawn

MARKS = Path(tempfile.mkdtemp(prefix="agui-serve-worker-"))


def env_for(tmp_path, **extra) -> dict:
    return {
        "AGUI_TEST_STORE": f"sqlite:///{tmp_path}/threads.sqlite",
        "AGUI_TEST_MARKS": str(MARKS),
        "AGUI_TEST_KEEPALIVE": "0.3",
        **extra,
    }


def wait_until(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _tables(path: Path) -> set[str]:
    if not path.exists():
        return set()
    with contextlib.closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {row[0] for row in rows}


def refused(port: int) -> bool:
    """Nobody accepts on the port any more."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return False
    except OSError:
        return True


def test_workers_stop_when_the_main_process_is_killed(tmp_path):
    """SIGKILL of granian's main process: its two workers end the run going on
    (closers, RUN_ERROR server_shutdown, the partial turn stored), stop serving
    and exit within a few seconds; the next server on the port gets it all."""
    env = env_for(tmp_path, AGUI_TEST_LEASE_TTL="60")
    tid, run_id = f"orphan-{time.monotonic_ns()}", f"orphan-{time.monotonic_ns()}"
    body: dict = {}
    with serve_cli(env, workers=2, stop_signal=signal.SIGKILL) as server:
        port, workers = server.port, server.workers()
        assert len(workers) == 2

        def read():
            with httpx.stream(
                "POST",
                server.base_url + "/ag-ui/run",
                json=run_body(tid, "slow 600", run_id=run_id),
                timeout=60,
            ) as response:
                body["raw"] = b"".join(response.iter_bytes())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert wait_until((MARKS / f"started-{run_id}").exists, 20)
        time.sleep(0.5)  # some text streamed
        os.kill(server.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
        killed = time.monotonic()
        assert wait_until(lambda: not any(map(_running, workers)), 6), server.log()
        took = time.monotonic() - killed
        assert refused(port)
        reader.join(10)
    assert took < 4, took  # 2 s and the poll, on a loaded machine
    events, _ = parse_sse(body["raw"].decode())
    assert_valid_agui(events)
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "server_shutdown"
    streamed = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert streamed.startswith("w0 w1 ")
    with serve_cli(env, stop_signal=signal.SIGKILL) as server:
        messages = httpx.get(f"{server.base_url}/threads/{tid}/state").json()["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"]
        assert messages[1]["content"] == streamed
        response = httpx.post(server.base_url + "/ag-ui/run", json=run_body(tid, "hi"))
        assert response.status_code == 200  # its lease was released


def test_a_drain_longer_than_the_kill_timeout_is_refused_at_start(tmp_path):
    """drain_timeout 40 s under the 30 s kill timeout would be cut mid-drain: the
    server refuses to start and says what to change."""
    env = env_for(tmp_path, AGUI_TEST_DRAIN="40")
    command = [sys.executable, "-m", "agui_bridge.cli", "serve", "tests.ingress_apps:app"]
    with spawn([*command, "--port", "{port}"], env, ready=None, stop_timeout=10) as server:
        assert wait_until(lambda: server.process.poll() is not None, 30), server.log()
        assert server.process.returncode != 0
        assert "drain_timeout=40 s does not fit in the server's kill timeout (30 s)" in server.log()
        assert "--kill-timeout 50" in server.log()


def test_a_kill_timeout_that_fits_the_drain_is_accepted(tmp_path):
    env = env_for(tmp_path, AGUI_TEST_DRAIN="40")
    with serve_cli(env, "--kill-timeout", "50", stop_signal=signal.SIGKILL) as server:
        response = httpx.post(server.base_url + "/ag-ui/run", json=run_body("fits", "hi"))
        assert response.status_code == 200


@pytest.mark.parametrize("interface", ["rsgi", "asgi"])
def test_workers_of_a_plain_granian_run_stop_when_the_main_process_is_killed(tmp_path, interface):
    """The same wherever the App runs under granian, not only under
    ``agui-bridge serve``: ``granian --interface … tests.ingress_apps:app``
    (the watch is armed at the App's start in each worker)."""
    command = [
        *(sys.executable, "-m", "granian", "--interface", interface),
        *("--host", "127.0.0.1", "--port", "{port}", "--workers", "2"),
        *("--no-ws", "--log-level", "info"),
        "tests.ingress_apps:app",
    ]
    with spawn(command, env_for(tmp_path), stop_signal=signal.SIGKILL) as server:
        port = server.port
        assert wait_until(lambda: len(server.workers()) == 2, 20), server.log()
        workers = server.workers()
        assert httpx.get(server.base_url + "/healthz").status_code == 200  # the App started
        # Each worker opened its store at its start, off the requests' way (a SQLite
        # file is set up then, and may wait for the other worker doing the same).
        assert "threads" in _tables(tmp_path / "threads.sqlite")
        os.kill(server.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
        killed = time.monotonic()
        assert wait_until(lambda: not any(map(_running, workers)), 20), server.log()
        took = time.monotonic() - killed
        assert refused(port)
    assert took < 4, took  # 2 s and the poll, on a loaded machine
