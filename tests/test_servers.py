"""tests/servers.py's ``spawn``: a server that ignores SIGTERM, and the workers it
leaves behind, are gone when the block ends; its output is captured."""

from __future__ import annotations

import os
import signal
import sys
import time

from tests.servers import spawn

# Ignores SIGTERM, starts a child in its session (a worker), serves HTTP on {port}.
STUBBORN = """
import http.server, signal, subprocess, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print("up", flush=True)
address = ("127.0.0.1", int(sys.argv[1]))
http.server.HTTPServer(address, http.server.BaseHTTPRequestHandler).serve_forever()
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_spawn_kills_a_server_that_ignores_sigterm_and_its_workers():
    started = time.monotonic()
    with spawn(
        [sys.executable, "-c", STUBBORN, "{port}"],
        ready=lambda s: s.answers("/") and len(s.workers()) == 1,
        stop_timeout=0.5,
    ) as server:
        pids = [server.pid, *server.workers()]
        assert "up" in server.log()
        assert server.process.poll() is None
    assert server.process.returncode == -signal.SIGKILL
    assert not any(_alive(pid) for pid in pids)
    assert time.monotonic() - started < 10
    assert not os.path.exists(server.log_path)
