"""Apps for the adapter tests: agents built by agui_bridge.adapters, nothing by hand.

``make_app()`` (a granian ``--factory`` target) reads FAKE_OPENAI_URL (the base
URL of ``tests.fake_openai``, for the OpenAI agents) and ADAPTER_STORE.
"""

from __future__ import annotations

import os

from agui_bridge.app import App


def add(a: float, b: float) -> float:
    """Adds two numbers."""
    return a + b


def divide(a: float, b: float) -> float:
    """Divides a by b."""
    return a / b


def openai_client(base_url: str, timeout: float = 10.0):
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=base_url, api_key="test-key", max_retries=0, timeout=timeout)


def register_openai(app: App, base_url: str, agent_timeout: float = 10.0) -> None:
    from agui_bridge.adapters.openai import openai_agent

    client = openai_client(base_url + "/v1")
    agent = openai_agent(
        client, "fake-model", tools=[add, divide], max_steps=3, timeout=agent_timeout
    )
    app.agent("openai")(agent)


def make_app() -> App:
    app = App(store=os.environ.get("ADAPTER_STORE", "memory://"))
    base_url = os.environ.get("FAKE_OPENAI_URL")
    if base_url:
        register_openai(app, base_url)
    register_pydantic(app)
    register_langgraph(app)
    return app


def pydantic_agent():
    """A pydantic-ai Agent on a FunctionModel whose script the user's words pick."""
    import uuid

    from pydantic_ai import Agent, CallDeferred, DeferredToolRequests, ModelRetry
    from pydantic_ai.messages import ToolReturnPart, UserPromptPart
    from pydantic_ai.models.function import DeltaThinkingPart, DeltaToolCall, FunctionModel

    async def stream(messages, info):
        parts = messages[-1].parts
        returns = [p for p in parts if isinstance(p, ToolReturnPart)]
        if returns:
            yield "Results: "
            yield " | ".join(p.model_response_str() for p in returns)
            return
        prompt = [p for p in parts if isinstance(p, UserPromptPart)][-1].content
        call_id = f"pc-{uuid.uuid4().hex[:8]}"
        if "add" in prompt:
            yield "Adding."
            yield {0: DeltaToolCall(name="add", json_args='{"a": 2,', tool_call_id=call_id)}
            yield {0: DeltaToolCall(json_args=' "b": 3}')}
        elif "city" in prompt:
            yield {0: DeltaToolCall(name="pick_city", json_args="{", tool_call_id=call_id)}
            yield {0: DeltaToolCall(json_args='"options": ["Oslo", "Lima"]}')}
        elif "ask" in prompt:
            yield {
                0: DeltaToolCall(name="ask_user", json_args='{"q": "why?"}', tool_call_id=call_id)
            }
        elif "delete" in prompt:
            yield "Deleting."
            yield {
                0: DeltaToolCall(
                    name="delete_file", json_args='{"path": "draft.txt"}', tool_call_id=call_id
                )
            }
        elif "retry" in prompt:
            yield {0: DeltaToolCall(name="picky", json_args="{}", tool_call_id=call_id)}
        elif "think" in prompt:
            yield {0: DeltaThinkingPart(content="Weighing ")}
            yield {0: DeltaThinkingPart(content="it.", signature="sig-abc")}
            yield "Answer."
        elif "crash" in prompt:
            yield "Starting"
            raise RuntimeError("the model fell over")
        else:
            seen = sum(len(m.parts) for m in messages)
            for word in f"Hello from pydantic-ai; {seen} parts; you said {prompt}".split(" "):
                yield word + " "

    agent = Agent(
        FunctionModel(stream_function=stream), retries=1, output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain
    def add(a: float, b: float) -> float:
        """Adds two numbers."""
        return a + b

    @agent.tool_plain
    def ask_user(q: str) -> str:
        """Deferred: the frontend answers it."""
        raise CallDeferred

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        """Deletes a file, once the user approves."""
        return f"deleted {path}"

    @agent.tool_plain
    def picky() -> str:
        """Always asks the model to try again."""
        raise ModelRetry("not like that")

    return agent


def register_pydantic(app: App) -> None:
    from agui_bridge.adapters.pydantic_ai import pydantic_ai_agent

    app.agent("pydantic")(pydantic_ai_agent(pydantic_agent()))


def register_langgraph(app: App) -> None:
    from agui_bridge.adapters.langgraph import langgraph_agent

    from tests.adapter_langgraph import langgraph_graph

    app.agent("langgraph")(langgraph_agent(langgraph_graph()))
