"""The events dialect: AG-UI events from an agent, repaired to the contract.

An agent that already speaks AG-UI (dicts, or ``ag_ui.core`` models) is put
through the same framing core as crumbs and chunks, so its stream gets the
same guarantees (docs/events-dialect.md has the rules).
"""

from __future__ import annotations

from ..errors import CrumbError
from ..event_models import event_dict
from . import subagents
from .fields import parse_fields
from .framing import check_subtype
from .json_patch import apply_patch
from .json_values import copy_json, is_unicode
from .reasoning import Repair
from .stream import EventStream
from .table import EVENTS

# Each row: its required fields, and every field it reads with its kind.
# Fields a row does not list (timestamp, rawEvent, …) are not read at all.
_ROWS = EVENTS


class EventRepairer(EventStream):
    # _messages: the agent's message id -> the id it streams under (None: started, no content yet).
    __slots__ = ("_ended", "_interrupts", "_messages", "_reasoning")

    def __init__(self, *args, **framing):
        super().__init__(*args, **framing)
        # The agent's reasoning and activity (contract section 8).
        self._reasoning = Repair()
        self._messages: dict[str, str | None] = {}
        self._ended: set[str] = set()
        # What the agent's RUN_FINISHED left pending, for snapshot().
        self._interrupts: list = []

    def _parse(self, event):
        if not isinstance(event, dict):
            event = event_dict(event)
            if not isinstance(event, dict):
                raise CrumbError(f"event must be a dict, not {type(event).__name__}")
        event_type = event.get("type")
        if not isinstance(event_type, str) or not is_unicode(event_type):
            raise CrumbError("event has no string 'type'")
        # An ag_ui EventType member is a str: its text is what counts.
        event_type = str.__str__(event_type)
        row = _ROWS.get(event_type)
        if row is None:
            return event_type, None
        required, kinds = row
        fields = parse_fields(event_type, event, required, kinds, only_listed=True)
        # A tool call the thread holds may not be opened again (contract section 6).
        opens = event_type == "TOOL_CALL_START" or (
            event_type == "TOOL_CALL_CHUNK" and "toolCallName" in fields
        )
        if opens and "toolCallId" in fields:
            self._framer.check_fresh(event_type, "toolCallId", fields["toolCallId"])
        elif event_type == "REASONING_ENCRYPTED_VALUE":
            check_subtype(event_type, fields["subtype"])
        elif event_type == "SUBAGENT_FINISHED":
            subagents.check_outcome(event_type, fields.get("outcome"))
        elif event_type == "STATE_DELTA":
            # Applied to a copy here, so a patch that fails changes nothing.
            delta = fields.get("delta")
            fields["state"], fields["delta"] = apply_patch(event_type, self._framer.state, delta)
        return event_type, fields

    def _apply(self, parsed) -> None:
        event_type, f = parsed
        framer = self._framer
        if event_type == "RUN_STARTED":
            if framer.started:
                framer.dropped += 1
            else:
                framer.start(f.get("threadId"), f.get("runId"))
            return
        if not framer.started:
            framer.start()
        if f is None:
            framer.ignored += 1
            return
        _HANDLERS[event_type](self, f)

    def _start_text(self, f):
        message_id = f["messageId"]
        if message_id in self._messages:
            self._framer.dropped += 1
        else:
            self._messages[message_id] = None

    def _content(self, message_id: str, delta: str) -> None:
        framer = self._framer
        if message_id in self._ended:
            framer.dropped += 1
            return
        streamed = self._messages.get(message_id)
        if not delta:
            self._messages.setdefault(message_id, None)
            return
        if streamed is None or streamed != framer.text_id:
            # A message the core closed (for a tool call, another message)
            # goes on under a fresh id: ids are never reused in a run.
            taken = message_id in framer.used_ids or message_id in framer.held
            streamed = framer.new_id("m") if taken else message_id
            framer.open_text_as(streamed)
            self._messages[message_id] = streamed
        framer.text(delta)

    def _text_content(self, f):
        self._content(f["messageId"], f["delta"])

    def _end_text(self, f):
        framer = self._framer
        message_id = f["messageId"]
        if message_id not in self._messages or message_id in self._ended:
            framer.dropped += 1
            return
        self._ended.add(message_id)
        streamed = self._messages[message_id]
        if streamed is not None and streamed == framer.text_id:
            framer.close_text()

    def _text_chunk(self, f):
        message_id = f.get("messageId")
        if message_id is None:
            self._framer.text(f.get("delta", ""))
        else:
            self._content(message_id, f.get("delta", ""))

    def _tool_start(self, f):
        self._framer.tool_start(f["toolCallId"], f["toolCallName"])

    def _tool_args(self, f):
        self._framer.tool_args(f["toolCallId"], f["delta"])

    def _tool_end(self, f):
        self._framer.tool_end(f["toolCallId"])

    def _tool_chunk(self, f):
        framer = self._framer
        tool_call_id = f.get("toolCallId")
        if tool_call_id is None:
            tool_call_id = framer.last_open_tool()
        elif tool_call_id not in framer.known_tools:
            name = f.get("toolCallName")
            if name is not None:
                framer.tool_start(tool_call_id, name)
            else:
                tool_call_id = None
        if tool_call_id is None:
            framer.dropped += 1
            return
        framer.tool_args(tool_call_id, f.get("delta", ""))

    def _tool_result(self, f):
        self._framer.tool_result(f["toolCallId"], f["content"])

    def _snapshot(self, f):
        self._framer.snapshot(f["snapshot"])

    def _delta(self, f):
        # An empty patch changes nothing and says nothing, like an empty text delta.
        if f["delta"]:
            self._framer.state_delta(f["state"], f["delta"])

    def _step_start(self, f):
        self._framer.step_start(f["stepName"])

    def _step_end(self, f):
        self._framer.step_end(f["stepName"])

    def _custom(self, f):
        # The schema requires a value and a top-level null is never written.
        if f.get("value") is None:
            self._framer.dropped += 1
            return
        self._framer.custom(f["name"], f["value"])

    def _run_finished(self, f):
        self._framer.usage.add_all(f.get("usage"))
        outcome = f.get("outcome")
        # A cancelled outcome is AG-UI 1.0's: a 0.0.x client's schema rejects it,
        # so its run ends as a plain RUN_FINISHED (contract section 8).
        if not self._framer.protocol_v1 and _is_cancelled(outcome):
            outcome = None
        if isinstance(outcome, dict) and outcome.get("type") == "interrupt":
            interrupts = outcome.get("interrupts")
            self._interrupts = copy_json(interrupts) if isinstance(interrupts, list) else []
        self._framer.run_finished(f.get("result"), outcome)

    def _pending_interrupts(self) -> list:
        return copy_json(self._interrupts)

    def _run_error(self, f):
        self._framer.usage.add_all(f.get("usage"))
        self._framer.run_error(f["message"], f.get("code"))

    def _finish(self) -> None:
        self._framer.run_finished()

    # ---- contract section 8, repaired by reasoning.Repair

    def _reasoning_start(self, f):
        self._reasoning.start_span(self._framer, f["messageId"])

    def _reasoning_end(self, f):
        self._reasoning.end_span(self._framer, f["messageId"])

    def _reasoning_message_start(self, f):
        self._reasoning.start(self._framer, f["messageId"])

    def _reasoning_content(self, f):
        self._reasoning.content(self._framer, f["messageId"], f["delta"])

    def _reasoning_message_end(self, f):
        self._reasoning.end(self._framer, f["messageId"])

    def _reasoning_chunk(self, f):
        self._reasoning.chunk(self._framer, f.get("messageId"), f.get("delta", ""))

    def _reasoning_encrypted(self, f):
        self._reasoning.encrypted(self._framer, f["subtype"], f["entityId"], f["encryptedValue"])

    def _activity_snapshot(self, f):
        self._reasoning.activity_snapshot(self._framer, f)

    def _activity_delta(self, f):
        self._reasoning.activity_delta(self._framer, f)

    # ---- AG-UI 1.0 subagents, repaired by pure/subagents.py

    def _subagent_started(self, f):
        # The parent message under the id the run streamed it as, if it did.
        parent = f.get("parentMessageId")
        streamed = self._messages.get(parent) if parent is not None else None
        subagents.start(self._framer, f, streamed)

    def _subagent_finished(self, f):
        subagents.finished(self._framer, f)

    def _subagent_error(self, f):
        subagents.error(self._framer, f)


def _is_cancelled(outcome) -> bool:
    return isinstance(outcome, dict) and outcome.get("type") == "cancelled"


_HANDLERS = {
    "RUN_FINISHED": EventRepairer._run_finished,
    "RUN_ERROR": EventRepairer._run_error,
    "TEXT_MESSAGE_START": EventRepairer._start_text,
    "TEXT_MESSAGE_CONTENT": EventRepairer._text_content,
    "TEXT_MESSAGE_END": EventRepairer._end_text,
    "TEXT_MESSAGE_CHUNK": EventRepairer._text_chunk,
    "TOOL_CALL_START": EventRepairer._tool_start,
    "TOOL_CALL_ARGS": EventRepairer._tool_args,
    "TOOL_CALL_END": EventRepairer._tool_end,
    "TOOL_CALL_CHUNK": EventRepairer._tool_chunk,
    "TOOL_CALL_RESULT": EventRepairer._tool_result,
    "STATE_SNAPSHOT": EventRepairer._snapshot,
    "STATE_DELTA": EventRepairer._delta,
    "STEP_STARTED": EventRepairer._step_start,
    "STEP_FINISHED": EventRepairer._step_end,
    "CUSTOM": EventRepairer._custom,
    "REASONING_START": EventRepairer._reasoning_start,
    "REASONING_MESSAGE_START": EventRepairer._reasoning_message_start,
    "REASONING_MESSAGE_CONTENT": EventRepairer._reasoning_content,
    "REASONING_MESSAGE_END": EventRepairer._reasoning_message_end,
    "REASONING_MESSAGE_CHUNK": EventRepairer._reasoning_chunk,
    "REASONING_END": EventRepairer._reasoning_end,
    "REASONING_ENCRYPTED_VALUE": EventRepairer._reasoning_encrypted,
    "ACTIVITY_SNAPSHOT": EventRepairer._activity_snapshot,
    "ACTIVITY_DELTA": EventRepairer._activity_delta,
    "SUBAGENT_STARTED": EventRepairer._subagent_started,
    "SUBAGENT_FINISHED": EventRepairer._subagent_finished,
    "SUBAGENT_ERROR": EventRepairer._subagent_error,
}


# The class is its own factory: one signature, EventStream's.
create_agui_repairer = EventRepairer
