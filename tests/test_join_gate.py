"""A join at any moment of a run's life starts with RUN_STARTED and passes the
real @ag-ui/client's verifier (issue 19): while the user's turn is being
saved (before the run's first save ends), between the run's finish and its
last save, and on another node with Redis.

The store's saves wait on marks (``tests/gated_apps.py``), so each join lands
inside the window it is about, whatever the machine's load.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.ingress_apps import parse_sse
from tests.servers import serve
from tests.test_interop import CLIENT_VERSIONS, INTEROP, node  # noqa: F401
from tests.test_runs_redis import (
    Reader,
    frames_of,
    id_of,
    node_env,
    split_prelude,
    start_run,
    wait_for,
)

APP = "tests.gated_apps:app"


def verified(node, bodies: list[bytes]) -> list[dict]:  # noqa: F811
    """Each stream's events through verifyEvents and the reducer, on both clients."""
    cases = [parse_sse(body.decode())[0] for body in bodies]
    for events in cases:
        assert events and events[0]["type"] == "RUN_STARTED", [e["type"] for e in events[:4]]
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    results = []
    for version in CLIENT_VERSIONS:
        done = subprocess.run(
            [node, str(INTEROP / "apply-events.mjs")],
            input=json.dumps({"version": version, "cases": cases}),
            capture_output=True,
            text=True,
            cwd=INTEROP,
            timeout=120,
            check=True,
        )
        for at, result in enumerate(json.loads(done.stdout)):
            assert result["ok"], (version, at, result)
            results.append(result)
    return results


def joined(url: str, timeout: float = 10.0) -> Reader:
    """A reader of ``url`` once it answers 200 (a 204 or 404 is a run not yet
    visible: its log holds no RUN_STARTED yet), reading in the background."""
    deadline = time.monotonic() + timeout
    while True:
        reader = Reader("GET", url)
        reader.start()
        deadline_frame = time.monotonic() + timeout
        while reader.status is None and reader.is_alive():
            assert time.monotonic() < deadline_frame, "no answer"
            time.sleep(0.01)
        if reader.status == 200:
            return reader.reading()
        reader.result()
        assert reader.status in (204, 404), reader.status
        assert time.monotonic() < deadline, f"{url} never became readable"
        time.sleep(0.05)


def joins_in_both_windows(node, post_url: str, read_url: str, marks: Path) -> None:  # noqa: F811
    tid, rid = f"gated-{time.monotonic_ns()}", f"run-{time.monotonic_ns()}"
    whole = start_run(post_url, tid, rid, "hi")
    # The user's turn is being saved: the run has not begun its agent.
    wait_for(marks / f"saving-{tid}-1")
    early = [joined(f"{read_url}/threads/{tid}/events")]
    early.append(joined(f"{read_url}/threads/{tid}/runs/{rid}/events"))
    (marks / f"save-{tid}-1").write_text("1")
    # The run has finished; its answer is being saved (RUN_FINISHED waits for it).
    wait_for(marks / f"saving-{tid}-2")
    late = [joined(f"{read_url}/threads/{tid}/events")]
    late.append(joined(f"{read_url}/threads/{tid}/runs/{rid}/events"))
    (marks / f"save-{tid}-2").write_text("1")
    bodies = [whole.result(), *(r.result() for r in early + late)]
    results = verified(node, bodies)
    stored = httpx.get(f"{post_url}/threads/{tid}/state").json()
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]
    # every joiner ends with the thread as stored; the POST's reader with the
    # run's own answer (it holds the user's turn already)
    for at, result in enumerate(results):
        expected = stored["messages"][1:] if at % len(bodies) == 0 else stored["messages"]
        assert result["messages"] == expected, at
        assert result["state"] == stored["values"], at


@pytest.mark.parametrize("interface", ["rsgi", "asgi"])
def test_a_join_in_either_save_window_starts_with_run_started(node, interface, tmp_path):  # noqa: F811
    env = {"AGUI_TEST_MARKS": str(tmp_path)}
    with serve(APP, env=env, interface=interface) as url:
        joins_in_both_windows(node, url, url, tmp_path)


def test_a_join_on_another_node_starts_with_run_started(
    node,  # noqa: F811
    redis_server,
    pg_server,
    tmp_path,
):
    database = pg_server.create_database()
    try:
        redis_url = redis_server.url(redis_server.fresh_db())
        env = node_env(redis_url, pg_server.url(database), tmp_path)
        with serve(APP, env=env) as a, serve(APP, env=env) as b:
            joins_in_both_windows(node, a, b, tmp_path)
    finally:
        pg_server.drop_database(database)


def test_a_reader_that_drops_right_after_the_prelude_resumes_exactly(tmp_path):
    """The join prelude's last frame carries the id of the last event it covers:
    resuming from it gives exactly the run's frames after it, byte for byte."""
    env = {"AGUI_TEST_MARKS": str(tmp_path)}
    with serve(APP, env=env) as url:
        tid, rid = f"drop-{time.monotonic_ns()}", f"run-{time.monotonic_ns()}"
        whole = start_run(url, tid, rid, "slow 30")
        wait_for(tmp_path / f"started-{rid}")
        while whole.body.count(b"\n\n") < 4:  # the answer has begun
            time.sleep(0.01)
        body = b""
        with httpx.stream("GET", f"{url}/threads/{tid}/events", timeout=30) as response:
            assert response.status_code == 200
            for chunk in response.iter_raw():
                body += chunk
                done = frames_of(body[: body.rfind(b"\n\n") + 2]) if b"\n\n" in body else []
                if any(id_of(f) is not None for f in done):
                    break  # the prelude is in: the reader drops here
        prelude, _ = split_prelude(done)
        assert [id_of(f) for f in prelude[:-1]] == [None] * (len(prelude) - 1)
        cursor = id_of(prelude[-1])
        assert cursor is not None and cursor >= 1
        resumed = httpx.get(
            f"{url}/threads/{tid}/runs/{rid}/events", headers={"last-event-id": str(cursor)}
        )
        assert resumed.headers["agui-resume"] == "exact"
        stored = [f for f in frames_of(whole.result()) if id_of(f) is not None]
        again, after = split_prelude(frames_of(resumed.content))
        assert id_of(again[-1]) == cursor  # the resume's own prelude covers up to the cursor
        assert after == [f for f in stored if id_of(f) > cursor]
        assert [id_of(f) for f in after] == list(range(cursor + 1, len(stored) + 1))
