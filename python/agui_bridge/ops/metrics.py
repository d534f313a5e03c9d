"""Prometheus metrics at ``GET /metrics`` (``App(metrics=True)``; the ``metrics`` extra).

One scrape sees the whole node. Each worker counts in plain dicts (a dict
update per sample: nothing on the hot path waits on a lock or a file) and,
under ``agui-bridge serve``, writes what it has counted to a file of its own
in ``PROMETHEUS_MULTIPROC_DIR`` once a second (``serve`` makes a fresh
directory unless you set one); whichever worker answers the scrape sums its
own counts and every other worker's file. Counters and histograms of a
worker that died stay in the sum; gauges count live workers only. In one
process (tests, uvicorn) the scrape is that process's counts.
(prometheus-client's own multiprocess mode writes every sample to a
memory-mapped file under a lock: about 10 µs a sample here, a fifth of a
short run's CPU; ``benches/metrics.py``.)

No label holds a thread, run or message id: agents, outcomes, error codes,
route patterns (``labels.route_label``), methods (``labels.method_label``),
statuses, operations, commands.
"""

from __future__ import annotations

import contextlib
import os
import threading
from bisect import bisect_left
from pathlib import Path

import orjson

from .labels import method_label

LATENCY = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
RUN_SECONDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)
FIRST_EVENT = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
HTTP_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0, 300.0)
READER_LAG = (0, 1, 4, 16, 64, 256, 1024, 4096, 16384, 65536)
FLUSH_EVERY = 1.0  # seconds between two writes of a worker's file

# name -> (kind, help, label names, buckets)
SERIES = {
    "agui_runs_started": ("counter", "Runs started.", ("agent",), None),
    "agui_runs_ended": ("counter", "Runs ended, by outcome (finished, interrupted, cancelled,"
                        " error, lost) and error code.", ("agent", "outcome", "code"), None),
    "agui_runs_active": ("gauge", "Runs going on.", ("agent",), None),
    "agui_run_duration_seconds": ("histogram", "From a run's start to its end.", ("agent",),
                                  RUN_SECONDS),
    "agui_run_first_event_seconds": ("histogram", "From a run's start to its first event after"
                                     " RUN_STARTED.", ("agent",), FIRST_EVENT),
    "agui_run_events": ("counter", "Events the runs produced.", ("agent",), None),
    "agui_run_cancels": ("counter", "Runs stopped by POST …/cancel.", (), None),
    "agui_lease_takeovers": ("counter", "Thread leases this node claimed from a holder that"
                             " neither renewed nor released them (a dead or stalled worker;"
                             " the run it held ends lost, counted in agui_runs_ended).", (),
                             None),
    "agui_stream_readers_active": ("gauge", "Open run streams (readers).", (), None),
    "agui_stream_reader_lag_events": ("histogram", "Events a reader is behind the run's newest"
                                      " when a write of the run's stream goes out.", (),
                                      READER_LAG),
    "agui_stream_resumes": ("counter", "Readers that resumed a run, by kind (exact, snapshot).",
                            ("kind",), None),
    "agui_http_responses": ("counter", "HTTP responses.", ("route", "method", "status"), None),
    "agui_http_response_bytes": ("counter", "Body bytes sent (streams included).", ("route",),
                                 None),
    "agui_http_request_duration_seconds": ("histogram", "From a request to the end of its"
                                           " response (a stream: its whole life).", ("route",),
                                           HTTP_SECONDS),
    "agui_store_operation_seconds": ("histogram", "Thread store calls.", ("operation",), LATENCY),
    "agui_store_errors": ("counter", "Thread store calls that failed.", ("operation",), None),
    "agui_redis_command_seconds": ("histogram", "Redis commands and scripts of the run logs.",
                                   ("command",), LATENCY),
    "agui_redis_errors": ("counter", "Redis commands that failed.", ("command",), None),
    "agui_limit_rejections": ("counter", "Requests refused (429) by a per-identity limit.",
                              ("limit",), None),
    "agui_threads_expired": ("counter", "Idle threads the thread TTL swept.", (), None),
    "agui_webhook_deliveries": ("counter", "Webhook deliveries, by outcome (delivered, failed:"
                                " every attempt failed).", ("outcome",), None),
    "agui_webhook_attempts_failed": ("counter", "Webhook calls that failed (each retry"
                                     " counts).", (), None),
}  # fmt: skip


class Counts:
    """This process's samples: ``values[name][labels] = number`` (histograms: a list of
    per-bucket counts, then the sum)."""

    def __init__(self):
        self.values: dict[str, dict[tuple, object]] = {name: {} for name in SERIES}
        self._bounds = {n: s[3] for n, s in SERIES.items() if s[3]}

    def add(self, name: str, labels: tuple, amount: float = 1.0) -> None:
        series = self.values[name]
        series[labels] = series.get(labels, 0.0) + amount

    def observe(self, name: str, labels: tuple, value: float) -> None:
        series = self.values[name]
        row = series.get(labels)
        bounds = self._bounds[name]
        if row is None:
            row = series[labels] = [0] * (len(bounds) + 2)
        row[bisect_left(bounds, value)] += 1  # past the last bound: the +Inf bucket
        row[-1] += value

    def dump(self) -> bytes:
        out = {}
        for name, series in self.values.items():
            if series:
                out[name] = [[list(k), v] for k, v in list(series.items())]
        return orjson.dumps(out)


_counts: Counts | None = None
_lock = threading.Lock()


def counts() -> Counts:
    """The process's counts (one per process, shared by its Apps), written to
    ``PROMETHEUS_MULTIPROC_DIR`` every ``FLUSH_EVERY`` seconds when it is set."""
    global _counts
    with _lock:
        if _counts is None:
            _counts = Counts()
            folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
            if folder:
                _Flusher(_counts, Path(folder)).start()
        return _counts


class _Flusher(threading.Thread):
    def __init__(self, c: Counts, folder: Path):
        super().__init__(name="agui-metrics-flush", daemon=True)
        self.counts = c
        self.folder = folder
        self.pid = os.getpid()

    def run(self) -> None:
        last = b""
        stop = threading.Event()
        while not stop.wait(FLUSH_EVERY):
            if os.getpid() != self.pid:
                return  # a forked child: not this worker's file
            data = self.counts.dump()
            if data != last:
                with contextlib.suppress(OSError):
                    write(self.folder, self.pid, data)
                last = data


def write(folder: Path, pid: int, data: bytes) -> None:
    tmp = folder / f".agui-{pid}.tmp"
    tmp.write_bytes(data)
    tmp.replace(folder / f"agui-{pid}.json")


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gathered(own: Counts) -> dict[str, dict[tuple, object]]:
    """This process's counts plus every other worker's file (gauges: live ones only)."""
    merged: dict[str, dict[tuple, object]] = {n: dict(s) for n, s in own.values.items()}
    for series in merged.values():
        for key, value in series.items():
            if isinstance(value, list):
                series[key] = list(value)
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not folder:
        return merged
    me = os.getpid()
    with contextlib.suppress(OSError):
        for entry in Path(folder).glob("agui-*.json"):
            pid = int(entry.stem.split("-", 1)[1])
            if pid == me:
                continue
            try:
                data = orjson.loads(entry.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                continue
            live = _alive(pid)
            for name, rows in data.items():
                spec = SERIES.get(name)
                if spec is None or (spec[0] == "gauge" and not live):
                    continue
                series = merged[name]
                for key, value in rows:
                    key = tuple(key)
                    held = series.get(key)
                    if isinstance(value, list):
                        if held is None:
                            series[key] = list(value)
                        else:
                            series[key] = [a + b for a, b in zip(held, value, strict=True)]
                    else:
                        series[key] = (held or 0.0) + value
    return merged


def exposition(values: dict[str, dict[tuple, object]]) -> bytes:
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
    )
    from prometheus_client.exposition import generate_latest

    families = []
    for name, (kind, doc, labels, bounds) in SERIES.items():
        series = values.get(name) or {}
        if kind == "counter":
            family = CounterMetricFamily(name, doc, labels=labels)
            for key, value in series.items():
                family.add_metric(list(key), value)
        elif kind == "gauge":
            family = GaugeMetricFamily(name, doc, labels=labels)
            for key, value in series.items():
                family.add_metric(list(key), value)
            if not labels and not series:
                family.add_metric([], 0.0)
        else:
            family = HistogramMetricFamily(name, doc, labels=labels)
            for key, row in series.items():
                cumulative, running = [], 0
                for bound, n in zip((*bounds, float("inf")), row[:-1], strict=True):
                    running += n
                    cumulative.append((_le(bound), running))
                family.add_metric(list(key), cumulative, row[-1])
        families.append(family)

    class _Collected:
        def collect(self):
            return families

    return generate_latest(_Collected())


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(float(bound))


class Metrics:
    """What the ops layer counts, and the scrape."""

    def __init__(self, path: str = "/metrics"):
        self.path = path
        self.c = counts()

    # -- requests --------------------------------------------------------------

    def request(self, req, duration: float) -> None:
        c = self.c
        route = req.route
        c.add("agui_http_responses", (route, method_label(req.method), str(req.status)))
        c.observe("agui_http_request_duration_seconds", (route,), duration)
        if req.sent:
            c.add("agui_http_response_bytes", (route,), req.sent)
        if req.streamed:
            c.add("agui_stream_readers_active", (), -1)
        if req.stopped:
            c.add("agui_run_cancels", ())

    def stream_started(self, req) -> None:
        self.c.add("agui_stream_readers_active", ())
        if req.resume:
            self.c.add("agui_stream_resumes", (req.resume,))

    def reader_lag(self, events: int) -> None:
        self.c.observe("agui_stream_reader_lag_events", (), events)

    def limited(self, code: str) -> None:
        self.c.add("agui_limit_rejections", (code,))

    def threads_expired(self, count: int) -> None:
        self.c.add("agui_threads_expired", (), count)

    # -- runs ------------------------------------------------------------------

    def run_started(self, agent_id: str) -> None:
        self.c.add("agui_runs_started", (agent_id,))
        self.c.add("agui_runs_active", (agent_id,))

    def run_ended(self, end) -> None:
        c = self.c
        agent = (end.run.agent.agent_id,)
        c.add("agui_runs_active", agent, -1)
        c.add("agui_runs_ended", (*agent, end.outcome, end.code))
        c.observe("agui_run_duration_seconds", agent, end.duration)
        first = end.first_event
        if first is not None:
            c.observe("agui_run_first_event_seconds", agent, first)
        c.add("agui_run_events", agent, end.run.t.last_id)

    def lease_taken_over(self) -> None:
        self.c.add("agui_lease_takeovers", ())

    def webhook(self, outcome: str) -> None:
        self.c.add("agui_webhook_deliveries", (outcome,))

    def webhook_attempt_failed(self) -> None:
        self.c.add("agui_webhook_attempts_failed", ())

    # -- parts -----------------------------------------------------------------

    def store_call(self, operation: str, seconds: float, failed: bool) -> None:
        self.c.observe("agui_store_operation_seconds", (operation,), seconds)
        if failed:
            self.c.add("agui_store_errors", (operation,))

    def redis_call(self, command: str, seconds: float, failed: bool) -> None:
        self.c.observe("agui_redis_command_seconds", (command,), seconds)
        if failed:
            self.c.add("agui_redis_errors", (command,))

    # -- the scrape ------------------------------------------------------------

    def scrape(self, accept: str | None = None) -> tuple[int, bytes, list]:
        from prometheus_client.exposition import CONTENT_TYPE_LATEST

        body = exposition(gathered(self.c))
        return 200, body, [("content-type", CONTENT_TYPE_LATEST), ("cache-control", "no-store")]


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
