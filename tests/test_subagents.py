"""AG-UI 1.0 subagents through the events dialect (docs/events-dialect.md, "Subagents").

The transformer's rules are pinned by the vectors (``e_*subagent*``, both
builds); here: the repaired stream of nested subagents against the judges
(ag-ui-validate and the ag_ui.core 1.0 models in both builds, the real
``@ag-ui/client`` 1.0.0 and 0.0.58 behind ``App``), a joining reader's
prelude, and the Agent Protocol stream's namespaced parts under
``stream_subgraphs`` through ``langgraph-sdk``, for a 1.0 and a 0.0.x run log.
"""

from __future__ import annotations

import uuid

import httpx
import pytest
from ag_ui.core import Event
from ag_ui_validate.pytest_plugin import validate_agui
from agui_bridge.agent_protocol.stream import Projector
from langgraph_sdk import get_client
from pydantic import TypeAdapter

from tests.servers import serve
from tests.test_interop import CLIENT_VERSIONS, node, run_client  # noqa: F401

EVENT = TypeAdapter(Event)
SUBAGENT_TYPES = {"SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"}


def nested_events() -> list[dict]:
    """What tests/subagent_apps.py's agent yields, with fixed ids."""
    tag1, tag2 = {"subagentRunId": "s1"}, {"subagentRunId": "s2"}
    return [
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "asking. "},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "r", "parentMessageId": "m1"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m2", "delta": "searching. ", **tag1},
        {
            "type": "SUBAGENT_STARTED",
            "subagentRunId": "s2",
            "name": "d",
            "parentSubagentRunId": "s1",
        },
        {"type": "STEP_STARTED", "stepName": "plan", **tag2},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "read", **tag2},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}", **tag2},
        {"type": "TOOL_CALL_RESULT", "messageId": "x", "toolCallId": "c1", "content": "page"},
        {"type": "STEP_FINISHED", "stepName": "plan", **tag2},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s2", "result": {"pages": 1}},
        {
            "type": "SUBAGENT_STARTED",
            "subagentRunId": "s3",
            "name": "c",
            "parentSubagentRunId": "s1",
        },
        {"type": "SUBAGENT_ERROR", "subagentRunId": "s3", "message": "no source"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1", "outcome": {"type": "success"}},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m3", "delta": "42."},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s4", "name": "left open"},
    ]


def repaired(impl, version) -> list[dict]:
    t = impl.create_agui_repairer("t1", "r1", protocol_version=version)
    out = []
    for event in nested_events():
        out += t(event)
    return out + t.finish()


def assert_valid(stream: list[dict]) -> None:
    report = validate_agui(stream)
    bad = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    assert not bad, [(d.rule, d.message) for d in bad]
    for event in stream:
        EVENT.validate_python(event)


def test_nested_subagents_for_a_1_0_client(impl):
    stream = repaired(impl, "1.0")
    assert_valid(stream)
    lifecycle = [
        (e["type"], e["subagentRunId"], e.get("parentSubagentRunId"))
        for e in stream
        if e["type"] in SUBAGENT_TYPES
    ]
    assert lifecycle == [
        ("SUBAGENT_STARTED", "s1", None),
        ("SUBAGENT_STARTED", "s2", "s1"),
        ("SUBAGENT_FINISHED", "s2", None),
        ("SUBAGENT_STARTED", "s3", "s1"),
        ("SUBAGENT_ERROR", "s3", None),
        ("SUBAGENT_FINISHED", "s1", None),
        ("SUBAGENT_STARTED", "s4", None),
        # Closed by the run's end, after the text it closed first.
        ("SUBAGENT_FINISHED", "s4", None),
    ]
    assert [e["type"] for e in stream[-3:]] == [
        "TEXT_MESSAGE_END",
        "SUBAGENT_FINISHED",
        "RUN_FINISHED",
    ]
    # The attribution an agent's events carry is not sent (docs/events-dialect.md).
    assert not [e for e in stream if "subagentRunId" in e and e["type"] not in SUBAGENT_TYPES]


def test_a_0_0_x_client_reads_subagents_as_steps(impl):
    stream = repaired(impl, None)
    assert_valid(stream)
    assert not [e for e in stream if e["type"] in SUBAGENT_TYPES]
    steps = [(e["type"], e["stepName"]) for e in stream if e["type"].startswith("STEP_")]
    assert steps == [
        ("STEP_STARTED", "subagent_s1"),
        ("STEP_STARTED", "subagent_s2"),
        ("STEP_STARTED", "plan"),
        ("STEP_FINISHED", "plan"),
        ("STEP_FINISHED", "subagent_s2"),
        ("STEP_STARTED", "subagent_s3"),
        ("STEP_FINISHED", "subagent_s3"),
        ("STEP_FINISHED", "subagent_s1"),
        ("STEP_STARTED", "subagent_s4"),
        ("STEP_FINISHED", "subagent_s4"),
    ]
    # The run's state is not touched: it is the same whoever watches.
    assert not [e for e in stream if e["type"] == "STATE_SNAPSHOT"]


@pytest.mark.parametrize("version", ["1.0", None])
def test_a_reader_joining_mid_run_can_end_the_open_subagents(impl, version):
    t = impl.create_agui_repairer("t1", "r1", protocol_version=version)
    for event in nested_events()[:5]:
        t(event)
    prelude = [{"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}, *t.snapshot()["open"]]
    rest = t({"type": "SUBAGENT_FINISHED", "subagentRunId": "s2"}) + t.finish()
    assert_valid(prelude + rest)
    if version:
        opened = [e["subagentRunId"] for e in prelude if e["type"] == "SUBAGENT_STARTED"]
        assert opened == ["s1", "s2"]


# ---- behind App: the real clients ----


@pytest.fixture(scope="module")
def subagents_url():
    with serve("tests.subagent_apps:app") as url:
        yield url


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_nested_subagents_pass_the_real_client(node, subagents_url, tmp_path, version):  # noqa: F811
    thread = f"sub-{uuid.uuid4().hex[:8]}"
    scenario = {
        "threadId": thread,
        "initialMessages": [{"id": f"u-{uuid.uuid4().hex[:8]}", "role": "user", "content": "q"}],
        "runs": [
            {},
            {
                "addMessages": [
                    {"id": f"u-{uuid.uuid4().hex[:8]}", "role": "user", "content": "again"}
                ]
            },
        ],
    }
    out = run_client(node, version, f"{subagents_url}/agui/nested", scenario, tmp_path)
    for run in out["runs"]:
        kinds = [e["type"] for e in run["events"]]
        subagent_events = [k for k in kinds if k in SUBAGENT_TYPES]
        if version == "1.0.0":
            assert subagent_events.count("SUBAGENT_STARTED") == 4
            assert subagent_events.count("SUBAGENT_FINISHED") == 3
            assert subagent_events.count("SUBAGENT_ERROR") == 1
        else:
            assert not subagent_events
            assert kinds.count("STEP_STARTED") == 4
    shown = out["messages"]
    stored = httpx.get(f"{subagents_url}/threads/{thread}/state", timeout=10).json()["messages"]
    assert [(m["id"], m["role"], m.get("content")) for m in stored] == [
        (m["id"], m["role"], m.get("content")) for m in shown
    ]


# ---- Agent Protocol: stream_subgraphs ----


async def _parts(client, agent, modes, **kwargs) -> list[tuple[str, object]]:
    thread_id = (await client.threads.create())["thread_id"]
    stream = client.runs.stream(thread_id, agent, stream_mode=modes, **kwargs)
    return [(part.event, part.data) async for part in stream]


async def test_stream_subgraphs_names_each_subagents_parts_by_its_namespace(subagents_url):
    client = get_client(url=subagents_url, api_key=None)
    modes = ["messages-tuple", "updates", "custom"]
    ask = {"messages": [{"role": "user", "content": "q"}]}
    try:
        flat = await _parts(client, "nested", modes, input=ask)
        nested = await _parts(client, "nested", modes, input=ask, stream_subgraphs=True)
    finally:
        await client.aclose()
    assert all("|" not in event for event, _ in flat)
    # The same parts in the same order; only a subagent's are named apart.
    assert [e.split("|")[0] for e, _ in nested[1:]] == [e for e, _ in flat[1:]]
    said = {}
    for event, data in nested:
        if event.startswith("messages") and data[0]["type"] == "AIMessageChunk":
            namespace = event.partition("|")[2]
            said[namespace] = said.get(namespace, "") + data[0]["content"]
    namespaces = sorted(said)
    assert namespaces[0] == ""
    outer = namespaces[1]
    assert outer.startswith("subagent_s1:") and "|" not in outer
    inner = namespaces[2]
    assert inner.startswith(f"{outer}|subagent_s2:")
    assert said == {
        "": "asking the team. the answer is 42.",
        outer: "searching. ",
        inner: "read it. ",
    }


def test_a_1_0_run_log_is_named_as_a_0_0_x_one():
    """A run a 1.0 client started carries SUBAGENT_* in its log, a 0.0.x one the
    steps: an Agent Protocol reader names the subagents' parts alike."""
    from agui_bridge import pure

    def parts(version):
        t = pure.create_agui_repairer("t1", "r1", protocol_version=version)
        log = [e for item in nested_events() for e in t(item)] + t.finish()
        projector = Projector({"messages-tuple", "updates"}, "nested", "t1", "r1", [], {}, True)
        return [part for event in log for part in projector.feed(event)]

    v1, v0 = parts("1.0"), parts(None)
    assert [e for e, _ in v1] == [e for e, _ in v0]
    assert any(e.startswith("messages|subagent_s1:") for e, _ in v1)
    assert any("|subagent_s2:" in e.partition("|")[2] for e, _ in v1)


def said_by_namespace(events: list[dict]) -> list[tuple[str, str]]:
    """A 1.0 run of ``events`` under ``stream_subgraphs``: (namespace, text) per
    messages-tuple part with text."""
    from agui_bridge import pure

    t = pure.create_agui_repairer("t1", "r1", protocol_version="1.0")
    log = [e for item in events for e in t(item)] + t.finish()
    projector = Projector({"messages-tuple"}, "n", "t1", "r1", [], {}, True)
    return [
        (event.partition("|")[2], data[0]["content"])
        for e in log
        for event, data in projector.feed(e)
        if data[0].get("content")
    ]


def test_subagents_side_by_side_may_end_in_any_order():
    """s1 and s2 run side by side and s1 ends first: s2's parts keep their
    name, and once s2 ends the parent's parts are named as the parent's."""
    events = [
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "a"},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s2", "name": "b"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "from s1"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m2", "delta": "from s2"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s2"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m3", "delta": "the parent"},
    ]
    said = said_by_namespace(events)
    assert said[-1] == ("", "the parent")
    assert said[1][0] == said[0][0] and "|subagent_s2:" in said[1][0]


def test_a_subagent_whose_id_extends_another_ends_only_its_own():
    """Ending ``s1`` closed ``s1:retry``'s namespace (matched by its text), and
    ``s1``'s stayed open: the parent's parts after both ended were named as
    ``s1``'s for the rest of the run."""
    events = [
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "a"},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s1:retry", "name": "b"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "from s1:retry"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1:retry"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m2", "delta": "the parent"},
    ]
    said = said_by_namespace(events)
    assert said[0][1] == "from s1:retry" and "|subagent_s1:retry:" in "|" + said[0][0]
    assert said[-1] == ("", "the parent")
