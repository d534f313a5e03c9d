"""Fan-out benchmark (issue 10): one run, many readers; idle readers; reconnects.

    python benches/fanout.py                    # 1, 100, 1000 readers; 10,000 idle; reconnects
    python benches/fanout.py --readers 1,100 --idle 2000 --quick
    python benches/fanout.py --readers "" --idle 0 --reconnects 2000   # reconnects alone

One worker per server, loopback, the apps in ``benches/fanout_apps.py``:
(a) ``agui_bridge.App`` on granian ASGI (what ``agui-bridge serve`` runs);
(b) Starlette on uvicorn (uvloop + httptools), one ``asyncio.Queue`` and one
``EventEncoder`` per reader.

- Fan-out: a POST starts a run that waits while R readers connect
  (``GET /threads/{t}/runs/{r}/events``, ``Last-Event-ID: 0``), then streams
  2,000 deltas. Delivered events/s = frames received by all readers / the
  time from the end of the wait to the last reader's last byte; server CPU
  per delivered frame = the worker's user+system time over the whole run /
  frames delivered. Target: (a) ≥ 10x (b) at 1,000 readers.
- Idle readers: N readers of a run that has not started streaming; the
  worker's RSS growth / N. Target: ≤ 24 KiB per reader.
- Reconnect: on a finished run of 2,000 deltas, a new connection with a random
  ``Last-Event-ID`` until the first frame, sequentially, each followed by one
  to granian's floor (``fanout_apps:floor``, no agui_bridge code), so both
  tails meet the same machine load. Target: p99 ≤ 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benches.cpu_time import worker_cpu  # noqa: E402
from benches.server import Server, rss_kib, run_request  # noqa: E402


def ours_server(app: str = "ours") -> Server:
    argv = [sys.executable, "-m", "granian", "--interface", "asgi", "--host", "127.0.0.1"]
    argv += ["--port", "{port}", "--workers", "1", "--loop", "uvloop", "--http", "1"]
    argv += ["--backlog", "4096", "--backpressure", "20000", "--log-level", "warning"]
    argv += [f"benches.fanout_apps:{app}"]
    return Server(f"{app} (granian ASGI)", argv, worker_is_child=True)


def peer_server() -> Server:
    argv = [sys.executable, "-m", "uvicorn", "benches.fanout_apps:peer", "--host", "127.0.0.1"]
    argv += ["--port", "{port}", "--workers", "1", "--loop", "uvloop", "--http", "httptools"]
    argv += ["--backlog", "4096", "--log-level", "warning", "--no-access-log"]
    return Server("starlette+uvicorn, a Queue + EventEncoder per reader", argv)


def post_bytes(port: int, thread: str, run: str, deltas: int, delay: float) -> bytes:
    return run_request(port, {"deltas": deltas, "delay": delay}, thread, run)


def get_bytes(port: int, thread: str, run: str, last: int | None = 0) -> bytes:
    cursor = f"Last-Event-ID: {last}\r\n" if last is not None else ""
    return (
        f"GET /threads/{thread}/runs/{run}/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Accept: text/event-stream\r\n{cursor}Connection: close\r\n\r\n"
    ).encode()


class Reader(asyncio.Protocol):
    def __init__(self, request: bytes, done: asyncio.Future):
        self.request, self.done = request, done
        self.frames = 0
        self.carry = b""
        self.last = 0.0
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data):
        joined = self.carry + data
        self.frames += joined.count(b"data: ") - self.carry.count(b"data: ")
        self.carry = joined[-5:]
        self.last = time.perf_counter()

    def connection_lost(self, exc):
        if not self.done.done():
            self.done.set_result(self)


async def connect(port: int, request: bytes) -> tuple[Reader, asyncio.Future]:
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    await loop.create_connection(lambda: Reader(request, done), "127.0.0.1", port)
    return done


async def fan_out(server: Server, readers: int, deltas: int) -> dict:
    port = server.port
    thread, run = f"fan-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    delay = 1.0 + readers * 0.004
    cpu0 = worker_cpu(server.worker)
    t_post = time.perf_counter()
    waits = [await connect(port, post_bytes(port, thread, run, deltas, delay))]
    await asyncio.sleep(0.2)
    for _ in range(readers - 1):
        waits.append(await connect(port, get_bytes(port, thread, run)))
    joined = time.perf_counter() - t_post
    if joined > delay:
        raise RuntimeError(f"{readers} readers took {joined:.2f}s to join (> {delay:.2f}s)")
    done = await asyncio.wait_for(asyncio.gather(*waits), 300)
    cpu = worker_cpu(server.worker) - cpu0
    frames = sum(r.frames for r in done)
    expected = readers * (deltas + 4)
    end = max(r.last for r in done)
    elapsed = end - (t_post + delay)
    return {
        "readers": readers,
        "frames": frames,
        "complete": frames == expected,
        "events_per_s": frames / elapsed,
        "cpu_us_per_frame": cpu / frames * 1e6,
    }


async def idle_readers(server: Server, count: int) -> dict:
    port = server.port
    thread, run = f"idle-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    first = await connect(port, post_bytes(port, thread, run, 10, 3600))
    await asyncio.sleep(1.0)
    before = rss_kib(server.worker)
    waits = []
    for i in range(count):
        waits.append(await connect(port, get_bytes(port, thread, run)))
        if i % 500 == 499:
            await asyncio.sleep(0.05)
    await asyncio.sleep(2.0)
    after = rss_kib(server.worker)
    return {
        "readers": count,
        "rss_before_mib": before / 1024,
        "rss_after_mib": after / 1024,
        "kib_per_reader": (after - before) / count,
        "first": first,
        "waits": waits,
    }


def first_frame_ms(port: int, request: bytes) -> float:
    """A new connection, ``request``, until the first frame's ``data: ``."""
    t0 = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(request)
        data = b""
        while b"data: " not in data:
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("closed before the first frame")
            data += chunk
    return (time.perf_counter() - t0) * 1e3


def reconnects(server: Server, floor: Server, count: int, deltas: int) -> dict:
    """Reconnects to ours, each followed by one to granian's floor (same machine state)."""
    port = server.port
    thread, run = f"re-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(post_bytes(port, thread, run, deltas, 0))
        while sock.recv(1 << 20):
            pass
    ours, bare = [], []
    for _ in range(count):
        request = get_bytes(port, thread, run, random.randrange(1, deltas))
        ours.append(first_frame_ms(port, request))
        bare.append(first_frame_ms(floor.port, get_bytes(floor.port, thread, run)))
    ours.sort()
    bare.sort()
    p99 = int(count * 0.99) - 1
    return {
        "count": count,
        "p50_ms": statistics.median(ours),
        "p99_ms": ours[p99],
        "floor_p50_ms": statistics.median(bare),
        "floor_p99_ms": bare[p99],
    }


async def measure(args) -> dict:
    out = {"fan": {}, "idle": None, "reconnect": None}
    servers = {"ours": ours_server(), "peer": peer_server()}
    try:
        for server in servers.values():
            server.start()
        for server in servers.values():  # warm up
            await fan_out(server, 10, 200)
        for readers in args.readers:
            for key, server in servers.items():
                out["fan"].setdefault(readers, {})[key] = await fan_out(
                    server, readers, args.deltas
                )
                print(key, out["fan"][readers][key], file=sys.stderr)
    finally:
        for server in servers.values():
            server.stop()
    if args.idle:
        server = ours_server()
        server.start()
        try:
            idle = await idle_readers(server, args.idle)
            out["idle"] = {k: v for k, v in idle.items() if k not in ("first", "waits")}
            print("idle", out["idle"], file=sys.stderr)
        finally:
            server.stop()
    if args.reconnects:
        server, floor = ours_server(), ours_server("floor")
        server.start()
        floor.start()
        try:
            load = os.getloadavg()
            out["reconnect"] = await asyncio.to_thread(
                reconnects, server, floor, args.reconnects, args.deltas
            )
            out["reconnect"]["load"] = (load, os.getloadavg())
            print("reconnect", out["reconnect"], file=sys.stderr)
        finally:
            server.stop()
            floor.stop()
    return out


def report(out: dict, args) -> str:
    lines = [
        "| readers | (a) events/s | (b) events/s | ratio | (a) CPU µs/frame | (b) CPU µs/frame |"
        " all frames (a/b) |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for readers, sides in out["fan"].items():
        a, b = sides["ours"], sides["peer"]
        lines.append(
            f"| {readers} | {a['events_per_s']:,.0f} | {b['events_per_s']:,.0f} |"
            f" {a['events_per_s'] / b['events_per_s']:.1f}x | {a['cpu_us_per_frame']:.2f} |"
            f" {b['cpu_us_per_frame']:.2f} | {a['complete']}/{b['complete']} |"
        )
    if out["idle"]:
        i = out["idle"]
        lines.append("")
        lines.append(
            f"Idle readers: {i['readers']:,} on one worker, RSS {i['rss_before_mib']:.0f} →"
            f" {i['rss_after_mib']:.0f} MiB, **{i['kib_per_reader']:.1f} KiB per reader**"
            " (target ≤ 24)."
        )
    if out["reconnect"]:
        r = out["reconnect"]
        loads = [" ".join(f"{x:.2f}" for x in load) for load in r["load"]]
        lines.append("")
        lines.append(
            f"Reconnect with Last-Event-ID to the first replayed frame ({r['count']} sequential,"
            f" new connection each): p50 {r['p50_ms']:.2f} ms, **p99 {r['p99_ms']:.2f} ms**"
            f" (target ≤ 5); granian's floor (a bare ASGI app sending one frame), each request"
            f" right after one of ours: p50 {r['floor_p50_ms']:.2f} ms, p99"
            f" {r['floor_p99_ms']:.2f} ms; load average {loads[0]} before, {loads[1]} after."
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--readers", default="1,100,1000")
    ap.add_argument("--deltas", type=int, default=2000)
    ap.add_argument("--idle", type=int, default=10_000)
    ap.add_argument("--reconnects", type=int, default=500)
    args = ap.parse_args(argv)
    args.readers = [int(x) for x in args.readers.split(",") if x]
    import uvloop

    out = uvloop.run(measure(args))
    print(report(out, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
