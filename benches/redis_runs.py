"""Run logs on Redis against memory run logs, and across two nodes.

    python benches/redis_runs.py [--deltas 10000] [--repeats 5]

Starts its own redis-server (tests/redis_server.py: loopback, no persistence)
and granian nodes serving benches/redis_app.py (RSGI, one worker each):

1. One stream of ``--deltas`` text deltas, POSTed to a node with memory run
   logs and to one with Redis run logs, alternately ``--repeats`` times: the
   median events/s of each (the whole response read by an httpx client).
2. Lag: a run whose deltas carry the wall clock at the agent's yield (10 per
   loop tick, 2 ms apart), read from event 1 by a GET on the run's node and
   (Redis) on node B at once: receive time minus yield time for each of
   ``--deltas`` events, p50/p99; the memory node's reader is the baseline.
3. Redis round trips of one run of ``--deltas`` deltas on an in-process node
   (its POST the only reader): every command the backend sends, a script
   call counting one (the appends, the node's XREADs, the retry lookup).
"""

from __future__ import annotations

import argparse
import asyncio
import os
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


async def lag(a: str, readers: dict[str, str], deltas: int) -> dict[str, list[float]]:
    """Yield on node ``a`` → received by a reader on each of ``readers``, side by side."""
    rid = f"lag-{time.monotonic_ns()}"
    lags: dict[str, list[float]] = {name: [] for name in readers}
    async with httpx.AsyncClient(timeout=120) as client:
        started = asyncio.Event()

        async def source():
            props = dict(deltas=deltas, burst=10, interval=0.002, stamp=True)
            async with client.stream("POST", a + "/ag-ui/run", json=body(rid, rid, **props)) as r:
                async for _ in r.aiter_raw():
                    started.set()

        async def reader(name: str, node: str):
            url = f"{node}/threads/{rid}/runs/{rid}/events"
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
                            lags[name].append((now - stamp) / 1e6)

        task = asyncio.create_task(source())
        await started.wait()
        await asyncio.gather(*(reader(name, node) for name, node in readers.items()))
        await task
    return lags


async def round_trips(deltas: int) -> tuple[int, dict]:
    """Redis round trips of one run on an in-process node (its POST the only reader):
    the backend counts every command it sends (a script call is one)."""
    from benches.redis_app import app

    before = dict(app.runs.calls)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://node") as client:
        rid = f"rt-{time.monotonic_ns()}"
        response = await client.post("/ag-ui/run", json=body(rid, rid, deltas=deltas))
        events = response.content.count(b"\n\n")
        await asyncio.sleep(0.3)  # the end marker's append
        calls = {k: v - before.get(k, 0) for k, v in app.runs.calls.items()}
    await app.aclose()
    return events, {k: v for k, v in calls.items() if v}


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
            lags = asyncio.run(lag(memory, {"memory logs, the same node": memory}, args.deltas))
            lags.update(
                asyncio.run(
                    lag(a, {"redis logs, the same node A": a, "redis logs, node B": b}, args.deltas)
                )
            )
        os.environ["BENCH_RUNS"] = server.url(0)
        events, calls = asyncio.run(round_trips(args.deltas))
    finally:
        server.stop()
    mem, red = rates["memory"][0], rates["redis"][0]
    print(f"one stream of {args.deltas} deltas, median of {args.repeats} (alternating):")
    print(f"  memory run logs: {mem:,.0f} events/s")
    print(f"  redis run logs:  {red:,.0f} events/s  ({red / mem:.0%} of memory)")
    for name, values in lags.items():
        print(
            f"lag, yield -> a reader ({name}), {len(values)} events: "
            f"p50 {pct(values, 0.5):.2f} ms, p99 {pct(values, 0.99):.2f} ms, "
            f"max {max(values):.2f} ms"
        )
    trips = sum(calls.values())
    print(
        f"redis round trips for one run of {events} events: {trips}"
        f" ({trips / (events / 1000):.2f} per 1,000 events): {calls}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
