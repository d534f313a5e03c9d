"""A quick run while large runs save (issue 24 item 14), lanes against store order.

N runs of 4 MiB each end together on one App with a SQLite store (their saves
queue at the store); a quick run is posted just after the first of them is
saved. Measured on the ASGI app in this process (no HTTP client between): the
quick run's first body byte, its RUN_FINISHED and the response's end (once its
save is done), from its POST. Two rows:
the saves in their lanes by size (``runs.saves``, what the App does) and in
the store's own order (the lanes made wide enough to hold every save at once,
i.e. what it did before). The attack run's figure, for scale: 200 runs of
4 MB, first byte 7.9 s, RUN_FINISHED 16.5 s.

    python benches/saves.py [--runs 50] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT)]

import orjson  # noqa: E402
from agui_bridge import crumbs as c  # noqa: E402
from agui_bridge.app import App  # noqa: E402
from agui_bridge.runs import saves  # noqa: E402

CHUNK = "x" * (64 * 1024)


def make_app(path: str) -> tuple[App, asyncio.Event, list]:
    app = App(store=f"sqlite:///{path}/threads.sqlite")
    gate = asyncio.Event()
    saved: list[str] = []

    @app.agent("bulk")
    async def bulk(ctx):
        for _ in range(64):  # 4 MiB
            yield c.text_delta(CHUNK)
        await gate.wait()

    @app.agent("quick")
    async def quick(ctx):
        yield c.text_delta("hi")

    @app.on_event
    def ended(event, info):
        if event["type"] == "RUN_FINISHED":
            saved.append(info.thread_id)

    return app, gate, saved


async def post(app: App, agent: str, thread_id: str) -> tuple[float, float, float]:
    """Seconds to the first body byte, to RUN_FINISHED and to the response's end."""
    body = orjson.dumps(
        {
            "threadId": thread_id,
            "runId": f"r-{thread_id}",
            "messages": [{"id": f"u-{thread_id}", "role": "user", "content": "go"}],
            "state": {},
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    )
    sent = [False]
    start = time.perf_counter()
    marks: dict[str, float] = {}
    tail = b""

    async def receive():
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # never disconnects

    async def send(message):
        nonlocal tail
        if message["type"] != "http.response.body":
            return
        data = message.get("body", b"")
        if data and "first" not in marks:
            marks["first"] = time.perf_counter() - start
        tail = (tail + data)[-4096:]
        if b'"RUN_FINISHED"' in tail and "finished" not in marks:
            marks["finished"] = time.perf_counter() - start

    scope = {
        "type": "http",
        "method": "POST",
        "path": f"/agui/{agent}",
        "headers": [(b"content-type", b"application/json")],
        "query_string": b"",
        "client": ("127.0.0.1", 1),
    }
    await app(scope, receive, send)
    return marks["first"], marks["finished"], time.perf_counter() - start


async def once(runs: int, lanes: bool) -> tuple[float, float, float]:
    wide = 10**9
    saves.SMALL_WIDTH = 4 if lanes else wide
    saves.LARGE_WIDTH = 1 if lanes else wide
    with tempfile.TemporaryDirectory() as path:
        app, gate, saved = make_app(path)
        large = [asyncio.create_task(post(app, "bulk", f"large-{i}")) for i in range(runs)]
        while sum(run is not None for run in app.gate.active.values()) < runs:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.5)
        gate.set()
        while not saved:
            await asyncio.sleep(0.001)
        quick = await post(app, "quick", "quick")
        await asyncio.gather(*large)
        await app.aclose()
    return quick


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    figures = {True: [], False: []}
    for _ in range(args.repeats):
        for lanes in (False, True):
            figures[lanes].append(asyncio.run(once(args.runs, lanes)))
    print(f"quick run while {args.runs} runs of 4 MiB save (SQLite), median of {args.repeats}:")
    print("| saves | first byte | RUN_FINISHED | response end (saved) |")
    print("|---|---|---|---|")
    for lanes, name in ((False, "store order (before)"), (True, "lanes by size")):
        first, finished, end = (statistics.median(f[k] for f in figures[lanes]) for k in range(3))
        times = " | ".join(f"{t * 1000:.0f} ms" for t in (first, finished, end))
        print(f"| {name} | {times} |")
    before = statistics.median(f[1] for f in figures[False])
    after = statistics.median(f[1] for f in figures[True])
    print(f"RUN_FINISHED: {before / after:.1f}x sooner with lanes")


if __name__ == "__main__":
    main()
