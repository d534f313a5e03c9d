"""Apps for a Stop around interrupts (``tests/test_interrupt_stop.py``):
``granian tests.interrupt_stop_apps:app``."""

from __future__ import annotations

import asyncio

from agui_bridge import App, crumbs


def make_app() -> App:
    app = App(store="memory://", keepalive=0.2)

    @app.agent("approve")
    async def approve(ctx):
        """Asks; its resume streams slowly (a Stop lands in the middle)."""
        if ctx.resume is not None:
            for i in range(60):
                yield crumbs.text_delta(f"d{i} ")
                await asyncio.sleep(0.05)
            return
        yield crumbs.text_delta("Need approval.")
        yield crumbs.human_required(f"ok-{ctx.run_id}", reason="approve", message="ok?")

    @app.agent("ask_and_go_on")
    async def ask_and_go_on(ctx):
        """Asks, then goes on streaming (a Stop lands after the question)."""
        if ctx.resume is not None:
            yield crumbs.text_delta(f"You decided {ctx.resume.decision!r}")
            return
        yield crumbs.text_delta("Need approval.")
        yield crumbs.human_required(f"ok-{ctx.run_id}", reason="approve", message="ok?")
        for i in range(60):
            yield crumbs.text_delta(f"w{i} ")
            await asyncio.sleep(0.05)

    return app


app = make_app()
