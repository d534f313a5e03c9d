"""The two sides of ``benches/fanout.py``: one run, many readers.

The agent of both: waits ``forwardedProps.delay`` seconds (the readers join
meanwhile), then streams ``forwardedProps.deltas`` text deltas as fast as it can.

- ``ours``: ``agui_bridge.App`` (memory store, defaults): the POST starts the run;
  readers ``GET /threads/{t}/runs/{r}/events`` with ``Last-Event-ID: 0``.
- ``peer``: Starlette, the way Python servers add viewers by hand: one
  ``asyncio.Queue`` per reader, every event a pydantic model that each reader
  encodes with the SDK's ``EventEncoder``; same routes.
"""

from __future__ import annotations

import asyncio

from ag_ui.core import (
    RunAgentInput,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)
from ag_ui.encoder import EventEncoder
from agui_bridge import App, crumbs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

DELTA = "token "
HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def _props(props) -> tuple[int, float]:
    props = props if isinstance(props, dict) else {}
    return int(props.get("deltas", 2000)), float(props.get("delay", 0))


# -- ours ----------------------------------------------------------------------

ours = App(store="memory://")


@ours.agent("fan", path="/ag-ui/run")
async def fan(ctx):
    deltas, delay = _props(ctx.forwarded_props)
    await asyncio.sleep(delay)
    delta = crumbs.text_delta(DELTA)
    for i in range(deltas):
        yield delta
        if i % 256 == 255:
            await asyncio.sleep(0)


# -- peer ----------------------------------------------------------------------

RUNS: dict[str, dict] = {}
_END = object()


async def _produce(run: dict, body: RunAgentInput, deltas: int, delay: float) -> None:
    def publish(event) -> None:
        run["events"].append(event)
        for queue in run["queues"]:
            queue.put_nowait(event)

    message_id = f"{body.run_id}:m1"
    publish(RunStartedEvent(thread_id=body.thread_id, run_id=body.run_id))
    await asyncio.sleep(delay)
    publish(TextMessageStartEvent(message_id=message_id, role="assistant"))
    for i in range(deltas):
        publish(TextMessageContentEvent(message_id=message_id, delta=DELTA))
        if i % 256 == 255:
            await asyncio.sleep(0)
    publish(TextMessageEndEvent(message_id=message_id))
    publish(RunFinishedEvent(thread_id=body.thread_id, run_id=body.run_id))
    publish(_END)


def _reader(run: dict, request: Request) -> StreamingResponse:
    queue: asyncio.Queue = asyncio.Queue()
    for event in run["events"]:  # what happened before it joined
        queue.put_nowait(event)
    run["queues"].append(queue)
    encoder = EventEncoder(accept=request.headers.get("accept"))

    async def events():
        try:
            while True:
                event = await queue.get()
                if event is _END:
                    return
                yield encoder.encode(event)
        finally:
            run["queues"].remove(queue)

    return StreamingResponse(events(), media_type="text/event-stream", headers=HEADERS)


async def peer_run(request: Request) -> StreamingResponse:
    body = RunAgentInput.model_validate(await request.json())
    deltas, delay = _props(body.forwarded_props)
    run = {"events": [], "queues": []}
    RUNS[body.run_id] = run
    response = _reader(run, request)
    asyncio.get_running_loop().create_task(_produce(run, body, deltas, delay))
    return response


async def peer_events(request: Request) -> Response:
    run = RUNS.get(request.path_params["run"])
    if run is None:
        return Response(status_code=404)
    return _reader(run, request)


peer = Starlette(
    routes=[
        Route("/ag-ui/run", peer_run, methods=["POST"]),
        Route("/threads/{thread}/runs/{run}/events", peer_events),
    ]
)


# -- floor ---------------------------------------------------------------------


async def floor(scope, receive, send):
    """granian's own floor for a reconnect: any GET gets one SSE frame, nothing of ours."""
    if scope["type"] != "http":
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
        }
    )
    await send({"type": "http.response.body", "body": b'id: 1\ndata: {"type":"RUN_STARTED"}\n\n'})
