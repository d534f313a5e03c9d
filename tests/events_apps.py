"""A real AG-UI producer behind ``App``: ``ag-ui-langgraph``'s agent, events dialect.

The graph is a small tool loop (chat model → tools → chat model) on a
checkpointer, as a LangGraph user writes it. The chat model is langchain-core's
``GenericFakeChatModel`` taught to stream tool calls the way providers do
(the id and name on the first chunk, the arguments in pieces), since the stock
double streams only text. ``make_app`` is a granian factory.
"""

from __future__ import annotations

import json
import os
from typing import Annotated

from ag_ui.core import RunAgentInput
from ag_ui_langgraph import LangGraphAgent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import tool
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from typing_extensions import TypedDict


class StreamingToolModel(GenericFakeChatModel):
    """GenericFakeChatModel that also streams the tool calls of its scripted replies."""

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        message = next(self.messages)
        if message.tool_calls:
            for index, call in enumerate(message.tool_calls):
                args = json.dumps(call["args"])
                first = {"index": index, "id": call["id"], "name": call["name"], "args": ""}
                yield ChatGenerationChunk(
                    message=AIMessageChunk(content="", id=message.id, tool_call_chunks=[first])
                )
                for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
                    chunk = {"index": index, "args": piece}
                    yield ChatGenerationChunk(
                        message=AIMessageChunk(content="", id=message.id, tool_call_chunks=[chunk])
                    )
            return
        words = message.content.split(" ")
        for at, word in enumerate(words):
            token = word if at == len(words) - 1 else word + " "
            yield ChatGenerationChunk(message=AIMessageChunk(content=token, id=message.id))


@tool
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def replies():
    """Each turn: a tool call, then the answer."""
    turn = 0
    while True:
        turn += 1
        call = {"id": f"call-{turn}", "name": "add", "args": {"a": 2, "b": turn}}
        yield AIMessage(content="", id=f"ai-call-{turn}", tool_calls=[call])
        yield AIMessage(content=f"2 plus {turn} is {2 + turn}.", id=f"ai-text-{turn}")


def make_graph():
    model = StreamingToolModel(messages=replies())

    async def chat(state: State, config):
        return {"messages": [await model.ainvoke(state["messages"], config)]}

    def route(state: State):
        return "tools" if state["messages"][-1].tool_calls else END

    graph = StateGraph(State)
    graph.add_node("chat", chat)
    graph.add_node("tools", ToolNode([add]))
    graph.add_edge(START, "chat")
    graph.add_conditional_edges("chat", route, ["tools", END])
    graph.add_edge("tools", "chat")
    return graph.compile(checkpointer=MemorySaver())


def run_input(ctx) -> RunAgentInput:
    """The run as ag-ui-langgraph expects it; the graph's checkpoint holds the thread."""
    new = [m for m in ctx.messages if m.get("role") == "user"][-1:]
    return RunAgentInput.model_validate(
        {
            "threadId": ctx.thread_id,
            "runId": ctx.run_id,
            "state": {},
            "messages": new,
            "tools": ctx.tools,
            "context": ctx.context,
            "forwardedProps": ctx.forwarded_props or {},
        }
    )


def make_app():
    """``granian --factory tests.events_apps:make_app``; store from ``EVENTS_STORE``."""
    from agui_bridge import App

    app = App(store=os.environ.get("EVENTS_STORE", "memory://"))
    agent = LangGraphAgent(name="adder", graph=make_graph())

    @app.agent("langgraph", dialect="events")
    async def langgraph(ctx):
        async for event in agent.run(run_input(ctx)):
            yield event

    return app
