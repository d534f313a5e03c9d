"""Logs: one line per request and one per run end, as text or JSON.

``agui-bridge serve --log-format json`` (or ``configure("json")`` in your own
process) writes every record of the package, the server's included, as one
JSON object per line: ``ts``, ``level``, ``logger``, ``message`` and the
record's fields. A request line (logger ``agui_bridge.access``) has the
method, the route pattern, the path, status, duration, bytes sent and, when
the request started or read a run, its thread, run and agent ids; a run-end
line (``agui_bridge.runs``) has the ids, outcome, error code, duration, time
to first event, events and bytes. No message content is ever logged, nor any
header: the ``authorization`` header, cookies and API keys never reach a log.
"""

from __future__ import annotations

import datetime as dt
import logging
import sys
from dataclasses import dataclass

import orjson

access_log = logging.getLogger("agui_bridge.access")
run_log = logging.getLogger("agui_bridge.runs")

# Attributes every LogRecord has: the rest are the fields a call passed in ``extra``.
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


@dataclass
class RunEnd:
    run: object
    outcome: str
    code: str
    at: float

    @property
    def duration(self) -> float:
        return self.at - self.run.ops_started

    @property
    def first_event(self) -> float | None:
        first = getattr(self.run, "first_at", None)
        return None if first is None else first - self.run.ops_started

    def fields(self) -> dict:
        run = self.run
        ctx = run.ctx
        fields = {
            "thread_id": ctx.thread_id,
            "run_id": ctx.run_id,
            "agent_id": run.agent.agent_id,
            "outcome": self.outcome,
            "duration_ms": round(self.duration * 1000, 3),
            "events": run.t.last_id,
            "bytes": getattr(run, "bytes_out", 0),
        }
        if self.code:
            fields["code"] = self.code
        first = self.first_event
        if first is not None:
            fields["first_event_ms"] = round(first * 1000, 3)
        return fields


# What a client-chosen string (a path, an id) shows in a text line: its line
# breaks and other control characters escaped, so it cannot start a forged line.
_ESCAPED = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, 0x85)} | {
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def _shown(text) -> str:
    return str(text).translate(_ESCAPED)


def log_request(req, duration: float) -> None:
    if not access_log.isEnabledFor(logging.INFO):
        return
    fields = {
        "method": req.method,
        "route": req.route,
        "path": req.path,
        "status": req.status,
        "duration_ms": round(duration * 1000, 3),
        "bytes": req.sent,
    }
    if req.streamed:
        fields["stream"] = True
    if req.resume:
        fields["resume"] = req.resume
    for name in ("thread_id", "run_id", "agent_id"):
        value = getattr(req, name)
        if value is not None:
            fields[name] = value
    access_log.info(
        "%s %s %d %.1f ms %d B",
        req.method, _shown(req.path), req.status, duration * 1000, req.sent,
        extra={"agui": fields},
    )  # fmt: skip


def log_run_end(end: RunEnd) -> None:
    if not run_log.isEnabledFor(logging.INFO):
        return
    fields = end.fields()
    run_log.info(
        "run %s of thread %s (agent %s) ended: %s%s in %.1f ms",
        _shown(fields["run_id"]), _shown(fields["thread_id"]), fields["agent_id"], end.outcome,
        f" ({_shown(end.code)})" if end.code else "", fields["duration_ms"],
        extra={"agui": {"event": "run_end", **fields}},
    )  # fmt: skip


class JsonFormatter(logging.Formatter):
    """One JSON object per record; the ``agui`` fields at the top level."""

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "agui", None)
        if isinstance(fields, dict):
            out.update(fields)
        for key, value in record.__dict__.items():
            if key not in _STANDARD and key != "agui" and not key.startswith("_"):
                out.setdefault(key, value)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(out, default=str).decode()


def dictconfig(fmt: str, level: str = "info") -> dict:
    """A ``logging.config.dictConfig`` for the server and the package: ``text`` or ``json``."""
    formatter = (
        {"()": f"{__name__}.JsonFormatter"}
        if fmt == "json"
        else {"format": "[%(levelname)s] %(name)s: %(message)s"}
    )
    handler = {"class": "logging.StreamHandler", "formatter": "main", "stream": "ext://sys.stderr"}
    level = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"main": formatter},
        "handlers": {"console": handler},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "_granian": {"handlers": ["console"], "level": level, "propagate": False},
            "granian.access": {"handlers": ["console"], "level": level, "propagate": False},
            "agui_bridge": {"handlers": ["console"], "level": level, "propagate": False},
        },
    }


def configure(fmt: str = "json", level: str = "info") -> None:
    """Sets up this process's logging (``--log-format``) outside ``agui-bridge serve``."""
    import logging.config

    if fmt not in ("text", "json"):
        raise ValueError("the log format is 'text' or 'json'")
    logging.config.dictConfig(dictconfig(fmt, level))
    sys.stderr.flush()
