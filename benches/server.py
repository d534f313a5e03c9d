"""Server benchmark: agui-bridge on granian RSGI against Starlette + uvicorn + EventEncoder.

    python benches/server.py            # what `make bench-server` runs
    python benches/server.py --quick    # smaller counts, for a smoke run

One run, this machine, loopback only, one worker per server, the same agent
(N text deltas per request) and the same load client for both:

  (a) ``benches/bench_app.py`` on granian (RSGI, uvloop), the native build when present;
  (b) ``benches/peer_app.py`` on uvicorn (uvloop + httptools, i.e. ``uvicorn[standard]``):
      Starlette ``StreamingResponse``, one pydantic event model and one
      ``EventEncoder.encode`` chunk per event.

The load client is one process of raw asyncio ``Protocol`` connections on uvloop
(HTTP/1.1, ``Connection: close``): it counts ``data: `` frames with
``bytes.count`` as bytes arrive and checks the status line and the final
``RUN_FINISHED``; it parses nothing else, so it stays cheap. Nothing is pinned
by default (granian's worker has a Rust I/O thread beside the Python one);
``--pin`` puts the server on CPU 0 and the client on CPU 1. RSS is the server
worker's ``VmRSS`` from /proc, sampled every 20 ms.

Figures: events/s of one stream of 10,000-delta requests, one after another
for a quarter of a second (``--window``; median of 5, the servers taking
turns; the first request of each turn is also reported alone); aggregate
events/s of 16 concurrent 10,000-delta streams (likewise); 1,000 concurrently
open slow streams (20 deltas, one every 100 ms): all complete with every event, and
RSS growth per open stream (peak minus idle, over 1,000). Targets: (a) ≥ 30x (b)
on both throughput figures (issue 23's bar); the 1,000 streams all complete with
≤ 64 KiB each.
The figures go to stdout and to benches/results/server.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import platform
import shlex
import socket
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Its sibling modules, whether it runs as a script or is imported as benches.server.
sys.path.insert(0, str(ROOT / "benches"))

from cpu_time import worker_cpu  # noqa: E402

RESULTS = ROOT / "benches" / "results" / "server.md"
EVENTS_BESIDE_DELTAS = 4  # RUN_STARTED, TEXT_MESSAGE_START, TEXT_MESSAGE_END, RUN_FINISHED
SERVER_CPU, CLIENT_CPU = 0, 1
PIN = False
LOAD_AT_START: tuple = ()


# ---------------------------------------------------------------- servers


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _children(pid: int) -> list[int]:
    out = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(c) for c in fh.read().split()]
    return out


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


@dataclass
class Server:
    name: str
    argv: list[str]
    env: dict = field(default_factory=dict)
    worker_is_child: bool = False
    root: Path = ROOT  # the checkout it serves from (benches/server_ab.py)
    port: int = 0
    proc: subprocess.Popen | None = None
    worker: int = 0

    def start(self, timeout: float = 30.0) -> None:
        self.port = _free_port()
        argv = [a.replace("{port}", str(self.port)) for a in self.argv]
        env = {**os.environ, **self.env}
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(self.root / "python"), str(self.root), env.get("PYTHONPATH")) if p
        )
        self.command = shlex.join(argv)
        pin = ["taskset", "-c", str(SERVER_CPU)] if PIN else []
        self.proc = subprocess.Popen(
            [*pin, *argv],
            cwd=self.root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.proc.stderr.read()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port)):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not listen within {timeout}s")
            time.sleep(0.05)
        # taskset execs the server, so proc.pid is the server itself.
        self.worker = self.proc.pid
        if self.worker_is_child:
            kids = _children(self.proc.pid)
            if len(kids) != 1:
                raise RuntimeError(f"{self.name}: expected one worker, found {kids}")
            self.worker = kids[0]

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.proc = None


def granian_server(name: str, env: dict, interface: str = "rsgi") -> Server:
    argv = [sys.executable, "-m", "granian", "--interface", interface, "--host", "127.0.0.1"]
    argv += ["--port", "{port}", "--workers", "1", "--loop", "uvloop", "--http", "1"]
    argv += ["--backlog", "2048", "--backpressure", "2048", "--log-level", "warning"]
    argv += ["benches.bench_app:app"]
    return Server(name, argv, env=env, worker_is_child=True)


def uvicorn_server() -> Server:
    argv = [sys.executable, "-m", "uvicorn", "benches.peer_app:app", "--host", "127.0.0.1"]
    argv += ["--port", "{port}", "--workers", "1", "--loop", "uvloop", "--http", "httptools"]
    argv += ["--backlog", "2048", "--log-level", "warning", "--no-access-log"]
    return Server("starlette+uvicorn+EventEncoder", argv)


# ---------------------------------------------------------------- load client


def request_bytes(port: int, deltas: int, interval: float) -> bytes:
    return run_request(port, {"deltas": deltas, "interval": interval})


def run_request(port: int, forwarded: dict, thread_id: str = "", run_id: str = "") -> bytes:
    """A raw POST of one run (fresh ids unless given); ``forwarded`` tells the bench
    agent what to stream."""
    body = json.dumps(
        {
            "threadId": thread_id or f"bench-{uuid.uuid4().hex[:12]}",
            "runId": run_id or uuid.uuid4().hex,
            "state": {},
            "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": "go"}],
            "tools": [],
            "context": [],
            "forwardedProps": forwarded,
        }
    ).encode()
    head = (
        f"POST /ag-ui/run HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class Stream(asyncio.Protocol):
    """One SSE response: counts ``data: `` frames as bytes arrive."""

    def __init__(self, request: bytes, done: asyncio.Future, tracker: dict):
        self.request, self.done, self.tracker = request, done, tracker
        self.frames = 0
        self.nbytes = 0
        self.head = b""
        self.tail = b""
        self.carry = b""
        self.first = 0.0

    def connection_made(self, transport):
        transport.write(self.request)

    def data_received(self, data):
        if not self.nbytes:
            self.first = time.perf_counter()
            self.head = data[:16]
            self.tracker["open"] += 1
            self.tracker["peak"] = max(self.tracker["peak"], self.tracker["open"])
        self.nbytes += len(data)
        # A 5-byte carry cannot hold a whole "data: ", so nothing is counted twice.
        buf = self.carry + data
        self.frames += buf.count(b"data: ")
        self.carry = buf[-5:]
        self.tail = (self.tail + data)[-400:]

    def connection_lost(self, exc):
        if self.nbytes:
            self.tracker["open"] -= 1
        if not self.done.done():
            self.done.set_result(exc)

    def complete(self, deltas: int) -> bool:
        return (
            self.head.startswith(b"HTTP/1.1 200")
            and self.frames == deltas + EVENTS_BESIDE_DELTAS
            and b'"type":"RUN_FINISHED"' in self.tail
        )


async def run_streams(
    port: int, count: int, deltas: int, interval: float, timeout: float, sampler=None
) -> dict:
    loop = asyncio.get_running_loop()
    tracker = {"open": 0, "peak": 0}
    streams, waits = [], []
    cpu_start = time.process_time()
    start = time.perf_counter()
    for _ in range(count):
        done = loop.create_future()
        stream = Stream(request_bytes(port, deltas, interval), done, tracker)
        await loop.create_connection(lambda s=stream: s, "127.0.0.1", port)
        streams.append(stream)
        waits.append(done)
    sampling = asyncio.ensure_future(sampler()) if sampler else None
    try:
        await asyncio.wait_for(asyncio.gather(*waits), timeout)
    finally:
        if sampling:
            sampling.cancel()
    elapsed = time.perf_counter() - start
    client_cpu = (time.process_time() - cpu_start) / elapsed
    complete = sum(s.complete(deltas) for s in streams)
    frames = sum(s.frames for s in streams)
    return {
        "elapsed": elapsed,
        "frames": frames,
        "complete": complete,
        "count": count,
        "peak_open": tracker["peak"],
        "events_per_s": frames / elapsed,
        "client_cpu": client_cpu,
    }


# ---------------------------------------------------------------- phases


async def throughput(server: Server, streams: int, deltas: int, window: float = 0.0) -> tuple:
    """``streams`` concurrent requests, again right after they all end, until
    ``window`` seconds have passed (at least once): events/s over the whole
    time (first connect to last close), the client's CPU share, the server
    worker's CPU seconds per event, and the first round's own events/s.

    One stream is measured over a window: one request alone is no throughput
    figure for a fast server. Ours serves 10,000 events in about 5 ms, and a
    worker woken from idle (the other server's turn) pays about 2 ms more on
    this machine (wake-up, cold caches: RESULTS.md), a third of its request,
    against a hundredth of the peer's 170 ms one. The same window for both
    puts them on the same footing.
    """
    before = worker_cpu(server.worker)
    cpu_start = time.process_time()
    start = time.perf_counter()
    frames, first = 0, None
    while True:
        result = await run_streams(server.port, streams, deltas, 0.0, timeout=300)
        if result["complete"] != streams:
            raise RuntimeError(f"{server.name}: {streams - result['complete']} streams incomplete")
        frames += result["frames"]
        if first is None:
            first = result["events_per_s"]
        elapsed = time.perf_counter() - start
        if elapsed >= window:
            break
    used = worker_cpu(server.worker) - before
    client_cpu = (time.process_time() - cpu_start) / elapsed
    return frames / elapsed, client_cpu, used / frames, first


async def slow_streams(server: Server, streams: int, deltas: int, interval: float) -> dict:
    await asyncio.sleep(0.5)
    idle = rss_kib(server.worker)
    peak = [idle]

    async def sample():
        while True:
            peak[0] = max(peak[0], rss_kib(server.worker))
            await asyncio.sleep(0.02)

    result = await run_streams(
        server.port, streams, deltas, interval, timeout=deltas * interval + 120, sampler=sample
    )
    result.update(
        rss_idle_kib=idle,
        rss_peak_kib=peak[0],
        kib_per_stream=(peak[0] - idle) / streams,
    )
    return result


async def measure(servers: dict, args) -> dict:
    """Throughput runs alternate between the servers (a, b, a, b, ...), so a burst of
    other load on the machine hits both alike; the slow phase runs one server at a time."""
    for server in servers.values():  # warm up: imports, code paths, the allocator
        await run_streams(server.port, 4, 1000, 0.0, timeout=60)
        await run_streams(server.port, 64, 20, 0.0, timeout=60)
    out = {
        key: {
            phase: {"runs": [], "cpu": [], "worker": [], "first": []}
            for phase in ("single", "concurrent")
        }
        for key in servers
    }
    phases = (("single", 1, args.window), ("concurrent", args.concurrency, 0.0))
    for phase, streams, window in phases:
        for _ in range(args.repeats):
            for key, server in servers.items():
                rate, cpu, worker, first = await throughput(server, streams, args.deltas, window)
                out[key][phase]["first"].append(first)
                out[key][phase]["runs"].append(rate)
                out[key][phase]["cpu"].append(cpu)
                out[key][phase]["worker"].append(worker)
        for key in servers:
            out[key][phase]["median"] = statistics.median(out[key][phase]["runs"])
            out[key][phase]["first_median"] = statistics.median(out[key][phase]["first"])
            # CPU per event over all runs: what the machine's load moves least.
            out[key][phase]["worker_us"] = statistics.median(out[key][phase]["worker"]) * 1e6
    if not args.skip_slow:
        for key, server in servers.items():
            if key not in ("pure", "asgi"):
                out[key]["slow"] = await slow_streams(
                    server, args.slow_streams, args.slow_deltas, 0.1
                )
    return out


def bench_info(env: dict) -> dict:
    code = (
        "import json, agui_bridge, benches.bench_app as b;"
        "print(json.dumps({'mode': b.MODE, 'impl': agui_bridge.IMPLEMENTATION}))"
    )
    full = {**os.environ, **env, "PYTHONPATH": f"{ROOT / 'python'}{os.pathsep}{ROOT}"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True, text=True
    )
    if out.returncode:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)


def versions() -> dict:
    import importlib.metadata as md

    names = ["granian", "uvicorn", "starlette", "ag-ui-protocol", "pydantic", "uvloop", "httptools"]
    return {n: md.version(n) for n in names}


# ---------------------------------------------------------------- report

# Issue 23's bar for both throughput figures, ours over the peer's: the table
# below and the figures make bench reads (`write_figures`) judge by this one.
THROUGHPUT_TARGET = 30


def fmt(v: float) -> str:
    return f"{v:,.0f}"


def report(results: dict, infos: dict, args, commands: dict) -> str:
    ours, peer = results["ours"], results["peer"]
    lines = []
    rows = [("figure", "agui-bridge (a)", "peer (b)", "target", "verdict")]
    ratio_1 = ours["single"]["median"] / peer["single"]["median"]
    ratio_16 = ours["concurrent"]["median"] / peer["concurrent"]["median"]
    rows.append(
        (
            f"1 stream x {args.deltas:,} deltas, events/s ({args.window:g} s a turn)",
            fmt(ours["single"]["median"]),
            fmt(peer["single"]["median"]),
            f"≥ {THROUGHPUT_TARGET}x peer",
            f"{ratio_1:.1f}x {'PASS' if ratio_1 >= THROUGHPUT_TARGET else 'FAIL'}",
        )
    )
    first_1 = ours["single"]["first_median"] / peer["single"]["first_median"]
    rows.append(
        (
            "  its turn's first request alone (after another server's turn)",
            fmt(ours["single"]["first_median"]),
            fmt(peer["single"]["first_median"]),
            "",
            f"{first_1:.1f}x",
        )
    )
    rows.append(
        (
            f"{args.concurrency} streams x {args.deltas:,} deltas, aggregate events/s",
            fmt(ours["concurrent"]["median"]),
            fmt(peer["concurrent"]["median"]),
            f"≥ {THROUGHPUT_TARGET}x peer",
            f"{ratio_16:.1f}x {'PASS' if ratio_16 >= THROUGHPUT_TARGET else 'FAIL'}",
        )
    )
    for key, label in (("single", "1 stream"), ("concurrent", f"{args.concurrency} streams")):
        o, p = ours[key]["worker_us"], peer[key]["worker_us"]
        rows.append(
            (
                f"  {label}: worker CPU per event (µs), all threads",
                f"{o:.2f}",
                f"{p:.2f}",
                "",
                f"{p / o:.1f}x less",
            )
        )
    if "slow" in ours:
        o, p = ours["slow"], peer["slow"]
        ok_all = o["complete"] == o["count"]
        rows.append(
            (
                f"{args.slow_streams:,} slow streams ({args.slow_deltas} deltas/100 ms): complete",
                f"{o['complete']}/{o['count']} (peak open {o['peak_open']})",
                f"{p['complete']}/{p['count']} (peak open {p['peak_open']})",
                "all",
                "PASS" if ok_all else "FAIL",
            )
        )
        rows.append(
            (
                "  RSS growth per open stream (KiB)",
                f"{o['kib_per_stream']:.1f} ({o['rss_idle_kib'] // 1024}→"
                f"{o['rss_peak_kib'] // 1024} MiB)",
                f"{p['kib_per_stream']:.1f} ({p['rss_idle_kib'] // 1024}→"
                f"{p['rss_peak_kib'] // 1024} MiB)",
                "≤ 64",
                "PASS" if o["kib_per_stream"] <= 64 else "FAIL",
            )
        )
        rows.append(
            (
                "  wall time of the slow phase (s)",
                f"{o['elapsed']:.2f}",
                f"{p['elapsed']:.2f}",
                f"≥ {args.slow_deltas * 0.1:.1f}",
                "",
            )
        )
    if "asgi" in results:
        asgi = results["asgi"]
        ratio = asgi["concurrent"]["median"] / ours["concurrent"]["median"]
        rows.append(
            (
                "  (a) on granian ASGI: 1 stream / 16 streams, events/s (16 streams vs RSGI)",
                f"{fmt(asgi['single']['median'])} / {fmt(asgi['concurrent']['median'])}"
                f" ({ratio:.2f}x)",
                "",
                "",
                "",
            )
        )
    if "pure" in results:
        pure = results["pure"]
        rows.append(
            (
                "  (a) on the pure build: 1 stream / 16 streams, events/s",
                f"{fmt(pure['single']['median'])} / {fmt(pure['concurrent']['median'])}",
                "",
                "",
                "",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines.append("| " + " | ".join(r.ljust(w) for r, w in zip(rows[0], widths, strict=True)) + " |")
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows[1:]:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    table = "\n".join(lines)

    info = infos["ours"]
    served = (
        "`agui_bridge.App` (memory store)"
        if info["mode"] == "app"
        else "a minimal RSGI handler over the public transformer (`agui_bridge.App` "
        "had not landed), one `encode` + `send_bytes` per crumb"
    )
    ver = versions()
    load = " ".join(f"{x:.2f}" for x in LOAD_AT_START)

    def cpu(side):
        one, many = (statistics.median(side[k]["cpu"]) for k in ("single", "concurrent"))
        return f"{one:.0%} (1 stream), {many:.0%} ({args.concurrency} streams)"

    pinning = (
        f"server on CPU {SERVER_CPU}, client on CPU {CLIENT_CPU}"
        if PIN
        else "none (server and client share both cores)"
    )
    md = f"""# Server benchmark: agui-bridge on granian vs Starlette + uvicorn + EventEncoder

Date: {dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")}.
Command: `{" ".join(["python", "benches/server.py", *sys.argv[1:]])}` (`make bench-server`).
Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()};
{", ".join(f"{k} {v}" for k, v in ver.items())}.

{table}

- (a) `benches/bench_app.py` served by {served}, on the **{info["impl"]}** build.
  `{commands["ours"]}`
- (b) `benches/peer_app.py`: Starlette `StreamingResponse`, one `ag_ui.core` pydantic
  event and one `EventEncoder.encode` chunk per event.
  `{commands["peer"]}`
- The agent is the same in both: N deltas of `"token "`, then the run ends; each stream
  is N + 4 events. All servers are up for the whole run, idle but for their turn;
  throughput runs alternate (a, b, a, b, ...) and each figure is the median of
  {args.repeats} runs; a one-stream run is requests one after another on one
  stream for at least {args.window:g} s (events over the window's wall time)
  (runs: a single {[fmt(x) for x in ours["single"]["runs"]]} vs
  {[fmt(x) for x in peer["single"]["runs"]]}; {args.concurrency} streams
  {[fmt(x) for x in ours["concurrent"]["runs"]]} vs
  {[fmt(x) for x in peer["concurrent"]["runs"]]}).
- Load client: one process, uvloop, raw asyncio `Protocol` connections (HTTP/1.1,
  `Connection: close`) that only count `data: ` frames with `bytes.count` and check the
  status line, the frame count (none lost) and the final `RUN_FINISHED`.
  CPU pinning: {pinning}. Events/s = frames received / wall time from the first
  connect to the last close.
- The client's own CPU time over wall time during the throughput runs (median; 1.0 would
  mean the client was the bottleneck): against (a) {cpu(ours)}, against (b) {cpu(peer)}.
- Worker CPU per event: the server worker's CPU time (every thread, /proc: granian's
  Rust I/O threads too) over the events of a run, median of the runs. The machine's
  load moves it much less than the rates, which swing most for the peer (one
  CPU-bound thread).
- RSS: the server worker's `VmRSS` from /proc, idle after warm-up vs the peak sampled
  every 20 ms while the slow streams are open; growth / number of streams.
- Load average at the start of the run: {load}. This is a shared 2-core machine; other
  work on it moves the figures between runs (the peer's most, since it is CPU-bound
  in one thread).
"""
    return table, md


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deltas", type=int, default=10_000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--window", type=float, default=0.25, help="seconds of one stream per turn (sequential)"
    )
    ap.add_argument("--slow-streams", type=int, default=1000)
    ap.add_argument("--slow-deltas", type=int, default=20)
    ap.add_argument("--skip-slow", action="store_true")
    ap.add_argument("--no-pure", action="store_true", help="skip the pure-build row")
    ap.add_argument("--asgi", action="store_true", help="add (a) on granian's ASGI interface")
    ap.add_argument("--quick", action="store_true", help="small counts; results not written")
    ap.add_argument(
        "--pin", action="store_true", help=f"pin the server to CPU {SERVER_CPU}, the client to 1"
    )
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--json", type=Path, help="also write issue 23's targets (make bench)")
    args = ap.parse_args(argv)
    if args.quick:
        args.deltas, args.repeats, args.slow_streams = 2000, 1, 200
    return args


def write_figures(path: Path, results: dict, args, argv) -> None:
    """Issue 23's server targets (event ids on: the App's default) for benches/summary.py."""
    ours, peer = results["ours"], results["peer"]
    rows = []
    labels = (("single", "1 stream"), ("concurrent", f"{args.concurrency} streams"))
    shapes = {
        "single": f"{args.deltas:,}-delta requests for {args.window:g} s",
        "concurrent": f"{args.deltas:,} deltas",
    }
    for key, label in labels:
        ratio = ours[key]["median"] / peer[key]["median"]
        rows.append(
            {
                "figure": f"server, {label} x {shapes[key]}, event ids on, vs the peer",
                "value": f"{ratio:.1f}x",
                "target": f"≥ {THROUGHPUT_TARGET}x",
                "pass": ratio >= THROUGHPUT_TARGET,
            }
        )
        if key == "single":
            # Beside the window's figure: the turns' first requests alone, each
            # after another server's turn (information, no target).
            first = ours[key]["first_median"] / peer[key]["first_median"]
            rows.append(
                {
                    "figure": "server, 1 stream: each turn's first request alone, vs the peer's",
                    "value": f"{first:.1f}x",
                    "target": "",
                    "pass": True,
                }
            )
        # The same comparison by the workers' CPU per event: a loaded machine
        # starves the single-threaded peer's rate far more than its CPU cost.
        cpu_ratio = peer[key]["worker_us"] / ours[key]["worker_us"]
        rows.append(
            {
                "figure": f"server, {label}: the peer's worker CPU per event / ours",
                "value": f"{cpu_ratio:.1f}x",
                "target": f"≥ {THROUGHPUT_TARGET}x",
                "pass": cpu_ratio >= THROUGHPUT_TARGET,
            }
        )
    command = "python benches/server.py " + " ".join(sys.argv[1:] if argv is None else argv)
    report = {"command": command, "load": LOAD_AT_START[0], "rows": rows}
    path.write_text(json.dumps(report), encoding="utf-8")


def main(argv=None) -> int:
    global PIN, LOAD_AT_START
    LOAD_AT_START = os.getloadavg()
    args = parse_args(argv)
    PIN = args.pin
    if PIN:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {CLIENT_CPU})
    import uvloop

    infos = {"ours": bench_info({}), "peer": {}}
    if infos["ours"]["impl"] != "rust":
        print("warning: the native build is missing; (a) runs on the pure build", file=sys.stderr)
    servers = {"ours": granian_server("agui-bridge+granian", {}), "peer": uvicorn_server()}
    if args.asgi:
        servers["asgi"] = granian_server("agui-bridge+granian (asgi)", {}, "asgi")
    if infos["ours"]["impl"] == "rust" and not args.no_pure:
        servers["pure"] = granian_server("agui-bridge+granian (pure)", {"AGUI_BRIDGE_PURE": "1"})
    print("… " + ", ".join(server.name for server in servers.values()), file=sys.stderr)
    try:
        for server in servers.values():
            server.start()
        results = uvloop.run(measure(servers, args))
    finally:
        for server in servers.values():
            server.stop()
    commands = {key: server.command for key, server in servers.items()}
    if args.json:
        write_figures(args.json, results, args, argv)
    table, md = report(results, infos, args, commands)
    print(table)
    if str(args.out) != "-" and (not args.quick or args.out != RESULTS):  # "-": no report
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(md)
        print(f"written to {args.out}", file=sys.stderr)
    verdicts = [line for line in table.splitlines() if "FAIL" in line]
    return 1 if verdicts else 0


if __name__ == "__main__":
    sys.exit(main())
