"""The assistant-ui example's page and the demo agent on one origin.

    cd examples/assistant-ui && npm ci && npm run build
    granian --interface asgi --port 8000 server:web   # then open http://localhost:8000/

``/api`` serves the demo's agent (``agui_bridge.demo``; at ``/api/ag-ui/run``,
threads at ``/api/threads/...``) on an App of the page's own; everything else
is the built page (``dist/``). Set ``AGUI_DEMO_STORE`` as for ``agui-bridge demo``.
"""

from __future__ import annotations

import os
from pathlib import Path

from agui_bridge import App
from agui_bridge.demo import demo as demo_agent
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

DIST = Path(__file__).resolve().parent / "dist"

# assistant-ui resends the whole branch the page shows with every run, so a
# message sent alone under a new id (Edit on the first message) is the
# conversation started over: clients_resend makes it a branch from the
# thread's start instead of an append (docs/branches.md).
api = App(
    store=os.environ.get("AGUI_DEMO_STORE", "sqlite:///.agui/threads.sqlite"),
    clients_resend=True,
)
api.agent("demo")(demo_agent)

web = Starlette(
    routes=[
        Mount("/api", app=api),
        Mount("/", app=StaticFiles(directory=DIST, html=True)),
    ]
)
