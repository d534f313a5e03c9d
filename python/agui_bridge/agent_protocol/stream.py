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

from ..runs.history import History
from .messages import all_to_langgraph, to_langgraph

MODES = frozenset({"values", "updates", "messages-tuple", "custom", "agui"})

_STEP_ENDS = {"TEXT_MESSAGE_END", "TOOL_CALL_END", "TOOL_CALL_RESULT", "STATE_SNAPSHOT"}


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

    def __init__(self, modes, node: str, thread_id: str, run_id: str, base, state):
        self.modes = modes
        self.node = node
        self.base = list(base)
        self.state = dict(state)
        self.history = History(run_id)
        self.meta = {
            "langgraph_node": node,
            "langgraph_step": 1,
            "thread_id": thread_id,
            "run_id": run_id,
        }

    def values(self) -> dict:
        return values_of(self.state, self.base + self.history.snapshot_messages())

    def feed(self, event: dict) -> list[tuple[str, object]]:
        modes = self.modes
        kind = event.get("type")
        parts: list[tuple[str, object]] = []
        if "agui" in modes:
            parts.append(("agui", event))
        update = self._update(event, kind)
        self.history.record([event])
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
                message = self.history.by_id.get(event.get("messageId"))
                if message is not None:
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
        return parts

    def _update(self, event: dict, kind) -> dict | None:
        if kind != "STATE_SNAPSHOT" or not isinstance(event.get("snapshot"), dict):
            return None
        snapshot = event["snapshot"]
        changed = {k: v for k, v in snapshot.items() if self.state.get(k, _ABSENT) != v}
        self.state = dict(snapshot)
        return changed

    def _message_update(self, event: dict, kind, update):
        if kind == "TEXT_MESSAGE_END":
            message = self.history.by_id.get(event.get("messageId"))
        elif kind == "TOOL_CALL_END":
            message = self.history.owners.get(event.get("toolCallId"))
        else:
            return update
        converted = to_langgraph(message) if message is not None else None
        return {"messages": [converted]} if converted is not None else update

    def _call_chunk(self, event: dict, kind) -> dict:
        call_id = event.get("toolCallId")
        owner = self.history.owners.get(call_id)
        call = {"id": call_id, "index": 0, "type": "tool_call_chunk"}
        if kind == "TOOL_CALL_START":
            call.update(name=event.get("toolCallName"), args="")
        else:
            call.update(name=None, args=event.get("delta", ""))
        return {
            "type": "AIMessageChunk",
            "content": "",
            "id": owner.get("id") if owner is not None else None,
            "tool_call_chunks": [call],
        }


_ABSENT = object()
