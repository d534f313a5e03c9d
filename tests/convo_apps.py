"""Apps for the conversation features (issue 20): capabilities, pending
interrupts on reload, stop then type. ``granian tests.convo_apps:app``."""

from __future__ import annotations

import asyncio

from agui_bridge import App, crumbs

TOKENS = {"Bearer reader": {"actions": ["read"]}, "Bearer nobody": {"actions": []}}


def authenticate(request):
    auth = request.headers.get("authorization")
    if auth == "Bearer runner":
        return {"user": "runner"}
    return TOKENS.get(auth)


def make_app(**options) -> App:
    app = App(store="memory://", authenticate=authenticate, keepalive=0.2, **options)

    @app.agent("plain")
    async def plain(ctx):
        yield crumbs.text_delta(f"You said: {ctx.input}")
        yield crumbs.run_end()

    @app.agent(
        "custom",
        capabilities={
            "identity": {"description": "answers in verse"},
            "multimodal": {"input": {"image": True}},
            "custom": {"poetry": True},
        },
    )
    async def custom(ctx):
        yield crumbs.text_delta("a verse")
        yield crumbs.run_end()

    @app.agent("slow")
    async def slow(ctx):
        """A partial answer, then nothing for a minute (a stopped client leaves meanwhile)."""
        yield crumbs.text_delta(f"partial answer to {ctx.input}")
        for _ in range(600):
            await asyncio.sleep(0.1)
        yield crumbs.text_delta(" and the rest")
        yield crumbs.run_end()

    @app.agent("halting")
    async def halting(ctx):
        """Two pieces of an answer at once, then nothing for a minute (a page stops
        after the first one)."""
        yield crumbs.text_delta("partial ")
        yield crumbs.text_delta("answer")
        for _ in range(600):
            await asyncio.sleep(0.1)
        yield crumbs.run_end()

    return app


app = make_app()
