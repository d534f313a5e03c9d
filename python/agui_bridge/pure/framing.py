"""The framing core (contract section 1) that both input dialects drive.

A dialect front end validates an item completely before calling in here
(``check_fresh`` included), so nothing else in this module raises on bad
input: a call either emits events into ``out`` or counts the input as dropped.
"""

from __future__ import annotations

from uuid import uuid4

from ..errors import CrumbError
from . import subagents
from .json_values import NotJson, compact, copy_json, dumps, frames, is_unicode, normalize
from .messages import RunMessages
from .usage import PROTOCOL_VERSION, Usage, speaks_v1


def check_text(value, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, not {type(value).__name__}")
    if not is_unicode(value):
        raise ValueError(f"{name} must be valid unicode")
    return value


def _created_id(value, name: str) -> str:
    return uuid4().hex if value is None else check_text(value, name)


def _created_held(held_ids) -> frozenset:
    if held_ids is None:
        return frozenset()
    wrong = TypeError(f"held_ids must be an iterable of strings, not {type(held_ids).__name__}")
    # A lone string is iterable too, but as its characters: surely a mistake.
    if isinstance(held_ids, (str, bytes)):
        raise wrong
    try:
        held_ids = iter(held_ids)
    except TypeError:
        raise wrong from None
    held = set()
    for held_id in held_ids:
        if not isinstance(held_id, str):
            raise TypeError(f"each held id must be a string, not {type(held_id).__name__}")
        if not is_unicode(held_id):
            raise ValueError("held_ids must be valid unicode")
        held.add(str.__str__(held_id))
    return frozenset(held)


_MAX_ID = 2**63 - 1


def _created_event_ids(event_ids, first_id) -> tuple[bool, int]:
    """The event-id options (contract section 7): a bool, and an n from 1 to 2**63 - 1."""
    if event_ids is None:
        event_ids = False
    elif not isinstance(event_ids, bool):
        raise TypeError(f"event_ids must be a bool, not {type(event_ids).__name__}")
    if first_id is None:
        first_id = 1
    elif not isinstance(first_id, int) or isinstance(first_id, bool):
        raise TypeError(f"first_id must be an integer, not {type(first_id).__name__}")
    elif not 1 <= first_id <= _MAX_ID:
        raise ValueError("first_id must be from 1 to 2**63 - 1")
    return event_ids, int(first_id)


def _created_protocol(protocol_version) -> bool:
    """What the client declared (contract section 8): 1.0 or later, or not."""
    if protocol_version is None:
        return False
    return speaks_v1(check_text(protocol_version, "protocol_version"))


def _created_state(state) -> dict:
    if state is None:
        return {}
    if not isinstance(state, dict):
        raise TypeError(f"state must be a dict, not {type(state).__name__}")
    try:
        return normalize(state)
    except NotJson:
        raise ValueError("state must be a JSON object") from None


class Framer:
    __slots__ = (
        "close_text_always",
        "coalesce_bytes",
        "counters",
        "dropped",
        "errored",
        "event_ids",
        "finished",
        "held",
        "ignored",
        "known_tools",
        "latest_reasoning_id",
        "latest_text_id",
        "messages",
        "next_event_id",
        "open_parts",
        "open_reasoning_parts",
        "open_tools",
        "out",
        "pending",
        "protocol_v1",
        "reasoning_id",
        "reasoning_ids",
        "run_id",
        "started",
        "state",
        "steps",
        "subagent_ids",
        "subagents",
        "text_id",
        "thread_id",
        "told_cancelled",
        "usage",
        "used_ids",
    )

    def __init__(
        self,
        thread_id,
        run_id,
        state,
        *,
        close_text_always: bool,
        held_ids=None,
        event_ids=None,
        first_id=None,
        protocol_version=None,
    ):
        self.thread_id = _created_id(thread_id, "thread_id")
        self.run_id = _created_id(run_id, "run_id")
        self.state = _created_state(state)
        # The ids the thread already holds (contract section 6): generated ids
        # skip them, and an agent may not open anything under one of them.
        self.held = _created_held(held_ids)
        # Every event leaves through ``taken`` (numbered here, contract
        # section 7), counted whether or not its frame carries the id.
        self.event_ids, self.next_event_id = _created_event_ids(event_ids, first_id)
        # The client declared AG-UI 1.0 or later (contract section 8).
        self.protocol_v1 = _created_protocol(protocol_version)
        self.usage = Usage()
        # The open reasoning message, the latest one, and all of the run's.
        self.reasoning_id: str | None = None
        self.latest_reasoning_id: str | None = None
        self.reasoning_ids: set[str] = set()
        self.open_reasoning_parts: list[str] = []
        # What the run has made so far, for snapshot().
        self.messages = RunMessages()
        # What the open text message streamed so far: an append per delta.
        self.open_parts: list[str] = []
        self.started = False
        self.finished = False
        self.errored = False  # the run ended with RUN_ERROR
        self.told_cancelled = False  # the run ended with the cancelled outcome (a 1.0 stop)
        self.out: list[dict] = []
        self.text_id: str | None = None
        self.latest_text_id: str | None = None
        # dicts, not sets: closing order is the order of opening.
        self.open_tools: dict[str, None] = {}
        self.known_tools: set[str] = set()
        self.steps: dict[str, None] = {}
        # AG-UI 1.0 subagents (pure/subagents.py): the open ones, and every id started.
        self.subagents: dict[str, dict | None] = {}
        self.subagent_ids: set[str] = set()
        self.used_ids: set[str] = set()
        self.counters = {"m": 0, "r": 0, "t": 0, "i": 0, "th": 0, "a": 0}
        self.dropped = 0
        self.ignored = 0
        self.close_text_always = close_text_always
        # Coalescing (off: 0): the byte cap of a merged delta, and the delta
        # held back: [event type, key, id, parts, UTF-8 bytes] (see ``hold``).
        self.coalesce_bytes = 0
        self.pending: list | None = None

    # -- coalescing: consecutive deltas for one message or call merged --------

    def hold(self, event_type: str, key: str, target: str, delta: str) -> None:
        """Holds a content or arguments delta of the open message or call, merged
        with the held one when it is for the same; held bytes reaching the cap go out."""
        size = len(delta.encode("utf-8"))
        pending = self.pending
        if pending is not None and (
            pending[2] != target
            or pending[0] != event_type
            or pending[4] + size > self.coalesce_bytes
        ):
            self.flush_held()
            pending = None
        if pending is None:
            self.pending = pending = [event_type, key, target, [], 0]
        pending[3].append(delta)
        pending[4] += size
        if pending[4] >= self.coalesce_bytes:
            self.flush_held()

    def flush_held(self) -> None:
        """Emits the held delta as one event (recorded for the snapshot only now)."""
        pending = self.pending
        if pending is None:
            return
        self.pending = None
        event_type, key, target, parts, _ = pending
        delta = "".join(parts)
        if event_type == "TEXT_MESSAGE_CONTENT":
            self.open_parts.append(delta)
        else:
            self.messages.tool_args(target, delta)
        self.out.append({"type": event_type, key: target, "delta": delta})

    def emit(self, event: dict) -> None:
        if self.pending is not None:
            self.flush_held()
        if (
            self.close_text_always
            and self.text_id is not None
            and event["type"] != "TEXT_MESSAGE_CONTENT"
        ):
            self.close_text()
        self.out.append(event)

    def new_id(self, kind: str) -> str:
        n = self.counters[kind]
        while True:
            n += 1
            candidate = f"{self.run_id}:{kind}{n}"
            if candidate not in self.used_ids and candidate not in self.held:
                break
        self.counters[kind] = n
        self.used_ids.add(candidate)
        return candidate

    def taken(self, events: list[dict]) -> list[dict]:
        """Numbers the events of one call as they leave."""
        self.next_event_id += len(events)
        return events

    def framed(self, events: list[dict], first: int) -> bytes:
        """The frames of ``events`` numbered from ``first`` (what ``taken`` gave them)."""
        if not self.event_ids:
            return frames(events)
        return b"".join(
            [b"id: %d\ndata: %b\n\n" % (first + at, dumps(e)) for at, e in enumerate(events)]
        )

    def run_snapshot(self) -> tuple[list[dict], list[dict]]:
        """This run's messages (open text and arguments left empty) and the
        events that re-open what is open, carrying what it streamed."""
        messages = self.messages
        return (
            messages.messages(self.text_id, self.open_tools),
            subagents.opening(self)
            + messages.open_events(
                self.steps,
                self.reasoning_id,
                "".join(self.open_reasoning_parts),
                self.text_id,
                "".join(self.open_parts),
                self.open_tools,
            ),
        )

    def check_fresh(self, item_type: str, field: str, value: str) -> None:
        """An agent-supplied id that opens a tool call or an interrupt must be new
        to the thread: reusing one would merge this run's output into an earlier
        message on the client and lose it in the store."""
        if value in self.held:
            raise CrumbError(
                f"{item_type}: '{field}' {compact(value)} is already held by the thread"
            )

    def start(self, thread_id: str | None = None, run_id: str | None = None) -> None:
        if thread_id is not None:
            self.thread_id = thread_id
        if run_id is not None:
            self.run_id = run_id
        self.started = True
        self.flush_held()
        event = {"type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id}
        if self.protocol_v1:
            event["protocolVersion"] = PROTOCOL_VERSION
        self.out.append(event)

    def text(self, delta: str) -> None:
        if not delta:
            return
        if self.text_id is None:
            self.flush_held()
            self.close_reasoning()
            message_id = self.new_id("m")
            self.out.append(
                {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"}
            )
            self.messages.open_text(message_id)
            self.text_id = self.latest_text_id = message_id
        if self.coalesce_bytes:
            self.hold("TEXT_MESSAGE_CONTENT", "messageId", self.text_id, delta)
            return
        self.out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": self.text_id, "delta": delta})
        self.open_parts.append(delta)

    def open_text_as(self, message_id: str) -> None:
        """Opens a text message under a given id (closing the open one); content follows."""
        self.close_reasoning()
        self.close_text()
        self.flush_held()
        self.used_ids.add(message_id)
        start = {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"}
        self.out.append(start)
        self.messages.open_text(message_id)
        self.text_id = self.latest_text_id = message_id

    def close_text(self) -> None:
        if self.text_id is not None:
            self.flush_held()
            message_id, self.text_id = self.text_id, None
            self.messages.close_text(message_id, "".join(self.open_parts))
            self.open_parts = []
            self.out.append({"type": "TEXT_MESSAGE_END", "messageId": message_id})

    def tool_start(self, tool_call_id: str, tool_name: str) -> bool:
        if tool_call_id in self.known_tools:
            self.dropped += 1
            return False
        self.close_reasoning()
        self.close_text()
        self.known_tools.add(tool_call_id)
        self.used_ids.add(tool_call_id)
        self.open_tools[tool_call_id] = None
        event = {"type": "TOOL_CALL_START", "toolCallId": tool_call_id, "toolCallName": tool_name}
        if self.latest_text_id is not None:
            event["parentMessageId"] = self.latest_text_id
        self.messages.tool_start(event)
        self.emit(event)
        return True

    def last_open_tool(self) -> str | None:
        return next(reversed(self.open_tools), None)

    def tool_args(self, tool_call_id: str, delta: str) -> None:
        if tool_call_id not in self.open_tools:
            self.dropped += 1
        elif delta and self.coalesce_bytes:
            # As emit() would for the event: the text closes first (crumbs).
            if self.close_text_always and self.text_id is not None:
                self.close_text()
            self.hold("TOOL_CALL_ARGS", "toolCallId", tool_call_id, delta)
        elif delta:
            self.messages.tool_args(tool_call_id, delta)
            self.emit({"type": "TOOL_CALL_ARGS", "toolCallId": tool_call_id, "delta": delta})

    def tool_end(self, tool_call_id: str) -> None:
        if tool_call_id not in self.open_tools:
            self.dropped += 1
            return
        del self.open_tools[tool_call_id]
        self.emit({"type": "TOOL_CALL_END", "toolCallId": tool_call_id})

    def tool_result(self, tool_call_id: str, content: str) -> None:
        if tool_call_id not in self.known_tools:
            self.dropped += 1
            return
        if tool_call_id in self.open_tools:
            self.tool_end(tool_call_id)
        event = {
            "type": "TOOL_CALL_RESULT",
            "messageId": self.new_id("r"),
            "toolCallId": tool_call_id,
            "content": content,
            "role": "tool",
        }
        self.messages.tool_result(event)
        self.emit(event)

    def step_start(self, name: str) -> None:
        if name in self.steps:
            self.dropped += 1
            return
        self.steps[name] = None
        self.emit({"type": "STEP_STARTED", "stepName": name})

    def step_end(self, name: str) -> None:
        if name not in self.steps:
            self.dropped += 1
            return
        del self.steps[name]
        self.emit({"type": "STEP_FINISHED", "stepName": name})

    def snapshot(self, updates: dict) -> None:
        self.state.update(updates)
        # A deep copy: a caller changing a returned event must not change the run.
        self.emit({"type": "STATE_SNAPSHOT", "snapshot": copy_json(self.state)})

    def state_delta(self, state: dict, delta: list) -> None:
        """``state`` is the run state with ``delta`` applied (and shares nothing with it)."""
        self.state = state
        self.emit({"type": "STATE_DELTA", "delta": delta})

    def custom(self, name: str, value) -> None:
        self.emit({"type": "CUSTOM", "name": name, "value": value})

    def close_all(self) -> None:
        self.close_reasoning()
        self.close_text()
        for tool_call_id in list(self.open_tools):
            self.tool_end(tool_call_id)
        for name in reversed(list(self.steps)):
            self.step_end(name)

    def run_finished(self, result=None, outcome=None) -> None:
        self.close_all()
        subagents.close_open(self)
        event = {"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id}
        if result is not None:
            event["result"] = result
        if outcome is not None:
            event["outcome"] = outcome
        self._put_usage(event)
        self.emit(event)
        self.finished = True

    def run_error(self, message: str, code: str | None = None) -> None:
        self.close_all()
        subagents.close_open(self, message, code)
        event = {"type": "RUN_ERROR", "message": message}
        if code is not None:
            event["code"] = code
        self._put_usage(event)
        self.emit(event)
        self.finished = True
        self.errored = True

    def _put_usage(self, event: dict) -> None:
        """A 1.0 client's terminal event carries the run's token usage (contract section 8)."""
        if self.protocol_v1:
            usage = self.usage.value()
            if usage is not None:
                event["usage"] = usage

    def run_cancelled(self) -> None:
        """A run stopped by a cancel: a 1.0 client is told so (contract section 8)."""
        self.told_cancelled = True
        self.run_finished(None, {"type": "cancelled"})

    # ---- reasoning (contract section 8): one message open at a time, never
    # with text; START and MESSAGE_START (END and MESSAGE_END) go together.

    def reasoning(self, delta: str) -> None:
        """A delta of the open reasoning message, opening one (fresh id) when none is."""
        if not delta:
            return
        if self.reasoning_id is None:
            self._open_reasoning(self.new_id("th"))
        self.flush_held()
        self.out.append(
            {"type": "REASONING_MESSAGE_CONTENT", "messageId": self.reasoning_id, "delta": delta}
        )
        self.open_reasoning_parts.append(delta)

    def open_reasoning_as(self, message_id: str) -> None:
        """Opens a reasoning message under a given id (closing what is open)."""
        self.close_reasoning()
        self.used_ids.add(message_id)
        self._open_reasoning(message_id)

    def _open_reasoning(self, message_id: str) -> None:
        self.close_text()
        self.flush_held()
        self.out.append({"type": "REASONING_START", "messageId": message_id})
        self.out.append(
            {"type": "REASONING_MESSAGE_START", "messageId": message_id, "role": "reasoning"}
        )
        self.messages.open_reasoning(message_id)
        self.reasoning_ids.add(message_id)
        self.reasoning_id = self.latest_reasoning_id = message_id

    def close_reasoning(self) -> None:
        if self.reasoning_id is not None:
            self.flush_held()
            message_id, self.reasoning_id = self.reasoning_id, None
            self.messages.close_reasoning(message_id, "".join(self.open_reasoning_parts))
            self.open_reasoning_parts = []
            self.out.append({"type": "REASONING_MESSAGE_END", "messageId": message_id})
            self.out.append({"type": "REASONING_END", "messageId": message_id})

    def end_reasoning(self) -> None:
        """``reasoning:end``: closes the open reasoning message, else a drop."""
        if self.reasoning_id is None:
            self.dropped += 1
        else:
            self.close_reasoning()

    def encrypted(self, subtype: str, entity_id: str | None, value: str) -> None:
        """REASONING_ENCRYPTED_VALUE for an entity of this run: a reasoning message
        (``message``; by default the open, else the latest one) or a tool call
        (``tool-call``). Naming nothing of this run, it is dropped: the client
        would attach it to a message the run never made, and the store could not."""
        entity = None
        if subtype == "tool-call":
            if entity_id is not None and entity_id in self.known_tools:
                entity = entity_id
        elif entity_id is None:
            entity = self.reasoning_id
            if entity is None:
                entity = self.latest_reasoning_id
        elif entity_id in self.reasoning_ids:
            entity = entity_id
        if entity is None:
            self.dropped += 1
            return
        self.messages.encrypted(subtype, entity, value)
        self.emit(
            {
                "type": "REASONING_ENCRYPTED_VALUE",
                "subtype": subtype,
                "entityId": entity,
                "encryptedValue": value,
            }
        )


SUBTYPES = ("message", "tool-call")


def check_subtype(item_type: str, subtype) -> None:
    """A subtype REASONING_ENCRYPTED_VALUE knows, or the error naming the field."""
    if subtype is not None and subtype not in SUBTYPES:
        raise CrumbError(f'{item_type}: \'subtype\' must be "message" or "tool-call"')


def error_text(exc) -> str:
    """str(exc), with any lone surrogate replaced, so it is always JSON."""
    return str(exc).encode("utf-8", "replace").decode("utf-8")
