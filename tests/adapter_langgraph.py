"""A LangGraph graph for the adapter tests (no ``from __future__ import
annotations`` here: LangGraph reads the state's annotations at run time).

The agent node answers from a GenericFakeChatModel that also streams tool call
chunks, as providers do; ToolNode runs the tool; ``approve ...`` goes to a node
that interrupts.
"""

import json
import operator
import re
import uuid
from typing import Annotated

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt
from typing_extensions import TypedDict


class ToolStreamingFake(GenericFakeChatModel):
    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        message = next(self.messages)
        if isinstance(message.content, list):  # content blocks: one chunk each
            pieces = [AIMessageChunk(content=[block], id=message.id) for block in message.content]
        else:
            pieces = [
                AIMessageChunk(content=token, id=message.id)
                for token in re.split(r"(\s)", message.content)
                if token
            ]
        for index, call in enumerate(message.tool_calls):
            args = json.dumps(call["args"])
            for at in range(0, len(args), 4):
                first = at == 0
                chunk = {
                    "name": call["name"] if first else None,
                    "args": args[at : at + 4],
                    "id": call["id"] if first else None,
                    "index": index,
                }
                pieces.append(AIMessageChunk(content="", id=message.id, tool_call_chunks=[chunk]))
        pieces[-1].chunk_position = "last"
        for piece in pieces:
            chunk = ChatGenerationChunk(message=piece)
            if run_manager:
                run_manager.on_llm_new_token(piece.content, chunk=chunk)
            yield chunk


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class State(TypedDict):
    messages: Annotated[list, add_messages]
    turns: int


async def agent(state: State):
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        reply = AIMessage(content=f"It is {last.content}.")
    elif "weather" in last.content:
        call = {
            "id": f"lg-{uuid.uuid4().hex[:8]}",
            "name": "get_weather",
            "args": {"city": "Oslo"},
        }
        reply = AIMessage(content="Checking.", tool_calls=[call])
    elif "crash" in last.content:
        raise RuntimeError("the graph fell over")
    elif "think" in last.content:
        reply = AIMessage(
            content=[
                {"type": "reasoning", "reasoning": "Pondering "},
                {"type": "thinking", "thinking": "deeply.", "signature": "sig-lg"},
                {"type": "text", "text": "Thought about it."},
            ]
        )
    else:
        reply = AIMessage(content=f"Hello from langgraph; {len(state['messages'])} messages")
    model = ToolStreamingFake(messages=iter([reply]))
    response = await model.ainvoke(state["messages"])
    return {"messages": [response], "turns": state.get("turns", 0) + 1}


def review(state: State):
    answer = interrupt({"reason": "approval", "message": "approve the plan?"})
    return {"messages": [AIMessage(content=f"Decision: {answer}")]}


def route(state: State):
    last = state["messages"][-1]
    return "review" if str(last.content).startswith("approve") else "agent"


def langgraph_graph():
    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([get_weather]))
    builder.add_node("review", review)
    builder.add_conditional_edges(START, route, ["agent", "review"])
    builder.add_conditional_edges("agent", tools_condition, ["tools", END])
    builder.add_edge("tools", "agent")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=InMemorySaver())


def breakpoint_graph(**breakpoints):
    """``langgraph_graph``'s agent and tools compiled with static breakpoints
    (``interrupt_before=["tools"]``, ``interrupt_after=...``): no interrupt() asks."""
    return graph_of(
        {"agent": agent, "tools": ToolNode([get_weather])},
        [("__start__", "agent"), ("tools", "agent")],
        conditional={"agent": (tools_condition, ["tools", END])},
        **breakpoints,
    )


def recording_graph(seen: list):
    """A graph of one node that keeps the last message it is given (in ``seen``)
    and answers "seen": what the adapter hands a graph (tests/test_attachment_adapters.py)."""

    def node(state: State):
        seen.append(state["messages"][-1])
        return {"messages": [AIMessage(content="seen")], "turns": state.get("turns", 0) + 1}

    builder = StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    return builder.compile(checkpointer=InMemorySaver())


def trimming_graph(seen: list):
    """``seeing_graph``'s answers from a graph that keeps only its last two
    messages (LangGraph's documented delete-messages memory pattern)."""

    async def agent(state: State):
        seen.append(list(state["messages"]))
        return {"messages": [AIMessage(content=f"answer #{len(seen)}")]}

    def trim(state: State):
        return {"messages": [RemoveMessage(id=m.id) for m in state["messages"][:-2]]}

    nodes = {"agent": agent, "trim": trim}
    return graph_of(nodes, [("__start__", "agent"), ("agent", "trim"), ("trim", "__end__")])


def graph_of(
    nodes: dict, edges: list, state=State, conditional: dict | None = None, **compile_kwargs
):
    """A graph of ``nodes`` (name → function) joined by ``edges`` (pairs), with a checkpointer."""
    builder = StateGraph(state)
    for name, fn in nodes.items():
        builder.add_node(name, fn)
    for source, target in edges:
        builder.add_edge(source, target)
    for source, (router, targets) in (conditional or {}).items():
        builder.add_conditional_edges(source, router, targets)
    return builder.compile(checkpointer=InMemorySaver(), **compile_kwargs)


def answering(text: str, message_id: str, stream: bool):
    """A node that answers with one AI message of its own id, streamed or whole."""

    async def node(state: State):
        message = AIMessage(content=text, id=message_id)
        if stream:
            message = await ToolStreamingFake(messages=iter([message])).ainvoke(state["messages"])
        return {"messages": [message]}

    return node


class ScriptedChunks(GenericFakeChatModel):
    """Streams the chunks ``script(messages)`` gives, the last one marked last."""

    script: object = None

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        pieces = self.script(messages)
        pieces[-1].chunk_position = "last"
        for piece in pieces:
            chunk = ChatGenerationChunk(message=piece)
            if run_manager:
                run_manager.on_llm_new_token("", chunk=chunk)
            yield chunk


def parallel_calls_graph(index):
    """Two weather calls streamed in one AI message, both under tool call index ``index``
    (providers send None, or reuse an index for calls told apart by their ids)."""

    def script(messages):
        if isinstance(messages[-1], ToolMessage):
            return [AIMessageChunk(content="ok", id="m2")]
        return [
            AIMessageChunk(
                content="",
                id="m1",
                tool_call_chunks=[
                    {"name": "get_weather", "args": args, "id": call_id, "index": index}
                ],
            )
            for call_id, args in (("call_a", '{"city": "Oslo"}'), ("call_b", '{"city": "Lima"}'))
        ]

    async def agent(state: State):
        return {
            "messages": [
                await ScriptedChunks(messages=iter([]), script=script).ainvoke(state["messages"])
            ]
        }

    return graph_of(
        {"agent": agent, "tools": ToolNode([get_weather])},
        [("__start__", "agent"), ("tools", "agent")],
        conditional={"agent": (tools_condition, ["tools", END])},
    )


class Answers(TypedDict):
    messages: Annotated[list, add_messages]
    answers: Annotated[list, operator.add]


def two_interrupts_graph():
    """Nodes a and b each interrupt in the same step; "done" says both answers."""

    def asking(name):
        def node(state: Answers):
            return {"answers": [f"{name}={interrupt(f'approve {name}?')}"]}

        return node

    def done(state: Answers):
        return {"messages": [AIMessage(content=f"answers {sorted(state['answers'])}")]}

    return graph_of(
        {"a": asking("a"), "b": asking("b"), "done": done},
        [("__start__", "a"), ("__start__", "b"), (["a", "b"], "done"), ("done", "__end__")],
        state=Answers,
    )


@tool
def delete_file(path: str) -> str:
    """Deletes a file once the user approves."""
    answer = interrupt({"reason": "approval", "message": f"delete {path}?"})
    return f"deleted {path}" if answer == "yes" else "the user said no"


def approving_tool_graph(seen: list | None = None):
    """LangGraph's human-in-the-loop inside a tool: the tool interrupts for approval
    ("delete ..." asks for it; other user messages are answered "you said: ...").
    ``seen`` keeps every model input."""

    async def agent(state: State):
        if seen is not None:
            seen.append(list(state["messages"]))
        last = state["messages"][-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"Done: {last.content}")
        elif "delete" not in str(last.content):
            reply = AIMessage(content=f"you said: {last.content}")
        else:
            call = {"id": "del-1", "name": "delete_file", "args": {"path": "a.txt"}}
            reply = AIMessage(content="Asking first.", tool_calls=[call])
        model = ToolStreamingFake(messages=iter([reply]))
        return {"messages": [await model.ainvoke(state["messages"])]}

    return graph_of(
        {"agent": agent, "tools": ToolNode([delete_file])},
        [("__start__", "agent"), ("tools", "agent")],
        conditional={"agent": (tools_condition, ["tools", END])},
    )


def seeing_graph(seen: list):
    """One agent node that keeps every model input in ``seen``; "city" asks the
    client's pick_city tool, anything else gets "answer #n"."""

    async def agent(state: State):
        seen.append(list(state["messages"]))
        if "city" in str(state["messages"][-1].content):
            call = {"id": f"fc-{len(seen)}", "name": "pick_city", "args": {}}
            reply = AIMessage(content="", tool_calls=[call])
        else:
            reply = AIMessage(content=f"answer #{len(seen)}")
        model = ToolStreamingFake(messages=iter([reply]))
        return {"messages": [await model.ainvoke(state["messages"])]}

    return graph_of({"agent": agent}, [("__start__", "agent"), ("agent", "__end__")])


def summarizing_graph(seen: list, summaries: list):
    """What langchain's SummarizationMiddleware does to the checkpoint: from 7
    messages on, all are removed and a summary HumanMessage of a fresh id goes
    before the last two (each summary is kept in ``summaries``); the agent keeps
    every model input in ``seen`` and answers "answer #n"."""

    def summarize(state: State):
        messages = state["messages"]
        if len(messages) < 7:
            return {}
        summaries.append([m.content for m in messages[:-2]])
        # Marked as langchain's middleware marks its summary.
        summary = HumanMessage(
            content="summary",
            id=str(uuid.uuid4()),
            additional_kwargs={"lc_source": "summarization"},
        )
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), summary, *messages[-2:]]}

    async def agent(state: State):
        seen.append([m.content for m in state["messages"]])
        return {"messages": [AIMessage(content=f"answer #{len(seen)}")]}

    nodes = {"summarize": summarize, "agent": agent}
    return graph_of(
        nodes, [("__start__", "summarize"), ("summarize", "agent"), ("agent", "__end__")]
    )
