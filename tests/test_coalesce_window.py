"""Coalescing's window (``agui_bridge.coalesce.Holder``): what a run holds
goes out by its deadline, ``window_ms`` after the first delta it holds came.

- A steady stream's hold goes out with the last delta expected before the
  deadline (ten deltas 5 ms apart in 50 ms), also when deltas come late by
  less than a gap or in a burst after the loop was held up, and never
  merges past the window.
- A held delta and nothing after it: the timer sends it, aimed before the
  deadline by the loop's measured lateness.
- The lateness is the loop's timers' own (their p90), shared by its runs.
- Through ``App``: a delta after a pause is its own event (the one before
  went out at its deadline); a terminal event is never delayed by a window.

Counted, not timed: the pace tests give the items' times themselves, the
timer test checks where the timer aims, and the App tests' pauses are 20
windows long.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from agui_bridge import Coalesce
from agui_bridge import crumbs as c
from agui_bridge.app import App
from agui_bridge.coalesce import QUANTILE, RESOLUTION, SAMPLES, Holder, Lateness, lateness_of

from tests.ingress_apps import parse_sse, run_body


class Held:
    """A transformer's coalescing as the Holder sees it: deltas held until sent."""

    def __init__(self):
        self.holding = False
        self.finished = False
        self.count = 0  # deltas held now
        self.sent: list[int] = []  # deltas per hold sent

    def coalesce(self, max_bytes):
        pass

    def delta(self, count: int = 1):
        self.holding = True
        self.count += count

    def send(self):
        if self.count:
            self.sent.append(self.count)
        self.holding, self.count = False, 0


def holder(window_ms: float = 50) -> tuple[Held, Holder]:
    t = Held()
    return t, Holder(t, Coalesce(window_ms), t.send)


def stream(t: Held, h: Holder, times: list) -> None:
    """The deltas at ``times`` (the loop's time; or (time, how many came
    together)), far ahead of now: no timer fires."""
    start = asyncio.get_running_loop().time() + 3600
    for at in times:
        at, count = at if isinstance(at, tuple) else (at, 1)
        t.delta(count)
        h.after_item(start + at, count)
    h.cancel()


async def test_a_steady_streams_hold_goes_out_with_the_last_delta_before_its_deadline():
    t, h = holder(50)
    stream(t, h, [i * 0.005 for i in range(200)])
    # The pace is known from the second delta on: ten a hold, from the first.
    assert t.sent == [10] * 20, t.sent


async def test_deltas_late_by_less_than_a_gap_keep_the_holds_whole():
    t, h = holder(50)
    # Every seventh delta 3 ms late (of a 5 ms gap); the 10th of a hold included.
    late = [i * 0.005 + (0.003 if i % 7 == 3 else 0) for i in range(200)]
    stream(t, h, late)
    assert all(n >= 10 for n in t.sent), t.sent
    # Never more than a window of deltas: the deadline counts from the first.
    assert max(t.sent) <= 11, t.sent


async def test_a_burst_after_the_loop_was_held_up_counts_as_its_deltas():
    t, h = holder(50)
    # Deltas 43 to 45 (due at 215, 220 and 225 ms) come together at 227 ms.
    times = [i * 0.005 for i in range(200) if not 43 <= i <= 45]
    times.insert(43, (0.227, 3))
    stream(t, h, times)
    assert t.sent == [10] * 20, t.sent


async def test_a_stream_slower_than_the_window_sends_each_delta_alone():
    t, h = holder(50)
    stream(t, h, [i * 0.2 for i in range(10)])
    # Once the pace is known (a gap longer than the window), nothing more is
    # expected in time: each delta goes out as it comes, with no wait. (The
    # first one's hold waits for its timer, which this test does not run.)
    assert t.sent[1:] == [1] * 8 and t.count == 0, t.sent


async def test_a_held_delta_is_sent_by_its_timer_aimed_before_the_deadline():
    t, h = holder(50)
    loop = asyncio.get_running_loop()
    sent = asyncio.Event()
    h._send = lambda: (t.send(), sent.set())
    came = loop.time()
    t.delta()
    h.after_item(came)
    assert h._timer.when() <= came + 0.05 - lateness_of(loop).slack + 1e-9
    await asyncio.wait_for(sent.wait(), 10)  # 200 windows
    assert t.sent == [1] and not t.holding


class Clock:
    """A loop's clock far from time.monotonic(): the Lateness reads it."""

    def __init__(self):
        self.now = -1e6

    def time(self):
        return self.now


def test_the_slack_is_the_loops_timers_lateness_at_its_p90():
    clock = Clock()
    late = Lateness(clock)
    assert late.slack == RESOLUTION
    lateness = [i / 1000 for i in range(SAMPLES)]  # 0 to 31 ms
    for ms in lateness:
        clock.now += ms
        late.note(clock.now - ms)
    assert late.slack == pytest.approx(sorted(lateness)[int(SAMPLES * QUANTILE)])
    # Only the last SAMPLES count: a quiet spell brings it back down.
    for _ in range(SAMPLES):
        late.note(clock.now - 0.0005)
    assert late.slack == pytest.approx(0.0005)


async def test_the_loops_runs_share_one_lateness():
    loop = asyncio.get_running_loop()
    assert lateness_of(loop) is lateness_of(loop)


async def _run(agent, window_ms: float) -> list[dict]:
    app = App(store="memory://", coalesce=Coalesce(window_ms))
    app.agent("a", path="/ag-ui/run")(agent)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
            response = await http.post("/ag-ui/run", json=run_body("window", "go"))
            assert response.status_code == 200, response.text
            events, _ = parse_sse(response.text)
        return events
    finally:
        await app.aclose()


@pytest.mark.parametrize("pause_windows", [20])
async def test_a_delta_after_a_pause_is_its_own_event(pause_windows):
    async def agent(ctx):
        yield c.text_delta("a")
        yield c.text_delta("b")
        await asyncio.sleep(0.05 * pause_windows)
        yield c.text_delta("c")

    events = await _run(agent, 50)
    content = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert content == ["ab", "c"]


async def test_a_window_never_delays_the_terminal_event():
    async def agent(ctx):
        yield c.text_delta("a")
        yield c.text_delta("b")

    # A ten-minute window: the run ends at once all the same (or the test hangs).
    events = await asyncio.wait_for(_run(agent, 600_000), 60)
    types = [e["type"] for e in events]
    assert types[-3:] == ["TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["ab"]


async def test_listeners_get_the_deltas_in_the_streams_order():
    """An item that sends the hold before it (over ``max_bytes``) and begins one
    the pace rule sends at once: the listeners got the new hold first (``bbb``
    before ``aaa``), the stream had them in order. Deltas ``0.8`` windows apart
    make both happen (the gap is known after the second)."""
    told = []
    app = App(store="memory://", coalesce=Coalesce(200, max_bytes=4))
    app.on_event(lambda event, info: told.append(event))

    @app.agent("a", path="/ag-ui/run")
    async def agent(ctx):
        for text in ("aaa", "bbb", "ccc", "ddd"):
            yield c.text_delta(text)
            await asyncio.sleep(0.16)

    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as http:
            response = await http.post("/ag-ui/run", json=run_body("order", "go"))
            streamed, _ = parse_sse(response.text)
    finally:
        await app.aclose()

    def deltas(events):
        return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]

    assert "".join(deltas(streamed)) == "aaabbbcccddd"
    assert deltas(told) == deltas(streamed)
