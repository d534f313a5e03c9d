"""Run logs on Redis across gateway nodes: granian nodes (subprocesses) on one
redis-server and one PostgreSQL (the thread store, which holds the leases).

A run started on node A is read, joined, resumed and cancelled through node
B; a node killed mid-run has its run ended (``run_lost``) for every reader;
Redis stopped mid-run ends the streams with ``runs_unavailable`` and the
nodes recover when it is back.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.ingress_apps import parse_sse, run_body
from tests.servers import serve, server_process
from tests.test_ingress_http import thread

LEASE_TTL = 2.0
APP = "tests.ingress_apps:app"


def frames_of(body: bytes) -> list[bytes]:
    return [f + b"\n\n" for f in body[:-2].split(b"\n\n") if f and f != b": ping"]


def id_of(frame: bytes) -> int | None:
    return int(frame[4 : frame.index(b"\n")]) if frame.startswith(b"id: ") else None


def split_prelude(frames: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """A reader's frames: the prelude (up to the first frame with an id, which
    carries the cursor) and the log's frames after it."""
    for index, frame in enumerate(frames):
        if id_of(frame) is not None:
            return frames[: index + 1], frames[index + 1 :]
    return frames, []


def wait_for(path: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.01)


def node_env(redis_url: str, pg_url: str, marks: Path, **extra) -> dict:
    return {
        "AGUI_TEST_RUNS": redis_url,
        "AGUI_TEST_STORE": pg_url,
        "AGUI_TEST_MARKS": str(marks),
        "AGUI_TEST_LEASE_TTL": str(LEASE_TTL),
        **extra,
    }


@pytest.fixture(scope="module")
def shared(redis_server, pg_server, tmp_path_factory):
    """A Redis database, a PostgreSQL database and a marks directory for one module."""
    database = pg_server.create_database()
    marks = tmp_path_factory.mktemp("marks")
    try:
        yield redis_server.url(redis_server.fresh_db()), pg_server.url(database), marks
    finally:
        pg_server.drop_database(database)


@pytest.fixture(scope="module")
def nodes(shared):
    redis_url, pg_url, marks = shared
    env = node_env(redis_url, pg_url, marks)
    with serve(APP, env=env) as a, serve(APP, env=env) as b:
        yield a, b, marks


class Reader(threading.Thread):
    """Reads a whole stream in the background (the POST that starts a run)."""

    def __init__(self, method: str, url: str, **kwargs):
        super().__init__(daemon=True)
        self.method, self.url, self.kwargs = method, url, kwargs
        self.status = None
        self.body = b""
        self.error = None

    def run(self) -> None:
        try:
            with httpx.stream(self.method, self.url, timeout=30, **self.kwargs) as response:
                self.status = response.status_code
                for chunk in response.iter_raw():
                    self.body += chunk
        except Exception as error:  # reported by the test
            self.error = error

    def reading(self, timeout: float = 10) -> Reader:
        """Returns once the stream has delivered its first frame."""
        deadline = time.monotonic() + timeout
        while b"\n\n" not in self.body:
            assert self.error is None, self.error
            assert time.monotonic() < deadline, "no frame arrived"
            time.sleep(0.01)
        return self

    def result(self, timeout: float = 30) -> bytes:
        self.join(timeout)
        assert not self.is_alive(), "the stream did not end"
        assert self.error is None, self.error
        return self.body


def read_some(url: str, frames: int, headers=None) -> list[bytes]:
    """The first ``frames`` frames after the prelude of a stream (fewer if it ends)."""
    body = b""
    with httpx.stream("GET", url, headers=headers or {}, timeout=30) as response:
        assert response.status_code == 200, response.read()
        for chunk in response.iter_raw():
            body += chunk
            got = frames_of(body[: body.rfind(b"\n\n") + 2]) if b"\n\n" in body else []
            _, tail = split_prelude(got)
            if len(tail) >= frames:
                return got
    return frames_of(body)


def start_run(base_url: str, tid: str, rid: str, text: str) -> Reader:
    reader = Reader("POST", base_url + "/ag-ui/run", json=run_body(tid, text, run_id=rid))
    reader.start()
    return reader


def test_a_viewer_on_b_joins_and_resumes_alternately_on_a_and_b(nodes):
    a, b, marks = nodes
    tid, rid = thread("x"), f"r-{time.monotonic_ns()}"
    source = start_run(a, tid, rid, "slow 60")
    wait_for(marks / f"started-{rid}")
    while source.body.count(b"\n\n") < 4:  # the answer has begun
        time.sleep(0.01)
    # the join on B: the prelude, then the log's frames
    got = read_some(f"{b}/threads/{tid}/events", 3)
    prelude, tail = split_prelude(got)
    kinds = [f.split(b'"type":"', 1)[1].split(b'"', 1)[0] for f in prelude]
    assert kinds[:3] == [b"RUN_STARTED", b"MESSAGES_SNAPSHOT", b"STATE_SNAPSHOT"]
    joined = events_in(prelude)
    joined_at = id_of(prelude[-1])
    seen = tail
    cursor = id_of(prelude[-1]) if not tail else id_of(tail[-1])
    hops = 0
    while True:
        node = a if hops % 2 == 0 else b
        hops += 1
        got = read_some(
            f"{node}/threads/{tid}/runs/{rid}/events", 4, {"last-event-id": str(cursor)}
        )
        prelude, tail = split_prelude(got)
        assert id_of(prelude[-1]) == cursor  # an exact resume, on either node
        tail = tail[:4]  # what came past them is read again after the next hop
        seen += tail
        if not tail:
            break
        cursor = id_of(tail[-1])
        last = tail[-1]
        if b'"type":"RUN_FINISHED"' in last or b'"type":"RUN_ERROR"' in last:
            break
    assert hops >= 4
    body = source.result()
    assert source.status == 200
    truth = frames_of(body)
    first = id_of(seen[0])
    ids = [id_of(f) for f in seen]
    assert ids == list(range(first, first + len(seen)))  # contiguous, each once
    assert seen == truth[first - 1 :]  # byte-identical to the reader on A
    assert b'"type":"RUN_FINISHED"' in seen[-1]
    # the join's snapshot: the stored user turn, then the answer so far, as on A:
    # the open message is re-opened with what it streamed (each piece once)
    so_far = events_in(truth[:joined_at])
    text = "".join(e["delta"] for e in so_far if e["type"] == "TEXT_MESSAGE_CONTENT")
    messages = joined[1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"] == "slow 60" and messages[1]["content"] == ""
    opened = joined[3:]
    assert [e["type"] for e in opened] == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    assert opened[0]["messageId"] == messages[1]["id"] and opened[1]["delta"] == text


def test_a_finished_run_reads_the_same_on_both_nodes(nodes):
    a, b, _ = nodes
    tid, rid = thread("f"), f"r-{time.monotonic_ns()}"
    response = httpx.post(a + "/ag-ui/run", json=run_body(tid, "tool", run_id=rid), timeout=20)
    assert response.status_code == 200
    for node in (a, b):
        replay = httpx.get(
            f"{node}/threads/{tid}/runs/{rid}/events", headers={"last-event-id": "0"}
        )
        assert replay.headers["agui-resume"] == "exact"
        assert replay.content == response.content
    joined = [httpx.get(f"{node}/threads/{tid}/runs/{rid}/events") for node in (a, b)]
    assert joined[0].content == joined[1].content
    events, _ = parse_sse(joined[1].text)
    assert [e["type"] for e in events][-1] == "RUN_FINISHED"


def test_two_workers_of_one_node_share_runs(shared):
    """With runs on Redis, a reconnect that lands on the other worker of the
    node finds the run (with memory logs it got 404)."""
    redis_url, pg_url, marks = shared
    with serve(APP, env=node_env(redis_url, pg_url, marks), workers=2) as url:
        tid, rid = thread("w"), f"r-{time.monotonic_ns()}"
        response = httpx.post(url + "/ag-ui/run", json=run_body(tid, "hello", run_id=rid))
        assert response.status_code == 200
        # fresh connections are spread over both workers
        for _ in range(12):
            with httpx.Client() as client:
                replay = client.get(
                    f"{url}/threads/{tid}/runs/{rid}/events", headers={"last-event-id": "0"}
                )
            assert replay.status_code == 200
            assert replay.content == response.content


def kill(base_url: str) -> None:
    os.killpg(server_process(base_url).pid, signal.SIGKILL)


def events_in(frames: list[bytes]) -> list[dict]:
    events, _ = parse_sse(b"".join(frames).decode())
    return events


def test_cross_node_recovery_20_live_and_30_missed(nodes):
    """Centrifuge's redisCrossNodeRecovery: events appended on A reach a reader
    on B live (20), then while it is away (30): each exactly once."""
    a, b, marks = nodes
    tid, rid = thread("cr"), f"r-{time.monotonic_ns()}"
    source = start_run(a, tid, rid, "slow 60")
    wait_for(marks / f"started-{rid}")
    url = f"{b}/threads/{tid}/runs/{rid}/events"
    live = read_some(url, 20, {"last-event-id": "1"})
    _, live = split_prelude(live)
    live = live[:20]
    cursor = id_of(live[-1])
    # away until 30 more events are in the log (read on A, the source)
    deadline = time.monotonic() + 20
    while len(frames_of(source.body[: source.body.rfind(b"\n\n") + 2])) < cursor + 30:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    missed = read_some(url, 30, {"last-event-id": str(cursor)})
    prelude, missed = split_prelude(missed)
    assert id_of(prelude[-1]) == cursor
    missed = missed[:30]
    got = [id_of(f) for f in live + missed]
    assert got == list(range(2, 52))  # 50 events, each once, in order
    truth = frames_of(source.result())
    assert live + missed == truth[1:51]


def test_concurrent_posts_on_one_thread_via_both_nodes_exactly_one_runs(nodes):
    a, b, _ = nodes
    for round_ in range(2):
        tid = thread(f"cc{round_}")
        readers = [
            Reader("POST", f"{node}/ag-ui/run", json=run_body(tid, "slow 30", run_id=f"{tid}-{i}"))
            for i, node in enumerate((a, b, a, b))
        ]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.result()
        statuses = sorted(reader.status for reader in readers)
        assert statuses == [200, 409, 409, 409], statuses
        for reader in readers:
            if reader.status == 409:
                assert b'"run_active"' in reader.body


def test_cancel_through_the_other_node(nodes):
    a, b, marks = nodes
    tid, rid = thread("cx"), f"r-{time.monotonic_ns()}"
    source = start_run(a, tid, rid, "slow 100")
    wait_for(marks / f"started-{rid}")
    viewer = Reader("GET", f"{b}/threads/{tid}/events")
    viewer.start()
    viewer.reading()
    response = httpx.post(f"{b}/threads/{tid}/runs/{rid}/cancel", timeout=20)
    assert response.status_code == 202, response.text
    for reader in (source, viewer):
        events = events_in(frames_of(reader.result()))
        assert events[-1]["type"] == "RUN_FINISHED"  # a stop is not an error
    assert not (marks / f"ended-{rid}").exists()  # the agent was stopped
    # the thread takes a new run at once, on either node
    again = httpx.post(b + "/ag-ui/run", json=run_body(tid, "hello"), timeout=20)
    assert again.status_code == 200
    again = httpx.post(f"{b}/threads/{tid}/runs/{rid}/cancel", timeout=20)
    assert again.status_code in (404, 409)


def test_a_node_killed_mid_run_ends_its_run_with_run_lost(shared):
    redis_url, pg_url, marks = shared
    env = node_env(redis_url, pg_url, marks)
    with serve(APP, env=env) as b:
        with serve(APP, env=env) as a:
            tid, rid = thread("k"), f"r-{time.monotonic_ns()}"
            source = start_run(a, tid, rid, "slow 200")
            wait_for(marks / f"started-{rid}")
            viewer = Reader("GET", f"{b}/threads/{tid}/events")
            viewer.start()
            viewer.reading()
            killed = time.monotonic()
            kill(a)
            body = viewer.result(timeout=LEASE_TTL + 10)
            lost_after = time.monotonic() - killed
        events = events_in(frames_of(body))
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "run_lost"
        assert lost_after <= LEASE_TTL + 1.0, lost_after
        # every construct the viewer saw open was closed before the error
        opened = {e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"}
        closed = {e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_END"}
        assert opened and opened == closed
        # appended once: a replay of the whole log ends the same way, once
        replay = httpx.get(f"{b}/threads/{tid}/runs/{rid}/events", headers={"last-event-id": "0"})
        replayed = events_in(frames_of(replay.content))
        assert [e.get("code") for e in replayed if e["type"] == "RUN_ERROR"] == ["run_lost"]
        assert replay.content.endswith(frames_of(body)[-1])
        # the user's turn is stored and the thread takes a new run at once
        state = httpx.get(f"{b}/threads/{tid}/state").json()
        assert any(m["role"] == "user" and m["content"] == "slow 200" for m in state["messages"])
        again = httpx.post(b + "/ag-ui/run", json=run_body(tid, "hello"), timeout=20)
        assert again.status_code == 200, again.text
        assert source.status in (None, 200)


def test_a_stop_on_b_right_after_a_died_waits_for_the_run_lost_end(shared):
    """No node takes the stop (A is gone) but the run has not ended: the stop
    is the run's run_lost end once A's lease lapses, never 409 run_ended."""
    redis_url, pg_url, marks = shared
    env = node_env(redis_url, pg_url, marks)
    with serve(APP, env=env) as b:
        with serve(APP, env=env) as a:
            tid, rid = thread("ks"), f"r-{time.monotonic_ns()}"
            start_run(a, tid, rid, "slow 200")
            wait_for(marks / f"started-{rid}")
            kill(a)
            time.sleep(0.2)  # A's connections are closed; its lease still runs
            killed = time.monotonic()
            stopped = httpx.post(f"{b}/threads/{tid}/runs/{rid}/cancel", timeout=LEASE_TTL + 10)
            waited = time.monotonic() - killed
        assert stopped.status_code == 202, stopped.text
        assert waited <= LEASE_TTL + 2.0, waited
        replay = httpx.get(f"{b}/threads/{tid}/runs/{rid}/events", headers={"last-event-id": "0"})
        ended = events_in(frames_of(replay.content))[-1]
        assert ended["type"] == "RUN_ERROR" and ended["code"] == "run_lost"
        again = httpx.post(b + "/ag-ui/run", json=run_body(tid, "hello"), timeout=20)
        assert again.status_code == 200, again.text


def test_redis_stopped_mid_run_then_back(pg_server, tmp_path):
    """A redis-server of its own: readers get runs_unavailable, a new run 503,
    and once Redis is back the nodes take runs again without a restart."""
    from tests.redis_server import RedisServer

    database = pg_server.create_database()
    server = RedisServer().start()
    try:
        env = node_env(server.url(), pg_server.url(database), tmp_path)
        with serve(APP, env=env) as a, serve(APP, env=env) as b:
            tid, rid = thread("rd"), f"r-{time.monotonic_ns()}"
            source = start_run(a, tid, rid, "slow 100")
            wait_for(tmp_path / f"started-{rid}")
            viewer = Reader("GET", f"{b}/threads/{tid}/events")
            viewer.start()
            viewer.reading()
            server.stop_process()
            for reader in (source, viewer):
                events = events_in(frames_of(reader.result()))
                assert events[-1]["type"] == "RUN_ERROR"
                assert events[-1]["code"] == "runs_unavailable"
            for node in (a, b):
                refused = httpx.post(node + "/ag-ui/run", json=run_body(thread("rd2"), "hello"))
                assert refused.status_code == 503
                assert refused.json()["error"]["code"] == "runs_unavailable"
            # what the reader saw is stored (the user's turn and the partial answer)
            stored = httpx.get(f"{a}/threads/{tid}/state").json()["messages"]
            assert [m["role"] for m in stored] == ["user", "assistant"]
            server.restart()
            for node in (a, b):
                ok = httpx.post(node + "/ag-ui/run", json=run_body(thread("rd3"), "hello"))
                assert ok.status_code == 200, ok.text
            again = httpx.post(b + "/ag-ui/run", json=run_body(tid, "hello"), timeout=20)
            assert again.status_code == 200, again.text
    finally:
        server.stop()
        pg_server.drop_database(database)


def test_one_blocking_reader_per_run_per_node_whatever_the_viewers(nodes, shared):
    """20 viewers of a run on B and 5 on A: Redis sees one XREAD per node."""
    import redis

    a, b, marks = nodes
    tid, rid = thread("fan"), f"r-{time.monotonic_ns()}"
    source = start_run(a, tid, rid, "slow 400")  # cancelled once counted
    wait_for(marks / f"started-{rid}")
    viewers = [Reader("GET", f"{node}/threads/{tid}/events") for node in [b] * 20 + [a] * 5]
    for viewer in viewers:
        viewer.start()
    for viewer in viewers:
        viewer.reading()
    client = redis.Redis.from_url(shared[0])
    counts = []
    try:
        for _ in range(10):  # blocked in XREAD now (a reader between two reads is not)
            clients = client.client_list()
            counts.append(sum(c["cmd"] == "xread" and "b" in c["flags"] for c in clients))
            time.sleep(0.05)
    finally:
        client.close()
    assert max(counts) == 2, counts
    assert httpx.post(f"{b}/threads/{tid}/runs/{rid}/cancel", timeout=20).status_code == 202
    truth = source.result()
    for viewer in viewers:
        assert viewer.result().endswith(frames_of(truth)[-1])
