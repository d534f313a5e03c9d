"""Per-event overhead of each adapter over its framework's own streaming (issue 14).

``python benches/adapters.py [--tokens 2000] [--rounds 15]``

For each framework, one answer of ``--tokens`` streamed text pieces plus one
tool call whose arguments come in 4-byte pieces, consumed three ways in one
process, side by side (the three alternate round by round):

- ``framework``: the framework's own stream, iterated and dropped (the
  ``openai`` client's ``AsyncStream`` of chunks over an in-memory HTTP
  transport serving the documented SSE body; pydantic-ai's
  ``run_stream_events`` on a ``FunctionModel``; LangGraph's ``astream``
  with the modes the adapter uses on a fake chat model);
- ``adapter``: the adapter's agent function on the same answer, its items
  iterated and dropped;
- ``+ encode``: the adapter's items through its dialect's ``encode``
  (the SSE bytes the App writes).

``mapping alone``: the adapter's event-to-crumbs mapping run on the
framework's events collected beforehand (no framework, no I/O in the timed
loop): the adapter's own cost per event, the least noisy figure.

Per event = the median over rounds of (adapter time - framework time in that
round) / the framework's event count: what the adapter adds to each event the
framework already produces. No HTTP
server and no store are in the loop (the ingress has its own benchmarks).
Times are the process's CPU time (``time.process_time_ns``, all its threads),
not wall time: nothing here waits on I/O, and on a shared, loaded machine
wall time mostly measures the other processes. Median of ``--rounds``
rounds, garbage collector paused as ``timeit`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT)]

from agui_bridge import (  # noqa: E402
    IMPLEMENTATION,
    create_agui_repairer,
    create_agui_transformer,
)
from agui_bridge.context import RunContext  # noqa: E402

ARGS = json.dumps({"city": "Oslo", "days": 3, "units": "metric", "detail": "hourly"})


def words(n: int) -> list[str]:
    base = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "streams"]
    return [("" if i == 0 else " ") + base[i % len(base)] for i in range(n)]


def ctx(words_in: str = "go") -> RunContext:
    return RunContext("bench-thread", f"bench-{time.monotonic_ns()}", "bench", words_in)


# -- the three frameworks ------------------------------------------------------------------


def openai_case(tokens: int):
    import httpx2
    from agui_bridge.adapters.openai import _ModelCall, openai_agent
    from openai import AsyncOpenAI

    def chunk(delta=None, finish=None):
        choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
        return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [choice]}  # fmt: skip

    pieces = [chunk({"role": "assistant", "content": ""})]
    pieces += [chunk({"content": w}) for w in words(tokens)]
    first = {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "lookup", "arguments": ""}}  # fmt: skip
    pieces.append(chunk({"tool_calls": [first]}))
    pieces += [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGS[i : i + 4]}}]})
        for i in range(0, len(ARGS), 4)
    ]
    pieces.append(chunk({}, "tool_calls"))
    body = "".join(f"data: {json.dumps(p)}\n\n" for p in pieces) + "data: [DONE]\n\n"
    body = body.encode()

    def respond(request):
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(respond))
    client = AsyncOpenAI(base_url="http://bench/v1", api_key="k", http_client=http, max_retries=0)
    tool = {"name": "lookup", "description": "", "parameters": {"type": "object"}}

    async def framework():
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}], stream=True
        )
        count = 0
        async for _ in stream:
            count += 1
        return count

    agent = openai_agent(client, "m")

    def adapter():
        run = RunContext("bench-thread", "bench-run", "bench", "go", tools=[tool])
        return agent(run)

    async def collect():
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}], stream=True
        )
        return [chunk async for chunk in stream]

    def mapper():
        return _ModelCall(ctx(), 1)._chunk

    return framework, adapter, collect, mapper, "crumbs"


def pydantic_ai_case(tokens: int):
    from agui_bridge.adapters.pydantic_ai import _Stream, pydantic_ai_agent
    from pydantic_ai import Agent
    from pydantic_ai.messages import ToolReturnPart
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    text = words(tokens)

    async def stream(messages, info):
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            yield "done"
            return
        for word in text:
            yield word
        yield {0: DeltaToolCall(name="lookup", json_args="", tool_call_id="call_1")}
        for i in range(0, len(ARGS), 4):
            yield {0: DeltaToolCall(json_args=ARGS[i : i + 4])}

    agent = Agent(FunctionModel(stream_function=stream))

    @agent.tool_plain
    def lookup(city: str, days: int, units: str, detail: str) -> str:
        return "ok"

    async def framework():
        count = 0
        async with agent.run_stream_events("go") as events:
            async for _ in events:
                count += 1
        return count

    wrapped = pydantic_ai_agent(agent)

    async def collect():
        async with agent.run_stream_events("go") as events:
            return [event async for event in events]

    def mapper():
        return _Stream(set()).events

    return framework, lambda: wrapped(ctx()), collect, mapper, wrapped.agui_dialect


def langgraph_case(tokens: int):
    from typing import Annotated

    from agui_bridge.adapters.langgraph import _Stream, langgraph_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition
    from typing_extensions import TypedDict

    from tests.adapter_langgraph import ToolStreamingFake

    text = "".join(words(tokens))

    def lookup(city: str, days: int, units: str, detail: str) -> str:
        """Looks up."""
        return "ok"

    State = TypedDict("State", {"messages": Annotated[list, add_messages]})  # noqa: UP013

    async def agent(state):
        if state["messages"][-1].type == "tool":
            reply = AIMessage(content="done")
        else:
            call = {"id": f"call_{time.monotonic_ns()}", "name": "lookup", "args": json.loads(ARGS)}
            reply = AIMessage(content=text, tool_calls=[call])
        model = ToolStreamingFake(messages=iter([reply]))
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, ["tools", END])
    builder.add_edge("tools", "agent")
    graph = builder.compile(checkpointer=InMemorySaver())
    modes = ["messages", "updates", "values"]

    async def framework():
        count = 0
        config = {"configurable": {"thread_id": f"f-{time.monotonic_ns()}"}}
        async for _ in graph.astream({"messages": [HumanMessage("go")]}, config, stream_mode=modes):
            count += 1
        return count

    wrapped = langgraph_agent(graph)

    async def collect():
        config = {"configurable": {"thread_id": f"c-{time.monotonic_ns()}"}}
        stream = graph.astream({"messages": [HumanMessage("go")]}, config, stream_mode=modes)
        return [pair async for pair in stream]

    def mapper():
        stream = _Stream("messages")
        return lambda pair: stream.events(*pair)

    return framework, lambda: wrapped(ctx()), collect, mapper, wrapped.agui_dialect


# -- measuring ----------------------------------------------------------------------------


async def drain(agen) -> int:
    count = 0
    async for _ in agen:
        count += 1
    return count


async def encode_all(agen, dialect: str) -> int:
    # The pydantic-ai and LangGraph agents yield AG-UI events (the events dialect).
    create = create_agui_repairer if dialect == "events" else create_agui_transformer
    t = create(thread_id="bench-thread", run_id="bench-run")
    size = 0
    async for item in agen:
        size += len(t.encode(item))
    return size + len(t.finish_encoded())


async def timed(make) -> float:
    gc.disable()
    try:
        start = time.process_time_ns()
        await make()
        return (time.process_time_ns() - start) / 1e3
    finally:
        gc.enable()


def mapping_cost(items, mapper, rounds) -> float:
    """µs per framework event of the adapter's mapping alone, on collected events."""
    times = []
    gc.disable()
    try:
        for _ in range(rounds):
            mapped = mapper()
            start = time.process_time_ns()
            for item in items:
                mapped(item)
            times.append((time.process_time_ns() - start) / 1e3 / len(items))
    finally:
        gc.enable()
    return statistics.median(times)


async def measure(name, case, tokens, rounds) -> dict:
    framework, adapter, collect, mapper, dialect = case(tokens)
    mapping = mapping_cost(await collect(), mapper, rounds * 4)
    events = await framework()
    crumbs = await drain(adapter())
    for _ in range(2):  # warm up every path
        await framework()
        await drain(adapter())
        await encode_all(adapter(), dialect)
    base, wrapped, encoded = [], [], []
    for _ in range(rounds):
        base.append(await timed(framework))
        wrapped.append(await timed(lambda: drain(adapter())))
        encoded.append(await timed(lambda: encode_all(adapter(), dialect)))
    base_us, wrapped_us, encoded_us = (statistics.median(x) for x in (base, wrapped, encoded))
    # Paired by round, so drift from the shared machine's load cancels out.
    added = statistics.median(w - b for w, b in zip(wrapped, base, strict=True))
    added_encoded = statistics.median(e - b for e, b in zip(encoded, base, strict=True))
    return {
        "name": name,
        "events": events,
        "crumbs": crumbs,
        "framework_us": base_us,
        "adapter_us": wrapped_us,
        "encoded_us": encoded_us,
        "framework_per_event": base_us / events,
        "adapter_per_event": added / events,
        "encoded_per_event": added_encoded / events,
        "mapping_per_event": mapping,
    }


def report(rows, args) -> str:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"Date: {now}; Python {platform.python_version()}, build {IMPLEMENTATION};"
        f" {args.tokens} text pieces + 1 tool call per answer; median of {args.rounds} rounds.",
        "",
        "| framework | its events | framework µs/event | adapter adds µs/event"
        " | adapter + encode adds µs/event | adapter time / framework time"
        " | mapping alone µs/event |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['events']} | {r['framework_per_event']:.2f}"
            f" | {r['adapter_per_event']:.2f} | {r['encoded_per_event']:.2f}"
            f" | {r['adapter_us'] / r['framework_us']:.2f}x | {r['mapping_per_event']:.2f} |"
        )
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--only", choices=["openai", "pydantic_ai", "langgraph"])
    args = parser.parse_args()
    cases = {"openai": openai_case, "pydantic_ai": pydantic_ai_case, "langgraph": langgraph_case}
    rows = []
    for name, case in cases.items():
        if args.only in (None, name):
            rows.append(await measure(name, case, args.tokens, args.rounds))
    print(report(rows, args))


if __name__ == "__main__":
    asyncio.run(main())
