"""Per-run cost on a thread holding attachments against a text-only thread (issue 20).

    python benches/attachments.py                       # the figures in benches/RESULTS.md
    python benches/attachments.py --quick               # smaller counts, for a smoke run
    python benches/attachments.py --postgres URL        # PostgreSQL too (a database to use)

One ``agui_bridge.App`` per store in this process, driven through its ASGI
interface (``threads.one_run``: no sockets), with an agent that answers one
text delta. Two threads are filled through the App's own route first: one of
``--images`` turns whose user message carries a 1 MiB PNG-sized image
(``data`` source) and a line of text, one of as many turns of text only. Then
runs on the two take turns (the same load for both), each posting only its
new user message (the history lives server-side); each figure is a median
from the request to the end of the response (the turn stored at start and
end, the lease claimed and released): the process's CPU time (every thread
of it: SQLite's writer and readers too), which the machine's other load does
not inflate, and the wall time. The ratios are images / text.

``--resend`` also times the case where the client sends the whole history
with every run (as ``@ag-ui/client``'s HttpAgent does): the body then carries
every image again (some 27 MB for 20 images, past the default body limit,
which admits one part of ``max_part_bytes``: that mode raises it to 64 MiB).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
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
sys.path.insert(0, str(ROOT / "benches"))

from agui_bridge import crumbs as c  # noqa: E402
from agui_bridge.app import App  # noqa: E402
from threads import one_run  # noqa: E402

MIB = 1 << 20


def make_app(store, body_limit: int | None = None) -> App:
    app = App(store=store, body_limit=body_limit)

    @app.agent("echo")
    async def echo(ctx):
        yield c.text_delta(f"you said {ctx.input} ({len(ctx.parts)} parts)")

    return app


def image_part(n: int) -> dict:
    raw = bytes([n % 256]) * 64 + os.urandom(MIB - 64)  # incompressible, distinct
    value = base64.b64encode(raw).decode()
    return {"type": "image", "source": {"type": "data", "value": value, "mimeType": "image/png"}}


async def post(app: App, thread_id: str, messages: list, run_id: str) -> float:
    body = orjson.dumps({"threadId": thread_id, "runId": run_id, "messages": messages})
    return await one_run(app, thread_id, 0, body=body)


async def fill(app: App, thread_id: str, turns: int, images: bool) -> list:
    """``turns`` runs on the thread through the route; the thread's messages."""
    for n in range(turns):
        content = [{"type": "text", "text": f"turn {n}"}]
        if images:
            content.append(image_part(n))
        message = {"id": f"{thread_id}-f{n}", "role": "user", "content": content}
        await post(app, thread_id, [message], f"{thread_id}-fill{n}")
    return (await app.store.load(thread_id)).messages


async def measure(spec: str, label: str, turns: int, runs: int, warmup: int, resend: bool) -> dict:
    app = make_app(spec, 64 << 20 if resend else None)
    held = {
        "text": await fill(app, "text", turns, images=False),
        "images": await fill(app, "images", turns, images=True),
    }
    times: dict[str, list[float]] = {"text": [], "images": []}
    cpu: dict[str, list[float]] = {"text": [], "images": []}
    for n in range(warmup + runs):
        for thread_id in ("text", "images"):
            new = {"id": f"{thread_id}-u{n}", "role": "user", "content": f"hi {n}"}
            history = held[thread_id] if resend else []
            started = time.process_time()
            took = await post(app, thread_id, [*history, new], f"{thread_id}-r{n}")
            if n >= warmup:
                times[thread_id].append(took)
                cpu[thread_id].append(time.process_time() - started)
            if resend:  # what the client holds now: the thread (read outside the timing)
                held[thread_id] = (await app.store.load(thread_id)).messages
    messages = len((await app.store.load("images")).messages)
    await app.aclose()
    out = {"store": label, "messages": messages}
    for name, series in (("wall", times), ("cpu", cpu)):
        text_ms = statistics.median(series["text"]) * 1000
        images_ms = statistics.median(series["images"]) * 1000
        out[name] = (text_ms, images_ms, images_ms / text_ms)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--images", type=int, default=20)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--resend", action="store_true", help="both modes")
    parser.add_argument("--resend-only", action="store_true")
    parser.add_argument("--postgres", help="a PostgreSQL URL (its database gets the tables)")
    args = parser.parse_args()
    runs = 30 if args.quick else args.runs
    warmup = 5 if args.quick else 20
    print(
        f"# per-run cost, a thread of {args.images} one-MiB images vs text only,"
        f" {runs} runs each, Python {platform.python_version()}, {os.cpu_count()} CPUs,"
        f" load {os.getloadavg()[0]:.1f}"
    )
    print("| store | history | CPU: text / images | ratio | wall: text / images | ratio |")
    print("|---|---|---|---|---|---|")
    modes = [True] if args.resend_only else [False, True] if args.resend else [False]
    with tempfile.TemporaryDirectory() as tmp:
        stores = [("sqlite", f"sqlite:///{tmp}/threads.sqlite"), ("memory", "memory://")]
        if args.postgres:
            stores.append(("postgres", args.postgres))
        for resend in modes:
            for label, spec in stores:
                if label == "sqlite":
                    spec = f"sqlite:///{tmp}/threads-{int(resend)}.sqlite"
                started = time.perf_counter()
                result = asyncio.run(measure(spec, label, args.images, runs, warmup, resend))
                cells = " | ".join(
                    f"{t:.2f} / {i:.2f} ms | {r:.2f}x"
                    for t, i, r in (result["cpu"], result["wall"])
                )
                print(
                    f"| {label} | {'resent by the client' if resend else 'server-side'}"
                    f" | {cells} | <!-- {result['messages']} messages,"
                    f" {time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.1f} -->"
                )
                if label == "postgres":
                    asyncio.run(_drop(spec))
    return 0


async def _drop(url: str) -> None:
    """The bench's rows out of the PostgreSQL database (a second mode starts clean)."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute(
            "TRUNCATE agui_threads, agui_messages, agui_leases, agui_blobs, agui_blob_refs"
        )
    finally:
        await conn.close()


if __name__ == "__main__":
    raise SystemExit(main())
