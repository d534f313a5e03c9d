"""Agents for the coalescing test (tests/test_coalesce_interop.py): ``granian
--factory tests.coalesce_apps:make_app``, coalescing from ``COALESCE_MS`` (off when unset)."""

from __future__ import annotations

import asyncio
import os

from agui_bridge import FLUSH, App, Coalesce, crumbs


async def tokens(ctx):
    """Many one-character deltas, a streamed call, a flush asked for, a second message."""
    for at, char in enumerate("Thinking about it, token by token: café 東京 🎉. " * 4):
        yield crumbs.text_delta(char)
        if at % 16 == 0:
            await asyncio.sleep(0.001)
    yield crumbs.tool_input_start("call-1", "search")
    for piece in ['{"q', 'uery"', ': "re', "venue", '", "n": ', "10}"]:
        yield crumbs.tool_input_delta("call-1", piece)
    yield crumbs.tool_input_end("call-1")
    yield crumbs.tool_result("call-1", {"rows": 3})
    for word in ("Found ", "three ", "rows"):
        yield crumbs.text_delta(word)
    yield FLUSH
    await asyncio.sleep(0.01)
    for word in (". ", "Done", "."):
        yield crumbs.text_delta(word)
    yield crumbs.run_end()


async def events(ctx):
    """The same through the events dialect, two messages interleaved with a call."""
    yield {"type": "TEXT_MESSAGE_START", "messageId": "a", "role": "assistant"}
    for char in "first message, one character at a time":
        yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a", "delta": char}
    yield {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"}
    for piece in ['{"a"', ": 1", "}"]:
        yield {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": piece}
    yield {"type": "TOOL_CALL_END", "toolCallId": "c"}
    yield {"type": "TEXT_MESSAGE_END", "messageId": "a"}
    yield {"type": "TEXT_MESSAGE_START", "messageId": "b", "role": "assistant"}
    for char in "second":
        yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "b", "delta": char}
    yield {"type": "TEXT_MESSAGE_END", "messageId": "b"}


def make_app():
    window = os.environ.get("COALESCE_MS")
    app = App(store="memory://", coalesce=Coalesce(float(window), 64) if window else None)
    app.agent("tokens")(tokens)
    app.agent("events", dialect="events")(events)
    # Per agent: off whatever the app says.
    app.agent("plain", coalesce=False)(tokens)
    return app
