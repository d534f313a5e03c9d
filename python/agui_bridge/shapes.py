"""AG-UI 1.0's message shapes, and what a store can keep: checked at the door.

Every route that writes messages (an AG-UI run, an Agent Protocol run, the
Agent Protocol's state update) checks each message here before anything is
stored, and every store reads its messages back through ``usable`` (one bad
row, stored before this check existed, is left out of what the thread shows
instead of failing every reader of it).

The shapes are those of ``@ag-ui/core`` 1.0.0's zod schemas (``MessageSchema``,
``ContentPartSchema``) and ``ag_ui.core`` 1.0.0's models, with two leniencies
the ingress has always had: a message id may be left out (the ingress numbers
the newest user message; an older id-less one is not stored), and an optional
field may be ``null`` (the Python SDK writes ``None`` as ``null``). One rule is
stricter: a user message's content is a string or a non-empty list of parts
(an empty list says nothing, and a run refuses it as its newest message).

Ids (``threadId``, ``runId``, message and tool call ids) are strings of at most
``MAX_ID_CHARS`` characters without NUL: an id names URLs (a longer one
answers 414 on its own routes) and PostgreSQL's text refuses NUL.
"""

from __future__ import annotations

from .errors import RunInputError

# An id's length in characters at most (a thread's URLs carry its id and a run's).
MAX_ID_CHARS = 512

ROLES = ("user", "assistant", "tool", "system", "developer", "activity", "reasoning")


def check_id(value, where: str, required: bool = True) -> None:
    """``value`` can name a thread, a run, a message or a tool call."""
    if value is None and not required:
        return
    if not isinstance(value, str) or (required and not value):
        raise RunInputError(f"{where} must be a non-empty string")
    if len(value) > MAX_ID_CHARS:
        raise RunInputError(f"{where} is longer than {MAX_ID_CHARS} characters")
    if "\x00" in value:
        raise RunInputError(f"{where} must not contain NUL (\\u0000)")


def storable_id(value) -> bool:
    """Whether a store can hold a thread under ``value`` (what ``check_id`` lets in)."""
    return isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS and "\x00" not in value


def check_no_nul(value, where: str) -> None:
    """No NUL in any key or string of ``value`` (PostgreSQL's jsonb refuses it)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise RunInputError(f"{where} must not contain NUL (\\u0000)")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


# -- content parts: one checker per part type (add a type here) ----------------


def _source(part: dict, where: str) -> None:
    source = part.get("source")
    if not isinstance(source, dict):
        raise RunInputError(f"{where}.source must be an object (data, url or file)")
    kind = source.get("type")
    if kind not in ("data", "url", "file"):
        raise RunInputError(f"{where}.source.type must be 'data', 'url' or 'file'")
    _string(source, "value", f"{where}.source")
    _string(source, "mimeType", f"{where}.source", required=kind == "data")
    if kind == "file":
        _string(source, "provider", f"{where}.source", required=False)


def _text_part(part: dict, where: str) -> None:
    _string(part, "text", where)


PARTS = {
    "text": _text_part,
    "image": _source,
    "audio": _source,
    "video": _source,
    "document": _source,
}


def check_parts(content, where: str) -> None:
    """A list of content parts (1.0's ``ContentPart``), at least one."""
    if not content:
        raise RunInputError(f"{where} must be a string or a non-empty list of parts")
    for n, part in enumerate(content):
        at = f"{where}[{n}]"
        if not isinstance(part, dict):
            raise RunInputError(f"{at} must be a content part object")
        check = PARTS.get(part.get("type"))
        if check is None:
            raise RunInputError(f"{at}.type must be one of {', '.join(PARTS)}")
        _string(part, "id", at, required=False)
        if part.get("metadata", 0) is None:
            raise RunInputError(f"{at}.metadata must not be null")
        check(part, at)


# -- messages ------------------------------------------------------------------


def _string(obj: dict, key: str, where: str, required: bool = True) -> None:
    value = obj.get(key)
    if value is None and not required:
        return
    if not isinstance(value, str):
        raise RunInputError(f"{where}.{key} must be a string")


def _object(obj: dict, key: str, where: str) -> None:
    value = obj.get(key)
    if value is not None and not isinstance(value, dict):
        raise RunInputError(f"{where}.{key} must be an object")


def _content(message: dict, where: str) -> None:
    content = message.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise RunInputError(f"{where}.content must be a string or a list of parts")
    check_parts(content, f"{where}.content")


def _tool_calls(message: dict, where: str) -> None:
    calls = message.get("toolCalls")
    if calls is None:
        return
    if not isinstance(calls, list):
        raise RunInputError(f"{where}.toolCalls must be a list")
    for n, call in enumerate(calls):
        at = f"{where}.toolCalls[{n}]"
        if not isinstance(call, dict):
            raise RunInputError(f"{where}.toolCalls must be objects with a string 'id'")
        if not isinstance(call.get("id"), str):
            raise RunInputError(f"{where}.toolCalls must be objects with a string 'id'")
        check_id(call["id"], f"{at}.id")
        if call.get("type", "function") != "function":
            raise RunInputError(f"{at}.type must be 'function'")
        function = call.get("function")
        if not isinstance(function, dict):
            raise RunInputError(f"{at}.function must be an object {{name, arguments}}")
        _string(function, "name", f"{at}.function")
        _string(function, "arguments", f"{at}.function")
        _string(call, "encryptedValue", at, required=False)
        _object(call, "metadata", at)


def _user(message: dict, where: str) -> None:
    _content(message, where)


def _assistant(message: dict, where: str) -> None:
    _string(message, "content", where, required=False)
    _tool_calls(message, where)


def _tool(message: dict, where: str) -> None:
    if not isinstance(message.get("toolCallId"), str):
        raise RunInputError(f"{where} (a tool message) needs a string 'toolCallId'")
    check_id(message["toolCallId"], f"{where}.toolCallId")
    _content(message, where)
    _string(message, "error", where, required=False)


def _text_only(message: dict, where: str) -> None:
    _string(message, "content", where)


def _activity(message: dict, where: str) -> None:
    _string(message, "activityType", where)
    if not isinstance(message.get("content"), dict):
        raise RunInputError(f"{where}.content must be an object")


_ROLE_CHECKS = {
    "user": _user,
    "assistant": _assistant,
    "tool": _tool,
    "system": _text_only,
    "developer": _text_only,
    "activity": _activity,
    "reasoning": _text_only,
}


def check_message(message, where: str) -> None:
    """One message in AG-UI 1.0's shape (``where`` names it in the error)."""
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise RunInputError(f"{where} must be an object with a string 'role'")
    role = message["role"]
    check = _ROLE_CHECKS.get(role)
    if check is None:
        raise RunInputError(f"{where}.role must be one of {', '.join(ROLES)}")
    where = f"{where} ({role})"
    message_id = message.get("id")
    if message_id is not None and not isinstance(message_id, str):
        raise RunInputError(f"{where}.id must be a string")
    if message_id:
        check_id(message_id, f"{where}.id")
    for key in ("name", "encryptedValue", "subagentRunId"):
        _string(message, key, where, required=False)
    _object(message, "metadata", where)
    check(message, where)


def usable(message) -> bool:
    """Whether a stored message has the shape readers rely on (see the module doc)."""
    try:
        check_message(message, "message")
    except RunInputError:
        return False
    return isinstance(message.get("id"), str)
