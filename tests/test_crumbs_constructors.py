"""The typed constructors of agui_bridge.crumbs build crumbs the transformer maps per the table."""

from __future__ import annotations

from agui_bridge import crumbs


def run(impl, *items, **create):
    t = impl.create_agui_transformer(thread_id="t1", run_id="r1", **create)
    events = []
    for item in items:
        events += t(item)
    return t, events


def test_constructors_build_plain_dicts_without_none_fields():
    assert crumbs.text_delta("hi") == {"type": "text:delta", "delta": "hi"}
    assert crumbs.run_start() == {"type": "agent:run:start"}
    assert crumbs.run_start(run_id="r", session_id="s") == {
        "type": "agent:run:start",
        "runId": "r",
        "sessionId": "s",
    }
    assert crumbs.run_end() == {"type": "agent:run:end"}
    assert crumbs.agent_error("m") == {"type": "agent:error", "message": "m"}
    assert crumbs.human_required() == {"type": "human:required"}
    assert crumbs.tool_error("c", "E", "m") == {
        "type": "tool:error",
        "toolCallId": "c",
        "error": {"code": "E", "message": "m"},
    }
    assert crumbs.loop("iteration:start", "L", 2, goal="g") == {
        "type": "loop:iteration:start",
        "loopId": "L",
        "iteration": 2,
        "goal": "g",
    }
    # Falsy values that are not None are kept (defaults apply only to None).
    assert crumbs.run_end(result="") == {"type": "agent:run:end", "result": ""}
    assert crumbs.run_end(result=0) == {"type": "agent:run:end", "result": 0}


def test_run_start_and_text(impl):
    t, events = run(
        impl,
        crumbs.run_start(run_id="r9", session_id="s9"),
        crumbs.text_delta("Hel"),
        crumbs.text_delta("lo"),
        crumbs.run_end(result={"ok": True}),
    )
    assert events == [
        {"type": "RUN_STARTED", "threadId": "s9", "runId": "r9"},
        {"type": "TEXT_MESSAGE_START", "messageId": "r9:m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "r9:m1", "delta": "Hel"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "r9:m1", "delta": "lo"},
        {"type": "TEXT_MESSAGE_END", "messageId": "r9:m1"},
        {"type": "RUN_FINISHED", "threadId": "s9", "runId": "r9", "result": {"ok": True}},
    ]
    assert t.finished


def test_streamed_and_fallback_tool_calls_and_results(impl):
    _, events = run(
        impl,
        crumbs.text_delta("Checking"),
        crumbs.tool_input_start("c1", "search"),
        crumbs.tool_input_delta("c1", '{"q":"x"}'),
        crumbs.tool_input_end("c1"),
        crumbs.tool_call("c1", "search", {"q": "x"}),
        crumbs.tool_result("c1", ["a", 1]),
        crumbs.tool_call("c2", "fetch", {"url": "u"}),
        crumbs.tool_error("c2", "E_HTTP", "404"),
    )
    assert events[1:] == [
        {"type": "TEXT_MESSAGE_START", "messageId": "r1:m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "r1:m1", "delta": "Checking"},
        {"type": "TEXT_MESSAGE_END", "messageId": "r1:m1"},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c1",
            "toolCallName": "search",
            "parentMessageId": "r1:m1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q":"x"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "r1:r1",
            "toolCallId": "c1",
            "content": '["a",1]',
            "role": "tool",
        },
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c2",
            "toolCallName": "fetch",
            "parentMessageId": "r1:m1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c2", "delta": '{"url":"u"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c2"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "r1:r2",
            "toolCallId": "c2",
            "content": '{"error":{"code":"E_HTTP","message":"404"}}',
            "role": "tool",
        },
    ]


def test_file_generated(impl):
    _, events = run(
        impl,
        crumbs.file_generated("s3://b/a.png", "image/png", name="a.png"),
        crumbs.file_generated("s3://b/b.txt", "text/plain"),
        crumbs.run_end(result={"uri": "s3://b/c.pdf", "mimeType": "application/pdf"}),
    )
    assert events[1:] == [
        {
            "type": "CUSTOM",
            "name": "FILE_GENERATED",
            "value": {"uri": "s3://b/a.png", "mimeType": "image/png", "name": "a.png"},
        },
        {
            "type": "CUSTOM",
            "name": "FILE_GENERATED",
            "value": {"uri": "s3://b/b.txt", "mimeType": "text/plain"},
        },
        {
            "type": "CUSTOM",
            "name": "FILE_GENERATED",
            "value": {"uri": "s3://b/c.pdf", "mimeType": "application/pdf"},
        },
        {
            "type": "RUN_FINISHED",
            "threadId": "t1",
            "runId": "r1",
            "result": {"uri": "s3://b/c.pdf", "mimeType": "application/pdf"},
        },
    ]


def test_steps_and_agent_error(impl):
    t, events = run(
        impl,
        crumbs.step_start("plan"),
        crumbs.step_start("act"),
        crumbs.step_end("act"),
        crumbs.step_start("act"),
        crumbs.agent_error("overloaded", code="E_529"),
    )
    assert events[1:] == [
        {"type": "STEP_STARTED", "stepName": "plan"},
        {"type": "STEP_STARTED", "stepName": "act"},
        {"type": "STEP_FINISHED", "stepName": "act"},
        {"type": "STEP_STARTED", "stepName": "act"},
        {"type": "STEP_FINISHED", "stepName": "act"},
        {"type": "STEP_FINISHED", "stepName": "plan"},
        {"type": "RUN_ERROR", "message": "overloaded", "code": "E_529"},
    ]
    assert t.finished


def test_human_required(impl):
    _, events = run(
        impl,
        crumbs.text_delta("Delete?"),
        crumbs.human_required(
            interrupt_id="ask",
            reason="approval",
            message="Delete 3 files?",
            tool_call_id="c7",
            response_schema={"type": "boolean"},
        ),
        crumbs.human_required(),
        crumbs.run_end(),
    )
    assert events[-2:] == [
        {"type": "TEXT_MESSAGE_END", "messageId": "r1:m1"},
        {
            "type": "RUN_FINISHED",
            "threadId": "t1",
            "runId": "r1",
            "outcome": {
                "type": "interrupt",
                "interrupts": [
                    {
                        "id": "ask",
                        "reason": "approval",
                        "message": "Delete 3 files?",
                        "toolCallId": "c7",
                        "responseSchema": {"type": "boolean"},
                    },
                    {"id": "r1:i1", "reason": "human_required"},
                ],
            },
        },
    ]
    assert events[3] == {"type": "TEXT_MESSAGE_END", "messageId": "r1:m1"}
    assert len(events) == 5


def test_loop_subagent_task(impl):
    _, events = run(
        impl,
        crumbs.loop("start", "L", max_iterations=2),
        crumbs.loop("iteration:start", "L", 1),
        crumbs.loop("iteration:end", "L"),
        crumbs.subagent_start("sa", "root"),
        crumbs.subagent_end("sa", "root", output="done"),
        crumbs.task_start("tr", "summarize", model="m"),
        crumbs.task_end(
            "tr",
            "summarize",
            status="failed",
            duration_ms=5,
            usage={"inputTokens": 1},
            error={"code": "E", "message": "m"},
        ),
        state={"user": "ada"},
    )
    loop = {"loopId": "L", "phase": "start", "iteration": 0, "max_iterations": 2}
    assert events[1] == {"type": "STATE_SNAPSHOT", "snapshot": {"user": "ada", "loop": loop}}
    assert events[2] == {"type": "STEP_STARTED", "stepName": "loop_L_1"}
    assert events[4] == {"type": "STEP_FINISHED", "stepName": "loop_L_1"}
    assert events[5]["snapshot"]["loop"] == {
        "loopId": "L",
        "phase": "iteration:end",
        "iteration": 1,
        "max_iterations": 2,
    }
    assert events[6] == {"type": "STEP_STARTED", "stepName": "subagent_sa"}
    assert events[7]["snapshot"]["subagent"] == {
        "parentAgentId": "root",
        "subagentId": "sa",
        "status": "running",
    }
    assert events[8] == {"type": "STEP_FINISHED", "stepName": "subagent_sa"}
    assert events[9]["snapshot"]["subagent"] == {
        "parentAgentId": "root",
        "subagentId": "sa",
        "status": "completed",
        "output": "done",
    }
    assert events[10] == {"type": "STEP_STARTED", "stepName": "task_tr"}
    assert events[11]["snapshot"]["task"] == {
        "taskRunId": "tr",
        "taskId": "summarize",
        "model": "m",
        "status": "running",
    }
    assert events[12] == {"type": "STEP_FINISHED", "stepName": "task_tr"}
    assert events[13]["snapshot"] == {
        "user": "ada",
        "loop": events[5]["snapshot"]["loop"],
        "subagent": events[9]["snapshot"]["subagent"],
        "task": {
            "taskRunId": "tr",
            "taskId": "summarize",
            "status": "failed",
            "durationMs": 5,
            "usage": {"inputTokens": 1},
            "error": {"code": "E", "message": "m"},
        },
    }
    assert len(events) == 14


def test_every_constructor_crumb_is_accepted(impl):
    """No constructor builds a crumb the transformer rejects or ignores."""
    made = [
        crumbs.run_start("r", "s"),
        crumbs.text_delta("x"),
        crumbs.file_generated("u", "m", "n"),
        crumbs.tool_input_start("c", "f"),
        crumbs.tool_input_delta("c", "{}"),
        crumbs.tool_input_end("c"),
        crumbs.tool_call("c", "f", {}),
        crumbs.tool_result("c", "r"),
        crumbs.tool_error("c", "E", "m"),
        crumbs.human_required("i", "r", "m", "c", {}),
        crumbs.step_start("s"),
        crumbs.step_end("s"),
        crumbs.loop("start", "L", 0),
        crumbs.subagent_start("a", "p", "running"),
        crumbs.subagent_end("a", "p", "completed", 1),
        crumbs.task_start("tr", "t", "m"),
        crumbs.task_end("tr", "t", "ok", 1, {}, {"code": "c", "message": "m"}),
        crumbs.agent_error("m", "c"),
    ]
    t = impl.create_agui_transformer(thread_id="t", run_id="r")
    for crumb in made:
        t(crumb)
    assert t.ignored == 0
    assert t.dropped == 0
    assert t.finished
    t2 = impl.create_agui_transformer(thread_id="t", run_id="r")
    t2(crumbs.run_end())
    assert t2.finished
