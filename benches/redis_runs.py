"""Run logs on Redis against memory run logs, and across two nodes.

    python benches/redis_runs.py [--deltas 10000] [--repeats 5]

Starts its own redis-server (tests/redis_server.py: loopback, no persistence)
and granian nodes serving benches/redis_app.py (RSGI, one worker each):

1. One stream of ``--deltas`` text deltas, POSTed to a node with memory run
   logs and to one with Redis run logs, alternately ``--repeats`` times: the
   median events/s of each (the whole response read by an httpx client).
2. Cross-node lag: a run on node A whose deltas carry the wall clock at the
   agent's yield (10 per loop tick, 2 ms apart), read on node B from event 1:
   receive time minus yield time for each of ``--deltas`` events, p50/p99.
3. Redis round trips of one run of ``--deltas`` deltas on a node alone (its
   POST the only reader): Redis ``INFO commandstats`` before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "python")]

from tests.redis_server import RedisServer  # noqa: E402
from tests.servers import serve  # noqa: E402

APP = "benches.redis_app:app"


def body(thread_id: str, run_id: str, **props) -> dict:
    return {
        "threadId": thread_id,
        "runId": run_id,
        "messages": [{"id": f"u-{run_id}", "role": "user", "content": "go"}],
        "tools": [],
        "context": [],
        "forwardedProps": props,
        "state": {},
    }


async def one_stream(client: httpx.AsyncClient, url: str, deltas: int) -> tuple[float, int]:
    rid = f"r-{time.monotonic_ns()}"
    started = time.perf_counter()
    events = 0
    async with client.stream("POST", url + "/ag-ui/run", json=body(rid, rid, deltas=deltas)) as r:
        async for chunk in r.aiter_raw():
            events += chunk.count(b"\n\n")
    return time.perf_counter() - started, events


async def throughput(urls: dict, deltas: int, repeats: int) -> dict:
    times: dict[str, list[float]] = {name: [] for name in urls}
    counts = {}
    async with httpx.AsyncClient(timeout=120) as client:
        for url in urls.values():  # warm-up
            await one_stream(client, url, 1000)
        for _ in range(repeats):
            for name, url in urls.items():
                seconds, events = await one_stream(client, url, deltas)
                times[name].append(seconds)
                counts[name] = events
    return {name: (counts[name] / statistics.median(t), t) for name, t in times.items()}


async def lag(a: str, b: str, deltas: int) -> list[float]:
    rid = f"lag-{time.monotonic_ns()}"
    lags: list[float] = []
    async with httpx.AsyncClient(timeout=120) as client:
        started = asyncio.Event()

        async def source():
            props = dict(deltas=deltas, burst=10, interval=0.002, stamp=True)
            async with client.stream("POST", a + "/ag-ui/run", json=body(rid, rid, **props)) as r:
                async for _ in r.aiter_raw():
                    started.set()

        task = asyncio.create_task(source())
        await started.wait()
        url = f"{b}/threads/{rid}/runs/{rid}/events"
        buffer = b""
        async with client.stream("GET", url, headers={"last-event-id": "0"}) as r:
            async for chunk in r.aiter_raw():
                now = time.time_ns()
                buffer += chunk
                *frames, buffer = buffer.split(b"\n\n")
                for frame in frames:
                    at = frame.find(b'"delta":"')
                    if at >= 0:
                        stamp = int(frame[at + 9 : frame.index(b" ", at + 9)])
                        lags.append((now - stamp) / 1e6)
        await task
    return lags


def commandstats(server: RedisServer) -> dict:
    import redis

    client = redis.Redis(port=server.port)
    try:
        return {k: v["calls"] for k, v in client.info("commandstats").items()}
    finally:
        client.close()


def round_trips(server: RedisServer, url: str, deltas: int) -> tuple[dict, int]:
    before = commandstats(server)
    rid = f"rt-{time.monotonic_ns()}"
    response = httpx.post(url + "/ag-ui/run", json=body(rid, rid, deltas=deltas), timeout=120)
    events = response.content.count(b"\n\n")
    time.sleep(0.3)  # the end marker and the reader's last XREAD
    after = commandstats(server)
    diff = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    diff.pop("cmdstat_info", None)
    return diff, events


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    server = RedisServer().start()
    try:
        redis_env = {"BENCH_RUNS": server.url(0)}
        with (
            serve(APP, env={"BENCH_RUNS": "memory://"}) as memory,
            serve(APP, env=redis_env) as a,
            serve(APP, env=redis_env) as b,
        ):
            rates = asyncio.run(
                throughput({"memory": memory, "redis": a}, args.deltas, args.repeats)
            )
            lags = asyncio.run(lag(a, b, args.deltas))
            trips, events = round_trips(server, a, args.deltas)
    finally:
        server.stop()
    mem, red = rates["memory"][0], rates["redis"][0]
    print(f"one stream of {args.deltas} deltas, median of {args.repeats} (alternating):")
    print(f"  memory run logs: {mem:,.0f} events/s")
    print(f"  redis run logs:  {red:,.0f} events/s  ({red / mem:.0%} of memory)")
    print(
        f"cross-node lag over {len(lags)} events: p50 {pct(lags, 0.5):.2f} ms, "
        f"p99 {pct(lags, 0.99):.2f} ms, max {max(lags):.2f} ms"
    )
    total = sum(trips.values())
    print(
        f"redis commands for one run of {events} events: {total} "
        f"({total / (events / 1000):.1f} per 1,000 events): {trips}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
