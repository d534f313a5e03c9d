"""The assistant and tool messages of one run, rebuilt from its events.

A second reading of the events beside the transformer: it goes once the
transformer owns the run's messages and what is open (its snapshot API).
"""

from __future__ import annotations

from typing import Any


class History:
    """The assistant and tool messages of one run, built from its events."""

    __slots__ = (
        "by_id",
        "errored",
        "held",
        "interrupts",
        "messages",
        "open_tools",
        "owners",
        "run_id",
        "steps",
        "text_id",
        "text_parts",
    )

    def __init__(self, run_id: str, held: frozenset = frozenset()):
        self.run_id = run_id
        self.held = held
        self.errored = False
        self.messages: list[dict] = []
        self.by_id: dict[str, dict] = {}
        self.text_id: str | None = None
        self.text_parts: list[str] = []
        self.open_tools: dict[str, tuple[dict, list[str], dict]] = {}
        self.owners: dict[str, dict] = {}  # tool call id -> its assistant message
        self.steps: list[str] = []
        self.interrupts: list[dict] = []

    def record(self, events: list[dict]) -> None:
        for event in events:
            kind = event["type"]
            if kind == "TEXT_MESSAGE_CONTENT":
                if event["messageId"] == self.text_id:
                    self.text_parts.append(event["delta"])
            elif kind == "TEXT_MESSAGE_START":
                message = {"id": event["messageId"], "role": "assistant", "content": ""}
                self._add(message)
                self.text_id = event["messageId"]
                self.text_parts = []
            elif kind == "TEXT_MESSAGE_END":
                self.close_text()
            elif kind == "TOOL_CALL_START":
                self._tool_start(event)
            elif kind == "TOOL_CALL_ARGS":
                entry = self.open_tools.get(event["toolCallId"])
                if entry is not None:
                    entry[1].append(event["delta"])
            elif kind == "TOOL_CALL_END":
                entry = self.open_tools.pop(event["toolCallId"], None)
                if entry is not None:
                    entry[0]["function"]["arguments"] = "".join(entry[1])
            elif kind == "TOOL_CALL_RESULT":
                self._result(event)
            elif kind == "STEP_STARTED":
                self.steps.append(event["stepName"])
            elif kind == "STEP_FINISHED":
                if event["stepName"] in self.steps:
                    self.steps.remove(event["stepName"])
            elif kind == "RUN_FINISHED":
                outcome = event.get("outcome")
                if isinstance(outcome, dict) and outcome.get("type") == "interrupt":
                    self.interrupts = list(outcome.get("interrupts") or [])
            elif kind == "CUSTOM" and event.get("name") == "on_interrupt":
                self._chunk_interrupt(event.get("value"))

    def close_text(self) -> None:
        if self.text_id is not None:
            self.by_id[self.text_id]["content"] = "".join(self.text_parts)
            self.text_id = None
            self.text_parts = []

    def _add(self, message: dict) -> None:
        self.messages.append(message)
        self.by_id[message["id"]] = message

    def _result(self, event: dict) -> None:
        message = {
            "id": event["messageId"],
            "role": "tool",
            "toolCallId": event["toolCallId"],
            "content": event["content"],
        }
        # Where @ag-ui/client puts it: after the assistant message owning the
        # call and the tool messages already following it.
        owner = self.owners.get(event["toolCallId"])
        messages = self.messages
        at = next((i for i, m in enumerate(messages) if m is owner), None)
        if at is None:
            self._add(message)
            return
        at += 1
        while at < len(messages) and messages[at]["role"] == "tool":
            at += 1
        messages.insert(at, message)
        self.by_id[message["id"]] = message

    def _tool_start(self, event: dict) -> None:
        call_id = event["toolCallId"]
        parent = self.by_id.get(event.get("parentMessageId", ""))
        if parent is None or parent["role"] != "assistant":
            parent = self.by_id.get(call_id)
            if parent is None:
                parent = {"id": call_id, "role": "assistant"}
                self._add(parent)
        call = {"id": call_id, "type": "function", "function": {"name": event["toolCallName"]}}
        call["function"]["arguments"] = ""
        parent.setdefault("toolCalls", []).append(call)
        self.owners[call_id] = parent
        self.open_tools[call_id] = (call, [], parent)

    def _chunk_interrupt(self, value: Any) -> None:
        # The translator puts an id on every chunk interrupt (the chunk's
        # interruptId, else its id, else one it generates): the pending
        # interrupt is stored under the id the client saw. A CUSTOM event of
        # that name without one is not an interrupt anyone could resume.
        if not isinstance(value, dict):
            return
        interrupt_id = value.get("interruptId")
        if not (isinstance(interrupt_id, str) and interrupt_id):
            interrupt_id = value.get("id")
        if not (isinstance(interrupt_id, str) and interrupt_id):
            return
        reason = value.get("reason")
        interrupt = {
            "id": interrupt_id,
            "reason": reason if isinstance(reason, str) else "interrupt",
        }
        if isinstance(value.get("message"), str):
            interrupt["message"] = value["message"]
        interrupt["payload"] = value
        self.interrupts.append(interrupt)

    def closing_events(self, message: str, code: str) -> list[dict]:
        """What closes this run's open entities for a subscriber cut off mid-run."""
        events: list[dict] = []
        if self.text_id is not None:
            events.append({"type": "TEXT_MESSAGE_END", "messageId": self.text_id})
        events.extend({"type": "TOOL_CALL_END", "toolCallId": i} for i in self.open_tools)
        events.extend({"type": "STEP_FINISHED", "stepName": s} for s in reversed(self.steps))
        events.append({"type": "RUN_ERROR", "message": message, "code": code})
        return events

    def snapshot_messages(self) -> list[dict]:
        """Copies of the run's messages, with what is open filled in so far."""
        out = []
        open_parts = {id(call): parts for call, parts, _parent in self.open_tools.values()}
        for message in self.messages:
            copy = dict(message)
            if message["id"] == self.text_id:
                copy["content"] = "".join(self.text_parts)
            if "toolCalls" in message:
                calls = []
                for call in message["toolCalls"]:
                    parts = open_parts.get(id(call))
                    function = dict(call["function"])
                    if parts is not None:
                        function["arguments"] = "".join(parts)
                    calls.append({**call, "function": function})
                copy["toolCalls"] = calls
            out.append(copy)
        return out
