"""Messages between the two shapes: LangGraph's (``type`` human/ai/tool, or
``role`` as OpenAI names it) and AG-UI's, which the thread stores."""

from __future__ import annotations

import uuid

import orjson

from ..blocks import from_blocks, to_blocks
from ..errors import RunInputError
from ..parts import DEFAULT_POLICY, PartPolicy, check_policy, upgrade
from ..shapes import check_message

_ROLES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "tool": "tool",
    "system": "system",
    "developer": "developer",
}
_TYPES = {"user": "human", "assistant": "ai", "tool": "tool", "system": "system"}
_TYPES["developer"] = "system"


# An input message the thread cannot take (a 422).
MessageError = RunInputError


def to_agui(message, index: int, policy: PartPolicy = DEFAULT_POLICY) -> dict:
    """One input message (LangGraph or OpenAI shape) as an AG-UI message.

    An input message is always new (LangGraph appends input messages), so one
    without an id gets a fresh one.
    """
    where = f"input.messages[{index}]"
    if isinstance(message, str):
        message = {"role": "user", "content": message}
    elif isinstance(message, list) and len(message) == 2 and isinstance(message[0], str):
        message = {"role": message[0], "content": message[1]}  # LangChain's (role, content)
    if not isinstance(message, dict):
        raise MessageError(f"{where} must be an object, a [role, content] pair or a string")
    kind = message.get("role", message.get("type"))
    role = _ROLES.get(kind) if isinstance(kind, str) else None
    if role is None:
        raise MessageError(f"{where} needs a role (human, ai, tool, system) or a type")
    message_id = message.get("id")
    if message_id is None:
        message_id = uuid.uuid4().hex
    elif not isinstance(message_id, str) or not message_id:
        raise MessageError(f"{where}.id must be a non-empty string")
    content = message.get("content", "")
    if not isinstance(content, (str, list)):
        raise MessageError(f"{where}.content must be a string or a list of parts")
    if role != "user" and role != "tool" and isinstance(content, list):
        content = _joined(content, where)
    elif role == "user" and isinstance(content, list):
        # LangChain's content blocks (and OpenAI's parts) as AG-UI parts (blocks.py).
        content = from_blocks(content, f"{where}.content")
    out: dict = {"id": message_id, "role": role, "content": content}
    if role == "assistant":
        calls = [_call(call, where) for call in message.get("tool_calls") or ()]
        if calls:
            out["toolCalls"] = calls
    elif role == "tool":
        call_id = message.get("tool_call_id", message.get("toolCallId"))
        if not isinstance(call_id, str):
            raise MessageError(f"{where} (a tool message) needs a string 'tool_call_id'")
        out["toolCallId"] = call_id
    # What the thread stores is an AG-UI 1.0 message (shapes.py), whatever came
    # in, its parts judged by the App's policy (parts.py).
    out = upgrade(out, where)
    check_message(out, where)
    check_policy(out.get("content"), f"{where}.content", policy)
    return out


def _joined(content: list, where: str) -> str:
    """Text parts as one string (AG-UI's assistant, system and developer content is text)."""
    texts = []
    for part in content:
        if not (isinstance(part, dict) and part.get("type") == "text"):
            raise MessageError(f"{where}.content must be text (a string or text parts)")
        if not isinstance(part.get("text"), str):
            raise MessageError(f"{where}.content's text parts need a string 'text'")
        texts.append(part["text"])
    return "".join(texts)


def _call(call, where: str) -> dict:
    if not isinstance(call, dict) or not isinstance(call.get("id"), str):
        raise MessageError(f"{where}.tool_calls must be objects with a string 'id'")
    name = call.get("name")
    args = call.get("args", {})
    if "function" in call and isinstance(call["function"], dict):  # the OpenAI shape
        name = call["function"].get("name")
        args = call["function"].get("arguments", "")
    if not isinstance(name, str):
        raise MessageError(f"{where}.tool_calls need a string 'name'")
    arguments = args if isinstance(args, str) else orjson.dumps(args).decode()
    function = {"name": name, "arguments": arguments}
    return {"id": call["id"], "type": "function", "function": function}


def to_langgraph(message: dict) -> dict | None:
    """A stored AG-UI message as LangGraph serialises a message (None: no counterpart)."""
    kind = _TYPES.get(message.get("role"))
    if kind is None:
        return None
    content = message.get("content") or ""
    if kind == "human":
        content = to_blocks(content)  # attachments as LangChain's standard blocks
    out: dict = {"type": kind, "content": content, "id": message.get("id")}
    if kind == "ai":
        calls, invalid = [], []
        for call in message.get("toolCalls") or ():
            function = call.get("function") or {}
            arguments = function.get("arguments") or "{}"
            try:
                args = orjson.loads(arguments)
            except orjson.JSONDecodeError:
                args = None
            entry = {"name": function.get("name"), "id": call.get("id")}
            if isinstance(args, dict):
                calls.append({**entry, "args": args, "type": "tool_call"})
            else:
                # LangChain keeps arguments that are not a JSON object apart.
                invalid.append({**entry, "args": arguments, "error": None})
                invalid[-1]["type"] = "invalid_tool_call"
        out["tool_calls"] = calls
        out["invalid_tool_calls"] = invalid
    elif kind == "tool":
        out["tool_call_id"] = message.get("toolCallId")
    return out


def all_to_langgraph(messages: list[dict]) -> list[dict]:
    out = []
    for message in messages:
        converted = to_langgraph(message)
        if converted is not None:
            out.append(converted)
    return out
