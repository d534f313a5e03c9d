"""A throwaway PostgreSQL server for the tests: one per test session.

Started from the Debian package's binaries (``make test`` installs it) in a
temporary directory, on 127.0.0.1 and a free port, with durability off
(its data is thrown away). PostgreSQL refuses to run as root, so under root
it runs as the ``postgres`` OS user. Each test gets a database of its own.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid


class Unavailable(Exception):
    """No server could be started (the reason is the message)."""


def _bindir() -> str:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(p.split("/")[-3]) if p.split("/")[-3].isdigit() else 0,
    )
    if not found:
        raise Unavailable(
            "no PostgreSQL server (/usr/lib/postgresql/*/bin); `make test` installs it"
        )
    return os.path.dirname(found[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self):
        self.bindir = _bindir()
        self.root = tempfile.mkdtemp(prefix="agui-pg-")
        self.data = os.path.join(self.root, "data")
        self.port = 0
        self.started = False
        self._as = []
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError as error:
                raise Unavailable("running as root and no `postgres` OS user") from error
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *argv, timeout=60) -> None:
        cmd = [*self._as, *argv]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise Unavailable(f"{argv[0]} failed ({done.returncode}): {done.stderr or done.stdout}")

    def start(self) -> PgServer:
        bindir = self.bindir
        self._run(
            f"{bindir}/initdb", "-D", self.data, "-U", "postgres", "-A", "trust",
            "-E", "UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip
        log = os.path.join(self.root, "server.log")
        last = None
        for _ in range(3):  # the free port may be taken between the probe and the bind
            self.port = _free_port()
            options = (
                f"-p {self.port} -c listen_addresses=127.0.0.1"
                f" -c unix_socket_directories={self.root}"
                " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
                " -c max_connections=200"
            )
            self.options, self.log = options, log
            try:
                self._run(f"{bindir}/pg_ctl", "-D", self.data, "-l", log, "-w", "-t", "60",
                          "-o", options, "start", timeout=90)  # fmt: skip
            except Unavailable as error:
                last = error
                continue
            self.started = True
            return self
        with open(log, errors="replace") as f:
            raise Unavailable(f"{last}\n{f.read()[-2000:]}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _sql(self, statement: str) -> None:
        self._run(
            f"{self.bindir}/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
            "-p", str(self.port), "-U", "postgres", "-d", "postgres", "-c", statement,
        )  # fmt: skip

    def create_database(self) -> str:
        name = "t_" + uuid.uuid4().hex[:16]
        self._sql(f"CREATE DATABASE {name}")
        return name

    def drop_database(self, name: str) -> None:
        self._sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def halt(self) -> None:
        """Stops the server, data kept (its connections drop; a fast stop keeps
        the commits that synchronous_commit=off has not flushed yet)."""
        self._run(f"{self.bindir}/pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        """Starts a halted server again, on the same port."""
        self._run(f"{self.bindir}/pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60",
                  "-o", self.options, "start", timeout=90)  # fmt: skip

    def restart(self) -> None:
        self.halt()
        self.resume()

    def stop(self) -> None:
        try:
            if self.started:
                self._run(f"{self.bindir}/pg_ctl", "-D", self.data, "-m", "immediate", "-w",
                          "stop")  # fmt: skip
                self.started = False
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
