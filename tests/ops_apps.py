"""Test apps for the ops suites (tests/test_ops_*.py); configured by environment.

OPS_STORE (default memory://), OPS_RUNS (default memory://), OPS_CORS (a
comma-separated list of origins), OPS_LIMITS (JSON: IdentityLimits' fields),
OPS_METRICS ("1": on), OPS_DRAIN (s). Callers authenticate with
``authorization: Bearer <name>`` (the identity is ``{"id": name}``) unless
OPS_OPEN is "1".

The "talk" agent (and "other", the same) answers each user message with a few words; a message
"slow N" streams N deltas half a second apart (a run that lasts); "ask"
suspends the run on an interrupt; "boom" fails with an exception.
"""

from __future__ import annotations

import asyncio
import os

import orjson
from agui_bridge import crumbs as c
from agui_bridge.app import App, Unauthorized
from agui_bridge.ops import IdentityLimits

_env = os.environ.get
SECRET_KEY = "sk-test-do-not-log-0123456789"


def authenticate(request):
    header = request.headers.get("authorization") or ""
    key = request.headers.get("x-api-key")
    if key is not None and key != SECRET_KEY:
        raise ValueError(f"bad api key {key}")  # the message quotes it: it must not be logged
    if not header.startswith("Bearer "):
        raise Unauthorized()
    return {"id": header[len("Bearer ") :]}


def make_app() -> App:
    cors = _env("OPS_CORS")
    limits = _env("OPS_LIMITS")
    app = App(
        store=_env("OPS_STORE", "memory://"),
        runs=_env("OPS_RUNS", "memory://"),
        authenticate=None if _env("OPS_OPEN") == "1" else authenticate,
        cors=cors.split(",") if cors else None,
        limits=IdentityLimits(**orjson.loads(limits)) if limits else None,
        metrics=_env("OPS_METRICS") == "1",
        drain_timeout=float(_env("OPS_DRAIN", "20")),
    )

    @app.agent("talk")
    async def talk(ctx):
        words = ctx.input.split()
        if words[:1] == ["slow"]:
            for n in range(int(words[1])):
                yield c.text_delta(f"{n} ")
                await asyncio.sleep(0.5)
            return
        if words[:1] == ["ask"]:
            if ctx.resume is not None:
                yield c.text_delta(f"you said {ctx.resume.decision}")
                return
            yield c.human_required(
                interrupt_id=ctx.run_id + ":q", reason="confirm", message="sure?"
            )
            return
        if words[:1] == ["boom"]:
            yield c.text_delta("about to fail")
            raise RuntimeError("boom")
        yield c.text_delta("you said: ")
        yield c.text_delta(str(len(words)) + " words")

    @app.agent("other")
    async def other(ctx):
        async for item in talk(ctx):
            yield item

    return app


app = make_app()
