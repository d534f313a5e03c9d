"""Faults on real granian servers: frozen and killed workers, SIGTERM, restarts.

Two servers on one SQLite file stand for two machines sharing a store.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui

from tests.ingress_apps import parse_sse, run_body
from tests.servers import (
    serve,
    serve_cli,
    server_process,
    spawn,
    worker_pids,
)

WORK = Path(tempfile.mkdtemp(prefix="agui-faults-"))
MARKS = WORK / "marks"
MARKS.mkdir()


def env_for(tmp_path, **extra) -> dict:
    return {
        "AGUI_TEST_STORE": f"sqlite:///{tmp_path}/threads.sqlite",
        "AGUI_TEST_MARKS": str(MARKS),
        "AGUI_TEST_KEEPALIVE": "0.3",
        **extra,
    }


def thread(name: str) -> str:
    return f"{name}-{time.monotonic_ns()}"


def wait_until(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def start_run(base_url: str, body: dict) -> threading.Thread:
    """POSTs a run in the background (its response, or its failure, is ignored)."""

    def post():
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(base_url + "/ag-ui/run", json=body, timeout=60)

    worker = threading.Thread(target=post, daemon=True)
    worker.start()
    return worker


def test_a_frozen_workers_lease_expires(tmp_path):
    """Item 9: while its run lives, a lease is renewed past its ttl; once its
    worker stops (alive but frozen, like a hung or partitioned machine), the
    thread takes runs on another server within about one ttl."""
    ttl = 1.5
    env = env_for(tmp_path, AGUI_TEST_LEASE_TTL=str(ttl))
    tid, run_id = thread("frozen"), f"frozen-{time.monotonic_ns()}"
    with (
        serve("tests.ingress_apps:app", env=env) as a,
        serve("tests.ingress_apps:app", env=env) as b,
    ):
        start_run(a, run_body(tid, "slow 200", run_id=run_id))
        assert wait_until((MARKS / f"started-{run_id}").exists, 10)
        time.sleep(ttl + 0.5)
        assert httpx.post(b + "/ag-ui/run", json=run_body(tid, "hi")).status_code == 409
        (worker,) = worker_pids(a)
        os.kill(worker, signal.SIGSTOP)
        try:
            frozen = time.monotonic()
            assert httpx.post(b + "/ag-ui/run", json=run_body(tid, "hi")).status_code == 409
            status = None
            while status != 200 and time.monotonic() - frozen < ttl + 8:
                time.sleep(0.1)
                status = httpx.post(b + "/ag-ui/run", json=run_body(tid, "hi")).status_code
            assert status == 200
            assert time.monotonic() - frozen < ttl + 3
        finally:
            os.kill(worker, signal.SIGCONT)


def test_sigkill_mid_run_keeps_the_users_turn(tmp_path):
    """Item 10: the user's message is stored when its run starts, so a worker
    killed mid-run loses only the answer; a reloading client sees the turn, and
    the thread takes a new run within one lease ttl."""
    ttl = 2.0
    env = env_for(tmp_path, AGUI_TEST_LEASE_TTL=str(ttl))
    tid, run_id = thread("killed"), f"killed-{time.monotonic_ns()}"
    turn = {"id": f"u-{run_id}", "role": "user", "content": "slow 200"}
    with serve("tests.ingress_apps:app", env=env) as a:
        start_run(a, run_body(tid, [turn], run_id=run_id))
        assert wait_until((MARKS / f"started-{run_id}").exists, 10)
        main = server_process(a)
        os.killpg(main.pid, signal.SIGKILL)
        main.wait(timeout=10)
        killed = time.monotonic()
    with serve("tests.ingress_apps:app", env=env) as b:
        state = httpx.get(f"{b}/threads/{tid}/state")
        assert state.status_code == 200, state.text
        assert state.json()["messages"] == [turn]
        status = None
        while status != 200 and time.monotonic() - killed < ttl + 15:
            response = httpx.post(b + "/ag-ui/run", json=run_body(tid, [turn, _next()]))
            status = response.status_code
            if status != 200:
                time.sleep(0.1)
        assert status == 200
        messages = httpx.get(f"{b}/threads/{tid}/state").json()["messages"]
        assert [m["role"] for m in messages] == ["user", "user", "assistant"]
        assert messages[0] == turn


def _next() -> dict:
    return {"id": f"u-next-{time.monotonic_ns()}", "role": "user", "content": "hi"}


def test_serve_respawns_a_killed_worker(tmp_path):
    """Item 12: under ``--workers 2`` a worker killed by the OOM killer (SIGKILL)
    is replaced; the server goes on serving."""
    with serve_cli(env_for(tmp_path), workers=2, stop_signal=signal.SIGKILL) as server:
        base_url, process = server.base_url, server.process
        first = server.workers()
        os.kill(first[0], signal.SIGKILL)
        assert wait_until(
            lambda: (now := server.workers()) and len(now) == 2 and first[0] not in now,
            20,
        ), server.log()
        assert process.poll() is None
        for _ in range(6):  # new connections reach either worker
            with httpx.Client(base_url=base_url, timeout=20) as http:
                response = http.post("/ag-ui/run", json=run_body(thread("respawn"), "hi"))
                assert response.status_code == 200


def test_sigterm_ends_long_runs_with_server_shutdown(tmp_path):
    """Item 11: runs longer than the drain time are ended by the server on
    SIGTERM: every stream gets its closers and RUN_ERROR (server_shutdown),
    every partial turn is stored, every lease released, and the server exits
    well before its kill timeout (30 s)."""
    drain = 1.0
    env = env_for(tmp_path, AGUI_TEST_DRAIN=str(drain), AGUI_TEST_LEASE_TTL="60")
    runs = [(thread(f"term{i}"), f"term{i}-{time.monotonic_ns()}") for i in range(4)]
    bodies: dict[str, bytes] = {}

    def read(tid, run_id):
        with (
            httpx.Client(base_url=base_url, timeout=60) as http,
            http.stream("POST", "/ag-ui/run", json=run_body(tid, "slow 600", run_id=run_id)) as r,
        ):
            bodies[run_id] = b"".join(r.iter_bytes())

    with serve_cli(env, workers=2, stop_signal=signal.SIGKILL) as server:
        base_url, process = server.base_url, server.process
        readers = [threading.Thread(target=read, args=run, daemon=True) for run in runs]
        for reader in readers:
            reader.start()
        for _, run_id in runs:
            started = wait_until((MARKS / f"started-{run_id}").exists, 20)
            # What the server said instead (a run that ended without starting has its body).
            assert started, f"{run_id}: {bodies.get(run_id)!r}\n{server.log()[-4000:]}"
        time.sleep(0.5)  # each has streamed some text
        process.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        process.wait(timeout=25)
        took = time.monotonic() - stopped
        for reader in readers:
            reader.join(10)
    assert took < drain + 10, took
    streamed = {}
    for _, run_id in runs:
        events, _ = parse_sse(bodies[run_id].decode())
        assert_valid_agui(events)
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "server_shutdown"
        assert events[-2] == {"type": "TEXT_MESSAGE_END", "messageId": events[-2]["messageId"]}
        streamed[run_id] = "".join(
            e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"
        )
    with serve_cli(env, stop_signal=signal.SIGKILL) as server:
        base_url = server.base_url
        for tid, run_id in runs:
            messages = httpx.get(f"{base_url}/threads/{tid}/state").json()["messages"]
            assert [m["role"] for m in messages] == ["user", "assistant"]
            assert messages[1]["content"] == streamed[run_id]  # the partial answer, as sent
            assert streamed[run_id].startswith("w0 w1 ")
            response = httpx.post(base_url + "/ag-ui/run", json=run_body(tid, "hi"))
            assert response.status_code == 200  # released: no wait for the 60 s ttl


@pytest.mark.parametrize("server", ["uvicorn", "granian-asgi", "granian-rsgi"])
def test_sigterm_ends_long_runs_on_every_server(tmp_path, server):
    """Item 11 on every server: the App chains onto the server's SIGTERM handling
    (ASGI lifespan startup, RSGI ``__rsgi_init__``), so uvicorn and granian's
    ASGI and RSGI end a long run the same way."""
    if server == "uvicorn":
        command = ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}"]
    else:
        interface = server.split("-")[1]
        command = ["-m", "granian", "--interface", interface, "--port", "{port}", "--no-ws"]
    env = env_for(tmp_path, AGUI_TEST_DRAIN="0.5")
    with spawn([sys.executable, *command, "tests.ingress_apps:app"], env) as running:
        base_url, process = running.base_url, running.process
        tid, run_id = thread("asgi-term"), f"asgi-term-{time.monotonic_ns()}"
        body = {}

        def read():
            with httpx.stream(
                "POST", base_url + "/ag-ui/run", json=run_body(tid, "slow 600", run_id=run_id)
            ) as response:
                body["raw"] = b"".join(response.iter_bytes())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert wait_until((MARKS / f"started-{run_id}").exists, 20)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
        reader.join(10)
        events, _ = parse_sse(body["raw"].decode())
        assert_valid_agui(events)
        assert events[-1]["code"] == "server_shutdown"


@pytest.mark.parametrize("server", ["serve", "uvicorn"])
def test_sigterm_drains_a_run_whose_client_left(tmp_path, server):
    """A run nobody reads any more (its client left; it goes on) still gets the
    drain: the server keeps serving it for ``drain_timeout``, then ends it with
    ``server_shutdown``, its partial answer stored. The server has no open
    connection, so it stops at once and asks the App to close: that close
    drains, never cancels the drain it began at SIGTERM."""
    env = env_for(tmp_path, AGUI_TEST_DRAIN="1.0", AGUI_TEST_LEASE_TTL="60")
    tid, run_id = thread("left"), f"left-{time.monotonic_ns()}"
    if server == "serve":
        running = serve_cli(env, stop_signal=signal.SIGKILL)
    else:
        command = ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}"]
        running = spawn([sys.executable, *command, "tests.ingress_apps:app"], env)
    with running as started:
        base_url, process = started.base_url, started.process
        with httpx.stream(
            "POST", base_url + "/ag-ui/run", json=run_body(tid, "slow 600", run_id=run_id)
        ) as response:
            for chunk in response.iter_bytes():
                if b"TEXT_MESSAGE_CONTENT" in chunk:
                    break  # the client leaves; the run goes on
        assert wait_until((MARKS / f"started-{run_id}").exists, 20)
        time.sleep(0.3)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
    with serve_cli(env, stop_signal=signal.SIGKILL) as again:
        messages = httpx.get(f"{again.base_url}/threads/{tid}/state").json()["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"], messages
        assert messages[1]["content"].startswith("w0 w1 ")


def test_sigterm_ends_an_idle_thread_event_stream():
    """langgraph-sdk's ``threads.stream()`` keeps ``POST /threads/{id}/stream/events``
    open between runs. A drain ends it (the client reconnects to a node still
    serving) rather than holding the worker until the server kills it."""
    with serve_cli({"OPS_OPEN": "1"}, target="tests.ops_apps:app") as server:
        base_url, process = server.base_url, server.process
        body = {"threadId": "ts", "runId": "ts-r",
                "messages": [{"id": "ts-m", "role": "user", "content": "hi"}]}  # fmt: skip
        assert httpx.post(base_url + "/agui/talk", json=body).status_code == 200
        read: dict = {}

        def follow():
            with httpx.stream(
                "POST", base_url + "/threads/ts/stream/events", json={"channels": ["values"]},
                timeout=60,
            ) as response:  # fmt: skip
                read["status"] = response.status_code
                try:
                    read["body"] = b"".join(response.iter_bytes())
                except httpx.HTTPError as error:  # cut off, not ended
                    read["error"] = error

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        assert wait_until(lambda: "status" in read, 10)
        time.sleep(0.5)
        process.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        process.wait(timeout=30)
        took = time.monotonic() - stopped
        reader.join(5)
    assert took < 10, f"the worker stopped after {took:.1f} s\n{server.log()[-2000:]}"
    assert read["status"] == 200 and "body" in read, read
