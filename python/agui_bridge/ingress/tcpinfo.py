"""How many bytes written on a TCP connection its peer has not acknowledged yet.

Used by the RSGI front end, whose ``send_bytes`` never waits: see the module
docstring of ``ingress.handler``. Linux only; elsewhere ``find`` gives None.
"""

from __future__ import annotations

import os
import socket
import struct

_BYTES_ACKED = 120  # offset of tcpi_bytes_acked (u64) in struct tcp_info, Linux >= 4.1


def _hex_endpoint(host: str, port: int, v6: bool) -> str | None:
    try:
        if v6:
            packed = socket.inet_pton(socket.AF_INET6, host)
            words = struct.unpack("<4I", packed)
            addr = "".join(f"{socket.htonl(w):08X}" for w in words)
        else:
            packed = socket.inet_pton(socket.AF_INET, host)
            addr = f"{struct.unpack('<I', packed)[0]:08X}"
    except OSError:
        return None
    return f"{addr}:{port:04X}"


def _split(address) -> tuple[str, int] | None:
    if isinstance(address, (tuple, list)) and len(address) >= 2:
        host, port = address[0], address[1]
    elif isinstance(address, str) and ":" in address:
        host, _, port = address.rpartition(":")
        host = host.strip("[]")
    else:
        return None
    try:
        return str(host), int(port)
    except (TypeError, ValueError):
        return None


def _inode(local, remote) -> str | None:
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        hosts = [(local, remote, v6)]
        if v6 and ":" not in local[0]:
            hosts = [(("::ffff:" + local[0], local[1]), ("::ffff:" + remote[0], remote[1]), True)]
        for (lh, lp), (rh, rp), six in hosts:
            want_local = _hex_endpoint(lh, lp, six)
            want_remote = _hex_endpoint(rh, rp, six)
            if want_local is None or want_remote is None:
                continue
            try:
                with open(table) as lines:
                    next(lines, None)
                    for line in lines:
                        parts = line.split()
                        if parts[1] == want_local and parts[2] == want_remote:
                            return parts[9]
            except OSError:
                continue
    return None


def _fd_of(inode: str) -> int | None:
    target = f"socket:[{inode}]"
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for name in names:
        try:
            if os.readlink(f"/proc/self/fd/{name}") == target:
                return int(name)
        except OSError:
            continue
    return None


class TcpAcked:
    """Reads ``tcpi_bytes_acked`` of one connection's socket, fd re-checked per read."""

    def __init__(self, fd: int, inode: str):
        self.fd = fd
        self.link = f"socket:[{inode}]"

    def read(self) -> int | None:
        try:
            if os.readlink(f"/proc/self/fd/{self.fd}") != self.link:
                return None
            dup = os.dup(self.fd)
        except OSError:
            return None
        try:
            sock = socket.socket(fileno=dup)
        except OSError:
            os.close(dup)
            return None
        try:
            info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
        except OSError:
            return None
        finally:
            sock.close()
        if len(info) < _BYTES_ACKED + 8:
            return None
        return struct.unpack_from("Q", info, _BYTES_ACKED)[0]


def find(server, client) -> TcpAcked | None:
    """The connection from ``client`` to ``server`` ("ip:port" or (ip, port))."""
    if not os.path.exists("/proc/net/tcp"):
        return None
    local, remote = _split(server), _split(client)
    if local is None or remote is None:
        return None
    inode = _inode(local, remote)
    if inode is None or inode == "0":
        return None
    fd = _fd_of(inode)
    return None if fd is None else TcpAcked(fd, inode)


class Probe:
    """The bytes a stream has written that its client has not acknowledged.

    The first check, after a quarter of ``limit`` has been written, finds the
    socket and takes the acknowledged count as its baseline; from then on
    held = written since the baseline - acknowledged since the baseline.
    Without a socket, everything written counts as held.
    """

    __slots__ = (
        "acked",
        "base_acked",
        "client",
        "every",
        "next_check",
        "server",
        "state",
        "written",
    )

    def __init__(self, server, client, limit: int):
        self.server = server
        self.client = client
        self.written = 0
        self.every = max(limit // 4, 1)
        self.next_check = self.every
        self.state = None  # None: not looked up; False: no socket; TcpAcked
        self.base_acked = 0
        self.acked = 0

    @property
    def exact(self) -> bool:
        return bool(self.state)

    def refresh(self) -> int:
        """Held bytes now, re-reading the acknowledged count."""
        if not self.state:
            return self.written
        acked = self.state.read()
        if acked is None:
            self.state = False
            return self.written
        self.acked = acked - self.base_acked
        return self.written - self.acked

    def wrote(self, n: int) -> int:
        self.written += n
        if self.written < self.next_check:
            return self.written - self.acked
        self.next_check = self.written + max(self.every // 4, 1)
        if self.state is None:
            self.state = find(self.server, self.client) or False
            if self.state:
                acked = self.state.read()
                # Everything written before the first check is assumed delivered
                # once acknowledged; the baseline also absorbs earlier responses
                # on a kept-alive connection.
                self.base_acked = (acked or 0) - min(acked or 0, self.written)
                self.acked = (acked or 0) - self.base_acked
                return self.written - self.acked
        return self.refresh()
