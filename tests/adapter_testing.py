"""What the in-process adapter tests share: a client on an App with one adapter
agent, a run through it (every stream passes ag-ui-validate), and readers of
the events."""

from __future__ import annotations

import contextlib
import time

import httpx
from ag_ui_validate.pytest_plugin import assert_valid_agui
from agui_bridge.app import App

from tests.ingress_apps import parse_sse

PICK_CITY = {
    "name": "pick_city",
    "description": "Ask the user to pick a city",
    "parameters": {"type": "object", "properties": {"options": {"type": "array"}}},
}


@contextlib.asynccontextmanager
async def app_client(register, *args, **kwargs):
    """An httpx client on a fresh in-memory App that ``register(app, ...)`` set up."""
    app = App(store="memory://")
    register(app, *args, **kwargs)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=20) as http:
        http.app = app
        yield http
    await app.aclose()


def thread(name: str) -> str:
    return f"{name}-{time.monotonic_ns()}"


async def run_on(http, path: str, body) -> list[dict]:
    response = await http.post(path, json=body)
    assert response.status_code == 200, response.text
    events, _ = parse_sse(response.text)
    assert_valid_agui(events)
    return events


def of(events, kind) -> list[dict]:
    return [e for e in events if e["type"] == kind]


def said(events) -> str:
    return "".join(e["delta"] for e in of(events, "TEXT_MESSAGE_CONTENT"))


async def state_of(http, tid) -> dict:
    return (await http.get(f"/threads/{tid}/state")).json()
