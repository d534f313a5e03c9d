"""The app of benches/redis_runs.py: ``BENCH_RUNS`` (memory:// or redis://…).

``forwardedProps``: ``deltas`` text deltas, ``burst`` of them per loop tick,
``interval`` seconds between ticks; with ``stamp`` each delta is the wall
clock in ns when the agent yielded it (the cross-node lag's start).
"""

from __future__ import annotations

import asyncio
import os
import time

from agui_bridge import crumbs
from agui_bridge.app import App

app = App(store="memory://", runs=os.environ.get("BENCH_RUNS", "memory://"))


@app.agent("bench", path="/ag-ui/run")
async def bench(ctx):
    props = ctx.forwarded_props if isinstance(ctx.forwarded_props, dict) else {}
    deltas = int(props.get("deltas", 100))
    burst = int(props.get("burst", 0))
    interval = float(props.get("interval", 0))
    stamp = bool(props.get("stamp"))
    delta = crumbs.text_delta("token ")
    for i in range(deltas):
        if burst and i % burst == 0:
            await asyncio.sleep(interval)
        yield crumbs.text_delta(f"{time.time_ns()} ") if stamp else delta
