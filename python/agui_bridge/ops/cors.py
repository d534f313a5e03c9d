"""CORS: which browser origins may call the gateway, answered on every route.

``App(cors=...)`` takes a ``Cors`` or, for the defaults, what its ``origins``
takes: a list of origins (``"https://app.example"``; ``"*"`` for any), a
compiled regular expression (matched whole) or a function ``origin -> bool``.
Off by default: no CORS header is sent and a preflight is not answered.

With a policy, a preflight (``OPTIONS`` with ``Origin`` and
``Access-Control-Request-Method``) on any path is answered here, before
authentication (browsers send no credentials on it): 204 with the allowed
methods, headers and max age when the origin is allowed, else 403 with a JSON
error body and no CORS header. A request from an allowed origin gets
``Access-Control-Allow-Origin`` (its origin, never ``*`` when credentials
are allowed) and the exposed headers on every response, run streams
included; one from another origin gets none, so the browser keeps the answer
from the page.

``allows(origin)`` is the one rule: the ingress's check of a cross-site
request to a state-changing route asks it too (``cross_site_allowed``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import orjson

EXPOSE = ("agui-resume", "content-location", "location", "retry-after")
ALLOW_HEADERS = (
    "accept",
    "agui-protocol-version",  # a reader's declared AG-UI version (clients/js/reconnect.mjs)
    "authorization",
    "content-type",
    "last-event-id",
    "x-api-key",
    "x-request-id",
    "traceparent",
    "tracestate",
    "baggage",
)
METHODS = ("GET", "POST", "PATCH", "DELETE", "OPTIONS")


@dataclass(frozen=True)
class Cors:
    origins: Iterable[str] | re.Pattern | Callable[[str], bool] | str = ()
    credentials: bool = False
    allow_headers: Iterable[str] = ALLOW_HEADERS
    expose_headers: Iterable[str] = EXPOSE
    allow_methods: Iterable[str] = METHODS
    max_age: int = 600
    _rule: Callable[[str], bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        set_ = object.__setattr__
        origins = self.origins
        if isinstance(origins, str):
            origins = (origins,)
        if isinstance(origins, re.Pattern):
            pattern = origins
            rule = lambda o: pattern.fullmatch(o) is not None  # noqa: E731
        elif callable(origins):
            rule = origins
        else:
            allowed = frozenset(o.rstrip("/").lower() for o in origins)
            rule = _any if "*" in allowed else _lowered(allowed)
        set_(self, "_rule", rule)
        set_(self, "allow_headers", tuple(h.lower() for h in self.allow_headers))
        set_(self, "expose_headers", tuple(h.lower() for h in self.expose_headers))
        set_(self, "allow_methods", tuple(m.upper() for m in self.allow_methods))

    def allows(self, origin: str | None) -> bool:
        """Whether a page on ``origin`` may call the gateway."""
        if not origin or origin == "null":
            return False
        try:
            return bool(self._rule(origin))
        except Exception:
            return False

    def response_headers(self, origin: str) -> list[tuple[str, str]]:
        """What an allowed origin's actual (non-preflight) responses carry."""
        headers = [("access-control-allow-origin", origin), ("vary", "origin")]
        if self.credentials:
            headers.append(("access-control-allow-credentials", "true"))
        if self.expose_headers:
            headers.append(("access-control-expose-headers", ", ".join(self.expose_headers)))
        return headers

    def preflight(self, origin: str, method: str, requested: str | None):
        """(status, body, headers) of a preflight from ``origin`` for ``method``."""
        if not self.allows(origin):
            return _refused(f"origin {origin!r} is not allowed")
        if method.upper() not in self.allow_methods:
            return _refused(f"method {method!r} is not allowed")
        wanted = [h.strip().lower() for h in (requested or "").split(",") if h.strip()]
        extra = [h for h in wanted if h not in self.allow_headers]
        if extra:
            return _refused(f"header {extra[0]!r} is not allowed")
        headers = [
            ("access-control-allow-origin", origin),
            ("vary", "origin, access-control-request-method, access-control-request-headers"),
            ("access-control-allow-methods", ", ".join(self.allow_methods)),
            ("access-control-allow-headers", ", ".join(self.allow_headers)),
            ("access-control-max-age", str(self.max_age)),
        ]
        if self.credentials:
            headers.append(("access-control-allow-credentials", "true"))
        return 204, b"", headers


def _any(origin: str) -> bool:
    return True


def _lowered(allowed: frozenset):
    return lambda origin: origin.lower() in allowed


def _refused(message: str):
    body = orjson.dumps({"error": {"code": "cors_forbidden", "message": message}})
    return 403, body, [("content-type", "application/json"), ("vary", "origin")]


def cors_of(value) -> Cors | None:
    """``App(cors=...)``: None, a ``Cors``, or what ``Cors(origins=...)`` takes."""
    if value is None or value is False:
        return None
    if isinstance(value, Cors):
        return value
    return Cors(origins=value)


def cross_site_allowed(app, headers) -> bool:
    """Whether a request may change state given its ``Origin``: none sent (not a
    browser, or a same-origin GET), the gateway's own origin (its ``Host``, the
    ``X-Forwarded-Host`` a proxy passes on, or ``Sec-Fetch-Site: same-origin``),
    or one the CORS policy allows."""
    origin = headers.get("origin")
    if not origin:
        return True
    # The browser's own word (a page cannot set it), whatever a proxy did to Host.
    if headers.get("sec-fetch-site") == "same-origin":
        return True
    at = origin.split("://", 1)[-1].rstrip("/").lower()
    # Behind a proxy that rewrites Host, the host the browser used is forwarded;
    # a cross-site form cannot set either header.
    for name in ("host", "x-forwarded-host"):
        host = (headers.get(name) or "").split(",", 1)[0].strip().lower()
        if host and at == host:
            return True
    policy = getattr(getattr(app, "ops", None), "cors", None)
    return policy is not None and policy.allows(origin)
