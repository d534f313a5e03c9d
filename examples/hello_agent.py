"""The smallest agui-bridge server: one agent, threads in SQLite under ./.agui/.

    agui-bridge serve examples.hello_agent:app --port 8000
    curl -N localhost:8000/ag-ui/run -H 'content-type: application/json' \\
      -d '{"threadId":"t1","messages":[{"id":"m1","role":"user","content":"hi"}]}'

Point CopilotKit's ``HttpAgent`` (or ``@ag-ui/client``) at
``http://localhost:8000/ag-ui/run``; the agent is also at ``/agui/hello``.
"""

from __future__ import annotations

import asyncio

from agui_bridge import crumbs
from agui_bridge.app import App

app = App()  # store="sqlite:///.agui/threads.sqlite"


@app.agent("hello")
async def hello(ctx):
    """Answers the user's words, one word at a time, and remembers the thread."""
    earlier = sum(1 for m in ctx.history if m["role"] == "user")
    reply = f"Hello! You said {ctx.input!r}; I have seen {earlier} earlier turns here."
    for index, word in enumerate(reply.split(" ")):
        yield crumbs.text_delta(word if index == 0 else " " + word)
        await asyncio.sleep(0.02)
