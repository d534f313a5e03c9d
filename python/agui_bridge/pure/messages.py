"""The run's messages and what is open, for ``snapshot()`` (docs/contract-notes.md).

The framing core tells this record what it emits; nothing here reads events.
Messages come out as ``@ag-ui/client``'s reducer builds them from the run's
events (1.0.0 and 0.0.58 agree): a text message is an assistant message; a
tool call joins the message named by its ``parentMessageId``, or, without one,
a new assistant message whose id is the tool call's; a tool result goes right
after the message holding its call and the tool messages that follow it; an
activity message (``ACTIVITY_SNAPSHOT`` of a new id) goes last and keeps its
place when a later snapshot or delta changes it.
"""

from __future__ import annotations

from .json_values import copy_json


class _Assistant:
    __slots__ = ("calls", "content", "id")

    def __init__(self, message_id: str, text: bool):
        self.id = message_id
        # None: made for a tool call without a parent, so no content key.
        self.content: str | None = "" if text else None
        self.calls: list[_Call] = []


class _Call:
    __slots__ = ("args", "encrypted", "id", "owner", "start")

    def __init__(self, start: dict, owner: _Assistant):
        self.id = start["toolCallId"]
        self.start = start
        self.owner = owner
        self.args: list[str] = []
        # A tool-call encrypted value (contract section 8), the latest one.
        self.encrypted: str | None = None


class _Reasoning:
    """A reasoning message (contract section 8): an AG-UI 1.0 ``reasoning`` message."""

    __slots__ = ("content", "encrypted", "id")

    def __init__(self, message_id: str):
        self.id = message_id
        self.content: str | None = None  # None while open
        self.encrypted: str | None = None


class _Activity:
    """An activity message (AG-UI 1.0 ``activity``), as the client's reducer has it."""

    __slots__ = ("activity_type", "content", "id")

    def __init__(self, message_id: str, activity_type: str, content: dict):
        self.id = message_id
        self.activity_type = activity_type
        self.content = content


class RunMessages:
    __slots__ = ("activities", "assistants", "calls", "entries", "reasonings")

    def __init__(self):
        # In order of creation: an _Assistant, a _Reasoning, an _Activity, or a
        # tool message and its owner.
        self.entries: list = []
        self.assistants: dict[str, _Assistant] = {}
        self.calls: dict[str, _Call] = {}
        self.reasonings: dict[str, _Reasoning] = {}
        self.activities: dict[str, _Activity] = {}

    def activity(self, message_id: str) -> dict | None:
        """The content of this run's activity ``message_id`` (None: the run made none)."""
        activity = self.activities.get(message_id)
        return None if activity is None else activity.content

    def set_activity(self, message_id: str, activity_type: str, content: dict) -> None:
        """An activity as the client now has it: a new one goes last, a known one
        keeps its place (``content`` is this record's from now on)."""
        activity = self.activities.get(message_id)
        if activity is None:
            activity = _Activity(message_id, activity_type, content)
            self.activities[message_id] = activity
            self.entries.append(activity)
        else:
            activity.activity_type = activity_type
            activity.content = content

    def open_reasoning(self, message_id: str) -> None:
        reasoning = _Reasoning(message_id)
        self.reasonings[message_id] = reasoning
        self.entries.append(reasoning)

    def close_reasoning(self, message_id: str, content: str) -> None:
        self.reasonings[message_id].content = content

    def encrypted(self, subtype: str, entity_id: str, value: str) -> None:
        """An encrypted value for a reasoning message or a tool call of this run."""
        if subtype == "tool-call":
            self.calls[entity_id].encrypted = value
        else:
            self.reasonings[entity_id].encrypted = value

    def open_text(self, message_id: str) -> None:
        message = _Assistant(message_id, True)
        self.assistants[message_id] = message
        self.entries.append(message)

    def close_text(self, message_id: str, content: str) -> None:
        self.assistants[message_id].content = content

    def tool_start(self, start: dict) -> None:
        parent = start.get("parentMessageId")
        owner = self.assistants.get(parent) if parent is not None else None
        if owner is None:
            owner = _Assistant(start["toolCallId"], False)
            self.entries.append(owner)
        call = _Call(dict(start), owner)
        owner.calls.append(call)
        self.calls[call.id] = call

    def tool_args(self, tool_call_id: str, delta: str) -> None:
        self.calls[tool_call_id].args.append(delta)

    def tool_result(self, event: dict) -> None:
        message = {
            "id": event["messageId"],
            "toolCallId": event["toolCallId"],
            "role": "tool",
            "content": event["content"],
        }
        self.entries.append((message, self.calls[event["toolCallId"]].owner))

    def messages(self, open_text: str | None, open_tools) -> list[dict]:
        """The messages; what is still open has its streamed text left out (see ``open``)."""
        out: list[dict] = []
        rendered: dict[int, dict] = {}
        for entry in self.entries:
            if isinstance(entry, _Assistant):
                message = _assistant(entry, open_text, open_tools)
                rendered[id(entry)] = message
                out.append(message)
                continue
            if isinstance(entry, _Reasoning):
                out.append(_reasoning(entry))
                continue
            if isinstance(entry, _Activity):
                out.append(
                    {
                        "id": entry.id,
                        "role": "activity",
                        "activityType": entry.activity_type,
                        "content": copy_json(entry.content),
                    }
                )
                continue
            message, owner = entry
            at = out.index(rendered[id(owner)]) + 1
            while at < len(out) and out[at]["role"] == "tool":
                at += 1
            out.insert(at, dict(message))
        return out

    def open_events(
        self,
        steps,
        open_reasoning: str | None,
        reasoning: str,
        open_text: str | None,
        content: str,
        open_tools,
    ) -> list[dict]:
        """What re-opens the open steps, reasoning, text and tool calls, with what they streamed."""
        events = [{"type": "STEP_STARTED", "stepName": name} for name in steps]
        if open_reasoning is not None:
            events.append({"type": "REASONING_START", "messageId": open_reasoning})
            events.append(
                {
                    "type": "REASONING_MESSAGE_START",
                    "messageId": open_reasoning,
                    "role": "reasoning",
                }
            )
            if reasoning:
                events.append(
                    {
                        "type": "REASONING_MESSAGE_CONTENT",
                        "messageId": open_reasoning,
                        "delta": reasoning,
                    }
                )
        if open_text is not None:
            events.append(
                {"type": "TEXT_MESSAGE_START", "messageId": open_text, "role": "assistant"}
            )
            if content:
                events.append(
                    {"type": "TEXT_MESSAGE_CONTENT", "messageId": open_text, "delta": content}
                )
        for tool_call_id in open_tools:
            call = self.calls[tool_call_id]
            events.append(dict(call.start))
            args = "".join(call.args)
            if args:
                events.append({"type": "TOOL_CALL_ARGS", "toolCallId": call.id, "delta": args})
        return events


def _reasoning(entry: _Reasoning) -> dict:
    message = {"id": entry.id, "role": "reasoning", "content": entry.content or ""}
    if entry.encrypted is not None:
        message["encryptedValue"] = entry.encrypted
    return message


def _call(call: _Call, open_tools) -> dict:
    out = {
        "id": call.id,
        "type": "function",
        "function": {
            "name": call.start["toolCallName"],
            "arguments": "" if call.id in open_tools else "".join(call.args),
        },
    }
    if call.encrypted is not None:
        out["encryptedValue"] = call.encrypted
    return out


def _assistant(entry: _Assistant, open_text, open_tools) -> dict:
    message: dict = {"id": entry.id, "role": "assistant"}
    if entry.content is not None:
        message["content"] = "" if entry.id == open_text else entry.content
    if entry.calls:
        message["toolCalls"] = [_call(call, open_tools) for call in entry.calls]
    return message


def chunk_interrupt(value: dict) -> dict:
    """The pending interrupt a chunk ``interrupt``'s CUSTOM value stands for; the
    value always names its id (``interruptId``, else ``id``: see the dialect)."""
    interrupt_id = value.get("interruptId")
    if not isinstance(interrupt_id, str) or not interrupt_id:
        interrupt_id = value["id"]
    reason = value.get("reason")
    interrupt = {"id": interrupt_id, "reason": reason if isinstance(reason, str) else "interrupt"}
    if isinstance(value.get("message"), str):
        interrupt["message"] = value["message"]
    interrupt["payload"] = copy_json(value)
    return interrupt
