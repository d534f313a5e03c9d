"""Apps for the adapter tests: agents built by agui_bridge.adapters, nothing by hand.

``make_app()`` (a granian ``--factory`` target) reads FAKE_OPENAI_URL (the base
URL of ``tests.fake_openai``, for the OpenAI agents) and ADAPTER_STORE.
"""

from __future__ import annotations

import os

from agui_bridge.app import App


def add(a: float, b: float) -> float:
    """Adds two numbers."""
    return a + b


def divide(a: float, b: float) -> float:
    """Divides a by b."""
    return a / b


def openai_client(base_url: str, timeout: float = 10.0):
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=base_url, api_key="test-key", max_retries=0, timeout=timeout)


def register_openai(app: App, base_url: str, agent_timeout: float = 10.0) -> None:
    from agui_bridge.adapters.openai import openai_agent

    client = openai_client(base_url + "/v1")
    agent = openai_agent(
        client, "fake-model", tools=[add, divide], max_steps=3, timeout=agent_timeout
    )
    app.agent("openai")(agent)


def make_app() -> App:
    app = App(store=os.environ.get("ADAPTER_STORE", "memory://"))
    base_url = os.environ.get("FAKE_OPENAI_URL")
    if base_url:
        register_openai(app, base_url)
    return app
