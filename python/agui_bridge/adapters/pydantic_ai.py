"""A pydantic-ai ``Agent`` as an agui-bridge agent.

    from pydantic_ai import Agent
    from agui_bridge import App
    from agui_bridge.adapters.pydantic_ai import pydantic_ai_agent

    assistant = Agent("openai:gpt-5.2", instructions="Be brief.")

    @assistant.tool_plain
    def add(a: float, b: float) -> float:
        return a + b

    app = App()
    app.agent("assistant")(pydantic_ai_agent(assistant))   # an events-dialect agent

Each run continues the thread: its messages (history, the client's tool
results, the new user message) become pydantic-ai's message history (through
pydantic-ai's own AG-UI loader; the agent's system prompt goes on every run
and replaces a system message of the client's, as in pydantic-ai's AG-UI
adapter), and the agent's streamed events become AG-UI
events (the events dialect, docs/events-dialect.md; ``App`` reads
``agui_dialect`` off the function): text, tool calls with their arguments,
and tool results (the text pydantic-ai sends the model back), each followed
by the AG-UI events its tool returned (in a ``ToolReturn``'s ``metadata``, or
as its value: a ``StateSnapshotEvent`` updates the shared state), as
pydantic-ai's AG-UI adapter sends them. A tool call's
events go out once pydantic-ai has run it (with its result) or deferred it:
only then is it known not to wait for an approval. The run's
frontend tools are an ``ExternalToolset``: a call to one ends the run with its
``DeferredToolRequests``, the client executes it, and its next run goes on.

A tool that needs approval (``requires_approval=True``, or one raising
``ApprovalRequired``) suspends the run: ``RUN_FINISHED`` carries an interrupt
(id ``ctx.new_id("approve")``: ``"{runId}:approve"``, ``"…:approve-2"``…; reason
``"tool_approval"``; ``toolCallId``; ``message`` ``"approve
{tool}({arguments})"``; ``responseSchema`` the answer's shape
``{approved, editedArgs?, reason?}``; ``metadata`` ``{toolName, args}``). The
call itself is not announced in that run: the client would store a call
whose result comes only after the approval, in a later run, and a run's
stream cannot answer a call of an earlier run (contract rule 6). The resume
(an AG-UI 1.0 ``resume`` entry, or ``forwardedProps.command.resume``) goes
to pydantic-ai as ``DeferredToolResults.approvals`` on the call rebuilt from
the interrupt's metadata: approved, the tool runs, and its call and result
are announced in the resuming run; denied (``approved: false``, a "no", a
cancelled entry), the model is told so (``reason`` as the message). A
payload that is neither is a denial (deny by default). A user message sent
with the resume reaches the model after the calls' results.

The model's thinking (``ThinkingPart``) streams as reasoning (contract
section 8), one reasoning message per part under ``ctx.new_id("think")``;
its ``signature`` (Anthropic's) goes out as the message's encrypted value.
Stored reasoning is not sent back to the model in later runs.

A structured output is the run's ``RUN_FINISHED.result``; an exception ends
the run with ``RUN_ERROR`` (code: its class name, e.g.
``UnexpectedModelBehavior``, ``ModelHTTPError``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import pydantic
from ag_ui.core import BaseEvent, Message
from pydantic_ai import (
    AgentRunResultEvent,
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
    ToolDefinition,
    ToolDenied,
)
from pydantic_ai.capabilities import ReinjectSystemPrompt
from pydantic_ai.messages import (
    DeferredToolRequestsEvent,
    FunctionToolCallEvent,
    ModelResponse,
    OutputToolResultEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolResultEvent,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.toolsets import ExternalToolset
from pydantic_ai.ui.ag_ui import AGUIAdapter

from ..context import RunContext
from ._messages import conversation, signature_events, tool_calls

_MESSAGES = pydantic.TypeAdapter(list[Message])
_JSON = pydantic.TypeAdapter(Any)
APPROVAL = "tool_approval"
# The answer an approval interrupt expects (pydantic-ai's own AG-UI shape).
RESPONSE_SCHEMA = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "editedArgs": {"type": "object"},
        "reason": {"type": "string"},
    },
    "required": ["approved"],
}
_YES = ("yes", "y", "approve", "approved", "ok", "true", "once", "allow")


def pydantic_ai_agent(
    agent,
    *,
    deps: Callable[[RunContext], Any] | None = None,
    **run_options: Any,
):
    """The agent function for ``app.agent(...)``.

    ``deps(ctx)`` builds the run's dependencies from the RunContext;
    ``run_options`` (``model``, ``model_settings``, ``usage_limits``, ...) go
    to every ``agent.run_stream_events`` call.
    """

    async def run(ctx: RunContext):
        approvals = _approvals(ctx)
        messages = conversation(ctx)
        prompt = None
        if approvals and (ctx.input or ctx.parts):
            # A new user message (one sent with a resume that cancels the calls)
            # comes after the calls' results: pydantic-ai adds its user_prompt
            # there, while in the history it would come before the calls.
            # A message the loader keeps nothing of (a file part no provider
            # reads) stays in the history, where it is dropped the same way.
            said = [
                part.content
                for request in to_model_messages(messages[-1:])
                for part in request.parts
                if isinstance(part, UserPromptPart)
            ]
            if len(said) == 1:
                messages.pop()
                prompt = said[0]
        history = to_model_messages(messages)
        options = dict(run_options)
        if approvals:
            calls, results = approvals
            # The calls waiting for approval were never stored: the model's
            # response that made them is rebuilt from the interrupts.
            history.append(ModelResponse(parts=calls))
            options["deferred_tool_results"] = results
        if ctx.tools:
            options["toolsets"] = [*options.get("toolsets", ()), _frontend(ctx.tools)]
        # Resuming a history, pydantic-ai adds no system prompt: the agent's is
        # put back, and the client's replaced, as pydantic-ai's own AG-UI adapter
        # does (its server mode; id=None leaves the agent's own reinjector be).
        reinject = ReinjectSystemPrompt(replace_existing=True, id=None)
        options["capabilities"] = [reinject, *options.get("capabilities", ())]
        output = options.get("output_type") or agent.output_type
        options["output_type"] = [output, DeferredToolRequests]
        if deps is not None:
            options["deps"] = deps(ctx)
        held = {call["id"] for m in ctx.history for call in tool_calls(m)}
        stream = _Stream(held, lambda: ctx.new_id("think"))
        async with agent.run_stream_events(prompt, message_history=history, **options) as events:
            async for event in events:
                for out in stream.events(event):
                    yield out
        for out in stream.release_all():
            yield out
        if stream.approvals:
            interrupts = [_interrupt(ctx, call) for call in stream.approvals]
            yield {
                "type": "RUN_FINISHED",
                "outcome": {"type": "interrupt", "interrupts": interrupts},
                **stream.usage,
            }
        elif stream.result is not None:
            yield {"type": "RUN_FINISHED", "result": stream.result, **stream.usage}
        elif stream.usage:
            yield {"type": "RUN_FINISHED", **stream.usage}

    # Its items are AG-UI events: App serves it with the events dialect.
    run.agui_dialect = "events"
    return run


def to_model_messages(messages: list[dict]) -> list:
    """AG-UI messages as pydantic-ai ``ModelMessage``s (pydantic-ai's own loader)."""
    return AGUIAdapter.load_messages(_MESSAGES.validate_python(messages))


def _interrupt(ctx: RunContext, call: ToolCallPart) -> dict:
    args = call.args_as_dict()
    return {
        "id": ctx.new_id("approve"),
        "reason": APPROVAL,
        "message": f"approve {call.tool_name}({call.args_as_json_str()})",
        "toolCallId": call.tool_call_id,
        "responseSchema": RESPONSE_SCHEMA,
        "metadata": {"toolName": call.tool_name, "args": _JSON.dump_python(args, mode="json")},
    }


def _approvals(ctx: RunContext):
    """The approval calls this run resumes and their ``DeferredToolResults``, or None."""
    resume = ctx.resume
    if resume is None:
        return None
    calls, approvals = [], {}
    answers = {e["interruptId"]: e for e in resume.entries}
    for interrupt in resume.interrupts:
        metadata = interrupt.get("metadata")
        call_id = interrupt.get("toolCallId")
        if interrupt.get("reason") != APPROVAL or not isinstance(metadata, dict):
            continue
        if not isinstance(call_id, str) or not isinstance(metadata.get("toolName"), str):
            continue
        if answers:
            entry = answers.get(interrupt.get("id"), {})
            status, payload = entry.get("status", "resolved"), entry.get("payload")
        elif resume.interrupt_id in (None, interrupt.get("id")):
            status, payload = resume.status, resume.decision
        else:
            continue
        args = metadata.get("args")
        calls.append(ToolCallPart(metadata["toolName"], args, tool_call_id=call_id))
        approvals[call_id] = _verdict(status, payload)
    if not calls:
        return None
    return calls, DeferredToolResults(approvals=approvals)


def _verdict(status: str, payload: Any) -> ToolApproved | ToolDenied:
    """The user's answer; anything but a clear yes is a denial."""
    if status == "cancelled":
        return ToolDenied("The user cancelled the tool call.")
    if isinstance(payload, dict):
        approved = payload.get("approved", payload.get("decision"))
        if isinstance(approved, str):
            approved = approved.strip().lower() in _YES
        if approved is True:
            edited = payload.get("editedArgs")
            return ToolApproved(override_args=edited if isinstance(edited, dict) else None)
        reason = payload.get("reason")
        return ToolDenied(reason) if isinstance(reason, str) and reason else ToolDenied()
    if payload is True or (isinstance(payload, str) and payload.strip().lower() in _YES):
        return ToolApproved()
    return ToolDenied()


class _Stream:
    """Maps one run's pydantic-ai events to AG-UI events.

    A tool call's events are held back until pydantic-ai says what the call
    was: run (its result), left to the client (a deferred external call) or
    waiting for approval (then it is not sent in this run). pydantic-ai tells
    an approval only after validating every call of the response, and a tool
    may ask for one while it runs (``ApprovalRequired``), so nothing earlier
    can tell.
    """

    def __init__(self, held: set[str], new_id: Callable[[], str] = lambda: "think"):
        # part index -> the reasoning message id of a thinking part
        self.thoughts: dict[int, str] = {}
        self.new_id = new_id
        # The run's model usage, for a 1.0 client's RUN_FINISHED (contract section 8).
        self.usage: dict = {}
        # part index -> tool call id
        self.calls: dict[int, str] = {}
        # tool call id -> its start and streamed arguments, held back
        self.waiting: dict[str, list[dict]] = {}
        # tool call id -> the call as last known (its arguments final once run or deferred)
        self.parts: dict[str, ToolCallPart] = {}
        self.sent: set[str] = set()
        self.held = held  # calls of earlier runs: never announced again
        self.approvals: list[ToolCallPart] = []
        self.result: Any = None

    def _hold(self, tool_call_id: str, *events: dict) -> list[dict]:
        self.waiting.setdefault(tool_call_id, []).extend(events)
        return []

    def release(self, tool_call_id: str, part: ToolCallPart | None = None) -> list[dict]:
        out = self.waiting.pop(tool_call_id, [])
        part = part or self.parts.get(tool_call_id)
        self.parts.pop(tool_call_id, None)
        if not out:
            return out
        self.sent.add(tool_call_id)
        if part is not None:
            # The streamed deltas are kept when they make up the call's final
            # arguments; otherwise (dict arguments, deltas pydantic-ai applied
            # elsewhere) the final arguments go out whole.
            final = _final_args(part)
            streamed = "".join(e["delta"] for e in out if e["type"] == "TOOL_CALL_ARGS")
            if streamed != final:
                out = [out[0], _args(tool_call_id, final)]
        out.append({"type": "TOOL_CALL_END", "toolCallId": tool_call_id})
        return out

    def release_all(self) -> list[dict]:
        return [event for call_id in list(self.waiting) for event in self.release(call_id)]

    def events(self, event) -> list[dict]:
        if isinstance(event, PartDeltaEvent):
            delta = event.delta
            if isinstance(delta, TextPartDelta):
                return [_text(delta.content_delta)] if delta.content_delta else []
            if isinstance(delta, ThinkingPartDelta):
                thought = self.thoughts.get(event.index)
                if thought is None or not delta.content_delta:
                    return []
                return [_thought(thought, delta.content_delta)]
            if isinstance(delta, ToolCallPartDelta):
                call_id = self.calls.get(event.index)
                if call_id in self.waiting and isinstance(delta.args_delta, str):
                    return self._hold(call_id, _args(call_id, delta.args_delta))
            return []
        if isinstance(event, PartStartEvent):
            part = event.part
            if isinstance(part, TextPart):
                return [_text(part.content)] if part.content else []
            if isinstance(part, ThinkingPart):
                thought = self.thoughts[event.index] = self.new_id()
                return [_thought(thought, part.content)] if part.content else []
            if isinstance(part, ToolCallPart):
                call_id = self.calls[event.index] = part.tool_call_id
                self.parts[call_id] = part
                start = {"type": "TOOL_CALL_START", "toolCallId": call_id}
                self._hold(call_id, {**start, "toolCallName": part.tool_name})
                if isinstance(part.args, str) and part.args:
                    self._hold(call_id, _args(call_id, part.args))
            return []
        if isinstance(event, PartEndEvent):
            thought = self.thoughts.pop(event.index, None)
            if thought is not None:
                return _thought_end(thought, getattr(event.part, "signature", None))
            # pydantic-ai ends a tool call part when the next part starts, and
            # interleaved parallel calls go on streaming their arguments after
            # that: the call is closed only when released.
            call_id = self.calls.get(event.index)
            if call_id in self.waiting and isinstance(event.part, ToolCallPart):
                self.parts[call_id] = event.part
            return []
        if isinstance(event, FunctionToolCallEvent):
            # Emitted for every call it validates, approval ones included: the
            # call is held until its result or its deferral says what it is.
            part = event.part
            call_id = part.tool_call_id
            if call_id in self.sent or call_id in self.held:
                return []
            self.parts[call_id] = part
            if call_id in self.waiting:
                return []
            # A call the model did not stream (a resumed approval): sent whole on release.
            start = {"type": "TOOL_CALL_START", "toolCallId": call_id}
            return self._hold(call_id, {**start, "toolCallName": part.tool_name})
        if isinstance(event, ToolResultEvent):
            if isinstance(event, OutputToolResultEvent):
                # The output tool is the model's answer, sent as RUN_FINISHED's
                # result: announced, it would be a call stored with no result.
                self.waiting.pop(event.part.tool_call_id, None)
                self.parts.pop(event.part.tool_call_id, None)
                return []
            part = event.part
            out = self.release(part.tool_call_id)
            content = part.model_response_str()
            out.append(
                {"type": "TOOL_CALL_RESULT", "toolCallId": part.tool_call_id, "content": content}
            )
            return out + _tool_events(part)
        if isinstance(event, DeferredToolRequestsEvent):
            out = []
            for call in event.requests.calls:
                out += self.release(call.tool_call_id, call)
            for call in event.requests.approvals:
                self.waiting.pop(call.tool_call_id, None)
                self.parts.pop(call.tool_call_id, None)
                self.approvals.append(call)
            return out
        if isinstance(event, AgentRunResultEvent):
            usages = [_token_usage(m) for m in event.result.new_messages()]
            if any(usages):
                self.usage = {"usage": [u for u in usages if u]}
            output = event.result.output
            if not (isinstance(output, str | DeferredToolRequests) or output is None):
                self.result = _JSON.dump_python(output, mode="json")
        return []


def _tool_events(part: ToolReturnPart) -> list[BaseEvent]:
    """The AG-UI events a tool returned (how a pydantic-ai tool updates the
    shared state), in its metadata or else its return value: pydantic-ai's
    AG-UI adapter sends them after the result, and so does this one."""
    returned = part.metadata or part.content
    if isinstance(returned, BaseEvent):
        return [returned]
    if isinstance(returned, str | bytes) or not isinstance(returned, Iterable):
        return []
    return [item for item in returned if isinstance(item, BaseEvent)]


def _text(delta: str) -> dict:
    # No messageId: the core streams it under the open message or a fresh id.
    return {"type": "TEXT_MESSAGE_CHUNK", "delta": delta}


def _token_usage(message) -> dict | None:
    """A model response's usage as an AG-UI 1.0 ``TokenUsage`` (the core sums them per model)."""
    if not isinstance(message, ModelResponse):
        return None
    usage = message.usage
    entry: dict = {}
    if isinstance(message.provider_name, str):
        entry["provider"] = message.provider_name
    if isinstance(message.model_name, str):
        entry["model"] = message.model_name
    details = getattr(usage, "details", None) or {}
    counts = {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "reasoningTokens": details.get("reasoning_tokens"),
        "cachedInputTokens": usage.cache_read_tokens,
        "cacheWriteInputTokens": usage.cache_write_tokens,
    }
    entry.update((k, v) for k, v in counts.items() if isinstance(v, int) and v > 0)
    return entry if any(k.endswith("Tokens") for k in entry) else None


def _thought(message_id: str, delta: str) -> dict:
    return {"type": "REASONING_MESSAGE_CONTENT", "messageId": message_id, "delta": delta}


def _thought_end(message_id: str, signature: str | None) -> list[dict]:
    """The end of a thinking part; its signature is the message's encrypted value."""
    return [
        {"type": "REASONING_MESSAGE_END", "messageId": message_id},
        *signature_events(message_id, signature),
    ]


def _final_args(part: ToolCallPart) -> str:
    """A call's arguments as the model wrote them, when they are a JSON object."""
    if isinstance(part.args, str):
        try:
            if isinstance(json.loads(part.args), dict):
                return part.args
        except ValueError:
            pass
    # Dict arguments, or malformed ones (pydantic-ai's {"INVALID_JSON": ...}).
    return part.args_as_json_str()


def _args(tool_call_id: str, delta: str) -> dict:
    return {"type": "TOOL_CALL_ARGS", "toolCallId": tool_call_id, "delta": delta}


def _frontend(tools: list[dict]) -> ExternalToolset:
    return ExternalToolset(
        [
            ToolDefinition(
                name=tool["name"],
                description=tool.get("description"),
                parameters_json_schema=tool.get("parameters") or {"type": "object"},
            )
            for tool in tools
            if isinstance(tool, dict) and isinstance(tool.get("name"), str)
        ]
    )


__all__ = ["pydantic_ai_agent", "to_model_messages"]
