"""A Stop around interrupts, judged by the real clients (@ag-ui/client 1.0.0
and 0.0.58, Stop through clients/js/stop.mjs; ``interop/stop-interrupts.mjs``).

A stopped run leaves nothing pending (what a reader of its terminal event
holds); what a page may still hold is kept aside and re-opened by a resume
naming it (``agui_bridge/interrupts.py``). So after a Stop, whichever way the
page stopped, its next step is accepted, and the thread ends as the page
shows it:

- A: the Stop lands in a run that resumed an interrupt. A page told
  ``cancelled`` (1.0) or given a plain RUN_FINISHED (0.0.x) holds nothing and
  sends a new turn (was 409 ``interrupt_pending`` for 1.0); a page that
  stopped reading holds the interrupt and resumes it again (was 400
  ``no_pending_interrupt`` for 0.0.x).
- B: the agent asks, then streams on, and is stopped. A page that stopped
  reading never saw the question and sends a new turn (was 409
  ``interrupt_pending`` for 0.0.x); a 0.0.x page that read on got it in
  RUN_FINISHED and answers it.
"""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest

from tests.servers import serve
from tests.test_interop import CLIENT_VERSIONS, INTEROP, node  # noqa: F401

# cancelRoute: POST …/cancel, the page reads on (the playground's Stop);
# cancelOnStop: abort + POST …/cancel; abort: the next run supersedes it.
HOWS = ["cancelRoute", "cancelOnStop", "abort"]


@pytest.fixture(scope="module")
def base_url():
    with serve("tests.interrupt_stop_apps:app") as url:
        yield url


def run_steps(node_bin, base_url, version, agent, steps) -> list[dict]:
    thread = f"st-{uuid.uuid4().hex[:8]}"
    url = f"{base_url}/agui/{agent}"
    proc = subprocess.run(
        [node_bin, str(INTEROP / "stop-interrupts.mjs"), version, url, thread, json.dumps(steps)],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    done = out["steps"]
    assert [s["error"] for s in done] == [None] * len(steps), done
    assert out["warnings"] == [], out["warnings"]
    return done


def check(done: list[dict], how: str, stop_index: int) -> None:
    stop = done[stop_index]
    if how != "abort":  # superseded only by the next run: still running here
        assert stop["stored"] == [], stop  # nothing pending after a stop
        assert all(s["sameMessages"] for s in done), done
    for step in done[stop_index + 1 :]:
        assert step["pending"] == step["stored"], done
    assert done[-1]["sameMessages"], done


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_a_stopped_resume_leaves_the_page_able_to_go_on(node, base_url, version, how):  # noqa: F811
    steps = [
        {"op": "send", "text": "q1"},
        {"op": "stop", "how": how, "after": 3, "resume": "yes"},
        {"op": "next", "text": "q2", "payload": "again"},
        {"op": "next", "text": "q3", "payload": "more"},
    ]
    done = run_steps(node, base_url, version, "approve", steps)
    assert done[0]["pending"] == done[0]["stored"] == ["ok-r1"]
    if how == "cancelRoute":
        # told the run ended: nothing held, so a new turn, which asks again
        assert done[1]["pending"] == [] and [s["op"] for s in done[2:]] == ["send", "resume"]
    else:
        # stopped reading: the interrupt is still held and resumed again
        assert done[1]["pending"] == ["ok-r1"] and [s["op"] for s in done[2:]] == ["resume", "send"]
    check(done, how, 1)


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_a_question_asked_before_a_stop_is_held_only_by_who_got_it(node, base_url, version, how):  # noqa: F811
    steps = [
        {"op": "stop", "how": how, "after": 3, "text": "q1"},
        {"op": "next", "text": "q2", "payload": "yes"},
        {"op": "next", "text": "q3", "payload": "more"},
    ]
    done = run_steps(node, base_url, version, "ask_and_go_on", steps)
    offered = how == "cancelRoute" and version != "1.0.0"  # a 0.0.x RUN_FINISHED offers it
    assert done[0]["pending"] == (["ok-r1"] if offered else [])
    assert [s["op"] for s in done[1:]] == (["resume", "send"] if offered else ["send", "resume"])
    check(done, how, 0)
