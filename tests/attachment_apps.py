"""The App of the attachment interop tests (tests/test_attachment_interop.py):
an agent that answers with what it was given (the turn's text and the kinds
of its media parts), on the memory store."""

from __future__ import annotations

from agui_bridge import crumbs as c
from agui_bridge.app import App

app = App(store="memory://")


@app.agent("parts", path="/parts")
async def parts(ctx):
    kinds = ",".join(f"{p['type']}/{p['source']['type']}" for p in ctx.parts)
    yield c.text_delta(f"text={ctx.input!r} parts={kinds}")


# The same agent on an App whose parts may carry 1,000 bytes at most.
small = App(store="memory://", max_part_bytes=1000, body_limit=1 << 20)
small.agent("parts", path="/parts")(parts)
