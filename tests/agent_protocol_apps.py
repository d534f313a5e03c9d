"""The app the Agent Protocol suites serve (``tests.agent_protocol_apps:app``).

Agents: ``demo`` (the demo agent, with AGUI_DEMO_DELAY=0: text, a calculator
tool call, an approval interrupt), ``slow`` (a tick every 50 ms until 60 ticks
or the word in ``ctx.input`` says fewer: what a cancel or a dropped stream
needs time for), ``fail`` (some text, then an exception) and ``signals``
(events dialect: a CUSTOM event and a state snapshot). With
``AGUI_TEST_AUTH=1`` the caller's ``x-user`` header is the identity, threads
are guarded by ``authorize_thread`` (a thread id starting with the user's name)
and ``x-actions`` lists the actions granted; the demo's ``authorize_stream``
refuses the user ``carl``. AGUI_TEST_STORE and AGUI_TEST_RUNS
name the thread store and the run logs (memory by default). AGUI_TEST_WEBHOOKS
lists the hosts webhooks may go to (over http, signed with
AGUI_TEST_WEBHOOK_SECRET, two retries 0.1 s apart, 2 s timeout) and turns
the metrics on. AGUI_TEST_LEASE_TTL sets ``lease_ttl`` (a killed node's runs
end ``run_lost`` that soon).
"""

from __future__ import annotations

import asyncio
import os

from agui_bridge import crumbs as c
from agui_bridge.app import App
from agui_bridge.demo import demo
from agui_bridge.webhooks import Webhooks

_auth = os.environ.get("AGUI_TEST_AUTH") == "1"


def _authenticate(request):
    user = request.headers.get("x-user")
    if not user:
        return None
    actions = request.headers.get("x-actions")
    return {"user": user, "actions": actions.split(",") if actions else ["*"]}


def _owns(identity, thread_id: str) -> bool:
    return thread_id.startswith(identity["user"] + "-")


_hooks = os.environ.get("AGUI_TEST_WEBHOOKS")
app = App(
    store=os.environ.get("AGUI_TEST_STORE", "memory://"),
    runs=os.environ.get("AGUI_TEST_RUNS", "memory://"),
    lease_ttl=float(os.environ.get("AGUI_TEST_LEASE_TTL", "10")),
    authenticate=_authenticate if _auth else None,
    webhooks=Webhooks(
        hosts=tuple(_hooks.split(",")),
        secret=os.environ.get("AGUI_TEST_WEBHOOK_SECRET"),
        http=True,
        retries=2,
        backoff=0.1,
        timeout=2.0,
    )
    if _hooks
    else None,
    metrics=bool(_hooks),
)
guard = _owns if _auth else None


def _may_watch(identity, thread_id: str, run_id: str) -> bool:
    return identity["user"] != "carl"  # carl may run the demo but not read its runs


app.agent("demo", authorize_thread=guard, authorize_stream=_may_watch if _auth else None)(demo)


@app.agent("slow", authorize_thread=guard)
async def slow(ctx):
    words = ctx.input.split()
    count = int(words[-1]) if words and words[-1].isdigit() else 60
    for n in range(count):
        yield c.text_delta(f"tick {n} ")
        await asyncio.sleep(0.05)


@app.agent("fail", authorize_thread=guard)
async def fail(ctx):
    yield c.text_delta("about to fail")
    raise RuntimeError("the agent broke")


@app.agent("signals", dialect="events", authorize_thread=guard)
async def signals(ctx):
    yield {"type": "CUSTOM", "name": "progress", "value": {"done": 1, "of": 2}}
    yield {"type": "STATE_SNAPSHOT", "snapshot": {**ctx.state, "phase": "half"}}
    yield {"type": "TEXT_MESSAGE_START", "messageId": ctx.new_id("reply"), "role": "assistant"}
    yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"{ctx.run_id}:reply", "delta": "ok"}
    yield {"type": "TEXT_MESSAGE_END", "messageId": f"{ctx.run_id}:reply"}
