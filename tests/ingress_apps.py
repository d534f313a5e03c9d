"""Test apps for the ingress suites; configured by environment variables.

AGUI_TEST_STORE (default memory://), AGUI_TEST_KEEPALIVE (s),
AGUI_TEST_ON_DISCONNECT, AGUI_TEST_BODY_LIMIT, AGUI_TEST_BODY_TIMEOUT,
AGUI_TEST_EVENTS (a file: every on_event call is appended as a JSON line),
AGUI_TEST_MARKS (a directory: agents touch files there to show progress),
AGUI_TEST_LEASE_TTL (s), AGUI_TEST_DRAIN (s), AGUI_TEST_RUNS (default memory://).

What the "echo" agent (crumbs) does is chosen by the user's words.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import orjson
from agui_bridge import crumbs as c
from agui_bridge.app import App, Forbidden

_env = os.environ.get


def _int(name, default):
    value = _env(name)
    return default if value in (None, "") else (None if value == "none" else int(value))


def make_app(**overrides) -> App:
    options = dict(
        store=_env("AGUI_TEST_STORE", "memory://"),
        keepalive=float(_env("AGUI_TEST_KEEPALIVE", "15")),
        on_disconnect=_env("AGUI_TEST_ON_DISCONNECT", "continue"),
        body_limit=_int("AGUI_TEST_BODY_LIMIT", 1 << 20),
        body_timeout=float(_env("AGUI_TEST_BODY_TIMEOUT", "15")),
        lease_ttl=float(_env("AGUI_TEST_LEASE_TTL", "10")),
        drain_timeout=float(_env("AGUI_TEST_DRAIN", "20")),
        runs=_env("AGUI_TEST_RUNS", "memory://"),
    )
    for name, kind in (
        ("send_timeout", float),
        ("max_log_bytes", int),
        ("run_retention", float),
        ("max_total_bytes", int),
    ):
        value = _env(f"AGUI_TEST_{name.upper()}")
        if value:
            options[name] = kind(value)
    options.update(overrides)
    app = App(**options)
    _agents(app)
    events_file = _env("AGUI_TEST_EVENTS")
    if events_file:

        def log_event(event, info):
            with open(events_file, "ab") as out:
                out.write(
                    orjson.dumps({"run": info.run_id, "thread": info.thread_id, "event": event})
                    + b"\n"
                )

        app.on_event(log_event)
    return app


def _mark(name: str) -> None:
    marks = _env("AGUI_TEST_MARKS")
    if marks:
        Path(marks, name).write_text("1")


def _agents(app: App) -> None:
    @app.agent("echo")
    async def echo(ctx):
        words = ctx.input.split()
        first = words[0] if words else ""
        if ctx.resume is not None:
            yield c.text_delta(f"decision {ctx.resume.decision!r} for {ctx.resume.interrupt['id']}")
            return
        if ctx.tool_results:
            for result in ctx.tool_results:
                yield c.text_delta(f"result {result['content']} for {result['toolCallId']}")
            return
        if first == "slow":
            # "slow N": N deltas 50 ms apart; marks "started" and, at the end, "ended".
            _mark(f"started-{ctx.run_id}")
            for i in range(int(words[1]) if len(words) > 1 else 20):
                yield c.text_delta(f"w{i} ")
                await asyncio.sleep(0.05)
            _mark(f"ended-{ctx.run_id}")
            return
        if first == "quiet":
            await asyncio.sleep(float(words[1]) if len(words) > 1 else 1.0)
            yield c.text_delta("after the quiet")
            return
        if first == "tool":
            yield c.text_delta("let me add")
            yield c.tool_input_start("call-1", "add")
            yield c.tool_input_delta("call-1", '{"a": 1,')
            yield c.tool_input_delta("call-1", ' "b": 2}')
            yield c.tool_input_end("call-1")
            yield c.tool_result("call-1", {"sum": 3})
            yield c.text_delta("the sum is 3")
            return
        if first == "frontend":
            names = [tool["name"] for tool in ctx.tools]
            yield c.text_delta(f"tools: {','.join(names)}")
            if names:
                yield c.tool_call(f"fe-{ctx.run_id}", names[0], {"q": "x"})
            return
        if first == "approve":
            yield c.text_delta("I need approval")
            yield c.human_required(
                interrupt_id=f"ask-{ctx.run_id}", reason="approval", message="ok?"
            )
            return
        if first == "fail":
            yield c.text_delta("complete part")
            yield c.tool_call("t-done", "noop", {})
            yield c.text_delta("half written")
            raise RuntimeError("boom")
        if first == "badcrumb":
            yield c.text_delta("before")
            yield {"type": "text:delta", "delta": 5}
            return
        if first == "big":
            # "big N [GATE]": N frames of 1 KiB of text, as fast as possible
            # (slow-reader test); with GATE it marks "wrote" and waits (up to
            # 30 s) for the file AGUI_TEST_MARKS/GATE before it ends.
            chunk = "x" * 1024
            for i in range(int(words[1])):
                yield c.text_delta(chunk)
                if i % 64 == 0:
                    await asyncio.sleep(0)
            if len(words) > 2:
                _mark(f"wrote-{ctx.run_id}")
                gate = Path(_env("AGUI_TEST_MARKS"), words[2])
                for _ in range(600):
                    if gate.exists():
                        break
                    await asyncio.sleep(0.05)
            _mark(f"ended-{ctx.run_id}")
            return
        if first == "usage":
            # A model call that reports its usage (contract section 8).
            yield c.task_start("tr-u", "chat", model="m-u")
            usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
            yield c.task_end("tr-u", "chat", model="m-u", usage=usage)
            yield c.text_delta("counted")
            return
        if first == "state":
            yield c.task_start("tr-1", "count")
            yield c.task_end("tr-1", "count", duration_ms=3)
            yield c.text_delta(f"state keys {sorted(ctx.state)}")
            return
        if first == "mixed":
            # "mixed PAUSE [GATE]": a step, text, a tool call with streamed
            # arguments, its result, more text; PAUSE seconds between items
            # (joins and resumes land inside each construct). With GATE, the
            # run waits for the file AGUI_TEST_MARKS/GATE before it ends.
            pause = float(words[1]) if len(words) > 1 else 0.0
            items = [
                c.loop("start", "l1", 0),
                c.step_start("plan"),
                c.text_delta("Let me "),
                c.text_delta("look that up."),
                c.tool_input_start("call-m", "search"),
                c.tool_input_delta("call-m", '{"q": '),
                c.tool_input_delta("call-m", '"weather"}'),
                c.tool_input_end("call-m"),
                c.tool_result("call-m", {"temp": 21}),
                c.text_delta("It is "),
                c.text_delta("21 degrees."),
                c.step_end("plan"),
                c.loop("done", "l1", 1),
            ]
            for item in items:
                yield item
                await asyncio.sleep(pause)
            if len(words) > 2:
                gate = Path(_env("AGUI_TEST_MARKS"), words[2])
                for _ in range(600):
                    if gate.exists():
                        break
                    await asyncio.sleep(0.05)
            return
        if first == "reasoned":
            # "reasoned PAUSE": reasoning (with a signature) before the answer,
            # more reasoning before a tool call (contract section 8).
            pause = float(words[1]) if len(words) > 1 else 0.0
            items = [
                c.reasoning_delta("Let me "),
                c.reasoning_delta("think."),
                c.reasoning_encrypted("sig-r"),
                c.text_delta("The answer "),
                c.text_delta("is near."),
                c.reasoning_delta("Check "),
                c.reasoning_delta("the tool."),
                c.tool_call("call-r", "search", {"q": "x"}),
                c.tool_result("call-r", "found"),
                c.text_delta("Done."),
            ]
            for item in items:
                yield item
                await asyncio.sleep(pause)
            return
        if first == "gated":
            # "gated GATE N": one delta, then waits for the file
            # AGUI_TEST_MARKS/GATE, then N deltas as fast as it can.
            yield c.text_delta("ready ")
            gate = Path(_env("AGUI_TEST_MARKS"), words[1])
            for _ in range(1200):
                if gate.exists():
                    break
                await asyncio.sleep(0.025)
            for i in range(int(words[2])):
                yield c.text_delta(f"{i},")
                if i % 64 == 63:
                    await asyncio.sleep(0)
            return
        if first == "paced":
            # "paced N PER_MS": N deltas, about PER_MS of them per millisecond.
            count = int(words[1])
            per = int(words[2]) if len(words) > 2 else 1
            for i in range(count):
                yield c.text_delta(f"{i},")
                if i % per == per - 1:
                    await asyncio.sleep(0.001)
            return
        if first == "many":
            for i in range(int(words[1])):
                yield c.text_delta(f"d{i} ")
            return
        yield c.text_delta(f"turn {len([m for m in ctx.history if m['role'] == 'user']) + 1}: ")
        yield c.text_delta(f"you said {ctx.input}")

    @app.agent("planner", dialect="chunks")
    async def planner(ctx):
        if ctx.resume is not None:
            yield f"resumed with {ctx.resume.decision}"
            yield {"type": "done", "output": {"ok": True}}
            return
        yield "planning "
        yield "now"
        yield {"type": "tool_call", "id": "p-1", "name": "search", "input": {"q": ctx.input}}
        yield {"type": "tool_result", "id": "p-1", "output": "found"}
        yield {"type": "plan_update", "plan": ["a", "b"]}
        if "approve" in ctx.input:
            yield {"type": "interrupt", "interruptId": f"perm-{ctx.run_id}", "reason": "perm"}
            return
        yield {"type": "done", "output": "planned"}

    @app.agent(
        "guarded",
        path="/guarded/run",
        authorize_thread=lambda identity, thread_id: thread_id.startswith(
            f"{identity['user'] if identity else 'anon'}-"
        ),
    )
    async def guarded(ctx):
        yield c.text_delta(f"hello {ctx.identity['user'] if ctx.identity else 'anon'}")

    @app.agent(
        "streamed",
        path="/streamed/run",
        authorize_stream=lambda identity, thread_id, run_id: (
            identity is not None and thread_id.startswith(f"{identity['user']}-")
        ),
    )
    async def streamed(ctx):
        yield c.text_delta(f"streamed for {ctx.identity['user'] if ctx.identity else 'anon'}")
        if ctx.input == "slow":
            await asyncio.sleep(1.5)

    @app.agent("ops/team agent")
    async def team(ctx):
        yield c.text_delta(f"team here: {ctx.agent_id}")


def _authenticate(request):
    token = request.headers.get("authorization")
    if token == "Bearer alice":
        return {"user": "alice", "actions": ["run", "read"]}
    if token == "Bearer reader":
        return {"user": "reader", "actions": ["read"]}
    if token == "Bearer bob":
        return {"user": "bob"}
    if token == "Bearer evil":
        raise Forbidden("banned")
    return None


app = make_app()
auth_app = make_app(authenticate=_authenticate)


# -- helpers the ingress tests share ------------------------------------------


def parse_sse(text: str) -> tuple[list[dict], int]:
    """The events of an SSE body and the number of ``: ping`` comments.

    Strict, like @ag-ui/client: LF only, every frame one ``data:`` line
    (after an optional ``id: n`` line, the ids increasing) or a ``: ping``
    comment, nothing else.
    """
    assert "\r" not in text
    assert text.endswith("\n\n"), text[-200:]
    events, pings, last_id = [], 0, 0
    for frame in text[:-2].split("\n\n"):
        if frame == ": ping":
            pings += 1
            continue
        if frame.startswith("id: "):
            line, _, frame = frame.partition("\n")
            assert line[4:].isdigit() and int(line[4:]) > last_id, (line, last_id)
            last_id = int(line[4:])
        assert frame.startswith("data: ") and "\n" not in frame, frame[:200]
        events.append(orjson.loads(frame[6:]))
    return events, pings


def run_body(thread_id: str, messages, run_id: str | None = None, **extra) -> dict:
    if isinstance(messages, str):
        messages = [{"id": f"u-{thread_id}-{messages}", "role": "user", "content": messages}]
    body = {
        "threadId": thread_id,
        "messages": messages,
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "state": {},
    }
    if run_id is not None:
        body["runId"] = run_id
    body.update(extra)
    return body


def messages_from_events(events: list[dict]) -> list[dict]:
    """What a client's apply would add to its conversation from one run's events."""
    out, by_id, args = [], {}, {}
    for event in events:
        kind = event["type"]
        if kind == "TEXT_MESSAGE_START":
            message = {"id": event["messageId"], "role": "assistant", "content": ""}
            out.append(message)
            by_id[message["id"]] = message
        elif kind == "TEXT_MESSAGE_CONTENT":
            by_id[event["messageId"]]["content"] += event["delta"]
        elif kind == "TOOL_CALL_START":
            parent = by_id.get(event.get("parentMessageId"))
            if parent is None:
                parent = {"id": event["toolCallId"], "role": "assistant"}
                out.append(parent)
                by_id[parent["id"]] = parent
            call = {
                "id": event["toolCallId"],
                "type": "function",
                "function": {"name": event["toolCallName"], "arguments": ""},
            }
            parent.setdefault("toolCalls", []).append(call)
            args[event["toolCallId"]] = call
        elif kind == "TOOL_CALL_ARGS":
            args[event["toolCallId"]]["function"]["arguments"] += event["delta"]
        elif kind == "TOOL_CALL_RESULT":
            out.append(
                {
                    "id": event["messageId"],
                    "role": "tool",
                    "toolCallId": event["toolCallId"],
                    "content": event["content"],
                }
            )
    return out
