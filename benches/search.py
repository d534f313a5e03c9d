"""Thread search against the number of threads (issue 24 item 3).

    python benches/search.py                      # the figures in benches/RESULTS.md
    python benches/search.py --threads 1000       # a smoke run
    python benches/search.py --postgres URL       # also PostgreSQL (an empty database)
    python benches/search.py --stores sqlite      # one store

One ``agui_bridge.App`` in this process, driven through its ASGI interface (no
sockets). The store is filled with ``--threads`` threads (two messages each,
ten owners, a metadata key with seven values, a tenth of them interrupted),
then ``--runs`` runs go through the App so their logs are retained (what made
every search walk every log before). Timed: ``POST /threads/search`` with no
filter, with the caller's owner (``authenticate`` gives an ``id``), a status,
a metadata filter, and an offset near the end (median and p95 of
``--repeats``, request to end of body). Then runs alone versus runs while
four tasks search back to back (median run time, side by side), and
beside four tasks reading one thread back to back (a request that is no
search, for comparison): a search must never slow runs. "Loop held" is the
longest the event loop went without a turn while one search ran beside a
probe task (median of the repeats): how long a search keeps runs waiting.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from agui_bridge import crumbs as c  # noqa: E402
from agui_bridge.app import App  # noqa: E402


def make_app(store) -> App:
    def authenticate(request):
        user = request.headers.get("x-user")
        return {"id": user} if user else {"anonymous": True}

    app = App(store=store, authenticate=authenticate)

    @app.agent("echo")
    async def echo(ctx):
        yield c.text_delta(f"you said {ctx.input}")

    return app


async def request(app, method: str, path: str, body: bytes, user: str | None) -> bytes:
    done = asyncio.Event()
    sent = [False]
    chunks: list[bytes] = []

    async def receive():
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            assert message["status"] == 200, message
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                done.set()

    headers = [(b"content-type", b"application/json")]
    if user is not None:
        headers.append((b"x-user", user.encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    await app(scope, receive, send)
    return b"".join(chunks)


async def fill(app: App, threads: int) -> None:
    store = app.store
    for n in range(threads):
        thread_id = f"t{n:06}"
        messages = [
            {"id": f"{thread_id}-u", "role": "user", "content": f"question {n}"},
            {"id": f"{thread_id}-a", "role": "assistant", "content": f"answer {n}"},
        ]
        interrupts = [{"id": f"i{n}", "reason": "approval"}] if n % 10 == 0 else []
        await store.create(thread_id, {"kind": n % 7}, owner=f"user{n % 10}")
        await store.save(thread_id, "echo", messages, {"n": n}, interrupts)


async def one_run(app: App, thread_id: str, n: int) -> float:
    body = orjson.dumps(
        {
            "threadId": thread_id,
            "runId": f"{thread_id}-r{n}",
            "messages": [{"id": f"{thread_id}-m{n}", "role": "user", "content": f"hi {n}"}],
        }
    )
    started = time.perf_counter()
    await request(app, "POST", "/ag-ui/run", body, None)
    return time.perf_counter() - started


async def timed_search(app: App, body: dict, user: str | None) -> float:
    raw = orjson.dumps(body)
    started = time.perf_counter()
    out = await request(app, "POST", "/threads/search", raw, user)
    elapsed = time.perf_counter() - started
    assert out.startswith(b"["), out[:200]
    return elapsed


async def held_loop(app: App, body: dict, user: str | None) -> float:
    """The longest gap between two turns of a probe task while one search runs."""
    done = False
    longest = 0.0

    async def probe():
        nonlocal longest
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0)
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now

    task = asyncio.create_task(probe())
    await asyncio.sleep(0)
    await timed_search(app, body, user)
    done = True
    await task
    return longest


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


async def bench_store(name: str, store, args) -> list[tuple]:
    app = make_app(store)
    rows = []
    try:
        started = time.perf_counter()
        await fill(app, args.threads)
        for n in range(args.runs):
            await one_run(app, f"r{n:05}", 0)
        print(f"{name}: filled in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        cases = [
            ("no filter, limit 10", {"limit": 10}, None),
            ("the caller's own (owner)", {"limit": 10}, "user3"),
            ("status interrupted", {"limit": 10, "status": "interrupted"}, None),
            ("metadata {kind: 3}", {"limit": 10, "metadata": {"kind": 3}}, None),
            (
                "owner + metadata + status",
                {"metadata": {"kind": 0}, "status": "interrupted"},
                "user0",
            ),
            ("offset near the end", {"limit": 10, "offset": args.threads - 10}, None),
            ("limit 100", {"limit": 100}, None),
        ]
        for label, body, user in cases:
            times = [await timed_search(app, body, user) for _ in range(args.repeats)]
            times.sort()
            p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
            held = [await held_loop(app, body, user) for _ in range(args.repeats)]
            rows.append((name, label, statistics.median(times), p95, statistics.median(held)))

        # Runs alone, then runs while four tasks search back to back, and, for
        # comparison, while four tasks read a thread back to back (a request
        # that is no search), alternating.
        alone, beside, reading = [], [], []
        stop = asyncio.Event()

        async def searching():
            while not stop.is_set():
                await timed_search(app, {"limit": 10, "status": "idle"}, "user1")
                await asyncio.sleep(0)  # the memory store's search may never wait on anything

        async def thread_reads():
            while not stop.is_set():
                await request(app, "GET", "/threads/t000001", b"", "user1")
                await asyncio.sleep(0)

        for round_ in range(args.rounds):
            alone += [await one_run(app, f"a{round_}", n) for n in range(args.run_samples)]
            for busy, times, tag in ((searching, beside, "b"), (thread_reads, reading, "g")):
                stop.clear()
                others = [asyncio.create_task(busy()) for _ in range(4)]
                times += [await one_run(app, f"{tag}{round_}", n) for n in range(args.run_samples)]
                stop.set()
                await asyncio.gather(*others)
        rows.append((name, "run alone (median)", statistics.median(alone), None, None))
        rows.append((name, "run beside 4 searchers", statistics.median(beside), None, None))
        rows.append((name, "run beside 4 thread readers", statistics.median(reading), None, None))
    finally:
        await app.aclose()
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=500, help="runs whose logs are retained")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--run-samples", type=int, default=30)
    parser.add_argument("--postgres", default=None, help="an empty database's URL")
    parser.add_argument("--stores", default="sqlite,memory", help="of sqlite, memory")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        stores = [
            ("SQLite", f"sqlite:///{directory}/threads.sqlite"),
            ("memory", "memory://"),
        ]
        stores = [(n, s) for n, s in stores if n.lower() in args.stores.split(",")]
        if args.postgres:
            stores.append(("PostgreSQL", args.postgres))
        for name, store in stores:
            rows += await bench_store(name, store, args)
    print(
        f"{args.threads:,} threads, {args.runs} retained runs; python {platform.python_version()},"
        f" {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    print("| store | search | median | p95 | loop held |")
    print("|---|---|---|---|---|")
    for name, label, median, p95, held in rows:
        p95_ms = ms(p95) if p95 is not None else ""
        held_ms = ms(held) if held is not None else ""
        print(f"| {name} | {label} | {ms(median)} | {p95_ms} | {held_ms} |")


if __name__ == "__main__":
    asyncio.run(main())
