"""A compiled LangGraph graph as an agui-bridge agent.

    from langgraph.checkpoint.memory import InMemorySaver
    from agui_bridge import App
    from agui_bridge.adapters.langgraph import langgraph_agent

    graph = builder.compile(checkpointer=InMemorySaver())   # a state with "messages"
    app = App()
    app.agent("graph")(langgraph_agent(graph))   # an events-dialect agent

The graph's checkpointer is keyed by the AG-UI threadId
(``configurable.thread_id``). A run sends the turn's new messages (the user
message, the client's tool results) under ``messages_key``; when the
checkpointer has nothing for the thread yet (or the graph has none), the
whole conversation is sent; when the client's conversation left the
checkpoint's (a regenerate or an edit: its user messages are not the
checkpoint's), the checkpoint's messages are replaced by the client's branch.
A frontend tool call the client left unanswered gets a no-result
``ToolMessage``. The agent speaks the events dialect
(docs/events-dialect.md; ``App`` reads ``agui_dialect`` off the function):
its AG-UI events go through the framing core, which repairs and numbers them.
What the graph streams becomes:

- reasoning content blocks (``{"type": "reasoning", "reasoning"}`` or its
  ``summary``, Anthropic's ``{"type": "thinking", "thinking", "signature"}``,
  ``additional_kwargs["reasoning_content"]``) → reasoning (contract section
  8), one reasoning message per AI message (``"{message id}:reasoning"``),
  a signature as its encrypted value;
- chat model tokens (``stream_mode="messages"``) → text, one AG-UI message
  per AI message (its id); tool calls (streamed chunks, or a message a node
  returns whole) → tool calls, each sent with its ``ToolMessage`` result or at
  the graph's end: a tool that calls ``interrupt()`` gets its result only in
  the resuming run, so an interrupted run does not announce the calls still
  waiting, and the resuming run announces them with their results;
- the state after each step (``"values"``, without the messages, as JSON)
  → ``STATE_SNAPSHOT`` of the graph's state at the top level, as
  CopilotKit's ``useCoAgent`` and ``@ag-ui/client`` read it (merged into the
  thread's state, rule 9, so it is also what the thread stores);
- ``interrupt(value)`` → the run suspends (``RUN_FINISHED`` with an
  interrupt outcome; id = LangGraph's interrupt id; ``message``: the value
  if a string, else its ``message``/``question`` field, else its JSON;
  ``reason``: its ``reason`` field or ``"interrupt"``; ``responseSchema``:
  the interrupt's). The resume becomes ``Command(resume=...)``: AG-UI 1.0
  ``resume`` entries as ``{interrupt id: payload}`` (a cancelled entry gives
  ``None``), ``forwardedProps.command.resume`` as its decision (``{interruptId:
  decision}`` when it names the interrupt). A resume that cancels every
  interrupt and carries a new user message is a new turn instead: the
  message goes in as input, the waiting calls get no-result ``ToolMessage``s;
- a static breakpoint (``compile(interrupt_before=[...])`` or
  ``interrupt_after=``: the graph stops with nodes to run and no interrupt
  value) → the same interrupt outcome (id from ``ctx.new_id``; ``reason``
  ``"breakpoint"``; ``message`` ``"paused before {nodes}"``; ``metadata``:
  ``nodes``, the nodes waiting, and ``toolCalls``, the calls they would run,
  ``{id, name, args}``, announced only in the resuming run, with their
  results). Its resume, whatever the payload, continues the graph from the
  breakpoint (input ``None``); a resume that cancels it is a new turn, with
  or without a message, so the paused step does not run (a cancel with
  nothing to send, no waiting call nor message, runs nothing).

The run's frontend tools are in ``config["configurable"]["agui_tools"]`` for
nodes that bind them; a graph exception ends the run with ``RUN_ERROR``
(code: its class name).
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command

from ..blocks import to_blocks
from ..context import RunContext
from ..turns import cancels_all
from ._messages import (
    NO_RESULT,
    conversation,
    parse_arguments,
    signature_events,
    text,
    tool_calls,
    turn_message,
)
from ._parts import has_media


def langgraph_agent(graph, *, messages_key: str = "messages", config: dict | None = None):
    """The agent function for ``app.agent(...)``; ``config`` is merged into each run's."""

    async def run(ctx: RunContext):
        base = dict(config or {})
        configurable = {
            **base.get("configurable", {}),
            "thread_id": ctx.thread_id,
            "agui_tools": ctx.tools,
        }
        run_config = {**base, "configurable": configurable}
        checkpointer = getattr(graph, "checkpointer", None)
        snapshot = None
        if ctx.resume is not None and checkpointer:
            snapshot = await graph.aget_state(run_config)
        # A static breakpoint (interrupt_before/after) waits on no interrupt():
        # there is nothing for Command(resume=...) to answer, so its resume is
        # LangGraph's documented input None, whatever the payload.
        at_breakpoint = snapshot is not None and _paused(snapshot)
        # A resume that cancels every pending interrupt and carries a new user
        # message is a new turn (turns.py): the graph answers the message, the
        # waiting calls get no-result ToolMessages (_input_messages), and the
        # interrupted step is dropped, as on any new input to LangGraph. A
        # cancelled breakpoint is one with or without a message: its step
        # (the tools the user refused) must not run.
        resuming = ctx.resume is not None and not (
            cancels_all(ctx.resume) and (ctx.input or ctx.parts or at_breakpoint)
        )
        if resuming:
            graph_input: Any = None if at_breakpoint else Command(resume=resume_value(ctx))
        else:
            graph_input = await _graph_input(graph, run_config, ctx, messages_key)
            if at_breakpoint and not graph_input[messages_key] and len(graph_input) == 1:
                return  # a cancelled breakpoint with nothing to answer: nothing runs
        stream = _Stream(messages_key)
        if resuming and snapshot is not None:
            stream.earlier = _unanswered(snapshot.values.get(messages_key) or [])
        modes = ["messages", "updates", "values"]
        async for mode, chunk in graph.astream(graph_input, run_config, stream_mode=modes):
            for event in stream.events(mode, chunk):
                yield event
        if not stream.interrupts and checkpointer:
            after = await graph.aget_state(run_config)
            if _paused(after):
                stream.interrupts.append(_breakpoint(after, messages_key))
        for event in stream.finish():
            yield event
        if stream.interrupts:
            interrupts = [
                i if "id" in i else {"id": ctx.new_id("interrupt"), **i} for i in stream.interrupts
            ]
            outcome = {"type": "interrupt", "interrupts": interrupts}
            yield {"type": "RUN_FINISHED", "outcome": outcome, **stream.usage()}
        elif stream.usages:
            yield {"type": "RUN_FINISHED", **stream.usage()}

    # Its items are AG-UI events: App serves it with the events dialect.
    run.agui_dialect = "events"
    # What GET /assistants/{id}/graph, /schemas and /subgraphs show (agent_protocol/assistants.py).
    run.agui_graph = graph
    return run


async def _graph_input(graph, run_config: dict, ctx: RunContext, messages_key: str) -> dict:
    values: dict = {}
    if getattr(graph, "checkpointer", None):
        values = (await graph.aget_state(run_config)).values
    return {messages_key: _input_messages(values, ctx, messages_key)}


def _input_messages(values: dict, ctx: RunContext, messages_key: str) -> list[BaseMessage]:
    held = values.get(messages_key) or []
    if values and _branches_off(held, ctx):
        # A regenerate or an edit (docs/branches.md) goes on from an earlier
        # point than the checkpoint's: the checkpoint's messages become that
        # branch, or the model would see the answer or turn the user left.
        branch = to_langchain_messages(conversation(ctx))
        return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *branch]
    if values:
        new = to_langchain_messages(ctx.tool_results)
        # A call the client left unanswered (the user typed on) still needs a
        # result: models reject a call directly followed by anything else.
        answered = {m.tool_call_id for m in new}
        open_calls = _unanswered(held)
        new[:0] = [
            ToolMessage(content=NO_RESULT, tool_call_id=call_id, id=f"{call_id}:no_result")
            for call_id in open_calls
            if call_id not in answered
        ]
        if ctx.input or ctx.parts:
            new += to_langchain_messages([turn_message(ctx)])
        return new
    return to_langchain_messages(conversation(ctx))


def _branches_off(held: list, ctx: RunContext) -> bool:
    """Whether the client's conversation left the checkpoint's: user messages
    keep their ids in both, so if it goes on, the checkpoint's are the last of
    the client's (all of them, or fewer where the graph trims its history, as
    LangGraph's memory patterns do); anything else is a regenerate or an edit.
    The summary langchain's SummarizationMiddleware puts in place of the old
    messages (a HumanMessage under a fresh id, marked ``lc_source``) is no
    client message: counted, it made every turn a branch, the checkpoint
    rewritten and summarized again. Every other one counts, held by the thread
    or not: a thread store that lost them (a memory store restarted beside a
    lasting checkpointer) must still see an edit."""
    ours = [m.id for m in held if isinstance(m, HumanMessage) and not _summary(m)]
    theirs = [m.get("id") for m in ctx.history if m.get("role") == "user"]
    return len(ours) > len(theirs) or (bool(ours) and theirs[-len(ours) :] != ours)


def _summary(message: HumanMessage) -> bool:
    return (message.additional_kwargs or {}).get("lc_source") == "summarization"


def to_langchain_messages(messages: list[dict]) -> list[BaseMessage]:
    """AG-UI messages as LangChain messages (ids kept)."""
    out: list[BaseMessage] = []
    for message in messages:
        role = message.get("role")
        content = text(message.get("content"))
        extra = {"id": message["id"]} if isinstance(message.get("id"), str) else {}
        if role == "user":
            sent = message.get("content")
            blocks = to_blocks(sent) if has_media(sent) else content  # text: as before
            out.append(HumanMessage(content=blocks, **extra))
        elif role in ("system", "developer"):
            out.append(SystemMessage(content=content, **extra))
        elif role == "assistant":
            calls = [
                {
                    "id": call["id"],
                    "name": call["function"].get("name", ""),
                    "args": _arguments(call["function"].get("arguments") or ""),
                }
                for call in tool_calls(message)
            ]
            out.append(AIMessage(content=content, tool_calls=calls, **extra))
        elif role == "tool":
            out.append(ToolMessage(content=content, tool_call_id=message["toolCallId"], **extra))
    return out


def resume_value(ctx: RunContext) -> Any:
    """What ``Command(resume=...)`` gets from the run's resume."""
    resume = ctx.resume
    if resume.entries:
        return {
            entry["interruptId"]: entry.get("payload")
            if entry.get("status", "resolved") == "resolved"
            else None
            for entry in resume.entries
        }
    decision = resume.decision if resume.status == "resolved" else None
    if resume.interrupt_id is not None:
        # A bare value fails once several interrupts are pending; the map
        # answers the one the client named, whatever else waits.
        return {resume.interrupt_id: decision}
    return decision


class _Stream:
    """Maps one run's ``(mode, chunk)`` pairs to AG-UI events."""

    def __init__(self, messages_key: str):
        self.messages_key = messages_key
        self.streamed: set[str] = set()  # ids of messages seen as chunks
        # (message id, index) or (message id, None, call id)
        #   -> [tool call id, name, buffered argument pieces, started]
        self.calls: dict[tuple, list] = {}
        self.latest: tuple | None = None  # the key of the call the last chunk went to
        self.held: dict[str, list[dict]] = {}  # tool call id -> its events, not yet sent
        # Calls an earlier (interrupted) run left unannounced: tool call id -> call.
        self.earlier: dict[str, dict] = {}
        # Interrupts shape the run's RUN_FINISHED; the stream goes on until the graph stops.
        self.interrupts: list[dict] = []
        # The chat models' token usage, one TokenUsage per AI message (contract section 8).
        self.usages: list[dict] = []

    def usage(self) -> dict:
        """The RUN_FINISHED field that reports the run's usage (the core sums it per model)."""
        return {"usage": self.usages} if self.usages else {}

    def _count(self, message) -> None:
        entry = _token_usage(message)
        if entry:
            self.usages.append(entry)

    def events(self, mode: str, chunk: Any) -> list[dict]:
        return self._hold(self._events(mode, chunk))

    def _hold(self, events: list[dict]) -> list[dict]:
        """The events that go out now: a tool call's wait for its result (below)."""
        out: list[dict] = []
        for event in events:
            kind = event["type"]
            call_id = event.get("toolCallId")
            if kind in ("TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"):
                self.held.setdefault(call_id, []).append(event)
            elif kind == "TOOL_CALL_RESULT":
                if call_id in self.held:
                    out.extend(self.held.pop(call_id))
                elif call_id in self.earlier:
                    out.extend(_announce(self.earlier.pop(call_id)))
                out.append(event)
            else:
                out.append(event)
        return out

    def finish(self) -> list[dict]:
        """The held calls once the graph has stopped.

        A call goes out with its result, or at the graph's end: a tool may
        interrupt() for an approval and get its result only in the resuming
        run, which cannot answer a call of an earlier run (contract rule 6).
        So on an interrupt the calls still waiting are not announced; the
        resuming run announces them, from the checkpoint, with their results
        (or at its end, a call the graph leaves for the client).
        """
        out = self._hold(self.close_calls())
        if self.interrupts:
            self.held.clear()
            return out
        for events in self.held.values():
            out.extend(events)
        self.held.clear()
        for call in self.earlier.values():
            out.extend(_announce(call))
        self.earlier.clear()
        return out

    def _events(self, mode: str, chunk: Any) -> list[dict]:
        if mode == "messages":
            return self._message(chunk[0])
        out = self.close_calls()
        if mode == "updates" and isinstance(chunk, dict):
            self.interrupts.extend(_interrupt(i) for i in chunk.get("__interrupt__") or ())
        elif mode == "values" and isinstance(chunk, dict):
            state = {
                k: v for k, v in chunk.items() if k != self.messages_key and not k.startswith("__")
            }
            out.append({"type": "STATE_SNAPSHOT", "snapshot": _json(state)})
        return out

    def _message(self, message) -> list[dict]:
        if isinstance(message, AIMessageChunk):
            return self._chunk(message)
        out = self.close_calls()
        if isinstance(message, ToolMessage):
            content = _content_text(message.content)
            out.append(
                {"type": "TOOL_CALL_RESULT", **_call(message.tool_call_id), "content": content}
            )
        elif isinstance(message, AIMessage) and message.id not in self.streamed:
            self._count(message)
            out.extend(_reasoning(message))
            said = _content_text(message.content)
            if said:
                out.append(_text(said, message.id or f"msg_{uuid.uuid4().hex[:24]}"))
            for call in message.tool_calls:
                out.extend(_announce(call))
        return out

    def _chunk(self, message: AIMessageChunk) -> list[dict]:
        out: list[dict] = []
        if message.id is not None:
            self.streamed.add(message.id)
            # Another message streams: the previous one's calls are complete.
            if any(key[0] != message.id for key in self.calls):
                out.extend(self.close_calls())
        out.extend(_reasoning(message))
        entry = _token_usage(message)  # streamed usage comes in its own chunk
        if entry:
            self.usages.append(entry)
        said = _content_text(message.content)
        if said:
            out.append(_text(said, message.id))
        for piece in message.tool_call_chunks:
            entry, ended = self._entry(message.id, piece)
            out.extend(ended)
            if piece.get("id") and entry[0] is None:
                entry[0] = piece["id"]
            if piece.get("name") and entry[1] is None:
                entry[1] = piece["name"]
            args = piece.get("args")
            if entry[3]:
                if args:
                    out.append(_args(entry[0], args))
                continue
            if args:
                entry[2].append(args)
            if entry[1] is not None:
                out.extend(_start(entry))
        if message.chunk_position == "last":
            out.extend(self.close_calls())
        return out

    def _entry(self, message_id, piece) -> tuple[list, list[dict]]:
        """The call a tool call chunk belongs to, as langchain-core's merge_lists
        tells them apart (and the events that end the call it displaces)."""
        index, call_id = piece.get("index"), piece.get("id")
        if index is None:
            # No index: each chunk with an id is a call of its own; one without
            # continues the message's latest call.
            key = (message_id, None, call_id) if call_id else self.latest
            if key is None or key[0] != message_id:
                key = (message_id, None, None)
        else:
            key = (message_id, index)
        ended: list[dict] = []
        entry = self.calls.get(key)
        if entry is not None and call_id and entry[0] is not None and entry[0] != call_id:
            # Another id under the same index: the provider has moved on to a new call.
            ended = _close(self.calls.pop(key))
            entry = None
        if entry is None:
            entry = self.calls[key] = [None, None, [], False]
        self.latest = key
        return entry, ended

    def close_calls(self) -> list[dict]:
        out: list[dict] = []
        for entry in self.calls.values():
            out.extend(_close(entry))
        self.calls.clear()
        self.latest = None
        return out


def _close(entry: list) -> list[dict]:
    out: list[dict] = []
    if not entry[3]:
        entry[1] = entry[1] or "unknown"
        out.extend(_start(entry))
    out.append({"type": "TOOL_CALL_END", **_call(entry[0])})
    return out


def _announce(call: dict) -> list[dict]:
    """A whole LangChain tool call as AG-UI events."""
    call_id = call.get("id") or f"call_{uuid.uuid4().hex[:24]}"
    return [
        {"type": "TOOL_CALL_START", **_call(call_id), "toolCallName": call["name"]},
        _args(call_id, _json_text(call.get("args") or {})),
        {"type": "TOOL_CALL_END", **_call(call_id)},
    ]


def _unanswered(messages: list) -> dict[str, dict]:
    """The calls of this turn's last AI message that no ToolMessage answers: those
    an interrupted run held back (older ones were announced by their own runs)."""
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return {}
        if isinstance(message, ToolMessage):
            answered.add(message.tool_call_id)
        elif isinstance(message, AIMessage):
            return {
                call["id"]: call
                for call in message.tool_calls
                if call.get("id") and call["id"] not in answered
            }
    return {}


def _start(entry: list) -> list[dict]:
    entry[0] = entry[0] or f"call_{uuid.uuid4().hex[:24]}"
    entry[3] = True
    out = [{"type": "TOOL_CALL_START", **_call(entry[0]), "toolCallName": entry[1]}]
    if entry[2]:
        out.append(_args(entry[0], "".join(entry[2])))
    return out


def _call(tool_call_id: str) -> dict:
    return {"toolCallId": tool_call_id}


def _text(delta: str, message_id: str | None) -> dict:
    # The LangChain id keeps one AI message apart from the next: a new id closes
    # the open text message, where an id-less chunk would continue it.
    chunk = {"type": "TEXT_MESSAGE_CHUNK", "delta": delta}
    return chunk if message_id is None else {**chunk, "messageId": message_id}


def _args(tool_call_id: str, delta: str) -> dict:
    return {"type": "TOOL_CALL_ARGS", "toolCallId": tool_call_id, "delta": delta}


def _interrupt(interrupt) -> dict:
    value = getattr(interrupt, "value", interrupt)
    if isinstance(value, str):
        message, reason = value, None
    elif isinstance(value, dict):
        message = value.get("message", value.get("question"))
        if not isinstance(message, str):
            message = _json_text(value)
        reason = value.get("reason") if isinstance(value.get("reason"), str) else None
    else:
        message, reason = _json_text(value), None
    schema = getattr(interrupt, "response_schema", None)
    if schema is not None and not isinstance(schema, dict):
        schema = schema.model_json_schema() if hasattr(schema, "model_json_schema") else None
    out = {"reason": reason or "interrupt", "message": message}
    interrupt_id = getattr(interrupt, "id", None)
    if isinstance(interrupt_id, str) and interrupt_id:
        out = {"id": interrupt_id, **out}
    if schema is not None:
        out["responseSchema"] = _json(schema)
    return out


def _paused(snapshot) -> bool:
    """The graph stopped at a static breakpoint: nodes wait to run, no interrupt() asked."""
    return bool(snapshot.next) and not getattr(snapshot, "interrupts", ())


def _breakpoint(snapshot, messages_key: str) -> dict:
    """A breakpoint as the run's interrupt: the nodes it paused before, and the
    tool calls they would run (held back until the resume, as for interrupt())."""
    nodes = list(snapshot.next)
    metadata: dict = {"nodes": nodes}
    waiting = _unanswered(snapshot.values.get(messages_key) or [])
    if waiting:
        metadata["toolCalls"] = [
            {"id": call_id, "name": call["name"], "args": _json(call.get("args") or {})}
            for call_id, call in waiting.items()
        ]
    message = f"paused before {', '.join(nodes)}"
    return {"reason": "breakpoint", "message": message, "metadata": metadata}


def _token_usage(message) -> dict | None:
    """A message's ``usage_metadata`` as an AG-UI 1.0 ``TokenUsage``."""
    usage = getattr(message, "usage_metadata", None)
    if not usage:
        return None
    entry: dict = {}
    meta = getattr(message, "response_metadata", None) or {}
    provider = meta.get("model_provider") or meta.get("ls_provider")
    model = meta.get("model_name") or meta.get("model")
    if isinstance(provider, str):
        entry["provider"] = provider
    if isinstance(model, str):
        entry["model"] = model
    counts = {
        "inputTokens": usage.get("input_tokens"),
        "outputTokens": usage.get("output_tokens"),
        "totalTokens": usage.get("total_tokens"),
        "reasoningTokens": (usage.get("output_token_details") or {}).get("reasoning"),
        "cachedInputTokens": (usage.get("input_token_details") or {}).get("cache_read"),
        "cacheWriteInputTokens": (usage.get("input_token_details") or {}).get("cache_creation"),
    }
    entry.update((k, v) for k, v in counts.items() if isinstance(v, int) and v >= 0)
    return entry


def _reasoning(message) -> list[dict]:
    """The reasoning of an AI message (or chunk), as LangChain providers carry it."""
    pieces: list[tuple[str, str | None]] = []  # (text, signature)
    extra = getattr(message, "additional_kwargs", None) or {}
    if isinstance(extra.get("reasoning_content"), str):
        pieces.append((extra["reasoning_content"], None))
    content = message.content if isinstance(message.content, list) else []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "reasoning":
            said = block.get("reasoning")
            if not isinstance(said, str):
                summary = block.get("summary") if isinstance(block.get("summary"), list) else []
                said = "".join(part.get("text", "") for part in summary if isinstance(part, dict))
            pieces.append((said, None))
        elif block.get("type") == "thinking":
            said = block.get("thinking")
            signature = block.get("signature")
            pieces.append((said if isinstance(said, str) else "", signature))
    if not pieces:
        return []
    message_id = f"{message.id}:reasoning" if isinstance(message.id, str) else None
    out: list[dict] = []
    for said, signature in pieces:
        if said:
            delta = {"type": "REASONING_MESSAGE_CHUNK", "delta": said}
            out.append(delta if message_id is None else {**delta, "messageId": message_id})
        if message_id is not None:
            out += signature_events(message_id, signature)
    return out


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part if isinstance(part, str) else part.get("text", "")
            for part in content
            if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text")
        )
    return ""


def _arguments(arguments: str) -> dict:
    try:
        value = parse_arguments(arguments)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _default(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return str(value)


def _json(value: Any) -> Any:
    """The state as plain JSON values (models dumped, the rest as text)."""
    return orjson.loads(orjson.dumps(value, default=_default, option=orjson.OPT_NON_STR_KEYS))


def _json_text(value: Any) -> str:
    return orjson.dumps(value, default=_default, option=orjson.OPT_NON_STR_KEYS).decode()


__all__ = ["langgraph_agent", "resume_value", "to_langchain_messages"]
