"""The app's one route table: ``(methods, pattern) → endpoint``.

Every route of the app is a row here: both protocols (AG-UI, the Agent
Protocol) register theirs when the App is made, an agent's run paths when it
is registered, and anything else the app serves (health, metrics, …) the
same way::

    app.routes.add("GET", "/healthz", endpoint)
    async def endpoint(conn, **params): ...   # params: the pattern's {names}

A request is matched once (starlette's rule): the first row whose pattern
and method match serves it; a path that rows match only with other methods
gets one 405 whose ``Allow`` lists them all; no row: 404. Nothing falls
through from one protocol to the other. A literal path (no ``{…}``) is found
by a dict look-up before the patterns are tried, so an agent's run path (the
hot route) costs one look-up, and wins over a pattern registered earlier.

A pattern's ``{name}`` matches one non-empty path segment (no ``/``);
``{name:path}`` matches one or more segments.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable

from ..errors import HttpError

Endpoint = Callable[..., Awaitable[None]]

_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(:path)?\}")


class Route:
    __slots__ = ("endpoint", "methods", "pattern", "regex")

    def __init__(self, methods: frozenset[str], pattern: str, endpoint: Endpoint, regex):
        self.methods = methods
        self.pattern = pattern
        self.endpoint = endpoint
        self.regex = regex


def _compile(pattern: str) -> re.Pattern | None:
    """The pattern's regex; None for a literal path."""
    if not pattern.startswith("/"):
        raise ValueError(f"a route pattern starts with '/': {pattern!r}")
    out, end = [], 0
    for found in _PARAM.finditer(pattern):
        out.append(re.escape(pattern[end : found.start()]))
        segment = ".+" if found.group(2) else "[^/]+"
        out.append(f"(?P<{found.group(1)}>{segment})")
        end = found.end()
    if not out:
        if "{" in pattern or "}" in pattern:
            raise ValueError(f"a route parameter is {{name}} or {{name:path}}: {pattern!r}")
        return None
    out.append(re.escape(pattern[end:]))
    return re.compile("".join(out))


class Routes:
    """The table; ``add`` a row, ``match`` a request."""

    def __init__(self) -> None:
        self._literal: dict[str, list[Route]] = {}
        self._patterns: list[Route] = []

    def add(
        self, methods: str | Iterable[str], pattern: str, endpoint: Endpoint, *, literal=False
    ) -> None:
        """Serves ``methods`` on ``pattern`` with ``endpoint(conn, **params)``.

        ``literal=True`` takes ``pattern`` as an exact path whatever it holds
        (an agent's path is the user's). A row for a method the table already
        serves on the same pattern is refused: it would never be reached.
        """
        methods = frozenset([methods] if isinstance(methods, str) else methods)
        if not methods or not all(m and m == m.upper() for m in methods):
            raise ValueError(f"methods are upper-case names: {sorted(methods)!r}")
        regex = None if literal else _compile(pattern)
        if regex is None and not pattern.startswith("/"):
            raise ValueError(f"a route path starts with '/': {pattern!r}")
        rows = self._literal.get(pattern, []) if regex is None else self._patterns
        for row in rows:
            if row.pattern == pattern and row.methods & methods:
                taken = ", ".join(sorted(row.methods & methods))
                raise ValueError(f"{taken} {pattern!r} is already routed")
        route = Route(methods, pattern, endpoint, regex)
        if regex is None:
            self._literal.setdefault(pattern, []).append(route)
        else:
            self._patterns.append(route)

    def has(self, path: str) -> bool:
        """Whether a literal row holds ``path`` (for a check before registering)."""
        return path in self._literal

    def pattern_of(self, path: str) -> str | None:
        """The pattern of the first row matching ``path`` whatever the method
        (what a request is counted and traced under), None when no row does."""
        if path in self._literal:
            return path
        for route in self._patterns:
            if route.regex.fullmatch(path) is not None:
                return route.pattern
        return None

    def remove(self, pattern: str) -> None:
        """Drops every row of ``pattern`` (an agent whose registration failed)."""
        self._literal.pop(pattern, None)
        self._patterns = [r for r in self._patterns if r.pattern != pattern]

    def match(self, method: str, path: str) -> tuple[Endpoint, dict[str, str]]:
        """The endpoint and parameters serving ``method path``; HttpError 405 or 404."""
        allowed: set[str] = set()
        for route in self._literal.get(path, ()):
            if method in route.methods:
                return route.endpoint, {}
            allowed |= route.methods
        for route in self._patterns:
            found = route.regex.fullmatch(path)
            if found is None:
                continue
            if method in route.methods:
                return route.endpoint, found.groupdict()
            allowed |= route.methods
        if allowed:
            methods = sorted(allowed)
            raise HttpError(
                405,
                "method_not_allowed",
                f"{method} is not allowed on {path}; use {' or '.join(methods)}",
                [("allow", ", ".join(methods))],
            )
        raise HttpError(404, "not_found", f"no route for {path}")
