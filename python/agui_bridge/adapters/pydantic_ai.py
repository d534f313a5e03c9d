"""A pydantic-ai ``Agent`` as an agui-bridge agent.

    from pydantic_ai import Agent
    from agui_bridge import App
    from agui_bridge.adapters.pydantic_ai import pydantic_ai_agent

    assistant = Agent("openai:gpt-5.2", instructions="Be brief.")

    @assistant.tool_plain
    def add(a: float, b: float) -> float:
        return a + b

    app = App()
    app.agent("assistant")(pydantic_ai_agent(assistant))

Each run continues the thread: its messages (history, the client's tool
results, the new user message) become pydantic-ai's message history (through
pydantic-ai's own AG-UI loader), and the agent's streamed events become
crumbs: text, tool calls with their arguments as they stream, and tool
results (the text pydantic-ai sends the model back). The run's frontend
tools are an ``ExternalToolset``: a call to one ends the run with its
``DeferredToolRequests``, the client executes it, and its next run goes on.
A tool that needs approval
(``requires_approval=True``) is not supported: the run ends with
``RUN_ERROR`` code ``approval_unsupported`` (a result given on resume would
belong to a call of an earlier run, which a run's stream cannot answer).
A structured output is the run's
``RUN_FINISHED.result``; an exception ends the run with ``RUN_ERROR`` (code:
its class name, e.g. ``UnexpectedModelBehavior``, ``ModelHTTPError``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pydantic
from ag_ui.core import Message
from pydantic_ai import AgentRunResultEvent, DeferredToolRequests, ToolDefinition
from pydantic_ai.messages import (
    DeferredToolRequestsEvent,
    FunctionToolCallEvent,
    OutputToolResultEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolResultEvent,
)
from pydantic_ai.toolsets import ExternalToolset
from pydantic_ai.ui.ag_ui import AGUIAdapter

from .. import crumbs as c
from ..context import RunContext
from ._messages import conversation, tool_calls

_MESSAGES = pydantic.TypeAdapter(list[Message])
_JSON = pydantic.TypeAdapter(Any)
_NO_APPROVAL = "approval_unsupported"


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
        history = to_model_messages(conversation(ctx))
        options = dict(run_options)
        if ctx.tools:
            options["toolsets"] = [*options.get("toolsets", ()), _frontend(ctx.tools)]
            output = options.get("output_type") or agent.output_type
            options["output_type"] = [output, DeferredToolRequests]
        if deps is not None:
            options["deps"] = deps(ctx)
        held = {call["id"] for m in ctx.history for call in tool_calls(m)}
        stream = _Stream(held)
        async with agent.run_stream_events(None, message_history=history, **options) as events:
            async for event in events:
                for crumb in stream.crumbs(event):
                    yield crumb

    return run


def to_model_messages(messages: list[dict]) -> list:
    """AG-UI messages as pydantic-ai ``ModelMessage``s (pydantic-ai's own loader)."""
    return AGUIAdapter.load_messages(_MESSAGES.validate_python(messages))


class _Stream:
    """Maps one run's pydantic-ai events to crumbs."""

    def __init__(self, held: set[str]):
        # part index -> [tool call id, arguments streamed as text so far?]
        self.calls: dict[int, list] = {}
        self.held = held  # calls of earlier runs: never announced again

    def crumbs(self, event) -> list[dict]:
        if isinstance(event, PartDeltaEvent):
            delta = event.delta
            if isinstance(delta, TextPartDelta):
                return [c.text_delta(delta.content_delta)] if delta.content_delta else []
            if isinstance(delta, ToolCallPartDelta):
                entry = self.calls.get(event.index)
                if entry is not None and entry[1] and isinstance(delta.args_delta, str):
                    return [c.tool_input_delta(entry[0], delta.args_delta)]
                if entry is not None:
                    entry[1] = False  # a dict delta: the arguments go out whole at the end
            return []
        if isinstance(event, PartStartEvent):
            part = event.part
            if isinstance(part, TextPart):
                return [c.text_delta(part.content)] if part.content else []
            if isinstance(part, ToolCallPart):
                streamed = part.args is None or isinstance(part.args, str)
                self.calls[event.index] = [part.tool_call_id, streamed]
                out = [c.tool_input_start(part.tool_call_id, part.tool_name)]
                if streamed and part.args:
                    out.append(c.tool_input_delta(part.tool_call_id, part.args))
                return out
            return []
        if isinstance(event, PartEndEvent):
            entry = self.calls.pop(event.index, None)
            if entry is None or not isinstance(event.part, ToolCallPart):
                return []
            out = [] if entry[1] else [c.tool_input_delta(entry[0], event.part.args_as_json_str())]
            out.append(c.tool_input_end(entry[0]))
            return out
        if isinstance(event, FunctionToolCallEvent):
            part = event.part  # already streamed, unless the model did not stream it
            if part.tool_call_id in self.held:
                return []
            return [c.tool_call(part.tool_call_id, part.tool_name, part.args_as_dict())]
        if isinstance(event, ToolResultEvent):
            if isinstance(event, OutputToolResultEvent):
                return []  # the output tool's "final result processed": the output is the result
            part = event.part
            return [c.tool_result(part.tool_call_id, part.model_response_str())]
        if isinstance(event, DeferredToolRequestsEvent) and event.requests.approvals:
            names = ", ".join(call.tool_name for call in event.requests.approvals)
            message = f"tools that need approval are not supported: {names}"
            return [c.agent_error(message, _NO_APPROVAL)]
        if isinstance(event, AgentRunResultEvent):
            output = event.result.output
            if isinstance(output, str | DeferredToolRequests) or output is None:
                return []
            return [c.run_end(_JSON.dump_python(output, mode="json"))]
        return []


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
