"""JSON logs (agui_bridge.ops.logs): `agui-bridge serve --log-format json` with two
workers writes one JSON object per line, a line per request and one per run end
with the ids, outcome, durations and bytes; no message content, no credential."""

from __future__ import annotations

import httpx
import orjson

from tests.ops_apps import SECRET_KEY
from tests.servers import serve_cli

TOKEN = "Bearer tok-7f3a9c-never-in-a-log"
CONTENT = "my private words 8d1e"


def _body(thread_id: str, text: str) -> dict:
    return {"threadId": thread_id, "runId": thread_id + "-r",
            "messages": [{"id": thread_id + "-m", "role": "user", "content": text}]}  # fmt: skip


def test_json_lines_with_ids_and_no_secrets(pg_url):
    env = {"OPS_STORE": pg_url}
    with serve_cli(env, "--log-format", "json", target="tests.ops_apps:app", workers=2) as server:
        base = server.base_url
        auth = {"authorization": TOKEN}
        run = httpx.post(base + "/agui/talk", json=_body("lt1", CONTENT), headers=auth)
        assert run.status_code == 200 and "RUN_FINISHED" in run.text
        boom = httpx.post(base + "/agui/talk", json=_body("lt2", "boom " + CONTENT), headers=auth)
        assert "RUN_ERROR" in boom.text
        wrong_key = httpx.post(base + "/agui/talk", json=_body("lt3", CONTENT),
                               headers={**auth, "x-api-key": "sk-wrong-" + SECRET_KEY})  # fmt: skip
        assert wrong_key.status_code == 401
        good_key = httpx.get(base + "/threads/lt1/state", headers={**auth, "x-api-key": SECRET_KEY})
        assert good_key.status_code == 200
        server.stop()
        text = server.log()

    records = []
    for line in text.splitlines():
        if line.strip():
            records.append(orjson.loads(line))  # every line is one JSON object
    assert all({"ts", "level", "logger", "message"} <= set(r) for r in records)

    posts = [r for r in records if r["logger"] == "agui_bridge.access" and r["method"] == "POST"]
    first = next(r for r in posts if r.get("thread_id") == "lt1")
    assert first["route"] == "/agui/talk" and first["status"] == 200 and first["stream"]
    assert first["run_id"] == "lt1-r" and first["agent_id"] == "talk"
    assert first["bytes"] == len(run.content) and first["duration_ms"] > 0
    assert any(r["status"] == 401 for r in posts)
    state = [r for r in records if r.get("route") == "/threads/{thread_id}/state"]
    assert state and state[0]["status"] == 200

    ends = {r["run_id"]: r for r in records if r.get("event") == "run_end"}
    assert ends["lt1-r"]["outcome"] == "finished" and ends["lt1-r"]["thread_id"] == "lt1"
    assert ends["lt1-r"]["agent_id"] == "talk" and ends["lt1-r"]["events"] >= 5
    assert ends["lt1-r"]["bytes"] > 0 and ends["lt1-r"]["duration_ms"] > 0
    assert ends["lt1-r"]["first_event_ms"] <= ends["lt1-r"]["duration_ms"]
    assert (ends["lt2-r"]["outcome"], ends["lt2-r"]["code"]) == ("error", "RuntimeError")

    for secret in (TOKEN, TOKEN.split()[1], SECRET_KEY, CONTENT):
        assert secret not in text, f"{secret!r} reached the log"


def test_a_request_that_reads_a_run_is_logged_with_its_ids():
    """The access line of every read of a run (its events, a retry replaying it,
    the Agent Protocol's join and stream) names the thread, run and agent, as a
    start's does; a thread's event stream names its thread."""
    env = {"OPS_OPEN": "1"}
    with serve_cli(env, "--log-format", "json", target="tests.ops_apps:app", workers=1) as server:
        base = server.base_url
        run = httpx.post(base + "/agui/talk", json=_body("lr1", "hi"))
        assert run.status_code == 200 and "RUN_FINISHED" in run.text
        reads = [
            ("GET", "/threads/lr1/runs/lr1-r/events", None),
            ("POST", "/agui/talk", _body("lr1", "hi")),  # a retry: the run's stream again
            ("GET", "/threads/lr1/runs/lr1-r/join", None),
            ("GET", "/threads/lr1/runs/lr1-r/stream", None),
        ]
        for method, path, body in reads:
            read = httpx.request(method, base + path, json=body, timeout=30)
            assert read.status_code == 200, (path, read.text)
        events = {"channels": ["lifecycle"]}
        with httpx.stream("POST", base + "/threads/lr1/stream/events", json=events) as stream:
            assert stream.status_code == 200
        server.stop()
        text = server.log()

    lines = [orjson.loads(line) for line in text.splitlines() if line.strip()]
    access = [r for r in lines if r["logger"] == "agui_bridge.access"]
    ids = {"thread_id": "lr1", "run_id": "lr1-r", "agent_id": "talk"}
    posts = [r for r in access if r["route"] == "/agui/talk"]
    assert len(posts) == 2 and all(ids.items() <= r.items() for r in posts), posts
    for route in ("/threads/{thread_id:path}/runs/{run_id}/events",
                  "/threads/{thread_id}/runs/{run_id}/join",
                  "/threads/{thread_id}/runs/{run_id}/stream"):  # fmt: skip
        line = next(r for r in access if r["route"] == route)
        assert line["status"] == 200 and ids.items() <= line.items(), line
    stream = next(r for r in access if r["route"] == "/threads/{thread_id}/stream/events")
    assert stream["thread_id"] == "lr1" and "run_id" not in stream, stream
