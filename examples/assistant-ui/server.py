"""The assistant-ui example's page and the demo agent on one origin.

    cd examples/assistant-ui && npm ci && npm run build
    granian --interface asgi --port 8000 server:web   # then open http://localhost:8000/

``/api`` is ``agui_bridge.demo:app`` (the agent at ``/api/ag-ui/run``, threads
at ``/api/threads/...``); everything else is the built page (``dist/``).
Set ``AGUI_DEMO_STORE`` as for ``agui-bridge demo``.
"""

from __future__ import annotations

from pathlib import Path

from agui_bridge.demo import app as demo
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

DIST = Path(__file__).resolve().parent / "dist"

web = Starlette(
    routes=[
        Mount("/api", app=demo),
        Mount("/", app=StaticFiles(directory=DIST, html=True)),
    ]
)
