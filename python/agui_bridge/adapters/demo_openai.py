"""``agui-bridge demo`` on a real model: OPENAI_MODEL and OPENAI_BASE_URL or OPENAI_API_KEY set.

The agent ``demo`` is ``openai_agent`` with the scripted demo's ``calculate``
as a Python tool; threads live where the scripted demo keeps them.
"""

from __future__ import annotations

import os

from openai import AsyncOpenAI

from ..app import App
from ..demo import calculate
from .openai import openai_agent

app = App(
    store=os.environ.get("AGUI_DEMO_STORE", "sqlite:///.agui/threads.sqlite"), playground=True
)
client = AsyncOpenAI(api_key=os.environ.get("OPENAI_API_KEY") or "unused")
app.agent("demo")(
    openai_agent(
        client,
        os.environ["OPENAI_MODEL"],
        tools=[calculate],
        system="You are a helpful assistant. Use the calculate tool for arithmetic.",
    )
)
