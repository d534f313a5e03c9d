"""A throwaway redis-server for the tests: one per test session.

Started from the Debian package's binary (``make test`` installs it) in a
temporary directory, on 127.0.0.1 and a free port, without persistence (no
RDB, no AOF: a restart loses everything, as a Redis that died would). Each
test gets a database of its own, flushed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time


class Unavailable(Exception):
    """No server could be started (the reason is the message)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self):
        self.binary = shutil.which("redis-server") or (
            "/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None
        )
        if self.binary is None:
            raise Unavailable("no redis-server on PATH; `make test` installs it")
        self.root = tempfile.mkdtemp(prefix="agui-redis-")
        self.port = 0
        self.process: subprocess.Popen | None = None
        self._db = 0

    def start(self) -> RedisServer:
        last = None
        for _ in range(3):  # the free port may be taken between the probe and the bind
            self.port = self.port or _free_port()
            try:
                self._spawn()
                return self
            except Unavailable as error:
                last = error
                self.port = 0
        raise last

    def _spawn(self) -> None:
        log = open(os.path.join(self.root, "server.log"), "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", self.root, "--save", "", "--appendonly", "no",
                "--daemonize", "no", "--protected-mode", "no", "--databases", "64",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise Unavailable(f"redis-server exited: {self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        self.stop_process()
        raise Unavailable(f"redis-server did not answer: {self.log_tail()}")

    def log_tail(self) -> str:
        try:
            with open(os.path.join(self.root, "server.log"), errors="replace") as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def fresh_db(self) -> int:
        """A database number no other test of the session used yet (flushed)."""
        self._db = (self._db + 1) % 64
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.sendall(b"SELECT %d\r\nFLUSHDB\r\n" % self._db)
            got = b""
            while got.count(b"\r\n") < 2:
                got += sock.recv(64)
        return self._db

    def stop_process(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=10)

    def restart(self) -> None:
        """Kills the server (everything it held is gone) and starts it again on its port."""
        self.stop_process()
        self._spawn()

    def stop(self) -> None:
        try:
            self.stop_process()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
