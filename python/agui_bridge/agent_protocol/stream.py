"""A run's AG-UI events as Agent Protocol stream parts.

The run log holds one run's AG-UI frames; an Agent Protocol stream is another
reader of it. ``Projector`` turns each event into the parts of the modes asked
for: ``values`` (the thread's values after each step and at the end),
``updates`` (``{node: what changed}``), ``messages`` (``messages-tuple``: token
chunks with their metadata), ``custom`` (CUSTOM events) and ``agui`` (the
AG-UI events themselves). The node is the agent: an agent is a one-node graph.

A step is what completes a piece of the thread: a text message, a tool call,
a tool result, a state snapshot. A paused run ends with ``__interrupt__``, a
failed one with an ``error`` part.
"""

from __future__ import annotations

import uuid

from .._select import create_agui_repairer
from .lc_events import LcEvents
from .messages import all_to_langgraph, to_langgraph

MODES = frozenset({"values", "updates", "messages-tuple", "custom", "agui", "events"})

_STEP_ENDS = {"TEXT_MESSAGE_END", "TOOL_CALL_END", "TOOL_CALL_RESULT", "STATE_SNAPSHOT"}

# What opens and closes a subagent's namespace under stream_subgraphs: its step
# in a 0.0.x client's run, its SUBAGENT_* in a 1.0 client's (docs/events-dialect.md).
_OPENS = {"STEP_STARTED", "SUBAGENT_STARTED"}
_CLOSES = {"STEP_FINISHED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"}


def _step_of(event: dict, kind) -> str | None:
    """The step naming a subagent's namespace: a 1.0 subagent is named as the
    0.0.x step the events dialect makes of it, so both runs' parts are named alike."""
    if kind in ("STEP_STARTED", "STEP_FINISHED"):
        return event.get("stepName")
    return f"subagent_{event.get('subagentRunId')}"


def values_of(state: dict, messages: list[dict], interrupts: list[dict] | None = None) -> dict:
    """The Agent Protocol values of a thread: the agent's state, as AG-UI sees it, with
    the thread's messages under ``messages`` (LangGraph's place for them) unless the
    agent keeps a ``messages`` key of its own."""
    values = dict(state)
    values.setdefault("messages", all_to_langgraph(messages))
    if interrupts:
        values["__interrupt__"] = interrupts_of(interrupts)
    return values


def interrupts_of(pending: list[dict]) -> list[dict]:
    """Stored interrupts (``{id, reason, message?, ...}``) as LangGraph's ``{id, value}``."""
    out = []
    for interrupt in pending:
        value = {k: v for k, v in interrupt.items() if k != "id"}
        entry = {"id": interrupt.get("id"), "value": value}
        if isinstance(interrupt.get("responseSchema"), dict):
            entry["response_schema"] = interrupt["responseSchema"]
        out.append(entry)
    return out


class Projector:
    """One reader's mapping of a run's events to stream parts (``(event, data)``)."""

    def __init__(self, modes, node: str, thread_id: str, run_id: str, base, state, subgraphs=False):
        self.modes = modes
        self.node = node
        self.base = list(base)
        self.state = dict(state)
        # The run's events through a transformer of the events dialect (they
        # are clean: it passes them on as they are), whose snapshot() is the
        # one reading of what the run has made so far.
        self.t = create_agui_repairer(thread_id, run_id)
        self.owners: dict = {}  # a tool call's id -> its message's id
        self.meta = {
            "langgraph_node": node,
            "langgraph_step": 1,
            "thread_id": thread_id,
            "run_id": run_id,
            "langgraph_checkpoint_ns": "",
        }
        self.lc = LcEvents(node, run_id, self.meta) if "events" in modes else None
        # stream_subgraphs: the subagents open (their steps), whose parts are
        # named "{mode}|{namespace}" as LangGraph names a subgraph's.
        self.subgraphs = subgraphs
        self.ns: list[str] = []
        self.ns_steps: list[str] = []  # the step that opened each of ``ns``

    def made(self) -> list[dict]:
        """The run's messages so far, what is open with what it streamed."""
        return made_so_far(self.t.snapshot())

    def values(self) -> dict:
        return values_of(self.state, self.base + self.made())

    def feed(self, event: dict) -> list[tuple[str, object]]:
        modes = self.modes
        kind = event.get("type")
        parts: list[tuple[str, object]] = []
        if "agui" in modes:
            parts.append(("agui", event))
        update = self._update(event, kind)
        if self.subgraphs and kind in _OPENS:
            self._enter(_step_of(event, kind))
        self.t(event)
        lc = self.lc
        if lc is not None:
            if kind == "RUN_STARTED" and "values" in modes:
                # LangGraph streams the input state first; the client keeps the
                # newest values as the state it shows.
                parts.append(("values", self.values()))
            lc.meta = self.meta
            # Before the messages-tuple parts: the client reads those only while
            # it saw no events part of a chat model.
            parts.extend(("events", e) for e in lc.feed(event, kind, self))
        if kind == "TEXT_MESSAGE_CONTENT" and "messages-tuple" in modes:
            chunk = {"type": "AIMessageChunk", "content": event.get("delta", "")}
            chunk["id"] = event.get("messageId")
            parts.append(("messages", [chunk, self.meta]))
        elif kind in ("TOOL_CALL_START", "TOOL_CALL_ARGS") and "messages-tuple" in modes:
            parts.append(("messages", [self._call_chunk(event, kind), self.meta]))
        elif kind == "CUSTOM" and "custom" in modes:
            parts.append(("custom", {"name": event.get("name"), "value": event.get("value")}))
        if kind in _STEP_ENDS:
            if kind == "TOOL_CALL_RESULT":
                message = _result_of(self.made(), event.get("toolCallId"))
                if message is not None:
                    # Under the id the stream gave it (the transformer makes its own).
                    message = {**message, "id": event.get("messageId", message["id"])}
                    if "messages-tuple" in modes:
                        parts.append(("messages", [to_langgraph(message), self.meta]))
                    update = {"messages": [to_langgraph(message)]}
            else:
                update = self._message_update(event, kind, update)
            if update and "updates" in modes:
                parts.append(("updates", {self.node: update}))
            if "values" in modes:
                parts.append(("values", self.values()))
            self.meta = {**self.meta, "langgraph_step": self.meta["langgraph_step"] + 1}
        elif kind == "RUN_FINISHED":
            if lc is not None:
                parts.extend(("events", e) for e in lc.end(self, self.values()))
            outcome = event.get("outcome")
            pending = outcome.get("interrupts") if isinstance(outcome, dict) else None
            if pending and outcome.get("type") == "interrupt":
                interrupts = interrupts_of(pending)
                if "updates" in modes:
                    parts.append(("updates", {"__interrupt__": interrupts}))
                if "values" in modes:
                    parts.append(("values", {**self.values(), "__interrupt__": interrupts}))
            elif "values" in modes:
                parts.append(("values", self.values()))
        elif kind == "RUN_ERROR":
            code = event.get("code")
            error = code if isinstance(code, str) and code else "RunError"
            parts.append(("error", {"error": error, "message": event.get("message", "")}))
        if self.ns:
            parts = [(p if p == "error" else f"{p}|{self.ns[-1]}", d) for p, d in parts]
            if kind in _CLOSES:
                self._leave(_step_of(event, kind))
        return parts

    def _enter(self, step) -> None:
        """A subagent's step opens its namespace (``subagent_{id}:{task}``, nested in
        the open one)."""
        if not isinstance(step, str) or not step.startswith("subagent_"):
            return
        task = uuid.uuid5(uuid.NAMESPACE_URL, f"{self.meta['run_id']}:{len(self.ns)}:{step}")
        inner = f"{step}:{task}"
        self.ns.append(f"{self.ns[-1]}|{inner}" if self.ns else inner)
        self.ns_steps.append(step)
        self.meta = {**self.meta, "langgraph_checkpoint_ns": self.ns[-1]}

    def _leave(self, step) -> None:
        """A subagent's end closes its namespace, wherever it is: subagents that run
        side by side (AG-UI 1.0 allows it) may end in any order, and the parts
        after the last one ends are the parent's again."""
        # By the step itself: an id may hold ":" or "|", which a namespace's text
        # cannot tell apart (``s1`` would close ``s1:retry``'s).
        for at in range(len(self.ns_steps) - 1, -1, -1):
            if self.ns_steps[at] == step:
                break
        else:
            return
        del self.ns[at]
        del self.ns_steps[at]
        self.meta = {**self.meta, "langgraph_checkpoint_ns": self.ns[-1] if self.ns else ""}

    # What the events parts look up of the run so far (lc_events.LcEvents.feed).

    def owner(self, call_id) -> str | None:
        owner = _owner_of(self.made(), call_id)
        return owner["id"] if owner is not None else None

    def message(self, message_id) -> dict | None:
        return next((m for m in self.made() if m["id"] == message_id), None)

    def call(self, call_id) -> dict | None:
        owner = _owner_of(self.made(), call_id)
        for call in (owner or {}).get("toolCalls") or ():
            if call["id"] == call_id:
                return call["function"]
        return None

    def _update(self, event: dict, kind) -> dict | None:
        if kind != "STATE_SNAPSHOT" or not isinstance(event.get("snapshot"), dict):
            return None
        snapshot = event["snapshot"]
        changed = {k: v for k, v in snapshot.items() if self.state.get(k, _ABSENT) != v}
        self.state = dict(snapshot)
        return changed

    def _message_update(self, event: dict, kind, update):
        if kind == "TEXT_MESSAGE_END":
            message_id = event.get("messageId")
            message = next((m for m in self.made() if m["id"] == message_id), None)
        elif kind == "TOOL_CALL_END":
            message = _owner_of(self.made(), event.get("toolCallId"))
        else:
            return update
        converted = to_langgraph(message) if message is not None else None
        return {"messages": [converted]} if converted is not None else update

    def _call_chunk(self, event: dict, kind) -> dict:
        call_id = event.get("toolCallId")
        if kind == "TOOL_CALL_START":
            owner = _owner_of(self.made(), call_id)
            # Its arguments follow: one look-up per call.
            self.owners[call_id] = owner.get("id") if owner is not None else None
        call = {"id": call_id, "index": 0, "type": "tool_call_chunk"}
        if kind == "TOOL_CALL_START":
            call.update(name=event.get("toolCallName"), args="")
        else:
            call.update(name=None, args=event.get("delta", ""))
        return {
            "type": "AIMessageChunk",
            "content": "",
            "id": self.owners.get(call_id),
            "tool_call_chunks": [call],
        }


def made_so_far(snapshot: dict) -> list[dict]:
    """A snapshot's messages with what is open filled in with what it streamed
    (``open`` carries it: one content event after each re-opening START)."""
    messages = snapshot["messages"]
    streamed = {}
    for event in snapshot["open"]:
        kind = event["type"]
        if kind == "TEXT_MESSAGE_CONTENT":
            streamed[event["messageId"]] = event["delta"]
        elif kind == "TOOL_CALL_ARGS":
            streamed[event["toolCallId"]] = event["delta"]
    if not streamed:
        return messages
    for message in messages:
        if message["id"] in streamed and "content" in message:
            message["content"] = streamed[message["id"]]
        for call in message.get("toolCalls") or ():
            if call["id"] in streamed:
                call["function"]["arguments"] = streamed[call["id"]]
    return messages


def _owner_of(messages: list[dict], tool_call_id) -> dict | None:
    for message in messages:
        if any(call["id"] == tool_call_id for call in message.get("toolCalls") or ()):
            return message
    return None


def _result_of(messages: list[dict], tool_call_id) -> dict | None:
    for message in reversed(messages):
        if message["role"] == "tool" and message.get("toolCallId") == tool_call_id:
            return message
    return None


_ABSENT = object()
