"""Coalescing (issue 23): ``python benches/coalesce.py``.

Two granian workers serve the same ``agui_bridge.App`` agent, one without
coalescing and one with ``App(coalesce=Coalesce(window_ms=50))``. The agent
streams ``--tokens`` one-character deltas at ``--rate`` tokens/s on an
absolute schedule (token i is yielded at start + i / rate). ``--streams``
streams run on each server at once, both servers at the same time, so the
machine's load hits them alike. Per server: the events and bytes received,
the worker's CPU time (``/proc``) per token, and per token the time from its
yield (the agent writes its tokens' yield times to ``BENCH_YIELDS``, beside
the stream: the bytes on the wire are the tokens') to the frame that carried
it. A token's added latency is that time on the coalescing server less the
plain server's median of it (the path every frame takes); its p50/p99/max
are reported. Beside it, the figure before 2026-12-04: the token's arrival
against the same token's on the plain server, both from its scheduled
yield, which adds the two agents' scheduling differences (one server's
agent yields late on a loaded machine, the other's not).

"Events sent" counts the events that carry the tokens (TEXT_MESSAGE_CONTENT):
one per token without coalescing. Each stream's six others are the same
with or without it, and what a window allows bounds the ratio: a merged
event's first token waits for the rest, so with added latency ≤ the window
no merged event spans more than one window of tokens, 10 at 200 tokens/s
and 50 ms; 1,000 tokens make at least 100 content events (10.0x) and, with
the six others, 1,006 / 106 events (9.5x) at best. The total is printed too.
``--json FILE`` writes the targets for ``make bench`` (benches/summary.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))
sys.path.insert(0, str(ROOT / "python"))

from cpu_time import worker_cpu  # noqa: E402
from server import Server, run_request  # noqa: E402

TOKEN = "x"


def agent_module() -> str:
    return "benches.coalesce:make_app"


def record_holds(path: Path) -> None:
    """Writes, for each hold the window sends (its pace or its timer; not the
    ones another event or the agent's FLUSH sends), how long its first delta
    waited in the server: the bound itself, without the path after it."""
    from agui_bridge import coalesce

    out = path.open("a", buffering=1)
    init = coalesce.Holder.__init__

    def holder_init(self, t, settings, send):
        def sending():
            if self._deadline is not None:
                out.write(f"{time.monotonic() - (self._deadline - self.window)!r}\n")
            send()

        init(self, t, settings, sending)

    coalesce.Holder.__init__ = holder_init


def make_app():
    """``granian --factory benches.coalesce:make_app``; window from ``COALESCE_MS``."""
    from agui_bridge import App, Coalesce, crumbs

    window = float(os.environ.get("COALESCE_MS", "0"))
    app = App(store="memory://", coalesce=Coalesce(window) if window else None)
    if window and os.environ.get("BENCH_YIELDS"):
        record_holds(Path(os.environ["BENCH_YIELDS"], "holds"))

    @app.agent("tokens", path="/ag-ui/run")
    async def tokens(ctx):
        props = ctx.forwarded_props if isinstance(ctx.forwarded_props, dict) else {}
        count, rate = int(props.get("tokens", 100)), float(props.get("rate", 200))
        loop = asyncio.get_running_loop()
        start = loop.time()
        # The schedule's start on the wall clock, which the client on this machine reads too.
        yield crumbs.step_start(f"start {time.time() - (loop.time() - start)!r}")
        delta = crumbs.text_delta(TOKEN)
        yields = []  # each token's yield on the wall clock
        for at in range(count):
            wait = start + at / rate - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            yields.append(time.time())
            yield delta
        # Beside the stream, not in it (the bytes on the wire stay the tokens').
        out = os.environ.get("BENCH_YIELDS")
        if out:
            Path(out, ctx.run_id).write_text(json.dumps(yields))

    return app


async def one_stream(port: int, tokens: int, rate: float) -> dict:
    """Reads one response: per token the wall clock when its frame came, and
    the seconds from its scheduled yield to then."""
    run_id = uuid.uuid4().hex
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(run_request(port, {"tokens": tokens, "rate": rate}, run_id=run_id))
    await writer.drain()
    buffer, nbytes, events, carriers, arrivals, start = b"", 0, 0, 0, [], None
    came: list[float] = []  # per token: when its frame came (wall clock)
    sizes: dict[int, int] = {}  # tokens per TEXT_MESSAGE_CONTENT: how many events held each
    body = False
    while True:
        chunk = await reader.read(65536)
        if not chunk:
            break
        now = time.time()
        nbytes += len(chunk)
        buffer += chunk
        if not body:
            if b"\r\n\r\n" not in buffer:
                continue
            head, buffer = buffer.split(b"\r\n\r\n", 1)
            assert head.startswith(b"HTTP/1.1 200"), head[:40]
            body = True
        *frames, buffer = buffer.split(b"\n\n")
        for frame in frames:
            data = frame[frame.find(b"data: ") + 6 :]
            if not data.startswith(b"{"):
                continue  # a chunk-size line or a ping
            event = json.loads(data)
            events += 1
            if event["type"] == "STEP_STARTED":
                start = float(event["stepName"].split()[1])
            elif event["type"] == "TEXT_MESSAGE_CONTENT":
                carriers += 1
                sizes[len(event["delta"])] = sizes.get(len(event["delta"]), 0) + 1
                for _ in event["delta"]:
                    arrivals.append(now - (start + len(arrivals) / rate))
                    came.append(now)
    writer.close()
    assert len(arrivals) == tokens, (len(arrivals), tokens)
    return {
        "bytes": nbytes,
        "events": events,
        "carriers": carriers,
        "arrivals": arrivals,
        "came": came,
        "run_id": run_id,
        "sizes": sizes,
    }


async def timer_lateness(window: float, out: list) -> None:
    """How late a ``window`` timer fires in this process meanwhile (the machine's
    load makes every loop's timers late alike: the servers' windows too)."""
    loop = asyncio.get_running_loop()
    while True:
        due = loop.time() + window
        await asyncio.sleep(window)
        out.append(loop.time() - due)


def after_yield(got: list[dict], yields: Path) -> list[float]:
    """Per token, the seconds from its yield (as its server's agent wrote it) to its frame."""
    out = []
    for run in got:
        stamps = json.loads((yields / run["run_id"]).read_text())
        out += [came - at for came, at in zip(run["came"], stamps, strict=True)]
    return out


async def measure(
    ports: dict, pids: dict, streams: int, tokens: int, rate: float, yields: Path
) -> dict:
    before = {name: worker_cpu(pid) for name, pid in pids.items()}
    names = list(ports)
    late: list[float] = []
    probe = asyncio.ensure_future(timer_lateness(0.05, late))
    # Both servers at once, stream by stream, so the machine's load hits them alike.
    jobs = [one_stream(ports[name], tokens, rate) for _ in range(streams) for name in names]
    done = await asyncio.gather(*jobs)
    probe.cancel()
    results = {name: done[at :: len(names)] for at, name in enumerate(names)}
    after = {name: worker_cpu(pid) for name, pid in pids.items()}
    out = {"late": late}
    for name, got in results.items():
        out[name] = {
            "events": sum(r["events"] for r in got),
            "carriers": sum(r["carriers"] for r in got),
            "bytes": sum(r["bytes"] for r in got),
            "cpu_per_token_us": (after[name] - before[name]) / (streams * tokens) * 1e6,
            "arrivals": [r["arrivals"] for r in got],
            "after_yield": after_yield(got, yields),
            "sizes": {},
        }
        for r in got:
            for size, n in r["sizes"].items():
                out[name]["sizes"][size] = out[name]["sizes"].get(size, 0) + n
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main_async(args) -> int:
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT / "python"), str(ROOT)])}
    argv = [sys.executable, "-m", "granian", "--interface", "rsgi", "--host", "127.0.0.1"]
    argv += ["--port", "{port}", "--workers", "1", "--loop", "uvloop", "--http", "1"]
    argv += ["--log-level", "warning", "--factory", agent_module()]
    scratch = tempfile.TemporaryDirectory(prefix="coalesce-bench-")
    yields = Path(scratch.name)
    env["BENCH_YIELDS"] = str(yields)
    servers = {
        "plain": Server("plain", argv, {**env, "COALESCE_MS": "0"}, True),
        "coalesced": Server("coalesced", argv, {**env, "COALESCE_MS": str(args.window)}, True),
    }
    for server in servers.values():
        server.start()
    try:
        ports = {name: s.port for name, s in servers.items()}
        pids = {name: s.worker for name, s in servers.items()}
        await measure(ports, pids, 2, 20, 1000, yields)  # warm-up
        load = os.getloadavg()[0]
        # The measured run's holds only (the warm-up's were written before).
        warm = len((yields / "holds").read_text().split())
        got = await measure(ports, pids, args.streams, args.tokens, args.rate, yields)
        holds = [float(line) for line in (yields / "holds").read_text().split()][warm:]
    finally:
        for server in servers.values():
            server.stop()
        scratch.cleanup()
    plain, merged, late = got["plain"], got["coalesced"], got["late"]
    # A token's added latency: from its yield to its frame on the coalescing
    # server, less what that takes without coalescing (the plain server's
    # median: the path every frame takes). Each token is timed from its own
    # yield, so a scheduling hiccup that makes one server's agent yield late
    # is not counted as held.
    path = statistics.median(plain["after_yield"])
    added = [took - path for took in merged["after_yield"]]
    # The figure before 2026-12-04 (kept beside it): against the plain
    # server's same token, which adds both agents' scheduling differences.
    across = [
        m - p
        for ms, ps in zip(merged["arrivals"], plain["arrivals"], strict=True)
        for m, p in zip(ms, ps, strict=True)
    ]
    # The events that carry the tokens: one per token without coalescing. The
    # stream's six others (the run's, the step's and the message's starts and
    # ends) are the same with or without it.
    fewer = plain["carriers"] / merged["carriers"]
    rows = [
        ("token events sent, plain / coalesced", f"{fewer:.2f}x", "≥ 10x", fewer >= 10),
        (
            "added latency per token, p99 (ms)",
            f"{pct(added, 0.99) * 1000:.1f}",
            f"≤ {args.window:g}",
            pct(added, 0.99) * 1000 <= args.window,
        ),
        (
            "bytes on the wire per token, plain / coalesced",
            f"{plain['bytes'] / merged['bytes']:.1f}x",
            "> 1x",
            plain["bytes"] > merged["bytes"],
        ),
        (
            "server CPU per token, plain / coalesced (µs)",
            f"{plain['cpu_per_token_us']:.1f} / {merged['cpu_per_token_us']:.1f}",
            "coalesced lower",
            merged["cpu_per_token_us"] < plain["cpu_per_token_us"],
        ),
    ]
    command = "python benches/coalesce.py " + " ".join(sys.argv[1:])
    print(f"Command: {command}")
    print(f"Load average (1 min) at the start: {load:.2f}")
    print(
        f"{args.streams} streams per server at once, {args.tokens} one-character tokens "
        f"at {args.rate:g}/s each, window {args.window:g} ms, cap 4096 bytes"
    )
    for name, side in (("plain", plain), ("coalesced", merged)):
        print(
            f"{name}: {side['events']} events ({side['carriers']} TEXT_MESSAGE_CONTENT), "
            f"{side['bytes']} bytes, worker CPU {side['cpu_per_token_us']:.1f} µs per token"
        )
    print(f"all events, plain / coalesced: {plain['events'] / merged['events']:.2f}x")
    sizes = ", ".join(f"{size}: {n}" for size, n in sorted(merged["sizes"].items()))
    print(f"coalesced: tokens per TEXT_MESSAGE_CONTENT (tokens: events): {sizes}")
    for name, runs in (("plain", plain), ("coalesced", merged)):
        lags = [lag for run in runs["arrivals"] for lag in run]
        print(
            f"{name}: token lag behind its schedule (ms): p50 "
            f"{statistics.median(lags) * 1000:.1f}, p99 {pct(lags, 0.99) * 1000:.1f}"
        )
    for name, side in (("plain", plain), ("coalesced", merged)):
        took = side["after_yield"]
        print(
            f"{name}: from a token's yield to its frame (ms): p50 "
            f"{statistics.median(took) * 1000:.2f}, p99 {pct(took, 0.99) * 1000:.1f}, "
            f"max {max(took) * 1000:.1f}"
        )
    print(
        "added latency (ms): p50 "
        f"{statistics.median(added) * 1000:.1f}, p99 {pct(added, 0.99) * 1000:.1f}, "
        f"max {max(added) * 1000:.1f}"
    )
    print(
        "against the plain server's same token (ms; both agents' scheduling too): p50 "
        f"{statistics.median(across) * 1000:.1f}, p99 {pct(across, 0.99) * 1000:.1f}, "
        f"max {max(across) * 1000:.1f}"
    )
    if holds:
        over = sum(wait > args.window / 1000 for wait in holds)
        print(
            f"coalesced: holds the window sent: {len(holds)}, their first delta's wait in "
            f"the server (ms): p50 {statistics.median(holds) * 1000:.1f}, p99 "
            f"{pct(holds, 0.99) * 1000:.1f}, max {max(holds) * 1000:.1f}; "
            f"past the deadline: {over}"
        )
    if late:
        p50, p90, p99 = (pct(late, q) * 1000 for q in (0.5, 0.9, 0.99))
        print(
            "a 50 ms timer's lateness in the client meanwhile (ms): "
            f"p50 {p50:.1f}, p90 {p90:.1f}, p99 {p99:.1f}"
        )
    print("| figure | value | target | result |\n|---|---|---|---|")
    for label, value, target, ok in rows:
        print(f"| {label} | {value} | {target} | {'PASS' if ok else 'FAIL'} |")
    if args.json:
        table = [
            {"figure": f"coalescing: {label}", "value": value, "target": target, "pass": ok}
            for label, value, target, ok in rows
        ]
        args.json.write_text(json.dumps({"command": command, "load": load, "rows": table}))
    return 0 if all(row[3] for row in rows) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--window", type=float, default=50.0)
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--json", type=Path)
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
