"""Opt-in coalescing of a run's deltas: ``App(coalesce=…)`` or ``app.agent(…, coalesce=…)``.

The transformer merges consecutive ``TEXT_MESSAGE_CONTENT`` for one message
(``TOOL_CALL_ARGS`` for one call) up to ``max_bytes`` (``t.coalesce``), so
every reader, the log and the store see the same merged events; any other
event, a terminal one included, sends what is held first. This module adds
the time (``Holder``): what a run holds has a deadline, ``window_ms`` after
the first delta it holds came, and goes out

- with the last delta expected before the deadline, while deltas come at a
  pace: waiting for one more would overrun the window;
- else at a timer aimed early by how late this loop's timers have been
  firing (``Lateness``), so under load the window is still a bound;
- at once when the agent yields ``FLUSH``.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque
from dataclasses import dataclass

# A loop's timers fire late: libuv's (uvloop's) are in whole milliseconds,
# asyncio's epoll wait too, and a loaded machine adds its scheduling (a 50 ms
# timer 1.2 ms late at p90 at load 4, 4 ms at load 13: benches/RESULTS.md).
# A window's timer aims early by the lateness of the loop's last SAMPLES
# timers at QUANTILE: only a hold's first delta waits the whole window, so
# with ten deltas or more a hold, the deltas' p99 is the holds' p90.
SAMPLES = 32
QUANTILE = 0.9
# Before any of its timers fired: the loops' timer resolution.
RESOLUTION = 0.001
# The stream's pace (seconds between items): a moving average of its gaps,
# each new one weighing this much (about the last eight count).
PACE_WEIGHT = 1 / 8


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


class Lateness:
    """How late one event loop's timers fire: the slack a window's timer aims early by."""

    __slots__ = ("_clock", "_seen", "slack")

    def __init__(self, loop):
        self._seen: deque[float] = deque(maxlen=SAMPLES)
        self.slack = RESOLUTION
        # asyncio's loop.time() is time.monotonic(); uvloop's reads the same clock
        # in whole milliseconds, cached for the loop iteration (it would hide up to
        # a millisecond of the lateness). Another loop's clock: its own reading.
        same = abs(time.monotonic() - loop.time()) < 1.0
        self._clock = time.monotonic if same else loop.time

    def note(self, at: float) -> None:
        """A timer aimed at ``at`` (the loop's time) fires now."""
        seen = self._seen
        seen.append(max(self._clock() - at, 0.0))
        ordered = sorted(seen)
        self.slack = ordered[int(len(ordered) * QUANTILE)]


_LATENESS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def lateness_of(loop) -> Lateness:
    """The loop's ``Lateness``, which all its runs' windows measure and share."""
    late = _LATENESS.get(loop)
    if late is None:
        late = _LATENESS[loop] = Lateness(loop)
    return late


class Holder:
    """Sends what a run's transformer holds by its deadline: ``window`` after
    the first delta it holds came (the module's docstring says how)."""

    __slots__ = ("_deadline", "_gap", "_last", "_next", "_send", "_t", "_timer", "window")

    def __init__(self, t, coalesce: Coalesce, send):
        t.coalesce(coalesce.max_bytes)
        self._t = t
        self.window = coalesce.window_ms / 1000
        self._send = send  # sends what the transformer holds
        self._timer: asyncio.TimerHandle | None = None  # the last hold's
        self._deadline: float | None = None  # what is held goes out by then (the loop's time)
        self._last: tuple[float, int] | None = None  # when the last items came, how many
        self._gap: float | None = None  # the stream's pace: seconds between its items
        self._next: float | None = None  # when the next item is expected

    def after_item(self, since: float | None = None, count: int = 1) -> None:
        """After ``count`` items were encoded (``since``: the loop's time when
        the first of them came, else now): arms the deadline of a hold they
        began, and sends what is held when no further delta is expected in time."""
        loop = asyncio.get_running_loop()
        came = loop.time() if since is None else since
        self._paced(came, count)
        if not self._t.holding:
            self._deadline = None
            return
        deadline, gap = self._deadline, self._gap
        if deadline is None:
            deadline = self._deadline = came + self.window
            late = lateness_of(loop)
            slack = late.slack
            if gap is not None:
                # While deltas come at a pace, one is expected until half a gap
                # before the deadline and sends the hold (below): the timer is
                # for a stream that stopped, it need not aim earlier.
                slack = min(slack, gap / 2)
            at = deadline - min(slack, self.window)
            self._timer = loop.call_at(at, self._due, deadline, at, late)
        # The hold goes out with the last delta expected before its deadline:
        # now, unless the next one is expected more than half a gap before it
        # (half a gap: a delta that late or early is still told from the next).
        if gap is not None and self._next + gap / 2 >= deadline:
            self._send()
            self._deadline = None

    def _paced(self, came: float, count: int) -> None:
        """Learns the stream's pace and when its next item is expected, from
        ``count`` items that came together at ``came`` (a burst after the loop
        was held up: each is one gap of the pace)."""
        last, self._last = self._last, (came, count)
        if last is None:
            return
        # The gap of each item of the last batch; a pause longer than the
        # window says nothing of the pace within one.
        gap = min((came - last[0]) / last[1], self.window)
        pace = self._gap
        gap = self._gap = gap if pace is None else pace + (gap - pace) * PACE_WEIGHT
        # Items come late (a loaded loop), never early: the expected schedule
        # follows a late one only slowly, so one late item does not move it; an
        # early one, or one a window late (a pause), sets it.
        expected = self._next
        if expected is None or came < expected or came - expected > self.window:
            expected = came
        else:
            expected += (came - expected) * PACE_WEIGHT
        self._next = expected + count * gap

    def _due(self, deadline: float, at: float, late: Lateness) -> None:
        # Every hold's timer fires (one sent early is not cancelled): each firing
        # measures the loop's lateness.
        late.note(at)
        if deadline == self._deadline and not self._t.finished:
            self._send()
            self._deadline = None

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
