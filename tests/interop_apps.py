"""Scenario agents for the real-client interop suite (tests/test_interop.py).

Each agent is an async generator taking a run context (``thread_id``, ``run_id``,
``input``, ``history``, ``state``, ``resume``, ``tools``) and yielding crumbs,
or chunks for the ``chunks`` dialect, so the same functions run under
``agui_bridge.App`` and under ``minimal_app`` below.

``minimal_app`` is a tiny RSGI server with no store: it maps the request with
``map_run_input``, runs the agent named by the path (``/scenario/<name>``, or
``/agui/<name>`` for chunk agents) through the public transformer, and streams
each item's frames. It proves the transformer against the real client without
the ingress.
"""

from __future__ import annotations

import asyncio
import json
import os
from types import SimpleNamespace

import orjson
from agui_bridge import (
    RunInputError,
    create_agui_transformer,
    create_agui_translator,
    crumbs,
    map_run_input,
)

FILE = {"uri": "https://files.example/report.csv", "mimeType": "text/csv", "name": "report.csv"}


def _user_texts(ctx) -> list[str]:
    texts = [m.get("content") for m in ctx.history if m.get("role") == "user"]
    return [t for t in texts if isinstance(t, str)] + [ctx.input]


def _resume_entries(ctx) -> list[dict]:
    resume = getattr(ctx, "resume", None)
    if resume is None:
        return []
    entries = getattr(resume, "entries", None)
    if entries is None and isinstance(resume, list | tuple):
        entries = resume
    return [dict(e) for e in entries or ()]


async def text(ctx):
    for word in ("Hello", ", ", "world", "! ", "You said: ", ctx.input):
        yield crumbs.text_delta(word)
    yield crumbs.run_end()


async def tools(ctx):
    """A streamed tool call and a fallback (non-streamed) one, with results, in one turn."""
    yield crumbs.text_delta("Let me add and look that up.")
    yield crumbs.tool_input_start("call-add", "add")
    yield crumbs.tool_input_delta("call-add", '{"a": 2,')
    yield crumbs.tool_input_delta("call-add", ' "b": 3}')
    yield crumbs.tool_input_end("call-add")
    yield crumbs.tool_result("call-add", 5)
    yield crumbs.tool_call("call-lookup", "lookup", {"query": "granian", "limit": 2})
    yield crumbs.tool_result("call-lookup", {"hits": ["rsgi", "asgi"]})
    yield crumbs.text_delta("2 + 3 = 5.")
    yield crumbs.run_end()


async def tool_error(ctx):
    yield crumbs.text_delta("Trying the tool.")
    yield crumbs.tool_call("call-fail", "divide", {"a": 1, "b": 0})
    yield crumbs.tool_error("call-fail", "ZeroDivision", "division by zero")
    yield crumbs.text_delta("The tool failed.")
    yield crumbs.run_end()


async def structure(ctx):
    """Steps, a loop with two iterations, a subagent and a task."""
    yield crumbs.step_start("plan")
    yield crumbs.text_delta("Planning.")
    yield crumbs.step_end("plan")
    yield crumbs.loop("start", "L")
    for i in (1, 2):
        yield crumbs.loop("iteration:start", "L", iteration=i)
        yield crumbs.text_delta(f"Iteration {i}.")
        yield crumbs.loop("iteration:end", "L", iteration=i)
    yield crumbs.loop("end", "L")
    yield crumbs.subagent_start("researcher", "main")
    yield crumbs.text_delta("Researching.")
    yield crumbs.subagent_end("researcher", "main", output={"found": 3})
    yield crumbs.task_start("tr1", "summarise", model="m-1")
    yield crumbs.task_end(
        "tr1", "summarise", duration_ms=12, usage={"inputTokens": 5, "outputTokens": 7}
    )
    # Left open on purpose: the transformer must close it before RUN_FINISHED.
    yield crumbs.step_start("wrap-up")
    yield crumbs.text_delta("Done.")
    yield crumbs.run_end({"summary": "ok"})


async def file(ctx):
    yield crumbs.text_delta("Here is your file.")
    yield crumbs.file_generated(FILE["uri"], FILE["mimeType"], FILE["name"])
    yield crumbs.run_end(FILE)


async def agent_error(ctx):
    yield crumbs.text_delta("Starting to answer")
    yield crumbs.text_delta(" and then")
    yield crumbs.tool_input_start("call-open", "search")
    yield crumbs.tool_input_delta("call-open", '{"q": "x"}')
    yield crumbs.agent_error("the model provider went away", code="UPSTREAM")


async def state(ctx):
    yield crumbs.task_start("tr-state", "index")
    yield crumbs.text_delta("Indexing.")
    yield crumbs.task_end("tr-state", "index", status="completed")
    yield crumbs.run_end()


async def approval(ctx):
    """Human in the loop: suspend on the first run, act on the decision in the next."""
    entries = _resume_entries(ctx)
    if not entries:
        yield crumbs.text_delta("I need your approval to send the email.")
        yield crumbs.human_required(
            interrupt_id=f"approve-{ctx.thread_id}",
            reason="approval",
            message="Send the email?",
            response_schema={"type": "object", "properties": {"approved": {"type": "boolean"}}},
        )
        yield crumbs.run_end()
        return
    payload = entries[0].get("payload") or {}
    verdict = "approved" if payload.get("approved") else "rejected"
    yield crumbs.text_delta(f"Resumed {entries[0]['interruptId']}: {verdict}.")
    yield crumbs.run_end({"decision": verdict})


async def conversation(ctx):
    """Replies with every user turn it can see, so a reply proves the history reached it."""
    seen = _user_texts(ctx)
    yield crumbs.text_delta(f"turn {len(seen)}; I have seen: ")
    yield crumbs.text_delta(" | ".join(seen))
    yield crumbs.run_end()


async def frontend_tool(ctx):
    """A frontend tool (RunAgentInput.tools): call it, then answer from its result."""
    results = list(getattr(ctx, "tool_results", None) or [])
    if results:
        yield crumbs.text_delta(f"You picked {results[0]['content']}.")
        yield crumbs.run_end()
        return
    if "pick_city" not in [tool.get("name") for tool in ctx.tools]:
        yield crumbs.agent_error("the client offered no pick_city tool", code="NO_TOOL")
        return
    yield crumbs.text_delta("Which city?")
    yield crumbs.tool_call(f"pick-{ctx.run_id}", "pick_city", {"options": ["Oslo", "Lima"]})
    yield crumbs.run_end()


async def reasoning(ctx):
    """Reasoning (contract section 8) around text and a tool call, with a
    signature, and a model call whose usage a 1.0 client is told."""
    yield crumbs.task_start("model-1", "chat", model="m-1")
    yield crumbs.reasoning_delta("The user wants ")
    yield crumbs.reasoning_delta("a sum.")
    yield crumbs.reasoning_encrypted("sig-1")
    yield crumbs.text_delta("Adding.")
    yield crumbs.reasoning_delta("Call the tool.")
    yield crumbs.tool_call("call-sum", "add", {"a": 2, "b": 3})
    yield crumbs.reasoning_encrypted("tc-sig", entity_id="call-sum", subtype="tool-call")
    yield crumbs.tool_result("call-sum", 5)
    yield crumbs.reasoning_delta("Now answer.")
    yield crumbs.reasoning_end()
    yield crumbs.task_end(
        "model-1",
        "chat",
        model="m-1",
        usage={"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
    )
    yield crumbs.text_delta("It is 5.")
    yield crumbs.run_end()


async def chunk_reasoning(ctx):
    yield {"type": "reasoning", "content": "Thinking in chunks."}
    yield "Chunked "
    yield {"type": "reasoning", "content": "More."}
    yield {"type": "done", "output": "ok"}


async def chunks(ctx):
    """The chunks dialect (seed 001): tokens, a tool call and result, a plan, done."""
    for token in ("Chunked ", "answer ", "to: ", ctx.input):
        yield {"type": "token", "content": token}
    yield {"type": "tool_call", "id": "chunk-call", "name": "weather", "input": {"city": "Oslo"}}
    yield {"type": "tool_result", "id": "chunk-call", "output": {"tempC": 4}}
    yield {"type": "plan_update", "plan": ["look", "answer"]}
    yield "Bare string token."
    yield {"type": "done", "output": {"answer": 42}}


async def chunk_approval(ctx):
    """Chunks HITL, LangGraph style: CUSTOM on_interrupt, then forwardedProps.command.resume."""
    resume = getattr(ctx, "resume", None)
    decision = getattr(resume, "decision", None)
    if decision is not None:
        yield {"type": "token", "content": f"Resumed with {decision}."}
        yield {"type": "done", "output": {"decision": decision}}
        return
    yield {"type": "token", "content": "May I book it?"}
    yield {
        "type": "interrupt",
        "interruptId": f"perm-{ctx.thread_id}",
        "reason": "booking",
        "message": "Book it?",
    }


CRUMB_AGENTS = {
    "text": text,
    "tools": tools,
    "tool_error": tool_error,
    "structure": structure,
    "file": file,
    "agent_error": agent_error,
    "state": state,
    "approval": approval,
    "conversation": conversation,
    "reasoning": reasoning,
}
CHUNK_AGENTS = {
    "chunks": chunks,
    "chunk_approval": chunk_approval,
    "chunk_reasoning": chunk_reasoning,
}

# Hand-written broken streams (``/raw/<name>``): they prove the harness fails
# when the client rejects a stream or warns, so a passing scenario means something.
BROKEN = {
    "content_without_start": [
        {"type": "RUN_STARTED", "threadId": "{threadId}", "runId": "{runId}"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "nope", "delta": "orphan"},
        {"type": "RUN_FINISHED", "threadId": "{threadId}", "runId": "{runId}"},
    ],
    "unknown_field": [
        {"type": "RUN_STARTED", "threadId": "{threadId}", "runId": "{runId}"},
        {"type": "CUSTOM", "name": "x.y", "value": 1, "vendorExtra": True},
        {"type": "RUN_FINISHED", "threadId": "{threadId}", "runId": "{runId}"},
    ],
    "bad_patch": [
        {"type": "RUN_STARTED", "threadId": "{threadId}", "runId": "{runId}"},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/missing/key", "value": 1}]},
        {"type": "RUN_FINISHED", "threadId": "{threadId}", "runId": "{runId}"},
    ],
}


def _broken_frames(name: str, run_input) -> bytes:
    ids = {"{threadId}": run_input.thread_id, "{runId}": run_input.run_id}
    out = []
    for event in BROKEN[name]:
        event = {k: ids.get(v, v) if isinstance(v, str) else v for k, v in event.items()}
        out.append(b"data: " + orjson.dumps(event) + b"\n\n")
    return b"".join(out)


def _ctx(run_input) -> SimpleNamespace:
    return SimpleNamespace(
        thread_id=run_input.thread_id,
        run_id=run_input.run_id,
        input=run_input.input,
        history=run_input.history,
        state=run_input.state if isinstance(run_input.state, dict) else {},
        resume=run_input.resume,
        tools=run_input.tools,
        context=run_input.context,
        forwarded_props=run_input.forwarded_props,
    )


def _json(proto, status: int, body: dict) -> None:
    proto.response_bytes(status, [("content-type", "application/json")], orjson.dumps(body))


SSE_HEADERS = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
]


async def minimal_app(scope, proto):
    """RSGI: ``POST /scenario/<crumb agent>`` or ``POST /agui/<chunk agent>``."""
    if scope.proto != "http":
        return
    head, _, name = scope.path.strip("/").partition("/")
    # ``/cancelled/<crumb agent>``: the run is stopped after its third item (contract section 8).
    stop_after = 3 if head == "cancelled" else None
    if head in ("scenario", "cancelled") and name in CRUMB_AGENTS:
        agent, make = CRUMB_AGENTS[name], create_agui_transformer
    elif head == "agui" and name in CHUNK_AGENTS:
        agent, make = CHUNK_AGENTS[name], create_agui_translator
    elif head == "raw" and name in BROKEN:
        agent, make = None, None
    else:
        _json(proto, 404, {"error": f"no scenario at {scope.path}"})
        return
    if scope.method != "POST":
        _json(proto, 405, {"error": "POST only"})
        return
    try:
        run_input = map_run_input(json.loads(await proto()))
    except (ValueError, RunInputError) as error:
        _json(proto, 400, {"error": str(error)})
        return
    if agent is None:
        proto.response_bytes(200, SSE_HEADERS, _broken_frames(name, run_input))
        return
    ctx = _ctx(run_input)
    transformer = make(
        thread_id=ctx.thread_id,
        run_id=ctx.run_id,
        state=ctx.state,
        protocol_version=run_input.protocol_version,
    )
    transport = proto.response_stream(200, SSE_HEADERS)
    try:
        count = 0
        async for item in agent(ctx):
            frames = transformer.encode(item)
            if frames:
                await transport.send_bytes(frames)
            await asyncio.sleep(0)  # one frame batch per item, as a model stream would
            count += 1
            if count == stop_after:
                break
        tail = transformer.finish_encoded() if stop_after is None else transformer.cancel_encoded()
    except Exception as error:  # the stream already started: end it with RUN_ERROR
        tail = transformer.fail_encoded(error)
    if tail:
        await transport.send_bytes(tail)


# Under agui_bridge.App: the first agent takes the default path /ag-ui/run, every
# agent is also at /agui/{urlencoded id}. One id has a space, so the client's URL
# encoding and the ingress's decoding are on the path too.
APP_IDS = {name: name for name in CRUMB_AGENTS} | {"tool_error": "tool error"}


async def slow(ctx):
    """Silent for longer than the App's keepalive, so ``: ping`` comments go out mid-run."""
    yield crumbs.text_delta("Thinking")
    await asyncio.sleep(0.7)
    yield crumbs.text_delta(" done.")
    yield crumbs.run_end()


KEEPALIVE = 0.2  # seconds; the App default is 15
APP_ONLY = {"frontend_tool": frontend_tool, "slow": slow}


def make_app():
    """``granian --factory tests.interop_apps:make_app``; store from ``INTEROP_STORE``."""
    try:
        from agui_bridge import App
    except ImportError:  # before the public export lands
        from agui_bridge.app import App

    app = App(store=os.environ.get("INTEROP_STORE", "memory://"), keepalive=KEEPALIVE)
    for name, agent in CRUMB_AGENTS.items():
        app.agent(APP_IDS[name])(agent)
    for name, agent in APP_ONLY.items():
        app.agent(name)(agent)
    for name, agent in CHUNK_AGENTS.items():
        app.agent(name, dialect="chunks")(agent)
    return app


def make_asgi_app():
    """The same App mounted under ``/mounted`` in Starlette (the ASGI front end)."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    return Starlette(routes=[Mount("/mounted", app=make_app())])
