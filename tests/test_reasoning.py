"""Contract section 8 beyond the vectors: the options, cancel(), the typed
constructors and what the ingress reads. Both builds (the ``impl`` fixture)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from agui_bridge import RunInputError, crumbs, map_run_input

FACTORIES = ("create_agui_transformer", "create_agui_translator", "create_agui_repairer")


@pytest.mark.parametrize("factory", FACTORIES)
def test_protocol_version_option(impl, factory):
    make = getattr(impl, factory)
    assert make("t", "r").protocol_v1 is False
    assert make("t", "r", protocol_version=None).protocol_v1 is False
    assert make("t", "r", protocol_version="0.0.58").protocol_v1 is False
    assert make("t", "r", protocol_version="1.0").protocol_v1 is True
    assert make("t", "r", protocol_version="10.3.1").protocol_v1 is True
    assert make("t", "r", protocol_version="v1").protocol_v1 is False
    with pytest.raises(TypeError, match=r"^protocol_version must be a string, not int$"):
        make("t", "r", protocol_version=1)
    with pytest.raises(ValueError, match=r"^protocol_version must be valid unicode$"):
        make("t", "r", protocol_version="1.\ud800")
    # Checked after first_id, like the other options.
    with pytest.raises(TypeError, match=r"^first_id must be an integer"):
        make("t", "r", first_id="1", protocol_version=1)


@pytest.mark.parametrize("factory", FACTORIES)
def test_cancel_is_terminal_and_numbered(impl, factory):
    t = getattr(impl, factory)("t", "r", protocol_version="1.0", event_ids=True)
    events, frames = t.cancel_events_and_frames()
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_FINISHED"]
    assert events[1]["outcome"] == {"type": "cancelled"}
    assert frames.startswith(b"id: 1\ndata: ") and b"id: 2\ndata: " in frames
    assert t.finished and t.cancel() == [] and t.cancel_encoded() == b"" and t.finish() == []


def test_cancel_of_a_0_0_x_client_is_finish(impl):
    crumb = crumbs.human_required(interrupt_id="i1")
    cancelled = impl.create_agui_transformer("t", "r")
    finished = impl.create_agui_transformer("t", "r")
    cancelled(crumb)
    finished(crumb)
    assert cancelled.cancel_encoded() == finished.finish_encoded()


def test_reasoning_constructors(impl):
    t = impl.create_agui_transformer("t", "r")
    items = [
        crumbs.reasoning_delta("hm"),
        crumbs.reasoning_encrypted("sig"),
        crumbs.reasoning_end(),
        crumbs.tool_call("c1", "f", {}),
        crumbs.reasoning_encrypted("k", entity_id="c1", subtype="tool-call"),
        crumbs.task_end("k1", "chat", model="m", usage={"input_tokens": 1}),
    ]
    assert items[1] == {"type": "reasoning:encrypted", "encryptedValue": "sig"}
    assert items[5]["model"] == "m"
    events = [e for item in items for e in t(item)]
    assert [e["type"] for e in events].count("REASONING_ENCRYPTED_VALUE") == 2
    assert t.snapshot()["messages"][0] == {
        "id": "r:th1",
        "role": "reasoning",
        "content": "hm",
        "encryptedValue": "sig",
    }


def test_map_run_input_keeps_the_protocol_version():
    body = {"threadId": "t", "messages": [{"id": "u", "role": "user", "content": "hi"}]}
    assert map_run_input(body).protocol_version is None
    assert map_run_input({**body, "protocolVersion": "1.0"}).protocol_version == "1.0"
    assert map_run_input({**body, "protocolVersion": None}).protocol_version is None
    with pytest.raises(RunInputError, match=r"^'protocolVersion' must be a string$"):
        map_run_input({**body, "protocolVersion": 1})


@pytest.mark.parametrize("version", ["1.0.0", "0.0.58"])
def test_the_real_client_accepts_every_section_8_vector(version):
    """Every vector of contract section 8 (reasoning in the three dialects,
    activity, the 1.0 lifecycle) passes the real client's verifier and reducer
    with no warning; the activity's delta is applied to its content."""
    here = Path(__file__).resolve().parent
    names = [
        "c_reasoning_closes_before_text_tools_and_the_terminal",
        "c_reasoning_end_and_encrypted_values",
        "c_reasoning_ids_skip_held_ids_and_join_snapshots",
        "k_chunk_reasoning",
        "e_events_reasoning_repaired_like_text",
        "e_events_activity_passes_through",
        "e_events_activity_messages_in_the_snapshot",
        "e_an_agent_s_cancelled_outcome_is_dropped_for_a_0_0_x_client",
    ]
    if version == "1.0.0":  # 1.0-only fields: never sent to a 0.0.x client
        names += [
            "c_a_1_0_client_gets_the_version_and_the_usage",
            "c_a_1_0_client_gets_the_cancelled_outcome",
            "e_events_usage_for_a_1_0_client",
            "e_an_agent_s_cancelled_outcome_reaches_a_1_0_client",
        ]
    cases = [json.loads((here / "vectors" / f"{n}.json").read_text())["events"] for n in names]
    node = shutil.which("node")
    assert node, "node is needed for the interop tests"
    done = subprocess.run(
        [node, str(here / "interop" / "apply-events.mjs")],
        input=json.dumps({"version": version, "cases": cases}),
        capture_output=True,
        text=True,
        cwd=here / "interop",
        timeout=120,
        check=True,
    )
    results = json.loads(done.stdout)
    for name, result in zip(names, results, strict=True):
        assert result["ok"], (name, result)
    activity = results[names.index("e_events_activity_passes_through")]["messages"]
    shown = {m["id"]: m["content"] for m in activity if m["role"] == "activity"}
    # a1: patched by its delta, then kept by a snapshot with replace=False; the
    # snapshots under ids taken by a text message and by the thread go out
    # under fresh ids.
    assert shown == {"a1": {"s": [9, 2]}, "r1:a1": {}, "r1:a2": {}, "a2": {}}
    # The vector's last snapshot (what the thread stores) is what the client shows.
    name = "e_events_activity_messages_in_the_snapshot"
    vector = json.loads((here / "vectors" / f"{name}.json").read_text())
    assert results[names.index(name)]["messages"] == vector["steps"][-1]["snapshot"]["messages"]
    reasoning = results[names.index("c_reasoning_end_and_encrypted_values")]["messages"]
    assert reasoning[0] == {
        "id": "r1:th1",
        "role": "reasoning",
        "content": "a",
        "encryptedValue": "sig-3",
    }
