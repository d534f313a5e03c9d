"""A run's terminal event reaches its readers before its save completes
(issue 24 item 14): with 4 MB runs saving, a quick run's RUN_FINISHED came
only once its own save, queued behind theirs, was done (16.5 s at 200 runs).

The store's saves wait on marks (``tests/gated_apps.py``): the large runs'
answers are held at the store (one in the large lane, the others queued
behind it) and so is the quick run's own; its readers get RUN_FINISHED
anyway. The response ends once the save is done, and the thread then holds
the answer: the stream never tells another story than the thread.
"""

from __future__ import annotations

import time

import httpx

from tests.ingress_apps import parse_sse
from tests.servers import serve
from tests.test_runs_redis import start_run, wait_for

APP = "tests.gated_apps:app"
LARGE = 3


def test_a_quick_runs_run_finished_reaches_its_reader_while_saves_are_held(tmp_path):
    env = {"AGUI_TEST_MARKS": str(tmp_path)}
    stamp = time.monotonic_ns()
    with serve(APP, env=env) as url:
        large = []
        for i in range(LARGE):
            tid, rid = f"gated-large-{i}-{stamp}", f"run-large-{i}-{stamp}"
            large.append((tid, start_run(url, tid, rid, "big 4096")))  # 4 MiB each
            wait_for(tmp_path / f"saving-{tid}-1")  # the user's turn
            (tmp_path / f"save-{tid}-1").write_text("1")
        # One large answer is held at the store; the others wait in its lane.
        deadline = time.monotonic() + 60
        while not (first := [t for t, _ in large if (tmp_path / f"saving-{t}-2").exists()]):
            assert time.monotonic() < deadline, "no large answer reached the store"
            time.sleep(0.05)
        tid = f"gated-quick-{stamp}"
        quick = start_run(url, tid, f"run-quick-{stamp}", "hi")
        wait_for(tmp_path / f"saving-{tid}-1")
        (tmp_path / f"save-{tid}-1").write_text("1")
        wait_for(tmp_path / f"saving-{tid}-2")  # its own answer is held too
        deadline = time.monotonic() + 30  # it takes milliseconds; the margin is for load
        while b'"RUN_FINISHED"' not in quick.body:
            assert time.monotonic() < deadline, quick.body[-300:]
            assert quick.is_alive(), "the response ended before its save"
            time.sleep(0.01)
        held = [t for t, _ in large if not (tmp_path / f"save-{t}-2").exists()]
        assert len(held) == LARGE and first[0] in held  # no large save was let through
        assert quick.is_alive()  # the log ends once the save is done
        state = httpx.get(f"{url}/threads/{tid}/state").json()
        assert [m["role"] for m in state["messages"]] == ["user"]  # the answer is being saved
        (tmp_path / f"save-{tid}-2").write_text("1")
        events, _ = parse_sse(quick.result().decode())
        assert [e["type"] for e in events].count("RUN_FINISHED") == 1
        assert events[-1]["type"] == "RUN_FINISHED"
        state = httpx.get(f"{url}/threads/{tid}/state").json()
        assert [m["role"] for m in state["messages"]] == ["user", "assistant"]
        for t, _ in large:
            (tmp_path / f"save-{t}-2").write_text("1")  # their answers
        for t, reader in large:
            assert parse_sse(reader.result().decode())[0][-1]["type"] == "RUN_FINISHED"
            stored = httpx.get(f"{url}/threads/{t}/state").json()["messages"]
            assert [m["role"] for m in stored] == ["user", "assistant"]
