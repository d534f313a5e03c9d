"""A stop that lands after a run's task is made but before its first step:
cancelled then, a task never runs its code, so the run would never end (its
log, its lease: the POST never answered and the thread stayed busy for good).
The run is told to stop as it starts instead (``Run._cancel``).

The window is one loop iteration; each test scans the first few iterations
after the request, so it fails wherever the window falls, and never hangs.
"""

from __future__ import annotations

import asyncio

import httpx
from agui_bridge import App
from agui_bridge import crumbs as c
from agui_bridge import gate as gate_module

TIMEOUT = 3.0


def _body(thread_id: str, run_id: str) -> dict:
    return {
        "threadId": thread_id,
        "runId": run_id,
        "messages": [{"id": f"u-{run_id}", "role": "user", "content": "hi"}],
    }


async def test_a_cancel_during_the_runs_start_ends_the_run():
    app = App(store="memory://")

    @app.agent("echo")
    async def echo(ctx):
        yield c.text_delta(f"you said {ctx.input}")

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=10) as http:
        wedged = []
        for ticks in range(6):
            thread_id = f"cancel-early-{ticks}"
            post = asyncio.ensure_future(http.post("/agui/echo", json=_body(thread_id, "r1")))
            for _ in range(ticks):
                await asyncio.sleep(0)
            cancel = await http.post(f"/threads/{thread_id}/runs/r1/cancel")
            assert cancel.status_code in (202, 404, 409), cancel.text
            done, _ = await asyncio.wait([post], timeout=TIMEOUT)
            if not done:
                post.cancel()
                again = await http.post("/agui/echo", json=_body(thread_id, "r2"))
                wedged.append(
                    (ticks, cancel.status_code, cancel.text, again.status_code, again.text)
                )
        # Was (at one tick, here 2): (2, '..."status":"cancelled"}', 409,
        # run_active): the cancelled POST never answered, every later run refused.
        assert wedged == []


async def test_two_interrupt_runs_sent_together_both_end(monkeypatch):
    monkeypatch.setenv("AGUI_DEMO_DELAY", "0")
    from tests.agent_protocol_apps import app

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=10) as http:
        wedged = []
        body = {
            "assistant_id": "slow",
            "input": {"messages": ["go 3"]},
            "multitask_strategy": "interrupt",
        }
        for ticks in range(6):
            thread_id = (await http.post("/threads", json={})).json()["thread_id"]
            first = asyncio.ensure_future(http.post(f"/threads/{thread_id}/runs/wait", json=body))
            for _ in range(ticks):
                await asyncio.sleep(0)
            second = asyncio.ensure_future(http.post(f"/threads/{thread_id}/runs/wait", json=body))
            _, pending = await asyncio.wait([first, second], timeout=TIMEOUT)
            for task in pending:
                task.cancel()
            status = (await http.get(f"/threads/{thread_id}")).json()["status"]
            if pending or status == "busy":
                wedged.append((ticks, len(pending), status))
        # Was [(1, 2, 'busy')]: neither /runs/wait answered, the thread busy for good.
        assert wedged == []


async def test_a_log_failure_during_the_turn_save_stops_the_run(monkeypatch):
    """The shared log's sink failing (lease taken over, Redis unreachable: what
    ``RedisSink.failed`` calls) while the user's turn is stored, before the run
    has a task: the run ends so as it starts (the agent ran on, its frames
    dropped by the ended sink)."""
    app = App(store="memory://")
    called = []

    @app.agent("echo")
    async def echo(ctx):
        called.append(ctx.run_id)
        yield c.text_delta("hi")

    saving = asyncio.Event()
    go = asyncio.Event()
    real_save = gate_module.save

    async def slow_save(*args, **kwargs):
        saving.set()
        await go.wait()
        return await real_save(*args, **kwargs)

    monkeypatch.setattr(gate_module, "save", slow_save)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=10) as http:
        user = {"id": "u1", "role": "user", "content": "x"}
        body = {"threadId": "lf", "runId": "r1", "messages": [user]}
        post = asyncio.ensure_future(http.post("/agui/echo", json=body))
        await asyncio.wait_for(saving.wait(), 3)
        run = app.gate.run_of("lf")
        assert run is not None and run.task is None
        run.log_failed(True)  # what RedisSink.failed does: the lease was taken over
        go.set()
        await asyncio.wait_for(post, 5)
        # The lease was lost: the agent must not run (nothing of it may be stored).
        assert called == [], "the agent ran after its log refused the run"
