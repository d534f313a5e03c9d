"""A search that the store cannot answer alone: ``POST /threads/search`` on an
app with an ``authorize_thread`` guard that few threads pass.

    python benches/guarded_search.py [--threads 20000]

One ``agui_bridge.App`` on the memory store in this process (ASGI, no
sockets), ``--threads`` threads of one message, a guard passing one thread
in 1,000; the best of three searches for a page of 100 (all that pass). The
search reads the store chunk after chunk and filters here
(``agent_protocol/threads.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from agui_bridge import crumbs as c  # noqa: E402
from agui_bridge.app import App  # noqa: E402


async def main(threads: int) -> None:
    app = App(store="memory://")

    @app.agent("guarded", authorize_thread=lambda identity, thread_id: thread_id.endswith("000"))
    async def guarded(ctx):
        yield c.text_delta("x")

    for n in range(threads):
        message = {"id": f"m{n}", "role": "user", "content": "x"}
        await app.store.save(f"t{n:06}", "guarded", [message], {}, [])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            page = await http.post("/threads/search", json={"limit": 100})
            best = min(best, time.perf_counter() - start)
    await app.aclose()
    found = len(page.json())
    print(f"{threads:,} threads, {found} pass the guard: {best * 1e3:.0f} ms a search (best of 3)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=20_000)
    asyncio.run(main(parser.parse_args().threads))
