"""Drafts golden vectors with the pure build: ``python tests/vectors/_make.py [--force]``.

The committed JSON files are the truth, not this script: every drafted
vector was checked by hand against CONTRACT.md before it was committed, and
an existing file is only rewritten with ``--force``. Each spec below lists
the inputs; the script fills in events, sse and the counters.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "python"))

from agui_bridge import pure  # noqa: E402
from agui_bridge.errors import CrumbError  # noqa: E402

C = "crumbs"
K = "chunks"
E = "events"
IDS = {"thread_id": "t1", "run_id": "r1"}


def td(delta):
    return {"input": {"type": "text:delta", "delta": delta}}


def inp(crumb_type, **fields):
    return {"input": {"type": crumb_type, **fields}}


def ev(event_type, **fields):
    return {"input": {"type": event_type, **fields}}


def raw(value):
    return {"input": value}


FINISH = {"finish": True}
CANCEL = {"cancel": True}
# Filled in with t.snapshot() at that point.
SNAPSHOT = {"snapshot": None}
# Coalescing (docs/coalescing.md): t.flush() at that point.
FLUSH = {"flush": True}


def coalesce(max_bytes):
    """t.coalesce(max_bytes) at that point."""
    return {"coalesce": max_bytes}


def fail(name, message):
    return {"fail": {"type": name, "message": message}}


SPECS = [
    # ---- crumbs: run start (rule 1) ----
    (
        C,
        "run start from agent:run:start",
        IDS,
        [
            inp("agent:run:start", runId="r9", sessionId="s9"),
            td("Hel"),
            td("lo"),
            inp("agent:run:end"),
        ],
    ),
    (C, "run start without agent:run:start", IDS, [td("hi"), inp("agent:run:end")]),
    (
        C,
        "run start with runId only keeps created thread",
        IDS,
        [
            inp("agent:run:start", runId="r7"),
            td("x"),
            FINISH,
        ],
    ),
    (C, "run start with no ids uses created ids", IDS, [inp("agent:run:start"), FINISH]),
    (
        C,
        "later run start dropped",
        IDS,
        [
            td("a"),
            inp("agent:run:start", runId="r2", sessionId="s2"),
            td("b"),
            inp("agent:run:start"),
            inp("agent:run:end"),
        ],
    ),
    (
        C,
        "first call yields only RUN_STARTED",
        IDS,
        [inp("pipeline:step:end", stepName="x"), FINISH],
    ),
    # ---- crumbs: terminal (rule 2) ----
    (
        C,
        "input after the terminal event dropped",
        IDS,
        [
            td("a"),
            inp("agent:run:end"),
            td("late"),
            inp("tool:call", toolCallId="c1", toolName="f", input={}),
            {"input": {"type": "text:delta"}},
            raw(42),
            inp("agent:error", message="late"),
            FINISH,
            fail("ValueError", "late"),
        ],
    ),
    (
        C,
        "input after RUN_ERROR dropped",
        IDS,
        [
            inp("agent:error", message="bad", code="E1"),
            td("late"),
            inp("agent:run:end"),
            FINISH,
        ],
    ),
    # ---- crumbs: closers (rule 3) ----
    (
        C,
        "closers before RUN_FINISHED in order",
        IDS,
        [
            inp("pipeline:step:start", stepName="outer"),
            inp("pipeline:step:start", stepName="inner"),
            inp("tool:input:start", toolCallId="c1", toolName="a"),
            inp("tool:input:start", toolCallId="c2", toolName="b"),
            inp("tool:input:delta", toolCallId="c1", delta='{"q":'),
            td("still talking"),
            inp("agent:run:end", result={"ok": True}),
        ],
    ),
    (
        C,
        "closers before RUN_ERROR from agent:error",
        IDS,
        [
            inp("pipeline:step:start", stepName="s1"),
            inp("pipeline:step:start", stepName="s2"),
            inp("tool:input:start", toolCallId="c1", toolName="a"),
            inp("tool:input:start", toolCallId="c2", toolName="b"),
            td("x"),
            inp("agent:error", message="model overloaded"),
        ],
    ),
    (
        C,
        "closers before finish()",
        IDS,
        [
            inp("pipeline:step:start", stepName="s1"),
            inp("tool:input:start", toolCallId="c1", toolName="a"),
            td("x"),
            FINISH,
            FINISH,
        ],
    ),
    (
        C,
        "fail(exc) closes and gives RUN_ERROR",
        IDS,
        [
            inp("pipeline:step:start", stepName="s1"),
            inp("tool:input:start", toolCallId="c1", toolName="a"),
            td("x"),
            fail("ValueError", "boom"),
            fail("KeyError", "again"),
            FINISH,
        ],
    ),
    (C, "fail(exc) as the first call", IDS, [fail("TimeoutError", "took too long")]),
    (C, "finish() as the first call", IDS, [FINISH]),
    # ---- crumbs: text (rule 4) ----
    (
        C,
        "empty deltas emit nothing",
        IDS,
        [
            td(""),
            td("a"),
            td(""),
            td("b"),
            inp("tool:input:start", toolCallId="c1", toolName="f"),
            inp("tool:input:delta", toolCallId="c1", delta=""),
            td(""),
            inp("tool:input:end", toolCallId="c1"),
            td("c"),
            FINISH,
        ],
    ),
    (
        C,
        "text reopens with a fresh id after a tool call",
        IDS,
        [
            td("one"),
            inp("tool:call", toolCallId="c1", toolName="f", input={"x": 1}),
            td("two"),
            inp("tool:input:start", toolCallId="c2", toolName="g"),
            inp("tool:input:end", toolCallId="c2"),
            td("three"),
            FINISH,
        ],
    ),
    (
        C,
        "steps state and results keep the text open",
        IDS,
        [
            inp("tool:call", toolCallId="c1", toolName="f", input={}),
            td("a"),
            inp("pipeline:step:start", stepName="s"),
            td("b"),
            inp("tool:result", toolCallId="c1", result="r"),
            td("c"),
            inp("pipeline:step:end", stepName="s"),
            td("d"),
            FINISH,
        ],
    ),
    # ---- crumbs: tools (rules 5, 6) ----
    (
        C,
        "streamed tool call",
        IDS,
        [
            inp("tool:input:start", toolCallId="c1", toolName="search"),
            inp("tool:input:delta", toolCallId="c1", delta='{"q":'),
            inp("tool:input:delta", toolCallId="c1", delta='"cats"}'),
            inp("tool:input:end", toolCallId="c1"),
            inp("tool:call", toolCallId="c1", toolName="search", input={"q": "cats"}),
            inp("tool:result", toolCallId="c1", result="3 cats"),
            FINISH,
        ],
    ),
    (
        C,
        "fallback tool call closes the text",
        IDS,
        [
            td("Let me look"),
            inp(
                "tool:call",
                toolCallId="c1",
                toolName="lookup",
                input={"k": [1, 2.5, None, True, "é"]},
            ),
            inp("tool:result", toolCallId="c1", result={"b": [1, 2]}),
            FINISH,
        ],
    ),
    (
        C,
        "args and end after end dropped",
        IDS,
        [
            inp("tool:input:start", toolCallId="c1", toolName="f"),
            inp("tool:input:delta", toolCallId="c1", delta="{}"),
            inp("tool:input:end", toolCallId="c1"),
            inp("tool:input:delta", toolCallId="c1", delta="x"),
            inp("tool:input:end", toolCallId="c1"),
            inp("tool:input:delta", toolCallId="nope", delta="x"),
            inp("tool:input:end", toolCallId="nope"),
            FINISH,
        ],
    ),
    (
        C,
        "duplicate tool starts dropped",
        IDS,
        [
            td("a"),
            inp("tool:input:start", toolCallId="c1", toolName="f"),
            td("b"),
            inp("tool:input:start", toolCallId="c1", toolName="f"),
            inp("tool:input:end", toolCallId="c1"),
            inp("tool:input:start", toolCallId="c1", toolName="f"),
            inp("tool:call", toolCallId="c1", toolName="f", input={}),
            inp("tool:call", toolCallId="c2", toolName="g", input=[]),
            inp("tool:call", toolCallId="c2", toolName="g", input=[]),
            inp("tool:input:start", toolCallId="c2", toolName="g"),
            td("c"),
            FINISH,
        ],
    ),
    (
        C,
        "result for an open call ends it first",
        IDS,
        [
            inp("tool:input:start", toolCallId="c1", toolName="f"),
            inp("tool:input:delta", toolCallId="c1", delta='{"a":1}'),
            inp("tool:result", toolCallId="c1", result="done"),
            inp("tool:input:start", toolCallId="c2", toolName="g"),
            inp("tool:error", toolCallId="c2", error={"code": "E_TIMEOUT", "message": "slow"}),
            FINISH,
        ],
    ),
    (
        C,
        "result for an unknown call dropped",
        IDS,
        [
            td("a"),
            inp("tool:result", toolCallId="ghost", result="x"),
            inp("tool:error", toolCallId="ghost", error={"code": "E", "message": "m"}),
            td("b"),
            FINISH,
        ],
    ),
    (
        C,
        "tool results as content",
        IDS,
        [
            inp("tool:call", toolCallId="c1", toolName="f", input={"n": 1}),
            inp("tool:result", toolCallId="c1", result={"rows": [1, 2], "next": None}),
            inp("tool:result", toolCallId="c1", result=""),
            inp("tool:result", toolCallId="c1", result=3),
            inp("tool:result", toolCallId="c1", result=[True, False]),
            inp("tool:error", toolCallId="c1", error={"code": "E", "message": 'say "no"'}),
            FINISH,
        ],
    ),
    (
        C,
        "parentMessageId absent then latest text",
        IDS,
        [
            inp("tool:call", toolCallId="c1", toolName="f", input={}),
            td("m1 text"),
            inp("tool:call", toolCallId="c2", toolName="f", input={}),
            inp("tool:input:start", toolCallId="c3", toolName="f"),
            inp("tool:input:end", toolCallId="c3"),
            td("m2 text"),
            inp("tool:input:start", toolCallId="c4", toolName="f"),
            FINISH,
        ],
    ),
    (
        C,
        "generated ids skip used ids",
        IDS,
        [
            inp("tool:call", toolCallId="r1:m1", toolName="f", input={}),
            inp("tool:call", toolCallId="r1:r1", toolName="f", input={}),
            td("text"),
            inp("tool:result", toolCallId="r1:r1", result="ok"),
            inp("tool:result", toolCallId="r1:m1", result="ok"),
            inp("human:required", interruptId="r1:i1"),
            inp("human:required"),
            inp("human:required", interruptId="r1:i3"),
            inp("human:required"),
            FINISH,
        ],
    ),
    # ---- event ids (section 7) ----
    (
        C,
        "event ids number every event from 1",
        {**IDS, "event_ids": True},
        [
            td("a"),
            td("b"),
            {"input": {"type": "text:delta"}},
            inp("tool:call", toolCallId="c1", toolName="f", input={"x": 1}),
            inp("tool:input:delta", toolCallId="c1", delta="dropped"),
            inp("mystery"),
            inp("tool:result", toolCallId="c1", result={"ok": True}),
            FINISH,
            td("late"),
        ],
    ),
    (
        C,
        "event ids from first_id through fail",
        {**IDS, "event_ids": True, "first_id": 41},
        [
            inp("pipeline:step:start", stepName="s"),
            td("a"),
            inp("tool:input:start", toolCallId="c1", toolName="f"),
            inp("tool:input:delta", toolCallId="c1", delta='{"a":'),
            fail("RuntimeError", "broke"),
        ],
    ),
    (
        C,
        "event ids off ignore first_id",
        {**IDS, "event_ids": False, "first_id": 5},
        [td("a"), FINISH],
    ),
    (
        K,
        "chunks event ids",
        {**IDS, "event_ids": True, "first_id": 7},
        [
            raw("hi"),
            raw({"type": "token", "content": " there"}),
            raw({"type": "tool_call", "name": "g", "input": {"q": 1}}),
            raw({"type": "tool_result", "id": "r1:t1", "output": "x"}),
            raw({"type": "plan_update", "plan": [1]}),
            raw(42),
            raw({"type": "done", "output": "ok"}),
            raw("late"),
        ],
    ),
    # ---- snapshot(): what a joining reader and the store need ----
    (
        C,
        "snapshot of open and closed constructs",
        {**IDS, "state": {"s": 1}, "event_ids": True},
        [
            SNAPSHOT,
            inp("pipeline:step:start", stepName="plan"),
            inp("tool:call", toolCallId="c0", toolName="f", input={"a": 1}),
            td("Hel"),
            td("lo"),
            inp("tool:input:start", toolCallId="c1", toolName="g"),
            inp("tool:input:delta", toolCallId="c1", delta='{"q":'),
            td("mid"),
            SNAPSHOT,
            inp("tool:input:end", toolCallId="c1"),
            inp("tool:result", toolCallId="c1", result="one"),
            inp("tool:result", toolCallId="c0", result={"z": 0}),
            inp("human:required", message="ok?"),
            SNAPSHOT,
            FINISH,
            SNAPSHOT,
        ],
    ),
    (
        K,
        "chunks snapshot with interrupts",
        {**IDS, "held_ids": ["r1:i1"]},
        [
            raw("a"),
            raw({"type": "tool_call", "name": "f"}),
            raw({"type": "interrupt", "reason": "approval", "message": "go?"}),
            raw({"type": "interrupt", "interruptId": "mine", "x": None}),
            raw({"type": "tool_result", "id": "r1:t1", "output": "ok"}),
            raw("b"),
            SNAPSHOT,
            raw({"type": "done"}),
            SNAPSHOT,
        ],
    ),
    # ---- crumbs: ids the thread already holds (section 6) ----
    (
        C,
        "held ids are skipped by generated ids",
        {**IDS, "held_ids": ["r1:m1", "r1:m2", "r1:r1", "r1:i1", "r1:t1", "h1"]},
        [
            td("a"),
            inp("tool:call", toolCallId="c1", toolName="f", input={}),
            inp("tool:result", toolCallId="c1", result="ok"),
            # A result for a call the thread holds is not this run's: dropped (rule 6).
            inp("tool:result", toolCallId="h1", result="late"),
            td("b"),
            inp("human:required"),
            FINISH,
        ],
    ),
    (
        C,
        "held ids skipped under the runId of RUN_STARTED",
        {**IDS, "held_ids": ["live:m1", "r1:m2"]},
        [inp("agent:run:start", runId="live"), td("a"), FINISH],
    ),
    (
        C,
        "an agent id the thread holds raises",
        {**IDS, "held_ids": ["c1", "i1", 'c"2']},
        [
            inp("tool:input:start", toolCallId="c1", toolName="f"),
            td("a"),
            inp("tool:input:start", toolCallId="c1", toolName="f"),
            inp("tool:call", toolCallId="c1", toolName="f", input={"x": 1}),
            inp("tool:call", toolCallId='c"2', toolName="f", input={}),
            inp("human:required", interruptId="i1"),
            inp("tool:input:delta", toolCallId="c1", delta="{}"),
            inp("tool:input:end", toolCallId="c1"),
            inp("tool:result", toolCallId="c1", result="ok"),
            inp("tool:call", toolCallId="c3", toolName="f", input={}),
            inp("human:required", interruptId="i2"),
            inp("agent:run:end"),
            inp("tool:call", toolCallId="c1", toolName="f", input={}),
        ],
    ),
    (
        C,
        "generated ids use the runId of RUN_STARTED",
        IDS,
        [
            inp("agent:run:start", runId="live"),
            td("a"),
            inp("tool:call", toolCallId="c1", toolName="f", input={}),
            inp("tool:result", toolCallId="c1", result="x"),
            td("b"),
            inp("human:required"),
            FINISH,
        ],
    ),
    # ---- crumbs: steps (rule 7) ----
    (
        C,
        "step hygiene",
        IDS,
        [
            inp("pipeline:step:end", stepName="never"),
            inp("pipeline:step:start", stepName="a"),
            inp("pipeline:step:start", stepName="a"),
            inp("pipeline:step:start", stepName="b"),
            inp("pipeline:step:end", stepName="a"),
            inp("pipeline:step:end", stepName="a"),
            inp("pipeline:step:start", stepName="a"),
            inp("pipeline:step:start", stepName="c"),
            inp("agent:run:end"),
        ],
    ),
    # ---- crumbs: files ----
    (
        C,
        "file generated and file result at run end",
        IDS,
        [
            td("Here"),
            inp("file:generated", uri="s3://b/a.png", mimeType="image/png", name="a.png"),
            td(" it is"),
            inp("file:generated", uri="s3://b/a.png", mimeType="image/png"),
            inp("file:generated", uri="s3://b/c.csv", mimeType="text/csv"),
            inp(
                "agent:run:end",
                result={
                    "uri": "s3://b/report.pdf",
                    "mimeType": "application/pdf",
                    "name": "report.pdf",
                },
            ),
        ],
    ),
    (
        C,
        "file result already announced",
        IDS,
        [
            inp("file:generated", uri="f://x", mimeType="text/plain"),
            inp("agent:run:end", result={"uri": "f://x", "mimeType": "text/plain"}),
        ],
    ),
    (
        C,
        "result with extra keys is not a file reference",
        IDS,
        [
            inp("agent:run:end", result={"uri": "f://x", "mimeType": "text/plain", "size": 3}),
        ],
    ),
    (
        C,
        "result with a non-string name is not a file reference",
        IDS,
        [
            inp("agent:run:end", result={"uri": "f://x", "mimeType": "text/plain", "name": 7}),
        ],
    ),
    (
        C,
        "run end result kept unchanged",
        IDS,
        [
            inp("agent:run:end", result={"answer": 42, "items": [1.5, None, {"a": "b"}]}),
        ],
    ),
    (C, "run end with an empty string result", IDS, [inp("agent:run:end", result="")]),
    # ---- crumbs: state (rules 8, 9) ----
    (
        C,
        "loop state accretes and a new loopId starts fresh",
        IDS,
        [
            inp("loop:start", loopId="L", maxIterations=3),
            inp("loop:iteration:start", loopId="L", iteration=1, goal="find"),
            td("thinking"),
            inp("loop:iteration:end", loopId="L", score=0.5),
            inp("loop:iteration:start", loopId="L", iteration=2),
            inp("loop:check", loopId="L", goal="refine"),
            inp("loop:iteration:end", loopId="L"),
            inp("loop:end", loopId="L", reason="converged"),
            inp("loop:start", loopId="M"),
            inp("loop:iteration:start", loopId="M"),
            FINISH,
        ],
    ),
    (
        C,
        "merged run state from the created state",
        {**IDS, "state": {"user": "ada", "task": 0}},
        [
            inp("subagent:run:start", subagentId="sa", parentAgentId="root"),
            inp("task:start", taskRunId="tr1", taskId="summarize", model="m-1"),
            inp(
                "task:end",
                taskRunId="tr1",
                taskId="summarize",
                status="failed",
                durationMs=1200,
                usage={"inputTokens": 10, "outputTokens": 5},
                error={"code": "E_LIMIT", "message": "too long"},
            ),
            inp("subagent:run:end", subagentId="sa", parentAgentId="root", output={"summary": "s"}),
            inp("loop:start", loopId="L"),
            FINISH,
        ],
    ),
    (
        C,
        "subagent and task defaults",
        IDS,
        [
            inp("subagent:run:start", subagentId="sa", parentAgentId="p", status="queued"),
            inp("task:start", taskRunId="tr", taskId="t"),
            inp("task:end", taskRunId="tr", taskId="t"),
            inp("subagent:run:end", subagentId="sa", parentAgentId="p"),
            inp("subagent:run:end", subagentId="sa", parentAgentId="p", status="failed"),
            inp("agent:run:end"),
        ],
    ),
    # ---- crumbs: human in the loop ----
    (
        C,
        "human required gives an interrupt outcome",
        IDS,
        [
            td("May I?"),
            inp(
                "human:required",
                interruptId="ask-1",
                reason="approval",
                message="Delete 3 files?",
                toolCallId="c9",
                responseSchema={"type": "object"},
            ),
            inp("human:required", interruptId="ask-1", reason="again"),
            inp("human:required"),
            td("while waiting"),
            inp("tool:call", toolCallId="c1", toolName="f", input={}),
            inp("agent:run:end", result="suspended"),
        ],
    ),
    (C, "human required then finish()", IDS, [inp("human:required", reason=""), FINISH]),
    (
        C,
        "human required then agent:error gives RUN_ERROR",
        IDS,
        [
            inp("human:required", interruptId="i"),
            td("x"),
            inp("agent:error", message="gone"),
        ],
    ),
    (C, "agent error with and without code", IDS, [inp("agent:error", message="")]),
    # ---- crumbs: unknown, errors ----
    (
        C,
        "unknown crumb types ignored",
        IDS,
        [
            inp("mystery"),
            td("a"),
            inp("agent:thinking", delta=5),
            inp("loopy"),
            td("b"),
            FINISH,
        ],
    ),
    (
        C,
        "bad crumbs raise and change nothing",
        IDS,
        [
            {"input": {"type": "text:delta"}, "error": "text:delta: 'delta' must be a string"},
            {
                "input": {"type": "text:delta", "delta": 5},
                "error": "text:delta: 'delta' must be a string",
            },
            {"input": "text", "error": "crumb must be a dict, not str"},
            {"input": None, "error": "crumb must be a dict, not NoneType"},
            {"input": {"delta": "x"}, "error": "crumb has no string 'type'"},
            td("ok"),
            {
                "input": {"type": "tool:call", "toolCallId": "c1", "toolName": "f"},
                "error": "tool:call: 'input' must be a JSON value",
            },
            {
                "input": {"type": "tool:error", "toolCallId": "c1", "error": "x"},
                "error": "tool:error: 'error' must be an object",
            },
            {
                "input": {"type": "loop:start", "loopId": "L", "iteration": "1"},
                "error": "loop:start: 'iteration' must be an integer",
            },
            {"input": {"type": "loop:start"}, "error": "loop:start: 'loopId' must be a string"},
            {
                "input": {"type": "task:end", "taskRunId": "a", "taskId": "b", "usage": [1]},
                "error": "task:end: 'usage' must be an object",
            },
            {
                "input": {"type": "agent:error", "message": "m", "code": 3},
                "error": "agent:error: 'code' must be a string",
            },
            td("ok2"),
            FINISH,
        ],
    ),
    (
        C,
        "optional None fields mean absent",
        IDS,
        [
            inp("agent:run:start", runId=None, sessionId=None),
            inp("human:required", interruptId=None, reason=None, message=None),
            inp("agent:error", message="m", code=None),
        ],
    ),
    # ---- crumbs: values, SSE ----
    (
        C,
        "non-ASCII and escapes in SSE",
        IDS,
        [
            td("héllo 世界 🎉"),
            td('"q" \\ \n\t\r\b\f \u0000 \u001f \u007f \u2028 </script>'),
            inp(
                "tool:call",
                toolCallId="c/é",
                toolName="f",
                input={"k\n": "v\u0001", "ü": "\U0001f600"},
            ),
            FINISH,
        ],
    ),
    (
        C,
        "floats and integers",
        IDS,
        [
            inp(
                "tool:call",
                toolCallId="c1",
                toolName="f",
                input={
                    "a": 0.00001,
                    "b": 100.0,
                    "c": -0.0,
                    "d": 1e16,
                    "e": 1.5e-7,
                    "f": 1.2345678901234568e17,
                    "g": 0.1,
                    "h": 123456789.125,
                    "i": 9999999999999998.0,
                    "j": 1e-5,
                    "k": 9.9e-6,
                    "l": -2.5e300,
                    "m": 5e-324,
                    "n": 1.7976931348623157e308,
                    "o": 18446744073709551615,
                    "p": -9223372036854775808,
                    "q": 0,
                },
            ),
            inp("loop:start", loopId="L", score=0.30000000000000004, big=1e22, small=-1e-7, x=3.0),
            FINISH,
        ],
    ),
    # ---- chunks ----
    (
        K,
        "chunks text forms",
        IDS,
        [
            raw("Hel"),
            raw({"type": "token", "content": "lo"}),
            raw({"type": "chunk", "content": "!"}),
            raw({"type": "done", "output": "fin"}),
        ],
    ),
    (
        K,
        "chunks close text before every other event",
        IDS,
        [
            raw("a"),
            raw({"type": "plan_update", "plan": ["x"]}),
            raw("b"),
            raw({"type": "interrupt", "question": "ok?"}),
            raw("c"),
            raw({"type": "subagent.started", "id": "s1"}),
            raw("d"),
            raw({"type": "progress", "pct": 50}),
            raw("e"),
            raw({"type": "tool_call", "id": "c1", "name": "f", "input": {"a": 1}}),
            raw("f"),
            raw({"type": "tool_result", "id": "c1", "output": "r"}),
            raw("g"),
            raw({"type": "done"}),
        ],
    ),
    (
        K,
        "chunks dropped and ignored inputs keep the text open",
        IDS,
        [
            raw("a"),
            raw({"type": "tool_result", "id": "ghost", "output": "x"}),
            raw(42),
            raw(None),
            raw([1]),
            raw(True),
            raw(""),
            raw({"type": "token", "content": ""}),
            raw("b"),
            raw({"type": "tool_call", "id": "c1", "name": "f"}),
            raw("c"),
            raw({"type": "tool_call", "id": "c1", "name": "f"}),
            raw("d"),
            FINISH,
        ],
    ),
    (
        K,
        "chunks tool calls",
        IDS,
        [
            raw({"type": "tool_call", "name": "f"}),
            raw({"type": "tool_call", "id": None, "name": "g", "input": None}),
            raw("text"),
            raw({"type": "tool_call", "id": "r1:t3", "name": "h", "input": [1, "x"]}),
            raw({"type": "tool_call", "name": "i", "input": "raw string"}),
            raw({"type": "tool_result", "id": "r1:t1", "output": {"ok": True}}),
            raw({"type": "tool_result", "id": "r1:t2", "output": None}),
            raw({"type": "tool_result", "id": "r1:t3", "output": 7}),
            raw({"type": "tool_result", "id": "r1:t4", "output": ""}),
            FINISH,
        ],
    ),
    (
        K,
        "chunks state merges from the created state",
        {**IDS, "state": {"user": "ada", "plan": 0}},
        [
            raw({"type": "plan_update", "plan": ["a", "b"]}),
            raw({"type": "progress", "pct": 10, "note": None}),
            raw({"pct": 20, "extra": {"x": [1.5]}}),
            raw({"type": 5, "typed": False}),
            raw({"type": "plan_update", "plan": {"steps": 2}}),
            raw({"type": "plan_update"}),
            raw({"type": "done", "output": {"answer": 1}}),
        ],
    ),
    (
        K,
        "chunks interrupt and subagent customs",
        {**IDS, "custom_prefix": "acme"},
        [
            raw({"type": "interrupt", "id": "i1", "payload": {"q": "Proceed?"}, "x": None}),
            raw({"type": "subagent.finished", "id": "s1", "result": [1]}),
            raw({"type": "subagent"}),
            raw({"type": "interrupt"}),
            raw("after"),
            FINISH,
        ],
    ),
    (
        K,
        "chunks default custom prefix",
        IDS,
        [raw({"type": "subagent.started", "name": "n"}), raw({"type": "done", "output": None})],
    ),
    (
        K,
        "chunks done with string error",
        IDS,
        [
            raw("partial"),
            raw({"type": "done", "output": {"error": "model failed", "code": "X"}}),
        ],
    ),
    (
        K,
        "chunks done with error message and code",
        IDS,
        [
            raw({"type": "done", "output": {"error": {"message": "m", "code": "E1", "detail": 1}}}),
        ],
    ),
    (
        K,
        "chunks done with error and non-string code",
        IDS,
        [
            raw({"type": "done", "output": {"error": {"message": "m", "code": 5}}}),
        ],
    ),
    (
        K,
        "chunks done with error without message",
        IDS,
        [
            raw({"type": "done", "output": {"error": {"code": "E2", "why": ["a", 1.0]}}}),
        ],
    ),
    (
        K,
        "chunks done with non-string error message",
        IDS,
        [
            raw({"type": "done", "output": {"error": {"message": 5}}}),
        ],
    ),
    (K, "chunks done with numeric error", IDS, [raw({"type": "done", "output": {"error": 42}})]),
    (K, "chunks done with false error", IDS, [raw({"type": "done", "output": {"error": False}})]),
    (
        K,
        "chunks done with null error is success",
        IDS,
        [
            raw({"type": "done", "output": {"error": None, "value": 1}}),
        ],
    ),
    (K, "chunks done with a non-object output", IDS, [raw({"type": "done", "output": [1, 2]})]),
    (
        K,
        "chunks input after done dropped",
        IDS,
        [
            raw("a"),
            raw({"type": "done", "output": "x"}),
            raw("late"),
            raw({"type": "token", "content": 5}),
            raw(42),
            raw({"type": "done"}),
            FINISH,
            fail("ValueError", "late"),
        ],
    ),
    (K, "chunks finish without done", IDS, [raw("a"), FINISH, FINISH]),
    (K, "chunks fail", IDS, [raw("a"), fail("RuntimeError", "stream broke"), FINISH]),
    (K, "chunks first call yields RUN_STARTED", IDS, [raw(7), FINISH]),
    (
        K,
        "chunks bad items raise and change nothing",
        IDS,
        [
            {
                "input": {"type": "token", "content": 5},
                "error": "token: 'content' must be a string",
            },
            {"input": {"type": "token"}, "error": "token: 'content' must be a string"},
            {
                "input": {"type": "chunk", "content": ["x"]},
                "error": "chunk: 'content' must be a string",
            },
            {
                "input": {"type": "tool_call", "id": "c1"},
                "error": "tool_call: 'name' must be a string",
            },
            {
                "input": {"type": "tool_call", "id": 5, "name": "f"},
                "error": "tool_call: 'id' must be a string",
            },
            {
                "input": {"type": "tool_result", "output": "x"},
                "error": "tool_result: 'id' must be a string",
            },
            raw("ok"),
            {
                "input": {"type": "tool_call", "name": 1},
                "error": "tool_call: 'name' must be a string",
            },
            raw({"type": "tool_call", "name": "f"}),
            FINISH,
        ],
    ),
    (
        K,
        "chunks non-ASCII and floats",
        IDS,
        [
            raw("naïve — “quotes” \n\u0007"),
            raw({"type": "plan_update", "plan": [0.1, 1e16, -0.0, 1.5e-7, 100.0]}),
            raw({"type": "tool_call", "name": "ü", "input": {"π": 3.14159}}),
            FINISH,
        ],
    ),
    (
        K,
        "chunks generated ids skip used ids",
        IDS,
        [
            raw({"type": "tool_call", "id": "r1:t1", "name": "f"}),
            raw({"type": "tool_call", "id": "r1:m1", "name": "f"}),
            raw({"type": "tool_call", "id": "r1:r1", "name": "f"}),
            raw({"type": "tool_call", "name": "g"}),
            raw("hi"),
            raw({"type": "tool_result", "id": "r1:t1", "output": "x"}),
            FINISH,
        ],
    ),
    (
        K,
        "chunks held ids",
        {**IDS, "held_ids": ["r1:t1", "r1:m1", "r1:r1", "c9"]},
        [
            raw({"type": "tool_call", "name": "g"}),
            raw("hi"),
            raw({"type": "tool_result", "id": "r1:t2", "output": "x"}),
            raw({"type": "tool_call", "id": "c9", "name": "f"}),
            raw({"type": "tool_call", "id": None, "name": "f"}),
            raw({"type": "tool_result", "id": "c9", "output": "late"}),
            raw({"type": "done"}),
            raw({"type": "tool_call", "id": "c9", "name": "f"}),
        ],
    ),
    # ---- events: an agent's AG-UI events repaired to the contract ----
    (
        E,
        "events clean stream passes through",
        IDS,
        [
            ev("RUN_STARTED", threadId="t1", runId="r1"),
            ev("STEP_STARTED", stepName="chat"),
            ev("TEXT_MESSAGE_START", messageId="m-a", role="assistant"),
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta="Hel"),
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta="lo"),
            ev("TEXT_MESSAGE_END", messageId="m-a"),
            ev("TOOL_CALL_START", toolCallId="c1", toolCallName="add", parentMessageId="m-a"),
            ev("TOOL_CALL_ARGS", toolCallId="c1", delta='{"a":1}'),
            ev("TOOL_CALL_END", toolCallId="c1"),
            ev("TOOL_CALL_RESULT", messageId="res-1", toolCallId="c1", content="2", role="tool"),
            ev("STATE_SNAPSHOT", snapshot={"k": 1}),
            ev("CUSTOM", name="note", value={"a": None}),
            ev("STEP_FINISHED", stepName="chat"),
            ev("RUN_FINISHED", threadId="t1", runId="r1", result={"ok": True}),
        ],
    ),
    (
        E,
        "events snapshot with a resumed message and an interrupt outcome",
        IDS,
        [
            ev("STEP_STARTED", stepName="s"),
            ev("TEXT_MESSAGE_START", messageId="a", role="assistant"),
            ev("TEXT_MESSAGE_CONTENT", messageId="a", delta="one "),
            ev("TOOL_CALL_START", toolCallId="c1", toolCallName="f", parentMessageId="a"),
            ev("TOOL_CALL_ARGS", toolCallId="c1", delta='{"k":'),
            ev("TEXT_MESSAGE_CONTENT", messageId="a", delta="two"),
            SNAPSHOT,
            ev("TOOL_CALL_CHUNK", toolCallId="c1", delta="1}"),
            ev("TOOL_CALL_RESULT", messageId="x", toolCallId="c1", content="r"),
            ev("TEXT_MESSAGE_CHUNK", messageId="b", delta="three"),
            SNAPSHOT,
            ev(
                "RUN_FINISHED",
                threadId="t1",
                runId="r1",
                outcome={"type": "interrupt", "interrupts": [{"id": "i1", "reason": "ok?"}]},
            ),
            SNAPSHOT,
        ],
    ),
    (
        E,
        "events missing starts are opened",
        IDS,
        [
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta="no start"),
            ev("TEXT_MESSAGE_END", messageId="m-a"),
            ev("TEXT_MESSAGE_START", messageId="m-b"),
            ev("TEXT_MESSAGE_END", messageId="m-b"),
            ev("TOOL_CALL_CHUNK", toolCallId="c1", toolCallName="f", delta='{"x":'),
            ev("TOOL_CALL_CHUNK", delta="1}"),
            FINISH,
        ],
    ),
    (
        E,
        "events closers before the terminal event",
        IDS,
        [
            ev("STEP_STARTED", stepName="outer"),
            ev("STEP_STARTED", stepName="inner"),
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta="open"),
            ev("TOOL_CALL_START", toolCallId="c1", toolCallName="f"),
            ev("TOOL_CALL_START", toolCallId="c2", toolCallName="g"),
            ev("RUN_ERROR", message="boom", code="E1"),
        ],
    ),
    (
        E,
        "events after the terminal event dropped",
        IDS,
        [
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta="a"),
            ev("RUN_FINISHED", threadId="t1", runId="r1"),
            ev("RUN_FINISHED", threadId="t1", runId="r1"),
            ev("RUN_ERROR", message="late"),
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta="late"),
            FINISH,
            fail("ValueError", "late"),
        ],
    ),
    (
        E,
        "events duplicate starts and stray ends dropped",
        IDS,
        [
            ev("RUN_STARTED", threadId="t9", runId="r9"),
            ev("RUN_STARTED", threadId="t1", runId="r1"),
            ev("TEXT_MESSAGE_START", messageId="m-a"),
            ev("TEXT_MESSAGE_START", messageId="m-a"),
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta="x"),
            ev("TEXT_MESSAGE_END", messageId="m-a"),
            ev("TEXT_MESSAGE_END", messageId="m-a"),
            ev("TEXT_MESSAGE_END", messageId="never"),
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta="after its end"),
            ev("TOOL_CALL_START", toolCallId="c1", toolCallName="f"),
            ev("TOOL_CALL_END", toolCallId="c1"),
            ev("TOOL_CALL_START", toolCallId="c1", toolCallName="f"),
            ev("TOOL_CALL_ARGS", toolCallId="c1", delta="{}"),
            ev("TOOL_CALL_END", toolCallId="c1"),
            ev("TOOL_CALL_RESULT", messageId="x", toolCallId="unknown", content="?"),
            ev("STEP_FINISHED", stepName="never"),
            ev("STEP_STARTED", stepName="s"),
            ev("STEP_STARTED", stepName="s"),
            ev("CUSTOM", name="no value"),
            FINISH,
        ],
    ),
    (
        E,
        "events a message closed by the core goes on under a fresh id",
        IDS,
        [
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta="before "),
            ev("TOOL_CALL_START", toolCallId="c1", toolCallName="f"),
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta="after"),
            ev("TEXT_MESSAGE_CONTENT", messageId="m-b", delta="other"),
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta=" again"),
            ev("TEXT_MESSAGE_CONTENT", messageId="c1", delta="a tool call id"),
            ev("TEXT_MESSAGE_CHUNK", delta=" chunk"),
            ev("TOOL_CALL_RESULT", messageId="res", toolCallId="c1", content="ok"),
            ev("TEXT_MESSAGE_CHUNK", delta="generated"),
            FINISH,
        ],
    ),
    (
        E,
        "events fields outside the schema and unknown types",
        {**IDS, "state": {"seen": 0}},
        [
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta="x", timestamp=5, rawEvent={"a": 1}),
            ev("TEXT_MESSAGE_START", messageId="m-b", role="user", name="n"),
            ev("STATE_SNAPSHOT", snapshot={"k": 1}),
            ev("STATE_SNAPSHOT", snapshot={"seen": 2}),
            ev("STATE_DELTA", delta=[{"op": "add", "path": "/k", "value": 2}]),
            ev("MESSAGES_SNAPSHOT", messages=[]),
            ev("RAW", event={"any": "thing"}),
            ev("THINKING_START"),
            ev("THINKING_END"),
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta="", timestamp=None),
            ev(
                "RUN_FINISHED",
                threadId="t1",
                runId="r1",
                result=None,
                outcome={"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approve"}]},
            ),
        ],
    ),
    (
        E,
        "events held ids",
        {**IDS, "held_ids": ["m-old", "r1:m1", "c-old", "r1:r1"]},
        [
            ev("TEXT_MESSAGE_CONTENT", messageId="m-old", delta="renamed"),
            ev("TEXT_MESSAGE_CONTENT", messageId="m-old", delta=" still"),
            {
                "input": {"type": "TOOL_CALL_START", "toolCallId": "c-old", "toolCallName": "f"},
                "error": "TOOL_CALL_START: 'toolCallId' \"c-old\" is already held by the thread",
            },
            {
                "input": {"type": "TOOL_CALL_CHUNK", "toolCallId": "c-old", "toolCallName": "f"},
                "error": "TOOL_CALL_CHUNK: 'toolCallId' \"c-old\" is already held by the thread",
            },
            ev("TOOL_CALL_CHUNK", toolCallId="c-old", delta="x"),
            ev("TOOL_CALL_RESULT", toolCallId="c-old", content="answered in an earlier run"),
            ev("TOOL_CALL_START", toolCallId="c-new", toolCallName="f"),
            ev("TOOL_CALL_RESULT", toolCallId="c-new", content="ok"),
            ev("TEXT_MESSAGE_CHUNK", delta="generated"),
            FINISH,
        ],
    ),
    (
        E,
        "events bad events raise and change nothing",
        IDS,
        [
            {
                "input": {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-a"},
                "error": "TEXT_MESSAGE_CONTENT: 'delta' must be a string",
            },
            {
                "input": {"type": "TEXT_MESSAGE_CONTENT", "messageId": 1, "delta": "x"},
                "error": "TEXT_MESSAGE_CONTENT: 'messageId' must be a string",
            },
            {
                "input": {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "content": {"a": 1}},
                "error": "TOOL_CALL_RESULT: 'content' must be a string",
            },
            {
                "input": {"type": "STATE_SNAPSHOT", "snapshot": [1]},
                "error": "STATE_SNAPSHOT: 'snapshot' must be an object",
            },
            {
                "input": {"type": "RUN_ERROR", "code": "E"},
                "error": "RUN_ERROR: 'message' must be a string",
            },
            {"input": {"delta": "x"}, "error": "event has no string 'type'"},
            {"input": 42, "error": "event must be a dict, not int"},
            {"input": "TEXT_MESSAGE_CONTENT", "error": "event must be a dict, not str"},
            ev("TEXT_MESSAGE_CONTENT", messageId="m-a", delta="ok"),
            FINISH,
        ],
    ),
    (
        E,
        "events state delta patches the run state",
        {**IDS, "state": {"shared": 1, "todo": ["a", "b"], "doc": {"x": 1, "y": 2}}},
        [
            ev("STATE_SNAPSHOT", snapshot={"agent": {"step": 1}}),
            ev(
                "STATE_DELTA",
                delta=[
                    {"op": "replace", "path": "/agent/step", "value": 2},
                    {"op": "add", "path": "/todo/1", "value": "inserted"},
                    {"op": "add", "path": "/todo/-", "value": "last"},
                    {"op": "remove", "path": "/todo/0"},
                    {"op": "add", "path": "/doc/x", "value": 10},
                    {"op": "move", "from": "/doc/y", "path": "/moved"},
                    {"op": "copy", "from": "/todo", "path": "/doc/copy"},
                    {"op": "test", "path": "/agent/step", "value": 2.0},
                    {"op": "add", "path": "/a~1b~0c", "value": None, "extra": "kept"},
                ],
            ),
            ev("STATE_DELTA", delta=[]),
            ev("STATE_DELTA", delta=[{"op": "remove", "path": "/shared"}]),
            ev("STATE_SNAPSHOT", snapshot={"after": True}),
            ev("STATE_DELTA", delta=[{"op": "replace", "path": "", "value": {"root": 1}}]),
            FINISH,
        ],
    ),
    (
        E,
        "events bad state deltas raise and change nothing",
        {**IDS, "state": {"list": [1], "n": 1}},
        [
            {
                "input": {"type": "STATE_DELTA"},
                "error": "STATE_DELTA: 'delta' must be an array",
            },
            {
                "input": {"type": "STATE_DELTA", "delta": {"op": "add"}},
                "error": "STATE_DELTA: 'delta' must be an array",
            },
            {
                "input": {
                    "type": "STATE_DELTA",
                    "delta": [{"op": "add", "path": "/a", "value": 1}, 3],
                },
                "error": "STATE_DELTA: 'delta[1]' must be an object",
            },
            {
                "input": {"type": "STATE_DELTA", "delta": [{"op": "merge", "path": "/n"}]},
                "error": "STATE_DELTA: 'delta[0].op' must be one of "
                "add, remove, replace, move, copy, test",
            },
            {
                "input": {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": 1}]},
                "error": "STATE_DELTA: 'delta[0].path' must be a string",
            },
            {
                "input": {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "n"}]},
                "error": "STATE_DELTA: 'delta[0].path' must be a JSON pointer",
            },
            {
                "input": {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/n~"}]},
                "error": "STATE_DELTA: 'delta[0].path' must be a JSON pointer",
            },
            {
                "input": {"type": "STATE_DELTA", "delta": [{"op": "copy", "path": "/c"}]},
                "error": "STATE_DELTA: 'delta[0].from' must be a string",
            },
            {
                "input": {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/c"}]},
                "error": "STATE_DELTA: 'delta[0].value' is missing",
            },
            {
                "input": {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/gone"}]},
                "error": 'STATE_DELTA: delta[0] remove: nothing at "/gone"',
            },
            {
                "input": {
                    "type": "STATE_DELTA",
                    "delta": [{"op": "add", "path": "/list/2", "value": 0}],
                },
                "error": 'STATE_DELTA: delta[0] add: nothing at "/list/2"',
            },
            {
                "input": {
                    "type": "STATE_DELTA",
                    "delta": [{"op": "replace", "path": "/list/01", "value": 0}],
                },
                "error": 'STATE_DELTA: delta[0] replace: nothing at "/list/01"',
            },
            {
                "input": {
                    "type": "STATE_DELTA",
                    "delta": [{"op": "move", "from": "/x", "path": "/y"}],
                },
                "error": 'STATE_DELTA: delta[0] move: nothing at "/x"',
            },
            {
                "input": {
                    "type": "STATE_DELTA",
                    "delta": [{"op": "move", "from": "/list", "path": "/list/0"}],
                },
                "error": 'STATE_DELTA: delta[0] move: "/list/0" is inside "/list"',
            },
            {
                "input": {
                    "type": "STATE_DELTA",
                    "delta": [{"op": "test", "path": "/n", "value": True}],
                },
                "error": 'STATE_DELTA: delta[0] test: the value at "/n" differs',
            },
            {
                "input": {
                    "type": "STATE_DELTA",
                    "delta": [{"op": "replace", "path": "", "value": [1]}],
                },
                "error": "STATE_DELTA: delta[0] replace: the state must stay an object",
            },
            {
                "input": {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": ""}]},
                "error": "STATE_DELTA: delta[0] remove: the state must stay an object",
            },
            {
                "input": {
                    "type": "STATE_DELTA",
                    "delta": [
                        {"op": "add", "path": "/n", "value": 2},
                        {"op": "remove", "path": "/none"},
                    ],
                },
                "error": 'STATE_DELTA: delta[1] remove: nothing at "/none"',
            },
            ev("STATE_SNAPSHOT", snapshot={}),
            FINISH,
        ],
    ),
    # ---- contract section 8: reasoning, and the 1.0 run lifecycle ----
    (
        C,
        "reasoning closes before text tools and the terminal",
        IDS,
        [
            inp("reasoning:delta", delta="Let me "),
            inp("reasoning:delta", delta=""),
            inp("reasoning:delta", delta="think."),
            td("Answer"),
            inp("reasoning:delta", delta="More."),
            inp("file:generated", uri="f://a", mimeType="text/plain"),
            inp("tool:input:start", toolCallId="c1", toolName="f"),
            inp("reasoning:delta", delta="Last."),
            SNAPSHOT,
            inp("agent:run:end"),
            SNAPSHOT,
        ],
    ),
    (
        C,
        "reasoning end and encrypted values",
        IDS,
        [
            inp("reasoning:end"),
            inp("reasoning:encrypted", encryptedValue="none-yet"),
            inp("reasoning:delta", delta="a"),
            inp("reasoning:encrypted", encryptedValue="sig-1"),
            inp("reasoning:end"),
            inp("reasoning:end"),
            inp("reasoning:encrypted", encryptedValue="sig-2", subtype=None),
            inp("reasoning:encrypted", encryptedValue="x", entityId="r1:m9"),
            inp("tool:call", toolCallId="c1", toolName="f", input={}),
            inp("reasoning:encrypted", encryptedValue="tc", entityId="c1", subtype="tool-call"),
            inp("reasoning:encrypted", encryptedValue="tc", entityId="nope", subtype="tool-call"),
            inp("reasoning:encrypted", encryptedValue="tc", subtype="tool-call"),
            inp("reasoning:encrypted", encryptedValue="sig-3", entityId="r1:th1"),
            SNAPSHOT,
            FINISH,
        ],
    ),
    (
        C,
        "bad reasoning crumbs raise and change nothing",
        IDS,
        [
            inp("reasoning:delta", delta="a"),
            {
                "input": {"type": "reasoning:delta"},
                "error": "reasoning:delta: 'delta' must be a string",
            },
            {
                "input": {"type": "reasoning:delta", "delta": 5},
                "error": "reasoning:delta: 'delta' must be a string",
            },
            {
                "input": {"type": "reasoning:encrypted", "encryptedValue": None},
                "error": "reasoning:encrypted: 'encryptedValue' must be a string",
            },
            {
                "input": {"type": "reasoning:encrypted", "encryptedValue": {"a": 1}},
                "error": "reasoning:encrypted: 'encryptedValue' must be a string",
            },
            {
                "input": {"type": "reasoning:encrypted", "encryptedValue": "v", "subtype": "x"},
                "error": 'reasoning:encrypted: \'subtype\' must be "message" or "tool-call"',
            },
            {
                "input": {"type": "reasoning:encrypted", "encryptedValue": "v", "subtype": 1},
                "error": "reasoning:encrypted: 'subtype' must be a string",
            },
            {
                "input": {"type": "reasoning:encrypted", "encryptedValue": "v", "entityId": 3},
                "error": "reasoning:encrypted: 'entityId' must be a string",
            },
            inp("reasoning:end"),
            FINISH,
        ],
    ),
    (
        C,
        "reasoning ids skip held ids and join snapshots",
        {**IDS, "held_ids": ["r1:th1", "r1:th3"]},
        [
            inp("pipeline:step:start", stepName="s"),
            inp("reasoning:delta", delta="one"),
            inp("reasoning:end"),
            inp("reasoning:delta", delta="two"),
            inp("reasoning:delta", delta=" more"),
            SNAPSHOT,
            inp("reasoning:delta", delta=""),
            FINISH,
            SNAPSHOT,
        ],
    ),
    (
        C,
        "a 1.0 client gets the version and the usage",
        {**IDS, "protocol_version": "1.0"},
        [
            inp("task:start", taskRunId="k1", taskId="chat", model="m1"),
            inp(
                "task:end",
                taskRunId="k1",
                taskId="chat",
                model="m1",
                usage={
                    "prompt_tokens": 10,
                    "completion_tokens": 5,
                    "total_tokens": 15,
                    "completion_tokens_details": {"reasoning_tokens": 2},
                    "prompt_tokens_details": {"cached_tokens": 4},
                },
            ),
            inp(
                "task:end",
                taskRunId="k2",
                taskId="chat",
                usage={"inputTokens": 1, "outputTokens": 2, "provider": "p", "model": "m2"},
            ),
            inp("task:end", taskRunId="k3", taskId="chat", model="m1", usage={"input_tokens": 3}),
            inp("task:end", taskRunId="k4", taskId="chat", usage={"prompt_tokens": -1, "x": 2}),
            inp("task:end", taskRunId="k5", taskId="chat", usage={"total_tokens": True}),
            td("hi"),
            inp("agent:run:end", result="done"),
        ],
    ),
    (
        C,
        "a 1.0 client gets the usage on RUN_ERROR",
        {**IDS, "protocol_version": "1.2"},
        [
            inp("task:end", taskRunId="k1", taskId="chat", usage={"input_tokens": 7}),
            fail("RuntimeError", "boom"),
        ],
    ),
    (
        C,
        "a 1.0 client gets the cancelled outcome",
        {**IDS, "protocol_version": "1.0"},
        [
            inp("reasoning:delta", delta="hm"),
            inp("human:required", interruptId="i1"),
            CANCEL,
            CANCEL,
            FINISH,
        ],
    ),
    (
        C,
        "a 0.0.x client gets what finish gives on cancel",
        IDS,
        [
            inp("task:end", taskRunId="k1", taskId="chat", usage={"input_tokens": 7}),
            td("partial"),
            inp("human:required", interruptId="i1"),
            CANCEL,
        ],
    ),
    (
        C,
        "a client declaring 0.0.58 gets the 0.0.x stream",
        {**IDS, "protocol_version": "0.0.58"},
        [
            inp("task:end", taskRunId="k1", taskId="chat", usage={"input_tokens": 7}),
            CANCEL,
        ],
    ),
    (
        K,
        "chunk reasoning",
        IDS,
        [
            {"input": {"type": "reasoning", "content": "think"}},
            {"input": {"type": "reasoning", "content": ""}},
            {"input": {"type": "reasoning", "content": " harder"}},
            raw("Hello"),
            {"input": {"type": "reasoning", "content": "again"}},
            {"input": {"type": "plan_update", "plan": [1]}},
            {"input": {"type": "tool_call", "id": "c1", "name": "f"}},
            {"input": {"type": "reasoning", "content": "last"}},
            {
                "input": {"type": "reasoning", "content": 5},
                "error": "reasoning: 'content' must be a string",
            },
            {"input": {"type": "reasoning"}, "error": "reasoning: 'content' must be a string"},
            SNAPSHOT,
            {"input": {"type": "done", "output": "ok"}},
        ],
    ),
    (
        K,
        "chunks cancelled for a 1.0 client",
        {**IDS, "protocol_version": "1.0"},
        [raw("Hel"), CANCEL],
    ),
    (
        E,
        "events reasoning repaired like text",
        IDS,
        [
            ev("REASONING_START", messageId="s1"),
            ev("REASONING_MESSAGE_START", messageId="m1", role="reasoning"),
            ev("REASONING_MESSAGE_CONTENT", messageId="m1", delta="a"),
            ev("REASONING_MESSAGE_CONTENT", messageId="m1", delta=""),
            ev("REASONING_MESSAGE_START", messageId="m1", role="reasoning"),
            ev("REASONING_START", messageId="s1"),
            ev("TEXT_MESSAGE_CONTENT", messageId="t1", delta="x"),
            ev("REASONING_MESSAGE_CONTENT", messageId="m1", delta="b", timestamp=1),
            ev("REASONING_ENCRYPTED_VALUE", subtype="message", entityId="m1", encryptedValue="e"),
            ev("REASONING_MESSAGE_END", messageId="m1"),
            ev("REASONING_MESSAGE_CONTENT", messageId="m1", delta="late"),
            ev("REASONING_MESSAGE_END", messageId="m1"),
            ev("REASONING_MESSAGE_END", messageId="never"),
            ev("REASONING_END", messageId="s1"),
            ev("REASONING_END", messageId="s1"),
            ev("REASONING_END", messageId="never"),
            ev("REASONING_MESSAGE_CHUNK", delta="c"),
            ev("REASONING_MESSAGE_CHUNK", messageId="m2", delta="d"),
            ev("REASONING_ENCRYPTED_VALUE", subtype="message", entityId="zz", encryptedValue="e"),
            ev("TOOL_CALL_START", toolCallId="t1", toolCallName="f"),
            ev("REASONING_ENCRYPTED_VALUE", subtype="tool-call", entityId="t1", encryptedValue="k"),
            ev("REASONING_MESSAGE_CONTENT", messageId="t1", delta="same id as a call"),
            SNAPSHOT,
            ev("RUN_FINISHED"),
            SNAPSHOT,
        ],
    ),
    (
        E,
        "events activity passes through",
        {**IDS, "held_ids": ["h1"]},
        [
            ev("ACTIVITY_SNAPSHOT", messageId="a1", activityType="plan", content={"s": [1]}),
            ev("TEXT_MESSAGE_CONTENT", messageId="t1", delta="x"),
            ev(
                "ACTIVITY_DELTA",
                messageId="a1",
                activityType="plan",
                patch=[{"op": "add", "path": "/s/-", "value": 2}],
            ),
            ev("ACTIVITY_DELTA", messageId="a9", activityType="plan", patch=[]),
            ev("ACTIVITY_DELTA", messageId="a1", activityType="plan", patch={"op": "add"}),
            ev("ACTIVITY_DELTA", messageId="a1", activityType="plan", patch=[{"op": "remove"}]),
            ev(
                "ACTIVITY_DELTA",
                messageId="a1",
                activityType="plan",
                patch=[{"op": "remove", "path": "/nope"}],
            ),
            ev(
                "ACTIVITY_DELTA",
                messageId="a1",
                activityType="plan",
                patch=[{"value": 9, "path": "/s/0", "op": "replace", "extra": 1}],
            ),
            ev("ACTIVITY_DELTA", messageId="a1", activityType="plan", patch=[]),
            ev("ACTIVITY_SNAPSHOT", messageId="t1", activityType="plan", content={}),
            ev("ACTIVITY_SNAPSHOT", messageId="h1", activityType="plan", content={}),
            ev("ACTIVITY_SNAPSHOT", messageId="a1", activityType="plan", content={}, replace=False),
            ev("ACTIVITY_SNAPSHOT", messageId="a2", activityType="x", content={}, replace="no"),
            ev("TEXT_MESSAGE_CONTENT", messageId="a2", delta="y"),
            FINISH,
        ],
    ),
    (
        E,
        "events activity messages in the snapshot",
        {**IDS, "held_ids": ["h1"]},
        [
            ev("ACTIVITY_SNAPSHOT", messageId="h1", activityType="old", content={"v": 1}),
            ev(
                "ACTIVITY_DELTA",
                messageId="h1",
                activityType="old",
                patch=[{"op": "replace", "path": "/v", "value": 2}],
            ),
            ev("ACTIVITY_SNAPSHOT", messageId="a0", activityType="plan", content={"s": [1]}),
            ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="x"),
            ev(
                "ACTIVITY_DELTA",
                messageId="a0",
                activityType="plan",
                patch=[{"op": "add", "path": "/s/-", "value": 2}],
            ),
            ev("TOOL_CALL_START", toolCallId="c1", toolCallName="f", parentMessageId="m1"),
            ev("ACTIVITY_SNAPSHOT", messageId="a1", activityType="bar", content={"p": 0}),
            SNAPSHOT,
            ev("TOOL_CALL_RESULT", messageId="x1", toolCallId="c1", content="r"),
            ev("ACTIVITY_SNAPSHOT", messageId="a0", activityType="z", content={}, replace=False),
            ev("ACTIVITY_SNAPSHOT", messageId="a1", activityType="done", content={"p": 1}),
            ev(
                "ACTIVITY_DELTA",
                messageId="a0",
                activityType="plan2",
                patch=[{"op": "remove", "path": "/s/0"}],
            ),
            ev("ACTIVITY_DELTA", messageId="a1", activityType="ignored", patch=[]),
            ev("ACTIVITY_SNAPSHOT", messageId="a2", activityType="n", content={}, replace=False),
            ev("RUN_FINISHED"),
            SNAPSHOT,
        ],
    ),
    (
        E,
        "bad reasoning and activity events raise",
        IDS,
        [
            {
                "input": {
                    "type": "REASONING_ENCRYPTED_VALUE",
                    "subtype": "x",
                    "entityId": "m",
                    "encryptedValue": "v",
                },
                "error": 'REASONING_ENCRYPTED_VALUE: \'subtype\' must be "message" or "tool-call"',
            },
            {
                "input": {
                    "type": "REASONING_ENCRYPTED_VALUE",
                    "subtype": "message",
                    "entityId": "m",
                },
                "error": "REASONING_ENCRYPTED_VALUE: 'encryptedValue' must be a string",
            },
            {
                "input": {"type": "REASONING_MESSAGE_CONTENT", "messageId": "m", "delta": 1},
                "error": "REASONING_MESSAGE_CONTENT: 'delta' must be a string",
            },
            {
                "input": {"type": "REASONING_START"},
                "error": "REASONING_START: 'messageId' must be a string",
            },
            {
                "input": {
                    "type": "ACTIVITY_SNAPSHOT",
                    "messageId": "a",
                    "activityType": "x",
                    "content": "text",
                },
                "error": "ACTIVITY_SNAPSHOT: 'content' must be an object",
            },
            FINISH,
        ],
    ),
    (
        E,
        "events usage for a 1.0 client",
        {**IDS, "protocol_version": "1.0"},
        [
            ev(
                "RUN_FINISHED",
                usage=[
                    {"provider": "openai", "model": "m", "inputTokens": 3, "outputTokens": 1},
                    {"provider": "openai", "model": "m", "inputTokens": 2},
                    "not an entry",
                ],
            ),
        ],
    ),
    (
        E,
        "events usage on RUN_ERROR for a 1.0 client",
        {**IDS, "protocol_version": "1.0"},
        [
            ev("RUN_ERROR", message="bad", usage=[{"model": "m", "outputTokens": 4}]),
        ],
    ),
    (
        E,
        "an agent's cancelled outcome reaches a 1.0 client",
        {**IDS, "protocol_version": "1.0"},
        [ev("TEXT_MESSAGE_CHUNK", delta="x"), ev("RUN_FINISHED", outcome={"type": "cancelled"})],
    ),
    (
        E,
        "an agent's cancelled outcome is dropped for a 0.0.x client",
        IDS,
        [ev("TEXT_MESSAGE_CHUNK", delta="x"), ev("RUN_FINISHED", outcome={"type": "cancelled"})],
    ),
    (
        E,
        "events usage not sent to a 0.0.x client",
        IDS,
        [ev("RUN_FINISHED", usage=[{"model": "m", "outputTokens": 4}])],
    ),
    # ---- coalescing (docs/coalescing.md): opt-in, consecutive deltas merged ----
    (
        C,
        "coalescing merges consecutive text deltas up to the cap",
        IDS,
        [
            coalesce(8),
            td("Hel"),
            td("lo"),
            td(" wor"),
            td("ld!"),
            td("12345678"),
            td("too long for one"),
            td("x"),
            FINISH,
        ],
    ),
    (
        C,
        "coalescing counts the cap in utf-8 bytes",
        IDS,
        [coalesce(4), td("é"), td("é"), td("東"), td("a"), td("b"), FINISH],
    ),
    (
        C,
        "coalescing never merges across another event",
        IDS,
        [
            coalesce(64),
            td("a"),
            td("b"),
            inp("pipeline:step:start", stepName="s"),
            td("c"),
            inp("tool:input:start", toolCallId="c1", toolName="f"),
            inp("tool:input:delta", toolCallId="c1", delta='{"q":'),
            inp("tool:input:delta", toolCallId="c1", delta='"x"}'),
            inp("tool:input:end", toolCallId="c1"),
            td("d"),
            td("e"),
            inp("pipeline:step:end", stepName="s"),
            td("f"),
            FINISH,
        ],
    ),
    (
        C,
        "coalescing merges arguments per call and never across calls",
        IDS,
        [
            coalesce(64),
            inp("tool:input:start", toolCallId="c1", toolName="f"),
            inp("tool:input:start", toolCallId="c2", toolName="g"),
            inp("tool:input:delta", toolCallId="c1", delta="{"),
            inp("tool:input:delta", toolCallId="c1", delta="}"),
            inp("tool:input:delta", toolCallId="c2", delta="["),
            inp("tool:input:delta", toolCallId="c2", delta="]"),
            inp("tool:input:delta", toolCallId="c9", delta="dropped"),
            inp("tool:input:end", toolCallId="c2"),
            inp("tool:input:delta", toolCallId="c1", delta=" "),
            FINISH,
        ],
    ),
    (
        C,
        "coalescing flush sends what is held and nothing else",
        IDS,
        [
            coalesce(64),
            FLUSH,
            td("a"),
            td("b"),
            SNAPSHOT,
            FLUSH,
            FLUSH,
            SNAPSHOT,
            td("c"),
            FLUSH,
            td(""),
            FLUSH,
            FINISH,
            FLUSH,
        ],
    ),
    (
        C,
        "coalescing sends what is held before an interrupt and a run error",
        {**IDS, "event_ids": True},
        [
            coalesce(64),
            td("a"),
            td("b"),
            inp("human:required", message="ok?"),
            td("c"),
            td("d"),
            fail("ValueError", "boom"),
        ],
    ),
    (
        C,
        "coalescing sends what is held before the run end",
        IDS,
        [coalesce(64), td("a"), td("b"), inp("agent:run:end", result="ok")],
    ),
    (
        K,
        "chunks coalescing merges strings and tokens of one message",
        IDS,
        [
            coalesce(64),
            raw("a"),
            raw({"type": "token", "content": "b"}),
            raw("c"),
            raw({"type": "tool_call", "id": "c1", "name": "f", "input": {}}),
            raw("d"),
            raw("e"),
            raw({"type": "done", "output": "ok"}),
        ],
    ),
    (
        E,
        "events coalescing merges content and arguments",
        {**IDS, "event_ids": True, "first_id": 5},
        [
            coalesce(64),
            ev("TEXT_MESSAGE_START", messageId="m1", role="assistant"),
            ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="Hel"),
            ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="lo"),
            ev("TEXT_MESSAGE_END", messageId="m1"),
            ev("TOOL_CALL_START", toolCallId="c1", toolCallName="f", parentMessageId="m1"),
            ev("TOOL_CALL_ARGS", toolCallId="c1", delta='{"a":'),
            ev("TOOL_CALL_ARGS", toolCallId="c1", delta="1}"),
            ev("TOOL_CALL_END", toolCallId="c1"),
            ev("TEXT_MESSAGE_CHUNK", messageId="m2", delta="x"),
            ev("TEXT_MESSAGE_CHUNK", messageId="m2", delta="y"),
            SNAPSHOT,
            ev("RUN_FINISHED"),
        ],
    ),
    # ---- events dialect: AG-UI 1.0 subagents (docs/events-dialect.md) ----
    (
        E,
        "events nested subagents for a 1.0 client",
        {**IDS, "protocol_version": "1.0"},
        [
            ev("TEXT_MESSAGE_CHUNK", messageId="m1", delta="delegating"),
            ev(
                "SUBAGENT_STARTED",
                subagentRunId="s1",
                name="research",
                description="finds things",
                parentMessageId="m1",
                parentSubagentRunId="never-started",
                timestamp=5,
            ),
            ev("TOOL_CALL_START", toolCallId="c1", toolCallName="search"),
            ev(
                "SUBAGENT_STARTED",
                subagentRunId="s2",
                name="inner",
                parentSubagentRunId="s1",
                parentToolCallId="c1",
                parentMessageId="never-streamed",
            ),
            ev("SUBAGENT_STARTED", subagentRunId="s2", name="again"),
            ev("TEXT_MESSAGE_CHUNK", messageId="m2", delta="inner work", subagentRunId="s2"),
            SNAPSHOT,
            ev(
                "SUBAGENT_FINISHED",
                subagentRunId="s2",
                result={"found": 1},
                outcome={"type": "suspended", "interruptIds": ["i1"], "extra": True},
            ),
            ev("SUBAGENT_FINISHED", subagentRunId="s2"),
            ev("SUBAGENT_ERROR", subagentRunId="unknown", message="x"),
            ev("SUBAGENT_STARTED", subagentRunId="s2", name="reused after its end"),
            ev("SUBAGENT_STARTED", subagentRunId="s3", name="sibling", parentSubagentRunId="s2"),
            ev("SUBAGENT_ERROR", subagentRunId="s3", message="failed", code="E1"),
            ev("SUBAGENT_STARTED", subagentRunId="s4", name="left open"),
            ev("SUBAGENT_FINISHED", subagentRunId="s1", result=None, outcome={"type": "success"}),
            ev("RUN_FINISHED"),
        ],
    ),
    (
        E,
        "events open subagents end with the run's error for a 1.0 client",
        {**IDS, "protocol_version": "1.0"},
        [
            ev("SUBAGENT_STARTED", subagentRunId="s1", name="outer"),
            ev("SUBAGENT_STARTED", subagentRunId="s2", name="inner", parentSubagentRunId="s1"),
            ev("STEP_STARTED", stepName="plan"),
            ev("RUN_ERROR", message="boom", code="E"),
            ev("SUBAGENT_FINISHED", subagentRunId="s1"),
        ],
    ),
    (
        E,
        "events open subagents end before a cancel for a 1.0 client",
        {**IDS, "protocol_version": "1.0"},
        [
            ev("SUBAGENT_STARTED", subagentRunId="s1", name="outer"),
            ev("TEXT_MESSAGE_CHUNK", delta="x"),
            CANCEL,
        ],
    ),
    (
        E,
        "events subagents are steps for a 0.0.x client",
        IDS,
        [
            ev("SUBAGENT_STARTED", subagentRunId="s1", name="research", description="d"),
            ev("SUBAGENT_STARTED", subagentRunId="s2", name="inner", parentSubagentRunId="s1"),
            ev("SUBAGENT_STARTED", subagentRunId="s2", name="again"),
            SNAPSHOT,
            ev("SUBAGENT_FINISHED", subagentRunId="s2", result={"a": 1}),
            ev("SUBAGENT_ERROR", subagentRunId="s2", message="already ended"),
            ev("SUBAGENT_STARTED", subagentRunId="s3", name="x"),
            ev("SUBAGENT_ERROR", subagentRunId="s3", message="failed"),
            ev("TEXT_MESSAGE_CHUNK", delta="y"),
            FINISH,
        ],
    ),
    (
        E,
        "events bad subagent events raise and change nothing",
        {**IDS, "protocol_version": "1.0"},
        [
            ev("SUBAGENT_STARTED", subagentRunId="s1", name="ok"),
            ev("SUBAGENT_STARTED", name="no id"),
            ev("SUBAGENT_STARTED", subagentRunId="s2"),
            ev("SUBAGENT_STARTED", subagentRunId="s3", name="n", parentSubagentRunId=1),
            ev("SUBAGENT_FINISHED", subagentRunId=None),
            ev("SUBAGENT_FINISHED", subagentRunId="s1", outcome="success"),
            ev("SUBAGENT_FINISHED", subagentRunId="s1", outcome={"type": "cancelled"}),
            ev("SUBAGENT_FINISHED", subagentRunId="s1", outcome={}),
            ev(
                "SUBAGENT_FINISHED",
                subagentRunId="s1",
                outcome={"type": "suspended", "interruptIds": "i1"},
            ),
            ev(
                "SUBAGENT_FINISHED",
                subagentRunId="s1",
                outcome={"type": "suspended", "interruptIds": ["i1", 2]},
            ),
            ev("SUBAGENT_ERROR", subagentRunId="s1"),
            ev("SUBAGENT_ERROR", subagentRunId="s1", message="m", code=3),
            ev(
                "SUBAGENT_FINISHED",
                subagentRunId="s1",
                outcome={"type": "suspended", "interruptIds": None},
            ),
            FINISH,
        ],
    ),
]


def make_exception(spec):
    import builtins

    cls = getattr(builtins, spec["type"], None)
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        cls = type(spec["type"], (Exception,), {})
    return cls(spec["message"])


def run(dialect, create, steps):
    kwargs = dict(create)
    if dialect == C:
        t = pure.create_agui_transformer(**kwargs)
    elif dialect == E:
        t = pure.create_agui_repairer(**kwargs)
    else:
        t = pure.create_agui_translator(**kwargs)
    events, sse = [], b""
    out_steps = []
    # Section 7, written here independently of the transformer's own numbering.
    numbered = create.get("event_ids", False)
    next_id = create.get("first_id", 1)
    for step in steps:
        step = dict(step)
        if "snapshot" in step:
            step["snapshot"] = t.snapshot()
            out_steps.append(step)
            continue
        if "coalesce" in step:
            t.coalesce(step["coalesce"])
            out_steps.append(step)
            continue
        if "flush" in step:
            got = t.flush()
        elif "finish" in step:
            got = t.finish()
        elif "cancel" in step:
            got = t.cancel()
        elif "fail" in step:
            got = t.fail(make_exception(step["fail"]))
        else:
            try:
                got = t(step["input"])
            except CrumbError as error:
                if step.get("error") != str(error):
                    print(f"  !! error differs: {step.get('error')!r} vs {str(error)!r}")
                step["error"] = str(error)
                got = []
            else:
                if "error" in step:
                    print(f"  !! expected error {step['error']!r}, got events")
                    del step["error"]
        events += got
        for event in got:
            if numbered:
                sse += b"id: %d\n" % next_id
            next_id += 1
            sse += pure.encode_sse(event)
        out_steps.append(step)
    return out_steps, events, sse.decode(), t.dropped, t.ignored, t.finished


def slug(name):
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def main():
    force = "--force" in sys.argv
    for dialect, name, create, steps in SPECS:
        out_steps, events, sse, dropped, ignored, finished = run(dialect, create, steps)
        vector = {
            "name": name,
            "dialect": dialect,
            "create": create,
            "steps": out_steps,
            "events": events,
            "sse": sse,
            "dropped": dropped,
            "ignored": ignored,
            "finished": finished,
        }
        path = HERE / f"{ {C: 'c', K: 'k', E: 'e'}[dialect] }_{slug(name)}.json"
        if path.exists() and not force:
            continue
        path.write_text(json.dumps(vector, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {path.name}: {len(events)} events, dropped={dropped} ignored={ignored}")


if __name__ == "__main__":
    main()
