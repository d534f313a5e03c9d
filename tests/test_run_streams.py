"""Run streams over raw HTTP on real granian servers (RSGI and ASGI): exact
resume by id, the join prelude, joining the active run, cancel, retry,
authorize_stream, retention, fan-out and a recovery storm."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ingress_apps import parse_sse, run_body
from tests.servers import serve
from tests.test_ingress_http import MARKS, error_of, text_of, thread

ENV = {"AGUI_TEST_MARKS": str(MARKS)}
# A resumed stream alone: the reader already holds the tool arguments streamed
# and the tool calls ended before its cursor (the client's reducer keeps them),
# so the validator's checks that one stream's arguments parse and that a
# result's call started in that stream do not apply to it.
RESUMED = {"AGUI204": "info", "AGUI207": "info"}


@pytest.fixture(
    scope="module",
    params=["rsgi", "asgi", pytest.param("rsgi-redis", marks=pytest.mark.external)],
)
def base_url(request):
    """The same semantics on memory run logs and (rsgi-redis) on Redis run logs."""
    interface, _, runs = request.param.partition("-")
    env = dict(ENV)
    if runs:
        server = request.getfixturevalue("redis_server")
        env["AGUI_TEST_RUNS"] = server.url(server.fresh_db())
    with serve("tests.ingress_apps:app", env=env, interface=interface) as url:
        yield url


def frames_of(body: bytes) -> list[bytes]:
    """The frames of an SSE body, each with its blank line, pings left out."""
    return [f + b"\n\n" for f in body[:-2].split(b"\n\n") if f != b": ping"]


def id_of(frame: bytes) -> int | None:
    return int(frame[4 : frame.index(b"\n")]) if frame.startswith(b"id: ") else None


def events_url(tid: str, rid: str) -> str:
    return f"/threads/{tid}/runs/{rid}/events"


def finished_run(base_url: str, text: str = "mixed") -> tuple[str, str, bytes]:
    tid, rid = thread("rs"), f"r-{time.monotonic_ns()}"
    response = httpx.post(base_url + "/ag-ui/run", json=run_body(tid, text, run_id=rid), timeout=20)
    assert response.status_code == 200
    return tid, rid, response.content


def test_frames_carry_contiguous_ids_and_n0_replays_them_byte_for_byte(base_url):
    tid, rid, body = finished_run(base_url)
    frames = frames_of(body)
    assert [id_of(f) for f in frames] == list(range(1, len(frames) + 1))
    events, _ = parse_sse(body.decode())
    assert_valid_agui(events)
    replay = httpx.get(base_url + events_url(tid, rid), headers={"last-event-id": "0"})
    assert replay.status_code == 200
    assert replay.headers["agui-resume"] == "exact"
    assert replay.content == body
    by_query = httpx.get(base_url + events_url(tid, rid) + "?last_event_id=0")
    assert by_query.content == body


@pytest.fixture(scope="module")
def finished(base_url):
    return finished_run(base_url)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_resume_after_any_event_is_exact(base_url, finished, data):
    tid, rid, body = finished
    frames = frames_of(body)
    n = data.draw(st.integers(min_value=1, max_value=len(frames) - 1))
    response = httpx.get(base_url + events_url(tid, rid), headers={"last-event-id": str(n)})
    assert response.headers["agui-resume"] == "exact"
    got = frames_of(response.content)
    # the stored frames n+1… come after the prelude, byte for byte
    tail = frames[n:]
    assert got[len(got) - len(tail) :] == tail
    prelude = got[: len(got) - len(tail)]
    first = prelude[0].split(b"\n", 1)[1] if prelude[0].startswith(b"id: ") else prelude[0]
    assert first.startswith(b'data: {"type":"RUN_STARTED"')
    assert [id_of(f) for f in prelude] == [None] * (len(prelude) - 1) + [n]
    events, _ = parse_sse(response.text)
    assert_valid_agui(events, severity_overrides=RESUMED)


def test_without_a_cursor_a_finished_run_gives_the_prelude_and_its_end(base_url, finished):
    tid, rid, body = finished
    response = httpx.get(base_url + events_url(tid, rid))
    assert response.headers["agui-resume"] == "snapshot"
    events, _ = parse_sse(response.text)
    assert_valid_agui(events)
    assert [e["type"] for e in events] == [
        "RUN_STARTED",
        "MESSAGES_SNAPSHOT",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    stored = httpx.get(f"{base_url}/threads/{tid}/state").json()
    assert events[1]["messages"] == stored["messages"]
    assert events[2]["snapshot"] == stored["values"]
    # the last frame is the stored terminal one: its id is the last id
    assert frames_of(response.content)[-1] == frames_of(body)[-1]


def test_unknown_run_is_404_and_bad_cursor_is_400(base_url, finished):
    tid, rid, _ = finished
    error_of(httpx.get(base_url + events_url(tid, "nope")), 404, "not_found")
    # An unknown thread answers to every agent's guard: 404 to a caller they let in
    # ("anon-…" passes the guarded agent's), the 403 of an existing run to others.
    error_of(httpx.get(base_url + events_url("anon-nope", rid)), 404, "not_found")
    error_of(httpx.get(base_url + events_url("nope", rid)), 403, "forbidden")
    error_of(
        httpx.get(base_url + events_url(tid, rid), headers={"last-event-id": "x"}),
        400,
        "invalid_cursor",
    )
    response = httpx.post(base_url + events_url(tid, rid))
    assert response.status_code == 405


async def read_new(response, after: int, count: int) -> tuple[list[bytes], int]:
    """Frames of a streaming response until ``count`` of them carry an id past
    ``after`` (pings skipped); the frames read and the last id seen."""
    out, buffer, new = [], b"", 0
    async for chunk in response.aiter_raw():
        buffer += chunk
        while b"\n\n" in buffer and new < count:
            frame, _, buffer = buffer.partition(b"\n\n")
            if frame != b": ping":
                out.append(frame + b"\n\n")
                n = id_of(out[-1])
                if n is not None and n > after:
                    new, after = new + 1, n
        if new >= count:
            break
    return out, after


def check_resumed(frames: list[bytes], n: int, stored: list[bytes]) -> list[int]:
    """A stream resumed after event ``n``: a prelude whose last frame carries
    ``n`` (none before it), then exactly the stored frames n+1…; their ids."""
    if n == 0:
        assert frames == stored[: len(frames)]
        return [id_of(f) for f in frames]
    ids = [id_of(f) for f in frames]
    end = ids.index(n) + 1  # the prelude's last frame
    assert ids[: end - 1] == [None] * (end - 1)
    assert frames[end:] == stored[n : n + len(frames) - end]
    return ids[end:]


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
async def test_drops_during_a_live_run_resume_exactly(base_url, finished, data):
    """Hypothesis picks where the connection drops, once or several times, while
    the run is live (it streams, then waits on a gate until the last resume):
    each reconnect with the last id seen gets the prelude, then exactly the
    stored frames after that id; over all connections every id comes once."""
    budget = len(frames_of(finished[2])) - 2  # a "mixed" run's frames before its end
    cuts = []
    while budget > 0 and len(cuts) < 3:
        cuts.append(data.draw(st.integers(1, min(budget, 8)), label=f"cut {len(cuts) + 1}"))
        budget -= cuts[-1]
        if not data.draw(st.booleans(), label="drop again"):
            break
    tid, rid = thread("drop"), f"drop-{time.monotonic_ns()}"
    gate = f"gate-{rid}"
    seen: list[tuple[int, list[bytes]]] = []  # (the cursor, the frames read)
    async with httpx.AsyncClient(base_url=base_url, timeout=20) as http:
        body = run_body(tid, f"mixed 0.02 {gate}", run_id=rid)
        async with http.stream("POST", "/ag-ui/run", json=body) as response:
            frames, last = await read_new(response, 0, cuts[0])
        seen.append((0, frames))
        for cut in cuts[1:]:
            headers = {"last-event-id": str(last)}
            async with http.stream("GET", events_url(tid, rid), headers=headers) as response:
                assert response.headers["agui-resume"] == "exact"
                frames, after = await read_new(response, last, cut)
            seen.append((last, frames))
            last = after
        (MARKS / gate).write_text("1")
        resumed = await http.get(events_url(tid, rid), headers={"last-event-id": str(last)})
        assert resumed.headers["agui-resume"] == "exact"
        seen.append((last, frames_of(resumed.content)))
        stored = frames_of(
            (await http.get(events_url(tid, rid), headers={"last-event-id": "0"})).content
        )
    ids = [i for n, frames in seen for i in check_resumed(frames, n, stored)]
    assert ids == list(range(1, len(stored) + 1))
    assert_valid_agui(parse_sse(resumed.text)[0], severity_overrides=RESUMED)


async def test_join_the_active_run_and_204_without_one(base_url):
    # "anon-…": the thread does not exist yet, so the guarded agent's rule applies.
    # A '/' in the thread id: the ingress takes any string, so must its other routes.
    tid, rid = thread("anon-join") + "/tab", f"join-{time.monotonic_ns()}"
    async with httpx.AsyncClient(base_url=base_url, timeout=20) as http:
        none = await http.get(f"/threads/{tid}/events")
        assert none.status_code == 204
        started = asyncio.ensure_future(
            http.post("/ag-ui/run", json=run_body(tid, "mixed 0.1", run_id=rid))
        )
        await asyncio.sleep(0.45)  # inside the text, before the tool call
        joined = await http.get(f"/threads/{tid}/events")
        whole = await started
    assert joined.headers["agui-resume"] == "snapshot"
    events, _ = parse_sse(joined.text)
    assert_valid_agui(events)
    assert [e["type"] for e in events[:3]] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT"]
    # the joined reader ends with what a reader of the whole run has
    assert events[-1] == parse_sse(whole.text)[0][-1]
    # ids never go backwards, and the tail is the stored frames after the prelude
    frames = frames_of(joined.content)
    covered = [id_of(f) for f in frames if id_of(f) is not None]
    tail = frames_of(whole.content)[covered[0] :]
    assert frames[len(frames) - len(tail) :] == tail


async def test_cancel_from_another_connection(base_url):
    tid, rid = thread("stop") + "/tab", f"stop-{time.monotonic_ns()}"
    async with httpx.AsyncClient(base_url=base_url, timeout=20) as http:
        started = asyncio.ensure_future(
            http.post("/ag-ui/run", json=run_body(tid, "slow 40", run_id=rid))
        )
        assert await wait_mark(f"started-{rid}")
        await asyncio.sleep(0.3)
        cancel = await http.post(f"/threads/{tid}/runs/{rid}/cancel")
        assert cancel.status_code == 202, cancel.text
        assert cancel.json()["status"] == "cancelled"
        response = await started
        events, _ = parse_sse(response.text)
        assert_valid_agui(events)
        assert [e["type"] for e in events[-2:]] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
        partial = text_of(events)
        assert 0 < len(partial) < len("".join(f"w{i} " for i in range(40)))
        # the partial message is stored, and the thread takes a new run at once
        stored = (await http.get(f"/threads/{tid}/state")).json()["messages"]
        assert stored[-1]["content"] == partial
        again = await http.post("/ag-ui/run", json=run_body(tid, "hi"))
        assert again.status_code == 200
        ended = await http.post(f"/threads/{tid}/runs/{rid}/cancel")
        error_of(ended, 409, "run_ended")
        error_of(await http.post(f"/threads/{tid}/runs/nope/cancel"), 404)


async def wait_mark(name: str, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (MARKS / name).exists():
            return True
        await asyncio.sleep(0.02)
    return False


async def test_a_retry_is_a_replay_not_a_second_run(base_url):
    tid, rid = thread("retry"), f"retry-{time.monotonic_ns()}"
    body = run_body(tid, "slow 6", run_id=rid)
    async with httpx.AsyncClient(base_url=base_url, timeout=20) as http:
        first = asyncio.ensure_future(http.post("/ag-ui/run", json=body))
        assert await wait_mark(f"started-{rid}")
        live = await http.post("/ag-ui/run", json=body)  # while it runs
        original = await first
        finished = await http.post("/ag-ui/run", json=body)  # after it ended
        assert live.content == original.content == finished.content
        messages = (await http.get(f"/threads/{tid}/state")).json()["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"]  # the agent ran once
        # Something new under the same runId is a new run (issue 8: useInterrupt
        # resumes under the interrupted run's id), its ids unique in the thread.
        other = run_body(tid, "something new", run_id=rid)
        again = await http.post("/ag-ui/run", json=other)
        assert again.status_code == 200, again.text
        assert b"you said something new" in again.content
        messages = (await http.get(f"/threads/{tid}/state")).json()["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"] * 2
        assert len({m["id"] for m in messages}) == 4


def test_retention_expiry_is_404():
    env = {**ENV, "AGUI_TEST_RUN_RETENTION": "0.5"}
    with serve("tests.ingress_apps:app", env=env) as url:
        tid, rid, _ = finished_run(url, "hi")
        assert httpx.get(url + events_url(tid, rid)).status_code == 200
        time.sleep(1.0)
        error_of(httpx.get(url + events_url(tid, rid)), 404, "not_found")


async def test_authorize_stream_guards_both_event_routes_and_cancel():
    alice = {"authorization": "Bearer alice"}
    bob = {"authorization": "Bearer bob"}
    reader = {"authorization": "Bearer reader"}  # may read, may not run
    with serve("tests.ingress_apps:auth_app", env=ENV) as url:
        tid, rid = "alice-s" + str(time.monotonic_ns()), "streamed-1"
        async with httpx.AsyncClient(base_url=url, timeout=20) as http:
            started = asyncio.ensure_future(
                http.post("/streamed/run", json=run_body(tid, "slow", run_id=rid), headers=alice)
            )
            await asyncio.sleep(0.5)
            error_of(await http.get(events_url(tid, rid)), 401)
            error_of(await http.get(events_url(tid, rid), headers=bob), 403, "forbidden")
            error_of(await http.get(f"/threads/{tid}/events", headers=bob), 403, "forbidden")
            error_of(await http.post(f"/threads/{tid}/runs/{rid}/cancel", headers=bob), 403)
            error_of(await http.post(f"/threads/{tid}/runs/{rid}/cancel", headers=reader), 403)
            joined = await http.get(f"/threads/{tid}/events", headers=alice)
            assert joined.status_code == 200
            original = await started
            assert original.status_code == 200
            mine = await http.get(events_url(tid, rid), headers=alice)
            assert mine.status_code == 200
            assert parse_sse(mine.text)[0][-1]["type"] == "RUN_FINISHED"
            # a retry of the run is a read of its stream: the same guard
            retry = run_body(tid, "slow", run_id=rid)
            error_of(await http.post("/streamed/run", json=retry, headers=bob), 403)
            again = await http.post("/streamed/run", json=retry, headers=alice)
            assert again.content == original.content
