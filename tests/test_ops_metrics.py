"""Prometheus metrics (agui_bridge.ops.metrics) on `agui-bridge serve` with two
workers, PostgreSQL threads and Redis run logs: every scrape sees the whole node
(both workers' samples summed), with no thread or run id in any label."""

from __future__ import annotations

import threading
import time

import httpx
from agui_bridge.ops.metrics import FLUSH_EVERY
from prometheus_client.parser import text_string_to_metric_families

from tests.servers import serve_cli

AUTH = {"authorization": "Bearer ann"}


def _body(thread_id: str, text: str) -> dict:
    return {"threadId": thread_id, "runId": thread_id + "-r",
            "messages": [{"id": thread_id + "-m", "role": "user", "content": text}]}  # fmt: skip


def scrape(base: str) -> tuple[dict, str]:
    response = httpx.get(base + "/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for s in family.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            samples[key] = samples.get(key, 0) + s.value
    return samples, response.text


def total(samples: dict, name: str, **labels) -> float:
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= set(ls))


def test_one_scrape_sees_the_node(pg_url, redis_url, tmp_path):
    folder = tmp_path / "prom"
    env = {"OPS_METRICS": "1", "OPS_STORE": pg_url, "OPS_RUNS": redis_url,
           "PROMETHEUS_MULTIPROC_DIR": str(folder)}  # fmt: skip
    with serve_cli(env, target="tests.ops_apps:app", workers=2) as server:
        base = server.base_url
        workers = server.workers()
        threads = [f"mt{n}" for n in range(8)]
        for thread_id in threads:
            r = httpx.post(base + "/agui/talk", json=_body(thread_id, "a b c"), headers=AUTH)
            assert r.status_code == 200 and "RUN_FINISHED" in r.text
        boom = httpx.post(base + "/agui/talk", json=_body("mboom", "boom"), headers=AUTH)
        assert "RUN_ERROR" in boom.text
        ask = httpx.post(base + "/agui/talk", json=_body("mask", "ask"), headers=AUTH)
        assert '"interrupt"' in ask.text
        assert httpx.post(base + "/agui/talk", json=_body("x", "hi")).status_code == 401
        resumed = httpx.get(base + "/threads/mt0/runs/mt0-r/events",
                            headers={**AUTH, "last-event-id": "2"})  # fmt: skip
        assert resumed.headers["agui-resume"] == "exact"

        # A run going on: active, read by a second reader, then cancelled.
        lines: list[str] = []

        def slow():
            with httpx.stream("POST", base + "/agui/talk", json=_body("mslow", "slow 40"),
                              headers=AUTH, timeout=30) as response:  # fmt: skip
                lines.extend(response.iter_lines())

        reader = threading.Thread(target=slow)
        reader.start()
        deadline = time.monotonic() + 20
        while True:  # a worker's counts reach the others' scrapes within a second
            live, _ = scrape(base)
            if total(live, "agui_runs_active") and total(live, "agui_stream_readers_active"):
                break
            assert time.monotonic() < deadline, "the slow run and its reader never showed"
            time.sleep(0.2)
        cancel = httpx.post(base + "/threads/mslow/runs/mslow-r/cancel", headers=AUTH)
        assert cancel.status_code == 202
        reader.join(30)

        # Both workers wrote their counts; whichever answers, a scrape sums them.
        time.sleep(2 * FLUSH_EVERY + 0.5)
        files = {p.name for p in folder.iterdir()}
        assert {f"agui-{pid}.json" for pid in workers} <= files, files
        seen = []
        for _ in range(6):
            samples, text = scrape(base)
            seen.append(samples)
            for thread_id in [*threads, "mboom", "mask", "mslow"]:
                assert thread_id not in text  # no id is a label value
        for samples in seen:
            assert total(samples, "agui_runs_started_total", agent="talk") == 11
            assert total(samples, "agui_runs_ended_total", outcome="finished") == 8
            errors = total(samples, "agui_runs_ended_total", outcome="error", code="RuntimeError")
            assert errors == 1
            assert total(samples, "agui_runs_ended_total", outcome="interrupted") == 1
            assert total(samples, "agui_runs_ended_total", outcome="cancelled") == 1
            assert total(samples, "agui_runs_active") == 0
            assert total(samples, "agui_stream_readers_active") == 0
            assert total(samples, "agui_run_duration_seconds_count", agent="talk") == 11
            assert total(samples, "agui_run_first_event_seconds_count", agent="talk") == 11
            assert total(samples, "agui_run_events_total", agent="talk") > 11 * 4
            assert total(samples, "agui_run_cancels_total") == 1
            assert total(samples, "agui_stream_resumes_total", kind="exact") == 1
            assert total(samples, "agui_stream_reader_lag_events_count") >= 11
            assert total(samples, "agui_http_responses_total", route="/agui/talk",
                         method="POST", status="200") == 11  # fmt: skip
            assert total(samples, "agui_http_responses_total", status="401") == 1
            assert (
                total(
                    samples,
                    "agui_http_responses_total",
                    route="/threads/{thread_id:path}/runs/{run_id}/cancel",
                    status="202",
                )
                == 1
            )
            assert total(samples, "agui_http_response_bytes_total") > 0
            assert total(samples, "agui_store_operation_seconds_count", operation="save") >= 11
            assert total(samples, "agui_store_operation_seconds_count", operation="load") >= 11
            assert total(samples, "agui_redis_command_seconds_count", command="append") >= 11
            assert total(samples, "agui_store_errors_total") == 0
