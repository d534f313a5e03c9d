"""Who learns what, and from where (issue 24 items 9, 10, 11), in process on both builds.

- A caller the thread's guard refuses gets the same answer whatever exists
  (an active run or none, a known run or not); ``authorize_stream`` guards the
  list of a thread's runs (it shows each run's input).
- ``Last-Event-ID`` at the terminal event's id answers a stream that is valid
  alone: RUN_STARTED, then the terminal event.
- A cross-site request (an ``Origin`` that is neither the gateway's own nor
  one the CORS policy allows) changes nothing, on every state-changing route
  of both protocols.
"""

from __future__ import annotations

import asyncio

import httpx
import orjson
import pytest
from agui_bridge import App
from agui_bridge import crumbs as c

ANN = {"cookie": "user=ann"}
BOB = {"cookie": "user=bob"}
EVIL = "https://evil.example"


def _app(cors=None) -> tuple[App, asyncio.Event]:
    release = asyncio.Event()

    def authenticate(request):
        cookie = request.headers.get("cookie") or ""
        return cookie.removeprefix("user=") or None

    app = App(store="memory://", authenticate=authenticate, cors=cors)

    @app.agent(
        "demo",
        authorize_thread=lambda who, thread_id: thread_id.startswith(who + "-"),
        authorize_stream=lambda who, thread_id, run_id: not run_id.endswith("-secret"),
    )
    async def demo(ctx):
        yield c.text_delta("hello ")
        if ctx.input == "wait":
            await release.wait()
        yield c.text_delta("world")

    return app, release


def _client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://gateway.test", timeout=20
    )


def _run(thread_id: str, run_id: str, text: str = "hi") -> dict:
    message = {"id": f"{run_id}-m", "role": "user", "content": text}
    return {"threadId": thread_id, "runId": run_id, "messages": [message]}


def _events(body: bytes) -> list[tuple[int | None, dict]]:
    out = []
    for block in body.split(b"\n\n"):
        n, data = None, None
        for line in block.split(b"\n"):
            if line.startswith(b"id: "):
                n = int(line[4:])
            elif line.startswith(b"data: "):
                data = orjson.loads(line[6:])
        if data is not None:
            out.append((n, data))
    return out


async def _until_active(app, thread_id: str) -> None:
    for _ in range(200):
        if await app.runs.active_of(thread_id) is not None:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the run never became active")


async def test_a_refused_caller_learns_nothing_of_what_exists(impl):
    app, release = _app()
    async with _client(app) as http:
        done = await http.post("/agui/demo", json=_run("ann-1", "r1"), headers=ANN)
        assert done.status_code == 200
        # A thread with an active run and one without, a known run and an unknown one.
        running = asyncio.ensure_future(
            http.post("/agui/demo", json=_run("ann-2", "r2", "wait"), headers=ANN)
        )
        await _until_active(app, "ann-2")
        try:
            answers = {
                path: (await http.get(path, headers=BOB)).status_code
                for path in (
                    "/threads/ann-1/events",  # no active run
                    "/threads/ann-2/events",  # an active run
                    "/threads/ann-9/events",  # no thread
                    "/threads/ann-1/runs/r1/events",  # a known run
                    "/threads/ann-1/runs/nope/events",  # an unknown run
                    "/threads/ann-9/runs/r1/events",  # no thread
                )
            }
            assert set(answers.values()) == {403}, answers
            cancels = [
                (await http.post(path, headers=BOB)).status_code
                for path in ("/threads/ann-2/runs/r2/cancel", "/threads/ann-2/runs/nope/cancel")
            ]
            assert cancels == [403, 403]
            # The owner still gets the plain answers.
            assert (await http.get("/threads/ann-1/events", headers=ANN)).status_code == 204
            unknown = await http.get("/threads/ann-1/runs/nope/events", headers=ANN)
            assert unknown.status_code == 404
        finally:
            release.set()
            assert (await running).status_code == 200


async def test_authorize_stream_guards_the_list_of_a_threads_runs(impl):
    app, _ = _app()
    async with _client(app) as http:
        for run_id in ("r1", "r2-secret"):
            response = await http.post("/agui/demo", json=_run("ann-3", run_id), headers=ANN)
            assert response.status_code == 200
        assert (
            await http.get("/threads/ann-3/runs/r2-secret/events", headers=ANN)
        ).status_code == 403
        listed = await http.get("/threads/ann-3/runs", headers=ANN)
        assert listed.status_code == 200
        assert [r["run_id"] for r in listed.json()] == ["r1"]
        assert (await http.get("/threads/ann-3/runs/r2-secret", headers=ANN)).status_code == 403


async def test_a_resume_at_the_terminal_event_is_a_valid_stream_alone(impl):
    app, _ = _app()
    async with _client(app) as http:
        body = (await http.post("/agui/demo", json=_run("ann-4", "r1"), headers=ANN)).content
        events = _events(body)
        last_id, terminal = events[-1]
        assert terminal["type"] == "RUN_FINISHED" and last_id is not None
        for after in (last_id, last_id - 1):
            headers = {**ANN, "last-event-id": str(after)}
            resumed = await http.get("/threads/ann-4/runs/r1/events", headers=headers)
            assert resumed.status_code == 200 and resumed.headers["agui-resume"] == "exact"
            got = _events(resumed.content)
            assert got[0][1]["type"] == "RUN_STARTED", got
            assert got[-1] == (last_id, terminal), got


# Every state-changing route of both protocols: (method, path, JSON body or None).
def _changes(thread_id: str, run_id: str) -> list[tuple[str, str, dict | None]]:
    run = f"/threads/{thread_id}/runs/{run_id}"
    create = {"assistant_id": "demo", "input": {"messages": ["hi"]}}
    return [
        ("POST", "/agui/demo", _run(thread_id, "x1")),
        ("POST", "/ag-ui/run", _run(thread_id, "x2")),
        ("POST", f"{run}/cancel", None),
        ("POST", "/threads", {"thread_id": thread_id + "-new"}),
        ("PATCH", f"/threads/{thread_id}", {"metadata": {"x": 1}}),
        ("DELETE", f"/threads/{thread_id}", None),
        ("POST", f"/threads/{thread_id}/state", {"values": {"x": 1}}),
        ("POST", f"/threads/{thread_id}/runs", create),
        ("POST", f"/threads/{thread_id}/runs/wait", create),
        ("POST", f"/threads/{thread_id}/runs/stream", create),
        ("POST", "/runs", create),
        ("POST", "/runs/wait", create),
        ("POST", "/runs/stream", create),
        ("DELETE", run, None),
        # A join that cancels the run when its reader leaves: a GET that may stop it.
        ("GET", f"{run}/join?cancel_on_disconnect=true", None),
        ("GET", f"{run}/stream?cancel_on_disconnect=true", None),
    ]


@pytest.mark.parametrize("as_form", [False, True])
async def test_a_cross_site_request_changes_nothing(impl, as_form):
    app, release = _app()
    async with _client(app) as http:
        running = asyncio.ensure_future(
            http.post("/agui/demo", json=_run("ann-5", "r1", "wait"), headers=ANN)
        )
        await _until_active(app, "ann-5")
        try:
            for method, path, body in _changes("ann-5", "r1"):
                headers = {**ANN, "origin": EVIL}
                if as_form:  # what a cross-site <form> sends: no preflight
                    headers["content-type"] = "application/x-www-form-urlencoded"
                    sent = await http.request(method, path, content=b"", headers=headers)
                else:
                    sent = await http.request(method, path, json=body, headers=headers)
                assert sent.status_code == 403, (method, path, sent.text)
                assert sent.json()["error"]["code"] == "cross_site", (method, path)
            assert await app.runs.active_of("ann-5") is not None  # not cancelled
            # From the gateway's own origin the cancel goes through.
            # Behind a proxy that rewrites Host, the browser's word or the forwarded host.
            page = {**ANN, "origin": "https://app.example"}
            for proxied in ({"sec-fetch-site": "same-origin"}, {"x-forwarded-host": "app.example"}):
                allowed = await http.delete("/threads/ann-5/runs/nope", headers={**page, **proxied})
                assert allowed.status_code == 404, allowed.text  # past the cross-site rule
            spoofed = {**page, "sec-fetch-site": "cross-site"}
            assert (
                await http.delete("/threads/ann-5/runs/nope", headers=spoofed)
            ).status_code == 403
            own = {**ANN, "origin": "http://gateway.test"}
            cancel = await http.post("/threads/ann-5/runs/r1/cancel", headers=own)
            assert cancel.status_code == 202, cancel.text
        finally:
            release.set()
            await running


async def test_an_origin_the_cors_policy_allows_may_change_state(impl):
    app, release = _app(cors=[EVIL])
    release.set()
    async with _client(app) as http:
        headers = {**ANN, "origin": EVIL}
        sent = await http.post("/agui/demo", json=_run("ann-6", "r1"), headers=headers)
        assert sent.status_code == 200
        other = {**ANN, "origin": "https://other.example"}
        refused = await http.post("/agui/demo", json=_run("ann-6", "r2"), headers=other)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "cross_site"
        # A caller that sends no Origin (not a browser: an SDK, curl) is not cross-site.
        assert (
            await http.post("/agui/demo", json=_run("ann-6", "r3"), headers=ANN)
        ).status_code == 200
