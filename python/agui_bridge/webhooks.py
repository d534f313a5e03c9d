"""Webhooks: ``webhook`` on an Agent Protocol run create is called with the run
record once the run ends (LangGraph's and CopilotKit's convention).

``App(webhooks=Webhooks(hosts=[…], secret=…))`` says where a webhook may go:
none by default (a run asking for one is refused, 422), only to the hosts
listed (``"hooks.example.com"`` any port, ``"127.0.0.1:8080"`` that port),
over https unless ``http=True``. The call is a ``POST`` of the run (the
Agent Protocol's Run object, its final status included) as JSON, signed
when a ``secret`` is set: ``X-Agui-Signature: t=<unix seconds>,v1=<hex
HMAC-SHA256 of "<t>.<body>">``. A failed call (no connection, a timeout, a
5xx, 408 or 429) is retried ``retries`` times, waiting ``backoff`` seconds
and twice as long each time (at most ``max_backoff``); another 4xx is not
retried. Delivery runs in a task of its own after the run ended: it never
holds up or fails the run. With shared run logs, whichever node ends the run
delivers, once (``agent_protocol.hooks``). A worker that shuts down waits,
after its drain, up to ``SHUTDOWN_WAIT`` seconds for the deliveries under way
(``Delivery.settle``); with shared run logs one not made by then is owed again
(``Owed.give_back``), for another node to deliver. Deliveries are counted in the metrics
(``agui_webhook_deliveries{outcome}``, ``agui_webhook_attempts_failed``)
and a failure is logged (the host only: a webhook's path and query may
hold a token).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import orjson

from .errors import HttpError
from .tasks import wait_then_cancel

log = logging.getLogger("agui_bridge.webhooks")

MAX_URL = 2048
# Seconds a worker's shutdown waits, after its drain, for the webhook calls
# under way (retries included) before it closes (``Delivery.settle``).
SHUTDOWN_WAIT = 3.0
_RETRIED = {408, 429}


@dataclass(frozen=True)
class Webhooks:
    hosts: tuple[str, ...] = ()
    secret: str | bytes | None = None
    http: bool = False  # plain http allowed (a receiver on a private network)
    retries: int = 5
    backoff: float = 0.5
    max_backoff: float = 30.0
    timeout: float = 10.0

    def __post_init__(self):
        object.__setattr__(self, "hosts", tuple(h.lower() for h in self.hosts))
        if self.retries < 0 or self.backoff < 0 or self.timeout <= 0:
            raise ValueError("webhooks: retries and backoff >= 0, timeout > 0")

    def check(self, url) -> str:
        """The webhook URL a run asks for, if it may be called; else HttpError 422."""
        if not isinstance(url, str) or not url or len(url) > MAX_URL:
            raise _refused(f"'webhook' must be a URL of at most {MAX_URL} characters")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise _refused("'webhook' is not a URL") from None
        schemes = ("https", "http") if self.http else ("https",)
        if parts.scheme not in schemes:
            raise _refused(f"a webhook is called over {' or '.join(schemes)} only")
        host = (parts.hostname or "").lower()
        if not host or parts.username is not None or parts.password is not None:
            raise _refused("'webhook' must name a host (and no credentials)")
        port = port or (443 if parts.scheme == "https" else 80)
        if host not in self.hosts and f"{host}:{port}" not in self.hosts:
            raise _refused(
                f"webhooks may not go to {host}:{port}: App(webhooks=Webhooks(hosts=[...]))"
                " lists the hosts they may go to"
            )
        return url

    def signature(self, body: bytes, now: int) -> str | None:
        if self.secret is None:
            return None
        key = self.secret.encode() if isinstance(self.secret, str) else self.secret
        digest = hmac.new(key, b"%d." % now + body, hashlib.sha256).hexdigest()
        return f"t={now},v1={digest}"


def webhooks_of(value) -> Webhooks | None:
    """``App(webhooks=...)``: None (no webhooks), a ``Webhooks`` or a list of hosts."""
    if value is None or isinstance(value, Webhooks):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(h, str) for h in value):
        return Webhooks(hosts=tuple(value))
    raise ValueError("webhooks must be a Webhooks(...) or a list of hosts")


def _refused(message: str) -> HttpError:
    return HttpError(422, "invalid_webhook", message)


def refuse_all(url) -> None:
    """An App without ``webhooks``: every webhook is refused."""
    raise _refused(
        "webhooks are off: App(webhooks=Webhooks(hosts=[...])) lists the hosts they may go to"
    )


class Delivery:
    """The calls of one App's webhooks, each in a task of its own."""

    def __init__(self, config: Webhooks, metrics=None):
        self.config = config
        self.metrics = metrics
        # Each delivery under way, with its URL and payload (``settle``).
        self.tasks: dict[asyncio.Task, tuple[str, dict]] = {}

    def send(self, url: str, payload: dict) -> None:
        task = asyncio.ensure_future(self.deliver(url, payload))
        self.tasks[task] = (url, payload)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self.tasks.pop(task, None)

    async def settle(self, timeout: float = SHUTDOWN_WAIT) -> list[tuple[str, dict]]:
        """At shutdown: the deliveries under way (their retries included) are
        waited for, at most ``timeout`` seconds; those not made by then are
        cancelled and returned as ``(url, payload)`` (shared run logs: owed
        again, for another node to deliver)."""
        calls = dict(self.tasks)  # a task leaves it as it ends
        left = await wait_then_cancel(calls, timeout)
        undelivered = [calls[task] for task in left if task.cancelled()]
        for _, payload in undelivered:
            log.warning(
                "webhook for run %s not delivered within %.1f s of shutdown",
                payload.get("run_id"),
                timeout,
            )
        return undelivered

    async def deliver(self, url: str, payload: dict) -> bool:
        config = self.config
        body = orjson.dumps(payload)
        host = urlsplit(url).hostname
        delay = config.backoff
        for attempt in range(config.retries + 1):
            try:
                status = await asyncio.wait_for(self._post(url, body), config.timeout)
            except (OSError, TimeoutError, ValueError, ssl.SSLError) as error:
                status, why = None, f"{type(error).__name__}: {error}"
            else:
                why = f"status {status}"
            if status is not None and 200 <= status < 300:
                self._count("delivered")
                return True
            self._count_attempt()
            final = attempt == config.retries or (
                status is not None and 400 <= status < 500 and status not in _RETRIED
            )
            if final:
                log.error(
                    "webhook to %s for run %s failed after %d attempt(s): %s",
                    host,
                    payload.get("run_id"),
                    attempt + 1,
                    why,
                )
                self._count("failed")
                return False
            log.warning(
                "webhook to %s for run %s: attempt %d failed (%s); retrying in %.2f s",
                host,
                payload.get("run_id"),
                attempt + 1,
                why,
                delay,
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, config.max_backoff)
        return False

    async def _post(self, url: str, body: bytes) -> int:
        """One ``POST`` of ``body``; the response's status (HTTP/1.1, connection closed)."""
        parts = urlsplit(url)
        secure = parts.scheme == "https"
        port = parts.port or (443 if secure else 80)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        headers = [
            f"POST {target} HTTP/1.1",
            f"host: {parts.netloc}",
            "content-type: application/json",
            f"content-length: {len(body)}",
            "user-agent: agui-bridge-webhook",
            "connection: close",
        ]
        signature = self.config.signature(body, int(time.time()))
        if signature is not None:
            headers.append(f"x-agui-signature: {signature}")
        context = ssl.create_default_context() if secure else None
        reader, writer = await asyncio.open_connection(parts.hostname, port, ssl=context)
        try:
            writer.write(("\r\n".join(headers) + "\r\n\r\n").encode("latin-1") + body)
            await writer.drain()
            line = await reader.readline()
            fields = line.split()
            if len(fields) < 2 or not fields[0].startswith(b"HTTP/") or not fields[1].isdigit():
                raise ValueError(f"not an HTTP response: {line[:80]!r}")
            return int(fields[1])
        finally:
            writer.close()

    def _count(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.webhook(outcome)

    def _count_attempt(self) -> None:
        if self.metrics is not None:
            self.metrics.webhook_attempt_failed()
