"""An agui-bridge App mounted in a Starlette app, with an ``on_event`` logger.

    uvicorn examples.starlette_mount:web --port 8000
    # the agent is at http://localhost:8000/agents/ag-ui/run

``app.on_event`` sees every AG-UI event of every run (its own transformer per
run), e.g. to log, meter or forward them; ``info`` names the run.
A ``chunks`` agent (the Dawn-style dialect) sits beside a ``crumbs`` one.
"""

from __future__ import annotations

import logging

from agui_bridge import crumbs
from agui_bridge.app import App
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

log = logging.getLogger("agui.events")

app = App(store="memory://")


@app.on_event
def log_event(event, info):
    log.info("%s %s %s", info.thread_id, info.run_id, event["type"])


@app.agent("assistant")
async def assistant(ctx):
    yield crumbs.text_delta(f"You said: {ctx.input}")


@app.agent("planner", dialect="chunks")
async def planner(ctx):
    yield {"type": "token", "content": "Planning... "}
    # ctx.new_id: an id no message, tool call or interrupt of the thread holds.
    call = ctx.new_id("search")
    yield {"type": "tool_call", "id": call, "name": "search", "input": {"q": ctx.input}}
    yield {"type": "tool_result", "id": call, "output": {"hits": []}}
    yield {"type": "plan_update", "plan": ["search", "answer"]}
    yield {"type": "done", "output": {"answer": 42}}


async def health(request):
    return JSONResponse({"ok": True})


web = Starlette(routes=[Route("/health", health), Mount("/agents", app=app)])
