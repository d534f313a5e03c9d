"""The ops layer's parts on their own: CORS policies, route labels, health paths."""

from __future__ import annotations

import asyncio

import httpx
from agui_bridge import App


def test_cors_is_off_by_default():
    async def go():
        app = App(store="memory://")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            r = await client.options("/ag-ui/run", headers={
                "origin": "http://a.example", "access-control-request-method": "POST"})  # fmt: skip
            assert not [h for h in r.headers if h.startswith("access-control-")]

    asyncio.run(go())


def test_cors_origin_forms():
    import re

    from agui_bridge.ops import Cors, cross_site_allowed

    assert Cors(origins=["https://a.example"]).allows("https://a.example")
    assert not Cors(origins=["https://a.example"]).allows("https://b.example")
    rule = Cors(origins=re.compile(r"https://[a-z]+\.example\.com"))
    assert rule.allows("https://app.example.com") and not rule.allows("https://x.example.com.evil")
    assert Cors(origins=lambda o: o.endswith(".test")).allows("http://a.test")
    assert not Cors(origins="*").allows("null")
    creds = Cors(origins=["https://a.example"], credentials=True)
    assert ("access-control-allow-credentials", "true") in creds.response_headers(
        "https://a.example"
    )

    class Fake:
        class ops:
            cors = Cors(origins=["https://a.example"])

    assert cross_site_allowed(Fake, {"origin": "https://a.example"})
    assert cross_site_allowed(Fake, {"origin": "http://gw:8000", "host": "gw:8000"})
    assert cross_site_allowed(Fake, {})
    assert not cross_site_allowed(Fake, {"origin": "https://evil.example"})


def test_health_paths_are_configurable():
    app = App(store="memory://", health={"live": "/live", "ready": "/ready"})

    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            assert (await client.get("/live")).status_code == 200
            assert (await client.get("/ready")).json() == {"status": "ready"}
            assert (await client.get("/healthz")).status_code == 404
            off = App(store="memory://", health=False)
            other = httpx.AsyncClient(transport=httpx.ASGITransport(app=off), base_url="http://t")
            async with other:
                assert (await other.get("/readyz")).status_code == 404

    asyncio.run(go())


def test_route_labels_hold_no_ids():
    from agui_bridge.ops.labels import route_label

    app = App(store="memory://")

    @app.agent("a b")
    async def agent(ctx):
        yield {"type": "text:delta", "delta": "x"}

    cases = {
        "/ag-ui/run": "/ag-ui/run",
        "/agui/a b": "/agui/a b",
        "/agui/a b/capabilities": "/agui/a b/capabilities",
        "/agui/unknown": "other",
        "/threads": "/threads",
        "/threads/search": "/threads/search",
        "/threads/t-123": "/threads/{thread_id}",
        "/threads/t-123/state": "/threads/{thread_id}/state",
        "/threads/t-123/runs/r-9/events": "/threads/{thread_id:path}/runs/{run_id}/events",
        "/threads/t-123/runs/r-9/cancel": "/threads/{thread_id:path}/runs/{run_id}/cancel",
        "/threads/t-123/runs/wait": "/threads/{thread_id}/runs/wait",
        "/runs/stream": "/runs/stream",
        "/assistants/a": "/assistants/{assistant_id}",
        "/threads/a/b/state": "/threads/{thread_id:path}/state",
        "/agents": "/agents",
        "/wp-admin/x/y": "other",
    }
    assert {path: route_label(app, path) for path in cases} == cases


def test_histogram_buckets_are_cumulative_and_inclusive():
    from agui_bridge.ops.metrics import Counts, exposition
    from prometheus_client.parser import text_string_to_metric_families

    counts = Counts()
    for value in (0.01, 0.05, 0.06, 1000.0):
        counts.observe("agui_run_duration_seconds", ("a",), value)
    counts.add("agui_threads_expired", (), 3)
    text = exposition(counts.values).decode()
    samples = {
        (s.name, s.labels.get("le")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("agui_run_duration_seconds_bucket", "0.05")] == 2  # le is inclusive
    assert samples[("agui_run_duration_seconds_bucket", "0.1")] == 3
    assert samples[("agui_run_duration_seconds_bucket", "900.0")] == 3
    assert samples[("agui_run_duration_seconds_bucket", "+Inf")] == 4
    assert samples[("agui_run_duration_seconds_count", None)] == 4
    assert samples[("agui_threads_expired_total", None)] == 3


def test_a_lease_taken_from_a_dead_worker_is_counted_where_it_went(tmp_path):
    """The node that takes an unreleased, expired lease counts it: the one that
    lost it may be dead (it was counted only there, as its run ended lost)."""
    from agui_bridge.store import SqliteStore
    from prometheus_client.parser import text_string_to_metric_families

    path = str(tmp_path / "threads.sqlite")

    async def go():
        dead = SqliteStore(path)  # a worker that claimed "t", then died
        assert await dead.claim("t", 0.2) is not None
        await dead.close()
        await asyncio.sleep(0.3)
        app = App(store=f"sqlite:///{path}", metrics=True)

        @app.agent("talk")
        async def talk(ctx):
            yield {"type": "text:delta", "delta": "x"}

        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
        async with http:
            for thread_id in ("t", "u"):  # "u" was never held: no takeover
                message = {"id": "m-" + thread_id, "role": "user", "content": "hi"}
                body = {"threadId": thread_id, "runId": "r-" + thread_id, "messages": [message]}
                assert (await http.post("/agui/talk", json=body)).status_code == 200
            text = (await http.get("/metrics")).text
        await app.aclose()
        return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}

    assert asyncio.run(go())["agui_lease_takeovers_total"] == 1


def test_a_method_http_does_not_define_is_counted_as_other():
    """Any client can send any method: each made-up one must not become a
    metric series of its own (the scrape and the flush grow with them)."""
    from prometheus_client.parser import text_string_to_metric_families

    async def go():
        app = App(store="memory://", metrics=True)
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
        async with http:
            for n in range(40):
                assert (await http.request(f"M{n:05d}", "/nowhere")).status_code in (404, 405)
            assert (await http.get("/nowhere")).status_code == 404
            text = (await http.get("/metrics")).text
        await app.aclose()
        return [
            s
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "agui_http_responses_total"
        ]

    samples = asyncio.run(go())
    by_method: dict = {}
    for sample in samples:
        method = sample.labels["method"]
        by_method[method] = by_method.get(method, 0) + sample.value
    # (The counts are the process's: other tests' requests may be in them.)
    assert by_method["_OTHER"] == 40 and by_method["GET"] >= 1
    assert set(by_method) <= {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "_OTHER"}


def test_responses_vary_by_origin_whenever_cors_is_on():
    # A response cached from a request without Origin must not be handed to a
    # page of an allowed origin as if it held no CORS headers.
    async def go():
        app = App(store="memory://", cors=["https://a.example"])
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            plain = await client.get("/agents")
            allowed = await client.get("/agents", headers={"origin": "https://a.example"})
            other = await client.get("/agents", headers={"origin": "https://b.example"})
        assert plain.status_code == 200 and "access-control-allow-origin" not in plain.headers
        for response in (plain, allowed, other):
            assert "origin" in response.headers.get("vary", "").lower()

    asyncio.run(go())


def test_a_path_cannot_forge_an_access_line(caplog):
    import logging

    async def go():
        app = App(store="memory://")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            await client.get("/nope%0A[INFO] agui_bridge.access: POST /agui/talk 200")

    with caplog.at_level(logging.INFO, logger="agui_bridge.access"):
        asyncio.run(go())
    lines = [r.getMessage() for r in caplog.records if r.name == "agui_bridge.access"]
    assert lines and all("\n" not in line for line in lines)
    assert any("/nope\\x0a[INFO]" in line for line in lines)
    # The JSON fields keep the path as it was (JSON escapes it).
    record = next(r for r in caplog.records if r.name == "agui_bridge.access")
    assert record.agui["path"].startswith("/nope\n[INFO]")


def test_the_trace_resource_is_the_operators(monkeypatch):
    from agui_bridge.ops.tracing import resource

    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    assert resource().attributes["service.name"] == "agui-bridge"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=checkout,team=ai")
    attributes = resource().attributes
    assert (attributes["service.name"], attributes["team"]) == ("checkout", "ai")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "gateway")
    assert resource().attributes["service.name"] == "gateway"


def test_preflights_are_counted_as_requests():
    """An operator sees a browser's preflights (and the ones refused) in the
    response counts, as every other request."""
    from prometheus_client.parser import text_string_to_metric_families

    async def go():
        app = App(store="memory://", metrics=True, cors=["https://a.example"])
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
        async with http:
            for origin, status in (("https://a.example", 204), ("https://b.example", 403)):
                asked = await http.options("/agents", headers={
                    "origin": origin, "access-control-request-method": "GET"})  # fmt: skip
                assert asked.status_code == status
            text = (await http.get("/metrics")).text
        await app.aclose()
        return {
            (s.labels["method"], s.labels["status"]): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "agui_http_responses_total"
        }

    counted = asyncio.run(go())
    assert counted[("OPTIONS", "204")] == 1 and counted[("OPTIONS", "403")] == 1


def test_a_cancel_of_a_run_already_ended_is_not_counted():
    """The LangGraph SDKs get 202 for a cancel that raced the run's end (as
    LangGraph answers it), but nothing was stopped: no cancel is counted."""
    from agui_bridge import crumbs
    from prometheus_client.parser import text_string_to_metric_families

    async def go():
        app = App(store="memory://", metrics=True)

        @app.agent("talk")
        async def talk(ctx):
            yield crumbs.text_delta("hi")

        body = {"threadId": "t1", "runId": "r1", "messages": [
            {"id": "m1", "role": "user", "content": "hello"}]}  # fmt: skip
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
        async with http:
            assert "RUN_FINISHED" in (await http.post("/agui/talk", json=body)).text
            late = await http.post("/threads/t1/runs/r1/cancel?wait=0&action=interrupt")
            assert late.status_code == 202 and late.json()["status"] != "cancelled"
            text = (await http.get("/metrics")).text
        await app.aclose()
        return sum(
            s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "agui_run_cancels_total"
        )

    assert asyncio.run(go()) == 0
