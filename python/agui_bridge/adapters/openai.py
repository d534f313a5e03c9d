"""An agent over any OpenAI-compatible chat completions server.

    from openai import AsyncOpenAI
    from agui_bridge import App
    from agui_bridge.adapters.openai import openai_agent

    def add(a: float, b: float) -> float:
        "Adds two numbers."
        return a + b

    app = App()
    client = AsyncOpenAI(base_url="http://127.0.0.1:11434/v1", api_key="-")
    app.agent("chat")(openai_agent(client, "llama3.2", tools=[add], system="Be brief."))

Each run sends the thread's conversation (history, the client's tool
results, the new user message) with the run's frontend tools and the Python
``tools``, and streams the answer: text as text deltas, tool calls with their
arguments as they arrive (parallel calls by ``index``, or by ``id``
when they share an index or have none). A Python tool runs
and its result, or its error, goes back to the model, for at most
``max_steps`` model calls per run. A call of a frontend tool ends the run;
the client executes it and its next run (carrying the tool message) goes on.
Each model call is a task (``STEP_STARTED``/``STATE_SNAPSHOT`` ``task``)
whose ``usage`` is the API's when it reports one.

The run ends with ``RUN_ERROR`` and one of these codes, never hangs:

- ``length``, ``content_filter``: the ``finish_reason`` of the model call;
- ``model_timeout``: no byte of the answer for ``timeout`` seconds (the
  request's read timeout; ``None`` leaves the client's own);
- ``model_unreachable``: the connection failed or broke, or the stream
  ended before the model said why it stopped (no ``finish_reason``, nor the
  usage that follows the answer's last piece);
- ``model_error``: the server answered an error, before or in the stream;
- ``max_steps``: the model still called tools after ``max_steps`` calls.
"""

from __future__ import annotations

import inspect
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import openai

from .. import crumbs as c
from ..context import RunContext
from ._messages import conversation, error_text, parse_arguments, result_text, text, tool_calls
from ._parts import openai_content


class PythonTool:
    """A Python function the model may call; its arguments are validated by pydantic.

    ``parameters`` (a JSON schema) is derived from the signature's annotations
    unless given; ``description`` defaults to the docstring.
    """

    def __init__(
        self,
        fn: Callable,
        name: str | None = None,
        description: str | None = None,
        parameters: dict | None = None,
    ):
        import pydantic

        self.fn = fn
        self.name = name or fn.__name__
        self.description = description or inspect.getdoc(fn) or ""
        fields = {}
        for param in inspect.signature(fn).parameters.values():
            annotation = Any if param.annotation is param.empty else param.annotation
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (annotation, default)
        self._model = pydantic.create_model(f"{self.name}_arguments", **fields)
        self.parameters = parameters or self._model.model_json_schema()
        self.parameters.pop("title", None)

    def spec(self) -> dict:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def __call__(self, arguments: Any) -> Any:
        if not isinstance(arguments, dict):
            raise TypeError("the arguments must be a JSON object")
        values = self._model.model_validate(arguments)
        result = self.fn(**{name: getattr(values, name) for name in type(values).model_fields})
        if inspect.isawaitable(result):
            result = await result
        return result


def openai_agent(
    client: openai.AsyncOpenAI,
    model: str,
    *,
    tools: Iterable[Callable | PythonTool] = (),
    system: str | None = None,
    max_steps: int = 8,
    timeout: float | None = 60.0,
    **params: Any,
):
    """The agent function for ``app.agent(...)``; ``params`` go to every ``create`` call.

    ``client``: an ``openai.AsyncOpenAI`` (its ``base_url`` picks the server).
    ``tools``: Python functions (or ``PythonTool``s) run on the server.
    ``system``: a system message put first, followed by the run's AG-UI
    ``context`` entries (CopilotKit's readables) when it has any.
    ``timeout``: the request's read timeout, in seconds: the longest wait for
    the answer and then for each piece of the stream.
    """
    python_tools = {t.name: t for t in (_as_tool(t) for t in tools)}
    if max_steps < 1:
        raise ValueError("max_steps must be at least 1")

    async def agent(ctx: RunContext):
        messages = to_chat_messages(conversation(ctx, keep_reasoning=True))
        preamble = [system] if system else []
        if ctx.context:
            preamble.append(context_text(ctx.context))
        if preamble:
            messages.insert(0, {"role": "system", "content": "\n\n".join(preamble)})
        specs = [t.spec() for t in python_tools.values()]
        specs += [
            _frontend_spec(tool)
            for tool in ctx.tools
            if isinstance(tool, dict) and tool.get("name") not in python_tools
        ]
        frontend_names = {spec["function"]["name"] for spec in specs} - set(python_tools)
        request = dict(params)
        if specs:
            request["tools"] = specs
        for step in range(1, max_steps + 1):
            call = _ModelCall(ctx, step)
            try:
                async for crumb in call.stream(client, model, messages, request, timeout):
                    yield crumb
            except _Failed as failure:
                yield c.agent_error(failure.message, failure.code)
                return
            yield call.task_end()
            if call.finish_reason in ("length", "content_filter"):
                yield c.agent_error(_STOPPED[call.finish_reason], call.finish_reason)
                return
            calls = call.calls()
            if not calls:
                return
            messages.append(call.assistant_message())
            frontend = False
            for tool_call in calls:
                tool = python_tools.get(tool_call["name"])
                if tool is None and tool_call["name"] in frontend_names:
                    frontend = True
                    continue
                crumb, content = await _run_tool(tool, tool_call)
                yield crumb
                messages.append(
                    {"role": "tool", "tool_call_id": tool_call["id"], "content": content}
                )
            if frontend:
                return  # the client runs its tools; its next run carries the results
        yield c.agent_error(
            f"the model was still calling tools after {max_steps} steps", "max_steps"
        )

    return agent


_STOPPED = {
    "length": "the model stopped at its token limit",
    "content_filter": "the model's content filter stopped the answer",
}


def _reasoning(delta) -> str | None:
    """The reasoning piece of a delta: servers spell it ``reasoning_content``
    (DeepSeek, vLLM, llama.cpp) or ``reasoning`` (OpenRouter, Ollama); the
    client keeps either as an extra field."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(delta, name, None)
        if isinstance(value, str) and value:
            return value
    return None


class _Failed(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class _ModelCall:
    """One streamed ``create`` call: its crumbs, then what the model asked for."""

    def __init__(self, ctx: RunContext, step: int):
        self.model: str | None = None
        self.task_id = f"{ctx.run_id}:model{step}"
        self.finish_reason: str | None = None
        self.usage: dict | None = None
        # The usage chunk ``include_usage`` adds after the last piece (no choices).
        self.usage_last = False
        self.text: list[str] = []
        self.reasoning: list[str] = []
        # [id, name, argument pieces, started], in the order the calls came
        self.pending: list[list] = []
        self.by_index: dict[int, list] = {}  # the latest call under each index
        self.started = 0.0

    async def stream(self, client, model, messages, request, timeout):
        self.started = time.monotonic()
        self.model = model
        yield c.task_start(self.task_id, "chat", model=model)
        try:
            # The HTTP client's read timeout bounds the wait for the answer and
            # then for each piece of the stream, at no cost per chunk here.
            if timeout is not None:
                request = {**request, "timeout": timeout}
            stream = await client.chat.completions.create(
                model=model,
                messages=messages,
                stream=True,
                stream_options={"include_usage": True},
                **request,
            )
            try:
                async for chunk in stream:
                    for crumb in self._chunk(chunk):
                        yield crumb
            finally:
                await stream.close()
            if self.finish_reason is None and not self.usage_last:
                # A connection closed cleanly partway reads as a stream's end
                # (the SDK takes no [DONE] as nothing missing): not an answer.
                # The usage asked for comes after the last piece: a server that
                # never says why it stopped (some proxies) still answered whole.
                raise _Failed("model_unreachable", "the model's stream ended before its answer")
        except openai.APITimeoutError:
            raise _Failed("model_timeout", f"no answer from the model in {timeout} s") from None
        except openai.APIConnectionError as error:
            raise _Failed("model_unreachable", f"the model is unreachable: {error}") from None
        except openai.APIStatusError as error:
            raise _Failed(
                "model_error", f"the model server answered {error.status_code}: {error.message}"
            ) from None
        except openai.APIError as error:
            raise _Failed("model_error", f"the model stream failed: {error.message}") from None
        for entry in self.pending:
            if not entry[3]:  # a call whose name never came: still shown and answered
                for crumb in self._start(entry, "unknown"):
                    yield crumb
            yield c.tool_input_end(entry[0])

    def _chunk(self, chunk):
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage.model_dump(exclude_none=True)
            # Some servers put usage on every chunk: only the one with no
            # choices comes after the answer's last piece.
            self.usage_last = not chunk.choices
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            thought = _reasoning(delta)
            if thought:
                self.reasoning.append(thought)
                yield c.reasoning_delta(thought)
            if delta.content:
                self.text.append(delta.content)
                yield c.text_delta(delta.content)
            for piece in delta.tool_calls or ():
                yield from self._tool_piece(piece)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def _entry(self, piece) -> list:
        """The call a piece belongs to. Gemini sends parallel calls whole, all
        at index 0, and some servers send no index: a piece whose id differs
        from its call's is a new call, and so is one with an id and no index
        unless it is the latest call's; a piece with neither continues the
        latest call."""
        index = getattr(piece, "index", None)
        if index is None:
            latest = self.pending[-1] if self.pending else None
            if latest is not None and (not piece.id or piece.id == latest[0]):
                return latest
        else:
            entry = self.by_index.get(index)
            if entry is not None and not (piece.id and entry[0] and piece.id != entry[0]):
                if piece.id and not entry[0]:
                    entry[0] = piece.id
                return entry
        entry = [piece.id, None, [], False]
        self.pending.append(entry)
        if index is not None:
            self.by_index[index] = entry
        return entry

    def _tool_piece(self, piece):
        entry = self._entry(piece)
        function = piece.function
        if function is not None:
            if function.name and entry[1] is None:
                entry[1] = function.name
            if function.arguments:
                entry[2].append(function.arguments)
                if entry[3]:
                    yield c.tool_input_delta(entry[0], function.arguments)
                    return
        if not entry[3] and entry[1] is not None:
            yield from self._start(entry, entry[1])

    def _start(self, entry, name):
        if not entry[0]:
            entry[0] = f"call_{uuid.uuid4().hex[:24]}"
        entry[1] = name
        entry[3] = True
        yield c.tool_input_start(entry[0], name)
        if entry[2]:
            yield c.tool_input_delta(entry[0], "".join(entry[2]))

    def task_end(self) -> dict:
        return c.task_end(
            self.task_id,
            "chat",
            status="failed" if self.finish_reason in _STOPPED else "completed",
            duration_ms=int((time.monotonic() - self.started) * 1000),
            usage=self.usage,
            model=self.model,
        )

    def calls(self) -> list[dict]:
        return [
            {"id": entry[0], "name": entry[1], "arguments": "".join(entry[2])}
            for entry in self.pending
        ]

    def assistant_message(self) -> dict:
        message = {
            "role": "assistant",
            "content": "".join(self.text) or None,
            "tool_calls": [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"]},
                }
                for call in self.calls()
            ],
        }
        if self.reasoning:
            # DeepSeek's thinking mode answers 400 without it on a tool call's message.
            message["reasoning_content"] = "".join(self.reasoning)
        return message


async def _run_tool(tool: PythonTool | None, call: dict) -> tuple[dict, str]:
    """Runs a Python tool: its crumb (result or error) and the content the model gets."""
    try:
        if tool is None:
            raise LookupError(f"there is no tool {call['name']!r}")
        arguments = parse_arguments(call["arguments"])
        result = await tool(arguments)
    except Exception as error:  # the model is told, and may try again
        code = type(error).__name__
        message = str(error) or code
        return c.tool_error(call["id"], code, message), error_text(code, message)
    content = result_text(result)
    return c.tool_result(call["id"], content), content


def _as_tool(tool) -> PythonTool:
    return tool if isinstance(tool, PythonTool) else PythonTool(tool)


def _frontend_spec(tool: dict) -> dict:
    function = {"name": tool.get("name"), "description": tool.get("description") or ""}
    parameters = tool.get("parameters")
    function["parameters"] = (
        parameters if isinstance(parameters, dict) else {"type": "object", "properties": {}}
    )
    return {"type": "function", "function": function}


def context_text(context: list[dict]) -> str:
    """The run's AG-UI ``context`` entries (what a frontend shares) as system text."""
    lines = ["Context from the application:"]
    for entry in context:
        if isinstance(entry, dict):
            lines.append(f"- {entry.get('description', '')}: {result_text(entry.get('value'))}")
    return "\n".join(lines)


def to_chat_messages(messages: list[dict]) -> list[dict]:
    """AG-UI messages (see ``_messages.conversation``) as chat completion messages.

    A reasoning message goes back as the ``reasoning_content`` of the assistant
    message with tool calls that follows it (DeepSeek's thinking mode answers
    400 without it); any other is left out, as OpenAI takes no reasoning back.
    """
    out = []
    thought: str | None = None
    for message in messages:
        role = message["role"]
        if role == "reasoning":
            thought = text(message.get("content")) or None
            continue
        reasoning, thought = thought, None
        if role == "assistant":
            calls = tool_calls(message)
            # Without calls, an assistant message needs content (even empty).
            said = text(message.get("content"))
            entry: dict = {"role": "assistant", "content": said or (None if calls else "")}
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {
                            "name": call["function"].get("name", ""),
                            "arguments": call["function"].get("arguments") or "{}",
                        },
                    }
                    for call in calls
                ]
                if reasoning:
                    entry["reasoning_content"] = reasoning
            out.append(entry)
        elif role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message["toolCallId"],
                    "content": text(message.get("content")),
                }
            )
        elif role == "user":
            out.append({"role": "user", "content": openai_content(message.get("content"))})
        else:
            out.append({"role": role, "content": text(message.get("content"))})
    return out


__all__ = ["PythonTool", "openai_agent", "to_chat_messages"]
