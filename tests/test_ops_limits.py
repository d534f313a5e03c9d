"""Per-identity limits (agui_bridge.ops.limits) on `agui-bridge serve`: 429 JSON with
Retry-After before any run starts (nothing stored), for concurrent runs per identity
and per agent, readers per identity and per run, run starts per minute; with Redis
run logs the counts are shared by two nodes (a limit of 2 is 2 across them)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import httpx
import orjson
import pytest

from tests.servers import serve_cli

TARGET = "tests.ops_apps:app"


def _auth(who: str) -> dict:
    return {"authorization": f"Bearer {who}"}


def _body(thread_id: str, text: str) -> dict:
    return {"threadId": thread_id, "runId": thread_id + "-r",
            "messages": [{"id": thread_id + "-m", "role": "user", "content": text}]}  # fmt: skip


class Slow:
    """A run that lasts (``slow 60``), read in a thread until it ends."""

    def __init__(self, base: str, agent: str, thread_id: str, who: str):
        self.first = threading.Event()
        self.lines: list[str] = []
        self.status = None
        self.thread = threading.Thread(target=self._read, args=(base, agent, thread_id, who))
        self.thread.start()
        assert self.first.wait(20), "the slow run did not start"

    def _read(self, base, agent, thread_id, who):
        with httpx.stream("POST", f"{base}/agui/{agent}", json=_body(thread_id, "slow 60"),
                          headers=_auth(who), timeout=60) as response:  # fmt: skip
            self.status = response.status_code
            for line in response.iter_lines():
                self.lines.append(line)
                self.first.set()
        self.first.set()


def _refused(response, code: str) -> None:
    assert response.status_code == 429, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["code"] == code
    assert int(response.headers["retry-after"]) >= 1


def _cancel(base: str, thread_id: str, who: str) -> None:
    r = httpx.post(f"{base}/threads/{thread_id}/runs/{thread_id}-r/cancel", headers=_auth(who))
    assert r.status_code == 202, r.text


def _state(base: str, thread_id: str, who: str) -> int:
    return httpx.get(f"{base}/threads/{thread_id}/state", headers=_auth(who)).status_code


def test_runs_and_agent_runs_per_identity(pg_url):
    limits = {"runs": 2, "agent_runs": 1}
    env = {"OPS_LIMITS": orjson.dumps(limits).decode(), "OPS_STORE": pg_url}
    with serve_cli(env, target=TARGET) as server:
        base = server.base_url
        runs = [Slow(base, "talk", "a1", "ann")]
        # A second run of the same agent: past agent_runs.
        _refused(httpx.post(base + "/agui/talk", json=_body("a2", "hi"), headers=_auth("ann")),
                 "too_many_agent_runs")  # fmt: skip
        assert _state(base, "a2", "ann") == 404  # nothing stored
        runs.append(Slow(base, "other", "a3", "ann"))
        # A third run: past runs, whatever the agent.
        _refused(httpx.post(base + "/agui/other", json=_body("a4", "hi"), headers=_auth("ann")),
                 "too_many_runs")  # fmt: skip
        assert _state(base, "a4", "ann") == 404
        # Another identity is not held back.
        ok = httpx.post(base + "/agui/talk", json=_body("b1", "hi"), headers=_auth("bob"))
        assert ok.status_code == 200 and "RUN_FINISHED" in ok.text
        # Once a run ends its slot is free again.
        _cancel(base, "a1", "ann")
        runs[0].thread.join(30)
        deadline = time.monotonic() + 10
        while True:
            again = httpx.post(base + "/agui/talk", json=_body("a5", "hi"), headers=_auth("ann"))
            if again.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert again.status_code == 200 and "RUN_FINISHED" in again.text
        _cancel(base, "a3", "ann")
        for run in runs:
            run.thread.join(30)


def test_runs_per_agent_caps_every_identity_together():
    limits = {"runs_per_agent": {"talk": 1}}
    env = {"OPS_LIMITS": orjson.dumps(limits).decode()}
    with serve_cli(env, target=TARGET) as server:
        base = server.base_url
        run = Slow(base, "talk", "c1", "ann")
        # Another identity on the same agent: past the agent's capacity.
        refused = httpx.post(base + "/agui/talk", json=_body("c2", "hi"), headers=_auth("bob"))
        _refused(refused, "agent_busy")
        assert _state(base, "c2", "bob") == 404  # nothing stored
        # An agent the dict does not name has no cap.
        ok = httpx.post(base + "/agui/other", json=_body("c3", "hi"), headers=_auth("bob"))
        assert ok.status_code == 200 and "RUN_FINISHED" in ok.text
        _cancel(base, "c1", "ann")
        run.thread.join(30)


def test_readers_and_start_rate():
    limits = {"readers": 1, "run_readers": 2, "starts_per_minute": 4}
    env = {"OPS_LIMITS": orjson.dumps(limits).decode()}
    with serve_cli(env, target=TARGET) as server, contextlib.ExitStack() as stack:
        base = server.base_url
        run = Slow(base, "talk", "r1", "ann")  # its own response is not a reader
        readers = []

        def join(who: str):
            response = stack.enter_context(
                httpx.stream("GET", base + "/threads/r1/events", headers=_auth(who), timeout=30)
            )
            if response.status_code == 200:
                # Reading (the iterator kept: dropping it would close the stream).
                readers.append(response.iter_lines())
                next(readers[-1])
            else:
                response.read()
            return response

        assert join("ann").status_code == 200
        _refused(join("ann"), "too_many_readers")
        # The Agent Protocol's joins are readers too (its join waited unlimited).
        for route in ("join", "stream"):
            url = f"{base}/threads/r1/runs/r1-r/{route}"
            _refused(httpx.get(url, headers=_auth("ann"), timeout=30), "too_many_readers")
        assert join("bob").status_code == 200
        _refused(join("cy"), "too_many_run_readers")
        # Run starts: 4 a minute, a burst of 4; the fifth waits (one start is 15 s).
        for n in range(4):
            ok = httpx.post(base + "/agui/other", json=_body(f"q{n}", "hi"), headers=_auth("dan"))
            assert ok.status_code == 200
        late = httpx.post(base + "/agui/other", json=_body("q9", "hi"), headers=_auth("dan"))
        _refused(late, "rate_limited")
        assert int(late.headers["retry-after"]) <= 15
        assert _state(base, "q9", "dan") == 404
        _cancel(base, "r1", "ann")
        run.thread.join(30)


def test_a_limit_of_two_is_two_across_two_nodes(pg_url, redis_url):
    limits = {"runs": 2, "run_readers": 1}
    env = {"OPS_LIMITS": orjson.dumps(limits).decode(), "OPS_STORE": pg_url,
           "OPS_RUNS": redis_url}  # fmt: skip
    with serve_cli(env, target=TARGET, workers=2) as one, serve_cli(env, target=TARGET,
                                                                    workers=2) as two:  # fmt: skip
        runs = [Slow(one.base_url, "talk", "n1", "ann"), Slow(two.base_url, "talk", "n2", "ann")]
        for node in (one, two):
            _refused(httpx.post(node.base_url + "/agui/other", json=_body("n3", "hi"),
                                headers=_auth("ann")), "too_many_runs")  # fmt: skip
        assert _state(one.base_url, "n3", "ann") == 404
        ok = httpx.post(two.base_url + "/agui/talk", json=_body("m1", "hi"), headers=_auth("bob"))
        assert ok.status_code == 200
        # One reader of n1 at a time, wherever it connects.
        with httpx.stream("GET", one.base_url + "/threads/n1/events", headers=_auth("bob"),
                          timeout=30) as first:  # fmt: skip
            assert first.status_code == 200
            lines = first.iter_lines()
            next(lines)
            second = httpx.get(two.base_url + "/threads/n1/events", headers=_auth("cy"))
            _refused(second, "too_many_run_readers")
        _cancel(two.base_url, "n1", "ann")
        runs[0].thread.join(30)
        deadline = time.monotonic() + 10
        while True:
            again = httpx.post(two.base_url + "/agui/talk", json=_body("n4", "hi"),
                               headers=_auth("ann"))  # fmt: skip
            if again.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert again.status_code == 200 and "RUN_FINISHED" in again.text
        _cancel(one.base_url, "n2", "ann")
        runs[1].thread.join(30)


def test_the_start_rate_forgets_an_identity_once_its_bucket_is_full_again():
    """Without authentication every client address is an identity: a worker
    must not keep a bucket for each one it ever saw, and forgetting a full
    bucket must not loosen the limit on one still draining."""
    from agui_bridge.ops.limits import MemoryCounter

    async def go():
        counter = MemoryCounter()
        for n in range(500):
            assert await counter.take(f"starts:addr:{n}", 2.0, 2) == 0.0
        assert len(counter.buckets) == 500  # a token back in 0.5 s: none full yet
        await asyncio.sleep(0.6)  # all full again
        assert await counter.take("starts:addr:0", 2.0, 2) == 0.0
        assert list(counter.buckets) == ["starts:addr:0"]
        # A slow bucket (1 a minute, burst 2) drained by two starts still refuses.
        slow = "starts:dan"
        assert await counter.take(slow, 1 / 60, 2) == 0.0
        assert await counter.take(slow, 1 / 60, 2) == 0.0
        await asyncio.sleep(0.05)
        for n in range(100):
            await counter.take(f"starts:addr:x{n}", 200.0, 2)
        wait = await counter.take(slow, 1 / 60, 2)
        assert 55 < wait <= 60

    asyncio.run(go())


def test_a_queued_run_starts_once_the_run_before_it_ends():
    """runs=1: a run queued behind the identity's own run (enqueue or interrupt)
    takes that run's slot when it frees the thread, not a 429 that drops it."""
    env = {"OPS_LIMITS": orjson.dumps({"runs": 1}).decode()}
    with serve_cli(env, target=TARGET) as server, httpx.Client(
        base_url=server.base_url, headers=_auth("ann"), timeout=30
    ) as client:  # fmt: skip
        for strategy, first in (("enqueue", "slow 3"), ("interrupt", "slow 60")):
            thread_id = client.post("/threads", json={}).json()["thread_id"]

            def run(text, thread_id=thread_id, **extra):
                body = {"assistant_id": "talk", **extra,
                        "input": {"messages": [{"role": "user", "content": text}]}}  # fmt: skip
                response = client.post(f"/threads/{thread_id}/runs", json=body)
                assert response.status_code == 200, response.text
                return response.json()["run_id"]

            run(first)
            time.sleep(0.3)
            queued = run("hello there", multitask_strategy=strategy)
            result = client.get(f"/threads/{thread_id}/runs/{queued}/join").json()
            assert "__error__" not in result, (strategy, result)
            record = client.get(f"/threads/{thread_id}/runs/{queued}").json()
            assert record["status"] == "success", (strategy, record)
            assert result["messages"][-1]["content"] == "you said: 2 words"


def test_a_new_run_after_stop_supersedes_the_abandoned_one_within_the_limit():
    """runs=1, "Stop, then type": the abandoned run's slot is free by the time
    the new run is admitted in its place."""
    import socket

    env = {"OPS_LIMITS": orjson.dumps({"runs": 1}).decode()}
    with serve_cli(env, target=TARGET) as server:
        first = _body("s1", "slow 60")
        payload = orjson.dumps(first)
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(b"POST /agui/talk HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ann\r\n"
                         b"content-type: application/json\r\ncontent-length: %d\r\n\r\n"
                         % len(payload) + payload)  # fmt: skip
            assert b"RUN_STARTED" in sock.recv(65536) or b"RUN_STARTED" in sock.recv(65536)
        time.sleep(0.3)  # the user pressed Stop
        second = {"threadId": "s1", "runId": "s1-r2", "messages": [
            *first["messages"], {"id": "s1-m2", "role": "user", "content": "hello"}]}  # fmt: skip
        again = httpx.post(server.base_url + "/agui/talk", json=second, headers=_auth("ann"),
                           timeout=30)  # fmt: skip
        assert again.status_code == 200, again.text
        assert "RUN_FINISHED" in again.text


def test_a_queued_run_refused_by_a_limit_keeps_its_place():
    """A queued run whose start meets a 429 (here: the agent's capacity, held by
    another identity) waits for the slot, then runs; it is not dropped."""
    env = {"OPS_LIMITS": orjson.dumps({"runs_per_agent": {"talk": 1}}).decode()}
    with serve_cli(env, target=TARGET) as server, httpx.Client(
        base_url=server.base_url, headers=_auth("ann"), timeout=30
    ) as client:  # fmt: skip
        thread_id = client.post("/threads", json={}).json()["thread_id"]

        def run(agent, text, **extra):
            body = {"assistant_id": agent, **extra,
                    "input": {"messages": [{"role": "user", "content": text}]}}  # fmt: skip
            response = client.post(f"/threads/{thread_id}/runs", json=body)
            assert response.status_code == 200, response.text
            return response.json()["run_id"]

        run("other", "slow 2")  # holds the thread, not the agent "talk"
        busy = Slow(server.base_url, "talk", "k1", "bob")  # holds "talk" for a while
        queued = run("talk", "hello there", multitask_strategy="enqueue")
        time.sleep(2.5)  # the thread is free, "talk" is not
        record = client.get(f"/threads/{thread_id}/runs/{queued}").json()
        assert record["status"] == "pending", record
        _cancel(server.base_url, "k1", "bob")
        busy.thread.join(30)
        result = client.get(f"/threads/{thread_id}/runs/{queued}/join").json()
        assert "__error__" not in result, result
        assert client.get(f"/threads/{thread_id}/runs/{queued}").json()["status"] == "success"
        assert result["messages"][-1]["content"] == "you said: 2 words"


def _talk_app(limits):
    from agui_bridge import App
    from agui_bridge import crumbs as c

    app = App(store="memory://", limits=limits)

    @app.agent("talk")
    async def talk(ctx):
        yield c.text_delta("hi")

    return app


def test_a_failed_rate_check_gives_back_the_run_slot(monkeypatch):
    """The start rate's counter failing (Redis unreachable a moment) answers that
    request 503 and leaves the identity's run slot free for the next one."""
    from agui_bridge.errors import RunsUnavailable
    from agui_bridge.ops.limits import MemoryCounter

    take = MemoryCounter.take
    fails = [RunsUnavailable("the limits' counters are unreachable: connection reset")]

    async def flaky(self, *args):
        if fails:
            raise fails.pop()
        return await take(self, *args)

    monkeypatch.setattr(MemoryCounter, "take", flaky)

    async def go():
        app = _talk_app({"runs": 1, "starts_per_minute": 600})
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5555))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            first = await client.post("/agui/talk", json=_body("f1", "hi"))
            assert first.status_code == 503, first.text
            for n in range(3):
                again = await client.post("/agui/talk", json=_body(f"f{n + 2}", "hi"))
                assert again.status_code == 200, again.text
                assert "RUN_FINISHED" in again.text

    asyncio.run(go())


@pytest.mark.parametrize("counts", ["worker", "redis"])
def test_starts_refused_409_spend_none_of_the_start_rate(tmp_path, request, counts):
    """Two workers of one node (one SQLite store, its leases): while bob's run on A
    holds a thread, ann's starts on it through B are refused 409; they started
    nothing, so ann at her burst still gets her next real starts (each worker's
    counts, or Redis's shared by both)."""
    from agui_bridge import App
    from agui_bridge import crumbs as c

    store = f"sqlite:///{tmp_path}/threads.sqlite"
    runs = request.getfixturevalue("redis_url") if counts == "redis" else "memory://"
    holding, done = asyncio.Event(), asyncio.Event()
    apps = []

    def worker():
        app = App(store=store, runs=runs, limits={"starts_per_minute": 1, "burst": 2},
                  authenticate=lambda request: {"id": request.headers["x-who"]})  # fmt: skip

        @app.agent("talk")
        async def talk(ctx):
            if ctx.input == "hold":
                holding.set()
                await done.wait()
            yield c.text_delta("hi")

        apps.append(app)
        transport = httpx.ASGITransport(app=app)
        return httpx.AsyncClient(transport=transport, base_url="http://t", timeout=30)

    async def go():
        try:
            async with worker() as a, worker() as b:
                await both(a, b)
        finally:
            for app in apps:
                await app.aclose()

    async def both(a, b):
        bob, ann = {"x-who": "bob"}, {"x-who": "ann"}
        held = asyncio.create_task(a.post("/agui/talk", json=_body("h1", "hold"), headers=bob))
        await asyncio.wait_for(holding.wait(), 10)
        for n in range(3):  # past the burst of 2
            body = _body("h1", "again") | {"runId": f"h1-x{n}"}
            refused = await b.post("/agui/talk", json=body, headers=ann)
            assert refused.status_code == 409, refused.text
            assert refused.json()["error"]["code"] == "run_active"
        for thread_id in ("h2", "h3"):
            ok = await b.post("/agui/talk", json=_body(thread_id, "hi"), headers=ann)
            assert ok.status_code == 200 and "RUN_FINISHED" in ok.text
        # The rate still counts the starts that happened.
        late = await b.post("/agui/talk", json=_body("h4", "hi"), headers=ann)
        _refused(late, "rate_limited")
        done.set()
        assert (await held).status_code == 200

    asyncio.run(go())


def test_a_bad_limit_is_refused_when_the_app_is_made():
    import pytest
    from agui_bridge.ops import IdentityLimits

    bad = [{"starts_per_minute": 0}, {"starts_per_minute": -1}, {"starts_per_minute": "6"},
           {"starts_per_minute": float("nan")}, {"starts_per_minute": 6, "burst": 0},
           {"runs": 0}, {"runs": -2}, {"runs": 1.5}, {"runs": True}, {"agent_runs": "2"},
           {"readers": 0}, {"run_readers": -1}, {"runs_per_agent": 0},
           {"runs_per_agent": {"talk": 0}}, {"runs_per_agent": {"talk": "1"}},
           {"slot_ttl": 0}, {"key": "id"}]  # fmt: skip
    for limits in bad:
        with pytest.raises(ValueError, match=list(limits)[-1]):
            _talk_app(limits)
        with pytest.raises(ValueError, match=list(limits)[-1]):
            IdentityLimits(**limits)
    # Within bounds: made, and a run starts.
    app = _talk_app({"runs": 1, "starts_per_minute": 0.5, "burst": 2,
                     "runs_per_agent": {"talk": 3}, "slot_ttl": 5})  # fmt: skip
    assert app.ops.limits.config.starts_per_minute == 0.5


def _opened(method: str, url: str, who: str, body=None, lines: int = 0):
    """A stream's response: its status and body when refused, else its first ``lines``."""
    with httpx.stream(method, url, json=body, headers=_auth(who), timeout=30) as response:
        if response.status_code != 200:
            response.read()
            return response, response.text
        it = response.iter_lines()
        return response, "\n".join(line for _, line in zip(range(lines), it, strict=False))


def test_a_thread_event_stream_is_a_reader():
    """POST /threads/{id}/stream/events is one reader of its identity while open
    and a reader of each run it follows."""
    limits = {"readers": 1, "run_readers": 1}
    env = {"OPS_LIMITS": orjson.dumps(limits).decode()}
    channels = {"channels": ["messages", "lifecycle", "values"]}
    with serve_cli(env, target=TARGET) as server, contextlib.ExitStack() as stack:
        base = server.base_url
        events = base + "/threads/t1/stream/events"
        run = Slow(base, "talk", "t1", "ann")
        first = stack.enter_context(
            httpx.stream("POST", events, json=channels, headers=_auth("ann"), timeout=30)
        )
        assert first.status_code == 200
        lines = first.iter_lines()
        assert any("data:" in next(lines) for _ in range(3))  # it reads the run
        # The identity's one reader is that stream, whatever the route.
        for again, text in (
            _opened("POST", events, "ann", channels, 3),
            _opened("GET", base + "/threads/t1/events", "ann", lines=3),
        ):
            assert again.status_code == 429, text
            _refused(again, "too_many_readers")
        # Another identity: the run's one reader is that stream.
        refused, text = _opened("GET", base + "/threads/t1/events", "bob", lines=3)
        assert refused.status_code == 429, text
        _refused(refused, "too_many_run_readers")
        late, text = _opened("POST", events, "bob", channels, 20)
        assert late.status_code == 200
        assert "too_many_run_readers" in text, text
        first.close()
        _cancel(base, "t1", "ann")
        run.thread.join(30)
