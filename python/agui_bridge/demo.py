"""The demo app (``agui-bridge demo``): one agent that shows a frontend what it needs.

Every turn streams text that answers the user's words. Besides that:

- arithmetic in the message (``what is 2 * (3 + 4)?``) → a real tool call,
  ``calculate``, with streamed arguments and its result, from a safe
  evaluator (``ast``, numbers and + - * / // % ** only, no ``eval``);
- every turn is a step (``STEP_STARTED``/``STEP_FINISHED``) and updates the
  shared state (``STATE_SNAPSHOT``: ``loop`` = {loopId "chat", iteration = the
  turn, topic}, and ``task`` around the tool call or the approval);
- ``think about <something>`` → the model's reasoning streams first
  (``REASONING_*``, a ``reasoning`` message in the thread), then the answer;
- ``count to <n>`` → a long answer, one number every 50 ms at least (time
  to press Stop in the middle of it);
- attachments (AG-UI 1.0 media parts) are named in the answer;
- ``approve <something>`` → the run suspends for a human decision
  (``RUN_FINISHED`` with an interrupt outcome); the next run resumes it with
  ``forwardedProps.command.resume`` (``"yes"``/``"no"``) or AG-UI 1.0
  ``resume`` entries, and the agent answers the decision.

Threads live in SQLite under ``./.agui/`` (set ``AGUI_DEMO_STORE`` to change it).
"""

from __future__ import annotations

import ast
import asyncio
import operator
import os
import re

from . import crumbs as c
from .app import App

app = App(
    store=os.environ.get("AGUI_DEMO_STORE", "sqlite:///.agui/threads.sqlite"), playground=True
)

_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_EXPRESSION = re.compile(r"[-+(]*\d[\d\s.+\-*/%()]*")


class CalcError(ValueError):
    pass


def calculate(expression: str) -> int | float:
    """Evaluates arithmetic safely: numbers, + - * / // % ** and parentheses."""
    if len(expression) > 200:
        raise CalcError("the expression is too long")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise CalcError(f"not arithmetic: {expression!r}") from None

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > 10**6):
                raise CalcError("the power is too large")
            try:
                return _OPS[type(node.op)](left, right)
            except ZeroDivisionError:
                raise CalcError("division by zero") from None
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](walk(node.operand))
        raise CalcError(f"not allowed in arithmetic: {type(node).__name__}")

    value = walk(tree)
    if isinstance(value, int) and abs(value) >= 2**53:
        raise CalcError("the result is too large")
    if (isinstance(value, float) and value != value) or value in (float("inf"), float("-inf")):
        raise CalcError("the result is not a finite number")
    return value


def find_expression(text: str) -> str | None:
    for match in _EXPRESSION.finditer(text):
        candidate = match.group().strip().rstrip("?.! ")
        if any(op in candidate for op in "+-*/%") and any(ch.isdigit() for ch in candidate):
            return candidate
    return None


async def _say(text: str, delay: float = 0.02):
    """Streams ``text`` word by word, as a model would."""
    words = text.split(" ")
    for index, word in enumerate(words):
        yield c.text_delta(word if index == 0 else " " + word)
        if delay:
            await asyncio.sleep(delay)


async def _think(text: str, delay: float):
    """Streams ``text`` as reasoning, word by word."""
    async for crumb in _say(text, delay):
        yield c.reasoning_delta(crumb["delta"])


@app.agent("demo")
async def demo(ctx):
    delay = float(os.environ.get("AGUI_DEMO_DELAY", "0.02"))
    turn = sum(1 for m in ctx.history if m.get("role") == "user") + 1
    step = f"turn_{turn}"
    yield c.step_start(step)
    topic = ctx.input.split()[0] if ctx.input.split() else "resume"
    yield c.loop("iteration:start", "chat", iteration=turn, topic=topic)

    if ctx.resume is not None:
        interrupt = ctx.resume.interrupt or {}
        decision = ctx.resume.decision
        if isinstance(decision, dict):
            decision = decision.get("decision", decision.get("approved"))
        approved = ctx.resume.status == "resolved" and (
            decision is True
            or str(decision).lower() in ("yes", "approve", "approved", "ok", "true", "once")
        )
        what = interrupt.get("message", "the request")
        verdict = "Approved" if approved else "Declined"
        async for crumb in _say(f"{verdict}: {what}. Done.", delay):
            yield crumb
        task_run = ctx.new_id("approval")
        yield c.task_start(task_run, "approval")
        yield c.task_end(task_run, "approval", status="approved" if approved else "declined")
        yield c.loop("iteration:end", "chat", iteration=turn, topic=topic)
        yield c.step_end(step)
        return

    words = ctx.input.strip()
    if ctx.tool_results:
        results = ", ".join(m.get("content", "") for m in ctx.tool_results)
        async for crumb in _say(f"Thanks, the frontend tool answered: {results}", delay):
            yield crumb
        yield c.loop("iteration:end", "chat", iteration=turn, topic=topic)
        yield c.step_end(step)
        return

    lowered = words.lower()
    if lowered.startswith("approve"):
        request = words[len("approve") :].strip() or "this action"
        async for crumb in _say(f"I need your approval to {request}.", delay):
            yield crumb
        yield c.loop("iteration:end", "chat", iteration=turn, topic=topic)
        yield c.step_end(step)
        yield c.human_required(
            interrupt_id=ctx.new_id("approve"),
            reason="approval",
            message=f"approve {request}",
            response_schema={"type": "string", "enum": ["yes", "no"]},
        )
        return

    counting = re.fullmatch(r"count to (\d{1,4})", lowered)
    if counting:
        numbers = " ".join(str(n) for n in range(1, min(int(counting[1]), 1000) + 1))
        async for crumb in _say(numbers + ".", max(delay, 0.05)):
            yield crumb
        yield c.loop("iteration:end", "chat", iteration=turn, topic=topic)
        yield c.step_end(step)
        return

    if lowered.startswith("think"):
        subject = words[len("think") :].strip().removeprefix("about").strip() or "that"
        async for crumb in _think(f"The user wants me to think about {subject}.", delay):
            yield crumb
        yield c.reasoning_end()
        async for crumb in _say(f"I thought about {subject}.", delay):
            yield crumb
        yield c.loop("iteration:end", "chat", iteration=turn, topic=topic)
        yield c.step_end(step)
        return

    expression = find_expression(words)
    if expression is not None:
        async for crumb in _say(f"Let me calculate {expression}.", delay):
            yield crumb
        call_id = ctx.new_id("calc")
        yield c.tool_input_start(call_id, "calculate")
        arguments = '{"expression": ' + _json_string(expression) + "}"
        for start in range(0, len(arguments), 8):
            yield c.tool_input_delta(call_id, arguments[start : start + 8])
            if delay:
                await asyncio.sleep(delay / 2)
        yield c.tool_input_end(call_id)
        yield c.task_start(call_id, "calculate")
        try:
            value = calculate(expression)
        except CalcError as error:
            yield c.tool_error(call_id, "calc_error", str(error))
            yield c.task_end(call_id, "calculate", status="failed")
            answer = f"I could not calculate that: {error}."
        else:
            yield c.tool_result(call_id, {"expression": expression, "value": value})
            yield c.task_end(call_id, "calculate")
            answer = f"{expression} = {value}."
        async for crumb in _say(answer, delay):
            yield crumb
    else:
        reply = (
            f"You said: {words!r}.{_attached(ctx.parts)} This is turn {turn} of this thread"
            f" ({len(ctx.history)} earlier messages). Try 'what is 6 * 7?' or"
            " 'approve deleting the draft'."
        )
        async for crumb in _say(reply, delay):
            yield crumb
    yield c.loop("iteration:end", "chat", iteration=turn, topic=topic)
    yield c.step_end(step)


def _attached(parts: list[dict]) -> str:
    """What the user attached (AG-UI 1.0 media parts), named: " I got image dot.png." """
    if not parts:
        return ""
    names = [
        f"{part['type']} {(part.get('metadata') or {}).get('filename') or 'unnamed'}"
        for part in parts
    ]
    return f" I got {', '.join(names)}."


def _json_string(text: str) -> str:
    import orjson

    return orjson.dumps(text).decode()
