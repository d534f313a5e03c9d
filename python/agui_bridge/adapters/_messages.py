"""The conversation a run continues, as AG-UI messages in model order.

Shared by the adapters: each maps these to its framework's own messages.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..context import RunContext

NO_RESULT = '{"error":{"code":"no_result","message":"the tool call got no result"}}'


def turn_message(ctx: RunContext) -> dict:
    """This turn's user message under the id the thread stores it by: its text,
    or with media parts (``ctx.parts``) its content parts as sent."""
    stored = ctx.input_message
    message_id = stored["id"] if stored is not None else ctx.new_id("input")
    if ctx.parts and stored is not None:
        return {"id": message_id, "role": "user", "content": stored["content"]}
    return {"id": message_id, "role": "user", "content": ctx.input}


def conversation(
    ctx: RunContext, open_calls: frozenset[str] = frozenset(), keep_reasoning: bool = False
) -> list[dict]:
    """The thread's history, this run's tool results, then the new user message.

    Each assistant message with tool calls is followed by exactly one tool
    message per call (models reject anything else): results are moved up to
    their call, a call the client never answered (the user typed on instead)
    gets ``NO_RESULT`` unless it is in ``open_calls`` (a call this run
    resumes), and a result for no known call is left out. ``keep_reasoning``
    keeps the reasoning messages, for a model that takes them back.
    """
    messages = list(ctx.history) + list(ctx.tool_results)
    if ctx.input or ctx.parts:
        messages.append(turn_message(ctx))
    results: dict[str, dict] = {}
    for message in messages:
        if message.get("role") == "tool" and isinstance(message.get("toolCallId"), str):
            results.setdefault(message["toolCallId"], message)
    out: list[dict] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            continue
        if role == "reasoning" and keep_reasoning:
            out.append(message)
            continue
        if role not in ("user", "assistant", "system", "developer"):
            continue  # activity, reasoning: nothing a model takes back
        out.append(message)
        if role == "assistant":
            for call in tool_calls(message):
                result = results.get(call["id"])
                if result is not None:
                    out.append(result)
                elif call["id"] not in open_calls:
                    out.append(
                        {
                            "id": f"{call['id']}:no_result",
                            "role": "tool",
                            "toolCallId": call["id"],
                            "content": NO_RESULT,
                        }
                    )
    return out


def tool_calls(message: dict) -> list[dict]:
    """The well-formed tool calls of an AG-UI assistant message."""
    calls = []
    for call in message.get("toolCalls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(call.get("id"), str):
            calls.append(call)
    return calls


def text(content: Any) -> str:
    """A message's content as text (the text parts of a multi-part content)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and part.get("type") == "text" and "text" in part
        )
    return ""


def result_text(value: Any) -> str:
    """What a tool result becomes as message content: a string, or compact JSON."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()


def error_text(code: str, message: str) -> str:
    """The content of a failed tool's message, as ``tool:error`` writes it."""
    return orjson.dumps({"error": {"code": code, "message": message}}).decode()


def parse_arguments(arguments: str) -> Any:
    return orjson.loads(arguments) if arguments.strip() else {}


def signature_events(message_id: str, signature: Any) -> list[dict]:
    """A reasoning message's signature as its encrypted value (none without one)."""
    if not isinstance(signature, str) or not signature:
        return []
    return [
        {
            "type": "REASONING_ENCRYPTED_VALUE",
            "subtype": "message",
            "entityId": message_id,
            "encryptedValue": signature,
        }
    ]
