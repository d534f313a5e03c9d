"""AG-UI 1.0 agents with subagents, events dialect (``tests.subagent_apps:app``).

``nested``: the parent says something, delegates to a researcher (``s1``),
which runs a reader (``s2``, a tool call and text inside) and a checker
(``s3``, which fails), then the parent answers and leaves one more subagent
(``s4``) open for the run's end to close. Inner events carry the
``subagentRunId`` a 1.0 producer tags them with. ``held``: a subagent open
while the run waits to be cancelled; ``counted``: a subagent that ends, then
token usage (tests/test_reader_version.py). On a memory store; AGUI_TEST_STORE
and AGUI_TEST_RUNS name others (two nodes).
"""

from __future__ import annotations

import asyncio
import os

from agui_bridge.app import App

app = App(
    store=os.environ.get("AGUI_TEST_STORE", "memory://"),
    runs=os.environ.get("AGUI_TEST_RUNS", "memory://"),
)


def _text(message_id: str, delta: str, subagent: str | None = None) -> list[dict]:
    tag = {"subagentRunId": subagent} if subagent else {}
    return [
        {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant", **tag},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": delta, **tag},
        {"type": "TEXT_MESSAGE_END", "messageId": message_id, **tag},
    ]


@app.agent("nested", dialect="events")
async def nested(ctx):
    asking = ctx.new_id("asking")
    for event in _text(asking, "asking the team. "):
        yield event
    yield {
        "type": "SUBAGENT_STARTED",
        "subagentRunId": "s1",
        "name": "researcher",
        "description": "finds sources",
        "parentMessageId": asking,
    }
    for event in _text(ctx.new_id("searching"), "searching. ", "s1"):
        yield event
    yield {
        "type": "SUBAGENT_STARTED",
        "subagentRunId": "s2",
        "name": "reader",
        "parentSubagentRunId": "s1",
    }
    call = ctx.new_id("call")
    tag = {"subagentRunId": "s2"}
    yield {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "read", **tag}
    yield {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": '{"page": 1}', **tag}
    yield {"type": "TOOL_CALL_END", "toolCallId": call, **tag}
    yield {"type": "TOOL_CALL_RESULT", "messageId": "x", "toolCallId": call, "content": "a page"}
    for event in _text(ctx.new_id("read"), "read it. ", "s2"):
        yield event
    yield {"type": "SUBAGENT_FINISHED", "subagentRunId": "s2", "result": {"pages": 1}}
    yield {
        "type": "SUBAGENT_STARTED",
        "subagentRunId": "s3",
        "name": "checker",
        "parentSubagentRunId": "s1",
    }
    yield {"type": "SUBAGENT_ERROR", "subagentRunId": "s3", "message": "no second source"}
    yield {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1", "outcome": {"type": "success"}}
    for event in _text(ctx.new_id("answer"), "the answer is 42."):
        yield event
    yield {"type": "SUBAGENT_STARTED", "subagentRunId": "s4", "name": "left open"}


@app.agent("held", dialect="events")
async def held(ctx):
    """A subagent left open while the run waits, until the test cancels the run."""
    asking = ctx.new_id("asking")
    for event in _text(asking, "asking. "):
        yield event
    yield {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "researcher"}
    for event in _text(ctx.new_id("searching"), "searching. ", "s1"):
        yield event
    for _ in range(1200):  # a minute at most: the test cancels it
        await asyncio.sleep(0.05)
    yield {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1"}


@app.agent("counted", dialect="events")
async def counted(ctx):
    """A subagent that ends, then the run ends with the token usage it reports."""
    yield {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "researcher"}
    for event in _text(ctx.new_id("found"), "found it. ", "s1"):
        yield event
    yield {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1", "outcome": {"type": "success"}}
    for event in _text(ctx.new_id("answer"), "42."):
        yield event
    usage = {"provider": "p", "model": "m", "inputTokens": 3, "outputTokens": 2}
    yield {"type": "RUN_FINISHED", "threadId": ctx.thread_id, "runId": ctx.run_id, "usage": [usage]}


@app.agent("thinking", dialect="events")
async def thinking(ctx):
    """Reasoning left open while the run waits, until the test cancels the run."""
    reasoning = ctx.new_id("thought")
    yield {"type": "REASONING_START", "messageId": reasoning}
    yield {"type": "REASONING_MESSAGE_START", "messageId": reasoning, "role": "reasoning"}
    yield {"type": "REASONING_MESSAGE_CONTENT", "messageId": reasoning, "delta": "hmm. "}
    for _ in range(1200):  # a minute at most: the test cancels it
        await asyncio.sleep(0.05)
