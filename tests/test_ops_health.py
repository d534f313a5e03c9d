"""Health and readiness (agui_bridge.ops.health) on `agui-bridge serve` with two
workers, PostgreSQL threads and Redis run logs: /healthz, /readyz, 503 while the
store does not answer and from the moment a drain starts (--drain-delay)."""

from __future__ import annotations

import signal
import threading
import time

import httpx
import orjson

from tests.servers import serve_cli

TARGET = "tests.ops_apps:app"


def _run_body(thread_id: str, text: str, turn: str = "") -> dict:
    message = {"id": thread_id + "-m" + turn, "role": "user", "content": text}
    return {"threadId": thread_id, "runId": thread_id + "-r" + turn, "messages": [message]}


def _until(predicate, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("not within the time allowed")


def test_health_and_readiness_follow_the_store(pg_server, pg_url, redis_url):
    env = {"OPS_STORE": pg_url, "OPS_RUNS": redis_url}
    with serve_cli(env, target=TARGET, workers=2) as server:
        base = server.base_url
        # No credentials: the app's authenticate is not asked.
        assert httpx.post(base + "/agui/talk", json=_run_body("t0", "hi")).status_code == 401
        for _ in range(4):  # both workers, whichever answers
            live = httpx.get(base + "/healthz")
            ready = httpx.get(base + "/readyz")
            assert (live.status_code, live.json()) == (200, {"status": "ok"})
            assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
            assert b"talk" not in live.content + ready.content
        run = httpx.post(base + "/agui/talk", json=_run_body("t1", "hi"),
                         headers={"authorization": "Bearer ann"})  # fmt: skip
        assert run.status_code == 200 and "RUN_FINISHED" in run.text
        assert b"t1" not in httpx.get(base + "/readyz").content
        pg_server.halt()
        try:
            down = _until(lambda: (r := httpx.get(base + "/readyz", timeout=10)).status_code == 503
                          and r)  # fmt: skip
            assert down.json()["status"] == "unavailable"
            assert any(f.startswith("store") for f in down.json()["failed"])
            assert down.headers["retry-after"]
            # The loop still answers: alive, not ready.
            assert httpx.get(base + "/healthz").status_code == 200
        finally:
            pg_server.resume()
        _until(lambda: httpx.get(base + "/readyz", timeout=10).status_code == 200, 60)


def test_a_read_only_postgres_is_not_ready_and_runs_are_503(pg_server, pg_url):
    # A primary demoted by a failover answers reads and refuses writes: no run can
    # start there (its lease is a write), so the balancer must take the node out.
    with serve_cli({"OPS_STORE": pg_url, "OPS_OPEN": "1"}, target=TARGET, workers=1) as server:
        base = server.base_url
        assert httpx.post(base + "/agui/talk", json=_run_body("t1", "hi")).status_code == 200
        assert httpx.get(base + "/readyz").status_code == 200
        pg_server._sql("ALTER SYSTEM SET default_transaction_read_only = on")
        try:
            pg_server._sql("SELECT pg_reload_conf()")
            # The reload reaches the server's sessions within moments.
            down = _until(lambda: (r := httpx.get(base + "/readyz")).status_code == 503 and r, 10)
            assert down.json() == {"status": "unavailable", "failed": ["store: store_unavailable"]}
            assert down.headers["retry-after"]
            # A run is refused as in any store outage: 503 to retry, not a 500.
            for thread_id in ("t2", "t1"):  # a new thread, and one with a stored turn
                run = httpx.post(base + "/agui/talk", json=_run_body(thread_id, "again", "2"))
                assert run.status_code == 503, run.text
                assert run.json()["error"]["code"] == "store_unavailable"
                assert run.headers["retry-after"]
        finally:
            pg_server._sql("ALTER SYSTEM RESET default_transaction_read_only")
            pg_server._sql("SELECT pg_reload_conf()")
        _until(lambda: httpx.get(base + "/readyz").status_code == 200, 10)
        run = httpx.post(base + "/agui/talk", json=_run_body("t2", "again", "2"))
        assert run.status_code == 200 and "RUN_FINISHED" in run.text


def test_readyz_is_503_from_the_start_of_a_drain(tmp_path):
    with serve_cli({"OPS_OPEN": "1"}, "--drain-delay", "8", target=TARGET, workers=2) as server:
        base = server.base_url
        lines: list[str] = []

        def long_run():
            body = _run_body("slow", "slow 10")
            with httpx.stream("POST", base + "/agui/talk", json=body, timeout=30) as response:
                lines.extend(response.iter_lines())

        reader = threading.Thread(target=long_run)
        reader.start()
        _until(lambda: lines or httpx.get(base + "/readyz").status_code == 200)
        time.sleep(1.0)
        server.process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        seen = []
        while time.monotonic() - started < 5:
            try:
                seen.append(httpx.get(base + "/readyz", timeout=2))
            except httpx.TransportError:
                break
            time.sleep(0.1)
        # The signal reaches the workers within moments; from then on, 503 (and the
        # server still answers for the whole delay).
        assert len(seen) >= 2, "the server stopped answering before the drain delay"
        codes = [r.status_code for r in seen]
        assert 503 in codes and codes[codes.index(503) :] == [503] * (len(codes) - codes.index(503))
        assert all(r.json() == {"status": "draining"} for r in seen if r.status_code == 503)
        refused = httpx.post(base + "/agui/talk", json=_run_body("late", "hi"), timeout=5)
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "server_shutdown"
        assert httpx.get(base + "/healthz").status_code == 200
        reader.join(30)
        # The run that was going when the drain began finished whole.
        events = [orjson.loads(x[6:])["type"] for x in lines if x.startswith("data: ")]
        assert events[-1] == "RUN_FINISHED"
        assert events.count("TEXT_MESSAGE_CONTENT") == 10
