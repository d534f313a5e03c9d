"""agui_bridge.adapters.langgraph: a compiled graph (tests/adapter_langgraph.py) on
langchain-core's GenericFakeChatModel, behind the App in process. Every stream
passes ag-ui-validate."""

from __future__ import annotations

import json

import pytest

from tests.adapter_apps import register_langgraph
from tests.adapter_testing import app_client, of, run_on, said, state_of, thread
from tests.ingress_apps import run_body


@pytest.fixture
async def client():
    async with app_client(register_langgraph) as http:
        yield http


async def run(http, body) -> list[dict]:
    return await run_on(http, "/agui/langgraph", body)


async def test_tokens_stream_and_state_reaches_snapshots(client):
    tid = thread("text")
    body = run_body(tid, "hi")
    body["state"] = {"shared": "by the client"}
    events = await run(client, body)
    assert said(events) == "Hello from langgraph; 1 messages"
    assert len(of(events, "TEXT_MESSAGE_CONTENT")) == 9  # token by token, spaces too
    # The graph's state is the thread's state at the top level, as clients read it.
    snapshot = of(events, "STATE_SNAPSHOT")[-1]["snapshot"]
    assert snapshot == {"shared": "by the client", "turns": 1}
    assert (await state_of(client, tid))["values"] == snapshot
    assert events[-1]["type"] == "RUN_FINISHED"


async def test_reasoning_blocks_stream_as_reasoning(client):
    """Contract section 8: LangChain reasoning and thinking blocks are reasoning,
    a thinking signature its encrypted value, stored with the thread."""
    tid = thread("think")
    events = await run(client, run_body(tid, "think about it"))
    assert said(events) == "Thought about it."
    thoughts = of(events, "REASONING_MESSAGE_CONTENT")
    assert "".join(e["delta"] for e in thoughts) == "Pondering deeply."
    [signature] = of(events, "REASONING_ENCRYPTED_VALUE")
    assert signature["encryptedValue"] == "sig-lg"
    assert signature["entityId"] == thoughts[0]["messageId"]
    kinds = [e["type"] for e in events]
    assert kinds.index("REASONING_END") < kinds.index("TEXT_MESSAGE_START")
    state = (await client.get(f"/threads/{tid}/state")).json()
    [reasoning] = [m for m in state["messages"] if m["role"] == "reasoning"]
    assert reasoning["content"] == "Pondering deeply."
    assert reasoning["encryptedValue"] == "sig-lg"


def test_usage_metadata_is_token_usage():
    from agui_bridge.adapters.langgraph import _token_usage
    from langchain_core.messages import AIMessage

    usage = {
        "input_tokens": 9,
        "output_tokens": 4,
        "total_tokens": 13,
        "input_token_details": {"cache_read": 2},
        "output_token_details": {"reasoning": 1},
    }
    message = AIMessage(
        content="x", usage_metadata=usage, response_metadata={"model_name": "gpt-x"}
    )
    assert _token_usage(message) == {
        "model": "gpt-x",
        "inputTokens": 9,
        "outputTokens": 4,
        "totalTokens": 13,
        "reasoningTokens": 1,
        "cachedInputTokens": 2,
    }
    assert _token_usage(AIMessage(content="x")) is None


def test_reasoning_of_an_openai_compatible_chunk():
    from agui_bridge.adapters.langgraph import _reasoning
    from langchain_core.messages import AIMessageChunk

    chunk = AIMessageChunk(content="", id="a1", additional_kwargs={"reasoning_content": "hm"})
    assert _reasoning(chunk) == [
        {"type": "REASONING_MESSAGE_CHUNK", "delta": "hm", "messageId": "a1:reasoning"}
    ]
    summary = [{"type": "summary_text", "text": "short"}]
    chunk = AIMessageChunk(content=[{"type": "reasoning", "summary": summary}])
    assert _reasoning(chunk) == [{"type": "REASONING_MESSAGE_CHUNK", "delta": "short"}]


async def test_tool_call_streams_and_tool_node_result(client):
    tid = thread("tool")
    events = await run(client, run_body(tid, "what weather"))
    [start] = of(events, "TOOL_CALL_START")
    assert start["toolCallName"] == "get_weather"
    args = [a["delta"] for a in of(events, "TOOL_CALL_ARGS")]
    assert len(args) == 4 and json.loads("".join(args)) == {"city": "Oslo"}
    [result] = of(events, "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == (start["toolCallId"], "sunny in Oslo")
    assert said(events) == "Checking.It is sunny in Oslo."
    roles = [m["role"] for m in (await state_of(client, tid))["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]


async def test_the_checkpointer_holds_the_thread(client):
    """Later runs send only the new message; the graph's checkpoint has the rest."""
    tid = thread("turns")
    await run(client, run_body(tid, "hi"))
    state = await state_of(client, tid)
    message = {"id": "u2", "role": "user", "content": "again"}
    events = await run(client, run_body(tid, [*state["messages"], message]))
    assert said(events) == "Hello from langgraph; 3 messages"
    assert of(events, "STATE_SNAPSHOT")[-1]["snapshot"] == {"turns": 2}
    assert state["values"] == {"turns": 1}  # what the thread stored after the first run


async def test_without_a_checkpoint_the_whole_conversation_is_sent():
    """A new graph (a restarted server with an in-memory checkpointer) gets the history."""
    tid = thread("fresh")
    history = [
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "a1", "role": "assistant", "content": "Hello."},
        {"id": "u2", "role": "user", "content": "again"},
    ]
    async with app_client(register_langgraph) as http:
        events = await run(http, run_body(tid, history))
    assert said(events) == "Hello from langgraph; 3 messages"


async def test_interrupt_suspends_and_command_resumes(client):
    tid = thread("approve")
    events = await run(client, run_body(tid, "approve the plan"))
    outcome = events[-1]["outcome"]
    [interrupt] = outcome["interrupts"]
    assert interrupt["reason"] == "approval"
    assert interrupt["message"] == "approve the plan?"
    state = await state_of(client, tid)
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": "yes"}]
    events = await run(client, run_body(tid, state["messages"], resume=resume))
    assert said(events) == "Decision: yes"
    assert "outcome" not in events[-1]


async def test_resume_by_forwarded_props_command(client):
    tid = thread("approve-fp")
    events = await run(client, run_body(tid, "approve the plan"))
    assert events[-1]["outcome"]["type"] == "interrupt"
    state = await state_of(client, tid)
    props = {"command": {"resume": "no"}}
    events = await run(client, run_body(tid, state["messages"], forwardedProps=props))
    assert said(events) == "Decision: no"


async def test_graph_error_is_a_coded_run_error(client):
    events = await run(client, run_body(thread("crash"), "crash"))
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "RuntimeError"


def test_resume_values():
    from agui_bridge.adapters.langgraph import resume_value
    from agui_bridge.context import Resumption, RunContext

    entries = (
        {"interruptId": "a", "status": "resolved", "payload": {"ok": 1}},
        {"interruptId": "b", "status": "cancelled"},
    )
    resume = Resumption(interrupts=(), entries=entries)
    ctx = RunContext("t", "r", "g", "", resume=resume)
    assert resume_value(ctx) == {"a": {"ok": 1}, "b": None}
    ctx = RunContext("t", "r", "g", "", resume=Resumption(interrupts=(), decision="yes"))
    assert resume_value(ctx) == "yes"
    named = Resumption(interrupts=(), decision="yes", interrupt_id="i1")
    assert resume_value(RunContext("t", "r", "g", "", resume=named)) == {"i1": "yes"}


async def test_a_reused_run_id_keeps_both_turns_in_the_checkpoint(client):
    """CopilotKit resumes under the same runId: the graph must see the turn under
    its own stored id, not one derived from the runId that the next run repeats."""
    tid = thread("reuse")
    await run(client, run_body(tid, "hi", run_id="same"))
    state = await state_of(client, tid)
    message = {"id": "u2", "role": "user", "content": "again"}
    events = await run(client, run_body(tid, [*state["messages"], message], run_id="same"))
    assert said(events) == "Hello from langgraph; 3 messages"
    stored = [m["id"] for m in (await state_of(client, tid))["messages"] if m["role"] == "user"]
    assert stored == [f"u-{tid}-hi", "u2"]


def serve(graph):
    from agui_bridge.adapters.langgraph import langgraph_agent

    return app_client(lambda app: app.agent("g")(langgraph_agent(graph)))


@pytest.mark.parametrize("stream", [True, False])
async def test_each_ai_message_is_its_own_message(stream):
    """Two nodes answer in turn: the client must see (and store) two messages,
    as the checkpoint holds them, not one with both texts run together."""
    from tests.adapter_langgraph import answering, graph_of

    graph = graph_of(
        {
            "researcher": answering("Research notes.", "ai-1", stream),
            "writer": answering("Final answer.", "ai-2", stream),
        },
        [("__start__", "researcher"), ("researcher", "writer"), ("writer", "__end__")],
    )
    tid = thread("two-messages")
    async with serve(graph) as http:
        events = await run_on(http, "/agui/g", run_body(tid, "go"))
        stored = (await state_of(http, tid))["messages"]
    assert [e["messageId"] for e in of(events, "TEXT_MESSAGE_START")] == ["ai-1", "ai-2"]
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "go"),
        ("assistant", "Research notes."),
        ("assistant", "Final answer."),
    ]


@pytest.mark.parametrize("index", [None, 0])
async def test_parallel_tool_calls_stay_apart(index):
    """langchain-core keeps chunks with another id, or no index, apart: so must the
    stream, or one call gets both arguments and the other's result is lost."""
    from tests.adapter_langgraph import parallel_calls_graph

    tid = thread("parallel")
    async with serve(parallel_calls_graph(index)) as http:
        events = await run_on(http, "/agui/g", run_body(tid, "weather"))
        stored = (await state_of(http, tid))["messages"]
    starts = [e["toolCallId"] for e in of(events, "TOOL_CALL_START")]
    assert starts == ["call_a", "call_b"]
    for call_id, city in (("call_a", "Oslo"), ("call_b", "Lima")):
        args = "".join(
            e["delta"] for e in of(events, "TOOL_CALL_ARGS") if e["toolCallId"] == call_id
        )
        assert json.loads(args) == {"city": city}
    results = {e["toolCallId"]: e["content"] for e in of(events, "TOOL_CALL_RESULT")}
    assert results == {"call_a": "sunny in Oslo", "call_b": "sunny in Lima"}
    asked = [c["id"] for m in stored for c in m.get("toolCalls") or ()]
    assert asked == ["call_a", "call_b"]
    answered = [m["toolCallId"] for m in stored if m["role"] == "tool"]
    assert answered == ["call_a", "call_b"]


async def test_forwarded_props_resume_answers_the_interrupt_it_names():
    """With two interrupts pending, {decision, interruptId} answers that one
    (LangGraph wants the id then); the other stays pending."""
    from tests.adapter_langgraph import two_interrupts_graph

    tid = thread("two-interrupts")
    async with serve(two_interrupts_graph()) as http:
        events = await run_on(http, "/agui/g", run_body(tid, "go"))
        pending = {i["message"]: i["id"] for i in events[-1]["outcome"]["interrupts"]}
        held = (await state_of(http, tid))["messages"]
        for asked, decision in (("approve a?", "yes"), ("approve b?", "no")):
            resume = {"decision": decision, "interruptId": pending[asked]}
            props = {"command": {"resume": resume}}
            events = await run_on(http, "/agui/g", run_body(tid, held, forwardedProps=props))
            assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert said(events) == "answers ['a=yes', 'b=no']"


async def test_a_tool_that_interrupts_is_announced_with_its_result():
    """A run cannot answer a call of an earlier run (contract rule 6): the call
    that waits on an approval goes out in the resuming run, with its result."""
    from tests.adapter_langgraph import approving_tool_graph

    tid = thread("tool-interrupt")
    async with serve(approving_tool_graph()) as http:
        events = await run_on(http, "/agui/g", run_body(tid, "delete a.txt"))
        [pending] = events[-1]["outcome"]["interrupts"]
        assert pending["message"] == "delete a.txt?"
        assert of(events, "TOOL_CALL_START") == []
        held = (await state_of(http, tid))["messages"]
        resume = [{"interruptId": pending["id"], "status": "resolved", "payload": "yes"}]
        events = await run_on(http, "/agui/g", run_body(tid, held, resume=resume))
        stored = (await state_of(http, tid))["messages"]
    [start] = of(events, "TOOL_CALL_START")
    assert (start["toolCallId"], start["toolCallName"]) == ("del-1", "delete_file")
    args = "".join(e["delta"] for e in of(events, "TOOL_CALL_ARGS"))
    assert json.loads(args) == {"path": "a.txt"}
    [result] = of(events, "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == ("del-1", "deleted a.txt")
    assert said(events) == "Done: deleted a.txt"
    # The stored thread, what a client sends the model next, pairs the call with its result.
    calls = [c["id"] for m in stored for c in m.get("toolCalls") or ()]
    results = [(m["toolCallId"], m["content"]) for m in stored if m["role"] == "tool"]
    assert (calls, results) == (["del-1"], [("del-1", "deleted a.txt")])


async def test_an_unanswered_frontend_call_gets_no_result():
    """The user types on instead of answering pick_city: the model must not get
    the call directly followed by the user message (providers reject that)."""
    from agui_bridge.adapters._messages import NO_RESULT
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from tests.adapter_langgraph import seeing_graph
    from tests.adapter_testing import PICK_CITY

    seen: list = []
    tid = thread("unanswered")
    async with serve(seeing_graph(seen)) as http:
        events = await run_on(http, "/agui/g", run_body(tid, "pick a city", tools=[PICK_CITY]))
        [start] = of(events, "TOOL_CALL_START")
        held = (await state_of(http, tid))["messages"]
        message = {"id": "u2", "role": "user", "content": "never mind, hello"}
        events = await run_on(http, "/agui/g", run_body(tid, [*held, message], tools=[PICK_CITY]))
    assert said(events) == "answer #2"
    asked, answered, typed = seen[-1][-3:]
    assert isinstance(asked, AIMessage) and asked.tool_calls[0]["id"] == start["toolCallId"]
    assert isinstance(answered, ToolMessage) and answered.tool_call_id == start["toolCallId"]
    assert answered.content == NO_RESULT
    assert isinstance(typed, HumanMessage) and typed.content == "never mind, hello"


async def test_regenerate_and_edit_rewrite_the_checkpoint_to_the_branch():
    """docs/branches.md: a regenerate or an edit continues an earlier point of the
    thread; the model must see that branch, not the checkpoint's latest one."""
    from tests.adapter_langgraph import seeing_graph

    seen: list = []

    def contents(messages):
        return [m.content for m in messages]

    async with serve(seeing_graph(seen)) as http:
        tid = thread("regenerate")
        await run_on(http, "/agui/g", run_body(tid, "hello"))
        held = (await state_of(http, tid))["messages"]
        events = await run_on(http, "/agui/g", run_body(tid, held[:1]))
        assert contents(seen[-1]) == ["hello"]
        assert said(events) == "answer #2"
        stored = (await state_of(http, tid))["messages"]
        assert [m["content"] for m in stored] == ["hello", "answer #2"]

        tid = thread("edit")
        await run_on(http, "/agui/g", run_body(tid, "first"))
        held = (await state_of(http, tid))["messages"]
        second = {"id": "u2", "role": "user", "content": "second"}
        await run_on(http, "/agui/g", run_body(tid, [*held, second]))
        edited = {"id": "u9", "role": "user", "content": "edited second"}
        await run_on(http, "/agui/g", run_body(tid, [*held, edited]))
        assert contents(seen[-1]) == ["first", "answer #3", "edited second"]
        # The next turn goes on from the edited branch.
        held = (await state_of(http, tid))["messages"]
        more = {"id": "u10", "role": "user", "content": "more"}
        await run_on(http, "/agui/g", run_body(tid, [*held, more]))
        assert contents(seen[-1]) == ["first", "answer #3", "edited second", "answer #5", "more"]


async def test_a_graph_that_trims_its_history_is_not_taken_for_a_branch():
    """A graph that deletes its old messages holds only the last of the client's
    user messages: it goes on, and its checkpoint is not rewritten to the
    whole conversation every turn."""
    from tests.adapter_langgraph import trimming_graph

    seen: list = []
    async with serve(trimming_graph(seen)) as http:
        tid = thread("trimmed")
        sent: list = []
        for n in range(1, 4):
            sent.append({"id": f"u{n}", "role": "user", "content": f"question {n}"})
            await run_on(http, "/agui/g", run_body(tid, sent))
            sent = (await state_of(http, tid))["messages"]
    assert [m.content for m in seen[-1]] == ["question 2", "answer #2", "question 3"]


async def test_a_resume_that_cancels_all_with_a_new_message_answers_it():
    """The user cancels the approval and types on instead: the graph must answer
    the new message (the call it asked about closed with no result), not resume
    the tool with a refusal and drop what the user typed."""
    from agui_bridge.adapters._messages import NO_RESULT
    from langchain_core.messages import HumanMessage, ToolMessage

    from tests.adapter_langgraph import approving_tool_graph

    seen: list = []
    tid = thread("cancel-and-type")
    graph = approving_tool_graph(seen)
    async with serve(graph) as http:
        events = await run_on(http, "/agui/g", run_body(tid, "delete a.txt"))
        [pending] = events[-1]["outcome"]["interrupts"]
        held = (await state_of(http, tid))["messages"]
        typed = {"id": "u2", "role": "user", "content": "never mind, what is 2+2?"}
        resume = [{"interruptId": pending["id"], "status": "cancelled"}]
        events = await run_on(http, "/agui/g", run_body(tid, [*held, typed], resume=resume))
        stored = await state_of(http, tid)
    assert said(events) == "you said: never mind, what is 2+2?"
    closed, asked = seen[-1][-2:]
    assert isinstance(closed, ToolMessage) and closed.tool_call_id == "del-1"
    assert closed.content == NO_RESULT
    assert isinstance(asked, HumanMessage) and asked.content == typed["content"]
    assert [(m["role"], m["content"]) for m in stored["messages"][-2:]] == [
        ("user", "never mind, what is 2+2?"),
        ("assistant", "you said: never mind, what is 2+2?"),
    ]
    # Neither the thread nor the graph waits on the cancelled approval.
    assert stored["interrupts"] == []
    assert (await graph.aget_state({"configurable": {"thread_id": tid}})).interrupts == ()


async def test_a_graph_that_summarizes_its_history_is_not_taken_for_a_branch():
    """A summary (langchain's SummarizationMiddleware) replaces the old messages
    with a HumanMessage of its own id, which no client message has: the thread
    goes on, so the checkpoint is not rewritten to the whole conversation and
    summarized again every turn."""
    from tests.adapter_langgraph import summarizing_graph

    seen: list = []
    summaries: list = []
    async with serve(summarizing_graph(seen, summaries)) as http:
        tid = thread("summarized")
        sent: list = []
        for n in range(1, 6):
            sent.append({"id": f"u{n}", "role": "user", "content": f"question {n}"})
            await run_on(http, "/agui/g", run_body(tid, sent))
            sent = (await state_of(http, tid))["messages"]
    assert len(summaries) == 1  # in turn 4, at 7 messages
    assert seen[-1] == ["summary", "answer #3", "question 4", "answer #4", "question 5"]
    assert [m["content"] for m in sent] == [
        text for n in range(1, 6) for text in (f"question {n}", f"answer #{n}")
    ]


@pytest.mark.parametrize(
    "breakpoints",
    [{"interrupt_before": ["tools"]}, {"interrupt_after": ["agent"]}],
    ids=["before", "after"],
)
async def test_a_static_breakpoint_is_an_interrupt_the_resume_continues(breakpoints):
    """A graph compiled with interrupt_before/after pauses with no interrupt()
    value: the run must end on an interrupt the client can answer, not a plain
    RUN_FINISHED that leaves the tool call to a no-result ToolMessage next turn."""
    from tests.adapter_langgraph import breakpoint_graph

    tid = thread("breakpoint")
    graph = breakpoint_graph(**breakpoints)
    async with serve(graph) as http:
        events = await run_on(http, "/agui/g", run_body(tid, "what weather"))
        [pending] = events[-1]["outcome"]["interrupts"]
        assert pending["reason"] == "breakpoint"
        assert pending["message"] == "paused before tools"
        [waiting] = pending["metadata"]["toolCalls"]
        assert pending["metadata"]["nodes"] == ["tools"]
        assert (waiting["name"], waiting["args"]) == ("get_weather", {"city": "Oslo"})
        # The call goes out with its result, in the run that runs it (rule 6).
        assert of(events, "TOOL_CALL_START") == []
        assert said(events) == "Checking."
        stored = await state_of(http, tid)
        assert [i["id"] for i in stored["interrupts"]] == [pending["id"]]

        resume = [{"interruptId": pending["id"], "status": "resolved", "payload": "go"}]
        events = await run_on(http, "/agui/g", run_body(tid, stored["messages"], resume=resume))
        stored = await state_of(http, tid)
    [start] = of(events, "TOOL_CALL_START")
    assert (start["toolCallId"], start["toolCallName"]) == (waiting["id"], "get_weather")
    [result] = of(events, "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == (waiting["id"], "sunny in Oslo")
    assert said(events) == "It is sunny in Oslo."
    assert "outcome" not in events[-1]
    assert stored["interrupts"] == []
    results = [(m["toolCallId"], m["content"]) for m in stored["messages"] if m["role"] == "tool"]
    assert results == [(waiting["id"], "sunny in Oslo")]
    assert stored["messages"][-1]["content"] == "It is sunny in Oslo."
    assert (await graph.aget_state({"configurable": {"thread_id": tid}})).next == ()


async def test_a_cancelled_breakpoint_does_not_run_the_paused_step():
    """Cancelling a breakpoint refuses the step it paused before: the tool does
    not run, its call is closed with no result, and a new message is answered."""
    from agui_bridge.adapters._messages import NO_RESULT
    from langchain_core.messages import HumanMessage, ToolMessage

    from tests.adapter_langgraph import breakpoint_graph

    graph = breakpoint_graph(interrupt_before=["tools"])
    config = {"configurable": {"thread_id": None}}
    async with serve(graph) as http:
        for typed in (None, {"id": "u2", "role": "user", "content": "hi instead"}):
            tid = thread("breakpoint-cancel")
            events = await run_on(http, "/agui/g", run_body(tid, "what weather"))
            [pending] = events[-1]["outcome"]["interrupts"]
            held = (await state_of(http, tid))["messages"]
            resume = [{"interruptId": pending["id"], "status": "cancelled"}]
            sent = [*held, typed] if typed else held
            events = await run_on(http, "/agui/g", run_body(tid, sent, resume=resume))
            assert "sunny" not in said(events)
            assert events[-1]["type"] == "RUN_FINISHED" and "outcome" not in events[-1]
            assert (await state_of(http, tid))["interrupts"] == []
            config["configurable"]["thread_id"] = tid
            messages = (await graph.aget_state(config)).values["messages"]
            closed = [m for m in messages if isinstance(m, ToolMessage)]
            assert [m.content for m in closed] == [NO_RESULT]
            if typed:
                assert said(events) == "Hello from langgraph; 4 messages"
                assert isinstance(messages[-2], HumanMessage)
