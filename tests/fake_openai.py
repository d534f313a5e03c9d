"""A scripted OpenAI-compatible chat completions server (ASGI), for the adapter tests.

It streams chunks in the documented format (``data: {chat.completion.chunk}``
frames, tool calls with the id and name on the first piece only and the
arguments split, a usage chunk, ``data: [DONE]``). What it answers is chosen
by the conversation it is sent:

- the last message is a tool result → it answers from the results;
- else the newest user message's words pick the script (see ``_script``).

``GET /requests`` returns the bodies it received (newest last), so tests can
check what the adapter sent; ``DELETE /requests`` clears them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

REQUESTS: list[dict] = []
_ids = itertools.count(1)
DELAY = float(os.environ.get("FAKE_OPENAI_DELAY", "0"))


def _chunk(delta: dict | None = None, finish: str | None = None, usage: dict | None = None):
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "fake-model",
        "choices": []
        if delta is None
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def _call_id() -> str:
    return f"call_{os.getpid()}_{next(_ids)}"


def text(words: str, finish: str = "stop") -> list:
    pieces = [_chunk({"role": "assistant", "content": ""})]
    parts = words.split(" ")
    pieces += [_chunk({"content": w if i == 0 else " " + w}) for i, w in enumerate(parts)]
    pieces.append(_chunk({}, finish))
    return pieces


def calls(*specs: tuple[str, dict], interleave: bool = False, lead: str = "") -> list:
    """Tool calls: id and name on the first piece, the arguments in 3-byte pieces."""
    pieces = [_chunk({"role": "assistant", "content": None})]
    if lead:
        pieces += [_chunk({"content": lead})]
    streams = []
    for index, (name, arguments) in enumerate(specs):
        encoded = json.dumps(arguments)
        first = {
            "index": index,
            "id": _call_id(),
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        rest = [
            {"index": index, "function": {"arguments": encoded[i : i + 3]}}
            for i in range(0, len(encoded), 3)
        ]
        streams.append([first, *rest])
    if interleave:
        order = [p for group in itertools.zip_longest(*streams) for p in group if p]
    else:
        order = [p for stream in streams for p in stream]
    pieces += [_chunk({"tool_calls": [p]}) for p in order]
    pieces.append(_chunk({}, "tool_calls"))
    return pieces


def whole(*specs: tuple[str, dict], index: int | None = 0) -> list:
    """Parallel calls each in one piece under the same ``index`` (Gemini's
    OpenAI-compatible endpoint), or with none (``index=None``)."""
    pieces = [_chunk({"role": "assistant", "content": None})]
    for name, arguments in specs:
        call = {"id": _call_id(), "type": "function"}
        call["function"] = {"name": name, "arguments": json.dumps(arguments)}
        if index is not None:
            call["index"] = index
        pieces.append(_chunk({"tool_calls": [call]}))
    pieces.append(_chunk({}, "tool_calls"))
    return pieces


def deliberate() -> list:
    """DeepSeek's thinking mode: reasoning, then a tool call."""
    call = {"index": 0, "id": _call_id(), "type": "function"}
    call["function"] = {"name": "add", "arguments": '{"a": 1, "b": 2}'}
    return [
        _chunk({"role": "assistant", "content": None, "reasoning_content": "Need to"}),
        _chunk({"content": None, "reasoning_content": " sum."}),
        _chunk({"tool_calls": [call]}),
        _chunk({}, "tool_calls"),
    ]


def reasoned(field: str, thought: str, answer: str) -> list:
    """Reasoning pieces under ``field`` (servers spell it two ways), then the answer."""
    pieces = [_chunk({"role": "assistant", "content": None, field: ""})]
    words = thought.split(" ")
    pieces += [
        _chunk({"content": None, field: w if i == 0 else " " + w}) for i, w in enumerate(words)
    ]
    pieces += [_chunk({"content": answer})]
    pieces.append(_chunk({}, "stop"))
    return pieces


def _script(messages: list[dict]):
    last = messages[-1]
    if last["role"] == "tool":
        results = [m["content"] for m in messages if m["role"] == "tool"]
        user = [m for m in messages if m["role"] == "user"][-1]["content"]
        if "loop" in user:
            return calls(("add", {"a": 1, "b": 1}))
        return text("Results: " + " | ".join(results[-2:]))
    words = last["content"] if isinstance(last["content"], str) else ""
    if "add" in words:
        return calls(("add", {"a": 2, "b": 3}), lead="Adding.")
    if "calculate" in words:
        return calls(("calculate", {"expression": "6 * 7"}), lead="Calculating.")
    if "parallel" in words:
        return calls(("add", {"a": 1, "b": 2}), ("divide", {"a": 1, "b": 0}), interleave=True)
    if "city" in words:
        return calls(("pick_city", {"options": ["Oslo", "Lima"]}), lead="Which city?")
    if "mixed" in words:
        return calls(("add", {"a": 4, "b": 4}), ("pick_city", {"options": ["Rome"]}))
    if "twins" in words:
        return whole(("add", {"a": 1, "b": 2}), ("add", {"a": 10, "b": 20}))
    if "unindexed" in words:
        return whole(("add", {"a": 1, "b": 2}), ("add", {"a": 10, "b": 20}), index=None)
    if "deliberate" in words:
        return deliberate()
    if "ghost" in words:
        return calls(("no_such_tool", {}))
    if "loop" in words:
        return calls(("add", {"a": 1, "b": 1}))
    if "think" in words:
        return reasoned("reasoning_content", "Let me see.", "Four.")
    if "ponder" in words:
        return reasoned("reasoning", "Hmm.", "Done.")
    if "long" in words:
        return text("This answer is cut", finish="length")
    if "filter" in words:
        return text("Something", finish="content_filter")
    if "midway" in words:
        return [*text("Half an answer")[:-1], {"error": {"message": "overloaded mid-stream"}}]
    if "unsaid" in words:
        # A server that never says why it stopped (some proxies): the usage and
        # [DONE] still end the stream.
        return text("All of it")[:-1]
    if "metered" in words:
        # Usage on every chunk (vLLM's continuous usage stats), then cut partway.
        usage = {"prompt_tokens": 11, "completion_tokens": 1, "total_tokens": 12}
        pieces = text("Half an answer")[:-1]
        return ("cutoff", [{**piece, "usage": usage} for piece in pieces])
    if "cutoff" in words:
        # The connection closed cleanly partway: no finish_reason, no [DONE].
        return ("cutoff", text("Half an answer")[:-1])
    if "boom" in words:
        return 500
    if "stall" in words:
        return "stall"
    seen = sum(1 for m in messages if m["role"] in ("user", "assistant", "tool"))
    return text(f"Hello! I see {seen} messages; you said {words}")


async def completions(request: Request):
    body = await request.json()
    REQUESTS.append(body)
    script = _script(body["messages"])
    if script == 500:
        return JSONResponse({"error": {"message": "the fake is down", "type": "server"}}, 500)
    include_usage = (body.get("stream_options") or {}).get("include_usage")

    async def frames():
        if isinstance(script, tuple):
            for piece in script[1]:
                yield f"data: {json.dumps(piece)}\n\n"
            return
        if script == "stall":
            yield f"data: {json.dumps(text('Wait')[0])}\n\n"
            await asyncio.sleep(3600)
        for piece in script:
            if DELAY:
                await asyncio.sleep(DELAY)
            yield f"data: {json.dumps(piece)}\n\n"
        if include_usage:
            usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
            yield f"data: {json.dumps(_chunk(usage=usage))}\n\n"
        yield "data: [DONE]\n\n"

    return StreamingResponse(frames(), media_type="text/event-stream")


async def requests_log(request: Request):
    if request.method == "DELETE":
        REQUESTS.clear()
        return Response(status_code=204)
    return JSONResponse(REQUESTS)


app = Starlette(
    routes=[
        Route("/v1/chat/completions", completions, methods=["POST"]),
        Route("/requests", requests_log, methods=["GET", "DELETE"]),
    ]
)
