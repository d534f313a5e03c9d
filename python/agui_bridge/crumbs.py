"""Typed constructors for crumbs, so agents need not spell the dicts by hand.

Each returns the plain dict the transformer takes; optional fields left as
``None`` are not included.
"""

from __future__ import annotations

from typing import Any


def _crumb(crumb_type: str, **fields: Any) -> dict:
    crumb = {"type": crumb_type}
    crumb.update((key, value) for key, value in fields.items() if value is not None)
    return crumb


def run_start(run_id: str | None = None, session_id: str | None = None) -> dict:
    return _crumb("agent:run:start", runId=run_id, sessionId=session_id)


def text_delta(delta: str) -> dict:
    return {"type": "text:delta", "delta": delta}


def file_generated(uri: str, mime_type: str, name: str | None = None) -> dict:
    return _crumb("file:generated", uri=uri, mimeType=mime_type, name=name)


def tool_input_start(tool_call_id: str, tool_name: str) -> dict:
    return {"type": "tool:input:start", "toolCallId": tool_call_id, "toolName": tool_name}


def tool_input_delta(tool_call_id: str, delta: str) -> dict:
    return {"type": "tool:input:delta", "toolCallId": tool_call_id, "delta": delta}


def tool_input_end(tool_call_id: str) -> dict:
    return {"type": "tool:input:end", "toolCallId": tool_call_id}


def tool_call(tool_call_id: str, tool_name: str, input: Any) -> dict:  # noqa: A002
    return {"type": "tool:call", "toolCallId": tool_call_id, "toolName": tool_name, "input": input}


def tool_result(tool_call_id: str, result: Any) -> dict:
    return {"type": "tool:result", "toolCallId": tool_call_id, "result": result}


def tool_error(tool_call_id: str, code: str, message: str) -> dict:
    return {
        "type": "tool:error",
        "toolCallId": tool_call_id,
        "error": {"code": code, "message": message},
    }


def run_end(result: Any = None) -> dict:
    return _crumb("agent:run:end", result=result)


def agent_error(message: str, code: str | None = None) -> dict:
    return _crumb("agent:error", message=message, code=code)


def human_required(
    interrupt_id: str | None = None,
    reason: str | None = None,
    message: str | None = None,
    tool_call_id: str | None = None,
    response_schema: dict | None = None,
) -> dict:
    return _crumb(
        "human:required",
        interruptId=interrupt_id,
        reason=reason,
        message=message,
        toolCallId=tool_call_id,
        responseSchema=response_schema,
    )


def step_start(step_name: str) -> dict:
    return {"type": "pipeline:step:start", "stepName": step_name}


def step_end(step_name: str) -> dict:
    return {"type": "pipeline:step:end", "stepName": step_name}


def loop(phase: str, loop_id: str, iteration: int | None = None, **fields: Any) -> dict:
    """``phase`` is what follows ``loop:``, e.g. ``"start"`` or ``"iteration:start"``."""
    return _crumb(f"loop:{phase}", loopId=loop_id, iteration=iteration, **fields)


def subagent_start(subagent_id: str, parent_agent_id: str, status: str | None = None) -> dict:
    return _crumb(
        "subagent:run:start", subagentId=subagent_id, parentAgentId=parent_agent_id, status=status
    )


def subagent_end(
    subagent_id: str, parent_agent_id: str, status: str | None = None, output: Any = None
) -> dict:
    return _crumb(
        "subagent:run:end",
        subagentId=subagent_id,
        parentAgentId=parent_agent_id,
        status=status,
        output=output,
    )


def task_start(task_run_id: str, task_id: str, model: str | None = None) -> dict:
    return _crumb("task:start", taskRunId=task_run_id, taskId=task_id, model=model)


def task_end(
    task_run_id: str,
    task_id: str,
    status: str | None = None,
    duration_ms: int | None = None,
    usage: dict | None = None,
    error: dict | None = None,
    model: str | None = None,
) -> dict:
    """``usage`` is summed into the run's ``TokenUsage[]`` under ``model`` (contract section 8)."""
    return _crumb(
        "task:end",
        taskRunId=task_run_id,
        taskId=task_id,
        model=model,
        status=status,
        durationMs=duration_ms,
        usage=usage,
        error=error,
    )


def reasoning_delta(delta: str) -> dict:
    """A piece of the model's reasoning (contract section 8)."""
    return {"type": "reasoning:delta", "delta": delta}


def reasoning_end() -> dict:
    """Closes the open reasoning message (text or a tool call closes it too)."""
    return {"type": "reasoning:end"}


def reasoning_encrypted(
    encrypted_value: str, entity_id: str | None = None, subtype: str | None = None
) -> dict:
    """A provider's opaque reasoning artefact (a signature): by default for the open,
    else the latest, reasoning message; ``subtype="tool-call"`` names a tool call."""
    return _crumb(
        "reasoning:encrypted", encryptedValue=encrypted_value, entityId=entity_id, subtype=subtype
    )
