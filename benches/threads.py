"""Per-run cost against the length of the thread (issue 9 item 18).

    python benches/threads.py              # the figures in benches/RESULTS.md
    python benches/threads.py --quick      # smaller counts, for a smoke run

One ``agui_bridge.App`` in this process, driven through its ASGI interface
(no sockets: what is timed is the request handling, the store and the run),
with an agent that answers one text delta. Each run posts only its new user
message (the history lives server-side). A run on a new thread and a run on a
thread already holding ``--messages`` messages (4,000 by default) take turns,
so the two figures share the machine's load; each figure is the median wall
time from the request to the end of its response body (the turn stored, the
lease released). Stores: SQLite (a temporary file, synchronous=FULL) and
memory. The ratio is long / new.
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
    app = App(store=store)

    @app.agent("echo")
    async def echo(ctx):
        yield c.text_delta(f"you said {ctx.input}")

    return app


async def one_run(app: App, thread_id: str, n: int, body: bytes | None = None) -> float:
    """One run's wall time: ``body`` posted (default: the thread's n-th text message)."""
    body = body or orjson.dumps(
        {
            "threadId": thread_id,
            "runId": f"{thread_id}-r{n}",
            "messages": [{"id": f"{thread_id}-u{n}", "role": "user", "content": f"hi {n}"}],
        }
    )
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
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/ag-ui/run",
        "raw_path": b"/ag-ui/run",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }
    started = time.perf_counter()
    await app(scope, receive, send)
    took = time.perf_counter() - started
    if b"RUN_FINISHED" not in b"".join(chunks):
        raise RuntimeError(f"the run did not finish: {b''.join(chunks)[-300:]!r}")
    return took


async def fill(app: App, thread_id: str, count: int) -> None:
    """A thread of ``count`` messages (user/assistant pairs), stored directly."""
    batch = []
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        batch.append({"id": f"{thread_id}-m{i}", "role": role, "content": f"message {i} " * 8})
        if len(batch) == 500:
            await app.store.save(thread_id, "echo", batch, {}, [])
            batch = []
    if batch:
        await app.store.save(thread_id, "echo", batch, {}, [])


async def measure(store_kind: str, messages: int, runs: int, warmup: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        spec = f"sqlite:///{tmp}/threads.sqlite" if store_kind == "sqlite" else "memory://"
        app = make_app(spec)
        long_thread = "long"
        await fill(app, long_thread, messages)
        new_times: list[float] = []
        long_times: list[float] = []
        for n in range(warmup + runs):
            fresh = await one_run(app, f"new-{n}", n)
            long = await one_run(app, long_thread, n)
            if n >= warmup:
                new_times.append(fresh)
                long_times.append(long)
        held = len((await app.store.load(long_thread)).messages)
        await app.aclose()
    new_ms = statistics.median(new_times) * 1000
    long_ms = statistics.median(long_times) * 1000
    return {
        "store": store_kind,
        "new_ms": new_ms,
        "long_ms": long_ms,
        "ratio": long_ms / new_ms,
        "held_at_end": held,
        "runs": runs,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=4000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    runs = 40 if args.quick else args.runs
    warmup = 5 if args.quick else 20
    print(
        f"# per-run cost vs thread length: {args.messages} messages, {runs} runs each,"
        f" Python {platform.python_version()}, {os.cpu_count()} CPUs,"
        f" load {os.getloadavg()[0]:.1f}"
    )
    print("| store | new thread, median | thread of N messages, median | ratio |")
    print("|---|---|---|---|")
    for kind in ("sqlite", "memory"):
        result = asyncio.run(measure(kind, args.messages, runs, warmup))
        print(
            f"| {kind} | {result['new_ms']:.2f} ms | {result['long_ms']:.2f} ms"
            f" (N = {args.messages} to {result['held_at_end']}) | {result['ratio']:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
