"""A run's AG-UI events as the thread-centric protocol's events (langgraph-sdk's
``client.threads.stream()``, the ``langchain_protocol`` shapes).

Each AG-UI event n of a run becomes zero or more protocol events, all at
the root namespace (an agent is a one-node graph):

- ``lifecycle``: ``running`` at RUN_STARTED; ``completed``, ``interrupted``
  (after one ``input.requested`` per pending interrupt) or ``failed`` at the end;
- ``messages``: an assistant text message, or a tool call (as the AI message
  that carries it), as ``message-start`` / ``content-block-start`` /
  ``-delta`` / ``-finish`` / ``message-finish``;
- ``tools``: ``tool-started`` once a call's arguments are complete,
  ``tool-finished`` with its result;
- ``values``, ``updates``, ``custom``: what the Agent Protocol's stream modes
  make of the event (``stream.Projector``), in the protocol's shapes.

Every protocol event has a ``seq``, the thread's cursor (``since``): the
run's claim of its thread (``RunLog.claim``: larger for each later run), the
AG-UI event id n and the event's index among those made from n. A reader
resuming after seq s gets exactly the events after it, on any node.
"""

from __future__ import annotations

import time

import orjson

from .stream import Projector

# seq = claim << RUN_SHIFT | n << EVENT_SHIFT | index: 2^26 events per run, 1024
# protocol events per AG-UI event; JSON-safe (2^53) for 2^17 claims of a thread.
RUN_SHIFT = 36
EVENT_SHIFT = 10
_INDEX = (1 << EVENT_SHIFT) - 1

CHANNELS = frozenset(
    {
        "values",
        "updates",
        "messages",
        "tools",
        "lifecycle",
        "input",
        "checkpoints",
        "tasks",
        "custom",
    }
)


def seq_of(claim: int, n: int, index: int) -> int:
    return (claim << RUN_SHIFT) | (n << EVENT_SHIFT) | min(index, _INDEX)


def split_seq(seq: int) -> tuple[int, int, int]:
    """``(claim, n, index)`` of a seq."""
    return (
        seq >> RUN_SHIFT,
        (seq >> EVENT_SHIFT) & ((1 << (RUN_SHIFT - EVENT_SHIFT)) - 1),
        seq & _INDEX,
    )


def channel_of(method: str, data) -> str:
    if method == "custom":
        name = data.get("name") if isinstance(data, dict) else None
        return f"custom:{name}" if name else "custom"
    if method == "input.requested":
        return "input"
    return method


class Filter:
    """A subscription's channels and namespaces (``EventStreamRequest``)."""

    __slots__ = ("channels", "root")

    def __init__(self, channels, namespaces, depth):
        self.channels = frozenset(channels)
        # Every event here is at the root: it matches a prefix [] (or no prefixes).
        self.root = namespaces is None or any(len(ns) == 0 for ns in namespaces)

    def wants(self, method: str, data) -> bool:
        if not self.root:
            return False
        channel = channel_of(method, data)
        if channel in self.channels:
            return True
        return channel.startswith("custom:") and "custom" in self.channels


def frame(seq: int, method: str, data) -> bytes:
    event = {
        "type": "event",
        "event_id": str(seq),
        "seq": seq,
        "method": method,
        "params": {"namespace": [], "timestamp": int(time.time() * 1000), "data": data},
    }
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (seq, method.encode(), orjson.dumps(event))


class RunEvents:
    """One run's AG-UI events → ``[(method, data), …]`` per event, in order."""

    def __init__(self, projector: Projector, node: str, run_id: str):
        self.projector = projector
        self.node = node
        self.run_id = run_id
        self.texts: dict[str, str] = {}  # open text messages: id -> text so far
        self.calls: dict[str, dict] = {}  # open tool calls: id -> {message, name, args}
        self.open: set[str] = set()  # the ids of the messages open on the stream

    def feed(self, event: dict) -> list[tuple[str, object]]:
        kind = event.get("type")
        out: list[tuple[str, object]] = []
        if kind == "RUN_STARTED":
            out.append(("lifecycle", self._lifecycle("running")))
        self._messages(event, kind, out)
        for name, payload in self.projector.feed(event):
            if name == "values":
                out.append(("values", payload))
            elif name == "updates" and "__interrupt__" not in payload:
                for node, update in payload.items():
                    out.append(("updates", {"node": node, "values": update}))
            elif name == "custom":
                out.append(("custom", {"name": payload["name"], "payload": payload["value"]}))
        if kind == "RUN_FINISHED":
            outcome = event.get("outcome")
            pending = outcome.get("interrupts") if isinstance(outcome, dict) else None
            if pending and outcome.get("type") == "interrupt":
                for interrupt in pending:
                    value = {k: v for k, v in interrupt.items() if k != "id"}
                    data = {"interrupt_id": interrupt.get("id"), "value": value, "payload": value}
                    out.append(("input.requested", data))
                out.append(("lifecycle", self._lifecycle("interrupted")))
            else:
                out.append(("lifecycle", self._lifecycle("completed")))
        elif kind == "RUN_ERROR":
            failed = self._lifecycle("failed")
            failed["error"] = event.get("message") or event.get("code") or "the run failed"
            out.append(("lifecycle", failed))
        return out

    def _lifecycle(self, what: str) -> dict:
        return {"event": what, "graph_name": self.node, "run_id": self.run_id}

    def _start(self, message_id: str, out: list) -> None:
        metadata = {"langgraph_node": self.node, "run_id": self.run_id}
        start = {"event": "message-start", "role": "ai", "id": message_id, "metadata": metadata}
        out.append(("messages", start))
        self.open.add(message_id)

    def _messages(self, event: dict, kind, out: list) -> None:
        if kind == "TEXT_MESSAGE_START":
            message_id = event.get("messageId")
            self.texts[message_id] = ""
            self._start(message_id, out)
            block = {"type": "text", "text": ""}
            out.append(("messages", {"event": "content-block-start", "index": 0, "content": block}))
        elif kind == "TEXT_MESSAGE_CONTENT" and event.get("messageId") in self.texts:
            delta = event.get("delta", "")
            self.texts[event["messageId"]] += delta
            change = {"type": "text-delta", "text": delta}
            out.append(("messages", {"event": "content-block-delta", "index": 0, "delta": change}))
        elif kind == "TEXT_MESSAGE_END" and event.get("messageId") in self.texts:
            message_id = event["messageId"]
            block = {"type": "text", "text": self.texts.pop(message_id)}
            out.append(
                ("messages", {"event": "content-block-finish", "index": 0, "content": block})
            )
            out.append(("messages", {"event": "message-finish"}))
            self.open.discard(message_id)
        elif kind == "TOOL_CALL_START":
            call_id = event.get("toolCallId")
            parent = event.get("parentMessageId")
            # The AI message carrying the call; its own stream when that one is still open.
            message_id = parent if parent and parent not in self.open else call_id
            name = event.get("toolCallName")
            self.calls[call_id] = {"message": message_id, "name": name, "args": ""}
            self._start(message_id, out)
            block = {"type": "tool_call_chunk", "id": call_id, "name": name, "args": ""}
            out.append(("messages", {"event": "content-block-start", "index": 0, "content": block}))
        elif kind == "TOOL_CALL_ARGS" and event.get("toolCallId") in self.calls:
            delta = event.get("delta", "")
            call = self.calls[event["toolCallId"]]
            call["args"] += delta
            change = {"type": "tool-call-delta", "args": delta}
            out.append(("messages", {"event": "content-block-delta", "index": 0, "delta": change}))
        elif kind == "TOOL_CALL_END" and event.get("toolCallId") in self.calls:
            call_id = event["toolCallId"]
            call = self.calls.pop(call_id)
            args = _parsed(call["args"])
            block = {"type": "tool_call", "id": call_id, "name": call["name"], "args": args}
            out.append(
                ("messages", {"event": "content-block-finish", "index": 0, "content": block})
            )
            out.append(("messages", {"event": "message-finish"}))
            self.open.discard(call["message"])
            started = {
                "event": "tool-started",
                "tool_call_id": call_id,
                "tool_name": call["name"],
                "input": args,
            }
            out.append(("tools", started))
        elif kind == "TOOL_CALL_RESULT":
            finished = {
                "event": "tool-finished",
                "tool_call_id": event.get("toolCallId"),
                "output": event.get("content"),
            }
            out.append(("tools", finished))


def _parsed(args: str):
    """A call's streamed arguments as the object they spell (``{}`` for none)."""
    if not args:
        return {}
    try:
        value = orjson.loads(args)
    except orjson.JSONDecodeError:
        return {"__raw__": args}
    return value if isinstance(value, dict) else {"__value__": value}
