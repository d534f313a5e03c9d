"""An agent that shows its work as AG-UI 1.0 activity messages (issue 20),
through the events dialect: ``granian tests.activity_apps:app``.

Each run snapshots a ``plan`` activity (the same id every run: a later run's
streams under a fresh id, the thread holding the first), patches it while its
answer streams, and ends with a ``progress-{runId}`` activity. A message that
starts with ``wait:`` holds the run, its answer open, until the test writes
``AGUI_TEST_MARKS/go-{threadId}``: a reader joins it there.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from agui_bridge import App

app = App(store=os.environ.get("AGUI_TEST_STORE", "memory://"), keepalive=0.2)


def _activity(message_id: str, activity_type: str, content: dict) -> dict:
    return {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": message_id,
        "activityType": activity_type,
        "content": content,
    }


def _delta(message_id: str, *patch: dict) -> dict:
    return {
        "type": "ACTIVITY_DELTA",
        "messageId": message_id,
        "activityType": "plan",
        "patch": list(patch),
    }


@app.agent("planner", dialect="events")
async def planner(ctx):
    yield _activity("plan", "plan", {"steps": ["read"], "done": 0})
    reply = ctx.new_id("reply")
    yield {"type": "TEXT_MESSAGE_START", "messageId": reply, "role": "assistant"}
    yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": reply, "delta": f"You said: {ctx.input}"}
    yield _delta("plan", {"op": "add", "path": "/steps/-", "value": "answer"})
    if ctx.input.startswith("wait:"):
        go = Path(os.environ["AGUI_TEST_MARKS"]) / f"go-{ctx.thread_id}"
        async with asyncio.timeout(60):
            while not go.exists():
                await asyncio.sleep(0.02)
    yield _delta("plan", {"op": "replace", "path": "/done", "value": 1})
    yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": reply, "delta": " (done)"}
    yield {"type": "TEXT_MESSAGE_END", "messageId": reply}
    yield _activity(f"progress-{ctx.run_id}", "progress", {"pct": 100})
