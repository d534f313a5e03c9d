"""Opt-in coalescing of a run's deltas: ``App(coalesce=…)`` or ``app.agent(…, coalesce=…)``.

The transformer merges consecutive ``TEXT_MESSAGE_CONTENT`` for one message
(``TOOL_CALL_ARGS`` for one call) up to ``max_bytes`` (``t.coalesce``), so
every reader, the log and the store see the same merged events; any other
event, a terminal one included, sends what is held first. This module adds
the time: what a run holds goes out at most ``window_ms`` after the first
delta it holds (``Holder``), or at once when the agent yields ``FLUSH``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

# The event loops' timers fire up to a millisecond late on an idle loop (uvloop's
# are libuv's, in whole milliseconds rounded up; asyncio's wait is an epoll
# timeout in whole milliseconds): a window's timer aims that much early, so what
# it held goes out within the window, not just after it.
TIMER_SLACK = 0.001


@dataclass(frozen=True)
class Coalesce:
    """A held delta goes out after ``window_ms`` or once it has ``max_bytes`` (UTF-8)."""

    window_ms: float = 50.0
    max_bytes: int = 4096

    def __post_init__(self):
        window = self.window_ms
        if isinstance(window, bool) or not isinstance(window, (int, float)) or not window > 0:
            raise ValueError("coalesce window_ms must be a number above 0")
        if isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int):
            raise ValueError("coalesce max_bytes must be an integer")
        if self.max_bytes < 1:
            raise ValueError("coalesce max_bytes must be at least 1")


class _Flush:
    """What an agent yields to send the deltas held so far at once."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "agui_bridge.FLUSH"


FLUSH = _Flush()


def coalesce_of(value) -> Coalesce | bool | None:
    """``None``: not said (an agent then takes the app's); ``False``: off; a
    number: the window in ms; ``True``: the defaults; or a ``Coalesce``."""
    if value is None or value is False:
        return value
    if value is True:
        return Coalesce()
    if isinstance(value, Coalesce):
        return value
    if isinstance(value, (int, float)):
        return Coalesce(window_ms=value)
    kind = type(value).__name__
    raise TypeError(f"coalesce must be a Coalesce, a window in ms or a bool, not {kind}")


class Holder:
    """Sends what a run's transformer holds once the window has passed since it began holding."""

    __slots__ = ("_send", "_t", "_timer", "window")

    def __init__(self, t, coalesce: Coalesce, send):
        t.coalesce(coalesce.max_bytes)
        self._t = t
        self.window = coalesce.window_ms / 1000
        self._send = send  # sends what the transformer holds
        self._timer: asyncio.TimerHandle | None = None

    def after_item(self, since: float | None = None) -> None:
        """Arms the window when the transformer has just started holding:
        ``window`` after ``since`` (the loop's time when the first of the items
        just encoded came), else from now."""
        if self._timer is None and self._t.holding:
            loop = asyncio.get_running_loop()
            at = (loop.time() if since is None else since) + self.window - TIMER_SLACK
            self._timer = loop.call_at(at, self._due)

    def _due(self) -> None:
        self._timer = None
        if not self._t.finished:
            self._send()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
