"""A reader of a run another client started reads the run in its own version
(contract section 8; docs/contract-notes.md, "A reader of another version").

A run's log holds what its starter declared: a run a 1.0 client started has
``RUN_STARTED.protocolVersion``, ``SUBAGENT_*``, ``usage`` and the
``cancelled`` outcome. A reader that does not declare 1.0 (GET streams:
``agui-protocol-version``, as ``clients/js/reconnect.mjs`` sends it for a
1.0 ``HttpAgent``) reads what a 0.0.x run gives, joining mid-run or resuming
by Last-Event-ID. The judges: the real ``@ag-ui/client`` 0.0.58 joining,
its core's schemas and its verifier over the raw streams, ag-ui-validate,
and the same agent run for a 0.0.x client. A 1.0 reader of a 0.0.x run
takes it as it is.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from pathlib import Path

import httpx
import orjson
import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from agui_bridge.runs.downgrade import downgrade_frames

from tests.ingress_apps import parse_sse
from tests.servers import serve
from tests.test_interop import CLIENT_VERSIONS, node  # noqa: F401

INTEROP = Path(__file__).parent / "interop"
V1 = {"protocolVersion": "1.0"}
DECLARES_V1 = {"agui-protocol-version": "1.0"}
SUBAGENT_TYPES = {"SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"}


@pytest.fixture(scope="module")
def url():
    with serve("tests.subagent_apps:app") as url:
        yield url


def body(thread: str, run: str, declared: dict) -> dict:
    message = {"id": f"{thread}-u", "role": "user", "content": "q"}
    return {"threadId": thread, "runId": run, "messages": [message], **declared}


class Started:
    """A run's POST read in a thread until it ends (``text``: what came so far);
    ``subagent`` is set once its stream carried the subagent's start."""

    def __init__(self, url: str, agent: str, thread: str, run: str, declared: dict):
        self.subagent = threading.Event()
        self.text = ""
        self._reader = threading.Thread(
            target=self._read, args=(f"{url}/agui/{agent}", body(thread, run, declared))
        )
        self._reader.start()

    def _read(self, target: str, payload: dict) -> None:
        with httpx.stream("POST", target, json=payload, timeout=120) as response:
            for chunk in response.iter_text():
                self.text += chunk
                if "subagent_s1" in self.text or "SUBAGENT_STARTED" in self.text:
                    self.subagent.set()

    def ended(self) -> str:
        self._reader.join(timeout=120)
        assert not self._reader.is_alive()
        return self.text


def held_run(url: str, thread: str, run: str, declared: dict = V1) -> Started:
    started = Started(url, "held", thread, run, declared)
    assert started.subagent.wait(60), started.text
    return started


def cancel(url: str, thread: str, run: str) -> None:
    response = httpx.post(f"{url}/threads/{thread}/runs/{run}/cancel", timeout=30)
    assert response.status_code == 202, response.text


def events(url: str, thread: str, run: str, headers: dict | None = None) -> list[dict]:
    response = httpx.get(f"{url}/threads/{thread}/runs/{run}/events", headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return parse_sse(response.text)[0]


def judge(node, stream: list[dict], version: str = "0.0.58") -> None:  # noqa: F811
    """The client's core's schemas, the client's verifier, ag-ui-validate."""
    report = validate_agui(stream)
    bad = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    assert not bad, [(d.rule, d.message) for d in bad]
    parsed = _node(node, "parse-events.mjs", {"version": version, "events": stream})
    assert all(r["valid"] for r in parsed), [
        (e["type"], r["issues"]) for e, r in zip(stream, parsed, strict=True) if not r["valid"]
    ]
    (applied,) = _node(node, "apply-events.mjs", {"version": version, "cases": [stream]})
    assert applied["ok"] and not applied["warnings"], applied


def _node(node, script: str, request: dict):  # noqa: F811
    proc = subprocess.run(
        [node, str(INTEROP / script)],
        input=json.dumps(request),
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(proc.stdout)


def assert_0_0_x_shapes(stream: list[dict]) -> None:
    assert not [e for e in stream if e["type"] in SUBAGENT_TYPES]
    assert not [e for e in stream if "protocolVersion" in e or "usage" in e]
    assert not [e for e in stream if "outcome" in e and e["outcome"].get("type") == "cancelled"]


def steps(stream: list[dict]) -> list[tuple[str, str]]:
    return [(e["type"], e["stepName"]) for e in stream if e["type"].startswith("STEP_")]


def same_run(stream: list[dict]) -> list[dict]:
    """The events without the thread's id (two threads ran the same run id)."""
    return [{k: v for k, v in e.items() if k != "threadId"} for e in stream]


# ---- the real client joins --------------------------------------------------


@pytest.mark.parametrize("how", ["join mid-run", "resume by Last-Event-ID"])
@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_a_page_joining_a_1_0_run_reads_it_in_its_own_version(
    node,  # noqa: F811
    url,
    tmp_path,
    version,
    how,
):
    thread, run = f"rv-{uuid.uuid4().hex[:8]}", "r1"
    starter = held_run(url, thread, run)
    mark = tmp_path / "joined"
    # A resume: the first response is cut after the prelude (RUN_STARTED, the two
    # snapshots, the open subagent) and the run's first closing frame.
    target, cut = ("-", 0) if how == "join mid-run" else (run, 5)
    page = subprocess.Popen(
        [node, str(INTEROP / "join-run.mjs"), version, f"{url}/agui/held", thread, target,
         str(cut), str(mark)],
        cwd=INTEROP,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not mark.exists() and page.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mark.exists(), page.communicate(timeout=60)
    finally:
        cancel(url, thread, run)
    out, err = page.communicate(timeout=60)
    assert page.returncode == 0, err
    result = json.loads(out)
    assert result["ok"], (result.get("error"), result["warnings"], result["invalid"])
    seen = result["events"]
    assert seen[-1]["type"] == "RUN_FINISHED"
    if how != "join mid-run":
        assert result["requests"][-1]["lastEventId"] is not None, result["requests"]
    if version == "0.0.58":
        assert_0_0_x_shapes(seen)
        assert ("STEP_FINISHED", "subagent_s1") in steps(seen)
        assert "outcome" not in seen[-1]
    else:
        if how == "join mid-run":
            assert "SUBAGENT_STARTED" in [e["type"] for e in seen]
        assert "SUBAGENT_FINISHED" in [e["type"] for e in seen]
        assert seen[-1]["outcome"] == {"type": "cancelled"}
    # What the page shows is the thread as stored.
    stored = httpx.get(f"{url}/threads/{thread}/state", timeout=10).json()["messages"]
    shown = [(m["id"], m.get("content")) for m in result["messages"]]
    assert shown == [(m["id"], m.get("content")) for m in stored]
    starter.ended()


# ---- the raw streams ----------------------------------------------------------


@pytest.mark.parametrize("agent", ["held", "counted"])
def test_a_0_0_x_reader_of_a_1_0_run_reads_what_a_0_0_x_run_gives(node, url, agent):  # noqa: F811
    run = "r1"
    v1_thread, v0_thread = (f"rv-{agent}-{uuid.uuid4().hex[:8]}" for _ in range(2))
    for thread, declared in ((v1_thread, V1), (v0_thread, {})):
        if agent == "held":
            started = held_run(url, thread, run, declared)
            cancel(url, thread, run)
            started.ended()
        else:
            response = httpx.post(f"{url}/agui/counted", json=body(thread, run, declared))
            assert response.status_code == 200, response.text

    v0_run = events(url, v0_thread, run, {"Last-Event-ID": "0"})
    # Every way to read the 1.0 run: from the first event, resumed mid-way (the
    # exact prelude re-opens the subagent), and a join of the ended run.
    whole = events(url, v1_thread, run, {"Last-Event-ID": "0"})
    assert same_run(whole) == same_run(v0_run)
    judge(node, whole)
    opened = next(i for i, e in enumerate(whole) if e.get("stepName") == "subagent_s1")
    resumed = events(url, v1_thread, run, {"Last-Event-ID": str(opened + 1)})
    assert resumed[1] == {"type": "STEP_STARTED", "stepName": "subagent_s1"}
    judge(node, resumed)
    joined = events(url, v1_thread, run)
    judge(node, joined)
    for stream in (whole, resumed, joined):
        assert_0_0_x_shapes(stream)

    # A reader that declares 1.0 reads the run as its starter did.
    declared = events(url, v1_thread, run, {"Last-Event-ID": "0", **DECLARES_V1})
    assert declared[0]["protocolVersion"] == "1.0"
    assert "SUBAGENT_STARTED" in [e["type"] for e in declared]
    terminal = declared[-1]
    if agent == "held":
        assert terminal["outcome"] == {"type": "cancelled"}
    else:
        assert terminal["usage"][0]["inputTokens"] == 3
    judge(node, declared, "1.0.0")
    # and a 0.0.x run as it is: 1.0 takes 0.0.x shapes.
    assert events(url, v0_thread, run, {"Last-Event-ID": "0", **DECLARES_V1}) == v0_run
    judge(node, v0_run, "1.0.0")


@pytest.mark.parametrize("declared", [{}, DECLARES_V1])
def test_an_exact_resume_re_opens_open_reasoning(node, url, declared):  # noqa: F811
    """What the resume re-sends (RUN_STARTED, then the STARTs of what is open)
    makes the response a valid stream alone, reasoning included."""
    thread, run = f"rv-th-{uuid.uuid4().hex[:8]}", "r1"
    starter = Started(url, "thinking", thread, run, V1)
    deadline = time.monotonic() + 60
    while "REASONING_MESSAGE_CONTENT" not in starter.text and time.monotonic() < deadline:
        time.sleep(0.05)
    cancel(url, thread, run)
    starter.ended()
    whole = events(url, thread, run, {"Last-Event-ID": "0", **declared})
    content = next(i for i, e in enumerate(whole) if e["type"] == "REASONING_MESSAGE_CONTENT")
    resumed = events(url, thread, run, {"Last-Event-ID": str(content + 1), **declared})
    assert [e["type"] for e in resumed[:3]] == [
        "RUN_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
    ]
    judge(node, resumed, "1.0.0" if declared else "0.0.58")


# ---- two nodes -------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_nodes(redis_server, tmp_path_factory):
    """Two nodes (RSGI and ASGI) on one redis-server's run logs and one SQLite store."""
    store = tmp_path_factory.mktemp("rv") / "threads.db"
    env = {"AGUI_TEST_RUNS": redis_server.url(redis_server.fresh_db()),
           "AGUI_TEST_STORE": f"sqlite:///{store}"}  # fmt: skip
    with (
        serve("tests.subagent_apps:app", env=env) as a,
        serve("tests.subagent_apps:app", env=env, interface="asgi") as b,
    ):
        yield a, b


def test_a_0_0_x_reader_on_another_node_reads_0_0_x_shapes(node, two_nodes):  # noqa: F811
    a, b = two_nodes
    thread, run = f"rv2-{uuid.uuid4().hex[:8]}", "r1"
    starter = held_run(a, thread, run)
    with (
        httpx.Client(timeout=60) as client,
        client.stream("GET", f"{b}/threads/{thread}/events") as joined,
    ):
        assert joined.status_code == 200
        text = ""
        chunks = joined.iter_text()
        while "subagent_s1" not in text:  # B's prelude re-opens the subagent
            text += next(chunks)
        cancel(a, thread, run)
        text += "".join(chunks)
    starter.ended()
    mid_run = parse_sse(text)[0]
    resumed = events(b, thread, run, {"Last-Event-ID": "1"})
    for stream in (mid_run, resumed):
        assert_0_0_x_shapes(stream)
        judge(node, stream)
    assert ("STEP_FINISHED", "subagent_s1") in steps(mid_run)


# ---- the frames alone -----------------------------------------------------------


def test_only_the_frames_of_the_changed_types_are_touched():
    quoted = '{"type":"RUN_FINISHED","outcome":{"type":"cancelled"}}'
    log = (
        b'id: 7\ndata: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":'
        + orjson.dumps(quoted)
        + b"}\n\n"
    )
    assert downgrade_frames(log) is log  # a string holding the bytes is escaped
    batch = (
        log
        + b'id: 8\ndata: {"type":"SUBAGENT_ERROR","subagentRunId":"s","message":"x"}\n\n'
        + b'id: 9\ndata: {"type":"RUN_FINISHED","threadId":"t","runId":"r",'
        + b'"outcome":{"type":"cancelled"},"usage":[{"inputTokens":1}]}\n\n'
    )
    assert downgrade_frames(batch) == (
        log
        + b'id: 8\ndata: {"type":"STEP_FINISHED","stepName":"subagent_s"}\n\n'
        + b'id: 9\ndata: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'
    )
    # An interrupt outcome is a 0.0.x run's too; a prelude's frames carry no id.
    interrupted = b'data: {"type":"RUN_FINISHED","outcome":{"type":"interrupt"}}\n\n'
    assert downgrade_frames(interrupted) == interrupted
