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
