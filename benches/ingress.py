"""Ingress figures: time to first frame on the SQLite store, and one 10,000-delta stream.

    python benches/ingress.py            # the figures in benches/results/ingress.md
    python benches/ingress.py --quick    # smaller counts, for a smoke run

Loopback only (127.0.0.1), one granian worker (RSGI, uvloop, HTTP/1.1) serving
``benches.ingress:app`` (an ``agui_bridge.App``; this module), bounded counts,
every server stopped at the end.

1. Time to the first frame of a new run: 1,000 sequential runs, each on a new
   thread (store miss, then the turn saved with synchronous=FULL at its end),
   SQLite store in a temporary directory; one kept-alive connection; the time
   from writing the request to receiving the first ``data:`` frame
   (RUN_STARTED); median and p99. The whole response is read before the next run.
2. Events per second of one stream of 10,000 text deltas (10,003 events),
   through granian + the native build, beside the same app on the pure build
   (``AGUI_BRIDGE_PURE=1`` in the server's environment); median of 5 streams
   each, the two servers taking turns. Events/s = data frames / (time from writing
   the request to the end of the chunked body).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# -- the app the server imports (``benches.ingress:app``) -------------------------

app = None


class _Floor:
    """granian's own floor: read the body, stream one RUN_STARTED frame, end."""

    async def __rsgi__(self, scope, protocol):
        await protocol()
        transport = protocol.response_stream(200, [("content-type", "text/event-stream")])
        await transport.send_bytes(
            b'data: {"type":"RUN_STARTED"}\n\ndata: {"type":"RUN_FINISHED"}\n\n'
        )


floor = _Floor()

if os.environ.get("AGUI_BENCH_SERVER") == "1":
    from agui_bridge import crumbs as _c
    from agui_bridge.app import App

    app = App(store=os.environ["AGUI_BENCH_STORE"])
    _delta = _c.text_delta("token ")

    @app.agent("bench")
    async def bench(ctx):
        words = ctx.input.split()
        count = int(words[1]) if len(words) > 1 and words[0] == "deltas" else 2
        for _ in range(count):
            yield _delta


# -- the client -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, store: str, pure: bool, target: str = "benches.ingress:app"):
        self.port = free_port()
        env = dict(
            os.environ,
            AGUI_BENCH_SERVER="1",
            AGUI_BENCH_STORE=store,
            PYTHONPATH=os.pathsep.join([str(ROOT / "python"), str(ROOT)]),
        )
        if pure:
            env["AGUI_BRIDGE_PURE"] = "1"
        else:
            env.pop("AGUI_BRIDGE_PURE", None)
        self.command = [
            sys.executable,
            "-m",
            "granian",
            "--interface",
            "rsgi",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
            "--loop",
            "uvloop",
            "--http",
            "1",
            "--no-ws",
            "--log-level",
            "warning",
            target,
        ]
        self.process = subprocess.Popen(self.command, env=env, cwd=ROOT)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("granian did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


def request(thread_id: str, text: str) -> bytes:
    body = json.dumps(
        {
            "threadId": thread_id,
            "runId": uuid.uuid4().hex,
            "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}],
            "tools": [],
            "context": [],
            "forwardedProps": {},
            "state": {},
        },
        separators=(",", ":"),
    ).encode()
    return (
        b"POST /ag-ui/run HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"accept: text/event-stream\r\ncontent-length: %d\r\n\r\n" % len(body)
    ) + body


def one_run(sock: socket.socket, thread_id: str, text: str) -> tuple[float, float, int]:
    """(seconds to the first data frame, seconds to the end, data frames)."""
    payload = request(thread_id, text)
    start = time.perf_counter()
    sock.sendall(payload)
    data = bytearray()
    first = None
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise RuntimeError("the server closed the connection")
        if first is None and b"data: " in chunk:
            first = time.perf_counter()
        data += chunk
        if data.endswith(b"\r\n0\r\n\r\n"):
            break
    end = time.perf_counter()
    if not data.startswith(b"HTTP/1.1 200") or b'"RUN_FINISHED"' not in data:
        raise RuntimeError(data[:300])
    return first - start, end - start, data.count(b"data: ")


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(30)
    return sock


def first_frame(ports: list[int], runs: int) -> list[list[float]]:
    """Seconds to the first frame on each server, the servers taking turns run by run."""
    socks = [connect(port) for port in ports]
    try:
        for _ in range(20):  # warm-up
            for sock in socks:
                one_run(sock, f"warm-{uuid.uuid4().hex}", "hi")
        times: list[list[float]] = [[] for _ in socks]
        for _ in range(runs):
            for index, sock in enumerate(socks):
                times[index].append(one_run(sock, f"t-{uuid.uuid4().hex}", "hi")[0])
        return times
    finally:
        for sock in socks:
            sock.close()


def stream_rate(port: int, deltas: int) -> float:
    sock = connect(port)
    try:
        _, total, frames = one_run(sock, f"s-{uuid.uuid4().hex}", f"deltas {deltas}")
    finally:
        sock.close()
    if frames != deltas + 4:
        raise RuntimeError(f"{frames} frames for {deltas} deltas")
    return frames / total


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "benches" / "results" / "ingress.md"))
    args = parser.parse_args()
    runs, deltas, repeats = (100, 2000, 3) if args.quick else (1000, 10_000, 5)
    load = os.getloadavg()

    with tempfile.TemporaryDirectory(prefix="agui-bench-") as tmp:
        store = f"sqlite:///{tmp}/threads.sqlite"
        servers = [
            Server(store, pure=False),
            Server("memory://", pure=False),
            Server("memory://", pure=False, target="benches.ingress:floor"),
        ]
        try:
            ttff, ttff_memory, ttff_floor = first_frame([s.port for s in servers], runs)
        finally:
            for server in servers:
                server.stop()
        native = Server("memory://", pure=False)
        pure = Server("memory://", pure=True)
        try:
            stream_rate(native.port, 1000)
            stream_rate(pure.port, 1000)
            rates = {"native": [], "pure": []}
            for _ in range(repeats):
                rates["native"].append(stream_rate(native.port, deltas))
                rates["pure"].append(stream_rate(pure.port, deltas))
        finally:
            native.stop()
            pure.stop()

    def stats(times):
        ms = sorted(t * 1000 for t in times)
        return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))]

    median, p99 = stats(ttff)
    median_memory, p99_memory = stats(ttff_memory)
    median_floor, p99_floor = stats(ttff_floor)
    rate_native = statistics.median(rates["native"])
    rate_pure = statistics.median(rates["pure"])
    import granian

    lines = [
        "# Ingress figures",
        "",
        f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC."
        f" Command: `python benches/ingress.py{' --quick' if args.quick else ''}`.",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python"
        f" {platform.python_version()}; granian {granian.__version__}"
        f" (RSGI, uvloop, HTTP/1.1, 1 worker). Load average at the start:"
        f" {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (a shared machine).",
        "",
        "| figure | value |",
        "|---|---|",
        f"| time to first frame, new run, SQLite store, {runs:,} sequential runs: median"
        f" | {median:.3f} ms |",
        f"| same, p99 | {p99:.3f} ms |",
        f"| for reference, same app on the memory store: median / p99 | {median_memory:.3f} /"
        f" {p99_memory:.3f} ms |",
        f"| for reference, granian's floor (a bare RSGI app streaming one frame): median / p99"
        f" | {median_floor:.3f} / {p99_floor:.3f} ms |",
        f"| one {deltas:,}-delta stream, granian + native build, events/s (median of"
        f" {repeats}) | {rate_native:,.0f} |",
        f"| same app on the pure build (`AGUI_BRIDGE_PURE=1`), events/s | {rate_pure:,.0f} |",
        f"| native / pure | {rate_native / rate_pure:.2f}x |",
        "",
        "- Server: `" + " ".join(native.command[1:]).replace(str(native.port), "PORT") + "`",
        "  (env `AGUI_BENCH_SERVER=1 AGUI_BENCH_STORE=sqlite:///TMP/threads.sqlite` for the"
        " first figure, `memory://` for the streams; `AGUI_BRIDGE_PURE=1` for the pure one).",
        "- Client: one blocking socket in this process, HTTP/1.1 keep-alive, TCP_NODELAY;"
        " first frame = write of the request → first received bytes holding `data: `;"
        " every response read to its end and checked (status 200, RUN_FINISHED, frame count).",
        "- The three first-frame servers run at once and take turns request by request, so"
        " load on this shared machine hits them alike; the floor server is"
        " `benches.ingress:floor` (no agui_bridge code).",
        "- Each first-frame run is a new threadId: the store lookup misses, the run streams"
        " RUN_STARTED at once, and the turn (user message + assistant message) is saved"
        " (WAL, synchronous=FULL, in a worker thread) before the response ends.",
        f"- Runs (events/s): native {[f'{r:,.0f}' for r in rates['native']]},"
        f" pure {[f'{r:,.0f}' for r in rates['pure']]}.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
