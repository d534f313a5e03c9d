"""The app behind the playground's browser tests (tests/test_playground.py):
the demo's agent, as ``agui-bridge demo`` serves it, and a gated one.

``gated`` streams a few words, then waits until the file
``$AGUI_PLAYGROUND_GATES/<threadId>`` exists before it streams the rest: a
run that is live for exactly as long as a test needs, however loaded the
machine (no timing guess).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from agui_bridge import App
from agui_bridge import crumbs as c
from agui_bridge.demo import demo

GATES = Path(os.environ.get("AGUI_PLAYGROUND_GATES", "."))

app = App(store=os.environ.get("AGUI_DEMO_STORE", "memory://"), playground=True)
app.agent("demo")(demo)


@app.agent("gated")
async def gated(ctx):
    yield c.step_start("waiting")
    for word in ("Streaming", " until", " the", " gate", " opens"):
        yield c.text_delta(word)
    gate = GATES / ctx.thread_id
    while not await asyncio.to_thread(gate.exists):
        await asyncio.sleep(0.05)
    yield c.step_end("waiting")
    yield c.loop("iteration:end", "gate", iteration=1, gate="open")
    for word in (".", " The", " gate", " opened."):
        yield c.text_delta(word)


@app.agent("thinker")
async def thinker(ctx):
    """Reasoning before the answer (contract section 8): shown collapsed."""
    for word in ("Weighing", " the", " question."):
        yield c.reasoning_delta(word)
    yield c.text_delta(f"Answer to {ctx.input}.")
