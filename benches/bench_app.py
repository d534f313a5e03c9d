"""This package's side of the server benchmark (benches/server.py).

The same agent as ``benches/peer_app.py``: ``forwardedProps.deltas`` text deltas
(default 100), ``forwardedProps.interval`` seconds apart (default 0).

``BENCH_SERVER=app`` (the default when ``agui_bridge.App`` exists) serves it
through ``agui_bridge.App`` on a memory store. ``BENCH_SERVER=minimal`` serves it
through a minimal RSGI handler: ``map_run_input``, one transformer per run,
``encode`` per crumb and one ``send_bytes`` per crumb, no store, no keepalive.
Run: ``granian --interface rsgi benches.bench_app:app``.
"""

from __future__ import annotations

import asyncio
import os

import agui_bridge
import orjson
from agui_bridge import crumbs, map_run_input

DELTA = "token "
SSE_HEADERS = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
]


def _props(forwarded_props) -> tuple[int, float]:
    props = forwarded_props if isinstance(forwarded_props, dict) else {}
    return int(props.get("deltas", 100)), float(props.get("interval", 0))


async def bench_agent(ctx):
    deltas, interval = _props(ctx.forwarded_props)
    delta = crumbs.text_delta(DELTA)
    for _ in range(deltas):
        if interval:
            await asyncio.sleep(interval)
        yield delta


async def minimal_app(scope, proto):
    if scope.proto != "http":
        return
    if scope.method != "POST" or scope.path != "/ag-ui/run":
        proto.response_bytes(404, [("content-type", "application/json")], b'{"error":"no"}')
        return
    run_input = map_run_input(orjson.loads(await proto()))
    transformer = agui_bridge.create_agui_transformer(
        thread_id=run_input.thread_id, run_id=run_input.run_id
    )
    transport = proto.response_stream(200, SSE_HEADERS)
    encode = transformer.encode
    send = transport.send_bytes
    async for crumb in bench_agent(run_input):
        await send(encode(crumb))
    await send(transformer.finish_encoded())


def _app_class():
    try:
        from agui_bridge import App
    except ImportError:
        try:  # before the public export lands
            from agui_bridge.app import App
        except ImportError:
            return None
    return App


def _make_app():
    app_class = _app_class()
    mode = os.environ.get("BENCH_SERVER") or ("app" if app_class else "minimal")
    if mode == "minimal":
        return "minimal", minimal_app
    # BENCH_METRICS=1: Prometheus metrics on (benches/metrics.py compares).
    options = {"metrics": True} if os.environ.get("BENCH_METRICS") == "1" else {}
    bridge = app_class(store="memory://", **options)
    bridge.agent("bench", path="/ag-ui/run")(bench_agent)
    return "app", bridge


MODE, app = _make_app()
