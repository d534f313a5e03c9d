"""OpenTelemetry traces (agui_bridge.ops.tracing) from `agui-bridge serve` with two
workers, PostgreSQL threads and Redis run logs, exported over OTLP/HTTP (the
standard OTEL_* variables) to a receiver this test runs, which decodes the
protobuf: the request's SERVER span continues the caller's traceparent, the run,
agent, store and Redis append spans hang under it."""

from __future__ import annotations

import contextlib
import http.server
import signal
import threading
import time

import httpx
import pytest

from tests.servers import free_port, serve_cli

trace_service_pb2 = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
RESOURCE = "service.name=agui-test,deployment.environment.name=ci"


@contextlib.contextmanager
def otlp_receiver():
    """An OTLP/HTTP trace receiver on 127.0.0.1: yields (endpoint, spans), spans a
    list of (resource attributes, span) as they arrive."""
    spans: list = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["content-length"]))
            request = trace_service_pb2.ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_spans:
                attributes = {a.key: a.value.string_value for a in resource.resource.attributes}
                for scope in resource.scope_spans:
                    spans.extend((attributes, span) for span in scope.spans)
            reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", spans
    finally:
        server.shutdown()
        server.server_close()


def _attrs(span) -> dict:
    out = {}
    for a in span.attributes:
        value = a.value
        out[a.key] = value.int_value if value.HasField("int_value") else value.string_value
    return out


def test_spans_continue_the_callers_trace(pg_url, redis_url):
    with otlp_receiver() as (endpoint, spans):
        env = {"OPS_STORE": pg_url, "OPS_RUNS": redis_url, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
               "OTEL_BSP_SCHEDULE_DELAY": "200",
               # The operator's resource, its service name included, is what spans carry.
               "OTEL_RESOURCE_ATTRIBUTES": RESOURCE}  # fmt: skip
        with serve_cli(env, target="tests.ops_apps:app", workers=2) as server:
            body = {"threadId": "tr1", "runId": "tr1-r",
                    "messages": [{"id": "tr1-m", "role": "user", "content": "a b"}]}  # fmt: skip
            headers = {"authorization": "Bearer ann",
                       "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}  # fmt: skip
            run = httpx.post(server.base_url + "/agui/talk", json=body, headers=headers)
            assert run.status_code == 200 and "RUN_FINISHED" in run.text
            # Without a traceparent: a trace of its own.
            httpx.get(
                server.base_url + "/threads/tr1/state", headers={"authorization": "Bearer ann"}
            )
            deadline = time.monotonic() + 20
            names = set()
            while not {"agui.run", "agui.agent", "agui.store.save", "agui.redis.append",
                       "GET /threads/{thread_id}/state"} <= names:  # fmt: skip
                assert time.monotonic() < deadline, f"spans seen: {sorted(names)}"
                time.sleep(0.2)
                names = {s.name for _, s in spans}

    by_name: dict = {}
    for resource, span in spans:
        assert resource["service.name"] == "agui-test"
        assert resource["deployment.environment.name"] == "ci"
        by_name.setdefault(span.name, []).append(span)
    ours = [s for _, s in spans if s.trace_id.hex() == TRACE_ID]
    server_span = next(s for s in ours if s.name == "POST /agui/talk")
    assert server_span.kind == server_span.SPAN_KIND_SERVER
    assert server_span.parent_span_id.hex() == PARENT_ID
    assert _attrs(server_span)["http.response.status_code"] == 200
    run_span = next(s for s in ours if s.name == "agui.run")
    assert run_span.parent_span_id == server_span.span_id
    assert _attrs(run_span) == {"agui.agent_id": "talk", "agui.thread_id": "tr1",
                                "agui.run_id": "tr1-r", "agui.outcome": "finished"}  # fmt: skip
    agent_span = next(s for s in ours if s.name == "agui.agent")
    assert agent_span.parent_span_id == run_span.span_id
    loads = [s for s in ours if s.name == "agui.store.load"]
    assert loads and all(s.parent_span_id == server_span.span_id for s in loads)
    saves = [s for s in ours if s.name == "agui.store.save"]
    # The user's turn (in the request) and the answer (in the run).
    assert {s.parent_span_id for s in saves} == {server_span.span_id, run_span.span_id}
    appends = [s for s in ours if s.name == "agui.redis.append"]
    # The run gate appends RUN_STARTED (and publishes the log) in the request,
    # before the run's task starts; everything the run appends is under its span.
    parents = [s.parent_span_id for s in appends]
    assert run_span.span_id in parents
    assert set(parents) <= {server_span.span_id, run_span.span_id}
    assert run_span.start_time_unix_nano >= server_span.start_time_unix_nano
    state = by_name["GET /threads/{thread_id}/state"][0]
    assert state.trace_id.hex() != TRACE_ID and not state.parent_span_id


def test_a_stopping_worker_exports_the_spans_it_holds():
    """The batch processor holds spans for up to its delay (5 s by default): a
    worker stopping right after a run still exports them (the SDK's own exit
    hook does not run in a server's worker process)."""
    with otlp_receiver() as (endpoint, spans):
        env = {"OPS_OPEN": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
               "OTEL_BSP_SCHEDULE_DELAY": "60000"}  # fmt: skip
        with serve_cli(env, target="tests.ops_apps:app", workers=1) as server:
            body = {"threadId": "tq", "runId": "tq-r",
                    "messages": [{"id": "tq-m", "role": "user", "content": "hi"}]}  # fmt: skip
            run = httpx.post(server.base_url + "/agui/talk", json=body)
            assert run.status_code == 200 and "RUN_FINISHED" in run.text
            server.process.send_signal(signal.SIGTERM)
            server.process.wait(timeout=20)
        deadline = time.monotonic() + 5
        while not {"POST /agui/talk", "agui.run"} <= {s.name for _, s in spans}:
            assert time.monotonic() < deadline, f"spans seen: {sorted(s.name for _, s in spans)}"
            time.sleep(0.1)
