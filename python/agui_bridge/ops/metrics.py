"""Prometheus metrics at ``GET /metrics`` (``App(metrics=True)``; the ``metrics`` extra).

One scrape sees the whole node: ``agui-bridge serve`` runs granian's
workers with ``PROMETHEUS_MULTIPROC_DIR`` set (a fresh directory of its own
unless you set one), so each worker writes its samples to memory-mapped
files there and whichever worker answers the scrape sums them
(prometheus-client's multiprocess mode; the gauges count live workers only).
In a single process (tests, uvicorn) the samples are this process's.

No label holds a thread, run or message id: agents, outcomes, error codes,
route patterns (``labels.route_label``), statuses, operations. Counting is a
few increments per request and per run, none per event or per write.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

LATENCY = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
RUN_SECONDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)
FIRST_EVENT = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

_instruments = None


class Instruments:
    """The process's metric objects (one set per process, shared by its Apps)."""

    def __init__(self):
        import prometheus_client as pc

        self.pc = pc
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        self.registry = None if self.multiprocess else pc.CollectorRegistry()
        r = {"registry": self.registry}
        live = {"multiprocess_mode": "livesum"}
        C, G, H = pc.Counter, pc.Gauge, pc.Histogram
        self.runs_started = C("agui_runs_started", "Runs started.", ["agent"], **r)
        self.runs_ended = C(
            "agui_runs_ended", "Runs ended, by outcome (finished, interrupted, cancelled, error,"
            " lost) and error code.", ["agent", "outcome", "code"], **r)  # fmt: skip
        self.runs_active = G("agui_runs_active", "Runs going on.", ["agent"], **r, **live)
        self.run_seconds = H(
            "agui_run_duration_seconds", "From a run's start to its end.", ["agent"],
            buckets=RUN_SECONDS, **r)  # fmt: skip
        self.first_event = H(
            "agui_run_first_event_seconds", "From a run's start to its first event after"
            " RUN_STARTED.", ["agent"], buckets=FIRST_EVENT, **r)  # fmt: skip
        self.events = C("agui_run_events", "Events the runs produced.", ["agent"], **r)
        self.sent = C("agui_http_response_bytes", "Body bytes sent, streams included.",
                      ["route"], **r)  # fmt: skip
        self.readers = G("agui_stream_readers_active", "Open run streams (readers).", **r, **live)
        self.resumes = C("agui_stream_resumes", "Readers that resumed a run, by kind"
                         " (exact, snapshot).", ["kind"], **r)  # fmt: skip
        self.cancels = C("agui_run_cancels", "Cancels accepted (POST …/cancel).", **r)
        self.takeovers = C("agui_lease_takeovers", "Runs whose thread lease another node took"
                           " (the run was lost).", **r)  # fmt: skip
        self.store_seconds = H("agui_store_operation_seconds", "Thread store calls.",
                               ["operation"], buckets=LATENCY, **r)  # fmt: skip
        self.store_errors = C("agui_store_errors", "Thread store calls that failed.",
                              ["operation"], **r)  # fmt: skip
        self.redis_seconds = H("agui_redis_command_seconds", "Redis commands and scripts"
                               " of the run logs.", ["command"], buckets=LATENCY, **r)  # fmt: skip
        self.redis_errors = C("agui_redis_errors", "Redis commands that failed.", ["command"], **r)
        self.responses = C("agui_http_responses", "HTTP responses.",
                           ["route", "method", "status"], **r)  # fmt: skip
        self.request_seconds = H("agui_http_request_duration_seconds", "From a request to the"
                                 " end of its response (streams: the stream's life).",
                                 ["route"], **r)  # fmt: skip
        self.limited = C("agui_limit_rejections", "Requests refused (429) by a per-identity"
                         " limit.", ["limit"], **r)  # fmt: skip


def instruments() -> Instruments:
    global _instruments
    if _instruments is None:
        _instruments = Instruments()
    return _instruments


class Metrics:
    def __init__(self, path: str = "/metrics"):
        self.path = path
        self.m = instruments()

    # -- requests --------------------------------------------------------------

    def request(self, req, duration: float) -> None:
        m = self.m
        route = req.route
        m.responses.labels(route, req.method, str(req.status)).inc()
        m.request_seconds.labels(route).observe(duration)
        if req.sent:
            m.sent.labels(route).inc(req.sent)
        if req.streamed:
            m.readers.dec()
        if req.status == 202 and route.endswith("/cancel"):
            m.cancels.inc()

    def stream_started(self, req) -> None:
        self.m.readers.inc()
        if req.resume:
            self.m.resumes.labels(req.resume).inc()

    def limited(self, code: str) -> None:
        self.m.limited.labels(code).inc()

    # -- runs ------------------------------------------------------------------

    def run_started(self, agent_id: str) -> None:
        self.m.runs_started.labels(agent_id).inc()
        self.m.runs_active.labels(agent_id).inc()

    def run_ended(self, end) -> None:
        m = self.m
        agent = end.run.agent.agent_id
        m.runs_active.labels(agent).dec()
        m.runs_ended.labels(agent, end.outcome, end.code).inc()
        m.run_seconds.labels(agent).observe(end.duration)
        first = end.first_event
        if first is not None:
            m.first_event.labels(agent).observe(first)
        m.events.labels(agent).inc(end.run.t.last_id)
        if end.outcome == "lost":
            m.takeovers.inc()

    # -- parts -----------------------------------------------------------------

    def store_call(self, operation: str, seconds: float, failed: bool) -> None:
        self.m.store_seconds.labels(operation).observe(seconds)
        if failed:
            self.m.store_errors.labels(operation).inc()

    def redis_call(self, command: str, seconds: float, failed: bool) -> None:
        self.m.redis_seconds.labels(command).observe(seconds)
        if failed:
            self.m.redis_errors.labels(command).inc()

    # -- the scrape ------------------------------------------------------------

    def scrape(self, accept: str | None = None) -> tuple[int, bytes, list]:
        m = self.m
        pc = m.pc
        registry = m.registry
        if m.multiprocess:
            from prometheus_client import multiprocess

            _forget_dead_workers(multiprocess)
            registry = pc.CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
        body = pc.generate_latest(registry)
        return 200, body, [("content-type", pc.CONTENT_TYPE_LATEST), ("cache-control", "no-store")]


_LIVE = re.compile(r"^gauge_live\w*_(\d+)\.db$")


def _forget_dead_workers(multiprocess) -> None:
    """A worker that died (and was replaced) leaves its live gauges' files: dropped here."""
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not folder:
        return
    with contextlib.suppress(OSError):
        for entry in Path(folder).iterdir():
            found = _LIVE.match(entry.name)
            if found and not Path(f"/proc/{found.group(1)}").exists():
                multiprocess.mark_process_dead(int(found.group(1)), folder)


def metrics_of(value) -> Metrics | None:
    """``App(metrics=...)``: False (default), True (at ``/metrics``) or a path."""
    if value is None or value is False:
        return None
    path = "/metrics" if value is True else value
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError("metrics must be True, False or a path such as '/metrics'")
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        raise ImportError(
            "App(metrics=...) needs prometheus-client: pip install 'agui-bridge[metrics]'"
        ) from None
    return Metrics(path)
