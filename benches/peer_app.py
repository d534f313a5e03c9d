"""The stack a user picks today: Starlette + uvicorn + ag-ui-protocol's EventEncoder.

One pydantic event model and one ``StreamingResponse`` chunk per event, as the
official server starter and the FastAPI integrations do. The request body is
a RunAgentInput; ``forwardedProps.deltas`` (default 100) is how many text deltas
the agent streams and ``forwardedProps.interval`` (seconds, default 0) the pause
between them. Run: ``uvicorn benches.peer_app:app``.
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
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

DELTA = "token "


async def agent(deltas: int, interval: float):
    """The agent: N text deltas, optionally paced."""
    for _ in range(deltas):
        if interval:
            await asyncio.sleep(interval)
        yield DELTA


async def run(request: Request) -> StreamingResponse:
    body = RunAgentInput.model_validate(await request.json())
    props = body.forwarded_props or {}
    deltas, interval = int(props.get("deltas", 100)), float(props.get("interval", 0))
    encoder = EventEncoder(accept=request.headers.get("accept"))

    async def events():
        message_id = f"{body.run_id}:m1"
        yield encoder.encode(RunStartedEvent(thread_id=body.thread_id, run_id=body.run_id))
        yield encoder.encode(TextMessageStartEvent(message_id=message_id, role="assistant"))
        async for delta in agent(deltas, interval):
            yield encoder.encode(TextMessageContentEvent(message_id=message_id, delta=delta))
        yield encoder.encode(TextMessageEndEvent(message_id=message_id))
        yield encoder.encode(RunFinishedEvent(thread_id=body.thread_id, run_id=body.run_id))

    return StreamingResponse(
        events(),
        media_type=encoder.get_content_type(),
        headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
    )


app = Starlette(routes=[Route("/ag-ui/run", run, methods=["POST"])])
