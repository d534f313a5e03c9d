"""Run streams under load (bounded in count and time): a recovery storm, and
200 readers of one run beside one that never reads."""

from __future__ import annotations

import asyncio
import socket
import time

import httpx
import pytest

from tests.ingress_apps import run_body
from tests.servers import serve
from tests.test_ingress_http import MARKS, thread

ENV = {"AGUI_TEST_MARKS": str(MARKS)}


@pytest.fixture(scope="module", params=["rsgi", "asgi"])
def base_url(request):
    with serve("tests.ingress_apps:app", env=ENV, interface=request.param) as url:
        yield url


def split_frames(buffer: bytes) -> tuple[list[bytes], bytes]:
    *frames, rest = buffer.split(b"\n\n")
    return [f for f in frames if f and f != b": ping"], rest


async def storm_reader(http, path: str, reconnects: int, every: float) -> tuple[list[int], int]:
    """Reads, drops the connection every ``every`` s, resumes with its last id;
    answers the ids read and how many times it dropped and resumed."""
    ids: list[int] = []
    last = 0
    for attempt in range(reconnects + 1):
        headers = {"last-event-id": str(last)}
        buffer = b""
        deadline = time.monotonic() + every if attempt < reconnects else None
        async with http.stream("GET", path, headers=headers) as response:
            assert response.status_code == 200
            async for chunk in response.aiter_raw():
                buffer += chunk
                frames, buffer = split_frames(buffer)
                for frame in frames:
                    if frame.startswith(b"id: "):
                        n = int(frame[4 : frame.index(b"\n")])
                        if n > last:
                            ids.append(n)
                            last = n
                if deadline is not None and time.monotonic() > deadline:
                    break
            else:
                return ids, attempt
    return ids, reconnects


async def test_recovery_storm(base_url):
    """10 readers, 8 forced reconnects each 500 ms apart, during a run of over
    1,000 events/s: every reader's ids are contiguous from 1, none twice."""
    tid, rid = thread("storm"), f"storm-{time.monotonic_ns()}"
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        started = asyncio.ensure_future(
            http.post("/ag-ui/run", json=run_body(tid, "paced 15000 4", run_id=rid))
        )
        await asyncio.sleep(0.2)
        path = f"/threads/{tid}/runs/{rid}/events"
        readers = [storm_reader(http, path, 8, 0.5) for _ in range(10)]
        results = await asyncio.gather(*readers)
        whole = await started
    total = whole.content.count(b"\nid: ") + 1
    assert total > 15_000
    # The run is paced over 4 s and the readers join 0.2 s in: a reader that
    # ended its stream with drops behind it resumed a live run (it ends only at
    # the terminal event). Counted, not timed: timing the storm failed on a
    # quiet machine (3.87 s, not the 4 s assumed), and a loaded one reconnects
    # slower, so three of the eight drops is the floor asserted.
    for ids, drops in results:
        assert drops >= 3
        assert ids == list(range(1, total + 1))


def stalled_reader(base_url: str, path: str) -> socket.socket:
    host, port = base_url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    sock.sendall(f"GET {path} HTTP/1.1\r\nhost: x\r\nlast-event-id: 0\r\n\r\n".encode())
    return sock


async def fan_out(base_url: str, stall: bool) -> float:
    """200 readers of one run (1,500 deltas, released at once); seconds from the
    release to the last reader's last frame."""
    tid, rid = thread("fan"), f"fan-{time.monotonic_ns()}"
    gate = f"gate-{rid}"
    path = f"/threads/{tid}/runs/{rid}/events"
    limits = httpx.Limits(max_connections=260)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as http:
        # the run waits on the gate after its first items, then streams
        started = asyncio.ensure_future(
            http.post("/ag-ui/run", json=run_body(tid, f"gated {gate} 1500", run_id=rid))
        )
        await asyncio.sleep(0.3)
        stalled = stalled_reader(base_url, path) if stall else None
        try:
            readers = [
                asyncio.ensure_future(http.get(path, headers={"last-event-id": "0"}))
                for _ in range(200)
            ]
            await asyncio.sleep(1.0)
            t0 = time.monotonic()
            (MARKS / gate).write_text("1")
            results = await asyncio.gather(*readers)
            elapsed = time.monotonic() - t0
        finally:
            if stalled is not None:
                stalled.close()
        whole = await started
    assert all(r.content == whole.content for r in results)
    return elapsed


async def test_a_reader_that_never_reads_does_not_delay_200_others(base_url):
    # Under RSGI too: granian's send_bytes never waits, so the pump of a reader
    # that never reads never blocks the run or the others (what it lacks there
    # is a bound on memory, see runs/cursor.py). Measured side by side, the
    # worker's CPU per fan-out is the same with and without it (0.22-0.28 s);
    # the time is the 200 readers' client on a loaded machine.
    # Interleaved (without, with, without, with, ...), so a burst of other load
    # on the shared machine falls on both alike: the better run with the reader
    # that never reads is within 10 % of the slower run without it (+0.25 s).
    # Three of each: with two, a burst from a parallel test's worker that fell
    # on both runs with the reader failed the suite once (2.33 s and 2.37 s
    # against 1.33 s and 1.70 s; the same code measured 1.2-1.8 s either way).
    plain, stalled = [], []
    for _ in range(3):
        plain.append(await fan_out(base_url, stall=False))
        stalled.append(await fan_out(base_url, stall=True))
    assert min(stalled) <= 1.1 * max(plain) + 0.25, (plain, stalled)
